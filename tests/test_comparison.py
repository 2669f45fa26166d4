"""`reproduce --data`: the comparison with the paper and the committed runs (each row within
max(2 x the committed seeds' std, 1 point) or not), runs trained on other data never counted, and
the whole path on the emulator's 40 test digits."""
import json
import os
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest

import comparison
import config
import data
import emulate
import report
import run
import run_folder
import training
from nmnist_files import write_dataset
from test_report import write_preset_run, write_run
from test_run import run_main

DIGITS = Path(__file__).resolve().parent / "data" / "mnist-digits"


def write_seeds(results_dir, name, accuracies, **final):
    for seed, accuracy in enumerate(accuracies, start=1):
        write_run(results_dir, name, seed, test_acc=accuracy, **final)


def test_each_row_lies_within_twice_the_committed_std_or_one_point(tmp_path):
    committed, local = tmp_path / "committed", tmp_path / "local"
    write_seeds(committed, "es", [0.70, 0.72, 0.74])        # std 2 points: tolerance 4
    write_seeds(local, "es", [0.75, 0.75, 0.75])            # +3: within
    write_seeds(committed, "bptt", [0.95, 0.95, 0.95])      # std 0: tolerance 1 point
    write_seeds(local, "bptt", [0.93, 0.93, 0.93])          # -2: not within
    write_seeds(committed, "eggroll-r4", [0.80, 0.80])      # two seeds
    write_seeds(local, "eggroll-r4", [0.809, 0.809, 0.809])  # +0.9: within the 1-point floor
    write_seeds(local, "eggroll-r1", [0.5])                 # nothing to compare with
    text = comparison.comparison(local, committed, "paper")
    assert "| method | the paper | committed runs | this machine | difference | tolerance | within |" in text
    assert "| bptt | 94.03 | 95.00 ± 0.00 | 93.00 ± 0.00 | -2.00 | 1.00 | no |" in text
    assert "| es | 76.17 | 72.00 ± 2.00 | 75.00 ± 0.00 | +3.00 | 4.00 | yes |" in text
    assert "| eggroll-r1 | 78.75 | – | 50.00 ± 0.00 (1 seed) | – | – | – |" in text
    assert "| eggroll-r4 | 79.21 | 80.00 ± 0.00 (2 seeds) | 80.90 ± 0.00 | +0.90 | 1.00 | yes |" in text
    assert [line.split(" | ")[0] for line in text.splitlines() if line.startswith("| ") and "---" not in line] == \
        ["| method", "| bptt", "| es", "| eggroll-r1", "| eggroll-r4"]
    assert "2 of 3 rows compared lie within it." in text
    assert "from before runs recorded their data" in text  # the fabricated runs carry no data record
    assert "no committed run to compare with" in comparison.comparison(local, tmp_path / "none", "paper")
    waiting = comparison.comparison(tmp_path / "none", committed, "paper")  # committed runs, none finished here
    assert "0 of 0 rows compared lie within it; no run of this machine has finished yet." in waiting
    assert "no committed run" not in waiting


def test_a_difference_at_the_tolerance_is_within_and_the_project_emulation_is_the_emulators(tmp_path):
    committed, local = tmp_path / "committed", tmp_path / "local"
    write_seeds(committed, "es", [0.75, 0.75, 0.75])  # std 0: tolerance 1 point
    write_seeds(local, "es", [0.76, 0.76, 0.76])      # +1.00: on the tolerance, within
    assert "| +1.00 | 1.00 | yes |" in comparison.comparison(local, committed, "paper")
    assert comparison.PROJECT_EMULATION == {"emulator": "eggroll-snn emulate.py", "version": emulate.VERSION,
                                            "seed": 0, "mnist_sha256": emulate.mnist.OFFICIAL_SHA256}


def test_runs_on_other_data_are_not_compared(tmp_path):
    """150 training samples against the committed 54,000, or N-MNIST emulated from MNIST files that
    are not the official ones: every row says "not compared", and the line below says why."""
    committed = tmp_path / "committed"
    write_seeds(committed, "es", [0.70, 0.72, 0.74], n_train=54000)
    fewer, unofficial = tmp_path / "fewer", tmp_path / "unofficial"
    write_seeds(fewer, "es", [0.72, 0.72, 0.72], n_train=150)
    made = {"emulator": "eggroll-snn emulate.py", "version": 1, "seed": 0, "mnist_sha256": {"x": "0"}}
    write_seeds(unofficial, "es", [0.72, 0.72, 0.72], n_train=54000, data={"fingerprint": {}, "emulated": made})
    for local, why in ((fewer, "this machine's runs trained on 150 samples, the committed ones on 54000"),
                       (unofficial, "emulated from MNIST files that are not the official ones")):
        text = comparison.comparison(local, committed, "paper")
        assert "| es | 76.17 | 72.00 ± 2.00 | 72.00 ± 0.00 | +0.00 | 4.00 | not compared |" in text
        assert "Not compared: " in text and why in text and "rows compared lie within" not in text


