"""Command line of eggroll-snn: train one run, score it on other recordings, reproduce the paper.

    python run.py train --method eggroll --rank 4 --generations 100 --out runs/eggroll-r4
    python run.py evaluate runs/eggroll-r4 --data-root path/to/real/nmnist
    python run.py reproduce --config quick          # or paper, best
    python run.py reproduce --config hyperscale --part budget --device gpu
    python run.py reproduce --config spike-cost     # accuracy against a price on hidden spikes
    python run.py reproduce --config parity --device gpu   # EGGROLL beside BPTT on one GPU
    python run.py bench --json bench.json           # see bench.py
    python run.py emulate --mnist path/to/mnist --out path/to/emulated   # N-MNIST from MNIST, emulate.py

Every error a user can cause (bad option, missing data, a foreign checkpoint, a run too large
for the machine's memory, an OS error naming its path) ends the program with one line on stderr
and exit status 2, and overwrites nothing; in an MPI job the first process says which processes
failed. Ctrl-C, SIGTERM and SIGHUP say where the run stopped and how to continue, exit status 130,
143 and 129. A closed stdout or stderr pipe (`run.py train ... | head`) ends the program with one
line if stderr still takes it, exit status 141, the run's checkpoint intact; standard output that
cannot take a result (`evaluate`'s scores) is exit status 2. Every command shares this handling (exits.handled).
"""
import resource
import sys

STARTING = "error: interrupted while starting; nothing was written"  # Ctrl-C before exits.handled takes over
# The least address space (ulimit -v) a command starts in: Python, NumPy with its BLAS threads and the
# project's modules map 120-160 MB, the smallest run about 250 MB; below it NumPy's import may end in
# OpenBLAS's own abort, which no Python code can catch.
LEAST_ADDRESS_SPACE = 256 * 2**20


def address_space_refusal(limit, error=None):
    """The line that refuses a ulimit -v of `limit` bytes, too small to start in (error: what failed)."""
    failed = f" ({type(error).__name__} while loading NumPy and the project: {error})" if error else ""
    return (f"error: the address-space limit (ulimit -v {limit // 1024}) is too small to start in{failed}; "
            f"raise it to {LEAST_ADDRESS_SPACE // 1024} or more, or lift it (ulimit -v unlimited)")


ADDRESS_SPACE = resource.getrlimit(resource.RLIMIT_AS)[0]  # ulimit -v in bytes, or RLIM_INFINITY (-1): none
if ADDRESS_SPACE != resource.RLIM_INFINITY and ADDRESS_SPACE < LEAST_ADDRESS_SPACE:
    print(address_space_refusal(ADDRESS_SPACE), file=sys.stderr)
    sys.exit(2)

try:  # NumPy and the project's modules take a moment to import: Ctrl-C meanwhile is one line too
    import argparse
    import json
    import os
    from dataclasses import fields

    import bench
    import comparison
    import config as run_config
    import distributed
    import emulate
    import exits
    import snn
    import reproduce
    import resources
    import training
    from run_folder import UsageError
except KeyboardInterrupt:
    if __name__ == "__main__":  # emulate's worker processes import this file as __mp_main__: their parent says it
        print(STARTING, file=sys.stderr)
    sys.exit(130)
except (MemoryError, ImportError) as error:  # a ulimit -v above the least, still too small on this machine
    if ADDRESS_SPACE == resource.RLIM_INFINITY:
        raise
    print(address_space_refusal(ADDRESS_SPACE, error), file=sys.stderr)
    sys.exit(2)

# Ranges checked elsewhere than in RunConfig, as --help states them: the rank is at most the
# smaller side of each weight matrix (snn_eggroll.check_config), and memory bounds the sizes.
WHERE = ("device", "data_root", "cache_dir")  # options of where things are, defaulted as RunConfig's
HELP_RANGES = {"rank": f"must lie in 1..the smaller side of every weight matrix ({min(snn.SIZES)} in the paper's network)",
               "population": "must be an even number >= 2 (P antithetic pairs), as many as fit in memory",
               "batch_size": f"must lie in 1..{run_config.COUNT_LIMIT}, as many as fit in memory"}


