"""The command line: a killed run resumes to the very same weights, bad requests fail cleanly,
and `reproduce` writes its tables and figures and skips finished runs."""
import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import config
import data
import exits
import re
import reproduce
import resources
import run
import run_folder
import snn
import training
from nmnist_files import REAL_DIR, needs_real, random_events, write_dataset, write_recording
from test_report import write_preset_run, write_run

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--population", "8", "--batch-size", "16", "--eval-every", "5", "--quiet"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """200 training and 30 test recordings of random events, and a cache folder."""
    base = tmp_path_factory.mktemp("nmnist")
    write_dataset(base / "NMNIST", n_train=20, n_test=3, n_events=300)
    return ["--data-root", str(base), "--cache-dir", str(base / "cache")]


def train_command(out, dataset, *extra):
    return [sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), *SMALL, *dataset, *extra]


def stored_params(out):
    with np.load(out / run_folder.CHECKPOINT) as stored:
        return {name: stored[name] for name in stored.files if name.startswith(("param/", "adam_"))}


def test_killed_run_resumes_to_bitwise_the_same_parameters(tmp_path, dataset):
    """Kill a run (SIGKILL) after its first checkpoint; --resume must end exactly where an
    uninterrupted run ends: every parameter and Adam moment equal bit for bit. The minibatches
    are augmented, so their random shifts must repeat too."""
    generations = ["--generations", "200", "--max-shift", "2"]
    subprocess.run(train_command(tmp_path / "whole", dataset, *generations), check=True, cwd=ROOT)

    killed = tmp_path / "killed"
    process = subprocess.Popen(train_command(killed, dataset, *generations), cwd=ROOT)
    deadline = time.time() + 120
    while not (killed / run_folder.CHECKPOINT).exists() and time.time() < deadline:
        time.sleep(0.005)
    process.kill()
    process.wait()
    with np.load(killed / run_folder.CHECKPOINT) as stored:
        step = int(stored["step"])
    assert 0 < step < 200, "the run must be killed mid-way for this test to mean anything"

    subprocess.run(train_command(killed, dataset, *generations, "--resume"), check=True, cwd=ROOT)
    whole, resumed = stored_params(tmp_path / "whole"), stored_params(killed)
    assert whole.keys() == resumed.keys()
    for name in whole:
        np.testing.assert_array_equal(whole[name], resumed[name], err_msg=name)
    lines = [json.loads(line) for line in (killed / "metrics.jsonl").read_text().splitlines()]
    assert [m["generation"] for m in lines] == list(range(5, 201, 5))


def run_main(args, capsys):
    code = run.main(args)
    return code, capsys.readouterr().err


def test_bad_requests_exit_2_with_one_line_and_touch_nothing(tmp_path, dataset, capsys):
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    cases = [
        (["--rank", "11"], "--rank 11 exceeds the smaller side of W2 (10x64) of the network 2312-64-10: use --rank <= 10"),
        (["--population", "7"], "--population must be an even number >= 2"),
        (["--sigma", "0"], "--sigma must lie in [1e-06, 10], got 0.0: use e.g. --sigma 0.1"),
        (["--sigma", "1e-320"], "--sigma must lie in [1e-06, 10], got 1e-320"),
        (["--sigma", "inf"], "--sigma must lie in [1e-06, 10], got inf"),
        (["--sigma", "1e30"], "--sigma must lie in [1e-06, 10], got 1e+30"),
        (["--lr", "nan"], "--lr must lie in (0, 1], got nan: use e.g. --lr 0.01"),
        (["--lr", "inf"], "--lr must lie in (0, 1], got inf"),
        (["--init-std", "nan"], "--init-std must lie in [1e-06, 10], got nan"),
        (["--init-std", "-1"], "--init-std must lie in [1e-06, 10], got -1.0: use e.g. --init-std 0.3"),
        (["--init-std", "1e-300"], "--init-std must lie in [1e-06, 10], got 1e-300"),
        (["--weight-decay", "nan"], "--weight-decay must lie in [0.0, 1.0], got nan"),
        (["--beta", "nan"], "--beta must lie in [0.0, 1.0], got nan"),
        (["--beta", "5"], "--beta must lie in [0.0, 1.0], got 5.0: use e.g. --beta 0.9"),
        (["--threshold", "nan"], "--threshold must lie in [1.2e-38, 100], got nan"),
        (["--threshold", "-1"], "--threshold must lie in [1.2e-38, 100], got -1.0"),
        (["--threshold", "1e-39"], "--threshold must lie in [1.2e-38, 100], got 1e-39"),  # under float32's normal
        (["--threshold", "0"], "--threshold must lie in [1.2e-38, 100], got 0.0"),
        (["--logit-scale", "0"], "--logit-scale must lie in [0.001, 1000]"),
        (["--logit-scale", "1e-10"], "--logit-scale must lie in [0.001, 1000], got 1e-10: use e.g. --logit-scale 5"),
        (["--seed", "-1"], "--seed must lie in"),
        (["--max-shift", "-1"], "--max-shift must lie in 0..33"),
        (["--max-shift", "34"], "--max-shift must lie in 0..33"),
        (["--generations", "3"], "holds a run with other settings (--generations 2, not 3); use another --out"),
        (["--generations", "3", "--resume"], "holds a run with other settings (--generations 2, not 3)"),
    ]
    for extra, message in cases:
        code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset, *extra], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    code, err = run_main(["train", "--out", str(tmp_path / "new"), "--data-root", str(tmp_path / "absent"),
                          "--cache-dir", str(tmp_path / "cache"), *SMALL], capsys)
    assert code == 2 and "N-MNIST not found" in err and not (tmp_path / "new").exists()
    for method in ("bptt", "es"):  # a bad option leaves no config.json behind, so no rerun needs --force
        code, err = run_main(["train", "--out", str(tmp_path / "new"), "--method", method, "--lr", "nan",
                              "--batch-size", "16", *dataset], capsys)
        assert code == 2 and "--lr must lie in" in err and not (tmp_path / "new").exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    final = (out / "final.json").read_bytes()
    (out / run_folder.CHECKPOINT).write_bytes(b"not a checkpoint")  # a finished run trains no more: a note says it
    code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset, "--resume"], capsys)
    assert code == 0 and err.startswith(f"note: {out} has finished (its final.json holds the results): --resume "
                                        f"trains and writes nothing; but checkpoint {out / run_folder.CHECKPOINT} is "
                                        f"damaged") and (out / "final.json").read_bytes() == final, err
    (out / "final.json").unlink()  # an unfinished one does
    code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset, "--resume"], capsys)
    assert code == 2 and "is damaged" in err
    with pytest.raises(SystemExit) as exit_info:
        run.main(["train", "--method", "sgd"])
    assert exit_info.value.code == 2


def test_a_run_stored_before_a_setting_existed_resumes_with_its_default(tmp_path, dataset, capsys):
    """A config.json without max_shift (written before the option existed) is the default,
    max_shift 0: --resume accepts it, and refuses --max-shift 1 as other settings."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    config = json.loads((out / "config.json").read_text())
    del config["max_shift"]
    (out / "config.json").write_text(json.dumps(config))
    assert run.main(["train", "--out", str(out), "--generations", "2", "--resume", *SMALL, *dataset]) == 0
    code, err = run_main(["train", "--out", str(out), "--generations", "2", "--resume", "--max-shift", "1",
                          *SMALL, *dataset], capsys)
    assert code == 2 and "other settings (--max-shift 0, not 1)" in err


def test_force_replaces_a_run(tmp_path, dataset):
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    assert run.main(["train", "--out", str(out), "--generations", "3", "--force", *SMALL, *dataset]) == 0
    assert json.loads((out / "final.json").read_text())["generations"] == 3


def test_reproduce_writes_tables_and_figures_and_skips_finished_runs(tmp_path, dataset, monkeypatch, capsys):
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1),
                                                  "bptt": dict(epochs=1, lr=1e-3)})
    monkeypatch.setattr(config, "SEEDS", (1, 2))
    monkeypatch.setattr(config, "RANKS", (1, 2))
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset]
    assert run.main(args) == 0
    report = tmp_path / "quick"
    table = (report / "table.md").read_text()
    for name in ("bptt", "es", "eggroll-r1", "eggroll-r2"):
        assert f"| {name} |" in table
    per_seed = (report / "per_seed.md").read_text()
    assert "seed 1" in per_seed and "seed 2" in per_seed
    for figure in ("rank_ablation.png", "convergence.png", "wallclock.png", "accuracy_time.png"):
        assert (report / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finals = sorted(report.glob("runs/*/final.json"))
    assert len(finals) == 8
    stamps = [f.stat().st_mtime_ns for f in finals]
    assert run.main(args) == 0
    assert [f.stat().st_mtime_ns for f in finals] == stamps

    real_root = str(write_dataset(tmp_path / "real" / "NMNIST", n_train=3, n_test=3, seed=8).parent)
    reported = [*args[:6], *dataset[2:], "--report-only"]  # no --data-root: it trains on nothing
    assert run.main(reported + ["--real-root", real_root]) == 0
    assert [f.stat().st_mtime_ns for f in finals] == stamps
    assert len(list(report.glob("runs/*/real.json"))) == 8
    assert "real recordings % |" in (report / "table.md").read_text()
    reals = sorted(report.glob("runs/*/real.json"))
    scored = [r.read_bytes() for r in reals]
    assert run.main(reported + ["--real-root", real_root]) == 0  # the same recordings: kept
    assert [r.read_bytes() for r in reals] == scored
    capsys.readouterr()
    trained_on = dataset[dataset.index("--data-root") + 1]
    code, err = run_main(args + ["--real-root", trained_on], capsys)  # the copy the runs trained on
    assert code == 2 and err == (f"error: --real-root {trained_on} is the copy --data-root names, the runs' own data, "
                                 f"and its scores would be reported as other recordings'; give another copy of "
                                 f"N-MNIST, or drop --real-root\n"), err
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=2, n_test=2, seed=5).parent
    assert run.main(reported + ["--real-root", str(other)]) == 0  # other recordings: scored again
    for real in reals:
        assert json.loads(real.read_text())["samples"]["test"] == 20, real

    # every run finished: skipped only on its own data
    elsewhere = [str(other) if arg == trained_on else arg for arg in args]
    code, err = run_main(elsewhere, capsys)
    assert code == 2 and "was trained on other data than" in err, err
    assert [f.stat().st_mtime_ns for f in finals] == stamps
    (other / "NMNIST" / "EMULATED.json").write_text(json.dumps({"version": 1, "seed": 0, "mnist_sha256": {}}))
    code, err = run_main(reported + ["--real-root", str(other)], capsys)
    assert code == 2 and f"--real-root {other} holds emulated N-MNIST (its EMULATED.json says so)" in err, err


def test_reproduce_refuses_a_real_root_it_cannot_score_a_run_scored_elsewhere_on(tmp_path, dataset, monkeypatch,
                                                                                   capsys):
    """--real-root on a finished run without its checkpoint, whose real.json scored other recordings
    (by their fingerprint, or by the split sizes of a real.json written before fingerprints were
    kept): one line, nothing written, not a table showing those scores as this copy's. The
    recordings it was scored on, or no --real-root, report it."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    real_root = str(write_dataset(tmp_path / "real" / "NMNIST", n_train=3, n_test=3, seed=3).parent)  # not "other"
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset, "--runs",
            "eggroll-r1", "--seeds", "1"]
    assert run.main(args + ["--real-root", real_root]) == 0
    out = tmp_path / "quick" / "runs" / "eggroll-r1-seed1"
    (out / run_folder.CHECKPOINT).unlink()  # as the committed runs are kept
    reported = [*args[:6], *dataset[2:], "--report-only"]  # every finished run, on no data of its own
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=2, n_test=2, seed=5).parent
    real = json.loads((out / "real.json").read_text())
    for held in (real, {key: value for key, value in real.items() if key != "data"}):
        (out / "real.json").write_text(json.dumps(held))
        before = {path: path.read_bytes() for path in sorted((tmp_path / "quick").rglob("*")) if path.is_file()}
        capsys.readouterr()
        code, err = run_main(reported + ["--real-root", str(other)], capsys)
        assert code == 2 and err == (
            f"error: --real-root {other}: 1 finished run(s) of {tmp_path / 'quick'} have no checkpoint.npz to score on "
            f"it, and their real.json holds scores on other recordings (first {out}), which the report would show as "
            f"this copy's; give --real-root the recordings they were scored on, or leave it out to report the scores "
            f"they hold\n"), err
        assert {path: path.read_bytes() for path in before} == before
        assert run.main(reported + ["--real-root", real_root]) == 0
        assert run.main([*args[:6], "--report-only"]) == 0  # no --real-root: no cache of frames to read


def test_reproduce_refuses_a_real_root_that_holds_the_runs_own_recordings(tmp_path, dataset, monkeypatch, capsys):
    """--report-only names no --data-root, so a copy of the data the runs trained on cannot be told by
    its path: by the fingerprint of its recordings, one line, and no real.json written."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset, "--runs",
            "eggroll-r1", "--seeds", "1"]
    assert run.main(args) == 0
    copy = tmp_path / "copy"
    shutil.copytree(dataset[1], copy)
    out = tmp_path / "quick" / "runs" / "eggroll-r1-seed1"
    capsys.readouterr()
    code, err = run_main([*args[:6], *dataset[2:], "--report-only", "--real-root", str(copy)], capsys)
    assert code == 2 and err == (
        f"error: --real-root {copy} holds recordings of the data {out} trained and was tested on (a split's "
        f"fingerprint is the same), and their scores would be reported as other recordings'; give another copy of "
        f"N-MNIST, or drop --real-root\n"), err
    assert not (out / "real.json").exists()


