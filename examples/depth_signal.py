"""Where does a deeper spiking network lose EGGROLL's signal? On one minibatch, per layer: how
often its neurons fire, and how well EGGROLL's gradient estimate g (Eqs. (7)-(8)) points along
BPTT's surrogate gradient (the cosine between g and -dL/dW), for several population sizes and
ranks; at initialisation, every --every generations and at the end of an EGGROLL run (the `best`
recipe's 512 members at rank 1 by default, its sigma, learning rate and readout scale unless given).

    OPENBLAS_NUM_THREADS=1 python examples/depth_signal.py --data-root DIR --hidden 128,64 [--generations 300]

Prints the table at each measurement; with --out DIR also writes
DIR/<network>-sigma<sigma>-logit<scale>.jsonl (one record per generation, population, rank and
layer, each with the settings it was made with and the data's fingerprint) and
DIR/<network>-sigma<sigma>-logit<scale>.md (its table, whose last line states the settings); records
or a table of other settings, or records of other data, are never written over: they take another
--out. A cosine near 0 means the layer's step is mostly noise: Adam then
moves its weights by about lr per generation all the same (Eq. (9) normalises the step), a random
walk that the layer's signal has to outrun. A firing rate of 0 in the output layer means every
member scores -ln 10 and ties: the estimate has nothing to rank.
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import json
    from pathlib import Path

    import numpy as np

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))  # the project's modules
    import baselines                          # noqa: E402
    import config                             # noqa: E402
    import eggroll                            # noqa: E402
    import exits                              # noqa: E402
    import optim                              # noqa: E402
    import resources                          # noqa: E402
    import snn                                # noqa: E402
    import snn_eggroll                        # noqa: E402
    import training                           # noqa: E402
    from run_folder import refuse_run_folder, write_atomically  # noqa: E402
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; rerun the same command\n")
    sys.exit(130)

TRAIN_POPULATION = 512  # the `best` preset's EGGROLL recipe: 512 members, r = 1, lr on a cosine
SLOPE = 1.0  # BPTT's surrogate slope in the `best` preset
SETTINGS = ("generations", "every", "populations", "ranks", "batch_size", "sigma", "lr", "logit_scale", "init_std",
            "seed")  # what the records were made with, beside the network


def eggroll_estimate(params, frames, labels, network, population, rank, seed, opts):
    """g of Eqs. (7)-(8), before Adam: ask -> forward -> fitness -> centred ranks -> gradient."""
    es = snn_eggroll.Config(population, rank, opts.sigma, seed, opts.logit_scale).method(params)
    members = es.ask(eggroll.State(params, {}, 0))
    counts, _ = snn_eggroll.population_forward(members, frames, snn.LIF(), network=network)
    shaped = eggroll.centred_ranks(snn_eggroll.fitness(counts, labels, frames.shape[0], opts.logit_scale))
    return eggroll.gradient(eggroll.pair_differences(shaped), members, es.pairs)


def cosine(a, b):
    return float((a * b).sum() / max(np.sqrt((a * a).sum() * (b * b).sum()), 1e-30))


def measure(params, frames, labels, network, generation, opts):
    """The records of one point of the run: every layer's firing rate and, per population and
    rank, the cosine between EGGROLL's g and BPTT's -gradient of its weights, each with the settings."""
    cache = baselines.bptt_forward(params, frames, snn.LIF(), k=SLOPE, network=network)
    bptt = baselines.bptt_backward(params, cache, labels, snn.LIF(), SLOPE, opts.logit_scale, network=network)
    layers = range(1, len(network.layers) + 1)
    rates = {layer: float(cache[f"o{layer}"].mean()) for layer in layers}
    records = []
    for population in opts.populations:
        for rank in opts.ranks:
            estimate = eggroll_estimate(params, frames, labels, network, population, rank, opts.seed + generation, opts)
            records += [{"network": str(network), "generation": generation, "population": population, "rank": rank,
                         "layer": layer, "firing_rate": rates[layer],
                         "cosine": cosine(estimate[f"W{layer}"], -bptt[f"W{layer}"]), "settings": settings_of(opts)}
                        for layer in layers]
    return records


def table(records):
    """Markdown: a row per generation, population and rank; per layer, the cosine (and, once per
    generation, the firing rate)."""
    layers = sorted({r["layer"] for r in records})
    lines = ["| generation | members | rank | " + " | ".join(f"cos W{layer}" for layer in layers) + " | "
             + " | ".join(f"rate {layer}" for layer in layers) + " |", "|" + "---|" * (3 + 2 * len(layers))]
    keys = sorted({(r["generation"], r["population"], r["rank"]) for r in records})
    for key in keys:
        row = {r["layer"]: r for r in records if (r["generation"], r["population"], r["rank"]) == key}
        lines.append(f"| {key[0]} | {key[1]} | {key[2]} | " + " | ".join(f"{row[layer]['cosine']:.3f}" for layer in layers)
                     + " | " + " | ".join(f"{row[layer]['firing_rate']:.3f}" for layer in layers) + " |")
    return "\n".join(lines) + "\n"


def settings_of(opts):
    return {name: getattr(opts, name) for name in SETTINGS}


def footer(settings):
    """The table's last line: the settings its rows were made with."""
    members, ranks = (", ".join(map(str, settings[name])) for name in ("populations", "ranks"))
    return (f"Generations {settings['generations']}, measured every {settings['every']}, minibatch "
            f"{settings['batch_size']}; members {members}; ranks {ranks}; sigma {settings['sigma']:g}, lr "
            f"{settings['lr']:g} on a cosine, readout scale {settings['logit_scale']:g}, init std "
            f"{settings['init_std']:g}, seed {settings['seed']}.")


