"""Command line of eggroll-snn: train one run, reproduce the paper's tables and figures, benchmark.

    python run.py train --method eggroll --rank 4 --generations 100 --out runs/eggroll-r4
    python run.py reproduce --config quick          # or paper, best
    python run.py bench --json bench.json

Every error a user can cause (bad option, missing data, a foreign checkpoint) ends the program
with one line on stderr and exit status 2, and overwrites nothing.
"""
import argparse
import json
import math
import os
import statistics
import sys
import time
import zipfile
from dataclasses import replace
from pathlib import Path

import numpy

import baselines
import data
import eggroll
import snn
from backend import array_module, device_name, to_numpy

METHODS = ("eggroll", "es", "bptt")
CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 1


class UsageError(Exception):
    """A problem with the user's request; printed as one line, exit status 2."""


# ---------------------------------------------------------------------------------------------
# train

TRAIN_DEFAULTS = dict(method="eggroll", rank=4, es_mode="batched", seed=1, generations=100,
                      population=512, batch_size=256, sigma=0.1, lr=0.01, lr_schedule="constant", logit_scale=1.0,
                      weight_decay=0.0, init_std=snn.INIT_STD, beta=0.9, threshold=1.0, time_bins=10, slope=baselines.SLOPE,
                      max_shift=0, eval_every=10, device="cpu", data_root=None, cache_dir=None, download=False,
                      out="runs/latest")
LR_SCHEDULES = ("constant", "cosine")
RUN_KEYS = ("method", "rank", "es_mode", "seed", "generations", "population", "batch_size", "sigma", "lr",
            "lr_schedule", "logit_scale", "weight_decay", "init_std", "beta", "threshold", "time_bins", "slope",
            "max_shift", "eval_every")


def add_train_options(parser):
    """The options of one training run, each with its default in --help."""
    d = TRAIN_DEFAULTS
    add = parser.add_argument
    add("--method", choices=METHODS, default=d["method"],
        help="eggroll (low-rank ES), es (vanilla full-rank OpenAI-ES) or bptt (surrogate gradients)")
    add("--rank", type=int, default=d["rank"], help="EGGROLL rank r of each perturbation A B^T")
    add("--es-mode", choices=baselines.ES_MODES, default=d["es_mode"],
        help="how vanilla ES evaluates its population: all members at once, or one at a time")
    add("--seed", type=int, default=d["seed"], help="seed of the initial weights, the noise and the minibatches")
    add("--generations", type=int, default=d["generations"],
        help="ES generations (one minibatch each); for bptt: epochs over the training split")
    add("--population", type=int, default=d["population"], help="ES population 2P (P antithetic pairs)")
    add("--batch-size", type=int, default=d["batch_size"], help="samples per minibatch")
    add("--sigma", type=float, default=d["sigma"], help="ES noise scale sigma")
    add("--lr", type=float, default=d["lr"], help="Adam learning rate")
    add("--lr-schedule", choices=LR_SCHEDULES, default=d["lr_schedule"],
        help="constant, or cosine: lr * (1 + cos(pi * step / steps)) / 2, decaying to 0 at the end")
    add("--logit-scale", type=float, default=d["logit_scale"],
        help="softmax(logit_scale * output rate); 1 is the paper's readout")
    add("--weight-decay", type=float, default=d["weight_decay"], help="decoupled (AdamW) weight decay")
    add("--init-std", type=float, default=d["init_std"], help="W, b ~ N(0, init_std^2) at the start")
    add("--beta", type=float, default=d["beta"], help="LIF membrane decay beta")
    add("--threshold", type=float, default=d["threshold"], help="LIF firing threshold V_th")
    add("--time-bins", type=int, default=d["time_bins"], help="T, frames per recording")
    add("--slope", type=float, default=d["slope"], help="bptt: fast-sigmoid surrogate slope k")
    add("--max-shift", type=int, default=d["max_shift"],
        help="augmentation: move each training sample by a random (dy, dx), each in -N..N pixels")
    add("--eval-every", type=int, default=d["eval_every"],
        help="generations between validation passes and checkpoints (bptt: every epoch)")
    add("--device", choices=("cpu", "gpu", "auto"), default=d["device"],
        help="cpu (NumPy), gpu (CuPy) or auto (a GPU when one is usable)")
    add("--data-root", default=d["data_root"],
        help="folder holding N-MNIST (default: $NMNIST_ROOT, else ~/.cache/eggroll-snn/nmnist)")
    add("--cache-dir", default=d["cache_dir"],
        help="folder for the frame cache (default: $EGGROLL_CACHE, else ~/.cache/eggroll-snn/frames)")
    add("--download", action="store_true", help="let tonic download N-MNIST (about 1.4 GB extracted) if it is absent")


