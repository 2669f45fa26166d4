"""Command line of eggroll-snn: train one run, score it on other recordings, reproduce the paper.

    python run.py train --method eggroll --rank 4 --generations 100 --out runs/eggroll-r4
    python run.py evaluate runs/eggroll-r4 --data-root path/to/real/nmnist
    python run.py reproduce --config quick          # or paper, best
    python run.py reproduce --config hyperscale --part budget --device gpu
    python run.py reproduce --config spike-cost     # accuracy against a price on hidden spikes
    python run.py bench --json bench.json           # see bench.py

Every error a user can cause (bad option, missing data, a foreign checkpoint, a run too large
for the machine's memory) ends the program with one line on stderr and exit status 2, and
overwrites nothing; in an MPI job the first process says which processes failed. Ctrl-C and
SIGTERM say where the run stopped and how to continue, exit status 130 and 143.
"""
import argparse
import contextlib
import functools
import json
import signal
import statistics
import sys
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy

import baselines
import bench
import config as run_config
import data
import distributed
import eggroll
import optim
import report
import resources
import run_folder
import snn
from backend import array_module, device_name, to_numpy
from run_folder import CHECKPOINT, UsageError

# ---------------------------------------------------------------------------------------------
# train

# Ranges checked elsewhere than in RunConfig, as --help states them: the rank is at most the
# smaller side of each weight matrix (eggroll.check_config), and memory bounds the sizes.
HELP_RANGES = {"rank": f"must lie in 1..{min(snn.SIZES)}",
               "population": "must be an even number >= 2 (P antithetic pairs), as many as fit in memory",
               "batch_size": "must be >= 1, as many as fit in memory"}


def add_config_options(parser, names=None):
    """Options --<field> for the RunConfig fields `names` (all by default), help with the range and
    the default."""
    for spec in fields(run_config.RunConfig):
        if names is not None and spec.name not in names:
            continue
        meta = spec.metadata
        scope = meta["methods"] != run_config.METHODS and f"{', '.join(meta['methods'])} only"
        check = HELP_RANGES.get(spec.name) or meta["check"] and meta["check"][1]
        notes = [scope, check, spec.default is not None and f"default: {spec.default}"]
        help_text = meta["help"] + (f" ({'; '.join(note for note in notes if note)})" if any(notes) else "")
        if spec.type is bool:
            parser.add_argument(run_config.option(spec.name), action="store_true", default=None, help=help_text)
        else:
            parser.add_argument(run_config.option(spec.name), type=spec.type, choices=meta["choices"],
                                default=None, help=help_text)


def config_from_options(opts):
    """The RunConfig the options describe. Options a method does not use are ignored, except the
    run's length: --generations (ES methods) and --epochs (BPTT) are refused for the other."""
    given = {spec.name: getattr(opts, spec.name) for spec in fields(run_config.RunConfig)
             if getattr(opts, spec.name, None) is not None}
    config = run_config.RunConfig(**given)
    if config.method == "bptt" and "generations" in given:
        raise UsageError("--generations is for the ES methods; BPTT's length is --epochs, e.g. --epochs 5")
    if config.method != "bptt" and "epochs" in given:
        raise UsageError(f"--epochs is for bptt; {config.method}'s length is --generations, e.g. --generations 100")
    return config


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
    """Ctrl-C or SIGTERM: where the run stopped; main adds how to continue. `stop`: the
    distributed.Stopped that main's handler raised (or any KeyboardInterrupt, as Ctrl-C)."""

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


