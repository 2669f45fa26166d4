"""`run.py reproduce`: every run of a preset (the paper's protocol, the hyperscale parts, the spike
cost), trained one after another into results/<config>/runs/ skipping the finished ones, each
scored on --real-root if given, then the tables and figures of report.py. New runs join a grid
only if its finished runs trained on the same data (comparison.check_runs).
"""
import functools
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy

import comparison
import config as run_config
import data
import exits
import report
import resources
import run_folder
import training
from backend import array_module
from run_folder import CHECKPOINT, UsageError


def reproduce(opts):
    """Train every run of the preset that is not finished yet, then write tables and figures; with
    --config hyperscale, part after part, each in results/hyperscale/<part>.

    With --real-root, every finished run is also scored on that N-MNIST copy (real.json). With
    --deadline, no run trains past that many seconds from now: the one it stops stays resumable.
    """
    if opts.deadline is not None and not opts.deadline >= 0:
        raise UsageError(f"--deadline must be >= 0 seconds, got {opts.deadline}: use e.g. --deadline 3600")
    deadline = None if opts.deadline is None else time.monotonic() + opts.deadline
    made = run_folder.first_missing(Path(opts.results).absolute())  # what a failure takes away again
    try:
        reproduce_grids(opts, deadline)
    except BaseException:
        run_folder.remove_empty_tree(made)
        raise


def reproduce_grids(opts, deadline):
    """reproduce's work, once its --deadline is known."""
    if opts.data or opts.mnist:
        comparison.prepare(opts)  # the data and results/local/<data>
    hyperscale = opts.config == "hyperscale"
    for name in ("part", "populations"):
        if getattr(opts, name) is not None and not hyperscale:
            raise UsageError(f"{run_config.option(name)} is for --config hyperscale; drop it for "
                             f"--config {opts.config}")
    if hyperscale:
        grids = [(Path(opts.results) / "hyperscale" / part, run_config.hyperscale_runs(part),
                  functools.partial(report.write_hyperscale_report, part=part))
                 for part in ([opts.part] if opts.part else run_config.HYPERSCALE)]
    elif opts.config == "spike-cost":
        grids = [(Path(opts.results) / opts.config, run_config.spike_cost_runs(), report.write_spike_cost_report)]
    elif opts.config == "screen":
        grids = [(Path(opts.results) / opts.config, run_config.screen_runs(), report.write_screen_report)]
    elif opts.config == "parity":
        grids = [(Path(opts.results) / opts.config, run_config.parity_runs(),
                  functools.partial(report.write_report, preset=opts.config))]
    else:
        grids = [(Path(opts.results) / opts.config, run_config.preset_runs(opts.config),
                  functools.partial(report.write_report, preset=opts.config))]
    # the report reads only the preset's runs, each as its folder's name says (report.stray_problem)
    expected = {results_dir: {run_config.run_folder_name(config, opts.config): config for config in runs}
                for results_dir, runs, _ in grids}
    grids = selected_runs(opts, grids)
    check_results(opts, grids)  # before an emulation's minutes, which a refusal after them would leave behind
    if opts.data:
        if opts.real_root:  # before the emulation's minutes, not after them
            resources.nmnist_recordings(opts.real_root, "--real-root")
            training.check_real_root(opts.real_root, opts.data_root)
        comparison.make_data(opts)  # emulated first, if that is the data
    left = check_reproduce(opts, grids)
    if opts.data and not opts.report_only:
        comparison.check_runs(opts, [results_dir for results_dir, _, _ in grids])
    elif left or not opts.report_only:  # the finished runs, skipped or beside new ones, are --data-root's
        folders = [results_dir for results_dir, _, _ in grids]
        training_in = {results_dir for results_dir, _ in left}
        checked = [folder for folder in folders if folder in training_in] if opts.report_only else folders
        report_only = "; or, as every run has finished, add --report-only to rewrite the report without the data"
        comparison.check_runs(opts, checked, fix=lambda: comparison.OWN_FOLDER + (  # read only if a run is refused
            report_only if not left and all(agree(folder) for folder in checked) else ""))
    if left and opts.download:  # once no finished run refuses this data, and before the first run is announced
        data.fetch_nmnist(opts.data_root)
    for results_dir, runs, write_report in grids:
        if opts.report_only and not has_finished_run(results_dir):
            print(f"{results_dir}: no run has finished, no report written", file=sys.stderr)
            continue
        with run_folder.owned(results_dir):
            reproduce_runs(opts, results_dir, runs, deadline)
            written = write_report(results_dir, expected=expected[results_dir])
            report.remove_stale_figures(results_dir, written)
        print(f"results written to {results_dir}: {', '.join(Path(path).name for path in written)}", file=sys.stderr)
        if opts.data:
            print(comparison.write(results_dir, opts.config), end="")
            print(f"comparison written to {results_dir / 'comparison.md'}", file=sys.stderr)


