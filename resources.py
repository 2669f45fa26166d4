"""What a command needs, checked before it starts, so that a request that cannot be served
creates, changes and deletes nothing: memory, estimated from the options, and the N-MNIST copies
and output paths it will use. Each shortfall is a UsageError of one line naming the option.

The memory of one generation (bytes of float32) is the sum of its dominant arrays:
  noise      the factors A_p, B_p of every pair (EGGROLL, with each pair's readout [W2^T | B_p],
             and the layer-1 factors B_p counted twice: on a GPU the sparse product copies them
             whole, on a CPU it is a margin) or the full matrices E_p (vanilla ES, both modes: the
             update regenerates every E_p at once, Eq. (10));
  product    x [B_1 ... B_P] (T N x P r) and a copy of it (with a ones column on a CPU, samples
             last on a GPU), or x [E_1^T ... E_P^T] (T N x P H), and on a CPU one block of 64
             pairs' factors and products;
  LIF        potentials, spikes and currents of one chunk of members (snn.members_per_chunk: a
             cache-sized chunk on a CPU, all members on a GPU, where EGGROLL and inference run
             one kernel that keeps them in registers instead);
  counts     the output and hidden spike counts of every member, and the minibatch's frames
             (on a GPU, also the nonzero lists of the sparse product: column and value per input).
Half again covers temporaries and the allocator: measured with tracemalloc on a CPU, the peaks lie
at 0.4-1.0 times the sum; on an H200, EGGROLL r = 1 with 65,536 members peaked at 3.4 GB (the
estimate: 3.8 GB) and batched vanilla ES with 8,192 at 10.6 GB (the estimate: 29 GB, so the
hyperscale preset fits an 80 GB GPU).
"""
import math
import os
import sys
from dataclasses import replace
from pathlib import Path

import numpy

import data
import eggroll
import snn
from run_folder import RUN_MARK, UsageError, kernel_fix

SLACK = 1.5           # temporaries and allocator, on top of the dominant arrays
NMNIST_SIZE = (60000, 10000)  # training and test recordings of the whole of N-MNIST
EVAL_BATCH = 1000     # samples per batch of training.evaluate


def noise_bytes(method, rank, pairs, network=snn.PAPER):
    """float32 bytes of noise alive at once: factors (EGGROLL) or full matrices (ES), for `network`.

    Both ES modes regenerate every E_p at once for the update, Eq. (10), so they peak alike.
    """
    layers = [network.weight_shape(layer) for layer in range(1, len(network.layers) + 1)]  # (m, n) of each weight
    if method == "eggroll":
        return 4 * pairs * sum(rank * (m + n) + m for m, n in layers)
    if method.startswith("es-"):
        return 4 * pairs * sum(m * n + m for m, n in layers)
    return 0


