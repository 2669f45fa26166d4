"""The report of `reproduce`: which device each figure came from, speedups only against vanilla ES
on the same device, one table layout whether or not runs were scored on real recordings, figures
that say what they show, and one-line errors for damaged run files."""
import json
import math
import os
import re
import shutil
import statistics
import threading
import time
from pathlib import Path

import matplotlib.container
import matplotlib.figure
import pytest

import config
import figure_record
import mnist
import report
import run_folder
import snn

ROOT = Path(__file__).resolve().parent.parent


FINAL = {"test_acc": 0.9, "val_acc": 0.9, "median_seconds_per_generation": 0.1, "spikes_per_sample": 100.0,
         "total_seconds": 10.0, "device": "cpu", "config": {"seed": 1}, "n_train": 1000, "n_val": 1000, "n_test": 1000,
         "generations": 20}


def write_run(results_dir, name, seed, real_acc=None, val_accs=None, **final):
    """A finished run folder as training leaves it, its metrics.jsonl ending where final.json does
    (at its generations, with its validation accuracy; 10 generations apart before); real_acc: also a
    real.json."""
    out = results_dir / "runs" / f"{name}-seed{seed}"
    out.mkdir(parents=True)
    val_accs = list(val_accs or (0.5, final.get("val_acc", FINAL["val_acc"])))
    fingerprint = (final.get("data") or {}).get("fingerprint") or {}  # as training counts: the data record's sizes
    counted = {f"n_{split}": int(text.split()[0]) for split, text in fingerprint.items() if re.match(r"\d+ ", text)}
    final = {**FINAL, **counted, "config": {"seed": seed}, "generations": 10 * len(val_accs), "val_acc": val_accs[-1],
             **final}
    assert final["val_acc"] == val_accs[-1] and final["generations"] >= 10 * (len(val_accs) - 1), "inconsistent"
    (out / "final.json").write_text(json.dumps(final))
    generations = [10 * (i + 1) for i in range(len(val_accs) - 1)] + [final["generations"]]
    (out / "metrics.jsonl").write_text("".join(json.dumps({"generation": generation, "val_acc": acc,
                                                           "wall_seconds": float(i + 1)}) + "\n"
                                               for i, (generation, acc) in enumerate(zip(generations, val_accs))))
    if real_acc is not None:
        (out / "real.json").write_text(json.dumps({"run": str(out), "generation": final["generations"],
                                                   **real_score(real_acc)}))
    return out


def real_score(accuracy):
    """A real.json's scores, as evaluate writes them: `accuracy` in every split, of 8,000, 1,000 and 1,000
    recordings."""
    return {"accuracy": {"train": accuracy, "val": accuracy, "test": accuracy, "all": accuracy},
            "samples": {"train": 8000, "val": 1000, "test": 1000}}


