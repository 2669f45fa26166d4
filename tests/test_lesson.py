"""lesson.py runs anywhere: from a copy of the repository with nothing beside it and no settings it
checks its five claims on the recordings of nmnist-sample/, prints one line of numbers for each and
writes one figure for each and the markdown page. A user's error is one line on stderr, exit
status 2, and nothing written."""
import ast
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import types
from pathlib import Path

import numpy as np
import pytest

from nmnist_files import write_dataset
from processes import stopped

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ["1_lowrank_scale.png", "2_forward_trick.png", "3_gradient_estimate.png", "4_memory_time.png",
           "5_training.png"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
RECORD = ".figures.sha256"  # the sha256 of each figure the lesson drew, beside them (figure_record.py)
SETTINGS = ("NMNIST_ROOT", "EGGROLL_TEST_NMNIST", "EGGROLL_CACHE", "PYTHONPATH")  # none of them is needed


def run_lesson(*options, cwd, cache, lesson=ROOT / "lesson.py", prefix=(), env=None, timeout=120):
    """The lesson in a fresh process, in `cwd`, as a user with none of the project's settings: its
    frame cache under `cache` (the default place, ~/.cache, moved by XDG_CACHE_HOME)."""
    clean = {key: value for key, value in os.environ.items() if key not in SETTINGS}
    clean.update(XDG_CACHE_HOME=str(cache), MPLCONFIGDIR=matplotlib_config())  # matplotlib's font list: made
    return subprocess.run([*prefix, sys.executable, str(lesson), *options], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, env={**clean, **(env or {})})


def one_line_error(result, *fragments):
    """Exit status 2, no traceback, and one line on stderr holding every fragment."""
    assert result.returncode == 2, result.stderr[-3000:]
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert all(fragment in result.stderr for fragment in fragments), result.stderr


def test_the_lesson_runs_from_a_clone_with_nothing_beside_it(tmp_path):
    """The tracked files copied alone, run from another folder with no settings and no option but
    --page: exit status 0 (every claim's asserts held), one line per claim (the fifth on the
    committed sample), each figure a PNG in ./lesson and nothing else there, and a page with the
    lesson's text, every printed line and links to every figure that resolve."""
    clone, elsewhere = tmp_path / "clone", tmp_path / "elsewhere"
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    for name in tracked.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (clone / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, clone / name)
    elsewhere.mkdir()
    result = run_lesson("--page", "page/lesson.md", cwd=elsewhere, cache=tmp_path / "cache",
                        lesson=clone / "lesson.py", timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Traceback" not in result.stderr, result.stderr
    claims = [line for line in result.stdout.splitlines() if line.startswith("claim ")]
    assert [line.split(":")[0] for line in claims] == [f"claim {k}" for k in range(1, 6)], result.stdout
    assert "recordings of nmnist-sample;" in claims[4], claims[4]
    assert (clone / "__pycache__").is_dir() or os.environ.get("PYTHONDONTWRITEBYTECODE")  # the clone's modules ran
    assert sorted(path.name for path in (elsewhere / "lesson").iterdir()) == [RECORD, *FIGURES]
    for name in FIGURES:
        content = (elsewhere / "lesson" / name).read_bytes()
        assert content.startswith(PNG_SIGNATURE) and len(content) > 10_000, name
    assert (elsewhere / "lesson" / RECORD).read_text() == "".join(
        f"{sha256(elsewhere / 'lesson' / name)}  {name}\n" for name in FIGURES)
    page = (elsewhere / "page" / "lesson.md").read_text(encoding="utf-8")
    assert page.startswith("# EGGROLL in five claims\n") and "\n# %%" not in page
    assert page.count("\n## ") == 6  # five claims and what to read next
    for line in claims:
        assert line.split(";")[0] in page, line
    # claim 4's noise memory is arithmetic, the same on every machine: as the committed page quotes it
    assert claims[3].split(";")[0] in (ROOT / "docs" / "lesson.md").read_text(encoding="utf-8"), claims[3]
    figures = re.findall(r"!\[Claim \d\]\(([^)]+)\)", page)
    assert [Path(link).name for link in figures] == FIGURES
    assert all((elsewhere / "page" / link).resolve().is_file() for link in figures)
    assert not (tmp_path / "shared").exists() and sorted(p.name for p in tmp_path.iterdir()) == \
        ["cache", "clone", "elsewhere"]


@pytest.fixture
def damaged(tmp_path):
    """Recordings in the N-MNIST layout, one of them truncated."""
    base = write_dataset(tmp_path / "damaged", n_train=2, n_test=1)
    victim = sorted((base / "Train" / "3").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:-2])
    return base, victim


def test_user_errors_are_one_line_and_write_nothing(tmp_path, damaged):
    """--out naming a file, a data root with no N-MNIST (by --data-root or $NMNIST_ROOT; a file or a
    pipe named as such; one of Train alone), an empty path, a run folder for the figures or the page, the
    project's own folder, the file system's root or the home folder for the figures, a truncated
    recording, a missing digit folder, a mistyped option: one line, exit status 2, no figure and no
    page; the file --out named is as it was."""
    out, page = tmp_path / "figures", tmp_path / "page.md"
    existing = tmp_path / "a-file"
    existing.write_text("keep me")
    missing_digit = write_dataset(tmp_path / "no-seven", n_train=2, n_test=1)
    shutil.rmtree(missing_digit / "Test" / "7")
    train_only = write_dataset(tmp_path / "train-only", n_train=2, n_test=1)
    shutil.rmtree(train_only / "Test")
    absent, pipe, a_run, home = tmp_path / "absent", tmp_path / "pipe", tmp_path / "a-run", tmp_path / "home"
    home.mkdir()
    a_run.mkdir()
    (a_run / ".eggroll-run").write_text("a run folder")
    os.mkfifo(pipe)
    cases = [
        (["--out", str(existing)], {}, [f"--out {existing} is a file, not a folder"]),
        (["--out", str(existing / "figures")], {}, [f"{existing} is not a folder"]),
        (["--claims", "5", "--data-root", str(absent)], {}, [f"--data-root {absent} holds no N-MNIST"]),
        (["--claims", "5"], {"NMNIST_ROOT": str(absent)}, [f"$NMNIST_ROOT {absent} holds no N-MNIST"]),
        (["--claims", "5", "--data-root", str(existing)], {}, [f"--data-root {existing} is a file, not a folder"]),
        (["--claims", "5", "--data-root", str(train_only)], {}, [f"--data-root {train_only} holds no N-MNIST"]),
        (["--claims", "5"], {"NMNIST_ROOT": str(pipe)}, [f"$NMNIST_ROOT {pipe} is a named pipe (FIFO), not a folder"]),
        (["--claims", "5", "--data-root", ""], {}, ["--data-root: an empty path: give a path"]),
        (["--out", ""], {}, ["--out: an empty path: give a path"]),
        (["--out", "/proc/lesson"], {}, ["--out /proc/lesson: /proc is the kernel's own view of the system"]),
        (["--out", str(a_run)], {}, [f"{a_run} is a run folder of this project", "; choose another --out"]),
        (["--page", str(a_run / "page.md")], {}, [f"{a_run} is a run folder of this project",
                                                  "; choose another --page"]),
        (["--claims", "5", "--data-root", str(damaged[0])], {}, [str(damaged[1]), "not a multiple of 5"]),
        (["--claims", "5", "--data-root", str(missing_digit)], {}, [str(missing_digit / "Test" / "7"), "missing"]),
        (["--claims", "6"], {}, ["--claims", "see lesson.py --help"]),
        (["--claims", "\u0661"], {}, ["--claims: give claims among 1..5"]),  # an Arabic-Indic 1
        (["--claims", "5", "--seconds", "1_0"], {}, ["--seconds: expected a finite number > 0, got '1_0'"]),
        (["--page", str(tmp_path)], {}, [f"--page {tmp_path} is a folder"]),
        (["--out", str(ROOT)], {}, [f"--out {ROOT} is the project's own folder, among its source files; give a "
                                    f"folder for the figures, e.g. lesson"]),
        (["--out", "/"], {}, ["--out / is the file system's root, and the lesson draws its figures straight into it: "
                              "give a folder of their own, e.g. /lesson"]),
        (["--out", str(home)], {"HOME": str(home)}, [f"--out {home} is your home folder, and the lesson draws"]),
    ]
    for options, env, fragments in cases:
        options = [*([] if "--out" in options else ["--out", str(out)]), *options,
                   *([] if "--page" in options else ["--page", str(page)])]
        result = run_lesson(*options, cwd=tmp_path, cache=tmp_path / "cache", env=env)
        one_line_error(result, *fragments)
        assert not out.exists() and not page.exists(), options
        assert existing.read_text() == "keep me" and not (ROOT / RECORD).exists() and not any(home.iterdir())


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_a_page_over_a_figure_or_not_markdown_is_one_line_and_writes_nothing(tmp_path):
    """--page naming one of the figures the lesson draws (in --out, of any claim), or a file that is
    not a markdown page (.md): one line, exit status 2, before any work; nothing written, and a
    figure the lesson drew there before is as it was."""
    out = tmp_path / "figures"
    for page, fragment in ((out / FIGURES[0], "is where the lesson draws claim 1's figure"),
                           (out / FIGURES[2], "is where the lesson draws claim 3's figure"),
                           (tmp_path / "page.txt", "is not a markdown page; give the path of a file ending in .md"),
                           (out / RECORD, "is not a markdown page")):
        result = run_lesson("--claims", "1", "--out", str(out), "--page", str(page), cwd=tmp_path,
                            cache=tmp_path / "cache")
        one_line_error(result, f"--page {page} ", fragment)
        assert result.stdout == "" and not out.exists() and not page.exists()
    out.mkdir()
    drawn = (ROOT / "docs" / "lesson" / FIGURES[0]).read_bytes()
    (out / FIGURES[0]).write_bytes(drawn)
    (out / RECORD).write_text(f"{sha256(out / FIGURES[0])}  {FIGURES[0]}\n")
    result = run_lesson("--claims", "1", "--out", str(out), "--page", str(out / FIGURES[0]), cwd=tmp_path,
                        cache=tmp_path / "cache")
    one_line_error(result, "is where the lesson draws claim 1's figure")
    assert (out / FIGURES[0]).read_bytes() == drawn and sorted(p.name for p in out.iterdir()) == [RECORD, FIGURES[0]]


def test_a_png_the_lesson_did_not_draw_is_refused_and_one_it_drew_replaced(tmp_path):
    """The lesson knows its figures by their sha256 in the record beside them, not by their first
    bytes: a user's PNG under a figure's name (none in the record, or another's digest there) is
    refused in one line naming it and the fix, before any claim runs, and left as it is; a figure
    the record holds is replaced, and the record then holds the new one's digest beside the lines
    of figures that are not the lesson's."""
    users_png = (ROOT / "results" / "quick" / "convergence.png").read_bytes()
    out = tmp_path / "figures"
    out.mkdir()
    (out / FIGURES[1]).write_bytes(users_png)
    for record in (None, f"{sha256(ROOT / 'docs' / 'lesson' / FIGURES[1])}  {FIGURES[1]}\n"):
        if record is not None:
            (out / RECORD).write_text(record)
        result = run_lesson("--claims", "2", "--out", str(out), cwd=tmp_path, cache=tmp_path / "cache")
        one_line_error(result, f"{out / FIGURES[1]} is a file this command did not write (not a figure the lesson "
                               f"drew: its {RECORD} does not hold it): it is left as it is; move it out of {out}, or "
                               f"choose another --out")
        assert result.stdout == "" and (out / FIGURES[1]).read_bytes() == users_png
        assert sorted(p.name for p in out.iterdir()) == [RECORD, FIGURES[1]][record is None:]
    other = f"{'0' * 64}  convergence.png\n"
    (out / RECORD).write_text(f"{sha256(out / FIGURES[1])}  {FIGURES[1]}\n{other}")  # the lesson's, as drawn before
    result = run_lesson("--claims", "2", "--out", str(out), cwd=tmp_path, cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr[-3000:]
    drawn = (out / FIGURES[1]).read_bytes()
    assert drawn != users_png and drawn.startswith(PNG_SIGNATURE)
    assert (out / RECORD).read_text() == f"{sha256(out / FIGURES[1])}  {FIGURES[1]}\n{other}"
    (out / RECORD).write_text("not a record\n")  # a file of the record's name that is not one: refused, kept
    result = run_lesson("--claims", "2", "--out", str(out), cwd=tmp_path, cache=tmp_path / "cache")
    one_line_error(result, f"{out / RECORD} is not the record of the figures drawn there")
    assert (out / RECORD).read_text() == "not a record\n" and (out / FIGURES[1]).read_bytes() == drawn


def test_the_committed_figures_are_the_lessons_own_in_its_record():
    """`make lesson` redraws docs/lesson/: its record holds every committed figure, so each is
    replaced, not refused as a user's."""
    assert (ROOT / "docs" / "lesson" / RECORD).read_text() == "".join(
        f"{sha256(ROOT / 'docs' / 'lesson' / name)}  {name}\n" for name in FIGURES)


def test_options_for_claim_5_alone_are_refused_without_it(tmp_path):
    """--seconds and --data-root serve claim 5 only: given with --claims that leave it out, one line
    saying which claim uses the option and the fix, exit status 2, before any claim runs."""
    out = tmp_path / "figures"
    for option, value in (("--seconds", "5"), ("--data-root", str(tmp_path / "X"))):
        for claims in ("1", "1,2,3,4"):
            result = run_lesson("--claims", claims, option, value, "--out", str(out), cwd=tmp_path,
                                cache=tmp_path / "cache")
            assert result.stderr == f"error: {option} is for claim 5 only, which --claims {claims} does not run: " \
                                    f"drop {option}, or add 5 to --claims; see lesson.py --help\n", result.stderr
            assert result.returncode == 2 and result.stdout == "" and not out.exists()


def test_a_note_the_lesson_writes_to_stderr_shows_an_escape_sequence_in_a_path_as_text(tmp_path):
    """--out named with an escape sequence (ESC [2J clears the screen), and the folder held locked by
    another process while the lesson records its figure there: the note that it waits reaches stderr
    with the ESC written as \\x1b, not obeyed, as every line the lesson prints."""
    out = tmp_path / "a\x1b[2Jb"
    out.mkdir()
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys, time\n"
                               "folder = os.open(sys.argv[1], os.O_RDONLY | os.O_DIRECTORY)\n"
                               "fcntl.flock(folder, fcntl.LOCK_EX)\n"
                               "print('held', flush=True)\n"
                               "time.sleep(120)\n", str(out)], stdout=subprocess.PIPE, text=True)  # until killed
    clean = {key: value for key, value in os.environ.items() if key not in SETTINGS}
    try:
        assert holder.stdout.readline() == "held\n"
        lesson = subprocess.Popen([sys.executable, str(ROOT / "lesson.py"), "--claims", "1", "--out", str(out),
                                   "--page", str(tmp_path / "lesson.md")], cwd=tmp_path, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True,
                                  env={**clean, "XDG_CACHE_HOME": str(tmp_path / "cache"),
                                       "MPLCONFIGDIR": matplotlib_config()})
        note = lesson.stderr.readline()  # the lesson waits for the folder: then the holder lets it go
    finally:
        holder.kill()
        holder.wait()
    stdout, stderr = lesson.communicate(timeout=120)
    assert lesson.returncode == 0, stderr[-3000:]
    assert note == f"note: waiting for another process that holds {tmp_path}/a\\x1b[2Jb locked, to record the figure " \
                   f"there\n", note
    assert "\x1b" not in note + stderr + stdout


