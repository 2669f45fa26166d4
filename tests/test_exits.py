"""How the entry points end (exits.py): nano_eggroll.py, lesson.py and run.py end every data fault
in one line and exit status 2; a result standard output cannot take is exit status 2; a network
silent at every member is said; a fault in a step that is not a divergence is not called one."""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import numpy
import pytest

import exits
import run
import training
from nmnist_files import write_dataset, write_recording
from conftest import SMALL

ROOT = Path(__file__).resolve().parents[1]


def damage(base, fault):
    """Put `fault` into the copy of N-MNIST at `base`; the path it names."""
    victim = base / "Train" / "3" / "00004.bin"
    if fault == "x out of range":
        write_recording(victim, [40], [3], [10], [1])
    elif fault == "a size not a multiple of 5":
        victim.write_bytes(victim.read_bytes()[:-2])
    elif fault == "timestamps backwards":
        write_recording(victim, [1, 2], [3, 3], [500, 10], [1, 0])
    elif fault == "a folder named *.bin":
        victim.unlink()
        victim.mkdir()
    elif fault == "an all-empty split":
        for path in (base / "Test").rglob("*.bin"):
            path.write_bytes(b"")
        return base / "Test"
    elif fault == "an unreadable recording":
        victim.unlink()
        victim.symlink_to(base / "nowhere.bin")
    return victim


FAULTS = ["x out of range", "a size not a multiple of 5", "timestamps backwards", "a folder named *.bin",
          "an all-empty split", "an unreadable recording"]


@pytest.mark.parametrize("fault", FAULTS)
def test_nano_ends_every_data_fault_in_one_line(tmp_path, fault):
    """nano_eggroll.py beside a copy of nmnist-sample/ with one fault: one line naming the file or
    folder, exit status 2 (not an AttributeError of its handler, exit status 1)."""
    shutil.copy(ROOT / "nano_eggroll.py", tmp_path)
    named = damage(write_dataset(tmp_path / "nmnist-sample", n_train=2, n_test=1), fault)
    done = subprocess.run([sys.executable, str(tmp_path / "nano_eggroll.py")], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path,
                          env=dict(os.environ, PYTHONPATH=str(ROOT), EGGROLL_CACHE=str(tmp_path / "cache")))
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.startswith("error: ") and done.stderr.count("\n") == 1 and str(named) in done.stderr, \
        done.stderr


