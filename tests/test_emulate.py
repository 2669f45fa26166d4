"""The emulator (emulate.py, `run.py emulate`): the bytes of the recordings it was made to give,
the tolerance where NumPy's exp and log round otherwise, determinism whatever the batch or the
number of workers, resuming an interrupted emulation, and bad input as one line and exit status 2.
Everything runs on the 40 MNIST digits of tests/data/mnist-digits (README.md there)."""
import errno
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import data
import emulate
import mnist
import resources
import run
import run_folder

DIGITS = Path(__file__).resolve().parent / "data" / "mnist-digits"
REFERENCE_RECORDINGS = Path(__file__).resolve().parent / "data" / "emulated-reference"
INDICES = json.loads((DIGITS / "indices.json").read_text())
# (split, 1-based MNIST index): (SHA256, events) of the recording that the emulator the project's
# emulated N-MNIST was made with wrote for that digit at seed 0, on x86-64 with AVX-512.
REFERENCE = {
    ("test", 1): ("95e319ffc696f015728b79cb404ea79a9f641d2ba001ef52311de35fefd92f88", 3159),
    ("test", 2): ("1a39bb3b1f201081b57de0b7168b1768e13b96b737d2070f15a0301613b0f230", 4682),
    ("test", 3): ("cfe9eed6cac9d66b1b55f08bbeed16521911cef991f801dbcc3e2a5627eb09e1", 1769),
    ("test", 4): ("16e22cd4b00e2c6639bd873d436033e68b176ced0c5092366be3cc0dd593ce6d", 5191),
    ("test", 5): ("a2f1cfe56ffb08cbd02e9afe71a84edd2f09f49fdc5fd9c47ddd4fdb1a29cd71", 3385),
    ("test", 6): ("69685ae2d84c759ab36661a91c5ec5e40f4163589e521d4fdff27ec3544e0501", 2346),
    ("test", 7): ("f89e064e4e94aaeeef47685942822814e92b9f830f81cc5cb433940ce4d09be8", 3493),
    ("test", 8): ("0721c8752a814ac30fee38c67caa5f2b2906ae928e7e09a3093d127cefd2d9c2", 3573),
    ("test", 9): ("4b4f64c0fde3e78985c82105f176502e0ec2e9fbe5fef2b2b7e2a939149330b4", 4626),
    ("test", 10): ("15057177cc6ed1106f3e86bc1f55777b435993fe15afe874f7f0c6c7a6973bb5", 4521),
    ("test", 11): ("97d1dcb9fd7453dc7d7e58b0bbc3a00bba767dbf48f000ae50ec612dd4e506d7", 5167),
    ("test", 12): ("e4d9683aaf23a9eff2baf0d53f878cb5f26ecef95fd56dcc43105eff8d08e316", 4770),
    ("test", 13): ("011a31699f18d50fe0f93a41e8531eb8f16363a5433962d0cfd92f592127c737", 3772),
    ("test", 14): ("eafbe2d40dd36238a500f7e4de192ac4c4e0caeaebed124721d67ce2618dd28e", 4995),
    ("test", 15): ("22ed425adbc7b0c289b579850822892b93b0a9e80d1f9f17e060ce11f75ffb77", 2669),
    ("test", 16): ("318f0261d1de35c14b52618ae44b82a5ffaebe6c5777d09c8e44c8f2491b088b", 3977),
    ("test", 100): ("fd3014cf6eeb6a5e18fb078c8dc9c80a289323e6bd190772289ded131968c355", 4653),
    ("test", 2024): ("4141c28228d338f6ac4886728f48442cdc8d0d163cc713cae023a8e466ba7aea", 3949),
    ("test", 5000): ("ea1a86c97fff63785ce7f838fb2198ddd201e9730584045f9cd62762b21da6cb", 6707),
    ("test", 9999): ("97e97e9d1f54d5e472a35d6d576337cf293e91f0f23231b905bd152067f25857", 4033),
    ("test", 10000): ("fe77705254fa13a287851a3479b848229a597d1a14dde1dc5a640d8d641f7076", 5377),
    ("train", 1): ("eed568f6f9c94e90bcca50ee9584be720f74a8e6f49b3a6437236b05f5e61d31", 4570),
    ("train", 2): ("128ef8828ba1f9cc9b3ebbe374c77dba98048f0f588745f157b7eeb7a772aa84", 5006),
    ("train", 3): ("0958a6c3c7902e0d117682021628f75b2cc287b3eef3d9604ae3c1d06f475327", 3499),
    ("train", 4): ("344cd2d027cca34dc07d48bf94a156fc7bd4aaccccae5c670037638fc6ee7b34", 2695),
    ("train", 5): ("510c2c70e86a465488b93e84cfb64f4ea0a38fb9015ec8b1d4be63561a9596b1", 3770),
    ("train", 6): ("376a50c53fdd0d5cbe1c59b9d60e43e36d59364bac74ac27db56b96133799f7b", 4667),
    ("train", 7): ("38525e81678fc49d70b48d2c31d643d065e4af2db7a871f747428da970acee33", 2837),
    ("train", 8): ("7bdc40d9fa5ad9ce09591f9bb604f7b092615ae23fa10753c37511f26386c026", 5263),
    ("train", 9): ("563bd77522c7d538f68a5ca1e1ea2dbf1edf6a7fc666e61cad33d80b721fea28", 1995),
    ("train", 10): ("0c7b49549bb34e369aaa1dc1fa8b4336083a9e6bc7436119e089a615fcdf8c8c", 3575),
    ("train", 11): ("d75804f9a921d173fb4d1359eb1ddf0ce2d432961f1bbca9afb5c92e2b515cb8", 3972),
    ("train", 12): ("1cab6081ac366e770872d784bccea25224770f035aa2372eb44d883b9f2077df", 2596),
    ("train", 1000): ("2441092408eb79ca0bf355cecfb6cd8547a0a891677e920f7bc4af4a17a40d9c", 3635),
    ("train", 7777): ("a556522a84670931bb0584fb1578c8631822ff187e3f1c7c22f3f8932aa1bce0", 3860),
    ("train", 15000): ("81488f96b488c1d0bcce2ea5b2ddd002d2f11048e97e7fe23f754ccac9cd99c4", 3255),
    ("train", 30000): ("e4f4c65a9d3c46255bcfb2dc7d9bda0bedef3bcc57b2daadb9480a2c28285169", 2594),
    ("train", 42424): ("1bac1968cf4478ce6c415baab752c8de609b723a7189cc287bcfa06da251c4d6", 4402),
    ("train", 59999): ("5d2044b7d01fa5d4a5ec06d0a1b0dc572240e032a67724122e90f690c9b525ac", 3473),
    ("train", 60000): ("92aac01f1cc25fadd9a5c380d2cc607b3b3e8496bb9c49361a48ffe3babb4fce", 3554),
}
# At most this fraction of a recording's events may differ where NumPy rounds exp and log otherwise.
TOLERANCE = 0.01
same_bytes = pytest.mark.skipif(not emulate.bytes_as_made(),
                                reason="NumPy here does not compute exp and log as the reference machines did")


@pytest.fixture(scope="module")
def recordings():
    """The bytes of the 40 digits' recordings, by (split, index), emulated in this process."""
    return emulated_bytes()


def read_digits():
    """{split: (images, labels)} of the 40 digits, in the order of INDICES."""
    return {split: tuple(mnist.parse(mnist.read(DIGITS / name), name) for name in names)
            for split, names in mnist.FILES.items()}