def test_under_python_O_which_skips_every_assert_the_lesson_refuses_to_run(tmp_path):
    """The claims are checked by assert, which python -O skips: the lesson says so and writes nothing,
    rather than print refuted numbers as results."""
    out = tmp_path / "figures"
    optimised = subprocess.run([sys.executable, "-O", str(ROOT / "lesson.py"), "--claims", "1", "--out", str(out)],
                               cwd=tmp_path, capture_output=True, text=True, timeout=120)
    one_line_error(optimised, "lesson.py checks each claim with assert, which python -O skips: run it without -O")
    assert not out.exists()


def test_a_claim_that_does_not_hold_at_its_budget_is_one_line_and_writes_nothing(tmp_path):
    """Claim 5 checks its own conclusion; at a tenth of a CPU second EGGROLL cannot reach it: one line
    saying so and how to give it time, exit status 1 (a check that failed, not a user's error), no
    traceback, no figure."""
    out = tmp_path / "figures"
    result = run_lesson("--claims", "5", "--seconds", "0.1", "--out", str(out), cwd=tmp_path, cache=tmp_path / "cache")
    assert result.returncode == 1 and result.stderr.count("\n") == 1, result.stderr[-3000:]
    assert result.stderr.startswith("error: claim 5 did not hold: ") and result.stderr.endswith(
        "; give it more CPU seconds than --seconds 0.1 (default 20); nothing was written\n"), result.stderr
    assert re.search(r"CPU seconds: EGGROLL r = 4 \d+( %)?, vanilla ES \d+( %)?, BPTT \d+( %)?;", result.stderr) \
        and "{" not in result.stderr, result.stderr
    assert not out.exists()


