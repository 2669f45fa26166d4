"""The results of `run.py reproduce` as a person reads them: Table 1 (table.md), Table 2
(per_seed.md), where the spikes are (sparsity.md) and three figures, made from the run folders
under results/<preset>/runs; for the hyperscale preset a table.md and figures per part, from
results/hyperscale/<part>/runs; for the spike-cost preset a table.md and spike_cost.png.
"""
import json
import math
import os
import re
import statistics
import sys

import numpy

import config
import exits
import figure_record
import mnist
import snn
import run_folder

RETRAIN = "move that run folder out of the runs folder (nothing of it is deleted) and rerun reproduce to train it again"
RESCORE = "rerun reproduce with --real-root to score the run again (it rewrites real.json)"
METRICS_KEYS = ("generation", "val_acc", "wall_seconds")  # what the report reads from each metrics record
TIME_NOTE = ("s / generation, step s: the update steps alone (the median per generation; summed, total_seconds of "
             "final.json); end-to-end s: "
             "from the first step to the last checkpoint, minibatches, validation and checkpoints included "
             "(end_to_end_seconds), – where a run was trained before it was measured.")
REAL_NOTE = ("real recordings %: accuracy on the recordings given with --real-root, over all their splits; "
             "– where a run was not scored.")
# Energy per operation in 45 nm CMOS, 32-bit floating point (M. Horowitz, "Computing's energy
# problem (and what we can do about it)", ISSCC 2014): an add 0.9 pJ, a multiply 3.7 pJ. A spike
# costs an accumulate per synapse it crosses; a non-spiking network a multiply-accumulate per weight.
ACCUMULATE_PJ = 0.9
MULTIPLY_ACCUMULATE_PJ = 0.9 + 3.7
SPARSITY_KEYS = ("input_events_per_sample", "hidden_spikes_per_sample", "output_spikes_per_sample",
                 "silent_hidden_fraction", "synaptic_ops_per_sample")
ENERGY_NOTE = (f"hidden spikes, energy: on the test split, per sample; energy = synaptic operations ({snn.SIZES[1]} "
               f"accumulates per input event + {snn.SIZES[2]} per hidden spike) x {ACCUMULATE_PJ} pJ (45 nm CMOS, "
               f"Horowitz, ISSCC 2014); – where a run was trained before they were measured.")
METHOD_ORDER = ["bptt", "es"] + [f"eggroll-r{r}" for r in config.RANKS]
# The paper's Table 1, test accuracy % after 100 generations at the paper's own population.
PAPER_TABLE_1 = {"bptt": 94.03, "es": 76.17, "eggroll-r1": 78.75, "eggroll-r2": 72.27, "eggroll-r4": 79.21,
                 "eggroll-r8": 72.80}


def read_record(path, problem_of, fix):
    """The JSON object in path, checked by `problem_of` (run_folder.final_problem or real_problem);
    else ValueError naming the path, the field and `fix`."""
    record = run_folder.read_json(path, fix, ValueError)  # a regular file of JSON, or one line
    problem = problem_of(record)
    if problem:
        raise ValueError(f"{path} is damaged ({problem}): {fix}")
    return record


def final_fix(folder):
    """What to do about the damaged final.json of the run in `folder`: where its checkpoint and
    config.json are there, the command that scores it again and rewrites final.json; else RETRAIN."""
    if not (folder / run_folder.CHECKPOINT).is_file():
        return RETRAIN
    try:
        stored = run_folder.read_config(folder)
    except run_folder.UsageError:
        return RETRAIN
    return (f"{run_folder.first_move_final(folder)}{run_folder.resume_command(folder, stored)} scores the run again "
            f"from its checkpoint and rewrites final.json")


def read_metrics(path):
    """The records of a finished run's metrics.jsonl, every line one (a kill cuts no line of a finished
    run's: final.json is written after its last record, and --resume drops a line cut before), none
    skipped (they come every eval_every generations, and at the last)."""
    fix = f"restore it from a copy of the run, or {RETRAIN}"  # its records are gone: no run of the weights redoes them
    if not path.exists():
        raise ValueError(f"{path} is missing: {fix}")
    lines = run_folder.read_bytes(path, run_folder.MAX_METRICS_BYTES, ValueError).decode(errors="replace").splitlines()
    records, damage = run_folder.metrics_records(lines, METRICS_KEYS)
    if damage is not None:
        raise ValueError(f"line {damage[0]} of {path} is {run_folder.line_damage(lines, *damage)}: {fix}")
    skipped = records and run_folder.missing_record(records)
    if skipped:  # a record deleted: its curve would be drawn without it
        raise ValueError(f"{path} {skipped}: {fix}")
    return records


# Every table a report writes into results/<preset> (or a hyperscale part), and how each begins: a
# file of one of these names that begins otherwise is the user's, and is left as it is.
HEADINGS = re.compile(rb"# (Table [12] \(|Sparsity and energy \(|Hyperscale |The screen: |The price of a spike: "
                      rb"|The \S+ preset on this machine)")
TABLES = ("table.md", "per_seed.md", "sparsity.md", "comparison.md")
# Every figure a report draws there, each known by its sha256 in the folder's record of the figures
# drawn there (figure_record.py: FIGURE_RECORD, one "<sha256>  <name>" a line, as sha256sum writes): a
# file of one of these names that the record does not hold is the user's, and is left as it is.
FIGURES = ("rank_ablation.png", "convergence.png", "wallclock.png", "accuracy_time.png", "protocol.png",
           "budget_accuracy.png", "budget_speed.png", "levers.png", "spike_cost.png")
FIGURE_RECORD = figure_record.RECORD


def refuse_foreign_files(results_dir):
    """Before any work: a UsageError for a file in results_dir under the name of a report's table or
    figure that no report wrote (a table that does not begin as the report's own do, a figure that
    the record of the figures drawn there does not hold), which it would replace."""
    instead = refused_instead(results_dir)
    for name in TABLES:
        exits.refuse_foreign_file(results_dir / name, HEADINGS, "a table or figure of run.py reproduce", instead)
    for name in FIGURES:
        figure_record.refuse_unrecorded(results_dir / name, "the report", instead)


def refused_instead(results_dir):
    """What to do with a file of the report's names that no report wrote."""
    return f"move it out of {results_dir}, or give reproduce another --results"


def recorded_figures(results_dir):
    """{name: the sha256 digests} of the figures drawn in results_dir, as its record says (none where
    there is no record); a UsageError if that file is no such record."""
    return figure_record.recorded(results_dir, refused_instead(results_dir))


def save_figure(figure, path):
    """Draw `figure` into the PNG `path` as `run_folder.writing` writes: its digest joins the folder's
    record of the figures drawn there before the file takes its name, so the report knows it for its
    own (beside the digest of the figure it replaces, should the rename not happen)."""
    with figure_record.writing(path) as temporary:
        figure.savefig(temporary, format="png", dpi=120, bbox_inches="tight")


def prepare_results(results_dir):
    """Make results_dir, and refuse, before anything is written, a link in it under the name of a
    table, a figure (*.md, *.png) or the figures' record, and a file of a report's name that no
    report wrote: the report writes its own files, never through a link nor over a user's."""
    results_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(results_dir.iterdir()):
        if path.suffix in (".md", ".png") or path.name == FIGURE_RECORD:
            run_folder.refuse_link(path)
    refuse_foreign_files(results_dir)
    left = run_folder.left_temporaries_note(results_dir, [*TABLES, *FIGURES, FIGURE_RECORD], "a report")
    if left:
        print(left, file=sys.stderr)