def add_config_options(parser, names=None):
    """Options --<field> for the RunConfig fields `names` (all by default), help with the range and
    the default."""
    for spec in fields(run_config.RunConfig):
        if names is not None and spec.name not in names:
            continue
        meta = spec.metadata
        scope = meta["methods"] != run_config.METHODS and f"{', '.join(meta['methods'])} only"
        check = HELP_RANGES.get(spec.name) or meta["check"] and meta["check"][1]
        notes = [scope, check, spec.default is not None and f"default: {spec.default}"]
        help_text = meta["help"] + (f" ({'; '.join(note for note in notes if note)})" if any(notes) else "")
        if spec.type is bool:
            parser.add_argument(run_config.option(spec.name), action="store_true", default=None, help=help_text)
        else:
            kind = ascii_typed(spec.type) if spec.type in (int, float) else \
                exits.not_standard_output if spec.name == "cache_dir" else spec.type
            parser.add_argument(run_config.option(spec.name), type=kind, choices=meta["choices"],
                                default=None, help=help_text)


def ascii_typed(kind):
    """argparse type: exits.plain's kind(text), named as argparse names int and float ("invalid int
    value")."""
    def parse(text):
        return exits.plain(kind, text)
    parse.__name__ = kind.__name__  # argparse names it in its message: "invalid int value"
    return parse


def config_from_options(opts):
    """The RunConfig the options describe. An option the method does not use is refused, never
    passed over: --generations (ES methods) and --epochs (BPTT) name the other's length."""
    specs = {spec.name: spec for spec in fields(run_config.RunConfig)}
    given = {name: getattr(opts, name) for name in specs if getattr(opts, name, None) is not None}
    if "hidden" in given and run_config.network_problem(given["hidden"]) is None:
        given["hidden"] = str(run_config.RunConfig(hidden=given["hidden"]).network)  # 064 is 64, one run
    config = run_config.RunConfig(**given)
    if config.method == "bptt" and "generations" in given:
        raise UsageError("--generations is for the ES methods; BPTT's length is --epochs, e.g. --epochs 5")
    if config.method != "bptt" and "epochs" in given:
        raise UsageError(f"--epochs is for bptt; {config.method}'s length is --generations, e.g. --generations 100")
    for name in given:
        if not run_config.applies(specs[name], config.method):
            raise UsageError(f"{run_config.option(name)} is for {' and '.join(specs[name].metadata['methods'])} "
                             f"only: drop it for --method {config.method}")
    return config

class Refused(Exception):
    """A command line refused in one process of an MPI job, which says so with the others (`main`)."""


class Parser(exits.Parser):
    """exits.Parser; in an MPI job, a usage error is a Refused that `main` shares with the job's
    other processes, which would otherwise wait for it."""

    def error(self, message):
        if distributed.launched_size() > 1:
            raise Refused(f"{message}; see {self.prog} --help")
        super().error(message)

    def print_help(self, file=None):
        """The help, once per MPI job: by its first process."""
        if distributed.launched_rank() == 0:
            super().print_help(file)

    def exit(self, status=0, message=None):
        """After --help in an MPI job, the other processes may be waiting for this one: it tells
        them (main), and the job ends, the help shown."""
        if distributed.launched_size() > 1 and status == 0 and message is None:
            raise Refused(f"{self.prog} --help shows the options and starts nothing; run it without --help")
        super().exit(status, message)


