"""A run folder under faults: one process at a time, damaged or foreign files reported in one line
with nothing changed, OS errors naming the path, and a run that diverges or is interrupted
leaving a checkpoint that resumes to the same bits."""
import errno
import json
import os
import re
import shlex
import shutil
import stat
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest

import baselines
import config as run_config
import data
import snn
import snn_eggroll
import report
import resources
import run
import run_folder
import training
from nmnist_files import write_dataset
from test_report import real_score, write_preset_run
from test_run import ROOT, SMALL, dataset, limited, run_main, stored_params  # noqa: F401 (dataset is a fixture)


def train_args(out, dataset, *extra):
    return ["train", "--out", str(out), "--generations", "10", *SMALL, *dataset, *extra]


def snapshot(folder):
    """The run's files and their bytes (the lock file holds the PID of whoever held it last)."""
    return {p.name: p.read_bytes() if p.is_file() else sorted(q.name for q in p.iterdir()) for p in folder.iterdir()
            if p.name != run_folder.LOCK}


@pytest.fixture
def finished_run(tmp_path, dataset):
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset)) == 0
    return out


# ---------------------------------------------------------------------------------------------
# One process per folder

def hold(folder):
    """A separate process that holds `folder` until killed; returns it once the lock is taken."""
    code = ("import sys, time, pathlib, run_folder\n"
            "with run_folder.owned(pathlib.Path(sys.argv[1])):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(120)\n")
    process = subprocess.Popen([sys.executable, "-c", code, str(folder)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "held"
    return process


def test_a_second_process_on_a_run_folder_is_refused_and_a_killed_owner_never_blocks(finished_run, dataset,
                                                                                     capsys, tmp_path):
    before = snapshot(finished_run)
    owner = hold(finished_run)
    try:
        for extra in (["--resume"], ["--force"]):
            code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
            assert code == 2 and err.count("\n") == 1, err
            assert f"{finished_run} is in use by another process (PID {owner.pid})" in err
        assert snapshot(finished_run) == before
        results = tmp_path / "results"
        reproduce_owner = hold(results / "quick")
        try:
            code, err = run_main(["reproduce", "--config", "quick", "--results", str(results), "--quiet",
                                  *dataset], capsys)
            assert code == 2 and f"(PID {reproduce_owner.pid})" in err and err.count("\n") == 1
        finally:
            reproduce_owner.kill()
            reproduce_owner.wait()
    finally:
        owner.kill()
        owner.wait()
    # the killed owner's lock went with it: the folder is free at once
    assert run.main(train_args(finished_run, dataset, "--force")) == 0


def test_a_refusal_leaves_no_lock_it_made_in_a_run_folder(finished_run, dataset, capsys):
    """A finished run's folder without its .lock (removed, or copied without it): a refused command
    leaves it so, the folder as it was."""
    (finished_run / run_folder.LOCK).unlink()
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume", "--seed", "5"), capsys)
    assert code == 2 and "holds a run with other settings (--seed 1, not 5)" in err
    assert not (finished_run / run_folder.LOCK).exists() and snapshot(finished_run) == before


def test_other_settings_are_named_by_their_values_and_only_where_they_differ(finished_run, dataset, capsys):
    """Resuming with other settings names each by its value, a default too (hidden 64), and leaves out
    what follows from another (an ES run has no rank, an EGGROLL run no ES mode, a BPTT run no
    population nor generations, an EGGROLL run no epochs)."""
    for extra, said in [(["--hidden", "32"], '(--hidden 64, not 32)'),
                        (["--method", "es"], '(--method eggroll, not es)')]:
        code, err = run_main(train_args(finished_run, dataset, "--resume", *extra), capsys)
        assert code == 2 and f"holds a run with other settings {said};" in err, err
    bptt = ["train", "--out", str(finished_run), "--method", "bptt", "--epochs", "1", "--batch-size", "16", *dataset]
    code, err = run_main(bptt, capsys)
    assert code == 2 and 'holds a run with other settings (--method eggroll, not bptt);' in err, err


def test_a_run_stopped_before_its_first_checkpoint_may_be_replaced_by_force(finished_run, dataset, capsys):
    """A run stopped before its first checkpoint leaves its config.json and an empty metrics.jsonl:
    other settings there are refused with --force as the fix (nothing trained is lost), which then
    trains them; a run that has trained is still said to be left as it is."""
    for name in ("checkpoint.npz", "final.json", "real.json"):
        (finished_run / name).unlink(missing_ok=True)
    (finished_run / "metrics.jsonl").write_text("")
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--seed", "5"), capsys)
    assert code == 2 and err == (f"error: {finished_run} holds a run with other settings (--seed 1, not 5) that "
                                 f"stopped before its first checkpoint, so nothing of it was trained: use --force to "
                                 f"train these settings there (it deletes that run's config.json), or another --out\n")
    assert snapshot(finished_run) == before
    assert run_main(train_args(finished_run, dataset, "--seed", "5", "--force"), capsys)[0] == 0


def test_a_setting_config_json_lacks_is_said_to_be_missing_not_only_other(finished_run, dataset, capsys):
    """A config.json that lost a setting (the run's seed): the refusal says the file has none, and
    that restoring it is the fix if it lost the run's, not only that the settings differ."""
    config_json = finished_run / "config.json"
    config_json.write_text(json.dumps({k: v for k, v in json.loads(config_json.read_text()).items() if k != "seed"}))
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume", "--seed", "2"), capsys)
    assert code == 2 and err.count("\n") == 1 and "holds a run with other settings (--seed 1, not 2); its " \
        "config.json has no seed, so the run's is taken as the default: if it lost the run's, restore it from a copy" \
        in err, err
    assert snapshot(finished_run) == before


def test_a_data_folder_is_never_taken_for_a_run_folder(tmp_path, dataset, capsys):
    """The data folder given where a run's is expected: train does not write a run into it, and
    evaluate does not advise training into it; each says what the folder is."""
    root = Path(dataset[dataset.index("--data-root") + 1])
    before = {path: path.stat().st_mtime_ns for path in root.rglob("*")}
    code, err = run_main(train_args(root, dataset), capsys)
    assert code == 2 and err == (f"error: {root} holds N-MNIST (its Train and Test folders): it is a data folder, "
                                 f"which the project only reads, not a run's; use another --out\n"), err
    code, err = run_main(["evaluate", str(root), *dataset], capsys)
    assert code == 2 and err.endswith("not a run's; give evaluate a run's folder (train's --out), and this one with "
                                      "--data-root\n") and "train --out" not in err, err
    assert {path: path.stat().st_mtime_ns for path in root.rglob("*")} == before


@pytest.mark.parametrize("inside", ["NMNIST/Train", "NMNIST/Train/3", "NMNIST/Test/3/new", "NMNIST/mine",
                                    "NMNIST/mine/run"])
def test_a_folder_inside_a_data_folder_is_never_a_run_or_results_folder(tmp_path, dataset, capsys, inside):
    """A split folder, a digit folder, a folder below one or beside them, given as train's --out,
    evaluate's run or reproduce's --results: refused in one line naming the copy, as the copy
    itself is, without advice to train there, and nothing written among the recordings."""
    root = Path(dataset[dataset.index("--data-root") + 1])
    folder = root / inside
    before = {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts}
    said = f"{folder} lies inside {root}, which holds N-MNIST (its Train and Test folders): a data folder, which " \
           f"the project only reads, not a run's; "
    code, err = run_main(train_args(folder, dataset), capsys)
    assert code == 2 and err == f"error: {said}use another --out\n", err
    code, err = run_main(["evaluate", str(folder), *dataset], capsys)
    assert code == 2 and err == (f"error: {said}give evaluate a run's folder (train's --out), and {root} with "
                                 f"--data-root\n") and "train --out" not in err, err
    code, err = run_main(["reproduce", "--config", "quick", "--runs", "bptt", "--seeds", "1", "--quiet", "--results",
                          str(folder), *dataset], capsys)
    assert code == 2 and err == f"error: {said}use another --results\n", err
    assert {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts} == before


@pytest.mark.parametrize("inside", ["NMNIST", "NMNIST/Train", "NMNIST/mine"])
@pytest.mark.parametrize("how", ["--cache-dir", "EGGROLL_CACHE"])
def test_the_frame_cache_is_never_kept_inside_a_data_folder(tmp_path, dataset, capsys, monkeypatch, inside, how):
    """--cache-dir or $EGGROLL_CACHE in an N-MNIST copy (the copy itself, a split folder, one beside
    them): refused in one line before any recording is read, and no cache written among them."""
    root = Path(dataset[dataset.index("--data-root") + 1])
    folder = root / inside
    before = {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts}
    options = ["--data-root", str(root)]
    if how == "--cache-dir":
        options += ["--cache-dir", str(folder)]
    else:
        monkeypatch.setenv("EGGROLL_CACHE", str(folder))
    code, err = run_main(train_args(tmp_path / "run", options), capsys)
    where = f"{folder} holds N-MNIST (its Train and Test folders): it is a data folder" if inside == "NMNIST" else \
        f"{folder} lies inside {root}, which holds N-MNIST (its Train and Test folders): a data folder"
    assert code == 2 and err == (f"error: {where}, which the project only reads, not the frame cache; point --cache-dir "
                                 f"(or $EGGROLL_CACHE) at a folder outside it\n"), err
    assert {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts} == before


def test_the_projects_folders_do_not_nest(finished_run, tmp_path, dataset, capsys):
    """A run inside a results folder of reproduce, reproduce's results or an emulation inside a run
    folder, an emulation inside a results folder, a run among the project's code: each refused in
    one line naming what the folder is, and nothing written there."""
    results = tmp_path / "results"
    (results / "quick" / "runs" / "es-seed1").mkdir(parents=True)
    (results / "quick" / "runs" / "es-seed1" / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    emulate = ["emulate", "--mnist", str(tmp_path / "absent"), "--quiet", "--out"]
    (tmp_path / "to-run").symlink_to(finished_run)  # a link is judged by where it leads
    (tmp_path / "to-code").symlink_to(ROOT)
    for args, said in [
            (train_args(results / "quick", dataset), f"--out {results / 'quick'} is a results folder (its runs/ "
                                                     f"holds runs, as reproduce and examples/snn_depth.py make it); "
                                                     f"use another --out"),
            (train_args(results, dataset), f"--out {results} is a results folder of reproduce (its presets' runs/ "
                                           f"hold runs); use another --out"),
            (["reproduce", "--config", "quick", "--runs", "bptt", "--seeds", "1", "--quiet", "--results",
              str(finished_run), *dataset], f"--results {finished_run} is a run folder of this project (it holds "
                                            f".eggroll-run); use another --results"),
            ([*emulate, str(finished_run)], f"--out {finished_run} is a run folder of this project"),
            ([*emulate, str(results)], f"--out {results} is a results folder of reproduce"),
            (train_args(ROOT, dataset), f"--out {ROOT} is the project's own folder (its code); use another --out"),
            (train_args(ROOT / "examples", dataset), f"--out {ROOT / 'examples'} is the project's folder examples/, "
                                                     f"which holds its own files only; use another --out"),
            (train_args(ROOT / "tests" / "data" / "run", dataset), f"--out {ROOT / 'tests' / 'data' / 'run'} is in "
                                                                   f"the project's folder tests/"),
            (train_args(Path(sys.prefix) / "run", dataset), f"--out {Path(sys.prefix) / 'run'} is in the folder of "
                                                            f"this Python's environment ({Path(sys.prefix).resolve()})"),
            (train_args(ROOT / "docs" / "run", dataset), f"--out {ROOT / 'docs' / 'run'} is in the project's folder "
                                                         f"docs/"),
            (train_args(results / "quick" / "runs", dataset), f"--out {results / 'quick' / 'runs'} is a folder of run "
                                                              f"folders ("),
            (["reproduce", "--config", "quick", "--runs", "bptt", "--seeds", "1", "--quiet", "--results",
              str(tmp_path / "to-run"), *dataset], f"--results {tmp_path / 'to-run'} is a run folder of this project"),
            (train_args(tmp_path / "to-code", dataset), f"--out {tmp_path / 'to-code'} is the project's own folder"),
            (train_args(finished_run / "sub", dataset), f"--out {finished_run / 'sub'} lies inside {finished_run}, a "
                                                        f"run folder of this project (it holds .eggroll-run); use "
                                                        f"another --out"),
            ([*emulate, str(finished_run / "a" / "emu")], f"--out {finished_run / 'a' / 'emu'} lies inside "
                                                           f"{finished_run}, a run folder")]:
        before = {path: path.stat().st_mtime_ns for path in (*finished_run.iterdir(), *results.rglob("*"))}
        code, err = run_main(args, capsys)
        assert code == 2 and err == f"error: {said}\n" or err.startswith(f"error: {said}") and err.count("\n") == 1, \
            (args, err)
        assert {path: path.stat().st_mtime_ns for path in (*finished_run.iterdir(), *results.rglob("*"))} == before
    assert not (ROOT / run_folder.RUN_MARK).exists() and not (ROOT / "config.json").exists()
    assert not (ROOT / "tests" / "data" / "run").exists() and not (Path(sys.prefix) / "run").exists()


def test_reproduce_never_writes_its_results_into_a_data_folder(tmp_path, dataset, capsys):
    """--results at the data folder itself (`--results nmnist-sample`): refused as train's --out is."""
    root = Path(dataset[dataset.index("--data-root") + 1])
    before = {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts}
    code, err = run_main(["reproduce", "--config", "quick", "--runs", "bptt", "--seeds", "1", "--quiet", "--results",
                          str(root), *dataset], capsys)
    assert code == 2 and err == (f"error: {root} holds N-MNIST (its Train and Test folders): it is a data folder, "
                                 f"which the project only reads, not a run's; use another --results\n"), err
    assert {path: path.stat().st_mtime_ns for path in root.rglob("*") if "cache" not in path.parts} == before


def test_a_folder_beside_the_split_folders_of_a_flat_copy_is_inside_it(tmp_path, dataset, capsys):
    """A copy in the flat layout (<root>/{Train,Test}, as nmnist-sample/): a folder beside Train and
    Test is among the recordings' folders, refused; in tonic's layout, one beside <root>/NMNIST is not."""
    flat = tmp_path / "flat"
    shutil.copytree(data.split_base(Path(dataset[dataset.index("--data-root") + 1])), flat)
    code, err = run_main(train_args(flat / "quick", dataset), capsys)
    assert code == 2 and err == (f"error: {flat / 'quick'} lies inside {flat}, which holds N-MNIST (its Train and Test "
                                 f"folders): a data folder, which the project only reads, not a run's; use another "
                                 f"--out\n"), err
    assert not (flat / "quick").exists()


def test_a_folder_that_is_no_copy_s_split_folders_is_no_data_folder_around_a_run(tmp_path, dataset, capsys):
    """A run beside a user's own Train folder (no digit folders in it, so no N-MNIST copy), or beside
    <root>/NMNIST (root holds the copy in tonic's layout, and may hold more): it trains."""
    (tmp_path / "Train" / "notes").mkdir(parents=True)
    assert run.main(train_args(tmp_path / "runs" / "first", dataset)) == 0
    root = Path(dataset[dataset.index("--data-root") + 1])
    assert run.main(train_args(root / "runs" / "beside", dataset)) == 0
    shutil.rmtree(root / "runs")


@pytest.mark.parametrize("change", ["only Test", "Train a file"])
def test_evaluate_on_a_copy_without_its_train_folder_says_what_is_there_and_why_it_is_needed(
        tmp_path, finished_run, dataset, capsys, change):
    """evaluate on a copy holding only Test (test.zip alone), or a file named Train: one line saying
    both splits are read (or that Train is a file) and where the training recordings go."""
    copy = tmp_path / "copy"
    shutil.copytree(Path(dataset[dataset.index("--data-root") + 1]), copy, ignore=shutil.ignore_patterns("cache"))
    train = data.split_base(copy) / "Train"
    shutil.rmtree(train)
    if change == "Train a file":
        train.write_text("x")
    before = snapshot(finished_run)
    code, err = run_main(["evaluate", str(finished_run), "--data-root", str(copy),
                          "--cache-dir", str(tmp_path / "cache")], capsys)
    said = f"is a file, not the split folder Train: move it out of {train.parent}, then put" \
        if change == "Train a file" else "is missing, and every command reads both splits (train and validation are " \
                                         "cut from Train, test is Test, and evaluate scores all three): put"
    assert code == 2 and err.count("\n") == 1 and err.startswith(f"error: --data-root {copy}: ") and said in err, err
    assert err.endswith(f"N-MNIST's training recordings there as {train}/<digit>/*.bin (train.zip of the N-MNIST "
                        f"download)\n") and "restore it" not in err, err
    assert snapshot(finished_run) == before and not (tmp_path / "cache").exists()


def test_the_root_or_the_home_folder_is_no_run_folder(tmp_path, dataset, capsys, monkeypatch):
    """--out / (an unset variable's `$RUNS/`) or the home folder: refused in one line, nothing written."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    code, err = run_main(train_args("~", dataset), capsys)
    assert code == 2 and err == (f"error: {home} is your home folder, and a run writes its files straight into its "
                                 f"folder: give --out a folder of its own (e.g. {home / 'runs' / 'first'})\n"), err
    assert list(home.iterdir()) == []
    with pytest.raises(run_folder.UsageError, match="^/ is the file system's root, and a run writes its files"):
        run_folder.refuse_shared_folder(Path("/"))
    run_folder.refuse_shared_folder(home / "runs")


def test_a_minibatch_larger_than_the_training_split_is_said(tmp_path, dataset, capsys):
    """--batch-size above the training split's size trains on the whole split each step, and says so;
    so does a --batch-growth that takes the minibatch past the split by the last generation."""
    code, err = run_main(train_args(tmp_path / "run", dataset, "--batch-size", "100000"), capsys)
    assert code == 0 and re.fullmatch(r"note: --batch-size 100000 is more than the training split's \d+ recordings: "
                                      r"every minibatch is the whole split\n", err), err
    code, err = run_main(train_args(tmp_path / "both", dataset, "--batch-size", "100000", "--batch-growth", "3"),
                         capsys)
    assert code == 0 and re.fullmatch(r"note: --batch-size 100000 is more than the training split's \d+ recordings: "
                                      r"every minibatch is the whole split, and --batch-growth 3 joins up to 3 of them, "
                                      r"so the later generations score every recording up to 3 times\n", err), err
    code, err = run_main(train_args(tmp_path / "grown", dataset, "--batch-size", "16", "--batch-growth", "64"), capsys)
    assert code == 0 and re.fullmatch(r"note: --batch-growth 64 grows the minibatch to 1,024 recordings by the last "
                                      r"generation, more than the training split's \d+: the larger minibatches score "
                                      r"recordings more than once\n", err), err
    code, err = run_main(train_args(tmp_path / "within", dataset, "--batch-size", "4", "--batch-growth", "2"), capsys)
    assert code == 0 and err == "", err
    # a run that will not train says nothing of its minibatch: one refused, or one finished
    code, err = run_main(train_args(tmp_path / "within", dataset, "--batch-size", "100000", "--resume"), capsys)
    assert code == 2 and err.startswith(f"error: {tmp_path / 'within'} holds a run with other settings (--batch-growth "
                                        f"2, not 1; --batch-size 4, not 100000); ") and err.count("\n") == 1, err
    code, err = run_main([part for part in train_args(tmp_path / "run", dataset, "--batch-size", "100000", "--resume")
                          if part != "--quiet"], capsys)
    assert code == 0 and err.startswith(f"note: {tmp_path / 'run'} has finished (its final.json holds the results)") \
        and err.count("\n") == 1, err


def test_a_minibatch_of_the_whole_split_is_no_note_nor_is_a_reproduce_run(tmp_path, dataset, capsys):
    """The note is `train`'s, for a --batch-size above the split: a minibatch of exactly the split's
    recordings draws none, nor does a preset's run that reproduce trains (its runs are its own)."""
    code, err = run_main(train_args(tmp_path / "run", dataset, "--batch-size", "100000"), capsys)
    recordings = re.search(r"training split's (\d+) recordings", err).group(1)
    code, err = run_main(train_args(tmp_path / "whole", dataset, "--batch-size", recordings), capsys)
    assert code == 0 and err == "", err
    options = dict(zip(dataset[::2], dataset[1::2]))
    settings = run_config.RunConfig(generations=2, population=8, batch_size=100000, eval_every=2,
                                    data_root=options["--data-root"], cache_dir=options["--cache-dir"])
    training.train(settings, tmp_path / "reproduced", progress=False, command="reproduce")
    assert "note:" not in capsys.readouterr().err


def test_a_finished_runs_final_json_is_its_own_before_train_points_to_it(finished_run, dataset, capsys, tmp_path):
    """`train` of a finished run names its final.json as the results only if it is intact and the run's
    own: another run's copied in, or a damaged one, is said, with the command that scores the run again."""
    final = json.loads((finished_run / "final.json").read_text())
    rescore = f"`python run.py train --out {finished_run} --resume"
    for changed, said in [(dict(final, config=dict(final["config"], seed=2)), "final.json is another run's (seed 2, "
                                                                               "not 1), not the results of the run in "
                                                                               f"{finished_run / 'config.json'}: move it "
                                                                               f"out of {finished_run} to keep it"),
                          (dict(final, config={k: v for k, v in final["config"].items() if k != "population"}),
                           "final.json is another run's (population 512, not 8; final.json names no population: a "
                           "default), not the results"),
                          (dict(final, config={k: v for k, v in final["config"].items()
                                               if k not in ("population", "batch_size")}),
                           "final.json is another run's (batch_size 256, not 16; population 512, not 8; final.json "
                           "names no batch_size, population: defaults), not the results"),
                          (dict(final, config={**{k: v for k, v in final["config"].items() if k != "rank"},
                                               "method": "es"}),  # another method's: its own settings, none lost
                           "final.json is another run's (method \"es\", not \"eggroll\"), not the results"),
                          (dict(final, test_acc=2.0), "final.json is damaged (test_acc must be a number in [0, 1], "
                                                      "got 2.0), so this finished run has no results"),
                          ([final], "final.json is damaged (not a JSON object), so this finished run has no results")]:
        (finished_run / "final.json").write_text(json.dumps(changed))
        code, err = run_main(train_args(finished_run, dataset), capsys)
        assert code == 2 and said in err and rescore in err and err.count("\n") == 1, err
    (finished_run / "final.json").write_text(json.dumps(final))
    code, err = run_main(train_args(finished_run, dataset), capsys)
    assert code == 2 and "already holds this run, finished: its results are in" in err
    assert err.endswith(f"(`run.py evaluate {finished_run}` scores it on any copy of N-MNIST); use another --out to "
                        f"train it again\n"), err
    (finished_run / "checkpoint.npz").rename(tmp_path / "weights.npz")  # without its weights, nothing to evaluate
    code, err = run_main(train_args(finished_run, dataset), capsys)
    assert code == 2 and err.endswith("(its weights, checkpoint.npz, are gone, so nothing scores it again); use "
                                      "another --out to train it again\n"), err



def test_a_finished_run_asked_for_on_another_folders_recordings_names_both_folders(finished_run, dataset, tmp_path,
                                                                                   capsys):
    """The same settings on another --data-root: the run is finished on the recordings of the folder its
    final.json names, which the line says, and the fix trains on the other one's if they differ (a copy
    made elsewhere is not read before the refusal, so it may hold the same); the same folder through a
    link is the same folder."""
    here = os.path.realpath(dataset[1])
    elsewhere = tmp_path / "elsewhere"
    shutil.copytree(here, elsewhere)
    assert json.loads((finished_run / "final.json").read_text())["data"]["root"] == here
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, ["--data-root", str(elsewhere), *dataset[2:]]), capsys)
    assert code == 2 and err == (f"error: {finished_run} already holds this run, finished on the recordings in {here}: "
                                 f"its results are in {finished_run / 'final.json'} (`run.py evaluate {finished_run}` "
                                 f"scores it on any copy of N-MNIST); if those in {os.path.realpath(elsewhere)} are "
                                 f"other recordings, use another --out to train it on them\n"), err
    (tmp_path / "link").symlink_to(here)
    code, err = run_main(train_args(finished_run, ["--data-root", str(tmp_path / "link"), *dataset[2:]]), capsys)
    assert code == 2 and "already holds this run, finished: its results are in" in err, err
    assert snapshot(finished_run) == before

def test_a_lock_a_full_disk_does_not_take_is_named_and_leaves_no_folder(tmp_path, dataset, capsys, monkeypatch):
    """A disk full when the lock's PID is written: the line names the lock file and the full disk
    (not standard output, which the failed write's close would otherwise be taken for), and the
    folders made for the run are gone again."""
    class FullDisk:
        def __init__(self, file):
            self.file = file

        def __getattr__(self, name):
            return getattr(self.file, name)

        def flush(self):
            raise OSError(errno.ENOSPC, "No space left on device")

        def close(self):
            self.file.close()
            raise OSError(errno.ENOSPC, "No space left on device")

    fdopen = os.fdopen  # the lock alone is opened "r+"
    monkeypatch.setattr(os, "fdopen", lambda fd, mode="r", *args: (FullDisk if mode == "r+" else lambda file: file)(
        fdopen(fd, mode, *args)))
    out = tmp_path / "new" / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err == (f"error: cannot write {out / run_folder.LOCK}: No space left on device; free disk "
                                 f"space there or use another folder\n"), err
    assert list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------------------------------
# Damaged or foreign files

def rewrite_checkpoint(out, change):
    with np.load(out / run_folder.CHECKPOINT) as stored:
        arrays = {name: stored[name] for name in stored.files}
    change(arrays)
    with open(out / run_folder.CHECKPOINT, "wb") as file:
        np.savez(file, **arrays)


def as_version_1(arrays):
    """A checkpoint as written before checkpoints recorded their run: version 1, no identity."""
    as_version_2(arrays)
    del arrays["identity"]
    arrays["version"] = np.int64(1)


def as_version_2(arrays):
    """A checkpoint as written before checkpoints recorded the end-to-end time: version 2."""
    del arrays["end_to_end_seconds"]
    arrays["version"] = np.int64(2)


def write_npy(out):
    """A plain .npy array saved under the checkpoint's name."""
    with open(out / run_folder.CHECKPOINT, "wb") as file:
        np.save(file, np.zeros(3))


@pytest.mark.parametrize("damage, problem", [
    (lambda out: (out / run_folder.CHECKPOINT).write_bytes(b""), "it is empty"),
    (lambda out: (out / run_folder.CHECKPOINT).write_bytes(np.random.default_rng(0).bytes(3000)),
     "it is not a checkpoint.npz archive"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update({"param/W1": a["param/W1"][:, :-1]})),
     "param/W1 is float32 (64, 2311), expected float32 (64, 2312)"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.pop("adam_v/b2")), "adam_v/b2 is missing"),
    (lambda out: rewrite_checkpoint(out, lambda a: a["param/W2"].__setitem__((0, 0), np.nan)),
     "param/W2 holds NaN or inf"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step=np.int64(11))),
     "its step 11, adam_t 10 and 10 step_seconds disagree"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step_seconds=a["step_seconds"][:-1])),
     "its step 10, adam_t 10 and 9 step_seconds disagree"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step=np.int64(0), adam_t=np.int64(0),
                                                           step_seconds=a["step_seconds"][:0])),
     "its step 0, adam_t 0 and 0 step_seconds disagree"),  # none is written before the first update
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step=np.array([2, 2]))),
     "step is int64 (2,), expected an integer"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step_seconds=a["step_seconds"][:, None])),
     "step_seconds is float64 (10, 1), expected float64 (step,)"),
    (lambda out: rewrite_checkpoint(out, lambda a: a["step_seconds"].__setitem__(3, -1.0)),
     "step_seconds holds a negative, NaN or inf duration"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(end_to_end_seconds=np.float64(np.nan))),
     "end_to_end_seconds is float64 () nan, expected one float64 >= 0"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(end_to_end_seconds=np.float64(np.inf))),
     "end_to_end_seconds is float64 () inf, expected one float64 >= 0"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.pop("end_to_end_seconds")), "end_to_end_seconds is missing"),
    (lambda out: rewrite_checkpoint(out, lambda a: a["adam_v/W1"].__setitem__((0, 0), -1.0)),
     "adam_v/W1 holds negative values"),
    (lambda out: rewrite_checkpoint(out, lambda a: a["adam_m/b1"].__setitem__(0, np.inf)),
     "adam_m/b1 holds NaN or inf"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update({"param/W3": a["param/W2"]})),
     "it holds an array param/W3 that no checkpoint of this network has"),
    (write_npy, "it is not a checkpoint.npz archive"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(identity=np.array("{"))), "identity is not valid JSON"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(identity=np.array(json.dumps(
        dict(json.loads(str(a["identity"])), config={"method": "eggroll", "seed": "x"}))))),
     'identity\'s config.seed must be an integer, got "x"'),
    (lambda out: rewrite_checkpoint(out, lambda a: as_version_1(a) or a.update({"param/W1": a["param/W1"][:-1]})),
     "param/W1 is float32 (63, 2312), expected float32 (64, 2312)"),
])
def test_a_damaged_checkpoint_is_one_line_for_resume_and_evaluate_and_changes_nothing(
        finished_run, dataset, capsys, damage, problem):
    (finished_run / "final.json").unlink()
    damage(finished_run)
    before = snapshot(finished_run)
    for args in (train_args(finished_run, dataset, "--resume"), ["evaluate", str(finished_run), *dataset]):
        code, err = run_main(args, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"checkpoint {finished_run / run_folder.CHECKPOINT} is damaged ({problem}" in err
        assert "allow_pickle" not in err
    assert snapshot(finished_run) == before


@pytest.mark.parametrize("damage, message", [
    (lambda out: (out / "config.json").write_text("{not json"), "config.json is not valid JSON"),
    (lambda out: (out / "config.json").write_text("[1, 2]"), "config.json does not hold a run's settings"),
    (lambda out: (out / "config.json").unlink(), "holds a run without its config.json"),
    (lambda out: (out / "metrics.jsonl").write_text('{"generation": 5}\n{broken\n{"generation": 10}\n'),
     "metrics.jsonl line 2 is damaged"),
])
def test_a_damaged_config_or_metrics_file_is_one_line_naming_it(finished_run, dataset, capsys, damage, message):
    (finished_run / "final.json").unlink()
    damage(finished_run)
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 2 and message in err and err.count("\n") == 1, err
    assert snapshot(finished_run) == before


DESTRUCTIVE = ("--force", "delete")  # advice that would take an intact run away


def test_an_intact_run_is_never_met_with_advice_that_deletes_it(finished_run, dataset, capsys):
    """Another --seed in a finished run's folder, with or without --resume, the same run again, and a
    config.json lost beside an intact checkpoint: one line naming the difference, whose advice keeps
    the run (another --out, --resume, restoring the file), never --force or deleting."""
    before = snapshot(finished_run)
    for extra, message in ((["--seed", "2"], "holds a run with other settings (--seed 1, not 2); use another --out"),
                           (["--seed", "2", "--resume"], "holds a run with other settings (--seed 1, not 2); give the "
                                                         "run's own settings to continue it, or use another --out"),
                           ([], "already holds this run, finished: its results are in")):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and err.count("\n") == 1 and message in err, err
        assert not any(word in err for word in DESTRUCTIVE), err
    (finished_run / "config.json").rename(finished_run.parent / "config.json")
    before.pop("config.json")
    for args in (train_args(finished_run, dataset, "--resume"), train_args(finished_run, dataset)):
        code, err = run_main(args, capsys)
        assert code == 2 and "without its config.json" in err and "restore it" in err, err
        assert not any(word in err for word in DESTRUCTIVE), err
    (finished_run / "config.json").write_text("{")
    before["config.json"] = b"{"
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and "is not valid JSON" in err and not any(word in err for word in DESTRUCTIVE), err
    assert snapshot(finished_run) == before


def test_a_damaged_final_json_beside_its_checkpoint_names_the_command_that_rewrites_it(finished_run, dataset,
                                                                                       capsys):
    """The report of a run whose final.json is damaged and whose checkpoint is intact gives the
    command that scores the run again and rewrites final.json, not deleting the run; that command,
    run as given (with the --data-root), does so, the checkpoint unchanged."""
    final = (finished_run / "final.json").read_text()
    results = finished_run.parent / "results"
    (results / "runs").mkdir(parents=True)
    folder = results / "runs" / "es-seed1"
    shutil.copytree(finished_run, folder)
    (folder / "final.json").write_text("{")
    with pytest.raises(ValueError) as error:
        report.collect(results)
    message = str(error.value)
    assert not any(word in message for word in DESTRUCTIVE), message
    command = message.split("`")[1].split()
    assert command[:2] == ["python", "run.py"] and "(with the --data-root it trained on)" in message
    assert report.final_fix(folder).startswith("`python run.py train ")
    (folder / "final.json").unlink()
    (folder / "final.json").mkdir()  # a folder in its place, which --resume refuses: moved out first
    assert report.final_fix(folder).startswith(f"move the folder final.json out of {folder}, then `python run.py ")
    (folder / "final.json").rmdir()
    (folder / "final.json").write_text("{")
    checkpoint = (folder / run_folder.CHECKPOINT).read_bytes()
    code, err = run_main(command[2:] + ["--quiet", *dataset], capsys)
    assert code == 0 and err.startswith(f"note: {folder / 'final.json'} is not valid JSON (") and err.endswith(
        "): --resume scores the run again from its checkpoint and writes it anew\n"), err  # said, not done silently
    assert json.loads((folder / "final.json").read_text())["test_acc"] == json.loads(final)["test_acc"]
    assert (folder / run_folder.CHECKPOINT).read_bytes() == checkpoint
    (folder / "final.json").write_text(json.dumps(dict(json.loads(final), test_acc=2.0)))
    code, err = run_main(command[2:] + ["--quiet", *dataset], capsys)
    assert code == 0 and err == (f"note: {folder / 'final.json'} is damaged (test_acc must be a number in [0, 1], got "
                                 f"2.0): --resume scores the run again from its checkpoint and writes it anew\n"), err
    assert json.loads((folder / "final.json").read_text())["test_acc"] == json.loads(final)["test_acc"]


def test_resume_where_there_is_nothing_to_resume_starts_the_run_and_says_so(tmp_path, dataset, capsys):
    """--resume into a folder without a run (a job script that resumes or starts alike) trains the
    run from its first step, to the weights of a plain run, with one line saying nothing was resumed."""
    assert run.main(train_args(tmp_path / "plain", dataset)) == 0
    capsys.readouterr()
    assert run.main(train_args(tmp_path / "new", dataset, "--resume")) == 0
    err = capsys.readouterr().err
    assert err == f"note: {tmp_path / 'new'} holds no checkpoint to resume from (no run yet): the run starts at its " \
                  f"first step\n"
    new, plain = stored_params(tmp_path / "new"), stored_params(tmp_path / "plain")
    assert new.keys() == plain.keys() and all(np.array_equal(new[name], plain[name]) for name in new)


CONFIG_DAMAGES = [({"seed": "x"}, 'seed must be an integer, got "x"'),
                  ({"time_bins": "10"}, 'time_bins must be an integer, got "10"'),
                  ({"beta": "a"}, 'beta must be a number, got "a"'),
                  ({"threshold": None}, "threshold must be a number, got null"),
                  ({"seed": -5}, "seed must lie in 0..2^63-1, got -5"),
                  ({"init_std": -1}, "init_std must lie in [1e-06, 10], got -1"),
                  ({"time_bins": 0}, "time_bins must lie in 1..1000, got 0"),
                  ({"lr_schedule": "linear"}, 'lr_schedule must be one of constant, cosine, got "linear"'),
                  ({"colour": "red"}, "colour is not a setting a run stores"),
                  ({"method": "EGGROLL"}, 'method must be one of eggroll, es, bptt, got "EGGROLL"'),
                  ({"method": 3}, "method must be one of eggroll, es, bptt, got 3")]


def test_a_setting_in_config_json_is_checked_by_the_rules_of_its_option(finished_run, dataset, capsys):
    """A value of config.json of the wrong type, choice or range is one line naming the file and
    the setting, for --resume and evaluate alike, and changes nothing."""
    stored = json.loads((finished_run / "config.json").read_text())
    for change, problem in CONFIG_DAMAGES:
        (finished_run / "config.json").write_text(json.dumps({**stored, **change}))
        before = snapshot(finished_run)
        for args in (train_args(finished_run, dataset, "--resume"), ["evaluate", str(finished_run), *dataset]):
            code, err = run_main(args, capsys)
            assert code == 2 and err.count("\n") == 1, (change, err)
            assert f"{finished_run / 'config.json'} is damaged ({problem})" in err, (change, err)
        assert snapshot(finished_run) == before


METRICS_DAMAGES = [(['{"generation": "a"}'], 'line 1 is damaged (generation must be an integer >= 1, got "a")'),
                   (['{"generation": null}'], "line 1 is damaged (generation must be an integer >= 1, got null)"),
                   (['{"generation": 5, "val_acc": 2}'],
                    "line 1 is damaged (val_acc must be a number in [0, 1], got 2)"),
                   (['{"generation": 5, "wall_seconds": -1.0}', '{"generation": 10}'],
                    "line 1 is damaged (wall_seconds must be a number of seconds >= 0 and below 10^12 (30,000 "
                    "years), got -1.0)"),
                   (['{"generation": 5}', '{"generation": 5}'],
                    "line 2 is damaged (generation 5 does not follow generation 5)")]


def test_a_damaged_checkpoint_beside_the_runs_results_is_not_advised_away_by_force(finished_run, dataset, capsys):
    """A finished run's checkpoint cut short: its final.json still holds the run's results, which
    --force would delete; evaluate, which reads it, advises a copy of the checkpoint, or another
    --out (--resume of the finished run reads none: it says the run has finished)."""
    checkpoint = finished_run / run_folder.CHECKPOINT
    checkpoint.write_bytes(checkpoint.read_bytes()[:5000])
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err.endswith("; restore it from a copy to score the run again (its final.json holds the "
                                      "run's results, which --force would delete), or train the run again in "
                                      "another --out\n"), err
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err.startswith(f"note: {finished_run} has finished"), err


def test_a_damaged_checkpoint_beside_a_damaged_final_json_is_advised_force(finished_run, dataset, capsys):
    """A final.json that is no intact record (a score out of range) holds no results --force would
    lose: beside a damaged checkpoint, the advice is --force or another --out, not a copy."""
    final = json.loads((finished_run / "final.json").read_text())
    (finished_run / "final.json").write_text(json.dumps(dict(final, test_acc=2.0)))
    checkpoint = finished_run / run_folder.CHECKPOINT
    checkpoint.write_bytes(checkpoint.read_bytes()[:5000])
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 2 and err.endswith("; train the run again with --force (it deletes this run's files) or in "
                                      "another --out\n"), err


def test_a_run_that_lost_its_checkpoint_is_told_so_with_or_without_resume(finished_run, dataset, capsys):
    """An unfinished run whose checkpoint is gone: the same advice whether --resume was given or not
    (continuing it with --resume would be refused)."""
    (finished_run / "final.json").unlink()
    (finished_run / run_folder.CHECKPOINT).unlink()
    for extra in ([], ["--resume"]):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and "holds a run that has trained (its metrics.jsonl has records) but not its " \
                             "checkpoint.npz; put it back to continue, or use --force" in err, (extra, err)


def test_an_unfinished_run_is_told_what_resume_would_meet_first(finished_run, dataset, capsys):
    """Train without --resume into an unfinished run: its damaged checkpoint, or the process that
    holds the folder, is said at once, not "continue it with --resume" that --resume then refuses."""
    (finished_run / "final.json").unlink()
    code, err = run_main(train_args(finished_run, dataset), capsys)
    assert code == 2 and err.endswith("already holds this run, unfinished: continue it with --resume\n"), err
    owner = hold(finished_run)
    try:
        code, err = run_main(train_args(finished_run, dataset), capsys)
        assert code == 2 and f"{finished_run} is in use by another process (PID {owner.pid})" in err, err
    finally:
        owner.kill()
        owner.wait()
    checkpoint = finished_run / run_folder.CHECKPOINT
    checkpoint.write_bytes(checkpoint.read_bytes()[:900])
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset), capsys)
    assert code == 2 and err.count("\n") == 1 and f"but its checkpoint {checkpoint} is damaged (it is not a " \
        f"checkpoint.npz archive); train the run again with --force" in err, err
    assert snapshot(finished_run) == before


