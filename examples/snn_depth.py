"""Does depth pay for a gradient-free method? EGGROLL r = 1 on spiking networks of N-MNIST of one
hidden layer (64, the paper's; 128) and two (128, 64), with one recipe and budget, through
`run.py train`; then a table of their accuracy and time from the runs' records.

    python examples/snn_depth.py --data-root DIR [--real-root DIR] [--out results/depth]

A finished run is skipped, an unfinished one resumed, so the script can be stopped and run again;
two copies with different --hidden share the work of one folder.
"""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # the project's modules
import exits                                 # noqa: E402
from run_folder import write_atomically     # noqa: E402

RECIPE = ["--method", "eggroll", "--rank", "1", "--population", "512", "--batch-size", "256", "--sigma", "0.2",
          "--lr", "0.03", "--lr-schedule", "cosine", "--logit-scale", "5", "--eval-every", "100"]


def train(hidden, opts):
    """Train (or resume, or skip) the run of `hidden` and score it on --real-root."""
    init = "" if opts.init_std == 0.3 else f"-init{opts.init_std:g}"
    out = opts.out / "runs" / f"hidden-{hidden.replace(',', '-')}{init}-seed{opts.seed}"
    if not (out / "final.json").exists():
        command = [sys.executable, str(ROOT / "run.py"), "train", *RECIPE, "--hidden", hidden,
                   "--generations", str(opts.generations), "--seed", str(opts.seed), "--init-std", str(opts.init_std),
                   "--data-root", opts.data_root,
                   "--out", str(out), "--quiet", *(["--resume"] if out.exists() else [])]
        trained = subprocess.run(command, env={**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})
        if trained.returncode:  # run.py said why, in one line
            sys.exit(trained.returncode)
    if opts.real_root and not (out / "real.json").exists():
        scored = subprocess.run([sys.executable, str(ROOT / "run.py"), "evaluate", str(out),
                                 "--data-root", opts.real_root], stdout=subprocess.PIPE, text=True)
        if scored.returncode:
            sys.exit(scored.returncode)
        real = json.loads(scored.stdout)
        real["run"] = os.path.relpath(out, ROOT) if out.resolve().is_relative_to(ROOT) else str(out)
        write_atomically(out / "real.json", json.dumps(real, indent=1))


def hidden_of(out):
    """The hidden sizes of the run in folder `out`, from its config.json (the paper's 64 if it has none)."""
    return [int(size) for size in json.loads((out / "config.json").read_text()).get("hidden", "64").split(",")]


def table(folders):
    """A Markdown table of the finished runs: sizes, test and validation accuracy, real recordings,
    seconds of update steps and hidden spikes per test sample."""
    lines = ["| network | init std | test % | val % | real recordings % | step s | hidden spikes |",
             "|---|---|---|---|---|---|---|"]
    for out in folders:
        final = json.loads((out / "final.json").read_text())
        real = json.loads((out / "real.json").read_text())["accuracy"]["all"] if (out / "real.json").exists() else None
        sizes = "-".join(map(str, [2312, *hidden_of(out), 10]))
        init = json.loads((out / "config.json").read_text())["init_std"]
        lines.append(f"| {sizes} | {init:g} | {100 * final['test_acc']:.2f} | {100 * final['val_acc']:.2f} | "
                     f"{'–' if real is None else f'{100 * real:.2f}'} | {final['total_seconds']:.0f} | "
                     f"{final['test_sparsity']['hidden_spikes_per_sample']:.1f} |")
    return "\n".join(lines)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-root", required=True, help="N-MNIST to train on (run.py train --data-root)")
    parser.add_argument("--real-root", help="another N-MNIST copy to score every run on")
    parser.add_argument("--out", type=Path, default=ROOT / "results" / "depth", help="folder of the runs and table.md")
    parser.add_argument("--hidden", nargs="+", default=["64", "128", "128,64"], help="hidden sizes of each network")
    parser.add_argument("--generations", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--init-std", type=float, default=0.3, help="W, b ~ N(0, init_std^2) in every layer")
    opts = parser.parse_args()

    def command():
        for hidden in opts.hidden:
            train(hidden, opts)
        exits.say(write_table(opts.out)[0].read_text(), f"the table is in {opts.out / 'table.md'}")
    return exits.handled(command, "rerun the same command to continue (finished runs are skipped)")


def write_table(out):
    """table.md of the finished runs under out/runs, the smaller networks first; [its path]."""
    finished = [path for path in (out / "runs").iterdir() if (path / "final.json").exists()]
    text = table(sorted(finished, key=lambda path: (len(hidden_of(path)), hidden_of(path), path.name)))
    write_atomically(out / "table.md", text + "\n")
    return [out / "table.md"]


if __name__ == "__main__":
    sys.exit(main())
