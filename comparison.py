"""`run.py reproduce --data emulated|nmnist` (`make reproduce`): a preset's grid trained on this
machine on the data the user chose, into results/local/<data>/<preset>/ (not committed), then
compared row by row with the paper's Table 1 and the committed runs of results/<preset>/runs
(comparison.md, also printed).

Which data: `emulated` is the project's emulated N-MNIST, made from MNIST by emulate.py into the
cache folder (or --data-root) before the first run; `nmnist` the real N-MNIST that tonic
downloads. A finished run counts only where it trained on that data: its final.json's data
fingerprint must be the data's (runs whose final.json predates the record, the committed ones,
trained on the project's emulated N-MNIST, PROJECT_EMULATION). A row of the comparison lies within
the tolerance when |this machine's mean - the committed mean| <= max(2 x the committed seeds'
standard deviation, 1 point). check_runs also keeps any reproduce from training new runs into a
grid whose finished runs trained on other data.
"""
import os
import platform
from pathlib import Path

import config as run_config
import data
import emulate
import mnist
import report
import resources
import run_folder
from run_folder import UsageError

ROOT = Path(__file__).resolve().parent
DATA_SOURCES = ("emulated", "nmnist")
PRESETS = ("paper", "quick", "best")  # the presets of report.write_report, whose rows the paper's Table 1 names
# The emulation every committed run trained on (emulate.provenance of the tables' copy).
PROJECT_EMULATION = {"emulator": "eggroll-snn emulate.py", "version": 1, "seed": 0,
                     "mnist_sha256": mnist.OFFICIAL_SHA256}
MIN_TOLERANCE = 1.0  # points of test accuracy
RENAME = "move it out of that folder (it is kept) to train the run on this data"
OWN_FOLDER = ("to train this grid on that data, give it a folder of its own (--results DIR), or give --data-root "
              "the copy that run trained on")


def prepare(opts):
    """Point opts at the chosen data and its results folder, results/local/<data> under --results:
    for `emulated` the emulated copy (--data-root, else <cache home>/eggroll-snn/nmnist-emulated),
    for `nmnist` the real one, downloaded by tonic if absent. A UsageError for a preset the
    comparison has no rows for, or real data that was emulated."""
    if not opts.data:
        raise UsageError("--mnist is for --data emulated, which makes the data from MNIST; add --data emulated")
    if opts.config not in PRESETS:
        raise UsageError(f"--data is for --config {', '.join(PRESETS)}; drop it for --config {opts.config}")
    given, opts.results = opts.results, str(Path(opts.results) / "local" / opts.data)
    for path in (Path(opts.results).parent, Path(opts.results)):
        if path.exists() and not path.is_dir():
            raise UsageError(f"--results {given}: {path}, where reproduce --data keeps its runs, is no folder (a "
                             f"file, say); move it away, or give another --results")
    if opts.data == "emulated":
        opts.data_root = str(opts.data_root or data._cache_home() / "nmnist-emulated")
        opts.download = False
    else:
        if opts.mnist:
            raise UsageError("--mnist is for --data emulated (real N-MNIST is downloaded as it is); drop it")
        opts.download = not opts.report_only
        if not opts.report_only and emulate.provenance(opts.data_root) is not None:
            raise UsageError(f"--data nmnist: {data.resolve_root(opts.data_root)} holds emulated recordings; give "
                             f"--data-root a copy of the real N-MNIST, or use --data emulated")


def make_data(opts):
    """For --data emulated, emulate what is not there yet (unless --report-only), on 2 processes at most."""
    if opts.data == "emulated" and not opts.report_only:
        default = Path(opts.data_root) == data._cache_home() / "nmnist-emulated"  # the project's own folder
        emulate.emulate(opts.data_root, opts.mnist, workers=min(2, os.cpu_count() or 1), progress=not opts.quiet,
                        elsewhere=f"delete {opts.data_root} (the project's emulation, made again from these files) "
                                  f"or give --data-root another folder to emulate into" if default else
                                  "give --data-root another folder to emulate into", every_digit=True)