def test_a_run_that_lost_its_config_json_too_is_refused_not_trained_over(finished_run, dataset, capsys):
    """A trained run left with its metrics.jsonl alone: neither --resume nor a run of other settings
    takes it for an empty folder and writes over its records."""
    for name in ("final.json", run_folder.CHECKPOINT, "config.json"):
        (finished_run / name).unlink()
    before = snapshot(finished_run)
    for extra in (["--resume"], ["--seed", "5"]):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and err.count("\n") == 1 and "holds a run that has trained (its metrics.jsonl has records) " \
            "but not its config.json nor its checkpoint.npz; put them back to continue, or use --force" in err, err
        assert snapshot(finished_run) == before


def test_a_run_folder_left_with_its_results_alone_is_refused_not_trained_over(finished_run, dataset, capsys):
    """Its final.json is the only copy of the run's results: no run of any settings writes over it."""
    for name in (run_folder.CHECKPOINT, "config.json", "metrics.jsonl"):
        (finished_run / name).unlink()
    before = snapshot(finished_run)
    for extra in (["--resume"], ["--seed", "5"]):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and err.count("\n") == 1 and "holds a run without its config.json" in err, err
        assert snapshot(finished_run) == before


def test_a_line_added_after_a_cut_last_line_starts_a_line_of_its_own(tmp_path):
    """A metrics.jsonl whose last line a kill cut (no newline): the next record is a line of its own,
    the cut line kept as it is for --resume to drop, not glued to the record."""
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"generation": 1}\n{"generation": 2')
    run_folder.append_line(path, '{"generation": 3}')
    assert path.read_text() == '{"generation": 1}\n{"generation": 2\n{"generation": 3}\n'


def test_a_real_json_that_is_not_a_score_counts_as_no_score(finished_run, dataset):
    """reproduce --real-root and examples/snn_depth.py score a run again unless its real.json is a
    score of this run on those very recordings: one that is JSON but no record, a record missing its
    accuracy, or another run's score (another name, another generation) is none (and is then written
    again, not shown)."""
    root, cache = dataset[1], dataset[3]
    held = training.load_splits(root, run_folder.read_config(finished_run).time_bins, cache).fingerprint()
    real = finished_run / "real.json"
    score = {"data": held, **real_score(0.5), "run": str(finished_run), "generation": 10}
    for text, scored in (("[1]", False), (json.dumps({"data": held}), False),
                         (json.dumps({"data": held, "run": "run", "generation": 10}), False),
                         (json.dumps(score), True), (json.dumps({**score, "run": "results/x/runs/run"}), True),
                         (json.dumps({**score, "run": "es-run"}), False), (json.dumps({**score, "generation": 9}), False)):
        real.write_text(text)
        assert training.scored_on(finished_run, root, cache) is scored, text


def test_a_refused_resume_leaves_config_json_as_it_was(tmp_path, dataset, capsys):
    """A run of seed 2 whose config.json lost its seed: --resume (seed 1 then) is refused by the
    checkpoint, and the file still lacks the seed, so that the advice to restore it still holds."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset, "--seed", "2")) == 0
    (out / "final.json").unlink()
    settings = json.loads((out / "config.json").read_text())
    del settings["seed"]
    (out / "config.json").write_text(json.dumps(settings))
    before = snapshot(out)
    code, err = run_main(train_args(out, dataset, "--resume"), capsys)
    assert code == 2 and "belongs to another run (seed 2, not 1)" in err, err
    assert snapshot(out) == before
    code, err = run_main(train_args(out, dataset, "--resume", "--seed", "2"), capsys)
    assert code == 2 and "its config.json has no seed" in err, err


def test_a_finished_run_whose_config_json_lost_a_setting_is_told_to_restore_it(tmp_path, dataset, capsys):
    """A finished run of seed 2 whose config.json lost its seed: its own final.json is not called
    another run's; the line says which settings config.json lacks and where they are, nothing changed."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset, "--seed", "2")) == 0
    settings = json.loads((out / "config.json").read_text())
    del settings["seed"]
    (out / "config.json").write_text(json.dumps(settings))
    before = snapshot(out)
    for extra in ([], ["--resume"]):
        code, err = run_main(train_args(out, dataset, *extra), capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"{out / 'config.json'} has no seed, so the run's is taken as the default, which its final.json " \
               f"contradicts (final.json says seed 2, not 1): restore them in config.json from final.json's " \
               f"\"config\"" in err, err
        assert snapshot(out) == before
    settings["lr"] = settings["lr"] * 2  # and a setting it states that final.json contradicts: restoring the
    (out / "config.json").write_text(json.dumps(settings))  # seed alone would not do; the checkpoint sides with
    before = snapshot(out)                                     # final.json, so config.json is restored whole
    code, err = run_main(train_args(out, dataset, "--resume", "--lr", str(settings["lr"])), capsys)
    assert code == 2 and err == (f"error: {out / 'config.json'} holds other settings than those of its final.json "
                                 f"(final.json says lr 0.01, not 0.02; seed 2, not 1): restore config.json from "
                                 f"final.json's \"config\" (the checkpoint was saved under them)\n"), err
    assert snapshot(out) == before


def test_a_damaged_checkpoint_of_a_reproduce_run_is_told_the_fix_reproduce_has(tmp_path, dataset, capsys,
                                                                               monkeypatch):
    """reproduce has no --out, and its --force retrains only runs of other settings: a damaged
    checkpoint of one of its runs is told to move the run away, after which reproduce trains it."""
    monkeypatch.setitem(run_config.PRESETS, "quick", {"common": dict(generations=4, population=4, batch_size=16,
                                                                     eval_every=2)})
    args = ["reproduce", "--config", "quick", "--runs", "es", "--seeds", "1", "--results", str(tmp_path), "--quiet",
            *dataset]
    assert run.main(args) == 0
    out = tmp_path / "quick" / "runs" / "es-seed1"
    intact = (out / run_folder.CHECKPOINT).read_bytes()
    (out / run_folder.CHECKPOINT).write_bytes(b"damaged")  # scoring the finished run on other recordings reads it
    shutil.copytree(dataset[1], tmp_path / "real")  # the same recordings, as another copy
    code, err = run_main([*args, "--real-root", str(tmp_path / "real")], capsys)
    assert code == 2 and err.endswith(f"restore it from a copy to score the run again (its final.json holds the run's "
                                      f"results), or move {out} away (it is left as it is) and reproduce trains the "
                                      f"run again there\n"), err
    (out / run_folder.CHECKPOINT).write_bytes(intact)
    (out / "final.json").unlink()
    (out / run_folder.CHECKPOINT).write_bytes(b"damaged")
    code, err = run_main(args, capsys)
    assert code == 2 and err.endswith(f"is damaged (it is not a checkpoint.npz archive); move {out} away (it is left "
                                      f"as it is) and reproduce trains the run again there\n"), err
    assert "--force" not in err and "--out" not in err
    shutil.move(out, tmp_path / "aside")
    assert run.main(args) == 0 and (out / "final.json").is_file()


def test_a_finished_run_resumed_under_another_summing_has_no_problem(finished_run):
    """A finished run resumed under --update allreduce (or alone, after one): nothing goes on, so the
    checkpoint's summing is not compared, and the note names no problem with it."""
    config = run_config.from_stored(json.loads((finished_run / "config.json").read_text()))
    params = snn.init_network(config.seed, config.network)
    stored = run_folder.checkpoint_identity(finished_run)
    assert stored["summed"] is None
    final = json.loads((finished_run / "final.json").read_text())
    for summed in (None, "allreduce on 2 processes"):
        later = types.SimpleNamespace(out=finished_run, identity={**stored, "summed": summed}, total_steps=10,
                                      config=config)
        assert training.finished_problems(later, params, final) == []


def test_resume_of_a_finished_run_keeps_its_records_as_they_are(finished_run, dataset, capsys):
    """--resume where the run has finished, its final.json intact and of this run and data: one note
    (none with --quiet, as scripts that resume many runs pass it), exit 0, and every file as it was:
    no end-to-end time of a rescore written over the run's."""
    before = snapshot(finished_run)
    quiet = train_args(finished_run, dataset, "--resume")
    code, err = run_main([part for part in quiet if part != "--quiet"], capsys)
    assert code == 0 and err == (f"note: {finished_run} has finished (its final.json holds the results): --resume "
                                 f"trains and writes nothing\n"), err
    assert "--quiet" in quiet and run_main(quiet, capsys) == (0, "")
    assert snapshot(finished_run) == before


def generation(line):
    return json.loads(line)["generation"]


@pytest.mark.parametrize("damage", [
    lambda lines: (lines[:-1] + [lines[-1][:-30]], f"line {len(lines)} of its metrics.jsonl is not JSON"),
    lambda lines: (lines + ["xyz"], f"line {len(lines) + 1} of its metrics.jsonl is not JSON"),
    lambda lines: ([lines[1], lines[0], *lines[2:]], f"line 2 of its metrics.jsonl is damaged (generation "
                   f"{generation(lines[0])} does not follow generation {generation(lines[1])})"),
    lambda lines: (lines[:-1], f"its metrics.jsonl ends at generation {generation(lines[-2])}, not at final.json's "
                   f"{generation(lines[-1])}"),
    lambda lines: (lines + [json.dumps(dict(json.loads(lines[-1]), generation=generation(lines[-1]) + 5))],
                   f"its metrics.jsonl ends at generation {generation(lines[-1]) + 5}, not at final.json's "
                   f"{generation(lines[-1])}"),
    lambda lines: (lines[:-1] + [json.dumps(dict(json.loads(lines[-1]), val_acc=0.125))],
                   f"its metrics.jsonl's last record holds validation accuracy 0.125, not final.json's "
                   f"{json.loads(lines[-1])['val_acc']}: it is another run's"),
    lambda lines: (None, "its metrics.jsonl is missing"),
    lambda lines: ([], "its metrics.jsonl holds no record")],
    ids=["last line cut", "garbage after", "lines swapped", "the last record lost", "a record past the end",
         "another run's", "missing", "empty"])
def test_resume_of_a_finished_run_names_damaged_records_and_keeps_them(finished_run, dataset, capsys, damage):
    """A finished run's metrics.jsonl, which a report reads beside final.json, damaged or lost: --resume
    still trains and writes nothing (exit 0), and its note names what is wrong and how to mend it; no
    line is dropped (a finished run's lines are whole: a kill cuts none once final.json is written)."""
    metrics = finished_run / "metrics.jsonl"
    lines, problem = damage(metrics.read_text().splitlines())
    assert len(metrics.read_text().splitlines()) >= 2
    if lines is None:
        metrics.unlink()
    else:
        metrics.write_text("".join(line + "\n" for line in lines))
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {finished_run} has finished (its final.json holds the results): --resume "
                                 f"trains and writes nothing; but {problem} (a report reads its records): restore "
                                 f"metrics.jsonl from a copy of the run, or train the run again with another --out\n"), err
    assert snapshot(finished_run) == before


def too_large_weights(path):
    arrays = dict(np.load(path))
    arrays["param/W1"][...] = 1e38 / arrays["param/W1"].shape[1]  # rows of 1e38: ten frames pass float32's largest
    np.savez(path, **arrays)
    return (f"checkpoint {path} holds weights too large for the network (layer 1's membrane potentials could pass "
            f"float32's range): they are no trained run's; restore it from a copy to score the run again (its "
            f"final.json holds the run's results, which --force would delete), or train the run again in another "
            f"--out")


def newer_version(path):
    arrays = dict(np.load(path))
    np.savez(path, **dict(arrays, version=np.int64(run_folder.CHECKPOINT_VERSION + 1)))
    return (f"checkpoint {path} was written by a newer eggroll-snn (checkpoint version "
            f"{run_folder.CHECKPOINT_VERSION + 1}; this one reads 1 to {run_folder.CHECKPOINT_VERSION}): use that "
            f"version's code for this run")


def partway(path):
    """The checkpoint made one of the run halfway (a backup of it put back), its step and Adam's count agreeing."""
    arrays = dict(np.load(path))
    finished = int(arrays["step"])
    step = finished // 2
    np.savez(path, **dict(arrays, step=arrays["step"].dtype.type(step), adam_t=arrays["adam_t"].dtype.type(step),
                          step_seconds=arrays["step_seconds"][:step]))
    return (f"checkpoint {path} holds the weights after {step} updates, and final.json records a run of {finished}: "
            f"it is not the finished run's weights; restore it from a copy to score the run again (its final.json "
            f"holds the run's results, which --force would delete), or train the run again in another --out")


@pytest.mark.parametrize("damage", [
    lambda path: (path.write_bytes(b"garbage"), f"checkpoint {path} is damaged (it is not a checkpoint.npz archive); "
                  f"restore it from a copy to score the run again (its final.json holds the run's results, which "
                  f"--force would delete), or train the run again in another --out")[1],
    newer_version, too_large_weights, partway],
    ids=["not an archive", "a newer version", "weights too large", "the run partway"])
def test_resume_of_a_finished_run_names_a_checkpoint_it_cannot_score_and_evaluate_refuses_it(
        finished_run, dataset, capsys, damage):
    """A finished run's checkpoint damaged, written by a newer version of the code (not called
    damaged), of weights no run trains (too large for the network), or of the run partway (not the
    weights final.json scored): --resume, which writes nothing, says so in its note (evaluate would
    score it), and evaluate refuses it in the same words; every file is as it was."""
    told = damage(finished_run / run_folder.CHECKPOINT)
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {finished_run} has finished (its final.json holds the results): --resume "
                                 f"trains and writes nothing; but {told}\n"), err
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err == f"error: {told}\n"
    assert snapshot(finished_run) == before


