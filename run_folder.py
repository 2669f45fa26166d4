"""A training run's folder: what is in it, and how it is written so that a kill never corrupts it.

    config.json     the settings that define the run's result (config.stored)
    checkpoint.npz  parameters, Adam's state, progress and what they belong to (the run's settings,
                    the network's sizes, the data), replaced atomically at every evaluation
    metrics.jsonl   one validation record per evaluation, appended
    final.json      test and validation accuracy and timings, written when the run ends
    real.json       the run scored on another N-MNIST copy: `run.py evaluate`'s scores, which reproduce
                    --real-root and examples/snn_depth.py --real-root write here
    .lock           held (an OS lock) by the one process working in the folder, which wrote its PID
    .eggroll-run    the mark, written first: the folder is one of the project's runs, and the project
                    deletes or replaces only the files above (`refuse_foreign`, `run_files`)

Every value read from these files is checked (type, shape, range: settings by the rules of their
options); a damaged or foreign file is reported in one line naming it, the field and the fix.

Every file the project writes (here, and the tables, figures, caches and bench output elsewhere)
is written to a new temporary file in the same folder, created exclusively (`create_new`), and
renamed into place (`writing`), so a kill, a full disk or a limit on file size leaves the old file
whole; a failed write removes its temporary file and names the file and what to do
(`os_problem`). The one exception is .lock, whose lock belongs to the file itself. Nothing is
written through a link (`refuse_link`), and every file read is opened one way (`open_regular`):
a regular file, of a bounded size.
"""
import contextlib
import errno
import fcntl
import json
import math
import os
import re
import secrets
import shlex
import stat
import sys
import zipfile
from pathlib import Path, PurePath

import numpy

import config as run_config
import snn
from backend import to_numpy

CHECKPOINT = "checkpoint.npz"
CHECKPOINT_VERSION = 3  # 2 added the identity, 3 the end-to-end time; versions 1 and 2 are still read
LOCK = ".lock"
RUN_FILES = (CHECKPOINT, "metrics.jsonl", "final.json", "config.json", "real.json")
RUN_MARK = ".eggroll-run"  # written first into every run folder: what makes a folder one of the project's runs
FIGURE_RECORD = ".figures.sha256"  # the report's record of its figures beside its tables (figure_record.py)
MARK_TEXT = ("A training run of eggroll-snn (run.py train, run.py reproduce). The project deletes or replaces only "
             "its own files here: " + ", ".join(RUN_FILES) + " and their temporary files.\n")


class UsageError(Exception):
    """A problem with the user's request or files; printed as one line, exit status 2."""


class NotFinite(UsageError):
    """A checkpoint that would hold NaN, inf or a negative second moment, and so was not written."""


@contextlib.contextmanager
def owned(folder):
    """Hold `folder` for this process: a second one that tries gets a UsageError naming the owner.

    An flock on folder/.lock (Linux, macOS): the OS releases it when the owner exits or is killed,
    so a stale lock never blocks. Refused before it holds the folder (a full disk, another owner),
    it takes away again the lock file and the folders it made.
    """
    made = first_missing(folder)
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(os_problem(error, "create the folder", folder)) from None
    created, file, holding, mine = False, None, False, None
    try:
        refuse_link(folder / LOCK)
        flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC  # never through a link; a FIFO won't wait
        try:  # this process made the lock only if it creates it here (and removes it on a refusal)
            try:
                descriptor = os.open(folder / LOCK, flags | os.O_CREAT | os.O_EXCL, 0o666)
                created = True
            except FileExistsError:
                descriptor = os.open(folder / LOCK, flags)
        except OSError as error:
            raise UsageError(os_problem(error, "write", folder / LOCK)) from None
        status = os.fstat(descriptor)
        mine = (status.st_dev, status.st_ino)
        if not stat.S_ISREG(status.st_mode) or status.st_nlink > 1:  # a hard link is another file's content too
            os.close(descriptor)
            created = False  # not a lock this process made: left as it is
            what = "not a regular file" if not stat.S_ISREG(status.st_mode) else \
                f"a hard link, one of {status.st_nlink} names of one file"
            raise UsageError(f"cannot use {folder / LOCK} as the folder's lock: it is {what}; remove it")
        file = os.fdopen(descriptor, "r+")
        try:
            fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            file.seek(0)
            owner = file.read().strip() or "unknown"
            raise in_use(folder, owner) from None
        content = file.read(64)
        if not re.fullmatch(r"\d*\n?", content):  # a lock holds its last owner's PID or nothing: this is not one
            raise UsageError(f"cannot use {folder / LOCK} as the folder's lock: it holds something other than a "
                             f"process ID, so it is not this project's; move it away")
        try:  # the lock file is the one file written in place: the lock belongs to it
            file.seek(0)
            file.truncate()
            file.write(f"{os.getpid()}\n")
            file.flush()
        except OSError as error:
            raise UsageError(os_problem(error, "write", folder / LOCK)) from None
        holding = True
        yield
    except BaseException:
        if created:  # refused, failed or stopped: a lock file this process made goes (the flock goes at exit)
            with contextlib.suppress(OSError):  # its own, not another's now at that path (the folder moved)
                here = os.lstat(folder / LOCK)
                if (here.st_dev, here.st_ino) == mine:
                    (folder / LOCK).unlink()
        if not holding:  # refused before the work began: the folders made for it go too, if empty
            remove_made_folders(folder, made)
        raise
    finally:
        if file is not None:
            with contextlib.suppress(OSError):  # a PID that a full disk did not take: its line is said already
                file.close()


def in_use(folder, owner):
    """The UsageError for `folder` held by the process `owner` (its PID as the lock file says it)."""
    return UsageError(f"{folder} is in use by another process (PID {owner}); wait for it to end or stop it, then "
                      f"run again")


def holder(folder):
    """The PID (as its lock file says it) of the process that holds `folder` (`owned`) now, or None
    if none does; the lock file is only read, never made."""
    try:
        descriptor = os.open(folder / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(descriptor, "rb") as file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return file.read(64).decode(errors="replace").strip() or "unknown"
        except OSError:
            return None
        return None


# What to do about an OS error, by its errno: the end of a line that names the path and the error.
OS_FIXES = {errno.ENOSPC: "free disk space there or use another folder",
            errno.EDQUOT: "free space within your disk quota or use another folder",
            errno.EFBIG: "the limit on a file's size (ulimit -f) is too low for it: raise it or lift it",
            errno.EACCES: "make it accessible to this user or use another folder",
            errno.EPERM: "the system forbids it whatever the permissions (an immutable or append-only file or "
                         "folder: lift that with chattr -i or -a), or use another folder",
            errno.EROFS: "that file system is read-only: mount it writable or use another folder",
            errno.EISDIR: "a folder stands where a file should be: move that folder away, or use another path",
            errno.ENOTDIR: "a file stands where a folder of that path should be: move that file away, or use another path",
            errno.ELOOP: "a symbolic link on that path leads back to itself: replace the link",
            errno.ENOENT: "a folder of that path does not exist: create it or use another path",
            errno.ENAMETOOLONG: "use a shorter path",
            errno.EIO: "the storage reported an I/O error: check the disk, or use another folder",
            errno.EMFILE: "too many files are open: raise the limit (ulimit -n)",
            errno.ENOMEM: "the system is out of memory: free some, then run again"}


def folder_identity(path):
    """(device, inode) of the folder at `path` itself, never through a link; None where no folder is."""
    try:
        status = os.lstat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino) if stat.S_ISDIR(status.st_mode) else None


def kernel_fix(path):
    """What to do about `path` (its links followed) where it lies in /proc or /sys, file systems the
    kernel makes, where no advice about folders or permissions holds; else None."""
    for root in ("/proc", "/sys"):
        if Path(os.path.realpath(path)).is_relative_to(root):
            return (f"{root} is the kernel's own view of the system, where no files of yours can be made: "
                    f"use another path")
    return None


def closed_folder(path):
    """The first folder on the way to `path` (from the root down) that this user may not enter, or None."""
    return next((folder for folder in reversed(Path(path).parents)
                 if os.path.isdir(folder) and not os.access(folder, os.X_OK)), None)


def os_problem(error, action, path=None, then=None):
    """One line about an OSError: 'cannot <action> <path>: <reason>; <fix>' (`path`: the error's
    own file name where None), the fix chosen by its errno; with `then`, what to do once it is mended
    (another folder no longer being a choice). Permission denied on the way to a file names the
    folder that was closed (the one the user gave, say), not a file inside it that the project sought."""
    path = path if path is not None else error.filename
    if error.errno == errno.EACCES and path is not None:
        path = closed_folder(path) or path
    reason = error.strerror or str(error)
    fix = OS_FIXES.get(error.errno, "check that path (permissions, free space, what is there) and run again")
    kernel = kernel_fix(path) if path is not None else None
    if kernel:
        return f"cannot {action} {path}: {reason}; {kernel}"
    if then:
        fix = f"{fix.split(' or use another ')[0].removesuffix(' and run again').rstrip(', ')}, then {then}"
    return f"cannot {action} {path}: {reason}; {fix}"