def write_preset_run(results_dir, preset, name, seed, **final):
    """A finished run of `preset` as `reproduce` leaves it, which its report reads: write_run's
    files with the preset's settings in final.json and config.json, and the run folder's mark."""
    wanted = next(c for c in config.preset_runs(preset) if c.name == name and c.seed == seed)
    out = write_run(results_dir, name, seed, config=config.stored(wanted), **final)
    (out / "config.json").write_text(json.dumps(config.stored(wanted)))
    (out / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    return out


def keep_figure(figures):
    """A stand-in for Figure.savefig that keeps the figure in `figures` under the name of the file it
    was to become (it is written to <name>.<8 hex digits>.tmp, then renamed), and writes that file as a
    PNG's first bytes alone (a report's own figure, which the next report may replace)."""
    def savefig(fig, path, **_):
        Path(path).write_bytes(b"\x89PNG\r\n\x1a\n")
        figures[Path(path).name.rsplit(".", 2)[0]] = fig
    return savefig


def table_rows(results_dir):
    return {line.split(" | ")[0]: line.split(" | ") for line in (results_dir / "table.md").read_text().splitlines()}


def test_report_names_the_device_of_every_run():
    finals = lambda device: [({"device": device}, [])]
    one = {"es": finals("cpu"), "eggroll-r4": finals("cpu")}
    assert report.devices_line(one, ["es", "eggroll-r4"]) == "Device: cpu"
    two = {"bptt": finals("cpu"), "es": finals("gpu"), "eggroll-r4": finals("gpu")}
    assert report.devices_line(two, ["bptt", "es", "eggroll-r4"]) == "Devices: cpu for bptt; gpu for es, eggroll-r4"
    unrecorded = {"es": [({}, [])], "eggroll-r4": finals("cpu")}  # a final.json written by hand, say
    assert report.devices_line(unrecorded, ["es"]) == "Device: not recorded"
    assert report.devices_line(unrecorded, ["es", "eggroll-r4"]) == "Devices: not recorded for es; cpu for eggroll-r4"


def test_every_table_names_the_data_its_runs_trained_on():
    """Emulated (by whom, from which MNIST) or recorded N-MNIST, from each run's data record; runs from
    before the record trained on the committed tables' emulated copy; two kinds are both named."""
    emulated = {"fingerprint": {"train": "9 samples, sha256 1"},
                "emulated": {"version": 1, "seed": 0, "mnist_sha256": mnist.OFFICIAL_SHA256}}
    recorded = {"fingerprint": {"train": "9 samples, sha256 2"}}
    run = lambda record: [({**FINAL, "data": record}, [])] if record else [(FINAL, [])]
    assert report.data_line({"es": run(emulated)}, ["es"]) == (
        "Device: cpu; train/val/test = 1000/1000/1000 recordings; trained on emulated N-MNIST (emulator version 1, "
        "seed 0, from the official MNIST files; train split: 9 samples, sha256 1).")
    assert report.data_line({"es": run(None)}, ["es"]).endswith(
        "recordings; trained on emulated N-MNIST (the committed tables' copy, from before runs recorded their data).")
    both = report.data_line({"es": run(recorded), "bptt": run(emulated)}, ["es", "bptt"])
    assert "trained on N-MNIST recordings that were not emulated (train split: 9 samples, sha256 2)" in both
    assert " and on emulated N-MNIST (emulator version 1" in both


def test_the_time_to_75_percent_is_that_of_the_first_evaluation_at_or_above_it():
    """'step s to 75 % val acc' is the training time of the first evaluation whose validation
    accuracy reached 75 %: one exactly at 75 % (4,500 of 6,000) has reached it; none, no time."""
    accuracies = (0.5, 4500 / 6000, 0.9)
    metrics = [{"generation": 10 * (i + 1), "val_acc": acc, "wall_seconds": float(i + 1)}
               for i, acc in enumerate(accuracies)]
    assert report.seconds_to_reach(metrics) == metrics[1]["wall_seconds"]
    assert report.seconds_to_reach(metrics[:1]) is None


def test_speedup_is_only_against_vanilla_es_on_the_same_device(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "plot_figures", lambda *args: [])
    for name, device, seconds in [("es", "gpu", 0.3), ("eggroll-r1", "gpu", 0.1), ("eggroll-r4", "cpu", 0.2)]:
        write_run(tmp_path / "best", name, 1, device=device, median_seconds_per_generation=seconds)
    report.write_report(tmp_path / "best", "best")
    rows = table_rows(tmp_path / "best")
    assert rows["| eggroll-r1"][3] == "3.00×" and rows["| eggroll-r4"][3] == "–" and rows["| es"][3] == "1.00×"


def test_times_are_the_summed_steps_and_end_to_end_each_named_in_the_table_and_the_figure(tmp_path, saved):
    """Table 1's end-to-end column and the time figure's second bars come from end_to_end_seconds;
    a method whose runs lack it shows – and no bar, and the note says which time is which."""
    for seed, end_to_end in ((1, 30.0), (2, 40.0)):
        write_run(tmp_path, "bptt", seed, total_seconds=10.0, end_to_end_seconds=end_to_end)
    write_run(tmp_path, "es", 1, total_seconds=20.0)
    report.write_report(tmp_path, "quick")
    rows = table_rows(tmp_path)
    assert rows["| method"][5] == "end-to-end s" and rows["| bptt"][5] == "35 ± 7" and rows["| es"][5] == "–"
    assert report.TIME_NOTE in (tmp_path / "table.md").read_text()
    steps, end_to_end = [c for c in saved["wallclock.png"].axes[0].containers
                         if isinstance(c, matplotlib.container.BarContainer)]
    assert [bar.get_height() for bar in steps] == [10.0, 20.0]
    assert end_to_end[0].get_height() == 35.0 and math.isnan(end_to_end[1].get_height())
    assert end_to_end.get_label().startswith("end to end") and steps.get_label() == "summed update steps"


def test_the_accuracy_time_figure_states_its_finding_and_names_the_time_it_plots(tmp_path, saved):
    """A point per method at (mean time, mean test accuracy); the title names the most accurate
    EGGROLL rank beside vanilla ES and BPTT; end-to-end time once every run has it, else the
    summed update steps, and the axis says which."""
    for seed in (1, 2):
        write_run(tmp_path, "bptt", seed, test_acc=0.94, total_seconds=10.0)
        write_run(tmp_path, "es", seed, test_acc=0.76, total_seconds=200.0 + seed)
        write_run(tmp_path, "eggroll-r1", seed, test_acc=0.78, total_seconds=20.0)
        write_run(tmp_path, "eggroll-r4", seed, test_acc=0.70 + 0.1 * seed, total_seconds=30.0)
    report.write_report(tmp_path, "paper")
    ax = saved["accuracy_time.png"].axes[0]
    assert ax.get_title().splitlines()[0] == "Gradient-free eggroll-r4 85.0 % in 30 s; es 76.0 % in 202 s, bptt 94.0 % in 10 s"
    assert ax.get_xlabel() == "training time, s (summed update steps, log scale)"
    for path in (tmp_path / "runs").glob("*/final.json"):
        path.write_text(json.dumps(dict(json.loads(path.read_text()), end_to_end_seconds=500.0)))
    report.write_report(tmp_path, "paper")
    ax = saved["accuracy_time.png"].axes[0]
    assert "es 76.0 % in 500 s" in ax.get_title() and ax.get_xlabel().startswith("training time, s (end to end")


def test_table_has_the_real_recordings_column_whether_or_not_runs_were_scored(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "plot_figures", lambda *args: [])
    write_run(tmp_path / "unscored", "es", 1)
    write_run(tmp_path / "scored", "es", 1)
    write_run(tmp_path / "scored", "eggroll-r4", 1, real_acc=0.8)
    write_run(tmp_path / "scored", "eggroll-r4", 2)
    for results_dir in (tmp_path / "unscored", tmp_path / "scored"):
        report.write_report(results_dir, "paper")
    unscored, scored = (tmp_path / "unscored" / "table.md").read_text(), (tmp_path / "scored" / "table.md").read_text()
    header = lambda table: next(line for line in table.splitlines() if line.startswith("| method"))
    assert header(unscored) == header(scored) and header(scored).endswith("| real recordings % |")
    assert table_rows(tmp_path / "unscored")["| es"][-1] == "– |"
    assert table_rows(tmp_path / "scored")["| es"][-1] == "– |"
    assert table_rows(tmp_path / "scored")["| eggroll-r4"][-1] == "80.00 (1/2 seeds) |"
    assert report.REAL_NOTE in unscored.splitlines() and report.REAL_NOTE in scored.splitlines()


def test_write_report_returns_the_files_it_wrote(tmp_path):
    """Each table and figure, and no rank ablation of an earlier report once its EGGROLL runs are gone."""
    write_run(tmp_path, "es", 1)
    write_run(tmp_path, "eggroll-r2", 1)
    written = report.write_report(tmp_path, "quick")
    assert sorted(p.name for p in written) == ["accuracy_time.png", "convergence.png", "per_seed.md",
                                              "rank_ablation.png", "sparsity.md", "table.md", "wallclock.png"]
    assert all(p.parent == tmp_path and p.stat().st_size > 0 for p in written)
    shutil.rmtree(tmp_path / "runs" / "eggroll-r2-seed1")
    written = report.write_report(tmp_path, "quick")
    report.remove_stale_figures(tmp_path, written)
    assert "rank_ablation.png" not in [p.name for p in written] and not (tmp_path / "rank_ablation.png").exists()
    theirs = tmp_path / "theirs.png"
    theirs.write_bytes(b"the user's")
    (tmp_path / "rank_ablation.png").symlink_to(theirs)  # a link is not the report's to delete: refused
    with pytest.raises(run_folder.UsageError, match="rank_ablation.png is a symbolic link"):
        report.write_report(tmp_path, "quick")
    assert (tmp_path / "rank_ablation.png").is_symlink() and theirs.read_bytes() == b"the user's"


def test_a_users_files_under_a_reports_names_are_refused_and_left_as_they_are(tmp_path):
    """A table.md or a figure's name that no report wrote (another heading; a file, even a PNG, that
    the record of the report's figures does not hold) is the user's: the report refuses it before
    it writes anything, and neither replaces nor deletes it."""
    write_run(tmp_path, "es", 1)
    users_png = (ROOT / "docs" / "derivation.png").read_bytes()
    for name, text in (("table.md", b"my table"), ("convergence.png", b"not a png"), ("rank_ablation.png", users_png)):
        (tmp_path / name).write_bytes(text)
        what = "is a file this command did not write (not a table or figure of run.py reproduce)" \
            if name == "table.md" else f"is a file this command did not write (not a figure the report drew: its " \
                                       f"{report.FIGURE_RECORD} does not hold it)"
        with pytest.raises(run_folder.UsageError, match=re.escape(
                f"{tmp_path / name} {what}: it is left as it is; move it out of {tmp_path}, or give reproduce "
                f"another --results")):
            report.write_report(tmp_path, "quick")
        assert (tmp_path / name).read_bytes() == text and not (tmp_path / "per_seed.md").exists()
        (tmp_path / name).unlink()


def test_a_users_png_over_a_figure_the_report_drew_is_refused_not_replaced(tmp_path):
    """The report knows its figures by their digests in its record, not by their first bytes: a
    user's own PNG saved under a figure's name, one the report draws again or one it no longer draws
    (which it would delete), is refused and kept; its own figures are replaced."""
    write_run(tmp_path, "eggroll-r2", 1)
    report.remove_stale_figures(tmp_path, report.write_report(tmp_path, "quick"))
    shutil.rmtree(tmp_path / "runs" / "eggroll-r2-seed1")
    write_run(tmp_path, "es", 1)
    users_png = (ROOT / "docs" / "derivation.png").read_bytes()
    for name in ("wallclock.png", "rank_ablation.png"):
        drawn = (tmp_path / name).read_bytes()
        (tmp_path / name).write_bytes(users_png)
        with pytest.raises(run_folder.UsageError, match=f"{name} is a file this command did not write \\(not a figure "
                                                        f"the report drew"):
            report.write_report(tmp_path, "quick")
        assert (tmp_path / name).read_bytes() == users_png
        (tmp_path / name).write_bytes(drawn)
    report.remove_stale_figures(tmp_path, report.write_report(tmp_path, "quick"))
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["accuracy_time.png", "convergence.png", "wallclock.png"]


def test_after_a_report_the_record_holds_each_figures_current_digest_alone(tmp_path):
    """A redrawn figure's old digest leaves the record: the earlier drawing, put back under its name by
    someone, is no figure of this report's any more (it would be refused, not replaced unseen)."""
    write_run(tmp_path, "es", 1)
    report.remove_stale_figures(tmp_path, report.write_report(tmp_path, "quick"))
    before = (tmp_path / "convergence.png").read_bytes()
    write_run(tmp_path, "es", 2)
    written = report.write_report(tmp_path, "quick")
    report.remove_stale_figures(tmp_path, written)
    assert (tmp_path / "convergence.png").read_bytes() != before
    assert report.recorded_figures(tmp_path) == {path.name: {figure_record.digest(path)} for path in written
                                                 if path.suffix == ".png"}


def test_a_report_of_no_runs_left_removes_the_figures_it_drew_before(tmp_path):
    """Once no run is left to report, the earlier report's figures go with its table's rows: only the
    report's own (PNG, of its names), not a user's figure beside them."""
    write_run(tmp_path, "eggroll-r2", 1)
    drawn = [p for p in report.write_report(tmp_path, "quick") if p.suffix == ".png"]
    (tmp_path / "mine.png").write_bytes(drawn[0].read_bytes())
    shutil.rmtree(tmp_path / "runs" / "eggroll-r2-seed1")
    written = report.write_report(tmp_path, "quick")
    report.remove_stale_figures(tmp_path, written)
    assert not any(p.suffix == ".png" for p in written)
    assert sorted(p.name for p in tmp_path.glob("*.png")) == ["mine.png"] and len(drawn) == 4
    assert report.recorded_figures(tmp_path) == {}  # no digest of a deleted figure left to vouch for a file later


def test_a_link_under_a_stale_figures_name_is_left_and_never_recorded(tmp_path):
    """A link put under the name of a figure the report no longer draws, to a file of that figure's
    very bytes, while the report is written (write_report refuses one there before it starts): not the
    report's (it writes no file through a link), so it is neither deleted nor kept in the record as a
    figure the report drew."""
    write_run(tmp_path, "eggroll-r2", 1)
    report.remove_stale_figures(tmp_path, report.write_report(tmp_path, "quick"))
    shutil.rmtree(tmp_path / "runs" / "eggroll-r2-seed1")
    write_run(tmp_path, "es", 1)
    written = report.write_report(tmp_path, "quick")
    elsewhere = tmp_path.parent / f"{tmp_path.name}-copy.png"
    elsewhere.write_bytes((tmp_path / "rank_ablation.png").read_bytes())
    (tmp_path / "rank_ablation.png").unlink()
    (tmp_path / "rank_ablation.png").symlink_to(elsewhere)
    report.remove_stale_figures(tmp_path, written)
    assert (tmp_path / "rank_ablation.png").is_symlink() and elsewhere.is_file()
    assert sorted(report.recorded_figures(tmp_path)) == ["accuracy_time.png", "convergence.png", "wallclock.png"]


@pytest.fixture
def figures(tmp_path, monkeypatch):
    """{file name: Figure} of a report over every seed, BPTT's line near the top of the convergence plot."""
    saved = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep_figure(saved))
    for seed in config.SEEDS:
        write_run(tmp_path, "bptt", seed, val_acc=0.95)
        for index, name in enumerate(["es"] + [f"eggroll-r{r}" for r in config.RANKS]):
            write_run(tmp_path, name, seed, test_acc=0.5 + 0.03 * index + 0.02 * seed,
                      val_accs=[0.09 * step + 0.02 * (index + seed) for step in range(1, 10)])
    report.write_report(tmp_path, "paper")
    return saved