def test_reproduces_scoring_of_a_finished_run_partway_gives_reproduces_advice(finished_run, dataset):
    """reproduce --real-root scoring a finished run whose checkpoint is the run's partway: refused with
    the advice that works for reproduce (move the run away), not train's (--force, another --out)."""
    told = partway(finished_run / run_folder.CHECKPOINT)
    with pytest.raises(run_folder.UsageError) as error:
        training.evaluate_run(finished_run, dataset[1], dataset[3], command="reproduce")
    assert str(error.value) == told.split("; restore")[0] + (
        f"; restore it from a copy to score the run again (its final.json holds the run's results), or move "
        f"{finished_run} away (it is left as it is) and reproduce trains the run again there")


def test_evaluate_refuses_a_finished_runs_checkpoint_trained_on_other_data_than_final_json_records(
        finished_run, dataset, capsys):
    """A checkpoint of the same settings trained on other recordings, put in a finished run's folder:
    evaluate would score weights final.json does not describe, so it refuses them, in --resume's words
    (which of the two files is the run's own, the settings cannot tell), and writes nothing."""
    path = finished_run / run_folder.CHECKPOINT
    arrays = dict(np.load(path))
    held = json.loads(str(arrays["identity"]))
    final_train = held["data"]["train"]
    held["data"] = {split: "0" * len(fingerprint) for split, fingerprint in held["data"].items()}
    np.savez(path, **dict(arrays, identity=np.array(json.dumps(held))))
    before = snapshot(finished_run)
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err == (f"error: {finished_run / 'final.json'} and checkpoint {path} name other data "
                                 f"(train: final.json's {final_train}, the checkpoint's {'0' * len(final_train)}): one "
                                 f"of them is another run's; put the run's own back from a copy of the run, or train "
                                 f"the run again in another --out\n"), err
    assert snapshot(finished_run) == before