# How large a file the project reads may be, checked before it is read: far above what the project
# writes (config.json and final.json hold a few kB, metrics.jsonl some 300 bytes a generation, a
# checkpoint's largest array is a weight matrix: 2312 × 64 float32 in the paper's network, 2312 × 4096
# float64 is 76 MB), so that a stray disk image is refused, not allocated.
MAX_JSON_BYTES = 2**24
MAX_METRICS_BYTES = 2**28
MAX_CHECKPOINT_ARRAY_BYTES = 2**30
FILE_KINDS = {stat.S_IFDIR: "a folder", stat.S_IFIFO: "a named pipe (FIFO)", stat.S_IFCHR: "a character device",
              stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


def open_regular(path, limit=None, error=UsageError, largest="such a file holds", action="read"):
    """`path` opened for reading (binary), the one way the project opens a file it reads: what is
    not a regular file (a folder, a FIFO, a device, a socket) is refused before it can block, and
    a file of more than `limit` bytes (more than `largest`) before it is read; each an `error`
    naming the path, an OS error as `os_problem` says it (`action`: the words for the reading)."""
    refused = lambda info: error(f"cannot {action} {path}: it is "
                                 f"{FILE_KINDS.get(stat.S_IFMT(info.st_mode), 'not a file')}, not a regular file; "
                                 f"move it away and put the file back")
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            raise refused(os.stat(path))
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)  # a FIFO: no wait
    except OSError as problem:
        if problem.errno == errno.ENOENT and os.path.islink(path):  # not a missing folder: a broken link
            raise error(f"cannot {action} {path}: it is a link to {os.readlink(path)}, which does not exist; replace "
                        f"the link with the file, or remove it") from None
        raise error(os_problem(problem, action, path)) from None
    try:
        info = os.fstat(descriptor)
        if not stat.S_ISREG(info.st_mode):  # put there since the look
            raise refused(info)
        if limit is not None and info.st_size > limit:
            raise error(f"{path}: {info.st_size:,} bytes, more than {largest} (at most {limit:,} bytes are read); "
                        f"it is not what it should be: move it away or replace it")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "rb")
    except BaseException:
        os.close(descriptor)
        raise


def read_bytes(path, limit, error=UsageError, largest="such a file holds", action="read"):
    """The contents of the regular file `path`, at most `limit` bytes (`open_regular`)."""
    with open_regular(path, limit, error, largest, action) as file:
        try:
            return file.read()
        except OSError as problem:
            raise error(os_problem(problem, action, path)) from None


def read_json(path, fix, error=UsageError, limit=MAX_JSON_BYTES):
    """The JSON value in the regular file `path`; an `error` naming it and ending with `fix` if it is
    not one (not UTF-8 or not JSON, a number of thousands of digits, arrays nested thousands deep)."""
    refused = lambda detail: error(f"{path} is not valid JSON ({detail}); {fix}")
    return parse_json(read_bytes(path, limit, error), refused)


def unique_keys(pairs):
    """json.loads' object_pairs_hook: the object as a dict, a ValueError if a key appears twice (an
    edit by hand, of which json.loads would keep the last value silently)."""
    held = dict(pairs)
    if len(held) < len(pairs):
        twice = next(key for index, (key, _) in enumerate(pairs) if key in dict(pairs[:index]))
        raise ValueError(f"the key {json.dumps(twice)} appears twice in one object")
    return held


def parse_json(text, refused):
    """json.loads(text), or the exception refused(what is wrong) raised (a key twice in one object too)."""
    try:
        return json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise refused("arrays or objects nested too deep") from None
    except UnicodeDecodeError as problem:  # json.loads reads bytes as UTF-8 (or UTF-16/32 by their first bytes)
        raise refused(f"not {problem.encoding.upper()} text, at byte {problem.start}") from None
    except ValueError as problem:  # JSONDecodeError, and an integer of too many digits
        raise refused(str(problem).split("; ")[0]) from None


def load_npz(path, limit, error=UsageError):
    """{name: array} of the .npz archive at `path` (a regular file, `open_regular`), or None if it is
    not one (empty, cut short, an .npy, pickled objects); an `error` naming an array whose header
    declares more than `limit` bytes, checked before any array is read."""
    with open_regular(path, None, error) as file:
        try:
            sizes = {name: (shape, dtype, math.prod(shape) * dtype.itemsize)
                     for name, (shape, dtype) in declared_arrays(file).items()}
            too_large = [(name, *declared) for name, declared in sizes.items() if declared[2] > limit]
            if not too_large:
                file.seek(0)
                with numpy.load(file) as stored:  # an .npy loads as an array, which has no `with`: TypeError
                    return {name: stored[name] for name in stored.files}
        except (OSError, EOFError, ValueError, TypeError, zipfile.BadZipFile):
            return None
    name, shape, dtype, size = too_large[0]
    raise error(f"{path} declares an array {name} of {dtype} {shape}, {size:,} bytes, more than any it should hold "
                f"(at most {limit:,}); it is not what it should be: move it away or replace it")


def declared_arrays(file):
    """{name: (shape, dtype)} as the headers of the .npy members of the zip archive `file` declare
    them, read without reading the arrays; ValueError or BadZipFile if it is not such an archive."""
    declared = {}
    with zipfile.ZipFile(file) as archive:
        for member in archive.infolist():
            with archive.open(member) as npy:
                version = numpy.lib.format.read_magic(npy)
                read = numpy.lib.format.read_array_header_1_0 if version == (1, 0) else \
                    numpy.lib.format.read_array_header_2_0
                shape, _, dtype = read(npy)
            declared[member.filename.removesuffix(".npy")] = shape, dtype
    return declared


TEMPORARY = r"\.[0-9a-f]{8}\.tmp"  # what create_new appends to a name, as a regular expression


def create_new(path):
    """A new, empty regular file beside `path`, named <name>.<random>.tmp, made as mkstemp makes
    one (O_CREAT | O_EXCL: never an existing file, nor through a link planted under its name), with
    the permissions the umask gives; its Path. An OSError if the folder refuses it."""
    while True:
        temporary = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")  # TEMPORARY matches it
        try:
            os.close(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o666))
            return temporary
        except FileExistsError:
            continue


def refuse_link(path):
    """A UsageError if `path` is a symbolic link: the project writes no file through one."""
    if os.path.islink(path):
        fix = "replace the link by a copy of the file it names, or remove it" if os.path.isfile(path) else \
            "it leads to something that is not a file (a folder, a device): remove it" if os.path.exists(path) else \
            "it leads to no file (it does not exist, or the links loop): remove it"
        raise UsageError(f"{path} is a symbolic link (to {os.readlink(path)}), and the project reads and writes "
                         f"its own files only, never through a link: {fix}")


@contextlib.contextmanager
def writing(path, then=None):
    """Write `path` through a new temporary file beside it (`create_new`) and a rename: whatever
    happens, `path` holds its old contents or the new ones in full, and nothing is written through
    a link (a link at `path` is refused: `refuse_link`). If the writing fails, the temporary file
    is removed; an OS error (disk full, a limit on file size, permissions) is a UsageError naming
    `path` and what to do (and `then`, once it is mended: os_problem)."""
    path = Path(path)
    refuse_link(path)
    if path.exists() and not path.is_file():  # a folder, a device (/dev/null), a pipe: never replaced
        raise UsageError(f"cannot write {path}: it is not a regular file (a folder, say), and only a file is "
                         f"replaced; move it out of {path.parent}, then run the command again")
    temporary = None
    try:
        temporary = create_new(path)
        yield temporary
        os.replace(temporary, path)
    except BaseException as error:
        with contextlib.suppress(OSError):
            if temporary is not None:
                temporary.unlink(missing_ok=True)
        if isinstance(error, OSError):
            raise UsageError(os_problem(error, "write", path, then)) from None
        raise


def write_atomically(path, text, then=None):
    """Replace `path` by `text` (UTF-8) through a temporary file, synced, and a rename (`writing`)."""
    with writing(path, then) as temporary:
        with open(temporary, "w", encoding="utf-8") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())


def append_line(path, text):
    """Add a line to `path`, written as a whole new file (`write_atomically`): a failed write leaves
    the lines before it as they were."""
    path = Path(path)
    before = read_bytes(path, MAX_METRICS_BYTES).decode(errors="surrogateescape") if path.exists() else ""
    if before and not before.endswith("\n"):
        before += "\n"
    with writing(path) as temporary:
        with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as file:
            file.write(before + text + "\n")
            file.flush()
            os.fsync(file.fileno())


# ---------------------------------------------------------------------------------------------
# Checkpoints