def test_evaluate_says_when_the_run_it_scores_has_not_finished(tmp_path, dataset, capsys):
    """evaluate scores a run's checkpoint: of a finished run, with nothing on stderr; of one stopped
    partway (no final.json), with one warning line naming the command that finishes it; of one a
    training process holds, naming that process. The scores are printed all the same."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    capsys.readouterr()
    assert run.main(["evaluate", str(out), *dataset]) == 0
    assert capsys.readouterr().err == ""
    (out / "final.json").unlink()  # stopped after its last checkpoint, before its final evaluation
    assert run.main(["evaluate", str(out), *dataset]) == 0
    printed = capsys.readouterr()
    config = run_folder.read_config(out)
    assert printed.err == (f"warning: {out} has not finished: these are the scores of its checkpoint after 2 updates; "
                           f"{run_folder.resume_command(out, config)} finishes it\n")
    assert json.loads(printed.out)["generation"] == 2
    with run_folder.owned(out):
        assert run.main(["evaluate", str(out), *dataset]) == 0
    assert capsys.readouterr().err == (f"warning: {out} is being trained now (by process {os.getpid()}): these are "
                                       f"the scores of its checkpoint after 2 updates; score it again once it "
                                       f"finishes\n")
    broken = tmp_path / "run\nnamed"  # a line break in the folder's name: the warning stays one line
    out.rename(broken)
    assert run.main(["evaluate", str(broken), *dataset]) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"warning: {tmp_path}/run\\nnamed has not finished: "), err


def test_a_run_folder_moved_while_training_is_said_as_such(tmp_path, dataset, monkeypatch, capsys):
    """The run folder renamed between two generations, and perhaps another folder, or a link to
    another run, put at its path: the next write stops, one line says the folder went away and that
    --resume continues it where it now is (not "create the folder", which would start a run over),
    nothing is written into what stands at the old path, and resumed where it went, the run
    finishes. Moved after the last step's checkpoint, no final.json is written at the old path either."""
    save_checkpoint = run_folder.save_checkpoint
    options = ["--generations", "6", "--population", "8", "--batch-size", "16", "--eval-every", "2", "--quiet",
               *dataset]
    other = tmp_path / "other-run"
    assert run.main(["train", "--out", str(other), *options]) == 0
    others = {path.name: path.read_bytes() for path in other.iterdir()}
    for put, at in (None, 2), ("folder", 2), ("link", 2), ("folder", 6), ("link", 6):
        out, moved = tmp_path / f"run-{put}-{at}", tmp_path / f"moved-{put}-{at}"

        def moving(folder, params, state, step, *others):  # once the checkpoint of step `at` is written
            save_checkpoint(folder, params, state, step, *others)
            if folder == out and step == at:
                out.rename(moved)
                if put == "folder":
                    out.mkdir()
                    (out / "notes.txt").write_text("the user's")
                elif put == "link":
                    out.symlink_to(other)
        monkeypatch.setattr(run_folder, "save_checkpoint", moving)
        code, err = run_main(["train", "--out", str(out), *options], capsys)
        assert code == 2 and err == (f"error: the run folder {out} disappeared while training (moved, deleted or "
                                     f"replaced); nothing more is written there; if it was moved, continue it where "
                                     f"it is now with --resume (its last checkpoint holds step {at})\n"), err
        if put == "folder":
            assert sorted(path.name for path in out.iterdir()) == ["notes.txt"]
        assert {path.name: path.read_bytes() for path in other.iterdir()} == others
        monkeypatch.setattr(run_folder, "save_checkpoint", save_checkpoint)
        assert run.main(["train", "--out", str(moved), "--resume", *options]) == 0
        assert (moved / "final.json").exists()


def test_reproduce_can_train_part_of_the_grid(tmp_path, dataset, monkeypatch):
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset,
            "--runs", "es,eggroll-r2", "--seeds", "2,3"]
    assert run.main(args) == 0
    assert sorted(p.parent.name for p in tmp_path.glob("quick/runs/*/final.json")) == \
        ["eggroll-r2-seed2", "eggroll-r2-seed3", "es-seed2", "es-seed3"]


def test_reproduce_force_retrains_only_a_run_of_other_settings(tmp_path, dataset, monkeypatch, capsys):
    """reproduce --force deletes and trains again a run folder that holds a run of other settings
    under a preset run's name; an unfinished run of the preset's own settings it resumes, keeping
    what that run recorded, as reproduce without --force does."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=4, population=4, batch_size=50,
                                                                 eval_every=2)})
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--quiet", *dataset,
            "--runs", "eggroll-r1,eggroll-r2", "--seeds", "1"]
    assert run.main(args) == 0
    other, own = (tmp_path / "results" / "quick" / "runs" / f"eggroll-r{rank}-seed1" for rank in (1, 2))
    (own / "final.json").unlink()  # stopped after its last checkpoint, before its final evaluation
    metrics = (own / "metrics.jsonl").read_text()
    elsewhere = tmp_path / "elsewhere"  # a run of other settings, moved in under the preset run's name
    assert run.main(["train", "--out", str(elsewhere), "--method", "eggroll", "--rank", "1", "--generations", "2",
                     "--population", "4", "--batch-size", "50", "--eval-every", "2", "--quiet", *dataset]) == 0
    shutil.rmtree(other)
    shutil.move(elsewhere, other)
    code, err = run_main(args, capsys)
    assert code == 2 and f"{other} holds a run with other settings (--generations 2, not 4)" in err, err
    assert not (own / "final.json").exists()  # nothing after the refused run is trained
    trained = []  # (run, force) of each run reproduce trains: a retrained run would record the same metrics
    train = training.train
    monkeypatch.setattr(training, "train", lambda config, out, **kw: trained.append((out.name, kw["force"]))
                        or train(config, out, **kw))
    code, err = run_main(args + ["--force"], capsys)
    assert code == 0, err
    assert trained == [("eggroll-r1-seed1", True), ("eggroll-r2-seed1", False)]
    assert (own / "final.json").exists() and (own / "metrics.jsonl").read_text() == metrics  # resumed, not retrained
    assert json.loads((other / "config.json").read_text())["generations"] == 4
    assert json.loads((other / "final.json").read_text())["generations"] == 4


def test_reproduce_force_deletes_nothing_through_a_link_in_place_of_a_run(tmp_path, dataset, monkeypatch, capsys):
    """A preset run's folder that is a link to a run of the user's elsewhere, of other settings:
    --force would delete that run through the link; it is refused in one line, and the run it
    leads to is left as it was."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    mine = tmp_path / "keep" / "mine"
    assert run.main(["train", "--out", str(mine), "--method", "eggroll", "--rank", "1", "--generations", "1",
                     "--population", "4", "--batch-size", "50", "--eval-every", "1", "--quiet", *dataset]) == 0
    before = {path.name: path.read_bytes() for path in mine.iterdir()}
    link = tmp_path / "results" / "quick" / "runs" / "eggroll-r1-seed1"
    link.parent.mkdir(parents=True)
    link.symlink_to(mine)
    code, err = run_main(["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--quiet",
                          *dataset, "--runs", "eggroll-r1", "--seeds", "1", "--force"], capsys)
    assert code == 2 and err.endswith(f"error: {link} is a symbolic link to {mine}, and {link} there holds a run of "
                                      f"other settings, which --force would delete through the link; remove the link "
                                      f"(what it leads to is left as it is) and reproduce trains the preset's run in "
                                      f"a folder of its own\n"), err
    assert {path.name: path.read_bytes() for path in mine.iterdir()} == before
    link.unlink()  # the runs folder itself a link to the user's folder that holds the run
    link.parent.rmdir()
    link.parent.symlink_to(mine.parent)
    mine = mine.rename(mine.parent / "eggroll-r1-seed1")  # the user's run under the preset run's name
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--quiet", *dataset, "--runs",
            "eggroll-r1", "--seeds", "1"]
    code, err = run_main(args + ["--force"], capsys)
    assert code == 2 and f"error: {link.parent} is a symbolic link to {mine.parent}, and " in err, err
    assert {path.name: path.read_bytes() for path in mine.iterdir()} == before
    code, err = run_main(args, capsys)  # without --force, nothing to delete: the run of other settings said as such
    assert code == 2 and "holds a run with other settings" in err and "symbolic link" not in err, err
    link.parent.unlink()  # the preset's folder itself a link to one that holds runs/
    (mine.parent.parent / "runs").mkdir()
    mine = mine.rename(mine.parent.parent / "runs" / mine.name)
    link.parent.parent.rename(tmp_path / "quick-real")
    (tmp_path / "quick-real").rmdir()
    link.parent.parent.symlink_to(mine.parent.parent)
    code, err = run_main(args + ["--force"], capsys)
    assert code == 2 and f"error: {link.parent.parent} is a symbolic link to {mine.parent.parent}, and " in err, err
    assert {path.name: path.read_bytes() for path in mine.iterdir()} == before