def test_resume_of_a_finished_run_names_records_larger_than_are_read(finished_run, dataset, capsys, monkeypatch):
    """A finished run's metrics.jsonl larger than such a file holds (a stray disk image in its place):
    --resume's note says so, rather than refusing the run whose results final.json holds; one of
    just that size is read."""
    size = (finished_run / "metrics.jsonl").stat().st_size
    monkeypatch.setattr(run_folder, "MAX_METRICS_BYTES", size)
    final = json.loads((finished_run / "final.json").read_text())
    assert run_folder.finished_metrics_problem(finished_run, final) is None
    monkeypatch.setattr(run_folder, "MAX_METRICS_BYTES", size - 1)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {finished_run} has finished (its final.json holds the results): --resume "
                                 f"trains and writes nothing; but its metrics.jsonl holds {size:,} bytes, more than "
                                 f"such a file holds (at most {size - 1:,} are read) (a report reads its records): "
                                 f"restore metrics.jsonl from a copy of the run, or train the run again with another "
                                 f"--out\n"), err


def test_a_final_json_that_differs_on_a_setting_config_json_states_is_another_runs(tmp_path, dataset, capsys):
    """No checkpoint to tell which file is right, and final.json differs from config.json on a setting
    config.json leaves out (its default taken) and on one it states: config.json did not merely lose
    a setting, so final.json is named as another run's (restoring config.json from it would make this
    run that one)."""
    mine, other = tmp_path / "mine", tmp_path / "other"
    assert run.main(train_args(mine, dataset)) == 0
    assert run.main(train_args(other, dataset, "--hidden", "32", "--seed", "7")) == 0
    shutil.copyfile(other / "final.json", mine / "final.json")
    (mine / run_folder.CHECKPOINT).unlink()
    config = json.loads((mine / "config.json").read_text())
    assert "hidden" not in config and config["seed"] == 1
    before = snapshot(mine)
    code, err = run_main(train_args(mine, dataset), capsys)
    assert code == 2 and err.startswith(f"error: {mine / 'final.json'} is another run's (") and \
        err.count("\n") == 1, err
    assert snapshot(mine) == before


@pytest.mark.parametrize("case", ["final.json another's", "config.json lost it", "no checkpoint to tell",
                                  "config.json made another's", "config.json another's",
                                  "config.json another's, the run's own settings asked"])
def test_the_checkpoint_tells_whether_config_json_or_final_json_is_another_runs(tmp_path, finished_run, dataset,
                                                                                 capsys, case):
    """A finished run's final.json and config.json disagree on a setting config.json does not state
    (its default taken): the checkpoint, saved under the run's own settings, tells which file is
    another run's, and the one line says so (without a checkpoint, both readings); config.json
    rewritten to match another run's final.json is named by the checkpoint too, not taken as a
    finished run of those settings, whichever settings are asked (config.json's or the run's own, which
    would be told config.json's otherwise). Nothing is changed, with or without --resume."""
    other = tmp_path / "other"
    assert run.main(train_args(other, dataset, "--hidden", "32")) == 0
    config, checkpoint = finished_run / "config.json", finished_run / run_folder.CHECKPOINT
    if case.startswith("config.json another's"):  # the run of 64's config.json replaced by the run of 32's
        shutil.copyfile(other / "config.json", config)
    elif case == "config.json lost it":  # the run of 32 lost its "hidden"
        finished_run, config, checkpoint = other, other / "config.json", other / run_folder.CHECKPOINT
        config.write_text(json.dumps({k: v for k, v in json.loads(config.read_text()).items() if k != "hidden"}))
    else:
        shutil.copyfile(other / "final.json", finished_run / "final.json")
    if case == "no checkpoint to tell":
        checkpoint.unlink()
    wanted = ["--hidden", "32"] if case in ("config.json made another's", "config.json another's") else []
    if case == "config.json made another's":
        config.write_text(json.dumps(dict(json.loads(config.read_text()), hidden="32")))
    told = {"final.json another's": f"{finished_run / 'final.json'} is another run's (hidden \"32\", not \"64\")",
            "config.json lost it": f"{config} has no hidden, so the run's is taken as the default, which its final.json "
                                   f"contradicts (final.json says hidden \"32\", not \"64\"): restore them in "
                                   f"config.json from final.json's \"config\" (the checkpoint was saved under them)\n",
            "no checkpoint to tell": f"{config} has no hidden, so the run's is taken as the default, which its final.json "
                                     f"contradicts (final.json says hidden \"32\", not \"64\"): restore them in "
                                     f"config.json from final.json's \"config\", unless final.json is another run's "
                                     f"(then move it out of "
                                     f"{finished_run})\n",
            "config.json another's": f"{config} holds other settings than those of its final.json (final.json says "
                                     f"hidden \"64\", not \"32\"): restore config.json from final.json's \"config\" "
                                     f"(the checkpoint was saved under them)\n",
            "config.json another's, the run's own settings asked":
                f"{config} holds other settings than those of its final.json (final.json says hidden \"64\", not "
                f"\"32\"): restore config.json from final.json's \"config\" (the checkpoint was saved under them)\n",
            "config.json made another's": f"checkpoint {checkpoint} belongs to another run (hidden 64, not 32; sizes "
                                          f"2312-64-10, not 2312-32-10) than its folder's config.json"}[case]
    before = snapshot(finished_run)
    for extra in ([], ["--resume"]):
        code, err = run_main(train_args(finished_run, dataset, *wanted, *extra), capsys)
        assert code == 2 and err.startswith(f"error: {told}") and err.count("\n") == 1, (extra, err)
        assert snapshot(finished_run) == before


def test_temporary_files_a_kill_left_are_removed_by_the_next_run_there(tmp_path, dataset, capsys):
    """A kill no process can catch (SIGKILL) leaves a run's temporary file (<name>.<8 hex>.tmp) behind:
    the next command that trains in the folder removes it and names it in a note; a link of such a name, a file of two
    names and a user's <name>.tmp are left as they are, as is a run folder's temporary file
    elsewhere."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset, "--generations", "5")) == 0
    (out / "final.json").unlink()  # as if killed before its end
    left = [out / "metrics.jsonl.0123abcd.tmp", out / "checkpoint.npz.89abcdef.tmp"]
    for path in left:
        path.write_text("half a file")
    (out / "config.json.tmp").write_text("the user's")
    (tmp_path / "target").write_text("the link's")
    (out / "final.json.00000000.tmp").symlink_to(tmp_path / "target")
    (tmp_path / "second name").write_text("two names")
    os.link(tmp_path / "second name", out / "real.json.11111111.tmp")
    code, err = run_main(train_args(out, dataset, "--generations", "5", "--resume"), capsys)
    assert code == 0 and err.startswith(f"note: removed 2 temporary files that a killed run left in {out}: "
                                        f"checkpoint.npz.89abcdef.tmp, metrics.jsonl.0123abcd.tmp\n"), err
    assert not any(path.exists() for path in left) and (out / "final.json").is_file()
    fresh = tmp_path / "fresh"  # a marked folder where a fresh run starts: the same
    fresh.mkdir()
    (fresh / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    (fresh / "metrics.jsonl.0123abcd.tmp").write_text("half a file")
    code, err = run_main(train_args(fresh, dataset, "--generations", "5"), capsys)
    assert code == 0 and err.startswith(f"note: removed 1 temporary file that a killed run left in {fresh}: "
                                        f"metrics.jsonl.0123abcd.tmp\n"), err
    assert not (fresh / "metrics.jsonl.0123abcd.tmp").exists()
    assert (out / "config.json.tmp").read_text() == "the user's" and (out / "real.json.11111111.tmp").exists()
    assert os.readlink(out / "final.json.00000000.tmp") == str(tmp_path / "target") and \
        (tmp_path / "target").read_text() == "the link's"


def test_a_checkpoint_from_before_checkpoints_held_their_run_tells_no_run(tmp_path):
    """A version 1 checkpoint holds no identity: it tells nothing of whose run it is (None), rather than
    failing where a finished run's files are compared."""
    np.savez(tmp_path / run_folder.CHECKPOINT, **{"param/W1": np.zeros((2, 2), np.float32)})
    assert run_folder.checkpoint_identity(tmp_path) is None
    (tmp_path / run_folder.CHECKPOINT).write_bytes(b"not an archive")
    assert run_folder.checkpoint_identity(tmp_path) is None


def test_resume_never_writes_over_another_runs_final_json(finished_run, dataset, capsys):
    """Another run's results copied into a run's folder: --resume, which rescores the run and writes
    its own final.json, refuses as the plain command does, the file kept."""
    final = json.loads((finished_run / "final.json").read_text())
    final["config"]["generations"] = 2
    (finished_run / "final.json").write_text(json.dumps(final))
    before = snapshot(finished_run)
    for extra in ([], ["--resume"]):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and "final.json is another run's (generations 2, not 10)" in err, (extra, err)
        assert snapshot(finished_run) == before
    (finished_run / "final.json").write_text("{damaged")  # a damaged one is what --resume writes again
    assert run.main(train_args(finished_run, dataset, "--resume")) == 0
    assert json.loads((finished_run / "final.json").read_text())["config"]["generations"] == 10


def test_a_final_json_of_the_same_settings_on_other_data_is_another_runs(finished_run, dataset, capsys):
    """The results of a run of the same settings trained on other data, copied in (or the checkpoint of
    one: the settings cannot tell which): refused, naming both files and the data each names, with or
    without --resume; the files are kept, and no other run's score is printed as this one's."""
    final = json.loads((finished_run / "final.json").read_text())
    ours = final["data"]["fingerprint"]["train"]
    final["data"]["fingerprint"]["train"], final["n_train"] = "17 samples, sha256 0", 17
    (finished_run / "final.json").write_text(json.dumps(final))
    before = snapshot(finished_run)
    for extra in ([], ["--resume"]):
        code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
        assert code == 2 and err == (f"error: {finished_run / 'final.json'} and checkpoint "
                                     f"{finished_run / run_folder.CHECKPOINT} name other data (train: final.json's 17 "
                                     f"samples, sha256 0, the checkpoint's {ours}): one of them is another run's; put "
                                     f"the run's own back from a copy of the run, or train the run again in another "
                                     f"--out\n"), (extra, err)
        assert snapshot(finished_run) == before


@pytest.mark.parametrize("name", run_folder.RUN_FILES)
@pytest.mark.parametrize("extra", [[], ["--resume"], ["--force"]])
def test_a_folder_where_a_run_keeps_a_file_is_refused_before_any_work(finished_run, dataset, capsys, name, extra):
    """A folder made where the run keeps one of its files: one line naming it, before any scoring or
    training, and nothing changed (the folder is the user's: --force deletes the run's files only)."""
    path = finished_run / name
    path.unlink(missing_ok=True)  # a finished run has no real.json
    (path / "mine").mkdir(parents=True)
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, *extra), capsys)
    assert code == 2 and err == (f"error: {path} is a folder, not the regular file in which the run keeps its {name}: "
                                 f"move it out of {finished_run}, then run the command again\n"), err
    assert snapshot(finished_run) == before


@pytest.mark.parametrize("layer", [1, 2])
def test_resume_from_weights_too_large_for_the_network_is_one_line(finished_run, dataset, capsys, layer):
    """Finite weights whose potentials would overflow (no trained run's), in the hidden layer or the
    output layer: --resume refuses them as evaluate does, rather than train on with NumPy's overflow
    warnings."""
    (finished_run / "final.json").unlink()

    def change(arrays):  # each row sums to 1e38 (< 3.4e38): one frame fits, the run's 10 pass float32's largest
        arrays[f"param/W{layer}"][...] = 1e38 / arrays[f"param/W{layer}"].shape[1]
    rewrite_checkpoint(finished_run, change)
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 2 and err.count("\n") == 1 and f"holds weights too large for the network (layer {layer}'s" in err, err
    assert err.endswith("they are no trained run's; train the run again with --force (it deletes this run's files) "
                        "or in another --out\n"), err
    assert snapshot(finished_run) == before


