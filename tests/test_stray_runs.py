"""`reproduce --report-only` reads a run only if its folder's name, its config.json and its
final.json say the same run of the preset: a backup, a copy under another seed's name or a run
trained with other settings is named in one warning line and left out of every table."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TABLES = ("table.md", "per_seed.md", "sparsity.md")


@pytest.fixture(scope="module")
def reported(tmp_path_factory):
    """The committed runs of the paper preset and the report written from them, made once."""
    results = tmp_path_factory.mktemp("reported") / "results"
    shutil.copytree(ROOT / "results" / "paper" / "runs", results / "paper" / "runs")
    assert report_only(results)[0] == 0
    return results


@pytest.fixture
def paper(reported, tmp_path):
    """A copy of the committed results of the paper preset, and its report as written from them."""
    results = tmp_path / "results"
    shutil.copytree(reported, results, symlinks=True)
    return results, {name: (results / "paper" / name).read_text() for name in TABLES}


def report_only(results):
    """`run.py reproduce --config paper --report-only` on `results`: its exit status and warning lines."""
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "reproduce", "--config", "paper", "--report-only",
                           "--results", str(results), "--quiet"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    return done.returncode, [line for line in done.stderr.splitlines() if line.startswith("warning: ")]


def tables(results):
    return {name: (results / "paper" / name).read_text() for name in TABLES}


def test_a_backup_of_a_run_is_left_out(paper):
    results, before = paper
    runs = results / "paper" / "runs"
    shutil.copytree(runs / "eggroll-r4-seed1", runs / "eggroll-r4-seed1.bak")
    status, warnings = report_only(results)
    assert status == 0 and warnings == [f"warning: {runs / 'eggroll-r4-seed1.bak'} is left out of the report: its name "
                                        f"is that of no run of this preset (a copy or a backup?); move it out of the "
                                        f"runs folder"]
    assert tables(results) == before


def test_a_run_under_another_seeds_name_is_left_out_not_moved_into_that_seeds_column(paper):
    results, before = paper
    runs = results / "paper" / "runs"
    shutil.rmtree(runs / "eggroll-r4-seed2")
    shutil.copytree(runs / "eggroll-r4-seed1", runs / "eggroll-r4-seed2")
    status, warnings = report_only(results)
    assert status == 0 and len(warnings) == 1, warnings
    assert f"{runs / 'eggroll-r4-seed2'} is left out of the report: its config.json says other settings" in warnings[0]
    assert "seed 1, not 2" in warnings[0]
    row = [line for line in tables(results)["per_seed.md"].splitlines() if line.startswith("| eggroll-r4 |")]
    assert row[0].split(" | ")[2] == "–" and row != [line for line in before["per_seed.md"].splitlines()
                                                     if line.startswith("| eggroll-r4 |")]


def test_a_run_trained_with_other_settings_is_left_out(paper):
    """As `train --force` with its defaults into a preset's folder leaves it: config.json and
    final.json agree with each other, not with the preset; or final.json alone says another seed."""
    results, before = paper
    runs = results / "paper" / "runs"
    for name in ("config.json", "final.json"):
        path = runs / "es-seed3" / name
        stored = json.loads(path.read_text())
        (stored["config"] if name == "final.json" else stored)["generations"] = 5
        path.write_text(json.dumps(stored))
    path = runs / "bptt-seed1" / "final.json"
    path.write_text(json.dumps(dict(json.loads(path.read_text()), config=dict(
        json.loads(path.read_text())["config"], seed=2))))
    status, warnings = report_only(results)
    assert status == 0 and len(warnings) == 2, warnings
    assert "bptt-seed1 is left out of the report: its final.json says other settings" in warnings[0]
    assert "es-seed3 is left out of the report: its config.json says other settings" in warnings[1]
    assert "generations 5, not 100" in warnings[1]
    assert tables(results)["table.md"] != before["table.md"]


def test_a_setting_the_preset_leaves_at_its_default_is_named_so(paper):
    """A lever at its default is not stored: the warning names the default's value, not null."""
    results, _ = paper
    path = results / "paper" / "runs" / "es-seed3" / "config.json"
    path.write_text(json.dumps(dict(json.loads(path.read_text()), hidden="128,64")))
    status, warnings = report_only(results)
    assert status == 0 and len(warnings) == 1 and 'hidden "128,64", not "64"' in warnings[0], warnings


def test_a_run_with_final_json_but_no_config_json_is_left_out_not_the_report_aborted(paper):
    results, before = paper
    runs = results / "paper" / "runs"
    (runs / "eggroll-r4-seed1" / "config.json").unlink()
    status, warnings = report_only(results)
    assert status == 0 and warnings == [f"warning: {runs / 'eggroll-r4-seed1'} is left out of the report: it has no "
                                        f"config.json, which says what its run trained; restore it from a copy of the "
                                        f"run, or train the run again"]
    assert tables(results) != before and "eggroll-r4" in tables(results)["table.md"]


def test_a_run_without_the_projects_mark_or_with_a_link_in_its_place_is_left_out(paper):
    """The mark (.eggroll-run, a regular file) is what makes a folder one of the project's runs: a
    copy of a run without it, or with a link to a mark in its place, is left out of every table."""
    results, before = paper
    runs = results / "paper" / "runs"
    (runs / "eggroll-r4-seed1" / ".eggroll-run").unlink()
    mark = runs / "es-seed3" / ".eggroll-run"
    mark.rename(results / "mark")
    mark.symlink_to(results / "mark")
    status, warnings = report_only(results)
    assert status == 0 and warnings == [f"warning: {runs / name} is left out of the report: it is not a run folder "
                                        f"of this project (no .eggroll-run); if it is a run of this project that lost "
                                        f"it, put a file of that name back in it (any text)"
                                        for name in ("eggroll-r4-seed1", "es-seed3")], warnings
    rows = {name: [line for line in tables(results)["per_seed.md"].splitlines() if line.startswith(f"| {name} |")]
            for name in ("eggroll-r4", "es")}
    assert rows["eggroll-r4"][0].split(" | ")[1] == "–" and rows["es"][0].split(" | ")[3] == "– |", rows


def test_a_report_of_no_run_left_is_refused_and_the_last_report_kept(paper):
    """Two runs swapped between their folders, every other run moved out: each is left out, and no
    report of no run replaces the last one's tables and figures; one line says so, exit status 2."""
    results, _ = paper
    runs = results / "paper" / "runs"
    report_files = {path.name: path.read_bytes() for path in (results / "paper").iterdir()
                    if path.is_file() and path.name != ".lock"}
    for run in runs.iterdir():
        if run.name not in ("bptt-seed1", "es-seed1"):
            shutil.rmtree(run)
    os.rename(runs / "bptt-seed1", runs / "swap")
    os.rename(runs / "es-seed1", runs / "bptt-seed1")
    os.rename(runs / "swap", runs / "es-seed1")
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "reproduce", "--config", "paper", "--report-only",
                           "--results", str(results), "--quiet"], capture_output=True, text=True, timeout=300,
                          env={**os.environ, "MPLBACKEND": "Agg"})
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and len(lines) == 3 and all(line.startswith("warning: ") for line in lines[:2])
    assert lines[2] == (f"error: every finished run in {runs} is left out (above), so no report is written and the "
                        f"last one's tables and figures are left as they are: put each run back under its own folder "
                        f"name, or move it out of {runs}"), lines
    assert {path.name: path.read_bytes() for path in (results / "paper").iterdir()
            if path.is_file() and path.name != ".lock"} == report_files
