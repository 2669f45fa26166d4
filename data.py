"""
N-MNIST as binned, binary frames, cached on disk and served as minibatches.

The recordings. N-MNIST (Orchard et al., 2015) is MNIST seen by a 34 × 34 event camera: 60,000
training and 10,000 test recordings of about 300 ms, one .bin file each, in <Train|Test>/<digit>/.
A file is a sequence of 5-byte events: x, y, polarity (bit 7) and a 23-bit timestamp in
microseconds, non-decreasing (all 1,100 real recordings of the project's subset, 1,000 train and
100 test, have non-decreasing timestamps, with ties between 85,929 consecutive events), so a
file whose timestamps go backwards is rejected as corrupt. Accepted layouts:
<root>/NMNIST/{Train,Test}/<digit>/*.bin (what tonic downloads) or
<root>/{Train,Test}/<digit>/*.bin. The root is the `root` argument, else $NMNIST_ROOT, else
~/.cache/eggroll-snn/nmnist ($XDG_CACHE_HOME replaces ~/.cache). A local copy
of any size is read as is and never triggers a download; download=True fetches the dataset with
tonic only when no local copy is there, and a failed download leaves nothing behind. Every digit
folder 0..9 must be there and hold recordings.

The frames. Input index = p * 1156 + y * 34 + x, 2312 inputs per time bin. Frames follow
tonic.transforms.ToFrame(sensor_size=(34, 34, 2), n_time_bins=T): the recording is cut into T
windows of (t_last - t_first) // T microseconds starting at t_first; events past the last window
(at least the last event) are dropped; counts are clamped to 1. A recording with
t_last - t_first < T microseconds (or no events) gives all-zero frames: such samples are kept,
counted in the cache metadata ("n_short") and reported with a warning.

The split. A permutation from numpy.random.default_rng(0) over the sorted training recordings:
the first round(N / 10) indices are validation, the rest training (54,000 / 6,000 for the full
60,000). Both are kept in file order. Training minibatches are drawn in a shuffled order seeded by
(seed, epoch), and the step-th batch of a run can be made directly, so a resumed run sees the
same batches; augmentation, when asked for, moves each sample by a shift drawn from (seed, step).

The cache. One .npz per source folder and T under $EGGROLL_CACHE (else
~/.cache/eggroll-snn/frames): packed frames (N, ceil(T * 2312 / 8)) uint8, labels and JSON
metadata: n_short, the sha256 of the packed frames and the header (format version, T, sensor
size, number of recordings, and a digest of the <digit>/<name>, byte size and modification time
in nanoseconds of every recording). Its name derives from the header, and a cache is reused
only when all of these match; the recordings' contents are not read to check. So a recording
rewritten in place gets a new modification time and causes a rebuild, and copying the dataset
without preserving modification times causes one rebuild. A damaged cache file (empty, truncated, not an .npz,
missing arrays, arrays whose shape, dtype, labels, count of all-zero samples or frames' sha256
disagree with its metadata and the recordings) is rebuilt and replaced, with a one-line warning.

Errors a user can cause are a MissingDataError (a FileNotFoundError) or a BadDataError (a
ValueError), each one line naming the fix.
"""

import contextlib
import errno
import functools
import hashlib
import json
import os
import shutil
import signal
import socket
import stat
import sys
import threading
import time
import warnings
import zlib
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from backend import array_module_of
from interface_checks import a_kind, check_array_module, check_whole, refuse_beyond_ram
from run_folder import (FILE_KINDS, create_new, first_missing, left_temporaries_note, load_npz, os_problem, read_bytes,
                        remove_made_folders)

# The progress bars here and in training.py advance in their own loops: no tqdm monitor thread (its
# stack and malloc arena would take 72 MB of the address space a ulimit -v leaves a run).
tqdm.monitor_interval = 0
SENSOR_SIZE = (34, 34, 2)
N_INPUTS = SENSOR_SIZE[0] * SENSOR_SIZE[1] * SENSOR_SIZE[2]
CACHE_VERSION = 2
MAX_TIME_BINS = 1000  # T, the frames a recording is binned into: as many as --time-bins allows
DIGITS = tuple("0123456789")  # class folder names
EVENT_DTYPE = np.dtype([("x", int), ("y", int), ("t", int), ("p", int)])  # tonic's NMNIST dtype
# The largest file a recording may be, checked before it is read: 100 times the largest of the
# 1,100 real recordings (35,760 bytes, 7,152 events), so any real N-MNIST recording fits with room
# to spare, while decoding (about 15 bytes of memory per byte of file) stays under 60 MB. A file of
# gigabytes in a digit folder (a disk image, a misplaced archive) is refused, not allocated.
MAX_RECORDING_BYTES = 100 * 35_760
DOWNLOAD_TIMEOUT = 60.0  # seconds a download waits for a connection or for its next bytes
# Seconds the whole download (both zips and their extraction) may take, however slowly its bytes
# keep coming: a server that trickles a byte now and then never reaches DOWNLOAD_TIMEOUT.
DOWNLOAD_DEADLINE = 4 * 3600.0


class MissingDataError(FileNotFoundError):
    """The recordings (or a part of them) are not where they should be."""


class BadDataError(ValueError):
    """A recording or folder exists but is not valid N-MNIST."""


# -----------------------------------------------------------------------------
# locating and reading recordings