def test_reproduce_refuses_a_users_file_under_a_tables_name_before_it_trains(tmp_path, dataset, monkeypatch, capsys):
    """A per_seed.md of the user's in results/<preset>: one line, exit status 2, before any run trains,
    and the file as it was; and a report whose runs are all gone again takes its figures with them."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    results = tmp_path / "results"
    (results / "quick").mkdir(parents=True)
    (results / "quick" / "per_seed.md").write_text("my notes\n")
    args = ["reproduce", "--config", "quick", "--results", str(results), "--quiet", *dataset,
            "--runs", "eggroll-r2", "--seeds", "1"]
    code, err = run_main(args, capsys)
    assert code == 2 and err == (f"error: {results / 'quick' / 'per_seed.md'} is a file this command did not write (not "
                                 f"a table or figure of run.py reproduce): it is left as it is; move it out of "
                                 f"{results / 'quick'}, or give reproduce another --results\n")
    assert not (results / "quick" / "runs").exists() and (results / "quick" / "per_seed.md").read_text() == "my notes\n"
    (results / "quick" / "per_seed.md").unlink()
    assert run.main(args) == 0 and len(list((results / "quick").glob("*.png"))) == 4
    shutil.move(results / "quick" / "runs" / "eggroll-r2-seed1", tmp_path / "moved")
    code, err = run_main(args[:6] + ["--report-only"], capsys)
    assert code == 2 and "nothing to report" in err  # no run left: no report, the figures of the last as they were
    assert len(list((results / "quick").glob("*.png"))) == 4


def test_reproduce_spike_cost_prices_the_paper_runs_and_is_todays_run_at_cost_0(tmp_path, dataset, monkeypatch):
    """--config spike-cost trains BPTT and EGGROLL r = 4 at each cost, then the matched pair, into
    spike-cost/runs/<run>-<length>-cost<c>-seed<s> and writes table.md and spike_cost.png. At cost 0 a run is bit for bit `train` with the same settings
    and no --spike-cost; a price moves the weights."""
    monkeypatch.setitem(config.PRESETS, "paper", {"common": dict(generations=3, population=8, batch_size=16,
                                                                 eval_every=3, lr=0.1, sigma=0.2),
                                                  "bptt": dict(epochs=1, lr=1e-2)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "SPIKE_COSTS", (0.0, 0.05))
    monkeypatch.setitem(config.PRESETS, "best", {"common": dict(generations=4, population=8, batch_size=16,
                                                                eval_every=2)})
    monkeypatch.setattr(config, "MATCHED_COSTS", (0.05,))
    assert run.main(["reproduce", "--config", "spike-cost", "--results", str(tmp_path), "--quiet", *dataset]) == 0
    results = tmp_path / "spike-cost"
    assert sorted(p.parent.name for p in results.glob("runs/*/final.json")) == \
        ["bptt-e1-cost0-seed1", "bptt-e1-cost0.05-seed1", "bptt-e2-cost0.05-seed1", "eggroll-r4-g3-cost0-seed1",
         "eggroll-r4-g3-cost0.05-seed1", "eggroll-r4-g4-cost0.05-seed1"]
    assert (results / "spike_cost.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "| eggroll-r4, 4 generations | 0.05 | 1 |" in (results / "table.md").read_text()
    plain = tmp_path / "plain"
    assert run.main(["train", "--out", str(plain), "--generations", "3", "--population", "8", "--batch-size", "16",
                     "--eval-every", "3", "--lr", "0.1", "--sigma", "0.2", "--quiet", *dataset]) == 0
    for cost, same in (("0", True), ("0.05", False)):
        priced = stored_params(results / "runs" / f"eggroll-r4-g3-cost{cost}-seed1")
        assert all(np.array_equal(priced[name], value) for name, value in stored_params(plain).items()) == same


def test_report_only_trains_nothing_and_refuses_a_folder_without_a_finished_run(tmp_path, dataset, capsys):
    """--report-only never trains; where no run has finished there is nothing to report: one line,
    and no table of empty cells; a file where the runs are kept is named as such."""
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", "--report-only"]
    code, err = run_main(args, capsys)
    assert code == 2 and err == (f"error: --report-only: no run in {tmp_path / 'quick' / 'runs'} has finished, so "
                                 f"there is nothing to report; drop --report-only to train the runs first\n"), err
    assert list(tmp_path.iterdir()) == []
    code = ("import sys, time, pathlib, run_folder\n"  # another reproduce, its first run still training
            "with run_folder.owned(pathlib.Path(sys.argv[1])):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(120)\n")
    owner = subprocess.Popen([sys.executable, "-c", code, str(tmp_path / "quick")], cwd=ROOT, stdout=subprocess.PIPE,
                             text=True)
    try:
        assert owner.stdout.readline().strip() == "held"
        code, err = run_main(args, capsys)
        assert code == 2 and err == (f"error: {tmp_path / 'quick'} is in use by another process (PID {owner.pid}); "
                                     f"wait for it to end or stop it, then run again\n"), err
    finally:
        owner.kill()
        owner.wait()
    (tmp_path / "quick" / ".lock").unlink()
    (tmp_path / "quick" / "runs").write_text("the user's")  # a file where the runs are kept: named, with or without
    for options in (args, args[:-1] + dataset):             # --report-only, before anything is trained or written
        code, err = run_main(options, capsys)
        assert code == 2 and err == (f"error: {tmp_path / 'quick' / 'runs'} is a file, not a folder, where reproduce "
                                     f"keeps the preset's runs: move it out of {tmp_path / 'quick'}, then run "
                                     f"reproduce again\n"), err
        assert (tmp_path / "quick" / "runs").read_text() == "the user's" and len(list(tmp_path.rglob("*"))) == 2
    shutil.rmtree(tmp_path / "quick")
    write_preset_run(tmp_path / "quick", "quick", "es", 1)
    assert run.main(args) == 0
    assert [p.name for p in (tmp_path / "quick" / "runs").iterdir()] == ["es-seed1"]
    assert "| es |" in (tmp_path / "quick" / "table.md").read_text()


def test_evaluate_reports_the_accuracy_training_reported(tmp_path, dataset, capsys, monkeypatch):
    """`evaluate` on the training data's own copy gives the val and test accuracy of final.json."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "3", *SMALL, *dataset]) == 0
    final = json.loads((out / "final.json").read_text())
    capsys.readouterr()
    assert run.main(["evaluate", str(out), *dataset]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["generation"] == 3
    assert report["accuracy"]["val"] == final["val_acc"] and report["accuracy"]["test"] == final["test_acc"]
    assert report["samples"] == {"train": 180, "val": 20, "test": 30}
    assert report["accuracy_per_digit"]["test"] == final["test_acc_per_digit"]
    labels = data.load_nmnist(dataset[1], cache_dir=dataset[3], progress=False).val.labels
    per_digit = report["accuracy_per_digit"]["val"]
    present = [digit for digit in range(10) if (labels == digit).any()]
    assert [digit for digit in range(10) if per_digit[digit] is not None] == present
    weighted = sum(per_digit[d] * (labels == d).sum() for d in present) / labels.size
    assert abs(weighted - final["val_acc"]) < 1e-12
    code, err = run_main(["evaluate", str(tmp_path / "absent")], capsys)
    assert code == 2 and "holds no trained run" in err
    (tmp_path / "a-file").write_text("")  # not a folder: no advice to train into it
    code, err = run_main(["evaluate", str(tmp_path / "a-file")], capsys)
    assert code == 2 and err == (f"error: {tmp_path / 'a-file'} is not a folder, so it holds no trained run; give the "
                                 f"--out folder of a training run\n"), err
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")  # a link that leads nowhere: no folder either
    code, err = run_main(["evaluate", str(tmp_path / "dangling")], capsys)
    assert code == 2 and err == (f"error: {tmp_path / 'dangling'} is not a folder, so it holds no trained run; give "
                                 f"the --out folder of a training run\n"), err
    (tmp_path / "begun").mkdir()
    (tmp_path / "begun" / "metrics.jsonl").write_text("")  # a run stopped at once leaves an empty one
    code, err = run_main(["evaluate", str(tmp_path / "begun")], capsys)
    assert code == 2 and err == (f"error: {tmp_path / 'begun'} holds no trained run (config.json and checkpoint.npz); "
                                 f"train one with `run.py train --out {tmp_path / 'begun'}`\n"), err
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "config.json").write_text("precious")  # a user's file, not a damaged run's
    code, err = run_main(["evaluate", str(tmp_path / "theirs")], capsys)
    assert code == 2 and err.startswith(f"error: {tmp_path / 'theirs'} is not a run folder of this project (it has no "
                                        f"{run_folder.RUN_MARK}) and holds config.json; give evaluate the --out "
                                        f"folder of a training run"), err
    assert (tmp_path / "theirs" / "config.json").read_text() == "precious"
    if Path("/proc/self").is_dir():  # where no run can be trained: no advice to train one there
        code, err = run_main(["evaluate", "/proc/self"], capsys)
        assert code == 2 and err == ("error: /proc/self holds no trained run (config.json and checkpoint.npz); give "
                                     "evaluate the --out folder of a training run\n"), err
    (tmp_path / "results" / "quick" / "runs" / "es-seed1").mkdir(parents=True)  # no run to train there: a fix that works
    (tmp_path / "results" / "quick" / "runs" / "es-seed1" / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    code, err = run_main(["evaluate", str(tmp_path / "results" / "quick")], capsys)
    assert code == 2 and err == (f"error: evaluate {tmp_path / 'results' / 'quick'} is a results folder (its runs/ "
                                 f"holds runs, as reproduce and examples/snn_depth.py make it); give evaluate a run's "
                                 f"folder (train's --out), e.g. "
                                 f"<results>/<preset>/runs/<run>\n"), err
    monkeypatch.chdir(tmp_path)
    code, err = run_main(["evaluate", "-"], capsys)
    assert code == 2 and err == "error: - holds no trained run (config.json and checkpoint.npz); give evaluate the " \
                                "--out folder of a training run\n", err


def test_evaluate_of_a_run_without_its_checkpoint_gives_a_fix_that_works(tmp_path, dataset, capsys):
    """A finished run without its checkpoint.npz (as a committed run is kept), where `train --out`
    is refused: `evaluate` says to put it back or train the run again elsewhere; a run that never
    reached one, to continue it with the command that does."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    (out / run_folder.CHECKPOINT).unlink()
    capsys.readouterr()
    code, err = run_main(["evaluate", str(out), *dataset], capsys)
    assert code == 2 and err == (f"error: {out} holds a run but not its checkpoint.npz, so no weights to score; put it "
                                 f"back (a committed run keeps none), or train the run again with its settings (its "
                                 f"config.json) in another --out and evaluate that folder\n"), err
    code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset], capsys)
    assert code == 2 and "already holds this run, finished" in err  # what evaluate said before
    (out / "final.json").unlink()
    (out / "metrics.jsonl").write_text("")  # stopped before its first checkpoint
    code, err = run_main(["evaluate", str(out), *dataset], capsys)
    assert code == 2 and err == (f"error: {out} holds a run but not its checkpoint.npz, so no weights to score; "
                                 f"continue it with {run_folder.resume_command(out, run_folder.read_config(out))}, "
                                 f"then evaluate it\n"), err


def test_evaluate_of_a_run_without_its_config_gives_a_fix_that_works(tmp_path, dataset, capsys):
    """A run that lost only its config.json (its checkpoint, final.json and metrics there), where
    `train --out` is refused: evaluate says what is missing and how to put it back, not to train
    there; doing what it says (final.json's "config" as config.json) scores the run."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    (out / "config.json").unlink()
    capsys.readouterr()
    before = {path.name: path.read_bytes() for path in out.iterdir() if path.name != run_folder.LOCK}
    code, err = run_main(["evaluate", str(out), *dataset], capsys)
    assert code == 2 and err == (f"error: {out} holds a run without its config.json, so its settings (the network "
                                 f"that reads checkpoint.npz) are unknown; {run_folder.config_fix(out)}\n"), err
    assert "train --out" not in err and 'final.json holds its settings under "config"' in err
    assert {path.name: path.read_bytes() for path in out.iterdir() if path.name != run_folder.LOCK} == before
    (out / "config.json").write_text(json.dumps(json.loads((out / "final.json").read_text())["config"]))
    assert run.main(["evaluate", str(out), *dataset]) == 0


def test_evaluate_scores_all_recordings_as_one_set(tmp_path, dataset, capsys):
    """`evaluate`'s accuracy "all" is the share of every recording scored right: each split's
    accuracy weighted by its number of recordings."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    capsys.readouterr()
    assert run.main(["evaluate", str(out), *dataset]) == 0
    report = json.loads(capsys.readouterr().out)
    samples, accuracy = report["samples"], report["accuracy"]
    right = sum(accuracy[split] * samples[split] for split in samples)
    assert accuracy["all"] == pytest.approx(right / sum(samples.values()), abs=1e-12)


def test_resume_drops_a_cut_metrics_line_and_refuses_a_run_without_checkpoint(tmp_path, dataset, capsys):
    """A kill during the metrics append leaves half a line: --resume drops it. A finished run whose
    checkpoint is gone cannot be resumed: --resume refuses instead of retraining over it."""
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--generations", "10", *SMALL, *dataset]
    assert run.main(args) == 0
    (out / "metrics.jsonl").write_text((out / "metrics.jsonl").read_text() + '{"generation": 1')
    (out / "final.json").unlink()
    assert run.main(args + ["--resume"]) == 0
    assert [json.loads(line)["generation"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [5, 10]

    (out / run_folder.CHECKPOINT).unlink()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = run_main(args + ["--resume"], capsys)
    assert code == 2 and "no checkpoint.npz to resume from" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_each_length_option_belongs_to_its_methods(tmp_path, dataset, capsys):
    """BPTT's length is --epochs and the ES methods' --generations: the other one is refused with
    one line naming the right option, before anything is written."""
    out = tmp_path / "run"
    cases = [(["--method", "bptt", "--generations", "3"], "BPTT's length is --epochs"),
             (["--method", "es", "--epochs", "3"], "es's length is --generations"),
             (["--epochs", "3"], "eggroll's length is --generations")]
    for extra, message in cases:
        code, err = run_main(["train", "--out", str(out), *SMALL, *dataset, *extra], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    assert not out.exists()


def test_an_option_the_method_does_not_use_is_refused_not_passed_over(tmp_path, dataset, capsys):
    """--rank means nothing to vanilla ES and --sigma nothing to BPTT: given, they are refused in
    one line naming the methods they are for, before anything is written."""
    out = tmp_path / "run"
    cases = [(["--method", "es", "--rank", "2"], "--rank is for eggroll only: drop it for --method es"),
             (["--method", "bptt", "--epochs", "1", "--sigma", "0.2"],
              "--sigma is for eggroll and es only: drop it for --method bptt"),
             (["--es-mode", "sequential"], "--es-mode is for es only: drop it for --method eggroll")]
    for extra, message in cases:
        code, err = run_main(["train", "--out", str(out), "--quiet", *dataset, *extra], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    assert not out.exists()


def test_options_that_together_would_zero_the_weights_are_refused_before_the_data_is_read(tmp_path, capsys):
    """--lr 1 --weight-decay 1 (each within its range) multiply the weights by 1 - lr x weight decay = 0
    at each step: one line naming the options, before the data is looked for (a data root that is not
    there is not named)."""
    for method in (["--method", "eggroll"], ["--method", "bptt", "--epochs", "1"]):
        code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                              "--lr", "1", "--weight-decay", "1", *method], capsys)
        assert code == 2 and err == ("error: --lr x --weight-decay must be < 1, got 1.0 x 1.0: each step multiplies "
                                     "the weights by 1 - lr x weight decay, which would zero or flip them; lower "
                                     "one\n"), err
    assert sorted(path.name for path in tmp_path.iterdir()) == []




def test_a_minibatch_growth_over_one_generation_is_refused_as_changing_nothing(tmp_path, capsys):
    """--batch-growth grows the minibatch from the first generation to the last: with --generations 1
    both are the first, so it would change nothing (and a note would promise growth): one line, before
    the data is looked for; two generations grow."""
    code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                          "--generations", "1", "--batch-growth", "4"], capsys)
    assert code == 2 and err == ("error: --batch-growth 4 changes nothing with --generations 1: the minibatch grows "
                                 "from the first generation to the last, and a run of one trains on --batch-size's; "
                                 "give more generations, or drop --batch-growth\n"), err
    code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                          "--generations", "2", "--batch-growth", "4"], capsys)
    assert code == 2 and "N-MNIST not found" in err, err  # past the settings, to the data
    assert sorted(path.name for path in tmp_path.iterdir()) == []

def test_a_learning_rate_float32_would_round_away_is_refused_before_the_data_is_read(tmp_path, capsys):
    """--lr 1e-320 lies in (0, 1], but below float32's smallest normal number a step leaves the weights as
    they are: one line naming it, before the data is looked for. Above it, an lr whose steps float32
    rounds away at most of a layer's initial weights (|w| ~ 0.2, resolved in steps of ~2.4e-8; with
    --inner-scale, the scaled lr of the layers after the first) is refused naming that layer; 1e-7 trains."""
    for lr in ("1e-320", "1e-39"):
        code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                              "--lr", lr], capsys)
        assert code == 2 and err == (f"error: --lr must be at least float32's smallest normal number, 1.18e-38, got "
                                     f"{float(lr)}: a float32 step would leave the weights as they are; use e.g. "
                                     f"--lr 0.01\n"), err
    for lr, more, said in (("1.1754943508222875e-38", [], "--lr 1.1754943508222875e-38: steps of about 1.18e-38 round "
                                                          "away at most of layer 1's initial weights (half of them "
                                                          "beyond 0.2 in magnitude"),
                           ("1e-09", ["--method", "bptt"], "--lr 1e-09: steps of about 1e-09 round away at most of "
                                                           "layer 1's"),
                           ("1e-06", ["--hidden", "16,16", "--inner-scale", "0.001"],
                            "--lr 1e-06 x --inner-scale 0.001: steps of about 1e-09 round away at most of layer 2's")):
        code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                              "--lr", lr, *more], capsys)
        assert code == 2 and err.startswith(f"error: {said}") and err.count("\n") == 1, err
        assert err.endswith(f"raise --lr{' or --inner-scale' if more[:1] == ['--hidden'] else ''}, e.g. --lr 0.01\n")
    code, err = run_main(["train", "--out", str(tmp_path / "run"), "--quiet", "--data-root", str(tmp_path / "x"),
                          "--lr", "1e-7"], capsys)
    assert code == 2 and "N-MNIST not found" in err, err  # past the settings, to the data
    assert sorted(path.name for path in tmp_path.iterdir()) == []

def test_the_learning_rate_refused_as_rounding_away_is_half_float32s_step_at_the_median_weight():
    """refuse_unmoved's limit, eps |w| / 2 at the median |w| of a layer (float32 moves a weight only
    by more than that): 10 % below it is refused, 10 % above it taken."""
    settings = config.RunConfig(method="bptt")
    params = snn.init_network(settings.seed, settings.network, std=settings.init_std, rule=settings.init_rule)
    eps = float(np.finfo(np.float32).eps)
    limit = max(eps * float(np.median(abs(params[f"W{layer}"]))) / 2 for layer in (1, 2))
    with pytest.raises(run_folder.UsageError, match=r"round away at most of layer"):
        training.refuse_unmoved(dataclasses.replace(settings, lr=0.9 * limit), params)
    training.refuse_unmoved(dataclasses.replace(settings, lr=1.1 * limit), params)


def test_a_bptt_run_stored_with_its_epochs_as_generations_still_resumes_and_counts_as_finished(
        tmp_path, dataset, capsys):
    """config.json as earlier versions wrote it: every setting, BPTT's epochs under "generations".
    Such a run is the same run as --epochs N: finished for reproduce, resumable, and a different
    --epochs is reported as other settings."""
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--method", "bptt", "--epochs", "1", "--batch-size", "50", "--quiet",
            *dataset]
    assert run.main(args) == 0
    stored = json.loads((out / "config.json").read_text())
    assert "generations" not in stored and stored["epochs"] == 1
    stored["generations"] = stored.pop("epochs")
    stored.update(rank=4, es_mode="batched", population=512, sigma=0.1, eval_every=10)
    (out / "config.json").write_text(json.dumps(stored))
    wanted = config.RunConfig(method="bptt", epochs=1, batch_size=50)
    assert run_folder.is_finished(out, wanted)
    assert not run_folder.is_finished(out, config.RunConfig(method="bptt", epochs=2, batch_size=50))
    (out / "final.json").unlink()
    assert run.main(args + ["--resume"]) == 0
    code, err = run_main(["train", "--out", str(out), "--method", "bptt", "--epochs", "2", "--batch-size", "50",
                          "--resume", *dataset], capsys)
    assert code == 2 and "other settings (--epochs 1, not 2)" in err


def test_every_setting_is_an_option_with_its_default_in_the_help(capsys):
    """The train options are made from RunConfig: one option per field, its help naming the
    field's default, and no default printed twice."""
    with pytest.raises(SystemExit):
        run.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    for spec in dataclasses.fields(config.RunConfig):
        assert config.option(spec.name) in text, spec.name
        if spec.default is not None:  # a None default is explained in the help text itself
            assert f"default: {spec.default})" in text, spec.name
    assert "(default: None) (default" not in text
    with pytest.raises(SystemExit):
        run.main(["reproduce", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(default: all) (default" not in text and "(default: None)" not in text


# ---------------------------------------------------------------------------------------------
# reproduce --config hyperscale

def test_hyperscale_options_are_refused_elsewhere_and_each_part_has_its_own_folder_and_lock(tmp_path, capsys):
    results = tmp_path / "results"
    nothing_to_train = ["--data-root", str(tmp_path / "absent")]  # should a check be missing
    cases = [(["--config", "quick", "--part", "budget", "--report-only"], "--part is for --config hyperscale; drop it "
                                                                          "for --config quick"),
             (["--config", "paper", "--populations", "512", *nothing_to_train], "--populations is for --config "
                                                                                 "hyperscale"),
             (["--config", "hyperscale", "--deadline", "-1", *nothing_to_train], "--deadline must be >= 0 seconds, "
                                                                                 "got -1.0"),
             (["--config", "hyperscale", "--deadline", "nan", *nothing_to_train], "--deadline must be >= 0 seconds, "
                                                                                  "got nan")]
    for extra, message in cases:
        code, err = run_main(["reproduce", "--results", str(results), *extra], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    assert not results.exists()

    for part in config.HYPERSCALE:  # a finished run of each part, for --report-only to report
        first = config.hyperscale_runs(part)[0]
        out = write_run(results / "hyperscale" / part, f"{first.name}-m{first.population}", first.seed,
                        config=config.stored(first))
        (out / "config.json").write_text(json.dumps(config.stored(first)))
        (out / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    with run_folder.owned(results / "hyperscale" / "budget"):  # another process reproducing the budget part
        code, err = run_main(["reproduce", "--config", "hyperscale", "--part", "budget", "--results", str(results),
                              "--report-only"], capsys)
        assert code == 2 and f"{results / 'hyperscale' / 'budget'} is in use by another process" in err
        assert run.main(["reproduce", "--config", "hyperscale", "--part", "protocol", "--results", str(results),
                         "--report-only"]) == 0
    assert sorted(p.parent.name for p in results.glob("hyperscale/*/table.md")) == ["protocol"]
    assert run.main(["reproduce", "--config", "hyperscale", "--results", str(results), "--report-only"]) == 0
    assert sorted(p.parent.name for p in results.glob("hyperscale/*/table.md")) == ["budget", "headline", "protocol"]


@needs_real
def test_hyperscale_reproduce_stops_at_the_deadline_and_the_next_one_finishes_the_same_run(tmp_path, monkeypatch,
                                                                                           capsys):
    """A tiny budget part on the real recordings, with a clock on which each generation takes one
    second: --deadline 0.5 stops the first run after one generation (checkpointed between two
    evaluations) and starts no other; the next reproduce finishes both, the first to the very
    weights of an uninterrupted run, scores them on --real-root and writes the part's report."""
    monkeypatch.setitem(config.HYPERSCALE, "budget", {"common": dict(generations=3, batch_size=16, eval_every=2),
                                                      "seeds": (1,), "populations": {"eggroll-r1": (8,), "es": (8,)}})
    clock, method_step = [0.0], training.method_step

    def ticking_step(*args):
        step = method_step(*args)

        def one_second_step(*step_args):
            clock[0] += 1.0
            return step(*step_args)
        return one_second_step
    monkeypatch.setattr(training, "method_step", ticking_step)
    clock_time = SimpleNamespace(monotonic=lambda: clock[0], perf_counter=time.perf_counter)
    monkeypatch.setattr(training, "time", clock_time)
    monkeypatch.setattr(reproduce, "time", clock_time)
    where = ["--data-root", str(REAL_DIR), "--cache-dir", str(tmp_path / "cache"), "--quiet"]
    part = tmp_path / "results" / "hyperscale" / "budget"
    args = ["reproduce", "--config", "hyperscale", "--part", "budget", "--results", str(tmp_path / "results"), *where]

    code, err = run_main(args + ["--deadline", "0.5"], capsys)
    eggroll_run, es_run = part / "runs" / "eggroll-r1-m8-seed1", part / "runs" / "es-m8-seed1"
    assert code == 0, err
    assert f"{eggroll_run} stopped by --deadline at step 1 of 3; the next reproduce resumes it" in err
    assert f"--deadline passed: 1 run(s) of {part} not started" in err
    with np.load(eggroll_run / run_folder.CHECKPOINT) as stored:
        assert int(stored["step"]) == 1
    assert not (eggroll_run / "final.json").exists() and not es_run.exists()
    assert "| eggroll-r1 |" not in (part / "table.md").read_text()

    real_copy = write_dataset(tmp_path / "real", n_train=3, n_test=3, seed=6)  # other recordings than its own
    assert run.main(args + ["--real-root", str(real_copy)]) == 0
    n_train, n_test = (len(data.list_recordings(real_copy / split)) for split in ("Train", "Test"))
    n_val = round(n_train / 10)  # the validation share of data.py's split
    for out in (eggroll_run, es_run):
        assert json.loads((out / "final.json").read_text())["generations"] == 3
        assert json.loads((out / "real.json").read_text())["samples"] == {"train": n_train - n_val, "val": n_val,
                                                                          "test": n_test}
    assert [json.loads(line)["generation"] for line in (eggroll_run / "metrics.jsonl").read_text().splitlines()] == \
        [2, 3]
    table = (part / "table.md").read_text()
    assert "| es | 8 |" in table and "| eggroll-r1 | 8 |" in table
    for figure in ("budget_accuracy.png", "budget_speed.png"):
        assert (part / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    whole = tmp_path / "whole"
    assert run.main(["reproduce", "--config", "hyperscale", "--part", "budget", "--results", str(whole),
                     "--runs", "eggroll-r1", "--populations", "8", *where]) == 0
    assert [p.name for p in (whole / "hyperscale" / "budget" / "runs").iterdir()] == [eggroll_run.name]
    uninterrupted, resumed = stored_params(whole / "hyperscale" / "budget" / "runs" / eggroll_run.name), \
        stored_params(eggroll_run)
    assert uninterrupted.keys() == resumed.keys()
    for name in uninterrupted:
        np.testing.assert_array_equal(uninterrupted[name], resumed[name], err_msg=name)


# ---------------------------------------------------------------------------------------------
# Before any work: memory, names and paths; every error one line; signals say how to continue

def folder_bytes(folder):
    return {p.name: p.read_bytes() for p in folder.iterdir()} if folder.exists() else None


def test_a_run_too_large_for_memory_is_refused_before_anything_is_touched(tmp_path, dataset, capsys, monkeypatch):
    """A population, batch or frame count whose estimated memory exceeds what is free: one line
    naming the option, the estimate and what is free; no folder made, and with --force the run
    already there is kept."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    before = folder_bytes(out)
    for extra in ([], ["--force"], ["--resume"]):
        code, err = run_main(["train", "--out", str(out), *SMALL, *dataset, "--population", "100000000", *extra],
                             capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert err.startswith("error: --population 100000000: the run needs about ") and " TB of RAM" in err
        assert "GB free; lower --population" in err
    assert folder_bytes(out) == before
    code, err = run_main(["train", "--out", str(tmp_path / "new"), "--method", "es", "--population",
                          "99999999999999999998", *dataset], capsys)
    assert code == 2 and err.startswith("error: --population 99999999999999999998: ") and "PB of RAM" in err, err
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (200 * 10**6, None))  # 200 MB free
    for method in ("eggroll", "es", "bptt"):
        code, err = run_main(["train", "--out", str(tmp_path / "new"), "--method", method, "--batch-size", "16",
                              "--time-bins", "1000", *dataset], capsys)
        assert code == 2 and "error: --time-bins 1000: the run needs about" in err and "200.0 MB free" in err, err
    assert not (tmp_path / "new").exists()


def test_the_presets_fit_and_the_estimates_cover_what_a_generation_holds():
    """No preset is refused: the CPU presets need at most 2 GB, hyperscale at most 40 GB of an 80 GB
    GPU. And the estimate covers the peak a generation really holds (tracemalloc sees NumPy's
    arrays), for every method, at sizes where different arrays dominate."""
    import tracemalloc
    import baselines
    import bench
    import snn_eggroll
    import optim
    import resources
    import snn
    for preset in config.PRESETS:
        assert max(resources.run_bytes(c, gpu=False)[0] for c in config.preset_runs(preset)) < 2e9, preset
    for part in config.HYPERSCALE:
        needs = [resources.run_bytes(c, gpu=True) for c in config.hyperscale_runs(part)]
        assert max(gpu for _, gpu in needs) < 40e9 and max(ram for ram, _ in needs) < 2e9, part
    rng = np.random.default_rng(0)
    for method, rank, pairs, batch, time_bins in [("eggroll", 4, 512, 32, 10), ("eggroll", 1, 16, 256, 10),
                                                  ("es-batched", None, 32, 64, 10), ("es-sequential", None, 16, 16, 5),
                                                  ("inference", None, 1024, 32, 10), ("bptt", None, 0, 256, 10)]:
        frames = (rng.random((time_bins, batch, snn.SIZES[0])) < bench.INPUT_DENSITY).astype(np.float32)
        labels = rng.integers(0, 10, batch)
        params, lif = snn.init_params(0), snn.LIF()
        state, adam = optim.init(params), optim.Adam(0.01)
        members = 2 * pairs
        calls = {"eggroll": lambda: snn_eggroll.generation_step(params, state, frames, labels, 0,
                                                                snn_eggroll.Config(members, rank or 1, 0.1, 0, 1.0), adam),
                 "inference": lambda: snn.forward(params, frames, lif, n_members=members),
                 "bptt": lambda: baselines.bptt_step(params, state, frames, labels, baselines.BPTTConfig(25, 1), adam)}
        for mode in baselines.ES_MODES:
            calls[f"es-{mode}"] = lambda mode=mode: baselines.es_generation_step(
                params, state, frames, labels, 0, baselines.ESConfig(members, 0.1, 0, 1.0, mode), adam)
        tracemalloc.start()
        calls[method]()
        peak = tracemalloc.get_traced_memory()[1] + frames.nbytes  # the frames are made before
        tracemalloc.stop()
        estimate = resources.generation_bytes(method, rank, pairs, batch, time_bins)
        assert peak <= estimate <= 4 * peak, (method, peak, estimate)


def test_reproduce_checks_every_name_and_path_before_the_first_run(tmp_path, dataset, capsys, monkeypatch):
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                                 eval_every=1)})
    results = tmp_path / "results"
    base = ["reproduce", "--config", "quick", "--results", str(results), "--quiet", *dataset]
    cases = [(["--runs", "eggroll-r44"], "--runs: --config quick has no run eggroll-r44; use some of bptt, "
                                         "eggroll-r1, eggroll-r2, eggroll-r4, eggroll-r8, es"),
             (["--seeds", "1,99"], "--seeds: --config quick has no seed 99; use some of 1, 2, 3"),
             (["--runs", "es,,bptt"], "--runs 'es,,bptt' holds an empty name; separate the names by single commas, "
                                      "e.g. --runs bptt,eggroll-r1"),
             (["--runs", ""], "--runs '' holds an empty name"),
             (["--runs", "bptt, es"], "--runs 'bptt, es' holds a space; separate the names by single commas, e.g. "
                                      "--runs bptt,eggroll-r1"),  # not "no run  es", a name it then lists
             (["--seeds", "1,x"], "argument --seeds: expected comma-separated integers such as 1,2, got '1,x'"),
             (["--real-root", str(tmp_path / "absent")], f"--real-root {tmp_path / 'absent'} holds no N-MNIST"),
             (["--data-root", str(tmp_path / "absent")], f"--data-root {tmp_path / 'absent'} holds no N-MNIST"),
             (["--results", str(tmp_path / "file" / "results")], f"--results {tmp_path / 'file' / 'results'}: "
                                                                  f"{tmp_path / 'file'} is not a folder")]
    (tmp_path / "file").write_text("")
    for extra, message in cases:
        try:
            code = run.main(base + extra)
        except SystemExit as exit_:
            code = exit_.code
        err = capsys.readouterr().err
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (10**6, None))
    code, err = run_main(base + ["--runs", "es"], capsys)
    assert code == 2 and "error: run es-seed1 needs about " in err and "1.0 MB free; leave it out" in err, err
    code, err = run_main(["reproduce", "--config", "hyperscale", "--part", "protocol", "--results", str(results),
                          "--runs", "es", "--populations", "32768"], capsys)
    assert code == 2 and "no run of --config hyperscale --part protocol has --runs es --populations 32768" in err
    assert not results.exists()
    code, err = run_main(base[:-4] + ["--report-only"], capsys)  # trains nothing
    assert code == 2 and "there is nothing to report" in err and not results.exists(), err


@pytest.mark.parametrize("given, message", [
    (["--runs", "eggroll-r2"], "--report-only reports every finished run of the preset: drop --runs, which picks the "
                               "runs to train"),
    (["--seeds", "1"], "--report-only reports every finished run of the preset: drop --seeds, which picks the runs to "
                       "train"),
    (["--data-root", "nmnist-sample"], "--report-only trains nothing, so it reads no data: drop --data-root"),
    (["--data", "emulated", "--mnist", "README.md"], "--report-only trains nothing, so it reads no data: drop --mnist"),
    (["--download"], "--report-only trains nothing, so it reads no data: drop --download"),
    (["--deadline", "5"], "--report-only trains nothing, so no run stops at a deadline: drop --deadline"),
    (["--device", "auto"], "--report-only trains nothing, and without --real-root scores nothing: drop --device"),
    (["--cache-dir", "cache"], "--report-only trains nothing, and without --real-root scores nothing: drop "
                               "--cache-dir")])
def test_report_only_refuses_the_options_it_would_pass_over(tmp_path, capsys, given, message):
    """--report-only reports every finished run of the preset on the data they trained on: a --runs
    or --seeds (which pick runs to train), a --data-root or --mnist (it trains on nothing), a --deadline, or a
    --device or --cache-dir without --real-root (which scores runs with them) would be passed over
    silently, and is refused in one line before anything is read; the report is as it was."""
    results = tmp_path / "results"
    write_preset_run(results / "quick", "quick", "eggroll-r1", 1)
    with pytest.raises(SystemExit) as exit_:
        run.main(["reproduce", "--config", "quick", "--results", str(results), "--report-only", "--quiet", *given])
    assert exit_.value.code == 2 and capsys.readouterr().err == f"error: {message}; see run.py reproduce --help\n"
    assert sorted(path.name for path in (results / "quick").iterdir()) == ["runs"]


@pytest.mark.parametrize("preset, given", [("quick", "quick"), ("hyperscale", "hyperscale"),
                                           ("hyperscale", "hyperscale/budget")])
def test_reproduce_refuses_a_presets_own_folder_as_results(tmp_path, capsys, preset, given):
    """--results results/quick (a preset's folder, not the one holding it) would train a grid nested in
    it, results/quick/quick/runs, beside the runs it holds: one line naming the folder to give, and
    nothing is written."""
    results = tmp_path / "results"
    write_preset_run(results / "quick", "quick", "eggroll-r1", 1)
    (results / "hyperscale" / "budget" / "runs" / "a-run").mkdir(parents=True)
    (results / "hyperscale" / "budget" / "runs" / "a-run" / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    before = sorted(results.rglob("*"))
    code = run.main(["reproduce", "--config", preset, "--results", str(results / given), "--quiet"])
    assert code == 2 and capsys.readouterr().err == (
        f"error: --results {results / given} is a preset's folder of reproduce (its runs are there), and reproduce "
        f"keeps each preset's in a folder of its own below --results: give the folder that holds them, e.g. "
        f"--results {results}\n")
    assert sorted(results.rglob("*")) == before


def test_bench_refuses_a_cache_dir_it_would_not_use(tmp_path, capsys):
    """bench reads recordings only with --data-root: a --cache-dir without it is refused in one line."""
    with pytest.raises(SystemExit) as exit_:
        run.main(["bench", "--cache-dir", str(tmp_path / "cache")])
    assert exit_.value.code == 2 and capsys.readouterr().err == (
        "error: --cache-dir holds the frames of --data-root's recordings, and bench without --data-root reads none: "
        "give --data-root too, or drop --cache-dir; see run.py bench --help\n")
    assert list(tmp_path.iterdir()) == []


def test_usage_errors_are_one_line_and_the_help_states_every_range(capsys):
    """argparse's errors: the problem and where to read more, not the usage. --help gives the
    range that is really accepted: the rank is refused above 10 (the 64-10 network)."""
    for argv, message in [(["train", "--rank", "x"], "argument --rank: invalid int value: 'x'"),
                          (["train", "--method", "sgd"], "argument --method: invalid choice: 'sgd'"),
                          (["train", "--no-such-option"], "unrecognized arguments: --no-such-option"),
                          (["train", "--seed", "\uff11"], "argument --seed: invalid int value: '\uff11'"),
                          (["train", "--sigma", "0.\uff11"], "argument --sigma: invalid float value: '0.\uff11'"),
                          (["train", "--sigma", "0_1"], "argument --sigma: invalid float value: '0_1'"),  # not 1.0
                          (["train", "--population", "1_0"], "argument --population: invalid int value: '1_0'"),
                          (["reproduce", "--seeds", "1_0"], "argument --seeds: expected comma-separated integers"),
                          (["reproduce", "--deadline", "1_0"], "argument --deadline: invalid float value: '1_0'"),
                          (["train", "--method", "bptt", "--distributed"], "BPTT runs on one process: drop --distributed"),
                          (["reproduce", "--report-only", "--force"], "--report-only trains nothing, so --force would "),
                          (["train", "--resume", "--force"], "--resume continues the run in --out, --force deletes it"),
                          (["train", "--update", "allreduce"], "--update says how the processes of a job share"),
                          (["train", "--update", "seeds"], "--update says how the processes of a job share"),
                          (["bench", "--pairs", "0"], "argument --pairs: must be an integer >= 1, got 0"),
                          (["reproduce", "--populations", "1e3"], "argument --populations: expected comma"),
                          (["train", "--out", "-"], "argument --out: '-' is read as standard output by many tools"),
                          (["train", "--out", "   "], "argument --out: '   ' is blanks only (a variable left empty?): "
                                                      "give a path"),  # made a folder "   " among the sources
                          (["reproduce", "--results", "-"], "argument --results: '-' is read as standard output"),
                          (["emulate", "--out", "-"], "argument --out: '-' is read as standard output by many tools"),
                          (["train", "--cache-dir", "-"], "argument --cache-dir: '-' is read as standard output"),
                          (["evaluate", "run", "--cache-dir", "-"], "argument --cache-dir: '-' is read as standard"),
                          (["bench", "--json", "-"], "argument --json: '-' is read as standard output by many tools"),
                          (["bench", "--cache-dir", "-"], "argument --cache-dir: '-' is read as standard output"),
                          ([], "the following arguments are required: command")]:
        with pytest.raises(SystemExit) as exit_:
            run.main(argv)
        err = capsys.readouterr().err
        assert exit_.value.code == 2 and err.startswith(f"error: {message}") and err.count("\n") == 1, err
        assert err.rstrip().endswith(f"see run.py {argv[0] + ' ' if argv else ''}--help"), err
    with pytest.raises(SystemExit):
        run.main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(eggroll only; must lie in 1..the smaller side of every weight matrix (10 in the paper's network); default: 4)" in text
    for spec in dataclasses.fields(config.RunConfig):
        if spec.metadata["check"] and spec.name != "rank":
            assert spec.metadata["check"][1] in text, spec.name  # the range that the check refuses, as said
    with pytest.raises(SystemExit):
        run.main(["bench", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "(members = 2 x pairs): >= 1, as many as fit in memory" in text and "after a warm-up: >= 1" in text


@pytest.mark.parametrize("signal_name, status", [("SIGTERM", 143), ("SIGINT", 130), ("SIGHUP", 129)])
def test_a_signal_stops_a_run_with_where_it_stopped_and_how_to_continue(tmp_path, dataset, signal_name, status):
    """SIGTERM (a scheduler's), SIGINT (Ctrl-C) and SIGHUP (a closed terminal) in the middle of a run:
    exit status 143, 130 or 129, one line saying at which step it stopped and to rerun with
    --resume, the checkpoint whole."""
    import signal
    out = tmp_path / "run"
    process = subprocess.Popen(train_command(out, dataset, "--generations", "100000"), cwd=ROOT,
                               stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 120
        while not (out / run_folder.CHECKPOINT).exists() and time.time() < deadline:
            time.sleep(0.01)
        process.send_signal(getattr(signal, signal_name))
        err = process.communicate(timeout=60)[1]
    finally:
        process.kill()
        process.wait()
    assert process.returncode == status and err.count("\n") == 1, err
    assert err.startswith(f"error: interrupted: {out} stopped at step ") and "rerun with --resume to continue" in err
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert int(stored["step"]) >= 5


def test_final_json_says_where_the_test_splits_spikes_are(tmp_path, dataset):
    """final.json's test_sparsity, computed here again by hand on the test split with the trained
    weights: input events (active inputs over the frames), hidden and output spikes (adding up to
    `evaluate`'s spikes), the hidden neurons that never fire, and 64 x events + 10 x hidden spikes."""
    import snn
    options = dict(zip(dataset[::2], dataset[1::2]))
    settings = dataclasses.replace(config.RunConfig(), generations=3, population=8, batch_size=16, eval_every=3,
                                   data_root=options["--data-root"], cache_dir=options["--cache-dir"])
    final = training.train(settings, tmp_path / "run", progress=False)
    measured = final["test_sparsity"]
    splits = data.load_nmnist(settings.data_root, cache_dir=settings.cache_dir, progress=False)
    like = snn.init_params(settings.seed)
    params = run_folder.load_checkpoint(tmp_path / "run" / run_folder.CHECKPOINT, np, like,
                                        run_folder.identity(settings))[0]
    frames = splits.test.frames(np.arange(len(splits.test)))                  # (T, N, 2312)
    v, fired = np.zeros((frames.shape[1], 64), np.float32), np.zeros(64)
    for t in range(frames.shape[0]):                                           # layer 1 written out plainly
        v = 0.9 * v + frames[t] @ params["W1"].T + params["b1"]
        spikes = v >= 1.0
        fired += spikes.sum(axis=0)
        v[spikes] = 0
    n = len(splits.test)
    _, spikes_per_sample, _, where = training.evaluate(params, splits.test, snn.LIF(), np)
    assert where == measured
    assert measured["input_events_per_sample"] == pytest.approx(frames.sum() / n, rel=1e-12)
    assert measured["hidden_spikes_per_sample"] == pytest.approx(fired.sum() / n, rel=1e-12)
    assert measured["hidden_spikes_per_sample"] + measured["output_spikes_per_sample"] == \
        pytest.approx(spikes_per_sample, rel=1e-12)
    assert measured["silent_hidden_fraction"] == pytest.approx((fired == 0).mean(), abs=1e-12)
    assert measured["synaptic_ops_per_sample"] == pytest.approx(
        64 * measured["input_events_per_sample"] + 10 * measured["hidden_spikes_per_sample"], rel=1e-12)
    assert measured["input_synaptic_ops_per_sample"] == pytest.approx(64 * measured["input_events_per_sample"], rel=1e-12)
    assert measured["hidden_spikes_per_sample"] > 0 and json.loads((tmp_path / "run" / "final.json").read_text())[
        "test_sparsity"] == measured
    assert final["data"] == {"fingerprint": splits.fingerprint(),  # the data it trained on, split by split,
                             "root": os.path.realpath(settings.data_root)}  # and where it was


def test_final_json_says_how_emulated_data_was_made(tmp_path):
    """A run on recordings made by `run.py emulate` records the emulator's version, seed and MNIST
    files (the EMULATED.json beside them) with the data's fingerprint; other data records none."""
    import emulate
    write_dataset(tmp_path / "NMNIST", n_train=3, n_test=1, n_events=300)
    made = {"emulator": "eggroll-snn emulate.py", "version": emulate.VERSION, "seed": 0, "mnist_sha256": {"x": "0"}}
    settings = dataclasses.replace(config.RunConfig(), generations=2, population=4, batch_size=4, eval_every=2,
                                   data_root=str(tmp_path), cache_dir=str(tmp_path / "cache"))
    assert "emulated" not in training.train(settings, tmp_path / "plain", progress=False)["data"]
    (tmp_path / "NMNIST" / emulate.PROVENANCE).write_text(json.dumps(made))
    with pytest.raises(data.BadDataError, match="holds an emulation that did not finish"):
        training.train(settings, tmp_path / "unfinished", progress=False)
    with pytest.raises(data.BadDataError, match="holds an emulation that did not finish"):  # nor is a run scored on it
        training.evaluate_run(tmp_path / "plain", str(tmp_path), str(tmp_path / "cache"))
    found = emulate.recordings(tmp_path / "NMNIST")
    (tmp_path / "NMNIST" / emulate.FINISHED).write_text(json.dumps({**found, "Test": found["Test"] + 1}))
    with pytest.raises(data.BadDataError, match="but its emulation finished with"):
        training.train(settings, tmp_path / "unfinished", progress=False)
    with pytest.raises(data.BadDataError, match="but its emulation finished with"):
        training.evaluate_run(tmp_path / "plain", str(tmp_path), str(tmp_path / "cache"))
    (tmp_path / "NMNIST" / emulate.FINISHED).write_text(json.dumps(found))
    moved = next((tmp_path / "NMNIST" / "Train").glob("*/*.bin"))
    digit = next(d for d in data.DIGITS if d != moved.parent.name)
    moved.rename(tmp_path / "NMNIST" / "Train" / digit / moved.name)  # the same counts, a recording's label changed
    for score in (lambda: training.train(settings, tmp_path / "unfinished", progress=False),
                  lambda: training.evaluate_run(tmp_path / "plain", str(tmp_path), str(tmp_path / "cache"))):
        with pytest.raises(data.BadDataError, match="other recordings than its emulation finished with"):
            score()
    (tmp_path / "NMNIST" / "Train" / digit / moved.name).rename(moved)
    assert training.train(settings, tmp_path / "emulated", progress=False)["data"]["emulated"] == made


def test_a_closed_pipe_ends_a_run_quietly_and_a_full_stdout_is_one_line(tmp_path, dataset):
    """The reader of the progress bar goes away (`run.py train ... 2>&1 | head -c 50`): the run ends
    quietly, exit status 141, its checkpoint whole. Standard output that cannot be written
    (/dev/full) after a run finished: one line saying where the results are."""
    out = tmp_path / "run"
    command = [part for part in train_command(out, dataset, "--generations", "100000") if part != "--quiet"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.time() + 120
        while not (out / run_folder.CHECKPOINT).exists() and time.time() < deadline:
            time.sleep(0.01)
        process.stdout.read(50)
        process.stdout.close()
        process.wait(timeout=60)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 141
    arrays = run_folder.read_arrays(out / run_folder.CHECKPOINT)
    assert run_folder.checkpoint_problem(arrays, {k.split("/")[1]: v for k, v in arrays.items()
                                                  if k.startswith("param/")}) is None

    with open("/dev/full", "w") as full:
        buffered = {name: value for name, value in os.environ.items() if name != "PYTHONUNBUFFERED"}  # as a user runs it
        done = subprocess.run(train_command(tmp_path / "finished", dataset, "--generations", "5"), cwd=ROOT,
                              stdout=full, stderr=subprocess.PIPE, text=True, env=buffered)
    assert done.returncode == 2 and done.stderr == (f"error: cannot write to standard output: No space left on device; "
                                                    f"the run finished: its results are in "
                                                    f"{tmp_path / 'finished' / 'final.json'}\n"), done.stderr
    assert (tmp_path / "finished" / "final.json").exists()


def limited(resource_name, limit):
    """A preexec_fn for subprocess: the child runs under this soft limit (resource.RLIMIT_*)."""
    import resource

    def limit_child():
        kind = getattr(resource, resource_name)
        resource.setrlimit(kind, (limit, resource.getrlimit(kind)[1]))
    return limit_child


def test_a_frame_cache_cut_short_by_a_file_size_limit_leaves_no_folder_and_says_what_helps(tmp_path, dataset):
    """`train` under `ulimit -f 100` (100 KB, less than the frame cache): one line whose fix is the
    limit (another cache folder would meet it too), and neither the cache folders nor the run
    folder it made are left behind."""
    cache = tmp_path / "cache" / "frames"
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--out", str(tmp_path / "run"), *SMALL,
                           "--generations", "1", "--data-root", dataset[1], "--cache-dir", str(cache)],
                          cwd=ROOT, capture_output=True, text=True, timeout=300,
                          preexec_fn=limited("RLIMIT_FSIZE", 100 * 1024))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: cannot write the frame cache {cache}/nmnist-"), done.stderr
    assert done.stderr.endswith(": File too large; the limit on a file's size (ulimit -f) is too low for it: raise "
                                "it or lift it\n"), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_memory_is_checked_before_the_weights_are_made(tmp_path, dataset):
    """A network whose weights alone outgrow the memory (2312-65536-65536-10: 4.4 billion weights) is
    refused by the estimate, naming --hidden, before init draws a single weight."""
    out = tmp_path / "run"
    command = train_command(out, dataset, "--hidden", "65536,65536", "--generations", "1")
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), preexec_fn=limited("RLIMIT_AS", 2 * 10**9))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --hidden 65536,65536: the run needs about ") and not out.exists()
    assert re.search(r"lower --hidden, or (free memory|raise the limit \(ulimit -v\))$", done.stderr.rstrip()), \
        done.stderr  # the widths, which the weights grow with; RAM's limit or ulimit's, whichever is met first


def test_memory_is_checked_against_a_limit_on_address_space_and_a_memory_error_is_one_line(tmp_path, dataset):
    """Under `ulimit -v 400000` vanilla ES at 512 members does not fit: refused before anything is
    made, naming the limit. A MemoryError the estimate missed (here an estimate of nothing) is one
    line too, and the run leaves nothing behind."""
    out = tmp_path / "run"
    command = train_command(out, dataset, "--method", "es", "--population", "512", "--generations", "1")
    one_thread = dict(os.environ, OPENBLAS_NUM_THREADS="1")  # BLAS threads' stacks count against the limit
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, env=one_thread,
                          preexec_fn=limited("RLIMIT_AS", 400 * 10**6))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --population 512: the run needs about ") and "ulimit -v" in done.stderr
    assert not out.exists()
    # 100 MB of address space beyond what the loaded modules and BLAS hold: ES's noise for 512 members
    # (300 MB) cannot fit. BLAS maps its buffers (32 MB a thread) at its first product: made before the
    # limit, with one thread, so that numpy's allocation is what fails, not BLAS's own (which prints
    # its own message and ends the process: 1 run in 12 when its first product came under the limit)
    estimating_nothing = ["-c", "import resource, sys, numpy, resources, run; "
                                "warm = numpy.ones((512, 512)); warm @ warm; "
                                "warm = warm.astype(numpy.float32); warm @ warm; "
                                "resources.run_bytes = lambda *args, **kwargs: (0, 0); "
                                "size = next(int(line.split()[1]) * 1024 for line in open('/proc/self/status') "
                                "if line.startswith('VmSize:')); "
                                "hard = resource.getrlimit(resource.RLIMIT_AS)[1]; "
                                "resource.setrlimit(resource.RLIMIT_AS, (size + 100 * 10**6, hard)); "
                                "sys.exit(run.main(sys.argv[1:]))"]
    done = subprocess.run([sys.executable, *estimating_nothing, *command[2:]], cwd=ROOT, capture_output=True,
                          text=True, env=one_thread)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: out of memory (") and "lower --population" in done.stderr
    assert not out.exists()


@pytest.mark.parametrize("version", [1, 2])
def test_memory_left_by_a_cgroup_limit_counts_as_free(tmp_path, monkeypatch, version):
    """A container's or a batch job's memory limit (cgroup v1 or v2, at its own path or mounted at
    the root): what it leaves (limit - usage + reclaimable page cache) bounds the RAM free."""
    files = {1: ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file", "4:memory:/job/7"),
             2: ("memory.max", "memory.current", "inactive_file", "0::/job/7")}[version]
    group = tmp_path / "cgroup" / ("memory" if version == 1 else "") / "job"
    group.mkdir(parents=True)
    (group / files[0]).write_text(f"{3 * 10**9}\n")
    (group / files[1]).write_text(f"{2 * 10**9}\n")
    (group / "memory.stat").write_text(f"cache 1\n{files[2]} {5 * 10**8}\n")
    (tmp_path / "cgroup.txt").write_text(files[3] + "\n")
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", tmp_path / "cgroup") == 15 * 10**8
    (group / files[0]).write_text("max\n" if version == 2 else "9223372036854771712\n")
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", tmp_path / "cgroup") is None
    monkeypatch.setattr(resources, "cgroup_free_bytes", lambda: 10**6)
    assert resources.available_bytes(np)[0] == 10**6


def test_the_processes_of_a_job_on_one_machine_share_its_ram(monkeypatch):
    """K processes of a job on one machine each hold a run, so RAM must hold K times what one needs;
    the address space a ulimit leaves is each process's own."""
    free = 3 * 10**9
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (free, None))
    monkeypatch.setattr(resources, "address_space_free_bytes", lambda: free)
    needed = (2 * 10**9, 0)
    assert resources.shortfall(needed, np, processes=1) is None
    assert resources.shortfall(needed, np, processes=2) == (2 * needed[0], free, "RAM for 2 processes")


def test_the_address_space_left_keeps_room_for_blas_buffers(tmp_path, monkeypatch):
    """Under ulimit -v, what a run may use is the limit less what the process has mapped (VmSize)
    and less what it maps beyond its arrays: OpenBLAS's buffers and the minibatch thread's stack
    and arena (without them a run that passed the check ended in OpenBLAS's own allocation
    failure); no limit, no bound."""
    import resource
    status = tmp_path / "status"
    status.write_text("Name:\tpython\nVmSize:\t  100000 kB\nVmRSS:\t 50000 kB\n")
    limit = 100000 * 1024 + 150 * 2**20
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (limit, resource.RLIM_INFINITY))
    assert resources.address_space_free_bytes(str(status)) == 150 * 2**20 - resources.BEYOND_ARRAYS > 0
    limit = 100000 * 1024 + 50 * 2**20
    assert resources.address_space_free_bytes(str(status)) == 0
    limit = resource.RLIM_INFINITY
    assert resources.address_space_free_bytes(str(status)) is None


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmSize is read from /proc")
def test_under_an_address_space_limit_a_run_trains_or_is_refused_in_one_line(tmp_path):
    """Under limits from 100 to 400 MB (ulimit -v) a small run either trains or is refused before it
    starts (below run.LEAST_ADDRESS_SPACE before NumPy is imported), in one line naming the limit,
    exit 2, no folder made; never OpenBLAS's own abort, at import or halfway. The sweep spans both
    outcomes."""
    import resource
    data = ["--data-root", str(ROOT / "nmnist-sample"), "--cache-dir", str(tmp_path / "cache")]
    assert subprocess.run(train_command(tmp_path / "first", data), cwd=ROOT).returncode == 0  # the frame cache
    outcomes = set()
    for megabytes in range(100, 401, 25):
        limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (megabytes * 2**20, resource.RLIM_INFINITY))
        out = tmp_path / f"run-{megabytes}"
        done = subprocess.run(train_command(out, data, "--generations", "2"), cwd=ROOT, preexec_fn=limit,
                              capture_output=True, text=True)
        if done.returncode == 0:
            assert (out / "final.json").exists()
        else:
            assert done.returncode == 2 and done.stderr.count("\n") == 1 and "ulimit -v" in done.stderr, \
                (megabytes, done.returncode, done.stderr[-500:])
            assert not out.exists()
        outcomes.add(done.returncode)
    assert outcomes == {0, 2}


def test_the_address_space_refusal_quotes_the_limit_as_ulimit_takes_it():
    """ulimit -v counts kibibytes: a limit of 200 MiB is quoted as the 204800 the user typed, and the
    least is 262144."""
    assert run.address_space_refusal(200 * 2**20) == (
        "error: the address-space limit (ulimit -v 204800) is too small to start in; raise it to 262144 or more, "
        "or lift it (ulimit -v unlimited)")


def test_numpy_failing_to_load_under_an_address_space_limit_is_one_line(tmp_path):
    """Above the least limit NumPy's import may still fail to map a library (an ImportError), as here
    a stand-in numpy does: one line naming the limit and what failed, exit 2; no traceback."""
    import resource
    (tmp_path / "numpy").mkdir()
    (tmp_path / "numpy" / "__init__.py").write_text("raise ImportError('failed to map segment from shared object')\n")
    limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (300 * 2**20, resource.RLIM_INFINITY))
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "--help"], cwd=tmp_path, preexec_fn=limit,
                          env={**os.environ, "PYTHONPATH": str(tmp_path)}, capture_output=True, text=True)
    assert done.returncode == 2 and done.stderr == (
        "error: the address-space limit (ulimit -v 307200) is too small to start in (ImportError while loading NumPy "
        "and the project: failed to map segment from shared object); raise it to 262144 or more, or lift it (ulimit "
        "-v unlimited)\n"), done.stderr