def check_run_options(opts):
    """UsageError for option values no method can run with (ES settings: eggroll.check_config)."""
    if opts.generations < 1 or opts.batch_size < 1 or opts.eval_every < 1 or opts.time_bins < 1:
        raise UsageError("--generations, --batch-size, --eval-every and --time-bins must be >= 1")
    if not 0 <= opts.max_shift < data.SENSOR_SIZE[0]:
        raise UsageError(f"--max-shift must lie in 0..{data.SENSOR_SIZE[0] - 1} pixels, got {opts.max_shift}")
    if opts.lr <= 0:
        raise UsageError(f"--lr must be > 0, got {opts.lr}")
    if not 0 <= opts.seed < 2 ** 63:
        raise UsageError(f"--seed must lie in 0..2^63-1, got {opts.seed}")


def run_config(opts):
    """What defines a run's result: the options that a resumed run must share."""
    return {key: getattr(opts, key) for key in RUN_KEYS}


def stored_config(path):
    """A run's config.json; settings it lacks (added to RUN_KEYS after it ran) take their default."""
    return {**{key: TRAIN_DEFAULTS[key] for key in RUN_KEYS}, **json.loads(path.read_text())}


def es_config(opts):
    return eggroll.Config(population=opts.population, rank=opts.rank, sigma=opts.sigma, lr=opts.lr,
                          seed=opts.seed, logit_scale=opts.logit_scale, weight_decay=opts.weight_decay)


def learning_rate(opts, step, total_steps):
    """The learning rate of update `step` (0-based) of `total_steps`."""
    if opts.lr_schedule == "cosine":
        return opts.lr * (1 + math.cos(math.pi * step / total_steps)) / 2
    return opts.lr


