"""Which figures in a folder the project drew: the record beside them, RECORD (`.figures.sha256`),
holds the sha256 of every figure a command wrote there, one "<sha256>  <name>" line each, as
sha256sum writes. A file under a figure's name whose digest the record does not hold is not the
project's (a user's, a PNG too): the command that would write it refuses it before any work and
neither replaces nor deletes it. report.py (the figures of reproduce) and lesson.py keep RECORD,
each keeping the lines of the figures that are not its own (their figures' names differ);
toy_eggroll.py, whose --out takes any name, keeps a record of its own, TOY_RECORD, so that it never
takes a report's or the lesson's figure for one it drew."""
import contextlib
import fcntl
import hashlib
import os
import re
import sys

import data
import run_folder
from run_folder import UsageError

RECORD = run_folder.FIGURE_RECORD  # .figures.sha256
TOY_RECORD = ".toy-figures.sha256"
RECORD_LINE = re.compile(rb"([0-9a-f]{64})  ([^/\r\n\0]+)\r?\n")  # CRLF too: a checkout that converts line ends
MAX_FIGURE_BYTES = 2**26  # a figure is some 100 kB
MAX_RECORD_BYTES = 2**16  # the record holds a line or two per figure, of some 90 bytes each


def recorded(folder, instead, record=RECORD):
    """{name: the sha256 digests} of the figures drawn in `folder`, as its `record` says (none where
    there is no record); a UsageError ending with `instead` (the fix) if that file is a link or no
    such record."""
    path = folder / record
    if not os.path.lexists(path):
        return {}
    run_folder.refuse_link(path)
    text = run_folder.read_bytes(path, MAX_RECORD_BYTES)
    lines = list(RECORD_LINE.finditer(text))
    if sum(len(line[0]) for line in lines) != len(text):
        raise UsageError(f"{path} is not the record of the figures drawn there (\"<sha256>  <figure>\" lines): it "
                         f"is left as it is; {instead}")
    held = {}
    for line in lines:
        held.setdefault(line[2].decode(errors="surrogateescape"), set()).add(line[1].decode())
    return held


def digest(path):
    """The sha256 of the file `path`, in hex."""
    return hashlib.sha256(run_folder.read_bytes(path, MAX_FIGURE_BYTES, largest="a figure holds")).hexdigest()


def write(folder, held, record=RECORD):
    """Replace `folder`'s `record` of the figures drawn there by `held` ({name: digests})."""
    run_folder.write_atomically(folder / record, "".join(
        f"{value}  {name}\n" for name in sorted(held) for value in sorted(held[name])))


def refuse_unrecorded(path, who, instead, record=RECORD):
    """Before any work: a UsageError, ending with `instead` (the fix), if `path`, a figure that `who`
    (the report, the lesson) would write, holds a file that the record in its folder does not hold
    (the record itself checked too: `recorded`). No file there, or what is not a regular file (its
    writer refuses it), passes."""
    check_name(path)
    refuse_data_folder(path.parent, instead)
    run_folder.refuse_run_folder(path.parent, instead)
    held = recorded(path.parent, instead, record)
    if os.path.isfile(path) and not os.path.islink(path) and digest(path) not in held.get(path.name, ()):
        raise UsageError(f"{path} is a file this command did not write (not a figure {who} drew: its {record} does "
                         f"not hold it): it is left as it is; {instead}")


def refuse_data_folder(folder, instead):
    """A UsageError ending with `instead` (the fix) if `folder` is, or lies inside, an N-MNIST copy
    (data.data_folder_problem), which the project only reads: no figure or page is written among recordings."""
    problem = data.data_folder_problem(folder)
    if problem is not None:
        raise UsageError(f"{problem}; {instead}")


def check_name(path):
    """A UsageError if the figure `path`'s name holds a line break, which a line of the record cannot."""
    if "\n" in path.name or "\r" in path.name:
        raise UsageError(f"{str(path)!r}: a figure's name holds a line break, which the record of the figures "
                         f"({RECORD}) cannot hold; give a name without one")


@contextlib.contextmanager
def record_locked(folder):
    """Hold an flock on `folder` itself (Linux, macOS: no file is made for it) while the record is
    read, changed and written back, so that commands drawing into one folder at once keep each
    other's lines."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:  # another command records its figure there now, or holds the folder locked
            print(f"note: waiting for another process that holds {folder} locked, to record the figure there",
                  file=sys.stderr, flush=True)
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        yield
    finally:
        os.close(descriptor)  # the flock goes with it


@contextlib.contextmanager
def writing(path, record=RECORD):
    """Write the figure `path` as `run_folder.writing` writes (a temporary file beside it, then a
    rename): its digest joins the folder's record before the file takes its name, so that the
    project knows it for its own (beside the digest of the figure it replaces, should the rename
    not happen), and is its name's only one once it has. Yields the temporary file's Path."""
    instead = f"move it out of {path.parent}"
    check_name(path)
    with run_folder.writing(path) as temporary:
        yield temporary
        drawn = digest(temporary)
        with record_locked(path.parent):
            held = recorded(path.parent, instead, record)
            replaced = {digest(path)} if path.is_file() else set()
            held[path.name] = held.get(path.name, set()) & replaced | {drawn}
            write(path.parent, held, record)
    with record_locked(path.parent):
        held = recorded(path.parent, instead, record)
        if held.get(path.name) != {drawn}:
            held[path.name] = {drawn}
            write(path.parent, held, record)
