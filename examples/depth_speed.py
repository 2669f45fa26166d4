"""What a network's layers cost: for each --hidden network, the seconds of one EGGROLL generation,
of inference of the same members (snn.forward), and of one BPTT step, on random frames at
N-MNIST's input density, on one device in one run (ratios to the paper's 2312-64-10 beside them);
on a CPU also the most memory one EGGROLL generation held (NumPy's arrays, traced by tracemalloc)
beside resources.py's estimate, which `run.py train` checks before it starts.

    OPENBLAS_NUM_THREADS=1 python examples/depth_speed.py [--hidden 64 128,64 conv8k5s3] [--members 1024]
                                                          [--device gpu] [--out FILE]

Dense networks of two layers run the fused CUDA kernels on a GPU; every other network the generic
CuPy path, the NumPy code on the GPU's arrays.
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import re
    import tracemalloc
    from pathlib import Path

    import numpy

    ROOT = Path(__file__).resolve().parent.parent
    sys.path.insert(0, str(ROOT))  # the project's modules
    import baselines                     # noqa: E402
    import config                        # noqa: E402
    import exits                         # noqa: E402
    import optim                         # noqa: E402
    import resources                     # noqa: E402
    import snn                           # noqa: E402
    import snn_eggroll                   # noqa: E402
    from backend import DEVICES, array_module, device_name  # noqa: E402
    from bench import INPUT_DENSITY, REFERENCE, time_calls  # noqa: E402
    from run_folder import refuse_run_folder, write_atomically  # noqa: E402
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; rerun the same command\n")
    sys.exit(130)


def seconds_of(network, members, rank, xp, repeats):
    """Median seconds of an EGGROLL generation, inference of `members` and a BPTT step on `network`,
    and on a CPU the generation's peak bytes."""
    rng = numpy.random.default_rng(0)
    frames = xp.asarray(rng.random((REFERENCE["time_bins"], REFERENCE["batch"], network.sizes[0])) < INPUT_DENSITY,
                        dtype=xp.float32)
    labels = xp.asarray(rng.integers(0, network.sizes[-1], REFERENCE["batch"]))
    params, adam = snn.init_network(0, network, xp=xp), optim.Adam(0.01)
    state = optim.init(params)
    settings = snn_eggroll.Config(members, rank, 0.1, 0, 1.0)
    generation = lambda: snn_eggroll.generation_step(params, state, frames, labels, 0, settings, adam, network=network)
    return {"eggroll": time_calls(generation, repeats, xp), "peak": peak_bytes(generation) if xp is numpy else None,
            "inference": time_calls(lambda: snn.forward(params, frames, n_members=members, network=network), repeats, xp),
            "bptt": time_calls(lambda: baselines.bptt_step(params, state, frames, labels, baselines.BPTTConfig(1.0, 1.0),
                                                           adam, network=network), repeats, xp)}


def peak_bytes(call):
    """The most bytes that NumPy's arrays (and Python's objects) held at once during call()."""
    tracemalloc.start()
    try:
        call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main():
    parser = exits.Parser(prog="depth_speed.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--hidden", nargs="+", type=config.hidden_option, default=["64", "128,64", "conv8k5s3"],
                        help="the hidden layers of each network, as run.py train --hidden (default: 64 128,64 "
                             "conv8k5s3; 2312-64-10 is always measured, the baseline of the ratios)")
    parser.add_argument("--members", type=exits.members, default=1024, help="EGGROLL's population (default: 1024)")
    parser.add_argument("--rank", type=exits.at_least(1), default=1,
                        help="the rank of EGGROLL's perturbations (default: 1)")
    parser.add_argument("--repeats", type=exits.at_least(1), default=3,
                        help="timed calls of each, after a warm-up; the median is shown (default: 3)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="cpu (NumPy), gpu (CuPy) or auto (a GPU when one is usable) (default: cpu)")
    parser.add_argument("--out", type=exits.markdown_file, help="also write the table to this .md file")
    opts = parser.parse_args()

    def command():
        if opts.out:
            refuse_run_folder(opts.out.parent, "give another --out")
            resources.refuse_data_folder(opts.out.parent, "give --out a path outside it", what="where a table goes")
        exits.refuse_foreign_file(opts.out, re.compile(rb"[^\n]*; \d+ members, rank \d+, minibatch "), "this table",
                                  "give another --out")
        xp = array_module(opts.device)
        networks = {hidden: snn.Network.parse(hidden) for hidden in ["64", *opts.hidden]}  # the paper's first
        for network in networks.values():
            if config.rank_problem(opts.rank, network):
                raise exits.UsageError(config.rank_problem(opts.rank, network))
        for hidden, network in networks.items():  # before any timing: a generation must fit in free memory
            estimate = resources.generation_bytes("eggroll", opts.rank, opts.members // 2, REFERENCE["batch"],
                                                  REFERENCE["time_bins"], xp is not numpy, network)
            weights = resources.parameter_bytes(network)  # its weights and Adam's, made and updated
            on_device = lambda needed: (needed, 0) if xp is numpy else (0, needed)
            short = resources.shortfall(on_device(estimate + weights), xp)
            if short is not None:  # named by what is too large: the members, or the network alone
                option, fix = (f"--members {opts.members}", "lower --members") \
                    if resources.shortfall(on_device(weights), xp) is None else \
                    (f"--hidden {hidden}", f"leave {hidden} out of --hidden, or narrow it: its weights and Adam's "
                                           f"moments alone do not fit")
                raise exits.UsageError(f"{option}: an EGGROLL generation of 2312-{hidden.replace(',', '-')}-10 needs "
                                       f"about {resources.size_text(short[0])} of {short[2]} (estimated), more than "
                                       f"the {resources.size_text(short[1])} free; {fix}")
        times = {hidden: seconds_of(network, opts.members, opts.rank, xp, opts.repeats)
                 for hidden, network in networks.items()}
        lines = [f"{device_name(xp)}; {opts.members} members, rank {opts.rank}, minibatch {REFERENCE['batch']}, "
                 f"T = {REFERENCE['time_bins']} (seconds, and x 2312-64-10's; an EGGROLL generation's peak memory "
                 f"in MiB, and resources.py's estimate)", "",
                 "| network | neurons | EGGROLL generation | inference | BPTT step | generation's peak MiB (estimate) |",
                 "|---|---|---|---|---|---|"]
        for hidden in dict.fromkeys(["64", *opts.hidden]):
            cells = [f"{times[hidden][key]:.3f} ({times[hidden][key] / times['64'][key]:.1f}x)"
                     for key in ("eggroll", "inference", "bptt")]
            estimate = resources.generation_bytes("eggroll", opts.rank, opts.members // 2, REFERENCE["batch"],
                                                  REFERENCE["time_bins"], xp is not numpy, networks[hidden])
            peak = times[hidden]["peak"]
            cells.append(f"{'–' if peak is None else f'{peak / 2 ** 20:,.0f}'} ({estimate / 2 ** 20:,.0f})")
            lines.append(f"| 2312-{hidden.replace(',', '-')}-10 | {sum(networks[hidden].sizes[1:]):,} | "
                         + " | ".join(cells) + " |")
        text = "\n".join(lines)
        if opts.out:
            write_atomically(opts.out, text + "\n")
        exits.say(text, f"the table is in {opts.out}" if opts.out else "rerun it with its output going where it can "
                                                                         "be written")
    return exits.handled(command, "rerun the same command")


if __name__ == "__main__":
    exits.leave(main())