def test_missing_recordings_are_said_before_any_claim_runs(tmp_path):
    """Claim 5 reads recordings that are not there: one line, exit status 2, before claim 1 (which needs
    no data) spends its minute, and nothing written."""
    absent, out = tmp_path / "absent", tmp_path / "figures"
    result = run_lesson("--claims", "1,5", "--data-root", str(absent), "--out", str(out), cwd=tmp_path,
                        cache=tmp_path / "cache")
    one_line_error(result, f"--data-root {absent} holds no N-MNIST")
    assert result.stdout == "" and not out.exists()


def test_a_warning_about_the_recordings_is_one_line_as_run_pys(tmp_path):
    """A copied recording, its name holding a line break, in the recordings claim 5 reads: the lesson
    warns in one line, "warning: ...", the break written as \\n (as run.py does), not Python's form."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "nmnist-sample", copy)
    original = sorted((copy / "Train" / "3").glob("*.bin"))[0]
    shutil.copyfile(original, copy / "Train" / "3" / "new\nline.bin")
    result = run_lesson("--claims", "5", "--seconds", "0.1", "--data-root", str(copy), "--out", "figs", cwd=tmp_path,
                        cache=tmp_path / "cache")
    warned = [line for line in result.stderr.splitlines() if "copy of another" in line]
    assert warned == [f"warning: 1 recording is a copy of another of its split (the same frames, e.g. "
                      f"{copy / 'Train' / '3'}/new\\nline.bin of {original}): each copy weighs its sample once more; "
                      f"remove the copy"], result.stderr
    assert "UserWarning" not in result.stderr


def test_an_unwritable_out_folder_is_one_line(tmp_path):
    """--out below a read-only folder: one line, exit status 2, before any claim runs. Root may
    write into a read-only folder, so as root the lesson runs as the unprivileged user nobody."""
    prefix = []
    if os.geteuid() == 0:
        if not shutil.which("setpriv"):
            pytest.skip("as root a read-only folder is writable, and setpriv is not there to drop root")
        prefix = [shutil.which("setpriv"), "--reuid=65534", "--regid=65534", "--clear-groups"]
    base = Path(tempfile.mkdtemp())  # not below tmp_path, which only its owner may enter
    try:
        base.chmod(0o755)
        matplotlib_home = base / "matplotlib"  # a writable one, with the font list already made
        shutil.copytree(matplotlib_config(), matplotlib_home)
        for path in [matplotlib_home, *matplotlib_home.rglob("*")]:
            path.chmod(0o777 if path.is_dir() else 0o666)
        locked = base / "read-only"
        locked.mkdir(mode=0o555)
        locked.chmod(0o555)
        out = locked / "figures"
        result = run_lesson("--out", str(out), cwd=base, cache=base / "cache", prefix=prefix,
                            env={"MPLCONFIGDIR": str(matplotlib_home)})
        one_line_error(result, f"--out {out}: the folder {locked} is not writable")
        assert result.stdout == "" and not out.exists()
    finally:
        for path in (base, *base.rglob("*")):
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(base)


def matplotlib_config():
    """This user's matplotlib cache folder, its font list made (else a first run would say so on stderr)."""
    import matplotlib
    from matplotlib import font_manager  # noqa: F401  makes the font list if it is not there yet
    return matplotlib.get_cachedir()