def remove_stale_figures(results_dir, written):
    """Delete the figures an earlier report drew in results_dir that this one, `written`, did not (of
    runs no longer there, or of none): only the report's own, a file of one name that the record
    holds; then the record holds this report's figures alone (and the lines of figures of other
    names that another command, lesson.py, drew there)."""
    with figure_record.record_locked(results_dir):  # another command may be drawing there now
        recorded = recorded_figures(results_dir)
        kept = {name: digests for name, digests in recorded.items() if name not in FIGURES}
        for name in FIGURES:
            path = results_dir / name
            digest = figure_record.digest(path) if os.path.isfile(path) and not os.path.islink(path) else None
            if digest not in recorded.get(name, ()):  # none there, or the user's
                continue
            if path in written or not run_folder.is_own_file(path):  # drawn now, or a name of a linked file
                kept[name] = {digest}
            else:
                path.unlink()
        if recorded:
            figure_record.write(results_dir, kept)


def collect(results_dir, expected=None):
    """{run name: [(final, metrics) per seed]} from the runs under results_dir/runs; final gets
    "real_acc" where the run was scored on other recordings (real.json). ValueError, naming the file
    and the fix, for a damaged or foreign file. `expected` ({folder name: RunConfig}, the preset's
    runs, as reproduce passes it): a folder that is not one of them is named in a warning line and
    left out (`stray_problem`)."""
    runs, trained_on, scored_on = {}, {}, {}  # the data each run trained, and was scored, on: {key: folder}
    left_out = 0  # finished runs named in a warning and left out
    for entry in sorted((results_dir / "runs").glob("*")):
        if entry.is_symlink() and not entry.exists():  # glob passes over it: say so
            print(f"warning: {entry} is left out of the report: it is a link to {os.readlink(entry)}, which does "
                  f"not lead to a folder (it does not exist, or the links loop)", file=sys.stderr)
    for final_path in sorted((results_dir / "runs").glob("*/final.json")):
        name = final_path.parent.name.rsplit("-seed", 1)[0]
        for file in run_folder.RUN_FILES:  # another run's record, linked in, would be reported as this run's
            try:
                run_folder.refuse_link(final_path.parent / file)
            except run_folder.UsageError as linked:
                raise ValueError(str(linked)) from None
        final = read_record(final_path, run_folder.final_problem, final_fix(final_path.parent))
        saved = run_folder.checkpoint_identity(final_path.parent) if final.get("data") is None else None
        if saved is not None and saved["data"]:  # not a run from before runs recorded their data: its record lost
            raise ValueError(f"{final_path} holds no record of the data the run trained on, though its checkpoint "
                             f"names it: it is damaged; {final_fix(final_path.parent)}")
        problem = expected is not None and stray_problem(final_path.parent, final, expected)
        if problem:
            print(f"warning: {final_path.parent} is left out of the report: {problem}", file=sys.stderr)
            left_out += 1
            continue
        real_path = final_path.parent / "real.json"
        if real_path.exists():
            real = read_record(real_path, run_folder.real_problem, RESCORE)
            mismatch = run_folder.real_mismatch(real, final_path.parent, final)
            if mismatch:
                fix = RESCORE if (final_path.parent / run_folder.CHECKPOINT).exists() else \
                    f"the run keeps no {run_folder.CHECKPOINT} to score again, so move {real_path} out of its folder " \
                    f"(the table then shows no real-recordings score for it)"
                raise ValueError(f"{real_path} scores another run than {final_path.parent} ({mismatch}): {fix}")
            final["real_acc"] = real["accuracy"]["all"]
            # (a real.json from before scores named their recordings holds none: which they were is unknown)
            scored_on.setdefault(json.dumps(real.get("data"), sort_keys=True), real_path)
        metrics = read_metrics(final_path.parent / "metrics.jsonl")
        if not metrics:
            raise ValueError(f"{final_path.parent / 'metrics.jsonl'} holds no record, though {final_path} says the run "
                             f"finished: restore it from a copy of the run, or {RETRAIN}")
        if metrics[-1]["generation"] == final["generations"] and metrics[-1].get("val_acc") != final["val_acc"]:
            raise ValueError(f"{final_path.parent / 'metrics.jsonl'} and {final_path} disagree on the validation "
                             f"accuracy at the last generation, {final['generations']} ({metrics[-1].get('val_acc')} "
                             f"and {final['val_acc']}): one of them was edited or is another run's; restore the run "
                             f"from a copy, or {RETRAIN}")
        if metrics[-1]["generation"] != final["generations"]:
            raise ValueError(f"{final_path.parent / 'metrics.jsonl'} ends at generation {metrics[-1]['generation']} "
                             f"with validation accuracy {metrics[-1].get('val_acc')}, not where {final_path} does "
                             f"({final['generations']}, {final['val_acc']}): it is cut short or another run's; "
                             f"restore it from a copy of the run, or {RETRAIN}")
        if final.get("data") is not None:  # (a run from before runs recorded their data: none)
            trained_on.setdefault(json.dumps(final["data"]["fingerprint"], sort_keys=True), final_path.parent)
        runs.setdefault(name, []).append((final, metrics))
    if len(trained_on) > 1:
        first, second = list(trained_on.values())[:2]
        raise ValueError(f"{first} and {second} were trained on different data (their final.json's data), and a "
                         f"table never mixes two data sets: move the runs of one data set out of "
                         f"{results_dir / 'runs'} (or train them again on the other)")
    if left_out and not runs:  # a report of no run would replace the tables and figures of the runs left out
        raise ValueError(f"every finished run in {results_dir / 'runs'} is left out (above), so no report is written "
                         f"and the last one's tables and figures are left as they are: put each run back under its "
                         f"own folder name, or move it out of {results_dir / 'runs'}")
    if len(scored_on) > 1:
        first, second = list(scored_on.values())[:2]
        if "null" in scored_on:  # one of them names no recordings
            unnamed, named = scored_on["null"], next(path for key, path in scored_on.items() if key != "null")
            raise ValueError(f"{unnamed} names no recordings it scored (it was written before scores named them) and "
                             f"{named} does, so one column of real-recording accuracies could mix two copies: rerun "
                             f"reproduce --report-only with --real-root and one copy, without --runs or --seeds, which "
                             f"scores every run again on it (it rewrites their real.json)")
        raise ValueError(f"{first} and {second} score different recordings, which one column of real-recording "
                         f"accuracies would mix: rerun reproduce --report-only with --real-root and one copy, without "
                         f"--runs or --seeds, which scores every run again on it (it rewrites their real.json)")
    return runs


def stray_problem(folder, final, expected):
    """Why the run folder `folder` (its final.json read as `final`) is not the run of `expected`
    ({folder name: RunConfig}) its name says, or None: its name, mark, config.json and final.json's
    settings must agree with each other and with the preset's, as reproduce checks before training."""
    if folder.name not in expected:
        return "its name is that of no run of this preset (a copy or a backup?); move it out of the runs folder"
    if not run_folder.is_run_folder(folder):
        return (f"it is not a run folder of this project (no {run_folder.RUN_MARK}); if it is a run of this project "
                f"that lost it, put a file of that name back in it (any text)")
    if not (folder / "config.json").is_file():
        return ("it has no config.json, which says what its run trained; restore it from a copy of the run, or train "
                "the run again")
    wanted = config.stored(expected[folder.name])
    for source, settings in (("config.json", config.stored(run_folder.read_config(folder))),
                             ("final.json", config.stored(config.from_stored(final["config"])))):
        if settings != wanted:
            shown = run_folder.differences(settings, wanted)
            return (f"its {source} says other settings than the preset's run of its name ({shown}); move it out "
                    f"of the runs folder to keep it (reproduce then trains the preset's run under that name)")
    return None