def test_a_lost_result_is_exit_status_2(tmp_path, dataset):
    """`run.py evaluate` with its standard output closed (`>&-`) loses its scores: one line, exit
    status 2, not 0."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "5", *SMALL, *dataset]) == 0
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "evaluate", str(out), *dataset[:2]],
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, timeout=120,
                          preexec_fn=lambda: os.close(1))
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: cannot write to standard output: it is closed; rerun with standard output "
                           "where it can be written\n")


@pytest.mark.parametrize("command, where", [
    (["toy_eggroll.py", "--out", "{tmp}/toy.png"], "the figures are in {tmp}/toy.png and {tmp}/toy-staircase.png"),
    (["run.py", "bench", "--pairs", "4", "--methods", "eggroll-r1", "--repeats", "1"], "run it again with --json FILE"),
    (["run.py", "bench", "--pairs", "4", "--methods", "eggroll-r1", "--repeats", "1", "--json", "{tmp}/b.json"],
     "the figures are in {tmp}/b.json"),
])
@pytest.mark.parametrize("output", ["closed", "full"])
def test_a_result_standard_output_cannot_take_is_one_line_and_exit_status_2(tmp_path, command, where, output):
    """The toy's lines and the benchmark's table, with standard output closed (`>&-`) or full
    (/dev/full): one line saying where the result is, if anywhere, and exit status 2, not 0."""
    command = [part.format(tmp=tmp_path) for part in command]
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(ROOT / command[0]), *command[1:]], cwd=tmp_path,
                              stdout=full, stderr=subprocess.PIPE, text=True, timeout=300,
                              preexec_fn=(lambda: os.close(1)) if output == "closed" else None)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines()[-1].startswith("error: cannot write to standard output: ")
    assert done.stderr.rstrip().endswith(where.format(tmp=tmp_path)), done.stderr


@pytest.mark.parametrize("command", [["run.py", "--help"], ["run.py", "train", "--help"], ["lesson.py", "--help"],
                                     ["examples/layer_drift.py", "--help"]])
def test_a_help_standard_output_cannot_take_is_one_line_and_exit_status_2(command):
    """--help with standard output on /dev/full: one line and exit status 2, not a silent 0 with the
    help lost (argparse drops a failed write)."""
    with open("/dev/full", "w") as full:
        done = subprocess.run([sys.executable, str(ROOT / command[0]), *command[1:]], cwd=ROOT, stdout=full,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert done.stderr == ("error: cannot write the help to standard output: No space left on device; rerun with "
                           "standard output where it can be written\n")


def test_a_signal_the_program_began_ignoring_stays_ignored():
    """nohup starts a command ignoring SIGHUP (a shell's background job, SIGINT): exits.handled leaves
    it ignored, so the run goes on when the terminal closes, and still stops at the signals it may
    take; afterwards each handler is the one before."""
    previous = {signum: signal.getsignal(signum) for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM)}
    signal.signal(signal.SIGHUP, signal.SIG_IGN)  # as nohup starts it; the others as a terminal does (a shell's
    signal.signal(signal.SIGINT, signal.default_int_handler)  # background job, pytest under nohup ... &, starts
    signal.signal(signal.SIGTERM, signal.SIG_DFL)             # with SIGINT ignored too)
    try:
        during = {}
        assert exits.handled(lambda: during.update({signum: signal.getsignal(signum) for signum in exits.SIGNALS}),
                             "run it again") == 0
        assert during[signal.SIGHUP] == signal.SIG_IGN
        assert all(callable(during[signum]) for signum in (signal.SIGINT, signal.SIGTERM)), during
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def test_a_run_whose_stderr_is_closed_trains_and_keeps_its_files_whole(tmp_path, dataset):
    """`2>&-`: no stderr to draw the progress bar on. The run trains anyway (exit 0, its result on
    stdout), and no file it opens takes descriptor 2, so nothing meant for stderr lands in one: the
    lock file holds the PID alone."""
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), "--generations", "2",
                           *[option for option in SMALL if option != "--quiet"], *dataset], cwd=ROOT,
                          stdout=subprocess.PIPE, text=True, timeout=300, preexec_fn=lambda: os.close(2))
    assert done.returncode == 0 and '"test_acc"' in done.stdout
    assert (out / "final.json").is_file() and (out / ".lock").read_text().strip().isdigit()


def test_a_command_that_replaces_its_standard_output_keeps_it():
    """handled shows control characters by wrapping stdout and stderr while the command runs, and puts
    the streams back after, unless the command replaced one (a capture of its own): that one stays."""
    import io
    before = sys.stdout
    mine = io.StringIO()

    def command():
        sys.stdout = mine
    try:
        assert exits.handled(command, "run it again") == 0
        assert sys.stdout is mine
    finally:
        sys.stdout = before


def test_only_an_encoding_other_than_utf_8_is_told_to_use_pythonioencoding():
    """A UnicodeEncodeError of UTF-8 itself (a lone surrogate, under any spelling of the name) is no
    terminal's encoding to change: its line does not advise PYTHONIOENCODING; ASCII's does."""
    for name in ("utf-8", "UTF8"):
        said = exits.ending(UnicodeEncodeError(name, "\udc80", 0, 1, "surrogates not allowed"), "again")
        assert said is not None and "PYTHONIOENCODING" not in said[0], said
    said = exits.ending(UnicodeEncodeError("ascii", "σ", 0, 1, "ordinal not in range"), "again")
    assert "PYTHONIOENCODING=utf-8" in said[0], said


def test_a_silent_network_is_said_once(tmp_path, dataset, capsys):
    """At --threshold 100 no neuron ever fires: every member scores -ln 10 and the run learns
    nothing; one warning line says so, once. At the default threshold the run says nothing."""
    for threshold, warnings in (("100", 1), ("1.0", 0)):
        out = tmp_path / f"threshold-{threshold}"
        assert run.main(["train", "--out", str(out), "--generations", "10", "--threshold", threshold, *SMALL,
                         *dataset]) == 0
        err = capsys.readouterr().err
        assert err.count("warning: ") == warnings and err.count("\n") == warnings, err
        assert ("every member's output neurons were silent" in err) == bool(warnings), err
    out = tmp_path / "bptt"
    assert run.main(["train", "--method", "bptt", "--epochs", "1", "--threshold", "100", "--out", str(out),
                     "--batch-size", "16", "--quiet", *dataset]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1 and "the network's output neurons were silent" in err, err


def test_a_bptt_loss_is_called_silent_only_at_chance_itself():
    """stalled: BPTT's loss at ln 10 is a silent output; one a little above or below it (2.3020, a
    network that learned a little) is not, and gets no advice to lower --threshold."""
    import math
    assert training.stalled({"loss": math.log(10)}).startswith("the network's output neurons were silent")
    for near in (math.log(10) + 5e-4, math.log(10) - 1e-4, 2.3020):
        assert training.stalled({"loss": near}) is None, near


def test_every_control_character_is_shown_escaped_but_tab_and_line_ends():
    """printable: the C0 and C1 controls and DEL (Shift Out would switch a terminal's character set)
    come out as \\xNN; tab, newline and carriage return as they are (one_line takes those)."""
    for code in (*range(0x20), *range(0x7f, 0xa0)):
        if chr(code) not in "\t\n\r":
            assert exits.printable(chr(code)) == f"\\x{code:02x}", code
    assert exits.printable("\t\n\r") == "\t\n\r"


def test_a_closed_stdin_is_kept_off_the_files_the_command_opens():
    """keep_standard_streams with descriptor 0 closed (a scheduler's <&-): /dev/null takes it, so the
    first file the command opens is 3, not a stdin that child processes would inherit."""
    code = "import os, exits; exits.keep_standard_streams(); print(os.readlink('/proc/self/fd/0'), " \
           "os.open(os.devnull, os.O_RDONLY))"
    done = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).parent.parent, capture_output=True,
                          text=True, preexec_fn=lambda: os.close(0))
    assert done.stdout.split() == ["/dev/null", "3"], (done.stdout, done.stderr)


@pytest.mark.parametrize("method", ["eggroll", "es"])
def test_a_sigma_too_small_to_move_any_output_is_said_once(tmp_path, dataset, capsys, method):
    """At sigma 1e-6 float32 still tells the members apart, but no output spike changes within it:
    every member scores alike, the ranks tie and the step is zero. One warning says so, once (the
    silent network's own line is for outputs that never fire)."""
    out = tmp_path / method
    assert run.main(["train", "--method", method, "--out", str(out), "--generations", "4", "--sigma", "1e-6",
                     *SMALL, *dataset]) == 0
    err = capsys.readouterr().err
    assert err.count("warning: ") == 1 and err.count("\n") == 1, err
    assert "at step 1 every member scored alike" in err and "raise --sigma" in err, err


@pytest.mark.parametrize("settings, option", [
    (["--sigma", "1e-6", "--init-std", "10"], "--sigma 1e-06 lies below"),
    (["--method", "es", "--sigma", "1e-6", "--init-std", "10"], "--sigma 1e-06 lies below"),
    (["--sigma", "1e-2", "--sigma-schedule", "cosine", "--sigma-min", "1e-6", "--init-std", "10"],
     "--sigma-min 1e-06 lies below"),
    (["--sigma", "1e-2", "--sigma-schedule", "exponential", "--sigma-min", "1e-6", "--init-std", "10"],
     "--sigma-min 1e-06 lies below"),
    (["--method", "es", "--sigma", "1e-2", "--sigma-schedule", "cosine", "--sigma-min", "1e-6", "--init-std", "10"],
     "--sigma-min 1e-06 lies below"),
    (["--output-sigma-scale", "1e-7"], "--output-sigma-scale 1e-07 (sigma 1e-08 there) lies below"),
    (["--hidden", "8,6", "--inner-scale", "1e-7"], "--inner-scale 1e-07 (sigma 1e-08 there) lies below")])
def test_a_sigma_float32_cannot_resolve_at_the_initial_weights_is_refused_before_training(tmp_path, dataset, capsys,
                                                                                           settings, option):
    """The least sigma of the run (its schedule's --sigma-min) below float32's resolution at the
    initial weights: one line naming the option to raise, exit 2, no run folder made."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "4", *settings, *SMALL, *dataset]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: {option}") and err.count("\n") == 1, err
    assert "every member would equal the mean but for rounding" in err, err
    assert f"; raise {option.split()[0]}, or lower --init-std" in err, err  # the option named is the one to raise
    assert not out.exists()


@pytest.mark.parametrize("schedule, said", [
    ([], "more than their sigma 0.1: every member"),
    (["--sigma-schedule", "exponential", "--sigma-min", "0.01"],
     "more than their sigma 0.0316 (--sigma-schedule exponential lowered it): every member"),
    (["--sigma-schedule", "cosine", "--sigma-min", "0.01"],
     "more than their sigma 0.055 (--sigma-schedule cosine lowered it): every member")])
def test_weights_float32_no_longer_resolves_sigma_at_end_the_run_in_the_command_s_options(tmp_path, dataset, capsys,
                                                                                         monkeypatch, schedule, said):
    """Weights that grow (or a sigma that falls) until float32 no longer tells the members apart: the
    step before is kept, and one line says which layer, in the command's options, and that the run
    cannot go on (a resume would meet the same weights)."""
    real_step = training.method_step

    def growing(config, lif, team, total_steps):
        step = real_step(config, lif, team, total_steps)

        def grown(params, state, frames, labels, generation, adam):
            if generation == 2:
                params = {**params, "W1": params["W1"] * 1e7}
            return step(params, state, frames, labels, generation, adam)
        return grown
    monkeypatch.setattr(training, "method_step", growing)
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "4", *schedule, *SMALL, *dataset]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: at step 3 the weights of layer 1 (W1) reach "), err
    assert f"{said} would equal the mean but for rounding, so the run cannot go on; {out / 'checkpoint.npz'} holds " \
           f"the run until step 2: raise --sigma" in err, err
    largest = float(abs(numpy.load(out / "checkpoint.npz")["param/W1"]).max()) * 1e7  # as the step saw it
    assert f"reach {largest:.3g}, where float32 resolves only steps of {largest * 2 ** -23:.3g}, " in err, err
    monkeypatch.undo()  # the checkpoint itself holds such weights: the line says they came from it
    arrays = dict(numpy.load(out / "checkpoint.npz"))
    numpy.savez(out / "checkpoint.npz", **{**arrays, "param/W1": arrays["param/W1"] * numpy.float32(1e7)})
    assert run.main(["train", "--out", str(out), "--generations", "4", "--resume", *schedule, *SMALL, *dataset]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: at step 3, the first from the checkpoint of step 2, the weights of layer 1 (W1) "
                          "reach "), err


def test_a_fault_in_a_step_is_not_called_a_divergence(tmp_path, dataset, capsys, monkeypatch):
    """A ValueError of the wrong shape inside a step is its own line, not 'training went non-finite
    ... lower --lr or --sigma'; one that is non-finite still is."""
    real_step = training.method_step

    def failing(message):
        def step(config, method, lif, team):
            def broken(*args):
                raise ValueError(message)
            return broken
        return step
    for message, expected in (("matmul: mismatch in its core dimension 0", "error: matmul: mismatch"),
                              ("fitness holds NaN or inf: lower the learning rate", "training went non-finite")):
        monkeypatch.setattr(training, "method_step", failing(message))
        code = run.main(["train", "--out", str(tmp_path / message[:6]), "--generations", "5", *SMALL, *dataset])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and expected in err, err
        assert ("lower --lr or --sigma" in err) == (expected == "training went non-finite"), err
    monkeypatch.setattr(training, "method_step", real_step)


def test_too_many_open_files_names_the_soft_limit_that_was_hit(monkeypatch):
    """EMFILE: the line quotes the soft limit (ulimit -n), the one a process meets, not the hard one,
    and advises more than it: 1024, or four times a limit already at 1024 or above."""
    import resource
    for soft, advised in ((64, 1024), (2048, 8192)):
        monkeypatch.setattr(resource, "getrlimit", lambda kind: (soft, 1048576))
        assert exits.ending(OSError(24, "Too many open files"), "again")[0] == \
            f"too many open files for this process's limit (ulimit -n {soft}); raise it (e.g. ulimit -n {advised})"


def test_an_error_every_process_met_is_said_once_for_all():
    """A JobError (every process of a job met it) ends with `everywhere` set, so that the first
    process alone says it and none is aborted; a UsageError of one process does not."""
    assert exits.ending(training.JobError("the data differ"), "again") == ("the data differ", 2, True)
    assert exits.ending(exits.UsageError("bad option"), "again") == ("bad option", 2, False)


@pytest.mark.parametrize("text", ["0", "-0", "-1"])
def test_a_positive_number_refuses_zero_as_not_positive(text):
    """exits.positive_number (--seconds, say): 0 and below are "not > 0", not out of float32's range."""
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"expected a finite number > 0, got {text!r}")):
        exits.positive_number(text)


@pytest.mark.parametrize("error, line, status", [
    (BrokenPipeError(32, "Broken pipe"), "standard output was closed", 141),
    (OSError(28, "No space left on device"), "cannot write standard output: No space left on device", 2),
    (FileNotFoundError(2, "No such file or directory", "/x/y"), "cannot use /x/y: No such file", 2),
    (ValueError("recording damaged; replace it"), "recording damaged; replace it", 2),
    (MemoryError(), "out of memory, more than the estimate", 2),
    (OSError(24, "Too many open files"), "too many open files for this process's limit (ulimit -n ", 2),
    (KeyboardInterrupt(), "interrupted; go on", 130)])
def test_every_ending_is_one_line_and_its_status(error, line, status):
    """exits.ending, which every entry point shares; a bug (here a TypeError) is none of them."""
    said, got, _ = exits.ending(error, "go on")
    assert said.startswith(line) and "\n" not in said and got == status
    assert exits.ending(TypeError("a bug"), "go on") is None


def test_out_of_memory_under_an_address_space_limit_names_the_limit(monkeypatch):
    """A MemoryError under ulimit -v: the line adds raising the limit to the command's fix, which
    no option may reach (vanilla ES's chunk of 64 pairs stands at any --population); without a
    limit it does not."""
    import resource
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (300 * 2**20, resource.RLIM_INFINITY))
    assert exits.ending(MemoryError(), "go on", "lower --population")[0].endswith(
        "before the start; lower --population; or raise the limit (ulimit -v)")
    monkeypatch.setattr(resource, "getrlimit", lambda kind: (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    assert exits.ending(MemoryError(), "go on", "lower --population")[0].endswith(
        "before the start; lower --population")


def test_a_warning_naming_a_path_with_a_line_break_is_one_line_that_names_it_as_it_is():
    """A file name may hold a line break: a warning (as an error) that names it stays one line, the
    break written as \\n, not as a space that would name another file."""
    said = exits.warning_line(UserWarning("1 recording is a copy (Train/3/new\nline.bin)"), UserWarning, "x", 0)
    assert said == "warning: 1 recording is a copy (Train/3/new\\nline.bin)\n"


def test_an_error_naming_a_path_with_control_characters_reaches_the_terminal_as_text(capsys):
    """An escape sequence in a path (ESC [2J clears the screen) or any other control character but the
    tab is written as \\xNN in errors and warnings: the terminal prints the line, it does not obey it."""
    exits.tell("error: /tmp/\x1b[2Jclear\x07\x9b\x7f\tx\ny does not exist")
    assert capsys.readouterr().err == "error: /tmp/\\x1b[2Jclear\\x07\\x9b\\x7f\tx\\ny does not exist\n"
    said = exits.warning_line(UserWarning("a\rb"), UserWarning, "x", 0)
    assert said == "warning: a\\x0db\n"


def test_a_file_the_command_did_not_write_is_never_overwritten(tmp_path):
    """exits.refuse_foreign_file: a file that does not begin as the command's own (a user's notes
    under a figure's or a page's name) is refused, naming it and the fix; no file, or the command's
    own earlier output (a PNG, a page with its header), passes."""
    notes, figure, page = tmp_path / "notes.md", tmp_path / "figure.png", tmp_path / "page.md"
    notes.write_text("my notes\n")
    figure.write_bytes(exits.PNG + b"rest")
    page.write_text("# EGGROLL in five claims\n\ntext")
    with pytest.raises(exits.UsageError) as refused:
        exits.refuse_foreign_file(notes, b"# EGGROLL in five claims", "a page of this lesson", "choose another --page")
    assert str(refused.value) == (f"{notes} is a file this command did not write (not a page of this lesson): it is "
                                  f"left as it is; choose another --page")
    with pytest.raises(exits.UsageError):
        exits.refuse_foreign_file(notes, exits.PNG, "a PNG figure", "give another --out")
    exits.refuse_foreign_file(figure, exits.PNG, "a PNG figure", "give another --out")
    exits.refuse_foreign_file(page, b"# EGGROLL in five claims", "a page of this lesson", "choose another --page")
    exits.refuse_foreign_file(tmp_path / "absent.png", exits.PNG, "a PNG figure", "give another --out")
    exits.refuse_foreign_file(None, exits.PNG, "a PNG figure", "give another --out")
    assert notes.read_text() == "my notes\n"


def test_an_output_folder_is_a_folder_or_a_new_name_never_a_file_or_a_dangling_link(tmp_path):
    """exits.output_folder, the examples' --out: a folder (or a link to one) or a name not yet taken
    passes; a file, or a link that leads nowhere (no folder can be made under its name), is refused
    before any work, as "" is."""
    (tmp_path / "folder").mkdir()
    (tmp_path / "file").write_text("")
    (tmp_path / "to-folder").symlink_to(tmp_path / "folder")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    for name in ("folder", "to-folder", "new"):
        assert exits.output_folder(str(tmp_path / name)) == tmp_path / name
    for text in (str(tmp_path / "file"), str(tmp_path / "dangling"), ""):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            exits.output_folder(text)
        assert str(refused.value) == f"expected a folder to write the records into, got {text!r}"
    with pytest.raises(argparse.ArgumentTypeError) as refused:
        exits.output_folder("-")
    assert str(refused.value) == ("'-' is read as standard output by many tools, and this command writes files at the "
                                  "path given: give a path (./- for one named -)")
    assert not (tmp_path / "nowhere").exists()


INTERRUPTED_AT = """
import argparse, runpy, sys

class Interrupting:  # Ctrl-C arriving while module {module!r} is imported
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            raise KeyboardInterrupt

sys.meta_path.insert(0, Interrupting())
if {module!r} == "argparse-parse":  # or while the options are read
    argparse.ArgumentParser.parse_known_args = lambda *args, **kwargs: (_ for _ in ()).throw(KeyboardInterrupt)
sys.argv = ["run.py", "train", "--out", "never"]
runpy.run_path("run.py", run_name={run_name!r})
"""


@pytest.mark.parametrize("module", ["numpy", "bench", "argparse-parse"])
def test_ctrl_c_while_run_py_starts_is_one_line(module, tmp_path):
    """Ctrl-C while run.py imports NumPy or its modules, or reads its options, before exits.handled
    takes over: one line, exit status 130, nothing written."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_AT.format(module=module, run_name="__main__")], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "error: interrupted while starting; nothing was written\n")
    assert not (ROOT / "never").exists()


def test_ctrl_c_in_a_worker_process_that_imports_run_py_is_left_to_its_parent():
    """emulate's worker processes (spawned) import run.py as __mp_main__; a terminal's Ctrl-C reaches
    them too: a worker exits without a line, and the parent alone says what was kept."""
    done = subprocess.run([sys.executable, "-c", INTERRUPTED_AT.format(module="bench", run_name="__mp_main__")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (130, "")


def test_a_table_path_is_a_new_or_own_md_file_never_a_folder_named_md(tmp_path):
    """exits.markdown_file, a --md option: a .md file in an existing folder passes, written or not;
    a folder that happens to be named *.md is refused before any work, as a name without .md and a
    file in a folder that does not exist are."""
    (tmp_path / "table.md").write_text("| a |\n")
    (tmp_path / "folder.md").mkdir()
    for name in ("table.md", "new.md"):
        assert exits.markdown_file(str(tmp_path / name)) == tmp_path / name
    for text in (str(tmp_path / "folder.md"), str(tmp_path / "table.txt")):
        with pytest.raises(argparse.ArgumentTypeError) as refused:
            exits.markdown_file(text)
        assert str(refused.value) == f"expected the path of a .md file to write the table to, got {text!r}"
    with pytest.raises(argparse.ArgumentTypeError, match="is not a folder: create it or give another path"):
        exits.markdown_file(str(tmp_path / "missing" / "table.md"))


def test_a_figure_or_table_path_may_name_its_extension_in_capitals(tmp_path):
    """toy.PNG is a PNG path, TABLE.MD a Markdown one; a folder so named, or another extension, is not,
    nor a name that is no UTF-8 text."""
    assert exits.figure_file(str(tmp_path / "toy.PNG")) == tmp_path / "toy.PNG"
    here = os.getcwd()
    os.chdir(tmp_path)  # a bare name: a figure, or a table, in the current folder
    try:
        assert exits.figure_file("toy.png") == Path("toy.png")
        assert exits.markdown_file("table.md") == Path("table.md")
    finally:
        os.chdir(here)
    assert exits.markdown_file(str(tmp_path / "TABLE.MD")) == tmp_path / "TABLE.MD"
    (tmp_path / "folder.PNG").mkdir()
    with pytest.raises(argparse.ArgumentTypeError, match="expected the path of a .png file"):
        exits.figure_file(str(tmp_path / "toy.jpg"))
    with pytest.raises(argparse.ArgumentTypeError) as refused:  # a folder is said to be one
        exits.figure_file(str(tmp_path / "folder.PNG"))
    assert str(refused.value) == (f"{tmp_path / 'folder.PNG'} is a folder: give the path of a .png file to draw the "
                                  f"figure in, e.g. {tmp_path / 'folder.PNG' / 'figure.png'}")
    with pytest.raises(argparse.ArgumentTypeError) as refused:  # its record holds its name as UTF-8 text
        exits.figure_file(os.fsdecode(os.fsencode(tmp_path) + b"/toy\xff.png"))
    assert str(refused.value) == ("the figure's name toy\\udcff.png is no UTF-8 text, which the record of the figures "
                                  "drawn in its folder (.figures.sha256) holds: give a name of UTF-8 text")


@pytest.mark.parametrize("error, stdouts", [
    (OSError(28, "No space left on device"), True),  # no file name: a write to standard output
    (OSError(28, "No space left on device", "/full/disk/figure.png"), False),  # a file of the command's
    (BrokenPipeError(32, "Broken pipe"), True)])
def test_only_a_write_naming_no_file_is_a_lost_standard_output(error, stdouts):
    """A full disk under a named file leaves stdout open: what the command printed still shows."""
    assert exits.lost_stdout(error) is stdouts


def test_a_handled_command_puts_back_the_signal_handlers_it_replaced():
    """After run.main returns (in a notebook, a test, a harness), Ctrl-C is the caller's again."""
    before = {signum: signal.getsignal(signum) for signum in exits.SIGNALS}
    assert exits.handled(lambda: None, "again") == 0
    with pytest.raises(ZeroDivisionError):
        exits.handled(lambda: 1 / 0, "again")  # a bug: raised again, with the handlers put back
    assert {signum: signal.getsignal(signum) for signum in exits.SIGNALS} == before


LATE_SIGNALS = """
import atexit, os, signal, sys, time
sys.path.insert(0, {root!r})
import exits
def late():  # Ctrl-C and SIGTERM while Python exits, once the command has said its last
    os.kill(os.getpid(), signal.SIGINT)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
atexit.register(late)
print("accuracy 97 %")
exits.leave(0)
"""
ENTRY_POINTS = ["run.py", "nano_eggroll.py", "toy_eggroll.py", *sorted(f"examples/{path.name}" for path in
                                                                        (ROOT / "examples").glob("*.py"))]


def test_a_signal_after_a_command_has_ended_changes_nothing():
    """Ctrl-C or SIGTERM during Python's own exit, after the result is printed: nothing is left to
    stop, so the process ends as the command did (status 0, no traceback, not killed by the signal)."""
    done = subprocess.run([sys.executable, "-c", LATE_SIGNALS.format(root=str(ROOT))], capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "accuracy 97 %\n", "")


@pytest.mark.parametrize("name", ENTRY_POINTS)
def test_every_entry_point_leaves_through_exits_leave(name):
    assert (ROOT / name).read_text(encoding="utf-8").rstrip().splitlines()[-1].startswith("    exits.leave(")


def test_signals_after_the_first_are_let_go_while_the_command_stops(capsys):
    """A burst of SIGTERM (a scheduler sending it again, Ctrl-C pressed twice): the first stops the
    command, one line and 143; those that arrive while it stops raise nothing in its cleanup (in an
    object's __del__ they printed a traceback), which runs to its end."""
    cleaned = []

    def command():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            signal.sigtimedwait([], 1)  # (the handler raises before this returns)
        finally:
            os.kill(os.getpid(), signal.SIGTERM)
            os.kill(os.getpid(), signal.SIGINT)
            cleaned.append(True)
    assert exits.handled(command, "again") == 143 and cleaned == [True]
    assert capsys.readouterr().err == "error: interrupted; again\n"


@pytest.mark.parametrize("parse", [exits.at_least(1), exits.members, exits.positive_number, exits.populations,
                                   exits.integers_at_least(1)])
@pytest.mark.parametrize("text", ["1_0", "\uff11\uff10"])  # a digit group (10, or 0_1 read as 1), full-width 10
def test_an_option_number_is_read_as_people_type_it(parse, text):
    """The examples' and bench's numbers: ASCII digits without Python's digit-group underscores."""
    assert parse("10") in (10, 10.0, [10])
    with pytest.raises(argparse.ArgumentTypeError):
        parse(text)


@pytest.mark.parametrize("text", ["0", "-1", "nan", "inf", "1e-39", "3.5e38", "1e300"])
def test_a_positive_number_lies_in_float32s_range(text):
    """A sigma or learning rate float32 would round to 0 or inf is refused as an option, not met as
    an overflow inside the step; float32's smallest normal and largest number are taken."""
    with pytest.raises(argparse.ArgumentTypeError, match="expected a (finite number > 0|number in 1.18e-38..3.4e\\+38)"):
        exits.positive_number(text)
    low, high = numpy.finfo(numpy.float32).tiny, numpy.finfo(numpy.float32).max
    assert exits.positive_number(repr(float(low))) == low and exits.positive_number(repr(float(high))) == high


@pytest.mark.parametrize("parse, text, twice", [(exits.integers_at_least(1), "1,4,1", 1),
                                                (exits.populations, "256,1024,1024", 1024)])
def test_a_list_option_names_a_number_given_twice(parse, text, twice):
    """--ranks 1,1 would measure rank 1 twice, and compare unlike --ranks 1 with a folder's records:
    refused, naming the number; each number once is taken in its order."""
    with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"{text!r} names {twice} twice: give each once")):
        parse(text)
    assert parse(",".join(dict.fromkeys(text.split(",")))) == [int(part) for part in dict.fromkeys(text.split(","))]