def test_a_closed_stdout_and_a_signal_are_one_line_with_their_exit_status(tmp_path):
    """`lesson.py | head -c 20` ends with one line and exit status 141; SIGTERM with one line and 143;
    neither leaves a figure."""
    env = {name: value for name, value in os.environ.items() if name != "NMNIST_ROOT"}  # claim 5: the sample's
    env["OPENBLAS_NUM_THREADS"] = "1"
    command = [sys.executable, str(ROOT / "lesson.py"), "--claims", "1,2", "--out", str(tmp_path / "figures")]
    status, err = stopped(command, "reader gone", cwd=tmp_path, env=env)  # claim 2 prints to no reader
    assert status == 141 and err == "error: standard output was closed\n", err
    # once claim 2 is printed; claim 5 trains for 20 CPU seconds after it, so SIGTERM finds it running
    # however long a loaded machine keeps this test from sending it
    status, err = stopped([*command[:3], "2,5", *command[4:]], "terminated", cwd=tmp_path, env=env)
    assert status == 143 and err == "error: interrupted; run it again\n", err
    assert not (tmp_path / "figures").exists()


def test_the_committed_page_carries_the_lessons_text():
    """docs/lesson.md (`make lesson`) holds every prose cell of lesson.py as it is now, links made
    relative to docs/: a change to the lesson's text shows on the page."""
    source = (ROOT / "lesson.py").read_text(encoding="utf-8")  # a script: importing it would run it
    cells = [re.sub(r"^# ?", "", cell.strip(), flags=re.M).strip()
             for cell in re.findall(r"^# %% \[markdown\]\n(.*?)(?=^# %%|^[^#\n])", source, flags=re.M | re.S)]
    assert len(cells) == 7
    page = (ROOT / "docs" / "lesson.md").read_text(encoding="utf-8")
    for cell in cells:
        relative = re.sub(r"\]\((?!https?:)docs/", "](", re.sub(r"\]\((?!https?:|docs/)([^)]+)\)", r"](../\1)", cell))
        assert relative in page, cell[:200]


