"""Shared test set-up: the project root on sys.path and its modules compiled, a derandomized hypothesis
profile, and the fixtures of the data tests (a small synthetic N-MNIST copy; downloads forbidden)."""
import compileall
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

# The project's modules compiled once, before any test: the suite starts Python processes by the
# hundred, and where PYTHONDONTWRITEBYTECODE is set (Python then writes no bytecode of its own) each
# would compile every module it imports afresh, a fifth of the suite's time.
for folder in (ROOT, ROOT / "examples", ROOT / "tests"):
    compileall.compile_dir(folder, maxlevels=0, quiet=1)

# `mutmut run` records which tests reach each function with MUTANT_UNDER_TEST=stats (make mutation): a
# script a test starts in another folder would inherit it and fail to find the [tool.mutmut] it records
# by. Such a script runs the project's own code instead; this process keeps recording (mutmut holds
# its mode in memory too), and a mutant under test still reaches the scripts.
if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    del os.environ["MUTANT_UNDER_TEST"]

import data  # noqa: E402  (after the path)
from nmnist_files import write_dataset  # noqa: E402

# Every run draws the same examples, so statistical tests with fixed seeds never flake.
settings.register_profile("deterministic", derandomize=True, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))


@pytest.fixture
def root(tmp_path):
    """A small copy in the official layout: 10 train and 2 test recordings per class."""
    return write_dataset(tmp_path / "data" / "NMNIST", n_train=10, n_test=2).parent


@pytest.fixture
def no_download(monkeypatch):
    def fail(root):
        raise AssertionError("download attempted")
    monkeypatch.setattr(data, "_download", fail)


# The runs of the command-line tests: a few generations of a tiny population, quietly.
SMALL = ["--population", "8", "--batch-size", "16", "--eval-every", "5", "--quiet"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """The options of a small synthetic copy (10 training and 1 test recording of random events per
    class) and a cache folder; test_run.py has a larger one of its own."""
    base = tmp_path_factory.mktemp("nmnist")
    write_dataset(base, n_train=10, n_test=1, n_events=300)
    return ["--data-root", str(base), "--cache-dir", str(tmp_path_factory.mktemp("cache"))]  # not in the copy
