"""How a command ends, for every entry point (run.py, nano_eggroll.py, lesson.py): whatever stops
it becomes one line on stderr and an exit status, never a traceback for what a user or the machine
can cause.

    a user's error: a bad option or file, damaged data, an OS error naming its path     2
    out of memory, or standard output that cannot take the result                        2
    Ctrl-C, SIGTERM, SIGHUP: where it stopped and how to go on                 130, 143, 129
    a closed pipe on stdout or stderr (`... | head`): the line only if stderr takes it   141

In an MPI job (run.py --distributed) an error every process met is printed by the first; one a
process met alone is printed by it, with its rank, and ends the job. A bug keeps its traceback.
"""
import argparse
import contextlib
import errno
import math
import os
import re
import resource
import signal
import sys
import warnings
from pathlib import Path

import distributed
from run_folder import UsageError, os_problem

SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # each stops a command where it can resume
STDOUT_ERRORS = (errno.ENOSPC, errno.EIO, errno.EFBIG, errno.EDQUOT)  # a write with no file name: stdout's


def ending(error, again, less_memory="free memory", interrupted="interrupted"):
    """(line, exit status, whether every process of a job met it) for an exception that ends a
    command, or None for a bug. `again`: how to go on after a signal (or a function that says it at
    that moment); `less_memory`: what to do when memory runs out; `interrupted`: the words for a
    signal that arrives outside a run."""
    again = again() if callable(again) else again
    everywhere = getattr(error, "everywhere", False)
    if isinstance(error, (KeyboardInterrupt, UsageError)) and hasattr(error, "signum"):  # a run stopped by one
        words = f"interrupted: {error}" if isinstance(error, UsageError) else interrupted
        return f"{words}; {again}", 128 + error.signum, everywhere
    if isinstance(error, KeyboardInterrupt):  # Ctrl-C under Python's own handler
        return f"{interrupted}; {again}", 128 + signal.SIGINT, everywhere
    if isinstance(error, BrokenPipeError):
        return "standard output was closed", 128 + signal.SIGPIPE, everywhere
    if isinstance(error, MemoryError):
        detail = f" ({error})" if str(error) else ""
        limited = resource.getrlimit(resource.RLIMIT_AS)[0] != resource.RLIM_INFINITY  # ulimit -v: it may be that
        fix = f"{less_memory}; or raise the limit (ulimit -v)" if limited else less_memory
        return f"out of memory{detail}, more than the estimate checked before the start; {fix}", 2, False
    if isinstance(error, OSError):
        # one with a file name is the system's own (say what to do); one without, the project's line
        if error.filename:
            return os_problem(error, "use"), 2, False
        if error.errno in STDOUT_ERRORS:
            return f"cannot write standard output: {error.strerror}; free space where it goes, or send it " \
                   f"elsewhere", 2, False
        if error.errno == errno.EMFILE:  # a pipe, a worker process or a lock under a small ulimit -n
            files = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
            return f"too many open files for this process's limit (ulimit -n {files}); raise it (e.g. ulimit -n " \
                   f"{max(1024, 4 * files)})", 2, False
        return str(error), 2, False
    if isinstance(error, UnicodeEncodeError) and error.encoding.lower().replace("-", "") != "utf8":
        # a symbol (σ, ±) printed on an output of a narrower encoding (PYTHONIOENCODING=ascii, LANG=C)
        return f"this output's encoding, {error.encoding}, cannot show {ascii(error.object[error.start:error.end])}, " \
               f"which the command prints: set PYTHONIOENCODING=utf-8 (or a UTF-8 locale, e.g. LANG=C.UTF-8)", 2, \
            everywhere
    if isinstance(error, (UsageError, ValueError, RuntimeError)):  # data.BadDataError is a ValueError
        return str(error), 2, everywhere
    return None


