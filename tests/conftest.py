"""Shared test set-up: the project root on sys.path and a derandomized hypothesis profile."""
import os
import sys
from pathlib import Path

from hypothesis import settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

# Every run draws the same examples, so statistical tests with fixed seeds never flake.
settings.register_profile("deterministic", derandomize=True, deadline=None, print_blob=True)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "deterministic"))