def test_one_run_on_other_mnist_files_among_official_ones_is_not_compared(tmp_path):
    """A mix of this machine's runs, one of three emulated from MNIST files that are not the official
    ones: the side is not the project's data, so its rows are not compared."""
    committed, local = tmp_path / "committed", tmp_path / "local"
    write_seeds(committed, "es", [0.72, 0.72, 0.72], n_train=54000)
    official, unofficial = dict(comparison.PROJECT_EMULATION), {**comparison.PROJECT_EMULATION, "mnist_sha256": {"x": "0"}}
    for seed, made in ((1, official), (2, unofficial), (3, official)):
        write_run(local, "es", seed, test_acc=0.72, n_train=54000, data={"fingerprint": {}, "emulated": made})
    text = comparison.comparison(local, committed, "paper")
    assert "not compared |" in text and "emulated from MNIST files that are not the official ones" in text


@pytest.mark.parametrize("lacking", [0, 9])
def test_every_digit_is_checked_from_zero_to_nine_before_emulating(tmp_path, monkeypatch, lacking):
    """The check before reproduce's emulation covers every digit, the first and the last too: MNIST
    files whose test split lacks one are refused, and nothing is made."""
    full = (np.zeros((10, 28, 28), np.uint8), np.arange(10, dtype=np.uint8))
    lacks = (np.zeros((9, 28, 28), np.uint8), np.delete(np.arange(10, dtype=np.uint8), lacking))
    monkeypatch.setattr(emulate.mnist, "load", lambda folder: ({"train": full, "test": lacks}, "sha"))
    with pytest.raises(run_folder.UsageError, match=f"hold no digit {lacking} in the test split"):
        emulate.emulate(tmp_path / "out", tmp_path / "mnist", progress=False, every_digit=True)
    assert not (tmp_path / "out").exists()


@pytest.fixture
def copy(tmp_path):
    """A small N-MNIST copy and its fingerprint at T = 10."""
    root = write_dataset(tmp_path / "copy" / "NMNIST", n_train=2, n_test=1).parent
    cache = tmp_path / "cache"
    return root, cache, data.load_nmnist(root, 10, cache, progress=False).fingerprint()


def test_a_run_counts_only_where_it_trained_on_this_data(tmp_path, copy):
    root, cache, fingerprint = copy
    results = tmp_path / "results"
    same = write_run(results, "es", 1, data={"fingerprint": fingerprint}, val_acc=0.5, test_acc=0.5)
    other = write_run(results, "es", 2, data={"fingerprint": {**fingerprint, "test": "10 samples, sha256 0"}},
                      val_acc=0.5, test_acc=0.5)
    before = write_run(results, "es", 3)  # final.json from before the record: the project's emulated copy
    found = dict(comparison.foreign_runs(results, root, cache))
    assert sorted(found) == [other, before] and same not in found
    assert found[other] == f"its test split was 10 samples, sha256 0, here {fingerprint['test']}"

    made = root / "NMNIST" / emulate.PROVENANCE
    made.write_text(json.dumps(comparison.PROJECT_EMULATION))
    assert [out for out, _ in comparison.foreign_runs(results, root, cache)] == [other]
    made.write_text(json.dumps({**comparison.PROJECT_EMULATION, "seed": 1}))
    assert [out for out, _ in comparison.foreign_runs(results, root, cache)] == [other, before]