def handled(command, again, team=lambda: distributed.ALONE, less_memory="free memory", interrupted="interrupted"):
    """Run command() with SIGINT, SIGTERM and SIGHUP raising distributed.Stopped; its exit status:
    0, or as `ending` says, after the line. `team()`: the job's team at that moment (an MPI job's
    is made inside `command`)."""
    keep_standard_streams()
    handlers = catch(SIGNALS, first_signal_stops(lambda signum: team().on_signal(signum)))
    formatted = warnings.formatwarning
    warnings.formatwarning = warning_line
    try:
        with printable_output():
            command()
    except BaseException as error:
        ended = ending(error, again, less_memory, interrupted)
        if ended is None:
            if team().size > 1:  # a bug: show it, and end every process of the job rather than leave them waiting
                import traceback
                traceback.print_exc()
                team().abort(1)
            raise
        line, status, everywhere = ended
        if lost_stdout(error):
            silence(stderr=False)  # what it still holds is dropped, not tried again at exit
        if isinstance(error, BrokenPipeError):
            tell(f"error: {line}")
            if team().size > 1:
                team().abort(status)
            return status
        return fail(line, team(), status, everywhere)
    finally:
        warnings.formatwarning = formatted
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    return 0


def catch(signals, stop):
    """Make `stop` the handler of each of `signals` that the program did not begin ignoring (nohup
    ignores SIGHUP, a shell starts a background job ignoring SIGINT: such a run goes on through them);
    {signal: the handler replaced}."""
    return {signum: signal.signal(signum, stop) for signum in signals if signal.getsignal(signum) != signal.SIG_IGN}


def keep_standard_streams():
    """A standard stream closed when the program began (`2>&-`) gets /dev/null at its file descriptor,
    so that no file the command opens takes that number and what is written there; stderr, which Python
    then leaves None, writes nowhere: the progress bar and notes are dropped, the command goes on, and its
    exit status says how it ended. (A closed stdout is said by the command that writes to it.)"""
    for descriptor in (0, 1, 2):
        try:
            os.fstat(descriptor)
        except OSError:  # closed: os.open takes the lowest free number, this one
            os.open(os.devnull, os.O_RDWR)
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")


def leave(status):
    """sys.exit(status) for an entry point whose command has ended and said so. A signal in Python's
    own exit that follows (modules torn down, MPI finalised: a fraction of a second) would end the
    process by the signal with no line, although nothing is left to stop: it is ignored."""
    for signum in SIGNALS:
        signal.signal(signum, signal.SIG_IGN)
    sys.exit(status)


def first_signal_stops(stop):
    """A signal handler that calls stop(signum) at the first signal and lets later ones go (a burst
    of SIGTERM, Ctrl-C pressed again), which would otherwise raise again in the middle of the
    stopping: in a cleanup, or in an object's __del__ as a traceback."""
    stopped = []

    def handler(signum, frame):
        if not stopped:
            stopped.append(signum)
            stop(signum)
    return handler


# What is shown as \\xNN: every control character but the tab, line break and carriage return that
# lines and progress bars are made of, and a byte of a file name that is not UTF-8 (Python's
# surrogate escape, which no output encodes)
SHOWN = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\udc80-\udcff]")


def printable(text):
    """`text` with what a terminal would obey rather than print (an escape sequence's ESC) as \\xNN."""
    return SHOWN.sub(lambda match: f"\\x{ord(match[0]) & 0xff:02x}", text)


def one_line(text):
    """`text` as one line the terminal prints as it is, whatever a path it names holds: printable, and
    a line break as \\n, a carriage return as \\x0d."""
    return printable(text).replace("\n", "\\n").replace("\r", "\\x0d")