def test_an_empty_value_is_refused_with_one_pointer_to_the_help(capsys):
    """An option given '' where it takes a value: one line that points at --help once."""
    with pytest.raises(SystemExit) as exit_:
        run.main(["bench", "--methods", ""])
    assert exit_.value.code == 2 and capsys.readouterr().err == \
        "error: --methods is empty: give a value; see run.py bench --help\n"


@pytest.mark.parametrize("args, named", [(["train", "--out", ""], "--out"), (["evaluate", ""], "run_dir"),
                                         (["bench", "--json", ""], "--json"),
                                         (["reproduce", "--results", ""], "--results")])
def test_an_empty_path_is_refused_rather_than_taken_as_the_current_folder(tmp_path, monkeypatch, args, named):
    """`--out ''` would otherwise train into the current folder: one line, exit status 2, nothing made."""
    monkeypatch.chdir(tmp_path)
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(f"error: {named} is empty: give a path"), done.stderr
    assert done.stderr.count("\n") == 1 and not any(tmp_path.iterdir())


def test_a_quoted_tilde_means_home_and_a_newline_in_a_path_keeps_the_error_one_line(tmp_path, dataset, capsys,
                                                                                     monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert run.main(["train", "--out", "~/run", "--generations", "2", *SMALL, *dataset]) == 0
    assert (tmp_path / "home" / "run" / "final.json").is_file() and not Path("~").exists()
    capsys.readouterr()
    assert run.main(["evaluate", str(tmp_path / "no\nsuch run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no\\nsuch run" in err, err


def test_a_file_where_a_reproduce_run_folder_should_be_is_named_as_such(tmp_path, capsys):
    """A file, or a link that leads nowhere, where a run's folder should be: one line naming it,
    before any run is announced."""
    runs = tmp_path / "quick" / "runs"
    runs.mkdir(parents=True)
    (runs / "bptt-seed1").write_text("mine")
    (runs / "es-seed1").symlink_to(tmp_path / "nowhere")
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--seeds", "1", "--data-root",
            str(ROOT / "nmnist-sample"), "--quiet", "--runs"]
    assert run.main(args + ["bptt"]) == 2
    err = capsys.readouterr().err
    assert err == f"error: {runs / 'bptt-seed1'} is not a folder, and bptt seed 1 trains there: move it out of {runs}\n"
    assert (runs / "bptt-seed1").read_text() == "mine"
    assert run.main(args + ["es"]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {runs / 'es-seed1'} is a link to {tmp_path / 'nowhere'}, which leads to no folder, and es "
                   f"seed 1 trains there: move it out of {runs}\n")


def test_a_reproduce_that_fails_leaves_no_folders_it_made(tmp_path, dataset, monkeypatch):
    """The first run fails (here a stand-in for a download that cannot reach its server): the
    --results folder reproduce made, and the preset's folders in it, are gone; a folder that was
    there before, with the user's file in it, stays."""
    def unreachable(*args, **kwargs):
        raise data.MissingDataError("N-MNIST could not be downloaded (Name or service not known)")
    monkeypatch.setattr(training, "train", unreachable)
    args = ["reproduce", "--config", "quick", "--quiet", *dataset]
    assert run.main([*args, "--results", str(tmp_path / "new" / "results")]) == 2
    assert not (tmp_path / "new").exists()
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("mine")
    assert run.main([*args, "--results", str(tmp_path / "mine")]) == 2
    assert (tmp_path / "mine" / "notes.txt").read_text() == "mine"


@pytest.mark.parametrize("method", ["eggroll", "bptt"])
def test_the_memory_estimate_grows_with_the_hidden_layers(method):
    """run_bytes reads --hidden: a wider or deeper network needs more, and one of 65,536 x 65,536
    hidden neurons (a 17 GB weight matrix alone) is refused before anything is allocated."""
    base = dataclasses.replace(config.RunConfig(), method=method, population=512, batch_size=256)
    needs = {hidden: resources.run_bytes(dataclasses.replace(base, hidden=hidden), False)[0]
             for hidden in ("64", "128", "128,64", "conv8k5s2,64", "65536,65536")}
    assert needs["64"] < needs["128"] < needs["128,64"] and needs["64"] < needs["conv8k5s2,64"]
    assert needs["65536,65536"] > 65536 * 65536 * (12 + 8)  # weights, Adam's moments, init's float64 draw
    with pytest.raises(run_folder.UsageError, match="the run needs about"):
        resources.check_run_memory(dataclasses.replace(base, hidden="65536,65536"), np)


def test_the_memory_estimate_sizes_the_minibatch_by_the_training_split_and_evaluation_by_the_larger_split():
    """Of 1,000 recorded training recordings 100 are validation (data.split_indices), so a --batch-size
    of 1,000 trains on the 900 left, as one of 900 does; of 5,000, the 500 of validation are scored in
    one evaluation batch, larger than the 10 test recordings: the estimate counts it."""
    base = dataclasses.replace(config.RunConfig(), method="eggroll", population=8)
    assert resources.run_bytes(dataclasses.replace(base, batch_size=1000), False, (1000, 10)) == \
        resources.run_bytes(dataclasses.replace(base, batch_size=900), False, (1000, 10))
    assert resources.run_bytes(dataclasses.replace(base, batch_size=901), False, (1001, 10)) > \
        resources.run_bytes(dataclasses.replace(base, batch_size=900), False, (1001, 10))
    scored = resources.generation_bytes("inference", None, 1, 500, base.time_bins, False, base.network)
    assert resources.run_bytes(dataclasses.replace(base, batch_size=1), False, (5000, 10))[0] > scored


def test_the_memory_estimate_covers_a_wide_networks_weights_made_and_updated():
    """Where the weights dominate (2312-2048-2048-10 at 4 members), run_bytes covers the most that
    NumPy holds at once while the network is made and trained two generations (tracemalloc), its
    weights, Adam's moments, the step g and the update's new arrays together."""
    import tracemalloc

    import optim
    import snn
    import snn_eggroll
    network = snn.Network.parse("2048,2048")
    rng = np.random.default_rng(0)
    frames, labels = (rng.random((10, 4, 2312)) < 0.02).astype(np.float32), rng.integers(0, 10, 4)
    tracemalloc.start()
    try:
        params = snn.init_network(0, network)
        state = optim.init(params)
        for generation in range(2):
            params, state, _ = snn_eggroll.generation_step(params, state, frames, labels, generation,
                                                           snn_eggroll.Config(4, 1, 0.1, 0, 1.0), optim.Adam(0.01),
                                                           network=network)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    weights = sum(value.nbytes for name, value in params.items() if name.startswith("W"))
    assert peak > 6 * weights  # the update's arrays, beyond the weights and their moments: what is covered
    run = dataclasses.replace(config.RunConfig(), population=4, batch_size=4, hidden="2048,2048")
    assert resources.run_bytes(run, False, recordings=(20, 2))[0] >= peak


def test_the_host_memory_of_a_gpu_run_covers_every_layers_weights_and_adam_moments():
    """On a GPU the host holds the data and the parameters: what a network adds to run_bytes's RAM
    over 2312-1-10 covers what its float32 weights, biases and Adam's two moments take over that
    network's, the output layer's too (in 2312-1-65536-10 the largest weight matrix)."""
    import optim
    import snn

    def held(hidden):
        params = snn.init_network(0, snn.Network.parse(hidden))
        state = optim.init(params)
        return sum(value.nbytes for group in (params, state["m"], state["v"]) for value in group.values())
    ram = {hidden: resources.run_bytes(dataclasses.replace(config.RunConfig(), hidden=hidden), gpu=True)[0]
           for hidden in ("1", "64", "128,64", "1,65536", "conv8k5s2,64")}
    for hidden in ram:
        assert ram[hidden] - ram["1"] >= held(hidden) - held("1"), hidden


def test_the_least_that_a_cgroup_or_an_ancestor_leaves_bounds_the_ram(tmp_path):
    """A job's group inside a parent group: whichever limit is tighter, the parent's or the job's
    own, holds for the job, so the least that any of them leaves is what is free (cgroup v2)."""
    root = tmp_path / "cgroup"
    for group, limit, usage in (("job", 3 * 10**9, 2 * 10**9), ("job/7", 10 * 10**9, 10**9)):
        (root / group).mkdir(parents=True)
        (root / group / "memory.max").write_text(f"{limit}\n")
        (root / group / "memory.current").write_text(f"{usage}\n")
    (tmp_path / "cgroup.txt").write_text("0::/job/7\n")
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", root) == 10**9
    (root / "job/7/memory.max").write_text(f"{15 * 10**8}\n")  # now the job's own group is the tighter
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", root) == 5 * 10**8
    (root / "job/memory.current").unlink()  # a limit whose usage cannot be read bounds nothing
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", root) == 5 * 10**8


def test_a_cgroup_at_the_root_of_its_namespace_bounds_the_ram(tmp_path):
    """A container with a private cgroup namespace sees its group as "0::/": the limit is read in
    the root folder itself."""
    root = tmp_path / "cgroup"
    root.mkdir()
    (root / "memory.max").write_text(f"{3 * 10**9}\n")
    (root / "memory.current").write_text(f"{10**9}\n")
    (tmp_path / "cgroup.txt").write_text("0::/\n")
    assert resources.cgroup_free_bytes(tmp_path / "cgroup.txt", root) == 2 * 10**9


def test_the_address_space_is_each_processs_own_not_shared_by_the_job(monkeypatch):
    """ulimit -v bounds each process: two processes of a job on one machine that each fit in it are
    not refused, though both together would exceed it (RAM is what they share)."""
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (10 * 10**9, None))
    monkeypatch.setattr(resources, "address_space_free_bytes", lambda: 3 * 10**9)
    assert resources.shortfall((2 * 10**9, 0), np, processes=2) is None
    assert resources.shortfall((4 * 10**9, 0), np)[2] == "the address space that ulimit -v leaves this process"


def test_a_python_installed_at_the_root_refuses_no_folder_as_its_environment(tmp_path, monkeypatch):
    """sys.prefix "/" (a Python of the system's own, in a container): every folder lies under it, and
    none is refused as this Python's environment."""
    monkeypatch.setattr(sys, "prefix", "/")
    assert resources.project_folder_kind(tmp_path.resolve(), runs=True, results=True) is None
    resources.refuse_project_folders(tmp_path, "--out", "use another --out")


@pytest.mark.parametrize("gpu", [False, True])
def test_the_memory_estimate_of_a_growing_minibatch_is_that_of_its_largest(gpu):
    """--batch-growth 4 from --batch-size 64: the last generations train on 256 recordings at once,
    so the run needs what a run of --batch-size 256 needs; BPTT has no growth."""
    base = config.RunConfig(batch_size=64)
    grown = dataclasses.replace(base, batch_growth=4)
    assert resources.run_bytes(grown, gpu) == resources.run_bytes(dataclasses.replace(base, batch_size=256), gpu)
    assert resources.run_bytes(grown, gpu)[gpu] > resources.run_bytes(base, gpu)[gpu]


def test_a_narrower_network_halves_the_kernels_of_a_convolution_too():
    """The --hidden that check_run_memory suggests halves every hidden layer: a dense one's width,
    a convolution's kernels (never below 1), its kernel size, stride and padding kept."""
    import snn
    assert resources.narrower(snn.Network.parse("conv8k5s2p1,conv1k3,32")) == "conv4k5s2p1,conv1k3,16"


@pytest.mark.parametrize("method", config.METHODS)
def test_a_run_that_does_not_fit_is_told_to_lower_an_option_of_its_method(method, monkeypatch):
    """check_run_memory names the option whose halving saves the most, one the method takes and one
    that halving still lowers: vanilla ES and BPTT, whose command line refuses --rank, are never told to
    lower it; at the smallest settings (EGGROLL's rank aside) nothing is left to lower, and where even
    the smallest run would not fit (1 byte free) no option is named: the line says so and names the fix
    outside the run."""
    options = {config.option(spec.name): spec for spec in dataclasses.fields(config.RunConfig)}
    least = dict(population=2, batch_size=1, batch_growth=1, time_bins=1, hidden="1")
    smallest = resources.run_bytes(dataclasses.replace(config.RunConfig(method=method), **least, rank=1), False,
                                   (20, 2))[0]
    for free in (1, smallest):
        monkeypatch.setattr(resources, "available_bytes", lambda xp: (free, None))
        for settings in ({}, least, dict(least, batch_size=100000)):  # a minibatch past the split's 20: of all 20
            run_config = dataclasses.replace(config.RunConfig(method=method), **settings)
            if free == smallest and settings == least and method != "eggroll":
                continue  # it fits
            with pytest.raises(run_folder.UsageError, match="the run needs about") as refused:
                resources.check_run_memory(run_config, np, recordings=(20, 2))
            said = str(refused.value)
            if free == 1 or (settings and method != "eggroll"):
                assert said.startswith("the run needs about ") and said.endswith(
                    "and would not fit even at the smallest sizes it grows with; free memory, or use a machine "
                    "with more"), said
                continue
            named = said.split()[0]
            assert config.applies(options[named], method) and said.endswith(f"lower {named}, or free memory"), said
            assert options[named].name not in settings, said  # a size whose halving saves nothing is never named


def test_an_empty_setting_says_what_the_option_takes(capsys):
    """`--hidden ''`: one line saying what --hidden takes, with an example, not "a path or value"."""
    with pytest.raises(SystemExit) as exit_info:
        run.main(["train", "--hidden", ""])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and err.count("\n") == 1
    assert err.startswith("error: --hidden is empty: it must be layers that fit N-MNIST's 34 x 34 frames") \
        and "e.g. --hidden conv8k5s2,64" in err and "path" not in err, err


def test_reproduce_removes_a_figure_no_run_draws_any_more(tmp_path):
    """Once the EGGROLL runs of a grid are gone, reproduce's report takes the earlier rank ablation away."""
    grid = tmp_path / "results" / "quick"
    write_preset_run(grid, "quick", "eggroll-r2", 1)
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path / "results"), "--report-only", "--quiet"]
    assert run.main(args) == 0 and (grid / "rank_ablation.png").is_file()
    shutil.rmtree(grid / "runs" / "eggroll-r2-seed1")
    write_preset_run(grid, "quick", "es", 1)
    assert run.main(args) == 0
    assert not (grid / "rank_ablation.png").exists()