def identity(config, data=None, summed=False):
    """What a checkpoint belongs to: the run's settings, the network's sizes and the data it trains
    on (data.NMNIST.fingerprint; None where it is not compared, as when `evaluate` scores a run), and
    for a run that trains, how its steps are summed (`summed_by`; left out, and not compared, where
    it is False)."""
    held = {"config": run_config.stored(config), "sizes": list(config.sizes), "data": data}
    return held if summed is False else {**held, "summed": summed}


def summed_by(config, team):
    """How a run's steps are summed where that changes their bits: "allreduce on N processes" for an
    ES run under --update allreduce (each process sums its own pairs, in an order that depends on N),
    else None (one process, or --update seeds: the same bits on any number of processes)."""
    if config.method == "bptt" or team.update != "allreduce":
        return None
    return allreduce_on(team.size)


def allreduce_on(processes):
    """summed_by's words for an allreduce run on `processes` processes."""
    return f"allreduce on {processes} process{'es' * (processes > 1)}"


def summing_processes(summed):
    """The processes of a run summed_by names ("allreduce on N processes"), or None (--update seeds)."""
    return None if summed is None else int(summed.split()[2])


def save_checkpoint(out, params, state, step, step_seconds, identity, end_to_end_seconds, then=None):
    """Write params, Adam state, progress (the steps' seconds, and the run's end-to-end seconds
    until this checkpoint, None if unknown) and the run's `identity` atomically: a temporary file,
    synced, then a rename. What a resume would refuse (NaN or inf, a negative second moment) is
    not written: a UsageError, and the checkpoint there stays as it was (as it does when the writing
    fails: an OS error's line ends with `then`, what to do once it is mended)."""
    arrays = {f"param/{k}": to_numpy(v) for k, v in params.items()}
    arrays.update({f"adam_m/{k}": to_numpy(v) for k, v in state["m"].items()})
    arrays.update({f"adam_v/{k}": to_numpy(v) for k, v in state["v"].items()})
    arrays.update(adam_t=numpy.int64(state["t"]), step=numpy.int64(step),
                  step_seconds=numpy.asarray(step_seconds, dtype=numpy.float64),
                  version=numpy.int64(CHECKPOINT_VERSION), identity=numpy.array(json.dumps(identity)))
    if end_to_end_seconds is not None:
        arrays.update(end_to_end_seconds=numpy.float64(end_to_end_seconds))
    else:  # resumed from a checkpoint that did not record it: a version 2 checkpoint, as that one
        arrays.update(version=numpy.int64(2))
    problem = checkpoint_problem(arrays, {k: arrays[f"param/{k}"] for k in params})
    if problem:
        raise NotFinite(f"training went non-finite by step {step} ({problem}), so {out / CHECKPOINT} was not "
                        f"written")
    with writing(out / CHECKPOINT, then) as temporary:
        with open(temporary, "wb") as file:
            numpy.savez(file, **arrays)
            file.flush()
            os.fsync(file.fileno())


def checkpoint_problem(arrays, like):
    """What is wrong with a checkpoint's arrays on their own and for parameters shaped `like`, or
    None: every array there and no other, integer scalars, parameters and Adam's moments of the
    parameters' shapes and dtypes, finite, second moments >= 0, one duration >= 0 per step done,
    and from version 3 an end-to-end time >= 0."""
    for name in ("version", "step", "adam_t"):
        if name not in arrays:
            return f"{name} is missing"
        if arrays[name].shape != () or arrays[name].dtype.kind not in "iu":
            return f"{name} is {arrays[name].dtype} {arrays[name].shape}, expected an integer"
    version = int(arrays["version"])
    if version not in range(1, CHECKPOINT_VERSION + 1):
        return f"version {version}, expected 1 to {CHECKPOINT_VERSION}"
    tensors = [f"{group}/{k}" for group in ("param", "adam_m", "adam_v") for k in like]
    expected = tensors + ["adam_t", "step", "step_seconds", "version"] + (["identity"] if version > 1 else []) \
        + (["end_to_end_seconds"] if version > 2 else [])
    for name in expected:
        if name not in arrays:
            return f"{name} is missing"
    unexpected = sorted(set(arrays) - set(expected))
    if unexpected:
        return f"it holds an array {unexpected[0]} that no checkpoint of this network has"
    for name in tensors:
        wanted = like[name.split("/", 1)[1]]
        if arrays[name].shape != wanted.shape or arrays[name].dtype != wanted.dtype:
            return (f"{name} is {arrays[name].dtype} {arrays[name].shape}, expected "
                    f"{wanted.dtype} {tuple(wanted.shape)}")
        if not numpy.isfinite(arrays[name]).all():
            return f"{name} holds NaN or inf"
        if name.startswith("adam_v/") and (arrays[name] < 0).any():
            return f"{name} holds negative values"
    step, seconds = int(arrays["step"]), arrays["step_seconds"]
    if seconds.dtype != numpy.float64 or seconds.ndim != 1:
        return f"step_seconds is {seconds.dtype} {seconds.shape}, expected float64 (step,)"
    if not (numpy.isfinite(seconds) & (seconds >= 0)).all():
        return "step_seconds holds a negative, NaN or inf duration"
    if version > 2:
        end_to_end = arrays["end_to_end_seconds"]
        if end_to_end.shape != () or end_to_end.dtype != numpy.float64 or not 0 <= end_to_end < numpy.inf:
            return f"end_to_end_seconds is {end_to_end.dtype} {end_to_end.shape} {end_to_end}, expected one " \
                   f"float64 >= 0"
    if step < 1 or int(arrays["adam_t"]) != step or len(seconds) != step:
        return f"its step {step}, adam_t {int(arrays['adam_t'])} and {len(seconds)} step_seconds disagree"
    return None


def read_identity(array):
    """The identity (see `identity`) a checkpoint holds as JSON text, its settings read as a
    config.json's; ValueError saying what is wrong with it."""
    if array.shape != () or array.dtype.kind != "U":
        raise ValueError(f"identity is {array.dtype} {array.shape}, expected a JSON text")
    stored = parse_json(str(array), lambda detail: ValueError(f"identity is not valid JSON ({detail})"))
    data = stored.get("data") if isinstance(stored, dict) else None
    if not (isinstance(stored, dict) and isinstance(stored.get("config"), dict)
            and isinstance(stored.get("sizes"), list) and all(type(n) is int for n in stored["sizes"])
            and (data is None or isinstance(data, dict) and all(isinstance(v, str) for v in data.values()))):
        raise ValueError("identity does not hold the run's config, sizes and data")
    summed = stored.get("summed")
    counted = isinstance(summed, str) and re.fullmatch(r"allreduce on [1-9][0-9]* process(es)?", summed)
    if summed is not None and not (counted and summed == allreduce_on(summing_processes(summed))):
        raise ValueError(f"identity's summed is {summed!r}, not how a run sums its steps (summed_by)")
    try:
        return dict(stored, config=run_config.stored(run_config.from_stored(stored["config"])))
    except ValueError as error:
        raise ValueError(f"identity's config.{error}") from None


def foreign_problem(stored, wanted):
    """How a checkpoint's identity `stored` differs from the run's `wanted`, as the end of a sentence
    about the checkpoint that says what to do, or None. The data is compared where both name it."""
    theirs, ours = stored["config"], wanted["config"]
    value = lambda held, key: held.get(key, getattr(run_config.RunConfig(), key, None))  # a lever left out: default
    keys = ["method"] if theirs["method"] != ours["method"] else \
        [k for k in [*ours, *(k for k in theirs if k not in ours)] if value(theirs, k) != value(ours, k)]
    differences = [f"{k} {value(theirs, k)}, not {value(ours, k)}" for k in keys]
    if stored["sizes"] != wanted["sizes"]:
        differences.append(f"sizes {'-'.join(map(str, stored['sizes']))}, not {'-'.join(map(str, wanted['sizes']))}")
    if differences:
        return (f"belongs to another run ({'; '.join(differences)}) than its folder's config.json: if config.json "
                f"was changed, restore those settings; if the checkpoint was, put this run's own back (--force "
                f"would delete this checkpoint, which is intact, and train from the start)")
    if "summed" in stored and "summed" in wanted and stored["summed"] != wanted["summed"]:  # both say
        way = lambda summed: "--update seeds" if summed is None else f"--update {summed}"
        processes = summing_processes(stored["summed"])
        how = "with --update seeds (or without --distributed)" if processes is None else \
            f"under mpiexec -n {processes} with --distributed --update allreduce"
        return (f"was stepped with {way(stored['summed'])}, and this command would go on with {way(wanted['summed'])}, "
                f"which sums in another order: resume it {how}, or train it anew in another --out")
    for split, fingerprint in (wanted["data"] or {}).items():
        if stored["data"] is not None and stored["data"].get(split) != fingerprint:
            return (f"was trained on other data ({split}: {stored['data'].get(split)}, here {fingerprint}); give "
                    f"the --data-root it was trained on to continue it, or train on this data in another folder "
                    f"(`run.py evaluate` scores a run on other data)")
    return None