def train(config, out, resume=False, force=False, progress=True, team=distributed.ALONE, deadline=None):
    """One training run as `config` describes it, in folder `out`; returns the contents of final.json.

    With a `team` of processes (distributed.py) each evaluates its share of the population; the
    first process (rank 0) alone owns the folder, evaluates, writes and shows progress. At the
    time.monotonic() `deadline` (one process only) the run checkpoints and raises DeadlineReached.
    SIGINT or SIGTERM (main's handler) raises Interrupted: where it arrives in a single process, at
    the start of the next generation on every process of a job.
    """
    # Settings, memory and data: every check before the run folder is touched, on every process of
    # a job, which then learn what failed where (one process may lack its data).
    out, leader = Path(out), team.rank == 0
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

    with run_folder.owned(out) if leader else contextlib.nullcontext():
        # Start, or continue from the last checkpoint, which the first process reads for all.
        begin = None
        if leader:
            run_folder.prepare(out, config, resume, force)
            begin = resume_point(out, resume, params, xp, total_steps, identity)
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
                        update = step(params, state, frames, labels, generation, config.adam(generation, total_steps))
                        if not all(bool(xp.isfinite(value).all()) for value in update[0].values()):
                            raise ValueError("a parameter became NaN or inf")
                    except ValueError as error:  # non-finite fitness, loss or parameters
                        if leader and generation > saved:
                            run_folder.save_checkpoint(out, params, state, generation, step_seconds, identity)
                        kept = f"{out / CHECKPOINT} holds the run before it" if generation else "there is no checkpoint"
                        raise JobError(f"training went non-finite at step {generation + 1} ({error}); {kept}: "
                                       f"lower --lr or --sigma and start over with --force") from None
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
                            record = {"generation": done, "epoch": done / per_epoch, "wall_seconds": sum(step_seconds),
                                      "val_acc": val_acc, "spikes_per_sample": spikes, **stats}
                            run_folder.append_line(metrics_path, json.dumps(record))
                            bar.set_postfix(val_acc=f"{val_acc:.3f}")
                            run_folder.save_checkpoint(out, params, state, done, step_seconds, identity)
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
                 "test_sparsity": test_sparsity, "config": run_config.stored(config), "versions": package_versions(),
                 "device": device_name(xp), "processes": team.size}
        run_folder.write_atomically(out / "final.json", json.dumps(final, indent=1))
    return final


def progress_bar(total, initial, description, enabled):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=description, disable=not enabled, dynamic_ncols=True)


# ---------------------------------------------------------------------------------------------
# evaluate

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


# ---------------------------------------------------------------------------------------------
# reproduce: the paper's protocol, Table 1, Table 2 and figures

def reproduce(opts):
    """Train every run of the preset that is not finished yet, then write tables and figures; with
    --config hyperscale, part after part, each in results/hyperscale/<part>.

    With --real-root, every finished run is also scored on that N-MNIST copy (real.json). With
    --deadline, no run trains past that many seconds from now: the one it stops stays resumable.
    """
    if opts.deadline is not None and not opts.deadline >= 0:
        raise UsageError(f"--deadline must be >= 0 seconds, got {opts.deadline}: use e.g. --deadline 3600")
    deadline = None if opts.deadline is None else time.monotonic() + opts.deadline
    hyperscale = opts.config == "hyperscale"
    for name in ("part", "populations"):
        if getattr(opts, name) is not None and not hyperscale:
            raise UsageError(f"{run_config.option(name)} is for --config hyperscale; drop it for "
                             f"--config {opts.config}")
    if hyperscale:
        grids = [(Path(opts.results) / "hyperscale" / part, run_config.hyperscale_runs(part),
                  functools.partial(report.write_hyperscale_report, part=part))
                 for part in ([opts.part] if opts.part else run_config.HYPERSCALE)]
    elif opts.config == "spike-cost":
        grids = [(Path(opts.results) / opts.config, run_config.spike_cost_runs(), report.write_spike_cost_report)]
    else:
        grids = [(Path(opts.results) / opts.config, run_config.preset_runs(opts.config),
                  functools.partial(report.write_report, preset=opts.config))]
    grids = selected_runs(opts, grids)
    check_reproduce(opts, grids)
    for results_dir, runs, write_report in grids:
        with run_folder.owned(results_dir):
            reproduce_runs(opts, results_dir, runs, deadline)
            written = write_report(results_dir)
        print(f"results written to {results_dir}: {', '.join(Path(path).name for path in written)}", file=sys.stderr)


