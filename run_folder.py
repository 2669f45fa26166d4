"""A training run's folder: what is in it, and how it is written so that a kill never corrupts it.

    config.json     the settings that define the run's result (config.stored)
    checkpoint.npz  parameters, Adam's state and progress, replaced atomically at every evaluation
    metrics.jsonl   one validation record per evaluation, appended
    final.json      test and validation accuracy and timings, written when the run ends
    real.json       the run scored on another N-MNIST copy (`run.py evaluate`, reproduce --real-root)
    .lock           held (an OS lock) by the one process working in the folder, which wrote its PID

Every file is checked before use; a damaged one is reported in one line naming it and the fix.
"""
import contextlib
import fcntl
import json
import os
import zipfile

import numpy

import config as run_config
from backend import to_numpy

CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 1
LOCK = ".lock"
RUN_FILES = (CHECKPOINT, CHECKPOINT + ".tmp", "metrics.jsonl", "final.json", "final.json.tmp",
             "config.json", "real.json")


class UsageError(Exception):
    """A problem with the user's request or files; printed as one line, exit status 2."""


@contextlib.contextmanager
def owned(folder):
    """Hold `folder` for this process: a second one that tries gets a UsageError naming the owner.

    An flock on folder/.lock (Linux, macOS): the OS releases it when the owner exits or is killed,
    so a stale lock never blocks.
    """
    folder.mkdir(parents=True, exist_ok=True)
    file = open(folder / LOCK, "a+")
    try:
        fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        file.seek(0)
        owner = file.read().strip() or "unknown"
        file.close()
        raise UsageError(f"{folder} is in use by another process (PID {owner}); wait for it to end "
                         f"or stop it, then run again") from None
    try:
        file.seek(0)
        file.truncate()
        file.write(f"{os.getpid()}\n")
        file.flush()
        yield
    finally:
        file.close()


@contextlib.contextmanager
def writing(path):
    """Write `path` through path.tmp and a rename; on an OS error (disk full, permission) remove
    the temporary file and raise a UsageError naming the path."""
    temporary = path.with_name(path.name + ".tmp")
    try:
        yield temporary
        os.replace(temporary, path)
    except OSError as error:
        temporary.unlink(missing_ok=True)
        raise UsageError(f"cannot write {path}: {error.strerror or error}; free disk space or use another "
                         f"folder") from None


def write_atomically(path, text):
    with writing(path) as temporary:
        temporary.write_text(text)


def append_line(path, text):
    try:
        with open(path, "a") as file:
            file.write(text + "\n")
    except OSError as error:
        raise UsageError(f"cannot write {path}: {error.strerror or error}; free disk space or use another "
                         f"folder") from None


# ---------------------------------------------------------------------------------------------
# Checkpoints

def save_checkpoint(out, params, state, step, step_seconds):
    """Write params, Adam state and progress atomically: a temporary file, synced, then a rename."""
    arrays = {f"param/{k}": to_numpy(v) for k, v in params.items()}
    arrays.update({f"adam_m/{k}": to_numpy(v) for k, v in state["m"].items()})
    arrays.update({f"adam_v/{k}": to_numpy(v) for k, v in state["v"].items()})
    arrays.update(adam_t=numpy.int64(state["t"]), step=numpy.int64(step),
                  step_seconds=numpy.asarray(step_seconds, dtype=numpy.float64),
                  version=numpy.int64(CHECKPOINT_VERSION))
    with writing(out / CHECKPOINT) as temporary:
        with open(temporary, "wb") as file:
            numpy.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())


def checkpoint_problem(arrays, like, total_steps):
    """What is wrong with a checkpoint's arrays for parameters shaped `like`, or None."""
    names = [f"{group}/{k}" for group in ("param", "adam_m", "adam_v") for k in like]
    for name in names + ["adam_t", "step", "step_seconds", "version"]:
        if name not in arrays:
            return f"{name} is missing"
    if int(arrays["version"]) != CHECKPOINT_VERSION:
        return f"version {int(arrays['version'])}, expected {CHECKPOINT_VERSION}"
    for name in names:
        expected = like[name.split("/", 1)[1]]
        if arrays[name].shape != expected.shape or arrays[name].dtype != expected.dtype:
            return (f"{name} is {arrays[name].dtype} {arrays[name].shape}, expected "
                    f"{expected.dtype} {tuple(expected.shape)}")
        if not numpy.isfinite(arrays[name]).all():
            return f"{name} holds NaN or inf"
    step, last = int(arrays["step"]), total_steps or int(arrays["step"])
    if not 1 <= step <= last or int(arrays["adam_t"]) != step or len(arrays["step_seconds"]) != step:
        return f"its step {step} does not fit a run of {last} steps"
    return None