def measured(finals, key, scale=1.0):
    """test_sparsity[key] x scale of each run's final.json; None for a run trained before it was measured."""
    return [f["test_sparsity"][key] * scale if "test_sparsity" in f else None for f in finals]


def format_measured(values, digits):
    """mean ± std of the runs that measured a value (see format_some), "–" where none did."""
    return format_some(values, "–", 1, digits)


def hidden_and_energy(finals, format_values=format_measured):
    """The two cells every table gives a run: hidden spikes and energy in nJ per test sample."""
    return [format_values(measured(finals, "hidden_spikes_per_sample"), 1),
            format_values(measured(finals, "synaptic_ops_per_sample", ACCUMULATE_PJ / 1e3), 1)]


def seconds_to_reach(metrics, accuracy=0.75):
    """Training seconds until validation accuracy first reached `accuracy`, else None."""
    return next((m["wall_seconds"] for m in metrics if m["val_acc"] >= accuracy), None)


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def format_mean_std(values, scale=1.0, digits=2):
    """mean ± std over the values given (None skipped); one value alone, with no spread to show."""
    mean, std = mean_std(values)
    if mean is None:
        return "n/a"
    present = sum(v is not None for v in values)
    return f"{mean * scale:.{digits}f}" + (f" ± {std * scale:.{digits}f}" if present > 1 else "")


def signed_mean_std(values, scale=1.0):
    """format_mean_std with the mean's sign always written: "+0.90", "-0.28 ± 0.10"."""
    text = format_mean_std(values, scale)
    return text if text.startswith("-") else "+" + text


def format_some(values, absent, scale=1.0, digits=2):
    """mean ± std of the seeds with a value, "(k/n seeds)" where some have None, `absent` where all do."""
    present = [v for v in values if v is not None]
    if not present:
        return absent
    return format_mean_std(present, scale, digits) + (f" ({len(present)}/{len(values)} seeds)"
                                                      if len(present) < len(values) else "")


def devices_line(runs, names):
    """"Device: X", or where runs trained on several devices, which runs trained on which."""
    by_device = {}
    for name in names:
        for final, _ in runs[name]:
            by_device.setdefault(final.get("device", "not recorded"), set()).add(name)
    if len(by_device) <= 1:
        return f"Device: {next(iter(by_device), 'not recorded')}"
    return "Devices: " + "; ".join(f"{device} for {', '.join(n for n in names if n in runs_on)}"
                                   for device, runs_on in by_device.items())


def data_description(record):
    """In words, the data a final.json's `data` record names (None: a run from before the record)."""
    if record is None:
        return "emulated N-MNIST (the committed tables' copy, from before runs recorded their data)"
    made = record.get("emulated")
    train = record["fingerprint"].get("train", "?")
    if made is None:
        return f"N-MNIST recordings that were not emulated (train split: {train})"
    official = "the official MNIST files" if made.get("mnist_sha256") == mnist.OFFICIAL_SHA256 else \
        "MNIST files other than the official ones"
    return (f"emulated N-MNIST (emulator version {made.get('version')}, seed {made.get('seed')}, from {official}; "
            f"train split: {train})")


def data_line(runs, names):
    """The devices, the recordings in each split and the data the runs trained on ("No run has
    finished yet." where none has)."""
    if not names:
        return "No run has finished yet."
    first = runs[names[0]][0][0]
    splits = "/".join("?" if first.get(key) is None else str(first[key]) for key in ("n_train", "n_val", "n_test"))
    trained_on = sorted({data_description(final.get("data")) for name in names for final, _ in runs[name]})
    return f"{devices_line(runs, names)}; train/val/test = {splits} recordings; trained on {' and on '.join(trained_on)}."


