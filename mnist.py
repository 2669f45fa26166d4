"""
MNIST (LeCun, Cortes and Burges; CC BY-SA 3.0), the digits that emulate.py turns into recordings:
the four IDX files read from a folder, gzipped or not (`load`), or downloaded into the cache
folder (`fetch`).

A download takes each file from the first of MIRRORS that serves it whole: its uncompressed bytes
must have the SHA256 published for the official file (OFFICIAL_SHA256; the gzip streams differ
between copies, their contents do not). A file that fails the check is refused and nothing of it
is kept; a file that passes is written whole or not at all, so a download interrupted or failed
halfway keeps the files it finished and fetches only the others next time.

Errors a user can cause are a data.MissingDataError (no MNIST where it should be, or no download)
or a data.BadDataError (a file that is not an MNIST IDX file), each one line naming the fix.
"""
import hashlib
import struct
import urllib.request
import warnings
import zlib
from pathlib import Path

import numpy as np
from tqdm import tqdm

import data
from run_folder import first_missing, read_bytes, remove_made_folders, writing

FILES = {"train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
         "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")}
NAMES = FILES["train"] + FILES["test"]
# The SHA256 of the official uncompressed files, as published for them.
OFFICIAL_SHA256 = {
    "train-images-idx3-ubyte": "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db",
    "train-labels-idx1-ubyte": "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5",
    "t10k-images-idx3-ubyte": "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7",
    "t10k-labels-idx1-ubyte": "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2",
}
MIRRORS = ("https://ossci-datasets.s3.amazonaws.com/mnist/", "https://storage.googleapis.com/cvdf-datasets/mnist/")
MAX_DOWNLOAD_BYTES = 20_000_000  # the largest file, train-images-idx3-ubyte.gz, is 9.9 MB
DOWNLOAD_TIMEOUT = 60.0  # seconds a download waits for a connection or for its next bytes
DOWNLOAD_DEADLINE = 1800.0  # seconds one file's whole download may take, however slowly its bytes keep coming
MAX_FILE_BYTES = 50_000_000  # the largest file, train-images-idx3-ubyte, is 47,040,016 bytes uncompressed
IMAGE_MAGIC, LABEL_MAGIC = 2051, 2049


def default_folder():
    """Where a download goes: <cache home>/eggroll-snn/mnist."""
    return data._cache_home() / "mnist"


def path_of(folder, name):
    """The file of IDX file `name` in `folder`: name.gz, else name; MissingDataError if neither."""
    for path in (folder / f"{name}.gz", folder / name):
        if path.exists():  # a FIFO or a device is there, not missing: read_bytes refuses it by what it is
            return path
    raise data.MissingDataError(
        f"MNIST not found in {folder}: {name}.gz (or {name}) is missing; put the four MNIST IDX files "
        f"({', '.join(f'{n}.gz' for n in NAMES)}) there, all four whichever split is emulated (the emulation's "
        f"fingerprint names them all), or leave out --mnist to download them")


def read(path):
    """The uncompressed bytes of an IDX file, gzipped (.gz) or not."""
    raw = read_bytes(path, MAX_FILE_BYTES, data.BadDataError, "an MNIST file holds", "read the MNIST file")
    return inflate(raw, path) if path.suffix == ".gz" else raw


def inflate(raw, path):
    """The bytes gzipped in `raw` (the file `path`'s), inflated no further than MAX_FILE_BYTES + 1:
    one that holds more (a gzip bomb) is a BadDataError before it fills the memory."""
    inflating = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)  # gzip's header; stops at MAX_FILE_BYTES + 1
    try:
        inflated = inflating.decompress(raw, MAX_FILE_BYTES + 1)
    except zlib.error as error:
        raise data.BadDataError(f"{path}: not a whole gzip file ({error}); replace it with the official "
                                f"MNIST file") from None
    if len(inflated) > MAX_FILE_BYTES:
        raise data.BadDataError(f"{path} inflates to more than {MAX_FILE_BYTES:,} bytes, more than an MNIST file "
                                f"holds; replace it with the official MNIST file")
    if not inflating.eof:
        raise data.BadDataError(f"{path}: not a whole gzip file (it ends before its data); replace it with the "
                                f"official MNIST file")
    return inflated


def parse(raw, path):
    """An IDX file's array: images (n, 28, 28) uint8 or labels (n,) uint8, as its name says; a
    BadDataError naming `path` if the bytes are not that."""
    magic, n = struct.unpack(">II", raw[:8]) if len(raw) >= 8 else (None, 0)
    wanted, other = (IMAGE_MAGIC, "digit labels") if "images" in Path(path).name else (LABEL_MAGIC, "images")
    if magic in (IMAGE_MAGIC, LABEL_MAGIC) and magic != wanted:
        raise data.BadDataError(f"{path} holds {other} (IDX magic number {magic}), not what its name says: put "
                                f"each MNIST file under its own name")
    if magic == IMAGE_MAGIC and len(raw) >= 16:
        rows, columns = struct.unpack(">II", raw[8:16])
        if (rows, columns) == (28, 28) and len(raw) == 16 + n * rows * columns:
            return np.frombuffer(raw, np.uint8, offset=16).reshape(n, rows, columns)
    if magic == LABEL_MAGIC and len(raw) == 8 + n:
        labels = np.frombuffer(raw, np.uint8, offset=8)
        if labels.size == 0 or labels.max() <= 9:
            return labels
    raise data.BadDataError(f"{path}: not an MNIST IDX file of 28 x 28 images or digit labels (truncated or "
                            f"damaged); replace it with the official MNIST file")