def test_report_only_reports_the_hyperscale_parts_that_have_a_finished_run(tmp_path, capsys):
    """--report-only over the hyperscale parts where only one has a finished run: that part's report
    is written and the others are said to have none, not the whole command refused."""
    results = tmp_path / "results"
    part = results / "hyperscale" / "protocol"
    first = config.hyperscale_runs("protocol")[0]
    out = write_run(part, f"{first.name}-m{first.population}", first.seed, config=config.stored(first))
    assert out.name == config.run_folder_name(first, "hyperscale")
    (out / "config.json").write_text(json.dumps(config.stored(first)))
    (out / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    code = run.main(["reproduce", "--config", "hyperscale", "--report-only", "--results", str(results), "--quiet"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert (part / "table.md").is_file() and "budget: no run has finished, no report written" in err


def test_reproduce_real_root_never_writes_real_json_through_a_link(tmp_path, dataset, capsys, monkeypatch):
    """A real.json that is a link to a user's file: reproduce --real-root refuses it, the file as it was."""
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=16,
                                                                 eval_every=1)})
    results = tmp_path / "results"
    args = ["reproduce", "--config", "quick", "--results", str(results), "--runs", "eggroll-r1", "--seeds", "1",
            "--quiet", *dataset]
    assert run.main(args) == 0
    out = results / "quick" / "runs" / "eggroll-r1-seed1"
    theirs = tmp_path / "notes.json"
    theirs.write_text("the user's notes")
    (out / "real.json").unlink(missing_ok=True)
    (out / "real.json").symlink_to(theirs)
    capsys.readouterr()
    write_dataset(tmp_path / "real", n_train=2, n_test=1, seed=7)  # other recordings
    code = run.main(args + ["--real-root", str(tmp_path / "real")])
    err = capsys.readouterr().err
    assert code == 2 and "real.json is a symbolic link" in err, err
    assert theirs.read_text() == "the user's notes"