def texts(fig):
    """Every title, axis label and legend entry of a figure."""
    found = [fig.get_suptitle()]
    for ax in fig.axes:
        found += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel()]
        found += [t.get_text() for t in ax.get_legend().get_texts()] if ax.get_legend() else []
    return " ".join(found)


def test_every_figure_has_a_title_naming_the_preset_and_explains_its_spread(figures):
    assert sorted(figures) == ["accuracy_time.png", "convergence.png", "rank_ablation.png", "wallclock.png"]
    for fig in figures.values():
        titles = [fig.get_suptitle()] + [ax.get_title() for ax in fig.axes]
        assert any("(paper)" in title for title in titles)
        assert f"mean ± std over {len(config.SEEDS)} seeds" in texts(fig)


def test_convergence_legend_stands_outside_the_plot_clear_of_the_bptt_line(figures):
    fig = figures["convergence.png"]
    fig.draw_without_rendering()
    ax = fig.axes[0]
    bptt = next(line for line in ax.get_lines() if line.get_label().startswith("bptt"))
    bptt_y = ax.transData.transform((0, bptt.get_ydata()[0]))[1]
    legend, plot = ax.get_legend().get_window_extent(), ax.get_window_extent()
    assert plot.y0 < bptt_y < plot.y1
    assert legend.x0 >= plot.x1 and legend.x1 <= fig.bbox.x1  # right of the plot, inside the figure


def test_the_convergence_bands_are_the_std_over_seeds_the_tables_give(figures):
    """Each method's band is mean ± the sample std (ddof 1) over its seeds, as in the tables: the
    fixture's seeds lie 2 points apart at every generation."""
    for band in figures["convergence.png"].axes[0].collections:
        vertices = band.get_paths()[0].vertices
        first = vertices[vertices[:, 0] == vertices[:, 0].min(), 1]
        assert first.max() - first.min() == pytest.approx(2 * 2 * statistics.stdev(config.SEEDS))


def test_runs_trained_or_scored_on_different_data_are_never_one_table(tmp_path):
    """A table never mixes two data sets: runs whose final.json name different training data, or whose
    real.json scored different recordings (or one names them and one, older, does not), are one
    ValueError naming two of them and the fix; a run from before runs named their data is read beside
    either."""
    emulated = {"fingerprint": {"train": "a", "test": "b"}, "emulated": {"seed": 0}}
    write_run(tmp_path, "es", 1, data=emulated)
    write_run(tmp_path, "es", 2, data=None)
    report.write_report(tmp_path, "paper")
    other = write_run(tmp_path, "bptt", 1, data={"fingerprint": {"train": "c", "test": "b"}})
    with pytest.raises(ValueError, match=re.escape(f"{other} and {tmp_path / 'runs' / 'es-seed1'} were trained on "
                                                   f"different data")) as error:
        report.write_report(tmp_path, "paper")
    assert "a table never mixes two data sets: move the runs of one data set out of" in str(error.value)
    shutil.rmtree(other)
    for seed, recordings in ((1, "r1"), (2, "r2")):
        folder = tmp_path / "runs" / f"es-seed{seed}"
        (folder / "real.json").write_text(json.dumps({"run": str(folder), "generation": 20, **real_score(0.5),
                                                      "data": {"test": recordings}}))
    with pytest.raises(ValueError, match="score different recordings, which one column of real-recording "
                                         "accuracies would mix: rerun reproduce --report-only with --real-root and "
                                         "one copy, without --runs or --seeds, which scores every run again"):
        report.write_report(tmp_path, "paper")
    unnamed = tmp_path / "runs" / "es-seed2" / "real.json"  # a score from before scores named their recordings
    unnamed.write_text(json.dumps({"run": str(unnamed.parent), "generation": 20, **real_score(0.5)}))
    named = tmp_path / "runs" / "es-seed1" / "real.json"
    with pytest.raises(ValueError, match=re.escape(f"{unnamed} names no recordings it scored (it was written before "
                                                   f"scores named them) and {named} does, so one column of real-recording accuracies could mix two "
                                                   f"copies: rerun reproduce --report-only with --real-root")):
        report.write_report(tmp_path, "paper")


@pytest.mark.parametrize("after", ['{"generation": 30, "val_', "xyz"], ids=["a line cut", "garbage"])
def test_a_line_after_a_finished_runs_records_is_refused(tmp_path, after):
    """A finished run's metrics.jsonl holds whole lines only (a kill cuts none once final.json is
    written, and --resume drops one cut before): a line cut short or garbage after its records is
    damage, refused by name with its line, not skipped."""
    out = write_run(tmp_path, "es", 1, val_accs=(0.5, 0.6))
    with open(out / "metrics.jsonl", "a") as file:
        file.write(after)
    with pytest.raises(ValueError, match=re.escape(f"line 3 of {out / 'metrics.jsonl'} is not JSON: restore it "
                                                   f"from a copy of the run, or move that run folder out of the runs "
                                                   f"folder")):
        report.collect(tmp_path)


