"""Nothing is written through a link, nothing outside the folder given: links planted in a run
folder or a results folder, under the names of its files or of their temporary files, are refused
by name or left alone, and the files they point at stay as they were. The folder given may itself
be a link."""
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

import config
import resources
import run
import run_folder
from conftest import SMALL
from nmnist_files import write_dataset



def train(out, dataset, *extra):
    return run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, *extra])


def outside_files(tmp_path, names):
    """A folder of files outside the run folder, one per name, each holding its own text."""
    outside = tmp_path / "outside"
    outside.mkdir()
    for name in names:
        (outside / name).write_text(f"the user's {name}")
    return outside


def unchanged(outside):
    return all(path.read_text() == f"the user's {path.name}" for path in outside.iterdir())


def test_links_planted_as_temporary_files_are_never_written_through(tmp_path, dataset, capsys):
    """Links named as the temporary files of checkpoint.npz, metrics.jsonl and config.json once were
    (<name>.tmp), or as they are now but for their random part: a fresh run writes none of them."""
    names = ["checkpoint.npz.tmp", "metrics.jsonl.tmp", "config.json.tmp", "final.json.0123abcd.tmp"]
    outside = outside_files(tmp_path, names)
    out = tmp_path / "run"
    out.mkdir()
    for name in names:
        (out / name).symlink_to(outside / name)
    train(out, dataset)
    capsys.readouterr()
    assert unchanged(outside) and len(list(outside.iterdir())) == len(names)


@pytest.mark.parametrize("name, args", [("metrics.jsonl", ["--resume"]), ("final.json", ["--force"]),
                                        ("config.json", ["--resume"]), ("checkpoint.npz", ["--resume"]),
                                        ("real.json", ["--force"])])
def test_a_file_of_a_run_folder_that_is_a_link_is_refused_by_name(tmp_path, dataset, capsys, name, args):
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    outside = outside_files(tmp_path, [name])
    (out / name).unlink(missing_ok=True)
    (out / name).symlink_to(outside / name)
    assert train(out, dataset, *args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out / name} is a symbolic link (to {outside / name})" in err, err
    assert unchanged(outside) and (out / name).is_symlink() and not (out / ".lock").is_symlink()


def test_a_dangling_checkpoint_link_is_refused_not_taken_for_a_fresh_start(tmp_path, dataset, capsys):
    """--resume with checkpoint.npz a link to a file that does not exist: refused by name, and no
    file is created where the link points (it once trained from step 0 and wrote 1.8 MB there)."""
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    (out / "final.json").unlink()
    (out / "checkpoint.npz").unlink()
    (out / "checkpoint.npz").symlink_to(tmp_path / "elsewhere.npz")
    assert train(out, dataset, "--resume") == 2
    assert f"{out / 'checkpoint.npz'} is a symbolic link (to {tmp_path / 'elsewhere.npz'}), and the project reads " \
           f"and writes its own files only, never through a link: it leads to no file (it does not exist, or the " \
           f"links loop): remove it" in capsys.readouterr().err
    assert not (tmp_path / "elsewhere.npz").exists()


def test_a_checkpoint_link_to_a_device_is_not_to_be_copied(tmp_path, dataset, capsys):
    """checkpoint.npz a link to /dev/zero: the line says remove it, not copy what it names (a copy
    of /dev/zero fills the disk)."""
    out = tmp_path / "run"
    assert train(out, dataset) == 0
    (out / "checkpoint.npz").unlink()
    (out / "checkpoint.npz").symlink_to("/dev/zero")
    assert train(out, dataset, "--resume") == 2
    err = capsys.readouterr().err
    assert err.endswith("never through a link: it leads to something that is not a file (a folder, a device): "
                        "remove it\n") and "copy" not in err, err


@pytest.mark.parametrize("target", ["absent", "out"])
def test_an_out_that_is_a_link_to_no_folder_is_named_so(tmp_path, dataset, capsys, target):
    """--out a link that leads nowhere, or to itself: one line that says so, and nothing is made."""
    out = tmp_path / "out"
    out.symlink_to(tmp_path / target)
    assert train(out, dataset) == 2
    assert capsys.readouterr().err == f"error: --out {out} is a symbolic link to {tmp_path / target}, which leads to " \
                                      f"no folder (it does not exist, or the links loop): give a folder, or make the " \
                                      f"one it names\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]
    assert train(out / "run", dataset) == 2  # a folder below it
    assert capsys.readouterr().err == f"error: --out {out / 'run'}: {out} is a symbolic link to {tmp_path / target}, " \
                                      f"which leads to no folder (it does not exist, or the links loop): make the " \
                                      f"folder it names, or give another path\n"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out"]