def load(folder, unofficial_means="their recordings are not the project's emulated N-MNIST"):
    """MNIST from `folder`: ({"train": (images, labels), "test": (images, labels)}, the SHA256 of each
    of the four uncompressed files). Files that are not the official ones are read with a warning
    ending with what that means for the caller (`unofficial_means`)."""
    folder = Path(folder).expanduser()
    if not folder.is_dir():
        state = "is not a folder" if folder.exists() else "does not exist"
        raise data.MissingDataError(f"MNIST folder {folder} {state}; give --mnist the folder that holds the "
                                    f"four MNIST IDX files, or leave it out to download them")
    splits, sha256 = {}, {}
    for split, names in FILES.items():
        arrays = []
        for name in names:
            path = path_of(folder, name)
            raw = read(path)
            if path.suffix == ".gz" and (folder / name).is_file() and read(folder / name) != raw:
                warnings.warn_explicit(f"{path.name} in {folder} is read, and differs from the uncompressed {name} "
                                       f"beside it, which is not: keep the copy that is MNIST's and delete the other",
                                       UserWarning, __file__, 0)
            sha256[name] = hashlib.sha256(raw).hexdigest()
            arrays.append(parse(raw, path))
        images, labels = arrays
        read_from = [path_of(folder, name) for name in names]  # name.gz where there is one: the file read
        if len(images) == 0:  # a split of no image: nothing to train or score on
            raise data.BadDataError(f"{read_from[0]} holds no images; replace it with the official MNIST file")
        if len(images) != len(labels):
            raise data.BadDataError(f"{folder}: {read_from[0].name} holds {len(images)} images but "
                                    f"{read_from[1].name} {len(labels)} labels; replace them with the official MNIST "
                                    f"files")
        splits[split] = images, labels
    unofficial = [name for name in NAMES if sha256[name] != OFFICIAL_SHA256[name]]
    if unofficial:
        warnings.warn_explicit(f"{', '.join(unofficial)} in {folder} differ from the official MNIST files "
                               f"(SHA256); {unofficial_means}",
                               UserWarning, __file__, 0)
    return splits, sha256


def fetch(folder=None, progress=True):
    """Make sure `folder` (default_folder() if None) holds the four MNIST files, each checked by
    the SHA256 of its contents (OFFICIAL_SHA256), downloading from MIRRORS those it lacks or holds
    damaged. Returns the folder; MissingDataError, one line, if a file could not be had."""
    folder = Path(folder).expanduser() if folder is not None else default_folder()
    mirrors, expected = MIRRORS, OFFICIAL_SHA256
    first_new = first_missing(folder)
    try:
        for name in NAMES:
            path = folder / f"{name}.gz"
            if path.is_file() and verified(path, expected[name]):
                continue
            problems = []
            for mirror in mirrors:
                problem = download(mirror + name + ".gz", path, expected[name], progress)
                if problem is None:
                    break
                problems.append(f"{mirror}: {problem}")
            else:
                raise data.MissingDataError(
                    f"MNIST could not be downloaded ({name}.gz from {'; '.join(problems)}); fetch "
                    f"{', '.join(f'{n}.gz' for n in NAMES)} from {mirrors[0]} into "
                    f"{folder} by hand, or give --mnist a folder that holds them")
    except BaseException:  # no file could be had, a full disk, Ctrl-C: the folders it made, if empty, go
        remove_made_folders(folder, first_new)
        raise
    return folder


def verified(path, sha256):
    """Whether the gzipped file at `path` decompresses to contents of SHA256 `sha256`."""
    try:
        return hashlib.sha256(read(path)).hexdigest() == sha256
    except (OSError, data.BadDataError):
        return False


def download(url, path, sha256, progress):
    """Download `url` (a gzipped IDX file) to `path` if its contents have SHA256 `sha256`, written
    whole or not at all. None on success, else why not, in a few words. Each wait for the server
    ends after DOWNLOAD_TIMEOUT seconds, the whole download after DOWNLOAD_DEADLINE."""
    try:
        with data.deadline(DOWNLOAD_DEADLINE), urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT) as response:
            with tqdm(total=int(response.headers.get("Content-Length") or 0) or None, unit="B", unit_scale=True,
                      desc=f"downloading {path.name}", disable=not progress, leave=False) as bar:
                chunks, size = [], 0
                while size <= MAX_DOWNLOAD_BYTES:
                    chunk = response.read(1 << 16)
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    bar.update(len(chunk))
    except data.Overdue:
        return f"still coming after {DOWNLOAD_DEADLINE:g} s, the most a download may take"
    except OSError as error:  # a URLError, an HTTPError, a timeout, a connection reset
        reason = getattr(error, "reason", None) or error
        return " ".join(str(getattr(reason, "strerror", None) or reason).split())
    if size > MAX_DOWNLOAD_BYTES:
        return f"more than {MAX_DOWNLOAD_BYTES:,} bytes, not an MNIST file"
    blob = b"".join(chunks)
    try:
        contents = hashlib.sha256(inflate(blob, path)).hexdigest()
    except data.BadDataError:
        return "not a whole gzip file of an MNIST file's size"
    if contents != sha256:
        return f"its contents have SHA256 {contents[:12]}..., not the official {sha256[:12]}..."
    path.parent.mkdir(parents=True, exist_ok=True)
    with writing(path) as temporary:
        temporary.write_bytes(blob)
    return None