def write_report(results_dir, preset, expected=None):
    """table.md (Table 1), per_seed.md (Table 2), sparsity.md and the PNG figures of a reproduce run;
    returns the paths written. `expected`: the preset's runs, as `collect` takes them."""
    prepare_results(results_dir)
    runs = collect(results_dir, expected)
    names = [n for n in METHOD_ORDER if n in runs]
    es_finals = [f for f, _ in runs.get("es", [])]
    lines = [f"# Table 1 ({preset}): N-MNIST test accuracy over seeds {', '.join(map(str, config.SEEDS))} "
             f"(per_seed.md shows which ran)",
             "", data_line(runs, names), "",
             "| method | test acc % (mean ± std) | s / generation | speedup vs vanilla ES (same device) | "
             "step s to 75 % val acc | end-to-end s | spikes / sample | hidden spikes | energy nJ | "
             "real recordings % |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        finals = [f for f, _ in runs[name]]
        seconds = statistics.median(f["median_seconds_per_generation"] for f in finals)
        es_seconds = [f["median_seconds_per_generation"] for f in es_finals
                      if {f.get("device")} == {g.get("device") for g in finals}]
        speedup = f"{statistics.median(es_seconds) / seconds:.2f}×" if es_seconds and name != "bptt" else "–"
        reach = format_some([seconds_to_reach(m) for _, m in runs[name]], "not reached", digits=1)
        unit = " (per step)" if name == "bptt" else ""
        lines.append(f"| {name} | {format_seeds([f['test_acc'] for f in finals], len(config.SEEDS))} | "
                     f"{seconds:.3f}{unit} | {speedup} | {reach} | "
                     f"{format_some([f.get('end_to_end_seconds') for f in finals], '–', digits=0)} | "
                     f"{format_mean_std([f['spikes_per_sample'] for f in finals], digits=0)} | "
                     f"{' | '.join(hidden_and_energy(finals))} | "
                     f"{format_some([f.get('real_acc') for f in finals], '–', 100)} |")
    if preset == "parity":
        lines += ["", parity_verdict(runs)]
    lines += ["", TIME_NOTE, REAL_NOTE,
              ENERGY_NOTE + " sparsity.md has where the spikes are and a non-spiking network beside."]
    written = [results_dir / "table.md", results_dir / "per_seed.md"]
    run_folder.write_atomically(written[0], "\n".join(lines) + "\n")

    rows = ["# Table 2 " + f"({preset}): test accuracy % per seed", "",
            "| method | " + " | ".join(f"seed {s}" for s in config.SEEDS) + " |", "|---" * (len(config.SEEDS) + 1) + "|"]
    for name in names:
        by_seed = {f["config"]["seed"]: f["test_acc"] for f, _ in runs[name]}
        rows.append(f"| {name} | " + " | ".join(f"{100 * by_seed[s]:.2f}" if s in by_seed else "–"
                                               for s in config.SEEDS) + " |")
    run_folder.write_atomically(written[1], "\n".join(rows) + "\n")
    written.append(results_dir / "sparsity.md")
    run_folder.write_atomically(written[2], sparsity_table(runs, names, preset))
    if names:
        written += plot_figures(results_dir, runs, names, preset)
    return written


def parity_verdict(runs):
    """The parity preset's goal (config.PARITY_GOAL) against its runs: EGGROLL's mean test and real
    accuracy over the seeds, and its mean end-to-end time over BPTT's mean. Nothing is judged until
    every seed of both methods has its number, nor where the runs trained on different data; the
    time not where any stretch of any run trained on another device (metrics.jsonl names each)."""
    goal, seeds = config.PARITY_GOAL, len(config.SEEDS)
    eggroll, bptt = (runs.get(name, []) for name in ("eggroll-r1", "bptt"))
    finals = [final for final, _ in eggroll + bptt]
    data = {json.dumps(final.get("data"), sort_keys=True) for final in finals}
    devices = {final.get("device") for final in finals} | {
        record["device"] for _, metrics in eggroll + bptt for record in metrics if "device" in record}

    def unjudged(values):
        """Why `values` (one per seed) cannot be judged yet, or None."""
        if len(data) > 1:
            return "not judged: the runs trained on different data"
        if len(values) < seeds or None in values or len(bptt) < seeds:
            return f"not judged until all {seeds} seeds of both methods have it"
        return None

    def verdict(value, bound, shown, at_most=False):
        return f"{shown(value)}, {'met' if (value <= bound if at_most else value >= bound) else 'not met'}"

    percent = lambda value: f"{100 * value:.2f} %"
    test, real = [f["test_acc"] for f, _ in eggroll], [f.get("real_acc") for f, _ in eggroll]
    seconds = [[final.get("end_to_end_seconds") for final, _ in method] for method in (eggroll, bptt)]
    if len(devices) > 1:
        time = f"not judged: the runs trained on {', '.join(sorted(map(str, devices)))}"
    else:
        time = unjudged(seconds[0]) or unjudged(seconds[1]) or verdict(
            statistics.mean(seconds[0]) / statistics.mean(seconds[1]), goal["time_ratio"], lambda v: f"{v:.2f}×",
            at_most=True)
    emulated = bool(finals) and all((final.get("data") or {}).get("emulated") for final in finals)
    return (f"Parity goal, EGGROLL r = 1 over seeds {', '.join(map(str, config.SEEDS))}"
            f"{' (emulated N-MNIST)' if emulated else ''}: test ≥ {percent(goal['test'])}: "
            f"{unjudged(test) or verdict(statistics.mean(test), goal['test'], percent)}; real recordings ≥ "
            f"{percent(goal['real'])}: {unjudged(real) or verdict(statistics.mean(real), goal['real'], percent)}; "
            f"end-to-end time (mean over BPTT's mean) ≤ {goal['time_ratio']}× BPTT's on the same device: {time}.")


def network_of_run(final):
    """The layers a final.json's run trained (its --hidden; the paper's 2312-64-10 if it has none)."""
    return config.from_stored(final["config"]).network


def changeable_operations(final):
    """The synaptic operations per test sample that the hidden spikes cost, the ones training can
    change (the input events' are fixed by the data); None where the run did not measure them."""
    sparsity, network = final["test_sparsity"], network_of_run(final)
    if "input_synaptic_ops_per_sample" in sparsity:
        fixed = sparsity["input_synaptic_ops_per_sample"]
    elif network.is_dense():  # measured before the input events' part was kept: each event feeds the first layer
        fixed = sparsity["input_events_per_sample"] * network.sizes[1]
    else:
        return None
    return sparsity["synaptic_ops_per_sample"] - fixed


def sparsity_table(runs, names, preset):
    """sparsity.md: where each method's spikes are on the test split (final.json's test_sparsity),
    the synaptic operations they cost and an energy estimate beside a non-spiking network of the
    same layers (each run's own, from its config)."""
    lines = [f"# Sparsity and energy ({preset}): the test split, per sample (mean ± std over seeds)", "",
             "| method | input events | hidden spikes | output spikes | silent hidden neurons % | "
             "synaptic operations | of which training can change % | energy nJ | × below the non-spiking network |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        finals = [f for f, _ in runs[name] if "test_sparsity" in f]
        if not finals:
            lines.append(f"| {name} |" + " – |" * 8)
            continue
        network = network_of_run(finals[0])
        dense_pj = sum(network.synapses(layer).sum() for layer in range(1, len(network.layers) + 1)) \
            * MULTIPLY_ACCUMULATE_PJ
        changeable = [100 * changeable_operations(f) / max(f["test_sparsity"]["synaptic_ops_per_sample"], 1e-12)
                      for f in finals if changeable_operations(f) is not None]
        energy = measured(finals, "synaptic_ops_per_sample", ACCUMULATE_PJ / 1e3)
        seeds = f" ({len(finals)}/{len(runs[name])} seeds)" if len(finals) < len(runs[name]) else ""
        lines.append(f"| {name}{seeds} | {format_mean_std(measured(finals, 'input_events_per_sample'), digits=0)} | "
                     f"{format_mean_std(measured(finals, 'hidden_spikes_per_sample'), digits=1)} | "
                     f"{format_mean_std(measured(finals, 'output_spikes_per_sample'), digits=1)} | "
                     f"{format_mean_std(measured(finals, 'silent_hidden_fraction', 100), digits=1)} | "
                     f"{format_mean_std(measured(finals, 'synaptic_ops_per_sample'), digits=0)} | "
                     f"{format_mean_std(changeable, digits=2)} | {format_mean_std(energy, digits=1)} | "
                     f"{dense_pj / 1e3 / mean_std(energy)[0]:.1f} |")
    n_in, n_hidden, n_out = snn.SIZES
    paper_synapses = n_in * n_hidden + n_hidden * n_out
    lines += ["", "Synaptic operations: an accumulate per synapse a spike crosses, each input event's into the "
              f"first layer and each hidden spike's into the next ({n_hidden} and {n_out} in the paper's "
              f"{'-'.join(map(str, snn.SIZES))}); only the hidden spikes' part depends on the weights, so it is all "
              f"that training can change. Energy: {ACCUMULATE_PJ} pJ per accumulate; the non-spiking network of "
              "the same layers does a multiply-accumulate per synapse per sample (one pass over the frames summed "
              f"over T; {paper_synapses:,} in {'-'.join(map(str, snn.SIZES))}) at {MULTIPLY_ACCUMULATE_PJ:.1f} pJ; "
              "45 nm CMOS, 32-bit floats (Horowitz, ISSCC 2014). – where no run measured it (trained before the "
              "measure existed)."]
    return "\n".join(lines) + "\n"


def plot_figures(results_dir, runs, names, preset):
    """rank_ablation.png (where EGGROLL runs exist), convergence.png, wallclock.png and
    accuracy_time.png; returns their paths."""
    figures = {"convergence.png": convergence_figure(runs, names, preset),
               "wallclock.png": wallclock_figure(runs, names, preset),
               "accuracy_time.png": accuracy_time_figure(runs, names, preset)}
    if any(f"eggroll-r{r}" in runs for r in config.RANKS):
        figures = {"rank_ablation.png": rank_ablation_figure(runs, preset), **figures}
    for file_name, figure in figures.items():
        save_figure(figure, results_dir / file_name)
    return [results_dir / file_name for file_name in figures]


def new_figure(**options):
    """A matplotlib Figure outside pyplot (no global state, nothing to close); imported only when drawn."""
    from matplotlib.figure import Figure
    return Figure(**options)


def spread(runs, names):
    """"mean ± std over 3 seeds" ("over 2–3 seeds" where the runs shown have different counts)."""
    counts = sorted({len(runs[n]) for n in names})
    span = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    return f"mean ± std over {span} seed{'s' if counts[-1] > 1 else ''}"


def rank_ablation_figure(runs, preset):
    """EGGROLL test accuracy and seconds per generation against the rank r, vanilla ES as a line."""
    ranks = [r for r in config.RANKS if f"eggroll-r{r}" in runs]
    fig = new_figure(figsize=(9, 3.8))
    acc_ax, time_ax = fig.subplots(1, 2)
    accs = [mean_std([100 * f["test_acc"] for f, _ in runs[f"eggroll-r{r}"]]) for r in ranks]
    times = [statistics.median(f["median_seconds_per_generation"] for f, _ in runs[f"eggroll-r{r}"]) for r in ranks]
    acc_ax.errorbar(ranks, [a for a, _ in accs], yerr=[s for _, s in accs], marker="o", capsize=3, label="EGGROLL")
    time_ax.plot(ranks, times, marker="o", label="EGGROLL")
    if "es" in runs:
        es_acc = mean_std([100 * f["test_acc"] for f, _ in runs["es"]])[0]
        acc_ax.axhline(es_acc, color="gray", linestyle=":", label="vanilla ES (mean)")
        time_ax.axhline(statistics.median(f["median_seconds_per_generation"] for f, _ in runs["es"]),
                        color="gray", linestyle=":", label="vanilla ES (median)")
    acc_ax.set_title(f"test accuracy: {spread(runs, [f'eggroll-r{r}' for r in ranks])}", fontsize=10)
    time_ax.set_title("seconds per generation: median over seeds", fontsize=10)
    for ax, label in ((acc_ax, "test accuracy (%)"), (time_ax, "seconds per generation")):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks, [str(r) for r in ranks])
        ax.set_xlabel("rank r")
        ax.set_ylabel(label)
        ax.legend()
    fig.suptitle(f"EGGROLL rank ablation ({preset})")
    fig.tight_layout()
    return fig


def convergence_figure(runs, names, preset):
    """Validation accuracy per generation of the ES runs, BPTT's final one as a dashed line; the
    legend stands right of the plot, clear of that line."""
    fig = new_figure(figsize=(7.5, 4))
    ax = fig.subplots()
    es_names = [n for n in names if n != "bptt"]
    for name in es_names:
        curves = [m for _, m in runs[name]]
        length = min(len(c) for c in curves)
        x = [record["generation"] for record in curves[0][:length]]
        values = numpy.asarray([[100 * record["val_acc"] for record in c[:length]] for c in curves])
        mean, std = values.mean(0), values.std(0, ddof=1 if len(curves) > 1 else 0)  # std as in the tables
        ax.plot(x, mean, label=name)
        ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    if "bptt" in runs:
        ax.axhline(mean_std([100 * f["val_acc"] for f, _ in runs["bptt"]])[0], color="black",
                   linestyle="--", label="bptt (final, mean)")
    band = f"lines and bands: {spread(runs, es_names)}" if es_names else "bptt only"
    ax.set_title(f"Validation accuracy during training ({preset})\n{band}", fontsize=10)
    ax.set_xlabel("generation")
    ax.set_ylabel("validation accuracy (%)")
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


def wallclock_figure(runs, names, preset):
    """Training seconds of each method: its summed update steps, and beside them its end-to-end
    time where its runs recorded one."""
    fig = new_figure(figsize=(6.5, 4))
    ax = fig.subplots()
    where = numpy.arange(len(names))
    for offset, key, label in ((-0.2, "total_seconds", "summed update steps"),
                               (0.2, "end_to_end_seconds", "end to end (data, validation, checkpoints too)")):
        times = [mean_std([f.get(key) for f, _ in runs[n]]) for n in names]
        ax.bar(where + offset, [numpy.nan if t is None else t for t, _ in times], width=0.4, label=label,
               yerr=[0 if s is None else s for _, s in times], capsize=3)
    ax.set_xticks(where, names)
    ax.set_title(f"Training time per method ({preset})\nbars: {spread(runs, names)}", fontsize=10)
    ax.set_ylabel("seconds")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def accuracy_time_figure(runs, names, preset):
    """Test accuracy against training time, a point per method (mean ± std over its seeds), the
    time its end-to-end seconds where every run has them, else its summed update steps; the title
    states the finding: how close the best gradient-free method comes to vanilla ES and BPTT, and
    in what time."""
    fig = new_figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    end_to_end = all("end_to_end_seconds" in f for n in names for f, _ in runs[n])
    key, label = ("end_to_end_seconds", "end to end") if end_to_end else ("total_seconds", "summed update steps")
    points = {}
    for name in names:
        (time, time_std), (acc, acc_std) = (mean_std([f[k] for f, _ in runs[name]]) for k in (key, "test_acc"))
        points[name] = (time, 100 * acc)
        ax.errorbar(time, 100 * acc, xerr=time_std, yerr=100 * acc_std, fmt="o", capsize=3, label=name)
    from matplotlib.ticker import NullFormatter
    ax.set_xscale("log")
    times = [time for time, _ in points.values()]
    ticks = [v for v in (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 20000, 50000)
             if min(times) / 2 <= v <= max(times) * 2]
    ax.set_xticks(ticks, [f"{v:g}" for v in ticks])
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel(f"training time, s ({label}, log scale)")
    ax.set_ylabel("test accuracy (%)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    ax.set_title(f"{time_finding(points)}\n({preset}) points: {spread(runs, names)}", fontsize=9)
    fig.tight_layout()
    return fig


def time_finding(points):
    """One line of what the accuracy-time points show: the most accurate EGGROLL rank against
    vanilla ES and BPTT, each with its accuracy and time."""
    said = lambda name: f"{name} {points[name][1]:.1f} % in {points[name][0]:.0f} s"
    ranks = [n for n in points if n.startswith("eggroll")]
    if not ranks:
        return ", ".join(said(n) for n in points)
    best = max(ranks, key=lambda n: points[n][1])
    others = [said(n) for n in ("es", "bptt") if n in points]
    return f"Gradient-free {said(best)}" + (f"; {', '.join(others)}" if others else "")


# ---------------------------------------------------------------------------------------------
# The hyperscale preset: a table.md and figures per part

def by_population(runs, results_dir):
    """{run name: {members: [(final, metrics) per seed]}} of collect()'s runs, whose folders are named
    <run>-m<members>-seed<seed>; runs in METHOD_ORDER, populations ascending."""
    grid = {}
    for key, seeds in runs.items():
        name, _, members = key.rpartition("-m")
        if not name or not members.isdigit():
            raise ValueError(f"{results_dir / 'runs' / key}-seed*: not a hyperscale run folder "
                             f"(<run>-m<members>-seed<seed>); move it out of {results_dir / 'runs'}")
        grid.setdefault(name, {})[int(members)] = seeds
    order = lambda name: (METHOD_ORDER.index(name) if name in METHOD_ORDER else len(METHOD_ORDER), name)
    return {name: dict(sorted(grid[name].items())) for name in sorted(grid, key=order)}


def present(expected):
    """format_seeds of the values a run measured, for hidden_and_energy."""
    return lambda values, digits: format_seeds([v for v in values if v is not None], expected, 1, digits)


def format_seeds(values, expected, scale=100.0, digits=2):
    """mean ± std of the seeds' values (a lone value as it is), "(n seeds)" where fewer than
    `expected` ran; "–" where none ran."""
    if not values:
        return "–"
    shown = format_mean_std(values, scale, digits)
    return shown + (f" ({len(values)} seed{'s' if len(values) > 1 else ''})" if len(values) < expected else "")


def lowest_digit(final):
    """(accuracy, digit) of the digit the run recognises worst in the test split, None where
    final.json has no accuracy per digit (a digit the split lacks has None)."""
    scored = [(acc, digit) for digit, acc in enumerate(final.get("test_acc_per_digit") or []) if acc is not None]
    return min(scored, default=None)


def write_hyperscale_report(results_dir, part, expected=None):
    """table.md and the PNG figures of a hyperscale part (config.HYPERSCALE); returns the paths written.
    `expected`: the part's runs, as `collect` takes them."""
    prepare_results(results_dir)
    runs = collect(results_dir, expected)
    grid = by_population(runs, results_dir)
    table, figures = PART_REPORTS[part]
    title, lines = table(grid)
    text = [f"# Hyperscale {part}: {title}", "", data_line(runs, list(runs)), "", *lines]
    written = [results_dir / "table.md"]
    run_folder.write_atomically(written[0], "\n".join(text) + "\n")
    for file_name, figure in (figures(runs, grid) if runs else {}).items():
        save_figure(figure, results_dir / file_name)
        written.append(results_dir / file_name)
    return written


def protocol_table(grid):
    """Test accuracy and seconds per generation, method × population."""
    populations = sorted({members for by_members in grid.values() for members in by_members})
    row = lambda cells: "| " + " | ".join(cells) + " |"
    header = ["method"] + [f"{members} members" for members in populations]
    seeds = config.HYPERSCALE["protocol"]["seeds"]
    lines = [f"Test accuracy % over seeds {', '.join(map(str, seeds))} (mean ± std; the seed count where fewer ran), "
             f"beside the paper's Table 1 at its own population:", "",
             row(header + ["the paper"]), "|---" * (len(header) + 1) + "|"]
    for name, by_members in grid.items():
        paper = f"{PAPER_TABLE_1[name]:.2f}" if name in PAPER_TABLE_1 else "–"
        lines.append(row([name] + [format_seeds([f["test_acc"] for f, _ in by_members.get(m, [])], len(seeds))
                                   for m in populations] + [paper]))
    lines += ["", "Seconds per generation (median over seeds):", "", row(header), "|---" * len(header) + "|"]
    median_seconds = lambda seeds: statistics.median(f["median_seconds_per_generation"] for f, _ in seeds)
    for name, by_members in grid.items():
        lines.append(row([name] + [f"{median_seconds(by_members[m]):.3f}" if m in by_members else "–"
                                   for m in populations]))
    lines += ["", "Hidden spikes per test sample, and energy in nJ per test sample:", "", row(header),
              "|---" * len(header) + "|"]
    for name, by_members in grid.items():
        cells = [hidden_and_energy([f for f, _ in by_members[m]], present(len(seeds))) if m in by_members
                 else ["–", "–"] for m in populations]
        lines.append(row([name] + [" / ".join(pair) if "–" not in pair else "–" for pair in cells]))
    return "the paper's protocol (the paper preset's ES settings) against population", lines + ["", ENERGY_NOTE]


def protocol_figures(runs, grid):
    return {"protocol.png": protocol_figure(runs, grid)}


def protocol_figure(runs, grid):
    """Test accuracy against population, a line per method with error bars; the paper's Table 1
    as short ticks in the method's colour at "paper", left of the populations it is not tied to."""
    fig = new_figure(figsize=(8, 4.5))
    ax = fig.subplots()
    populations = sorted({members for by_members in grid.values() for members in by_members})
    paper_x = populations[0] / 4
    for name, by_members in grid.items():
        accs = [mean_std([100 * f["test_acc"] for f, _ in by_members[m]]) for m in by_members]
        line = ax.errorbar(list(by_members), [a for a, _ in accs], yerr=[s for _, s in accs], marker="o",
                           capsize=3, label=name)
        if name in PAPER_TABLE_1:
            ax.plot([paper_x], [PAPER_TABLE_1[name]], marker="_", markersize=20, markeredgewidth=2,
                    color=line.lines[0].get_color())
    ax.plot([paper_x], [PAPER_TABLE_1["bptt"]], marker="_", markersize=20, markeredgewidth=2, color="black",
            linestyle="none", label="bptt (paper)")
    ax.plot([], [], marker="_", markersize=12, markeredgewidth=2, color="gray", linestyle="none",
            label="paper: its Table 1, in each method's colour")
    ax.axvline(populations[0] / 2, color="gray", linestyle=":", linewidth=1)
    ax.set_xscale("log", base=2)
    ax.set_xticks([paper_x] + populations, ["paper"] + [str(m) for m in populations])
    ax.set_xlabel("population (members)")
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(f"Test accuracy against population (hyperscale protocol)\npoints: {spread(runs, list(runs))}",
                 fontsize=10)
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1), borderaxespad=0)
    fig.tight_layout()
    return fig