def test_a_reproduce_run_of_weights_too_large_is_told_reproduces_fix(tmp_path, dataset, capsys, monkeypatch):
    """The same weights in an unfinished run of reproduce, which has no --force for it: move the run
    away, and reproduce trains it again."""
    monkeypatch.setitem(run_config.PRESETS, "quick", {"common": dict(generations=4, population=4, batch_size=16,
                                                                     eval_every=2)})
    args = ["reproduce", "--config", "quick", "--runs", "eggroll-r1", "--seeds", "1", "--results", str(tmp_path),
            "--quiet", *dataset]
    assert run.main(args) == 0
    out = tmp_path / "quick" / "runs" / "eggroll-r1-seed1"
    (out / "final.json").unlink()

    def change(arrays):
        arrays["param/W1"][...] = 1e38 / arrays["param/W1"].shape[1]
    rewrite_checkpoint(out, change)
    before = snapshot(out)
    code, err = run_main(args, capsys)
    assert code == 2 and err.endswith(f"they are no trained run's; move {out} away (it is left as it is) and reproduce "
                                      f"trains the run again there\n"), err
    assert "--force" not in err and snapshot(out) == before


def test_a_run_stopped_before_its_first_checkpoint_resumes_from_its_first_step(tmp_path, dataset, capsys,
                                                                                monkeypatch):
    """Ctrl-C at the first step leaves config.json and an empty metrics.jsonl: `--resume`, as the
    line says, starts the run at its first step; no advice to --force a run that never trained."""
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(0, interrupt))
        assert run_main(train_args(out, dataset), capsys)[0] == 130
    assert (out / "metrics.jsonl").read_bytes() == b""
    code, err = run_main(train_args(out, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {out} holds no checkpoint to resume from (its run never reached one): "
                                 f"the run starts at its first step\n"), err
    assert (out / "final.json").is_file()


def test_final_json_counts_each_split_as_it_is(tmp_path):
    """100 training recordings (90 train, 10 validation) and 20 test ones: final.json says 90/10/20,
    each split its own size (the tables' train/val/test line, the screen's noise band)."""
    write_dataset(tmp_path / "data", n_train=10, n_test=2, n_events=300)
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, "--data-root", str(tmp_path / "data"),
                     "--cache-dir", str(tmp_path / "cache")]) == 0
    final = json.loads((out / "final.json").read_text())
    assert (final["n_train"], final["n_val"], final["n_test"]) == (90, 10, 20)


def test_force_deletes_every_file_of_the_run_or_none(finished_run, dataset, capsys, monkeypatch):
    """--force that cannot delete one of the run's files (a folder under a temporary file's name, an
    immutable file) deletes none of them."""
    before = snapshot(finished_run)
    (finished_run / "final.json.0123abcd.tmp").mkdir()
    code, err = run_main(train_args(finished_run, dataset, "--force"), capsys)
    assert code == 2 and err == (f"error: --force cannot delete {finished_run / 'final.json.0123abcd.tmp'}: it is a "
                                 f"folder, not a file of a run; move it away or use another --out\n"), err
    (finished_run / "final.json.0123abcd.tmp").rmdir()
    assert snapshot(finished_run) == before
    rename = os.rename

    def immutable_metrics(source, target):
        if os.path.basename(source) == "metrics.jsonl":
            raise PermissionError(errno.EPERM, "Operation not permitted")
        rename(source, target)
    monkeypatch.setattr(os, "rename", immutable_metrics)
    code, err = run_main(train_args(finished_run, dataset, "--force"), capsys)
    assert code == 2 and err.startswith(f"error: cannot delete {finished_run / 'metrics.jsonl'}: Operation not "
                                        f"permitted; the system forbids it whatever the permissions (an immutable "
                                        f"or append-only file or folder: lift that with chattr -i or -a)"), err
    assert snapshot(finished_run) == before


def test_a_last_metrics_line_cut_short_is_left_out_with_a_note(finished_run, dataset, capsys):
    """metrics.jsonl's last line cut short (every write replaces the whole file, so not by a kill of
    this code: a copy cut short, say): --resume leaves it out, says so, names the record that is then
    missing, and goes on."""
    (finished_run / "final.json").unlink()
    metrics = finished_run / "metrics.jsonl"
    kept = metrics.read_text().splitlines()[0]
    metrics.write_text(kept + '\n{"generation": 1')
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {metrics} line 2, its last, is cut short: it is left out\n"
                                 f"note: {metrics} holds no record of 1 generation evaluated before the checkpoint "
                                 f"(from generation 10): the run goes on, and its record will lack it (a report's "
                                 f"curve and time to an accuracy too)\n"), err
    assert metrics.read_text().splitlines()[0] == kept
    (finished_run / "final.json").unlink()
    metrics.write_text(kept + '\ngarbage')  # a whole line no run writes: not JSON, not cut short
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err.startswith(f"note: {metrics} line 2, its last, is not JSON: it is left out\n"), err


def test_the_note_on_lost_records_counts_them_and_names_the_first(tmp_path, capsys):
    """Records of generations 5 and 10 lost before a checkpoint at 10 (one evaluation every 5): the
    note counts both and names the first; none lost, no note."""
    training.check_records(tmp_path / "metrics.jsonl", [], [1.0] * 10, 5)
    assert capsys.readouterr().err == (f"note: {tmp_path / 'metrics.jsonl'} holds no record of 2 generations "
                                       f"evaluated before the checkpoint (from generation 5): the run goes on, and its "
                                       f"record will lack them (a report's curve and time to an accuracy too)\n")
    training.check_records(tmp_path / "metrics.jsonl", [{"generation": 5, "wall_seconds": 5.0},
                                                         {"generation": 10, "wall_seconds": 10.0}], [1.0] * 10, 5)
    assert capsys.readouterr().err == ""


def test_a_json_file_of_bytes_that_are_no_text_is_named_so_without_the_codecs_words(tmp_path):
    """Random bytes in a record: "not UTF-8 text, at byte N", not Python's "'utf-8' codec can't decode"."""
    (tmp_path / "config.json").write_bytes(bytes([0x7B, 0xC4, 0x80, 0xFF]))
    with pytest.raises(run_folder.UsageError) as refused:
        run_folder.read_json(tmp_path / "config.json", "restore it")
    assert str(refused.value) == f"{tmp_path / 'config.json'} is not valid JSON (not UTF-8 text, at byte 3); restore it"


@pytest.mark.parametrize("wall_seconds", [4.0, 6.0, 5.000000000000001])
def test_a_record_whose_time_is_not_the_checkpoints_either_way_is_another_runs(tmp_path, wall_seconds):
    """A record of generation 5 whose wall_seconds are below, above or a rounding away from the
    checkpoint's five steps of 1 s each is another run's: one UsageError naming its line and both times."""
    with pytest.raises(run_folder.UsageError) as refused:
        training.check_records(tmp_path / "metrics.jsonl", [{"generation": 5, "wall_seconds": wall_seconds}],
                               [1.0] * 10, 5)
    assert str(refused.value).startswith(f"{tmp_path / 'metrics.jsonl'} line 1 is not a record of the run in its "
                                         f"folder: its wall_seconds, {wall_seconds}, are not the checkpoint's time "
                                         f"to generation 5, 5.0; "), refused.value


