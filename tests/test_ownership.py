"""A run folder is known by the mark the project writes into it first, and the project deletes or
replaces only its own files: a folder that is not one of its runs is refused by name (with
--force too) and left as it was, without a .lock; --force on a run removes only the run's files;
a failed fresh run removes only what it wrote."""
import json
from pathlib import Path

import pytest

import run
import run_folder
from test_links import train

ROOT = Path(__file__).resolve().parents[1]


def snapshot(folder):
    """Every file and folder below `folder` (hidden ones too) with its bytes."""
    return {path.relative_to(folder): None if path.is_dir() else path.read_bytes() for path in folder.rglob("*")}


def users_folder(tmp_path, files):
    folder = tmp_path / "users"
    folder.mkdir()
    for name, text in files.items():
        (folder / name).write_text(text)
    return folder


THEIRS = {"config.json": '{"theme": "dark"}', "real.json": '{"mine": true}', "metrics.jsonl": '{"visits": 3}\n'}


@pytest.mark.parametrize("files, args, named", [
    (THEIRS, ["--force"], "config.json"),                                  # a user's settings, --force
    (THEIRS, [], "config.json"),
    ({"metrics.jsonl": '{"a": 1}\n', "real.json": "{}"}, [], "metrics.jsonl"),
    ({"metrics.jsonl": '{"generation": 1}\n'}, [], "metrics.jsonl"),      # one line: was overwritten, rc 0
    ({"metrics.jsonl": "{}\n"}, ["--resume"], "metrics.jsonl"),
    ({"index.html": "<html>", "app.js": ""}, ["--force"], "app.js")])  # --force where nothing is the project's
