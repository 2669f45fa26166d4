"""EGGROLL beside the ES libraries people know, at equal fitness evaluations: a tanh MLP
64-H-10 on scikit-learn's 8 x 8 digits, trained by eggroll.Eggroll (rank 1), evosax's OpenES and
pycma's sep-CMA, each from the same initial weights, each member scored on the whole training
split (mean cross-entropy) every generation, as each library's user writes it: EGGROLL's
members through pop.linear, the others' with every member's weights formed. Each method runs in a
process of its own, so that its peak memory is its own; a generation's time is the median.

    pip install scikit-learn evosax cma      # optional: a library that is missing is left out
    OPENBLAS_NUM_THREADS=1 python examples/versus_libraries.py [--hidden 32 256] [--generations 300]

Writes <out>/runs/<method>-h<H>/final.json (test accuracy, seconds per generation, peak memory) and
<out>/table.md. OpenES and EGGROLL share sigma and Adam's learning rate; sep-CMA starts from the
same point with step size sigma and adapts its own.
"""
import importlib.util
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the project's modules
import eggroll                          # noqa: E402
import exits                            # noqa: E402
from run_folder import write_atomically  # noqa: E402

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


def table(records):
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
    r = records[0]
    return "\n".join(lines) + (f"\n\n{r['population']} members, {r['generations']} generations "
                               f"({r['evaluations']:,} evaluations of the whole training split each), sigma "
                               f"{r['sigma']}, Adam's lr {r['lr']} (EGGROLL, OpenES), seed {r['seed']}.\n")


def write_table(out):
    """out/table.md from the records in out/runs/*/final.json; [its path]."""
    records = [json.loads(path.read_text()) for path in sorted((out / "runs").glob("*/final.json"))]
    write_atomically(out / "table.md", table(records))
    return [out / "table.md"]


def main():
    parser = exits.Parser(prog="versus_libraries.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", nargs="+", type=exits.at_least(1), default=[32, 256])
    parser.add_argument("--population", type=exits.at_least(2), default=256)
    parser.add_argument("--generations", type=exits.at_least(1), default=300)
    parser.add_argument("--sigma", type=exits.positive_number, default=0.05)
    parser.add_argument("--lr", type=exits.positive_number, default=0.02)
    parser.add_argument("--seed", type=exits.at_least(0), default=1)
    parser.add_argument("--out", type=exits.output_folder, default=ROOT / "results" / "versus")
    parser.add_argument("--one", nargs=2, metavar=("METHOD", "HIDDEN"),
                        help="train one method on one width in this process and print its record (what the "
                             "comparison runs in a process of its own)")
    opts = parser.parse_args()

    def command():
        if opts.one:
            return exits.say(json.dumps(one(opts.one[0], int(opts.one[1]), opts)), "run it again")
        (opts.out / "runs").mkdir(parents=True, exist_ok=True)
        for hidden in opts.hidden:
            for method in (m for m in METHODS if available(m)):
                done = subprocess.run([sys.executable, __file__, *sys.argv[1:], "--one", method, str(hidden)],
                                      capture_output=True, text=True)
                if done.returncode:
                    sys.stderr.write(done.stderr)
                    sys.exit(done.returncode)
                (opts.out / "runs" / f"{method}-h{hidden}").mkdir(exist_ok=True)
                write_atomically(opts.out / "runs" / f"{method}-h{hidden}" / "final.json",
                                 json.dumps(json.loads(done.stdout), indent=1) + "\n")
        exits.say(write_table(opts.out)[0].read_text(), f"the table is in {opts.out / 'table.md'}")
    return exits.handled(command, "rerun the same command")


if __name__ == "__main__":
    sys.exit(main())