def emulated_bytes(batch=None):
    """{(split, index): bytes} of the 40 digits at seed 0, `batch` digits at a time (all by default)."""
    digits = read_digits()
    emulator = emulate.Emulator(0)
    result = {}
    for split, (images, _) in digits.items():
        indices = INDICES[split]
        step = batch or len(indices)
        for start in range(0, len(indices), step):
            chosen = indices[start:start + step]
            for index, events in zip(chosen, emulator.recordings(images[start:start + step], split, chosen)):
                result[split, index] = emulate.encode(*events)
    return result


def events_of(blob):
    return np.frombuffer(blob, np.uint8).reshape(-1, 5)


def test_the_committed_digits_are_the_40_of_the_reference():
    digits = read_digits()
    assert {split: len(images) for split, (images, _) in digits.items()} == {"train": 19, "test": 21}
    assert sorted(REFERENCE) == sorted((split, index) for split in INDICES for index in INDICES[split])
    assert INDICES["test"][:16] == list(range(1, 17))  # the first test digits
    assert [int(label) for label in digits["test"][1][:4]] == [7, 2, 1, 0]  # MNIST's first test labels


@same_bytes
def test_every_recording_is_the_reference_bytes(recordings):
    wrong = [key for key, blob in recordings.items() if hashlib.sha256(blob).hexdigest() != REFERENCE[key][0]]
    assert wrong == []


def test_every_recording_has_the_reference_events_within_the_tolerance(recordings):
    """On every platform: each recording has the reference's number of events, and of the three
    committed reference recordings at most 1 % of the events differ."""
    assert {key: len(blob) // 5 for key, blob in recordings.items()} == {key: n for key, (_, n) in REFERENCE.items()}
    for path in sorted(REFERENCE_RECORDINGS.glob("*/*/*.bin")):
        key = ("train" if path.parts[-3] == "Train" else "test", int(path.stem))
        reference = events_of(path.read_bytes())
        assert hashlib.sha256(path.read_bytes()).hexdigest() == REFERENCE[key][0]
        assert (events_of(recordings[key]) == reference).all(axis=1).mean() >= 1 - TOLERANCE


@same_bytes
def test_numpy_without_avx2_gives_the_same_counts_and_99_percent_of_the_events(recordings, tmp_path):
    """NumPy's SIMD limited to the x86-64 baseline rounds exp and log otherwise: every recording
    keeps its number of events and at least 99 % of them, though not all its bytes."""
    script = ("import json, sys, emulate; sys.path.insert(0, 'tests'); import test_emulate as t; "
              "assert not emulate.bytes_as_made(); "
              "json.dump({f'{s} {i}': b.hex() for (s, i), b in t.emulated_bytes().items()}, sys.stdout)")
    environment = dict(os.environ, NPY_DISABLE_CPU_FEATURES="X86_V3 X86_V4 AVX512_ICL",
                       PYTHONPATH=str(Path(emulate.__file__).parent), OPENBLAS_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=environment,
                          cwd=Path(emulate.__file__).parent, timeout=300)
    assert done.returncode == 0, done.stderr
    baseline = {(split, int(index)): bytes.fromhex(blob)
                for (split, index), blob in ((key.split(), blob) for key, blob in json.loads(done.stdout).items())}
    assert baseline.keys() == recordings.keys()
    assert sum(baseline[key] != recordings[key] for key in recordings) > 0  # the variable took effect
    for key, blob in recordings.items():
        assert len(baseline[key]) == len(blob)
        assert (events_of(baseline[key]) == events_of(blob)).all(axis=1).mean() >= 1 - TOLERANCE


def test_a_recording_does_not_depend_on_its_batch(recordings):
    assert emulated_bytes(batch=3) == recordings


def test_recordings_are_valid_n_mnist_and_their_seed_matters(tmp_path, recordings):
    path = tmp_path / "00001.bin"
    path.write_bytes(recordings["test", 1])
    events = data.read_events(path)  # within the sensor, time never going backwards
    assert len(events) == REFERENCE["test", 1][1] and 0 < events["t"][-1] < 320_000
    assert 0.4 < events["p"].mean() < 0.6
    images, _ = read_digits()["test"]
    other = emulate.encode(*emulate.Emulator(1).recordings(images[:1], "test", [1])[0])
    assert other != recordings["test", 1]


def test_recordings_name_what_they_take():
    """Digits of another type or shape, an unknown split or indices that are not each digit's 1-based
    place are one line naming what is taken, not NumPy's error deep in the sensor (or a recording
    of a float image's garbage)."""
    images, emulator = np.zeros((2, 28, 28), np.uint8), emulate.Emulator(0)
    for args, told in (((images.astype(float), "train", [1, 2]), "images must be MNIST digits, a uint8 array (B, 28, "
                        "28) as mnist.load gives them, got float64 (2, 28, 28)"),
                       ((images[0], "train", [1]), "images must be MNIST digits, a uint8 array (B, 28, 28) as "
                        "mnist.load gives them, got uint8 (28, 28)"),
                       ((images, "val", [1, 2]), "split must be one of 'train', 'test', got 'val'"),
                       ((images, "train", [1]), "indices must give each of the 2 digits its 1-based place in its "
                        "split, got 1"),
                       ((images, "train", [0, 1]), "index must be a whole number >= 1, got 0: use 1, a digit's "
                        "1-based place in its split")):
        with pytest.raises(ValueError) as refused:
            emulator.recordings(*args)
        assert str(refused.value) == told
    assert len(emulator.recordings(images, "train", np.array([1, 2]))) == 2


def emulate_command(out, *extra):
    return ["emulate", "--mnist", str(DIGITS), "--out", str(out), "--quiet", *extra]


def files_of(out):
    return {path.relative_to(out).as_posix(): path.read_bytes()
            for path in sorted(Path(out).rglob("*")) if path.is_file()}


def test_the_command_writes_tonics_layout_the_same_whatever_the_workers(tmp_path, capsys):
    with pytest.warns(UserWarning, match="differ from the official MNIST files"):
        assert run.main(emulate_command(tmp_path / "one", "--workers", "1")) == 0
        assert run.main(emulate_command(tmp_path / "two", "--workers", "2", "--split", "both")) == 0
    said = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert said[0] == said[1] and said[0]["recordings"] == 40 and said[0]["kept"] == 0
    one, two = files_of(tmp_path / "one"), files_of(tmp_path / "two")
    assert one == two
    recordings = sorted(name for name in one if name.endswith(".bin"))
    labels = {split: labels for split, (_, labels) in read_digits().items()}
    assert recordings == sorted(f"NMNIST/{emulate.SPLIT_FOLDER[split]}/{label}/{i + 1:05d}.bin"
                                for split in labels for i, label in enumerate(labels[split]))
    assert one["NMNIST/train.zip"] == one["NMNIST/test.zip"] == b""
    assert sum(len(one[name]) // 5 for name in recordings) == said[0]["events"]
    assert emulate.provenance(tmp_path / "one") == {
        "emulator": "eggroll-snn emulate.py", "version": emulate.VERSION, "seed": 0,
        "mnist_sha256": {name: hashlib.sha256((DIGITS / name).read_bytes()).hexdigest()
                         for name in mnist.NAMES}}
    assert emulate.provenance(tmp_path / "one" / "NMNIST") == emulate.provenance(tmp_path / "one")


def test_an_emulation_of_one_split_names_the_command_that_adds_the_other(tmp_path, capsys):
    """Training and scoring read both splits: an emulation of the test digits alone is refused in
    one line naming `run.py emulate --split train` into the same folder, which then completes it."""
    with pytest.warns(UserWarning, match="differ from the official MNIST files"):
        assert run.main(emulate_command(tmp_path, "--split", "test")) == 0
        with pytest.raises(data.BadDataError, match=f"holds no emulated Train recordings; add them with `run.py "
                                                    f"emulate --split train --out {tmp_path}`"):
            emulate.check_finished(tmp_path)
        with pytest.raises(run_folder.UsageError, match=re.escape(  # what train meets first, counting recordings
                f"was emulated from MNIST without its Train split (its FINISHED.json counts none there): emulate "
                f"that split into the same folder (`run.py emulate --mnist DIR --split train --out {tmp_path}`)")):
            resources.nmnist_recordings(tmp_path, "--data-root")
        assert run.main(emulate_command(tmp_path, "--split", "train")) == 0
    emulate.check_finished(tmp_path)
    assert emulate.recordings(tmp_path / "NMNIST")["Train"] == len(INDICES["train"])


def test_a_rerun_refuses_a_recording_moved_or_added_after_the_emulation(tmp_path, capsys):
    """A recording moved to another digit's folder, or one MNIST has no digit for, is not counted
    as made by a rerun (which would keep it, mislabelled): the rerun names it, exit status 2, and
    changes nothing; once it is moved out, the rerun makes the recording again and finishes."""
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path, "--split", "test")) == 0
    test = tmp_path / "NMNIST" / "Test"
    moved = next(test.glob("*/*.bin"))
    other = test / next(d for d in data.DIGITS if d != moved.parent.name) / moved.name
    recording = moved.read_bytes()
    moved.unlink()
    other.write_bytes(recording)  # training is told what the rerun does about it
    with pytest.raises(data.BadDataError, match=re.escape(f"(one moved to another digit or renamed); rerun `python run.py "
                                                          f"emulate --out {tmp_path} --seed 0 --split test` (with its "
                                                          f"--mnist, if it "
                                                          f"was given one): it names each recording that is not where "
                                                          f"it made it, to move out")):
        emulate.check_finished(tmp_path)
    other.unlink()
    for stray in (other, test / "3" / "99999.bin"):
        stray.write_bytes(recording)
        before = {name: blob for name, blob in files_of(tmp_path).items() if not name.endswith(".lock")}
        capsys.readouterr()
        with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
            warnings.simplefilter("error")
            assert run.main(emulate_command(tmp_path, "--split", "test")) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"{stray} is not a recording this emulation makes" in err
        assert "(its digit or number is not MNIST's); move it out of " in err, err  # one stray: no "0 more"
        assert {name: blob for name, blob in files_of(tmp_path).items() if not name.endswith(".lock")} == before
        stray.unlink()
    strays = [test / "3" / f"9999{k}.bin" for k in range(3)]
    for stray in strays:
        stray.write_bytes(recording)
    with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
        warnings.simplefilter("error")
        assert run.main(emulate_command(tmp_path, "--split", "test")) == 2
    assert f"{strays[0]} is not a recording this emulation makes (its digit or number is not MNIST's), nor are 2 " \
           f"more; move them out of " in capsys.readouterr().err  # the one named and the others, counted
    for stray in strays:
        stray.unlink()
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path, "--split", "test")) == 0
    assert moved.exists() and json.loads(capsys.readouterr().out.splitlines()[-1])["recordings"] == 1