DAMAGES = {
    "final.json not JSON": ("final.json", "{\"test_acc\": 0.9,", "final.json is not valid JSON"),
    "final.json a list": ("final.json", "[1, 2]", "final.json is damaged (it holds a JSON list, not an object)"),
    "final.json without test_acc": ("final.json", json.dumps({"val_acc": 0.9}), "(test_acc is missing)"),
    "final.json not text": ("final.json", b"\xff\xfe\x00garbage", "final.json is not valid JSON"),
    "real.json without accuracy": ("real.json", json.dumps({"run": "x", "generation": 20}),
                                   "(accuracy.train is missing)"),
    "real.json without its run": ("real.json", json.dumps({**real_score(0.5), "generation": 20}),
                                  "(run is missing)"),
    "real.json of another seed": ("real.json", json.dumps({"run": "results/x/runs/eggroll-r4-seed2", "generation": 20,
                                                           **real_score(0.5)}), "scores another run"),
    "real.json of another method": ("real.json", json.dumps({"run": "results/x/runs/bptt-seed1", "generation": 20,
                                                            **real_score(0.5)}), "scores another run"),
    "real.json of another rank": ("real.json", json.dumps({"run": "eggroll-r1-seed1", "generation": 20,
                                                          **real_score(0.5)}), "scores another run"),
    "real.json of another lever": ("real.json", json.dumps({"run": "es-batch-512-seed1", "generation": 20,
                                                           **real_score(0.5)}), "scores another run"),
    "real.json of another generation": ("real.json", json.dumps({"run": "eggroll-r4-seed1", "generation": 10,
                                                                 **real_score(0.5)}),
                                        "(it scored generation 10, and this run finished at 20)"),
    "metrics.jsonl cut inside": ("metrics.jsonl", '{"generation": 10, "val\n' + json.dumps(
        {"generation": 20, "val_acc": 0.6, "wall_seconds": 2.0}) + "\n", "line 1 of"),
    "metrics.jsonl of another run": ("metrics.jsonl", json.dumps({"generation": 20, "val_acc": 0.77,
                                                                  "wall_seconds": 1.0}) + "\n",
                                     "disagree on the validation accuracy at the last generation, 20 (0.77 and "),
    "metrics.jsonl ending at another generation": ("metrics.jsonl", json.dumps(
        {"generation": 10, "val_acc": FINAL["val_acc"], "wall_seconds": 1.0}) + "\n", "ends at generation 10 with "
                                                                                    "validation accuracy"),
    "metrics.jsonl ending at another generation and accuracy": ("metrics.jsonl", json.dumps(
        {"generation": 10, "val_acc": 0.25, "wall_seconds": 1.0}) + "\n", "ends at generation 10 with validation "
                                                                         "accuracy 0.25, not where"),
    "metrics.jsonl without a validation accuracy": ("metrics.jsonl", json.dumps({"generation": 10, "wall_seconds": 1.0})
                                                    + "\n" + json.dumps({"generation": 20, "val_acc": FINAL["val_acc"],
                                                                          "wall_seconds": 2.0}) + "\n",
                                                    "(val_acc is missing)"),
    "metrics.jsonl foreign": ("metrics.jsonl", json.dumps({"loss": 1.0}) + "\n", "is damaged (generation is missing)"),
    "metrics.jsonl out of range": ("metrics.jsonl", json.dumps({"generation": 10, "val_acc": 1.5, "wall_seconds": 1.0}),
                                   "(val_acc must be a number in [0, 1], got 1.5)"),
    "metrics.jsonl out of order": ("metrics.jsonl", "".join(json.dumps({"generation": g, "val_acc": 0.5,
                                                                        "wall_seconds": 1.0}) + "\n" for g in (20, 10)),
                                   "(generation 10 does not follow generation 20)"),
    "final.json accuracy out of range": ("final.json", json.dumps(dict(FINAL, test_acc=1.5)),
                                         "(test_acc must be a number in [0, 1], got 1.5)"),
    "final.json negative seconds": ("final.json", json.dumps(dict(FINAL, total_seconds=-1)),
                                    "(total_seconds must be a number of seconds >= 0 and below 10^12 (30,000 years), "
                                    "got -1)"),
    "final.json without its generations": ("final.json", json.dumps({key: value for key, value in FINAL.items()
                                                                     if key != "generations"}),
                                           "(generations is missing)"),
    "final.json spikes past any network": ("final.json", json.dumps(dict(FINAL, spikes_per_sample=1e308)),
                                           "(spikes_per_sample must be a count per sample >= 0 and below 10^15, got "
                                           "1e+308)"),
    "final.json seconds past any run": ("final.json", json.dumps(dict(FINAL, total_seconds=1e308)),
                                        "(total_seconds must be a number of seconds >= 0 and below 10^12 (30,000 "
                                        "years), got 1e+308)"),
    "final.json seed not a number": ("final.json", json.dumps(dict(FINAL, config={"seed": "1"})),
                                     '(config.seed must be an integer, got "1")'),
    "final.json data not an object": ("final.json", json.dumps(dict(FINAL, data="x")), '(data must be null (a run '
                                      'from before runs named their data) or a JSON object with its fingerprint (and '
                                      'the absolute path of its folder as root), got "x")'),
    "final.json data's root not a path": ("final.json", json.dumps(dict(FINAL, data={"fingerprint": {}, "root": 5})),
                                          "(data must be null"),
    "final.json data's root not absolute": ("final.json", json.dumps(dict(FINAL, data={"fingerprint": {},
                                                                                        "root": ""})), "(data must be null"),
    "final.json data without its fingerprint": ("final.json", json.dumps(dict(FINAL, data={})), "(data must be null"),
    "final.json without seed": ("final.json", json.dumps(dict(FINAL, config={})), "(config.seed is missing)"),
    "real.json accuracy a string": ("real.json", json.dumps({"run": "x", "generation": 20, **real_score("0.5")}),
                                    '(accuracy.train must be a number in [0, 1], got "0.5")'),
    "final.json step time 0": ("final.json", json.dumps(dict(FINAL, median_seconds_per_generation=0.0)),
                               "(median_seconds_per_generation must be a number of seconds from 10^-6 to 10^12, got "
                               "0.0)"),  # a report's speedup divided by it
    "final.json step time 1e-300": ("final.json", json.dumps(dict(FINAL, median_seconds_per_generation=1e-300)),
                                    "(median_seconds_per_generation must be a number of seconds from 10^-6"),
    "real.json accuracy.all edited": ("real.json", json.dumps({"run": "x", "generation": 20, "accuracy": {
        "train": 0.5, "val": 0.7, "test": 0.9, "all": 0.01}, "samples": {"train": 800, "val": 100, "test": 100}}),
                                      "(accuracy.all is 0.01, not 0.56, its splits' accuracies weighted by their "
                                      "samples: it was edited)"),
    "real.json samples a string": ("real.json", json.dumps({"run": "x", "generation": 20, **real_score(0.5),
                                                            "samples": {"train": "8"}}),
                                   '(samples.train must be an integer from 0 to 10^9, got "8")'),
    "real.json of no recording": ("real.json", json.dumps({"run": "x", "generation": 20, **real_score(0.5),
                                                           "samples": {"train": 0, "val": 0, "test": 0}}),
                                  "(samples are 0 in every split: an accuracy over no recording is no score)"),
    "real.json scoring no whole number of recordings": ("real.json", json.dumps({"run": "x", "generation": 20, **{
        **real_score(0.5), "samples": {"train": 8000, "val": 1000, "test": 100}}} | {"accuracy": {
            "train": 0.5, "val": 0.5, "test": 0.935, "all": (0.5 * 9000 + 93.5) / 9100}}),
        "(accuracy.test 0.935 is 93.5 of its 100 recordings, no whole number of them: it was edited)"),
    "real.json of 10^30 recordings": ("real.json", json.dumps({"run": "x", "generation": 20, **real_score(0.5)} | {
        "samples": {"train": 10 ** 30, "val": 1000, "test": 1000}}),
        "(samples.train must be an integer from 0 to 10^9, got 1000000000000000000000000000000)"),
    "final.json scoring no whole number of recordings": ("final.json", json.dumps({**FINAL, "test_acc": 0.9005}),
                                                         "(test_acc 0.9005 is 900.5 of its 1,000 recordings, no whole "
                                                         "number of them: it was edited)"),
    "final.json ending before its steps": ("final.json", json.dumps({**FINAL, "end_to_end_seconds": 9.0}),
                                           "(end_to_end_seconds 9.0 is less than total_seconds 10.0, the update "
                                           "steps it holds)"),
    "real.json without its samples": ("real.json", json.dumps({"run": "x", "generation": 20, "accuracy": {
        "train": 0.5, "val": 0.5, "test": 0.5, "all": 0.99}}), "(samples.train is missing)"),
    "real.json without a split's score": ("real.json", json.dumps({"run": "x", "generation": 20, "accuracy": {
        "val": 0.5, "test": 0.5, "all": 0.99}, "samples": {"train": 8, "val": 1, "test": 1}}),
                                          "(accuracy.train is missing)"),
    "real.json's test edited, not its digits": ("real.json", json.dumps({
        "run": "x", "generation": 20, **real_score(0.5), "accuracy_per_digit": {"test": [0.4] * 10}}),
        "(accuracy.test 0.5 lies outside its digits' accuracies (0.4..0.4), of which it is the mean weighted by "
        "each digit's recordings)"),
}


@pytest.mark.parametrize("damage", DAMAGES, ids=list(DAMAGES))
def test_a_damaged_run_file_is_one_line_naming_the_file_and_the_fix(tmp_path, damage):
    file_name, content, problem = DAMAGES[damage]
    out = write_run(tmp_path, "es", 1, real_acc=0.5)
    path = out / file_name
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(ValueError) as error:
        report.write_report(tmp_path, "paper")
    message = str(error.value)
    assert "\n" not in message and problem in message and str(path) in message
    kept = "rerun reproduce" in message or "scores another run" in message and (  # a run without its checkpoint
        f"the run keeps no checkpoint.npz to score again, so move {path} out of its folder" in message)
    assert kept and message.startswith(("line", str(path)))


def test_a_run_folder_link_that_leads_nowhere_is_said_not_passed_over(tmp_path, capsys):
    write_run(tmp_path, "es", 1)
    (tmp_path / "runs" / "es-seed2").symlink_to(tmp_path / "runs" / "es-seed3")
    (tmp_path / "runs" / "es-seed3").symlink_to(tmp_path / "runs" / "es-seed2")
    assert list(report.collect(tmp_path)) == ["es"]
    err = capsys.readouterr().err
    assert err.count("warning: ") == 2 and "es-seed2 is left out of the report: it is a link to" in err, err


def test_a_run_folder_link_that_leads_to_a_run_is_read_without_a_warning(tmp_path, capsys):
    """A link under runs/ to a run's folder (a run kept elsewhere) is read as the run: no warning."""
    write_run(tmp_path / "elsewhere", "es", 2)
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "es-seed2").symlink_to(tmp_path / "elsewhere" / "runs" / "es-seed2")
    assert len(report.collect(tmp_path)["es"]) == 1
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("file_name", ["real.json", "final.json", "metrics.jsonl"])
def test_a_run_file_that_is_a_link_is_refused_not_reported_as_the_runs(tmp_path, file_name):
    """A run folder's file linked to another's (a copy's real.json, scored on other recordings) is
    one line naming the link, as train and evaluate say it, not read as this run's record."""
    source = write_run(tmp_path / "elsewhere", "es", 1, real_acc=0.5)
    out = write_run(tmp_path, "es", 1, real_acc=0.25)
    (out / file_name).unlink()
    (out / file_name).symlink_to(source / file_name)
    with pytest.raises(ValueError) as refused:
        report.collect(tmp_path)
    assert str(refused.value) == (f"{out / file_name} is a symbolic link (to {source / file_name}), and the project "
                                  f"reads and writes its own files only, never through a link: replace the link by "
                                  f"a copy of the file it names, or remove it")


def test_a_real_json_naming_its_run_with_a_trailing_slash_scores_it(tmp_path):
    """real.json's run is the folder as a shell may write it, "runs/es-seed1/": still this run's."""
    out = write_run(tmp_path, "es", 1)
    (out / "real.json").write_text(json.dumps({"run": f"{out}/", "generation": 20, **real_score(0.5)}))
    assert report.collect(tmp_path)["es"][0][0]["real_acc"] == 0.5