def budget_table(grid):
    """Accuracy and time of each run at each population."""
    lines = ["| run | members | test % | val % | s / generation | step s | end-to-end s | hidden spikes | energy nJ |",
             "|---|---|---|---|---|---|---|---|---|"]
    for name, by_members in grid.items():
        for members, seeds in by_members.items():
            finals = [f for f, _ in seeds]
            lines.append(f"| {name} | {members} | {format_seeds([f['test_acc'] for f in finals], 1)} | "
                         f"{format_seeds([f['val_acc'] for f in finals], 1)} | "
                         f"{format_seeds([f['median_seconds_per_generation'] for f in finals], 1, 1, 3)} | "
                         f"{format_seeds([f['total_seconds'] for f in finals], 1, 1, 0)} | "
                         f"{format_some([f.get('end_to_end_seconds') for f in finals], '–', digits=0)} | "
                         f"{' | '.join(hidden_and_energy(finals, present(1)))} |")
    return "a fixed budget of generations (the best preset's recipe) against population", \
        lines + ["", TIME_NOTE, ENERGY_NOTE]


def budget_figures(runs, grid):
    return {"budget_accuracy.png": budget_figure(runs, grid, "test_acc", 100, "test accuracy (%)", "Test accuracy"),
            "budget_speed.png": budget_figure(runs, grid, "median_seconds_per_generation", 1,
                                              "seconds per generation", "Seconds per generation", log_y=True)}


