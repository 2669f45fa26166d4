"""The benchmark: seconds, FLOPs, efficiency and memory per generation of every method at the
reference size (or another number of pairs), and optionally the data pipeline's speed.

    python run.py bench --json bench.json
    python run.py bench --device gpu --pairs 4096 --methods es-batched,eggroll-r4

Each method is timed in a fresh process (its peak RSS and GPU memory are its own), as the median
of a few generations after a warm-up, on the same random frames at N-MNIST's input density. On a
GPU, up to 4,096 pairs, it also times each stage of a generation with the kernel of gpu.py and
with its NumPy twin run on CuPy: what each kernel buys, and which stage dominates at that size. Whatever it
will use (memory for --pairs, --data-root, the --json file's folder) is checked before any timing.
"""
import argparse
import json
import os
import re
import signal
import statistics
import sys
import time
from pathlib import Path

import numpy

import baselines
import data
import distributed
import eggroll
import emulate
import exits
import gpu
import optim
import resources
import run_folder
import snn
import snn_eggroll
from backend import DEVICES, array_module, device_name
from config import RANKS
from resources import noise_bytes
from run_folder import UsageError

REFERENCE = dict(pairs=256, batch=256, time_bins=10)
INPUT_DENSITY = 0.082  # fraction of the 2312 inputs active per frame, measured on the real recordings
KERNEL_TABLE_PAIRS = 4096  # above this, vanilla ES and the NumPy twins of the stage table outgrow an 80 GB GPU
BENCH_METHODS = [("es-batched", None), ("es-sequential", None)] + [("eggroll", r) for r in RANKS] + \
                [("inference", None), ("bptt", None)]


def method_name(method, rank):
    """"eggroll-r4", "es-batched", ...: how --methods names a row."""
    return method if rank is None else f"{method}-r{rank}"


def bench_inputs(xp, seed=0):
    """Reference-size parameters, binary frames at N-MNIST's input density, and labels."""
    rng = numpy.random.default_rng(seed)
    shape = (REFERENCE["time_bins"], REFERENCE["batch"], snn.SIZES[0])
    frames = xp.asarray(rng.random(shape) < INPUT_DENSITY, dtype=xp.float32)
    labels = xp.asarray(rng.integers(0, snn.SIZES[-1], REFERENCE["batch"]))
    return snn.init_params(seed, xp=xp), frames, labels


def flops_per_generation(method, rank, pairs=REFERENCE["pairs"]):
    """Multiply-adds x 2 of the matrix products of one generation (or one BPTT step)."""
    n, h, o = snn.SIZES
    p, rows = pairs, REFERENCE["time_bins"] * REFERENCE["batch"]
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