def test_a_missing_metrics_file_is_named(tmp_path):
    out = write_run(tmp_path, "es", 1)
    (out / "metrics.jsonl").unlink()
    with pytest.raises(ValueError, match="metrics.jsonl is missing: restore it from a copy of the run, or move that "
                                         "run folder out of the runs folder \\(nothing of it is deleted\\)"):
        report.collect(tmp_path)


# ---------------------------------------------------------------------------------------------
# The hyperscale parts

def write_hyperscale_runs(results_dir, runs, **final):
    """A finished run folder for each (run name, members, seed, test_acc)."""
    for name, members, seed, test_acc in runs:
        write_run(results_dir, f"{name}-m{members}", seed, test_acc=test_acc,
                  median_seconds_per_generation=members / 1000, **final)


@pytest.fixture
def saved(monkeypatch):
    """{file name: Figure} of every figure saved, instead of writing them."""
    figures = {}
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep_figure(figures))
    return figures


def test_protocol_table_is_method_by_population_beside_the_paper(tmp_path, saved):
    write_hyperscale_runs(tmp_path, [("es", 512, 1, 0.70), ("es", 512, 2, 0.72), ("es", 512, 3, 0.74),
                                     ("eggroll-r4", 512, 1, 0.80), ("eggroll-r4", 2048, 1, 0.85),
                                     ("eggroll-r4", 2048, 2, 0.87)], device="gpu (NVIDIA H100)")
    written = report.write_hyperscale_report(tmp_path, "protocol")
    assert [p.name for p in written] == ["table.md", "protocol.png"] and list(saved) == ["protocol.png"]
    table = (tmp_path / "table.md").read_text()
    assert "Device: gpu (NVIDIA H100)" in table
    assert "| method | 512 members | 2048 members | the paper |" in table
    assert "| es | 72.00 ± 2.00 | – | 76.17 |" in table
    assert "| eggroll-r4 | 80.00 (1 seed) | 86.00 ± 1.41 (2 seeds) | 79.21 |" in table
    assert "| eggroll-r4 | 0.512 | 2.048 |" in table  # seconds per generation, median over seeds
    assert "| es | – | – |" in table  # hidden spikes / energy, not measured by these runs


def test_protocol_figure_marks_the_paper_left_of_the_populations(tmp_path, saved):
    write_hyperscale_runs(tmp_path, [("es", 512, 1, 0.7), ("eggroll-r1", 512, 1, 0.8), ("eggroll-r1", 32768, 1, 0.9)])
    report.write_hyperscale_report(tmp_path, "protocol")
    ax = saved["protocol.png"].axes[0]
    assert ax.get_xscale() == "log" and ax.xaxis.get_transform().base == 2
    assert [t.get_text() for t in ax.get_xticklabels()] == ["paper", "512", "32768"]
    paper_x = ax.get_xticks()[0]
    ticks = {round(line.get_ydata()[0], 2): line.get_color() for line in ax.get_lines()
             if list(line.get_xdata()) == [paper_x]}
    lines = {c.get_label(): c.lines[0].get_color() for c in ax.containers}
    assert ticks == {76.17: lines["es"], 78.75: lines["eggroll-r1"], 94.03: "black"}
    assert paper_x < 512 and "paper" in texts(saved["protocol.png"])


def test_budget_table_and_figures_show_each_run_at_each_population(tmp_path, saved):
    write_hyperscale_runs(tmp_path, [("eggroll-r1", 512, 1, 0.80), ("eggroll-r4", 512, 1, 0.81), ("es", 512, 1, 0.75),
                                     ("es", 8192, 1, 0.78)], total_seconds=123.4)
    write_hyperscale_runs(tmp_path, [("eggroll-r1", 65536, 1, 0.93)], total_seconds=123.4, end_to_end_seconds=150.6,
                          test_sparsity=dict(SPARSITY, hidden_spikes_per_sample=80.0,
                                             synaptic_ops_per_sample=64 * 1800.0 + 10 * 80.0))
    written = report.write_hyperscale_report(tmp_path, "budget")
    assert [p.name for p in written] == ["table.md", "budget_accuracy.png", "budget_speed.png"]
    rows = [line for line in (tmp_path / "table.md").read_text().splitlines() if line.startswith("| ")]
    assert rows[0] == ("| run | members | test % | val % | s / generation | step s | end-to-end s | hidden spikes | "
                       "energy nJ |")
    assert rows[1:] == ["| es | 512 | 75.00 | 90.00 | 0.512 | 123 | – | – | – |",
                        "| es | 8192 | 78.00 | 90.00 | 8.192 | 123 | – | – | – |",
                        "| eggroll-r1 | 512 | 80.00 | 90.00 | 0.512 | 123 | – | – | – |",
                        f"| eggroll-r1 | 65536 | 93.00 | 90.00 | 65.536 | 123 | 151 | 80.0 | "
                        f"{0.9 * 116000 / 1e3:.1f} |",
                        "| eggroll-r4 | 512 | 81.00 | 90.00 | 0.512 | 123 | – | – | – |"]
    assert report.ENERGY_NOTE in (tmp_path / "table.md").read_text()
    assert report.TIME_NOTE in (tmp_path / "table.md").read_text()
    accuracy, speed = saved["budget_accuracy.png"].axes[0], saved["budget_speed.png"].axes[0]
    assert (accuracy.get_xscale(), accuracy.get_yscale()) == ("log", "linear")
    assert (speed.get_xscale(), speed.get_yscale()) == ("log", "log")
    for ax in (accuracy, speed):
        assert [c.get_label() for c in ax.containers] == ["es", "eggroll-r1", "eggroll-r4"]
    es = accuracy.containers[0].lines[0]
    assert list(es.get_xdata()) == [512, 8192] and list(es.get_ydata()) == [75.0, 78.0]


def test_headline_table_shows_every_seed_its_weakest_digit_and_the_mean(tmp_path, saved):
    digits = lambda worst: [0.99, None, worst] + [0.95] * 7
    for seed, test_acc, worst in [(1, 0.93, 0.81), (2, 0.94, 0.85), (3, 0.92, 0.83)]:
        write_run(tmp_path, "eggroll-r1-m65536", seed, test_acc=test_acc, test_acc_per_digit=digits(worst),
                  real_acc=0.9 if seed == 1 else None, device="gpu (NVIDIA H200)", total_seconds=3600.0,
                  **({"end_to_end_seconds": 4000.0 + seed} if seed > 1 else {}))
    write_run(tmp_path, "es-m4096", 1, test_acc=0.8, device="gpu (NVIDIA H200)")  # final.json without per digit
    written = report.write_hyperscale_report(tmp_path, "headline")
    assert [p.name for p in written] == ["table.md", "convergence.png"]
    rows = {tuple(line.split(" | ")[:2]): line for line in (tmp_path / "table.md").read_text().splitlines()}
    assert rows["| eggroll-r1, 65536 members", "1"] == \
        "| eggroll-r1, 65536 members | 1 | 93.00 | 90.00 | 81.00 (digit 2) | 3600 | – | – | – | gpu (NVIDIA H200) |"
    assert rows["| eggroll-r1, 65536 members", "2"].split(" | ")[6] == "4002"
    assert rows["| eggroll-r1, 65536 members", "2"].split(" | ")[3] == "–"
    assert rows["| eggroll-r1, 65536 members", "mean ± std"] == ("| eggroll-r1, 65536 members | mean ± std | "
                                                                 "93.00 ± 1.00 | 90.00 (1/3 seeds) | "
                                                                 "83.00 ± 2.00 | 3600 ± 0 | 4002 ± 1 (2/3 seeds) | – | – | |")
    assert rows["| es, 4096 members", "1"].split(" | ")[4] == "–"
    order = [line.split(" | ")[1] for line in (tmp_path / "table.md").read_text().splitlines()
             if line.startswith("| eggroll-r1, 65536 members")]
    assert order == ["1", "2", "3", "mean ± std"]  # the seeds in their order, whatever order they are read in
    assert "Device: gpu (NVIDIA H200)" in (tmp_path / "table.md").read_text()
    assert [line.get_label() for line in saved["convergence.png"].axes[0].get_lines()] == ["es-m4096",
                                                                                          "eggroll-r1-m65536"]


def test_a_hyperscale_part_without_runs_still_writes_its_table(tmp_path):
    for part in config.HYPERSCALE:
        assert report.write_hyperscale_report(tmp_path / part, part) == [tmp_path / part / "table.md"]