def budget_figure(runs, grid, key, scale, label, title, log_y=False):
    """scale * final[key] against population, a line per run."""
    fig = new_figure(figsize=(6.5, 4.2))
    ax = fig.subplots()
    for name, by_members in grid.items():
        values = [mean_std([scale * f[key] for f, _ in by_members[m]]) for m in by_members]
        ax.errorbar(list(by_members), [v for v, _ in values], yerr=[s for _, s in values], marker="o", capsize=3,
                    label=name)
    ax.set_xscale("log", base=2)
    if log_y:
        ax.set_yscale("log")
    ax.set_xlabel("population (members)")
    ax.set_ylabel(label)
    ax.set_title(f"{title} against population (hyperscale budget)\n"
                 f"{spread(runs, list(runs))}", fontsize=10)
    ax.legend()
    fig.tight_layout()
    return fig


def headline_table(grid):
    """Every seed of each run, and their mean ± std."""
    lines = ["| run | seed | test % | real recordings % | lowest digit % | step s | end-to-end s | hidden spikes | "
             "energy nJ | device |", "|---|---|---|---|---|---|---|---|---|---|"]
    percent = lambda value: "–" if value is None else f"{100 * value:.2f}"
    for name, by_members in grid.items():
        for members, seeds in by_members.items():
            finals = sorted((f for f, _ in seeds), key=lambda f: f["config"]["seed"])
            lowest = [lowest_digit(f) for f in finals]
            for final, low in zip(finals, lowest):
                lines.append(f"| {name}, {members} members | {final['config']['seed']} | "
                             f"{percent(final['test_acc'])} | {percent(final.get('real_acc'))} | "
                             f"{'–' if low is None else f'{percent(low[0])} (digit {low[1]})'} | "
                             f"{final['total_seconds']:.0f} | {seconds_or_dash(final.get('end_to_end_seconds'))} | "
                             f"{' | '.join(hidden_and_energy([final], present(1)))} | "
                             f"{final.get('device', '?')} |")
            lines.append(f"| {name}, {members} members | mean ± std | "
                         f"{format_mean_std([f['test_acc'] for f in finals], 100)} | "
                         f"{format_some([f.get('real_acc') for f in finals], '–', 100)} | "
                         f"{format_some([low[0] if low else None for low in lowest], '–', 100)} | "
                         f"{format_mean_std([f['total_seconds'] for f in finals], digits=0)} | "
                         f"{format_some([f.get('end_to_end_seconds') for f in finals], '–', digits=0)} | "
                         f"{' | '.join(hidden_and_energy(finals))} | |")
    lines += ["", TIME_NOTE, REAL_NOTE, "lowest digit %: test accuracy on the digit the run recognises worst.",
              ENERGY_NOTE]
    return "EGGROLL at its largest population beside vanilla ES", lines