def digits_of_every_class(folder):
    """The 40 committed digits as MNIST files in `folder`, the test split given a training 3 and 8
    (the two classes its 21 digits lack: a class folder without recordings is refused as damaged)."""
    folder.mkdir()
    train_images = (DIGITS / "train-images-idx3-ubyte").read_bytes()
    train_labels = (DIGITS / "train-labels-idx1-ubyte").read_bytes()
    extra = [train_labels.index(bytes([label]), 8) - 8 for label in (3, 8)]
    images = (DIGITS / "t10k-images-idx3-ubyte").read_bytes()
    labels = (DIGITS / "t10k-labels-idx1-ubyte").read_bytes()
    n = int.from_bytes(labels[4:8], "big") + len(extra)
    (folder / "t10k-images-idx3-ubyte").write_bytes(
        images[:4] + n.to_bytes(4, "big") + images[8:] + b"".join(
            train_images[16 + 784 * i:16 + 784 * (i + 1)] for i in extra))
    (folder / "t10k-labels-idx1-ubyte").write_bytes(
        labels[:4] + n.to_bytes(4, "big") + labels[8:] + bytes(train_labels[8 + i] for i in extra))
    for name in ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"):
        shutil.copy(DIGITS / name, folder / name)
    return folder


@pytest.fixture
def emulated(tmp_path):
    """42 digits emulated: the 40 committed ones and a 3 and an 8 added to the test split."""
    root = tmp_path / "emulated"
    with pytest.warns(UserWarning, match="differ from the official MNIST files"):
        assert run.main(["emulate", "--mnist", str(digits_of_every_class(tmp_path / "mnist")), "--out", str(root),
                         "--quiet"]) == 0
    return root


@pytest.mark.parametrize("where", ["given", "the default"])
def test_reproduce_into_a_copy_emulated_from_other_mnist_names_its_own_option(tmp_path, emulated, capsys,
                                                                              monkeypatch, where):
    """reproduce --data emulated --mnist OTHER where --data-root holds another emulation: the fix
    names --data-root, reproduce's option (it has no --out), or, in the project's own folder for
    it (no --data-root), that deleting it is safe; nothing is written."""
    other = digits_of_every_class(tmp_path / "other")
    images = bytearray((other / "train-images-idx3-ubyte").read_bytes())
    images[16] ^= 1  # other MNIST files, of every digit
    (other / "train-images-idx3-ubyte").write_bytes(bytes(images))
    root = emulated
    if where == "the default":
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
        root = tmp_path / "xdg" / "eggroll-snn" / "nmnist-emulated"
        shutil.copytree(emulated, root)
    before = sorted(path for path in root.rglob("*"))
    args = ["reproduce", "--config", "quick", "--data", "emulated", "--mnist", str(other),
            *(["--data-root", str(root)] if where == "given" else []), "--results", str(tmp_path / "results"), "--quiet"]
    with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
        warnings.simplefilter("error")
        code, err = run_main(args, capsys)
    assert code == 2 and err.count("\n") == 1, err
    fix = "give --data-root another folder to emulate into" if where == "given" else \
        f"delete {root} (the project's emulation, made again from these files) or give --data-root another folder " \
        f"to emulate into"
    assert f"emulated otherwise (other MNIST files (their SHA256 differ)); {fix} (those recordings are left as they " \
           f"are)" in err, err
    assert sorted(path for path in root.rglob("*")) == before and not (tmp_path / "results").exists()


def test_reproduce_refuses_mnist_files_lacking_a_digit_before_it_emulates(tmp_path, capsys):
    """reproduce --data emulated from MNIST files whose test split lacks a digit: training would refuse
    their emulation, so they are refused in one line before anything is emulated or made."""
    args = ["reproduce", "--config", "quick", "--data", "emulated", "--mnist", str(DIGITS), "--data-root",
            str(tmp_path / "emulated"), "--results", str(tmp_path / "results"), "--quiet"]
    with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
        warnings.simplefilter("error")
        code, err = run_main(args, capsys)
    assert code == 2 and err == f"error: the MNIST files in {DIGITS} hold no digit 3 in the test split, so their " \
                                f"emulation could not be trained and scored (every digit is needed in each split); " \
                                f"give --mnist the four files of MNIST itself\n", err
    assert sorted(path.name for path in tmp_path.iterdir()) == []


def test_reproduce_refuses_its_results_folder_before_it_emulates(tmp_path, capsys):
    """reproduce --data emulated whose results folder holds a user's file under the report's name:
    refused in one line before the minutes of an emulation, which it would otherwise leave behind."""
    folder = tmp_path / "results" / "local" / "emulated" / "quick"
    folder.mkdir(parents=True)
    (folder / "table.md").write_text("mine")
    args = ["reproduce", "--config", "quick", "--data", "emulated", "--mnist",
            str(digits_of_every_class(tmp_path / "mnist")), "--data-root", str(tmp_path / "emulated"), "--results",
            str(tmp_path / "results"), "--quiet"]
    code, err = run_main(args, capsys)
    assert code == 2 and err.startswith(f"error: {folder / 'table.md'} is a file this command did not write") and \
        err.count("\n") == 1, err
    assert not (tmp_path / "emulated").exists() and (folder / "table.md").read_text() == "mine"