@pytest.mark.parametrize("target, what", [("root", "a loop of links"), ("absent", "a link to {}, which does not exist"),
                                          (None, "a named pipe (FIFO), not a folder")])
@pytest.mark.parametrize("download", [[], ["--download"]])
def test_a_data_root_that_is_a_link_to_no_folder_is_named_so(tmp_path, capsys, target, what, download):
    """--data-root a link to itself or to nothing, or a named pipe: one line that names it for what it
    is (not N-MNIST merely missing, nor a --download to try), and nothing is made, with --download too."""
    root = tmp_path / "root"
    root.symlink_to(tmp_path / target) if target else os.mkfifo(root)
    named = what.format(tmp_path / target) if target else what
    assert run.main(["train", "--out", str(tmp_path / "run"), "--data-root", str(root), "--cache-dir",
                     str(tmp_path / "cache"), *SMALL, *download]) == 2
    assert capsys.readouterr().err == (f"error: N-MNIST not found in {root}: it is {named}; "
                                       f"point --data-root at a copy\n")
    assert sorted(path.name for path in tmp_path.iterdir()) == ["root"]
    assert os.readlink(root) == str(tmp_path / target) if target else stat.S_ISFIFO(os.lstat(root).st_mode)
    with pytest.raises(run_folder.UsageError) as refused:  # what evaluate, reproduce and bench check a copy with
        resources.nmnist_recordings(root, "--real-root")
    assert str(refused.value) == f"--real-root {root} is {named}, so it holds no N-MNIST; " \
                                 f"point --real-root at a copy"


def test_a_linked_lock_is_refused_in_a_run_folder_and_a_results_folder(tmp_path, dataset, capsys, monkeypatch):
    outside = outside_files(tmp_path, ["lock-target"])
    out = tmp_path / "run"
    out.mkdir()
    (out / ".lock").symlink_to(outside / "lock-target")
    assert train(out, dataset) == 2
    assert f"{out / '.lock'} is a symbolic link" in capsys.readouterr().err
    results = tmp_path / "results"
    paper = results / "paper"
    shutil.copytree(Path(config.__file__).parent / "results" / "paper", paper)
    (paper / ".lock").unlink(missing_ok=True)
    (paper / ".lock").symlink_to(outside / "lock-target")
    assert run.main(["reproduce", "--config", "paper", "--report-only", "--results", str(results), "--quiet"]) == 2
    assert f"{paper / '.lock'} is a symbolic link" in capsys.readouterr().err
    assert unchanged(outside)


def test_a_lock_that_is_a_hard_link_or_a_foreign_file_is_refused_and_left_as_it_was(tmp_path, dataset, capsys):
    """O_NOFOLLOW stops symbolic links, not hard links: a .lock that is a second name of a user's file,
    or a file of someone else's under that name, is refused, never truncated into a PID; in a fresh run
    folder, a resumed one, and a results folder."""
    outside = outside_files(tmp_path, ["lock-target", "notes"])
    fresh, resumed = tmp_path / "fresh", tmp_path / "resumed"
    fresh.mkdir()
    os.link(outside / "lock-target", fresh / ".lock")
    assert train(fresh, dataset) == 2
    assert f"{fresh / '.lock'} as the folder's lock: it is a hard link" in capsys.readouterr().err
    assert train(resumed, dataset) == 0
    shutil.copy(outside / "notes", resumed / ".lock")
    assert train(resumed, dataset, "--resume") == 2
    assert "holds something other than a process ID" in capsys.readouterr().err
    assert (resumed / ".lock").read_text() == "the user's notes"
    results = tmp_path / "results"
    shutil.copytree(Path(config.__file__).parent / "results" / "paper", results / "paper")
    (results / "paper" / ".lock").unlink(missing_ok=True)
    os.link(outside / "lock-target", results / "paper" / ".lock")
    assert run.main(["reproduce", "--config", "paper", "--report-only", "--results", str(results), "--quiet"]) == 2
    assert "it is a hard link" in capsys.readouterr().err
    assert unchanged(outside)


