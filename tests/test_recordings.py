"""Recordings and folders that are not what they should be: each refused in one line naming the
entry and what to do, before anything is decoded or allocated (data.list_recordings, read_events)."""
import os
import re

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
    digit = train / "3"
    cases = [(lambda: None, lambda: huge.unlink(),
              f"{huge}: 5,000,000,000 bytes, more than any N-MNIST recording (at most 3,576,000 bytes are read)"),
             (lambda: loop.symlink_to("loop.bin"), lambda: loop.unlink(),
              f"cannot read the recording {loop}: Too many levels of symbolic links; a symbolic link on that path "
              f"leads back to itself: replace the link"),
             (lambda: (digit.rename(tmp_path / "3"), digit.symlink_to("3")),
              lambda: (digit.unlink(), (tmp_path / "3").rename(digit)),
              f"cannot read the class folder {digit}: Too many levels of symbolic links"),
             (lambda: (train / "0" / "x.bin").mkdir(), lambda: (train / "0" / "x.bin").rmdir(),
              f"{train / '0' / 'x.bin'} is a folder, not a recording; move it out of {train / '0'}"),
             (lambda: (test.rename(tmp_path / "Test"), test.symlink_to("Train")),
              lambda: (test.unlink(), (tmp_path / "Test").rename(test)), f"{test} and {train} share recordings")]
    for make, undo, message in cases:
        make()
        with pytest.raises(data.BadDataError) as error:
            load(root, tmp_path / "cache")
        assert message in str(error.value) and "\n" not in str(error.value), str(error.value)
        undo()
    name = os.fsencode(train / "0") + b"/\xff.bin"
    with open(name, "wb") as file:
        file.write(encode_events(*random_events(np.random.default_rng(0), 60)))
    nmnist = load(root, tmp_path / "cache")
    assert len(nmnist.train) + len(nmnist.val) == 101
    for path in train.rglob("*.bin"):
        path.write_bytes(b"")
    with pytest.raises(data.BadDataError, match=re.escape(f"every one of the 101 recordings in {train} is empty")):
        load(root, tmp_path / "cache")