def test_an_interrupted_emulation_resumes_keeping_its_finished_recordings(tmp_path, monkeypatch, capsys):
    """Stopped by Ctrl-C after 6 recordings (and a half-written file left by a killed worker, and one
    recording cut short since), the same command finishes the others and makes the cut one again; no
    file is ever left half written."""
    monkeypatch.setattr(emulate, "BATCH", 4)
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path / "whole", "--workers", "1")) == 0
    whole = files_of(tmp_path / "whole")
    encode, calls = emulate.encode, []

    def stopping_encode(*events):
        calls.append(1)
        if len(calls) == 7:
            raise KeyboardInterrupt
        return encode(*events)

    monkeypatch.setattr(emulate, "encode", stopping_encode)
    out = tmp_path / "stopped"
    capsys.readouterr()
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 130
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "rerun the same command to continue (finished recordings are kept)" in err
    kept = {name: blob for name, blob in files_of(out).items() if name.endswith(".bin")}
    assert len(kept) == 6 and all(whole[name] == blob for name, blob in kept.items())
    assert not list(out.rglob("*.tmp"))
    half = out / "NMNIST" / "Test" / "7" / "00001.bin.0f3a9c1e.tmp"  # as run_folder.writing names it
    half.write_bytes(whole["NMNIST/Test/7/00001.bin"][:12])
    cut = out / sorted(kept)[0]
    cut.write_bytes(kept[sorted(kept)[0]][:-2])
    monkeypatch.setattr(emulate, "encode", encode)
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 0
    assert json.loads(capsys.readouterr().out.splitlines()[-1])["kept"] == 5
    assert files_of(out) == whole


def test_bad_input_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys):
    damaged = tmp_path / "damaged"
    shutil.copytree(DIGITS, damaged)
    blob = gzip.compress((damaged / "t10k-images-idx3-ubyte").read_bytes(), mtime=0)
    (damaged / "t10k-images-idx3-ubyte").unlink()
    (damaged / "t10k-images-idx3-ubyte.gz").write_bytes(blob[:len(blob) // 2])
    raw = tmp_path / "raw"
    raw.mkdir()
    (raw / "t10k-labels-idx1-ubyte").write_bytes(b"\x00\x00\x08\x01" + b"\x00" * 20)  # an IDX file of nothing MNIST
    out = tmp_path / "out"
    (tmp_path / "a-file").write_text("")
    for mnist_folder, expected in ((tmp_path / "absent", "does not exist"), (tmp_path / "a-file", "is not a folder"),
                                   (damaged, "not a whole gzip file"),
                                   (raw, "train-images-idx3-ubyte.gz (or train-images-idx3-ubyte) is missing")):
        code, err = run.main(["emulate", "--mnist", str(mnist_folder), "--out", str(out), "--quiet"]), \
            capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and err.startswith("error: ") and expected in err, err
    for extra in (["--workers", "0"], ["--seed", "-1"], ["--split", "all"], ["--mnist", ""]):
        with pytest.raises(SystemExit) as stop:
            run.main(["emulate", "--out", str(out), *extra])
        err = capsys.readouterr().err
        assert stop.value.code == 2 and err.count("\n") == 1 and extra[0] in err, err
    assert not out.exists()


def test_more_workers_than_free_memory_holds_are_refused_before_any_work(tmp_path, capsys, monkeypatch):
    """Each worker is a process of its own (resources.EMULATE_WORKER_BYTES): --workers beyond what
    free RAM holds is one line naming --workers and a count that fits, exit status 2, nothing made;
    a count that fits passes, however many cores there are."""
    free = int(3.5 * resources.EMULATE_WORKER_BYTES)
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (free, None))
    out = tmp_path / "out"
    assert run.main(emulate_command(out, "--workers", "4")) == 2
    assert capsys.readouterr().err == (
        f"error: --workers 4: 4 worker processes need about {resources.size_text(4 * resources.EMULATE_WORKER_BYTES)} "
        f"of RAM (some {resources.size_text(resources.EMULATE_WORKER_BYTES)} each), more than the "
        f"{resources.size_text(free)} free; use --workers 3 or fewer\n")
    assert not out.exists()
    resources.check_emulate_workers(3)
    resources.check_emulate_workers(1)  # in this process: none started
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (0, None))
    resources.check_emulate_workers(1)