def test_a_learning_rate_lies_in_zero_to_one():
    """exits.learning_rate, as run.py train's --lr: (0, 1], 1 included; above it, refused as an option,
    and below 0 or out of float32's range as positive_number refuses it."""
    assert exits.learning_rate("1") == 1.0 and exits.learning_rate("0.001") == 0.001
    for text in ("1.0000001", "2", "1e10"):
        with pytest.raises(argparse.ArgumentTypeError, match=re.escape(f"expected a learning rate in (0, 1], got "
                                                                       f"{text!r}")):
            exits.learning_rate(text)
    with pytest.raises(argparse.ArgumentTypeError, match="expected a finite number > 0, got 'nan'"):
        exits.learning_rate("nan")


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_an_output_that_cannot_show_the_projects_symbols_is_one_line_naming_the_fix(encoding):
    """nano_eggroll.py's help holds symbols an ASCII or Latin-1 output cannot show: one line naming the
    encoding, the character and the fix, exit status 2, no traceback."""
    done = subprocess.run([sys.executable, str(Path(exits.__file__).parent / "nano_eggroll.py"), "--help"],
                          capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": encoding})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert re.match(rf"error: this output's encoding, {encoding}, cannot show '\\(x[0-9a-f]{{2}}|u[0-9a-f]{{4}})'",
                    done.stderr), done.stderr  # × (\xd7) for ASCII, a Greek letter (\u...) for Latin-1
    assert done.stderr.endswith(
        "which the command prints: set PYTHONIOENCODING=utf-8 (or a UTF-8 locale, e.g. LANG=C.UTF-8)\n")