@pytest.mark.parametrize("file", ["local", "local/nmnist"])
@pytest.mark.parametrize("kind", ["file", "pipe"])
def test_a_file_where_reproduce_data_keeps_its_runs_is_named_as_itself(tmp_path, capsys, file, kind):
    """--results R with a file (or a named pipe) at R/local or R/local/nmnist: the line names it and
    the --results the user gave, not R/local/nmnist as if it were the option, and it is left as it is."""
    (tmp_path / file).parent.mkdir(exist_ok=True)
    os.mkfifo(tmp_path / file) if kind == "pipe" else (tmp_path / file).write_text("mine")
    code, err = run_main(["reproduce", "--config", "quick", "--data", "nmnist", "--report-only", "--results",
                          str(tmp_path), "--quiet"], capsys)
    assert code == 2 and err == f"error: --results {tmp_path}: {tmp_path / file}, where reproduce --data keeps its " \
                                f"runs, is no folder (a file, say); move it away, or give another --results\n", err
    assert (tmp_path / file).is_fifo() if kind == "pipe" else (tmp_path / file).read_text() == "mine"


def test_reproduce_data_trains_compares_and_refuses_runs_of_other_data(tmp_path, emulated, monkeypatch, capsys):
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=8,
                                                                 eval_every=1), "bptt": dict(epochs=1, lr=1e-3)})
    monkeypatch.setattr(config, "SEEDS", (1, 2))
    monkeypatch.setattr(config, "RANKS", (1,))
    monkeypatch.setattr(report, "METHOD_ORDER", ["bptt", "es", "eggroll-r1"])
    args = ["reproduce", "--config", "quick", "--data", "emulated", "--mnist", str(tmp_path / "mnist"), "--data-root",
            str(emulated), "--cache-dir", str(tmp_path / "cache"), "--results", str(tmp_path), "--quiet"]
    with pytest.warns(UserWarning, match="differ from the official MNIST files"):
        assert run.main(args) == 0
    printed = capsys.readouterr().out
    folder = tmp_path / "local" / "emulated" / "quick"
    assert printed == (folder / "comparison.md").read_text()
    assert "| eggroll-r1 | 78.75 |" in printed and "6 runs" in printed
    finals = sorted(folder.glob("runs/*/final.json"))
    assert len(finals) == 6 and (folder / "table.md").exists()
    made = json.loads(finals[0].read_text())["data"]["emulated"]
    assert made == emulate.provenance(emulated) and made["seed"] == 0

    final = json.loads(finals[0].read_text())
    final["data"]["fingerprint"]["train"] = "17 samples, sha256 0"
    finals[0].write_text(json.dumps(final))
    with pytest.warns(UserWarning):
        assert run.main(args) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said[-1].startswith(f"error: {finals[0].parent} was trained on other data than {emulated} (its train "
                               f"split was 17 samples, sha256 0, here ") and said[-1].endswith(comparison.RENAME)


@pytest.mark.parametrize("extra, said", [
    (["--config", "hyperscale", "--data", "emulated"], "--data is for --config paper, quick, best; drop it"),
    (["--mnist", "somewhere"], "--mnist is for --data emulated, which makes the data from MNIST"),
    (["--data", "nmnist", "--mnist", "somewhere"], "--mnist is for --data emulated (real N-MNIST is downloaded"),
    (["--data", "nmnist"], "holds emulated recordings; give --data-root a copy of the real N-MNIST"),
    (["--data", "emulated", "--real-root", "nowhere"], "--real-root nowhere")])
