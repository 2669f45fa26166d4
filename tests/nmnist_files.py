"""Where the tests find the real N-MNIST recordings, and writers of synthetic ones in the real
40-bit .bin format."""
import os
from pathlib import Path

import numpy as np
import pytest

# Real recordings: the copy that $EGGROLL_TEST_NMNIST names, in either layout (<dir>/NMNIST/{Train,Test}
# or <dir>/{Train,Test}), else the sample of 280 committed with the repository, so that a clone runs
# these tests too.
SAMPLE = Path(__file__).resolve().parents[1] / "nmnist-sample"
REAL_DIR = Path(os.environ.get("EGGROLL_TEST_NMNIST") or SAMPLE)
REAL_ROOT = REAL_DIR / "NMNIST" if (REAL_DIR / "NMNIST" / "Train").is_dir() else REAL_DIR
needs_real = pytest.mark.skipif(
    not ((REAL_ROOT / "Train").is_dir() and (REAL_ROOT / "Test").is_dir()),
    reason=f"no real N-MNIST (Train/ and Test/) at {REAL_DIR}; set EGGROLL_TEST_NMNIST to a copy")


def encode_events(x, y, t, p):
    """Bytes of events: byte0 = x, byte1 = y, byte2 = p << 7 | t >> 16, byte3, byte4 = low bits of t."""
    x, y, t, p = (np.asarray(a, dtype=np.int64) for a in (x, y, t, p))
    raw = np.stack([x, y, p << 7 | (t >> 16) & 0x7F, (t >> 8) & 0xFF, t & 0xFF], axis=1)
    return raw.astype(np.uint8).tobytes()


def write_recording(path, x, y, t, p):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(encode_events(x, y, t, p))


def random_events(rng, n_events, duration=300_000):
    """n_events random events with sorted timestamps in [0, duration]."""
    t = np.sort(rng.integers(0, duration + 1, n_events))
    return rng.integers(0, 34, n_events), rng.integers(0, 34, n_events), t, rng.integers(0, 2, n_events)


def write_dataset(base, n_train, n_test, seed=0, n_events=60):
    """
    Random recordings in <base>/Train/<digit>/NNNNN.bin and <base>/Test/...: n_train (n_test)
    per class, numbered from 1 across classes as in N-MNIST. Returns base.
    """
    rng = np.random.default_rng(seed)
    for split, n_per_class in (("Train", n_train), ("Test", n_test)):
        for i in range(10 * n_per_class):
            path = base / split / str(i % 10) / f"{i + 1:05d}.bin"
            write_recording(path, *random_events(rng, n_events))
    return base
