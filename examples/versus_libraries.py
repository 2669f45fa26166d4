"""EGGROLL beside the ES libraries people know, at equal fitness evaluations: a tanh MLP
64-H-10 on scikit-learn's 8 × 8 digits, trained by eggroll.Eggroll (rank 1), evosax's OpenES and
pycma's sep-CMA, each from the same initial weights, each member scored on the whole training
split (mean cross-entropy) every generation, as each library's user writes it: EGGROLL's
members through pop.linear, the others' with every member's weights formed. Each method runs in a
process of its own, so that its peak memory is its own; a generation's time is the median.

    pip install scikit-learn evosax cma      # optional: a library that is missing is left out, said in one line
    OPENBLAS_NUM_THREADS=1 python examples/versus_libraries.py [--hidden 32 256] [--generations 300]

Writes <out>/runs/<method>-h<H>/final.json (test accuracy, seconds per generation, peak memory) and
<out>/table.md, the table of the records made with the settings given (their width aside); a record
or a table of other settings is never written over: such settings take another --out. OpenES and
EGGROLL share sigma and Adam's learning rate; sep-CMA starts from the same point with step size
sigma and adapts its own.
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import argparse
    import importlib.util
    import json
    import resource
    import subprocess
    import time
    from pathlib import Path

    import numpy as np

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))  # the project's modules
    import eggroll                          # noqa: E402
    import exits                            # noqa: E402
    import resources                        # noqa: E402
    from run_folder import refuse_run_folder, write_atomically  # noqa: E402
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; rerun the same command\n")
    sys.exit(130)

METHODS = {"eggroll": "eggroll (this project), rank 1", "openes": "evosax OpenES", "sepcma": "pycma sep-CMA"}
LIBRARIES = {"eggroll": None, "openes": "evosax", "sepcma": "cma"}


def digits(seed):
    """scikit-learn's digits, pixels scaled to [0, 1], 3/4 to train and 1/4 to test."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise exits.UsageError("this comparison's data is scikit-learn's digits: pip install scikit-learn") from None
    x, y = load_digits(return_X_y=True)
    order = np.random.default_rng(seed).permutation(len(y))
    x, y = (x[order] / 16).astype(np.float32), y[order]
    cut = 3 * len(y) // 4
    return (x[:cut], y[:cut]), (x[cut:], y[cut:])


def init_mlp(hidden, seed):
    """W1 (H, 64), b1, W2 (10, H), b2: a layer is x W^T + b."""
    rng = np.random.default_rng(seed)
    return {"W1": (rng.normal(0, 1, (hidden, 64)) / 8).astype(np.float32), "b1": np.zeros(hidden, np.float32),
            "W2": (rng.normal(0, 1, (10, hidden)) / np.sqrt(hidden)).astype(np.float32),
            "b2": np.zeros(10, np.float32)}


def cross_entropy(logits, y):
    """Mean cross-entropy over the samples of every member: logits (..., N, 10) -> (...)."""
    logits = logits - logits.max(axis=-1, keepdims=True)
    log_p = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    return -log_p[..., np.arange(len(y)), y].mean(axis=-1)


def accuracy(params, x, y):
    logits = np.tanh(x @ params["W1"].T + params["b1"]) @ params["W2"].T + params["b2"]
    return float((logits.argmax(axis=1) == y).mean())


def flat(params):
    return np.concatenate([value.ravel() for value in params.values()])


def unflat(vectors, like):
    """(M, D) vectors -> {name: (M, *shape)}: every member's parameters."""
    out, start = {}, 0
    for name, value in like.items():
        out[name] = vectors[:, start:start + value.size].reshape((-1,) + value.shape)
        start += value.size
    return out


def losses_of(vectors, like, x, y):
    """Every member's training loss, its weights formed: (M,)."""
    members = unflat(vectors.astype(np.float32), like)
    h = np.tanh(np.einsum("nd,mhd->mnh", x, members["W1"]) + members["b1"][:, None])
    return cross_entropy(np.einsum("mnh,mch->mnc", h, members["W2"]) + members["b2"][:, None], y)