def differences(made, wanted):
    """How the settings `made` differ from `wanted`, as "populations [16], not [32]; ..."."""
    if not isinstance(made, dict):
        return "the records do not state theirs"
    return "; ".join(f"{key} {made.get(key)}, not {wanted[key]}" for key in SETTINGS if made.get(key) != wanted[key])


def check_records(out, name, wanted):
    """Before any work: a UsageError if the records or the table under `out` were made with other
    settings than `wanted` (they are kept: another --out measures these)."""
    records, table_path = out / f"{name}.jsonl", out / f"{name}.md"
    if records.is_file():
        try:
            made = json.loads(records.read_text(errors="replace").partition("\n")[0]).get("settings")
        except ValueError:
            made = None
        if made != wanted:
            raise exits.UsageError(f"{records} holds records made with other settings ({differences(made, wanted)}); "
                                   f"give another --out for these settings (they are left as they are)")
    if table_path.is_file() and not table_path.read_text(errors="replace").rstrip("\n").endswith(footer(wanted)):
        raise exits.UsageError(f"{table_path} is a table of other settings than these; give another --out for these "
                               f"settings (it is left as it is)")


def check_data(out, name, fingerprint):
    """A UsageError if the records under `out` were measured on other data (records older than the
    data's record hold none: they are taken as they are)."""
    records = out / f"{name}.jsonl"
    if records.is_file():
        try:
            made = json.loads(records.read_text(errors="replace").partition("\n")[0]).get("data")
        except ValueError:
            made = None
        if made is not None and made != fingerprint:
            raise exits.UsageError(f"{records} holds records measured on other data (--data-root); give another --out "
                                   f"for this data (they are left as they are)")