@pytest.mark.parametrize("loss", ["another run's", "emptied", "deleted"])
def test_records_before_the_checkpoint_that_are_another_runs_are_refused_and_lost_ones_named(
        tmp_path, dataset, capsys, monkeypatch, loss):
    """A run stopped at step 7 (its checkpoint at 5): another run's metrics.jsonl copied in its place
    is refused in one line naming the first record whose time is not the checkpoint's, and nothing
    changes; an emptied or deleted one resumes with a note naming the records it will lack."""
    other = tmp_path / "other"
    assert run.main(train_args(other, dataset, "--seed", "2")) == 0
    out = tmp_path / "stopped"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(7, interrupt))
        assert run_main(train_args(out, dataset), capsys)[0] == 130
    metrics = out / "metrics.jsonl"
    if loss == "another run's":
        shutil.copyfile(other / "metrics.jsonl", metrics)
        theirs = json.loads(metrics.read_text().splitlines()[0])["wall_seconds"]
        ours = float(sum(run_folder.read_arrays(out / run_folder.CHECKPOINT)["step_seconds"][:5]))
        before = snapshot(out)
        code, err = run_main(train_args(out, dataset, "--resume"), capsys)
        assert code == 2 and err == (f"error: {metrics} line 1 is not a record of the run in its folder: its "
                                     f"wall_seconds, {theirs}, are not the checkpoint's time to generation 5, {ours}; "
                                     f"put this run's metrics.jsonl back, or move that one away to go on without the "
                                     f"records before the checkpoint\n"), err
        assert snapshot(out) == before
        return
    metrics.write_text("") if loss == "emptied" else metrics.unlink()
    code, err = run_main(train_args(out, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {metrics} holds no record of 1 generation evaluated before the checkpoint "
                                 f"(from generation 5): the run goes on, and its record will lack it (a report's "
                                 f"curve and time to an accuracy too)\n"), err
    assert [json.loads(line)["generation"] for line in metrics.read_text().splitlines()] == [10]


def test_every_rule_of_the_records_refuses_what_its_number_cannot_be():
    """Times, amounts per sample and spreads are never negative, accuracies and fractions lie in [0, 1],
    generations and processes count from 1: each rule of metrics.jsonl, final.json and real.json that
    holds such a number refuses the impossible value."""
    checked = []
    for rules in (run_folder.METRICS_RULES, run_folder.FINAL_RULES, run_folder.REAL_RULES):
        for key, (valid, _) in rules.items():
            name = key.split(".")[-1]
            if name.endswith(("seconds", "per_sample", "_std")) or name == "epoch":
                impossible = -1
            elif name.endswith(("acc", "fraction")) or name in ("train", "val", "test", "all"):
                impossible = 1.5
            elif name in ("generations", "processes") or (name == "generation" and rules is run_folder.METRICS_RULES):
                impossible = 0
            else:
                continue
            assert not valid(impossible), (key, impossible)
            checked.append(key)
    assert {"end_to_end_seconds", "wall_seconds", "val_acc", "test_sparsity.silent_hidden_fraction",
            "accuracy.test", "generations"} <= set(checked), checked


def test_the_resume_command_given_survives_a_shell_word_for_word(tmp_path):
    """The command a message gives to continue a run quotes its folder: pasted into a shell, a path with
    a space or a semicolon is one --out, not two words or a second command."""
    out = tmp_path / "a run; rm -rf x"
    given = run_folder.resume_command(out, run_config.RunConfig(generations=5))
    words = shlex.split(given.split("`")[1])
    assert words[words.index("--out") + 1] == str(out) and words.count("--resume") == 1, words


def test_a_value_in_metrics_jsonl_is_checked_for_type_and_range(finished_run, dataset, capsys):
    (finished_run / "final.json").unlink()
    for lines, problem in METRICS_DAMAGES:
        (finished_run / "metrics.jsonl").write_text("\n".join(lines) + "\n")
        before = snapshot(finished_run)
        code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
        assert code == 2 and err.count("\n") == 1, (lines, err)
        assert f"{finished_run / 'metrics.jsonl'} {problem}" in err, (lines, err)
        assert snapshot(finished_run) == before


def test_a_checkpoint_of_another_run_is_refused_naming_what_differs(tmp_path, dataset, capsys):
    """A checkpoint records the run it belongs to: one copied from a run of another seed or method
    into this run's folder is refused by --resume and evaluate in one line, and nothing changes."""
    out = tmp_path / "seed1"
    assert run.main(train_args(out, dataset)) == 0
    (out / "final.json").unlink()
    for name, extra, difference in [("seed2", ["--seed", "2"], "seed 2, not 1"),
                                    ("es", ["--method", "es"], "method es, not eggroll"),
                                    ("cosine", ["--sigma-schedule", "cosine"], "sigma_schedule cosine, not constant"),
                                    ("output", ["--output-sigma-scale", "2"], "output_sigma_scale 2.0, not 1.0")]:
        assert run.main(train_args(tmp_path / name, dataset, *extra)) == 0
        shutil.copyfile(tmp_path / name / run_folder.CHECKPOINT, out / run_folder.CHECKPOINT)
        before = snapshot(out)
        for args in (train_args(out, dataset, "--resume"), ["evaluate", str(out), *dataset]):
            code, err = run_main(args, capsys)
            assert code == 2 and err.count("\n") == 1, err
            assert f"checkpoint {out / run_folder.CHECKPOINT} belongs to another run ({difference})" in err
            assert "--force would delete this checkpoint, which is intact" in err
        assert snapshot(out) == before


def test_a_config_json_whose_layers_disagree_with_the_checkpoint_is_a_mismatch_not_damage(tmp_path, dataset,
                                                                                           capsys):
    """config.json edited to other hidden layers than the checkpoint's: resume and evaluate call it
    what it is, name both networks, and do not tell the user to --force over an intact checkpoint."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset)) == 0
    (out / "final.json").unlink()
    text = (out / "config.json").read_text()  # edited as the project writes it, hidden before max_shift
    (out / "config.json").write_text(text.replace('\n "max_shift"', '\n "hidden": "32",\n "max_shift"'))
    before = snapshot(out)
    for args in (train_args(out, dataset, "--resume", "--hidden", "32"), ["evaluate", str(out), *dataset]):
        code, err = run_main(args, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert "belongs to another run (hidden 64, not 32; sizes 2312-64-10, not 2312-32-10)" in err, err
        assert "damaged" not in err and "restore those settings" in err
    assert snapshot(out) == before


@pytest.mark.parametrize("length", [["--generations", "10"], ["--method", "bptt", "--epochs", "1"]])
def test_a_run_resumes_only_on_the_data_it_was_trained_on(tmp_path, dataset, capsys, length):
    """--resume with another copy of N-MNIST (here a smaller one) is refused, finished or not, naming
    the split that differs; `evaluate` still scores the run on that copy."""
    out = tmp_path / "run"
    small = [option for option in SMALL if option not in ("--population", "8", "--eval-every", "5")] \
        if "bptt" in length else SMALL  # a method's own options only
    args = ["train", "--out", str(out), *small, *length]
    assert run.main(args + dataset) == 0
    other = ["--data-root", str(write_dataset(tmp_path / "other" / "NMNIST", n_train=10, n_test=3).parent),
             "--cache-dir", str(tmp_path / "cache")]
    for finished in (True, False):
        if not finished:
            (out / "final.json").unlink()
        before = snapshot(out)
        code, err = run_main(args + other + ["--resume"], capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"checkpoint {out / run_folder.CHECKPOINT} was trained on other data (train: 180 samples, sha256 " in err
        assert snapshot(out) == before
    assert run.main(["evaluate", str(out), *other]) == 0


def test_a_full_disk_names_the_path_and_leaves_no_temporary_file(tmp_path, dataset, capsys, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    data.load_nmnist(dataset[1], run_config.RunConfig().time_bins, dataset[3], progress=False)  # its frame cache
    monkeypatch.setattr(run_folder.numpy, "savez", full_disk)
    out = tmp_path / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"cannot write {out / run_folder.CHECKPOINT}: No space left on device" in err
    assert not list(out.glob("*.tmp")) and not (out / run_folder.CHECKPOINT).exists()


def test_a_full_disk_at_final_json_says_resume_writes_it(tmp_path, dataset, capsys, monkeypatch):
    """The run finished and checkpointed, and only its final.json found the disk full: the fix is to
    free space and --resume (which scores the run again), not another folder (training again)."""
    out = tmp_path / "run"
    write = run_folder.write_atomically

    def full_at_final(path, text, then=None):
        if Path(path).name == "final.json":
            with run_folder.writing(path, then):
                raise OSError(errno.ENOSPC, "No space left on device")
        write(path, text, then)
    monkeypatch.setattr(run_folder, "write_atomically", full_at_final)
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: cannot write {out / 'final.json'}: No space left on device; free disk space there, "
                          f"then `python run.py train --out {out} --resume "), err
    assert err.endswith("scores the finished run again and writes it\n") and "another folder" not in err, err
    monkeypatch.setattr(run_folder, "write_atomically", write)
    assert run.main(train_args(out, dataset, "--resume")) == 0 and (out / "final.json").is_file()


def test_a_full_disk_at_a_later_checkpoint_says_the_last_one_is_intact_and_resume_continues(tmp_path, dataset,
                                                                                            capsys, monkeypatch):
    """The second checkpoint finds the disk full: the line says the first is intact and how to
    continue from it once space is freed, not another folder; --resume then finishes the run."""
    out = tmp_path / "run"
    savez, calls = np.savez, []

    def full_at_the_second(file, **arrays):
        calls.append(int(arrays["step"]))
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        savez(file, **arrays)
    monkeypatch.setattr(run_folder.numpy, "savez", full_at_the_second)
    code, err = run_main(train_args(out, dataset, "--generations", "4", "--eval-every", "2"), capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert err.startswith(f"error: cannot write {out / run_folder.CHECKPOINT}: No space left on device; free disk "
                          f"space there, then `python run.py train --out {out} --resume "), err
    assert err.endswith("continues from the checkpoint of step 2, which is intact\n") and "another folder" not in err
    assert int(np.load(out / run_folder.CHECKPOINT)["step"]) == 2 and not list(out.glob("*.tmp"))
    monkeypatch.setattr(run_folder.numpy, "savez", savez)
    assert run.main(train_args(out, dataset, "--generations", "4", "--eval-every", "2", "--resume")) == 0
    assert (out / "final.json").is_file()


def test_a_write_cut_short_by_a_file_size_limit_names_the_file_and_keeps_the_old_one(tmp_path):
    """`reproduce --report-only` under `ulimit -f 25` (25 KB, less than a figure) over a report
    written before: one line naming the figure and the limit, every table and figure as it was,
    and no temporary file left."""
    results = tmp_path / "results" / "quick"
    for name in ("bptt", "es", "eggroll-r1", "eggroll-r4"):
        write_preset_run(results, "quick", name, 1)
    report.write_report(results, "quick")
    before = {p.name: p.read_bytes() for p in results.iterdir() if p.is_file()}
    assert len(before["rank_ablation.png"]) > 25 * 1024  # the limit bites
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "reproduce", "--config", "quick", "--results",
                           str(tmp_path / "results"), "--report-only", "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          preexec_fn=limited("RLIMIT_FSIZE", 25 * 1024))
    assert done.returncode == 2 and done.stderr == (  # no run is listed as skipped: none would train
        f"error: cannot write {results / 'rank_ablation.png'}: File too large; the limit on a file's size (ulimit -f) "
        f"is too low for it: raise it or lift it\n"), done.stderr
    assert {p.name: p.read_bytes() for p in results.iterdir() if p.is_file() and p.name != run_folder.LOCK} == before


def test_an_os_error_names_its_path_and_what_to_do(finished_run, dataset, capsys):
    """An --out the OS refuses, and --force where checkpoint.npz is a folder: one line naming the
    path and a fix that works, no raw [Errno ...], and the run there untouched."""
    code, err = run_main(train_args("/sys/eggroll-snn/run", dataset), capsys)
    assert code == 2 and err.count("\n") == 1 and "/sys/eggroll-snn" in err and "[Errno" not in err, err
    leftover = finished_run / f"{run_folder.CHECKPOINT}.0123abcd.tmp"  # a temporary file's name, --force's to delete
    leftover.mkdir()
    files = {p.name: p.read_bytes() for p in finished_run.iterdir() if p.is_file() and p.name != run_folder.LOCK}
    code, err = run_main(train_args(finished_run, dataset, "--force"), capsys)
    assert code == 2 and err == (f"error: --force cannot delete {leftover}: it is a folder, not a file of a run; move "
                                 f"it away or use another --out\n"), err
    assert {p.name: p.read_bytes() for p in finished_run.iterdir() if p.is_file() and p.name != run_folder.LOCK} \
        == files


@pytest.mark.parametrize("writer", ["text", "line", "figure", "checkpoint"])
def test_every_writer_replaces_a_file_whole_or_not_at_all(tmp_path, monkeypatch, writer):
    """A write that fails half-way (here: a disk that fills after the first bytes, seen when the
    file is synced before its rename) leaves the file as it was, removes its temporary file and
    names the file: JSON and Markdown, metrics.jsonl's lines, figures, checkpoints."""
    path = tmp_path / {"figure": "figure.png", "checkpoint": run_folder.CHECKPOINT}.get(writer, "file")
    settings = run_config.RunConfig(hidden="8")
    params = snn.init_network(1, settings.network)
    state = adam_state_of(params)
    path.write_bytes(b"old\n")

    def half_then_full(name, *args, **kwargs):
        with open(name, "ab") as file:
            file.write(b"half")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(os, "fsync", lambda descriptor: half_then_full(f"/proc/self/fd/{descriptor}"))
    write = {"text": lambda: run_folder.write_atomically(path, "new"),
             "line": lambda: run_folder.append_line(path, "new"),
             "figure": lambda: report.save_figure(types.SimpleNamespace(savefig=half_then_full), path),
             "checkpoint": lambda: run_folder.save_checkpoint(tmp_path, params, state, 1, [0.5],
                                                              run_folder.identity(settings), 1.0)}[writer]
    with pytest.raises(run_folder.UsageError) as error:
        write()
    assert str(error.value) == f"cannot write {path}: No space left on device; free disk space there or use another " \
                               f"folder"
    assert path.read_bytes() == b"old\n" and [p.name for p in tmp_path.iterdir()] == [path.name]


# ---------------------------------------------------------------------------------------------
# A run that diverges or is interrupted stops cleanly and resumes to the same bits

def failing_at(step, failure):
    """snn_eggroll.generation_step, except at generation `step`: `failure` instead."""
    real = snn_eggroll.generation_step

    def step_or_fail(params, state, frames, labels, generation, *args):
        if generation == step:
            return failure(params, state)
        return real(params, state, frames, labels, generation, *args)
    return step_or_fail


def nan_params(params, state):
    return {name: value * np.nan for name, value in params.items()}, state, {}


def interrupt(params, state):
    raise KeyboardInterrupt


@pytest.mark.parametrize("failure, message", [
    (nan_params, "training went non-finite at step 8 (a parameter became NaN or inf)"),
    (interrupt, "interrupted: {out} stopped at step 7 of 10; its checkpoint holds step 5; rerun with --resume"),
])
def test_a_run_stopped_mid_way_resumes_to_the_weights_of_an_uninterrupted_run(tmp_path, dataset, capsys,
                                                                             monkeypatch, failure, message):
    whole = tmp_path / "whole"
    assert run.main(train_args(whole, dataset)) == 0
    out = tmp_path / "stopped"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(7, failure))
        code, err = run_main(train_args(out, dataset), capsys)
    assert code == (130 if failure is interrupt else 2) and message.format(out=out) in err and err.count("\n") == 1, err
    assert not (out / "final.json").exists()
    assert run.main(train_args(out, dataset, "--resume")) == 0
    expected, resumed = stored_params(whole), stored_params(out)
    for name in expected:
        np.testing.assert_array_equal(expected[name], resumed[name], err_msg=name)
    records = [json.loads(line)["generation"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records == [5, 10]


def test_a_signal_just_after_a_checkpoint_is_written_names_the_step_it_holds(tmp_path, dataset, capsys, monkeypatch):
    """Ctrl-C landing once the checkpoint of step 5 is on disk, before the run has noted it: the line
    names the step the checkpoint holds and the step reached, both 5, read from what was written."""
    out, save_checkpoint = tmp_path / "stopped", run_folder.save_checkpoint

    def saved_then_interrupted(folder, params, state, step, *others):
        save_checkpoint(folder, params, state, step, *others)
        if step == 5:
            raise KeyboardInterrupt
    monkeypatch.setattr(run_folder, "save_checkpoint", saved_then_interrupted)
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 130 and err == (f"error: interrupted: {out} stopped at step 5 of 10; its checkpoint holds step 5; "
                                   f"rerun with --resume to continue\n"), err


@pytest.mark.parametrize("method", ["bptt", "eggroll"])
def test_a_step_whose_own_check_meets_nan_is_a_divergence_that_keeps_the_step_before(tmp_path, dataset, capsys,
                                                                                    monkeypatch, method):
    """The method's own check of its loss or fitness (bptt_step's, centred ranks') finds NaN at step 7:
    a divergence, the step before checkpointed and said so, as for a parameter gone non-finite."""
    out = tmp_path / "run"
    if method == "bptt":
        real = baselines.bptt_backward
        calls = []

        def backward(*args):
            calls.append(1)
            grads = real(*args)
            return {name: g * np.nan for name, g in grads.items()} if len(calls) == 7 else grads
        monkeypatch.setattr(baselines, "bptt_backward", backward)
        args = ["train", "--out", str(out), "--method", "bptt", "--epochs", "1", "--batch-size", "16", "--quiet", *dataset]
    else:
        real_fitness = snn_eggroll.fitness
        calls = []

        def fitness(*args, **kwargs):
            calls.append(1)
            values = real_fitness(*args, **kwargs)
            return values * np.nan if len(calls) == 7 else values
        monkeypatch.setattr(snn_eggroll, "fitness", fitness)
        args = train_args(out, dataset)
    code, err = run_main(args, capsys)
    assert code == 2 and "training went non-finite at step 7 (" in err and "NaN or inf" in err, err
    assert int(run_folder.read_arrays(out / run_folder.CHECKPOINT)["step"]) == 6, err


def test_a_run_stopped_before_its_first_checkpoint_says_so(tmp_path, dataset, capsys, monkeypatch):
    """Ctrl-C at the first step: no checkpoint is promised that is not there, and --resume starts it."""
    out = tmp_path / "run"
    monkeypatch.setattr(snn_eggroll, "generation_step", failing_at(0, interrupt))
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 130 and err == f"error: interrupted: {out} stopped at step 0 of 10; before its first checkpoint; " \
                                  f"rerun with --resume to continue\n"
    assert not (out / run_folder.CHECKPOINT).exists()


def test_a_run_stopped_after_its_last_step_says_where_it_stopped(tmp_path, dataset, capsys, monkeypatch):
    """Ctrl-C after the last step's checkpoint, before the final evaluation's own handler: the line
    says the checkpoint holds every step, not that training never started; --resume then finishes."""
    out = tmp_path / "run"

    def stopped(*args):  # as a signal arriving before finish's own handler
        raise KeyboardInterrupt
    with monkeypatch.context() as patch:
        patch.setattr(training, "finish", stopped)
        code, err = run_main(train_args(out, dataset), capsys)
    assert code == 130 and err == f"error: interrupted: {out} stopped at step 10 of 10; its checkpoint holds step " \
                                  f"10; rerun with --resume to continue\n"
    assert run.main(train_args(out, dataset, "--resume")) == 0 and (out / "final.json").exists()


def resumed_from_an_older_checkpoint(tmp_path, dataset, capsys, monkeypatch, as_older):
    """A run stopped at step 7, its checkpoint rewritten as an older version wrote it (`as_older`),
    then resumed: it must end in the weights of the run trained in one go. Returns its folder."""
    whole = tmp_path / "whole"
    assert run.main(train_args(whole, dataset)) == 0
    out = tmp_path / "old"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(7, nan_params))
        assert run_main(train_args(out, dataset), capsys)[0] == 2
    rewrite_checkpoint(out, as_older)
    assert run.main(train_args(out, dataset, "--resume")) == 0
    expected, resumed = stored_params(whole), stored_params(out)
    for name in expected:
        np.testing.assert_array_equal(expected[name], resumed[name], err_msg=name)
    return out


def test_a_checkpoint_from_before_checkpoints_named_their_run_still_resumes_to_the_same_weights(
        tmp_path, dataset, capsys, monkeypatch):
    """Version 1 checkpoints (without the run's identity) are in users' folders: --resume takes them
    as the run's own."""
    resumed_from_an_older_checkpoint(tmp_path, dataset, capsys, monkeypatch, as_version_1)


def test_a_checkpoint_from_before_the_end_to_end_time_resumes_to_the_same_weights_without_one(
        tmp_path, dataset, capsys, monkeypatch):
    """A version 2 checkpoint has no end-to-end time: the resumed run trains to the same weights,
    and neither its later records nor final.json claim a time they did not measure."""
    out = resumed_from_an_older_checkpoint(tmp_path, dataset, capsys, monkeypatch, as_version_2)
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [("end_to_end_seconds" in r) for r in records] == [True, False]
    assert "end_to_end_seconds" not in json.loads((out / "final.json").read_text())
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert int(stored["version"]) == 2 and "end_to_end_seconds" not in stored.files


def test_the_end_to_end_time_counts_what_the_steps_do_not_and_adds_up_over_a_resume(
        tmp_path, dataset, capsys, monkeypatch):
    """Each validation pass is made 0.1 s slower: the summed step time does not see it, the
    end-to-end time does (validated at steps 5 and 10: at least 0.2 s more). A run stopped at step 7
    and resumed adds its second stretch to the first: the end-to-end time of its final.json exceeds
    its checkpoint's at step 7."""
    real_evaluate = training.evaluate

    def slow_evaluate(*args, **kwargs):
        time.sleep(0.1)
        return real_evaluate(*args, **kwargs)
    monkeypatch.setattr(training, "evaluate", slow_evaluate)
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(7, nan_params))
        assert run_main(train_args(out, dataset), capsys)[0] == 2
    with np.load(out / run_folder.CHECKPOINT) as stored:
        first_stretch = float(stored["end_to_end_seconds"])
    assert first_stretch >= 0.1
    assert run.main(train_args(out, dataset, "--resume")) == 0
    final = json.loads((out / "final.json").read_text())
    assert final["end_to_end_seconds"] - final["total_seconds"] >= 2 * 0.1
    assert final["end_to_end_seconds"] >= first_stretch + 0.1
    records = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["generation"] for r in records] == [5, 10]
    assert records[0]["end_to_end_seconds"] - records[0]["wall_seconds"] >= 0.1
    assert records[0]["end_to_end_seconds"] < records[1]["end_to_end_seconds"] <= final["end_to_end_seconds"]


def test_a_run_that_lost_its_checkpoint_is_not_restarted_from_scratch_by_resume(tmp_path, dataset, capsys,
                                                                                monkeypatch):
    """A run that trained (metrics.jsonl has records) whose checkpoint.npz is gone, as when a
    folder is copied without its ignored files: --resume refuses in one line and keeps its metrics,
    rather than starting again from step 0 and dropping them; --force trains it afresh."""
    out = tmp_path / "run"
    with monkeypatch.context() as patch:
        patch.setattr(snn_eggroll, "generation_step", failing_at(7, interrupt))
        assert run_main(train_args(out, dataset), capsys)[0] == 130
    (out / run_folder.CHECKPOINT).unlink()
    metrics = (out / "metrics.jsonl").read_bytes()
    assert metrics
    code, err = run_main(train_args(out, dataset, "--resume"), capsys)
    assert code == 2 and err.count("\n") == 1 and "holds a run that has trained" in err and "--force" in err, err
    assert (out / "metrics.jsonl").read_bytes() == metrics and not (out / run_folder.CHECKPOINT).exists()
    assert run_main(train_args(out, dataset, "--force"), capsys)[0] == 0


@pytest.mark.parametrize("command, advice", [("train", "use another --out to train it again (its final.json is "
                                                       "kept)"),
                                             ("reproduce", "move {out} away to train the run again")])
def test_a_finished_run_without_its_checkpoint_is_not_trained_again_by_resume(tmp_path, command, advice):
    """A finished run whose checkpoint.npz (and metrics.jsonl) is gone: --resume has nothing to go
    on from, and starting afresh would replace the final.json it holds, so it is refused in one
    line that says how to train it again, and the folder is left as it was."""
    out, settings = tmp_path / "run", run_config.RunConfig(generations=5)
    run_folder.prepare(out, settings, resume=False, force=False)
    (out / "final.json").write_text('{"test_acc": 0.5}')
    before = {path.name: path.read_bytes() for path in out.iterdir()}
    with pytest.raises(run_folder.UsageError) as refused:
        run_folder.prepare(out, settings, resume=True, force=False, command=command)
    assert str(refused.value) == (f"{out} holds a finished run but no checkpoint.npz to resume from; "
                                  f"{advice.format(out=out)}")
    assert {path.name: path.read_bytes() for path in out.iterdir()} == before