def is_own_file(path):
    """Whether `path` is a regular file of one name, no link: a file the project may have written, and
    may replace or delete (a link, or one name of a hard-linked file, is someone else's too)."""
    try:
        status = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISREG(status.st_mode) and status.st_nlink == 1


def holds_results(out):
    """Whether `out` holds an intact final.json: a run's results, which --force would delete."""
    try:
        final = read_json(out / "final.json", "")
    except UsageError:  # missing, unreadable or not JSON
        return False
    return isinstance(final, dict) and final_problem(final) is None


def read_arrays(path):
    """The arrays of a checkpoint, or None if it is not an .npz archive (empty, cut short, an .npy);
    a UsageError naming it if it is not a regular file or declares an array larger than this
    network's largest (`load_npz`)."""
    return load_npz(path, MAX_CHECKPOINT_ARRAY_BYTES)


def not_the_finished_run(path, step, final, command="train"):
    """Why the checkpoint at `path`, after `step` updates, is not the one its run's final.json `final`
    (intact, of the run's settings and data: check_final_record) records: a checkpoint of the run
    partway put over it, or final.json's count of updates changed, which its own settings tell; with
    the fix, or None."""
    generations, config = final["generations"], run_config.from_stored(final["config"])
    if step == generations:
        return None
    if step == finished_steps(config, final.get("n_train")):
        return (f"{path.parent / 'final.json'} records a run of {generations} updates, but its own settings (and "
                f"the checkpoint) a run of {step}: it is damaged; restore it from a copy of the run, or move it out "
                f"of {path.parent}, and {resume_command(path.parent, config)} scores the run again from its "
                f"checkpoint and writes it anew")
    return (f"checkpoint {path} holds the weights after {step} updates, and final.json records a run of "
            f"{generations}: it is not the finished run's weights; {checkpoint_fix(path, command)}")


def check_finished_checkpoint(out, config, step, command="train"):
    """The intact final.json of the run in `out` (config.json's `config`) whose checkpoint holds `step`
    updates, or None where there is none or it is damaged; a UsageError where final.json is another
    run's (check_final_record) or the checkpoint is not the one it records (not_the_finished_run):
    what evaluate and the examples check before they read a finished run's weights."""
    if not (out / "final.json").exists():
        return None
    check_final_record(out, config, damaged_too=False)
    final = intact_final(out)
    stale = final and not_the_finished_run(out / CHECKPOINT, step, final, command)
    if stale:
        raise UsageError(stale)
    return final


def checkpoint_fix(path, command="train"):
    """What to do about the checkpoint `path` that cannot be used (damaged, or weights no run trains):
    restore it where the run's final.json holds its results (which --force would delete), else train
    the run again; `command` (train or reproduce) picks the advice that works for it (see prepare)."""
    again = "train the run again in another --out" if command == "train" else \
        f"move {path.parent} away (it is left as it is) and reproduce trains the run again there"
    if holds_results(path.parent):
        return (f"restore it from a copy to score the run again (its final.json holds the run's results"
                f"{', which --force would delete' if command == 'train' else ''}), or {again}")
    return "train the run again with --force (it deletes this run's files) or in another --out" if command == "train" \
        else again


def load_checkpoint(path, xp, like, identity, total_steps=None, command="train"):
    """(params, Adam state, step, step seconds, end-to-end seconds) from a checkpoint of parameters
    shaped like `like` (a params dict) and at most `total_steps` steps; a UsageError if it is
    damaged, or belongs to another run than `identity` (see `identity`; its data is compared unless
    None). A version 1 checkpoint has no identity: it is taken to belong to the run; versions 1 and
    2 have no end-to-end time (None). `command` (train or reproduce) picks the advice that works."""
    fix = checkpoint_fix(path, command)

    def damaged(problem):
        return UsageError(f"checkpoint {path} is damaged ({problem}); {fix}")
    arrays = read_arrays(path)
    if arrays is None:
        raise damaged("it is a folder" if path.is_dir() else "it is empty" if path.stat().st_size == 0
                      else "it is not a checkpoint.npz archive")
    version = arrays.get("version")
    if version is not None and version.shape == () and version.dtype.kind in "iu" and version > CHECKPOINT_VERSION:
        raise UsageError(f"checkpoint {path} was written by a newer eggroll-snn (checkpoint version {int(version)}; "
                         f"this one reads 1 to {CHECKPOINT_VERSION}): use that version's code for this run")
    if "identity" in arrays:  # first: a checkpoint of other layers than config.json's is another run's, not damaged
        try:
            foreign = foreign_problem(read_identity(arrays["identity"]), identity)
        except ValueError as error:
            raise damaged(error) from None
        if foreign:
            raise UsageError(f"checkpoint {path} {foreign}")
    problem = checkpoint_problem(arrays, like)
    if problem:
        raise damaged(problem)
    step = int(arrays["step"])
    if total_steps is not None and step > total_steps:
        raise damaged(f"its step {step} does not fit a run of {total_steps} steps")
    group = lambda prefix: {k.split("/", 1)[1]: xp.asarray(v) for k, v in arrays.items()
                            if k.startswith(prefix + "/")}
    state = {"m": group("adam_m"), "v": group("adam_v"), "t": int(arrays["adam_t"])}
    end_to_end = float(arrays["end_to_end_seconds"]) if "end_to_end_seconds" in arrays else None
    return group("param"), state, step, list(arrays["step_seconds"]), end_to_end


# ---------------------------------------------------------------------------------------------
# config.json, metrics.jsonl, final.json and real.json

def read_config(out):
    """The RunConfig stored in out/config.json, each setting checked by the rules of its option; a
    UsageError naming the setting if it is damaged or foreign."""
    path = out / "config.json"
    fix = config_fix(out)
    values = read_json(path, fix)
    if not isinstance(values, dict) or "method" not in values:
        raise UsageError(f"{path} does not hold a run's settings (a JSON object with a method); {fix}")
    if values["method"] not in run_config.METHODS:
        raise UsageError(f"{path} is damaged (method must be one of {', '.join(run_config.METHODS)}, got "
                         f"{json.dumps(values['method'])}); {fix}")
    try:
        return run_config.from_stored(values)
    except ValueError as error:
        raise UsageError(f"{path} is damaged ({error}); {fix}") from None


def config_fix(out):
    """What to do about a missing or damaged out/config.json, the rest of the run left as it is."""
    return (f"restore it from a copy of the run (a finished run's final.json holds its settings under "
            f"\"config\"), or train in another folder; {out}'s other files are left as they are")


def settings(stored):
    """A config.json's settings as this version stores them (None for what is no run's settings)."""
    try:
        return run_config.stored(run_config.from_stored(stored))
    except (TypeError, ValueError, AttributeError):
        return None


def scores_this_run(real, folder, final):
    """Whether a real.json belongs to the run in `folder` whose final.json is `final` (real_mismatch)."""
    return real_mismatch(real, folder, final) is None


def real_mismatch(real, folder, final):
    """None if a real.json belongs to the run in `folder` whose final.json is `final`, else how it
    differs. Its own is scored at the run's last generation, and named by a folder of this name, or
    of a name it grew from: the project once named runs without their budget, and added it later
    (eggroll-r4-cost0.01-seed2 became eggroll-r4-g100-cost0.01-seed2), so only marks of generations
    or epochs may be new; and, where real.json records the settings of the run it scored
    (`config`), they are this run's."""
    def parts(name):  # the name's parts in order, its budget marks left out
        return [part for part in name.split("-") if not re.fullmatch(r"[ge]\d+", part)]
    scored = PurePath(str(real["run"]).rstrip("/")).name
    if "config" in real and settings(real["config"]) != settings(final["config"]):  # real.json naming its run's
        theirs, ours = settings(real["config"]), settings(final["config"])
        if theirs is None or ours is None:
            return "its settings, or this run's, are no run's settings"
        return "it scored a run of other settings: " + ", ".join(
            f"{name} {theirs.get(name)} (this run's {ours.get(name)})" for name in sorted(set(theirs) | set(ours))
            if theirs.get(name) != ours.get(name))
    if real["generation"] != final["generations"]:
        return f"it scored generation {real['generation']}, and this run finished at {final['generations']}"
    if parts(scored) != parts(Path(folder).name) or not set(scored.split("-")) <= set(Path(folder).name.split("-")):
        return f"it scored the run {real['run']}"
    return None


def first_move_final(folder):
    """What to do before the command that rewrites a damaged final.json: move out a folder standing
    in its place, which --resume refuses ("" where final.json is not a folder)."""
    return f"move the folder final.json out of {folder}, then " if (Path(folder) / "final.json").is_dir() else ""