def load_checkpoint(path, xp, like, total_steps=None):
    """(params, Adam state, step, step seconds) from a checkpoint of parameters shaped like `like`
    (a params dict) and at most `total_steps` steps; a UsageError if it is damaged or foreign."""
    try:
        with numpy.load(path) as stored:
            arrays = {name: stored[name] for name in stored.files}
        problem = checkpoint_problem(arrays, like, total_steps)
    except (OSError, EOFError, ValueError, zipfile.BadZipFile, AttributeError):
        problem = "it is empty" if path.stat().st_size == 0 else "it is not a checkpoint.npz archive"
    if problem:
        raise UsageError(f"checkpoint {path} is damaged ({problem}); delete it or run with --force to "
                         f"start over")
    group = lambda prefix: {k.split("/", 1)[1]: xp.asarray(v) for k, v in arrays.items()
                            if k.startswith(prefix + "/")}
    state = {"m": group("adam_m"), "v": group("adam_v"), "t": int(arrays["adam_t"])}
    return group("param"), state, int(arrays["step"]), list(arrays["step_seconds"])


# ---------------------------------------------------------------------------------------------
# config.json and metrics.jsonl

def read_config(out):
    """The RunConfig stored in out/config.json; a UsageError if it is damaged or foreign."""
    path = out / "config.json"
    fix = "restore it, or start over with --force (deletes the run)"
    try:
        values = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise UsageError(f"{path} is not valid JSON ({error}); {fix}") from None
    if not isinstance(values, dict) or values.get("method") not in run_config.METHODS:
        raise UsageError(f"{path} does not hold a run's settings (a JSON object with a method); {fix}")
    try:
        return run_config.from_stored(values)
    except TypeError as error:
        raise UsageError(f"{path} does not hold a run's settings ({error}); {fix}") from None


def prepare(out, config, resume, force):
    """Make `out` ready for the run `config`; refuse to touch a folder that holds another run
    unless told to."""
    wanted = run_config.stored(config)
    holds_run = any((out / name).exists() for name in ("config.json", CHECKPOINT, "final.json"))
    if holds_run and not force:
        if not resume:
            raise UsageError(f"{out} already holds a run; continue it with --resume, "
                             f"or start over with --force (deletes it)")
        if not (out / "config.json").exists():
            raise UsageError(f"{out} holds a run without its config.json, so its settings are unknown; "
                             f"use another --out, or --force to replace it")
        stored = run_config.stored(read_config(out))
        if stored != wanted:
            differing = sorted(k for k in set(wanted) | set(stored) if stored.get(k) != wanted.get(k))
            raise UsageError(f"{out} holds a run with other settings ({', '.join(differing)}); "
                             f"use another --out, or --force to replace it")
        if not (out / CHECKPOINT).exists() and (out / "final.json").exists():
            raise UsageError(f"{out} holds a finished run but no {CHECKPOINT} to resume from; "
                             f"use --force to train it again")
    if force:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    write_atomically(out / "config.json", json.dumps(wanted, indent=1))


def is_finished(out, config):
    """Whether `out` holds the finished run `config`."""
    return ((out / "final.json").exists() and (out / "config.json").exists()
            and run_config.stored(read_config(out)) == run_config.stored(config))


def metrics_until(path, step):
    """The metrics records of generations <= step. A last line cut short by a kill is dropped;
    any other damaged line is a UsageError naming the file."""
    lines = path.read_text().splitlines() if path.exists() else []
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            record = json.loads(line)
            generation = record["generation"]
        except (json.JSONDecodeError, TypeError, KeyError):
            if number == len(lines):
                continue
            raise UsageError(f"{path} line {number} is damaged; delete that line (the checkpoint keeps the "
                             f"weights) and run again") from None
        if generation <= step:
            records.append(record)
    return records
