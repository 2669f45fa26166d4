"""A run folder under faults: one process at a time, damaged or foreign files reported in one line
with nothing changed, OS errors naming the path, and a run that diverges or is interrupted
leaving a checkpoint that resumes to the same bits."""
import json
import subprocess
import sys

import numpy as np
import pytest

import eggroll
import run
import run_folder
from test_run import ROOT, SMALL, dataset, run_main, stored_params  # noqa: F401 (dataset is a fixture)


def train_args(out, dataset, *extra):
    return ["train", "--out", str(out), "--generations", "10", *SMALL, *dataset, *extra]


def snapshot(folder):
    """The run's files and their bytes (the lock file holds the PID of whoever held it last)."""
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.name != run_folder.LOCK}


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


# ---------------------------------------------------------------------------------------------
# Damaged or foreign files

def rewrite_checkpoint(out, change):
    with np.load(out / run.CHECKPOINT) as stored:
        arrays = {name: stored[name] for name in stored.files}
    change(arrays)
    with open(out / run.CHECKPOINT, "wb") as file:
        np.savez(file, **arrays)


@pytest.mark.parametrize("damage, problem", [
    (lambda out: (out / run.CHECKPOINT).write_bytes(b""), "it is empty"),
    (lambda out: (out / run.CHECKPOINT).write_bytes(np.random.default_rng(0).bytes(3000)),
     "it is not a checkpoint.npz archive"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update({"param/W1": a["param/W1"][:, :-1]})),
     "param/W1 is float32 (64, 2311), expected float32 (64, 2312)"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.pop("adam_v/b2")), "adam_v/b2 is missing"),
    (lambda out: rewrite_checkpoint(out, lambda a: a["param/W2"].__setitem__((0, 0), np.nan)),
     "param/W2 holds NaN or inf"),
    (lambda out: rewrite_checkpoint(out, lambda a: a.update(step=np.int64(11))), "its step 11 does not fit"),
])
def test_a_damaged_checkpoint_is_one_line_for_resume_and_evaluate_and_changes_nothing(
        finished_run, dataset, capsys, damage, problem):
    (finished_run / "final.json").unlink()
    damage(finished_run)
    before = snapshot(finished_run)
    for args in (train_args(finished_run, dataset, "--resume"), ["evaluate", str(finished_run), *dataset]):
        code, err = run_main(args, capsys)
        assert code == 2 and err.count("\n") == 1, err
        assert f"checkpoint {finished_run / run.CHECKPOINT} is damaged ({problem}" in err
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


def test_a_full_disk_names_the_path_and_leaves_no_temporary_file(tmp_path, dataset, capsys, monkeypatch):
    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_folder.numpy, "savez", full_disk)
    out = tmp_path / "run"
    code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and err.count("\n") == 1
    assert f"cannot write {out / run.CHECKPOINT}: No space left on device" in err
    assert not list(out.glob("*.tmp")) and not (out / run.CHECKPOINT).exists()


# ---------------------------------------------------------------------------------------------
# A run that diverges or is interrupted stops cleanly and resumes to the same bits

def failing_at(step, failure):
    """eggroll.generation_step, except at generation `step`: `failure` instead."""
    real = eggroll.generation_step

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
        patch.setattr(eggroll, "generation_step", failing_at(7, failure))
        code, err = run_main(train_args(out, dataset), capsys)
    assert code == 2 and message.format(out=out) in err and err.count("\n") == 1, err
    assert not (out / "final.json").exists()
    assert run.main(train_args(out, dataset, "--resume")) == 0
    expected, resumed = stored_params(whole), stored_params(out)
    for name in expected:
        np.testing.assert_array_equal(expected[name], resumed[name], err_msg=name)
    records = [json.loads(line)["generation"] for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert records == [5, 10]


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
        real = eggroll.generation_step

        def interrupt_second_run(params, state, frames, labels, generation, config_, *rest):
            calls.append(config_.rank)
            if config_.rank == 2 and generation == 7:
                raise KeyboardInterrupt
            return real(params, state, frames, labels, generation, config_, *rest)
        patch.setattr(eggroll, "generation_step", interrupt_second_run)
        code, err = run_main(args, capsys)
    assert code == 2 and err.splitlines()[-1].startswith("error: interrupted: ")
    assert "eggroll-r2-seed1 stopped at step 7 of 10" in err and "rerun the same command to continue" in err
    code, err = run_main(args, capsys)
    assert code == 0
    assert "eggroll-r1 seed 1: finished in" in err and "skipped" in err
    assert f"results written to {tmp_path / 'quick'}" in err
