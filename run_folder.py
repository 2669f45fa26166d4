"""A training run's folder: what is in it, and how it is written so that a kill never corrupts it.

    config.json     the settings that define the run's result (config.stored)
    checkpoint.npz  parameters, Adam's state and progress, replaced atomically at every evaluation
    metrics.jsonl   one validation record per evaluation, appended
    final.json      test and validation accuracy and timings, written when the run ends
    real.json       the run scored on another N-MNIST copy (`run.py evaluate`, reproduce --real-root)
"""
import json
import os
import zipfile

import numpy

import config as run_config
from backend import to_numpy

CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 1
RUN_FILES = (CHECKPOINT, CHECKPOINT + ".tmp", "metrics.jsonl", "final.json", "final.json.tmp",
             "config.json", "real.json")


class UsageError(Exception):
    """A problem with the user's request; printed as one line, exit status 2."""


def save_checkpoint(out, params, state, step, step_seconds):
    """Write params, Adam state and progress atomically: a temporary file, then a rename."""
    arrays = {f"param/{k}": to_numpy(v) for k, v in params.items()}
    arrays.update({f"adam_m/{k}": to_numpy(v) for k, v in state["m"].items()})
    arrays.update({f"adam_v/{k}": to_numpy(v) for k, v in state["v"].items()})
    arrays.update(adam_t=numpy.int64(state["t"]), step=numpy.int64(step),
                  step_seconds=numpy.asarray(step_seconds, dtype=numpy.float64),
                  version=numpy.int64(CHECKPOINT_VERSION))
    temporary = out / (CHECKPOINT + ".tmp")
    with open(temporary, "wb") as file:
        numpy.savez(file, **arrays)
        file.flush()
        os.fsync(file.fileno())
    os.replace(temporary, out / CHECKPOINT)


def load_checkpoint(path, xp):
    """(params, Adam state, step, step seconds) from a checkpoint; UsageError if it is damaged."""
    try:
        with numpy.load(path) as stored:
            arrays = {name: stored[name] for name in stored.files}
        if int(arrays["version"]) != CHECKPOINT_VERSION:
            raise ValueError(f"version {int(arrays['version'])}, expected {CHECKPOINT_VERSION}")
        step, step_seconds, adam_t = int(arrays["step"]), list(arrays["step_seconds"]), int(arrays["adam_t"])
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as error:  # truncated, foreign, old
        raise UsageError(f"checkpoint {path} is damaged ({type(error).__name__}: {error}); "
                         f"delete it or run with --force to start over") from None
    group = lambda prefix: {k.split("/", 1)[1]: xp.asarray(v) for k, v in arrays.items()
                            if k.startswith(prefix + "/")}
    state = {"m": group("adam_m"), "v": group("adam_v"), "t": adam_t}
    return group("param"), state, step, step_seconds


def read_config(out):
    """The RunConfig stored in out/config.json."""
    return run_config.from_stored(json.loads((out / "config.json").read_text()))


def prepare(out, config, resume, force):
    """Make `out` ready for the run `config`; refuse to touch a folder that holds another run
    unless told to."""
    wanted = run_config.stored(config)
    holds_run = any((out / name).exists() for name in ("config.json", CHECKPOINT, "final.json"))
    if holds_run and not force:
        stored = run_config.stored(read_config(out)) if (out / "config.json").exists() else {}
        if not resume:
            raise UsageError(f"{out} already holds a run; continue it with --resume, "
                             f"or start over with --force (deletes it)")
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
    (out / "config.json").write_text(json.dumps(wanted, indent=1))


def is_finished(out, config):
    """Whether `out` holds the finished run `config`."""
    return ((out / "final.json").exists() and (out / "config.json").exists()
            and run_config.stored(read_config(out)) == run_config.stored(config))


def metrics_until(path, step):
    """The metrics records of generations <= step (a line cut short by a kill is dropped)."""
    records = []
    for line in path.read_text().splitlines() if path.exists() else []:
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue
        if record["generation"] <= step:
            records.append(record)
    return records


def write_atomically(path, text):
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(text)
    os.replace(temporary, path)