def test_bad_data_options_are_one_line_and_exit_2(tmp_path, capsys, extra, said):
    root = tmp_path / "copy" / "NMNIST"
    root.mkdir(parents=True)
    (root / emulate.PROVENANCE).write_text(json.dumps(comparison.PROJECT_EMULATION))
    assert run.main(["reproduce", "--results", str(tmp_path), "--data-root", str(root.parent), *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and said in err
    assert not (tmp_path / "local").exists()


def test_the_data_to_download_is_fetched_before_the_first_run_is_announced(tmp_path, monkeypatch, capsys):
    """reproduce --data nmnist where the copy is absent: a failed download is the one line said,
    before any run is announced, and nothing is left under --results."""
    def unreachable(root):
        raise data.MissingDataError("N-MNIST could not be downloaded (no answer for 60 s); download it by hand")
    monkeypatch.setattr(data, "_download", unreachable)
    results = tmp_path / "results"
    code, err = run_main(["reproduce", "--config", "quick", "--data", "nmnist", "--results", str(results), "--runs",
                          "bptt", "--seeds", "1", "--data-root", str(tmp_path / "absent"), "--quiet"], capsys)
    assert code == 2 and err == "error: N-MNIST could not be downloaded (no answer for 60 s); download it by hand\n"
    assert not results.exists()


def test_a_grid_trains_no_run_beside_finished_runs_of_other_data(tmp_path, dataset, monkeypatch, capsys):
    """reproduce without --data: where a grid's finished runs trained on other data than --data-root
    (the committed ones on emulated N-MNIST, a user's copy real), no run is trained into that folder:
    one line names the run, before anything is downloaded. On their data, the grid goes on."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=16,
                                                                 eval_every=1), "bptt": dict(epochs=1)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "RANKS", (1,))
    monkeypatch.setattr(report, "METHOD_ORDER", ["bptt", "es", "eggroll-r1"])
    root, cache = Path(dataset[1]), Path(dataset[3])
    fingerprint = data.load_nmnist(root, 10, cache, progress=False).fingerprint()
    grid = tmp_path / "results" / "quick"
    finished = write_preset_run(grid, "quick", "es", 1, data={"fingerprint": {**fingerprint, "train": "9 samples, "
                                                                              "sha256 0"},
                                                              "emulated": comparison.PROJECT_EMULATION})
    monkeypatch.setattr(data, "_download", lambda root: pytest.fail("downloaded"))
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--cache-dir", str(cache),
            "--quiet"]
    for where in (["--data-root", str(root)], ["--data-root", str(tmp_path / "absent"), "--download"]):
        code, err = run_main(args + where, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"{finished} was trained on other data" in err and err.strip().endswith(comparison.OWN_FOLDER)
    assert [path.name for path in (grid / "runs").iterdir()] == [finished.name]

    final = json.loads((finished / "final.json").read_text())
    (finished / "final.json").write_text(json.dumps({**final, "data": {"fingerprint": fingerprint},
                                                     "n_train": int(fingerprint["train"].split()[0])}))
    assert run.main(args + ["--data-root", str(root)]) == 0
    assert sorted(path.name for path in (grid / "runs").iterdir()) == ["bptt-seed1", "eggroll-r1-seed1", "es-seed1"]


def test_a_complete_grid_without_its_data_is_told_what_is_missing(tmp_path, monkeypatch, capsys):
    """reproduce of a grid whose every run has finished, trained before runs recorded their data: a
    --data-root that holds no N-MNIST, or lacks a split, is called so (not other data); one a download
    would fill is other data, and --report-only is offered, as nothing is left to train."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=16,
                                                                 eval_every=1), "bptt": dict(epochs=1)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "RANKS", (1,))
    monkeypatch.setattr(data, "_download", lambda root: pytest.fail("downloaded"))
    grid = tmp_path / "results" / "quick"
    for name in ("bptt", "es", "eggroll-r1"):
        write_preset_run(grid, "quick", name, 1)
    partial = tmp_path / "partial"
    (partial / "NMNIST" / "Train").mkdir(parents=True)
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--quiet", "--data-root"]
    for where, message in (([str(tmp_path / "absent")], f"error: --data-root {tmp_path / 'absent'} holds no N-MNIST"),
                           ([str(partial), "--download"], f"error: --data-root {partial}: the split folder "
                                                          f"{partial / 'NMNIST' / 'Test'} is missing, and every "
                                                          f"command reads both splits"),
                           ([str(tmp_path / "absent"), "--download"], f"error: {grid / 'runs' / 'bptt-seed1'} was "
                                                                      f"trained on other data than")):
        code, err = run_main(args + where, capsys)
        assert code == 2 and err.count("\n") == 1 and err.startswith(message), err
    assert "a download is the real N-MNIST" in err and err.endswith("add --report-only to rewrite the report "
                                                                      "without the data\n"), err
    assert not (tmp_path / "absent").exists() and not (partial / "NMNIST" / "Test").exists()