def training_schedule(opts, n_train):
    """(total update steps, steps per epoch, steps between evaluations) of a run."""
    per_epoch = max(n_train // opts.batch_size, 1)
    if opts.method == "bptt":
        return opts.generations * per_epoch, per_epoch, per_epoch
    return opts.generations, per_epoch, opts.eval_every


def evaluate(params, split, lif, xp, batch_size=1000):
    """Accuracy, spikes per sample (hidden + output) and accuracy per digit 0-9 (None for a digit
    the split lacks) of the unperturbed network on a split."""
    n_digits = snn.SIZES[-1]
    right, spikes = numpy.zeros(n_digits, int), 0.0
    for frames, labels in data.batches(split, batch_size, xp, shuffle=False):
        counts, hidden = snn.forward(params, frames, lif, count_hidden=True)
        right += snn.correct_per_class(counts[0], labels)
        spikes += float(hidden.sum()) + float(counts.sum())
    seen = numpy.bincount(split.labels, minlength=n_digits)
    per_digit = [int(r) / int(n) if n else None for r, n in zip(right, seen)]
    return int(right.sum()) / max(len(split), 1), spikes / max(len(split), 1), per_digit


# --- output folder and checkpoints ---

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


RUN_FILES = (CHECKPOINT, CHECKPOINT + ".tmp", "metrics.jsonl", "final.json", "final.json.tmp",
             "config.json", "real.json")


def prepare_output(out, config, resume, force):
    """Make `out` ready; refuse to touch a folder that holds another run unless told to."""
    config_path = out / "config.json"
    holds_run = any((out / name).exists() for name in ("config.json", CHECKPOINT, "final.json"))
    if holds_run and not force:
        stored = stored_config(config_path) if config_path.exists() else None
        if not resume:
            raise UsageError(f"{out} already holds a run; continue it with --resume, "
                             f"or start over with --force (deletes it)")
        if stored != config:
            differing = sorted(k for k in set(config) | set(stored or {})
                               if (stored or {}).get(k) != config.get(k))
            raise UsageError(f"{out} holds a run with other settings ({', '.join(differing)}); "
                             f"use another --out, or --force to replace it")
        if not (out / CHECKPOINT).exists() and (out / "final.json").exists():
            raise UsageError(f"{out} holds a finished run but no {CHECKPOINT} to resume from; "
                             f"use --force to train it again")
    if force:
        for name in RUN_FILES:
            (out / name).unlink(missing_ok=True)
    out.mkdir(parents=True, exist_ok=True)
    config_path.write_text(json.dumps(config, indent=1))


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


def package_versions():
    versions = {"python": sys.version.split()[0], "numpy": numpy.__version__}
    for name in ("tonic", "cupy"):
        module = sys.modules.get(name)
        if module is not None:
            versions[name] = module.__version__
    return versions


def train(opts, progress=True):
    """One training run as `opts` describe it; returns the contents of final.json."""
    check_run_options(opts)
    xp = array_module(opts.device)
    params = snn.init_params(opts.seed, std=opts.init_std, xp=xp)
    es_base = es_config(opts)
    if opts.method != "bptt":
        eggroll.check_config(es_base, params, lowrank=opts.method == "eggroll")
    out = Path(opts.out)
    config = run_config(opts)
    splits = data.load_nmnist(opts.data_root, opts.time_bins, opts.cache_dir, opts.download, progress)
    if not len(splits.train):
        raise UsageError("the training split is empty: check --data-root")
    prepare_output(out, config, opts.resume, opts.force)
    lif = snn.LIF(opts.beta, opts.threshold)
    total_steps, per_epoch, eval_every = training_schedule(opts, len(splits.train))

    start, step_seconds = 0, []
    state = eggroll.adam_init(params)
    if opts.resume and (out / CHECKPOINT).exists():
        params, state, start, step_seconds = load_checkpoint(out / CHECKPOINT, xp)
    metrics_path = out / "metrics.jsonl"
    write_atomically(metrics_path, "".join(json.dumps(r) + "\n" for r in metrics_until(metrics_path, start)))

    def step(params, state, frames, labels, generation):
        es = replace(es_base, lr=learning_rate(opts, generation, total_steps))
        if opts.method == "eggroll":
            return eggroll.generation_step(params, state, frames, labels, generation, es, lif)
        if opts.method == "es":
            return baselines.es_generation_step(params, state, frames, labels, generation, es, lif, opts.es_mode)
        return baselines.bptt_step(params, state, frames, labels, es, lif, opts.slope)

    bar = progress_bar(total_steps, start, f"{opts.method}{'-r%d' % opts.rank if opts.method == 'eggroll' else ''}",
                       progress)
    stats = {}
    for generation in range(start, total_steps):
        frames, labels = data.minibatch(splits.train, opts.batch_size, xp, opts.seed, generation, opts.max_shift)
        began = time.perf_counter()
        params, state, stats = step(params, state, frames, labels, generation)
        if xp is not numpy:
            xp.cuda.Stream.null.synchronize()
        step_seconds.append(time.perf_counter() - began)
        done = generation + 1
        bar.update(1)
        if done % eval_every == 0 or done == total_steps:
            val_acc, spikes, _ = evaluate(params, splits.val, lif, xp)
            record = {"generation": done, "epoch": done / per_epoch, "wall_seconds": sum(step_seconds),
                      "val_acc": val_acc, "spikes_per_sample": spikes, **stats}
            with open(metrics_path, "a") as file:
                file.write(json.dumps(record) + "\n")
            bar.set_postfix(val_acc=f"{val_acc:.3f}")
            save_checkpoint(out, params, state, done, step_seconds)
    bar.close()

    val_acc, spikes, val_per_digit = evaluate(params, splits.val, lif, xp)
    test_acc, _, test_per_digit = evaluate(params, splits.test, lif, xp)
    final = {"test_acc": test_acc, "val_acc": val_acc, "spikes_per_sample": spikes,
             "test_acc_per_digit": test_per_digit, "val_acc_per_digit": val_per_digit,
             "median_seconds_per_generation": statistics.median(step_seconds),
             "total_seconds": sum(step_seconds), "generations": total_steps,
             "n_train": len(splits.train), "n_val": len(splits.val), "n_test": len(splits.test),
             "config": config, "versions": package_versions(), "device": device_name(xp)}
    write_atomically(out / "final.json", json.dumps(final, indent=1))
    return final


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
    config = stored_config(run_dir / "config.json")
    xp = array_module(device)
    params, _, step, _ = load_checkpoint(run_dir / CHECKPOINT, xp)
    splits = data.load_nmnist(data_root, config["time_bins"], cache_dir, progress=False)
    lif = snn.LIF(config["beta"], config["threshold"])
    scores = {name: evaluate(params, getattr(splits, name), lif, xp) for name in ("train", "val", "test")}
    accuracies = {name: score[0] for name, score in scores.items()}
    sizes = {name: len(getattr(splits, name)) for name in accuracies}
    accuracies["all"] = sum(accuracies[n] * sizes[n] for n in sizes) / max(sum(sizes.values()), 1)
    return {"run": str(run_dir), "generation": step, "accuracy": accuracies, "samples": sizes,
            "accuracy_per_digit": {name: score[2] for name, score in scores.items()}}


# ---------------------------------------------------------------------------------------------
# reproduce: the paper's protocol, Table 1, Table 2 and figures

RANKS = (1, 2, 4, 8)
SEEDS = (1, 2, 3)
PRESETS = {
    # The paper's protocol: 100 generations of each ES at the reference size, with the paper's
    # softmax-of-rates readout. BPTT: 5 epochs; slope 1 and logit scale 10 (see README, Accuracy).
    "paper": {"common": dict(generations=100, population=512, batch_size=256, eval_every=10),
              "bptt": dict(generations=5, lr=2e-3, lr_schedule="cosine", logit_scale=10.0, slope=1.0)},
    # The recipe of README's Accuracy section. Each EGGROLL rank gets the generations that took
    # 20-30 minutes on 2 CPU cores; vanilla ES keeps sigma 0.1, which suits it better.
    "best": {"common": dict(population=512, batch_size=256, eval_every=100, lr=0.03, lr_schedule="cosine",
                            logit_scale=5.0),
             "eggroll": dict(sigma=0.2),
             "eggroll-r1": dict(generations=6000), "eggroll-r2": dict(generations=5000),
             "eggroll-r4": dict(generations=4000), "eggroll-r8": dict(generations=3000),
             "es": dict(generations=800, sigma=0.1),
             "bptt": dict(generations=60, lr=2e-2, lr_schedule="cosine", logit_scale=10.0, slope=1.0,
                          weight_decay=0.1, max_shift=1)},
    # The same grid, small enough for 2 CPU cores in under 10 minutes.
    "quick": {"common": dict(generations=100, population=128, batch_size=128, eval_every=10),
              "bptt": dict(generations=1, lr=2e-3, logit_scale=10.0, slope=1.0)},
}


def reproduce_runs(preset):
    """(name, options) of every run of a preset: BPTT, vanilla ES and EGGROLL at each rank, per seed.
    A preset's settings go from general to specific: "common", then the method's, then the run's."""
    runs = []
    for seed in SEEDS:
        for method, rank in [("bptt", None), ("es", None)] + [("eggroll", r) for r in RANKS]:
            name = method if rank is None else f"{method}-r{rank}"
            settings = {**TRAIN_DEFAULTS, **PRESETS[preset]["common"], **PRESETS[preset].get(method, {}),
                        **PRESETS[preset].get(name, {})}
            settings.update(method=method, seed=seed, rank=rank or settings["rank"])
            runs.append((name, settings))
    return runs


def reproduce(opts):
    """Train every run of the preset that has no final.json yet, then write tables and figures.

    With --real-root, every finished run is also scored on that N-MNIST copy (real.json).
    """
    results_dir = Path(opts.results) / opts.config
    runs = [(name, settings) for name, settings in reproduce_runs(opts.config)
            if (not opts.runs or name in opts.runs) and (not opts.seeds or settings["seed"] in opts.seeds)]
    for index, (name, settings) in enumerate(runs, start=1):
        out = results_dir / "runs" / f"{name}-seed{settings['seed']}"
        settings.update(out=str(out), device=opts.device, data_root=opts.data_root,
                        cache_dir=opts.cache_dir, download=opts.download, resume=True, force=False)
        run_opts = argparse.Namespace(**settings)
        stored = stored_config(out / "config.json") if (out / "config.json").exists() else None
        finished = (out / "final.json").exists() and stored == run_config(run_opts)
        if not finished and not opts.report_only:
            print(f"[{index}/{len(runs)}] {name} seed {settings['seed']}", file=sys.stderr)
            run_opts.force = opts.force and stored not in (None, run_config(run_opts))
            train(run_opts, progress=not opts.quiet)
            finished = True
        if finished and opts.real_root and not (out / "real.json").exists():
            if (out / CHECKPOINT).exists():
                report = evaluate_run(out, opts.real_root, opts.cache_dir, opts.device)
                write_atomically(out / "real.json", json.dumps(report, indent=1))
            else:
                print(f"{out}: no {CHECKPOINT}, not scored on --real-root", file=sys.stderr)
    write_report(results_dir, opts.config)


def collect(results_dir):
    """{run name: [(final, metrics) per seed]} from the runs under results_dir/runs; final gets
    "real_acc" where the run was scored on other recordings (real.json)."""
    runs = {}
    for final_path in sorted((results_dir / "runs").glob("*/final.json")):
        name = final_path.parent.name.rsplit("-seed", 1)[0]
        final = json.loads(final_path.read_text())
        real_path = final_path.parent / "real.json"
        if real_path.exists():
            final["real_acc"] = json.loads(real_path.read_text())["accuracy"]["all"]
        metrics = [json.loads(line) for line in (final_path.parent / "metrics.jsonl").read_text().splitlines()]
        runs.setdefault(name, []).append((final, metrics))
    return runs


def seconds_to_reach(metrics, accuracy=0.75):
    """Training seconds until validation accuracy first reached `accuracy`, else None."""
    return next((m["wall_seconds"] for m in metrics if m["val_acc"] >= accuracy), None)


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def format_mean_std(values, scale=1.0, digits=2):
    mean, std = mean_std(values)
    return "n/a" if mean is None else f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def devices_line(runs, names):
    """"Device: X", or where runs trained on several devices, which runs trained on which."""
    by_device = {}
    for name in names:
        for final, _ in runs[name]:
            by_device.setdefault(final.get("device", "?"), set()).add(name)
    if len(by_device) <= 1:
        return f"Device: {next(iter(by_device), '?')}"
    return "Devices: " + "; ".join(f"{device} for {', '.join(n for n in names if n in runs_on)}"
                                   for device, runs_on in by_device.items())


def write_report(results_dir, preset):
    """table.md (Table 1), per_seed.md (Table 2) and the PNG figures of a reproduce run."""
    results_dir.mkdir(parents=True, exist_ok=True)
    runs = collect(results_dir)
    order = ["bptt", "es"] + [f"eggroll-r{r}" for r in RANKS]
    names = [n for n in order if n in runs]
    es_finals = [f for f, _ in runs.get("es", [])]
    first = runs[names[0]][0][0] if names else {}
    scored_on_real = any("real_acc" in f for n in names for f, _ in runs[n])
    lines = [f"# Table 1 ({preset}): N-MNIST test accuracy over seeds {', '.join(map(str, SEEDS))} "
             f"(per_seed.md shows which ran)",
             "", f"{devices_line(runs, names)}; train/val/test = {first.get('n_train')}/"
             f"{first.get('n_val')}/{first.get('n_test')} recordings.", "",
             "| method | test acc % (mean ± std) | s / generation | speedup vs vanilla ES (same device) | "
             "s to 75 % val acc | spikes / sample |" + (" real recordings % |" if scored_on_real else ""),
             "|---|---|---|---|---|---|" + ("---|" if scored_on_real else "")]
    for name in names:
        finals = [f for f, _ in runs[name]]
        seconds = statistics.median(f["median_seconds_per_generation"] for f in finals)
        es_seconds = [f["median_seconds_per_generation"] for f in es_finals
                      if {f.get("device")} == {g.get("device") for g in finals}]
        speedup = f"{statistics.median(es_seconds) / seconds:.2f}×" if es_seconds and name != "bptt" else "–"
        reach = [seconds_to_reach(m) for _, m in runs[name]]
        reached = [r for r in reach if r is not None]
        reach_text = (format_mean_std(reached, digits=1) + (f" ({len(reached)}/{len(reach)} seeds)"
                      if len(reached) < len(reach) else "")) if reached else "not reached"
        unit = " (per step)" if name == "bptt" else ""
        lines.append(f"| {name} | {format_mean_std([f['test_acc'] for f in finals], 100)} | "
                     f"{seconds:.3f}{unit} | {speedup} | {reach_text} | "
                     f"{format_mean_std([f['spikes_per_sample'] for f in finals], digits=0)} |"
                     + (f" {format_mean_std([f.get('real_acc') for f in finals], 100)} |" if scored_on_real else ""))
    (results_dir / "table.md").write_text("\n".join(lines) + "\n")

    rows = ["# Table 2 " + f"({preset}): test accuracy % per seed", "",
            "| method | " + " | ".join(f"seed {s}" for s in SEEDS) + " |", "|---" * (len(SEEDS) + 1) + "|"]
    for name in names:
        by_seed = {f["config"]["seed"]: f["test_acc"] for f, _ in runs[name]}
        rows.append(f"| {name} | " + " | ".join(f"{100 * by_seed[s]:.2f}" if s in by_seed else "–"
                                               for s in SEEDS) + " |")
    (results_dir / "per_seed.md").write_text("\n".join(rows) + "\n")
    if names:
        plot_figures(results_dir, runs, names)


def plot_figures(results_dir, runs, names):
    """rank_ablation.png, convergence.png and wallclock.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = [r for r in RANKS if f"eggroll-r{r}" in runs]
    if ranks:
        fig, (acc_ax, time_ax) = plt.subplots(1, 2, figsize=(9, 3.5))
        accs = [mean_std([100 * f["test_acc"] for f, _ in runs[f"eggroll-r{r}"]]) for r in ranks]
        times = [statistics.median(f["median_seconds_per_generation"] for f, _ in runs[f"eggroll-r{r}"]) for r in ranks]
        acc_ax.errorbar(ranks, [a for a, _ in accs], yerr=[s for _, s in accs], marker="o", capsize=3, label="EGGROLL")
        time_ax.plot(ranks, times, marker="o", label="EGGROLL")
        if "es" in runs:
            es_acc = mean_std([100 * f["test_acc"] for f, _ in runs["es"]])[0]
            acc_ax.axhline(es_acc, color="gray", linestyle=":", label="vanilla ES")
            time_ax.axhline(statistics.median(f["median_seconds_per_generation"] for f, _ in runs["es"]),
                            color="gray", linestyle=":", label="vanilla ES")
        for ax, label in ((acc_ax, "test accuracy (%)"), (time_ax, "seconds per generation")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(ranks, [str(r) for r in ranks])
            ax.set_xlabel("rank r")
            ax.set_ylabel(label)
            ax.legend()
        fig.tight_layout()
        fig.savefig(results_dir / "rank_ablation.png", dpi=120)
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in names:
        if name == "bptt":
            continue
        curves = [m for _, m in runs[name]]
        length = min(len(c) for c in curves)
        x = [c["generation"] for c in curves[0][:length]]
        values = numpy.asarray([[100 * p["val_acc"] for p in c[:length]] for c in curves])
        mean, std = values.mean(0), values.std(0)
        ax.plot(x, mean, label=name)
        ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    if "bptt" in runs:
        ax.axhline(mean_std([100 * f["val_acc"] for f, _ in runs["bptt"]])[0], color="black",
                   linestyle="--", label="bptt (final)")
    ax.set_xlabel("generation")
    ax.set_ylabel("validation accuracy (%)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(results_dir / "convergence.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    totals = [mean_std([f["total_seconds"] for f, _ in runs[n]]) for n in names]
    ax.bar(names, [t for t, _ in totals], yerr=[s for _, s in totals], capsize=3)
    ax.set_ylabel("training wall-clock (s)")
    fig.tight_layout()
    fig.savefig(results_dir / "wallclock.png", dpi=120)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# bench: seconds, FLOPs, efficiency and memory per generation at the reference configuration

REFERENCE = dict(pairs=256, batch=256, time_bins=10)
INPUT_DENSITY = 0.082  # fraction of the 2312 inputs active per frame, measured on the real recordings
BENCH_METHODS = [("es-batched", None), ("es-sequential", None)] + [("eggroll", r) for r in RANKS] + \
                [("inference", None), ("bptt", None)]


def bench_inputs(xp, seed=0):
    """Reference-size parameters, binary frames at N-MNIST's input density, and labels."""
    rng = numpy.random.default_rng(seed)
    shape = (REFERENCE["time_bins"], REFERENCE["batch"], snn.SIZES[0])
    frames = xp.asarray(rng.random(shape) < INPUT_DENSITY, dtype=xp.float32)
    labels = xp.asarray(rng.integers(0, snn.SIZES[-1], REFERENCE["batch"]))
    return snn.init_params(seed, xp=xp), frames, labels


def flops_per_generation(method, rank):
    """Multiply-adds x 2 of the matrix products of one generation (or one BPTT step)."""
    n, h, o = snn.SIZES
    p, rows = REFERENCE["pairs"], REFERENCE["time_bins"] * REFERENCE["batch"]
    members = 2 * p
    base, layer2 = 2 * rows * n * h, 2 * members * rows * h * o
    if method == "eggroll":
        forward = base + 2 * rows * n * p * rank + 2 * p * rows * (rank + 1) * h \
            + layer2 + members * rows * (2 * h * rank + 2 * (rank + 1) * o)
        return forward + 2 * p * rank * (h * n + o * h)
    if method == "es-batched":
        return base + 2 * rows * n * p * h + layer2 + 2 * p * (h * n + o * h)
    if method == "es-sequential":
        return members * (base + 2 * rows * h * o) + 2 * p * (h * n + o * h)
    if method == "inference":
        return base + layer2
    return 3 * (base + 2 * rows * h * o)  # bptt: forward plus a backward of about twice its cost


def noise_bytes(method, rank):
    """float32 bytes of noise alive at once: factors (EGGROLL) or full matrices (ES).

    Both ES modes regenerate every E_p at once for the update, Eq. (10), so they peak alike.
    """
    n, h, o = snn.SIZES
    p = REFERENCE["pairs"]
    if method == "eggroll":
        return 4 * p * (rank * (h + n) + h + rank * (o + h) + o)
    if method.startswith("es-"):
        return 4 * p * (h * n + h + o * h + o)
    return 0


def time_calls(function, repeats, xp):
    """Median seconds of `repeats` calls after one warm-up call."""
    synchronize = xp.cuda.Stream.null.synchronize if xp is not numpy else (lambda: None)
    function()
    synchronize()
    seconds = []
    for _ in range(repeats):
        began = time.perf_counter()
        function()
        synchronize()
        seconds.append(time.perf_counter() - began)
    return statistics.median(seconds)


def bench_method(method, rank, device, repeats):
    """Seconds per generation of one method, in a fresh process so that its peak RSS is its own."""
    import resource
    xp = array_module(device)
    params, frames, labels = bench_inputs(xp)
    config = eggroll.Config(population=2 * REFERENCE["pairs"], rank=rank or 1)
    state = eggroll.adam_init(params)
    lif = snn.LIF()
    calls = {
        "eggroll": lambda: eggroll.generation_step(params, state, frames, labels, 0, config, lif),
        "es-batched": lambda: baselines.es_generation_step(params, state, frames, labels, 0, config, lif, "batched"),
        "es-sequential": lambda: baselines.es_generation_step(params, state, frames, labels, 0, config, lif, "sequential"),
        "inference": lambda: snn.forward(params, frames, lif, n_members=config.population),
        "bptt": lambda: baselines.bptt_step(params, state, frames, labels, config, lif),
    }
    result = {"seconds": time_calls(calls[method], repeats, xp)}
    if method == "eggroll":
        result["forward_seconds"] = time_calls(
            lambda: eggroll.perturbed_forward(params, frames, config, 0, lif), repeats, xp)
        factors = xp.ones((config.pairs * rank, snn.SIZES[0]), dtype=xp.float32)
        x = frames.reshape(-1, snn.SIZES[0])
        result["population_product_seconds"] = time_calls(lambda: x @ factors.T, repeats, xp)
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return result


def gemm_speeds(xp, repeats=5):
    """float32 GFLOP/s of a 2048^3 product and of the population products of the bench."""
    rows, n, h = REFERENCE["time_bins"] * REFERENCE["batch"], snn.SIZES[0], snn.SIZES[1]
    shapes = [(2048, 2048, 2048)] + [(rows, n, REFERENCE["pairs"] * k) for k in (1, 4, 8, h)]
    speeds = {}
    for m, k, n_cols in shapes:
        left = xp.ones((m, k), dtype=xp.float32)
        right = xp.ones((n_cols, k), dtype=xp.float32)
        speeds[f"{m}x{k}x{n_cols}"] = 2 * m * k * n_cols / time_calls(lambda: left @ right.T, repeats, xp) / 1e9
    return speeds


def machine_description(xp):
    import platform
    cores = os.cpu_count()
    return f"{device_name(xp)}, {cores} cores, {platform.system()} {platform.release()}, numpy {numpy.__version__}"


def bench(opts):
    """Print the benchmark table and write it as JSON (--json)."""
    import multiprocessing
    xp = array_module(opts.device)
    context = multiprocessing.get_context("spawn")
    results = {}
    with context.Pool(1, maxtasksperchild=1) as pool:
        for method, rank in BENCH_METHODS:
            repeats = opts.repeats if method != "es-sequential" else max(5, opts.repeats // 2)
            results[(method, rank)] = pool.apply(bench_method, (method, rank, opts.device, repeats))
            print(f"  measured {method}{'' if rank is None else f' r={rank}'}: "
                  f"{results[(method, rank)]['seconds']:.3f} s", file=sys.stderr)
    speeds = gemm_speeds(xp)
    peak = max(speeds.values())
    es_batched = results[("es-batched", None)]["seconds"]
    es_sequential = results[("es-sequential", None)]["seconds"]
    epoch_batches = 54000 / REFERENCE["batch"]
    rows = []
    for (method, rank), result in results.items():
        seconds = result["seconds"] * (epoch_batches if method == "bptt" else 1)
        gflop = flops_per_generation(method, rank) / 1e9 * (epoch_batches if method == "bptt" else 1)
        row = {"method": method, "rank": rank, "seconds_per_generation": seconds,
               "gflop_per_generation": gflop, "achieved_gflops": gflop / seconds,
               "efficiency": gflop / seconds / peak, "noise_bytes": noise_bytes(method, rank),
               "peak_rss_bytes": result["peak_rss_bytes"],
               "speedup_vs_es_batched": es_batched / seconds if method != "bptt" else None,
               "speedup_vs_es_sequential": es_sequential / seconds if method != "bptt" else None}
        if method == "eggroll":
            population_gflop = 2 * REFERENCE["time_bins"] * REFERENCE["batch"] * snn.SIZES[0] * REFERENCE["pairs"] * rank / 1e9
            row["forward_seconds"] = result["forward_seconds"]
            row["population_product_efficiency"] = population_gflop / result["population_product_seconds"] / peak
        if method == "bptt":
            row["note"] = f"seconds per 54,000-sample epoch, extrapolated from steps of {REFERENCE['batch']}"
        rows.append(row)
    inference = results[("inference", None)]["seconds"]
    summary = {"machine": machine_description(xp), "gemm_peak_gflops": peak, "gemm_gflops": speeds,
               "reference": REFERENCE,
               "input_density": INPUT_DENSITY, "rows": rows,
               "eggroll_r4_vs_inference": {"generation": inference / results[("eggroll", 4)]["seconds"],
                                           "forward": inference / results[("eggroll", 4)]["forward_seconds"]}}
    if opts.data_root:
        summary["data"] = data.benchmark(opts.data_root, opts.cache_dir)
    print(format_bench(summary))
    if opts.json:
        Path(opts.json).write_text(json.dumps(summary, indent=1))
    return summary


def format_bench(summary):
    """The bench as a Markdown table."""
    speeds = ", ".join(f"{shape}: {gflops:.0f}" for shape, gflops in summary["gemm_gflops"].items())
    lines = [f"Machine: {summary['machine']}; float32 GEMM peak {summary['gemm_peak_gflops']:.1f} GFLOP/s "
             f"(best of m x k x n products, GFLOP/s: {speeds})",
             f"Reference: 2312-64-10, {2 * REFERENCE['pairs']} members, B = {REFERENCE['batch']}, "
             f"T = {REFERENCE['time_bins']}, input density {INPUT_DENSITY}", "",
             "| method | rank | s / generation | GFLOP / gen | GFLOP/s | efficiency | noise MB | peak RSS MB "
             "| × vs ES batched | × vs ES sequential |", "|---|---|---|---|---|---|---|---|---|---|"]
    for row in summary["rows"]:
        speedups = [f"{row[k]:.2f}" if row[k] else "–" for k in ("speedup_vs_es_batched", "speedup_vs_es_sequential")]
        lines.append(f"| {row['method']}{' (epoch of 54,000)' if row['method'] == 'bptt' else ''} | {row['rank'] or '–'} | "
                     f"{row['seconds_per_generation']:.3f} | {row['gflop_per_generation']:.1f} | "
                     f"{row['achieved_gflops']:.1f} | {100 * row['efficiency']:.0f} % | "
                     f"{row['noise_bytes'] / 1e6:.2f} | {row['peak_rss_bytes'] / 1e6:.0f} | {' | '.join(speedups)} |")
    ratio = summary["eggroll_r4_vs_inference"]
    r4 = next(r for r in summary["rows"] if r["method"] == "eggroll" and r["rank"] == 4)
    es = next(r for r in summary["rows"] if r["method"] == "es-batched")
    lines += ["", f"EGGROLL r=4 throughput / inference throughput: {100 * ratio['generation']:.0f} % "
              f"(whole generation), {100 * ratio['forward']:.0f} % (forward only)",
              f"Population product x [B_1 ... B_P] (r=4) at {100 * r4['population_product_efficiency']:.0f} % "
              f"of the GEMM peak",
              f"EGGROLL r=4 noise memory / ES noise memory: 1/{es['noise_bytes'] / r4['noise_bytes']:.1f}"]
    if "data" in summary:
        d = summary["data"]
        lines.append(f"Data: frame cache of {d['n_train'] + d['n_val'] + d['n_test']:,} recordings built in "
                     f"{d['cache_build_s']:.1f} s, loaded in {d['cache_load_s']:.2f} s; minibatches of "
                     f"{d['batch_size']} at {d['batches_samples_per_s']:,.0f} samples/s")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------

def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0],
                                     formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)

    train_parser = commands.add_parser("train", help="train one network",
                                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    add_train_options(train_parser)
    train_parser.add_argument("--out", default=TRAIN_DEFAULTS["out"],
                              help="output folder: metrics.jsonl, final.json, checkpoint.npz")
    train_parser.add_argument("--resume", action="store_true",
                              help="continue the run in --out from its last checkpoint (same settings)")
    train_parser.add_argument("--force", action="store_true", help="delete the run in --out and start over")
    train_parser.add_argument("--quiet", action="store_true", help="no progress bar")

    reproduce_parser = commands.add_parser("reproduce", help="every run of the paper's protocol, tables, figures",
                                           formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    reproduce_parser.add_argument("--config", choices=sorted(PRESETS), default="paper",
                                  help="paper: 100 generations; quick: under 10 minutes on 2 CPU cores; best: the tuned recipe")
    reproduce_parser.add_argument("--results", default="results", help="folder for results/<config>/")
    for option in ("--device", "--data-root", "--cache-dir"):
        reproduce_parser.add_argument(option, default=TRAIN_DEFAULTS[option[2:].replace("-", "_")],
                                      help=f"as in train {option}")
    reproduce_parser.add_argument("--download", action="store_true", help="as in train --download")
    reproduce_parser.add_argument("--quiet", action="store_true", help="no progress bars")
    reproduce_parser.add_argument("--runs", type=lambda text: text.split(","),
                                  help="only these runs, e.g. bptt,es,eggroll-r4 (default: all)")
    reproduce_parser.add_argument("--seeds", type=lambda text: [int(seed) for seed in text.split(",")],
                                  help="only these seeds, e.g. 1,2 (default: all)")
    reproduce_parser.add_argument("--force", action="store_true",
                                  help="retrain runs whose stored settings differ from the preset (deletes them)")
    reproduce_parser.add_argument("--report-only", action="store_true",
                                  help="train nothing: write the tables and figures of the runs finished so far")
    reproduce_parser.add_argument("--real-root", help="also score every run on this N-MNIST copy, e.g. real "
                                                      "recordings for models trained on emulated ones")

    evaluate_parser = commands.add_parser("evaluate", help="accuracy of a trained run on another N-MNIST copy",
                                          formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    evaluate_parser.add_argument("run_dir", help="the --out folder of a training run")
    for option in ("--device", "--data-root", "--cache-dir"):
        evaluate_parser.add_argument(option, default=TRAIN_DEFAULTS[option[2:].replace("-", "_")],
                                     help=f"as in train {option}")

    bench_parser = commands.add_parser("bench", help="speed, FLOPs and memory at the reference configuration",
                                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    bench_parser.add_argument("--device", choices=("cpu", "gpu", "auto"), default="cpu", help="as in train")
    bench_parser.add_argument("--repeats", type=int, default=5, help="timed generations per method, after a warm-up")
    bench_parser.add_argument("--json", help="also write the figures to this JSON file")
    bench_parser.add_argument("--data-root", help="also time building (afresh) and loading the frame cache of "
                                                  "this N-MNIST copy, and serving its minibatches")
    bench_parser.add_argument("--cache-dir", default=None, help="as in train --cache-dir")

    opts = parser.parse_args(argv)
    try:
        if opts.command == "train":
            final = train(opts, progress=not opts.quiet)
            print(json.dumps({k: final[k] for k in ("test_acc", "val_acc", "median_seconds_per_generation")}))
        elif opts.command == "reproduce":
            reproduce(opts)
        elif opts.command == "evaluate":
            print(json.dumps(evaluate_run(opts.run_dir, opts.data_root, opts.cache_dir, opts.device)))
        else:
            bench(opts)
    except (UsageError, ValueError, OSError, RuntimeError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