def resume_command(out, config):
    """The command that continues (or, finished, scores again and rewrites final.json) the run
    `config` in `out`: run.py train --resume with its settings away from the defaults."""
    defaults = run_config.RunConfig()
    settings = [f"{run_config.option(name)} {shlex.quote(str(value))}"
                for name, value in run_config.stored(config).items()
                if name == "method" or value != getattr(defaults, name)]
    processes = summing_processes((checkpoint_identity(out) or {}).get("summed"))  # go on as it was summed
    launch, sharing = ("", "") if processes is None else \
        (f"mpiexec -n {processes} ", " --distributed --update allreduce")
    return f"`{launch}python run.py train --out {shlex.quote(str(out))} --resume {' '.join(settings)}{sharing}` " \
           f"(with the --data-root it trained on)"


def differences(stored, wanted, as_options=False):
    """How the settings `stored` (config.json's) differ from `wanted`, as "seed 1, not 2; ..." (as the
    command's options, "--seed 1, not 2", `as_options`). A setting left out of one (at its default, or
    one the method has not) is shown at its default; one that then agrees follows from another that
    differs (an ES run has no rank) and is not shown. Runs of two methods differ by their method alone:
    the other settings are those of another kind of run."""
    defaults = run_config.RunConfig()

    def value(held, key):
        return json.dumps(held[key] if key in held else getattr(defaults, key, None))

    def said(held, key):  # as typed after the option: a text unquoted
        shown = value(held, key)
        return json.loads(shown) if as_options and shown.startswith('"') else shown
    keys = sorted(key for key in set(wanted) | set(stored) if stored.get(key) != wanted.get(key))
    if "method" in keys:
        keys = ["method"]
    shown = [key for key in keys if value(stored, key) != value(wanted, key)] or keys
    name = lambda key: f"--{key.replace('_', '-')}" if as_options else key
    return "; ".join(f"{name(key)} {said(stored, key)}, not {said(wanted, key)}" for key in shown)


def prepare(out, config, resume, force, command="train"):
    """Make `out` ready for the run `config`; refuse to touch a folder that holds another run
    unless told to (check_prepared). Returns whether the run starts afresh (nothing of a run was
    kept). `command` (train or reproduce) picks the advice that works for it; none deletes a run
    that is intact."""
    holds_run, marked = check_prepared(out, config, resume, force, command)
    if force:
        delete_all(run_files(out))
    elif marked:  # a temporary file a kill (SIGKILL, a power cut) left behind in the run's folder: the run's own
        removed = []
        for path in run_files(out):
            if path.name not in RUN_FILES and is_own_file(path):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path.name)
        if removed:
            print(f"note: removed {len(removed)} temporary file{'s' * (len(removed) > 1)} that a killed run left "
                  f"in {out}: {', '.join(removed)}", file=sys.stderr)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise UsageError(os_problem(error, "create the folder", out)) from None
    if not marked:
        write_atomically(out / RUN_MARK, MARK_TEXT)  # first: from here on the folder is a run's
    fresh = force or not holds_run
    if fresh:  # a run resumed keeps its config.json as it is: it holds these settings (compared above)
        write_atomically(out / "config.json", json.dumps(run_config.stored(config), indent=1))
    return fresh


def check_prepared(out, config, resume, force, command="train", notes=True, data_root=None):
    """prepare's checks, which change nothing: a UsageError if `out` may not take the run `config`
    (another run's settings, a run's files lost, a folder not the project's); the notes it prints
    (`notes`) on what the run will do. `data_root`: the folder the command reads its data from, to
    tell apart a run finished on another folder's recordings. Returns (whether `out` holds a run,
    whether it is marked as one)."""
    wanted = run_config.stored(config)
    elsewhere = "use another --out" if command == "train" else f"move {out} away (it is left as it is)"
    again = {"train": {"unknown": f"{config_fix(out)}",
                       "other": "give the run's own settings to continue it, or use another --out for these "
                                "(that run is left as it is)",
                       "finished": "use another --out to train it again (its final.json is kept)",
                       "lost": "use --force to train afresh (it deletes the run's config.json, metrics.jsonl "
                               "and final.json)"},
             "reproduce": {"unknown": f"{config_fix(out)}",
                           "other": f"move {out} away to keep it; reproduce then trains the preset's run there",
                           "finished": f"move {out} away to train the run again",
                           "lost": f"move {out} away to train the run afresh"}}[command]
    for name in (RUN_MARK, *RUN_FILES):
        refuse_link(out / name)
    for name in RUN_FILES:  # a folder where a run's file goes: before any work, not when the file is written
        if (out / name).exists() and not (out / name).is_file():
            what = FILE_KINDS.get(stat.S_IFMT(os.stat(out / name).st_mode), "not a regular file")
            raise UsageError(f"{out / name} is {what}, not the regular file in which the run keeps its {name}: move "
                             f"it out of {out}, then run the command again")
    instead = "use another --out" if command == "train" else f"move {out} away"
    refuse_odd_mark(out, instead)
    marked = is_run_folder(out)
    if not marked:
        refuse_foreign(out, force, instead)
    metrics = out / "metrics.jsonl"
    trained = metrics.is_file() and metrics.stat().st_size > 0  # its records: the run has trained
    holds_run = trained or any((out / name).exists() for name in ("config.json", CHECKPOINT, "final.json"))
    if holds_run and not force:
        finished = (out / "final.json").exists()
        lost = [name for name in ("config.json", CHECKPOINT) if not (out / name).exists()]
        if trained and not finished and CHECKPOINT in lost:
            raise UsageError(f"{out} holds a run that has trained (its metrics.jsonl has records) but not its "
                             f"{' nor its '.join(lost)}; put {'them' if len(lost) > 1 else 'it'} back to continue, "
                             f"or {again['lost']}")
        if "config.json" in lost:
            raise UsageError(f"{out} holds a run without its config.json, so its settings are unknown; "
                             f"{again['unknown']}")
        stored_config = read_config(out)
        stored = run_config.stored(stored_config)
        if stored != wanted:
            if finished:  # config.json may be the odd one out, which its final.json and checkpoint tell: said first
                check_final_record(out, stored_config, damaged_too=False)
            unstated = [key for key in sorted(stored) if stored[key] != wanted.get(key)
                        and key not in read_json(out / "config.json", config_fix(out))]
            saved = None if finished or unstated else checkpoint_identity(out)
            if saved is not None and saved["config"] == wanted:  # the checkpoint has this command's settings
                raise UsageError(f"{out / 'config.json'} was changed: it holds other settings "
                                 f"({differences(stored, wanted, True)}) than those its checkpoint was saved under, "
                                 f"which are this command's; restore config.json from a copy of the run, or write "
                                 f"them back in it")
            unstated_fix = f"its config.json has no {', '.join(unstated)}, so the run's is taken as the default: " \
                           f"if it lost the run's, restore it from a copy of the run (a finished run's final.json " \
                           f"holds its settings under \"config\"); else " if unstated else ""
            if command == "train" and not (trained or finished) and CHECKPOINT in lost:
                raise UsageError(f"{out} holds a run with other settings ({differences(stored, wanted, True)}) that "
                                 f"stopped before its first checkpoint, so nothing of it was trained: use --force to "
                                 f"train these settings there (it deletes that run's config.json), or another --out")
            instead = again["other"] if resume else elsewhere + " (that run is left as it is)"
            raise UsageError(f"{out} holds a run with other settings ({differences(stored, wanted, True)}); "
                             f"{unstated_fix}{instead}")
        damaged = resume and finished and check_final_record(out, config, damaged_too=False)
        if damaged and notes:  # what --resume rewrites
            print(f"note: {damaged}: --resume scores the run again from its checkpoint and writes it anew",
                  file=sys.stderr)
        if not resume:
            if finished:
                check_final_record(out, config)
                scoring = f"`run.py evaluate {out}` scores it on any copy of N-MNIST" if (out / CHECKPOINT).exists() \
                    else f"its weights, {CHECKPOINT}, are gone, so nothing scores it again"
                trained_on = ((intact_final(out) or {}).get("data") or {}).get("root")
                if data_root is not None and trained_on is not None and trained_on != str(data_root):
                    raise UsageError(f"{out} already holds this run, finished on the recordings in {trained_on}: its "
                                     f"results are in {out / 'final.json'} ({scoring}); if those in {data_root} are "
                                     f"other recordings, use another --out to train it on them")
                raise UsageError(f"{out} already holds this run, finished: its results are in {out / 'final.json'} "
                                 f"({scoring}); use another --out to train it again")
            owner = holder(out)  # what --resume would meet first: said now, not after the user types it
            if owner is not None:
                raise in_use(out, owner)
            if (out / CHECKPOINT).exists() and read_arrays(out / CHECKPOINT) is None:
                raise UsageError(f"{out} already holds this run, unfinished, but its checkpoint {out / CHECKPOINT} "
                                 f"is damaged (it is not a checkpoint.npz archive); {checkpoint_fix(out / CHECKPOINT)}")
            raise UsageError(f"{out} already holds this run, unfinished: continue it with --resume")
        if not (out / CHECKPOINT).exists() and finished:
            raise UsageError(f"{out} holds a finished run but no {CHECKPOINT} to resume from; {again['finished']}")
    if notes and resume and not force and command == "train" and not (out / CHECKPOINT).exists():  # resume or start
        print(f"note: {out} holds no checkpoint to resume from ({'its run never reached one' if holds_run else 'no run yet'})"
              f": the run starts at its first step", file=sys.stderr)
    if force and holds_run and command == "train" and out.parent.name == "runs" and \
            (out.parent.parent / FIGURE_RECORD).is_file():  # a preset's results folder, its report there
        raise UsageError(f"{out} is a run of the preset whose report is in {out.parent.parent}, which its tables "
                         f"and figures show: --force would replace it by another run; use another --out (to have "
                         f"reproduce train it again, move it out of {out.parent})")
    return holds_run, marked


