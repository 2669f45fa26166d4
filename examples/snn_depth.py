"""Does depth pay? Spiking networks of N-MNIST of one hidden layer (64, the paper's; 128), two
(128, 64) and convolutional ones (conv8k5s3: 8 kernels of 5 × 5, stride 3), trained by EGGROLL
r = 1 at one population and budget and by hand-written BPTT, each with one recipe, through
`run.py train`; then a table of their accuracy, time and activity from the runs' records.

    python examples/snn_depth.py --data-root DIR [--real-root DIR] [--hidden 64 128,64 conv8k5s3]
                                 [--methods eggroll bptt] [--out results/depth]

A run is resumed where it stopped and a finished one left as it is (run.py train --resume refuses a
folder trained with other settings), so the script can be stopped and run again; copies with
different --hidden share the work of one folder. --real-root scores every run on another N-MNIST
copy (real.json, scored again when the recordings differ from those it scored; refused before any
run trains if it holds any of --data-root's recordings); the table names
the copy its real-recordings scores are from, in the header, or in each cell if they are from
several.
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import json
    import os
    import subprocess
    from pathlib import Path

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))  # the project's modules
    import config                                # noqa: E402
    import exits                                 # noqa: E402
    import resources                             # noqa: E402
    import snn                                   # noqa: E402
    import training                              # noqa: E402
    from run_folder import (RUN_MARK, final_problem, real_mismatch, real_problem, refuse_run_folder,  # noqa: E402
                            write_atomically)
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; rerun the same command to continue (finished runs are left as they are)\n")
    sys.exit(130)

# The `best` preset's recipes (config.PRESETS["best"]): EGGROLL r = 1, 512 members, minibatches of 256
# recordings; BPTT with its surrogate, weight decay and shifts. The options below change EGGROLL's
# budget, population, sigma, learning rate and readout scale, BPTT's epochs and shifts, and both methods'
# initialisation (its scale, and its rule: snn.INIT_RULES).
RECIPES = {
    "eggroll": ["--method", "eggroll", "--rank", "1", "--batch-size", "256", "--lr-schedule", "cosine",
                "--eval-every", "100"],
    "bptt": ["--method", "bptt", "--batch-size", "256", "--lr", "0.02", "--lr-schedule", "cosine",
             "--logit-scale", "10", "--slope", "1", "--weight-decay", "0.1"],
}
# option: (default, the methods it applies to, its mark in a run's folder name away from the default)
LEVERS = {"generations": (1000, ("eggroll",), "g"), "epochs": (5, ("bptt",), "e"), "sigma": (0.2, ("eggroll",), "sigma"),
          "lr": (0.03, ("eggroll",), "lr"), "logit_scale": (5.0, ("eggroll",), "logit"),
          "init_std": (0.3, ("eggroll", "bptt"), "init"), "init_rule": ("paper", ("eggroll", "bptt"), "init-"),
          "output_sigma_scale": (1.0, ("eggroll",), "out"), "inner_scale": (1.0, ("eggroll",), "inner"),
          "readout": ("rate", ("eggroll", "bptt"), "readout-"), "population": (512, ("eggroll",), "m"),
          "max_shift": (1, ("bptt",), "shift")}


def levers(method, opts, hidden=None):
    """The options of LEVERS that apply to `method` (and to the network `hidden`, where given:
    --inner-scale and --init-rule pass-through only to one with hidden layers after the first, which
    they change; on one hidden layer pass-through is the paper's rule), as {name: value}."""
    return {name: getattr(opts, name) for name, (_, methods, _) in LEVERS.items() if method in methods
            and not (inner_only(name, getattr(opts, name)) and hidden is not None and not has_inner_layers(hidden))}


def inner_only(name, value):
    """Whether lever `name` at `value` changes only the hidden layers after the first."""
    return name == "inner_scale" or name == "init_rule" and value == "pass-through"


def has_inner_layers(hidden):
    """Whether the network of --hidden `hidden` has hidden layers after the first, as run.py train reads it."""
    return config.RunConfig(hidden=hidden).has_inner_layers


def written(value):
    """A setting as folder names and the table write it: a number short (0.1, 300) where that reads
    back as it, else in full (0.10000001), so that two settings never read alike; text as it is."""
    short = value if isinstance(value, str) else format(value, "g")
    return short if isinstance(value, str) or float(short) == value else repr(value)


def run_folder(method, hidden, opts):
    """runs/hidden-128-64-seed1 (EGGROLL, as its first runs were named), runs/bptt-hidden-128-64-seed1;
    each lever away from its default marks the name (`written`): hidden-128-64-g300-logit1-seed1,
    hidden-64-readout-potential-seed1."""
    marks = "".join(f"-{LEVERS[name][2]}{written(value)}"
                    for name, value in levers(method, opts, hidden).items() if value != LEVERS[name][0])
    prefix = "" if method == "eggroll" else f"{method}-"
    return opts.out / "runs" / f"{prefix}hidden-{hidden.replace(',', '-')}{marks}-seed{opts.seed}"


def train(method, hidden, opts):
    """Train (or resume, or leave finished) the run of `method` on `hidden`; score it on --real-root."""
    out = run_folder(method, hidden, opts)
    settings = [part for name, value in levers(method, opts, hidden).items()
                for part in (f"--{name.replace('_', '-')}", str(value))]
    command = [sys.executable, str(ROOT / "run.py"), "train", *RECIPES[method], *settings, "--hidden", hidden,
               "--seed", str(opts.seed), "--data-root", opts.data_root,
               "--out", str(out), "--quiet", *(["--resume"] if out.exists() else [])]
    trained = subprocess.run(command, env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"},
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(trained.stderr)  # run.py's warnings (a step that learned nothing, say), or why it failed
    if trained.returncode:  # said in one line (a Ctrl-C reaches this script too, which says its own)
        sys.exit(trained.returncode)
    if opts.real_root and not training.scored_on(out, opts.real_root):  # not yet, or on other recordings
        scored = subprocess.run([sys.executable, str(ROOT / "run.py"), "evaluate", str(out),
                                 "--data-root", opts.real_root], capture_output=True, text=True)
        sys.stderr.write(scored.stderr)  # evaluate's warnings, or why it failed
        if scored.returncode:
            sys.exit(scored.returncode)
        real = json.loads(scored.stdout)
        real["run"] = os.path.relpath(out, ROOT) if out.resolve().is_relative_to(ROOT) else str(out)
        real["data_root"] = copy_name(opts.real_root)
        write_atomically(out / "real.json", json.dumps(real, indent=1))


def copy_name(root):
    """How real.json and the table name an N-MNIST copy: relative to the project where it lies inside
    the project or beside it (../shared/..., a link or not), so that the records read the same on any
    machine; else its absolute path, never a climb of several folders."""
    absolute = os.path.abspath(root)  # as named, links not followed: ../shared may be one
    relative = os.path.relpath(absolute, ROOT)
    return relative if not relative.startswith(os.path.join("..", "..")) else absolute


def settings_of(out):
    """The run's config.json (the paper's 2312-64-10 if it names no hidden layers)."""
    return {"hidden": "64", **json.loads((out / "config.json").read_text())}


def copy_scored(real):
    """The N-MNIST copy a real.json scored its run on, as --real-root named it (relative to the
    repository); the first runs' real.json did not record it."""
    return real.get("data_root", "copy not recorded")


def changed_copies(reals):
    """The copies whose recordings changed between the runs scored on them: two real.json naming one
    copy but recording other recordings (runs from before real.json recorded them agree with any).
    Each is said in a warning; the table names the recordings each such run scored."""
    recorded = {}
    for real in reals:
        if real.get("data") is not None:
            recorded.setdefault(copy_scored(real), set()).add(json.dumps(real["data"], sort_keys=True))
    changed = sorted(name for name, contents in recorded.items() if len(contents) > 1)
    for name in changed:
        print(f"warning: the runs were scored on {len(recorded[name])} different contents of {name} (its "
              f"recordings changed between them; each row names its test split): rerun with --real-root {name} "
              f"and those runs' --hidden to score them all on it as it is now", file=sys.stderr)
    return changed


def table(folders):
    """A Markdown table of the finished runs: method, network, budget, seed, the recipe's levers, test,
    validation and real-recordings accuracy (the copy scored named in the header, or in each cell
    if the runs were scored on different copies), seconds per update and of all updates, hidden
    spikes and synaptic operations per test sample."""
    reals = {}
    for out in folders:
        if (out / "real.json").exists():
            real = json.loads((out / "real.json").read_text())
            why = real_problem(real) or real_mismatch(real, out, json.loads((out / "final.json").read_text()))
            if why is None:
                reals[out] = real
            else:  # damaged, or copied from another run: not this run's score
                print(f"warning: {out / 'real.json'} is no score of this run ({why}): it is left "
                      f"out of the table; --real-root scores this run again", file=sys.stderr)
    copies = sorted({copy_scored(real) for real in reals.values()})
    changed = changed_copies(reals.values())
    one_copy = len(copies) == 1 and not changed
    lines = ["| method | network | members | budget | seed | σ, lr, logit scale, init std | test % | val % | real "
             "recordings % "
             + (f"({copies[0]}) " if one_copy else "") + "| s / update | step s | hidden spikes | synaptic ops |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for out in folders:
        final, settings = json.loads((out / "final.json").read_text()), settings_of(out)
        if out not in reals:
            real = "–"
        elif one_copy:
            real = f"{100 * reals[out]['accuracy']['all']:.2f}"
        elif copy_scored(reals[out]) in changed:  # which of the copy's contents it scored
            recordings = (reals[out].get("data") or {}).get("test", "not recorded")
            real = f"{100 * reals[out]['accuracy']['all']:.2f} ({copy_scored(reals[out])}, test split {recordings})"
        else:
            real = f"{100 * reals[out]['accuracy']['all']:.2f} ({copy_scored(reals[out])})"
        network = f"2312-{settings['hidden'].replace(',', '-')}-10"
        evolved = settings["method"] != "bptt"
        count, unit = (settings["generations"], "generation") if evolved else (settings["epochs"], "epoch")
        budget = f"{count} {unit}" if count == 1 else f"{count} {unit}s"
        sparsity = final["test_sparsity"]
        recipe = ", ".join(written(settings[name]) if name in settings else "–"
                           for name in ("sigma", "lr", "logit_scale", "init_std")) if evolved else \
            f"–, –, –, {written(settings['init_std'])}"
        if settings.get("output_sigma_scale", 1.0) != 1.0:  # levers of a few runs: named where they are used
            recipe += f"; output σ × {written(settings['output_sigma_scale'])}"
        if settings.get("inner_scale", 1.0) != 1.0:
            recipe += f"; inner σ, lr × {written(settings['inner_scale'])}"
        if settings.get("readout", "rate") != "rate":
            recipe += f"; {settings['readout']} readout"
        if settings.get("init_rule", "paper") != "paper":
            recipe += f"; {settings['init_rule']} init"
        if not evolved and settings.get("max_shift", 1) != 1:
            recipe += f"; shifts of up to {settings['max_shift']} pixels" if settings["max_shift"] else "; no shifts"
        seconds = final["total_seconds"]
        step_seconds = f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.2f}"  # a run of a few steps: not 0
        lines.append(f"| {settings['method']} | {network} | {settings['population'] if evolved else '–'} | {budget} | "
                     f"{settings['seed']} | {recipe} | {100 * final['test_acc']:.2f} | "
                     f"{100 * final['val_acc']:.2f} | {real} | "
                     f"{final['median_seconds_per_generation']:.3f} | {step_seconds} | "
                     f"{sparsity['hidden_spikes_per_sample']:.1f} | {sparsity['synaptic_ops_per_sample']:,.0f} |")
    return "\n".join(lines)


def main():
    parser = exits.Parser(prog="snn_depth.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True, help="N-MNIST to train on (run.py train --data-root)")
    parser.add_argument("--real-root", help="another N-MNIST copy to score every run on")
    parser.add_argument("--out", type=exits.output_folder, default=ROOT / "results" / "depth",
                        help="folder of the runs and table.md (default: results/depth)")
    parser.add_argument("--hidden", nargs="+", type=config.hidden_option, default=["64", "128", "128,64", "conv8k5s3"],
                        help="the hidden layers of each network, as run.py train --hidden (default: 64 128 128,64 "
                             "conv8k5s3)")
    parser.add_argument("--methods", nargs="+", default=["eggroll", "bptt"], choices=sorted(RECIPES),
                        help="which methods train each network, each with its recipe (default: eggroll bptt)")
    parser.add_argument("--generations", type=exits.at_least(1), help="EGGROLL's generations (default: 1000)")
    parser.add_argument("--epochs", type=exits.at_least(1), help="BPTT's epochs (default: 5)")
    parser.add_argument("--sigma", type=exits.positive_number, help="EGGROLL's sigma (default: 0.2)")
    parser.add_argument("--lr", type=exits.learning_rate, help="EGGROLL's learning rate (default: 0.03)")
    parser.add_argument("--logit-scale", type=exits.positive_number, help="EGGROLL's readout scale (default: 5)")
    parser.add_argument("--init-std", type=exits.positive_number,
                        help="W, b ~ N(0, init_std^2) in every layer, as --init-rule says (default: 0.3)")
    parser.add_argument("--init-rule", choices=snn.INIT_RULES,
                        help="paper: every layer's W ~ N(0, init_std^2); fan-in: a later layer's scaled by "
                             "sqrt(64 / its inputs); pass-through: a later hidden layer a copy of its first inputs, "
                             "as run.py train --init-rule (default: paper)")
    parser.add_argument("--output-sigma-scale", type=exits.positive_number,
                        help="EGGROLL's sigma of the output layer as a multiple of --sigma (default: 1)")
    parser.add_argument("--inner-scale", type=exits.positive_number,
                        help="EGGROLL's sigma and lr of the hidden layers after the first as a multiple of "
                             "--sigma and --lr, in the networks that have such layers (default: 1)")
    parser.add_argument("--readout", choices=snn.READOUTS,
                        help="what the softmax reads of the output neurons, as run.py train --readout (default: rate)")
    parser.add_argument("--population", type=exits.at_least(2), help="EGGROLL's members, an even number (default: 512)")
    parser.add_argument("--max-shift", type=exits.at_least(0, below=34),  # run.py train's range, before any run
                        help="BPTT moves each recording of a minibatch by up to this many pixels each way, as "
                             "run.py train --max-shift (default: 1)")
    parser.add_argument("--seed", type=exits.at_least(0), default=1,
                        help="every run's --seed: its initial weights, noise and minibatches (default: 1)")
    opts = parser.parse_args()
    for name, (default, methods, _) in LEVERS.items():  # an option no chosen method reads is refused, not passed over
        if getattr(opts, name) is not None and not set(methods) & set(opts.methods):
            parser.error(f"--{name.replace('_', '-')} is for {' and '.join(methods)}, which --methods "
                         f"{' '.join(opts.methods)} does not train: drop it, or add {methods[0]} to --methods")
        setattr(opts, name, default if getattr(opts, name) is None else getattr(opts, name))
    for name, given in (("inner_scale", "--inner-scale scales"), ("init_rule", "--init-rule pass-through draws")):
        value = getattr(opts, name)
        if value != LEVERS[name][0] and inner_only(name, value) and not any(map(has_inner_layers, opts.hidden)):
            parser.error(f"{given} the hidden layers after the first, which none of --hidden {' '.join(opts.hidden)} "
                         f"has: add a network of two hidden layers (e.g. 128,64), or drop it")

    def command():
        refuse_run_folder(opts.out, "give another --out")
        resources.refuse_project_folders(opts.out, "--out", "give another --out")
        resources.refuse_data_folder(opts.out, "give another --out", what="where runs and their table go")
        exits.refuse_foreign_file(opts.out / "table.md", b"| method | network | ", "this table", "give another --out")
        for root, option in ((opts.data_root, "--data-root"), (opts.real_root, "--real-root")):
            if root is not None:  # before any run trains, not after
                resources.nmnist_recordings(root, option)
        own_splits = training.load_splits(opts.data_root, config.RunConfig.time_bins)
        own = own_splits.fingerprint()
        if opts.real_root is not None:  # read now: a damaged recording, or a copy of --data-root, said before training
            training.check_real_root(opts.real_root, opts.data_root)
            real = training.load_splits(opts.real_root, config.RunConfig.time_bins)
            shared = training.shared_recordings(own_splits, real)  # a copy, or one that holds some of them
            if shared:  # (a recording of no event, alike in every copy, is not counted)
                raise exits.UsageError(f"--real-root {opts.real_root} shares {shared} of its recordings with "
                                       f"--data-root {opts.data_root}, the runs' own data, and their scores would be "
                                       f"reported as other recordings'; give another copy of N-MNIST, or drop "
                                       f"--real-root")
        trained = [(path.parent, data_of(path)) for path in sorted((opts.out / "runs").glob("*/final.json"))]
        if trained:  # a table never mixes two data sets: refused before any run trains on another
            check_one_data(trained + [(f"--data-root {opts.data_root}", own)])
        for method in opts.methods:
            for hidden in opts.hidden:
                train(method, hidden, opts)
        exits.say(write_table(opts.out)[0].read_text(), f"the table is in {opts.out / 'table.md'}")
    return exits.handled(command, "rerun the same command to continue (finished runs are left as they are)")


def is_finished_run(path):
    """Whether `path` holds a finished run (run.py's mark, config.json, an intact final.json with its
    test spikes); any other folder or file under runs/ is left out of the table with a line on stderr."""
    try:
        final = json.loads((path / "final.json").read_text())
    except (OSError, ValueError):
        final = None
    if not (path / "final.json").exists():  # a run not yet finished has none: nothing to say
        return False
    marked = (path / RUN_MARK).is_file() and (path / "config.json").is_file()
    if not marked:
        why = "not a run folder of run.py train"
    elif final is None:
        why = "its final.json cannot be read as JSON"
    else:
        why = final_problem(final) or ("its final.json has no test_sparsity" if "test_sparsity" not in final else None)
    if why:
        print(f"warning: {path} is left out of the table: not a finished run of run.py train ({why})", file=sys.stderr)
    return why is None


def data_of(final_path):
    """The data a final.json says its run trained on (None: a run from before runs recorded it, or a
    final.json that cannot be read, which the table leaves out with a line)."""
    try:
        return json.loads(final_path.read_text())["data"]["fingerprint"]
    except (OSError, ValueError, KeyError, TypeError):
        return None


def check_one_data(runs):
    """A UsageError unless every run of [(name, data fingerprint)] trained on the same data: a table
    never mixes two data sets (runs from before runs recorded their data, None, pass)."""
    seen = {}
    for name, data in runs:
        if data is not None:
            seen.setdefault(json.dumps(data, sort_keys=True), name)
    if len(seen) > 1:
        first, second = list(seen.values())[:2]
        raise exits.UsageError(f"{first} and {second} are different data sets (a run's final.json says which it "
                               f"trained on), and a table never mixes two: give the --data-root the runs trained on, "
                               f"or another --out")


def write_table(out):
    """table.md of the finished runs under out/runs, EGGROLL's first, by budget, the shallower and
    then the smaller networks first; [its path]."""
    finished = [path for path in sorted((out / "runs").iterdir()) if is_finished_run(path)]
    check_one_data([(path, data_of(path / "final.json")) for path in finished])
    def order(path):
        settings = settings_of(path)
        network = snn.Network.parse(settings["hidden"])
        budget = settings.get("generations", 0) if settings["method"] == "eggroll" else settings["epochs"]
        return settings["method"] != "eggroll", budget, len(network.layers), sum(network.sizes), path.name
    text = table(sorted(finished, key=order))
    write_atomically(out / "table.md", text + "\n")
    return [out / "table.md"]


if __name__ == "__main__":
    exits.leave(main())