class Printable:
    """A text stream (stdout, stderr) that writes a control character as \\xNN, not to the terminal:
    an escape sequence in a path a line names (ESC [2J clears the screen) is printed, not obeyed.
    Everything else is the stream's own."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text):
        return self.stream.write(printable(text))

    def __getattr__(self, name):
        return getattr(self.stream, name)


@contextlib.contextmanager
def printable_output():
    """Standard output and error as Printable streams while a command runs, then as they were
    (unless the command replaced them)."""
    saved = sys.stdout, sys.stderr
    shown = tuple(None if stream is None else Printable(stream) for stream in saved)
    sys.stdout, sys.stderr = shown
    try:
        yield
    finally:
        if (sys.stdout, sys.stderr) == shown:
            sys.stdout, sys.stderr = saved


def warning_line(message, category, filename, lineno, line=None):
    """warnings.formatwarning for a command: a warning as one line, "warning: ...", not Python's
    file:line: Category: form."""
    return f"warning: {one_line(str(message))}\n"


def lost_stdout(error):
    """Whether `error` is a write to standard output that failed (a closed pipe, a full disk)."""
    return isinstance(error, BrokenPipeError) or isinstance(error, OSError) and not error.filename \
        and error.errno in STDOUT_ERRORS


def say(text, otherwise):
    """Print `text` on stdout now; if stdout cannot take it (closed, a full disk, /dev/full), a
    UsageError ending with `otherwise`, and stdout is closed for the rest of the program."""
    if sys.stdout is None:  # started with stdout closed (`>&-`)
        raise UsageError(f"cannot write to standard output: it is closed; {otherwise}")
    try:
        print(text, flush=True)
    except BrokenPipeError:
        raise
    except OSError as error:
        silence(stderr=False)
        raise UsageError(f"cannot write to standard output: {error.strerror or error}; {otherwise}") from None


def silence(stderr=True):
    """Point stdout (and stderr) at /dev/null, so that what they still hold is dropped quietly."""
    null = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr) if stderr else (sys.stdout,):
        try:
            os.dup2(null, stream.fileno())
        except (OSError, ValueError, AttributeError):  # not a real file (pytest's capture), or closed
            pass
    os.close(null)


class Parser(argparse.ArgumentParser):
    """argparse, a usage error in one line (the problem and where to read more, exit status 2),
    not argparse's usage block."""

    def error(self, message):
        missing = re.fullmatch(r"argument (--[\w-]+): expected one argument", message)
        if missing:  # argparse takes a value such as -1e-3 or -inf for an option, not for the option's value
            message += f" (a value that starts with '-' is written {missing[1]}=VALUE)"
        tell(f"error: {message}; see {self.prog} --help")
        sys.exit(2)

    def _print_message(self, message, file=None):
        """argparse's writer of the help, which drops a failed write: a help that standard output
        cannot take (/dev/full, a full disk) is one line and exit status 2, not a silent 0; one
        that a closed pipe cuts short, exit status 141. (With standard output closed, `>&-`, the
        help goes to stderr, as argparse has it.)"""
        if not message or file is not sys.stdout or file is None:
            return super()._print_message(message, file)
        try:
            file.write(message)
            file.flush()
        except BrokenPipeError:
            silence(stderr=False)
            tell("error: standard output was closed")
            sys.exit(128 + signal.SIGPIPE)
        except OSError as error:
            silence(stderr=False)
            tell(f"error: cannot write the help to standard output: {error.strerror or error}; rerun with standard "
                 f"output where it can be written")
            sys.exit(2)


def plain(kind, text):
    """kind(text) (int or float) for a number as people type it, ASCII without digit-group
    underscores; a ValueError otherwise (int() and float() read other scripts' digits, a full-width
    ６４, and read 0_1 as 1)."""
    if not text.isascii() or "_" in text:
        raise ValueError(text)
    return kind(text)


def at_least(low, below=None):
    """argparse type: an integer >= low (and < below, if given)."""
    def number(text):
        try:
            value = plain(int, text)
        except ValueError:
            value = None
        if value is None or value < low or below is not None and value >= below:
            wanted = f">= {low}" if below is None else f"in {low}..{shown_bound(below - 1)}"
            raise argparse.ArgumentTypeError(f"expected an integer {wanted}, got {text!r}")
        return value
    return number


def shown_bound(value):
    """2^63-1 for 2 ** 63 - 1, as a bound of a seed reads; other numbers as they are."""
    return "2^63-1" if value == 2 ** 63 - 1 else str(value)


