"""Training and scoring of one run: the loop that trains a network in its run folder (checkpoints,
metrics, final.json, resume, deadline, signals), the evaluation of a network on a split, and the
scoring of a trained run on another N-MNIST copy.
"""
import contextlib
import json
import signal
import statistics
import sys
import time
from pathlib import Path

import numpy

import baselines
import config as run_config
import data
import distributed
import eggroll
import optim
import resources
import run_folder
import snn
from backend import array_module, device_name, to_numpy
from run_folder import CHECKPOINT, UsageError


def training_schedule(config, n_train):
    """(total update steps, steps per epoch, steps between evaluations) of a run."""
    per_epoch = max(n_train // config.batch_size, 1)
    if config.method == "bptt":
        return config.epochs * per_epoch, per_epoch, per_epoch
    return config.generations, per_epoch, config.eval_every


def evaluate(params, split, lif, xp, team=distributed.ALONE, batch_size=1000):
    """The unperturbed network on a split: accuracy, spikes per sample (hidden + output), accuracy
    per digit 0-9 (None for a digit the split lacks), and where the activity is, per sample: input
    events (active inputs over the T frames), hidden and output spikes, the fraction of hidden
    neurons that never fire on the whole split, and synaptic operations — an accumulate per
    synapse a spike crosses, n_hidden per input event and n_out per hidden spike. A team's
    processes take every K-th batch of 1,000 and add up their counts: whole numbers, so the sums
    are exact in any order."""
    n_hidden, n_out = params["W1"].shape[0], params["W2"].shape[0]
    tally = numpy.zeros(n_out + n_hidden + 2)  # hits per digit, spikes of each hidden neuron, output spikes, events
    hits, fired = slice(0, n_out), slice(n_out, n_out + n_hidden)
    for start in range(team.rank * batch_size, len(split), team.size * batch_size):
        indices = numpy.arange(start, min(start + batch_size, len(split)))
        frames = split.frames(indices, xp)
        n_steps, batch, n_in = frames.shape
        current = (frames.reshape(n_steps * batch, n_in) @ params["W1"].T + params["b1"]).reshape(n_steps, batch, -1)

        def output_current(spikes, first, last):  # snn.forward's, counting each hidden neuron's spikes
            tally[fired] += to_numpy(spikes.sum(axis=(0, 1, 2)))
            return spikes @ params["W2"].T + params["b2"]
        counts, _ = snn.simulate(lambda t, first, last: current[t], output_current, 1, n_steps, batch,
                                 (n_in, n_hidden, n_out), lif, xp, frames.dtype)
        tally[hits] += snn.correct_per_class(counts[0], xp.asarray(split.labels[indices]))
        tally[-2:] += float(counts.sum()), float(frames.sum())
    tally = team.total(tally)
    samples = max(len(split), 1)
    right, hidden, output, events = tally[hits].astype(int), tally[fired].sum(), tally[-2], tally[-1]
    seen = numpy.bincount(split.labels, minlength=n_out)
    per_digit = [int(r) / int(n) if n else None for r, n in zip(right, seen)]
    where = {"input_events_per_sample": events / samples, "hidden_spikes_per_sample": hidden / samples,
             "output_spikes_per_sample": output / samples,
             "silent_hidden_fraction": float((tally[fired] == 0).mean()),
             "synaptic_ops_per_sample": (n_hidden * events + n_out * hidden) / samples}
    return int(right.sum()) / samples, (hidden + output) / samples, per_digit, \
        {key: float(value) for key, value in where.items()}


def package_versions():
    versions = {"python": sys.version.split()[0], "numpy": numpy.__version__}
    for name in ("tonic", "cupy"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = module.__version__
    return versions


class Interrupted(UsageError):
    """Ctrl-C or SIGTERM: where the run stopped; run.main adds how to continue. `stop`: the
    distributed.Stopped that run.main's handler raised (or any KeyboardInterrupt, as Ctrl-C)."""

    def __init__(self, message, stop):
        super().__init__(message)
        self.signum = getattr(stop, "signum", signal.SIGINT)
        self.everywhere = getattr(stop, "everywhere", False)


class JobError(UsageError):
    """An error every process of an MPI job met at the same point: the first one alone reports it."""
    everywhere = True


@contextlib.contextmanager
def checked_together(team):
    """Run a block of checks on every process of a job, then share what failed, so that none is
    left waiting: every process raises the same JobError, naming the ranks that failed unless all
    failed alike (or Stopped, if one received a signal). A single process raises as it goes."""
    if team.size == 1:
        yield
        return
    problem = None
    try:
        yield
    except (UsageError, ValueError, OSError, RuntimeError) as error:
        problem = str(error)
    problems = team.problems(problem)
    team.stop_if_signalled()
    failed = {}
    for rank, problem in enumerate(problems):
        if problem is not None:
            failed.setdefault(problem, []).append(str(rank))
    if len(failed) == 1 and len(next(iter(failed.values()))) == team.size:
        raise JobError(next(iter(failed)))
    if failed:
        raise JobError("; ".join(f"rank{'s' * (len(ranks) > 1)} {', '.join(ranks)} of {team.size}: {problem}"
                                 for problem, ranks in failed.items()))


class DeadlineReached(Exception):
    """The run stopped at reproduce's --deadline, its checkpoint at the step it reached."""


def method_step(config, method, lif, team):
    """The update of config.method as step(params, state, frames, labels, generation, adam)."""
    if config.method == "eggroll":
        return lambda params, state, frames, labels, generation, adam: eggroll.generation_step(
            params, state, frames, labels, generation, method, adam, lif, team)
    if config.method == "es":
        return lambda params, state, frames, labels, generation, adam: baselines.es_generation_step(
            params, state, frames, labels, generation, method, adam, lif, team)
    return lambda params, state, frames, labels, generation, adam: baselines.bptt_step(
        params, state, frames, labels, method, adam, lif)


def resume_point(out, resume, params, xp, total_steps, identity):
    """(params, Adam state, first step, seconds of the steps done): a fresh start, or the
    checkpoint in `out`, which must belong to the run `identity` (run_folder.identity); metrics
    past it are dropped."""
    start, step_seconds, state = 0, [], optim.init(params)
    if resume and (out / CHECKPOINT).exists():
        params, state, start, step_seconds = run_folder.load_checkpoint(out / CHECKPOINT, xp, params, identity,
                                                                        total_steps)
    metrics_path = out / "metrics.jsonl"
    run_folder.write_atomically(metrics_path, "".join(json.dumps(r) + "\n"
                                                      for r in run_folder.metrics_until(metrics_path, start)))
    return params, state, start, step_seconds


def settings_of_job(config, team):
    """What the processes of a job must share before they check anything ({name: value}): every
    setting config.json stores, the update mode and the project's code."""
    return {**{run_config.option(name): value for name, value in run_config.stored(config).items()},
            "--update": team.update, "the project's code": distributed.code_version()}


def check_agreement(team, values):
    """JobError on every process of a job whose processes hold different `values` (a dict)."""
    problem = team.disagreement(values)
    if problem:
        raise JobError(f"the processes of this job were given different runs: {problem}; give every process "
                       f"the same settings, code and data")


def train(config, out, resume=False, force=False, progress=True, team=distributed.ALONE, deadline=None,
          command="train"):
    """One training run as `config` describes it, in folder `out`; returns the contents of final.json.

    With a `team` of processes (distributed.py) each evaluates its share of the population; the
    first process (rank 0) alone owns the folder, evaluates, writes and shows progress. Before
    anything is written the processes compare what defines the run (settings_of_job, then the
    device and the data's fingerprint): a difference is a JobError naming it and the ranks. At the
    time.monotonic() `deadline` (one process only) the run checkpoints and raises DeadlineReached.
    SIGINT, SIGTERM or SIGHUP (run.main's handler) raises Interrupted: where it arrives in a single
    process, at the start of the next generation on every process of a job. A fresh run that fails
    before its first checkpoint leaves nothing behind (run_folder.discard). `command` (train or
    reproduce) picks the advice that works for it.
    """
    # Settings, memory and data: every check before the run folder is touched, on every process of
    # a job, which then learn what failed where (one process may lack its data).
    out, leader = Path(out), team.rank == 0
    if team.size > 1:
        check_agreement(team, settings_of_job(config, team))
    with checked_together(team):
        run_config.check(config)
        if team.size > 1 and config.method == "bptt":
            raise UsageError("BPTT runs on one process: drop --distributed (it spreads an ES population)")
        xp = array_module(config.device)
        if xp is not numpy and team.size > 1:
            xp.cuda.Device(team.local_rank % xp.cuda.runtime.getDeviceCount()).use()  # one GPU per process
        params = snn.init_params(config.seed, std=config.init_std, xp=xp)
        if config.method == "eggroll":
            eggroll.check_config(config.eggroll(), params)
        recordings = resources.nmnist_recordings(config.data_root, "--data-root", required=False)
        resources.check_run_memory(config, xp, recordings, team.local_size)
        if leader:
            resources.check_writable(out, "--out", folder=True)
        splits = data.load_nmnist(config.data_root, config.time_bins, config.cache_dir, config.download,
                                  progress and leader)
        if not len(splits.train):
            raise UsageError("the training split is empty: check --data-root")
        lif = config.lif()
        step = method_step(config, {"eggroll": config.eggroll, "es": config.es, "bptt": config.bptt}[config.method](),
                           lif, team)
        total_steps, per_epoch, eval_every = training_schedule(config, len(splits.train))
        identity = run_folder.identity(config, splits.fingerprint())  # what the run's checkpoints belong to
    if team.size > 1:
        splits_held = {f"the {split} split": fingerprint for split, fingerprint in identity["data"].items()}
        check_agreement(team, {"--device": "cpu" if xp is numpy else "gpu", **splits_held})

    existed = out.exists()
    with run_folder.owned(out) if leader else contextlib.nullcontext():
        fresh, saved = False, 0  # saved: the step of the last checkpoint, 0 until a fresh run writes its first
        try:
            fresh = leader and run_folder.prepare(out, config, resume, force, command)
            # Start, or continue from the last checkpoint, which the first process reads for all.
            begin = resume_point(out, resume, params, xp, total_steps, identity) if leader else None
            params, state, start, step_seconds = team.broadcast(begin) if team.size > 1 else begin
            saved, metrics_path = start, out / "metrics.jsonl"
            validation = None  # the last step is always evaluated, so after the loop this is the final one

            with progress_bar(total_steps, start, config.name, progress and leader) as bar:
                generation = start
                try:
                    for generation in range(start, total_steps):
                        team.stop_if_signalled()  # a job's processes stop together, none left waiting
                        if deadline is not None and time.monotonic() >= deadline:
                            if generation > saved:
                                run_folder.save_checkpoint(out, params, state, generation, step_seconds, identity)
                            raise DeadlineReached(f"{out} stopped by --deadline at step {generation} of "
                                                  f"{total_steps}; the next reproduce resumes it")
                        # One update: the generation-th minibatch, then the method's step with this step's lr.
                        frames, labels = data.minibatch(splits.train, config.batch_size, xp, config.seed, generation,
                                                        config.max_shift)
                        began = time.perf_counter()
                        try:
                            update = step(params, state, frames, labels, generation,
                                          config.adam(generation, total_steps))
                            if not all(bool(xp.isfinite(value).all()) for value in update[0].values()):
                                raise ValueError("a parameter became NaN or inf")
                        except ValueError as error:  # non-finite fitness, loss or parameters
                            if leader and generation > saved:
                                run_folder.save_checkpoint(out, params, state, generation, step_seconds, identity)
                                saved = generation
                            raise JobError(f"training went non-finite at step {generation + 1} ({error}); "
                                           f"{diverged(out, saved, fresh, command)}") from None
                        params, state, stats = update
                        if xp is not numpy:
                            xp.cuda.Stream.null.synchronize()
                        step_seconds.append(time.perf_counter() - began)
                        bar.update(1)

                        # Every eval_every updates: validation accuracy, a metrics record and a checkpoint.
                        done = generation + 1
                        if done % eval_every == 0 or done == total_steps:
                            validation = val_acc, spikes, _, _ = evaluate(params, splits.val, lif, xp, team)
                            if leader:
                                record = {"generation": done, "epoch": done / per_epoch,
                                          "wall_seconds": sum(step_seconds), "val_acc": val_acc,
                                          "spikes_per_sample": spikes, **stats}
                                run_folder.append_line(metrics_path, json.dumps(record))
                                bar.set_postfix(val_acc=f"{val_acc:.3f}")
                                try:
                                    run_folder.save_checkpoint(out, params, state, done, step_seconds, identity)
                                except run_folder.NotFinite as error:
                                    raise run_folder.NotFinite(f"{error}; {diverged(out, saved, fresh, command)}") \
                                        from None
                            saved = done
                except KeyboardInterrupt as stop:
                    raise Interrupted(f"{out} stopped at step {generation} of {total_steps}; its checkpoint holds "
                                      f"step {saved}", stop) from None
            # The end: validation and test accuracy, timings and versions in final.json.
            try:
                val_acc, spikes, val_per_digit, _ = validation or evaluate(params, splits.val, lif, xp, team)
                test_acc, _, test_per_digit, test_sparsity = evaluate(params, splits.test, lif, xp, team)
            except KeyboardInterrupt as stop:
                raise Interrupted(f"{out} stopped in its final evaluation; its checkpoint holds step {saved} of "
                                  f"{total_steps}", stop) from None
            if not leader:
                return {}
            final = {"test_acc": test_acc, "val_acc": val_acc, "spikes_per_sample": spikes,
                     "test_acc_per_digit": test_per_digit, "val_acc_per_digit": val_per_digit,
                     "median_seconds_per_generation": statistics.median(step_seconds),
                     "total_seconds": sum(step_seconds), "generations": total_steps,
                     "n_train": len(splits.train), "n_val": len(splits.val), "n_test": len(splits.test),
                     "test_sparsity": test_sparsity, "config": run_config.stored(config),
                     "versions": package_versions(), "device": device_name(xp), "processes": team.size}
            run_folder.write_atomically(out / "final.json", json.dumps(final, indent=1))
        except BaseException as error:
            if leader and (fresh or not existed) and saved == 0 \
                    and not isinstance(error, (KeyboardInterrupt, Interrupted, DeadlineReached, BrokenPipeError)):
                run_folder.discard(out, folder_too=not existed)  # a failed run leaves nothing; a stopped one resumes
            raise
    return final


def diverged(out, saved, fresh, command):
    """What is kept of a run that went non-finite, and the advice that works for `command`."""
    if saved:
        kept = f"{out / CHECKPOINT} holds the run until step {saved}"
        again = "lower --lr or --sigma and train again: use another --out, or --force to replace this run"
    else:
        kept = "nothing of the run was kept" if fresh else "there is no checkpoint"
        again = "lower --lr or --sigma and train again" + ("" if fresh else " (--force replaces this run)")
    if command == "reproduce":
        again = "the preset's settings diverge on this copy of N-MNIST"
    return f"{kept}: {again}"


def progress_bar(total, initial, description, enabled):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=description, disable=not enabled, dynamic_ncols=True)



def evaluate_run(run_dir, data_root=None, cache_dir=None, device="cpu"):
    """Accuracy of a trained run's weights on every split of the N-MNIST copy at data_root
    (e.g. the real recordings, for a model trained on emulated ones), frames made as in training."""
    run_dir = Path(run_dir)
    if not (run_dir / "config.json").exists() or not (run_dir / CHECKPOINT).exists():
        raise UsageError(f"{run_dir} holds no trained run (config.json and {CHECKPOINT}); "
                         f"train one with `run.py train --out {run_dir}`")
    config = run_folder.read_config(run_dir)
    xp = array_module(device)
    like = snn.init_params(config.seed, std=config.init_std, xp=xp)
    params, _, step, _ = run_folder.load_checkpoint(run_dir / CHECKPOINT, xp, like, run_folder.identity(config))
    splits = data.load_nmnist(data_root, config.time_bins, cache_dir, progress=False)
    scores = {name: evaluate(params, getattr(splits, name), config.lif(), xp) for name in ("train", "val", "test")}
    accuracies = {name: score[0] for name, score in scores.items()}
    sizes = {name: len(getattr(splits, name)) for name in accuracies}
    accuracies["all"] = sum(accuracies[n] * sizes[n] for n in sizes) / max(sum(sizes.values()), 1)
    return {"run": str(run_dir), "generation": step, "accuracy": accuracies, "samples": sizes,
            "accuracy_per_digit": {name: score[2] for name, score in scores.items()}}