@pytest.mark.parametrize("start, batch_growth, max_shift", [(0, 1, 0), (3, 1, 2), (2, 3, 1), (7, 1, 0)])
def test_the_minibatches_made_ahead_are_each_steps_own_in_order(start, batch_growth, max_shift):
    """training.minibatches, which makes the next minibatch in a worker thread while a step runs,
    yields for every step from `start` on exactly what data.minibatch gives that step."""
    generator = np.random.default_rng(5)
    split = data.Split(generator.integers(0, 256, (40, 10 * 2312 // 8), dtype=np.uint8),
                       generator.integers(0, 10, 40), 10)
    config = run_config.RunConfig(method="eggroll", batch_size=8, seed=3, max_shift=max_shift,
                                  batch_growth=batch_growth)
    job = types.SimpleNamespace(splits=types.SimpleNamespace(train=split), config=config, xp=np, total_steps=7)
    made = list(training.minibatches(job, start))
    assert len(made) == max(job.total_steps - start, 0)
    for step, (frames, labels) in zip(range(start, job.total_steps), made):
        expected_frames, expected_labels = data.minibatch(split, 8, np, 3, *config.minibatches(step, 7),
                                                          max_shift=max_shift)
        assert np.array_equal(frames, expected_frames) and np.array_equal(labels, expected_labels)


def test_a_run_non_finite_at_its_first_step_leaves_nothing_and_says_how_to_train_again(tmp_path, dataset, capsys,
                                                                                        monkeypatch):
    """A fresh run that fails before its first checkpoint removes what it wrote (here the folder it
    made, and the parents it made for it), so the advice needs no --force."""
    monkeypatch.setattr(snn_eggroll, "generation_step", failing_at(0, nan_params))
    out = tmp_path / "made" / "for" / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err == ("error: training went non-finite at step 1 (a parameter became NaN or inf); nothing "
                                 "of the run was kept: lower --lr or --sigma and train again\n"), err
    assert not (tmp_path / "made").exists()


def test_a_run_that_goes_non_finite_between_evaluations_keeps_every_step_before_it(tmp_path, dataset, capsys,
                                                                                  monkeypatch):
    """Step 8 goes non-finite, between the checkpoints of steps 5 and 10: the checkpoint then holds
    step 7, the last finite one, and the line says so."""
    monkeypatch.setattr(snn_eggroll, "generation_step", failing_at(7, nan_params))
    out = tmp_path / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err.endswith(f"{out / run_folder.CHECKPOINT} holds the run until step 7: lower --lr or "
                                      f"--sigma and train again in another --out (this run is left as it is)\n"), err
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert int(stored["step"]) == 7


def test_adam_moments_gone_non_finite_are_not_checkpointed(tmp_path, dataset, capsys, monkeypatch):
    """The parameters stay finite while a second moment overflows to inf: the run stops in one line
    at its next step (tell refuses to step from it), without writing a checkpoint of that state,
    which --resume would refuse; step 5's stays."""
    real = snn_eggroll.generation_step

    def overflowing_at_step_7(params, state, frames, labels, generation, *args):
        params, state, stats = real(params, state, frames, labels, generation, *args)
        if generation == 6:
            state = dict(state, v=dict(state["v"], W1=state["v"]["W1"] + np.inf))
        return params, state, stats
    monkeypatch.setattr(snn_eggroll, "generation_step", overflowing_at_step_7)
    out = tmp_path / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err.count("\n") == 1, err
    assert f"training went non-finite by step 7 (adam_v/W1 holds NaN or inf), so {out / run_folder.CHECKPOINT}" in err
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert int(stored["step"]) == 5


def test_ctrl_c_during_reproduce_says_how_to_continue_and_the_rerun_says_what_it_skips(
        tmp_path, dataset, capsys, monkeypatch):
    import config
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=10, population=4, batch_size=50,
                                                                 eval_every=5)})
    monkeypatch.setattr(config, "SEEDS", (1,))
    monkeypatch.setattr(config, "RANKS", (1, 2))
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", "--runs",
            "eggroll-r1,eggroll-r2", *dataset]
    with monkeypatch.context() as patch:
        calls = []
        real = snn_eggroll.generation_step

        def interrupt_second_run(params, state, frames, labels, generation, config_, *rest):
            calls.append(config_.rank)
            if config_.rank == 2 and generation == 7:
                raise KeyboardInterrupt
            return real(params, state, frames, labels, generation, config_, *rest)
        patch.setattr(snn_eggroll, "generation_step", interrupt_second_run)
        code, err = run_main(args, capsys)
    assert code == 130 and err.splitlines()[-1].startswith("error: interrupted: ")
    assert "eggroll-r2-seed1 stopped at step 7 of 10" in err and "rerun the same command to continue" in err
    code, err = run_main(args, capsys)
    assert code == 0
    assert "eggroll-r1 seed 1: finished in" in err and "skipped" in err
    assert f"results written to {tmp_path / 'quick'}" in err


def test_a_link_is_refused_and_a_device_is_never_replaced(tmp_path):
    """Writing a file whole never writes through a link nor replaces what is not a regular file: a
    link, a device file or a pipe is refused in one UsageError naming it, untouched."""
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    with pytest.raises(run_folder.UsageError, match=f"{link} is a symbolic link \\(to {target}\\)"):
        run_folder.write_atomically(link, "new")
    assert link.is_symlink() and target.read_text() == "old" and sorted(tmp_path.iterdir()) == [link, target]
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    with pytest.raises(run_folder.UsageError, match=re.escape(f"cannot write {pipe}: it is not a regular file (a folder, "
                                                              f"say), and only a file is replaced; move it out of "
                                                              f"{pipe.parent}, then run the command again")):
        run_folder.write_atomically(pipe, "new")
    with pytest.raises(run_folder.UsageError, match="is not a regular file"):
        resources.check_writable(pipe, "--json")
    assert stat.S_ISFIFO(os.stat(pipe).st_mode)


def test_a_folder_that_cannot_be_entered_is_not_writable(tmp_path, monkeypatch):
    """A file is created in a folder through its search (x) permission as well as its write (w)
    one: a folder that grants w but not x is refused before any work (os.access is asked for both;
    the tests may run as root, who may do anything, so its answer is made here)."""
    monkeypatch.setattr(resources.os, "access", lambda path, mode: not mode & os.X_OK)
    with pytest.raises(run_folder.UsageError) as refused:
        resources.check_writable(tmp_path / "out.json", "--json")
    assert str(refused.value) == (f"--json {tmp_path / 'out.json'}: the folder {tmp_path} is not writable (its "
                                  f"permissions, or an immutable attribute); make it writable, or choose another path")


def test_a_folder_to_resume_in_that_cannot_be_written_is_to_be_made_writable(tmp_path, monkeypatch):
    """A run folder (--resume, --force) or a results folder that cannot be written: the fix is to
    make it writable, as another path would start over; on a read-only file system, which no user
    caused, it says so (os.statvfs's answer is made here, as the tests may run as root)."""
    monkeypatch.setattr(resources.os, "access", lambda path, mode: False)
    with pytest.raises(run_folder.UsageError) as refused:
        resources.check_writable(tmp_path, "--out", folder=True)
    assert str(refused.value) == (f"--out {tmp_path}: the folder {tmp_path} is not writable (its permissions, or an "
                                  f"immutable attribute); make it writable (chmod u+w, or chattr -i if it is "
                                  f"immutable) and run again")
    monkeypatch.setattr(resources.os, "statvfs", lambda path: types.SimpleNamespace(f_flag=os.ST_RDONLY))
    with pytest.raises(run_folder.UsageError) as refused:
        resources.check_writable(tmp_path, "--out", folder=True)
    assert str(refused.value) == (f"--out {tmp_path}: the folder {tmp_path} is on a read-only file system; mount it "
                                  f"read-write, or copy the folder onto a writable file system and give that path")
    with pytest.raises(run_folder.UsageError) as refused:
        resources.check_writable(tmp_path / "b.json", "--json")
    assert str(refused.value) == (f"--json {tmp_path / 'b.json'}: the folder {tmp_path} is on a read-only file "
                                  f"system; choose a path on a writable file system")


def test_first_missing_counts_a_link_as_there_even_a_broken_one(tmp_path):
    """What making a path would create starts below any link on it, even one to nowhere: a failed
    command then removes only its own folders, never the user's link."""
    (tmp_path / "broken").symlink_to(tmp_path / "nowhere")
    assert run_folder.first_missing(tmp_path / "broken" / "a" / "b") == tmp_path / "broken" / "a"
    assert run_folder.first_missing(tmp_path / "new" / "a") == tmp_path / "new"
    assert run_folder.first_missing(tmp_path) is None


