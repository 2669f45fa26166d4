"""Tests of data.py on synthetic recordings in the N-MNIST format, and on real recordings if present."""

import hashlib
import json
import os
import re
import shutil
import signal
import socket
import time
import urllib.error
import urllib.request
import warnings
from pathlib import Path

import numpy as np
import pytest
import tonic
from hypothesis import given, settings, strategies as st
from tonic.io import read_mnist_file

import data
from trickling_server import trickling
from nmnist_files import REAL_DIR, REAL_ROOT, SAMPLE, encode_events, needs_real, random_events, write_dataset, write_recording

def tonic_frames(events, n_time_bins):
    """Reference: tonic's ToFrame, clamped to 1 and flattened per time bin."""
    to_frame = tonic.transforms.ToFrame(sensor_size=data.SENSOR_SIZE, n_time_bins=n_time_bins)
    return np.clip(to_frame(events), 0, 1).reshape(n_time_bins, -1).astype(np.uint8)


def load(root, cache, **kwargs):
    return data.load_nmnist(root, cache_dir=cache, progress=False, **kwargs)


# -----------------------------------------------------------------------------
# decoding and frames

def test_decode_round_trip(tmp_path):
    rng = np.random.default_rng(1)
    x, y, t, p = random_events(rng, 500, duration=2**23 - 1)
    t[-1] = 2**23 - 1  # the largest timestamp the format holds
    write_recording(tmp_path / "a.bin", x, y, t, p)
    events = data.read_events(tmp_path / "a.bin")
    for name, values in zip("xytp", (x, y, t, p)):
        np.testing.assert_array_equal(events[name], values)
    reference = read_mnist_file(str(tmp_path / "a.bin"), dtype=tonic.datasets.NMNIST.dtype)
    np.testing.assert_array_equal(events, reference)


def test_frame_index_and_bin():
    # t spans 0..1000 with T=10: windows of 100 us; the event at t=1000 is past the last window
    x, y, t, p = [0, 5, 5, 33, 1], [0, 7, 7, 2, 1], [0, 250, 260, 999, 1000], [0, 1, 1, 0, 1]
    events = np.zeros(5, dtype=data.EVENT_DTYPE)
    events["x"], events["y"], events["t"], events["p"] = x, y, t, p
    frames = data.frames_from_events(events, 10)
    expected = np.zeros((10, data.N_INPUTS), dtype=np.uint8)
    expected[0, 0] = 1
    expected[2, 1 * 1156 + 7 * 34 + 5] = 1  # two events, clamped to 1
    expected[9, 0 * 1156 + 2 * 34 + 33] = 1
    assert frames.dtype == np.uint8
    np.testing.assert_array_equal(frames, expected)
    np.testing.assert_array_equal(frames, tonic_frames(events, 10))


@settings(max_examples=60, deadline=None)
@given(n_events=st.integers(0, 300), duration=st.integers(0, 400_000),
       n_time_bins=st.integers(1, 20), seed=st.integers(0, 2**32 - 1))
def test_frames_equal_tonic(n_events, duration, n_time_bins, seed):
    x, y, t, p = random_events(np.random.default_rng(seed), n_events, duration)
    events = np.zeros(n_events, dtype=data.EVENT_DTYPE)
    events["x"], events["y"], events["t"], events["p"] = x, y, t, p
    np.testing.assert_array_equal(data.frames_from_events(events, n_time_bins),
                                  tonic_frames(events, n_time_bins))