def test_a_page_may_name_its_extension_in_capitals(tmp_path):
    result = run_lesson("--claims", "2", "--out", "figs", "--page", "LESSON.MD", cwd=tmp_path, cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "LESSON.MD").read_text(encoding="utf-8").startswith("# EGGROLL in five claims\n")


def test_a_write_that_fails_leaves_no_folder_the_lesson_made(tmp_path):
    """A limit on a file's size (as a full disk) met when the figures are written: one line naming the
    file and the fix, and the folders the lesson made for them removed again."""
    if not shutil.which("prlimit"):
        pytest.skip("prlimit (util-linux) is not there to set the limit on a file's size")
    result = run_lesson("--claims", "2", "--out", str(Path("a") / "b" / "figs"), cwd=tmp_path,
                        cache=tmp_path / "cache", prefix=[shutil.which("prlimit"), "--fsize=20000"])
    one_line_error(result, f"cannot write {Path('a') / 'b' / 'figs' / '2_forward_trick.png'}: File too large")
    assert not (tmp_path / "a").exists()


def test_dash_as_the_lessons_folder_is_refused(tmp_path):
    result = run_lesson("--out", "-", cwd=tmp_path, cache=tmp_path / "cache")
    one_line_error(result, "argument --out: '-' is read as standard output by many tools")
    assert list(tmp_path.iterdir()) == [] or [p.name for p in tmp_path.iterdir()] == ["cache"]