def delete_all(paths):
    """Delete the files `paths` (what --force deletes), all or none: each is first moved aside under
    a temporary name, and where one cannot be (a folder, an immutable file, a folder not writable)
    those moved go back, and a UsageError names it; nothing is deleted before all are moved."""
    in_the_way = [path for path in paths if path.is_dir() and not path.is_symlink()]
    if in_the_way:
        raise UsageError(f"--force cannot delete {in_the_way[0]}: it is a folder, not a file of a run; move it "
                         f"away or use another --out")
    moved = []
    try:
        for path in paths:
            aside = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")  # a run's file too (run_files)
            while os.path.lexists(aside):
                aside = path.with_name(f"{path.name}.{secrets.token_hex(4)}.tmp")
            os.rename(path, aside)
            moved.append((path, aside))
    except OSError as error:
        for before, aside in reversed(moved):
            with contextlib.suppress(OSError):
                os.rename(aside, before)
        raise UsageError(os_problem(error, "delete", path)) from None
    for _, aside in moved:
        try:
            aside.unlink(missing_ok=True)
        except OSError as error:
            raise UsageError(os_problem(error, "delete", aside)) from None


def intact_final(out):
    """out/final.json as a dict where it is there and intact (a finished run's results), else None."""
    if not (out / "final.json").is_file():
        return None
    try:
        final = read_json(out / "final.json", "")
    except UsageError:
        return None
    return final if isinstance(final, dict) and not final_problem(final) else None


def finished_metrics_problem(out, final):
    """What is wrong with the metrics.jsonl of the finished run `final` (its intact final.json), or
    None: a report reads its records, every line one (a kill cuts no line once final.json is
    written), the last at final.json's generation, with its validation accuracy."""
    path = out / "metrics.jsonl"
    if not path.is_file():
        return f"its {path.name} is missing"
    if path.stat().st_size > MAX_METRICS_BYTES:
        return f"its {path.name} holds {path.stat().st_size:,} bytes, more than such a file holds (at most " \
               f"{MAX_METRICS_BYTES:,} are read)"
    lines = read_bytes(path, MAX_METRICS_BYTES).decode(errors="replace").splitlines()
    records, damage = metrics_records(lines)
    if damage is not None:
        return f"line {damage[0]} of its {path.name} is {line_damage(lines, *damage)}"
    if not records:
        return f"its {path.name} holds no record"
    skipped = missing_record(records)
    if skipped:
        return f"its {path.name} {skipped}"
    if records[-1]["generation"] != final["generations"]:
        return f"its {path.name} ends at generation {records[-1]['generation']}, not at final.json's " \
               f"{final['generations']}"
    if records[-1].get("val_acc") != final["val_acc"]:  # the same end, another run's scores
        return f"its {path.name}'s last record holds validation accuracy {records[-1].get('val_acc')}, not " \
               f"final.json's {final['val_acc']}: it is another run's"
    return None


def check_final_record(out, config, damaged_too=True):
    """UsageError unless out/final.json is an intact record of the run `config` (config.json's): a
    damaged one, or another run's copied in, is not this run's results. Not `damaged_too`: a damaged
    one is said ("<path> is damaged (...)", returned), not refused."""
    path, wanted = out / "final.json", run_config.stored(config)
    rescore = f"{resume_command(out, config)} scores the run again from its checkpoint and rewrites it" \
        if (out / CHECKPOINT).is_file() else "use another --out to train the run again"
    try:
        final = read_json(path, rescore)
    except UsageError as error:
        if damaged_too:
            raise
        return str(error).split("; ")[0]
    problem = final_problem(final) if isinstance(final, dict) else "not a JSON object"
    if problem and not damaged_too:
        return f"{path} is damaged ({problem})"
    if problem:
        raise UsageError(f"{path} is damaged ({problem}), so this finished run has no results; {rescore}")
    held = run_config.stored(run_config.from_stored(final["config"]))
    differ = {key for key in set(held) | set(wanted) if held.get(key) != wanted.get(key)}
    unstated = sorted(differ - set(read_json(out / "config.json", config_fix(out))))
    named = set(final["config"]) | ({"epochs"} if "generations" in final["config"] else set())  # old BPTT: epochs
    defaulted = [] if "method" in differ else sorted(differ & set(held) - named)  # always stored; lost, so defaults
    lost_note = f"; final.json names no {', '.join(defaulted)}: {'defaults' if len(defaulted) > 1 else 'a default'}"
    final_says = differences(held, wanted) + (lost_note if defaulted else "")
    saved = checkpoint_identity(out)  # the settings the checkpoint was saved under, which tell who is right
    if differ and (saved is not None and saved["config"] == held or saved is None and len(unstated) == len(differ)):
        # config.json is the odd one out: final.json and the checkpoint agree (or no checkpoint tells)
        lost = len(unstated) == len(differ)  # it has no key for those settings: it lost them
        what = f"has no {', '.join(unstated)}, so the run's is taken as the default, which its final.json contradicts" \
            if lost else "holds other settings than those of its final.json"
        raise UsageError(f"{out / 'config.json'} {what} (final.json says {final_says}): restore "
                         f"{'them in config.json' if lost else 'config.json'} from final.json's \"config\""
                         + (f", unless final.json is another run's (then move it out of {out})" if saved is None else
                            " (the checkpoint was saved under them)"))
    scored_on = ((final.get("data") or {}).get("fingerprint") or {}) if saved and saved["data"] else {}
    other_data = next((split for split, fingerprint in scored_on.items() if saved["data"].get(split) != fingerprint),
                      None)
    if other_data and held == wanted:  # which of the two is the run's own, the settings cannot tell
        raise UsageError(f"{path} and checkpoint {out / CHECKPOINT} name other data ({other_data}: final.json's "
                         f"{scored_on[other_data]}, the checkpoint's {saved['data'].get(other_data)}): one of them is "
                         f"another run's; put the run's own back from a copy of the run, or train the run again in "
                         f"another --out")
    if held != wanted:
        raise UsageError(f"{path} is another run's ({final_says}), not the results of the run in "
                         f"{out / 'config.json'}: move it out of {out} to keep it (it may be that run's only copy), "
                         f"then {rescore}")
    foreign = saved and foreign_problem(saved, identity(config))
    if foreign:  # config.json and final.json agree, the checkpoint does not: one of them was changed
        raise UsageError(f"checkpoint {out / CHECKPOINT} {foreign}")


def checkpoint_identity(out):
    """The identity (see `identity`) that out's checkpoint was saved under, or None where it tells
    none: no checkpoint, one from before checkpoints held it, or one that cannot be read (which
    --resume and evaluate name when they load it)."""
    try:
        arrays = read_arrays(out / CHECKPOINT) if is_own_file(out / CHECKPOINT) else None
        return read_identity(arrays["identity"]) if arrays and "identity" in arrays else None
    except (UsageError, ValueError):
        return None


def refuse_foreign(out, force, instead):
    """A UsageError saying what to do `instead` if `out`, a folder without the project's mark, holds
    a file of a run's names (a user's, or a run of this project that lost its mark, which a mark put
    back resumes), or, with `force`, anything at all (--force deletes only a run's own files). A run
    this project trained before it marked its folders is refused too: it trains again elsewhere."""
    theirs = run_files(out)
    others = [] if not force or not out.is_dir() else sorted(entry.name for entry in os.scandir(out)
                                                                if entry.name != LOCK)
    if theirs:
        raise UsageError(f"{out} is not a run folder of this project (it has no {RUN_MARK}) and holds "
                         f"{theirs[0].name}{', so --force deletes nothing there' * force}; {instead}; or, if it is a "
                         f"run of this project that lost its {RUN_MARK}, put a file of that name back in it (any text)")
    if others:
        raise UsageError(f"{out} is not a run folder of this project (it has no {RUN_MARK}) and holds {others[0]}, "
                         f"which the project did not write, so --force deletes nothing there; {instead}")


def shared_folder(path):
    """"the file system's root" or "your home folder" if `path` is one of them, which hold everyone's
    files, else None."""
    where = Path(os.path.realpath(path))
    return "the file system's root" if where == Path(where.anchor) else \
        "your home folder" if where == Path(os.path.realpath(Path.home())) else None