def test_a_damaged_hyperscale_run_is_one_line_naming_its_file_or_folder(tmp_path):
    out = write_run(tmp_path / "digits", "es-m512", 1, test_acc_per_digit="0.9")
    with pytest.raises(ValueError) as error:
        report.write_hyperscale_report(tmp_path / "digits", "headline")
    assert str(error.value) == (f"{out / 'final.json'} is damaged (test_acc_per_digit must be a list of 10 numbers "
                                f"in [0, 1] or null, got \"0.9\"): {report.RETRAIN}")
    out = write_run(tmp_path / "edited", "es-m512", 1, test_acc=0.95, test_acc_per_digit=[0.9, None] + [0.8] * 8)
    with pytest.raises(ValueError) as error:  # a hand-edited accuracy that its digits' cannot average to
        report.write_hyperscale_report(tmp_path / "edited", "headline")
    assert str(error.value) == (f"{out / 'final.json'} is damaged (test_acc 0.95 lies outside its digits' accuracies "
                                f"(0.8..0.9), of which it is the mean weighted by each digit's recordings): "
                                f"{report.RETRAIN}")
    write_run(tmp_path / "edge", "es-m512", 1, test_acc=0.9005, test_acc_per_digit=[0.9, None] + [0.8] * 8)
    with pytest.raises(ValueError, match="test_acc 0.9005 lies outside its digits' accuracies"):  # by far less
        report.write_hyperscale_report(tmp_path / "edge", "headline")                            # than a digit
    out = write_run(tmp_path / "recounted", "es-m512", 1, n_train=60000,  # a count its data record contradicts
                    data={"fingerprint": {"train": "54000 samples, sha256 1", "val": "6000 samples, sha256 2"}})
    with pytest.raises(ValueError) as error:
        report.write_hyperscale_report(tmp_path / "recounted", "headline")
    assert str(error.value) == (f"{out / 'final.json'} is damaged (n_train 60000 disagrees with its data record, "
                                f"whose train split holds 54000 samples): {report.RETRAIN}")
    write_run(tmp_path / "val-recounted", "es-m512", 1, n_val=5000,  # every split's count, not the training one's
              data={"fingerprint": {"train": "54000 samples, sha256 1", "val": "6000 samples, sha256 2"}})
    with pytest.raises(ValueError, match="n_val 5000 disagrees with its data record, whose val split holds 6000"):
        report.write_hyperscale_report(tmp_path / "val-recounted", "headline")
    write_run(tmp_path / "named", "es", 1)
    with pytest.raises(ValueError) as error:
        report.write_hyperscale_report(tmp_path / "named", "budget")
    runs = tmp_path / "named" / "runs"
    assert str(error.value) == (f"{runs / 'es'}-seed*: not a hyperscale run folder (<run>-m<members>-seed<seed>); "
                                f"move it out of {runs}")


SPARSITY = {"input_events_per_sample": 1800.0, "hidden_spikes_per_sample": 150.0, "output_spikes_per_sample": 20.0,
            "silent_hidden_fraction": 0.25, "synaptic_ops_per_sample": 64 * 1800.0 + 10 * 150.0}


def test_sparsity_table_counts_operations_and_energy_and_marks_runs_without_the_measure(tmp_path):
    """sparsity.md: per method the test split's spikes, silent neurons and synaptic operations
    (64 per input event + 10 per hidden spike), the share training can change (10 x hidden / total),
    energy at 0.9 pJ per operation, and the ratio to the 148,608 multiply-accumulates at 4.6 pJ of
    a non-spiking network; a method whose runs lack the measure gets dashes; a damaged one is refused."""
    measured = {"input_events_per_sample": 1800.0, "hidden_spikes_per_sample": 150.0, "output_spikes_per_sample": 20.0,
                "silent_hidden_fraction": 0.25, "synaptic_ops_per_sample": 64 * 1800.0 + 10 * 150.0}
    write_run(tmp_path, "eggroll-r4", 1, test_sparsity=measured)
    write_run(tmp_path, "eggroll-r4", 2, test_sparsity=dict(measured, hidden_spikes_per_sample=250.0,
                                                            synaptic_ops_per_sample=64 * 1800.0 + 10 * 250.0))
    write_run(tmp_path, "es", 1)
    report.write_report(tmp_path, "quick")
    rows = {line.split(" | ")[0]: line.split(" | ") for line in (tmp_path / "sparsity.md").read_text().splitlines()}
    assert rows["| es"][1:] == ["–"] * 7 + ["– |"]
    cells = rows["| eggroll-r4"]
    assert cells[2] == "200.0 ± 70.7" and cells[4] == "25.0 ± 0.0"
    assert cells[5] == "117200 ± 707"                                   # 64 x 1800 + 10 x 200
    shares = [100 * 10 * h / (64 * 1800 + 10 * h) for h in (150, 250)]
    assert cells[6].startswith(f"{sum(shares) / 2:.2f}")
    energy = 0.9 * 117200 / 1e3                                       # nJ
    assert cells[7].startswith(f"{energy:.1f}")
    assert cells[8] == f"{148608 * 4.6 / 1e3 / energy:.1f} |"
    table = table_rows(tmp_path)  # Table 1 gives the hidden spikes and energy too, before the real recordings
    assert table["| eggroll-r4"][7:9] == ["200.0 ± 70.7", f"{energy:.1f} ± {0.9 * 707.1 / 1e3:.1f}"]
    assert table["| es"][7:9] == ["–", "–"] and report.ENERGY_NOTE in (tmp_path / "table.md").read_text()
    damaged = write_run(tmp_path, "eggroll-r1", 1, test_sparsity=dict(measured, silent_hidden_fraction=2.0))
    with pytest.raises(ValueError, match="test_sparsity.silent_hidden_fraction must be a number in"):
        report.write_report(tmp_path, "quick")
    assert damaged.exists()


def test_sparsity_table_takes_each_runs_own_layers(tmp_path):
    """A run of 2312-conv8k5s3-64-10: the share training can change is the hidden spikes' part of its
    operations (all but its input events' measured part), and the non-spiking network beside it has
    that network's synapses (a kernel per patch, then the dense layers), not the paper's 148,608."""
    network = snn.Network.parse("conv8k5s3,64")
    synapses = sum(network.synapses(layer).sum() for layer in (1, 2, 3))
    assert synapses == 8 * 10 * 10 * 2 * 5 * 5 + 800 * 64 + 64 * 10
    measured = dict(SPARSITY, input_synaptic_ops_per_sample=9000.0, synaptic_ops_per_sample=12000.0)
    write_run(tmp_path, "eggroll-r4", 1, test_sparsity=measured, config={"seed": 1, "hidden": "conv8k5s3,64"})
    report.write_report(tmp_path, "quick")
    cells = {line.split(" | ")[0]: line.split(" | ") for line in
             (tmp_path / "sparsity.md").read_text().splitlines()}["| eggroll-r4"]
    assert cells[6] == "25.00"                                          # 3,000 of 12,000
    assert cells[8] == f"{synapses * 4.6 / (0.9 * 12000):.1f} |"


def test_spike_cost_table_and_figure_give_each_method_at_each_price(tmp_path):
    """table.md: a row per method and spike cost (read from each run's settings, costs ascending),
    with the seeds, test accuracy, the test split's spikes, synaptic operations and energy at
    0.9 pJ each; spike_cost.png: two panels (hidden spikes, synaptic operations) with a curve per
    method through its costs, each point labelled. A run without the measure is refused by name."""
    measured = {"input_events_per_sample": 1800.0, "hidden_spikes_per_sample": 150.0, "output_spikes_per_sample": 20.0,
                "silent_hidden_fraction": 0.25, "synaptic_ops_per_sample": 64 * 1800.0 + 10 * 150.0}
    for name, cost, seed, acc, hidden, length in [("eggroll-r4", 0.0, 1, 0.75, 150.0, 100),
                                                  ("eggroll-r4", 0.0, 2, 0.73, 170.0, 100),
                                                  ("eggroll-r4", 0.001, 1, 0.90, 50.0, 4000),
                                                  ("eggroll-r4", 0.01, 1, 0.70, 60.0, 100),
                                                  ("bptt", 0.01, 1, 0.94, 90.0, 5), ("bptt", 0.001, 1, 0.95, 200.0, 5)]:
        method, _, rank = name.partition("-r")
        settings = {"method": method, "seed": seed, "spike_cost": cost,
                    **({"rank": int(rank), "generations": length} if rank else {"epochs": length})}
        write_run(tmp_path, f"{name}-{'g' if rank else 'e'}{length}-cost{cost:g}", seed, test_acc=acc, config=settings,
                  test_sparsity=dict(measured, hidden_spikes_per_sample=hidden,
                                     synaptic_ops_per_sample=64 * 1800.0 + 10 * hidden))
    written = report.write_spike_cost_report(tmp_path)
    assert [p.name for p in written] == ["table.md", "spike_cost.png"]
    rows = [line.split(" | ") for line in (tmp_path / "table.md").read_text().splitlines() if line.startswith("| ")]
    assert [(r[0], r[1], r[2]) for r in rows[1:]] == [("| bptt, 5 epochs", "0.001", "1"), ("| bptt, 5 epochs", "0.01", "1"),
                                                      ("| eggroll-r4, 100 generations", "0", "2"),
                                                      ("| eggroll-r4, 100 generations", "0.01", "1"),
                                                      ("| eggroll-r4, 4000 generations", "0.001", "1")]
    free = rows[3]
    assert free[3] == "74.00 ± 1.41" and free[4] == "160.0 ± 14.1" and free[7] == "116800 ± 141"
    assert free[8] == f"{0.9 * 116800 / 1e3:.1f} ± {0.9 * 141.42 / 1e3:.1f} |"
    figure = report.spike_cost_figure(report.collect(tmp_path), report.by_spike_cost(report.collect(tmp_path)))
    panels = figure.axes
    assert panels[2].get_title().startswith("all synaptic operations:\n64 per input event")
    assert [ax.get_xlabel() for ax in panels] == ["hidden spikes per sample (test split)"] * 2 + \
        ["synaptic operations per sample (test split)"]
    assert [t.get_text() for t in panels[0].get_legend().get_texts()] == \
        ["bptt, 5 epochs", "eggroll-r4, 100 generations", "eggroll-r4, 4000 generations"]
    assert sorted(t.get_text() for t in panels[0].texts) == ["0", "0.001", "0.001", "0.01", "0.01"]
    assert sorted(t.get_text() for t in panels[1].texts) == ["0.001", "0.001", "0.01"]  # the runs above 85 %
    lines = {c.get_label(): c.lines[0] for c in panels[0].containers}
    assert lines["eggroll-r4, 100 generations"].get_color() == lines["eggroll-r4, 4000 generations"].get_color() \
        != lines["bptt, 5 epochs"].get_color()
    assert lines["eggroll-r4, 100 generations"].get_linestyle() == "-"  # two seeds at cost 0, the most
    assert lines["eggroll-r4, 4000 generations"].get_linestyle() == lines["bptt, 5 epochs"].get_linestyle() == "--"
    assert lines["bptt, 5 epochs"].get_marker() != lines["eggroll-r4, 100 generations"].get_marker()
    write_run(tmp_path, "es-cost0", 1, config={"method": "es", "seed": 1})
    with pytest.raises(ValueError, match="es-cost0: final.json has no test_sparsity"):
        report.write_spike_cost_report(tmp_path)