def test_the_epoch_of_a_growing_minibatch_counts_every_minibatch_taken(tmp_path, dataset):
    """metrics.jsonl's epoch is the minibatches taken so far over those of an epoch: with --batch-growth 4
    the four updates take 1, 2, 3 and 4 minibatches, so 1, 3, 6 and 10 of them in all."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "4", "--batch-growth", "4", "--population", "8",
                     "--batch-size", "16", "--eval-every", "1", "--quiet", *dataset]) == 0
    epochs = [json.loads(line)["epoch"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert np.allclose(np.array(epochs) / epochs[0], [1, 3, 6, 10])


def test_the_frame_cache_is_never_kept_in_a_run_folder(finished_run, tmp_path, dataset, capsys):
    """--cache-dir in a run folder (this run's own --out, or in it: every later command would refuse
    it there; or another run's) or in a results folder: one line, nothing written there."""
    data_root = dataset[:2]
    results = tmp_path / "results"
    (results / "quick" / "runs" / "es-seed1").mkdir(parents=True)
    (results / "quick" / "runs" / "es-seed1" / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    for out, cache, said in [
            (tmp_path / "new", tmp_path / "new", f"{tmp_path / 'new'} lies in the run's own folder {tmp_path / 'new'}, "
                                                 f"which every later command would refuse"),
            (tmp_path / "new", tmp_path / "new" / "c", f"{tmp_path / 'new' / 'c'} lies in the run's own folder "
                                                       f"{tmp_path / 'new'}, which every later command would refuse"),
            (tmp_path / "other", finished_run, f"{finished_run} is a run folder of this project (it holds "
                                                f".eggroll-run); point it at a folder of its own"),
            (tmp_path / "other", finished_run / "c", f"{finished_run / 'c'} lies inside {finished_run}, a run folder"),
            (tmp_path / "other", results / "quick", f"{results / 'quick'} is a results folder (its runs/ holds runs"),
            (tmp_path / "other", results / "quick" / "runs", f"{results / 'quick' / 'runs'} is a folder of run folders "
                                                             f"(es-seed1 is one)")]:
        before = sorted(p.name for p in finished_run.iterdir())
        code, err = run_main(train_args(out, [*data_root, "--cache-dir", str(cache)]), capsys)
        assert code == 2 and err.startswith(f"error: the frame cache's folder (--cache-dir or $EGGROLL_CACHE) {said}"), err
        assert not out.exists() and sorted(p.name for p in finished_run.iterdir()) == before


@pytest.mark.parametrize("name", ["nmnist-train-T10-0123456789abcdef.npz", "nmnist-test-T3-0123456789abcdef.npz"])
def test_a_run_is_never_trained_into_a_frame_cache_folder(finished_run, tmp_path, dataset, capsys, name):
    """--out at a folder of frame caches (another command's $EGGROLL_CACHE, say): one line, nothing
    written, so that the cache stays one, not a run folder every command then refuses as a cache. A run
    folder is its run's, whatever else it holds: a file named like a cache there is not this refusal."""
    cache = tmp_path / "frames"
    cache.mkdir()
    (cache / name).write_bytes(b"a cache")
    code, err = run_main(train_args(cache, dataset), capsys)
    assert code == 2 and err == (f"error: {cache} holds frame caches of this project (nmnist-*.npz files), which "
                                 f"commands read as a frame cache, not as a run folder; use another --out\n"), err
    assert [path.name for path in cache.iterdir()] == [name]
    (finished_run / name).write_bytes(b"a stray cache")
    code, err = run_main(train_args(finished_run, dataset, "--force"), capsys)
    assert code == 0 and "frame caches" not in err, err


@pytest.mark.parametrize("scored, folder, generation, ours", [
    ("results/spike-cost/runs/eggroll-r4-cost0.01-seed2", "eggroll-r4-g100-cost0.01-seed2", 100, True),
    ("bptt-cost0.003-seed3", "bptt-e5-cost0.003-seed3", 100, True),   # a budget mark added by a later name
    ("eggroll-r1-seed1", "eggroll-r1-seed1", 100, True),
    ("eggroll-r1-seed1", "eggroll-r1-seed1", 99, False),               # another generation
    ("es-seed1", "eggroll-r1-seed1", 100, False),                      # another method
    ("eggroll-r4-seed1", "eggroll-r2-seed1", 100, False),              # another rank
    ("eggroll-r1-seed2", "eggroll-r1-seed1", 100, False),              # another seed
    ("eggroll-r1-batch-512-seed1", "eggroll-r1-batch-512-output-sigma-0.5-seed1", 100, False),  # a lever more
    ("hidden-64-g2-seed1", "hidden-64-64-g2-seed1", 100, False),      # a layer more (a part repeated)
    ("seed1-eggroll-r1", "eggroll-r1-seed1", 100, False),             # the same parts in another order
    ("eggroll-r1-e100-seed1", "eggroll-r1-seed1", 100, False),         # a budget mark the folder lacks
    ("eggroll-r1-e100-seed1", "eggroll-r1-g100-seed1", 100, False)])   # another budget mark
def test_a_real_json_is_a_runs_own_if_its_run_grew_its_name_by_a_budget_alone(scored, folder, generation, ours):
    real = {"run": scored, "generation": generation, **real_score(0.5)}
    assert run_folder.scores_this_run(real, Path("results") / folder, {"generations": 100}) is ours


def test_a_final_json_is_damaged_where_a_splits_count_contradicts_its_data_record():
    """Every split's count (n_train, n_val, n_test) is checked against the data record's "N samples"
    of that split; a count final.json does not hold (older runs) contradicts nothing."""
    from test_report import FINAL
    fingerprint = {"train": "54000 samples, sha256 1", "val": "6000 samples, sha256 2",
                   "test": "10000 samples, sha256 3"}
    final = {**FINAL, "n_train": 54000, "n_val": 6000, "n_test": 10000, "data": {"fingerprint": fingerprint}}
    assert run_folder.final_problem(final) is None
    assert run_folder.final_problem({**final, "n_test": 9999}) == ("n_test 9999 disagrees with its data record, whose "
                                                                   "test split holds 10000 samples")
    assert run_folder.final_problem({k: v for k, v in final.items() if k != "n_train"}) is None


def test_a_real_json_that_names_its_runs_settings_is_its_own_only_with_this_runs():
    """A real.json written since scores record the run's settings (config) is this run's only if they
    are this run's: the paper's and the quick preset's eggroll-r1-seed1 share a name and a budget."""
    final = {"generations": 100, "config": {"method": "eggroll", "rank": 1, "population": 512}}
    real = {"run": "results/quick/runs/eggroll-r1-seed1", "generation": 100, **real_score(0.5)}
    assert run_folder.scores_this_run({**real, "config": final["config"]}, Path("eggroll-r1-seed1"), final)
    assert not run_folder.scores_this_run({**real, "config": {**final["config"], "population": 64}},
                                          Path("eggroll-r1-seed1"), final)
    assert run_folder.scores_this_run(real, Path("eggroll-r1-seed1"), final)  # written before: its name decides
    assert run_folder.real_mismatch({**real, "config": {**final["config"], "seed": 2}}, Path("eggroll-r1-seed1"),
                                    final) == "it scored a run of other settings: seed 2 (this run's 1)"
    assert run_folder.real_mismatch({**real, "config": {**final["config"], "rank": "one"}}, Path("eggroll-r1-seed1"),
                                    final) == "its settings, or this run's, are no run's settings"
    assert run_folder.real_mismatch({**real, "generation": 120}, Path("eggroll-r1-seed1"), final) == \
        "it scored generation 120, and this run finished at 100"  # a later generation is no more this run's


@pytest.mark.parametrize("stored, wanted, refused", [
    ("allreduce on 2 processes", None, "was stepped with --update allreduce on 2 processes, and this command would go "
                                       "on with --update seeds, which sums in another order: resume it under mpiexec "
                                       "-n 2 with --distributed --update allreduce, or train it anew in another --out"),
    ("allreduce on 2 processes", "allreduce on 1 process", "would go on with --update allreduce on 1 process, which"),
    (None, "allreduce on 4 processes", "was stepped with --update seeds, and this command would go on with --update "
                                       "allreduce on 4 processes, which sums in another order: resume it with --update "
                                       "seeds (or without --distributed)"),
    ("allreduce on 2 processes", "allreduce on 2 processes", None),
    (None, None, None),
    (False, "allreduce on 2 processes", None),  # a checkpoint from before it was recorded: not compared
    ("allreduce on 2 processes", False, None)])  # evaluate: not compared
def test_a_checkpoint_goes_on_only_summed_as_it_was(tmp_path, stored, wanted, refused):
    """A checkpoint holds how its steps were summed (run_folder.summed_by): a resume that would sum them
    in another order (--update changed, or the processes of an allreduce run) is refused in one line
    naming how to continue; --update seeds on any number of processes is one way."""
    settings = run_config.RunConfig(hidden="8")
    params = snn.init_network(1, settings.network)
    state = adam_state_of(params)
    run_folder.save_checkpoint(tmp_path, params, state, 1, [0.5], run_folder.identity(settings, None, stored), 1.0)
    load = lambda: run_folder.load_checkpoint(tmp_path / run_folder.CHECKPOINT, np, params,
                                              run_folder.identity(settings, None, wanted))
    if refused is None:
        assert load()[2] == 1
    else:
        with pytest.raises(run_folder.UsageError) as error:
            load()
        assert refused in str(error.value) and "\n" not in str(error.value)


def test_the_command_that_resumes_an_allreduce_run_sums_as_it_did(tmp_path):
    """resume_command of a run whose checkpoint was summed by allreduce on 2 processes: the same
    processes and --update, the only way --resume takes it on; a run of --update seeds: plain."""
    settings = run_config.RunConfig(hidden="8")
    params = snn.init_network(1, settings.network)
    state = adam_state_of(params)
    for summed, command in (("allreduce on 2 processes", f"`mpiexec -n 2 python run.py train --out {tmp_path} "
                                                         f"--resume --method eggroll --hidden 8 --distributed --update "
                                                         f"allreduce` (with the --data-root it trained on)"),
                            (None, f"`python run.py train --out {tmp_path} --resume --method eggroll --hidden 8` (with "
                                   f"the --data-root it trained on)")):
        run_folder.save_checkpoint(tmp_path, params, state, 1, [0.5], run_folder.identity(settings, None, summed), 1.0)
        assert run_folder.resume_command(tmp_path, settings) == command


@pytest.mark.parametrize("summed", ["allreduce", "allreduce on 0 processes", "allreduce on 0 process",
                                    "allreduce on 02 processes", "allreduce on 2 process"])
def test_a_checkpoint_whose_summing_was_edited_is_damaged(tmp_path, summed):
    """A checkpoint's identity whose "summed" is not what summed_by writes (no count, none, a count
    written with a leading 0) is named damaged, in one line, not resumed with mpiexec -n 0."""
    settings = run_config.RunConfig(hidden="8")
    params = snn.init_network(1, settings.network)
    state = adam_state_of(params)
    run_folder.save_checkpoint(tmp_path, params, state, 1, [0.5], run_folder.identity(settings, None, summed), 1.0)
    with pytest.raises(run_folder.UsageError,
                       match=re.escape(f"is damaged (identity's summed is {summed!r}, not how a run sums its steps "
                                       f"(summed_by))")):
        run_folder.load_checkpoint(tmp_path / run_folder.CHECKPOINT, np, params,
                                   run_folder.identity(settings, None, None))


def test_summed_by_names_only_what_changes_the_bits():
    """BPTT and --update seeds (any processes) sum one way; allreduce's order depends on its processes."""
    team = lambda size, update: types.SimpleNamespace(size=size, update=update)
    eggroll, es, bptt = (run_config.RunConfig(method=method) for method in ("eggroll", "es", "bptt"))
    assert run_folder.summed_by(eggroll, team(2, "seeds")) is None
    assert run_folder.summed_by(bptt, team(2, "allreduce")) is None
    assert run_folder.summed_by(eggroll, team(3, "allreduce")) == "allreduce on 3 processes"
    assert run_folder.summed_by(es, team(1, "allreduce")) == "allreduce on 1 process"


def adam_state_of(params):
    """Adam's state after one update of `params`, its moments zero: what a checkpoint of step 1 holds."""
    zeros = lambda: {name: np.zeros_like(value) for name, value in params.items()}
    return {"m": zeros(), "v": zeros(), "t": 1}


def test_a_mark_that_is_a_pipe_is_named_as_such(tmp_path, dataset, capsys):
    """A .eggroll-run that is a named pipe: train --resume and evaluate name it, without opening it
    (which would wait for a writer), and nothing changes."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset)) == 0
    (out / run_folder.RUN_MARK).unlink()
    os.mkfifo(out / run_folder.RUN_MARK)
    files = lambda: {path.name: path.read_bytes() for path in out.iterdir() if path.is_file() and
                     path.name != run_folder.LOCK}
    before = files()
    for command in (train_args(out, dataset, "--resume"), ["evaluate", str(out), *dataset]):
        code, err = run_main(command, capsys)
        assert code == 2 and err.startswith(f"error: {out / run_folder.RUN_MARK} is a named pipe (FIFO), not the "
                                            f"file that marks a run folder"), err
    assert files() == before and (out / run_folder.RUN_MARK).is_fifo()


def test_force_does_not_replace_a_run_of_a_preset_whose_report_shows_it(tmp_path, dataset, capsys):
    """A run in <results>/<preset>/runs/ beside the report's figure record is the report's: train --force
    there is refused in one line, the run left byte for byte; the same run in a folder of one's own
    is replaced by --force as ever."""
    preset = tmp_path / "results" / "quick"
    out = preset / "runs" / "eggroll-r4-seed1"
    assert run.main(train_args(out, dataset)) == 0
    (preset / ".figures.sha256").write_text("")
    before, said = snapshot(out), run_main(train_args(out, dataset, "--force"), capsys)
    assert said == (2, f"error: {out} is a run of the preset whose report is in {preset}, which its tables and "
                       f"figures show: --force would replace it by another run; use another --out (to have reproduce "
                       f"train it again, move it out of {preset / 'runs'})\n") and snapshot(out) == before, said
    assert run.main(train_args(preset / "runs" / "fresh", dataset, "--force")) == 0  # no run there to replace
    (preset / ".figures.sha256").unlink()
    assert run.main(train_args(out, dataset, "--force")) == 0


def test_a_resume_of_other_settings_is_refused_before_the_data_is_read(tmp_path, dataset, capsys, monkeypatch):
    """--resume with another --time-bins (or --seed): refused from config.json alone, before the data
    is read, so no frame cache of those bins is built; the run and the cache are as they were."""
    out = tmp_path / "run"
    assert run.main(train_args(out, dataset)) == 0
    cache = Path(dataset[dataset.index("--cache-dir") + 1])
    caches, before = sorted(cache.iterdir()), snapshot(out)
    read = []
    monkeypatch.setattr(training, "load_splits", lambda *args, **kwargs: read.append(args))
    for other in (["--time-bins", "7"], ["--seed", "3"]):
        code, err = run_main(train_args(out, dataset, "--resume", *other), capsys)
        assert code == 2 and f"{out} holds a run with other settings" in err, err
    assert read == [] and sorted(cache.iterdir()) == caches and snapshot(out) == before


def test_a_temporary_name_taken_already_is_never_written_through(tmp_path, monkeypatch):
    """create_new makes a file of its own: where the random name it draws is taken (by a user's hard
    link, say), it draws another, and write_atomically leaves the file under the taken name as it was."""
    import secrets
    users = tmp_path / "users.txt"
    users.write_text("mine")
    target = tmp_path / "config.json"
    os.link(users, target.with_name(f"{target.name}.0000beef.tmp"))  # the first name it will draw
    names = iter(["0000beef", "0000cafe"])
    monkeypatch.setattr(secrets, "token_hex", lambda n: next(names))
    run_folder.write_atomically(target, "{}")
    assert users.read_text() == "mine" and target.read_text() == "{}"


def test_a_config_json_changed_by_hand_under_an_unfinished_run_is_named_as_the_changed_file(finished_run, dataset,
                                                                                           capsys):
    """An unfinished run whose config.json was edited: --resume with the run's own settings (those its
    checkpoint was saved under) names config.json as changed, in one line, rather than asking for the
    edited settings, which the checkpoint would then refuse; nothing is written."""
    (finished_run / "final.json").unlink()  # stopped after its last checkpoint, before its final evaluation
    path = finished_run / "config.json"
    settings = json.loads(path.read_text())
    path.write_text(json.dumps(dict(settings, sigma=settings["sigma"] * 2)))
    before = snapshot(finished_run)
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 2 and err == (f"error: {path} was changed: it holds other settings (--sigma "
                                 f"{settings['sigma'] * 2:g}, not {settings['sigma']:g}) than those its checkpoint was "
                                 f"saved under, which are this command's; restore config.json from a copy of the run, "
                                 f"or write them back in it\n"), err
    assert snapshot(finished_run) == before


def test_a_key_twice_in_a_runs_json_file_is_refused_naming_it(finished_run, dataset, capsys):
    """A config.json holding one setting twice (a hand edit; JSON readers keep the last silently) is
    no run's settings: one line naming the file and the key, and nothing written."""
    path = finished_run / "config.json"
    text = path.read_text()
    path.write_text(text.replace('"sigma":', '"sigma": 0.5, "sigma":', 1))
    before = snapshot(finished_run)
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err.startswith(f"error: {path} is not valid JSON (the key \"sigma\" appears twice in one "
                                        f"object); "), err
    assert snapshot(finished_run) == before
    with pytest.raises(ValueError, match='the key "a" appears twice'):
        run_folder.unique_keys([("a", 1), ("b", 2), ("a", 3)])
    assert run_folder.unique_keys([("a", 1), ("b", 2)]) == {"a": 1, "b": 2}


def test_resume_of_a_finished_run_in_a_folder_it_cannot_write_says_it_has_finished(finished_run, dataset, capsys,
                                                                                  monkeypatch, tmp_path):
    """A finished run in a folder no process may write (a read-only file system, an archive): --resume,
    which writes nothing, says the run has finished, exit status 0, without taking the folder's lock;
    asked of other data, or unfinished, it is refused as a folder it cannot write."""
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode, **kw: False if mode & os.W_OK and Path(path) == finished_run
                        else access(path, mode, **kw))
    with monkeypatch.context() as inside:
        inside.setattr(run_folder, "owned", lambda folder: pytest.fail(f"took the lock of {folder}"))
        before = snapshot(finished_run)
        code, err = run_main([part for part in train_args(finished_run, dataset, "--resume") if part != "--quiet"],
                             capsys)
        assert code == 0 and err == (f"note: {finished_run} has finished (its final.json holds the results): "
                                     f"--resume trains and writes nothing\n"), err
        assert snapshot(finished_run) == before
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=10, n_test=3).parent  # not the run's data: refused
    code, err = run_main(train_args(finished_run, ["--data-root", str(other), *dataset[2:]], "--resume"), capsys)
    assert code == 2 and err.startswith(f"error: --out {finished_run}: "), err  # as any folder it cannot write
    assert snapshot(finished_run) == before
    (finished_run / "final.json").unlink()
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 2 and err.startswith(f"error: --out {finished_run}: "), err


def test_a_checkpoint_of_zero_end_to_end_seconds_is_read_and_a_finished_runs_median_is_its_steps(finished_run):
    """The end-to-end time's rule is >= 0, its edge included: a checkpoint of 0.0 s (a clock too coarse
    to see the run) is read, not called damaged. final.json's median_seconds_per_generation is the median
    of the seconds of the run's steps, as its checkpoint keeps them (not their mean, which a slow first
    step would pull up)."""
    stored = dict(np.load(finished_run / run_folder.CHECKPOINT))
    final = json.loads((finished_run / "final.json").read_text())
    assert len(stored["step_seconds"]) == final["generations"] >= 3
    assert final["median_seconds_per_generation"] == statistics.median(stored["step_seconds"].tolist())
    assert final["total_seconds"] == pytest.approx(sum(stored["step_seconds"].tolist()))
    rewrite_checkpoint(finished_run, lambda arrays: arrays.update(end_to_end_seconds=np.float64(0.0)))
    config = run_folder.read_config(finished_run)
    like = snn.init_network(config.seed, config.network, std=config.init_std)
    loaded = run_folder.load_checkpoint(finished_run / run_folder.CHECKPOINT, np, like, run_folder.identity(config))
    assert loaded[4] == 0.0


def test_a_finished_runs_final_json_whose_count_of_updates_was_changed_is_named_not_its_checkpoint(finished_run,
                                                                                                   dataset, capsys):
    """final.json's generations changed by hand, its own settings and the checkpoint agreeing on the
    run's: evaluate names final.json as damaged, with a fix that rewrites it, not the checkpoint.
    A final.json damaged otherwise leaves the checkpoint scored, with a warning that says so."""
    path = finished_run / "final.json"
    final = json.loads(path.read_text())
    path.write_text(json.dumps(dict(final, generations=final["generations"] - 1)))
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err.startswith(f"error: {path} records a run of {final['generations'] - 1} updates, but its "
                                        f"own settings (and the checkpoint) a run of {final['generations']}: it is "
                                        f"damaged; restore it from a copy of the run, or move it out of "
                                        f"{finished_run}, and "), err
    path.write_text("{")
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 0 and err.startswith(f"warning: {path} is damaged, so whether these are the finished run's weights "
                                        f"is unknown: its checkpoint holds step {final['generations']}; `python "), err
    path.unlink()
    path.mkdir()  # a folder in its place: --resume would refuse it, so it is moved out first
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 0 and err.startswith(f"warning: {path} is damaged, so whether these are the finished run's weights "
                                        f"is unknown: its checkpoint holds step {final['generations']}; move the "
                                        f"folder final.json out of {finished_run}, then `python run.py train "), err


def test_evaluate_refuses_another_runs_final_json_and_a_report_one_that_lost_its_data(finished_run, dataset, capsys,
                                                                                      tmp_path):
    """A final.json of other settings (seed 2) put in a finished run's folder: evaluate refuses it as
    --resume does, naming it; and a final.json without its data record, beside a checkpoint that names
    the data, is refused by the report (it is no run from before runs recorded their data)."""
    path = finished_run / "final.json"
    final = json.loads(path.read_text())
    path.write_text(json.dumps(dict(final, config=dict(final["config"], seed=2))))
    code, err = run_main(["evaluate", str(finished_run), *dataset], capsys)
    assert code == 2 and err.startswith(f"error: {path} is another run's (seed 2, not 1), not the results of the "
                                        f"run in {finished_run / 'config.json'}"), err
    runs = tmp_path / "results" / "runs"
    runs.mkdir(parents=True)
    shutil.copytree(finished_run, runs / "eggroll-r1-seed1")
    (runs / "eggroll-r1-seed1" / "final.json").write_text(json.dumps({k: v for k, v in final.items() if k != "data"}))
    with pytest.raises(ValueError, match="final.json holds no record of the data the run trained on, though its "
                                         "checkpoint names it: it is damaged; "):
        report.collect(tmp_path / "results")
    def unrecorded(arrays):  # a checkpoint from before runs recorded their data: the run is reported
        arrays["identity"] = np.array(json.dumps({**json.loads(str(arrays["identity"])), "data": None}))
    rewrite_checkpoint(runs / "eggroll-r1-seed1", unrecorded)
    assert [f["test_acc"] for f, _ in report.collect(tmp_path / "results")["eggroll-r1"]] == [final["test_acc"]]


def test_resume_of_a_finished_run_whose_final_json_lost_its_data_record_says_it_scores_it_again(finished_run, dataset,
                                                                                               capsys):
    """A finished run's final.json without its data record (edited, or from before runs recorded their
    data): --resume scores the run again from its checkpoint and writes final.json anew, saying so."""
    path = finished_run / "final.json"
    final = json.loads(path.read_text())
    path.write_text(json.dumps({key: value for key, value in final.items() if key != "data"}))
    code, err = run_main(train_args(finished_run, dataset, "--resume"), capsys)
    assert code == 0 and err == (f"note: {path} holds no record of the data the run trained on: --resume scores the "
                                 f"run again from its checkpoint and writes it anew\n"), err
    assert json.loads(path.read_text())["data"] == final["data"]


def test_a_finished_runs_count_of_updates_follows_from_its_settings_for_every_method():
    """finished_steps: an ES run's generations; BPTT's epochs of the training split's minibatches, one
    at least an epoch where the split is smaller than a minibatch, unknown without the split's size."""
    for method in ("eggroll", "es"):
        assert run_folder.finished_steps(run_config.RunConfig(method=method, generations=7), 100) == 7
    bptt = run_config.RunConfig(method="bptt", epochs=3, batch_size=16)
    assert run_folder.finished_steps(bptt, 100) == 3 * 6
    assert run_folder.finished_steps(bptt, 10) == 3
    assert run_folder.finished_steps(bptt, None) is None


def test_a_records_seconds_and_counts_lie_below_their_bounds_as_their_rules_say():
    """SECONDS below 10^12 and PER_SAMPLE below 10^15, 0 included, each bound itself out."""
    for (valid, _), bound in ((run_folder.SECONDS, 1e12), (run_folder.PER_SAMPLE, 1e15)):
        assert valid(0) and valid(bound * (1 - 1e-9)) and not valid(bound) and not valid(-1e-9)


def test_left_temporaries_name_the_stale_ones_before_a_time_and_their_size_in_mebibytes(tmp_path):
    """Given `before`, a temporary written earlier is one a kill left; one written since is another
    command's, at work now, and left out. The note's size is in MiB (2^20 bytes)."""
    stale, fresh = tmp_path / "table.md.0123abcd.tmp", tmp_path / "table.md.89abcdef.tmp"
    stale.write_bytes(b"x" * 3 * 2 ** 20)
    fresh.write_bytes(b"y")
    now = time.time()
    os.utime(stale, (now - 600, now - 600))
    os.utime(fresh, (now + 600, now + 600))
    assert run_folder.left_temporaries(tmp_path, ["table.md"], before=now) == {stale: 3 * 2 ** 20}
    assert set(run_folder.left_temporaries(tmp_path, ["table.md"])) == {stale, fresh}
    note = run_folder.left_temporaries_note(tmp_path, ["table.md"], "a report", before=now)
    assert note.startswith(f"note: {tmp_path} holds 1 temporary file (3.0 MiB) that a report stopped by a kill left "
                           f"there: {stale.name}; delete it"), note