def integers(text):
    """argparse type: comma-separated integers, e.g. 1,2."""
    try:
        return [ascii_typed(int)(item) for item in text.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers such as 1,2, got {text!r}") from None


def main(argv=None):
    parser = Parser(prog="run.py", description=__doc__.split("\n")[0])
    commands = parser.add_subparsers(dest="command", required=True)

    train_parser = commands.add_parser("train", help="train one network")
    add_config_options(train_parser)
    train_parser.add_argument("--out", default="runs/latest", type=exits.not_standard_output,
                              help="output folder: metrics.jsonl, final.json, checkpoint.npz (default: runs/latest)")
    train_parser.add_argument("--resume", action="store_true",
                              help="continue the run in --out from its last checkpoint (same settings)")
    train_parser.add_argument("--force", action="store_true", help="delete the run in --out and start over")
    train_parser.add_argument("--quiet", action="store_true",
                              help="no progress bar, nor a note that --resume left a finished run as it was")
    train_parser.add_argument("--distributed", action="store_true",
                              help="spread the ES population over the processes of an MPI job: "
                                   "mpiexec -n K python run.py train --distributed ...")
    train_parser.add_argument("--update", choices=distributed.UPDATES,
                              help="with --distributed: every process forms the whole update from the noise "
                                   "seeds (bit-exact), or the gradient of its own pairs, summed by one "
                                   "all-reduce (default: seeds)")

    reproduce_parser = commands.add_parser("reproduce", help="every run of the paper's protocol, tables, figures")
    reproduce_parser.add_argument("--config", choices=sorted([*run_config.PRESETS, "hyperscale", "spike-cost",
                                                              "screen", "parity"]),
                                  default="paper",
                                  help="paper: 100 generations; quick: under 10 minutes on 2 CPU cores; "
                                       "best: the tuned recipe; hyperscale: populations up to 65,536, for a GPU; "
                                       "spike-cost: EGGROLL r=4 and BPTT at each price of a hidden spike; "
                                       "screen: one lever of the recipe at a time; parity: EGGROLL r=1 at 65,536 "
                                       "members beside BPTT's best recipe, for a GPU (default: paper)")
    reproduce_parser.add_argument("--part", choices=list(run_config.HYPERSCALE),
                                  help="with --config hyperscale: only this part, in results/hyperscale/<part>/ "
                                       "(default: every part, one after another)")
    reproduce_parser.add_argument("--results", default="results", type=exits.not_standard_output, help="folder for results/<config>/, "
                                 "with --data for local/<data>/<config>/ in it (default: results)")
    add_config_options(reproduce_parser, WHERE + ("download",))
    reproduce_parser.add_argument("--quiet", action="store_true", help="no progress bars")
    populations = sorted({p for part in run_config.HYPERSCALE.values() for ps in part["populations"].values()
                          for p in ps})
    reproduce_parser.add_argument("--runs", type=lambda text: text.split(","),
                                  help="only these runs, e.g. bptt,es,eggroll-r4: some of bptt, es, "
                                       f"{', '.join(f'eggroll-r{r}' for r in run_config.RANKS)}, as the preset "
                                       "has them (default: all)")
    reproduce_parser.add_argument("--seeds", type=integers,
                                  help=f"only these seeds, e.g. 1,2: some of {', '.join(map(str, run_config.SEEDS))}"
                                       f", as the preset has them (default: all)")
    reproduce_parser.add_argument("--populations", type=integers,
                                  help="with --config hyperscale: only these populations, e.g. 512,2048: some of "
                                       f"{', '.join(map(str, populations))}, as the part has them (default: all)")
    reproduce_parser.add_argument("--deadline", type=ascii_typed(float),
                                  help="seconds from now (>= 0) after which no run trains: the one running stops at "
                                       "its next step, checkpointed, and the next reproduce resumes it (default: none)")
    reproduce_parser.add_argument("--force", action="store_true",
                                  help="retrain runs whose stored settings differ from the preset (deletes them)")
    reproduce_parser.add_argument("--report-only", action="store_true",
                                  help="train nothing: write the tables and figures of every run of the preset finished "
                                       "so far (it takes no --runs, --seeds, --populations, --data-root)")
    reproduce_parser.add_argument("--data", choices=comparison.DATA_SOURCES,
                                  help="train on this machine into <results>/local/<data>/<config>/ and compare "
                                       "with the paper and the committed runs (comparison.md): emulated, the "
                                       "project's emulated N-MNIST, made from MNIST first; nmnist, the real one, "
                                       "downloaded by tonic (default: neither, the runs of <results>/<config>/)")
    reproduce_parser.add_argument("--mnist", help="with --data emulated: folder of the four MNIST IDX files "
                                                  "(default: downloaded into the cache folder)")
    reproduce_parser.add_argument("--real-root", help="also score every run on this N-MNIST copy, e.g. real "
                                                      "recordings for models trained on emulated ones")

    evaluate_parser = commands.add_parser("evaluate", help="accuracy of a trained run on another N-MNIST copy")
    evaluate_parser.add_argument("run_dir", help="the --out folder of a training run")
    add_config_options(evaluate_parser, WHERE)

    bench_parser = commands.add_parser("bench", help="speed, FLOPs and memory at the reference configuration",
                                       formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    bench.add_options(bench_parser)

    emulate_parser = commands.add_parser("emulate", help="N-MNIST-format recordings emulated from MNIST")
    emulate_parser.add_argument("--out", required=True, type=exits.not_standard_output,
                                help="folder of the recordings, <out>/NMNIST/{Train,Test}/<digit>/*.bin: the "
                                     "--data-root of the other commands")
    emulate_parser.add_argument("--mnist", help="folder of the four MNIST IDX files, gzipped or not (default: "
                                                "downloaded into the cache folder, ~/.cache/eggroll-snn/mnist)")
    emulate_parser.add_argument("--split", choices=("train", "test", "both"), default="both",
                                help="which MNIST digits (default: both)")
    emulate_parser.add_argument("--workers", type=exits.at_least(1), default=min(2, os.cpu_count() or 1),
                                help=f"processes, each holding up to about "
                                     f"{resources.size_text(resources.EMULATE_WORKER_BYTES)} of RAM (more than free "
                                     f"memory holds are refused); the recordings do not depend on it (default: "
                                     f"%(default)s)")
    emulate_parser.add_argument("--seed", type=exits.at_least(0), default=0,
                                help="the emulated sensor's and every recording's noise (default: 0, the "
                                     "project's emulated N-MNIST)")
    emulate_parser.add_argument("--quiet", action="store_true", help="no progress bar")

    try:
        opts, problem = checked_options(parser, commands, argv), None
    except Refused as refused:  # in an MPI job: said by the first process, once every process has heard
        opts, problem = None, str(refused)
    team = distributed.ALONE
    again = {"train": "rerun with --resume to continue",
             "reproduce": "rerun the same command to continue (finished runs are skipped)",
             "emulate": "rerun the same command to continue (finished recordings are kept)"}.get(
        getattr(opts, "command", None), "nothing was written, rerun to start again")

    def command():
        nonlocal team
        if problem is not None or opts.distributed:
            team = distributed.team(getattr(opts, "update", "seeds"))
            with training.checked_together(team):  # first, a command line a process refused
                if problem is not None:
                    raise UsageError(problem)
            # then the processes compare their command (and what a benchmark measures)
            training.check_agreement(team, {"the command": opts.command, **({
                f"--{name}": getattr(opts, name) for name in ("pairs", "methods", "repeats", "device")
            } if opts.command == "bench" else {})})
        if opts.command == "train":
            final = training.train(config_from_options(opts), opts.out, opts.resume, opts.force, not opts.quiet, team)
            if team.rank == 0:
                exits.say(json.dumps({k: final[k] for k in ("test_acc", "val_acc", "median_seconds_per_generation")}),
                          f"the run finished: its results are in {os.path.join(opts.out, 'final.json')}")
        elif opts.command == "reproduce":
            reproduce.reproduce(opts)
        elif opts.command == "emulate":
            resources.check_emulate_workers(opts.workers)
            if os.path.lexists(opts.out) and not os.path.isdir(opts.out):  # a file of the user's: never moved
                raise UsageError(f"--out {opts.out} is not a folder; give a folder (the recordings go into its "
                                 f"NMNIST/)")
            resources.refuse_inside_data_folder(opts.out, "give --out a folder of its own (an emulation is a copy of "
                                                          "its own, beside the others)")
            resources.refuse_project_folders(opts.out, "--out", "give --out a folder of its own (an emulation is a copy "
                                                         "of its own, beside the others)", runs=False, results=False)
            resources.refuse_emulation_place(opts.out, "give --out a folder of its own (an emulation is a copy of its "
                                                       "own, beside the others)")
            splits = ("train", "test") if opts.split == "both" else (opts.split,)
            done = emulate.emulate(opts.out, opts.mnist, splits, opts.workers, opts.seed, not opts.quiet)
            exits.say(json.dumps(done), f"the recordings are in {os.path.join(opts.out, 'NMNIST')}")
        elif opts.command == "evaluate":
            scored = training.evaluate_run(opts.run_dir, opts.data_root, opts.cache_dir, opts.device)
            unfinished = training.unfinished_warning(opts.run_dir, scored)
            if unfinished:
                exits.tell(unfinished)  # one line, a line break in its path written out
            exits.say(json.dumps(scored), "rerun with standard output where it can be written")
        else:
            with training.checked_together(team):
                bench.check_request(opts, team)
            if opts.distributed:
                bench.bench_distributed(opts, team)
            else:
                bench.bench(opts)
        if getattr(opts, "distributed", False) and team.size == 1:  # (started without mpiexec, or with -n 1)
            print(f"warning: --distributed in a job of one process: {opts.command} ran as without it; to share the "
                  f"population out, start K processes: mpiexec -n K python run.py {opts.command} --distributed ...",
                  file=sys.stderr)

    command_name = getattr(opts, "command", None)
    return exits.handled(command, again, lambda: team, LESS_MEMORY.get(command_name, "free memory"),
                         "interrupted before training started" if command_name == "train" else "interrupted")


def checked_options(parser, commands, argv):
    """The options of `argv`, with the where-to-find-things ones defaulted; an unknown or empty
    option, or a process of an MPI job without --distributed, is the parser's error."""
    opts, unknown = parser.parse_known_args(argv)
    if unknown:  # said by the command's parser, whose --help lists its options
        commands.choices[opts.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    if distributed.launched_size() > 1 and not getattr(opts, "distributed", False):
        commands.choices[opts.command].error(
            f"this process is one of an MPI job's, but {opts.command} was not given --distributed: give every "
            f"process `{opts.command} --distributed`" if opts.command in ("train", "bench") else
            f"{opts.command} runs in one process: run it without mpiexec")
    empty = [name for name, value in vars(opts).items() if value == ""]  # --out '' would mean the current folder
    if empty:
        named = empty[0] if empty[0] == "run_dir" else "--" + empty[0].replace("_", "-")
        specs = {spec.name: spec for spec in fields(run_config.RunConfig)}
        rule = specs[empty[0]].metadata["check"] if empty[0] in specs else None
        takes = f"it {rule[1]}, e.g. {named} {rule[2]}" if rule else \
            "give a path" if empty[0] in PATHS else "give a value"
        commands.choices[opts.command].error(f"{named} is empty: {takes}")
    if opts.command == "reproduce" and opts.report_only:  # before the defaults, which hide what was given
        passed_over = [f"--{name}" for name in reproduce.SELECTORS if getattr(opts, name) is not None]
        if passed_over:
            commands.choices["reproduce"].error(f"--report-only reports every finished run of the preset: drop "
                                                f"{passed_over[0]}, which picks the runs to train")
        unused = [run_config.option(name) for name in ("data_root", "download", "mnist")
                  if getattr(opts, name) is not None]
        if unused:  # with --data too: the report reads the runs' records only
            commands.choices["reproduce"].error(f"--report-only trains nothing, so it reads no data: drop {unused[0]}")
        if opts.deadline is not None:
            commands.choices["reproduce"].error("--report-only trains nothing, so no run stops at a deadline: drop "
                                                "--deadline")
        used = ("device", "cache_dir") if opts.real_root else ()
        unused = [run_config.option(name) for name in ("device", "cache_dir")
                  if getattr(opts, name) is not None and name not in used]
        if unused:
            commands.choices["reproduce"].error(f"--report-only trains nothing, and without --real-root scores "
                                                f"nothing: drop {unused[0]}")
    if opts.command == "bench" and opts.cache_dir is not None and opts.data_root is None:
        commands.choices["bench"].error("--cache-dir holds the frames of --data-root's recordings, and bench without "
                                        "--data-root reads none: give --data-root too, or drop --cache-dir")
    defaults = run_config.RunConfig()
    for name in WHERE + ("download",):
        if getattr(opts, name, False) is None:
            setattr(opts, name, getattr(defaults, name))
    for name in PATHS:  # '~/runs' quoted reaches us as it is: it means the home folder all the same
        if isinstance(getattr(opts, name, None), str):
            setattr(opts, name, os.path.expanduser(getattr(opts, name)))
    if not hasattr(opts, "distributed"):
        opts.distributed = False
    if opts.command == "train":
        if opts.resume and opts.force:
            commands.choices["train"].error("--resume continues the run in --out, --force deletes it: give one of them")
        if opts.distributed and opts.method == "bptt":
            commands.choices["train"].error("BPTT runs on one process: drop --distributed (it spreads an ES population)")
        if opts.update is not None and not opts.distributed:
            commands.choices["train"].error("--update says how the processes of a job share the update: give it "
                                            "with --distributed, or leave it out")
        opts.update = opts.update or "seeds"
    if opts.command == "reproduce" and opts.report_only and opts.force:
        commands.choices["reproduce"].error("--report-only trains nothing, so --force would delete nothing: drop one")
    return opts


PATHS = ("out", "results", "mnist", "real_root", "data_root", "cache_dir", "json", "run_dir")  # options naming paths
LESS_MEMORY = {"train": "free memory, or lower --population, --batch-size, --time-bins or --hidden",
               "reproduce": "free memory, or leave the largest runs out (--runs, --populations)",
               "bench": "free memory, or lower --pairs"}


if __name__ == "__main__":
    try:
        status = main()
    except KeyboardInterrupt:  # while the options are read
        print(STARTING, file=sys.stderr)
        status = 130
    exits.leave(status)