def _cache_home():
    """<cache home>/eggroll-snn: $XDG_CACHE_HOME where it is an absolute path (the XDG rule: a relative
    one is ignored), else ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(xdg) if os.path.isabs(xdg) else Path.home() / ".cache") / "eggroll-snn"


def resolve_root(root=None):
    """The data root: `root`, else $NMNIST_ROOT, else <cache home>/eggroll-snn/nmnist."""
    if root is None:
        root = os.environ.get("NMNIST_ROOT") or _cache_home() / "nmnist"
        if not str(root).strip():  # not a folder named by blanks in the current one
            raise MissingDataError(f"$NMNIST_ROOT is {str(root)!r}, blanks only (a variable left empty?): point it, "
                                   f"or --data-root, at a copy of N-MNIST, or unset it")
    return Path(root).expanduser()


def split_base(root):
    """The folder of `root` that holds the split folders Train and Test (or one of them): root/NMNIST
    (tonic's layout) or root itself; None where neither does, as in a folder that holds no N-MNIST."""
    return next((base for base in (root / "NMNIST", root) if (base / "Train").is_dir() or (base / "Test").is_dir()),
                None)


def _split_dirs(root, download, given=True):
    """The Train and Test folders under `root` (`given` as --data-root, else $NMNIST_ROOT's or the
    default), downloading with tonic only if asked and absent."""
    base = split_base(root)
    where = "" if given else " ($NMNIST_ROOT)" if os.environ.get("NMNIST_ROOT") else " (the default data root)"
    fix = "point --data-root at a copy" if given else "point --data-root (or $NMNIST_ROOT) at a copy"
    odd = not_a_folder(root) if base is None else None
    if odd:  # a file, or a link that leads nowhere, is no place to download into either
        raise MissingDataError(f"N-MNIST not found in {root}{where}: it is {odd}; {fix}")
    if base is None and data_copy_of(root) is not None:  # a split or digit folder: no place to download into
        raise MissingDataError(f"{root}{where} lies inside the N-MNIST copy {data_copy_of(root)}, not at its top; "
                               f"point --data-root at {data_copy_of(root)}")
    if base is None:
        if not download:
            raise MissingDataError(f"N-MNIST not found in {root}{where} (expected {root}/NMNIST/Train/<digit>/*.bin "
                                   f"or {root}/Train/<digit>/*.bin); {fix}, or use --download to fetch it with tonic")
        _download(root)
        base = root / "NMNIST"
    beside = [root / name for name in ("Train", "Test") if base != root and (root / name).is_dir()]
    if beside:  # two copies, tonic's layout and the plain one: which is meant, the folder cannot tell
        raise MissingDataError(f"{root}{where} holds N-MNIST twice, in {base} and in itself ({beside[0]}), and which "
                               f"to read it cannot tell: point --data-root at {base}, or move {beside[0]} into a "
                               f"folder of its own")
    dirs = {name: base / name for name in ("Train", "Test")}
    for folder in dirs.values():
        if not folder.is_dir():
            raise MissingDataError(split_folder_problem(folder))
    return dirs


def data_copy_of(folder):
    """The N-MNIST copy `folder` (made or not) is part of, by its path as given and the one its links
    lead to, or None: `folder` itself where it holds the split folders (split_base), else the
    copy whose folder of Train and Test holds it, where it lies in Train or Test or they hold a digit
    folder (a copy, not any folder that happens to hold a Train). A folder beside <root>/NMNIST is
    not inside the copy."""
    for path in dict.fromkeys((Path(os.path.abspath(folder)), Path(os.path.realpath(folder)))):
        if split_base(path) is not None:
            return Path(folder)
        for above in path.parents:
            base = split_base(above)
            if base is None or not path.is_relative_to(base):
                continue
            splits = (base / "Train", base / "Test")
            if any(path.is_relative_to(split) for split in splits) or any(
                    (split / digit).is_dir() for split in splits for digit in DIGITS):
                above = base.parent if base.name == "NMNIST" and split_base(base.parent) == base else base
                shown = os.path.relpath(above)  # as the user gave it: nmnist-sample, not /…/nmnist-sample
                return Path(shown) if not Path(folder).is_absolute() and not shown.startswith("..") else above
    return None


def data_folder_problem(folder, inside_only=False):
    """Why `folder` is no place to write, being part of an N-MNIST copy (data_copy_of), which the project
    only reads; or None. With inside_only, the copy itself is no problem (emulate continues one)."""
    copy = data_copy_of(folder)
    if copy is None or inside_only and split_base(Path(folder)) is not None:
        return None
    where = "holds" if split_base(Path(folder)) is not None else f"lies inside {copy}, which holds"
    return f"{folder} {where} N-MNIST (its Train and Test folders): {'it is ' * (where == 'holds')}a data folder, " \
           f"which the project only reads"


def split_folder_problem(folder):
    """What is wrong where the split folder `folder` (Train or Test) is no folder, and the fix: a
    file (or a link to none) in its place is named as such; a missing one is needed, since both
    splits are read (train and validation are cut from Train, test is Test; evaluate scores all three)."""
    kind = "training" if folder.name == "Train" else "test"
    fix = (_how_to_restore(folder) if os.path.lexists(folder.parent / "EMULATED.json") else
           f"put N-MNIST's {kind} recordings there as {folder}/<digit>/*.bin ({folder.name.lower()}.zip of the "
           f"N-MNIST download)")
    if os.path.lexists(folder):
        what = ("a symbolic link that leads to no folder" if folder.is_symlink() and not folder.exists() else
                "a file" if folder.is_file() else "not a folder")
        return f"{folder} is {what}, not the split folder {folder.name}: move it out of {folder.parent}, then {fix}"
    return (f"the split folder {folder} is missing, and every command reads both splits (train and validation are "
            f"cut from Train, test is Test, and evaluate scores all three): {fix}")


def fetch_nmnist(root=None):
    """Download N-MNIST into <root>/NMNIST with tonic unless a copy is there (`_download`); a
    MissingDataError if that fails or a copy lacks a split."""
    _split_dirs(resolve_root(root), download=True)


class Overdue(Exception):
    """A download past its deadline. Not an OSError, so that no downloader's retry catches it."""


@contextlib.contextmanager
def deadline(seconds):
    """Raise Overdue in the block once `seconds` have passed, even inside a read that keeps
    receiving a byte now and then (SIGALRM; in the main thread only: elsewhere, no deadline)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return
    running = [True]

    def overdue(signum, frame):
        if running[0]:  # not once the block has ended
            raise Overdue()
    previous = signal.signal(signal.SIGALRM, overdue)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
        running[0] = False
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _download(root):
    """
    Download and extract N-MNIST into <root>/NMNIST with tonic: train.zip and test.zip from
    Mendeley Data (dataset 468j46mzdv), 70,000 .bin recordings of ~20 KB each, about 1.4 GB
    once extracted (the zips are kept next to them). Each wait for the server ends after
    DOWNLOAD_TIMEOUT seconds, the whole download after DOWNLOAD_DEADLINE. If it fails, what it
    created (folders, partial zips) is removed, and a MissingDataError says how to get the dataset
    by hand.
    """
    import tonic  # only needed here, and importing it is slow

    target = root / "NMNIST"
    for path in (root, target):
        if os.path.islink(path) and not path.exists():
            raise MissingDataError(f"{path} is a link to {os.readlink(path)}, which does not exist; make that folder "
                                   f"or point --data-root elsewhere")
    first_new = first_missing(target)  # a link, even a broken one, is there: not ours
    existing = set() if first_new else set(target.iterdir())
    timeout, fetching = socket.getdefaulttimeout(), None
    try:
        socket.setdefaulttimeout(DOWNLOAD_TIMEOUT)  # tonic's urlopen takes none: a silent server must not hang us
        root.mkdir(parents=True, exist_ok=True)
        with deadline(DOWNLOAD_DEADLINE):
            for train in (True, False):
                url = getattr(tonic.datasets.NMNIST, "train_url" if train else "test_url", "Mendeley Data")
                fetching = f"{'train' if train else 'test'}.zip from {url}"
                tonic.datasets.NMNIST(save_to=str(root), train=train)
    except BaseException as error:
        for path in [first_new] if first_new else set(target.iterdir()) - existing:
            shutil.rmtree(path, ignore_errors=True)  # a folder
            path.unlink(missing_ok=True)  # a file
        if not isinstance(error, Exception):
            raise
        reason = getattr(error, "reason", None) or error  # a URLError wraps the network error
        reason = " ".join(str(getattr(reason, "strerror", None) or reason).split())
        if isinstance(error, TimeoutError) or "timed out" in reason:
            reason = f"no answer for {DOWNLOAD_TIMEOUT:g} s"
        if isinstance(error, Overdue):
            reason = f"{fetching} was still coming after {DOWNLOAD_DEADLINE:g} s, the most the download may take"
        raise MissingDataError(
            f"N-MNIST could not be downloaded ({reason}); download train.zip and test.zip of "
            f"N-MNIST by hand (dataset 468j46mzdv on Mendeley Data) and extract them so that "
            f"{target}/Train/<digit>/*.bin and {target}/Test/<digit>/*.bin exist, or point "
            f"--data-root or NMNIST_ROOT at a copy") from error
    finally:
        socket.setdefaulttimeout(timeout)


def _entries(folder):
    """The entries of a folder; MissingDataError naming it and what to do if it cannot be read."""
    try:
        return list(os.scandir(folder))
    except OSError as error:
        raise MissingDataError(os_problem(error, "read the folder", folder)) from None


def _kind(entry):
    """"file", "folder", "special file" or, where it cannot be followed (a link that leads nowhere
    or back to itself), the OSError that says why."""
    try:
        if entry.is_file():
            return "file"
        if entry.is_dir():
            return "folder"
        os.stat(entry.path)
        return "special file"
    except OSError as error:
        return error


def _unreadable(entry, error, what):
    """The BadDataError of an entry that cannot be followed."""
    if isinstance(error, FileNotFoundError) and entry.is_symlink():
        return BadDataError(f"{entry.path} is a link to {os.readlink(entry.path)}, which does not exist; "
                            f"replace it with the {what} or remove it")
    return BadDataError(os_problem(error, f"read the {what}", Path(entry.path)))


def list_recordings(folder):
    """Sorted (path, label) pairs of <folder>/<digit>/*.bin, in tonic's order; all ten digits needed.
    A digit or a recording that is not a folder or a file as it should be (a link that leads
    nowhere or back to itself, a folder named *.bin) is a BadDataError naming it."""
    for entry in _entries(folder):
        if entry.name in DIGITS and isinstance(_kind(entry), OSError):
            raise _unreadable(entry, _kind(entry), "class folder")
    for entry in _entries(folder):  # a file in a class folder's place is no missing folder
        if entry.name in DIGITS and _kind(entry) in ("file", "special file"):
            raise BadDataError(f"{entry.path} is a {_kind(entry)}, not the class folder of digit {entry.name}: move it "
                               f"out of {folder}, then put the digit's recordings there ({_how_to_restore(folder)})")
    class_dirs = sorted(e.name for e in _entries(folder) if e.name in DIGITS and _kind(e) == "folder")
    for entry in _entries(folder):  # recordings under another name would be passed over without a word
        if entry.name not in DIGITS and _kind(entry) == "folder" and holds_recordings(entry.path):
            raise BadDataError(f"{entry.path} holds recordings but is no class folder (0..9), so they would be "
                               f"left out; move it out of {folder}")
    if not class_dirs:
        raise MissingDataError(f"no class folders 0..9 in {folder}; expected {folder}/<digit>/*.bin")
    missing = [str(folder / name) for name in DIGITS if name not in class_dirs]
    if missing:
        raise MissingDataError(f"class folder(s) {', '.join(missing)} missing (all ten digits are "
                               f"needed); {_how_to_restore(folder)}")
    recordings = []
    for name in class_dirs:
        files = []
        for entry in _entries(folder / name):
            if not entry.name.endswith(".bin"):
                if _kind(entry) == "folder" and holds_recordings(entry.path):  # they would be left out unseen
                    raise BadDataError(f"{entry.path} holds recordings inside the class folder {folder / name}, where "
                                       f"only its own *.bin are read; move them up into it, or out of {folder}")
                if entry.name.strip().lower().endswith(".bin"):  # X.BIN, "x.bin ": a recording by its name
                    raise BadDataError(f"{entry.path} ends in {entry.name[-5:]!r}, not '.bin', so it would be left "
                                       f"out: rename it to end in .bin to read it, or move it out of {folder / name}")
                continue
            kind = _kind(entry)
            if isinstance(kind, OSError):
                raise _unreadable(entry, kind, "recording")
            if kind != "file":
                raise BadDataError(f"{entry.path} is a {kind}, not a recording; move it out of {folder / name}")
            files.append(entry.name)
        if not files:
            raise MissingDataError(f"class folder {folder / name} holds no .bin recordings; "
                                   f"{_how_to_restore(folder)}")
        recordings += [(folder / name / f, int(name)) for f in sorted(files)]
    return recordings


def only_test_recordings(base):
    """Whether the split folders under `base` hold test recordings and no training ones: an emulation
    of the test split alone (`emulate --split test`)."""
    return any(base.glob("Test/*/*.bin")) and not any(base.glob("Train/*/*.bin"))


def _how_to_restore(split_folder):
    """How to put back the recordings of a split folder (Train or Test): from N-MNIST's zip, or, for
    an emulated copy (its EMULATED.json beside the folder), by emulating one from other MNIST files."""
    if os.path.lexists(split_folder.parent / "EMULATED.json"):
        if not os.path.lexists(split_folder.parent / "FINISHED.json"):  # stopped midway: finishing it keeps its work
            # a test-only emulation, finished as one where its Test split is wanted; for Train, both are made
            test_only = " --split test" * (split_folder.name == "Test" and only_test_recordings(split_folder.parent))
            return (f"{split_folder.parent} holds an emulation that did not finish (no FINISHED.json): rerun its "
                    f"`run.py emulate --out {split_folder.parent.parent}{test_only}` (with its --mnist and --seed) to "
                    f"finish it: the recordings already made are kept")
        if _emulated_count(split_folder) == 0:  # an emulation of the other split alone (emulate --split)
            return (f"{split_folder.parent} was emulated from MNIST without its {split_folder.name} split (its "
                    f"FINISHED.json counts none there): emulate that split into the same folder (`run.py emulate "
                    f"--mnist DIR --split {'train' if split_folder.name == 'Train' else 'test'} --out "
                    f"{split_folder.parent.parent}`)")
        return (f"{split_folder.parent} was emulated from MNIST (its EMULATED.json says so): emulate a copy from "
                f"MNIST files that hold every digit (`run.py emulate --mnist DIR --out NEW`)")
    return f"restore them from {split_folder.name.lower()}.zip of N-MNIST"


def _emulated_count(split_folder):
    """How many recordings the emulation's FINISHED.json beside `split_folder` counts in it, or None
    where it says nothing readable."""
    try:  # never opened blind: a pipe or a device there is not read (read_bytes)
        count = json.loads(read_bytes(split_folder.parent / "FINISHED.json", 4096, ValueError)).get(split_folder.name)
    except (OSError, ValueError, AttributeError):
        return None
    return count if type(count) is int else None


def holds_recordings(path):
    """Whether the folder `path` holds a *.bin entry (one it cannot read holds none that matters)."""
    try:
        with os.scandir(path) as entries:
            return any(entry.name.endswith(".bin") for entry in entries)
    except OSError:
        return False


def _replace(recording):
    """How to replace a damaged recording: from N-MNIST, or, in an emulated copy (EMULATED.json beside
    its split folder), by deleting it and emulating again into the same folder, which makes what is
    missing (and keeps what is there)."""
    copy = Path(recording).parent.parent.parent
    if os.path.lexists(copy / "EMULATED.json"):
        return f"delete it and emulate into the same folder again (`run.py emulate --mnist DIR --out {copy.parent}`)"
    return "replace it"


def read_events(path):
    """
    Decode one N-MNIST .bin recording into a structured array (x, y, t, p) of int64, as tonic
    does. 5 bytes per event: x, y, polarity (bit 7) and t in microseconds (23 bits). The
    timestamp-overflow markers (y = 240) that tonic's reader accepts never occur in N-MNIST
    and are rejected with all other x/y outside the sensor, as are timestamps that go backwards.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ValueError(f"path must be a recording's path (a str or pathlib.Path), got {a_kind(path)}")
    if not os.path.lexists(path):
        raise BadDataError(f"{path}: no such recording; give the path of an N-MNIST .bin file")
    raw = np.frombuffer(read_bytes(path, MAX_RECORDING_BYTES, BadDataError, "any N-MNIST recording",
                                   "read the recording"), dtype=np.uint8)
    if raw.size % 5:
        raise BadDataError(f"{path}: size {raw.size} bytes is not a multiple of 5; the file is "
                           f"truncated or not N-MNIST, {_replace(path)}")
    raw = raw.reshape(-1, 5).astype(np.int64)
    if len(raw) and raw[:, :2].max() >= SENSOR_SIZE[0]:
        raise BadDataError(f"{path}: x/y outside 0..{SENSOR_SIZE[0] - 1}; the file is corrupt "
                           f"or not N-MNIST, {_replace(path)}")
    events = np.empty(len(raw), dtype=EVENT_DTYPE)
    events["x"], events["y"] = raw[:, 0], raw[:, 1]
    events["t"] = (raw[:, 2] & 0x7F) << 16 | raw[:, 3] << 8 | raw[:, 4]
    events["p"] = raw[:, 2] >> 7
    backwards = np.flatnonzero(np.diff(events["t"]) < 0)
    if len(backwards):
        event = backwards[0] + 1
        raise BadDataError(f"{path}: timestamps go backwards at event {event} (byte {5 * event}); "
                           f"the file is corrupt or not N-MNIST, {_replace(path)}")
    return events


def events_problem(events):
    """What makes a structured array of events (x, y, t, p) no N-MNIST recording's, or None: fields
    that are not integers, x or y off the sensor, p not 0 or 1, t outside 0..2^31 - 1 microseconds
    (N-MNIST's are 23 bits) or going backwards."""
    width, height, _ = SENSOR_SIZE
    if not all(events.dtype[field].kind in "iu" for field in "xytp"):
        return f"x, y, t and p must be integers, got {', '.join(str(events.dtype[field]) for field in 'xytp')}"
    if len(events) == 0:
        return None
    for field, size in (("x", width), ("y", height), ("p", 2), ("t", 2 ** 31)):  # t: microseconds, up to 36 minutes
        if int(events[field].min()) < 0 or int(events[field].max()) >= size:
            return f"{field} must lie in 0..{size - 1}, got {int(events[field].min())}..{int(events[field].max())}"
    if bool((np.diff(events["t"].astype(np.int64)) < 0).any()):
        return "t must never go backwards (a recording's events are in time order)"
    return None


def frames_from_events(events, n_time_bins):
    """
    Binary frames (T, 2312) uint8 of one recording's events (N-MNIST's: events_problem says why
    others are refused), equal to tonic's ToFrame(sensor_size=(34, 34, 2), n_time_bins=T) clamped to 1.
    """
    if not (isinstance(events, np.ndarray) and not isinstance(events, np.ma.MaskedArray) and events.ndim == 1
            and {"x", "y", "t", "p"} <= set(events.dtype.names or ())):
        raise ValueError(f"events must be a 1-D structured array of fields x, y, t and p, as read_events returns, "
                         f"got {a_kind(events)}" + (f" of shape {events.shape}" if hasattr(events, "shape") else ""))
    problem = events_problem(events)
    if problem:  # a pixel out of range would land on another's input, a time going back in another bin
        raise ValueError(f"events must be N-MNIST's, as read_events returns them: {problem}")
    check_whole("n_time_bins", n_time_bins, 1, MAX_TIME_BINS, "10, the paper's T")
    frames = np.zeros((n_time_bins, N_INPUTS), dtype=np.uint8)
    if len(events) == 0:
        return frames
    t = events["t"].astype(np.int64) - int(events["t"][0])  # (fields of any integer type, uint8 too)
    window = t[-1] // n_time_bins
    if window == 0:
        return frames  # shorter than T microseconds: tonic gives empty windows
    time_bin = t // window
    keep = time_bin < n_time_bins
    width, height, _ = SENSOR_SIZE
    index = (events["p"].astype(np.int64) * height + events["y"]) * width + events["x"]
    frames[time_bin[keep], index[keep]] = 1
    return frames


# -----------------------------------------------------------------------------
# the on-disk cache of packed frames

def _stats(recordings):
    """os.stat of each recording; BadDataError naming one that cannot be read."""
    stats = []
    for path, _ in recordings:
        try:
            stats.append(os.stat(path))
        except OSError as error:
            raise BadDataError(os_problem(error, "read the recording", path)) from None
    return stats


def _digest(recordings, stats):
    """sha256 over <digit>/<name> (its bytes as the file system holds them), byte size and
    modification time (ns) of each recording."""
    h = hashlib.sha256()
    for (path, label), status in zip(recordings, stats):
        h.update(f"{label}/".encode() + os.fsencode(path.name) + f" {status.st_size} {status.st_mtime_ns}\n".encode())
    return h.hexdigest()


def _header(recordings, n_time_bins, stats):
    return {"version": CACHE_VERSION, "n_time_bins": n_time_bins, "sensor_size": list(SENSOR_SIZE),
            "files_digest": _digest(recordings, stats), "n_samples": len(recordings)}


def _cache_path(cache_dir, split_name, header):
    key = hashlib.sha256(json.dumps(header, sort_keys=True).encode()).hexdigest()[:16]
    return cache_dir / f"nmnist-{split_name.lower()}-T{header['n_time_bins']}-{key}.npz"


def holds_frame_caches(folder):
    """Whether `folder` holds frame caches of this project (nmnist-<split>-T<T>-<key>.npz)."""
    return any(Path(folder).glob("nmnist-*-T*-*.npz"))


def frame_cache_dir(cache_dir=None):
    """The folder of the frame caches: `cache_dir`, else $EGGROLL_CACHE, else <cache home>/frames."""
    return Path(cache_dir or os.path.expanduser(os.environ.get("EGGROLL_CACHE", "")) or _cache_home() / "frames")


def broken_link(path):
    """What the symbolic link `path` is where it leads nowhere ("a loop of links", "a link to X,
    which does not exist"), or None where `path` is no such link."""
    if not os.path.islink(path) or os.path.exists(path):
        return None
    try:
        Path(path).resolve(strict=True)
    except RuntimeError:  # Python < 3.13: a loop
        return "a loop of links"
    except OSError as error:
        if error.errno == errno.ELOOP:
            return "a loop of links"
    return f"a link to {os.readlink(path)}, which does not exist"


def not_a_folder(path):
    """What `path` is where a folder should be and none is: a link that leads nowhere (broken_link),
    "a file, not a folder", "a named pipe (FIFO), not a folder", ...; None where it is a folder or
    nothing at all."""
    try:
        kind = stat.S_IFMT(os.stat(path).st_mode)
    except OSError:
        return broken_link(path)
    if kind == stat.S_IFDIR:
        return None
    return f"{'a file' if kind == stat.S_IFREG else FILE_KINDS.get(kind, 'not a file')}, not a folder"


def check_cache_dir(folder):
    """An OSError naming what stands in the way if the frame cache's folder, or a folder above it,
    is a file, a broken link or a loop of links, or if it lies in an N-MNIST copy, which the project
    only reads: said before any recording is read, not after."""
    if str(folder) == "-":  # $EGGROLL_CACHE=- (the option refuses it)
        raise OSError("the frame cache's folder is '-', which many tools read as standard output: point "
                      "$EGGROLL_CACHE (run.py: --cache-dir) at a folder (./- for one named -)")
    if not str(folder).strip():  # $EGGROLL_CACHE=" " (the option refuses it): not a folder named by blanks
        raise OSError(f"the frame cache's folder is {str(folder)!r}, blanks only ($EGGROLL_CACHE left empty?): point "
                      f"$EGGROLL_CACHE (run.py: --cache-dir) at a folder, or unset it")
    for path in (*reversed(folder.parents), folder):
        what = not_a_folder(path)
        if what is None:
            continue
        raise OSError(f"cannot use the frame cache folder {folder}: {path} is {what}; point $EGGROLL_CACHE "
                      f"(run.py: --cache-dir) at a folder")
    problem = data_folder_problem(folder)
    if problem is not None:  # a cache file among the recordings: a file the project did not put there
        raise OSError(f"cannot use the frame cache folder {folder}: {problem}; point $EGGROLL_CACHE (run.py: "
                      f"--cache-dir) at a folder outside it")


def _pack_recording(path, n_time_bins):
    return np.packbits(frames_from_events(read_events(path), n_time_bins))


def _build_cache(path, recordings, labels, header, progress):
    """Decode all recordings, pack their frames, and write the cache atomically with their labels."""
    n_bytes = -(-header["n_time_bins"] * N_INPUTS // 8)
    packed = np.empty((len(recordings), n_bytes), dtype=np.uint8)
    for i, (file, _) in enumerate(tqdm(recordings, desc=f"caching {path.name}", disable=not progress)):
        packed[i] = _pack_recording(file, header["n_time_bins"])
    meta = dict(header, n_short=int((~packed.any(axis=1)).sum()), frames_sha256=frames_sha256(packed))
    tmp, made = None, first_missing(path.parent)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = create_new(path)  # a new file of its own, never one planted under its name
        with open(tmp, "wb") as f:
            np.savez(f, packed=packed, labels=labels, meta=np.array(json.dumps(meta)))
        os.replace(tmp, path)
    except OSError as error:
        elsewhere = "" if error.errno == errno.EFBIG else \
            ", or point $EGGROLL_CACHE (run.py: --cache-dir) at a writable folder"  # a size limit holds anywhere
        raise OSError(f"{os_problem(error, 'write the frame cache', path)}{elsewhere}") from error
    finally:
        if tmp is not None:
            tmp.unlink(missing_ok=True)
        remove_made_folders(path.parent, made)  # those it made, if a failure left them empty


def _load_cache(path, header, labels):
    """
    (packed, labels, meta) from a cache file, or None if it is absent, made from other inputs,
    unreadable or not what its metadata and the recordings' `labels` say (then with a warning):
    the caller rebuilds it.
    """
    if not os.path.lexists(path):
        return None
    if path.is_dir() and not path.is_symlink():  # no cache file can be written in its place: said before the work
        raise OSError(f"cannot use the frame cache {path}: it is a folder, where a cache file goes; move it away (the "
                      f"cache is made again), or point $EGGROLL_CACHE (run.py: --cache-dir) at another folder")
    largest = header["n_samples"] * -(-header["n_time_bins"] * N_INPUTS // 8) + 2**20  # packed frames, and room
    try:
        stored = load_npz(path, largest, BadDataError)
        if stored is None:
            raise BadDataError("it is not an .npz archive of arrays")
        meta = json.loads(str(stored["meta"]))
        if not isinstance(meta, dict) or {k: meta.get(k) for k in header} != header:
            return None
        cached = stored["packed"], stored["labels"], meta
    except (BadDataError, KeyError, ValueError, RecursionError) as error:  # BadDataError: not a regular file
        why = str(error).split("; ")[0] if isinstance(error, BadDataError) else f"it holds no array {error.args[0]}" \
            if isinstance(error, KeyError) else "its metadata is not JSON"
        _warn(f"frame cache {path} is unreadable ({why}); rebuilding it")
        return None
    if "frames_sha256" not in cached[2]:  # written before caches kept one: made again, to be checked from now on
        _warn(f"frame cache {path} was written by an older eggroll-snn, without a sha256 of its frames; rebuilding it")
        return None
    problem = _cache_problem(*cached, labels)
    if problem:
        _warn(f"frame cache {path} does not match its metadata ({problem}); rebuilding it")
        return None
    return cached


def frames_sha256(packed):
    """The sha256 of a cache's packed frames, which its metadata keeps: damage inside them, the
    shape and type intact, is then found when the cache is read."""
    return hashlib.sha256(np.ascontiguousarray(packed)).hexdigest()


def _cache_problem(packed, labels, meta, expected_labels):
    """What is wrong with a cache's arrays for its metadata and the recordings' labels, or None."""
    shape = (meta["n_samples"], -(-meta["n_time_bins"] * N_INPUTS // 8))
    if packed.dtype != np.uint8 or packed.shape != shape:
        return f"packed is {packed.dtype} {packed.shape}, expected uint8 {shape}"
    if labels.dtype != np.int64 or not np.array_equal(labels, expected_labels):
        return f"labels are {labels.dtype} {labels.shape} and not the digits of the recordings' folders"
    n_short = int((~packed.any(axis=1)).sum())
    if meta.get("n_short") != n_short:
        return f"n_short is {json.dumps(meta.get('n_short'))}, but {n_short} samples are all zero"
    if meta["frames_sha256"] != frames_sha256(packed):  # (an older cache, without one, is rebuilt before)
        return "its frames are not those it was written with: their sha256 differs from its metadata's"
    return None


_SHOWN = {}  # the warnings _warn has shown: warnings' registry, so that a copy read again is not told again


def _warn(message):
    """A UserWarning shown as one line: the message, without the line of code that warns; once a
    process (a reproduce that scores every run on one copy reads it once a run)."""
    warnings.warn_explicit(message, UserWarning, __file__, 0, registry=_SHOWN)


# -----------------------------------------------------------------------------
# splits and minibatches

def describe_indices(indices):
    """What indices were given, for a refusal: their kind, shape, dtype and range."""
    if type(indices) is not np.ndarray or indices.dtype.kind not in "iu" or indices.size == 0:
        return a_kind(indices) + (f" of {indices.dtype} {indices.shape}" if isinstance(indices, np.ndarray) else "")
    return f"{indices.dtype} {indices.shape} from {int(indices.min())} to {int(indices.max())}"


@dataclass
class Split:
    """Bit-packed binary frames (N, T * 2312 / 8) uint8 and labels (N,) int64 on the host. The
    packed frames may be moved to a device once (`on`), so that every minibatch is gathered and
    unpacked there."""
    packed: np.ndarray
    labels: np.ndarray
    n_time_bins: int

    def __len__(self):
        return len(self.labels)

    def on(self, xp):
        """This split with its packed frames on xp's device (its labels stay on the host)."""
        return Split(xp.asarray(self.packed), self.labels, self.n_time_bins)

    def frames(self, indices, xp=np, shifts=None):
        """Frames of samples `indices` (a NumPy integer array) as xp float32 (T, len(indices), 2312),
        made where the packed frames are: each frame is 289 whole bytes (2312 = 8 × 289), so the
        bytes are put in frame order first and unpacked straight into (T, N, 2312). `shifts`: each
        sample moved by translate() while its frames are still bits."""
        check_array_module(xp)
        indices = np.asarray(indices) if isinstance(indices, (list, tuple, range)) else indices
        if not (isinstance(indices, np.ndarray) and not isinstance(indices, np.ma.MaskedArray) and indices.ndim == 1
                and indices.dtype.kind in "iu" and len(indices) and 0 <= indices.min() <= indices.max() < len(self)):
            raise ValueError(f"indices must be a 1-D integer array of at least one sample in 0..{len(self) - 1}, got "
                             f"{describe_indices(indices)}")
        if shifts is not None and isinstance(shifts, np.ndarray) and shifts.size and \
                int(np.abs(shifts).max()) >= SENSOR_SIZE[0]:  # every event would leave the sensor: a blank frame
            raise ValueError(f"shifts must lie in -{SENSOR_SIZE[0] - 1}..{SENSOR_SIZE[0] - 1} pixels, got up to "
                             f"{int(np.abs(shifts).max())}: a shift of the sensor's side or more moves every event "
                             f"off it")
        rows = self.packed[indices]
        where = array_module_of(rows)
        by_frame = where.ascontiguousarray(rows.reshape(len(indices), self.n_time_bins, -1).transpose(1, 0, 2))
        bits = where.unpackbits(by_frame).reshape(self.n_time_bins, len(indices), N_INPUTS)
        if shifts is not None:
            bits = translate(bits, shifts)
        return xp.asarray(bits).astype(xp.float32)

    def digest(self):
        """The first 16 hex digits of a sha256 of the frames and labels: what identifies the samples."""
        digest = hashlib.sha256(np.ascontiguousarray(self.packed))
        digest.update(np.ascontiguousarray(self.labels))
        return digest.hexdigest()[:16]


@dataclass
class NMNIST:
    """The three splits, plus the cache metadata of the Train and Test folders."""
    train: Split
    val: Split
    test: Split
    info: dict

    def on(self, xp):
        """The splits with their packed frames on xp's device (Split.on)."""
        return NMNIST(self.train.on(xp), self.val.on(xp), self.test.on(xp), self.info)

    def fingerprint(self):
        """What identifies the data a run sees: each split's size and digest of its frames and labels.
        Unlike the cache's key it does not depend on the recordings' modification times."""
        return {name: f"{len(split)} samples, sha256 {split.digest()}"
                for name, split in (("train", self.train), ("val", self.val), ("test", self.test))}


def _load_folder(folder, n_time_bins, cache_dir, progress, rebuild, listed):
    """Split of all recordings in one folder, from the cache (built first if needed). `listed`:
    its recordings and their os.stat."""
    recordings, stats = listed
    header = _header(recordings, n_time_bins, stats)
    path = _cache_path(cache_dir, folder.name, header)
    digits = np.array([label for _, label in recordings], dtype=np.int64)
    cached = None if rebuild else _load_cache(path, header, digits)
    if cached is None:
        began = time.time()
        _build_cache(path, recordings, digits, header, progress)
        cached = _load_cache(path, header, digits)
        left = left_temporaries_note(path.parent, [path.name], "a frame cache's build", before=began)
        if left:
            print(left, file=sys.stderr)
    packed, labels, meta = cached
    if meta["n_short"] == len(labels):
        raise BadDataError(f"every one of the {len(labels)} recordings in {folder} is empty or shorter than "
                           f"{n_time_bins} us, so its frames hold no event; they are not N-MNIST recordings: "
                           f"{_how_to_restore(folder)}")
    if meta["n_short"]:
        _warn(f"{meta['n_short']} of {len(labels)} recordings in {folder} are empty or "
              f"shorter than {n_time_bins} us; their frames are all zero")
    return Split(packed, labels, n_time_bins), dict(meta, cache=str(path))


def split_indices(n):
    """(train, val) indices of n training recordings: a 9:1 split by generator seed 0, each sorted."""
    check_whole("n", n, 0, None, "54000, the training recordings")
    perm = np.random.default_rng(0).permutation(n)
    n_val = round(n / 10)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def load_nmnist(root=None, n_time_bins=10, cache_dir=None, download=False, progress=True, rebuild=False):
    """
    Train/val/test splits of N-MNIST as packed frames, decoding the recordings only on the first
    call (or with rebuild=True); later calls read the cache. Its errors speak to the commands that
    call it: their --data-root, --download and --cache-dir are `root`, `download` and `cache_dir`.
    """
    check_whole("n_time_bins", n_time_bins, 1, MAX_TIME_BINS, "e.g. 10, T as --time-bins takes it")
    n_time_bins = int(n_time_bins)  # a NumPy integer too goes into the cache's JSON header
    for name, flag in (("download", download), ("progress", progress), ("rebuild", rebuild)):
        if not isinstance(flag, (bool, np.bool_)):  # a string such as "no" would be taken as true
            raise ValueError(f"{name} must be True or False, got {flag!r}")
    for name, folder, example in (("root", root, "path/to/nmnist"), ("cache_dir", cache_dir, "path/to/frames")):
        if not (folder is None or isinstance(folder, (str, os.PathLike)) and str(folder).strip()):
            raise ValueError(f"{name} must be a folder's path (a str or pathlib.Path) or None, got "
                             f"{repr(folder) if isinstance(folder, str) else a_kind(folder)}: "
                             f"give e.g. '{example}'")
    dirs = _split_dirs(resolve_root(root), download, given=root is not None)
    cache_dir = frame_cache_dir(cache_dir)
    check_cache_dir(cache_dir)
    listed = {}
    for name, folder in dirs.items():
        recordings = list_recordings(folder)
        listed[name] = recordings, _stats(recordings)
    for folder in dirs.values():
        _check_one_label(folder, listed[folder.name])
    _check_apart(dirs, listed)
    full, train_info = _load_folder(dirs["Train"], n_time_bins, cache_dir, progress, rebuild, listed["Train"])
    test, test_info = _load_folder(dirs["Test"], n_time_bins, cache_dir, progress, rebuild, listed["Test"])
    _warn_copies({"Train": full, "Test": test}, {name: listed[name][0] for name in dirs}, dirs)
    if len(full) < len(test):  # N-MNIST's Train holds six times its Test: the folders may be swapped
        _warn(f"{dirs['Train']} holds fewer recordings ({len(full):,}) than {dirs['Test']} ({len(test):,}), where "
              f"N-MNIST's training split is six times its test split: if the two folders are swapped, swap them back")
    train_idx, val_idx = split_indices(len(full))
    train = Split(full.packed[train_idx], full.labels[train_idx], n_time_bins)
    val = Split(full.packed[val_idx], full.labels[val_idx], n_time_bins)
    return NMNIST(train, val, test, {"Train": train_info, "Test": test_info})


def _same_file(status):
    """What tells one recording's file from another's, whatever name reaches it (a link)."""
    return status.st_dev, status.st_ino, status.st_size, status.st_mtime_ns


def _check_one_label(folder, listed):
    """BadDataError if a split's folder reaches one recording by two names (a digit folder that is a
    link to another, a file linked under two labels): a recording is one sample, of one digit."""
    seen = {}
    for (path, _), status in zip(*listed):
        first = seen.setdefault(_same_file(status), path) if status.st_ino else path
        if first == path:
            continue
        if first.parent == path.parent:
            raise BadDataError(f"{path.parent} holds one recording under two names ({path} is {first}): a recording "
                               f"is one sample; remove one of the names")
        raise BadDataError(f"{first.parent} and {path.parent} share recordings ({path} is {first}): a recording has "
                           f"one label: give each digit folder its own recordings, not links to another's")


def _check_apart(dirs, listed):
    """BadDataError if the Train and Test folders share a recording (the same file reached through a
    link, or one folder a link to the other): the test split must be unseen in training."""
    train = {_same_file(status): path for (path, _), status in zip(*listed["Train"]) if status.st_ino}
    for (path, _), status in zip(*listed["Test"]):
        seen = train.get(_same_file(status))
        if seen is not None:
            raise BadDataError(f"{dirs['Test']} and {dirs['Train']} share recordings ({path} is {seen}); the test "
                               f"split must hold its own recordings: {_how_to_restore(dirs['Test'])}")


def _warn_copies(splits, recordings, dirs):
    """Warn of a recording whose frames repeat another's, a copy rather than a link (which
    _check_apart and _check_one_label refuse): a test recording copied into Train lets the test
    score count a sample trained on; one under two digits trains both labels; a copy within a split
    weighs its sample twice. Frames without an event (an empty or short recording) are left out:
    they repeat by nature. Real and emulated recordings never repeat (the emulator draws each from
    its own key)."""
    seen, copies = {}, {"test": [], "labels": [], "twice": []}  # {crc32 of frames: [(frames, path, label, split)]}
    for name, split in splits.items():
        for row, (path, label) in zip(split.packed, recordings[name]):
            if not row.any():
                continue
            same_crc = seen.setdefault(zlib.crc32(row), [])
            first = next((entry for entry in same_crc if np.array_equal(entry[0], row)), None)
            if first is None:
                same_crc.append((row, path, label, name))
                continue
            _, first_path, first_label, first_split = first
            kind = "test" if first_split != name else "labels" if first_label != label else "twice"  # a leak first
            copies[kind].append((first_path, path, first_label, label))
    for kind, pairs in copies.items():
        if pairs:
            (original, copy, original_label, copy_label), one = pairs[0], len(pairs) == 1
            count = "1 recording" if one else f"{len(pairs)} recordings"
            digits = f", under digits {original_label} and {copy_label}" if original_label != copy_label else ""
            _warn({"test": f"{count} of {dirs['Test']} {'holds' if one else 'hold'} the same frames as "
                           f"{'one' if one else 'recordings'} of {dirs['Train']} (e.g. {original} and {copy}{digits}; "
                           f"which is the copy, the frames cannot tell): a run trained on this copy counts such a "
                           f"recording in its test score as unseen though it trained on it, and a score over every "
                           f"split counts it twice; remove the {'copy' if one else 'copies'} you made",
                   "labels": f"{count} under one digit {'holds' if one else 'hold'} the same frames as one under "
                             f"another (e.g. {original} and {copy}; which is the copy, the frames cannot tell): such a "
                             f"sample trains under two labels; remove the one under the wrong digit",
                   "twice": f"{count} {'is a copy' if one else 'are copies'} of another of its split (the same frames, "
                            f"e.g. {copy} of {original}): each copy weighs its sample once more; remove the "
                            f"{'copy' if one else 'copies'}"}[kind])


def epoch_order(n, seed, epoch):
    """The shuffled order of n samples in one epoch, seeded by (seed, epoch); read-only, and kept
    for the next minibatches (two epochs: a minibatch of several may span them)."""
    check_whole("n", n, 0, 2 ** 31, "the split's samples")  # (N-MNIST's training split holds 54,000)
    for name, value in (("seed", seed), ("epoch", epoch)):
        check_whole(name, value, 0, 2 ** 64 - 1, "a whole number >= 0")
    return kept_epoch_order(int(n), int(seed), int(epoch))


@functools.lru_cache(maxsize=2)
def kept_epoch_order(n, seed, epoch):
    """epoch_order's answer, kept for the next call of the same arguments."""
    order = np.random.default_rng([seed, epoch]).permutation(n)
    order.flags.writeable = False
    return order


def batches(split, batch_size, xp=np, seed=0, epoch=0, shuffle=True):
    """
    Minibatches (x (T, N, 2312) float32, y (N,) int64) as xp arrays. shuffle=True: in
    epoch_order(seed, epoch), full batches only (a split smaller than one batch: all of it, as
    minibatch gives); shuffle=False: in order, last partial batch included.
    """
    check_minibatch(split, batch_size, xp, seed, 0, 1, 0)
    check_whole("epoch", epoch, 0, 2 ** 64 - 1, "0, the first")
    if not isinstance(shuffle, (bool, np.bool_)):
        raise ValueError(f"shuffle must be True or False, got {shuffle!r}")
    n = len(split)
    if shuffle:
        order = epoch_order(n, seed, epoch)
        stop = max(n - n % batch_size, min(n, batch_size))  # a split smaller than a batch: all of it, as minibatch
    else:
        order, stop = np.arange(n), n
    for start in range(0, stop, batch_size):
        idx = order[start:start + batch_size]
        yield split.frames(idx, xp), xp.asarray(split.labels[idx])


def minibatch(split, batch_size, xp, seed, step, count=1, max_shift=0):
    """The `step`-th shuffled minibatch of a training run, counting across epochs: the same
    batches as `batches(..., seed, epoch)` yields in turn, reachable directly so a resumed run
    continues exactly where it stopped. A split smaller than batch_size gives all of it. count > 1:
    minibatches step .. step + count - 1 as one.

    max_shift > 0 augments the batch: each sample moves by its own (dy, dx), both uniform in
    -max_shift..max_shift pixels, drawn from (seed, step, max_shift) so that a resumed run sees
    the same."""
    check_minibatch(split, batch_size, xp, seed, step, count, max_shift)
    per_epoch = max(len(split) // batch_size, 1)
    parts = [divmod(number, per_epoch) for number in range(step, step + count)]
    idx = np.concatenate([epoch_order(len(split), seed, epoch)[index * batch_size:(index + 1) * batch_size]
                          for epoch, index in parts])
    shifts = None
    if max_shift:
        part_size = len(idx) // count
        shifts = np.concatenate([np.random.default_rng([seed, number, max_shift]).integers(
            -max_shift, max_shift + 1, (part_size, 2)) for number in range(step, step + count)])
    return split.frames(idx, xp, shifts), xp.asarray(split.labels[idx])


def check_minibatch(split, batch_size, xp, seed, step, count, max_shift):
    """ValueError naming the fix unless minibatch's arguments make a minibatch."""
    if not isinstance(split, Split):
        raise ValueError(f"split must be a data.Split (load_nmnist(...).train), got {a_kind(split)}")
    check_array_module(xp)
    for name, value, low, high, example in (("batch_size", batch_size, 1, 2 ** 63 - 1, "256"),
                                            ("seed", seed, 0, 2 ** 64 - 1, "1"),  # (any seed Eggroll takes)
                                            ("step", step, 0, 2 ** 63 - 1, "0, the first"),
                                            ("count", count, 1, 2 ** 63 - 1, "1"),
                                            # (a shift of the sensor's side moves every event off it)
                                            ("max_shift", max_shift, 0, SENSOR_SIZE[0] - 1, "0, none, or 1")):
        check_whole(name, value, low, high, example)
    samples = min(batch_size, len(split)) * count  # as float32 frames, and their bits unpacked on the way
    refuse_beyond_ram(f"a minibatch of {samples:,} samples", samples * split.n_time_bins * N_INPUTS * 5,
                      "as float32 frames", "ask fewer samples (batch_size, count)")


def translate(frames, shifts):
    """Frames (T, N, 2312), NumPy or CuPy, of any dtype, with sample b's events moved by shifts[b] =
    (dy, dx) pixels: an event at (y, x) moves to (y + dy, x + dx), both polarities alike, and events
    moved off the 34 × 34 sensor are dropped. shifts: a NumPy integer array (N, 2).

    Input i = (polarity * 34 + y) * 34 + x, so a move by (dy, dx) moves every index by dy * 34 + dx:
    the samples of one shift are moved together by one slice of their frames, and the inputs whose
    source is not (y - dy, x - dx) of the same image (it is off the sensor) are blanked."""
    if getattr(frames, "ndim", None) != 3 or frames.shape[2] != N_INPUTS:
        raise ValueError(f"frames must be an array (T, N, {N_INPUTS}), got {a_kind(frames)}" +
                         (f" of shape {frames.shape}" if hasattr(frames, "shape") else ""))
    if not (isinstance(shifts, np.ndarray) and shifts.dtype.kind in "iu" and shifts.shape == (frames.shape[1], 2)):
        raise ValueError(f"shifts must be a NumPy integer array ({frames.shape[1]}, 2), a (dy, dx) per sample, got "
                         f"{a_kind(shifts)}" + (f" of {shifts.dtype} and shape {shifts.shape}"
                                                 if hasattr(shifts, "shape") else ""))
    xp = array_module_of(frames)
    width, height, _ = SENSOR_SIZE
    inputs = xp.arange(N_INPUTS)
    y, x = inputs // width % height, inputs % width
    moved = xp.zeros_like(frames)
    for dy, dx in sorted(set(map(tuple, shifts.tolist()))):  # each distinct shift
        if not abs(dy) < height or not abs(dx) < width:
            continue  # every event leaves the sensor
        on_sensor = (0 <= y - dy) & (y - dy < height) & (0 <= x - dx) & (x - dx < width)
        chosen = np.flatnonzero((shifts == (dy, dx)).all(axis=1))
        offset = dy * width + dx
        start, stop = max(offset, 0), N_INPUTS + min(offset, 0)
        moved[:, chosen, start:stop] = frames[:, chosen, start - offset:stop - offset] * on_sensor[start:stop]
    return moved