def test_a_linked_run_mark_is_refused_and_leaves_no_lock(tmp_path, dataset, capsys):
    outside = outside_files(tmp_path, [run_folder.RUN_MARK])
    out = tmp_path / "run"
    out.mkdir()
    (out / run_folder.RUN_MARK).symlink_to(outside / run_folder.RUN_MARK)
    assert train(out, dataset) == 2
    assert "is a symbolic link" in capsys.readouterr().err
    assert sorted(path.name for path in out.iterdir()) == [run_folder.RUN_MARK] and unchanged(outside)
    assert not run_folder.is_run_folder(out)


def test_the_folder_given_may_itself_be_a_link(tmp_path, dataset, capsys):
    real = tmp_path / "real-folder"
    real.mkdir()
    (tmp_path / "link").symlink_to(real)
    assert train(tmp_path / "link", dataset) == 0
    assert (real / "final.json").is_file() and train(tmp_path / "link", dataset, "--force") == 0


def test_bench_json_that_is_a_link_is_refused_before_the_benchmark(tmp_path):
    """`bench --json LINK` is refused when its paths are checked, before any timing, not after it."""
    outside = outside_files(tmp_path, ["bench.json"])
    (tmp_path / "link.json").symlink_to(outside / "bench.json")
    with pytest.raises(run_folder.UsageError, match=f"--json {tmp_path / 'link.json'} is a symbolic link"):
        resources.check_writable(tmp_path / "link.json", "--json")
    assert unchanged(outside)


def test_the_lessons_figure_that_is_a_link_is_refused(tmp_path):
    """lesson.py writes no figure through a link planted under its name: one line, exit status 2,
    before any claim runs, the file it points at unchanged."""
    outside = outside_files(tmp_path, ["figure.png"])
    out = tmp_path / "figures"
    out.mkdir()
    (out / "1_lowrank_scale.png").symlink_to(outside / "figure.png")
    done = subprocess.run([sys.executable, str(Path(run.__file__).parent / "lesson.py"), "--claims", "1", "--out",
                           str(out)], capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "MPLBACKEND": "Agg", "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and done.stdout == "", done.stderr
    assert f"cannot write {out / '1_lowrank_scale.png'}: it is a symbolic link" in done.stderr
    assert unchanged(outside) and (out / "1_lowrank_scale.png").is_symlink()


def test_a_linked_table_or_figure_is_refused_before_the_report_writes_anything(tmp_path, capsys):
    """A results folder whose accuracy_time.png is a link: refused in one line, and no other table or
    figure there was rewritten first."""
    outside = outside_files(tmp_path, ["figure.png"])
    paper = tmp_path / "results" / "paper"
    shutil.copytree(Path(config.__file__).parent / "results" / "paper", paper)
    (paper / ".lock").unlink(missing_ok=True)
    (paper / "accuracy_time.png").unlink()
    (paper / "accuracy_time.png").symlink_to(outside / "figure.png")
    before = {path.name: path.stat().st_mtime_ns for path in paper.iterdir() if path.suffix in (".md", ".png")}
    assert run.main(["reproduce", "--config", "paper", "--report-only", "--results", str(tmp_path / "results"),
                     "--quiet"]) == 2
    assert f"{paper / 'accuracy_time.png'} is a symbolic link" in capsys.readouterr().err
    assert before == {path.name: path.stat().st_mtime_ns for path in paper.iterdir() if path.suffix in (".md", ".png")}
    assert unchanged(outside)


@pytest.mark.parametrize("required", [True, False])
@pytest.mark.parametrize("lost", ["Test", "Train"])
def test_a_copy_that_lost_a_split_is_refused_whether_or_not_a_download_could_follow(tmp_path, required, lost):
    """A copy of N-MNIST without one of its split folders: no download adds the split, so the copy is
    refused naming that folder even where a missing copy would be downloaded (train's check, not
    required), not taken for no copy at all."""
    root = write_dataset(tmp_path / "NMNIST", n_train=1, n_test=1).parent
    shutil.rmtree(root / "NMNIST" / lost)
    with pytest.raises(run_folder.UsageError) as refused:
        resources.nmnist_recordings(root, "--data-root", required=required)
    assert str(refused.value).startswith(f"--data-root {root}: the split folder {root / 'NMNIST' / lost} is missing")
    assert resources.nmnist_recordings(tmp_path / "absent", "--data-root", required=False) is None