def test_a_folder_that_is_not_a_run_is_refused_by_name_and_left_as_it_was(tmp_path, dataset, capsys, files,
                                                                           args, named):
    folder = users_folder(tmp_path, files)
    before = snapshot(folder)
    assert train(folder, dataset, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{folder} is not a run folder of this project" in err, err
    if named in THEIRS or named == "metrics.jsonl":  # a run's name: it may be a run that lost its mark
        assert f"holds {named}" in err and err.endswith("use another --out; or, if it is a run of this project that "
                                                        "lost its .eggroll-run, put a file of that name back in it "
                                                        "(any text)\n"), err
    else:
        assert f"holds {named}, which the project did not write" in err and "use another --out" in err, err
    assert snapshot(folder) == before  # no file changed, none deleted, no .lock left


def test_the_parent_of_a_folder_holding_a_config_json_is_refused(tmp_path, dataset, capsys, monkeypatch):
    """`--out ..` from a subfolder of a web app whose config.json is the app's own."""
    app = users_folder(tmp_path, {"config.json": '{"port": 80}'})
    (app / "static").mkdir()
    monkeypatch.chdir(app / "static")
    before = snapshot(app)
    assert train(Path(".."), dataset) == 2 and train(Path(".."), dataset, "--force") == 2
    assert "is not a run folder of this project" in capsys.readouterr().err
    assert snapshot(app) == before


def test_force_on_a_run_removes_only_the_runs_files(tmp_path, dataset, capsys):
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    assert (out / run_folder.RUN_MARK).read_text() == run_folder.MARK_TEXT
    (out / "notes.txt").write_text("my notes")
    (out / "config.json.tmp").write_text("my draft")  # not the <name>.<8 hex>.tmp of the project's writes
    (out / "metrics.jsonl.0123abcd.tmp").write_text("{}")  # a write the project left half done: its own
    (out / "final.json.0123abcd.tmp.keep").write_text("my copy")  # begins like one, is not one
    (out / "plots").mkdir()
    (out / "real.json").write_text("{}")
    before = json.loads((out / "final.json").read_text())
    assert train(out, dataset, "--force", "--seed", "2") == 0
    assert (out / "notes.txt").read_text() == "my notes" and (out / "plots").is_dir()
    assert (out / "config.json.tmp").read_text() == "my draft" and not (out / "metrics.jsonl.0123abcd.tmp").exists()
    assert (out / "final.json.0123abcd.tmp.keep").read_text() == "my copy"
    assert not (out / "real.json").exists()  # the project's name in its own run folder: its file
    assert json.loads((out / "final.json").read_text())["config"]["seed"] == 2 != before["config"]["seed"]


def test_a_failed_fresh_run_removes_only_what_it_wrote(tmp_path, dataset, capsys, monkeypatch):
    """A fresh run into a folder of the user's other files fails before its first checkpoint: the
    mark, config.json, metrics and .lock it wrote go, the user's files stay; in a new folder, the
    folder goes too, and so do the parents it made. A fresh run in a run folder keeps the folder's mark."""
    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(run_folder.numpy, "savez", fail)
    folder = users_folder(tmp_path, {"notes.txt": "mine", "data.csv": "1,2"})
    before = snapshot(folder)
    assert train(folder, dataset) == 2
    assert snapshot(folder) == before
    assert train(tmp_path / "new", dataset) == 2 and not (tmp_path / "new").exists()
    assert train(tmp_path / "made" / "by" / "the run", dataset) == 2 and not (tmp_path / "made").exists()
    capsys.readouterr()
    monkeypatch.undo()
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    monkeypatch.setattr(run_folder.numpy, "savez", fail)
    assert train(out, dataset, "--force") == 2
    assert sorted(path.name for path in out.iterdir()) == [".eggroll-run", ".lock"]


def test_a_copy_of_a_finished_run_without_its_mark_is_not_a_finished_run(tmp_path, dataset, capsys):
    """reproduce counts a run as finished only in a marked folder; training into an unmarked one
    with a config.json is refused."""
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    config = run_folder.read_config(out)
    assert run_folder.is_finished(out, config)
    (out / run_folder.RUN_MARK).unlink()
    assert not run_folder.is_finished(out, config)
    assert train(out, dataset, "--resume") == 2
    err = capsys.readouterr().err
    assert "is not a run folder of this project" in err and "use another --out" in err
    assert "touch" not in err and "--force" not in err  # no forged mark, nothing deleted


def test_a_mark_that_is_a_folder_is_named_as_such(tmp_path, dataset, capsys):
    """A run whose .eggroll-run is a folder is not told it has no mark, nor that the project did not
    write its files: the line names the folder, and nothing changes."""
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    (out / run_folder.RUN_MARK).unlink()
    (out / run_folder.RUN_MARK).mkdir()
    before = snapshot(out)
    assert train(out, dataset, "--resume") == 2
    err = capsys.readouterr().err
    assert err == (f"error: {out / run_folder.RUN_MARK} is a folder, not the file that marks a run folder of this "
                   f"project: if {out} holds a run of this project, put a file of that name in its place (any text); "
                   f"else use another --out\n"), err
    assert run.main(["evaluate", str(out), *dataset]) == 2  # evaluate says the same, not "it has no .eggroll-run"
    err = capsys.readouterr().err
    assert err.startswith(f"error: {out / run_folder.RUN_MARK} is a folder, not the file that marks") and \
        err.endswith("else give evaluate the --out folder of a training run\n"), err
    assert snapshot(out) == before


def test_every_committed_run_folder_is_marked():
    """The run folders under results/ carry the mark (added to them, no number changed)."""
    folders = {path.parent for path in (ROOT / "results").rglob("config.json")}
    assert len(folders) > 100
    assert all(run_folder.is_run_folder(folder) for folder in folders), \
        sorted(folder for folder in folders if not run_folder.is_run_folder(folder))[:3]


def test_reproduce_refuses_a_run_folder_that_is_not_its_own(tmp_path, dataset, capsys):
    """A preset's run folder holding a config.json the project did not write: reproduce says so, and
    that the folder is to be moved away (not deleted), and leaves it as it was."""
    folder = tmp_path / "results" / "quick" / "runs" / "es-seed1"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text('{"theme": "dark"}')
    before = snapshot(folder)
    assert run.main(["reproduce", "--config", "quick", "--runs", "es", "--seeds", "1", "--results",
                     str(tmp_path / "results"), "--quiet", *dataset]) == 2
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith(f"error: {folder} is not a run folder of this project") and f"; move {folder} away" in err
    assert snapshot(folder) == before