def refuse_shared_folder(out):
    """A UsageError if `out` is the file system's root or the home folder (shared_folder) as a run
    folder: a run writes its files straight into it (`--out $UNSET/` lands in the root)."""
    shared = shared_folder(out)
    if shared:
        raise UsageError(f"{out} is {shared}, and a run writes its files straight into its folder: give --out a "
                         f"folder of its own (e.g. {Path(out) / 'runs' / 'first'})")


def refuse_odd_mark(out, instead):
    """A UsageError ending with what to do `instead` if out/.eggroll-run is there but is no file (a
    folder, a pipe): the folder is then neither marked as a run's nor free of the mark."""
    mark = out / RUN_MARK
    try:
        kind = stat.S_IFMT(os.stat(mark).st_mode)
    except OSError:
        return
    if kind != stat.S_IFREG:
        raise UsageError(f"{mark} is {FILE_KINDS.get(kind, 'not a file')}, not the file that marks a run folder of "
                         f"this project: if {out} holds a run of this project, put a file of that name in its place "
                         f"(any text); else {instead}")


def is_run_folder(out):
    """Whether `out` is one of the project's run folders: it holds the mark, a regular file."""
    return not os.path.islink(out / RUN_MARK) and (out / RUN_MARK).is_file()


def refuse_run_folder(folder, instead):
    """A UsageError ending with `instead` (the fix) if `folder` is, or lies inside, a run folder of the
    project (it holds RUN_MARK), which holds its run's files only."""
    where = os.path.abspath(folder)
    run = next((above for above in (where, *map(str, Path(where).parents)) if is_run_folder(Path(above))),
               None)
    if run is not None:
        place = "is" if run == where else f"lies inside {run},"
        raise UsageError(f"{folder} {place} a run folder of this project (it holds {RUN_MARK}): a run folder "
                         f"holds its run's files only; {instead}")


def left_temporaries(folder, names, before=None):
    """{path: bytes} of the temporary files `writing` made in `folder` for files of `names` and a kill
    left there (a command that ends otherwise removes its own), each a regular file of one name, last
    written before the time `before` (time.time()'s) where it is given; {} where the folder cannot be read."""
    temporary = re.compile("(" + "|".join(map(re.escape, names)) + ")" + TEMPORARY)
    try:
        entries = sorted(entry.name for entry in os.scandir(folder))
    except OSError:
        return {}
    left = {}
    for name in entries:
        path = Path(folder) / name
        if not (temporary.fullmatch(name) and is_own_file(path)):
            continue
        try:
            status = path.stat()
        except OSError:  # gone meanwhile: its writer finished
            continue
        if before is None or status.st_mtime < before:
            left[path] = status.st_size
    return left


def left_temporaries_note(folder, names, what, before=None):
    """The note naming the temporary files a killed command left in `folder` for files of `names`
    (`what` made them: "a report", "a frame cache's build"), last written before `before` where it
    is given (a process building the same file alongside writes its own later), or None where there
    are none. They are named, not deleted: another command may be writing one of them now."""
    left = left_temporaries(folder, names, before)
    if not left:
        return None
    return (f"note: {folder} holds {len(left)} temporary file{'s' * (len(left) > 1)} "
            f"({sum(left.values()) / 2**20:.1f} MiB) that {what} stopped by a kill left there: "
            f"{', '.join(path.name for path in left)}; delete {'them' if len(left) > 1 else 'it'} once no other "
            f"command is writing there")


def run_files(out):
    """The files of a run in `out`: those of RUN_FILES there, and the temporary files `writing`
    makes for them (<name>.<8 hex digits>.tmp; a user's <name>.tmp is not one)."""
    temporary = re.compile("(" + "|".join(map(re.escape, RUN_FILES)) + ")" + TEMPORARY)
    try:
        names = [entry.name for entry in os.scandir(out)] if out.is_dir() else []
    except OSError as error:
        raise UsageError(os_problem(error, "read the folder", out)) from None
    return [out / name for name in sorted(names) if name in RUN_FILES or temporary.fullmatch(name)]


def discard(out, folder_too, mark_too=True):
    """Remove what a run that failed before its first checkpoint wrote in `out` (its settings and
    metrics, temporary files; the mark if `mark_too`, as this run wrote it), and `out` itself if
    `folder_too` and nothing else is in it; a failure to remove is ignored (the error being
    reported is the one that matters)."""
    for path in run_files(out) + [out / RUN_MARK] * mark_too:
        with contextlib.suppress(OSError):
            path.unlink(missing_ok=True)
    if folder_too:
        with contextlib.suppress(OSError):
            (out / LOCK).unlink(missing_ok=True)
            out.rmdir()


def first_missing(path):
    """The first folder of `path`, from the top, that is not there (a link, even a broken one, is):
    what making `path` creates, and so what a failure may take away again. None if all are there."""
    return next((folder for folder in (*reversed(path.parents), path) if not os.path.lexists(folder)), None)


def remove_made_folders(folder, first_new):
    """Remove `folder` and its parents up to `first_new` (first_missing's answer before they were
    made), each only if it is empty: the folders a failed command made, and nothing anyone put there."""
    if first_new is None:
        return
    for path in (folder, *folder.parents):
        if os.path.lexists(path):
            try:
                path.rmdir()  # only an empty folder, never through a link
            except OSError:
                return
        if path == first_new:
            return


def remove_empty_tree(first_new):
    """Remove the empty folders under `first_new` (first_missing's answer before a command made it:
    everything in it is the command's), deepest first, and first_new itself if it is then empty;
    never through a link, never a folder that holds a file."""
    if first_new is None or os.path.islink(first_new) or not first_new.is_dir():
        return
    for folder, _, _ in os.walk(first_new, topdown=False):
        try:
            os.rmdir(folder)
        except OSError:  # it holds something
            pass


def is_finished(out, config):
    """Whether `out` holds the finished run `config`."""
    return (is_run_folder(out) and (out / "final.json").exists() and (out / "config.json").exists()
            and run_config.stored(read_config(out)) == run_config.stored(config))


NOT_JSON = "it is not JSON"


def metrics_records(lines, required=("generation",)):
    """(records, damage): the records of metrics.jsonl's `lines` up to the first line that is none, and
    that line's damage as (its number, NOT_JSON or what metrics_problem says), or None if every line is
    a record. One reading for every reader: training, --resume's note, the report."""
    records = []
    for number, line in enumerate(lines, start=1):
        try:
            record = parse_json(line, ValueError)
        except ValueError:
            return records, (number, NOT_JSON)
        problem = metrics_problem(record, records[-1]["generation"] if records else 0, required)
        if problem:
            return records, (number, problem)
        records.append(record)
    return records, None


def missing_record(records):
    """Where a finished run's metrics records, as evenly spaced as its first (every eval_every
    generations, and at the last), skip one, as the end of a sentence about the file; None where
    none is skipped."""
    every = records[0]["generation"]
    for index in range(1, len(records)):
        previous, this = records[index - 1]["generation"], records[index]["generation"]
        if this != (index + 1) * every and (index < len(records) - 1 or this - previous > every):
            return (f"skips a record: generation {previous} is followed by {this}, though its records begin "
                    f"{every} apart")
    return None


def line_damage(lines, number, problem):
    """What is wrong with line `number` of metrics.jsonl's `lines` that metrics_records found damaged
    (`problem`): "empty", "not JSON" or "damaged (...)"."""
    if problem != NOT_JSON:
        return f"damaged ({problem})"
    return "empty" if not lines[number - 1].strip() else "not JSON"


def metrics_until(path, step):
    """The metrics records of generations <= step. A last line cut short is dropped, with a note;
    any other damaged line (not JSON, or a value of another type or range) is a UsageError naming
    the file, the line and the field."""
    lines = read_bytes(path, MAX_METRICS_BYTES).decode(errors="replace").splitlines() if path.exists() else []
    records, damage = metrics_records(lines)
    if damage == (len(lines), NOT_JSON):  # a record begun and cut short by a kill, or a line no run writes
        what = "is cut short" if lines[-1].lstrip().startswith("{") else "is not JSON"
        print(f"note: {path} line {len(lines)}, its last, {what}: it is left out", file=sys.stderr)
    elif damage is not None:
        raise UsageError(f"{path} line {damage[0]} is damaged ({damage[1]}); delete that line (the checkpoint "
                         f"keeps the weights) and run again")
    return [record for record in records if record["generation"] <= step]


# What the records of metrics.jsonl, final.json and real.json hold: {key: (predicate, requirement)},
# "a.b" naming record["a"]["b"].

def is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def is_count(value, low):
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