SELECTORS = {"runs": lambda config: config.name, "seeds": lambda config: config.seed,
             "populations": lambda config: config.population}  # reproduce's options that pick runs


def selected_runs(opts, grids):
    """The grids, each with the runs that --runs, --seeds and --populations pick; a UsageError for
    a value no run of the preset has, or if no run is left."""
    scope = f"--config {opts.config}" + (f" --part {opts.part}" if opts.part else "")
    every = [config for _, runs, _ in grids for config in runs]
    for name, value_of in SELECTORS.items():
        known = sorted({value_of(config) for config in every})
        unknown = [value for value in getattr(opts, name) or () if value not in known]
        if unknown:
            raise UsageError(f"--{name}: {scope} has no {name[:-1]} {unknown[0]}; use some of "
                             f"{', '.join(map(str, known))}")
    picked = lambda config: all(not getattr(opts, name) or value_of(config) in getattr(opts, name)
                                for name, value_of in SELECTORS.items())
    grids = [(results_dir, [config for config in runs if picked(config)], write) for results_dir, runs, write in grids]
    if not any(runs for _, runs, _ in grids):
        given = " ".join(f"--{name} {','.join(map(str, getattr(opts, name)))}" for name in SELECTORS
                         if getattr(opts, name))
        raise UsageError(f"no run of {scope} has {given}; drop one of them")
    return grids


def check_reproduce(opts, grids):
    """What reproduce will use, checked before the first run trains: the --results folder, the
    N-MNIST copies of --real-root and (if a run is left to train) --data-root, the device, and the
    memory of every run left to train."""
    resources.check_writable(opts.results, "--results", folder=True)
    if opts.real_root:
        resources.nmnist_recordings(opts.real_root, "--real-root")
    left = [] if opts.report_only else [
        config for results_dir, runs, _ in grids for config in runs
        if not run_folder.is_finished(results_dir / "runs" / run_config.run_folder_name(config, opts.config), config)]
    if left or opts.real_root:
        xp = array_module(opts.device)  # --device gpu without a usable GPU fails here
    if left:
        recordings = resources.nmnist_recordings(opts.data_root, "--data-root", required=not opts.download)
        for config in left:
            resources.check_run_memory(config, xp, recordings, run=run_config.run_folder_name(config, opts.config))


def reproduce_runs(opts, results_dir, runs, deadline):
    """Train the unfinished `runs` into results_dir/runs/<run>, skipping the finished ones and, past
    the deadline, the rest; score them on --real-root."""
    where = dict(device=opts.device, data_root=opts.data_root, cache_dir=opts.cache_dir, download=opts.download)
    not_started = 0
    for index, config in enumerate(runs, start=1):
        config = replace(config, **where)
        out = results_dir / "runs" / run_config.run_folder_name(config, opts.config)
        label = f"[{index}/{len(runs)}] {run_config.run_label(config, opts.config)}"
        if run_folder.is_finished(out, config):
            print(f"{label}: finished in {out}, skipped", file=sys.stderr)
        elif opts.report_only:
            continue
        elif deadline is not None and time.monotonic() >= deadline:
            not_started += 1
            continue
        else:
            print(label, file=sys.stderr)
            stored = run_folder.read_config(out) if (out / "config.json").exists() else None
            force = opts.force and stored is not None and run_config.stored(stored) != run_config.stored(config)
            try:
                train(config, out, resume=True, force=force, progress=not opts.quiet, deadline=deadline)
            except DeadlineReached as stop:
                print(f"{label}: {stop}", file=sys.stderr)
                continue
        if opts.real_root and not (out / "real.json").exists():
            if (out / CHECKPOINT).exists():
                scored = evaluate_run(out, opts.real_root, opts.cache_dir, opts.device)
                run_folder.write_atomically(out / "real.json", json.dumps(scored, indent=1))
            else:
                print(f"{out}: no {CHECKPOINT}, not scored on --real-root", file=sys.stderr)
    if not_started:
        print(f"--deadline passed: {not_started} run(s) of {results_dir} not started; the next reproduce trains them",
              file=sys.stderr)