def seconds_or_dash(seconds):
    return "–" if seconds is None else f"{seconds:.0f}"


def headline_figures(runs, grid):
    names = [f"{name}-m{members}" for name, by_members in grid.items() for members in by_members]
    return {"convergence.png": convergence_figure(runs, names, "hyperscale headline")}


PART_REPORTS = {"protocol": (protocol_table, protocol_figures), "budget": (budget_table, budget_figures),
                "headline": (headline_table, headline_figures)}


# ---------------------------------------------------------------------------------------------
# The screen: one lever at a time against the best recipe, chosen on validation accuracy

def write_screen_report(results_dir, expected=None):
    """table.md, convergence.png and levers.png of the screen (config.SCREEN_LEVERS): per lever its
    settings, validation accuracy (what the recipe is chosen on), its gain over the recipe's on
    the same seeds (largest first), the best of its checkpoints', test accuracy beside it, and its
    time; returns the paths written. `expected`: the screen's runs, as `collect` takes them."""
    prepare_results(results_dir)
    runs = collect(results_dir, expected)
    levers = {f"eggroll-r1-{lever}": lever for lever in config.SCREEN_LEVERS}
    base_by_seed = {f["config"]["seed"]: f["val_acc"] for f, _ in runs.get("eggroll-r1-base", [])}
    base = mean_std(list(base_by_seed.values()))[0]
    gains = {name: [100 * (f["val_acc"] - base_by_seed[f["config"]["seed"]]) for f, _ in runs[name]
                    if f["config"]["seed"] in base_by_seed] for name in levers if name in runs and levers[name] != "base"}
    gains = {name: points for name, points in gains.items() if points}  # a lever with a seed the recipe has
    order = lambda name: (-mean_std(gains[name])[0] if name in gains else 0 if levers[name] == "base"
                          else math.inf)  # the recipe at 0, a lever without a seed the recipe ran last
    names = sorted((name for name in levers if name in runs), key=order)
    gains = {name: gains[name] for name in names if name in gains}
    lines = [f"# The screen: one lever at a time against EGGROLL r = 1 of the best recipe, "
             f"{config.SCREEN_BASE['population']} members, {config.SCREEN_BASE['generations']} generations", "",
             data_line(runs, names), "",
             "Ordered by the gain in validation accuracy over the recipe on the same seeds (vs the recipe), on "
             "which the recipe is chosen; test accuracy beside it. Best val "
             f"%: the highest validation accuracy of any checkpoint (every {config.SCREEN_BASE['eval_every']} "
             "generations), what stopping at the checkpoint validation prefers would keep instead of the last.", "",
             "| lever | settings | seeds | val % | vs the recipe | best val % | test % | real recordings % | "
             "end-to-end s | step s |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name in names:
        finals = [f for f, _ in runs[name]]
        settings = ", ".join(f"{k} {v}" for k, v in config.SCREEN_LEVERS[levers[name]].items()) or "the recipe"
        best = [max(r["val_acc"] for r in metrics if "val_acc" in r) for _, metrics in runs[name]]
        change = signed_mean_std(gains[name]) if name in gains else "–"
        lines.append(f"| {levers[name]} | {settings} | {len(finals)} | {format_mean_std([f['val_acc'] for f in finals], 100)} | "
                     f"{change} | {format_mean_std(best, 100)} | {format_mean_std([f['test_acc'] for f in finals], 100)} | "
                     f"{format_some([f.get('real_acc') for f in finals], '–', 100)} | "
                     f"{format_some([f.get('end_to_end_seconds') for f in finals], '–', digits=0)} | "
                     f"{format_mean_std([f['total_seconds'] for f in finals], digits=0)} |")
    noise = None
    if base is not None:
        n_val = runs["eggroll-r1-base"][0][0]["n_val"]
        error = 100 * math.sqrt(base * (1 - base) / n_val)
        noise = 2 * math.sqrt(2) * error
        lines += ["", f"vs the recipe: validation points above (+) or below (-) the recipe's on the same seed, "
                      f"mean ± std over the seeds both ran. A validation accuracy "
                      f"of {100 * base:.1f} % on {n_val:,} samples has a standard error of {error:.2f} points, so "
                      f"between two single runs a difference under {noise:.1f} points (two "
                      f"standard errors of a difference) is within the noise of the validation split alone."]
    lines += ["", TIME_NOTE, REAL_NOTE]
    written = [results_dir / "table.md"]
    run_folder.write_atomically(written[0], "\n".join(lines) + "\n")
    if names:
        save_figure(convergence_figure(runs, names, "screen"), results_dir / "convergence.png")
        written.append(results_dir / "convergence.png")
    if gains:
        recipe = samples_per_generation(runs["eggroll-r1-base"][0][0]["config"])
        samples = {levers[name]: samples_per_generation(runs[name][0][0]["config"]) / recipe for name in gains}
        figure = levers_figure({levers[name]: points for name, points in gains.items()}, samples, noise)
        save_figure(figure, results_dir / "levers.png")
        written.append(results_dir / "levers.png")
    return written


def samples_per_generation(stored):
    """The training samples a member is scored on per generation, averaged over the run (batch
    size times minibatches: a batch-size schedule raises it)."""
    run = config.from_stored(stored)
    return run.batch_size * sum(run.minibatches(run.generations - 1, run.generations)) / run.generations


def levers_figure(gains, samples, noise):
    """Each lever's validation points over the recipe's on the same seed (`gains`: {lever: points
    per seed}, drawn as mean ± std, in the order given from the top), labelled with the samples a
    member is scored on per generation relative to the recipe (`samples`); the grey band:
    differences within `noise` points, the validation split's noise between two runs."""
    fig = new_figure(figsize=(7, 0.5 * len(gains) + 1.5))
    ax = fig.subplots()
    levers = list(reversed(gains))  # barh draws row 0 at the bottom
    for row, lever in enumerate(levers):
        mean, std = mean_std(gains[lever])
        seeds = len(gains[lever])
        ax.barh(row, mean, xerr=std if seeds > 1 else None, capsize=3, color="tab:green" if mean > 0 else "tab:red")
        ax.annotate(f" {samples[lever]:.2g}× samples, {seeds} seed{'s' if seeds > 1 else ''}", (0, row),
                    xytext=(4 if mean <= 0 else -4, 0), textcoords="offset points", va="center", fontsize=8,
                    ha="left" if mean <= 0 else "right")
    ax.axvline(0, color="black", linewidth=0.8)
    ax.axvspan(-noise, noise, color="grey", alpha=0.15, label=f"within ±{noise:.1f}: a single run's noise")
    ax.legend(loc="lower right", fontsize=8)
    ax.set_yticks(range(len(levers)), levers)
    ax.set_xlabel("validation accuracy minus the recipe's on the same seed (points)")
    ax.set_title("What each lever buys (screen, EGGROLL r = 1); bars: mean ± std over seeds", fontsize=10)
    fig.tight_layout()
    return fig


# ---------------------------------------------------------------------------------------------
# The spike-cost preset: accuracy against spikes, a curve per method over the price of a spike

def by_spike_cost(runs):
    """{"<run>, <length>": {spike cost: [final per seed]}} of collect()'s runs, each read from its
    final.json's settings (e.g. "eggroll-r4, 100 generations"); runs in METHOD_ORDER, then shorter
    first; costs ascending."""
    grid, order = {}, {}
    for key, seeds in runs.items():
        for final, _ in seeds:
            if "test_sparsity" not in final:
                raise ValueError(f"{key}: final.json has no test_sparsity (trained before it was measured): {RETRAIN}")
            stored = config.from_stored(final["config"])
            label = f"{stored.name}, {config.run_length(stored)}"
            order[label] = (METHOD_ORDER.index(stored.name), stored.epochs if stored.method == "bptt"
                            else stored.generations)
            grid.setdefault(label, {}).setdefault(stored.spike_cost, []).append(final)
    return {label: dict(sorted(grid[label].items())) for label in sorted(grid, key=order.get)}


def write_spike_cost_report(results_dir, expected=None):
    """table.md and spike_cost.png of the spike-cost preset (config.SPIKE_COSTS); returns the paths written.
    `expected`: the preset's runs, as `collect` takes them."""
    prepare_results(results_dir)
    runs = collect(results_dir, expected)
    grid = by_spike_cost(runs)
    lines = ["# The price of a spike: test accuracy and activity (the test split, per sample; mean ± std over seeds)",
             "", data_line(runs, list(runs)), "",
             "| run | spike cost | seeds | test acc % | hidden spikes | output spikes | silent hidden neurons % | "
             "synaptic operations | energy nJ |", "|---|---|---|---|---|---|---|---|---|"]
    for name, by_cost in grid.items():
        for cost, finals in by_cost.items():
            lines.append(f"| {name} | {cost:g} | {len(finals)} | "
                         f"{format_mean_std([f['test_acc'] for f in finals], 100)} | "
                         f"{format_mean_std(measured(finals, 'hidden_spikes_per_sample'), digits=1)} | "
                         f"{format_mean_std(measured(finals, 'output_spikes_per_sample'), digits=1)} | "
                         f"{format_mean_std(measured(finals, 'silent_hidden_fraction', 100), digits=1)} | "
                         f"{format_mean_std(measured(finals, 'synaptic_ops_per_sample'), digits=0)} | "
                         f"{format_mean_std(measured(finals, 'synaptic_ops_per_sample', ACCUMULATE_PJ / 1e3), digits=1)} |")
    lines += ["", "spike cost: the fitness (BPTT: the loss) pays it per hidden spike per sample. Synaptic operations: "
              f"{snn.SIZES[1]} accumulates per input event and {snn.SIZES[2]} per hidden spike; energy: "
              f"{ACCUMULATE_PJ} pJ each (45 nm CMOS, 32-bit floats; Horowitz, ISSCC 2014)."]
    written = [results_dir / "table.md"]
    run_folder.write_atomically(written[0], "\n".join(lines) + "\n")
    if grid:
        save_figure(spike_cost_figure(runs, grid), results_dir / "spike_cost.png")
        written.append(results_dir / "spike_cost.png")
    return written


def spike_cost_figure(runs, grid, zoom_above=85.0):
    """Test accuracy against hidden spikes (all runs, then those above `zoom_above` % enlarged) and
    against synaptic operations per sample: a curve per run through its spike costs, each point
    labelled with its cost, error bars both ways; a colour and marker per method, dashed where a
    curve has fewer seeds than the most any has."""
    fig = new_figure(figsize=(15, 4.4))
    panels = fig.subplots(1, 3)
    hidden, operations = "hidden_spikes_per_sample", "synaptic_ops_per_sample"
    layout = [(hidden, "the spikes training can change"),
              (hidden, f"the same, runs above {zoom_above:g} % enlarged"),
              (operations, f"all synaptic operations:\n{snn.SIZES[1]} per input event (fixed by the data) + "
                           f"{snn.SIZES[2]} per hidden spike")]
    seeds = {label: max(len(finals) for finals in by_cost.values()) for label, by_cost in grid.items()}
    styles = {label: dict(color=f"C{METHOD_ORDER.index(label.split(',')[0])}",
                          marker="o" if label.startswith("bptt") else "s",
                          linestyle="-" if seeds[label] == max(seeds.values()) else "--") for label in grid}
    for ax, (key, title) in zip(panels, layout):
        zoomed = title.startswith("the same")
        for label, by_cost in grid.items():
            accs = [mean_std([100 * f["test_acc"] for f in finals]) for finals in by_cost.values()]
            activity = [mean_std([f["test_sparsity"][key] for f in finals]) for finals in by_cost.values()]
            points = [(cost, x, y) for cost, x, y in zip(by_cost, activity, accs) if not zoomed or y[0] > zoom_above]
            if not points:
                continue
            ax.errorbar([x for _, (x, _), _ in points], [y for _, _, (y, _) in points],
                        xerr=[s for _, (_, s), _ in points], yerr=[s for _, _, (_, s) in points], capsize=3,
                        label=label, **styles[label])
            for cost, (x, _), (y, _) in points:
                ax.annotate(f"{cost:g}", (x, y), textcoords="offset points", xytext=(4, 4), fontsize=8)
        ax.set_xlabel(f"{'synaptic operations' if key == operations else 'hidden spikes'} per sample (test split)")
        ax.set_ylabel("test accuracy (%)")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    panels[0].legend(title="points: spike cost" + ("; dashed: fewer seeds" if len(set(seeds.values())) > 1 else ""),
                     fontsize=8, title_fontsize=8)
    fig.suptitle(f"What a price on hidden spikes buys ({spread(runs, list(runs))})", fontsize=10)
    fig.tight_layout()
    return fig


if __name__ == "__main__":  # the report is a part of run.py reproduce
    sys.exit(exits.runs_as("report.py", "reproduce's tables and figures", "reproduce --report-only"))