def test_a_run_resumes_only_on_its_own_test_split(tmp_path, dataset, capsys):
    """--resume on a copy whose Test folder differs (one recording replaced): refused, naming the test split."""
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--generations", "4", "--population", "8", "--batch-size", "16",
            "--eval-every", "2", "--quiet"]
    assert run.main(args + dataset) == 0
    (out / "final.json").unlink()  # unfinished: --resume continues it
    other = tmp_path / "other"
    shutil.copytree(dataset[1], other, ignore=shutil.ignore_patterns("cache"))
    recording = next((other / "NMNIST" / "Test" / "0").glob("*.bin"))
    write_recording(recording, *random_events(np.random.default_rng(99), 300))
    capsys.readouterr()
    code = run.main(args + ["--data-root", str(other), "--cache-dir", str(tmp_path / "cache"), "--resume"])
    err = capsys.readouterr().err
    assert code == 2 and "was trained on other data (test: " in err, err
    assert not (out / "final.json").exists()


@pytest.mark.parametrize("population", [512, 16384])  # the evaluation's memory or the generation's the larger
def test_max_shift_counts_for_the_minibatch_made_ahead_on_a_cpu(population):
    """A GPU's estimate counts --max-shift's copies for the minibatch a step uses; on a CPU the next
    minibatch is made, and shifted, while that step runs: its copies count too, so the CPU estimate
    grows by more."""
    plain = dataclasses.replace(config.RunConfig(), population=population)
    shifted = dataclasses.replace(plain, max_shift=1)
    cpu = resources.run_bytes(shifted, False)[0] - resources.run_bytes(plain, False)[0]
    gpu = resources.run_bytes(shifted, True)[1] - resources.run_bytes(plain, True)[1]
    assert gpu > 0 and cpu > gpu