def agree(results_dir):
    """Whether the finished runs under results_dir make one report: the same data, intact records
    (report.collect refuses them otherwise)."""
    try:
        report.collect(results_dir)
    except ValueError:
        return False
    return True


SELECTORS = {"runs": lambda config: config.name, "seeds": lambda config: config.seed,
             "populations": lambda config: config.population}  # reproduce's options that pick runs


def selected_runs(opts, grids):
    """The grids, each with the runs that --runs, --seeds and --populations pick; a UsageError for
    a value no run of the preset has, or if no run is left."""
    scope = f"--config {opts.config}" + (f" --part {opts.part}" if opts.part else "")
    every = [config for _, runs, _ in grids for config in runs]
    for name, value_of in SELECTORS.items():
        known = sorted({value_of(config) for config in every})
        given = [str(value) for value in getattr(opts, name) or ()]
        if "" in given or any(value != value.strip() for value in given):
            what = "an empty name" if "" in given else "a space"
            raise UsageError(f"--{name} '{','.join(given)}' holds {what}; separate the names by single commas, e.g. "
                             f"--{name} {','.join(map(str, known[:2]))}")
        unknown = [value for value in getattr(opts, name) or () if value not in known]
        if unknown:
            raise UsageError(f"--{name}: {scope} has no {name[:-1]} {unknown[0]}; use some of "
                             f"{', '.join(map(str, known))}")
    picked = lambda config: all(not getattr(opts, name) or value_of(config) in getattr(opts, name)
                                for name, value_of in SELECTORS.items())
    grids = [(results_dir, [config for config in runs if picked(config)], write) for results_dir, runs, write in grids]
    if not any(runs for _, runs, _ in grids):
        given = " ".join(f"--{name} {','.join(map(str, getattr(opts, name)))}" for name in SELECTORS
                         if getattr(opts, name))
        raise UsageError(f"no run of {scope} has {given}; drop one of them")
    return grids


def has_finished_run(results_dir):
    """Whether results_dir/runs holds a run with its final.json: something for a report."""
    return any((results_dir / "runs").glob("*/final.json"))


def check_not_a_presets_folder(results):
    """A UsageError if `results` is a preset's own folder (results/paper, say, or one of hyperscale's
    parts, or results/hyperscale), where reproduce would train a grid nested inside its own."""
    holds_runs = lambda place: any(path.is_file() for path in place.glob(f"runs/*/{resources.RUN_MARK}"))
    folder = results.absolute()
    if holds_runs(folder) or any(holds_runs(folder / part) for part in run_config.HYPERSCALE):
        above = folder.parent.parent if folder.parent.name == "hyperscale" else folder.parent
        raise UsageError(f"--results {results} is a preset's folder of reproduce (its runs are there), and reproduce "
                         f"keeps each preset's in a folder of its own below --results: give the folder that holds "
                         f"them, e.g. --results {above}")