# ---------------------------------------------------------------------------------------------

class Parser(argparse.ArgumentParser):
    """argparse, a usage error in one line: the problem and where to read more (once per MPI job)."""

    def error(self, message):
        if distributed.launched_rank() == 0:
            print(f"error: {message}; see {self.prog} --help", file=sys.stderr)
        sys.exit(2)


def integers(text):
    """argparse type: comma-separated integers, e.g. 1,2."""
    try:
        return [int(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,2, got {text!r}") from None


def main(argv=None):
    parser = Parser(prog="run.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)
    where = ("device", "data_root", "cache_dir")

    train_parser = commands.add_parser("train", help="train one network")
    add_config_options(train_parser)
    train_parser.add_argument("--out", default="runs/latest",
                              help="output folder: metrics.jsonl, final.json, checkpoint.npz (default: runs/latest)")
    train_parser.add_argument("--resume", action="store_true",
                              help="continue the run in --out from its last checkpoint (same settings)")
    train_parser.add_argument("--force", action="store_true", help="delete the run in --out and start over")
    train_parser.add_argument("--quiet", action="store_true", help="no progress bar")
    train_parser.add_argument("--distributed", action="store_true",
                              help="spread the ES population over the processes of an MPI job: "
                                   "mpiexec -n K python run.py train --distributed ...")
    train_parser.add_argument("--update", choices=distributed.UPDATES, default="seeds",
                              help="with --distributed: every process forms the whole update from the noise "
                                   "seeds (bit-exact), or the gradient of its own pairs, summed by one "
                                   "all-reduce (default: seeds)")

    reproduce_parser = commands.add_parser("reproduce", help="every run of the paper's protocol, tables, figures")
    reproduce_parser.add_argument("--config", choices=sorted([*run_config.PRESETS, "hyperscale", "spike-cost"]),
                                  default="paper",
                                  help="paper: 100 generations; quick: under 10 minutes on 2 CPU cores; "
                                       "best: the tuned recipe; hyperscale: populations up to 65,536, for a GPU; "
                                       "spike-cost: EGGROLL r=4 and BPTT at each price of a hidden spike "
                                       "(default: paper)")
    reproduce_parser.add_argument("--part", choices=list(run_config.HYPERSCALE),
                                  help="with --config hyperscale: only this part, in results/hyperscale/<part>/ "
                                       "(default: every part, one after another)")
    reproduce_parser.add_argument("--results", default="results", help="folder for results/<config>/ "
                                                                       "(default: results)")
    add_config_options(reproduce_parser, where + ("download",))
    reproduce_parser.add_argument("--quiet", action="store_true", help="no progress bars")
    populations = sorted({p for part in run_config.HYPERSCALE.values() for ps in part["populations"].values()
                          for p in ps})
    reproduce_parser.add_argument("--runs", type=lambda text: text.split(","),
                                  help="only these runs, e.g. bptt,es,eggroll-r4: some of bptt, es, "
                                       f"{', '.join(f'eggroll-r{r}' for r in run_config.RANKS)}, as the preset "
                                       "has them (default: all)")
    reproduce_parser.add_argument("--seeds", type=integers,
                                  help=f"only these seeds, e.g. 1,2: some of {', '.join(map(str, run_config.SEEDS))}"
                                       f", as the preset has them (default: all)")
    reproduce_parser.add_argument("--populations", type=integers,
                                  help="with --config hyperscale: only these populations, e.g. 512,2048: some of "
                                       f"{', '.join(map(str, populations))}, as the part has them (default: all)")
    reproduce_parser.add_argument("--deadline", type=float,
                                  help="seconds from now (>= 0) after which no run trains: the one running stops at "
                                       "its next step, checkpointed, and the next reproduce resumes it (default: none)")
    reproduce_parser.add_argument("--force", action="store_true",
                                  help="retrain runs whose stored settings differ from the preset (deletes them)")
    reproduce_parser.add_argument("--report-only", action="store_true",
                                  help="train nothing: write the tables and figures of the runs finished so far")
    reproduce_parser.add_argument("--real-root", help="also score every run on this N-MNIST copy, e.g. real "
                                                      "recordings for models trained on emulated ones")

    evaluate_parser = commands.add_parser("evaluate", help="accuracy of a trained run on another N-MNIST copy")
    evaluate_parser.add_argument("run_dir", help="the --out folder of a training run")
    add_config_options(evaluate_parser, where)

    bench_parser = commands.add_parser("bench", help="speed, FLOPs and memory at the reference configuration",
                                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    bench.add_options(bench_parser)

    opts, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser, whose --help lists its options
        commands.choices[opts.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    defaults = run_config.RunConfig()
    for name in where + ("download",):
        if getattr(opts, name, False) is None:
            setattr(opts, name, getattr(defaults, name))
    team = distributed.ALONE
    handlers = {signum: signal.signal(signum, lambda signum, frame: team.on_signal(signum))
                for signum in (signal.SIGINT, signal.SIGTERM)}
    again = {"train": "rerun with --resume to continue",
             "reproduce": "rerun the same command to continue (finished runs are skipped)"}.get(
        opts.command, "nothing was written, rerun to start again")
    try:
        if getattr(opts, "distributed", False):
            team = distributed.team(getattr(opts, "update", "seeds"))
        if opts.command == "train":
            final = train(config_from_options(opts), opts.out, opts.resume, opts.force, not opts.quiet, team)
            if team.rank == 0:
                print(json.dumps({k: final[k] for k in ("test_acc", "val_acc", "median_seconds_per_generation")}))
        elif opts.command == "reproduce":
            reproduce(opts)
        elif opts.command == "evaluate":
            print(json.dumps(evaluate_run(opts.run_dir, opts.data_root, opts.cache_dir, opts.device)))
        else:
            with checked_together(team):
                bench.check_request(opts, team)
            if opts.distributed:
                bench.bench_distributed(opts, team)
            else:
                bench.bench(opts)
    except Interrupted as error:
        return fail(f"interrupted: {error}; {again}", team, 128 + error.signum, error.everywhere)
    except KeyboardInterrupt as stop:  # before a run started, or outside one
        return fail(f"interrupted{' before training started' * (opts.command == 'train')}; {again}", team,
                    128 + getattr(stop, "signum", signal.SIGINT), getattr(stop, "everywhere", False))
    except (UsageError, ValueError, OSError, RuntimeError) as error:
        return fail(str(error), team, everywhere=isinstance(error, JobError))
    except BaseException:
        if team.size > 1:  # a bug: show it, and end every process of the job rather than leave them waiting
            import traceback
            traceback.print_exc()
            team.abort(1)
        raise
    finally:
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return 0


def fail(message, team, status=2, everywhere=False):
    """Print `message` as one line on stderr and return the exit status `status`. In an MPI job an
    error that every process met (`everywhere`) is printed by the first; one a process met alone
    is printed by it with its rank, and ends the job, whose other processes may be waiting for it."""
    if team.size == 1 or everywhere:
        if team.rank == 0:
            print(f"error: {message}", file=sys.stderr, flush=True)
        return status
    print(f"error: rank {team.rank} of {team.size}: {message}", file=sys.stderr, flush=True)
    team.abort(status)
    return status


if __name__ == "__main__":
    sys.exit(main())