def test_what_a_command_prints_shows_control_characters_and_keeps_lines_and_bars(capsys):
    """While a command runs (exits.handled), stdout and stderr show a control character in a path it
    names as \\xNN (a note, a success line, a progress bar's label alike), keep the line breaks,
    carriage returns and tabs that lines and bars are made of, and are the streams they were after."""
    before = sys.stdout, sys.stderr

    def command():
        print("note: /tmp/a\x1b[2Jb\x07 holds\tno run\r", file=sys.stderr)
        print("figures in /tmp/\x9bc/\udcffd")  # and a byte that is not UTF-8, as Python reads a file name
    assert exits.handled(command, "run it again") == 0
    out, err = capsys.readouterr()
    assert err == "note: /tmp/a\\x1b[2Jb\\x07 holds\tno run\r\n" and out == "figures in /tmp/\\x9bc/\\xffd\n"
    assert (sys.stdout, sys.stderr) == before


@pytest.mark.parametrize("value", ["-1e-3", "-inf", "-.5e1"])
def test_a_negative_value_argparse_takes_for_an_option_is_told_how_to_give_it(value, capsys):
    """argparse reads -1e-3 or -inf after an option as another option, and says the option expected
    a value: the line says how to give one that starts with '-'; given so, the value meets the
    option's own check."""
    with pytest.raises(SystemExit) as ended:
        run.main(["train", "--lr", value])
    assert ended.value.code == 2
    assert capsys.readouterr().err == ("error: argument --lr: expected one argument (a value that starts with '-' is "
                                       "written --lr=VALUE); see run.py train --help\n")
    assert run.main(["train", f"--lr={value}"]) == 2
    assert "--lr must lie in (0, 1]" in capsys.readouterr().err
    with pytest.raises(SystemExit):  # an option of two words too
        run.main(["train", "--init-std", value])
    assert "argument --init-std: expected one argument (a value that starts with '-' is written --init-std=VALUE)" \
        in capsys.readouterr().err