def test_a_frame_cache_folder_is_refused_as_the_emulations_folder(tmp_path, capsys):
    """An emulation in the folder of the frame caches would make it a data folder, which every command
    then refuses as its cache: refused in one line, before anything is made; the caches as they were."""
    cache = tmp_path / "frames"
    cache.mkdir()
    (cache / "nmnist-test-T10-0123456789abcdef.npz").write_bytes(b"a cache")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run.main(emulate_command(cache)) == 2
    assert capsys.readouterr().err == (f"error: {cache} holds frame caches of this project (nmnist-*.npz files), a "
                                       f"folder the commands read frames from; emulate into another --out\n")
    assert [path.name for path in cache.iterdir()] == ["nmnist-test-T10-0123456789abcdef.npz"]


def test_a_folder_of_other_recordings_is_refused(tmp_path, capsys):
    """A folder emulated at another seed, a file as --out, a copy not emulated here: one line each (no
    warning about the MNIST files first), nothing touched; .bin files of another kind do not count."""
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path / "seed0")) == 0
    capsys.readouterr()
    for out in (tmp_path / "seed0", tmp_path / "a file"):  # refused in one line: MNIST's warning is not given first
        (tmp_path / "a file").write_text("mine")
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert run.main(emulate_command(out, "--seed", "1")) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "differ from the official" not in err, err
    assert (tmp_path / "a file").read_text() == "mine"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert run.main(emulate_command(tmp_path / "seed0", "--seed", "1")) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "emulated otherwise (--seed 0 there, 1 here); emulate into another --out" in err
    assert "delete" not in err  # those recordings are intact
    real = tmp_path / "real"
    shutil.copytree(Path(data.__file__).parent / "nmnist-sample", real)  # <root>/{Train,Test}: not emulated
    before = files_of(real)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused before the MNIST files are read: no warning about them first
        assert run.main(emulate_command(real)) == 2
    assert capsys.readouterr().err == (f"error: {real} holds recordings that were not emulated here (no "
                                       f"{real / 'NMNIST' / 'EMULATED.json'}); emulate into another folder (run.py "
                                       f"emulate's --out, reproduce --data emulated's --data-root)\n")
    assert emulate.provenance(real) is None and files_of(real) == before and not (real / "NMNIST").exists()
    elsewhere = tmp_path / "home"  # .bin files of another kind, not in N-MNIST's <split>/<digit>/ layout
    (elsewhere / "firmware" / "v2").mkdir(parents=True)
    (elsewhere / "firmware" / "v2" / "image.bin").write_bytes(b"\0")
    with pytest.warns(UserWarning, match="differ from the official MNIST files"):
        assert run.main(emulate_command(elsewhere)) == 0
    assert (elsewhere / "firmware" / "v2" / "image.bin").read_bytes() == b"\0"
    for damaged, named in (({"seed": float("nan")}, "--seed: NaN"), ({"version": "1"}, 'the emulator\'s version: "1"'),
                           ({"mnist_sha256": []}, "the MNIST files: []")):
        (tmp_path / "seed0" / "NMNIST" / "EMULATED.json").write_text(json.dumps(
            {"version": 1, "seed": 0, "mnist_sha256": {}, **damaged}))
        with pytest.raises(data.BadDataError, match=re.escape(f"is damaged ({named})")):
            emulate.provenance(tmp_path / "seed0")
    (tmp_path / "seed0" / "NMNIST" / "EMULATED.json").unlink()
    (tmp_path / "seed0" / "NMNIST" / "EMULATED.json").symlink_to(tmp_path / "nowhere.json")
    with pytest.raises(data.BadDataError, match="EMULATED.json"):
        emulate.provenance(tmp_path / "seed0")  # a broken link is not taken for real data
    (tmp_path / "seed0" / "NMNIST" / "EMULATED.json").unlink()
    (tmp_path / "seed0" / "NMNIST" / "EMULATED.json").write_text("{")
    with pytest.raises(data.BadDataError, match="is not valid JSON.*put back the EMULATED.json"):
        emulate.provenance(tmp_path / "seed0")


def test_a_damaged_record_of_an_emulation_is_never_to_be_deleted(tmp_path, capsys):
    """A damaged EMULATED.json is refused with advice that keeps the recordings' origin: put the
    record back, or emulate into another --out. Deleting it would make the emulated recordings
    pass for recorded N-MNIST, and the folder's own emulation then refuses them."""
    out = tmp_path / "emulated"
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out)) == 0
    record = out / "NMNIST" / emulate.PROVENANCE
    for damaged in ("{", "[]", json.dumps({"version": 1, "seed": -1, "mnist_sha256": {}})):
        record.write_text(damaged)
        with pytest.raises(data.BadDataError) as refused:
            emulate.provenance(out)
        assert "delete" not in str(refused.value) and str(refused.value).endswith(
            "put back the EMULATED.json that `run.py emulate` wrote there, or emulate into another --out: without it "
            "the recordings beside it would pass for recorded N-MNIST"), str(refused.value)
    record.unlink()  # what the advice given before led to: these recordings are taken for recorded ones
    assert emulate.provenance(out) is None
    capsys.readouterr()
    assert run.main(emulate_command(out)) == 2  # refused before MNIST is read
    assert "holds recordings that were not emulated here" in capsys.readouterr().err


def test_a_folder_emulated_with_anything_else_is_refused_naming_it(tmp_path):
    """EMULATED.json records what the recordings' bytes depend on (the emulator, its version, the
    seed, the MNIST files): adding to a folder whose record differs in any one of them is refused,
    naming it; the folder's own record is accepted."""
    fingerprint = {"emulator": "eggroll-snn emulate.py", "version": emulate.VERSION, "seed": 0,
                   "mnist_sha256": dict(mnist.OFFICIAL_SHA256)}
    other = {"emulator": "another emulator", "version": emulate.VERSION + 1, "seed": 1,
             "mnist_sha256": {**mnist.OFFICIAL_SHA256, mnist.NAMES[0]: "0" * 64}}
    root = tmp_path / "out" / "NMNIST"
    root.mkdir(parents=True)
    emulate.prepare(root, fingerprint)
    for key in fingerprint:
        words = emulate.setting_difference(key, fingerprint[key], other[key])
        with pytest.raises(run_folder.UsageError, match=re.escape(f"emulated otherwise ({words}); ")):
            emulate.prepare(root, {**fingerprint, key: other[key]})
    emulate.prepare(root, fingerprint)
    assert emulate.provenance(tmp_path / "out") == fingerprint