def test_the_lesson_writes_no_figure_or_page_inside_an_nmnist_copy(tmp_path):
    """--out or --page among recordings (a folder of the copy, or beside its Train and Test): refused in
    one line before any claim runs, nothing written there."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "nmnist-sample", copy)
    before = sorted(copy.rglob("*"))
    result = run_lesson("--claims", "1", "--out", str(copy / "figs"), cwd=tmp_path, cache=tmp_path / "cache")
    one_line_error(result, f"{copy / 'figs'} lies inside {copy}, which holds N-MNIST", "choose another --out")
    result = run_lesson("--claims", "1", "--out", "figs", "--page", str(copy / "Test" / "lesson.md"), cwd=tmp_path,
                        cache=tmp_path / "cache")
    one_line_error(result, f"{copy / 'Test'} lies inside {copy}, which holds N-MNIST", "choose another --page")
    assert result.stdout == "" and sorted(copy.rglob("*")) == before and not (tmp_path / "figs").exists()


@pytest.mark.parametrize("name", ["1_lowrank_scale.png", ".figures.sha256"])
@pytest.mark.parametrize("kind", ["folder", "pipe"])
def test_a_folder_where_a_figure_or_its_record_goes_is_refused_before_any_claim_runs(tmp_path, name, kind):
    """A folder or a named pipe where a figure or the record goes: refused before any claim runs (a
    pipe is never opened: it would block), left as it is."""
    (tmp_path / "figs").mkdir()
    if kind == "pipe":
        os.mkfifo(tmp_path / "figs" / name)
        result = run_lesson("--claims", "1", "--out", "figs", cwd=tmp_path, cache=tmp_path / "cache")
        one_line_error(result, f"cannot write {Path('figs') / name}: it is not a regular file; move it out of figs")
        assert result.stdout == "" and (tmp_path / "figs" / name).is_fifo()
        return
    (tmp_path / "figs" / name / "mine").mkdir(parents=True)
    result = run_lesson("--claims", "1", "--out", "figs", cwd=tmp_path, cache=tmp_path / "cache")
    one_line_error(result, f"cannot write {Path('figs') / name}: it is not a regular file; move it out of figs")
    assert result.stdout == "" and sorted(path.name for path in (tmp_path / "figs").iterdir()) == [name]
    assert (tmp_path / "figs" / name / "mine").is_dir()


def test_a_page_that_is_a_link_is_refused_before_any_claim_runs_and_nothing_is_written(tmp_path):
    (tmp_path / "notes.md").write_text("mine")
    (tmp_path / "page.md").symlink_to("notes.md")
    result = run_lesson("--claims", "1", "--out", "figs", "--page", "page.md", cwd=tmp_path, cache=tmp_path / "cache")
    one_line_error(result, "cannot write page.md: it is a symbolic link")
    assert result.stdout == "" and not (tmp_path / "figs").exists()
    assert (tmp_path / "notes.md").read_text() == "mine" and (tmp_path / "page.md").is_symlink()


@pytest.mark.parametrize("seconds, checkpoints", [(8.5, ()), (9.5, range(1, 100))])
def test_the_races_curve_ends_once_at_the_last_update(seconds, checkpoints):
    """lesson.py's train_for (its definition alone: the lesson runs when imported): a row after 0
    updates, after each of 1, 2, 3, 5, 7, 10, ... and of `also` reached, and one at the end, the last
    update's, whether or not that is one of them too (a clock of 1 CPU second an update here: 9
    updates, then 10, every one asked for)."""
    source = (ROOT / "lesson.py").read_text()
    definition = next(node for node in ast.parse(source).body
                      if isinstance(node, ast.FunctionDef) and node.name == "train_for")
    clock = iter(range(10 ** 6))
    namespace = {"np": np, "time": types.SimpleNamespace(process_time=lambda: next(clock)),
                 "snn": types.SimpleNamespace(init_params=lambda seed: {"updates": 0}),
                 "optim": types.SimpleNamespace(init=lambda params: None),
                 "data": types.SimpleNamespace(minibatch=lambda *args, **kwargs: (None, None)),
                 "accuracy": lambda params, split: params["updates"] / 100}
    exec(compile(ast.Module([definition], type_ignores=[]), "lesson.py", "exec"), namespace)
    step = lambda params, state, frames, labels, update: ({"updates": params["updates"] + 1}, state)
    curve = namespace["train_for"](seconds, step, None, None, also=checkpoints)
    updates = [int(row[0]) for row in curve]
    expected = [0, 1, 2, 3, 5, 7, 9] if not checkpoints else list(range(11))
    assert updates == expected and [round(row[2] * 100) for row in curve] == expected


def test_the_races_results_count_each_methods_own_updates():
    """lesson.py's race_results (its definition alone): each method's count in its own words, singular
    for one whatever the others', with its CPU seconds each and its accuracy, in the order given."""
    source = (ROOT / "lesson.py").read_text()
    definition = next(node for node in ast.parse(source).body
                      if isinstance(node, ast.FunctionDef) and node.name == "race_results")
    namespace = {}
    exec(compile(ast.Module([definition], type_ignores=[]), "lesson.py", "exec"), namespace)
    said = namespace["race_results"](2.0, {"EGGROLL r = 4": 4, "vanilla ES": 1, "BPTT": 5},
                                     {"EGGROLL r = 4": 0.5, "vanilla ES": 0.25, "BPTT": 0.75})
    assert said == ("EGGROLL r = 4 4 generations (0.500 CPU s each), test accuracy 50 %; vanilla ES 1 generation "
                    "(2.000 CPU s each), test accuracy 25 %; BPTT 5 updates (0.400 CPU s each), test accuracy 75 %")
    said = namespace["race_results"](2.0, {"vanilla ES": 2, "BPTT": 1}, {"BPTT": 0.5, "vanilla ES": 0.5})
    assert said.startswith("vanilla ES 2 generations (") and "; BPTT 1 update (" in said  # in the order of updates