def check_results(opts, grids):
    """The --results folder, checked before any data is made: writable, none of the project's or a
    preset's own, no user's file under a report's name, and (with --report-only) a finished run."""
    resources.refuse_data_folder(opts.results, "use another --results")
    resources.refuse_project_folders(opts.results, "--results", "use another --results", runs=False)
    resources.check_writable(opts.results, "--results", folder=True)
    check_not_a_presets_folder(Path(opts.results))
    for results_dir, _, _ in grids:  # a user's file under a table's or a figure's name is never replaced
        report.refuse_foreign_files(results_dir)
        odd = data.not_a_folder(results_dir / "runs")
        if odd:  # where the preset's runs are kept, and the report reads them
            raise UsageError(f"{results_dir / 'runs'} is {odd}, where reproduce keeps the preset's runs: move it "
                             f"out of {results_dir}, then run reproduce again")
    if opts.report_only and not any(has_finished_run(results_dir) for results_dir, _, _ in grids):
        busy = next((results_dir for results_dir, _, _ in grids if run_folder.holder(results_dir)), None)
        if busy is not None:  # its first run still training: what to do is wait, not train
            raise run_folder.in_use(busy, run_folder.holder(busy))
        folders = " or ".join(str(results_dir / "runs") for results_dir, _, _ in grids)
        raise UsageError(f"--report-only: no run in {folders} has finished, so there is nothing to report; drop "
                         f"--report-only to train the runs first")


def check_reproduce(opts, grids):
    """What reproduce will use, checked before the first run trains (after check_results): the
    N-MNIST copies of --real-root and (if a run is left to train) --data-root, the device, and the
    folder and memory of every run left to train; returns those runs, (results_dir, config) each
    (none with --report-only)."""
    if opts.real_root:
        resources.nmnist_recordings(opts.real_root, "--real-root")
        training.check_real_root(opts.real_root, opts.data_root)
        check_rescorable(opts, grids)
    left = [] if opts.report_only else unfinished(opts, grids)
    for results_dir, config in left:
        out = results_dir / "runs" / run_config.run_folder_name(config, opts.config)
        if os.path.lexists(out) and not out.is_dir():
            what = f"a link to {os.readlink(out)}, which leads to no folder" if os.path.islink(out) else "not a folder"
            raise UsageError(f"{out} is {what}, and {run_config.run_label(config, opts.config)} trains there: move it "
                             f"out of {out.parent}")
    if left or opts.real_root:
        xp = array_module(opts.device)  # --device gpu without a usable GPU fails here
        resources.check_frame_cache(opts.cache_dir)  # before any run is announced, not at its data
    evolved = [config.population for _, config in left if config.method == "eggroll"]
    if evolved and opts.config in ("parity", "hyperscale") and xp is numpy:
        print(f"note: the {opts.config} preset trains EGGROLL at {max(evolved):,} members, sized for a GPU "
              f"(--device gpu): on a CPU each of its runs takes many hours", file=sys.stderr)
    if left:
        recordings = resources.nmnist_recordings(opts.data_root, "--data-root", required=not opts.download)
        for _, config in left:
            resources.check_run_memory(config, xp, recordings, run=run_config.run_folder_name(config, opts.config))
    return left


def check_rescorable(opts, grids):
    """A UsageError if a finished run that --real-root would score has no checkpoint to score, and its
    real.json holds scores on other recordings (its data's fingerprint differs, or, scored before
    fingerprints were kept, its split sizes): the report would show those as the copy's."""
    for results_dir, runs, _ in grids:
        stale = []
        for config in runs:
            out = results_dir / "runs" / run_config.run_folder_name(config, opts.config)
            if not run_folder.is_finished(out, config) or (out / CHECKPOINT).exists() or not (out / "real.json").exists():
                continue
            try:
                real = run_folder.read_json(out / "real.json", "")
            except UsageError:
                continue  # damaged: the report names it
            if run_folder.real_problem(real):
                continue
            splits = training.load_splits(opts.real_root, config.time_bins, opts.cache_dir)
            sizes = {name: len(getattr(splits, name)) for name in ("train", "val", "test")}
            if real["data"] != splits.fingerprint() if "data" in real else real.get("samples", sizes) != sizes:
                stale.append(out)
        if stale:
            raise UsageError(f"--real-root {opts.real_root}: {len(stale)} finished run(s) of {results_dir} have no "
                             f"{CHECKPOINT} to score on it, and their real.json holds scores on other recordings "
                             f"(first {stale[0]}), which the report would show as this copy's; give --real-root the "
                             f"recordings they were scored on, or leave it out to report the scores they hold")