def test_a_stale_figure_with_a_second_name_is_left_as_it_is(tmp_path):
    """A figure the user hard-linked elsewhere is someone else's too: a report with no run left for
    it does not delete its name in the results folder, and its record keeps that figure's digest alone."""
    write_run(tmp_path, "eggroll-r2", 1)
    report.write_report(tmp_path, "quick")
    os.link(tmp_path / "rank_ablation.png", tmp_path.parent / f"{tmp_path.name}-kept.png")
    record = tmp_path / figure_record.RECORD  # and a digest left of a drawing whose rename failed
    record.write_text(record.read_text() + f"{'0' * 64}  rank_ablation.png\n")
    shutil.rmtree(tmp_path / "runs" / "eggroll-r2-seed1")
    write_run(tmp_path, "es", 1)
    report.remove_stale_figures(tmp_path, report.write_report(tmp_path, "quick"))
    stale = tmp_path / "rank_ablation.png"
    assert stale.is_file() and report.recorded_figures(tmp_path)[stale.name] == {figure_record.digest(stale)}


def test_a_users_file_that_only_quotes_a_reports_heading_is_still_the_users(tmp_path):
    """A table.md of the user's that quotes a report's heading further down (notes on a copied
    table) does not begin as the report's own: refused, and left as it is."""
    write_run(tmp_path, "es", 1)
    notes = b"My notes on the run\n\n# Table 1 (quick): copied from the report\n"
    (tmp_path / "table.md").write_bytes(notes)
    with pytest.raises(run_folder.UsageError, match="is a file this command did not write"):
        report.write_report(tmp_path, "quick")
    assert (tmp_path / "table.md").read_bytes() == notes


def test_a_figure_record_with_a_line_of_someone_elses_is_refused_and_left_as_it_was(tmp_path):
    """A .figures.sha256 holding a line that is no "<sha256>  <figure>" is not the project's record:
    refused, never rewritten without that line, and the figure not written."""
    text = "# my checksums, keep\n" + "0" * 64 + "  toy.png\n"
    (tmp_path / figure_record.RECORD).write_text(text)
    with pytest.raises(run_folder.UsageError, match="is not the record of the figures drawn there"):
        with figure_record.writing(tmp_path / "toy.png") as temporary:
            temporary.write_bytes(b"\x89PNG\r\n\x1a\n drawn")
    assert (tmp_path / figure_record.RECORD).read_text() == text and not (tmp_path / "toy.png").exists()


def test_a_figure_record_with_crlf_line_ends_is_still_the_record(tmp_path):
    """A checkout that turns line ends into CRLF (git's autocrlf) leaves the record readable: the
    figures it holds are still the project's, replaced, not refused."""
    with figure_record.writing(tmp_path / "toy.png") as temporary:
        temporary.write_bytes(b"\x89PNG\r\n\x1a\n first")
    record = tmp_path / figure_record.RECORD
    record.write_bytes(record.read_bytes().replace(b"\n", b"\r\n"))
    figure_record.refuse_unrecorded(tmp_path / "toy.png", "the toy", "give another --out")
    with figure_record.writing(tmp_path / "toy.png") as temporary:
        temporary.write_bytes(b"\x89PNG\r\n\x1a\n second")
    assert set(figure_record.recorded(tmp_path, "")) == {"toy.png"}



@pytest.mark.parametrize("leads_to", ["nowhere", "a file"])
def test_a_figure_record_that_is_a_link_is_refused_before_any_figure_is_drawn(tmp_path, leads_to):
    """The record of the figures drawn in a folder is never read or written through a link, a
    dangling one too (no record is not what it says): refused when the figures are checked, before
    any work, and the link left as it is."""
    target = tmp_path / leads_to
    if leads_to == "a file":
        target.write_text("mine\n")
    (tmp_path / figure_record.RECORD).symlink_to(target)
    with pytest.raises(run_folder.UsageError, match="symbolic link"):
        figure_record.recorded(tmp_path, "give another --out")
    with pytest.raises(run_folder.UsageError, match="symbolic link"):
        figure_record.refuse_unrecorded(tmp_path / "toy.png", "the toy", "give another --out")
    assert os.readlink(tmp_path / figure_record.RECORD) == str(target)
    assert not (tmp_path / "toy.png").exists() and (leads_to == "nowhere") != target.exists()


def test_a_finished_runs_metrics_with_no_record_is_refused(tmp_path):
    """A finished run's metrics.jsonl emptied: no curve to draw, refused by name, not a figure
    without the run."""
    out = write_run(tmp_path, "es", 1, val_accs=(0.3, 0.5, 0.9))
    (out / "metrics.jsonl").write_text("")
    with pytest.raises(ValueError, match=re.escape(f"{out / 'metrics.jsonl'} holds no record, though "
                                                   f"{out / 'final.json'} says the run finished: restore it from a "
                                                   f"copy of the run, or {report.RETRAIN}")):
        report.collect(tmp_path)


def test_a_finished_runs_metrics_with_a_record_taken_out_or_a_blank_line_is_refused_by_what_it_is(tmp_path):
    """A finished run's metrics.jsonl without one of its records (every 10 generations: the curve and
    the time to 75 % would be drawn without it), or the last record alone gone (the last is checked
    against final.json): refused, naming the generation skipped; a blank line is called empty."""
    out = write_run(tmp_path, "es", 1, val_accs=(0.3, 0.5, 0.7, 0.9))
    path = out / "metrics.jsonl"
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:1] + lines[2:]))
    with pytest.raises(ValueError, match=re.escape(f"{path} skips a record: generation 10 is followed by 30, though "
                                                   f"its records begin 10 apart: restore it from a copy of the run, "
                                                   f"or {report.RETRAIN}")):
        report.collect(tmp_path)
    path.write_text("".join(lines[:2] + lines[3:]))
    with pytest.raises(ValueError, match=re.escape(f"{path} skips a record: generation 20 is followed by 40")):
        report.collect(tmp_path)
    path.write_text("".join(lines[1:]))  # the first gone: the rest are evenly spaced from 20, but 20 to 30 is not
    with pytest.raises(ValueError, match=re.escape(f"{path} skips a record: generation 20 is followed by 30, though "
                                                   f"its records begin 20 apart")):
        report.collect(tmp_path)
    path.write_text("".join(lines) + "\n")
    with pytest.raises(ValueError, match=re.escape(f"line 5 of {path} is empty: restore it from a copy")):
        report.collect(tmp_path)
    path.write_text("".join(lines))
    assert [record["generation"] for record in report.collect(tmp_path)["es"][0][1]] == [10, 20, 30, 40]
    final = json.loads((out / "final.json").read_text())
    assert run_folder.finished_metrics_problem(out, final) is None
    path.write_text("".join(lines[:1] + lines[2:]))
    assert run_folder.finished_metrics_problem(out, final) == ("its metrics.jsonl skips a record: generation 10 is "
                                                               "followed by 30, though its records begin 10 apart")
    path.write_text("".join(lines) + "\n")
    assert run_folder.finished_metrics_problem(out, final) == "line 5 of its metrics.jsonl is empty"


