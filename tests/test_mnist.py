"""MNIST from where a user has it (mnist.py): the four IDX files gzipped or not, and the download,
against HTTP servers on this machine that serve the committed digits whole or damaged."""
import functools
import gzip
import hashlib
import http.server
import os
import shutil
import socket
import subprocess
import sys
import threading
import time
import tracemalloc
import warnings
import zlib
from pathlib import Path

import numpy as np
import pytest

import data
import mnist
import run
import run_folder
from trickling_server import trickling

PLAIN = Path(__file__).resolve().parent / "data" / "mnist-digits"  # the committed digits, uncompressed
SHA256 = {name: hashlib.sha256((PLAIN / name).read_bytes()).hexdigest() for name in mnist.NAMES}


@pytest.fixture(scope="module")
def gzipped(tmp_path_factory):
    """The committed digits as the mirrors serve MNIST: each file gzipped (name.gz)."""
    folder = tmp_path_factory.mktemp("mnist-gz")
    for name in mnist.NAMES:
        (folder / f"{name}.gz").write_bytes(gzip.compress((PLAIN / name).read_bytes(), mtime=0))
    return folder


@pytest.fixture
def serve():
    """serve(folder): the URL of an HTTP server on 127.0.0.1 that serves `folder`, and the list of
    the paths it was asked for."""
    servers = []

    def start(folder):
        asked = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def log_message(self, *args):
                asked.append(self.path)

        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/", asked

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.fixture
def official(monkeypatch):
    """The committed digits stand for the official files: their SHA256 is the one checked."""
    monkeypatch.setattr(mnist, "OFFICIAL_SHA256", SHA256)


def closed_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_gzipped_and_plain_files_read_the_same(gzipped, official):
    gzipped, plain = mnist.load(gzipped), mnist.load(PLAIN)
    assert gzipped[1] == plain[1] == SHA256
    for split in ("train", "test"):
        images, labels = gzipped[0][split]
        assert images.shape == (len(labels), 28, 28) and images.dtype == np.uint8 and labels.max() <= 9
        assert all(np.array_equal(a, b) for a, b in zip(gzipped[0][split], plain[0][split]))


def test_files_that_are_not_mnist_are_refused_in_one_line(tmp_path, gzipped):
    images = (PLAIN / "t10k-images-idx3-ubyte").read_bytes()
    labels = (PLAIN / "t10k-labels-idx1-ubyte").read_bytes()
    image_name, label_name = "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"
    for raw, name in ((images[:-1], image_name), (images + b"\0", image_name), (images[:7], image_name), (b"\x00\x00\x08\x02" + images[4:], image_name),
                      (labels[:8] + bytes([10]) + labels[9:], label_name)):
        with pytest.raises(data.BadDataError, match="not an MNIST IDX file") as error:
            mnist.parse(raw, name)
        assert "\n" not in str(error.value)
    assert mnist.parse(images, image_name).shape == (21, 28, 28)
    for name in mnist.NAMES:
        shutil.copyfile(gzipped / f"{name}.gz", tmp_path / f"{name}.gz")
    (tmp_path / "t10k-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels[:4] + (20).to_bytes(4, "big")
                                                                       + labels[8:28], mtime=0))
    with pytest.raises(data.BadDataError, match="t10k-images-idx3-ubyte.gz holds 21 images but "
                                                "t10k-labels-idx1-ubyte.gz 20 labels"):  # the files read, named
        mnist.load(tmp_path)


def test_a_gzip_file_cut_short_and_a_file_of_no_labels_are_told_apart(tmp_path):
    """A .gz file that ends before its data (a download cut short) is refused in one line, though zlib
    raises nothing for it; an IDX label file that holds no labels is read as none, not a NumPy error."""
    labels = (PLAIN / "t10k-labels-idx1-ubyte").read_bytes()
    cut = tmp_path / "t10k-labels-idx1-ubyte.gz"
    cut.write_bytes(gzip.compress(labels, mtime=0)[:-12])
    with pytest.raises(data.BadDataError) as error:
        mnist.read(cut)
    assert str(error.value) == (f"{cut}: not a whole gzip file (it ends before its data); replace it with the "
                                f"official MNIST file")
    assert mnist.parse(labels[:4] + bytes(4), "t10k-labels-idx1-ubyte").shape == (0,)