def test_an_emulation_is_refused_for_the_race_on_real_recordings_before_any_claim_runs(tmp_path):
    """--data-root an emulation (finished or not; its record damaged): claim 5 races on real
    recordings, as its figure says, so it is refused in one line before claim 1 runs; nothing written."""
    root, out = tmp_path / "emulated", tmp_path / "figures"
    shutil.copytree(ROOT / "nmnist-sample", root / "NMNIST", ignore=shutil.ignore_patterns("README.md"))
    (root / "NMNIST" / "EMULATED.json").write_text(json.dumps({"version": 1, "seed": 4, "mnist_sha256": {}}))
    result = run_lesson("--claims", "1,5", "--data-root", str(root), "--out", str(out), cwd=tmp_path,
                        cache=tmp_path / "cache")
    one_line_error(result, f"--data-root {root} is emulated N-MNIST (run.py emulate made it), and claim 5 races on "
                           f"real recordings; point --data-root or $NMNIST_ROOT at recorded N-MNIST")
    assert result.stdout == "" and not out.exists()
    (root / "NMNIST" / "EMULATED.json").write_text("{")
    result = run_lesson("--claims", "5", "--data-root", str(root), "--out", str(out), cwd=tmp_path,
                        cache=tmp_path / "cache")
    one_line_error(result, f"{root / 'NMNIST' / 'EMULATED.json'} ")
    assert not out.exists()


def test_claims_run_once_each_and_in_order_whatever_the_order_given():
    """--claims 3,1,1 runs claim 1 then claim 3, once each: a claim given twice would draw and report
    its figure twice."""
    source = (ROOT / "lesson.py").read_text()  # its definition alone: the lesson runs when imported
    wanted = [node for node in ast.parse(source).body
              if isinstance(node, ast.FunctionDef) and node.name == "claim_numbers"
              or isinstance(node, ast.Assign) and [ast.unparse(target) for target in node.targets] == ["CLAIMS"]]
    namespace = {"argparse": __import__("argparse")}
    exec(compile(ast.Module(wanted, type_ignores=[]), "lesson.py", "exec"), namespace)
    assert len(wanted) == 2 and namespace["CLAIMS"] == (1, 2, 3, 4, 5)
    assert namespace["claim_numbers"]("3,1,1") == [1, 3]
    assert namespace["claim_numbers"](" 5 , 2") == [2, 5]