def members(text):
    """argparse type: an ES population, an even integer >= 2 (P antithetic pairs)."""
    try:
        value = plain(int, text)
    except ValueError:
        value = None
    if value is None or value < 2 or value % 2:
        raise argparse.ArgumentTypeError(f"expected an even integer >= 2 (P antithetic pairs), got {text!r}")
    return value


def populations(text):
    """argparse type: comma-separated ES populations, each an even integer >= 2 (e.g. 256,1024), each
    once."""
    try:
        values = [members(part) for part in text.split(",")]
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(f"expected even integers >= 2 (P antithetic pairs) separated by commas, got "
                                         f"{text!r}") from None
    return each_once(values, text)


def integers_at_least(low):
    """argparse type: comma-separated integers, each >= low (e.g. 512,2048), each once."""
    one = at_least(low)

    def numbers(text):
        try:
            values = [one(part) for part in text.split(",")]
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(f"expected integers >= {low} separated by commas, got {text!r}") from None
        return each_once(values, text)
    return numbers


def each_once(values, text):
    """values, or an ArgumentTypeError naming one given twice (1,1 would run or compare as 1 twice)."""
    repeated = next((value for i, value in enumerate(values) if value in values[:i]), None)
    if repeated is not None:
        raise argparse.ArgumentTypeError(f"{text!r} names {repeated} twice: give each once")
    return values


def markdown_file(text):
    """argparse type: the path of a Markdown table to write: a .md file in an existing folder, never
    a run's checkpoint or another file the name of a table does not fit (.MD is .md too)."""
    if not text.lower().endswith(".md") or os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"expected the path of a .md file to write the table to, got {text!r}")
    if not os.path.isdir(os.path.dirname(text) or "."):  # checked before the work, not after
        raise argparse.ArgumentTypeError(f"{os.path.dirname(text)} is not a folder: create it or give another path")
    return Path(text)


def figure_file(text):
    """argparse type: the path of a figure to write: a .png file (.PNG too; not a folder) of a UTF-8
    name in an existing folder, checked before the work."""
    if os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text} is a folder: give the path of a .png file to draw the figure in, "
                                         f"e.g. {os.path.join(text, 'figure.png')}")
    if not text.lower().endswith(".png"):
        raise argparse.ArgumentTypeError(f"expected the path of a .png file to draw the figure in, got {text!r}")
    if not os.path.isdir(os.path.dirname(text) or "."):
        raise argparse.ArgumentTypeError(f"{os.path.dirname(text)} is not a folder: create it or give another path")
    try:
        os.path.basename(text).encode()
    except UnicodeEncodeError:  # a name of bytes that are no UTF-8: the record beside the figure holds the name
        raise argparse.ArgumentTypeError(f"the figure's name {ascii(os.path.basename(text))[1:-1]} is no UTF-8 text, "
                                         f"which the record of the figures drawn in its folder (.figures.sha256) "
                                         f"holds: give a name of UTF-8 text") from None
    return Path(text)


def output_folder(text):
    """argparse type: a folder to write records into (made, if new, before any work): not a file."""
    if not text or (os.path.lexists(text) and not os.path.isdir(text)):
        raise argparse.ArgumentTypeError(f"expected a folder to write the records into, got {text!r}")
    return Path(not_standard_output(text))