def test_files_under_each_others_names_and_a_gzip_bomb_are_one_line_exit_2(tmp_path, capsys):
    """Images and labels swapped, or an image file copied over a label file: named by what the file
    holds and what its name says; a .gz that inflates past any MNIST file is refused as it inflates."""
    for case, change, held in (("swapped", {"t10k-images-idx3-ubyte": "t10k-labels-idx1-ubyte",
                                            "t10k-labels-idx1-ubyte": "t10k-images-idx3-ubyte"},
                                "t10k-images-idx3-ubyte holds digit labels (IDX magic number 2049)"),
                               ("copied", {"train-labels-idx1-ubyte": "train-images-idx3-ubyte"},
                                "train-labels-idx1-ubyte holds images (IDX magic number 2051)")):
        folder = tmp_path / case
        folder.mkdir()
        for name in mnist.NAMES:
            shutil.copyfile(PLAIN / change.get(name, name), folder / name)
        assert run.main(["emulate", "--mnist", str(folder), "--out", str(tmp_path / "out"), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "not what its name says: put each MNIST file under its own name" in err, err
        assert f"{folder / held}, not what its name says" in err, err  # what the file holds, by its name
    bomb = tmp_path / "bomb"
    bomb.mkdir()
    for name in mnist.NAMES:
        shutil.copyfile(PLAIN / name, bomb / name)
    (bomb / "train-images-idx3-ubyte").unlink()
    (bomb / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes(mnist.MAX_FILE_BYTES + 2), mtime=0))
    with pytest.raises(data.BadDataError, match="inflates to more than 50,000,000 bytes"):
        mnist.load(bomb)
    assert not (tmp_path / "out").exists()


def test_a_gzip_bomb_is_refused_as_it_inflates_not_after(tmp_path):
    """A .gz of 400 MB of zeros (0.4 MB on disk) under an MNIST name, to be read or checked before a
    download: refused having inflated no more than MAX_FILE_BYTES + 1, not the whole of it (a 50 MB
    bomb would be 50 GB)."""
    for name in mnist.NAMES:
        shutil.copyfile(PLAIN / name, tmp_path / name)
    (tmp_path / "train-images-idx3-ubyte").unlink()
    packer = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    (tmp_path / "train-images-idx3-ubyte.gz").write_bytes(
        b"".join(packer.compress(bytes(2**20)) for _ in range(400)) + packer.flush())
    tracemalloc.start()
    try:
        with pytest.raises(data.BadDataError, match="inflates to more than 50,000,000 bytes"):
            mnist.load(tmp_path)
        assert not mnist.verified(tmp_path / "train-images-idx3-ubyte.gz", mnist.OFFICIAL_SHA256[mnist.NAMES[0]])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * mnist.MAX_FILE_BYTES, f"{peak:,} bytes allocated"


def test_a_fifo_or_a_device_under_an_mnist_name_is_named_for_what_it_is(tmp_path):
    for name in mnist.NAMES:
        shutil.copyfile(PLAIN / name, tmp_path / name)
    (tmp_path / "train-labels-idx1-ubyte").unlink()
    os.mkfifo(tmp_path / "train-labels-idx1-ubyte")
    with pytest.raises(data.BadDataError, match="it is a named pipe \\(FIFO\\), not a regular file"):
        mnist.load(tmp_path)
    (tmp_path / "train-labels-idx1-ubyte").unlink()
    (tmp_path / "train-labels-idx1-ubyte").symlink_to("/dev/zero")
    with pytest.raises(data.BadDataError, match="it is a character device"):
        mnist.load(tmp_path)


def test_a_failed_fetch_removes_only_the_empty_folders_it_made(tmp_path, monkeypatch):
    """The fetch fails: the folders it made go if empty; a file someone put in one meanwhile (the
    frame cache, a user's notes) stays, and so does the folder holding it."""
    folder = tmp_path / "cache" / "eggroll" / "mnist"

    def failing(url, path, sha256, progress):
        (tmp_path / "cache" / "frames").mkdir(parents=True, exist_ok=True)
        (tmp_path / "cache" / "frames" / "notes").write_text("mine")
        return "unreachable"
    monkeypatch.setattr(mnist, "download", failing)
    with pytest.raises(data.MissingDataError, match="MNIST could not be downloaded"):
        mnist.fetch(folder, progress=False)
    assert (tmp_path / "cache" / "frames" / "notes").read_text() == "mine"
    assert not (tmp_path / "cache" / "eggroll").exists()
    monkeypatch.setattr(mnist, "download", lambda *args: "unreachable")
    with pytest.raises(data.MissingDataError):
        mnist.fetch(tmp_path / "fresh" / "mnist", progress=False)
    assert not (tmp_path / "fresh").exists()

    def full_disk(url, path, sha256, progress):  # the first file's write fails: a UsageError naming it
        path.parent.mkdir(parents=True, exist_ok=True)
        raise run_folder.UsageError(f"cannot write {path}: No space left on device")
    monkeypatch.setattr(mnist, "download", full_disk)
    with pytest.raises(run_folder.UsageError):
        mnist.fetch(tmp_path / "full" / "mnist", progress=False)
    assert not (tmp_path / "full").exists()


def test_the_download_checks_each_file_and_fetches_only_what_is_missing(tmp_path, serve, official, monkeypatch,
                                                                        gzipped):
    url, asked = serve(gzipped)
    monkeypatch.setattr(mnist, "MIRRORS", (url,))
    cache = tmp_path / "cache" / "mnist"
    assert mnist.fetch(cache, progress=False) == cache
    assert sorted(asked) == sorted(f"/{name}.gz" for name in mnist.NAMES)
    assert all((cache / f"{name}.gz").read_bytes() == (gzipped / f"{name}.gz").read_bytes() for name in mnist.NAMES)
    assert mnist.load(cache)[1] == SHA256
    asked.clear()
    (cache / "t10k-labels-idx1-ubyte.gz").write_bytes(b"damaged")
    mnist.fetch(cache, progress=False)
    assert asked == ["/t10k-labels-idx1-ubyte.gz"] and mnist.load(cache)[1] == SHA256


def test_a_download_is_written_whole_and_never_through_a_link(tmp_path, serve, gzipped, monkeypatch):
    """mnist.download writes its file through run_folder.writing: a link at its path (to a user's
    file) is refused in one line and the linked file is left as it was; a write that fails midway
    leaves no file under the name, nor a temporary beside it."""
    url, _ = serve(gzipped)
    name = "t10k-labels-idx1-ubyte"
    mine, folder = tmp_path / "mine", tmp_path / "mnist"
    mine.write_text("my notes")
    folder.mkdir()
    (folder / f"{name}.gz").symlink_to(mine)
    with pytest.raises(run_folder.UsageError, match="is a symbolic link .*never through a link"):
        mnist.download(f"{url}{name}.gz", folder / f"{name}.gz", SHA256[name], progress=False)
    assert mine.read_text() == "my notes"
    (folder / f"{name}.gz").unlink()

    def cut_short(temporary, path):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(os, "replace", cut_short)
    with pytest.raises(run_folder.UsageError, match="No space left on device"):
        mnist.download(f"{url}{name}.gz", folder / f"{name}.gz", SHA256[name], progress=False)
    assert list(folder.iterdir()) == []


def test_a_damaged_download_is_refused_by_its_checksum_and_nothing_is_left(tmp_path, serve, official,
                                                                          monkeypatch, gzipped):
    damaged = tmp_path / "damaged"
    shutil.copytree(gzipped, damaged)
    images = bytearray(gzip.decompress((damaged / "train-images-idx3-ubyte.gz").read_bytes()))
    images[1000] ^= 1  # one bit of one pixel
    (damaged / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(bytes(images)))
    bad_url, _ = serve(damaged)
    monkeypatch.setattr(mnist, "MIRRORS", (bad_url,))
    cache = tmp_path / "cache" / "mnist"
    with pytest.raises(data.MissingDataError) as error:
        mnist.fetch(cache, progress=False)
    message = str(error.value)
    assert "\n" not in message and "train-images-idx3-ubyte.gz" in message and "not the official" in message
    assert f"into {cache} by hand" in message
    assert not (tmp_path / "cache").exists()
    good_url, _ = serve(gzipped)  # a second mirror that serves it whole is used instead
    monkeypatch.setattr(mnist, "MIRRORS", (bad_url, good_url))
    mnist.fetch(cache, progress=False)
    assert mnist.load(cache)[1] == SHA256 and not list(cache.glob("*.tmp"))


def test_a_download_that_trickles_on_ends_at_its_deadline_and_leaves_nothing(tmp_path, monkeypatch):
    """A mirror that keeps sending a byte now and then: the file's download ends at DOWNLOAD_DEADLINE
    (0.5 s here) with one line naming the file, the mirror and the folder to fetch it into by hand;
    nothing is kept."""
    monkeypatch.setattr(mnist, "DOWNLOAD_DEADLINE", 0.5)
    folder = tmp_path / "cache" / "mnist"
    began = time.monotonic()
    with trickling(b"\x1f") as server, pytest.raises(data.MissingDataError) as error:
        url = f"{server}/mnist/"
        monkeypatch.setattr(mnist, "MIRRORS", (url,))
        mnist.fetch(folder, progress=False)
    assert time.monotonic() - began < 4.5
    assert str(error.value) == (
        f"MNIST could not be downloaded (train-images-idx3-ubyte.gz from {url}: still coming after 0.5 s, the most "
        f"a download may take); fetch {', '.join(f'{name}.gz' for name in mnist.NAMES)} from {url} into {folder} by "
        f"hand, or give --mnist a folder that holds them")
    assert not (tmp_path / "cache").exists()


def test_the_download_waits_as_long_as_the_docs_say():
    text = " ".join((Path(mnist.__file__).parent / "docs" / "data.md").read_text().split())
    assert f"silent for {mnist.DOWNLOAD_TIMEOUT:g} s, or one whose file is not done after " \
           f"{mnist.DOWNLOAD_DEADLINE:g} s" in text


def test_offline_the_command_says_what_to_fetch_and_where(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(mnist, "MIRRORS", (f"http://127.0.0.1:{closed_port()}/mnist/",))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run.main(["emulate", "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "MNIST could not be downloaded" in err and "refused" in err.lower()
    assert f"into {tmp_path / 'cache' / 'eggroll-snn' / 'mnist'} by hand" in err and "--mnist" in err
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_without_mnist_the_command_downloads_it_into_the_cache_and_emulates(tmp_path, serve, official,
                                                                            monkeypatch, capsys, gzipped):
    url, _ = serve(gzipped)
    monkeypatch.setattr(mnist, "MIRRORS", (url,))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    assert run.main(["emulate", "--out", str(tmp_path / "out"), "--split", "test", "--quiet"]) == 0
    assert sorted(p.name for p in (tmp_path / "cache" / "eggroll-snn" / "mnist").iterdir()) == \
        sorted(f"{name}.gz" for name in mnist.NAMES)
    assert len(list((tmp_path / "out" / "NMNIST" / "Test").glob("*/*.bin"))) == 21
    assert not list((tmp_path / "out" / "NMNIST" / "Train").glob("*/*.bin"))


def test_a_warning_of_unofficial_files_is_one_clean_line(tmp_path):
    """MNIST files that are not the official ones: the command says so in one line, "warning: ...",
    not Python's "mnist.py:0: UserWarning: ..." form; and, in a line of its own, the digits its test
    split lacks (these 21 test digits have no 3 and no 8), whose emulated folders stay empty."""
    digits = Path(__file__).resolve().parent / "data" / "mnist-digits"
    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "run.py"), "emulate", "--mnist",
                           str(digits), "--out", str(tmp_path / "out"), "--split", "test", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 2 and all(line.startswith("warning: ") for line in lines), done.stderr
    assert "differ from the official MNIST files" in lines[0] and "UserWarning" not in done.stderr
    assert lines[1] == (f"warning: the MNIST files in {digits} hold no digits 3, 8 in the test split, so the "
                        f"emulation's Test folders of those digits stay empty, and train and evaluate refuse the copy "
                        f"(every digit is needed in each split)")
    one = tmp_path / "one-lacking"  # one of a digit that is there twice labelled 8: digit 3 alone is lacking
    shutil.copytree(digits, one)
    labels = bytearray((one / "t10k-labels-idx1-ubyte").read_bytes())
    twice = next(label for label in labels[8:] if labels[8:].count(label) > 1)
    labels[labels.index(twice, 8)] = 8
    (one / "t10k-labels-idx1-ubyte").write_bytes(bytes(labels))
    done = subprocess.run([sys.executable, str(Path(__file__).resolve().parents[1] / "run.py"), "emulate", "--mnist",
                           str(one), "--out", str(tmp_path / "out-one"), "--split", "test", "--quiet"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr.splitlines()[1] == (
        f"warning: the MNIST files in {one} hold no digit 3 in the test split, so the emulation's Test folders of "
        f"that digit stay empty, and train and evaluate refuse the copy (every digit is needed in each split)"), \
        done.stderr


def test_an_uncompressed_file_that_differs_from_the_gz_beside_it_is_said(tmp_path):
    """Both t10k-labels-idx1-ubyte.gz and t10k-labels-idx1-ubyte, with other contents: the .gz is
    read, and a warning says so and names the other; the same contents, no warning."""
    digits = Path(__file__).resolve().parent / "data" / "mnist-digits"
    shutil.copytree(digits, tmp_path / "mnist")
    name = "t10k-labels-idx1-ubyte"
    same = (tmp_path / "mnist" / name).read_bytes()
    (tmp_path / "mnist" / f"{name}.gz").write_bytes(gzip.compress(same))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        mnist.load(tmp_path / "mnist")
    assert not [w for w in said if "is read, and differ" in str(w.message)]
    (tmp_path / "mnist" / name).write_bytes(same[:-1] + bytes([(same[-1] + 1) % 10]))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        mnist.load(tmp_path / "mnist")
    assert [str(w.message) for w in said if "is read, and differ" in str(w.message)] == [
        f"{name}.gz in {tmp_path / 'mnist'} is read, and differs from the uncompressed {name} beside it, which is "
        f"not: keep the copy that is MNIST's and delete the other"]


def test_a_folder_of_the_test_files_alone_is_told_that_all_four_are_needed(tmp_path):
    """`emulate --split test` still reads all four files (the fingerprint names each): a folder of the
    two test files is told so, not merely that a training file is missing."""
    for name in mnist.FILES["test"]:
        (tmp_path / f"{name}.gz").write_bytes(b"")
    with pytest.raises(data.MissingDataError, match=r"train-images-idx3-ubyte\.gz \(or train-images-idx3-ubyte\) is "
                                                    r"missing; .* all four whichever split is emulated"):
        mnist.load(tmp_path)


def test_a_fetch_interrupted_as_it_writes_its_first_file_removes_the_folders_it_made(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) as the first file is written: the folders the fetch made go too."""
    def interrupted(url, path, sha256, progress):  # download makes path.parent, then Ctrl-C in the write
        path.parent.mkdir(parents=True, exist_ok=True)
        raise KeyboardInterrupt
    monkeypatch.setattr(mnist, "download", interrupted)
    with pytest.raises(KeyboardInterrupt):
        mnist.fetch(tmp_path / "cache" / "mnist", progress=False)
    assert list(tmp_path.iterdir()) == []


def test_a_download_larger_than_any_mnist_file_is_named_so_at_its_bound(tmp_path, serve, monkeypatch):
    """A file of more bytes than MAX_DOWNLOAD_BYTES (two chunks of 64 KiB, the bound one chunk) is
    said to be too large, not taken for a cut gzip; nothing is written."""
    monkeypatch.setattr(mnist, "MAX_DOWNLOAD_BYTES", 1 << 16)
    (tmp_path / "served").mkdir()
    (tmp_path / "served" / "big.gz").write_bytes(b"\x1f" * (2 << 16))
    url, _ = serve(tmp_path / "served")
    target = tmp_path / "got" / "big.gz"
    assert mnist.download(f"{url}big.gz", target, "0" * 64, progress=False) == \
        "more than 65,536 bytes, not an MNIST file"
    assert not target.exists()


@pytest.mark.parametrize("split", ["train", "t10k"])
def test_a_split_of_no_image_is_refused_naming_its_file(tmp_path, split):
    """MNIST files whose images and labels agree on none (a header alone): one line naming the images'
    file, not an emulation of no recording in that split."""
    for path in PLAIN.iterdir():
        shutil.copyfile(path, tmp_path / path.name)
    images, labels = tmp_path / f"{split}-images-idx3-ubyte", tmp_path / f"{split}-labels-idx1-ubyte"
    images.write_bytes(images.read_bytes()[:4] + bytes(4) + images.read_bytes()[8:16])
    labels.write_bytes(labels.read_bytes()[:4] + bytes(4))
    with pytest.raises(data.BadDataError) as error:
        mnist.load(tmp_path)
    assert str(error.value) == f"{images} holds no images; replace it with the official MNIST file"