def generation_bytes(method, rank, pairs, batch, time_bins, gpu=False, network=snn.PAPER):
    """Bytes one generation of `method` (bench's names: eggroll, es-batched, es-sequential,
    inference, bptt) holds at most, its dominant arrays (module docstring) plus half again; the
    hidden layers of a deeper network counted as one as wide as they are together. A
    convolution's layer 1 multiplies each of its positions' patches: T N positions rows of
    in_channels k k inputs, which it also holds (`snn.Network.unfold`)."""
    sizes = network.sizes
    n, h, o = sizes[0], sum(sizes[1:-1]), sizes[-1]
    r, members, rows = rank or 0, 2 * pairs, time_bins * batch
    products, fan_in = rows * network.positions(1), network.weight_shape(1)[1]  # what layer 1's products see
    patches = 0 if network.is_dense() else 4 * products * fan_in
    chunk = members if gpu else snn.members_per_chunk(members, batch, h, numpy)
    lif = 4 * chunk * batch * (2 * time_bins * (h + o + r + 1) + 3 * h)
    block = 4 * eggroll.PAIRS_PER_BLOCK * (r or h) * (fan_in + products)  # CPU: one block of the population product
    counts = 4 * members * batch * (o + 1)
    if method == "eggroll":
        arrays = [noise_bytes(method, r, pairs, network), 4 * pairs * r * fan_in, 4 * products * pairs * (2 * r + 1),
                  4 * pairs * h * (o + r), counts, 8 * products * fan_in if gpu else lif + block, patches]
    elif method == "es-batched":
        arrays = [noise_bytes(method, r, pairs, network), 4 * rows * pairs * h, counts, lif, 0 if gpu else block]
    elif method == "es-sequential":  # one member at a time, but the update's noise of every pair
        arrays = [noise_bytes(method, r, pairs, network), 16 * h * n, counts,
                  4 * batch * (2 * time_bins * (h + o + 1) + 3 * h)]
    elif method == "inference":
        arrays = [counts, 4 * pairs * h * o if gpu else lif, 8 * rows * h, patches]
    else:  # bptt: potentials, spikes and their gradients of every layer, and layer 1's patches, forward and back
        arrays = [32 * rows * (h + o), 3 * patches]
    return int(SLACK * (sum(arrays) + 4 * rows * n))


def parameter_bytes(network, update=True):
    """Bytes of `network`'s float32 weights with Adam's two moments, and the most held beside them at
    once: init's float64 draw of the largest weight or, with `update`, Adam's update (optim.adam_update),
    which holds the step g and the new weights and moments until all are made, and a few temporaries
    of the parameter it is at (five, of the largest, counted)."""
    weights = [math.prod(network.weight_shape(layer)) for layer in range(1, len(network.layers) + 1)]
    beside = max(8 * max(weights), 16 * sum(weights) + 20 * max(weights) if update else 0)
    return 12 * sum(weights) + beside