def test_a_run_folder_to_resume_that_cannot_be_written_is_refused_before_any_work(tmp_path, dataset, capsys,
                                                                                   monkeypatch):
    """train --resume of an unfinished run in a folder this user cannot write: one line, make it
    writable, and the run's files as they were (the tests may run as root, so os.access's answer is
    made here). A finished one says it has finished (test_run_folder)."""
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--generations", "2", "--population", "8", "--batch-size", "16",
            "--eval-every", "1", "--quiet", *dataset]
    assert run.main(args) == 0
    (out / "final.json").unlink()  # stopped after its last checkpoint, before its final evaluation
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"}
    capsys.readouterr()
    monkeypatch.setattr(os, "access", lambda path, mode: False)
    code = run.main(args + ["--resume"])
    err = capsys.readouterr().err
    assert code == 2 and f"--out {out}: the folder {out} is not writable" in err and "make it writable" in err, err
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.name != ".lock"} == before


def test_a_deadline_of_zero_seconds_is_taken_as_its_message_allows(tmp_path, monkeypatch):
    """--deadline must be >= 0 seconds: 0 (stop at once, every run left resumable) is taken, and the
    work goes on with a deadline; a negative one is refused."""
    called = []
    monkeypatch.setattr(reproduce, "reproduce_grids", lambda opts, deadline: called.append(deadline))
    reproduce.reproduce(argparse.Namespace(deadline=0.0, results=str(tmp_path / "results")))
    assert len(called) == 1 and called[0] is not None
    with pytest.raises(run_folder.UsageError, match="--deadline must be >= 0 seconds, got -0.5"):
        reproduce.reproduce(argparse.Namespace(deadline=-0.5, results=str(tmp_path / "results")))