def train_eggroll(params, x, y, opts, ticks):
    es = eggroll.Eggroll(opts.population, 1, opts.sigma, opts.seed, lr=opts.lr)
    state = es.init(params)
    for _ in range(opts.generations):
        pop = es.ask(state)
        h = np.tanh(pop.linear("W1", x, bias="b1"))                                 # no member's weights formed
        state, _ = es.tell(state, pop, -cross_entropy(pop.linear("W2", h, bias="b2"), y))
        ticks.append(time.perf_counter())
    return state.params


def train_openes(params, x, y, opts, ticks):
    import jax
    import optax
    from evosax.algorithms import Open_ES
    es = Open_ES(opts.population, np.zeros(flat(params).size, np.float32), optimizer=optax.adam(opts.lr),
                 std_schedule=optax.constant_schedule(opts.sigma))
    key = jax.random.key(opts.seed)
    state = es.init(key, flat(params), es.default_params)
    for _ in range(opts.generations):
        key, ask_key, tell_key = jax.random.split(key, 3)
        population, state = es.ask(ask_key, state, es.default_params)
        fitness = losses_of(np.asarray(population), params, x, y)               # evosax minimises
        state, _ = es.tell(tell_key, population, fitness, state, es.default_params)
        ticks.append(time.perf_counter())
    return {name: value[0] for name, value in unflat(np.asarray(state.mean)[None], params).items()}


def train_sepcma(params, x, y, opts, ticks):
    import cma
    es = cma.CMAEvolutionStrategy(flat(params), opts.sigma, {"CMA_diagonal": True, "popsize": opts.population,
                                                              "seed": opts.seed, "verbose": -9})
    for _ in range(opts.generations):
        vectors = np.array(es.ask())
        es.tell(list(vectors), losses_of(vectors, params, x, y).tolist())
        ticks.append(time.perf_counter())
    return {name: value[0].astype(np.float32) for name, value in unflat(es.mean[None], params).items()}


TRAINERS = {"eggroll": train_eggroll, "openes": train_openes, "sepcma": train_sepcma}