def run_bytes(config, gpu, recordings=None):
    """(RAM, GPU memory) bytes a training run needs at most, for a data set of `recordings`
    (training, test; None: the whole of N-MNIST): the packed frames (the training split twice
    while it loads), a minibatch being unpacked, and a generation or an evaluation batch,
    whichever is larger (on a GPU, in its memory, with the packed frames and their unpacking); on
    the CPU also the next minibatch, made while an update runs (training.minibatches); and the
    weights with Adam's moments and what init or an update holds beside them (parameter_bytes; on a
    GPU the host holds the weights, their moments and init's draw, the GPU the update)."""
    n_recorded, n_test = recordings or NMNIST_SIZE
    n_val = round(n_recorded / 10)
    growth = config.batch_growth if config.method != "bptt" else 1  # the largest minibatch, at the last generation
    batch = max(1, min(config.batch_size, n_recorded - n_val)) * growth  # a split smaller than a batch is one batch
    evaluated = max(1, min(EVAL_BATCH, max(n_val, n_test)))
    method = {"eggroll": "eggroll", "es": f"es-{config.es_mode}", "bptt": "bptt"}[config.method]
    frames = config.time_bins * snn.SIZES[0]
    shift = 8 * frames * batch if config.max_shift else 0  # data.translate's copies
    work = max(generation_bytes(method, config.rank, config.population // 2, batch, config.time_bins, gpu,
                                config.network) + shift,
               generation_bytes("inference", None, 1, evaluated, config.time_bins, gpu, config.network))
    packed = (n_recorded + n_test) * -(-frames // 8)
    unpacking = 2 * frames * max(batch, evaluated)
    host = packed + n_recorded * -(-frames // 8) + unpacking
    next_minibatch = 4 * frames * batch + shift  # float32, and its shifted copy
    parameters = parameter_bytes(config.network)
    host += parameter_bytes(config.network, update=False) if gpu else 0
    return (host, work + packed + unpacking + parameters) if gpu else (host + work + next_minibatch + parameters, 0)


def meminfo_available():
    """MemAvailable of /proc/meminfo (elsewhere the free pages, else all of them)."""
    try:
        with open("/proc/meminfo") as meminfo:
            return next(int(line.split()[1]) * 1024 for line in meminfo if line.startswith("MemAvailable:"))
    except (OSError, StopIteration, ValueError, IndexError):  # no /proc (macOS)
        pages = next(name for name in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES") if name in os.sysconf_names)
        return os.sysconf(pages) * os.sysconf("SC_PAGE_SIZE")


def read_number(path):
    """The integer in a cgroup file ("max" or a value near 2^63: None, no limit); None if unreadable."""
    try:
        text = Path(path).read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() and int(text) < 2 ** 60 else None


def inactive_file(stat_path, key):
    """The page cache the kernel can reclaim (memory.stat's `key`), 0 if unknown."""
    try:
        for line in Path(stat_path).read_text().splitlines():
            name, _, value = line.partition(" ")
            if name == key and value.strip().isdigit():
                return int(value)
    except (OSError, UnicodeDecodeError):
        pass
    return 0


def cgroup_free_bytes(proc_cgroup="/proc/self/cgroup", root="/sys/fs/cgroup"):
    """What the memory limits of this process's control groups leave, or None where none applies:
    the least, over the group and its ancestors, of limit - (usage - reclaimable page cache), for
    cgroup v2 (memory.max, memory.current) and v1 (memory.limit_in_bytes, memory.usage_in_bytes).
    A group's own folder is looked for where the container mounts it, at `root` itself too."""
    try:
        lines = Path(proc_cgroup).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    root, free = Path(root), []
    for line in lines:
        _, controllers, group = line.split(":", 2) if line.count(":") >= 2 else ("", "", "")
        if controllers == "":  # v2: one hierarchy
            base, files = root, ("memory.max", "memory.current", "inactive_file")
        elif "memory" in controllers.split(","):
            base, files = root / "memory", ("memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file")
        else:
            continue
        parts = [part for part in group.split("/") if part]
        folders = {base.joinpath(*parts[:depth]) for depth in range(len(parts) + 1)}
        for folder in folders:
            limit, usage = read_number(folder / files[0]), read_number(folder / files[1])
            if limit is not None and usage is not None:
                free.append(max(0, limit - max(0, usage - inactive_file(folder / "memory.stat", files[2]))))
    return min(free, default=None)


# Address space a run maps beyond its arrays: the thread that makes the next minibatch
# (training.minibatches), its stack (8 MB) and its malloc arena (64 MB).
BEYOND_ARRAYS = (8 + 64) * 2**20
# OpenBLAS maps a buffer of 32 MB at its first product of some size; if it cannot, it ends the program
# with a line of its own, which no Python code can catch: address_space_free_bytes maps it first.
BLAS_BUFFER = 32 * 2**20


def address_space_free_bytes(status="/proc/self/status"):
    """What the limit on this process's address space (ulimit -v, RLIMIT_AS) leaves beyond what it
    has mapped (VmSize) and BEYOND_ARRAYS, or None where there is no limit. OpenBLAS's buffer is
    mapped first (a product of 128 × 128), where it fits: a later shortfall is NumPy's MemoryError."""
    import resource
    limit = resource.getrlimit(resource.RLIMIT_AS)[0]
    if limit == resource.RLIM_INFINITY:
        return None
    if limit - mapped_bytes(status) < BLAS_BUFFER + BEYOND_ARRAYS:
        return 0
    numpy.ones((128, 128), numpy.float32) @ numpy.ones((128, 128), numpy.float32)  # maps OpenBLAS's buffer
    return max(0, limit - mapped_bytes(status) - BEYOND_ARRAYS)


def mapped_bytes(status="/proc/self/status"):
    """The address space this process has mapped (VmSize of /proc/self/status), 0 where unknown."""
    try:
        with open(status) as lines:
            return next(int(line.split()[1]) * 1024 for line in lines if line.startswith("VmSize:"))
    except (OSError, StopIteration, ValueError, IndexError):
        return 0


def available_bytes(xp):
    """(free RAM, free memory of the current GPU or None on a CPU). Free RAM is the least of
    MemAvailable (/proc/meminfo; elsewhere the free pages) and what the memory limit of the
    process's control group leaves (cgroup v1 or v2: a container's or a batch job's). The GPU's:
    what it and CuPy's pool have free."""
    cgroup = cgroup_free_bytes()
    ram = meminfo_available() if cgroup is None else min(meminfo_available(), cgroup)
    if xp is numpy:
        return ram, None
    return ram, xp.cuda.runtime.memGetInfo()[0] + xp.get_default_memory_pool().free_bytes()


def size_text(n):
    """Bytes as 3.4 GB, 2.9 TB, ..."""
    for unit in ("kB", "MB", "GB", "TB", "PB"):
        n /= 1000
        if n < 1000:
            break
    return f"{n:,.1f} {unit}"


def shortfall(needed, xp, processes=1):
    """(needed, free, where) for the first of RAM, this process's address space and GPU memory that
    `needed` (RAM, GPU bytes) exceeds, with `processes` processes of a job sharing this machine's
    RAM; None if all fit."""
    (ram, gpu), mine = available_bytes(xp), address_space_free_bytes()
    if needed[0] * processes > ram:
        return needed[0] * processes, ram, "RAM" + (f" for {processes} processes" if processes > 1 else "")
    if mine is not None and needed[0] > mine:
        return needed[0], mine, "the address space that ulimit -v leaves this process"
    if gpu is not None and needed[1] > gpu:
        return needed[1], gpu, "GPU memory"
    return None


def check_run_memory(config, xp, recordings=None, processes=1, run=None):
    """UsageError unless the training run `config` fits in free memory (run_bytes). It names the
    option whose halving saves the most, or, for a run of a preset, the run (`run`)."""
    short = shortfall(run_bytes(config, xp is not numpy, recordings), xp, processes)
    if short is None:
        return
    needed, free, where = short
    estimate = f"about {size_text(needed)} of {where} (estimated from its settings), more than the " \
               f"{size_text(free)} free"
    if run is not None:
        raise UsageError(f"run {run} needs {estimate}; leave it out (--runs, --seeds, --populations) or use "
                         f"a machine with more memory")
    elsewhere = "raise the limit (ulimit -v)" if "ulimit" in where else "free memory"
    halved = {"population": max(2, config.population // 4 * 2), "batch_size": max(1, config.batch_size // 2),
              "batch_growth": max(1, config.batch_growth // 2), "time_bins": max(1, config.time_bins // 2),
              "rank": max(1, config.rank // 2), "hidden": narrower(config.network)}
    if config.method == "bptt":
        del halved["population"], halved["batch_growth"]
    if config.method != "eggroll":
        del halved["rank"]
    index = 1 if where == "GPU memory" else 0
    needs = lambda changed: run_bytes(replace(config, **changed), xp is not numpy, recordings)[index]
    needed_here = needs({})
    smallest = needs({"population": 2, "batch_size": 1, "batch_growth": 1, "time_bins": 1, "rank": 1,
                      "hidden": narrowest(config.network)})
    lowered = {name: needs({name: value}) for name, value in halved.items() if value != getattr(config, name)}
    lowered = {name: bytes_ for name, bytes_ in lowered.items() if bytes_ < needed_here}  # halving saves something
    if not lowered or smallest > free:  # no option helps, or all of them at their smallest would not fit
        raise UsageError(f"the run needs {estimate}, and would not fit even at the smallest sizes it grows with; "
                         f"{elsewhere if 'ulimit' in where else 'free memory, or use a machine with more'}")
    name = min(lowered, key=lowered.get)
    option = "--" + name.replace("_", "-")
    raise UsageError(f"{option} {getattr(config, name)}: the run needs {estimate}; lower {option}, or {elsewhere}")


# The most resident memory one `run.py emulate` worker process held: a spawned Python with NumPy and
# emulate.py, emulating a batch of 128 MNIST digits (emulate.BATCH), measured by ru_maxrss at 87 MB
# (Python 3.11, NumPy 2.4, x86-64); a sampled 12-worker emulation held about 53 MB a process.
EMULATE_WORKER_BYTES = 90 * 10**6


def check_emulate_workers(workers):
    """UsageError, before any work, unless `workers` processes of `run.py emulate --workers` fit in
    free RAM (1 emulates in this process, starting none). More workers than CPU cores is allowed."""
    if workers < 2:
        return
    needed, free = workers * EMULATE_WORKER_BYTES, available_bytes(numpy)[0]
    if needed > free:
        raise UsageError(f"--workers {workers}: {workers} worker processes need about {size_text(needed)} of RAM "
                         f"(some {size_text(EMULATE_WORKER_BYTES)} each), more than the {size_text(free)} free; use "
                         f"--workers {max(1, free // EMULATE_WORKER_BYTES)} or fewer")


def narrower(network):
    """--hidden of `network` with every hidden layer half as wide (a convolution: half its kernels)."""
    return ",".join(str(replace(layer, width=max(1, layer.width // 2)) if isinstance(layer, snn.Dense)
                        else replace(layer, channels=max(1, layer.channels // 2))) for layer in network.layers[:-1])


def narrowest(network):
    """--hidden of `network` with every hidden layer one neuron wide (a convolution: one kernel)."""
    return ",".join(str(replace(layer, width=1) if isinstance(layer, snn.Dense) else replace(layer, channels=1))
                    for layer in network.layers[:-1])


def nmnist_recordings(root, option, required=True):
    """(training, test) recordings of the N-MNIST copy at `root` (None: the default), counted
    without reading them. Where there is none: a UsageError naming `option`, or None if not
    `required` (it may be downloaded); where it lacks a part (no download adds one), a UsageError."""
    fix = f"point {option} at a copy"
    if root is None:  # the root the user did not give: $NMNIST_ROOT's, else the default
        fix = f"point {option} (or $NMNIST_ROOT) at a copy"
        option = "$NMNIST_ROOT" if os.environ.get("NMNIST_ROOT") else f"{option} (not given: the default)"
    root = data.resolve_root(root)
    base = data.split_base(root)
    missing = [base / split for split in ("Train", "Test") if base and not (base / split).is_dir()]
    odd = None if base is not None else data.not_a_folder(root)
    if odd:
        problem = f"{root} is {odd}, so it holds no N-MNIST; {fix}"
    elif base is None and data.data_copy_of(root) is not None:  # a split or digit folder, one level too deep
        problem = (f"{root} lies inside the N-MNIST copy {data.data_copy_of(root)}, not at its top; point {option} at "
                   f"{data.data_copy_of(root)}")
    elif base is None:
        problem = (f"{root} holds no N-MNIST (expected {root}/NMNIST/Train/<digit>/*.bin or "
                   f"{root}/Train/<digit>/*.bin); {fix}")
    elif missing:
        problem = f"{root}: {data.split_folder_problem(missing[0])}"
    else:
        try:
            return tuple(len(data.list_recordings(base / split)) for split in ("Train", "Test"))
        except OSError as error:  # a digit missing, or a folder that cannot be read
            problem = f"{root}: {error}"
    if required or base is not None:
        raise UsageError(f"{option} {problem}")
    return None


def refuse_data_folder(folder, fix, what="a run's"):
    """A UsageError ending with `fix` (a text, or one made from the copy's root) if `folder` is part of
    an N-MNIST copy (data.data_folder_problem): a data folder, which the project only reads, is never a
    run's nor a results folder nor the frame cache (`what` it would be), nor is a folder inside one (a
    split or digit folder, one beside them)."""
    problem = data.data_folder_problem(folder)
    if problem is not None:
        raise UsageError(f"{problem}, not {what}; {fix(data.data_copy_of(folder)) if callable(fix) else fix}")


def check_frame_cache(cache_dir):
    """A UsageError if the frame cache's folder (cache_dir, else $EGGROLL_CACHE's or the default) is
    part of an N-MNIST copy or one of the project's own folders, where no cache file belongs."""
    cache = data.frame_cache_dir(cache_dir)
    home, default = Path.home(), not (cache_dir or os.environ.get("EGGROLL_CACHE"))
    blank = "HOME" in os.environ and not os.environ["HOME"].strip()  # ~ is then the file system's root
    if default and home in cache.parents and (blank or not home.is_dir()):  # made for the cache, it would be ours
        what = "$HOME, which is blank (a variable left empty?)" if blank else f"the home folder {home}, which " + (
            "is a file, not a folder" if home.exists() else "does not exist")
        raise UsageError(f"the frame cache's default folder {cache} lies in {what}: give --cache-dir (or "
                         f"$EGGROLL_CACHE) a folder to keep the frames in")
    refuse_data_folder(cache, "point --cache-dir (or $EGGROLL_CACHE) at a folder outside it", what="the frame cache")
    for runs in (False, True):  # neither a run folder nor a folder of them (reproduce's runs/)
        refuse_project_folders(cache, "the frame cache's folder (--cache-dir or $EGGROLL_CACHE)",
                               "point it at a folder of its own", runs=runs, results=False)


def refuse_emulation_place(out, fix):
    """A UsageError ending with `fix` if an emulation into `out` would land in the file system's root
    (`--out $UNSET/`) or in the frame cache folder, where every command would then find N-MNIST and
    refuse the cache as a data folder."""
    where, cache = Path(os.path.realpath(out)), Path(os.path.realpath(data.frame_cache_dir()))
    if where == Path(where.anchor):
        raise UsageError(f"{out} is the file system's root, which holds everyone's files (--out $UNSET/ lands "
                         f"there); {fix}")
    if where == cache or cache in where.parents:
        raise UsageError(f"{out} {'is' if where == cache else 'lies inside'} the frame cache folder {cache}, which "
                         f"every command would then refuse as a copy of N-MNIST; {fix}")


PROJECT = Path(__file__).resolve().parent  # the project's own folder: its code, never a run's nor data
CODE = tuple(PROJECT / name for name in ("examples", "tests", ".ci", "docs", ".git"))  # its code, docs and history


def refuse_project_folders(folder, option, fix, runs=True, results=True):
    """A UsageError naming `option` and ending with `fix` if `folder` is one of the project's own
    folders that is not for it: the project's code, or a folder in one of code and docs (CODE); this
    Python's environment; a run folder (its mark), unless `runs`, and if `runs` a folder that holds
    run folders; a results folder of reproduce (runs/ holding run folders, itself or in a preset's
    folder), unless `results`."""
    where = Path(os.path.realpath(folder))
    kind = project_folder_kind(where, runs, results)
    if kind:
        raise UsageError(f"{option} {folder} is {kind}; {fix}")
    run = next((above for above in where.parents if (above / RUN_MARK).is_file()), None)
    if run is not None:  # a run folder holds its own files only, never another project folder
        raise UsageError(f"{option} {folder} lies inside {run}, a run folder of this project (it holds {RUN_MARK}); "
                         f"{fix}")


def project_folder_kind(where, runs, results):
    """What refuse_project_folders says the folder `where` (a real path) is, or None."""
    def within(place):
        return place == where or place in where.parents
    code = next((place for place in CODE if within(place)), None)
    environment = Path(sys.prefix).resolve()  # (a Python installed at the root holds no folder of its own)
    if where == PROJECT:
        return "the project's own folder (its code)"
    if code is not None:
        return f"{'' if code == where else 'in '}the project's folder {code.name}/, which holds its own files only"
    if environment != Path(environment.anchor) and within(environment):
        return f"{'' if environment == where else 'in '}the folder of this Python's environment ({environment})"
    if not runs and (where / RUN_MARK).is_file():
        return f"a run folder of this project (it holds {RUN_MARK})"
    held = next((child for child in sorted(where.glob(f"*/{RUN_MARK}"))), None) if runs else None
    if held is not None:  # (reproduce's --results, which runs=False marks, holds them in its runs/)
        return f"a folder of run folders ({held.parent.name} is one), each of which holds its own run's files only"
    holds_runs = lambda place: any(path.is_file() for path in place.glob(f"runs/*/{RUN_MARK}"))
    if not results and holds_runs(where):
        return "a results folder (its runs/ holds runs, as reproduce and examples/snn_depth.py make it)"
    if not results and any(holds_runs(child) for child in where.glob("*/")):
        return "a results folder of reproduce (its presets' runs/ hold runs)"
    return None


def refuse_inside_data_folder(folder, fix):
    """A UsageError ending with `fix` if `folder` lies inside an N-MNIST copy (a split or digit folder,
    one beside them) without being the copy itself, which `emulate` may continue."""
    problem = data.data_folder_problem(folder, inside_only=True)
    if problem is not None:
        raise UsageError(f"{problem}; {fix}")


def check_writable(path, option, folder=False):
    """UsageError naming `option` unless `path` can be written without creating anything first:
    a file in an existing folder, or with folder=True a folder or one below a writable folder."""
    path = Path(path)
    if not folder and path.is_symlink():  # nothing is written through a link (run_folder.writing)
        raise UsageError(f"{option} {path} is a symbolic link (to {os.readlink(path)}), and the project writes no "
                         f"file through one: give the path of the file itself")
    if folder and path.is_symlink() and not path.exists():  # a dangling or looping link: nothing to write into
        raise UsageError(f"{option} {path} is a symbolic link to {os.readlink(path)}, which leads to no folder (it "
                         f"does not exist, or the links loop): give a folder, or make the one it names")
    if path.exists() and path.is_dir() != folder:
        raise UsageError(f"{option} {path} is {'not ' if folder else ''}a folder; give a "
                         f"{'folder' if folder else 'file'} path")
    if not folder and path.exists() and not path.is_file():  # a device (/dev/null), a pipe: never replaced
        raise UsageError(f"{option} {path} is not a regular file; give a file path")
    existing = path if folder and path.exists() else path.parent  # a file is replaced through its folder
    while folder and not existing.exists():
        if existing.is_symlink():  # a dangling or looping link on the way: no folder can be made below it
            raise UsageError(f"{option} {path}: {existing} is a symbolic link to {os.readlink(existing)}, which leads "
                             f"to no folder (it does not exist, or the links loop): make the folder it names, or give "
                             f"another path")
        existing = existing.parent
    if not existing.exists():
        raise UsageError(f"{option} {path}: the folder {existing} does not exist; create it or choose another path")
    if not existing.is_dir():
        raise UsageError(f"{option} {path}: {existing} is not a folder; choose another path")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise UsageError(f"{option} {path}: {unwritable(existing, existing == path)}")


def unwritable(folder, itself):
    """Why the existing `folder` cannot be written, and the fix: where the command writes into
    `folder` itself (a run to resume or replace, a results folder), making it writable, since
    another path would start over; where it makes something new in it, that or another path."""
    kernel = kernel_fix(folder)
    if kernel:
        return f"the folder {folder}: {kernel}"
    try:
        read_only = bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        read_only = False
    if read_only:
        return f"the folder {folder} is on a read-only file system; " + (
            "mount it read-write, or copy the folder onto a writable file system and give that path" if itself else
            "choose a path on a writable file system")
    return f"the folder {folder} is not writable (its permissions, or an immutable attribute); " + (
        "make it writable (chmod u+w, or chattr -i if it is immutable) and run again" if itself else
        "make it writable, or choose another path")
