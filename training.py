"""Training and scoring of one run: the loop that trains a network in its run folder (checkpoints,
metrics, final.json, resume, deadline, signals), the evaluation of a network on a split, and the
scoring of a trained run on another N-MNIST copy.
"""
import concurrent.futures
import contextlib
import hashlib
import itertools
import dataclasses
import json
import math
import os
import re
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
import emulate
import exits
import interface_checks
import optim
import resources
import run_folder
import snn
import snn_eggroll
from backend import array_module, array_module_of, device_name, to_numpy
from run_folder import CHECKPOINT, UsageError


def training_schedule(config, n_train):
    """(total update steps, steps per epoch, steps between evaluations) of a run."""
    per_epoch = max(n_train // config.batch_size, 1)
    if config.method == "bptt":
        return config.epochs * per_epoch, per_epoch, per_epoch
    return config.generations, per_epoch, config.eval_every


def evaluate(params, split, lif, xp, team=distributed.ALONE, batch_size=1000, network=None):
    """The unperturbed network on a split: accuracy, spikes per sample (hidden + output), accuracy
    per digit 0-9 (None for a digit the split lacks), and where the activity is, per sample: input
    events (active inputs over the T frames), hidden and output spikes, the fraction of hidden
    neurons that never fire on the whole split, and synaptic operations — an accumulate per
    synapse a spike crosses, each input's synapses (`snn.Network.synapses`) per event of it and
    per spike of a hidden neuron, in all and those of the input events alone. `network`: the layers (None: fully connected, read off the
    weights' shapes). A team's processes take every K-th batch of 1,000 and add up their counts:
    whole numbers, so the sums are exact in any order."""
    network = snn.network_of(params, network)
    sizes = network.sizes
    n_out, n_hidden = sizes[-1], sum(sizes[1:-1])
    # hits per digit, events of each input, spikes of each hidden neuron, output spikes
    tally = numpy.zeros(n_out + sizes[0] + n_hidden + 1)
    hits = slice(0, n_out)
    first_neuron = numpy.cumsum((n_out,) + sizes[:-1])  # where the inputs and each hidden layer start in the tally
    for start in range(team.rank * batch_size, len(split), team.size * batch_size):
        indices = numpy.arange(start, min(start + batch_size, len(split)))
        frames = split.frames(indices, xp)
        n_frames, batch, n_in = frames.shape
        x = frames.reshape(n_frames * batch, n_in)
        current = snn.layer_current(params, 1, x, network).reshape(n_frames, batch, -1)

        def layer_current(layer, spikes, first, last):  # snn.forward's, counting each hidden neuron's spikes
            tally[first_neuron[layer - 1]:first_neuron[layer - 1] + sizes[layer - 1]] += to_numpy(spikes.sum(axis=(0, 1, 2)))
            return snn.layer_current(params, layer, spikes, network)
        counts, _ = snn.simulate(lambda t, first, last: current[t], layer_current, 1, n_frames, batch,
                                 sizes, lif, xp, frames.dtype, readout=network.readout)
        tally[hits] += snn.correct_per_class(counts[0], xp.asarray(split.labels[indices]))
        tally[first_neuron[0]:first_neuron[1]] += to_numpy(x.sum(axis=0))
        if network.readout == "rate":  # a potential readout's output neurons do not spike
            tally[-1] += float(counts.sum())
    tally = team.total(tally)
    samples = max(len(split), 1)
    layers = [tally[first:first + size] for first, size in zip(first_neuron, sizes[:-1])]  # inputs, hidden layers
    right, events, fired, output = tally[hits].astype(int), layers[0].sum(), numpy.concatenate(layers[1:]), tally[-1]
    input_operations = (network.synapses(1) * layers[0]).sum()
    operations = input_operations + sum((network.synapses(layer) * counts).sum()
                                        for layer, counts in enumerate(layers[1:], start=2))
    seen = numpy.bincount(split.labels, minlength=n_out)
    per_digit = [int(r) / int(n) if n else None for r, n in zip(right, seen)]
    where = {"input_events_per_sample": events / samples, "hidden_spikes_per_sample": fired.sum() / samples,
             "output_spikes_per_sample": output / samples,
             "silent_hidden_fraction": float((fired == 0).mean()),
             "synaptic_ops_per_sample": operations / samples, "input_synaptic_ops_per_sample": input_operations / samples}
    return int(right.sum()) / samples, (fired.sum() + output) / samples, per_digit, \
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
    failed alike, their messages the same but for numbers (the free RAM each read), in the first one's
    words (or Stopped, if one received a signal). A single process raises as it goes."""
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
    failed, said = {}, {}  # problems alike but for their numbers (the free RAM each process read) are one
    for rank, problem in enumerate(problems):
        if problem is not None:
            alike = re.sub(r"[0-9.,]+", "#", problem)
            said.setdefault(alike, problem)
            failed.setdefault(alike, []).append(str(rank))
    if len(failed) == 1 and len(next(iter(failed.values()))) == team.size:
        raise JobError(next(iter(said.values())))
    if failed:
        raise JobError("; ".join(f"rank{'s' * (len(ranks) > 1)} {', '.join(ranks)} of {team.size}: {said[alike]}"
                                 for alike, ranks in failed.items()))


class DeadlineReached(Exception):
    """The run stopped at reproduce's --deadline, its checkpoint at the step it reached."""


def refuse_unresolved(config, params):
    """A UsageError if float32 cannot resolve the least sigma of an ES run (its schedule's --sigma-min)
    at the initial weights `params`: every member would equal the mean but for rounding."""
    least = config.sigma if config.sigma_schedule == "constant" else config.sigma_min
    sigmas = dataclasses.replace(config.eggroll(), sigma=least).sigmas(params) if config.method == "eggroll" else \
        dict.fromkeys(params, least)
    try:
        interface_checks.check_resolved(params, sigmas)
    except interface_checks.Unresolved as error:
        option = "--sigma" if config.sigma_schedule == "constant" else "--sigma-min"
        given = f"{option} {least}"
        if error.sigma != least:  # the output layer's, or an inner hidden layer's, scaled
            option, scale = ("--output-sigma-scale", config.output_sigma_scale) \
                if snn.layer_of(error.name) == snn.n_layers(params) else ("--inner-scale", config.inner_scale)
            given = f"{option} {scale} (sigma {error.sigma:.3g} there)"
        raise UsageError(f"{given} lies below what float32 resolves at the initial weights of layer "
                         f"{snn.layer_of(error.name)} ({error.name}: up to {error.largest:.3g}, steps of "
                         f"{error.spacing:.3g}): every member would equal the mean but for rounding; raise {option}, "
                         f"or lower --init-std") from None


def refuse_unmoved(config, params):
    """A UsageError if Adam's first steps, about lr for each weight (lr x --inner-scale in EGGROLL's
    hidden layers after the first), would round away at most of a layer's initial weights `params`:
    float32 changes a weight w only by more than about eps |w| / 2, eps its resolution at 1."""
    eps = float(numpy.finfo(numpy.float32).eps)
    lrs = config.eggroll().lrs(params, config.lr) if config.method == "eggroll" else dict.fromkeys(params, config.lr)
    for layer in range(1, snn.n_layers(params) + 1):
        weights = params[f"W{layer}"]
        typical = float(array_module_of(weights).median(abs(weights)))
        if lrs[f"W{layer}"] < eps * typical / 2:
            scaled = f" x --inner-scale {config.inner_scale}" if lrs[f"W{layer}"] != config.lr else ""
            raise UsageError(f"--lr {config.lr}{scaled}: steps of about {lrs[f'W{layer}']:.3g} round away at most of "
                             f"layer {layer}'s initial weights (half of them beyond {typical:.2g} in magnitude, where "
                             f"float32 changes in steps of {eps * typical:.2g}), which would stay as they are; raise "
                             f"--lr{' or --inner-scale' if scaled else ''}, e.g. --lr 0.01")


def method_step(config, lif, team, total_steps):
    """The update of config.method as step(params, state, frames, labels, generation, adam); an ES
    generation is drawn, and updated, with the sigma of its generation (config.sigma_at)."""
    if config.method == "eggroll":
        return lambda params, state, frames, labels, generation, adam: snn_eggroll.generation_step(
            params, state, frames, labels, generation, config.eggroll(generation, total_steps), adam, lif, team,
            config.network)
    if config.method == "es":
        return lambda params, state, frames, labels, generation, adam: baselines.es_generation_step(
            params, state, frames, labels, generation, config.es(generation, total_steps), adam, lif, team)
    bptt = config.bptt()
    return lambda params, state, frames, labels, generation, adam: baselines.bptt_step(
        params, state, frames, labels, bptt, adam, lif, config.network)


def resume_point(out, resume, params, xp, total_steps, identity, time_bins, eval_every, command="train"):
    """(params, Adam state, first step, seconds of the steps done, end-to-end seconds so far): a
    fresh start, or the checkpoint in `out`, which must belong to the run `identity`
    (run_folder.identity) and hold weights the network of `time_bins` frames can run; metrics past it
    are dropped, and those before it must be the checkpoint's run's (check_records)."""
    start, step_seconds, end_to_end, state = 0, [], 0.0, optim.init(params)
    if resume and (out / CHECKPOINT).exists():
        params, state, start, step_seconds, end_to_end = run_folder.load_checkpoint(out / CHECKPOINT, xp, params,
                                                                                    identity, total_steps, command)
        refuse_too_large(out / CHECKPOINT, params, time_bins, command)
    metrics_path = out / "metrics.jsonl"
    records = run_folder.metrics_until(metrics_path, start)
    check_records(metrics_path, records, step_seconds, eval_every)
    run_folder.write_atomically(metrics_path, "".join(json.dumps(r) + "\n" for r in records))
    return params, state, start, step_seconds, end_to_end


def check_records(path, records, step_seconds, eval_every):
    """The metrics `records` of metrics.jsonl (`path`) up to the checkpoint, whose run took
    `step_seconds`: a UsageError where one is another run's (its wall_seconds, the sum of the step
    times up to its generation, is not this run's), a note naming those missing (one every
    `eval_every` steps) and what that leaves out."""
    elapsed = [0, *itertools.accumulate(step_seconds)]  # elapsed[g]: sum(step_seconds[:g]), the same bits
    for number, record in enumerate(records, 1):
        if "wall_seconds" in record and record["wall_seconds"] != elapsed[record["generation"]]:
            raise UsageError(f"{path} line {number} is not a record of the run in its folder: its wall_seconds, "
                             f"{record['wall_seconds']}, are not the checkpoint's time to generation "
                             f"{record['generation']}, {elapsed[record['generation']]}; put this run's "
                             f"metrics.jsonl back, or move that one away to go on without the records before the "
                             f"checkpoint")
    missing = sorted(set(range(eval_every, len(step_seconds) + 1, eval_every)) - {r["generation"] for r in records})
    if missing:
        print(f"note: {path} holds no record of {len(missing)} generation{'s' * (len(missing) > 1)} evaluated before "
              f"the checkpoint (from generation {missing[0]}): the run goes on, and its record will lack "
              f"{'them' if len(missing) > 1 else 'it'} (a report's curve and time to an accuracy too)",
              file=sys.stderr)


def refuse_too_large(path, params, time_bins, command="train"):
    """A UsageError if the checkpoint `path`'s weights `params` are too large for the network of
    `time_bins` frames (too_large), with the fix that keeps a finished run's results."""
    layer = snn.too_large(params, time_bins)
    if layer is not None:
        raise UsageError(f"checkpoint {path} holds weights too large for the network (layer {layer}'s membrane "
                         f"potentials could pass float32's range): they are no trained run's; "
                         f"{run_folder.checkpoint_fix(path, command)}")


def settings_of_job(config, out, team):
    """What the processes of a job must share before they check anything ({name: value}): every
    setting config.json stores, the run folder (which process 0 alone writes), the update mode and
    the project's code."""
    return {**{run_config.option(name): value for name, value in run_config.stored(config).items()},
            "--out": os.path.abspath(out), "--update": team.update, "the project's code": distributed.code_version()}


def check_agreement(team, values):
    """JobError on every process of a job whose processes hold different `values` (a dict)."""
    problem = team.disagreement(values)
    if problem:
        raise JobError(f"the processes of this job were given different runs: {problem}; give every process "
                       f"the same settings, code and data")


@dataclasses.dataclass
class Run:
    """A run that passed every check (`set_up`): what its generations need, and how far it is."""
    config: object
    out: Path
    team: object
    xp: object
    splits: object
    lif: object
    step: object         # method_step's update
    total_steps: int
    per_epoch: int
    eval_every: int
    identity: dict       # what its checkpoints belong to (run_folder.identity)
    command: str         # train or reproduce, for the advice that works for it
    data: dict           # what the data is: its fingerprint, and how it was emulated (if it was)
    fresh: bool = False  # a run folder made by this call
    saved: int = 0       # the step of the last checkpoint, 0 until a fresh run writes its first
    began: int = 0       # the step this stretch began from: a resumed run's checkpoint's
    earlier_seconds: float = 0.0  # end-to-end seconds of the stretches before this one (None: not recorded)
    stretch_began: float = 0.0    # time.perf_counter() at this stretch's first step
    stall_seen: bool = False  # a generation's step learned nothing (said once, stalled)
    folder: tuple = None  # run_folder.folder_identity of `out` once owned: a folder put at its path is another

    @property
    def leader(self):
        return self.team.rank == 0

    def end_to_end_seconds(self):
        """Seconds from the run's first step until now, as a user waits for them (minibatches,
        validation and checkpoints included), summed over the stretches of a resumed run; None
        where a checkpoint from before this was measured began the stretch."""
        if self.earlier_seconds is None:
            return None
        return self.earlier_seconds + time.perf_counter() - self.stretch_began


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
    run, params = set_up(config, Path(out), team, progress, command, resume, force)
    if team.size == 1 and read_only_finished(run.out, resume):  # nothing to write, nor a lock to take there
        final = run_folder.intact_final(run.out)
        if (final.get("data") or {}).get("fingerprint") == run.identity["data"]:
            say_finished(run, params, final, progress)
            return final
        resources.check_writable(run.out, "--out", folder=True)  # other data: refused as a folder it cannot write
    existed, marked = run.out.exists(), run_folder.is_run_folder(run.out)
    made = run_folder.first_missing(run.out)  # what owned() creates, parents included
    with run_folder.owned(run.out) if run.leader else contextlib.nullcontext():
        run.folder = run_folder.folder_identity(run.out)
        try:
            run.fresh = run.leader and run_folder.prepare(run.out, config, resume, force, command)
            # a finished run's results, this run's (prepare), are kept as they are: nothing to resume
            final = run_folder.intact_final(run.out) if run.leader and resume else None
            if final is not None and (final.get("data") or {}).get("fingerprint") != run.identity["data"]:
                if final.get("data") is None:  # (other data is refused with the checkpoint's)
                    print(f"note: {run.out / 'final.json'} holds no record of the data the run trained on: --resume "
                          f"scores the run again from its checkpoint and writes it anew", file=sys.stderr)
                final = None
            if (team.broadcast(final is not None) if team.size > 1 else final is not None):
                if run.leader:
                    say_finished(run, params, final, progress)
                return final or {}
            if run.leader and command == "train":  # once the folder is found to be this run's, to train
                note_minibatch_size(config, len(run.splits.train))
                note_idle_processes(config, team.size)
            # Start, or continue from the last checkpoint, which the first process reads for all.
            begin = resume_point(run.out, resume, params, run.xp, run.total_steps, run.identity,
                                 config.time_bins, run.eval_every, command) if run.leader else None
            params, state, start, step_seconds, run.earlier_seconds = team.broadcast(begin) if team.size > 1 \
                else begin
            run.saved = run.began = start
            try:
                params, validation = generations(run, params, state, start, step_seconds, progress and run.leader,
                                                 deadline)
                return finish(run, params, validation, step_seconds)
            except KeyboardInterrupt as stop:  # between the steps' own handler and the final evaluation's
                raise Interrupted(f"{run.out} stopped at step {run.saved} of {run.total_steps}; {held_by(run)}",
                                  stop) from None
        except BaseException as error:
            if isinstance(error, (OSError, UsageError)) and not in_place(run):
                raise UsageError(gone(run)) from None
            if run.leader and (run.fresh or not existed) and run.saved == 0 \
                    and not isinstance(error, (KeyboardInterrupt, Interrupted, DeadlineReached, BrokenPipeError)):
                run_folder.discard(run.out, not existed, mark_too=not marked)  # a failed run leaves nothing; a stopped one resumes
                run_folder.remove_made_folders(run.out, made)
            raise


def data_folder(config):
    """The folder a run reads its recordings from, as final.json records it: --data-root (else
    $NMNIST_ROOT or the default), links resolved."""
    return os.path.realpath(data.resolve_root(config.data_root))


def read_only_finished(out, resume):
    """Whether --resume meets a finished run (an intact final.json) in a folder it cannot write, a
    read-only copy or an archive: it writes nothing there, so it says so without taking the lock."""
    return resume and run_folder.is_run_folder(out) and run_folder.intact_final(out) is not None \
        and not os.access(out, os.W_OK)


def say_finished(run, params, final, progress):
    """The note of --resume on a finished run: it trains and writes nothing; and what is wrong with
    the run's other files, each with its fix (finished_problems). Without progress (--quiet, as the
    scripts that resume many runs pass it) only a problem is said."""
    problems = finished_problems(run, params, final)
    if progress or problems:
        print(f"note: {run.out} has finished (its final.json holds the results): --resume trains and writes nothing"
              + "".join(f"; but {problem}" for problem in problems), file=sys.stderr)


def note_idle_processes(config, processes):
    """A note if some processes of a job get no pairs of the population: pairs go out in whole blocks
    of eggroll.PAIRS_PER_BLOCK (distributed.share), so a population of fewer blocks than processes
    leaves some to wait."""
    pairs = config.population // 2
    idle = distributed.idle(pairs, eggroll.PAIRS_PER_BLOCK, processes) if config.method != "bptt" else 0
    if idle:
        gets, waits = ("gets", "waits") if idle == 1 else ("get", "wait")
        print(f"note: the population's {pairs} pairs go out in blocks of {eggroll.PAIRS_PER_BLOCK}, so {idle} of the "
              f"{processes} processes {gets} none and only {waits}; --population "
              f"{2 * eggroll.PAIRS_PER_BLOCK * processes} or more keeps every one at work", file=sys.stderr)


def note_minibatch_size(config, n_train):
    """A note if the minibatch is more than the training split holds: every minibatch is then the
    whole split, or (with --batch-growth) the larger ones score recordings more than once."""
    if config.batch_size > n_train:
        grown = "" if config.batch_growth == 1 else \
            f", and --batch-growth {config.batch_growth} joins up to {config.batch_growth} of them, so the later " \
            f"generations score every recording up to {config.batch_growth} times"
        print(f"note: --batch-size {config.batch_size} is more than the training split's {n_train} recordings: "
              f"every minibatch is the whole split{grown}", file=sys.stderr)
    elif config.batch_size * config.batch_growth > n_train:
        print(f"note: --batch-growth {config.batch_growth} grows the minibatch to "
              f"{config.batch_size * config.batch_growth:,} recordings by the last generation, more than the training "
              f"split's {n_train}: the larger minibatches score recordings more than once", file=sys.stderr)


def finished_problems(run, params, final):
    """What is wrong with the other files of the run whose final.json is `final`, each with its fix:
    metrics.jsonl, which a report reads, and the checkpoint (of parameters like `params`), which
    evaluate scores."""
    problems = []
    damaged = run_folder.finished_metrics_problem(run.out, final)
    if damaged:
        problems.append(f"{damaged} (a report reads its records): restore metrics.jsonl from a copy of the run, or "
                        f"train the run again with another --out")
    try:
        settings = {key: value for key, value in run.identity.items() if key != "summed"}  # none goes on
        stored, _, step, _, _ = run_folder.load_checkpoint(run.out / CHECKPOINT, numpy, params, settings,
                                                           run.total_steps)
        refuse_too_large(run.out / CHECKPOINT, stored, run.config.time_bins)
        stale = run_folder.not_the_finished_run(run.out / CHECKPOINT, step, final)
        if stale:
            problems.append(stale)
    except UsageError as error:
        problems.append(str(error))
    return problems


def set_up(config, out, team, progress, command, resume=False, force=False):
    """Every check before the run folder is touched (settings, memory, the folder's run, data), on
    every process of a job, which then learn what failed where (one process may lack its data):
    (Run, initial params)."""
    if team.size > 1:
        check_agreement(team, settings_of_job(config, out, team))
    with checked_together(team):
        run_config.check(config)
        if team.size > 1 and config.method == "bptt":
            raise UsageError("BPTT runs on one process: drop --distributed (it spreads an ES population)")
        xp = array_module(config.device)
        if xp is not numpy and team.size > 1:
            xp.cuda.Device(team.gpu(xp.cuda.runtime.getDeviceCount())).use()
        recordings = resources.nmnist_recordings(config.data_root, "--data-root", required=False)
        resources.check_run_memory(config, xp, recordings, team.local_size)  # before the weights are made
        params = snn.init_network(config.seed, config.network, std=config.init_std, xp=xp, rule=config.init_rule)
        if config.method in run_config.ES_METHODS:
            refuse_unresolved(config, params)
        refuse_unmoved(config, params)
        if config.method == "eggroll":
            snn_eggroll.check_config(config.eggroll(), params, config.network)
        if team.rank == 0:
            resources.refuse_project_folders(out, "--out", "use another --out", results=False)
            if not run_folder.is_run_folder(out):
                run_folder.refuse_shared_folder(out)
                resources.refuse_data_folder(out, "use another --out")
            if not (team.size == 1 and read_only_finished(out, resume)):
                resources.check_writable(out, "--out", folder=True)
            if not run_folder.is_run_folder(out) and data.holds_frame_caches(out):  # a run folder holds its own
                raise UsageError(f"{out} holds frame caches of this project (nmnist-*.npz files), which commands read "
                                 f"as a frame cache, not as a run folder; use another --out")
            cache = Path(os.path.realpath(data.frame_cache_dir(config.cache_dir)))
            if cache.is_relative_to(os.path.realpath(out)):  # a run folder holds its run's files only
                raise UsageError(f"the frame cache's folder (--cache-dir or $EGGROLL_CACHE) {cache} lies in the run's "
                                 f"own folder {out}, which every later command would refuse as a run folder's; point "
                                 f"it at a folder of its own")
            if Path(os.path.realpath(out)).is_relative_to(cache):  # the cache would then hold a run folder
                raise UsageError(f"{out} lies inside the frame cache's folder (--cache-dir or $EGGROLL_CACHE) {cache}, "
                                 f"which every later command would refuse as a folder of run folders; use another "
                                 f"--out")
            if run_folder.is_run_folder(out):  # a run of other settings there: refused before the data is read
                run_folder.check_prepared(out, config, resume, force, command, notes=False,
                                          data_root=data_folder(config))
        splits = load_splits(config.data_root, config.time_bins, config.cache_dir, config.download,
                             progress and team.rank == 0)
        if not len(splits.train):
            raise UsageError("the training split is empty: check --data-root")
        lif = config.lif()
        total_steps, per_epoch, eval_every = training_schedule(config, len(splits.train))
        step = method_step(config, lif, team, total_steps)
        identity = run_folder.identity(config, splits.fingerprint(), run_folder.summed_by(config, team))
        emulated = emulate.provenance(config.data_root)
        data_record = {"fingerprint": identity["data"], "root": data_folder(config),
                       **({"emulated": emulated} if emulated else {})}
        splits = splits.on(xp)  # minibatches are then gathered and unpacked on the device
    if team.size > 1:
        splits_held = {f"the {split} split": fingerprint for split, fingerprint in identity["data"].items()}
        check_agreement(team, {"--device": "cpu" if xp is numpy else "gpu", **splits_held})
    return Run(config, out, team, xp, splits, lif, step, total_steps, per_epoch, eval_every, identity,
               command, data_record), params


def generations(run, params, state, start, step_seconds, show, deadline):
    """The run's updates from step `start` to the end, evaluated and checkpointed every eval_every
    steps and at the last: (params, the last validation)."""
    validation = None  # the last step is always evaluated, so after the loop this is the final one
    generation = start
    run.stretch_began = time.perf_counter()
    with progress_bar(run.total_steps, start, run.config.name, show) as bar, \
            contextlib.closing(minibatches(run, start)) as upcoming:
        try:
            for generation in range(start, run.total_steps):
                run.team.stop_if_signalled()  # a job's processes stop together, none left waiting
                if deadline is not None and time.monotonic() >= deadline:
                    if generation > run.saved:
                        save(run, params, state, generation, step_seconds)
                    raise DeadlineReached(f"{run.out} stopped by --deadline at step {generation} of "
                                          f"{run.total_steps}; the next reproduce resumes it")
                frames, labels = next(upcoming)
                began = time.perf_counter()
                params, state, stats = update(run, params, state, frames, labels, generation, step_seconds)
                step_seconds.append(time.perf_counter() - began)
                bar.update(1)
                done = generation + 1
                if done % run.eval_every == 0 or done == run.total_steps:
                    validation = evaluate_and_save(run, params, state, done, stats, step_seconds)
                    bar.set_postfix(val_acc=f"{validation[0]:.3f}")
        except KeyboardInterrupt as stop:
            stopped = max(generation, checkpoint_step(run) or 0)  # (a signal after the step's checkpoint)
            raise Interrupted(f"{run.out} stopped at step {stopped} of {run.total_steps}; {held_by(run)}",
                              stop) from None
    return params, validation


def checkpoint_step(run):
    """The step the checkpoint in run.out holds, as written (a signal may land after its write and
    before run.saved is set), or None where there is none to read."""
    try:  # through the project's reader: a regular file only (a FIFO there would hang), arrays of bounded size
        stored = run_folder.load_npz(run.out / CHECKPOINT, run_folder.MAX_CHECKPOINT_ARRAY_BYTES)
    except UsageError:  # none there, or no regular file
        return None
    return int(stored["step"]) if stored is not None and "step" in stored else None


def held_by(run):
    """What a run stopped by a signal keeps, in words: "its checkpoint holds step N" or "before its
    first checkpoint"."""
    step = checkpoint_step(run)
    return "before its first checkpoint" if step is None else f"its checkpoint holds step {step}"


def minibatches(run, start):
    """The run's minibatches (data.minibatch) for steps `start` to the last, in order, each complete
    before its step's clock starts. On the CPU one worker thread makes the next minibatch while a
    step runs (NumPy lets go of the interpreter while it gathers, unpacks and converts), so with a
    core to spare it costs no end-to-end time; on a GPU its kernels are queued, then waited for."""
    def make(step):
        return data.minibatch(run.splits.train, run.config.batch_size, run.xp, run.config.seed,
                              *run.config.minibatches(step, run.total_steps), max_shift=run.config.max_shift)

    if run.xp is not numpy:
        for step in range(start, run.total_steps):
            batch = make(step)
            run.xp.cuda.Stream.null.synchronize()
            yield batch
        return
    if start >= run.total_steps:
        return
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as worker:
        upcoming = worker.submit(make, start)
        for step in range(start, run.total_steps):
            batch = upcoming.result()
            if step + 1 < run.total_steps:
                upcoming = worker.submit(make, step + 1)
            yield batch


NOT_FINITE = "NaN or inf"  # in the ValueError of a step that went non-finite (eggroll.centred_ranks, bptt_step)


def update(run, params, state, frames, labels, generation, step_seconds):
    """The method's step on the generation-th minibatch with this step's learning rate: (params,
    state, stats). A non-finite fitness, loss or parameter: the step before is checkpointed, and
    a JobError says what is kept."""
    try:
        new_params, new_state, stats = run.step(params, state, frames, labels, generation,
                                                run.config.adam(generation, run.total_steps))
        if not all(bool(run.xp.isfinite(value).all()) for value in new_params.values()):
            raise ValueError(f"a parameter became {NOT_FINITE}")
    except interface_checks.Unresolved as error:  # weights grew, or sigma fell, past what float32 tells apart
        if generation > run.saved:
            save(run, params, state, generation, step_seconds)
        loaded = f", the first from the checkpoint of step {generation}," if generation == run.began > 0 else ""
        raise JobError(f"at step {generation + 1}{loaded} {unresolved(run.config, error)}; "
                       f"{diverged(run, 'raise --sigma (and --sigma-min), lower --lr or --init-std')}") from None
    except ValueError as error:
        if NOT_FINITE not in str(error):  # another fault (a shape, a setting) is not a divergence
            raise
        if generation > run.saved:
            save(run, params, state, generation, step_seconds)
        raise JobError(f"training went non-finite at step {generation + 1} ({error}); {diverged(run)}") from None
    if run.xp is not numpy:
        run.xp.cuda.Stream.null.synchronize()
    why = run.leader and not run.stall_seen and stalled(stats)
    if why:
        run.stall_seen = True
        from tqdm import tqdm
        tqdm.write(f"warning: {run.out}: at step {generation + 1} {why}", file=sys.stderr)
    return new_params, new_state, stats


def stalled(stats):
    """Why a generation's step learned nothing, as the end of a warning, or None. ES: its members all
    scored alike on the whole minibatch, so the ranks tie and the step is zero; at -ln(outputs), the
    fitness of a network whose outputs never fire (or fire alike), else at a sigma that changes no
    output. BPTT (stats hold its loss): a loss of ln(outputs), the same silence."""
    chance = math.log(snn.SIZES[-1])
    silent = "output neurons were silent (or all fired alike) on the whole minibatch, so the step learned {}; lower " \
             "--threshold or raise --init-std if it goes on"
    if "loss" in stats:
        return "the network's " + silent.format("only what the surrogate passes") \
            if abs(stats["loss"] - chance) < 1e-6 else None
    if stats.get("shaped_std") != 0:
        return None
    if abs(stats["max_fitness"] + chance) < 1e-6:
        return "every member's " + silent.format("nothing")
    return ("every member scored alike on the whole minibatch: sigma moved no output spike (or potential) of any "
            "member, so the step learned nothing; raise --sigma (and --sigma-min under a schedule) if it goes on")


def unresolved(config, error):
    """The middle of the line for an Unresolved step (interface_checks.check_resolved), in the
    command's options."""
    layer = snn.layer_of(error.name)
    falling = f" (--sigma-schedule {config.sigma_schedule} lowered it)" * (config.sigma_schedule != "constant")
    return (f"the weights of layer {layer} ({error.name}) reach {error.largest:.3g}, where float32 resolves only steps "
            f"of {error.spacing:.3g}, more than their sigma {error.sigma:.3g}{falling}: every member would equal the "
            f"mean but for rounding, so the run cannot go on")


def in_place(run):
    """Whether run.out is still the folder the run owned when it began (not moved, deleted, or
    replaced by another folder or a link)."""
    return not run.leader or run_folder.folder_identity(run.out) == run.folder


def gone(run):
    """The line for a run folder no longer in place, with where to continue it."""
    saved = f"its last checkpoint holds step {run.saved}" if run.saved else "it held no checkpoint yet"
    return (f"the run folder {run.out} disappeared while training (moved, deleted or replaced); nothing more is "
            f"written there; if it was moved, continue it where it is now with --resume ({saved})")


def check_in_place(run):
    """A UsageError before a write into run.out if the folder is no longer the run's own."""
    if not in_place(run):
        raise UsageError(gone(run))


def evaluate_and_save(run, params, state, done, stats, step_seconds):
    """Validation after `done` steps, its metrics record and a checkpoint; the validation."""
    validation = val_acc, spikes, _, _ = evaluate(params, run.splits.val, run.lif, run.xp, run.team,
                                                network=run.config.network)
    if run.leader:
        first, count = run.config.minibatches(done - 1, run.total_steps)  # --batch-growth: more than one a step
        record = {"generation": done, "epoch": (first + count) / run.per_epoch, "wall_seconds": sum(step_seconds),
                  **timed(run), "device": device_name(run.xp), "val_acc": val_acc, "spikes_per_sample": spikes,
                  **stats}
        check_in_place(run)
        run_folder.append_line(run.out / "metrics.jsonl", json.dumps(record))
    try:
        save(run, params, state, done, step_seconds)
    except run_folder.NotFinite as error:
        raise run_folder.NotFinite(f"{error}; {diverged(run)}") from None
    return validation


def save(run, params, state, step, step_seconds):
    """Checkpoint the run at `step` (the first process writes it; every process notes it)."""
    if run.leader:
        check_in_place(run)
        kept = f"{run_folder.resume_command(run.out, run.config)} continues from the checkpoint of step " \
               f"{run.saved}, which is intact" if run.saved else None
        run_folder.save_checkpoint(run.out, params, state, step, step_seconds, run.identity,
                                   run.end_to_end_seconds(), kept)
    run.saved = step


def timed(run):
    """{"end_to_end_seconds": the run's end-to-end time so far}, or {} where it is not known."""
    seconds = run.end_to_end_seconds()
    return {} if seconds is None else {"end_to_end_seconds": seconds}


def finish(run, params, validation, step_seconds):
    """The end: validation and test accuracy, timings and versions in final.json (its contents; {}
    on the other processes of a job). total_seconds sums the update steps alone; end_to_end_seconds
    runs from the first step to the last checkpoint."""
    waited = timed(run)
    try:
        val_acc, spikes, val_per_digit, _ = validation or evaluate(params, run.splits.val, run.lif, run.xp, run.team,
                                                                   network=run.config.network)
        test_acc, _, test_per_digit, test_sparsity = evaluate(params, run.splits.test, run.lif, run.xp, run.team,
                                                              network=run.config.network)
    except KeyboardInterrupt as stop:
        raise Interrupted(f"{run.out} stopped in its final evaluation; its checkpoint holds step {run.saved} of "
                          f"{run.total_steps}", stop) from None
    if not run.leader:
        return {}
    splits, xp = run.splits, run.xp
    final = {"test_acc": test_acc, "val_acc": val_acc, "spikes_per_sample": spikes,
             "test_acc_per_digit": test_per_digit, "val_acc_per_digit": val_per_digit,
             "median_seconds_per_generation": statistics.median(step_seconds),
             "total_seconds": sum(step_seconds), **waited, "generations": run.total_steps,
             "n_train": len(splits.train), "n_val": len(splits.val), "n_test": len(splits.test),
             "test_sparsity": test_sparsity, "config": run_config.stored(run.config),
             "data": run.data,
             "versions": package_versions(), "device": device_name(xp), "processes": run.team.size,
             "update": run.team.update}  # how the processes shared it (distributed.py): allreduce sums in another order
    # a full disk, say, after the last checkpoint: the run has finished, and --resume scores it again
    check_in_place(run)
    run_folder.write_atomically(run.out / "final.json", json.dumps(final, indent=1),
                                then=f"{run_folder.resume_command(run.out, run.config)} scores the finished run "
                                     f"again and writes it")
    return final


def diverged(run, change="lower --lr or --sigma"):
    """What is kept of a run that cannot go on (non-finite, say), and the advice that works for its
    command: `change` settings and train again."""
    if run.saved:
        kept = f"{run.out / CHECKPOINT} holds the run until step {run.saved}"
        again = f"{change} and train again in another --out (this run is left as it is)"
    else:
        kept = "nothing of the run was kept" if run.fresh else "there is no checkpoint"
        again = f"{change} and train again" + ("" if run.fresh else " (--force replaces this run, which "
                                                                    "has no checkpoint)")
    if run.command == "reproduce":
        again = "the preset's settings diverge on this copy of N-MNIST"
    return f"{kept}: {again}"


def progress_bar(total, initial, description, enabled):
    from tqdm import tqdm
    return tqdm(total=total, initial=initial, desc=description, disable=not enabled, dynamic_ncols=True)


def load_splits(data_root, time_bins, cache_dir=None, download=False, progress=False):
    """The N-MNIST copy at data_root as data.Splits, once it is the data it claims to be: an
    emulation is read only if it finished, with the recordings it counted (emulate.check_finished).
    Training and scoring read their data through it alike."""
    emulate.check_finished(data_root)
    resources.check_frame_cache(cache_dir)
    return data.load_nmnist(data_root, time_bins, cache_dir, download, progress)


def evaluate_run(run_dir, data_root=None, cache_dir=None, device="cpu", option="--data-root", command="train"):
    """Accuracy of a trained run's weights on every split of the N-MNIST copy at data_root
    (e.g. the real recordings, for a model trained on emulated ones), frames made as in training;
    `option` names data_root in a message, `command` ("reproduce" for its runs) the fix of a damaged
    checkpoint."""
    run_dir = Path(run_dir)
    if os.path.lexists(run_dir) and not run_dir.is_dir():
        raise UsageError(f"{run_dir} is not a folder, so it holds no trained run; give the --out folder of a "
                         f"training run")
    for name in ("config.json", CHECKPOINT):
        run_folder.refuse_link(run_dir / name)
    if not (run_dir / "config.json").exists():
        resources.refuse_data_folder(run_dir, lambda copy: f"give evaluate a run's folder (train's --out), and "
                                                           f"{'this one' if copy == run_dir else copy} with {option}")
        metrics = run_dir / "metrics.jsonl"
        if any((run_dir / name).exists() for name in (CHECKPOINT, "final.json")) or \
                metrics.is_file() and metrics.stat().st_size > 0:  # `train --out` there is refused: a run is there
            raise UsageError(f"{run_dir} holds a run without its config.json, so its settings (the network that "
                             f"reads {CHECKPOINT}) are unknown; {run_folder.config_fix(run_dir)}")
        resources.refuse_project_folders(run_dir, "evaluate", "give evaluate a run's folder (train's --out), e.g. "
                                                              "<results>/<preset>/runs/<run>", results=False)
        fix = "give evaluate the --out folder of a training run" if str(run_dir) == "-" or \
            run_folder.kernel_fix(run_dir) else \
            f"train one with `run.py train --out {run_dir}`"
        raise UsageError(f"{run_dir} holds no trained run (config.json and {CHECKPOINT}); {fix}")
    run_folder.refuse_odd_mark(run_dir, "give evaluate the --out folder of a training run")
    if not run_folder.is_run_folder(run_dir):  # a user's config.json, say: not to be called a damaged run's
        raise UsageError(f"{run_dir} is not a run folder of this project (it has no {run_folder.RUN_MARK}) and holds "
                         f"config.json; give evaluate the --out folder of a training run; or, if it is a run of this "
                         f"project that lost its {run_folder.RUN_MARK}, put a file of that name back in it (any text)")
    config = run_folder.read_config(run_dir)
    if not (run_dir / CHECKPOINT).exists():  # `train --out` there is refused: a run is there
        metrics = run_dir / "metrics.jsonl"
        trained = (run_dir / "final.json").exists() or metrics.is_file() and metrics.stat().st_size > 0
        fix = "put it back (a committed run keeps none), or train the run again with its settings (its config.json) " \
              "in another --out and evaluate that folder" if trained else \
            f"continue it with {run_folder.resume_command(run_dir, config)}, then evaluate it"
        raise UsageError(f"{run_dir} holds a run but not its {CHECKPOINT}, so no weights to score; {fix}")
    xp = array_module(device)
    like = snn.init_network(config.seed, config.network, std=config.init_std, xp=xp, rule=config.init_rule)
    params, _, step, _, _ = run_folder.load_checkpoint(run_dir / CHECKPOINT, xp, like, run_folder.identity(config),
                                                       command=command)
    run_folder.check_finished_checkpoint(run_dir, config, step, command)  # the weights its final.json records
    emulate.check_finished(data_root)  # an emulation of one split says how to add the other
    resources.nmnist_recordings(data_root, option)  # scoring downloads nothing: a copy is needed
    refuse_too_large(run_dir / CHECKPOINT, params, config.time_bins, command)  # before the data is read
    splits = load_splits(data_root, config.time_bins, cache_dir)
    scores = {name: evaluate(params, getattr(splits, name), config.lif(), xp, network=config.network)
              for name in ("train", "val", "test")}
    accuracies = {name: score[0] for name, score in scores.items()}
    sizes = {name: len(getattr(splits, name)) for name in accuracies}
    accuracies["all"] = sum(accuracies[n] * sizes[n] for n in sizes) / max(sum(sizes.values()), 1)
    return {"run": str(run_dir), "generation": step, "config": run_config.stored(config), "accuracy": accuracies,
            "samples": sizes, "accuracy_per_digit": {name: score[2] for name, score in scores.items()},
            "data": splits.fingerprint()}


def unfinished_warning(run_dir, scored):
    """The line that says the run `scored` (evaluate_run's record) is not finished, or None: scores of
    a checkpoint partway, or of one a training run still writes."""
    run_dir = Path(run_dir)
    if (run_dir / "final.json").exists():
        if run_folder.intact_final(run_dir) is not None:
            return None
        return (f"warning: {run_dir / 'final.json'} is damaged, so whether these are the finished run's weights is "
                f"unknown: its checkpoint holds step {scored['generation']}; {run_folder.first_move_final(run_dir)}"
                f"{run_folder.resume_command(run_dir, run_folder.read_config(run_dir))} scores it again and "
                f"rewrites final.json")
    running = run_folder.holder(run_dir)
    state = f"is being trained now (by process {running})" if running is not None else "has not finished"
    fix = "score it again once it finishes" if running is not None else \
        f"{run_folder.resume_command(run_dir, run_folder.read_config(run_dir))} finishes it"
    return (f"warning: {run_dir} {state}: these are the scores of its checkpoint after {scored['generation']} "
            f"updates; {fix}")


def check_real_root(root, data_root):
    """A UsageError if --real-root `root` holds emulated N-MNIST, or is --data-root's copy, the runs'
    own data: its scores are reported as those of other, real recordings."""
    copy = lambda given: os.path.realpath(data.split_base(data.resolve_root(given)) or data.resolve_root(given))
    if copy(root) == copy(data_root):  # (root or root/NMNIST, as tonic lays it out: one copy)
        raise UsageError(f"--real-root {root} is the copy --data-root names, the runs' own data, and its scores "
                         f"would be reported as other recordings'; give another copy of N-MNIST, or drop --real-root")
    if emulate.provenance(root) is not None:
        raise UsageError(f"--real-root {root} holds emulated N-MNIST (its EMULATED.json says so), and its scores "
                         f"would be reported as real recordings'; give recorded N-MNIST (nmnist-sample/, a download), "
                         f"or score a run on an emulation with `run.py evaluate RUN --data-root {root}`")


def trained_on(run_dir):
    """The fingerprint of the data the run in run_dir trained and was tested on, split by split, as
    its final.json records it; {} for a run not finished, or from before runs recorded it."""
    if not (Path(run_dir) / "final.json").exists():
        return {}
    return (run_folder.read_json(Path(run_dir) / "final.json", "").get("data") or {}).get("fingerprint") or {}


def check_other_recordings(own, real, root, whose):
    """A UsageError if the recordings at --real-root `root`, of fingerprint `real` (split: its
    fingerprint), share a split with `own`, the fingerprint of `whose` (the data a run trained and was
    tested on), whatever the copy's path: their scores would be reported as other recordings'."""
    if set(own.values()) & set(real.values()):
        raise UsageError(f"--real-root {root} holds recordings of {whose} (a split's fingerprint is the same), and "
                         f"their scores would be reported as other recordings'; give another copy of N-MNIST, or drop "
                         f"--real-root")


def shared_recordings(own, real):
    """How many of the recordings of `real` (an NMNIST's splits) have the frames of one of `own`'s: a
    copy of the same recordings shares them all, even with some removed; recorded and emulated ones
    never repeat. Recordings without an event repeat by nature and are left out."""
    seen = {hashlib.sha256(row).digest() for split in (own.train, own.val, own.test) for row in split.packed
            if row.any()}
    return sum(hashlib.sha256(row).digest() in seen for split in (real.train, real.val, real.test)
               for row in split.packed)  # (an empty row's hash is not in seen)


def scored_on(run_dir, data_root, cache_dir=None):
    """Whether run_dir's real.json scored its run (run_folder.scores_this_run) on the recordings at
    data_root as they are now (the fingerprint of their frames and labels, split by split, not the
    folder's name)."""
    real_path = Path(run_dir) / "real.json"
    if not real_path.exists():
        return False
    try:
        real = run_folder.read_json(real_path, "")
    except UsageError:  # not JSON: no score of any recordings
        return False
    if run_folder.real_problem(real):
        return False
    try:
        final = run_folder.read_json(Path(run_dir) / "final.json", "")
    except UsageError:  # none yet, or damaged: what real.json scored cannot be this run's finished weights
        return False
    if run_folder.final_problem(final) or not run_folder.scores_this_run(real, Path(run_dir), final):
        return False  # another run's score, copied here: scored again
    return real.get("data") == load_splits(data_root, run_folder.read_config(run_dir).time_bins, cache_dir).fingerprint()


if __name__ == "__main__":  # training is a command of run.py's
    sys.exit(exits.runs_as("training.py", "the training loop", "train"))