def path_given(text):
    """argparse type: a path, which an empty text is not (Path("") would be the current folder)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path: give a path (. for the current folder)")
    return Path(text)


def not_standard_output(text):
    """argparse type: the path of a folder or file that a command writes, never `-`, which many tools
    read as standard output (a folder or file of that name is ./-)."""
    if text == "-":
        raise argparse.ArgumentTypeError("'-' is read as standard output by many tools, and this command writes "
                                         "files at the path given: give a path (./- for one named -)")
    if text and not text.strip():  # (an empty one is said where it is read)
        raise argparse.ArgumentTypeError(f"{text!r} is blanks only (a variable left empty?): give a path")
    return text


PNG = b"\x89PNG\r\n\x1a\n"  # how a figure's file begins


def refuse_foreign_file(path, header, what, instead):
    """Before any work: a UsageError if `path` holds a file this command did not write, one that
    does not begin with `header` (bytes, or a bytes regular expression matched at the start: what
    the command writes first), so that it is never overwritten; `what` names the command's file (a
    PNG figure), `instead` the fix (give another --out). No file there, the command's own earlier
    output, or something that is not a regular file (its writer refuses it) passes."""
    if path is None or not os.path.isfile(path) or os.path.islink(path):
        return
    pattern = header if isinstance(header, re.Pattern) else re.compile(re.escape(header))
    try:
        with open(path, "rb") as file:
            head = file.read(4096)
    except OSError:
        return  # what cannot be read is named by the write that fails on it
    if not pattern.match(head):
        raise UsageError(f"{path} is a file this command did not write (not {what}): it is left as it is; "
                         f"{instead}")


# float32's smallest normal and largest number: the settings below are used in float32 arithmetic
FLOAT32_RANGE = (1.1754943508222875e-38, 3.4028234663852886e+38)


def positive_number(text):
    """argparse type: a finite number > 0 within float32's range (a sigma or learning rate beyond it
    would be 0 or inf in the float32 arithmetic it scales)."""
    try:
        value = plain(float, text)
    except ValueError:
        value = math.nan
    low, high = FLOAT32_RANGE
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected a finite number > 0, got {text!r}")
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"expected a number in {low:.3g}..{high:.3g} (float32's range), got {text!r}")
    return value


def learning_rate(text):
    """argparse type: an Adam learning rate in (0, 1], as run.py train's --lr: Adam moves each weight by
    about lr a step, so a larger one overflows or learns nothing, seen only after training has run."""
    value = positive_number(text)
    if value > 1:
        raise argparse.ArgumentTypeError(f"expected a learning rate in (0, 1], got {text!r}")
    return value


def runs_as(script, holds, command):
    """The exit status of a module of run.py's run as a script (`python bench.py`), which is no
    command of its own: one line naming the run.py command that runs what it holds, status 2."""
    options = command.split(" ")[0]
    return fail(f"{script} holds {holds}, which runs as `python run.py {command}` (its options: `python run.py "
                f"{options} --help`)")


def fail(message, team=distributed.ALONE, status=2, everywhere=False):
    """Print `message` as one line on stderr and return the exit status `status`. In an MPI job an
    error that every process met (`everywhere`) is printed by the first; one a process met alone
    is printed by it with its rank (once, without it, if every process met it alike at about the
    same time: Team.last_words), and ends the job, whose other processes may be waiting for it."""
    if team.size == 1 or everywhere:
        if team.rank == 0:
            tell(f"error: {message}")
        return status
    line = team.last_words(message)
    if line is not None:
        tell(line)
    team.abort(status, quiet=line is None)
    return status


def tell(line):
    """Print a line on stderr in one write (mpiexec interleaves the processes' output write by write),
    quietly dropped if stderr is closed or cannot be written."""
    try:
        sys.stderr.write(one_line(line) + "\n")
        sys.stderr.flush()
    except (OSError, AttributeError):
        silence()


def excepthook(again, less_memory="free memory"):
    """A sys.excepthook for a script whose code runs at its top level (lesson.py): what `handled`
    does for a function, and SIGTERM and SIGHUP stop it as Ctrl-C does."""
    def hook(kind, error, trace):
        ended = ending(error, again, less_memory)
        if ended is None:
            return sys.__excepthook__(kind, error, trace)
        if lost_stdout(error):
            silence(stderr=False)  # what it still holds is dropped
        else:
            with contextlib.suppress(OSError, AttributeError):
                sys.stdout.flush()
        tell(f"error: {ended[0]}")
        os._exit(ended[1])
    keep_standard_streams()
    catch(SIGNALS[1:], first_signal_stops(distributed.ALONE.on_signal))
    return hook
