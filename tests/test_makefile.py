"""The Makefile's targets pass the paths they are given to run.py whole, whatever characters they hold, and
`make mutation`'s copy of the project holds what its tests import."""
import ast
import os
import shlex
import shutil
import subprocess
import tomllib
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


def imported_modules(path):
    """The names of the modules a Python file imports, at its top or inside a function."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


def test_make_mutations_copy_holds_every_module_its_tests_import():
    """`make mutation` runs its pool of tests in a copy holding [tool.mutmut]'s source_paths and also_copy
    only: every project module those tests import, and every module those import in turn, is there
    (one missing fails the whole run at its first test)."""
    settings = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
    copied = set(settings["source_paths"]) | {name for name in settings["also_copy"] if name.endswith(".py")}
    waiting = [ROOT / name for name in settings["pytest_add_cli_args_test_selection"]]
    waiting += [path for path in (ROOT / "tests").glob("*.py") if not path.name.startswith("test_")]
    needed, seen = set(), set()
    while waiting:
        path = waiting.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in imported_modules(path):
            if (ROOT / f"{name}.py").exists():
                needed.add(f"{name}.py")
                waiting.append(ROOT / f"{name}.py")
    assert needed - copied == set(), f"add {sorted(needed - copied)} to [tool.mutmut]'s also_copy in pyproject.toml"
