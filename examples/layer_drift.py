"""How far did each layer's weights move, and how much of that was noise? For finished EGGROLL
runs, per layer: the RMS change of its weights from their initialisation, beside the RMS change
that Adam gives a step of pure noise.

Adam (Eq. (9)) divides each entry's step by that entry's running size, so a layer whose estimate
g is all noise still moves by about lr a generation, in a random direction each time: a random
walk, whose RMS after the run is about sqrt(sum over generations of lr_t^2) (the `noise walk`,
measured by feeding Adam pure noise at the run's learning rates). A layer that moved further moved
coherently, by sqrt(moved^2 - walk^2) (`coherent`), since the walk and a steady drift add in
squares; one that moved no further than the walk learned nothing the noise did not undo.

    python examples/layer_drift.py RUN [RUN ...] [--out results/depth/signal/drift.md]
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import math
    import os
    from pathlib import Path

    import numpy as np

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))  # the project's modules
    import exits                              # noqa: E402
    import optim                              # noqa: E402
    import resources                          # noqa: E402
    import run_folder                         # noqa: E402
    import snn                                # noqa: E402
    from run_folder import UsageError, write_atomically  # noqa: E402
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; rerun the same command\n")
    sys.exit(130)


def noise_walk(lr, schedule, steps, entries=10_000, seed=0):
    """The RMS distance Adam moves an entry in `steps` steps at the run's learning rates when every
    gradient is pure noise: measured on `entries` entries fed independent N(0, 1) draws (Adam's
    step does not depend on their scale). About sqrt(sum of lr_t^2), a little more from the
    first steps, which Adam's bias correction weighs up."""
    rng, params = np.random.default_rng(seed), {"w": np.zeros(entries)}
    state = optim.init(params)
    for step in range(steps):
        adam = optim.Adam(optim.scheduled_lr(lr, schedule, step, steps))
        params, state = optim.ascend(params, {"w": rng.standard_normal(entries)}, state, adam)
    return float(np.sqrt((params["w"] ** 2).mean()))


def drift(run_dir):
    """Per weight matrix of the EGGROLL run in run_dir: its name, size, RMS change from its
    initialisation, the noise walk and the coherent part."""
    run_dir = Path(run_dir)
    if not os.path.lexists(run_dir):
        raise UsageError(f"{run_dir} does not exist; give the folder of a run (run.py train --out)")
    if not run_dir.is_dir():
        raise UsageError(f"{run_dir} is not a folder, so it holds no trained run; give the folder of a run (run.py "
                         f"train --out)")
    checkpoint = run_dir / run_folder.CHECKPOINT
    if not (checkpoint.exists() or checkpoint.is_symlink()):  # (one that is no regular file: load_checkpoint says so)
        if (run_dir / "final.json").is_file():  # the repository's runs keep their records, not their weights
            try:  # the command that trains its settings again, where its config.json says them
                again = run_folder.resume_command(Path("DIR"), run_folder.read_config(run_dir))
            except (UsageError, OSError, ValueError):
                again = "run.py train --out DIR with its settings"
            raise UsageError(f"{run_dir} holds a finished run but not its {run_folder.CHECKPOINT} (a committed run keeps "
                             f"none): train it again into a folder of your own, {again}, and give that folder")
        raise UsageError(f"{run_dir} holds no trained run ({run_folder.CHECKPOINT}); give a folder of run.py train --out")
    for name in ("config.json", run_folder.CHECKPOINT, "final.json"):  # as evaluate reads them: never through a link
        run_folder.refuse_link(run_dir / name)
    if not run_folder.is_run_folder(run_dir):
        raise UsageError(f"{run_dir} is not a run folder of this project (it has no {run_folder.RUN_MARK}); give a "
                         f"folder of run.py train --out")
    if not (run_dir / "config.json").exists():
        raise UsageError(f"{run_dir} holds a run without its config.json, so its settings are unknown; "
                         f"{run_folder.config_fix(run_dir)}")
    config = run_folder.read_config(run_dir)
    if config.method != "eggroll" or config.weight_decay:  # said first: finishing such a run would not help
        raise UsageError(f"{run_dir} is not an EGGROLL run without weight decay; give such a run")
    if not (run_dir / "final.json").is_file():  # the walk is the whole run's: an unfinished one has not walked it
        running = run_folder.holder(run_dir)
        if running is not None:
            raise UsageError(f"{run_dir} is being trained now (by process {running}): give it once it has finished")
        raise UsageError(f"{run_dir} has not finished (no final.json); finish it with "
                         f"{run_folder.resume_command(run_dir, config)}")
    start = snn.init_network(config.seed, config.network, std=config.init_std, rule=config.init_rule)
    params, _, step, _, _ = run_folder.load_checkpoint(run_dir / run_folder.CHECKPOINT, np, start,
                                                       run_folder.identity(config))
    if run_folder.check_finished_checkpoint(run_dir, config, step) is None:  # as evaluate reads a finished run's
        raise UsageError(f"{run_dir / 'final.json'} is damaged, so the walk of the finished run cannot be told; "
                         f"restore it from a copy")
    lrs = config.eggroll().lrs(start, config.lr)  # --inner-scale's layers step at a smaller lr
    walks = {lr: noise_walk(lr, config.lr_schedule, config.generations) for lr in set(lrs.values())}
    rows = []
    for name in sorted(name for name in start if name.startswith("W")):
        walk = walks[lrs[name]]
        with np.errstate(over="ignore"):  # weights far from any trained run's: squares beyond float32
            moved = float(np.sqrt(((params[name] - start[name]) ** 2).mean()))
        if not math.isfinite(moved):  # measured in float64 instead, where float32's squares overflow
            moved = float(np.sqrt(((params[name].astype(np.float64) - start[name]) ** 2).mean()))
        rows.append({"run": run_dir.name, "network": str(config.network), "generations": config.generations,
                     "weights": name, "size": "×".join(map(str, start[name].shape)), "moved": moved,
                     "noise_walk": walk, "coherent": math.sqrt(max(moved ** 2 - walk ** 2, 0.0))})
    return rows


HEADER = "| run | network | generations | weights | RMS moved | noise walk | coherent |"  # the table's first line


def table(rows):
    lines = [HEADER, "|" + "---|" * 7]
    lines += [f"| {r['run']} | {r['network']} | {r['generations']} | {r['weights']} ({r['size']}) | {r['moved']:.3f} | "
              f"{r['noise_walk']:.3f} | {r['coherent']:.3f} |" for r in rows]
    return "\n".join(lines) + "\n"


def main(argv=None):
    parser = exits.Parser(prog="layer_drift.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path, help="folders of finished EGGROLL runs (run.py train --out)")
    parser.add_argument("--out", type=exits.markdown_file, help="also write the table to this .md file")
    opts = parser.parse_args(argv)

    def command():
        if opts.out:
            run_folder.refuse_run_folder(opts.out.parent, "give another --out")
            resources.refuse_data_folder(opts.out.parent, "give --out a path outside it", what="where a table goes")
        exits.refuse_foreign_file(opts.out, HEADER.encode(), "this table", "give another --out")
        runs = list({run.resolve(): run for run in reversed(opts.runs)}.values())[::-1]  # a run named twice: once
        text = table([row for run in runs for row in drift(run)])
        if opts.out:
            write_atomically(opts.out, text)
        exits.say(text.rstrip(), f"the table is in {opts.out}" if opts.out else "give --out FILE to keep the table")
    return exits.handled(command, "rerun the same command")


if __name__ == "__main__":
    exits.leave(main())