def unfinished(opts, grids):
    """(results_dir, config) of each run of the grids that has not finished."""
    return [(results_dir, config) for results_dir, runs, _ in grids for config in runs
            if not run_folder.is_finished(results_dir / "runs" / run_config.run_folder_name(config, opts.config),
                                          config)]


def reproduce_runs(opts, results_dir, runs, deadline):
    """Train the unfinished `runs` into results_dir/runs/<run>, skipping the finished ones and, past
    the deadline, the rest; score them on --real-root."""
    where = dict(device=opts.device, data_root=opts.data_root, cache_dir=opts.cache_dir, download=opts.download)
    not_started = 0
    for index, config in enumerate(runs, start=1):
        config = replace(config, **where)
        out = results_dir / "runs" / run_config.run_folder_name(config, opts.config)
        label = f"[{index}/{len(runs)}] {run_config.run_label(config, opts.config)}"
        if run_folder.is_finished(out, config):
            if not opts.report_only:  # where nothing trains, nothing is skipped
                print(f"{label}: finished in {out}, skipped", file=sys.stderr)
        elif opts.report_only:
            continue
        elif deadline is not None and time.monotonic() >= deadline:
            not_started += 1
            continue
        else:
            print(label, file=sys.stderr)
            stored = run_folder.read_config(out) if run_folder.is_run_folder(out) and (out / "config.json").exists() \
                else None  # in a folder that is not a run's, config.json is not the project's to read
            force = opts.force and stored is not None and run_config.stored(stored) != run_config.stored(config)
            link = next((path for path in (out, out.parent, results_dir) if os.path.islink(path)), None)
            if force and link is not None:  # --force deletes in the preset's own folders, never through a link
                raise UsageError(f"{link} is a symbolic link to {os.readlink(link)}, and {out} there holds a run of "
                                 f"other settings, which --force would delete through the link; remove the link "
                                 f"(what it leads to is left as it is) and reproduce trains the preset's run in a "
                                 f"folder of its own")
            try:
                training.train(config, out, resume=True, force=force, progress=not opts.quiet, deadline=deadline,
                               command="reproduce")
            except training.DeadlineReached as stop:
                print(f"{label}: {stop}", file=sys.stderr)
                continue
        if opts.real_root and not ((out / "real.json").exists() and training.scored_on(out, opts.real_root,
                                                                                       opts.cache_dir)):
            if (out / CHECKPOINT).exists():
                scored = training.evaluate_run(out, opts.real_root, opts.cache_dir, opts.device, "--real-root",
                                               "reproduce")
                training.check_other_recordings(training.trained_on(out), scored["data"], opts.real_root,
                                                f"the data {out} trained and was tested on")
                run_folder.write_atomically(out / "real.json", json.dumps(scored, indent=1))
            else:
                print(f"{out}: no {CHECKPOINT}, not scored on --real-root", file=sys.stderr)
    if not_started:
        print(f"--deadline passed: {not_started} run(s) of {results_dir} not started; the next reproduce trains them",
              file=sys.stderr)


if __name__ == "__main__":  # the reproduction is a command of run.py's
    sys.exit(exits.runs_as("reproduce.py", "the paper's grid of runs, its tables and figures", "reproduce"))