def bench_method(method, rank, device, repeats, pairs=REFERENCE["pairs"]):
    """Seconds per generation of one method, in a fresh process so that its peak RSS is its own."""
    import resource
    xp = array_module(device)
    params, frames, labels = bench_inputs(xp)
    population = 2 * pairs
    egg = snn_eggroll.Config(population, rank or 1, sigma=0.1, seed=0, logit_scale=1.0)
    es = {mode: baselines.ESConfig(population, sigma=0.1, seed=0, logit_scale=1.0, mode=mode)
          for mode in baselines.ES_MODES}
    adam, state, lif = optim.Adam(lr=0.01), optim.init(params), snn.LIF()
    calls = {
        "eggroll": lambda: snn_eggroll.generation_step(params, state, frames, labels, 0, egg, adam, lif),
        "es-batched": lambda: baselines.es_generation_step(params, state, frames, labels, 0, es["batched"], adam, lif),
        "es-sequential": lambda: baselines.es_generation_step(params, state, frames, labels, 0, es["sequential"],
                                                              adam, lif),
        "inference": lambda: snn.forward(params, frames, lif, n_members=population),
        "bptt": lambda: baselines.bptt_step(params, state, frames, labels,
                                            baselines.BPTTConfig(baselines.SLOPE, logit_scale=1.0), adam, lif),
    }
    result = {"seconds": time_calls(calls[method], repeats, xp)}
    if method == "eggroll":
        result["forward_seconds"] = time_calls(
            lambda: snn_eggroll.perturbed_forward(params, frames, egg, 0, lif), repeats, xp)
        factors = xp.ones((egg.pairs * rank, snn.SIZES[0]), dtype=xp.float32)
        x = frames.reshape(-1, snn.SIZES[0])
        result["population_product_seconds"] = time_calls(lambda: x @ factors.T, repeats, xp)
    result["peak_rss_bytes"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if xp is not numpy:  # CuPy's pool keeps what it once held: its size is the peak
        result["peak_gpu_bytes"] = xp.get_default_memory_pool().total_bytes()
    return result


def bench_kernels(device, repeats, pairs=REFERENCE["pairs"]):
    """On a GPU: seconds of each stage of a generation that a kernel of gpu.py runs, with the
    kernel and with its NumPy twin on CuPy (gpu.KERNELS off), at EGGROLL r = 4 (r = 1 for the
    whole generation too): what each kernel buys, and which stage dominates at this size. Above
    1,024 pairs the twins are timed twice, not `repeats` times."""
    xp = array_module(device)
    params, frames, labels = bench_inputs(xp)
    configs = {r: snn_eggroll.Config(2 * pairs, r, sigma=0.1, seed=0, logit_scale=1.0) for r in (1, 4)}
    es = baselines.ESConfig(2 * pairs, sigma=0.1, seed=0, logit_scale=1.0)
    adam, state, lif = optim.Adam(lr=0.01), optim.init(params), snn.LIF()
    rng = numpy.random.default_rng(0)
    fitnesses = xp.asarray(rng.normal(-1.5, 0.1, 2 * pairs), dtype=xp.float32)
    f = xp.asarray(rng.uniform(-1, 1, pairs), dtype=xp.float32)
    n, h, _ = snn.SIZES
    x = frames.reshape(-1, n)
    factors_b1 = xp.asarray(rng.normal(size=(pairs, 4, n)), dtype=xp.float32)
    stages = {
        "noise: W1 factors of every pair": lambda: eggroll.lowrank_factors(0, 0, xp.arange(pairs), "W1", (h, n), 4, xp),
        "population product x [B_1 ... B_P], r=4": lambda: eggroll.population_product(x, factors_b1),
        "eggroll r=4 forward (noise, products, LIF)": lambda: snn_eggroll.perturbed_forward(params, frames, configs[4], 0, lif),
        "centred ranks of the fitnesses": lambda: eggroll.centred_ranks(fitnesses),
        "gradient, Eqs. (7)-(8), r=4": lambda: eggroll.gradient(f, configs[4].members(params, 0), configs[4].pairs),
        "adam: every parameter": lambda: optim.ascend(params, params, state, adam),
        "eggroll r=4 generation": lambda: snn_eggroll.generation_step(params, state, frames, labels, 0, configs[4], adam, lif),
        "eggroll r=1 generation": lambda: snn_eggroll.generation_step(params, state, frames, labels, 0, configs[1], adam, lif),
        "es-batched generation": lambda: baselines.es_generation_step(params, state, frames, labels, 0, es, adam, lif),
    }
    seconds = {}
    try:
        for stage, call in stages.items():
            seconds[stage] = {}
            for kernels in (True, False):
                gpu.KERNELS = kernels
                times = repeats if kernels or pairs <= 1024 else 2
                seconds[stage]["kernel" if kernels else "numpy_twin"] = time_calls(call, times, xp)
    finally:
        gpu.KERNELS = True
    return seconds


def gemm_shapes(pairs):
    """(m, k, n) of gemm_speeds' products: a 2048^3 one and the bench's population products."""
    rows, n, h = REFERENCE["time_bins"] * REFERENCE["batch"], snn.SIZES[0], snn.SIZES[1]
    return [(2048, 2048, 2048)] + [(rows, n, pairs * k) for k in (1, 4, 8, h) if pairs * k <= 4096 * 8]


def gemm_speeds(xp, pairs=REFERENCE["pairs"], repeats=5):
    """float32 GFLOP/s of a 2048^3 product and of the population products of the bench."""
    speeds = {}
    for m, k, n_cols in gemm_shapes(pairs):
        left = xp.ones((m, k), dtype=xp.float32)
        right = xp.ones((n_cols, k), dtype=xp.float32)
        speeds[f"{m}x{k}x{n_cols}"] = 2 * m * k * n_cols / time_calls(lambda: left @ right.T, repeats, xp) / 1e9
    return speeds


def machine_description(xp):
    import platform
    cores = os.cpu_count()
    return f"{device_name(xp)}, {cores} cores, {platform.system()} {platform.release()}, numpy {numpy.__version__}"


def chosen_methods(names):
    """The (method, rank) rows that --methods names ("all", or e.g. "es-batched,eggroll-r4"), each
    once, in the order named (a name given twice is one row, timed once)."""
    if names == "all":
        return BENCH_METHODS
    known = {method_name(*row): row for row in BENCH_METHODS}
    if names != "".join(names.split()):  # ' es-batched' would be named as a method unknown
        raise ValueError(f"--methods {names!r} holds a space: separate the names by single commas, e.g. "
                         f"{','.join(list(known)[:2])}")
    unknown = [name for name in names.split(",") if name not in known]
    if "all" in unknown:  # among others
        raise ValueError(f"--methods all stands alone: give 'all', or some of {', '.join(known)}, not both")
    if unknown:
        raise ValueError(f"unknown method {unknown[0]!r} in --methods: use 'all' or some of {', '.join(known)}")
    return [known[name] for name in dict.fromkeys(names.split(","))]


def recorded_settings(path):
    """What the benchmark's JSON at `path` measured, as check_request compares it with a request,
    or None if it is no whole record."""
    try:
        summary = json.loads(path.read_text())
        if "processes" in summary:  # --distributed's
            return {"pairs": summary["reference"]["pairs"], "processes": summary["processes"]}
        return {"pairs": summary["pairs"], "methods": sorted(method_name(row["method"], row["rank"])
                                                             for row in summary["rows"]),
                "device": summary["device"], "--data-root": "data" in summary}
    except (ValueError, KeyError, TypeError):  # (UnicodeDecodeError is a ValueError)
        return None


def check_request(opts, team=distributed.ALONE):
    """Everything the bench will use, checked before any timing: --device, --methods, the memory
    its largest method needs at --pairs (resources.py; on a GPU also the stage table's NumPy
    twins), the N-MNIST copy of --data-root and its cache folder, and the --json file's folder."""
    if opts.distributed and (opts.methods != "all" or opts.data_root):
        given = "--methods" if opts.methods != "all" else "--data-root"
        raise UsageError(f"--distributed always times eggroll-r4 and es-batched on minibatches of random frames: drop "
                         f"{given}, or --distributed")
    xp = array_module(opts.device)
    methods = [("eggroll", 4), ("es-batched", None)] if opts.distributed else chosen_methods(opts.methods)
    if opts.json:
        if opts.json.endswith(("/", os.sep)):  # a folder's path: the file would take the folder's name
            raise UsageError(f"--json {opts.json} ends with {opts.json[-1]}, a folder's path: give the path of the JSON "
                             f"file, e.g. {os.path.join(opts.json, 'bench.json')}")
        resources.check_writable(opts.json, "--json")
        run_folder.refuse_run_folder(os.path.dirname(opts.json) or ".", "give --json a path outside it")
        resources.refuse_data_folder(os.path.dirname(opts.json) or ".", "give --json a path outside it",
                                     what="where a benchmark's JSON goes")
        exits.refuse_foreign_file(opts.json, re.compile(rb'\{\s*"machine": '), "a benchmark's JSON",
                                  "give another --json")
        if os.path.isfile(opts.json):  # a record of other settings is another measurement, kept
            wanted = {"pairs": opts.pairs, "processes": team.size} if opts.distributed else {
                "pairs": opts.pairs, "methods": sorted(method_name(*row) for row in methods),
                "device": device_name(xp), "--data-root": bool(opts.data_root)}
            held = recorded_settings(Path(opts.json))
            if held != wanted:
                said = lambda value: ", ".join(value) if isinstance(value, list) else value
                differ = "; ".join(f"{name} {said(held.get(name))}, not {said(wanted[name])}" for name in wanted
                                   if held is not None and held.get(name) != wanted[name]) or "not a whole record"
                raise UsageError(f"--json {opts.json} holds a benchmark of other settings ({differ}): it is left as "
                                 f"it is; give another --json, or move it away to measure these there")
    host, packed = 0, -(-REFERENCE["time_bins"] * snn.SIZES[0] // 8)  # bytes of a recording's frames
    if opts.data_root:
        emulate.check_finished(opts.data_root)  # an emulation read only once finished, as train reads it
        recordings = resources.nmnist_recordings(opts.data_root, "--data-root")
        cache_dir = opts.cache_dir or os.environ.get("EGGROLL_CACHE")
        if cache_dir:
            resources.check_writable(cache_dir, "--cache-dir", folder=True)
        resources.check_frame_cache(opts.cache_dir)  # as train's: no N-MNIST copy, run folder or project folder
        host = 3 * sum(recordings) * packed  # built, then loaded and split
    gpu = xp is not numpy
    if gpu and not opts.distributed and opts.pairs <= KERNEL_TABLE_PAIRS:
        methods = methods + [("es-batched", None), ("eggroll", 4)]

    def needs(pairs):
        """(the method of the largest generation, the (RAM, GPU) bytes at `pairs`): the generation, this
        process's data, and on the CPU gemm_speeds' products, timed in this process."""
        generation = {method_name(*row): resources.generation_bytes(*row, pairs, REFERENCE["batch"],
                                                                     REFERENCE["time_bins"], gpu) for row in methods}
        largest = max(generation, key=generation.get)
        if gpu:
            return largest, (host, generation[largest])
        gemm = 0 if opts.distributed else max(4 * (m * k + n * k + m * n) for m, k, n in gemm_shapes(pairs))
        return largest, (host + gemm + generation[largest], 0)
    largest, needed = needs(opts.pairs)
    short = resources.shortfall(needed, xp, team.local_size)
    if short:
        fits_at_one = opts.pairs > 1 and resources.shortfall(needs(1)[1], xp, team.local_size) is None
        fix = "lower --pairs" if fits_at_one else \
            "raise the limit (ulimit -v)" if "ulimit" in short[2] else "free memory, or use a machine with more"
        raise UsageError(f"--pairs {opts.pairs} needs about {resources.size_text(short[0])} of {short[2]} "
                         f"({largest}, estimated), more than the {resources.size_text(short[1])} free; {fix}")


def bench(opts):
    """Print the benchmark table and write it as JSON (--json), after check_request."""
    import multiprocessing
    xp = array_module(opts.device)
    methods = chosen_methods(opts.methods)
    pairs = opts.pairs
    pipeline = data_pipeline(opts.data_root, opts.cache_dir) if opts.data_root else None  # it fails soonest
    context = multiprocessing.get_context("spawn")
    results = {}
    # The workers leave Ctrl-C to this process, which ends them.
    with context.Pool(1, initializer=signal.signal, initargs=(signal.SIGINT, signal.SIG_IGN),
                      maxtasksperchild=1) as pool:
        for method, rank in methods:
            repeats = opts.repeats if method != "es-sequential" else max(5, opts.repeats // 2)
            results[(method, rank)] = pool.apply(bench_method, (method, rank, opts.device, repeats, pairs))
            print(f"  measured {method_name(method, rank)}: {results[(method, rank)]['seconds']:.4f} s", file=sys.stderr)
        kernels = pool.apply(bench_kernels, (opts.device, opts.repeats, pairs)) \
            if xp is not numpy and pairs <= KERNEL_TABLE_PAIRS else None
    speeds = gemm_speeds(xp, pairs)
    peak = max(speeds.values())
    baseline = {m: results[(m, None)]["seconds"] for m in ("es-batched", "es-sequential") if (m, None) in results}
    epoch_batches = 54000 / REFERENCE["batch"]
    rows = []
    for (method, rank), result in results.items():
        seconds = result["seconds"] * (epoch_batches if method == "bptt" else 1)
        gflop = flops_per_generation(method, rank, pairs) / 1e9 * (epoch_batches if method == "bptt" else 1)
        row = {"method": method, "rank": rank, "seconds_per_generation": seconds,
               "gflop_per_generation": gflop, "achieved_gflops": gflop / seconds,
               "efficiency": gflop / seconds / peak, "noise_bytes": noise_bytes(method, rank, pairs),
               "peak_rss_bytes": result["peak_rss_bytes"], "peak_gpu_bytes": result.get("peak_gpu_bytes")}
        for name, es_seconds in baseline.items():
            row[f"speedup_vs_{name.replace('-', '_')}"] = es_seconds / seconds if method != "bptt" else None
        if method == "eggroll":
            population_gflop = 2 * REFERENCE["time_bins"] * REFERENCE["batch"] * snn.SIZES[0] * pairs * rank / 1e9
            row["forward_seconds"] = result["forward_seconds"]
            row["population_product_efficiency"] = population_gflop / result["population_product_seconds"] / peak
        if method == "bptt":
            row["note"] = f"seconds per 54,000-sample epoch, extrapolated from steps of {REFERENCE['batch']}"
        rows.append(row)
    summary = {"machine": machine_description(xp), "device": device_name(xp), "pairs": pairs,
               "gemm_peak_gflops": peak, "gemm_gflops": speeds, "reference": dict(REFERENCE, pairs=pairs),
               "input_density": INPUT_DENSITY, "rows": rows}
    if ("inference", None) in results and ("eggroll", 4) in results:
        inference = results[("inference", None)]["seconds"]
        summary["eggroll_r4_vs_inference"] = {"generation": inference / results[("eggroll", 4)]["seconds"],
                                              "forward": inference / results[("eggroll", 4)]["forward_seconds"]}
    if kernels:
        summary["kernels"] = kernels
    if pipeline:
        summary["data"] = pipeline
    if opts.json:
        run_folder.write_atomically(Path(opts.json), json.dumps(summary, indent=1))
    exits.say(format_bench(summary), unseen(opts))
    return summary


def format_bench(summary):
    """The bench as Markdown tables."""
    speeds = ", ".join(f"{shape}: {gflops:.0f}" for shape, gflops in summary["gemm_gflops"].items())
    reference = summary["reference"]
    baselines_measured = [name for name in ("es_batched", "es_sequential") if f"speedup_vs_{name}" in summary["rows"][0]]
    lines = [f"Machine: {summary['machine']}; float32 GEMM peak {summary['gemm_peak_gflops']:.1f} GFLOP/s "
             f"(best of m x k x n products, GFLOP/s: {speeds})",
             f"Size: 2312-64-10, {2 * reference['pairs']} members ({reference['pairs']} pairs), "
             f"minibatch N = {reference['batch']}, T = {reference['time_bins']} frames, input density {INPUT_DENSITY}", "",
             "| method | rank | s / generation | GFLOP / gen | GFLOP/s | efficiency | noise MB | peak RSS MB "
             "| peak GPU MB " + "".join(f"| × vs {name.replace('_', ' ').replace('es ', 'ES ')} "
                                        for name in baselines_measured) + "|",
             "|---" * (9 + len(baselines_measured)) + "|"]
    for row in summary["rows"]:
        speedups = "".join(f" {row[f'speedup_vs_{name}']:.2f} |" if row[f"speedup_vs_{name}"] else " – |"
                           for name in baselines_measured)
        gpu_memory = f"{row['peak_gpu_bytes'] / 1e6:.0f}" if row.get("peak_gpu_bytes") is not None else "–"
        lines.append(f"| {row['method']}{' (epoch of 54,000)' if row['method'] == 'bptt' else ''} | {row['rank'] or '–'} | "
                     f"{row['seconds_per_generation']:.4f} | {row['gflop_per_generation']:.1f} | "
                     f"{row['achieved_gflops']:.1f} | {100 * row['efficiency']:.0f} % | "
                     f"{row['noise_bytes'] / 1e6:.2f} | {row['peak_rss_bytes'] / 1e6:.0f} | {gpu_memory} |{speedups}")
    r4 = next((r for r in summary["rows"] if r["method"] == "eggroll" and r["rank"] == 4), None)
    es = next((r for r in summary["rows"] if r["method"] == "es-batched"), None)
    lines.append("")
    if "eggroll_r4_vs_inference" in summary:
        ratio = summary["eggroll_r4_vs_inference"]
        lines.append(f"EGGROLL r=4 throughput / inference throughput: {100 * ratio['generation']:.0f} % "
                     f"(whole generation), {100 * ratio['forward']:.0f} % (forward only)")
    if r4:
        lines.append(f"Population product x [B_1 ... B_P] (r=4) at {100 * r4['population_product_efficiency']:.0f} % "
                     f"of the GEMM peak")
    if r4 and es:
        lines.append(f"EGGROLL r=4 noise memory / ES noise memory: 1/{es['noise_bytes'] / r4['noise_bytes']:.1f}")
    if "kernels" in summary:
        lines += ["", f"What each kernel of gpu.py buys at {reference['pairs']} pairs (ms; its NumPy twin run on "
                      f"CuPy with gpu.KERNELS off):", "",
                  "| stage | kernel | NumPy twin | × |", "|---|---|---|---|"]
        for stage, seconds in summary["kernels"].items():
            lines.append(f"| {stage} | {1e3 * seconds['kernel']:.2f} | {1e3 * seconds['numpy_twin']:.2f} | "
                         f"{seconds['numpy_twin'] / seconds['kernel']:.1f} |")
    if "data" in summary:
        d = summary["data"]
        lines.append(f"Data: frame cache of {d['n_train'] + d['n_val'] + d['n_test']:,} recordings built in "
                     f"{d['cache_build_s']:.1f} s, loaded in {d['cache_load_s']:.2f} s; minibatches of "
                     f"{d['batch_size']} at {d['batches_samples_per_s']:,.0f} samples/s")
    return "\n".join(lines)


def data_pipeline(root=None, cache_dir=None, n_time_bins=10, batch_size=256):
    """Seconds to build (always rebuilt) and load the frame cache, and minibatch samples/s on one epoch
    (of batches of batch_size, or of the whole training split where it is smaller, as in a small sample)."""
    t0 = time.perf_counter()
    data.load_nmnist(root, n_time_bins, cache_dir, rebuild=True)
    t1 = time.perf_counter()
    splits = data.load_nmnist(root, n_time_bins, cache_dir, progress=False)
    batch_size = min(batch_size, len(splits.train))  # batches drops a last partial batch: none would be timed
    t2 = time.perf_counter()
    n = sum(len(y) for _, y in data.batches(splits.train, batch_size))
    t3 = time.perf_counter()
    return {"n_train": len(splits.train), "n_val": len(splits.val), "n_test": len(splits.test),
            "n_time_bins": n_time_bins, "cache_build_s": t1 - t0, "cache_load_s": t2 - t1,
            "batch_size": batch_size, "batches_samples_per_s": n / (t3 - t2)}


def bench_distributed(opts, team):
    """Seconds per generation, seconds in collectives and bytes sent per generation (both means over
    the processes, an idle one among them), of EGGROLL
    r = 4 and batched vanilla ES at the reference size (or --pairs), in both update modes, on this MPI job
    (mpiexec -n K python run.py bench --distributed). Printed and written by the first process."""
    xp = array_module(opts.device)
    if xp is not numpy:
        xp.cuda.Device(team.gpu(xp.cuda.runtime.getDeviceCount())).use()
    params, frames, labels = bench_inputs(xp)
    population = 2 * opts.pairs
    configs = {"eggroll r=4": snn_eggroll.Config(population, 4, sigma=0.1, seed=0, logit_scale=1.0),
               "es-batched": baselines.ESConfig(population, sigma=0.1, seed=0, logit_scale=1.0)}
    steps = {"eggroll r=4": snn_eggroll.generation_step, "es-batched": baselines.es_generation_step}
    adam, state = optim.Adam(lr=0.01), optim.init(params)
    idle = distributed.idle(opts.pairs, eggroll.PAIRS_PER_BLOCK, team.size)
    if idle and team.rank == 0:
        print(f"note: {opts.pairs} pairs in blocks of {eggroll.PAIRS_PER_BLOCK} leave {idle} of the {team.size} "
              f"processes without one: --pairs {eggroll.PAIRS_PER_BLOCK * team.size} or more keeps every one at work",
              file=sys.stderr)
    rows = []
    for name, config in configs.items():
        for update in distributed.UPDATES:
            team.update = update
            step = lambda: steps[name](params, state, frames, labels, 0, config, adam, snn.LIF(), team)
            step()  # warm-up
            seconds, bytes_sent = team.seconds, team.bytes_sent
            began = time.perf_counter()
            for _ in range(opts.repeats):
                team.barrier()
                step()
            team.barrier()
            elapsed = (time.perf_counter() - began) / opts.repeats
            mine = numpy.array([team.seconds - seconds, team.bytes_sent - bytes_sent], dtype=numpy.float64)
            communication, sent = team.total(mine) / (team.size * opts.repeats)  # means over the processes
            rows.append({"method": name, "update": update, "processes": team.size, "seconds_per_generation": elapsed,
                         "communication_seconds": communication, "bytes_sent_per_process": sent})
            team.stop_if_signalled()
    summary = {"machine": machine_description(xp), "processes": team.size, "reference": dict(REFERENCE, pairs=opts.pairs),
               "blas_threads": os.environ.get("OPENBLAS_NUM_THREADS"), "rows": rows}
    if team.rank == 0:
        if opts.json:
            run_folder.write_atomically(Path(opts.json), json.dumps(summary, indent=1))
        exits.say(format_distributed(summary), unseen(opts))
    return summary


def unseen(opts):
    """Where the figures are when standard output cannot show them."""
    return f"the figures are in {opts.json}" if opts.json else "run it again with --json FILE"


def format_distributed(summary):
    lines = [f"Machine: {summary['machine']}; {summary['processes']} processes, OPENBLAS_NUM_THREADS="
             f"{summary['blas_threads']}", "",
             "| method | update | processes | s / generation | s in collectives (mean of processes) | share | "
             "bytes sent / process (mean) |",
             "|---|---|---|---|---|---|---|"]
    for row in summary["rows"]:
        lines.append(f"| {row['method']} | {row['update']} | {row['processes']} | {row['seconds_per_generation']:.3f} | "
                     f"{row['communication_seconds']:.4f} | "
                     f"{100 * row['communication_seconds'] / row['seconds_per_generation']:.1f} % | "
                     f"{row['bytes_sent_per_process']:,.0f} |")
    return "\n".join(lines)


def positive_int(text):
    """argparse type: an integer >= 1."""
    try:
        value = exits.plain(int, text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {text}")
    return value


def add_options(parser):
    parser.add_argument("--device", choices=DEVICES, default="cpu", help="as in train")
    parser.add_argument("--distributed", action="store_true",
                        help="time EGGROLL r=4 and vanilla ES spread over this MPI job's processes "
                             "(mpiexec -n K python run.py bench --distributed), in both update modes")
    parser.add_argument("--pairs", type=positive_int, default=REFERENCE["pairs"],
                        help="antithetic pairs per population (members = 2 x pairs): >= 1, as many as fit in "
                             "memory (estimated before any timing)")
    parser.add_argument("--methods", default="all",
                        help="comma-separated rows to time: " + ", ".join(method_name(*row) for row in BENCH_METHODS)
                        + " (--distributed always times eggroll-r4 and es-batched)")
    parser.add_argument("--repeats", type=positive_int, default=5,
                        help="timed generations per method, after a warm-up: >= 1")
    parser.add_argument("--json", type=exits.not_standard_output, help="also write the figures to this JSON file")
    parser.add_argument("--data-root", help="also time building (afresh) and loading the frame cache of "
                                            "this N-MNIST copy, and serving its minibatches")
    parser.add_argument("--cache-dir", default=None, type=exits.not_standard_output,
                        help="as in train --cache-dir; with --data-root only")


if __name__ == "__main__":  # the benchmark is a command of run.py's
    sys.exit(exits.runs_as("bench.py", "the benchmark", "bench"))