@needs_real
def test_frames_equal_tonic_on_real_files():
    recordings = data.list_recordings(REAL_ROOT / "Train")
    for path, _ in recordings[::max(1, len(recordings) // 10)]:
        reference = read_mnist_file(str(path), dtype=tonic.datasets.NMNIST.dtype)
        events = data.read_events(path)
        np.testing.assert_array_equal(events, reference)
        for n_time_bins in (10, 25):
            np.testing.assert_array_equal(data.frames_from_events(events, n_time_bins),
                                          tonic_frames(reference, n_time_bins))


# -----------------------------------------------------------------------------
# layouts, splits, cache

def test_full_size_split():
    train, val = data.split_indices(60_000)
    assert (len(train), len(val)) == (54_000, 6_000)
    assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(60_000))
    np.testing.assert_array_equal(val, np.sort(np.random.default_rng(0).permutation(60_000)[:6_000]))


def test_the_validation_split_is_a_tenth_rounded_at_every_size():
    """Of N training recordings, round(N / 10) are validation (the rule resources.run_bytes counts
    on too), and the two splits, each sorted, share none and cover 0..N-1."""
    for n in range(1, 120):
        train, val = data.split_indices(n)
        assert len(val) == round(n / 10), n
        assert np.array_equal(np.sort(np.concatenate([train, val])), np.arange(n)), n
        assert np.array_equal(train, np.sort(train)) and np.array_equal(val, np.sort(val)), n


def test_the_fingerprint_tells_apart_the_same_frames_under_other_labels():
    """A split's digest covers its labels as well as its frames: recordings moved to other digits'
    folders make other data, which a resume must refuse."""
    rng = np.random.default_rng(0)
    packed = rng.integers(0, 256, (20, 2 * data.N_INPUTS // 8), dtype=np.uint8)
    labels = np.arange(20, dtype=np.int64) % 10
    relabelled = labels.copy()
    relabelled[[0, 1]] = relabelled[[1, 0]]
    split = data.Split(packed, labels, 2)
    assert split.digest() == data.Split(packed.copy(), labels.copy(), 2).digest()
    assert split.digest() != data.Split(packed, relabelled, 2).digest()
    nmnist = lambda test: data.NMNIST(split, split, test, {})
    assert nmnist(split).fingerprint() != nmnist(data.Split(packed, relabelled, 2)).fingerprint()


def test_split_sizes_and_determinism(root, tmp_path, no_download):
    files = sorted(root.rglob("*"))
    a = load(root, tmp_path / "cache_a")
    b = load(root, tmp_path / "cache_b")
    assert sorted(root.rglob("*")) == files  # nothing written next to the data
    assert (len(a.train), len(a.val), len(a.test)) == (90, 10, 20)
    recordings = data.list_recordings(root / "NMNIST" / "Train")
    train_idx, val_idx = data.split_indices(100)
    all_labels = np.array([label for _, label in recordings])
    np.testing.assert_array_equal(a.val.labels, all_labels[val_idx])
    np.testing.assert_array_equal(a.train.labels, all_labels[train_idx])
    path, _ = recordings[val_idx[0]]
    expected = data.frames_from_events(data.read_events(path), 10)
    np.testing.assert_array_equal(a.val.frames([0])[:, 0], expected)
    for split in ("train", "val", "test"):
        np.testing.assert_array_equal(getattr(a, split).packed, getattr(b, split).packed)
        np.testing.assert_array_equal(getattr(a, split).labels, getattr(b, split).labels)


def test_flat_layout_and_env_vars(root, tmp_path, monkeypatch, no_download):
    monkeypatch.setenv("NMNIST_ROOT", str(root / "NMNIST"))  # holds Train/ and Test/ directly
    monkeypatch.setenv("EGGROLL_CACHE", str(tmp_path / "env_cache"))
    assert data.resolve_root() == root / "NMNIST"
    flat = data.load_nmnist(progress=False, download=True)  # a local copy: no download
    official = load(root, tmp_path / "cache")
    np.testing.assert_array_equal(flat.train.packed, official.train.packed)
    assert len(list((tmp_path / "env_cache").glob("*.npz"))) == 2


def test_a_folder_of_both_layouts_is_refused_as_two_copies(root, tmp_path, no_download):
    shutil.copytree(root / "NMNIST" / "Test", root / "Test")  # the plain layout beside tonic's
    with pytest.raises(data.MissingDataError) as refused:
        load(root, tmp_path / "cache")
    assert str(refused.value) == (f"{root} holds N-MNIST twice, in {root / 'NMNIST'} and in itself ({root / 'Test'}), "
                                  f"and which to read it cannot tell: point --data-root at {root / 'NMNIST'}, or move "
                                  f"{root / 'Test'} into a folder of its own")
    assert len(load(root / "NMNIST", tmp_path / "cache").test) == 20


def test_default_root(monkeypatch, tmp_path):
    monkeypatch.delenv("NMNIST_ROOT", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert data.resolve_root() == tmp_path / "eggroll-snn" / "nmnist"
    assert data.resolve_root(tmp_path / "x") == tmp_path / "x"
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("NMNIST_ROOT", "~/nmnist")  # as a job script sets it, the quotes keeping ~ from the shell
    assert data.resolve_root() == data.resolve_root("~/nmnist") == tmp_path / "nmnist"
    monkeypatch.setenv("NMNIST_ROOT", "  ")  # blanks: no folder of that name in the current one
    with pytest.raises(data.MissingDataError, match=re.escape("$NMNIST_ROOT is '  ', blanks only (a variable left "
                                                              "empty?): point it, or --data-root, at a copy")):
        data.resolve_root()


def test_cache_reused(root, tmp_path, monkeypatch):
    first = load(root, tmp_path / "cache")
    monkeypatch.setattr(data, "read_events", None)  # any re-decoding would fail
    second = load(root, tmp_path / "cache")
    np.testing.assert_array_equal(first.train.packed, second.train.packed)
    np.testing.assert_array_equal(first.test.labels, second.test.labels)
    info = second.info["Train"]
    assert (info["n_time_bins"], info["sensor_size"], info["n_samples"]) == (10, [34, 34, 2], 100)


def count_builds(monkeypatch):
    """Names of the cache files built from now on."""
    built = []
    build = data._build_cache

    def recording_build(path, *args):
        built.append(path.name)
        build(path, *args)
    monkeypatch.setattr(data, "_build_cache", recording_build)
    return built


def test_cache_rebuilt_for_other_time_bins(root, tmp_path, monkeypatch):
    built = count_builds(monkeypatch)
    load(root, tmp_path / "cache", n_time_bins=10)
    assert len(built) == 2
    five = load(root, tmp_path / "cache", n_time_bins=5)
    assert len(built) == 4
    assert five.train.frames([0]).shape == (5, 1, data.N_INPUTS)
    load(root, tmp_path / "cache", n_time_bins=10)
    assert len(built) == 4


def test_cache_rebuilt_for_other_files(root, tmp_path, monkeypatch):
    built = count_builds(monkeypatch)
    before = load(root, tmp_path / "cache")
    path, _ = data.list_recordings(root / "NMNIST" / "Test")[0]
    write_recording(path, [3, 4], [4, 5], [0, 5000], [1, 0])  # another recording, another size
    after = load(root, tmp_path / "cache")
    assert len(built) == 3 and "test" in built[2] and built[2] not in built[:2]
    assert not np.array_equal(before.test.packed[0], after.test.packed[0])
    np.testing.assert_array_equal(before.train.packed, after.train.packed)


def test_cache_rebuilt_for_a_recording_rewritten_with_the_same_size(root, tmp_path, monkeypatch):
    built = count_builds(monkeypatch)
    before = load(root, tmp_path / "cache")
    path, _ = data.list_recordings(root / "NMNIST" / "Test")[0]
    size, mtime_ns = path.stat().st_size, path.stat().st_mtime_ns
    write_recording(path, *random_events(np.random.default_rng(99), size // 5))
    os.utime(path, ns=(mtime_ns + 10**9, mtime_ns + 10**9))
    assert path.stat().st_size == size
    after = load(root, tmp_path / "cache")
    assert len(built) == 3 and "test" in built[2] and built[2] not in built[:2]
    assert not np.array_equal(before.test.packed[0], after.test.packed[0])
    np.testing.assert_array_equal(after.test.packed[0], data._pack_recording(path, 10))


def test_cache_write_error_names_the_file(root, tmp_path, monkeypatch):
    def disk_full(file, **arrays):
        file.write(b"half a cache")
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(np, "savez", disk_full)
    with pytest.raises(OSError, match="cannot write the frame cache .*No space left on device.*EGGROLL_CACHE") as error:
        load(root, tmp_path / "cache")
    assert str(tmp_path / "cache" / "nmnist-train-T10-") in str(error.value) and "\n" not in str(error.value)
    assert not (tmp_path / "cache").exists()  # it made the folder: it takes it away, empty
    (tmp_path / "cache").mkdir()
    with pytest.raises(OSError, match="No space left on device"):
        load(root, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == []  # one that was there stays


def test_crash_while_writing_cache(root, tmp_path, monkeypatch):
    def crash(file, **arrays):
        file.write(b"half a cache")
        raise KeyboardInterrupt
    with monkeypatch.context() as m:
        m.setattr(np, "savez", crash)
        with pytest.raises(KeyboardInterrupt):
            load(root, tmp_path / "cache")
    assert not (tmp_path / "cache").exists()
    assert len(load(root, tmp_path / "cache").train) == 90


def test_foreign_cache_is_not_used(root, tmp_path):
    first = load(root, tmp_path / "cache")
    path = Path(first.info["Test"]["cache"])
    with np.load(path) as f:
        meta = json.loads(str(f["meta"]))
    np.savez(path, packed=np.zeros((20, 1), np.uint8), labels=np.zeros(20, np.int64),
             meta=np.array(json.dumps(dict(meta, n_time_bins=3))))
    np.testing.assert_array_equal(load(root, tmp_path / "cache").test.packed, first.test.packed)


def flip_a_byte(path):
    content = bytearray(path.read_bytes())
    content[10_000] ^= 0xFF  # inside the packed frames: the zip's CRC no longer matches
    path.write_bytes(bytes(content))


def missing_keys(path):
    np.savez(path, packed=np.zeros((20, 1), np.uint8))


@pytest.mark.parametrize("damage", [
    lambda path: path.write_bytes(b""),
    lambda path: path.write_bytes(np.random.default_rng(0).bytes(1000)),
    lambda path: path.write_bytes(path.read_bytes()[:-100]),
    flip_a_byte,
    lambda path: np.save(open(path, "wb"), np.zeros(3)),
    missing_keys,
], ids=["empty", "random bytes", "truncated", "flipped byte", "npy", "missing keys"])
def test_damaged_cache_is_rebuilt_and_replaced(root, tmp_path, monkeypatch, damage):
    first = load(root, tmp_path / "cache")
    path = Path(first.info["Test"]["cache"])
    damage(path)
    built = count_builds(monkeypatch)
    with pytest.warns(UserWarning, match=f"frame cache {path} is unreadable") as warned:
        second = load(root, tmp_path / "cache")
    assert not any("Error" in str(warning.message) for warning in warned), [str(w.message) for w in warned]
    assert built == [path.name]
    np.testing.assert_array_equal(second.test.packed, first.test.packed)
    load(root, tmp_path / "cache")
    assert built == [path.name]  # the replaced file is used from now on


def rewrite_cache(path, change):
    with np.load(path) as f:
        arrays = {name: f[name] for name in f.files}
    change(arrays)
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def with_meta(arrays, **changes):
    arrays["meta"] = np.array(json.dumps(dict(json.loads(str(arrays["meta"])), **changes)))


@pytest.mark.parametrize("change, problem", [
    (lambda a: a.update(packed=a["packed"][:, :100]), "packed is uint8 (20, 100), expected uint8 (20, 2890)"),
    (lambda a: a.update(packed=a["packed"][:10]), "packed is uint8 (10, 2890), expected uint8 (20, 2890)"),
    (lambda a: a.update(packed=a["packed"].astype(np.float64)), "packed is float64 (20, 2890), expected uint8"),
    (lambda a: a.update(labels=a["labels"] + 20), "labels are int64 (20,) and not the digits of the recordings'"),
    (lambda a: a.update(labels=a["labels"].astype(np.float64)), "labels are float64 (20,) and not the digits"),
    (lambda a: with_meta(a, n_short=3), "n_short is 3, but 0 samples are all zero"),
    (lambda a: a["packed"].__setitem__((3, 100), a["packed"][3, 100] ^ 1),
     "its frames are not those it was written with: their sha256 differs from its metadata's"),
    (lambda a: a["packed"].__setitem__(slice(None), 0x55), "its frames are not those it was written with"),
], ids=["narrower", "fewer", "float frames", "labels out of range", "float labels", "n_short", "one bit flipped",
        "every byte the same"])
def test_a_cache_unlike_its_metadata_is_rebuilt_with_a_one_line_warning(root, tmp_path, monkeypatch, change, problem):
    first = load(root, tmp_path / "cache")
    path = Path(first.info["Test"]["cache"])
    rewrite_cache(path, change)
    built = count_builds(monkeypatch)
    with pytest.warns(UserWarning) as caught:
        second = load(root, tmp_path / "cache")
    assert len(caught) == 1
    assert str(caught[0].message).startswith(f"frame cache {path} does not match its metadata ({problem}")
    shown = warnings.formatwarning(caught[0].message, caught[0].category, caught[0].filename, caught[0].lineno)
    assert shown.count("\n") == 1, shown
    assert built == [path.name]
    np.testing.assert_array_equal(second.test.packed, first.test.packed)
    np.testing.assert_array_equal(second.test.labels, first.test.labels)


def test_a_cache_of_an_older_version_is_rebuilt_once_with_a_line_that_says_so(root, tmp_path, monkeypatch):
    """A cache written before caches kept the sha256 of their frames is made again, said in one line,
    and from then on used as it is."""
    first = load(root, tmp_path / "cache")
    path = Path(first.info["Test"]["cache"])
    rewrite_cache(path, lambda a: a.update(meta=np.array(json.dumps(
        {k: v for k, v in json.loads(str(a["meta"])).items() if k != "frames_sha256"}))))
    built = count_builds(monkeypatch)
    with pytest.warns(UserWarning) as caught:
        second = load(root, tmp_path / "cache")
    assert [str(w.message) for w in caught] == [f"frame cache {path} was written by an older eggroll-snn, without a "
                                                f"sha256 of its frames; rebuilding it"]
    assert built == [path.name]
    np.testing.assert_array_equal(second.test.packed, first.test.packed)
    load(root, tmp_path / "cache")
    assert built == [path.name]


def test_short_recordings_are_kept_and_reported(root, tmp_path):
    recordings = data.list_recordings(root / "NMNIST" / "Test")
    write_recording(recordings[0][0], [1, 2], [1, 2], [100, 105], [0, 1])  # 5 us < T = 10 us
    write_recording(recordings[1][0], [], [], [], [])
    with pytest.warns(UserWarning, match="2 of 20 recordings"):
        nmnist = load(root, tmp_path / "cache")
    assert nmnist.info["Test"]["n_short"] == 2
    assert len(nmnist.test) == 20
    assert not nmnist.test.frames([0, 1]).any() and nmnist.test.frames([2]).any()


# -----------------------------------------------------------------------------
# bad input

def test_missing_root(tmp_path, no_download, monkeypatch):
    """No N-MNIST where the data root points: the line names the root and where it came from (the
    option, $NMNIST_ROOT, or the default), what it is where it is no folder, the fix for that, and
    --download where a download can go."""
    with pytest.raises(data.MissingDataError, match="point --data-root at a copy, or use --download to fetch it") \
            as error:
        load(tmp_path / "nowhere", tmp_path / "cache")
    assert isinstance(error.value, FileNotFoundError) and str(tmp_path / "nowhere") in str(error.value)
    (tmp_path / "a file").write_text("mine")
    with pytest.raises(data.MissingDataError) as error:
        load(tmp_path / "a file", tmp_path / "cache")
    assert str(error.value) == f"N-MNIST not found in {tmp_path / 'a file'}: it is a file, not a folder; point " \
                               f"--data-root at a copy"
    os.mkfifo(tmp_path / "a pipe")  # named as what it is, never opened (a FIFO would block the read)
    with pytest.raises(data.MissingDataError) as error:
        load(tmp_path / "a pipe", tmp_path / "cache")
    assert str(error.value) == f"N-MNIST not found in {tmp_path / 'a pipe'}: it is a named pipe (FIFO), not a " \
                               f"folder; point --data-root at a copy"
    monkeypatch.setenv("NMNIST_ROOT", str(tmp_path / "nowhere"))
    with pytest.raises(data.MissingDataError, match=re.escape(f"{tmp_path / 'nowhere'} ($NMNIST_ROOT) (expected")):
        load(None, tmp_path / "cache")
    monkeypatch.delenv("NMNIST_ROOT")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    with pytest.raises(data.MissingDataError, match=re.escape(f"{tmp_path / 'xdg' / 'eggroll-snn' / 'nmnist'} (the "
                                                              f"default data root) (expected")) as error:
        load(None, tmp_path / "cache")
    assert "point --data-root (or $NMNIST_ROOT) at a copy, or use --download" in str(error.value)


@pytest.mark.parametrize("existed", [False, True])
def test_failed_download_says_how_to_get_the_data_and_cleans_up(tmp_path, monkeypatch, existed):
    """Offline: one MissingDataError line with the reason and the manual steps; whatever the
    download created (the train split it fetched, a partial test.zip, new folders) is removed,
    whatever was there before is kept."""
    root = tmp_path / "data" / "root"
    if existed:
        (root / "NMNIST").mkdir(parents=True)
        (root / "notes.txt").write_text("mine")
        (root / "NMNIST" / "README").write_text("mine")
    before = sorted(tmp_path.rglob("*"))

    def offline_nmnist(save_to, train):
        target = Path(save_to) / "NMNIST"
        target.mkdir(exist_ok=True)
        if train:  # the first zip arrives and is extracted
            write_dataset(target, n_train=1, n_test=0)
            (target / "train.zip").write_bytes(b"zip")
        else:
            (target / "test.zip").write_bytes(b"")
            raise urllib.error.URLError(socket.gaierror(-2, "Name or service not known"))
    monkeypatch.setattr(tonic.datasets, "NMNIST", offline_nmnist)
    with pytest.raises(data.MissingDataError) as error:
        load(root, tmp_path / "cache", download=True)
    message = str(error.value)
    assert message.startswith("N-MNIST could not be downloaded (Name or service not known)") and "\n" not in message
    for part in ("train.zip and test.zip", "468j46mzdv", "Mendeley Data", f"{root}/NMNIST/Train/<digit>/*.bin",
                 f"{root}/NMNIST/Test/<digit>/*.bin", "--data-root", "NMNIST_ROOT"):
        assert part in message
    assert sorted(tmp_path.rglob("*")) == before


def test_an_interrupted_download_stays_an_interruption_and_leaves_nothing(tmp_path, monkeypatch):
    """Ctrl-C (or SIGTERM) during the download ends the command as an interruption, not as a
    download that failed with advice to fetch the files by hand; what it created is removed."""
    def interrupted_nmnist(save_to, train):
        (Path(save_to) / "NMNIST").mkdir(exist_ok=True)
        (Path(save_to) / "NMNIST" / "train.zip").write_bytes(b"zi")
        raise KeyboardInterrupt
    monkeypatch.setattr(tonic.datasets, "NMNIST", interrupted_nmnist)
    with pytest.raises(KeyboardInterrupt):
        load(tmp_path / "root", tmp_path / "cache", download=True)
    assert not (tmp_path / "root" / "NMNIST").exists()


def test_the_download_waits_as_long_as_the_docs_say():
    """docs/data.md promises how long a silent server is waited for: the number download uses."""
    text = " ".join((Path(data.__file__).parent / "docs" / "data.md").read_text().split())
    assert f"a server that sends nothing for {data.DOWNLOAD_TIMEOUT:g} s" in text


def test_the_download_deadline_is_the_one_the_docs_give():
    text = " ".join((Path(data.__file__).parent / "docs" / "data.md").read_text().split())
    assert f"a download not done after {data.DOWNLOAD_DEADLINE:g} s, however slowly its bytes keep coming" in text


def test_a_download_that_trickles_on_ends_at_its_deadline_and_leaves_nothing(tmp_path, monkeypatch):
    """tonic's own download from a server that keeps sending a byte now and then: one line after
    DOWNLOAD_DEADLINE (0.5 s here), naming the file, its URL and how to get the data by hand; the
    partial train.zip and the folders made are removed, and SIGALRM is as it was."""
    monkeypatch.setattr(data, "DOWNLOAD_DEADLINE", 0.5)
    handler = signal.getsignal(signal.SIGALRM)
    root = tmp_path / "root"
    began = time.monotonic()
    with trickling(b"P") as server, pytest.raises(data.MissingDataError) as error:
        url = f"{server}/train.zip"
        monkeypatch.setattr(tonic.datasets.NMNIST, "train_url", url)
        load(root, tmp_path / "cache", download=True)
    assert time.monotonic() - began < 10
    assert str(error.value) == (
        f"N-MNIST could not be downloaded (train.zip from {url} was still coming after 0.5 s, the most the download "
        f"may take); download train.zip and test.zip of N-MNIST by hand (dataset 468j46mzdv on Mendeley Data) and "
        f"extract them so that {root}/NMNIST/Train/<digit>/*.bin and {root}/NMNIST/Test/<digit>/*.bin exist, or "
        f"point --data-root or NMNIST_ROOT at a copy")
    assert not root.exists()
    assert signal.getsignal(signal.SIGALRM) == handler and signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)


def test_a_download_from_a_silent_server_ends_and_a_linked_root_is_kept(tmp_path, monkeypatch):
    """A server that accepts and never answers: one line after DOWNLOAD_TIMEOUT, not a hang; a
    --data-root that is a link (to a missing folder, or to a folder) stays, and so does its target."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    monkeypatch.setattr(data, "DOWNLOAD_TIMEOUT", 0.5)

    def silent_nmnist(save_to, train):
        Path(save_to, "NMNIST").mkdir(exist_ok=True)
        urllib.request.urlopen(f"http://127.0.0.1:{listener.getsockname()[1]}/train.zip").read()
    monkeypatch.setattr(tonic.datasets, "NMNIST", silent_nmnist)
    target = tmp_path / "target"
    target.mkdir()
    (target / "mine").write_text("mine")
    link = tmp_path / "link"
    link.symlink_to(target)
    before = socket.getdefaulttimeout()
    with pytest.raises(data.MissingDataError, match=r"could not be downloaded \(no answer for 0.5 s\)"):
        load(link, tmp_path / "cache", download=True)
    listener.close()
    assert socket.getdefaulttimeout() == before  # the process's other sockets keep their own timeout
    assert link.is_symlink() and sorted(p.name for p in target.iterdir()) == ["mine"]
    broken = tmp_path / "broken"
    broken.symlink_to(tmp_path / "nowhere")
    with pytest.raises(data.MissingDataError, match="is a link to .*nowhere, which does not exist"):
        load(broken, tmp_path / "cache", download=True)
    assert broken.is_symlink() and not (tmp_path / "nowhere").exists()


def test_missing_split_folder(root, tmp_path):
    for path, _ in data.list_recordings(root / "NMNIST" / "Test"):
        path.unlink()
    for folder in (root / "NMNIST" / "Test").iterdir():
        folder.rmdir()
    (root / "NMNIST" / "Test").rmdir()
    with pytest.raises(data.MissingDataError, match="Test"):
        load(root, tmp_path / "cache")


@pytest.mark.parametrize("where", ["Train", "Test", "Train/3", "Test/0"])
def test_a_file_where_a_split_or_class_folder_belongs_is_called_a_file_not_missing(root, tmp_path, where):
    """A file in the place of a split folder or a digit's folder: named a file, with the fix (move it
    out, then put the recordings there), not "missing; restore it", which leaves the file in the way."""
    folder = root / "NMNIST" / where
    shutil.rmtree(folder)
    folder.write_text("x")
    with pytest.raises((data.MissingDataError, data.BadDataError)) as raised:
        load(root, tmp_path / "cache")
    assert str(raised.value).startswith(f"{folder} is a file, not the "), raised.value
    assert f"move it out of {folder.parent}, then put " in str(raised.value) and "missing" not in str(raised.value)


def test_a_missing_split_says_both_splits_are_read_and_where_the_recordings_go(root, tmp_path):
    """A copy holding only Test (test.zip alone): the line says why Train is needed and where its
    recordings go, not "restore it" to a user who never had it."""
    shutil.rmtree(root / "NMNIST" / "Train")
    with pytest.raises(data.MissingDataError) as raised:
        load(root, tmp_path / "cache")
    train = root / "NMNIST" / "Train"
    assert str(raised.value) == (f"the split folder {train} is missing, and every command reads both splits (train and "
                                 f"validation are cut from Train, test is Test, and evaluate scores all three): put "
                                 f"N-MNIST's training recordings there as {train}/<digit>/*.bin (train.zip of the N-MNIST "
                                 f"download)"), raised.value


def test_empty_class_folder(root, tmp_path):
    for path in (root / "NMNIST" / "Train" / "3").iterdir():
        path.unlink()
    with pytest.raises(data.MissingDataError, match=r"Train/3 holds no \.bin"):
        load(root, tmp_path / "cache")


@pytest.mark.parametrize("name", ["11", "foo", "03"])
def test_recordings_in_a_folder_no_digit_names_are_refused_not_passed_over(root, tmp_path, name):
    """A folder beside the class folders that holds recordings (a digit misnamed, a copy) would drop them
    from the split unseen: refused, naming it; one without recordings, or unreadable, is left alone."""
    other = root / "NMNIST" / "Test" / name
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    load(root, tmp_path / "cache")
    shutil.copy(next((root / "NMNIST" / "Test" / "3").iterdir()), other / "00001.bin")
    with pytest.raises(data.BadDataError, match=f"{other} holds recordings but is no class folder"):
        load(root, tmp_path / "cache2")


def test_a_folder_beside_the_class_folders_that_cannot_be_read_is_left_alone(root, tmp_path, monkeypatch):
    """A folder beside the class folders whose entries cannot be listed (no read permission) holds no
    recordings that matter: the split loads; the class folders are read as before."""
    other = root / "NMNIST" / "Test" / "foo"
    other.mkdir()
    shutil.copy(next((root / "NMNIST" / "Test" / "3").iterdir()), other / "00001.bin")
    scandir = os.scandir

    def unreadable(path="."):
        if os.fspath(path) == str(other):
            raise PermissionError(13, "Permission denied", str(path))
        return scandir(path)
    monkeypatch.setattr(os, "scandir", unreadable)
    load(root, tmp_path / "cache")


def test_recordings_in_a_folder_inside_a_class_folder_are_refused_not_passed_over(root, tmp_path):
    """Only a class folder's own *.bin are read: recordings one folder further down are refused, named."""
    inner = root / "NMNIST" / "Train" / "3" / "more"
    inner.mkdir()
    shutil.copy(next((root / "NMNIST" / "Train" / "3").glob("*.bin")), inner / "00001.bin")
    with pytest.raises(data.BadDataError, match=f"{inner} holds recordings inside the class folder"):
        load(root, tmp_path / "cache")


def test_missing_class_folder(root, tmp_path):
    for path in (root / "NMNIST" / "Train" / "7").iterdir():
        path.unlink()
    (root / "NMNIST" / "Train" / "7").rmdir()
    with pytest.raises(data.MissingDataError, match=r"Train/7 missing .*restore them from train\.zip"):
        load(root, tmp_path / "cache")


@pytest.mark.parametrize("content, problem", [
    (encode_events([1], [2], [3], [0]) + b"\x00\x01", "not a multiple of 5"),
    (encode_events([1, 34], [2, 2], [3, 4], [0, 0]), "x/y outside 0..33"),
    (encode_events([1, 1], [2, 240], [3, 4], [0, 0]), "x/y outside 0..33"),
    (encode_events([1, 2, 3, 4], [2, 2, 2, 2], [5, 9, 4, 600], [0, 1, 0, 1]),
     r"timestamps go backwards at event 2 \(byte 10\)"),
    (encode_events([1, 2, 3], [2, 2, 2], [5, 4, 600], [0, 1, 0]), r"timestamps go backwards at event 1 \(byte 5\)"),
], ids=["size", "x = 34", "y = 240", "time goes backwards", "time goes back by 1 us"])
def test_bad_recording(root, tmp_path, content, problem):
    path, _ = data.list_recordings(root / "NMNIST" / "Train")[7]
    path.write_bytes(content)
    with pytest.raises(data.BadDataError, match=problem) as error:
        load(root, tmp_path / "cache")
    assert isinstance(error.value, ValueError) and str(path) in str(error.value)
    assert not list((tmp_path / "cache").glob("*train*"))


# -----------------------------------------------------------------------------
# minibatches

def test_events_at_one_time_are_no_step_backwards(root, tmp_path):
    """Two events at the same microsecond (a tie) are a recording's own, read, not a step backwards."""
    path, _ = data.list_recordings(root / "NMNIST" / "Train")[7]
    path.write_bytes(encode_events([1, 2, 3], [2, 2, 2], [4, 4, 600], [0, 1, 0]))
    splits = load(root, tmp_path / "cache")
    assert len(splits.train) + len(splits.val) == len(data.list_recordings(root / "NMNIST" / "Train"))


def test_batches_in_order(root, tmp_path):
    test = load(root, tmp_path / "cache").test
    out = list(data.batches(test, 8, np, shuffle=False))
    assert [len(y) for _, y in out] == [8, 8, 4]
    x = np.concatenate([x for x, _ in out], axis=1)
    assert x.dtype == np.float32 and x.shape == (10, 20, data.N_INPUTS)
    np.testing.assert_array_equal(x, test.frames(np.arange(20), np))
    y = np.concatenate([y for _, y in out])
    assert y.dtype == np.int64
    np.testing.assert_array_equal(y, test.labels)


def test_batches_shuffled(root, tmp_path):
    train = load(root, tmp_path / "cache").train

    def epoch_labels(seed, epoch):
        out = list(data.batches(train, 16, np, seed=seed, epoch=epoch))
        assert all(x.shape == (10, 16, data.N_INPUTS) and x.dtype == np.float32 for x, _ in out)
        return np.concatenate([y for _, y in out]), np.concatenate([x for x, _ in out], axis=1)

    labels, frames = epoch_labels(0, 0)
    assert len(labels) == 80  # 90 // 16 full batches
    again, frames_again = epoch_labels(0, 0)
    np.testing.assert_array_equal(labels, again)
    np.testing.assert_array_equal(frames, frames_again)
    assert not np.array_equal(labels, epoch_labels(0, 1)[0])
    assert not np.array_equal(labels, epoch_labels(1, 0)[0])
    # the batches are distinct samples of the split, each with its own label
    order = np.random.default_rng([0, 0]).permutation(90)[:80]
    np.testing.assert_array_equal(labels, train.labels[order])
    np.testing.assert_array_equal(frames, train.frames(order))


# -----------------------------------------------------------------------------
# real recordings

SUBSET_SIZES = {"Train": 1000, "Test": 100}  # the project's subset of real recordings


@needs_real
def test_real_recordings(tmp_path):
    """Checks that hold for any copy: the recordings decode and lie in their digit's folders, the
    copy's SHA256SUMS (the sample's and the 1,100-recording subset's have one) lists exactly its
    recordings with their contents, and the splits have their sizes. For the project's
    1,100-recording subset also its sizes, event counts and SLAYER label lists."""
    recordings = {split: data.list_recordings(REAL_ROOT / split) for split in SUBSET_SIZES}
    is_subset = {split: len(files) for split, files in recordings.items()} == SUBSET_SIZES
    for split, offset in (("Train", 0), ("Test", 60_000)):
        files = recordings[split]
        assert all(label == int(path.parent.name) for path, label in files)
        counts = [len(data.read_events(path)) for path, _ in files[::max(1, len(files) // 1000)]]
        if is_subset:
            assert 1_000 <= min(counts) and max(counts) <= 8_000
            slayer_list = REAL_DIR / "slayer_lists" / f"{split.lower()}{'1K' if split == 'Train' else 100}.txt"
            if slayer_list.exists():  # labels listed independently of the folders
                listed = dict(np.loadtxt(slayer_list, dtype=int, skiprows=1))
                assert all(listed[int(path.stem) + offset] == label for path, label in files)
    checksums = REAL_DIR / "SHA256SUMS"
    assert checksums.exists() or REAL_DIR != SAMPLE  # the sample comes with its checksums
    if checksums.exists():  # "<sha256>  ./Train/<digit>/<name>.bin" per line, as sha256sum writes it
        listed = {}
        for line in checksums.read_text().splitlines():
            digest, name = line.split(maxsplit=1)
            if name.endswith(".bin"):
                listed[(REAL_DIR / name.lstrip("*")).resolve()] = digest
        files = {path.resolve() for split in recordings.values() for path, _ in split}
        assert set(listed) == files
        assert all(hashlib.sha256(path.read_bytes()).hexdigest() == digest for path, digest in listed.items())
    nmnist = load(REAL_ROOT, tmp_path / "cache")
    n_train, n_val = len(recordings["Train"]), round(len(recordings["Train"]) / 10)
    assert (len(nmnist.train), len(nmnist.val), len(nmnist.test)) == (n_train - n_val, n_val, len(recordings["Test"]))
    np.testing.assert_array_equal(nmnist.test.labels, [label for _, label in recordings["Test"]])
    if is_subset:
        assert (len(nmnist.train), len(nmnist.val), len(nmnist.test)) == (900, 100, 100)
        assert nmnist.info["Train"]["n_short"] == nmnist.info["Test"]["n_short"] == 0


def moved_by_rolling(frames, shifts):
    """Reference for data.translate: roll each sample's 34 x 34 images, then blank the rows and
    columns that wrapped around."""
    images = frames.reshape(frames.shape[0], frames.shape[1], 2, 34, 34).copy()
    for b, (dy, dx) in enumerate(shifts):
        image = np.roll(images[:, b], (dy, dx), axis=(-2, -1))
        image[..., slice(0, dy) if dy >= 0 else slice(34 + dy, 34), :] = 0
        image[..., slice(0, dx) if dx >= 0 else slice(34 + dx, 34)] = 0
        images[:, b] = image
    return images.reshape(frames.shape)


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2 ** 32 - 1), batch=st.integers(1, 6), max_shift=st.integers(0, 34))
def test_translate_moves_events_and_drops_those_leaving_the_sensor(seed, batch, max_shift):
    """translate() equals rolling each image and blanking what wrapped; shifts of 34 pixels or
    more leave nothing. Binary frames, exact."""
    rng = np.random.default_rng(seed)
    frames = (rng.random((3, batch, data.N_INPUTS)) < 0.2).astype(np.float32)
    shifts = rng.integers(-max_shift, max_shift + 1, (batch, 2))
    moved = data.translate(frames, shifts)
    assert moved.shape == frames.shape and moved.dtype == frames.dtype
    np.testing.assert_array_equal(moved, moved_by_rolling(frames, shifts))


def test_translate_equals_the_frames_of_moved_events():
    """translate() moves an event at (y, x) to (y + dy, x + dx): the frames of events moved
    before binning (those leaving the sensor dropped; the first and last events stay central,
    so the time bins do not change). Exact."""
    x, y, t, p = random_events(np.random.default_rng(1), 500)
    x[[0, -1]], y[[0, -1]] = 17, 17
    events = np.zeros(len(t), dtype=data.EVENT_DTYPE)
    events["x"], events["y"], events["t"], events["p"] = x, y, t, p
    frames = data.frames_from_events(events, 10)[:, None].astype(np.float32)
    for dy, dx in [(2, -3), (-1, 4), (0, 5), (5, 0), (-16, 16)]:
        moved = events.copy()
        moved["x"], moved["y"] = x + dx, y + dy
        moved = moved[(0 <= moved["x"]) & (moved["x"] < 34) & (0 <= moved["y"]) & (moved["y"] < 34)]
        np.testing.assert_array_equal(data.translate(frames, np.array([[dy, dx]]))[:, 0],
                                      data.frames_from_events(moved, 10), err_msg=f"{(dy, dx)}")


def test_a_split_smaller_than_a_batch_is_one_batch_of_all_of_it():
    """data.minibatch of a training split of 5 samples at a batch size of 8: every step, as every
    step of a growing batch, is the whole split in that step's epoch order."""
    rng = np.random.default_rng(0)
    bits = (rng.random((5, 2 * data.N_INPUTS)) < 0.1).astype(np.uint8)
    split = data.Split(np.packbits(bits, axis=1), np.arange(5, dtype=np.int64), 2)  # label = index
    for step in range(3):
        frames, labels = data.minibatch(split, 8, np, 1, step)
        np.testing.assert_array_equal(labels, data.epoch_order(5, 1, step))
        np.testing.assert_array_equal(frames, split.frames(labels))
    frames, labels = data.minibatch(split, 8, np, 1, 3, count=2)
    np.testing.assert_array_equal(labels, np.concatenate([data.epoch_order(5, 1, epoch) for epoch in (3, 4)]))
    assert frames.shape == (2, 10, data.N_INPUTS)


def test_split_frames_name_the_samples_there_are():
    """Indices beyond the split, negative (the last sample, unseen), fractional, 2-D, masked or none
    are one line naming the range, not NumPy's IndexError or a frame of another shape."""
    split = data.Split(np.zeros((4, 2 * data.N_INPUTS // 8), np.uint8), np.zeros(4, np.int64), 2)
    told = "indices must be a 1-D integer array of at least one sample in 0..3, got "
    for indices, got in (([4], "int64 (1,) from 4 to 4"), ([-1], "int64 (1,) from -1 to -1"),
                         (np.array([0.0]), "a NumPy array of float64 (1,)"), (np.zeros((1, 1), int), "int64 (1, 1) "
                         "from 0 to 0"), (np.ma.masked_array([0, 1], [0, 1]), "a numpy.ma.MaskedArray of int64 (2,)"),
                         (np.arange(0), "a NumPy array of int64 (0,)"), (None, "a NoneType")):
        with pytest.raises(ValueError) as refused:
            split.frames(indices)
        assert str(refused.value) == told + got
    assert split.frames([3, 0]).shape == split.frames(range(2)).shape == (2, 2, data.N_INPUTS)
    with pytest.raises(ValueError, match=r"^xp must be the module numpy or cupy, got a NoneType: give "
                                         r"backend.array_module\(\)$"):
        split.frames([0], xp=None)
    with pytest.raises(ValueError, match=r"^shifts must lie in -33..33 pixels, got up to 34: a shift of the "
                                         r"sensor's side or more moves every event off it$"):
        split.frames([0, 1], shifts=np.array([[0, 34], [1, 1]]))  # (translate blanks such a frame, unsaid)
    assert split.frames([0, 1], shifts=np.array([[0, 33], [-33, 0]])).shape == (2, 2, data.N_INPUTS)


def test_augmented_minibatch_moves_each_sample_within_max_shift(root, tmp_path):
    """minibatch(max_shift=2): the same samples and labels as without it, each sample moved by
    one (dy, dx) in -2..2, the same again for the same (seed, step) and different for another step."""
    train = load(root, tmp_path / "cache").train
    plain, labels = data.minibatch(train, 16, np, seed=3, step=7)
    moved, moved_labels = data.minibatch(train, 16, np, seed=3, step=7, max_shift=2)
    np.testing.assert_array_equal(labels, moved_labels)
    np.testing.assert_array_equal(moved, data.minibatch(train, 16, np, seed=3, step=7, max_shift=2)[0])
    order = data.epoch_order(len(train), 3, 7 // (len(train) // 16))
    start = 7 % (len(train) // 16) * 16
    np.testing.assert_array_equal(plain, train.frames(order[start:start + 16]))
    candidates = [(dy, dx) for dy in range(-2, 3) for dx in range(-2, 3)]
    found = []
    for b in range(16):
        sample = plain[:, b:b + 1]
        matches = [s for s in candidates if np.array_equal(data.translate(sample, np.array([s]))[:, 0], moved[:, b])]
        assert matches, f"sample {b} is not its unaugmented self moved by at most 2 pixels"
        found.append(matches)
    assert any((0, 0) not in matches for matches in found)
    next_step = data.minibatch(train, 16, np, seed=3, step=8, max_shift=2)[0]
    assert not np.array_equal(next_step, data.minibatch(train, 16, np, seed=3, step=8)[0])


def test_augmented_minibatches_draw_every_shift_from_minus_to_plus_max_shift(monkeypatch):
    """The shifts of minibatch(max_shift=m) cover -m..m in both directions, both ends included,
    each about as often (640 draws of each coordinate at m = 1: 213 expected, a standard error of 12)."""
    split = data.Split(np.zeros((640, 10 * data.N_INPUTS // 8), np.uint8), np.zeros(640, np.int64), 10)
    drawn = []
    monkeypatch.setattr(data, "translate", lambda bits, shifts: drawn.append(shifts) or bits)
    for step in range(10):
        data.minibatch(split, 64, np, seed=0, step=step, max_shift=1)
    shifts = np.concatenate(drawn)
    for axis in (0, 1):
        values, counts = np.unique(shifts[:, axis], return_counts=True)
        assert values.tolist() == [-1, 0, 1] and all(abs(count - 640 / 3) < 5 * 12 for count in counts), counts


@pytest.mark.parametrize("change, said", [
    (dict(batch_size=-3), "batch_size must be a whole number in 1..9223372036854775807, got -3: use 256"),
    (dict(batch_size=0), "batch_size must be a whole number in 1.."), (dict(batch_size=2.5), "batch_size must be a whole number"),
    (dict(count=0), "count must be"), (dict(seed=-1), "seed must be"), (dict(step=-1), "step must be"),
    (dict(max_shift=-2), "max_shift must be"), (dict(xp=None), "xp must be the module numpy or cupy"),
    (dict(split=[1, 2]), "split must be a data.Split")])
def test_a_minibatch_of_arguments_that_make_none_is_one_line_naming_the_argument(change, said):
    """A negative batch size gave a batch of another size, silently; others failed inside NumPy."""
    split = data.Split(np.zeros((40, 10 * data.N_INPUTS // 8), np.uint8), np.zeros(40, np.int64), 10)
    arguments = dict(split=split, batch_size=8, xp=np, seed=1, step=0) | change
    with pytest.raises(ValueError) as refused:
        data.minibatch(**arguments)
    assert str(refused.value).startswith(said)


def test_a_cache_folder_that_cannot_be_one_is_named_before_any_recording_is_read(root, tmp_path, monkeypatch):
    """EGGROLL_CACHE a file, a broken link, a loop of links, or below a file, or the data folder or a
    folder in it: one line naming what is in the way, before the recordings are read (none is)."""
    (tmp_path / "afile").write_text("mine")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    (tmp_path / "loop1").symlink_to(tmp_path / "loop2")
    (tmp_path / "loop2").symlink_to(tmp_path / "loop1")
    monkeypatch.setattr(data, "read_events", lambda *args: pytest.fail("a recording was read"))
    for cache, what in (("afile", "afile is a file, not a folder"), ("dangling", "which does not exist"),
                        ("loop1", "loop1 is a loop of links"), ("afile/sub", "afile is a file, not a folder")):
        with pytest.raises(OSError, match=what) as error:
            data.load_nmnist(root, cache_dir=tmp_path / cache, progress=False)
        assert "\n" not in str(error.value) and "--cache-dir" in str(error.value)
    assert (tmp_path / "afile").read_text() == "mine" and not (tmp_path / "nowhere").exists()
    before = sorted(path for path in Path(root).rglob("*"))
    for cache in (Path(root) / "NMNIST", Path(root) / "NMNIST" / "Train"):  # the copy itself, or a split in it
        with pytest.raises(OSError, match=r"a data folder, which the project only reads; point \$EGGROLL_CACHE"):
            data.load_nmnist(root, cache_dir=cache, progress=False)
    assert sorted(path for path in Path(root).rglob("*")) == before  # no cache file among the recordings


def test_what_lies_in_a_split_folders_place_is_named_as_it_is(tmp_path):
    """A file, a link to a file (read as the file it leads to) and a link that leads nowhere, in Train's
    place: each named as what it is, with the fix."""
    (tmp_path / "notes.txt").write_text("mine")
    for name, make, what in [("file", lambda path: path.write_text("x"), "a file"),
                             ("to-file", lambda path: path.symlink_to(tmp_path / "notes.txt"), "a file"),
                             ("dangling", lambda path: path.symlink_to(tmp_path / "absent"),
                              "a symbolic link that leads to no folder")]:
        (tmp_path / name).mkdir()
        split = tmp_path / name / "Train"
        make(split)
        assert data.split_folder_problem(split).startswith(
            f"{split} is {what}, not the split folder Train: move it out of {tmp_path / name}, then put N-MNIST's "
            f"training recordings there"), name


def test_files_without_inode_numbers_are_never_taken_for_one_recording(tmp_path):
    """A file system that numbers no file (st_ino 0: FAT, some network mounts) gives two recordings
    of one size and time the same (device, inode, size, time): they are two recordings, in one split
    or across the two; with real inode numbers the same four values are one file reached twice."""
    from types import SimpleNamespace
    one, other = tmp_path / "Train" / "0" / "a.bin", tmp_path / "Train" / "1" / "b.bin"
    test = tmp_path / "Test" / "2" / "c.bin"
    for inode in (0, 7):
        stat = SimpleNamespace(st_dev=1, st_ino=inode, st_size=100, st_mtime_ns=5)
        train_listed, test_listed = ([(one, 0), (other, 1)], [stat, stat]), ([(test, 2)], [stat])
        dirs = {"Train": tmp_path / "Train", "Test": tmp_path / "Test"}
        if inode:
            with pytest.raises(data.BadDataError, match="share recordings"):
                data._check_one_label(dirs["Train"], train_listed)
            with pytest.raises(data.BadDataError, match="share recordings"):
                data._check_apart(dirs, {"Train": ([(one, 0)], [stat]), "Test": test_listed})
        else:
            data._check_one_label(dirs["Train"], train_listed)
            data._check_apart(dirs, {"Train": train_listed, "Test": test_listed})


def test_a_training_split_smaller_than_the_test_split_is_said_as_perhaps_swapped(tmp_path):
    """Train and Test swapped (N-MNIST's Train holds six times its Test): one warning naming both
    folders and the fix; the data still loads, as a user's own may be so; as large, nothing."""
    root = write_dataset(tmp_path / "swapped", n_train=1, n_test=2)
    with pytest.warns(UserWarning) as caught:
        load(root, tmp_path / "cache")
    assert [str(warning.message) for warning in caught] == [
        f"{root / 'Train'} holds fewer recordings (10) than {root / 'Test'} (20), where N-MNIST's training split is "
        f"six times its test split: if the two folders are swapped, swap them back"]
    even = write_dataset(tmp_path / "even", n_train=2, n_test=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(even, tmp_path / "cache")


def test_a_copied_recording_is_named_in_one_warning_per_kind(tmp_path):
    """A recording copied (not linked) where it does not belong loads, as a user's data, but is named:
    a test recording in Train (the test score would count it as unseen), one under two digits, one
    twice in its split; an empty recording's frames, which repeat by nature, are none of these, and
    nor is anything in data without copies."""
    root = write_dataset(tmp_path / "nmnist", n_train=3, n_test=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load(root, tmp_path / "cache")
    for path in (root / "Train" / "1" / "00002.bin", root / "Train" / "1" / "00012.bin"):  # empty: frames of zeros
        path.write_bytes(b"")
    copies = {"test": (root / "Test" / "4" / "00005.bin", root / "Train" / "4" / "leak.bin"),
              "labels": (root / "Train" / "2" / "00003.bin", root / "Train" / "7" / "00003.bin"),
              "twice": (root / "Test" / "6" / "00007.bin", root / "Test" / "6" / "again.bin")}
    for original, copy in copies.values():
        shutil.copyfile(original, copy)
    with pytest.warns(UserWarning) as caught:
        splits = load(root, tmp_path / "cache")
    assert len(splits.train) + len(splits.val) == 32 and len(splits.test) == 21
    told = [str(warning.message) for warning in caught]
    assert told[0].startswith("2 of 32 recordings in") and "are empty" in told[0]
    train_copy, test_one = copies["test"][1], copies["test"][0]
    assert told[1:] == [
        f"1 recording of {root / 'Test'} holds the same frames as one of {root / 'Train'} (e.g. {train_copy} and "
        f"{test_one}; which is the copy, the frames cannot tell): a run trained on this copy counts such a recording "
        f"in its test score as unseen though it trained on it, and a score over every split counts it twice; remove "
        f"the copy you made",
        f"1 recording under one digit holds the same frames as one under another (e.g. {copies['labels'][0]} and "
        f"{copies['labels'][1]}; which is the copy, the frames cannot tell): such a sample trains under two labels; "
        f"remove the one under the wrong digit",
        f"1 recording is a copy of another of its split (the same frames, e.g. {copies['twice'][1]} of "
        f"{copies['twice'][0]}): each copy weighs its sample once more; remove the copy"], told
    for path in (root / "Train" / "4" / "leak.bin", root / "Train" / "7" / "00003.bin", root / "Test" / "6" / "again.bin"):
        path.unlink()
    shutil.copyfile(root / "Test" / "3" / "00004.bin", root / "Train" / "5" / "leak.bin")  # a leak, under another digit
    for k in range(3):
        shutil.copyfile(root / "Train" / "8" / "00009.bin", root / "Train" / "8" / f"again{k}.bin")
    with pytest.warns(UserWarning) as caught:
        load(root, tmp_path / "cache")
    told = [str(warning.message) for warning in caught][1:]
    assert told[0] == (f"1 recording of {root / 'Test'} holds the same frames as one of {root / 'Train'} (e.g. "
                       f"{root / 'Train' / '5' / 'leak.bin'} and {root / 'Test' / '3' / '00004.bin'}, under digits 5 "
                       f"and 3; which is the copy, the frames cannot tell): a run trained on this copy counts such a "
                       f"recording in its test score as unseen though it trained on it, and a score over every split "
                       f"counts it twice; remove the copy you made"), told
    assert told[1].startswith("3 recordings are copies of another of its split") and \
        told[1].endswith("each copy weighs its sample once more; remove the copies"), told


def test_a_copys_warning_is_shown_once_a_process(tmp_path):
    """Under Python's default filter a copy read again (reproduce scores every run on one --real-root)
    is not warned of again: its line shows once."""
    root = write_dataset(tmp_path / "nmnist", n_train=3, n_test=2)
    shutil.copyfile(root / "Test" / "4" / "00005.bin", root / "Train" / "4" / "leak.bin")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        for _ in range(3):
            load(root, tmp_path / "cache")
    assert [str(warning.message).split(" (")[0] for warning in caught] == \
        [f"1 recording of {root / 'Test'} holds the same frames as one of {root / 'Train'}"]


def test_cache_dir_given_wins_over_eggroll_cache(tmp_path, monkeypatch):
    """--cache-dir (cache_dir) names the frame cache's folder even where $EGGROLL_CACHE is set, which
    only replaces the default."""
    root = write_dataset(tmp_path / "nmnist", n_train=2, n_test=1)
    monkeypatch.setenv("EGGROLL_CACHE", str(tmp_path / "env"))
    assert data.frame_cache_dir(tmp_path / "given") == tmp_path / "given"
    assert data.frame_cache_dir() == tmp_path / "env"
    load(root, tmp_path / "given")
    assert list((tmp_path / "given").glob("nmnist-*.npz")) and not (tmp_path / "env").exists()


def test_a_link_to_a_folder_at_a_frame_caches_name_is_rebuilt_and_the_folder_left(tmp_path):
    """A symbolic link where a cache file goes, to a folder elsewhere: the link is the project's to
    replace (a warning, the cache written in its place), the folder it leads to untouched."""
    root, cache = write_dataset(tmp_path / "nmnist", n_train=2, n_test=1), tmp_path / "cache"
    load(root, cache)
    victim = sorted(cache.glob("nmnist-train-*.npz"))[0]
    victim.unlink()
    (tmp_path / "theirs" / "notes").mkdir(parents=True)
    victim.symlink_to(tmp_path / "theirs")
    with pytest.warns(UserWarning, match="rebuilding it"):
        load(root, cache)
    assert victim.is_file() and not victim.is_symlink() and (tmp_path / "theirs" / "notes").is_dir()


def test_a_named_pipe_in_a_digit_folders_place_is_named_as_a_special_file(tmp_path):
    root = write_dataset(tmp_path / "nmnist", n_train=2, n_test=1)
    shutil.rmtree(root / "Train" / "3")
    os.mkfifo(root / "Train" / "3")
    with pytest.raises(data.BadDataError, match=f"{root / 'Train' / '3'} is a special file, not the class folder "
                                                f"of digit 3: move it out of {root / 'Train'}"):
        load(root, tmp_path / "cache")


def test_what_lies_inside_a_copy_is_known_through_links_and_before_its_digit_folders(tmp_path, monkeypatch):
    """data_copy_of: a path that leads into a digit folder through a link; a folder inside Train of a
    copy whose digit folders are not there yet; a copy above the current folder, named by its own
    path, not as ../.."""
    copy = write_dataset(tmp_path / "copy", n_train=1, n_test=1)
    (tmp_path / "into").symlink_to(copy / "Train" / "3")
    assert data.data_copy_of(tmp_path / "into") == copy
    bare = tmp_path / "bare"
    (bare / "Train").mkdir(parents=True)
    (bare / "Test").mkdir()
    assert data.data_copy_of(bare / "Train" / "new") == bare
    monkeypatch.chdir(copy / "Train" / "3")
    assert data.data_copy_of(Path("../4/new")) == copy


@pytest.mark.parametrize("value, told", [
    ("-", "the frame cache's folder is '-', which many tools read as standard output"),
    (" ", "the frame cache's folder is ' ', blanks only ($EGGROLL_CACHE left empty?): point $EGGROLL_CACHE (run.py: "
          "--cache-dir) at a folder, or unset it")])
def test_a_frame_cache_folder_of_dash_or_blanks_is_refused_before_any_recording_is_read(tmp_path, monkeypatch,
                                                                                         value, told):
    """$EGGROLL_CACHE=- (many tools' standard output) or blanks (a variable left empty) would make a
    folder of that name where the command runs."""
    root = write_dataset(tmp_path / "nmnist", n_train=1, n_test=1)
    monkeypatch.setenv("EGGROLL_CACHE", value)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(OSError, match="^" + re.escape(told)):
        data.load_nmnist(root, progress=False)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["nmnist"]


@pytest.mark.parametrize("arguments, name, kind, example", [
    (dict(root=5), "root", "an int", "path/to/nmnist"), (dict(root="x", cache_dir=3.0), "cache_dir", "a float",
                                                         "path/to/frames"),
    (dict(root=b"x"), "root", "a bytes", "path/to/nmnist"), (dict(root=""), "root", "''", "path/to/nmnist"),
    (dict(root="x", cache_dir=" "), "cache_dir", "' '", "path/to/frames")])
def test_a_folder_given_as_no_path_is_named_with_the_fix(arguments, name, kind, example):
    """load_nmnist(5): a ValueError naming the argument and what it takes, not Python's TypeError
    from deep inside pathlib; an empty path, which would mean the current folder or the default cache
    without a word, likewise."""
    with pytest.raises(ValueError, match=re.escape(f"{name} must be a folder's path (a str or pathlib.Path) or None, "
                                                   f"got {kind}: give e.g. '{example}'")):
        data.load_nmnist(progress=False, **arguments)


@pytest.mark.parametrize("bins", [0, -1, 2.5, True, "10", 10 ** 5])
def test_a_number_of_frames_out_of_range_is_refused_before_any_cache_is_written(tmp_path, bins):
    """load_nmnist's n_time_bins as --time-bins takes it: a whole number in 1..1000, or a ValueError
    saying so before a recording is read and any cache written (0 would divide by zero and blame the
    recordings, 10^5 write gigabytes)."""
    root = write_dataset(tmp_path / "nmnist", n_train=1, n_test=1)
    with pytest.raises(ValueError, match=re.escape(f"n_time_bins must be a whole number in 1..{data.MAX_TIME_BINS}, "
                                                   f"got {bins!r}: use e.g. 10")):
        data.load_nmnist(root, n_time_bins=bins, cache_dir=tmp_path / "cache", progress=False)
    assert not (tmp_path / "cache").exists()


def test_time_bins_reach_as_far_in_load_nmnist_as_on_the_command_line(tmp_path):
    """--time-bins and load_nmnist take the same range; a NumPy integer is taken as its value."""
    import config
    config.check(config.RunConfig(time_bins=data.MAX_TIME_BINS))
    with pytest.raises(ValueError, match=f"--time-bins must lie in 1..{data.MAX_TIME_BINS}, got"):
        config.check(config.RunConfig(time_bins=data.MAX_TIME_BINS + 1))
    root = write_dataset(tmp_path / "nmnist", n_train=1, n_test=1)
    splits = data.load_nmnist(root, n_time_bins=np.int64(3), cache_dir=tmp_path / "cache", progress=False)
    assert splits.test.n_time_bins == 3 and type(splits.test.n_time_bins) is int


def test_a_recording_named_in_capitals_is_named_not_left_out(tmp_path):
    """X.BIN in a class folder reads as a recording to a person but not to `*.bin`: it is named, with
    the two fixes, rather than left out of the split without a word (other files are no recordings)."""
    root = write_dataset(tmp_path / "nmnist", n_train=2, n_test=1)
    (root / "Train" / "3" / "notes.txt").write_text("mine")
    load(root, tmp_path / "cache")  # a file of another kind is passed over
    for name in ("00004.BIN", "00004.Bin", "00004.bin "):
        (root / "Train" / "3" / "00004.bin").rename(root / "Train" / "3" / name)
        with pytest.raises(data.BadDataError, match=re.escape(
                f"{root / 'Train' / '3' / name} ends in {name[-5:]!r}, not '.bin', so it would be left out: rename it "
                f"to end in .bin to read it, or move it out of {root / 'Train' / '3'}")):
            load(root, tmp_path / "cache")
        (root / "Train" / "3" / name).rename(root / "Train" / "3" / "00004.bin")


def test_a_relative_cache_home_is_ignored_and_a_tilde_in_eggroll_cache_is_home(tmp_path, monkeypatch):
    """$XDG_CACHE_HOME relative (or '-') is ignored, as the XDG rule says, not a folder made where the
    command runs; $EGGROLL_CACHE=~/frames means the home folder's, not a folder named ~."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    for relative in ("relcache", "-"):
        monkeypatch.setenv("XDG_CACHE_HOME", relative)
        assert data._cache_home() == tmp_path / "home" / ".cache" / "eggroll-snn"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert data._cache_home() == tmp_path / "xdg" / "eggroll-snn"
    monkeypatch.setenv("EGGROLL_CACHE", "~/frames")
    assert data.frame_cache_dir() == tmp_path / "home" / "frames"


def test_a_damaged_recording_of_an_emulated_copy_is_told_to_be_emulated_again(root, tmp_path):
    """A damaged recording in a copy that emulate made (EMULATED.json beside its split folders): the fix
    is to delete it and emulate into the same folder again, which makes what is missing, not to find
    another copy of it."""
    path, _ = data.list_recordings(root / "NMNIST" / "Train")[7]
    path.write_bytes(b"\x00\x01\x02")
    with pytest.raises(data.BadDataError, match="not a multiple of 5; the file is truncated or not N-MNIST, replace "
                                                "it$"):
        load(root, tmp_path / "cache")
    (root / "NMNIST" / "EMULATED.json").write_text("{}")
    with pytest.raises(data.BadDataError) as error:
        load(root, tmp_path / "cache")
    assert str(error.value) == (f"{path}: size 3 bytes is not a multiple of 5; the file is truncated or not N-MNIST, "
                                f"delete it and emulate into the same folder again (`run.py emulate --mnist DIR --out "
                                f"{root}`)")


@pytest.mark.parametrize("counted, advice", [
    (0, "without its Train split (its FINISHED.json counts none there): emulate that split into the same folder"),
    (False, "emulate a copy from MNIST files that hold every digit"), (None, "emulate a copy from MNIST files"),
    ("0", "emulate a copy from MNIST files"), (0.0, "emulate a copy from MNIST files")])
def test_only_a_count_of_zero_in_finished_json_says_a_split_was_not_emulated(tmp_path, counted, advice):
    """An emulated copy whose Train folder is missing: FINISHED.json's count of 0 there means the split
    was never emulated (emulate it into the same folder); any other value there (false, null, "0",
    0.0: a damaged record) is no count, and the advice is a fresh emulation."""
    base = tmp_path / "NMNIST"
    base.mkdir()
    (base / "EMULATED.json").write_text("{}")
    (base / "FINISHED.json").write_text(json.dumps({"Train": counted, "Test": 5}))
    assert data._emulated_count(base / "Train") == (counted if counted == 0 and type(counted) is int else None)
    assert advice in data.split_folder_problem(base / "Train")


def test_an_emulation_stopped_midway_is_to_be_finished_not_made_again(tmp_path):
    """An emulated copy with no FINISHED.json (stopped midway, a digit's folder not yet made): the advice
    is to rerun its emulation, which keeps what it made, not a fresh one from other MNIST files."""
    base = tmp_path / "NMNIST"
    base.mkdir()
    (base / "EMULATED.json").write_text("{}")
    assert data.split_folder_problem(base / "Train").endswith(
        f"{base} holds an emulation that did not finish (no FINISHED.json): rerun its `run.py emulate --out "
        f"{tmp_path}` (with its --mnist and --seed) to finish it: the recordings already made are kept")


def test_a_frame_caches_build_names_the_temporary_files_a_killed_build_left_before_it(tmp_path, capsys):
    """A build of the frame cache killed before its rename leaves <cache>.<8 hex digits>.tmp: the next
    build of that cache names it (not deleted: it may be another process's), but not a temporary
    file written while it built (a process building the same cache alongside)."""
    data.load_nmnist(SAMPLE, cache_dir=tmp_path, progress=False)
    cache = sorted(tmp_path.glob("nmnist-train-*.npz"))[0]
    cache.unlink()
    killed, alongside = (cache.with_name(f"{cache.name}.{digits}.tmp") for digits in ("0fb5fd2e", "12345678"))
    killed.write_bytes(b"x" * 2**20)
    os.utime(killed, (time.time() - 3600, time.time() - 3600))
    alongside.write_bytes(b"x")
    os.utime(alongside, (time.time() + 3600, time.time() + 3600))
    capsys.readouterr()
    data.load_nmnist(SAMPLE, cache_dir=tmp_path, progress=False)
    assert capsys.readouterr().err == (f"note: {tmp_path} holds 1 temporary file (1.0 MiB) that a frame cache's "
                                       f"build stopped by a kill left there: {killed.name}; delete it once no other "
                                       f"command is writing there\n")
    assert killed.exists() and alongside.exists()


@pytest.mark.parametrize("call, said", [
    (lambda: data.frames_from_events([(1, 2, 3, 0)], 10), "events must be a 1-D structured array of fields x, y, t "
                                                          "and p"),
    (lambda: data.frames_from_events(np.zeros((2, 2), data.EVENT_DTYPE), 10), "events must be a 1-D structured array"),
    (lambda: data.frames_from_events(np.array([(0, 0, -(2 ** 62), 0), (0, 0, 2 ** 62, 0)], data.EVENT_DTYPE), 10),
     "events must be N-MNIST's, as read_events returns them: t must lie in 0..2147483647"),  # t - t[0] overflowed
    (lambda: data.frames_from_events(np.zeros(0, data.EVENT_DTYPE), 0),  # no frame at all, where T >= 1 is meant
     "n_time_bins must be a whole number in 1..1000, got 0"),
    (lambda: data.frames_from_events(np.zeros(0, data.EVENT_DTYPE), 2 ** 31),  # 4.5 TiB of frames
     "n_time_bins must be a whole number in 1..1000, got 2147483648"),
    (lambda: data.frames_from_events(np.array([(-1, 0, 0, 0)], data.EVENT_DTYPE), 10),  # another pixel's input
     "events must be N-MNIST's, as read_events returns them: x must lie in 0..33, got -1..-1"),
    (lambda: data.frames_from_events(np.array([(0, 0, 0, 2)], data.EVENT_DTYPE), 10),  # the other polarity's
     "events must be N-MNIST's, as read_events returns them: p must lie in 0..1, got 2..2"),
    (lambda: data.frames_from_events(np.array([(0, 0, 5, 0), (1, 0, 0, 0)], data.EVENT_DTYPE), 10),  # time-mirrored
     "events must be N-MNIST's, as read_events returns them: t must never go backwards"),
    (lambda: data.frames_from_events(np.zeros(1, [("x", float), ("y", int), ("t", int), ("p", int)]), 10),
     "events must be N-MNIST's, as read_events returns them: x, y, t and p must be integers, got float64"),
    (lambda: data.epoch_order(10, -1, 0), "seed must be a whole number in 0..18446744073709551615, got -1"),
    (lambda: next(data.batches(data.Split(np.zeros((4, 2890), np.uint8), np.zeros(4, int), 10), -1)),
     "batch_size must be a whole number in 1..9223372036854775807, got -1"),  # (it yielded nothing)
    (lambda: data.minibatch(data.Split(np.zeros((4, 2890), np.uint8), np.zeros(4, int), 10), 2, np, 0, 0,
                            max_shift=34),  # every event moved off the sensor, or most
     "max_shift must be a whole number in 0..33, got 34"),
    (lambda: next(data.batches([1, 2, 3], 2)), "split must be a data.Split (load_nmnist(...).train), got a list"),
    (lambda: next(data.batches(data.Split(np.zeros((4, 2890), np.uint8), np.zeros(4, int), 10), 2, shuffle="no")),
     "shuffle must be True or False, got 'no'"),  # (a truthy string shuffled)
    (lambda: data.minibatch(data.Split(np.zeros((4, 2890), np.uint8), np.zeros(4, int), 10), 8, np, 0, 0,
                            count=10 ** 12), "a minibatch of 4,000,000,000,000 samples, "),  # grew to 21 GB, killed
    (lambda: next(data.batches(data.Split(np.zeros((4, 2890), np.uint8), np.zeros(4, int), 10), 2, epoch=-1)),
     "epoch must be a whole number in 0..18446744073709551615, got -1"),
    (lambda: data.epoch_order(10 ** 12, 1, 0), "n must be a whole number in 0..2147483648, got 1000000000000"),
    (lambda: data.epoch_order(5.0, 1, 0), "n must be a whole number in 0..2147483648, got 5.0"),  # even once kept
    (lambda: data.translate(np.zeros((2, 3, 100)), np.ones((3, 2), int)),
     "frames must be an array (T, N, 2312), got a NumPy array of shape (2, 3, 100)"),
    (lambda: data.translate(np.zeros((2, 3, data.N_INPUTS)), [[1, 1]] * 3),
     "shifts must be a NumPy integer array (3, 2), a (dy, dx) per sample, got a list"),
    (lambda: data.translate(np.zeros((2, 3, data.N_INPUTS)), np.ones((3, 2))),
     "shifts must be a NumPy integer array (3, 2), a (dy, dx) per sample, got a NumPy array of float64 and shape")])
def test_the_data_helpers_refuse_arguments_that_make_no_frames_by_name(call, said):
    """Arguments that made empty frames, no batch, a batch of blank samples or a raw error inside
    are one ValueError naming what to give."""
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(said)


def test_events_of_any_integer_type_give_the_frames_of_int64_events():
    """Events whose fields are uint8 or int32 (a reader of one's own) bin as read_events' int64 do
    (a uint8 polarity times 34 x 34 overflowed)."""
    events = np.zeros(300, data.EVENT_DTYPE)
    events["x"], events["y"], events["t"], events["p"] = random_events(np.random.default_rng(3), 300)
    narrow = events.astype([("x", np.uint8), ("y", np.uint8), ("t", np.int32), ("p", np.uint8)])
    assert data.frames_from_events(events, 10).sum() > 200
    np.testing.assert_array_equal(data.frames_from_events(narrow, 10), data.frames_from_events(events, 10))


def test_a_split_smaller_than_a_batch_is_one_batch_of_all_of_it_as_minibatch_gives():
    """batches(shuffle=True) over a split of 4 with batch_size 100 yielded nothing; minibatch gives all
    4: both give the same one batch now."""
    split = data.Split(np.packbits(np.random.default_rng(0).integers(0, 2, (4, 10 * data.N_INPUTS), np.uint8),
                                   axis=1), np.arange(4), 10)
    (frames, labels), = data.batches(split, 100, seed=3)
    expected_frames, expected_labels = data.minibatch(split, 100, np, 3, 0)
    np.testing.assert_array_equal(labels, expected_labels)
    np.testing.assert_array_equal(frames, expected_frames)


def test_the_data_helpers_refuse_what_they_cannot_read():
    """A split of a fractional or negative number of recordings, a path that is none, and a flag
    given as text (download="no" would download) are one line each."""
    for call, told in ((lambda: data.split_indices(2.5), "n must be a whole number >= 0, got 2.5: use 54000, the "
                        "training recordings"),
                       (lambda: data.split_indices(-5), "n must be a whole number >= 0, got -5: use 54000, the "
                        "training recordings"),
                       (lambda: data.read_events(None), "path must be a recording's path (a str or pathlib.Path), got "
                        "a NoneType"),
                       (lambda: data.read_events("/nonexistent/00001.bin"), "/nonexistent/00001.bin: no such "
                        "recording; give the path of an N-MNIST .bin file"),
                       (lambda: data.load_nmnist("/nonexistent", download="no"), "download must be True or False, got "
                        "'no'"),
                       (lambda: data.load_nmnist("/nonexistent", progress="x"), "progress must be True or False, got "
                        "'x'")):
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == told
    assert [len(part) for part in data.split_indices(0)] == [0, 0]
