"""Files the project reads that are not what they should be: a named pipe, a device, a checkpoint
declaring an array of gigabytes, JSON of a number of thousands of digits or nested thousands deep.
Each is one line naming the file, exit status 2; none hangs, none allocates what it declares."""
import errno
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import resources
import run
import run_folder
from conftest import SMALL

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def trained(tmp_path_factory, dataset):
    """A run of 5 generations, its final.json removed (so that --resume reads its checkpoint), to copy
    and damage."""
    out = tmp_path_factory.mktemp("trained") / "run"
    assert run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset]) == 0
    (out / "final.json").unlink()
    return out


def command(*args, timeout=60):
    """run.py in a fresh process, which must end (a hang is a failure): (exit status, stderr)."""
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), *args], capture_output=True, text=True,
                          timeout=timeout, cwd=ROOT, stdin=subprocess.DEVNULL)
    return done.returncode, done.stderr


def one_line(status, err, *fragments):
    assert status == 2 and err.startswith("error: ") and err.count("\n") == 1, err
    assert all(fragment in err for fragment in fragments), err


@pytest.mark.parametrize("name, commands", [("checkpoint.npz", ("resume", "evaluate")),
                                            ("config.json", ("resume", "evaluate")),
                                            ("metrics.jsonl", ("resume",))])