def one(method, hidden, opts):
    """Train one method on one width here; its record."""
    (x, y), (x_test, y_test) = digits(opts.seed)
    params = init_mlp(hidden, opts.seed)
    ticks = [time.perf_counter()]
    trained = TRAINERS[method](params, x, y, opts, ticks)
    return {"method": method, "hidden": hidden, "population": opts.population, "generations": opts.generations,
            "evaluations": opts.population * opts.generations, "sigma": opts.sigma, "lr": opts.lr,
            "seed": opts.seed, "train_acc": accuracy(trained, x, y), "test_acc": accuracy(trained, x_test, y_test),
            "seconds_per_generation": float(np.median(np.diff(ticks))),  # the median: no JIT compile in it
            "peak_memory_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def available(method):
    """Whether the library `method` needs is installed (found, not imported: each run imports its
    own in a child process, so the parent's memory and time hold none of them)."""
    library = LIBRARIES[method]
    return library is None or importlib.util.find_spec(library) is not None


SETTINGS = ("population", "generations", "sigma", "lr", "seed")  # what a record was made with, beside its width


def settings_of(record):
    return {name: record.get(name) for name in SETTINGS}


def differences(record, wanted):
    """How a record's settings differ from `wanted`, as "population 256, not 8; ..."."""
    return "; ".join(f"{name} {record.get(name)}, not {wanted[name]}" for name in SETTINGS
                     if record.get(name) != wanted[name])


def table(records):
    """The Markdown table of `records`, all made with the same settings, which its last line states."""
    lines = ["| hidden | method | test % | train % | s / generation | × eggroll's time | peak memory MiB |",
             "|---|---|---|---|---|---|---|"]
    for hidden in sorted({r["hidden"] for r in records}):
        rows = {r["method"]: r for r in records if r["hidden"] == hidden}
        for method in (m for m in METHODS if m in rows):
            r = rows[method]
            ratio = r["seconds_per_generation"] / rows["eggroll"]["seconds_per_generation"] if "eggroll" in rows else None
            lines.append(f"| {hidden} | {METHODS[method]} | {100 * r['test_acc']:.1f} | {100 * r['train_acc']:.1f} | "
                         f"{r['seconds_per_generation']:.4f} | {'–' if ratio is None else f'{ratio:.1f}'} | "
                         f"{r['peak_memory_mib']:.0f} |")
    return "\n".join(lines) + f"\n\n{footer(records[0])}\n"


def footer(settings):
    """The table's last line: the settings its rows were made with."""
    return (f"{settings['population']} members, {settings['generations']} generations "
            f"({settings['population'] * settings['generations']:,} evaluations of the whole training split each), "
            f"sigma {settings['sigma']}, Adam's lr {settings['lr']} (EGGROLL, OpenES), seed {settings['seed']}.")


def read_records(out):
    """The records in out/runs/*/final.json; a UsageError naming one that is not a record."""
    records = []
    for path in sorted((out / "runs").glob("*/final.json")):
        try:
            record = json.loads(path.read_text())
        except (OSError, ValueError) as error:
            raise exits.UsageError(f"{path} is not a record of this comparison ({error}); move it out of "
                                   f"{out / 'runs'}") from None
        if not isinstance(record, dict) or not {"method", "hidden", *SETTINGS} <= record.keys():
            raise exits.UsageError(f"{path} is not a record of this comparison (no method, hidden and settings); "
                                   f"move it out of {out / 'runs'}")
        records.append(record)
    return records


def write_table(out, wanted=None):
    """out/table.md from the records in out/runs/*/final.json made with the settings `wanted`
    ({population, generations, sigma, lr, seed}; by default those of the first record); those of
    other settings are left out, said in one line on stderr; [its path]."""
    records = read_records(out)
    if wanted is None and records:
        wanted = settings_of(records[0])
    kept = [r for r in records if settings_of(r) == wanted]
    if len(kept) < len(records):
        print(f"{len(records) - len(kept)} record(s) in {out / 'runs'} made with other settings are left out of the "
              f"table (e.g. {differences(next(r for r in records if r not in kept), wanted)})", file=sys.stderr)
    if not kept:
        raise exits.UsageError(f"{out / 'runs'} holds no record made with these settings, so there is no table")
    write_atomically(out / "table.md", table(kept))
    return [out / "table.md"]


def check_records(out, widths, methods, wanted):
    """Before any work: a UsageError if a record this command would write over in out/runs, or
    out/table.md, was made with other settings (it is kept: another --out trains these)."""
    table_path = out / "table.md"
    exits.refuse_foreign_file(table_path, b"| hidden | method | ", "this comparison's table", "give another --out")
    if table_path.is_file() and not table_path.read_text(errors="replace").rstrip("\n").endswith(footer(wanted)):
        raise exits.UsageError(f"{table_path} is a table of other settings than these; "
                               f"give another --out for these settings (it is left as it is)")
    for record in read_records(out):
        if record["hidden"] in widths and record["method"] in methods and settings_of(record) != wanted:
            raise exits.UsageError(f"{out / 'runs' / (record['method'] + '-h' + str(record['hidden']))} holds a "
                                   f"record made with other settings ({differences(record, wanted)}); give another "
                                   f"--out for these settings (that record is left as it is)")


def one_request(parser, opts):
    """--one METHOD HIDDEN as (method, width), or the parser's one-line error."""
    method, hidden = opts.one
    if method not in METHODS:
        parser.error(f"argument --one: METHOD must be one of {', '.join(METHODS)}, got {method!r}")
    try:
        return method, exits.at_least(1)(hidden)
    except argparse.ArgumentTypeError as error:
        parser.error(f"argument --one: HIDDEN: {error}")


def main():
    parser = exits.Parser(prog="versus_libraries.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", nargs="+", type=exits.at_least(1), default=[32, 256],
                        help="the widths H of the MLP 64-H-10, each trained by every method (default: 32 256)")
    parser.add_argument("--population", type=exits.members, default=256,
                        help="members of a generation, of every method: an even number (default: 256)")
    parser.add_argument("--generations", type=exits.at_least(1), default=300,
                        help="generations of every method (default: 300)")
    parser.add_argument("--sigma", type=exits.positive_number, default=0.05,
                        help="the noise scale of EGGROLL and OpenES, sep-CMA's initial step size (default: 0.05)")
    parser.add_argument("--lr", type=exits.positive_number, default=0.02,
                        help="Adam's learning rate of EGGROLL and OpenES (default: 0.02)")
    parser.add_argument("--seed", type=exits.at_least(0), default=1,
                        help="of the digits' split, the initial weights and every method's noise (default: 1)")
    parser.add_argument("--out", type=exits.output_folder,
                        help="a folder (not a file), made if new: the records go into <out>/runs/<method>-h<H>/"
                             "final.json, the table into <out>/table.md (default: results/versus)")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "HIDDEN"),
                        help="train one method (eggroll, openes or sepcma) on one width in this process and print "
                             "its record, writing nothing (what the comparison runs in a process of its own)")
    opts = parser.parse_args()
    wanted = {name: getattr(opts, name) for name in SETTINGS}
    asked = one_request(parser, opts) if opts.one else None  # (method, width)
    if asked and opts.out is not None:
        parser.error("argument --one: it prints its record and writes nothing; drop --out, or drop --one to run "
                     "the comparison into --out")
    opts.out = opts.out or ROOT / "results" / "versus"

    def command():
        if asked:
            if not available(asked[0]):
                raise exits.UsageError(f"--one {asked[0]} needs {LIBRARIES[asked[0]]}, which is not installed: pip "
                                       f"install {LIBRARIES[asked[0]]}")
            return exits.say(json.dumps(one(*asked, opts)), "run it again")
        refuse_run_folder(opts.out, "give another --out")  # before the note on libraries left out
        resources.refuse_data_folder(opts.out, "give another --out", what="where records go")
        resources.refuse_project_folders(opts.out, "--out", "give another --out")
        methods = [m for m in METHODS if available(m)]
        missing = [m for m in METHODS if m not in methods]
        check_records(opts.out, opts.hidden, methods, wanted)  # (a refusal is one line, said before the note)
        if missing:
            print(f"left out: {', '.join(f'{METHODS[m]} ({LIBRARIES[m]} is not installed)' for m in missing)}; "
                  f"pip install {' '.join(LIBRARIES[m] for m in missing)} to compare them too", file=sys.stderr)
        (opts.out / "runs").mkdir(parents=True, exist_ok=True)
        for hidden in opts.hidden:
            for method in methods:
                settings = [word for name in SETTINGS for word in (f"--{name}", str(getattr(opts, name)))]
                done = subprocess.run([sys.executable, __file__, *settings, "--one", method, str(hidden)],
                                      capture_output=True, text=True)
                if done.returncode:
                    sys.stderr.write(done.stderr)
                    sys.exit(done.returncode)
                (opts.out / "runs" / f"{method}-h{hidden}").mkdir(exist_ok=True)
                write_atomically(opts.out / "runs" / f"{method}-h{hidden}" / "final.json",
                                 json.dumps(json.loads(done.stdout), indent=1) + "\n")
        exits.say(write_table(opts.out, wanted)[0].read_text(), f"the table is in {opts.out / 'table.md'}")
    return exits.handled(command, "rerun the same command")


if __name__ == "__main__":
    exits.leave(main())