def test_the_time_finding_names_the_most_accurate_rank_not_the_fastest_or_slowest():
    """Of EGGROLL's ranks the finding names the most accurate, whatever their times, beside ES and BPTT."""
    points = {"eggroll-r1": (10.0, 80.0), "eggroll-r4": (100.0, 70.0), "eggroll-r2": (5.0, 60.0),
              "es": (200.0, 75.0), "bptt": (50.0, 90.0)}
    assert report.time_finding(points) == ("Gradient-free eggroll-r1 80.0 % in 10 s; es 75.0 % in 200 s, bptt 90.0 % "
                                           "in 50 s")


def redraw_with_its_rename_failing(path, drawn, error, monkeypatch):
    """figure_record.writing of `drawn` at `path` whose last rename, the figure's, raises `error` (the
    record's renames go through)."""
    real_replace = os.replace

    def failing_replace(source, target, *args, **kwargs):
        if os.fspath(target) == os.fspath(path):
            raise error
        return real_replace(source, target, *args, **kwargs)
    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", failing_replace)
        with pytest.raises((OSError, run_folder.UsageError)):
            with figure_record.writing(path) as temporary:
                temporary.write_bytes(drawn)


def test_a_figure_whose_rename_fails_leaves_the_old_figures_digest_out_of_the_record(tmp_path, monkeypatch):
    """A figure redrawn while a user's file holds its name, its rename failing: the record no longer
    holds the old figure's digest, so that old figure, put back by hand later, is not taken for the
    project's own and written over."""
    first, second, users = (b"\x89PNG\r\n\x1a\n" + text for text in (b"first", b"second", b"the user's"))
    path = tmp_path / "fig.png"
    with figure_record.writing(path) as temporary:
        temporary.write_bytes(first)
    old = figure_record.digest(path)
    path.write_bytes(users)
    redraw_with_its_rename_failing(path, second, PermissionError(13, "Permission denied"), monkeypatch)
    assert old not in figure_record.recorded(tmp_path, "").get("fig.png", set())
    path.write_bytes(first)
    with pytest.raises(run_folder.UsageError, match="is a file this command did not write"):
        figure_record.refuse_unrecorded(path, "the report", "move it")


def test_a_report_removing_its_stale_figures_waits_for_a_command_recording_in_that_folder(tmp_path):
    """remove_stale_figures rewrites the folder's record of figures: while another command holds the
    folder locked to record its own figure there, it waits, so that neither loses the other's line."""
    written = report.write_report(tmp_path, "quick")
    done = threading.Event()
    remover = threading.Thread(target=lambda: (report.remove_stale_figures(tmp_path, written), done.set()))
    with figure_record.record_locked(tmp_path):
        remover.start()
        assert not done.wait(0.5)  # it waits for the lock
    remover.join(timeout=30)
    assert done.is_set()


def test_figures_drawn_into_one_folder_at_once_all_keep_their_line_of_the_record(tmp_path, monkeypatch):
    """Commands drawing into one folder at the same moment (four threads here, each reading the
    record slowly) each add their figure's line: none is lost to another's rewrite of the record,
    so none of them later refuses its own figure as a file it did not write."""
    real_recorded = figure_record.recorded

    def slow_recorded(folder, instead, record=figure_record.RECORD):  # widens the gap between reading and writing
        held = real_recorded(folder, instead, record)
        time.sleep(0.05)
        return held
    monkeypatch.setattr(figure_record, "recorded", slow_recorded)
    names = [f"fig{index}.png" for index in range(4)]

    def draw(name):
        with figure_record.writing(tmp_path / name) as temporary:
            temporary.write_bytes(b"\x89PNG\r\n\x1a\n" + name.encode())
    threads = [threading.Thread(target=draw, args=(name,)) for name in names]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    held = real_recorded(tmp_path, "")
    assert {name: held.get(name) for name in names} == {
        name: {figure_record.digest(tmp_path / name)} for name in names}
    for name in names:  # a later draw of each takes it for its own
        figure_record.refuse_unrecorded(tmp_path / name, "the test", "")


def test_the_parity_verdict_waits_for_a_number_missing_from_any_seed():
    """Every seed trained, but one EGGROLL run has no real-recording score (no real.json), or one
    BPTT run no end-to-end time: that goal is not judged yet, the others are."""
    def runs(real_missing=None, time_missing=None):
        eggroll = [({"test_acc": 0.99, "real_acc": None if seed == real_missing else 0.98,
                     "end_to_end_seconds": 10.0, "device": "cpu"}, []) for seed in range(3)]
        bptt = [({"test_acc": 0.99, "end_to_end_seconds": None if seed == time_missing else 10.0, "device": "cpu"}, [])
                for seed in range(3)]
        return {"eggroll-r1": eggroll, "bptt": bptt}
    waiting = "not judged until all 3 seeds of both methods have it"
    said = report.parity_verdict(runs(real_missing=0))
    assert f"real recordings ≥ 97.50 %: {waiting}" in said and "test ≥ 98.00 %: 99.00 %, met" in said, said
    said = report.parity_verdict(runs(time_missing=1))
    assert said.endswith(f"on the same device: {waiting}.") and "98.00 %, met" in said, said
    assert report.parity_verdict(runs()).endswith("on the same device: 1.00×, met."), report.parity_verdict(runs())


def test_the_parity_time_goal_is_met_at_its_bound():
    """The goal reads "≤ 1.5× BPTT's": EGGROLL's 15 s against BPTT's 10 s is 1.50×, met."""
    runs = {"eggroll-r1": [({"test_acc": 0.99, "real_acc": 0.98, "end_to_end_seconds": 15.0, "device": "cpu"}, [])] * 3,
            "bptt": [({"test_acc": 0.99, "end_to_end_seconds": 10.0, "device": "cpu"}, [])] * 3}
    assert report.parity_verdict(runs).endswith("on the same device: 1.50×, met."), report.parity_verdict(runs)


def test_a_figure_whose_rename_fails_keeps_the_figure_it_replaces_recorded(tmp_path, monkeypatch):
    """A figure of the project's redrawn, its rename failing (a full disk, a kill): the old figure,
    still in place, keeps its digest in the record beside the new one's, so the next command takes it
    for its own, not for a user's file."""
    first, second = (b"\x89PNG\r\n\x1a\n" + text for text in (b"first", b"second"))
    path = tmp_path / "fig.png"
    with figure_record.writing(path) as temporary:
        temporary.write_bytes(first)
    old = figure_record.digest(path)
    redraw_with_its_rename_failing(path, second, OSError(28, "No space left on device"), monkeypatch)
    assert path.read_bytes() == first and old in figure_record.recorded(tmp_path, "")["fig.png"]
    figure_record.refuse_unrecorded(path, "the report", "move it")  # its own figure: no refusal


def test_a_report_names_the_temporary_files_a_killed_report_left_and_deletes_none(tmp_path, capsys):
    """A report killed while it wrote a figure, a table or the figures' record leaves <name>.<8 hex
    digits>.tmp: the next report names those (another report may be writing them now) and leaves them,
    and names no other file (a user's notes.tmp, a temporary file of another name)."""
    left = ["accuracy_time.png.0fb5fd2e.tmp", "table.md.12345678.tmp", f"{report.FIGURE_RECORD}.9abcdef0.tmp"]
    for name in [*left, "notes.tmp", "table.md.tmp", "mine.png.0fb5fd2e.tmp"]:
        (tmp_path / name).write_bytes(b"x" * 1024)
    (tmp_path / "sparsity.md.0fb5fd2e.tmp").mkdir()  # a folder, a link and a hard link under such names: not its own
    (tmp_path / "wallclock.png.0fb5fd2e.tmp").symlink_to(tmp_path / "notes.tmp")
    os.link(tmp_path / "notes.tmp", tmp_path / "protocol.png.0fb5fd2e.tmp")
    capsys.readouterr()
    report.prepare_results(tmp_path)
    assert capsys.readouterr().err == (f"note: {tmp_path} holds 3 temporary files (0.0 MiB) that a report stopped by "
                                       f"a kill left there: {', '.join(sorted(left))}; delete them once no other "
                                       f"command is writing there\n")
    assert all((tmp_path / name).exists() for name in left)
    for name in left:
        (tmp_path / name).unlink()
    report.prepare_results(tmp_path)
    assert capsys.readouterr().err == ""


def test_spread_counts_seeds_in_the_plural_from_the_largest_count():
    """The caption's count of seeds: one count as it is, two counts as a span, "seed" only where
    every run shown has one."""
    runs = {"one": [1], "three": [1, 2, 3], "two": [1, 2]}
    assert report.spread(runs, ["three"]) == "mean ± std over 3 seeds"
    assert report.spread(runs, ["one"]) == "mean ± std over 1 seed"
    assert report.spread(runs, ["one", "three"]) == "mean ± std over 1–3 seeds"
    assert report.spread(runs, ["two", "three"]) == "mean ± std over 2–3 seeds"