def foreign_runs(results_dir, data_root, cache_dir=None, progress=False, download=False):
    """(run folder, why) of each finished run under results_dir/runs trained on other data than
    the N-MNIST copy at data_root: its final.json's data fingerprint is not the copy's (the frames
    are loaded, from their cache, once per time-bin count; downloaded first with `download`, unless
    the run's data was emulated: the download is not), or it predates the record and the copy is
    not the project's emulated N-MNIST."""
    foreign, fingerprints = [], {}
    made = emulate.provenance(data_root)
    absent = resources.nmnist_recordings(data_root, "--data-root", required=not download) is None  # to be downloaded
    for final_path in sorted((Path(results_dir) / "runs").glob("*/final.json")):
        final = report.read_record(final_path, run_folder.final_problem, report.final_fix(final_path.parent))
        record = final.get("data")
        if record is None:
            if made is None or any(made.get(key) != value for key, value in PROJECT_EMULATION.items()):
                foreign.append((final_path.parent, "it trained on the project's emulated N-MNIST before runs "
                                                   "recorded their data" + "; a download is the real N-MNIST" * absent))
            continue
        if record.get("emulated") is not None and absent:
            foreign.append((final_path.parent, f"it trained on {report.data_description(record)}; a download "
                                               f"is the real N-MNIST"))
            continue
        time_bins = run_config.from_stored(final["config"]).time_bins
        if time_bins not in fingerprints:
            fingerprints[time_bins] = data.load_nmnist(data_root, time_bins, cache_dir, download=download,
                                                       progress=progress).fingerprint()
        differing = [split for split, value in fingerprints[time_bins].items()
                     if record["fingerprint"].get(split) != value]
        if differing:
            split = differing[0]
            foreign.append((final_path.parent, f"its {split} split was {record['fingerprint'].get(split)}, here "
                                               f"{fingerprints[time_bins][split]}"))
    return foreign


def check_runs(opts, results_dirs, fix=RENAME):
    """A UsageError naming the first finished run in `results_dirs` trained on other data than
    opts's, ending with `fix` (a text, or a callable that makes it)."""
    for results_dir in results_dirs:
        foreign = foreign_runs(results_dir, opts.data_root, opts.cache_dir, progress=not opts.quiet,
                               download=opts.download)
        if foreign:
            out, why = foreign[0]
            raise UsageError(f"{out} was trained on other data than {data.resolve_root(opts.data_root)} ({why}); "
                             f"{fix() if callable(fix) else fix}")


def rows(local, committed):
    """Per method of METHOD_ORDER that either side ran: (method, the paper, committed (mean, std,
    seeds), local (mean, std, seeds), difference, tolerance, within); accuracies in points, None
    where a side has no run."""
    table = []
    for name in report.METHOD_ORDER:
        if name not in local and name not in committed:
            continue
        sides = [summary(runs.get(name)) for runs in (committed, local)]
        difference = tolerance = within = None
        if all(sides):
            difference = sides[1][0] - sides[0][0]
            tolerance = max(2 * sides[0][1], MIN_TOLERANCE)
            within = abs(difference) <= tolerance
        table.append((name, report.PAPER_TABLE_1.get(name), *sides, difference, tolerance, within))
    return table


def summary(seeds):
    """(mean, std, number of seeds) of the test accuracies in points, None where there is no run."""
    if not seeds:
        return None
    mean, std = report.mean_std([100 * final["test_acc"] for final, _ in seeds])
    return mean, std, len(seeds)