def test_a_named_pipe_in_a_run_folder_is_refused_not_waited_on(tmp_path, trained, dataset, name, commands):
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    (out / name).unlink()
    os.mkfifo(out / name)
    for which in commands:  # train refuses it among the run's files, evaluate where it reads it
        args = (["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, "--resume"] if which == "resume"
                else ["evaluate", str(out), *dataset])
        one_line(*command(*args), f"{out / name} is a named pipe (FIFO), not the regular file in which the run keeps "
                                  f"its {name}: move it out of {out}" if which == "resume" else
                 f"cannot read {out / name}: it is a named pipe (FIFO), not a regular file")
    assert (out / name).is_fifo()


def test_a_named_pipe_as_the_frame_cache_is_rebuilt_not_waited_on(tmp_path, dataset):
    """The cache is the project's own: a FIFO in its place is warned about and replaced."""
    cache = tmp_path / "cache"
    assert run.main(["train", "--out", str(tmp_path / "first"), "--generations", "1", *SMALL, dataset[0],
                     dataset[1], "--cache-dir", str(cache)]) == 0
    victim = sorted(cache.glob("nmnist-train-*.npz"))[0]
    victim.unlink()
    os.mkfifo(victim)
    status, err = command("train", "--out", str(tmp_path / "second"), "--generations", "1", *SMALL, dataset[0],
                          dataset[1], "--cache-dir", str(cache))
    assert status == 0 and f"frame cache {victim} is unreadable" in err and "named pipe" in err, err
    assert "move it away" not in err and err.count(f"{victim}") == 2, err  # not a fix the rebuild then undoes
    assert victim.is_file()


def test_a_folder_where_a_frame_cache_file_goes_is_one_line_before_any_decoding(tmp_path, dataset):
    """A folder cannot be replaced by the cache file: one line naming it and the fix, exit 2, no
    warning that the cache is rebuilt first; the folder left as it is."""
    cache = tmp_path / "cache"
    assert run.main(["train", "--out", str(tmp_path / "first"), "--generations", "1", *SMALL, dataset[0],
                     dataset[1], "--cache-dir", str(cache)]) == 0
    victim = sorted(cache.glob("nmnist-train-*.npz"))[0]
    victim.unlink()
    (victim / "mine").mkdir(parents=True)
    status, err = command("train", "--out", str(tmp_path / "second"), "--generations", "1", *SMALL, dataset[0],
                          dataset[1], "--cache-dir", str(cache))
    one_line(status, err, f"cannot use the frame cache {victim}: it is a folder, where a cache file goes; move it away")
    assert "rebuilding" not in err and (victim / "mine").is_dir()


def test_a_device_as_a_checkpoint_is_named_as_one(tmp_path, trained, dataset, capsys):
    """A checkpoint that is /dev/zero (copied as the device itself) is not 'empty': it is a device."""
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    (out / "checkpoint.npz").unlink()
    os.mknod(out / "checkpoint.npz", 0o600 | 0o020000, os.makedev(1, 5)) if os.geteuid() == 0 else \
        pytest.skip("making a device node needs root")
    assert run.main(["evaluate", str(out), *dataset]) == 2
    one_line(2, capsys.readouterr().err, f"cannot read {out / 'checkpoint.npz'}: it is a character device")


def test_a_checkpoint_declaring_a_huge_array_is_refused_by_name_before_it_is_allocated(tmp_path, trained,
                                                                                         dataset, capsys):
    """A 149 GiB array declared in a small archive: one line naming the file and the array, not an
    out-of-memory error that blames --population."""
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    path = out / "checkpoint.npz"
    with zipfile.ZipFile(trained / "checkpoint.npz") as original, zipfile.ZipFile(path, "w") as archive:
        for member in original.namelist():
            if member != "param/W1.npy":
                archive.writestr(member, original.read(member))
        with archive.open("param/W1.npy", "w") as member:
            header = {"descr": "<f4", "fortran_order": False, "shape": (200_000, 200_000)}
            np.lib.format.write_array_header_1_0(member, header)
    for args in (["evaluate", str(out), *dataset],
                 ["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, "--resume"]):
        assert run.main(args) == 2
        one_line(2, capsys.readouterr().err, str(path), "param/W1", "160,000,000,000 bytes")


def test_an_archive_array_of_exactly_the_limit_is_read_and_one_of_a_byte_more_refused(tmp_path):
    path, array = tmp_path / "arrays.npz", np.arange(16, dtype=np.float32)
    np.savez(path, a=array)
    assert np.array_equal(run_folder.load_npz(path, array.nbytes)["a"], array)
    with pytest.raises(run_folder.UsageError, match=f"declares an array a of float32 \\(16,\\), {array.nbytes} bytes"):
        run_folder.load_npz(path, array.nbytes - 1)


@pytest.mark.parametrize("text, problem", [('{"method": "eggroll", "seed": 1' + "0" * 5000 + "}", "digits"),
                                           ('{"method": ' + "[" * 100_000 + "]" * 100_000 + "}", "nested")])
def test_json_of_a_huge_number_or_deep_nesting_is_one_line_naming_the_file(tmp_path, trained, dataset, capsys,
                                                                          text, problem):
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    (out / "config.json").write_text(text)
    assert run.main(["evaluate", str(out), *dataset]) == 2
    one_line(2, capsys.readouterr().err, f"{out / 'config.json'} is not valid JSON", problem)


def test_open_regular_bounds_the_size_and_refuses_what_is_not_a_file(tmp_path):
    """The one way files are read: a file over its limit, a folder and a FIFO are refused with
    the path named; a file within it is read."""
    small, large = tmp_path / "small.json", tmp_path / "large.json"
    small.write_text(json.dumps({"a": 1}))
    large.write_bytes(b" " * 101)
    assert run_folder.read_json(small, "fix it", limit=100) == {"a": 1}
    with pytest.raises(run_folder.UsageError, match=f"{large}: 101 bytes, more than such a file holds"):
        run_folder.read_json(large, "fix it", limit=100)
    os.mkfifo(tmp_path / "pipe")
    for path, kind in ((tmp_path, "a folder"), (tmp_path / "pipe", "a named pipe")):
        with pytest.raises(ValueError, match=f"cannot read {path}: it is {kind}"):
            run_folder.read_bytes(path, 100, ValueError)


def test_a_broken_link_is_named_as_one_not_as_a_missing_folder(tmp_path):
    """A file that is a link to nothing is said to be one, with the fix that suits it, not "a folder
    of that path does not exist"; a file standing where a folder should be also offers another path."""
    link = tmp_path / "FINISHED.json"
    link.symlink_to(tmp_path / "gone.json")
    with pytest.raises(ValueError) as refused:
        run_folder.read_json(link, "fix it", ValueError)
    assert str(refused.value) == (f"cannot read {link}: it is a link to {tmp_path / 'gone.json'}, which does not "
                                  f"exist; replace the link with the file, or remove it")
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError) as made:
        (tmp_path / "file" / "folder").mkdir()
    assert run_folder.os_problem(made.value, "create").endswith("move that file away, or use another path")


def test_permission_denied_inside_a_closed_folder_names_that_folder(tmp_path, monkeypatch):
    """A folder the user gave, closed to them (chmod 000): the line names it, not the file inside it
    that the project looked for (NMNIST/Train under a --cache-dir, .eggroll-run under an --out)."""
    given = tmp_path / "cache"
    (given / "NMNIST").mkdir(parents=True)
    sought = given / "NMNIST" / "Train"
    access = os.access
    monkeypatch.setattr(os, "access", lambda path, mode: Path(path) != given and access(path, mode))
    denied = PermissionError(errno.EACCES, "Permission denied", str(sought))
    assert run_folder.os_problem(denied, "use") == (f"cannot use {given}: Permission denied; make it accessible "
                                                    f"to this user or use another folder")
    monkeypatch.setattr(os, "access", access)  # every folder open: the file itself is what was denied
    assert run_folder.os_problem(denied, "use").startswith(f"cannot use {sought}: Permission denied")


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="a system without /proc")
def test_a_path_in_the_kernels_file_systems_is_said_as_such_not_as_a_missing_folder(tmp_path):
    """/proc and /sys hold no files of the user's, whatever folders or permissions: making a folder
    there fails with ENOENT or EPERM, whose usual advice (create the folder above; lift chattr -i)
    would mislead. A link into /proc is followed."""
    (tmp_path / "link").symlink_to("/proc")
    for path in (Path("/proc/eggroll-run"), tmp_path / "link" / "eggroll-run"):
        with pytest.raises(OSError) as made:
            path.mkdir()
        assert run_folder.os_problem(made.value, "create the folder") == (
            f"cannot create the folder {path}: {made.value.strerror}; /proc is the kernel's own view of the system, "
            f"where no files of yours can be made: use another path")
    assert resources.unwritable(Path("/proc/self"), itself=False) == (
        "the folder /proc/self: /proc is the kernel's own view of the system, where no files of yours can be made: "
        "use another path")
    assert run_folder.kernel_fix(tmp_path) is None and run_folder.kernel_fix("/system") is None


def test_finite_weights_too_large_for_the_network_are_one_line_not_warnings(tmp_path, trained, dataset, capsys):
    """A checkpoint whose weights are finite but near float32's largest: `evaluate` overflowed the
    membrane potentials into NaN with only RuntimeWarnings, and printed scores; now one line, before
    the data is read (a finished run's is told to restore it: test_run_folder.py)."""
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    with np.load(out / "checkpoint.npz") as stored:
        arrays = {name: stored[name] for name in stored.files}
    arrays["param/W1"] = np.full_like(arrays["param/W1"], 3e38)
    np.savez(out / "checkpoint.npz", **arrays)
    assert run.main(["evaluate", str(out), *dataset]) == 2
    captured = capsys.readouterr()
    one_line(2, captured.err, f"checkpoint {out / 'checkpoint.npz'} holds weights too large for the network (layer "
                              f"1's membrane potentials could pass float32's range)",
             "train the run again with --force (it deletes this run's files) or in another --out")
    assert captured.out == ""


def test_a_finished_runs_damaged_checkpoint_is_advised_what_trains_it_again(tmp_path, trained, dataset, capsys):
    """A damaged checkpoint, of a finished run (`evaluate`) or an unfinished one (`--resume`): deleting
    it would train nothing (a run that has trained is not resumed without its checkpoint), so the
    advice is --force, which does train it again."""
    out = tmp_path / "run"
    shutil.copytree(trained, out)
    (out / "checkpoint.npz").write_bytes(b"not an archive")
    (out / "final.json").write_text("{}")
    assert run.main(["evaluate", str(out), *dataset]) == 2
    assert capsys.readouterr().err.endswith("is damaged (it is not a checkpoint.npz archive); train the run again "
                                            "with --force (it deletes this run's files) or in another --out\n")
    (out / "final.json").unlink()
    assert run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, "--resume"]) == 2
    assert capsys.readouterr().err.endswith("is damaged (it is not a checkpoint.npz archive); train the run again "
                                            "with --force (it deletes this run's files) or in another --out\n")
    (out / "checkpoint.npz").unlink()
    assert run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, "--resume"]) == 2
    assert "--force" in capsys.readouterr().err
    assert run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset, "--force"]) == 0