def main(argv=None):
    parser = exits.Parser(prog="depth_signal.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True, help="folder holding N-MNIST (its Train and Test folders)")
    parser.add_argument("--hidden", type=config.hidden_option, default="128,64",
                        help="the hidden layers, as run.py train --hidden (default: 128,64)")
    parser.add_argument("--generations", type=exits.at_least(1), default=300, help="EGGROLL generations of the run (default: 300)")
    parser.add_argument("--every", type=exits.at_least(1), default=100,
                        help="generations between measurements, the last measured too (default: 100)")
    parser.add_argument("--populations", type=exits.populations, default=[256, 1024, 4096],
                        help="members of the estimates compared, each an even number (default: 256,1024,4096)")
    parser.add_argument("--ranks", type=exits.integers_at_least(1), default=[1, 4],
                        help="ranks of the estimates compared (default: 1,4)")
    parser.add_argument("--batch-size", type=exits.at_least(1), default=256, help="samples of the minibatch measured and of each "
                                                                    "training generation, all of a split that holds fewer (default: 256)")
    parser.add_argument("--sigma", type=exits.positive_number, default=0.2, help="EGGROLL's sigma (default: 0.2)")
    parser.add_argument("--lr", type=exits.positive_number, default=0.03, help="EGGROLL's learning rate on a cosine (default: 0.03)")
    parser.add_argument("--logit-scale", type=exits.positive_number, default=5.0, help="the readout's scale (default: 5)")
    parser.add_argument("--init-std", type=exits.positive_number, default=snn.INIT_STD,
                        help=f"W, b ~ N(0, init_std^2) (default: {snn.INIT_STD:g})")
    parser.add_argument("--seed", type=exits.at_least(0), default=1,
                        help="of the initial weights, the run's noise and minibatches, and the noise of the "
                             "estimates measured (default: 1)")
    parser.add_argument("--out", type=exits.output_folder,
                        help="also write the records and the table into this folder (results/depth/signal: the "
                             "committed ones)")
    parser.add_argument("--cache-dir", default=None,
                        help="folder for the frame cache (default: $EGGROLL_CACHE, else ~/.cache/eggroll-snn/frames)")
    opts = parser.parse_args(argv)

    def command():
        network = snn.Network.parse(opts.hidden)
        if config.rank_problem(max(opts.ranks), network, "--ranks"):
            raise exits.UsageError(config.rank_problem(max(opts.ranks), network, "--ranks"))
        run_config = config.RunConfig(hidden=opts.hidden, seed=opts.seed, generations=opts.generations, rank=1,
                                      batch_size=opts.batch_size, sigma=opts.sigma, lr=opts.lr,
                                      logit_scale=opts.logit_scale, init_std=opts.init_std)
        try:  # the ranges run.py train takes, before any data is read
            config.check(run_config)
        except ValueError as error:
            raise exits.UsageError(str(error)) from None
        initial = snn.init_network(opts.seed, network, std=opts.init_std)
        training.refuse_unresolved(run_config, initial)  # as train says it: --sigma, --init-std
        training.refuse_unmoved(run_config, initial)  # --lr
        if opts.out is not None:  # the command's own earlier records may be rewritten, nothing else
            refuse_run_folder(opts.out, "give another --out")
            resources.refuse_data_folder(opts.out, "give another --out", what="where records go")
            resources.refuse_project_folders(opts.out, "--out", "give another --out")
            exits.refuse_foreign_file(opts.out / f"{records_name(network, opts)}.jsonl", b'{"network": ',
                                      "these records", "give another --out")
            exits.refuse_foreign_file(opts.out / f"{records_name(network, opts)}.md", b"| generation | members | ",
                                      "this table", "give another --out")
            check_records(opts.out, records_name(network, opts), settings_of(opts))
        training.emulate.check_finished(opts.data_root)  # an emulation of one split says how to add the other
        resources.nmnist_recordings(opts.data_root, "--data-root")  # this example downloads nothing: a copy is needed
        splits = training.load_splits(opts.data_root, 10, opts.cache_dir)  # an emulation only if whole
        if opts.out is not None:
            check_data(opts.out, records_name(network, opts), splits.fingerprint())
        measure_along_a_run(opts, network, splits)
    return exits.handled(command, "rerun the same command")


def records_name(network, opts):
    """The name of the records and the table under --out, without the suffix."""
    return f"{str(network).replace(',', '-')}-sigma{opts.sigma:g}-logit{opts.logit_scale:g}"


def measure_along_a_run(opts, network, splits):
    """Measure at generation 0, every --every generations and the last of an EGGROLL run on `splits`;
    write the records, each with the data's fingerprint."""
    params = snn.init_network(opts.seed, network, std=opts.init_std)
    if opts.out is not None:
        opts.out.mkdir(parents=True, exist_ok=True)  # before the run: a folder it cannot write ends it at once
    measured = np.arange(min(opts.batch_size, len(splits.val)))
    frames, labels = splits.val.frames(measured, np), splits.val.labels[measured]  # one fixed minibatch
    state, rng, records = optim.init(params), np.random.default_rng(opts.seed), []
    settings = snn_eggroll.Config(TRAIN_POPULATION, 1, opts.sigma, opts.seed, opts.logit_scale)
    for generation in range(opts.generations + 1):
        if generation % opts.every == 0 or generation == opts.generations:
            records += measure(params, frames, labels, network, generation, opts)
            print(table([r for r in records if r["generation"] == generation]), flush=True)
        if generation < opts.generations:
            batch = rng.choice(len(splits.train), min(opts.batch_size, len(splits.train)), replace=False)  # all, if fewer
            adam = optim.Adam(optim.scheduled_lr(opts.lr, "cosine", generation, opts.generations))
            params, state, _ = snn_eggroll.generation_step(params, state, splits.train.frames(batch, np),
                                                           splits.train.labels[batch], generation, settings, adam,
                                                           network=network)
    if opts.out is None:
        return
    name = records_name(network, opts)
    write_atomically(opts.out / f"{name}.jsonl", "".join(json.dumps(dict(r, data=splits.fingerprint())) + "\n"
                                                         for r in records))
    write_atomically(opts.out / f"{name}.md", f"{table(records)}\n{footer(settings_of(opts))}\n")


if __name__ == "__main__":
    exits.leave(main())
