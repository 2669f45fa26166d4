"""The Makefile's targets pass the paths they are given to run.py whole, whatever characters they hold."""
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_a_path_with_spaces_or_quotes_reaches_run_py_as_one_argument():
    real, mnist = "/tmp/real copy/it's", "/tmp/mnist files"
    alone = {name: value for name, value in os.environ.items() if name not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL")}
    shown = subprocess.run(["make", "-n", "-o", ".venv/.installed", "reproduce-quick", f"REAL_ROOT={real}",
                            f"MNIST_ROOT={mnist}"], cwd=ROOT, capture_output=True, text=True, check=True,
                           env=alone).stdout  # as a user types it, not as a sub-make of `make test` (which adds lines)
    words = shlex.split(next(line for line in shown.splitlines() if "run.py reproduce" in line))
    assert words[words.index("--real-root") + 1] == real and words[words.index("--mnist") + 1] == mnist, shown