def test_the_parity_preset_on_a_cpu_says_it_is_sized_for_a_gpu(tmp_path, dataset, capsys, monkeypatch):
    """reproduce --config parity with EGGROLL's runs left to train on the CPU says, before any run, that
    the preset's 65,536 members are sized for a GPU (here the memory check stops it after the note);
    with BPTT's alone it says nothing."""
    def stop(*args, **kwargs):
        raise resources.UsageError("stopped at the memory check")
    monkeypatch.setattr(resources, "check_run_memory", stop)
    code = run.main(["reproduce", "--config", "parity", "--results", str(tmp_path / "results"), "--quiet",
                     *dataset])
    err = capsys.readouterr().err
    assert code == 2 and err.splitlines() == [
        "note: the parity preset trains EGGROLL at 65,536 members, sized for a GPU (--device gpu): on a CPU each of "
        "its runs takes many hours", "error: stopped at the memory check"], err
    code = run.main(["reproduce", "--config", "parity", "--results", str(tmp_path / "results"), "--quiet",
                     "--runs", "bptt", *dataset])  # BPTT alone: nothing sized for a GPU, nothing said
    assert code == 2 and capsys.readouterr().err == "error: stopped at the memory check\n"
    code = run.main(["reproduce", "--config", "hyperscale", "--part", "headline", "--populations", "65536",
                     "--results", str(tmp_path / "results"), "--quiet", *dataset])  # the hyperscale preset alike
    assert code == 2 and capsys.readouterr().err.startswith(
        "note: the hyperscale preset trains EGGROLL at 65,536 members, sized for a GPU (--device gpu)")


def test_reproduce_refuses_a_frame_cache_in_the_projects_folders_before_any_run(tmp_path, dataset, capsys):
    """reproduce --cache-dir docs: one line before any run is announced, and no cache file written."""
    before = sorted((ROOT / "docs").iterdir())
    code = run.main(["reproduce", "--config", "quick", "--runs", "es", "--seeds", "1", "--results",
                     str(tmp_path / "results"), "--data-root", dataset[1], "--cache-dir", str(ROOT / "docs")])
    captured = capsys.readouterr()
    assert code == 2 and "[1/" not in captured.out + captured.err, captured
    assert captured.err.startswith(f"error: the frame cache's folder (--cache-dir or $EGGROLL_CACHE) {ROOT / 'docs'} is "
                                   f"the project's folder docs/"), captured.err
    assert sorted((ROOT / "docs").iterdir()) == before


def test_a_home_folder_that_does_not_exist_is_not_made_for_the_frame_cache(tmp_path):
    """HOME naming a folder that is not there (a service account's, say), no --cache-dir: the default
    frame cache would make that home folder; one line naming it and the fix, nothing made."""
    env = {name: value for name, value in os.environ.items() if name not in ("EGGROLL_CACHE", "XDG_CACHE_HOME")}
    env["HOME"] = str(tmp_path / "absent")
    done = subprocess.run(train_command(tmp_path / "run", ["--data-root", str(ROOT / "nmnist-sample")]), cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=300)
    cache = tmp_path / "absent" / ".cache" / "eggroll-snn" / "frames"
    assert done.returncode == 2 and done.stderr == (
        f"error: the frame cache's default folder {cache} lies in the home folder {tmp_path / 'absent'}, which does "
        f"not exist: give --cache-dir (or $EGGROLL_CACHE) a folder to keep the frames in\n"), done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == []
    (tmp_path / "a file").write_text("mine")
    for home, said in ((tmp_path / "a file", f"the home folder {tmp_path / 'a file'}, which is a file, not a folder"),
                       (" ", "$HOME, which is blank (a variable left empty?)")):  # ~ would be the root: /.cache
        done = subprocess.run(train_command(tmp_path / "run", ["--data-root", str(ROOT / "nmnist-sample")]),
                              cwd=ROOT, env={**env, "HOME": str(home)}, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stderr.startswith("error: the frame cache's default folder ") and \
            done.stderr.endswith(f" lies in {said}: give --cache-dir (or $EGGROLL_CACHE) a folder to keep the frames "
                                 f"in\n"), done.stderr
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a file"]


def test_an_epoch_is_the_whole_minibatches_of_the_training_split():
    """BPTT's epoch is n_train // batch_size updates, the minibatches data.minibatch deals from one
    permutation before it draws the next (the rest of the split waits for another epoch), so
    --epochs E trains E times that and evaluates at each epoch's end; an ES run takes --generations."""
    bptt = config.RunConfig(method="bptt", epochs=3, batch_size=16)
    assert training.training_schedule(bptt, 100) == (18, 6, 6)
    assert training.training_schedule(bptt, 96) == (18, 6, 6)
    assert training.training_schedule(bptt, 10) == (3, 1, 1)  # fewer recordings than a minibatch: one an epoch
    eggroll = config.RunConfig(generations=7, batch_size=16, eval_every=2)
    assert training.training_schedule(eggroll, 100) == (7, 6, 2)


def test_an_option_given_twice_takes_its_last_value_as_docs_running_md_says():
    """A script may append what it changes to a fixed set of options: the last value counts."""
    parser = exits.Parser()
    run.add_config_options(parser)
    assert run.config_from_options(parser.parse_args(["--seed", "1", "--lr", "0.1", "--seed", "2"])).seed == 2
    assert "An option given twice takes its last value" in (ROOT / "docs" / "running.md").read_text()


def test_a_real_root_that_shares_one_split_with_the_runs_data_is_refused():
    """--real-root's recordings are other recordings only if no split of theirs is one of the run's:
    a copy with the run's own test split beside other training recordings is refused too."""
    own = {"train": "54000 samples, sha256 1", "val": "6000 samples, sha256 2", "test": "10000 samples, sha256 3"}
    with pytest.raises(run_folder.UsageError, match="holds recordings of the run"):
        training.check_other_recordings(own, {**own, "train": "900 samples, sha256 9"}, "copy", "the run")
    training.check_other_recordings(own, {split: f"{split} elsewhere" for split in own}, "copy", "the run")


def test_a_data_root_one_level_too_deep_is_pointed_at_the_copy_not_at_a_download(tmp_path, capsys):
    """--data-root at a copy's Train or digit folder: one line naming the copy's top folder (a
    download there, as --download would make, would put N-MNIST inside the copy)."""
    sample = ROOT / "nmnist-sample"
    for given, extra in ((sample / "Train", []), (sample / "Train" / "3", ["--download"]), (sample / "Test", [])):
        out = tmp_path / "run"
        assert run.main(["train", "--data-root", str(given), *extra, "--generations", "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err == f"error: {given} lies inside the N-MNIST copy {sample}, not at its top; point --data-root at " \
                      f"{sample}\n", err
        assert not out.exists()


def test_an_out_inside_the_frame_cache_is_refused_before_training(tmp_path, capsys, monkeypatch):
    """A run folder inside the frame cache's folder would make every later command refuse the cache
    as a folder of run folders: refused first, nothing made."""
    cache = tmp_path / "cache"
    monkeypatch.setenv("EGGROLL_CACHE", str(cache))
    out = cache / "myrun"
    assert run.main(["train", "--generations", "1", "--population", "8", "--batch-size", "16", "--quiet",
                     "--data-root", str(ROOT / "nmnist-sample"), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == (f"error: {out} lies inside the frame cache's folder (--cache-dir or $EGGROLL_CACHE) {cache}, which "
                   f"every later command would refuse as a folder of run folders; use another --out\n"), err
    assert not out.exists()