FRACTION = (lambda v: is_number(v) and 0 <= v <= 1, "a number in [0, 1]")
AMOUNT = (lambda v: is_number(v) and 0 <= v < math.inf, "a finite number >= 0")
FINITE = (lambda v: is_number(v) and math.isfinite(v), "a finite number")
SECONDS = (lambda v: is_number(v) and 0 <= v < 1e12, "a number of seconds >= 0 and below 10^12 (30,000 years)")
# a generation's median time, which a report divides by: no generation takes under a microsecond
STEP_SECONDS = (lambda v: is_number(v) and 1e-6 <= v < 1e12, "a number of seconds from 10^-6 to 10^12")
PER_SAMPLE = (lambda v: is_number(v) and 0 <= v < 1e15, "a count per sample >= 0 and below 10^15")
COUNT = (lambda v: is_count(v, 1), "an integer >= 1")
SIZE = (lambda v: is_count(v, 0), "an integer >= 0")
SAMPLES = (lambda v: is_count(v, 0) and v <= 10 ** 9, "an integer from 0 to 10^9")  # N-MNIST holds 70,000
PER_DIGIT = (lambda v: isinstance(v, list) and len(v) == snn.SIZES[-1] and all(x is None or FRACTION[0](x) for x in v),
             f"a list of {snn.SIZES[-1]} numbers in [0, 1] or null")
METRICS_RULES = {"generation": COUNT, "epoch": AMOUNT, "wall_seconds": SECONDS, "end_to_end_seconds": SECONDS,
                 "val_acc": FRACTION,
                 "spikes_per_sample": PER_SAMPLE, "mean_fitness": FINITE, "max_fitness": FINITE, "shaped_std": AMOUNT,
                 "loss": FINITE}
FINAL_RULES = {"test_acc": FRACTION, "val_acc": FRACTION, "spikes_per_sample": PER_SAMPLE,
               "median_seconds_per_generation": STEP_SECONDS, "total_seconds": SECONDS, "end_to_end_seconds": SECONDS,
               "generations": COUNT,
               "n_train": SAMPLES, "n_val": SAMPLES, "n_test": SAMPLES, "processes": COUNT,
               "update": (lambda v: v in ("seeds", "allreduce"), '"seeds" or "allreduce" (--update)'),
               "device": (lambda v: isinstance(v, str), "a string"), "test_acc_per_digit": PER_DIGIT,
               "val_acc_per_digit": PER_DIGIT, "config": (lambda v: isinstance(v, dict), "a JSON object"),
               # the data it trained on: each split's size and the sha256 of its frames and labels, and
               # for emulated N-MNIST the emulator's version, seed and MNIST files (emulate.provenance)
               "data": (lambda v: v is None or isinstance(v, dict) and "fingerprint" in v
                        and isinstance(v.get("root", "/"), str) and os.path.isabs(v.get("root", "/")),
                        "null (a run from before runs named their data) or a JSON object with its fingerprint (and "
                        "the absolute path of its folder as root)"),
               "data.fingerprint": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
                                    "a JSON object of strings"),
               "data.emulated": (lambda v: isinstance(v, dict), "a JSON object"),
               # training.evaluate on the test split (runs trained before it was measured lack it)
               **{f"test_sparsity.{key}": PER_SAMPLE for key in ("input_events_per_sample", "hidden_spikes_per_sample",
                                                             "output_spikes_per_sample", "synaptic_ops_per_sample",
                                                             "input_synaptic_ops_per_sample")},
               "test_sparsity.silent_hidden_fraction": FRACTION}
REAL_RULES = {f"accuracy.{split}": FRACTION for split in ("train", "val", "test", "all")} | {
    "run": (lambda v: isinstance(v, str), "a string"), "generation": SIZE,  # whose score it is (scores_this_run)
    # the recordings scored: each split's size and digest (data.Splits.fingerprint), absent before it was kept
    "data": (lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()), "a JSON object of strings"),
    **{f"samples.{split}": SAMPLES for split in ("train", "val", "test")},
    **{f"accuracy_per_digit.{split}": PER_DIGIT for split in ("train", "val", "test")}}
MISSING = object()


def record_problem(record, rules, required):
    """What is wrong with a JSON record, or None: not an object, a `required` key missing, or a
    value that breaks its rule."""
    if not isinstance(record, dict):
        return f"it holds a JSON {type(record).__name__}, not an object"
    for key, (valid, requirement) in rules.items():
        value = record
        for part in key.split("."):
            value = value.get(part, MISSING) if isinstance(value, dict) else MISSING
        if value is MISSING and key in required:
            return f"{key} is missing"
        if value is not MISSING and not valid(value):
            return f"{key} must be {requirement}, got {json.dumps(value)}"
    return None


def metrics_problem(record, previous, required=("generation",)):
    """What is wrong with a metrics.jsonl record following one of generation `previous`, or None."""
    problem = record_problem(record, METRICS_RULES, required)
    if problem is None and record["generation"] <= previous:
        problem = f"generation {record['generation']} does not follow generation {previous}"
    return problem


def final_problem(final):
    """What is wrong with a final.json, or None; its settings are read as a config.json's, and
    must include the seed."""
    problem = record_problem(final, FINAL_RULES, ("test_acc", "val_acc", "spikes_per_sample",
                                                  "median_seconds_per_generation", "total_seconds", "generations",
                                                  "config"))
    if problem is None and "seed" not in final["config"]:
        problem = "config.seed is missing"
    for split in ("test", "val"):  # a split's accuracy is its digits' weighted mean: it lies within their range
        digits = [] if problem else [acc for acc in final.get(f"{split}_acc_per_digit") or [] if acc is not None]
        if digits and not min(digits) - 1e-9 <= final[f"{split}_acc"] <= max(digits) + 1e-9:
            problem = (f"{split}_acc {final[f'{split}_acc']} lies outside its digits' accuracies "
                       f"({min(digits)}..{max(digits)}), of which it is the mean weighted by each digit's recordings")
    for split in ("train", "val", "test"):  # a split's count is also in its data record, where that names it
        fingerprint = {} if problem else (final.get("data") or {"fingerprint": {}})["fingerprint"]
        recorded = re.match(r"(\d+) samples", fingerprint.get(split, ""))
        if recorded and final.get(f"n_{split}") not in (None, int(recorded[1])):
            problem = (f"n_{split} {final[f'n_{split}']} disagrees with its data record, whose {split} split holds "
                       f"{recorded[1]} samples")
    for split in ("test", "val"):
        problem = problem or unscored_fraction(f"{split}_acc", final[f"{split}_acc"], final.get(f"n_{split}"))
    if problem is None and final.get("end_to_end_seconds", math.inf) < final["total_seconds"] * (1 - 1e-9):
        problem = (f"end_to_end_seconds {final['end_to_end_seconds']} is less than total_seconds "
                   f"{final['total_seconds']}, the update steps it holds")
    if problem is None:
        try:
            run_config.from_stored(final["config"])
        except ValueError as error:
            problem = f"config.{error}"
    return problem


def unscored_fraction(key, accuracy, samples):
    """Why `accuracy` cannot be a share of `samples` recordings classified right (no whole number of
    them), or None; None too where the samples are unknown or none."""
    if not samples:
        return None
    correct = accuracy * samples
    if abs(correct - round(correct)) > 1e-6:
        return (f"{key} {accuracy} is {correct:.6g} of its {samples:,} recordings, no whole number of them: it was "
                f"edited")
    return None


def finished_steps(config, n_train):
    """The updates a finished run of `config` made (BPTT's: its epochs of the training split's
    n_train recordings), or None where that is unknown (BPTT's, without n_train)."""
    if config.method != "bptt":
        return config.generations
    return None if n_train is None else config.epochs * max(n_train // config.batch_size, 1)


def real_problem(real):
    """What is wrong with a real.json, or None: a rule broken or a score missing, no recording
    scored, an accuracy over all the recordings that is not its splits' weighted by their samples,
    or a split's accuracy outside its digits' (of which it is the weighted mean)."""
    splits = ("train", "val", "test")
    problem = record_problem(real, REAL_RULES, ("run", "generation", "accuracy.all",
                                                *(f"{kind}.{split}" for kind in ("accuracy", "samples")
                                                  for split in splits)))
    if problem is not None:
        return problem
    accuracy, samples = real["accuracy"], real["samples"]
    for split in splits:
        problem = problem or unscored_fraction(f"accuracy.{split}", accuracy[split], samples[split])
    if problem is not None:
        return problem
    if sum(samples[split] for split in splits) == 0:
        return "samples are 0 in every split: an accuracy over no recording is no score"
    weighted = sum(accuracy[split] * samples[split] for split in splits) / sum(samples[split] for split in splits)
    if not math.isclose(accuracy["all"], weighted, rel_tol=1e-9, abs_tol=1e-12):
        return (f"accuracy.all is {accuracy['all']}, not {weighted:.6g}, its splits' accuracies weighted by their "
                f"samples: it was edited")
    for split in splits:
        digits = [value for value in (real.get("accuracy_per_digit") or {}).get(split) or [] if value is not None]
        if digits and not min(digits) - 1e-9 <= accuracy[split] <= max(digits) + 1e-9:
            return (f"accuracy.{split} {accuracy[split]} lies outside its digits' accuracies ({min(digits)}.."
                    f"{max(digits)}), of which it is the mean weighted by each digit's recordings")
    return None
