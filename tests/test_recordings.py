"""Recordings and folders that are not what they should be: each refused in one line naming the
entry and what to do, before anything is decoded or allocated (data.list_recordings, read_events)."""
import os
import re
import warnings

import numpy as np
import pytest

import data
from nmnist_files import encode_events, random_events


def load(root, cache):
    return data.load_nmnist(root, cache_dir=cache, progress=False)


def test_an_entry_that_is_not_what_it_should_be_is_named_before_anything_is_read(root, tmp_path, no_download):
    """One line naming the entry and what to do, before anything is decoded or allocated: a
    recording of gigabytes (a sparse file), a link that leads back to itself as a recording or a
    digit folder, a folder named *.bin, a Test folder that is a link to Train, and a split whose
    every recording is empty. A recording whose name is not UTF-8 is read like any other."""
    train, test = root / "NMNIST" / "Train", root / "NMNIST" / "Test"
    huge = train / "4" / "huge.bin"
    with open(huge, "wb") as file:
        file.truncate(5 * 10**9)
    loop = train / "0" / "loop.bin"
    digit, aside = train / "3", tmp_path / "aside"  # (a Test folder put aside in tmp_path would make it a copy)
    aside.mkdir()
    cases = [(lambda: None, lambda: huge.unlink(),
              f"{huge}: 5,000,000,000 bytes, more than any N-MNIST recording (at most 3,576,000 bytes are read)"),
             (lambda: loop.symlink_to("loop.bin"), lambda: loop.unlink(),
              f"cannot read the recording {loop}: Too many levels of symbolic links; a symbolic link on that path "
              f"leads back to itself: replace the link"),
             (lambda: (digit.rename(aside / "3"), digit.symlink_to("3")),
              lambda: (digit.unlink(), (aside / "3").rename(digit)),
              f"cannot read the class folder {digit}: Too many levels of symbolic links"),
             (lambda: (train / "0" / "x.bin").mkdir(), lambda: (train / "0" / "x.bin").rmdir(),
              f"{train / '0' / 'x.bin'} is a folder, not a recording; move it out of {train / '0'}"),
             (lambda: (test.rename(aside / "Test"), test.symlink_to("Train")),
              lambda: (test.unlink(), (aside / "Test").rename(test)), f"{test} and {train} share recordings")]
    for make, undo, message in cases:
        make()
        with pytest.raises(data.BadDataError) as error:
            load(root, tmp_path / "cache")
        assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
        undo()
    name = os.fsencode(train / "0") + b"/\xff.bin"
    with open(name, "wb") as file:
        file.write(encode_events(*random_events(np.random.default_rng(1_000), 60)))  # not a copy of another
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nmnist = load(root, tmp_path / "cache")
    assert len(nmnist.train) + len(nmnist.val) == 101
    for path in train.rglob("*.bin"):
        path.write_bytes(b"")
    with pytest.raises(data.BadDataError, match=re.escape(f"every one of the 101 recordings in {train} is empty")):
        load(root, tmp_path / "cache")


def test_one_recording_reached_by_two_names_within_a_split_is_refused(root, tmp_path, no_download):
    """A digit folder that is a link to another digit's, or a recording linked under a second label
    or a second name: one line naming both, not a split trained and scored with wrong labels."""
    train, test = root / "NMNIST" / "Train", root / "NMNIST" / "Test"
    recording = sorted((train / "2").glob("*.bin"))[0]
    cases = [(lambda: (test / "3").rename(tmp_path / "3"), lambda: (test / "3").symlink_to("5"),
              lambda: ((test / "3").unlink(), (tmp_path / "3").rename(test / "3")),
              f"{test / '3'} and {test / '5'} share recordings"),
             (lambda: None, lambda: os.link(recording, train / "7" / "99999.bin"),
              lambda: (train / "7" / "99999.bin").unlink(),
              f"{train / '2'} and {train / '7'} share recordings ({train / '7' / '99999.bin'} is {recording}): a "
              f"recording has one label"),
             (lambda: None, lambda: os.link(recording, train / "2" / "99999.bin"),
              lambda: (train / "2" / "99999.bin").unlink(), f"{train / '2'} holds one recording under two names")]
    for keep, make, undo, message in cases:
        keep()
        make()
        with pytest.raises(data.BadDataError) as error:
            load(root, tmp_path / "cache")
        assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
        undo()
    assert len(load(root, tmp_path / "cache").test) == len(list(test.rglob("*.bin")))


def test_a_digit_missing_from_an_emulated_copy_is_to_be_emulated_not_restored_from_n_mnist(root, tmp_path,
                                                                                           no_download):
    """An empty digit folder is restored from N-MNIST's zip in a recorded copy; in an emulated one
    (its EMULATED.json beside the splits) it is emulated from MNIST files that hold every digit."""
    test = root / "NMNIST" / "Test"
    for recording in (test / "3").glob("*.bin"):
        recording.unlink()
    for emulated, fix in ((False, "restore them from test.zip of N-MNIST"),
                          (True, "emulate a copy from MNIST files that hold every digit")):
        if emulated:  # a finished emulation (one that did not finish is to be finished: test_data.py)
            (root / "NMNIST" / "EMULATED.json").write_text("{}")
            (root / "NMNIST" / "FINISHED.json").write_text('{"Train": 5, "Test": 5}')
        with pytest.raises(data.MissingDataError) as error:
            load(root, tmp_path / "cache")
        message = str(error.value)
        assert message.startswith(f"class folder {test / '3'} holds no .bin recordings; ") and fix in message \
            and ("zip" in message) is not emulated, message
