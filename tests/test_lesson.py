"""lesson.py runs headless as a script: on the real recordings it checks its five claims, prints one
line of numbers for each and writes one figure for each; without them it stops at once, exit status 2."""
import os
import subprocess
import sys
from pathlib import Path

from nmnist_files import REAL_DIR, needs_real

LESSON = Path(__file__).resolve().parents[1] / "lesson.py"
FIGURES = ["1_lowrank_scale.png", "2_forward_trick.png", "3_gradient_cosine.png", "4_memory_time.png",
           "5_training.png"]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def run_lesson(*options, cache):
    """The lesson in a fresh process, its frame cache in `cache` (not the user's)."""
    return subprocess.run([sys.executable, str(LESSON), *options], cwd=LESSON.parent, capture_output=True,
                          text=True, timeout=900, env=dict(os.environ, EGGROLL_CACHE=str(cache)))


@needs_real
def test_lesson_checks_every_claim_and_writes_every_figure(tmp_path):
    """Exit status 0 (every claim's assert held), one printed line per claim, and each figure a
    non-empty PNG in --out, nothing else there."""
    out = tmp_path / "figures"
    result = run_lesson("--out", str(out), "--data-root", str(REAL_DIR), cache=tmp_path / "cache")
    assert result.returncode == 0, result.stderr[-3000:]
    claims = [line for line in result.stdout.splitlines() if line.startswith("claim ")]
    assert [line.split(":")[0] for line in claims] == [f"claim {k}" for k in range(1, 6)], result.stdout
    assert sorted(path.name for path in out.iterdir()) == FIGURES
    for name in FIGURES:
        content = (out / name).read_bytes()
        assert content.startswith(PNG_SIGNATURE) and len(content) > 10_000, name


def test_lesson_without_the_recordings_stops_at_once(tmp_path):
    """A --data-root with no N-MNIST: one line on stderr naming it, exit status 2, no figure."""
    absent = tmp_path / "absent"
    result = run_lesson("--out", str(tmp_path / "figures"), "--data-root", str(absent), cache=tmp_path / "cache")
    assert result.returncode == 2
    assert result.stderr.startswith(f"error: --data-root {absent} holds no N-MNIST") \
        and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == "" and not (tmp_path / "figures").exists()