def comparison(local_dir, committed_dir, preset):
    """comparison.md's text: the rows of `rows` for the runs under local_dir and committed_dir."""
    local, committed = report.collect(Path(local_dir)), report.collect(Path(committed_dir))
    cell = lambda side: "–" if side is None else f"{side[0]:.2f} ± {side[1]:.2f}" + (
        f" ({side[2]} seed{'s' * (side[2] != 1)})" if side[2] != len(run_config.SEEDS) else "")
    number = lambda value, sign="": "–" if value is None else f"{value:{sign}.2f}"
    lines = [f"# The {preset} preset on this machine beside the paper and the committed runs", "",
             f"This machine: {machine()}; {sides_line(local, 'its runs')}.",
             f"Committed runs ({relative(committed_dir)}/runs): {sides_line(committed, 'they')}.", "",
             "| method | the paper | committed runs | this machine | difference | tolerance | within |",
             "|---|---|---|---|---|---|---|"]
    table = rows(local, committed)
    other_data = data_difference(local, committed)
    for name, paper, theirs, ours, difference, tolerance, within in table:
        verdict = "–" if within is None else "not compared" if other_data else "yes" if within else "no"
        lines.append(f"| {name} | {number(paper)} | {cell(theirs)} | {cell(ours)} | {number(difference, '+')} | "
                     f"{number(tolerance)} | {verdict} |")
    compared = [row for row in table if row[-1] is not None]
    verdict = (f"Not compared: {other_data}." if other_data and compared else
               f"{sum(row[-1] for row in compared)} of {len(compared)} rows compared lie within it"
               + ("." if compared else "; no committed run to compare with." if local else
                  "; no run of this machine has finished yet."))
    lines += ["", f"Test accuracy %, mean ± std over seeds. Difference: this machine's mean minus the committed "
                  f"mean; tolerance: max(2 × the committed seeds' std, {MIN_TOLERANCE:g} point). {verdict}"]
    return "\n".join(lines) + "\n"


def data_difference(local, committed):
    """Why this machine's runs trained on other data than the committed ones, in words, or None:
    a training split of another size, or emulated from MNIST files that are not the official ones
    (the committed runs' emulation)."""
    finals = {side: [final for seeds in runs.values() for final, _ in seeds]
              for side, runs in (("local", local), ("committed", committed))}
    sizes = {side: {final["n_train"] for final in runs} for side, runs in finals.items()}
    if sizes["local"] and sizes["committed"] and sizes["local"] != sizes["committed"]:
        return (f"this machine's runs trained on {', '.join(map(str, sorted(sizes['local'])))} samples, the "
                f"committed ones on {', '.join(map(str, sorted(sizes['committed'])))}")
    made = [final.get("data", {}).get("emulated") for final in finals["local"]]
    if any(record and record.get("mnist_sha256") != mnist.OFFICIAL_SHA256 for record in made):
        return "this machine's runs trained on N-MNIST emulated from MNIST files that are not the official ones"
    return None


def sides_line(runs, subject):
    """The devices and data of one side's runs, e.g. "cpu (x86_64); they trained on emulated N-MNIST (...)"."""
    if not runs:
        return "no run has finished"
    finals = [final for seeds in runs.values() for final, _ in seeds]
    trained_on = sorted({report.data_description(final.get("data")) for final in finals})
    devices = report.devices_line(runs, list(runs)).split(": ", 1)[1]
    return f"{devices}; {len(finals)} run{'s' * (len(finals) != 1)}; {subject} trained on {' and on '.join(trained_on)}"


def machine():
    """The machine this runs on, in words: its processor and cores."""
    model = next((line.split(":", 1)[1].strip() for line in read_lines("/proc/cpuinfo")
                  if line.startswith("model name")), platform.processor() or platform.machine())
    return f"{model}, {os.cpu_count()} cores"


def read_lines(path):
    try:
        return Path(path).read_text().splitlines()
    except OSError:
        return []


def relative(path):
    """`path` relative to the repository where it lies inside it."""
    path = Path(path).resolve()
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def write(local_dir, preset):
    """comparison.md in local_dir against the committed runs of results/<preset>; returns its text."""
    text = comparison(local_dir, ROOT / "results" / preset, preset)
    run_folder.write_atomically(Path(local_dir) / "comparison.md", text)
    return text