def test_emulation_writes_through_no_link_and_deletes_only_its_own_partial_files(tmp_path, capsys):
    """A link planted as NMNIST itself, NMNIST/Test or train.zip is refused and what it names is left
    as it was; a user's file that merely looks temporary (00005.bin.orig.tmp, or one that only begins
    like a partial recording) survives the clean-up."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "notes.bin.tmp").write_text("the user's")
    (foreign / "zip").write_text("the user's")
    for planted, target in (("Test", foreign), ("train.zip", foreign / "zip"), ("FINISHED.json", foreign / "zip")):
        out = tmp_path / f"out-{planted}"
        (out / "NMNIST").mkdir(parents=True)
        (out / "NMNIST" / planted).symlink_to(target)
        with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
            warnings.simplefilter("error")
            assert run.main(emulate_command(out)) == 2
        assert f"{out / 'NMNIST' / planted} is a symbolic link" in capsys.readouterr().err
    out = tmp_path / "out-NMNIST"
    out.mkdir()
    (out / "NMNIST").symlink_to(foreign)
    assert run.main(emulate_command(out)) == 2  # refused before MNIST is read
    assert f"{out / 'NMNIST'} is a symbolic link" in capsys.readouterr().err
    assert sorted(p.name for p in foreign.iterdir()) == ["notes.bin.tmp", "zip"]
    assert all(p.read_text() == "the user's" for p in foreign.iterdir())
    out = tmp_path / "out"
    mine = out / "NMNIST" / "Train" / "5" / "00005.bin.orig.tmp"
    mine.parent.mkdir(parents=True)
    mine.write_text("the user's")
    also_mine = mine.with_name("00005.bin.0f3a9c1e.tmp.orig")  # a partial recording's name, then more
    also_mine.write_text("the user's")
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out)) == 0
    assert mine.read_text() == also_mine.read_text() == "the user's"


def test_one_emulation_at_a_time_in_a_folder(tmp_path, capsys):
    """A second emulation into a folder another is writing is refused in one line, before it writes."""
    out = tmp_path / "out"
    with run_folder.owned(out / "NMNIST"):
        with warnings.catch_warnings():  # refused in one line: no warning about the MNIST files first
            warnings.simplefilter("error")
            assert run.main(emulate_command(out, "--seed", "1")) == 2
        assert "is in use by another process" in capsys.readouterr().err
    assert not list((out / "NMNIST").rglob("*.bin")) and not (out / "NMNIST" / "EMULATED.json").exists()


@pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="reads the process tree from /proc (Linux)")
def test_the_workers_end_when_the_emulation_is_killed(tmp_path):
    """kill -9 of `emulate --workers 2` leaves no worker behind: each ends once its parent is gone."""
    ROOT = Path(run.__file__).resolve().parent
    job = subprocess.Popen([sys.executable, str(ROOT / "run.py"), *emulate_command(tmp_path / "out", "--workers", "2")],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def children(pid):
        found = set()
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            found |= {int(child) for child in task.read_text().split()}
        return found
    deadline = time.monotonic() + 60
    while len(children(job.pid)) < 3 and time.monotonic() < deadline:  # 2 workers and a resource tracker
        time.sleep(0.05)
    workers = children(job.pid)
    assert len(workers) >= 2, "the pool never started"
    job.kill()
    job.wait()
    deadline = time.monotonic() + 10 * emulate.ORPHAN_CHECK + 5
    while any(Path(f"/proc/{pid}").exists() and "Z" not in Path(f"/proc/{pid}/stat").read_text().split()[2]
              for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    left = [pid for pid in workers if Path(f"/proc/{pid}").exists()
            and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"]
    assert not left, f"processes {left} outlived the killed emulation"


def test_a_stopped_pool_emulation_starts_no_more_batches(tmp_path):
    """An emulation on worker processes stopped (Ctrl-C, an error) after its first batch: the
    batches in progress finish, the queued ones never start (a stop does not mean finishing)."""
    images, labels = read_digits()["train"]
    jobs = [("train", images[i % len(labels)][None], labels[i % len(labels)][None], [i + 1], str(tmp_path))
            for i in range(200)]
    for digit in data.DIGITS:
        (tmp_path / "NMNIST" / "Train" / digit).mkdir(parents=True)
    results = emulate.run_jobs(jobs, 2, 0)
    next(results)
    results.close()
    assert len(list(tmp_path.rglob("*.bin"))) < len(jobs) // 2


def test_timestamps_at_both_ends_of_the_23_bit_range_are_kept_and_beyond_it_dropped(monkeypatch):
    """An event at t = 0 us and one at 2^23 - 1 us are written; one at 2^23 us cannot be encoded and is
    dropped (no jitter and no noise here, so the times are exactly these)."""
    monkeypatch.setattr(emulate, "JITTER_US", 0.0)
    monkeypatch.setattr(emulate, "HOT_PIXELS", [])
    emulator = emulate.Emulator(0)
    emulator.noise_rate = np.zeros_like(emulator.noise_rate)
    t_ms = np.array([0.0, (2 ** 23 - 1) / 1000, 2 ** 23 / 1000])
    x, y, polarity, t_us = emulator.noise_and_timing(np.random.default_rng(0), np.array([5, 6, 7]), t_ms,
                                                     np.array([1, 0, 1]), 0.0)
    assert t_us.tolist() == [0, 2 ** 23 - 1] and x.tolist() == [5, 6] and polarity.tolist() == [1, 0]


def test_a_rerun_that_fails_before_it_writes_leaves_a_finished_copy_finished(tmp_path, monkeypatch, capsys):
    """A rerun over a finished emulation that fails while it checks what it holds (too many open
    files, say) has added nothing: its FINISHED.json stays, and trains and evaluates go on using it."""
    monkeypatch.setattr(emulate, "BATCH", 4)
    out = tmp_path / "emulated"
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 0
    mark = out / "NMNIST" / emulate.FINISHED
    before = mark.read_bytes()

    def no_files(path):
        raise OSError(errno.EMFILE, "Too many open files")
    monkeypatch.setattr(emulate, "kept_as_made", no_files)
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 2
    assert "too many open files" in capsys.readouterr().err.lower()
    assert mark.read_bytes() == before


def test_a_rerun_stopped_midway_leaves_no_finished_mark_of_the_old_count(tmp_path, monkeypatch, capsys):
    """A finished emulation with a recording since deleted: the rerun that would restore it is
    stopped before it does. FINISHED.json, which counted the old recordings, is gone, so that no
    reader takes the folder for whole; the next rerun writes it again."""
    monkeypatch.setattr(emulate, "BATCH", 4)
    out = tmp_path / "emulated"
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 0
    assert (out / "NMNIST" / emulate.FINISHED).exists()
    (out / "NMNIST" / "Test" / "7" / "00001.bin").unlink()
    encode = emulate.encode

    def interrupted(*events):
        raise KeyboardInterrupt
    monkeypatch.setattr(emulate, "encode", interrupted)
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 130
    assert not (out / "NMNIST" / emulate.FINISHED).exists()
    monkeypatch.setattr(emulate, "encode", encode)
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1")) == 0
    assert (out / "NMNIST" / emulate.FINISHED).exists()


def test_a_damaged_finished_mark_is_refused_with_the_command_that_writes_it_again(tmp_path, capsys):
    """A FINISHED.json that is JSON but not the recordings' counts (a list, an object without them,
    a count that is not a whole number) is refused in one line naming it and the rerun that writes
    it again, as any other disagreement with the recordings is, never an error of the program."""
    out = tmp_path / "emulated"
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out)) == 0
    mark = out / "NMNIST" / emulate.FINISHED
    whole = json.loads(mark.read_text())
    for damaged in ([1, 2], {}, None, {**whole, "Test": str(whole["Test"])}, {**whole, "Train": -1},
                    {**whole, "more": 1}, {**whole, "paths_sha256": 0}):
        mark.write_text(json.dumps(damaged))
        with pytest.raises(data.BadDataError) as refused:
            emulate.check_finished(out)
        assert str(refused.value).startswith(f"{mark} is damaged (") and "rerun `python run.py emulate --out" in \
            str(refused.value), damaged
    mark.write_text(json.dumps({**whole, "Test": whole["Test"] + 1}))  # whole, but another count than the folder's
    with pytest.raises(data.BadDataError) as refused:
        emulate.check_finished(out)
    assert str(refused.value).startswith(
        f"{out / 'NMNIST'} holds {whole['Train']} train and {whole['Test']} test recordings, but its emulation "
        f"finished with {whole['Train']} train and {whole['Test'] + 1} test; rerun `python run.py emulate --out")
    capsys.readouterr()
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out)) == 0  # the rerun counts the recordings again
    assert json.loads(mark.read_text()) == whole
    emulate.check_finished(out)


def test_an_emulation_still_being_made_is_not_to_be_started_again(tmp_path):
    """Training on a folder whose emulation is running (its lock held) is told to wait for it, not
    to start the emulation again, which the running one would refuse; once it is gone, the rerun."""
    out = tmp_path / "emulated"
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out)) == 0
    (out / "NMNIST" / emulate.FINISHED).unlink()
    code = ("import sys, time, pathlib, run_folder\n"
            "with run_folder.owned(pathlib.Path(sys.argv[1])):\n"
            "    print('held', flush=True)\n"
            "    time.sleep(120)\n")
    owner = subprocess.Popen([sys.executable, "-c", code, str(out / "NMNIST")], cwd=Path(run.__file__).parent,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert owner.stdout.readline().strip() == "held"
        with pytest.raises(data.BadDataError) as refused:
            emulate.check_finished(out)
        assert str(refused.value) == (f"{out / 'NMNIST'} holds an emulation still being made (by process {owner.pid}); "
                                      f"wait for it to finish, then run again")
    finally:
        owner.kill()
        owner.wait()
    with pytest.raises(data.BadDataError, match="did not finish .*rerun `python run.py emulate"):
        emulate.check_finished(out)


def interrupted_after(recordings):
    """emulate.encode that makes `recordings` recordings, then is stopped as by Ctrl-C."""
    encode, made = emulate.encode, []

    def interrupted(*events):
        if len(made) == recordings:
            raise KeyboardInterrupt
        made.append(None)
        return encode(*events)
    return interrupted


def test_an_interrupted_emulation_is_refused_with_the_command_that_finishes_it(tmp_path, monkeypatch, capsys):
    """An emulation stopped midway (Ctrl-C after 6 recordings) is refused by training in one line
    naming the command that finishes it, not the deletion that would throw its recordings away;
    that command, given the same --mnist, keeps the 6 and makes the rest."""
    monkeypatch.setattr(emulate, "BATCH", 4)
    out, encode = tmp_path / "emulated", emulate.encode
    monkeypatch.setattr(emulate, "encode", interrupted_after(6))
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--workers", "1", "--seed", "3")) == 130
    with pytest.raises(data.BadDataError) as refused:
        emulate.check_finished(out)
    assert str(refused.value) == (
        f"{out / 'NMNIST'} holds an emulation that did not finish (no {emulate.FINISHED}); rerun `python run.py "
        f"emulate --out {out} --seed 3` (with its --mnist, if it was given one) to finish it: the recordings already "
        f"made are kept")
    assert "delete" not in str(refused.value)
    capsys.readouterr()
    assert run.main(["bench", "--data-root", str(out), "--pairs", "1", "--methods", "inference"]) == 2  # as train
    assert capsys.readouterr().err == f"error: {refused.value}\n"
    monkeypatch.setattr(emulate, "encode", encode)
    capsys.readouterr()
    with pytest.warns(UserWarning):
        assert run.main(["emulate", "--out", str(out), "--seed", "3", "--mnist", str(DIGITS), "--quiet"]) == 0
    done = json.loads(capsys.readouterr().out)
    assert done["kept"] == 6 and done["recordings"] == sum(len(indices) for indices in INDICES.values()) - 6
    emulate.check_finished(out)


def test_a_test_only_emulation_stopped_midway_is_finished_by_the_command_with_its_split(tmp_path, monkeypatch, capsys):
    """--split test stopped after 2 recordings: the command named to finish its Test split keeps --split
    test (without it, it would make the whole training split too), and that command finishes it without
    one; for its missing Train split, which training needs, the command is one emulation of both."""
    monkeypatch.setattr(emulate, "BATCH", 1)
    out, encode = tmp_path / "emulated", emulate.encode
    monkeypatch.setattr(emulate, "encode", interrupted_after(2))
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--split", "test", "--workers", "1", "--seed", "3")) == 130
    monkeypatch.setattr(emulate, "encode", encode)
    with pytest.raises(data.BadDataError, match=re.escape(f"rerun `python run.py emulate --out {out} --seed 3 --split "
                                                          f"test` (with its --mnist")):
        emulate.check_finished(out)
    assert f"`run.py emulate --out {out} --split test` (with its --mnist and --seed)" in \
        data.split_folder_problem(out / "NMNIST" / "Test")
    # training needs the Train split too: one emulation of both makes it and finishes Test
    assert f"`run.py emulate --out {out}` (with its --mnist and --seed)" in \
        data.split_folder_problem(out / "NMNIST" / "Train")
    capsys.readouterr()
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(out, "--split", "test", "--workers", "1", "--seed", "3")) == 0
    assert (out / "NMNIST" / emulate.FINISHED).exists() and not any((out / "NMNIST").glob("Train/*/*.bin"))


def test_an_emulation_of_one_split_is_not_marked_finished_while_the_other_is_unfinished(tmp_path, monkeypatch,
                                                                                        capsys):
    """--split train stopped after 3 recordings, then --split test: the test split is made, but the
    mark would count the stopped train split as whole, so it is not written; a warning names the
    command that finishes it, training refuses the folder until then, and that command finishes it."""
    monkeypatch.setattr(emulate, "BATCH", 1)
    encode = emulate.encode
    monkeypatch.setattr(emulate, "encode", interrupted_after(3))
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path, "--split", "train", "--workers", "1")) == 130
    monkeypatch.setattr(emulate, "encode", encode)
    with pytest.warns(UserWarning) as said:
        assert run.main(emulate_command(tmp_path, "--split", "test", "--workers", "1")) == 0
    assert [str(warning.message) for warning in said if "not marked finished" in str(warning.message)] == [
        f"the train split of {tmp_path / 'NMNIST'} holds 3 of its {len(INDICES['train'])} recordings (its emulation "
        f"was stopped), so the emulation is not marked finished and training refuses it; finish it with `run.py "
        f"emulate --split train --out {tmp_path}` (the same --mnist and --seed)"]
    assert not (tmp_path / "NMNIST" / emulate.FINISHED).exists()
    with pytest.raises(data.BadDataError, match="holds an emulation that did not finish") as refused:
        emulate.check_finished(tmp_path)
    # its Train split was begun: the command that finishes it is no test-only emulation's
    assert "--split test" not in str(refused.value)
    assert "--split test" not in (data.split_folder_problem(tmp_path / "NMNIST" / "Train") or "")
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path, "--split", "train", "--workers", "1")) == 0
    emulate.check_finished(tmp_path)
    assert emulate.recordings(tmp_path / "NMNIST")["Train"] == len(INDICES["train"])


def test_an_emulations_own_nmnist_folder_is_no_out(tmp_path, capsys):
    """--out naming the folder that holds a copy's Train and Test (an emulation's NMNIST folder):
    refused in one line naming the folder above it, before anything is made there (a copy nested in
    a copy, which a --data-root then reads, is what it would make)."""
    with pytest.warns(UserWarning):
        assert run.main(emulate_command(tmp_path, "--split", "test")) == 0
    copy = tmp_path / "NMNIST"
    before = files_of(copy)
    capsys.readouterr()
    assert run.main(emulate_command(copy)) == 2
    assert capsys.readouterr().err == (
        f"error: --out {copy} holds an N-MNIST copy's Train and Test folders itself, and the emulation goes into "
        f"<--out>/NMNIST, a copy inside that one; give the folder above it, {tmp_path}, or another folder\n")
    assert files_of(copy) == before and not (copy / "NMNIST").exists()


def test_two_workers_are_checked_against_free_memory(monkeypatch):
    """--workers 2 starts two processes: refused where free RAM holds one."""
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (int(1.5 * resources.EMULATE_WORKER_BYTES), None))
    with pytest.raises(run_folder.UsageError, match="--workers 2: 2 worker processes need about .* use --workers 1 or fewer"):
        resources.check_emulate_workers(2)
    monkeypatch.setattr(resources, "available_bytes", lambda xp: (resources.EMULATE_WORKER_BYTES // 2, None))
    with pytest.raises(run_folder.UsageError, match="use --workers 1 or fewer"):  # never --workers 0
        resources.check_emulate_workers(2)


@pytest.mark.parametrize("place", ["root", "cache", "inside the cache"])
def test_an_emulation_into_the_root_or_the_frame_cache_is_refused(tmp_path, capsys, monkeypatch, place):
    """--out / (what --out $UNSET/ gives) would make /NMNIST; --out the frame cache folder, or a folder
    in it, would put N-MNIST where every command then refuses the cache as a data folder: one line,
    before MNIST is read, nothing made."""
    cache = tmp_path / "cache"
    cache.mkdir()
    monkeypatch.setenv("EGGROLL_CACHE", str(cache))
    out = {"root": "/", "cache": str(cache), "inside the cache": str(cache / "emulated")}[place]
    code = run.main(["emulate", "--mnist", str(tmp_path / "absent"), "--out", out, "--quiet"])
    err = capsys.readouterr().err
    said = {"root": "/ is the file system's root, which holds everyone's files (--out $UNSET/ lands there)",
            "cache": f"{cache} is the frame cache folder {cache}, which every command would then refuse as a copy of "
                     f"N-MNIST",
            "inside the cache": f"{cache / 'emulated'} lies inside the frame cache folder {cache}, which every command "
                                f"would then refuse as a copy of N-MNIST"}[place]
    assert code == 2 and err == (f"error: {said}; give --out a folder of its own (an emulation is a copy of its own, "
                                 f"beside the others)\n"), err
    assert list(cache.iterdir()) == [] and not os.path.lexists("/NMNIST")


@pytest.mark.parametrize("inside", ["Train", "Train/3", "Test/new"])
def test_an_emulation_into_a_folder_inside_an_nmnist_copy_is_refused(tmp_path, capsys, inside):
    """--out in a split or digit folder of a copy (the sample's, here) would put an NMNIST folder among
    its recordings: one line naming the copy, before MNIST is read, and nothing written there."""
    copy = tmp_path / "copy"
    shutil.copytree(Path(__file__).resolve().parent.parent / "nmnist-sample", copy)
    before = sorted(path.relative_to(copy) for path in copy.rglob("*"))
    code = run.main(["emulate", "--mnist", str(tmp_path / "absent"), "--out", str(copy / inside), "--quiet"])
    err = capsys.readouterr().err
    assert code == 2 and err == (f"error: {copy / inside} lies inside {copy}, which holds N-MNIST (its Train and Test "
                                 f"folders): a data folder, which the project only reads; give --out a folder of its "
                                 f"own (an emulation is a copy of its own, beside the others)\n"), err
    assert sorted(path.relative_to(copy) for path in copy.rglob("*")) == before


def test_a_rerun_remakes_only_its_own_recordings_cut_short(tmp_path):
    """A recording cut short is made again only if it is the emulation's own file: a link to one, or
    one name of a hard-linked one, is someone else's too and kept as it is; a whole one is kept."""
    theirs = tmp_path / "theirs.bin"
    theirs.write_bytes(b"123")  # cut short: no whole number of 5-byte events
    own, linked, hard, whole = (tmp_path / name for name in ("own.bin", "linked.bin", "hard.bin", "whole.bin"))
    own.write_bytes(b"123")
    linked.symlink_to(theirs)
    os.link(theirs, hard)
    whole.write_bytes(b"12345")
    assert [emulate.kept_as_made(path) for path in (own, linked, hard, whole, tmp_path / "none.bin")] == \
        [False, True, True, True, False]


def test_a_recording_is_written_whole_and_never_through_a_link(tmp_path, monkeypatch):
    """A worker writes each recording through a temporary file: a write cut short (a full disk)
    leaves nothing at the recording's path and no temporary file, and a link planted there is
    refused, the file it names left as it was."""
    images, labels = read_digits()["test"]
    monkeypatch.setitem(emulate._worker, "emulator", emulate.Emulator(0))
    job = ("test", images[:1], labels[:1], [1], str(tmp_path / "out"))
    path = emulate.recording_path(tmp_path / "out", "test", labels[0], 1)
    path.parent.mkdir(parents=True)
    mine = tmp_path / "mine.bin"
    mine.write_bytes(b"mine")
    path.symlink_to(mine)
    with pytest.raises(run_folder.UsageError, match="symbolic link"):
        emulate.emulate_batch(job)
    assert mine.read_bytes() == b"mine"
    path.unlink()

    def cut_short(self, payload):  # half of it lands, then the disk is full
        with open(self, "wb") as file:
            file.write(bytes(payload)[:len(payload) // 2])
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(Path, "write_bytes", cut_short)
    with pytest.raises(run_folder.UsageError):
        emulate.emulate_batch(job)
    assert list(path.parent.iterdir()) == []


def test_a_failed_emulation_removes_the_temporary_files_of_recordings_cut_short(tmp_path, monkeypatch):
    """A worker that dies while it writes (its pool broken) leaves a recording's temporary file: the
    emulation that fails removes it before it says so, and only it (a user's file of another name,
    and the recordings made, stay)."""
    def dying(jobs, workers, seed):
        folder = tmp_path / "NMNIST" / "Test" / "7"
        (folder / "00001.bin.0123abcd.tmp").write_bytes(b"half")
        (folder / "notes.tmp").write_text("mine")
        raise RuntimeError("a process in the process pool was terminated abruptly")
        yield
    monkeypatch.setattr(emulate, "run_jobs", dying)
    with pytest.raises(RuntimeError, match="terminated abruptly"), \
            pytest.warns(UserWarning, match="differ from the official MNIST files"):
        emulate.emulate(tmp_path, DIGITS, splits=("test",), progress=False)
    assert sorted(path.name for path in (tmp_path / "NMNIST" / "Test" / "7").iterdir()) == ["notes.tmp"]


def test_the_command_that_finishes_an_emulation_quotes_its_folder(tmp_path):
    """An unfinished emulation in a folder whose name holds a space: the command named to finish it
    quotes the folder, so that it runs as pasted."""
    root = tmp_path / "my emu"
    (root / "NMNIST").mkdir(parents=True)
    (root / "NMNIST" / emulate.PROVENANCE).write_text(json.dumps({"version": 1, "seed": 4, "mnist_sha256": {}}))
    with pytest.raises(data.BadDataError) as refused:
        emulate.check_finished(root)
    assert f"rerun `python run.py emulate --out '{root}' --seed 4` (with its --mnist" in str(refused.value)


def test_the_finished_marks_digest_does_not_depend_on_the_listing_order(tmp_path, monkeypatch):
    """recordings() sorts the paths it digests: a copy on another file system, which lists a folder
    in another order, holds the same recordings and gives the same FINISHED.json."""
    for split, digit, name in (("Train", 3, "00002.bin"), ("Train", 3, "00001.bin"), ("Test", 1, "00001.bin")):
        (tmp_path / split / str(digit)).mkdir(parents=True, exist_ok=True)
        (tmp_path / split / str(digit) / name).write_bytes(b"")
    listed = emulate.recordings(tmp_path)
    glob = Path.glob
    monkeypatch.setattr(Path, "glob", lambda self, pattern: reversed(sorted(glob(self, pattern))))
    assert emulate.recordings(tmp_path) == listed
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(sorted(glob(self, pattern))))
    assert emulate.recordings(tmp_path) == listed


@pytest.mark.parametrize("call, said", [
    (lambda: emulate.Emulator(1.5), "seed must be a whole number >= 0, got 1.5"),  # recorded as 1 before
    (lambda: emulate.Emulator("0"), "seed must be a whole number >= 0, got '0'"),
    (lambda: emulate.emulate(None), "emulate takes a folder `out` and `mnist_folder` (a str or a Path; None: "
                                    "downloaded) and one or both splits of ('train', 'test'), each once, got a "
                                    "NoneType, a NoneType and ('train', 'test')"),
    (lambda: emulate.emulate("never-made", splits="train"), "emulate takes a folder `out`"),  # not ('train',)
    (lambda: emulate.emulate("never-made", 5), "emulate takes a folder `out`"),
    (lambda: emulate.emulate("never-made", splits=()), "emulate takes a folder `out`"),  # a FINISHED copy of none
    (lambda: emulate.emulate("never-made", splits=iter(["train"])), "emulate takes a folder `out`"),  # no len()
    (lambda: emulate.emulate("never-made", splits=("train", "train")), "emulate takes a folder `out`"),  # counted 2x
    (lambda: emulate.emulate("never-made", workers=0), "workers must be a whole number in 1..4096, got 0")])
def test_the_emulators_api_refuses_settings_it_cannot_keep_by_name(call, said, tmp_path, monkeypatch):
    """A fractional or text seed (which int() would have recorded as another), no folder, a split
    named as one string, no workers: one ValueError naming the fix, before any file or MNIST is read."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError) as refused:
        call()
    assert str(refused.value).startswith(said) and not any(tmp_path.iterdir())


def test_the_emulators_helpers_refuse_what_would_make_a_wrong_recording():
    """A digit of another shape or type, a shift that is no number, events beyond N-MNIST's fields
    (which would wrap into other values: x 300 written as 44), and a path of a split, label or index
    that is none: one line each, not a NaN canvas or a recording of wrong bytes."""
    digit, one = np.zeros((28, 28), np.uint8), np.array([1])
    cases = ((lambda: emulate.canvas(digit[:27, :27], 0, 0), "image must be one MNIST digit, a uint8 array (28, 28), "
              "got uint8 (27, 27)"),
             (lambda: emulate.canvas(digit.astype(float), 0, 0), "image must be one MNIST digit, a uint8 array "
              "(28, 28), got float64 (28, 28)"),
             (lambda: emulate.canvas(digit, float("nan"), 0), "dx must be an int or float in [-28, 28], got nan: use "
              "e.g. 0, no shift"),
             (lambda: emulate.encode(np.array([300]), one, one, one), "x must be integers in 0..33, N-MNIST's format, "
              "got int64 from 300 to 300"),
             (lambda: emulate.encode(one, one, np.array([2]), one), "polarity must be integers in 0..1, N-MNIST's "
              "format, got int64 from 2 to 2"),
             (lambda: emulate.encode(one, one, one, np.array([2 ** 23])), "t_us must be integers in 0..8388607, "
              "N-MNIST's format, got int64 from 8388608 to 8388608"),
             (lambda: emulate.encode(np.array([1, 2]), one, one, one), "x, y, polarity and t_us must be 1-D arrays of "
              "one length, one entry per event, got shapes (2,), (1,), (1,), (1,)"),
             (lambda: emulate.encode(np.array(["a"]), one, one, one), "x must be integers in 0..33, N-MNIST's format, "
              "got <U1"),
             (lambda: emulate.encode(one.repeat(2), one.repeat(2), one.repeat(2), np.array([5, 0])), "t_us must not "
              "decrease: a recording's events go in time order"),
             (lambda: emulate.recording_path(None, "test", 3, 1), "out must be a folder's path (a str or "
              "pathlib.Path), got a NoneType"),
             (lambda: emulate.recording_path("", "test", 3, 1), "out must be a folder's path (a str or "
              "pathlib.Path), got ''"),
             (lambda: emulate.Emulator(0).recordings(np.zeros((1, 28, 28), np.uint8), ["train"], [1]), "split must be "
              "one of 'train', 'test', got ['train']"),
             (lambda: emulate.recording_path("/tmp", "val", 3, 1), "split must be one of 'train', 'test', got 'val'"),
             (lambda: emulate.recording_path("/tmp", "test", "x", 1), "label must be a whole number in 0..9, got 'x': "
              "use 0, a digit"),
             (lambda: emulate.recording_path("/tmp", "test", 3, -3), "index must be a whole number >= 1, got -3: use "
              "1, a digit's 1-based place in its split"))
    for call, told in cases:
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == told
    assert emulate.encode(np.array([33]), np.array([0]), np.array([1]), np.array([2 ** 23 - 1])) == bytes(
        [33, 0, 0xFF, 0xFF, 0xFF])  # each field at its largest: x, y, then polarity above t's 23 bits
    assert emulate.encode([], [], [], []) == b""  # a recording without an event, as read_events reads one
    assert str(emulate.recording_path("out", "test", np.int64(3), 7)) == "out/NMNIST/Test/3/00007.bin"


def test_emulate_refuses_an_out_inside_the_mnist_folder(tmp_path, capsys):
    """The MNIST folder is the user's, only read: recordings are never written beside its files."""
    mnist_copy = tmp_path / "mnist"
    shutil.copytree(DIGITS, mnist_copy)
    before = sorted(path.name for path in mnist_copy.iterdir())
    for out in (mnist_copy, mnist_copy / "sub"):
        assert run.main(["emulate", "--mnist", str(mnist_copy), "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert err == f"error: {out} lies in the MNIST folder {mnist_copy}, which the project only reads; emulate " \
                      f"into another --out, outside it\n", err
    assert sorted(path.name for path in mnist_copy.iterdir()) == before


def test_emulate_refuses_an_out_that_is_a_file_without_advice_to_move_it(tmp_path, capsys):
    """--out at a file of the user's: one line saying it is not a folder, the file left as it was
    (never "move that file away")."""
    mine = tmp_path / "notes.md"
    mine.write_text("mine")
    assert run.main(emulate_command(mine)) == 2
    err = capsys.readouterr().err
    assert err == f"error: --out {mine} is not a folder; give a folder (the recordings go into its NMNIST/)\n", err
    assert mine.read_text() == "mine"
