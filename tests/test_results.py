"""Every committed results table is what report.py writes from the run records committed beside it
(config.json, final.json, metrics.jsonl, real.json): each is written again, into a temporary folder,
and must be the same text. The tables still without records are listed, and checked to lack them."""
import shutil
from functools import partial
from pathlib import Path

import matplotlib.figure
import pytest

import report
from examples_import import example
from test_report import keep_figure

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "results"
# The tables committed before their runs were kept; each must be retrained (on the CPU) and its run
# records committed, when it leaves this list.
WITHOUT_RECORDS = set()


def writer(folder):
    """report.py's writer of the tables in results/<folder>."""
    parts = folder.relative_to(RESULTS).parts
    if parts[0] == "hyperscale":
        return partial(report.write_hyperscale_report, part=parts[1])
    if parts[0] == "spike-cost":
        return report.write_spike_cost_report
    if parts[0] == "screen":
        return report.write_screen_report
    if parts[0] == "depth":  # written by examples/snn_depth.py
        return example("snn_depth").write_table
    if parts[0] == "versus":  # written by examples/versus_libraries.py
        return example("versus_libraries").write_table
    return partial(report.write_report, preset=parts[0])


def committed_tables():
    """The folders under results/ holding a committed table.md, as paths relative to results/."""
    return sorted(str(path.parent.relative_to(RESULTS)) for path in RESULTS.glob("**/table.md")
                  if "local" not in path.relative_to(RESULTS).parts)


def test_the_tables_without_records_are_those_listed():
    without = {folder for folder in committed_tables() if not (RESULTS / folder / "runs").is_dir()}
    assert without == WITHOUT_RECORDS


@pytest.mark.parametrize("folder", [f for f in committed_tables() if f not in WITHOUT_RECORDS])
def test_each_table_is_written_again_from_its_run_records(folder, tmp_path, monkeypatch):
    monkeypatch.setattr(matplotlib.figure.Figure, "savefig", keep_figure({}))  # the figures are not compared
    source = RESULTS / folder
    copy = tmp_path / folder
    shutil.copytree(source / "runs", copy / "runs", ignore=shutil.ignore_patterns("checkpoint.npz", "*.tmp", ".lock"))
    written = [path for path in writer(source)(copy) if path.suffix == ".md"]
    assert written
    for path in written:
        assert path.read_text() == (source / path.name).read_text(), f"results/{folder}/{path.name}"