@pytest.mark.parametrize("source", ["nmnist", "emulated"])
def test_a_comparison_report_reads_no_data(tmp_path, monkeypatch, capsys, source):
    """reproduce --data ... --report-only writes the tables and comparison.md from the finished runs'
    records alone: no download, no emulation, no --data-root asked for or taken."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=16,
                                                                 eval_every=1), "bptt": dict(epochs=1)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "RANKS", (1,))
    monkeypatch.setattr(data, "_download", lambda root: pytest.fail("downloaded"))
    monkeypatch.setattr(emulate, "emulate", lambda *args, **kwargs: pytest.fail("emulated"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))  # no N-MNIST there
    grid = tmp_path / "results" / "local" / source / "quick"
    for name in ("bptt", "es", "eggroll-r1"):
        write_preset_run(grid, "quick", name, 1)
    args = ["reproduce", "--config", "quick", "--data", source, "--results", str(tmp_path / "results"), "--quiet",
            "--report-only"]
    assert run.main(args) == 0
    assert (grid / "comparison.md").is_file() and (grid / "table.md").is_file()
    capsys.readouterr()
    with pytest.raises(SystemExit) as refused:
        run.main(args + ["--data-root", str(tmp_path)])
    assert refused.value.code == 2
    assert "--report-only trains nothing, so it reads no data: drop --data-root" in capsys.readouterr().err


def test_report_only_is_offered_only_for_runs_that_make_one_report(tmp_path, monkeypatch, capsys):
    """Every run finished, on other data than --data-root: --report-only is offered where the runs
    agree with each other, not where they trained on two data sets (it would refuse them)."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=16,
                                                                 eval_every=1), "bptt": dict(epochs=1)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "RANKS", (1,))
    grid = tmp_path / "results" / "quick"
    for name, train in (("bptt", "a"), ("es", "a"), ("eggroll-r1", "a")):
        write_preset_run(grid, "quick", name, 1, data={"fingerprint": {"train": train}, "emulated": {"seed": 0}})
    root = write_dataset(tmp_path / "data" / "NMNIST", n_train=2, n_test=1).parent
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--quiet", "--data-root",
            str(root), "--cache-dir", str(tmp_path / "cache")]
    code, err = run_main(args, capsys)
    assert code == 2 and "was trained on other data than" in err and "add --report-only" in err, err
    final = grid / "runs" / "es-seed1" / "final.json"
    final.write_text(json.dumps(dict(json.loads(final.read_text()), data={"fingerprint": {"train": "b"}})))
    code, err = run_main(args, capsys)
    assert code == 2 and "was trained on other data than" in err and "--report-only" not in err, err


def test_a_users_comparison_md_is_refused_and_the_comparisons_own_is_not(tmp_path):
    """reproduce --data writes comparison.md into the grid's folder: a user's file of that name is
    refused before any work (and left as it is); the comparison's own, from an earlier run, is not."""
    grid = tmp_path / "local" / "quick"
    grid.mkdir(parents=True)
    (grid / "comparison.md").write_text("my comparison notes\n")
    with pytest.raises(run_folder.UsageError, match="comparison.md is a file this command did not write"):
        report.refuse_foreign_files(grid)
    assert (grid / "comparison.md").read_text() == "my comparison notes\n"
    (grid / "comparison.md").unlink()
    write_run(grid, "es", 1)
    comparison.write(grid, "quick")
    report.refuse_foreign_files(grid)


@pytest.mark.parametrize("given", ["the copy's folder", "its NMNIST folder"])
def test_real_root_refuses_an_emulation_however_it_is_pointed_at(tmp_path, given):
    """--real-root given an emulated copy, or that copy's NMNIST folder itself (the flat layout data.py
    reads as well: Train/, Test/ and EMULATED.json side by side), is an emulation all the same."""
    base = tmp_path / "emulated" / "NMNIST"
    write_dataset(base, n_train=1, n_test=1)
    (base / emulate.PROVENANCE).write_text(json.dumps(comparison.PROJECT_EMULATION))
    root = base.parent if given == "the copy's folder" else base
    with pytest.raises(run_folder.UsageError, match="holds emulated N-MNIST"):
        training.check_real_root(str(root), None)


def test_the_sides_line_counts_every_seed_of_every_run():
    """The line under a comparison counts runs, seeds included: three seeds of one method and one of
    another are 4 runs, not 2 names."""
    final = {"device": "cpu (x86_64)", "data": None}
    runs = {"eggroll-r4": [(final, None)] * 3, "bptt": [(final, None)]}
    assert "; 4 runs; they trained on " in comparison.sides_line(runs, "they")
