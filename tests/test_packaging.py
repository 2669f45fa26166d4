"""The install brings the dependencies only: none of the project's modules (config.py, data.py,
run.py, ...) is importable outside the project's folder, where their plain names would shadow a
user's own files; in the folder, `python run.py` and `import run` find them there."""
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MODULES = sorted(path.stem for path in ROOT.glob("*.py"))

# Where each name would be found and the folders on sys.path, as JSON.
FIND = """import importlib.util, json, sys
found = {}
for name in sys.argv[1:]:
    spec = importlib.util.find_spec(name)
    found[name] = None if spec is None else [spec.origin, list(spec.submodule_search_locations or [])]
print(json.dumps({"found": found, "path": [p for p in sys.path if p]}))
"""


def interpreters():
    """The interpreter running the tests and the project's .venv one, where it has one."""
    found = [Path(sys.executable)]
    venv = ROOT / ".venv" / "bin" / "python"
    if venv.exists() and venv.resolve() != found[0].resolve():
        found.append(venv)
    return found


def find(python, cwd, names):
    """What `python`, started in `cwd` with no PYTHON* settings, finds for each name."""
    clean = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    done = subprocess.run([str(python), "-c", FIND, *names], cwd=cwd, env=clean, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def inside_project(location):
    return location is not None and Path(location).resolve().is_relative_to(ROOT)


def test_the_modules_are_not_importable_outside_the_project(tmp_path):
    """From another folder, no project module name resolves to the project (a name may belong to
    another installed package: only where it would be found matters), and no folder on sys.path
    is the project's (no .pth file of an install points there)."""
    assert {"run", "config", "data", "noise", "comparison", "exits", "lesson"} <= set(MODULES)
    for python in interpreters():
        seen = find(python, tmp_path, MODULES)
        leaks = {name: spec for name, spec in seen["found"].items()
                 if spec is not None and any(inside_project(place) for place in [spec[0], *spec[1]])}
        assert not leaks, f"{python} imports the project's modules from outside it: {leaks}"
        on_path = [entry for entry in seen["path"] if Path(entry).resolve() == ROOT]
        assert not on_path, f"{python} has the project's folder on sys.path: {on_path}"


def test_the_modules_are_imported_from_the_project_folder():
    """In the project's folder every module is found there, and `import run` works."""
    seen = find(sys.executable, ROOT, MODULES)
    assert all(spec is not None and Path(spec[0]) == ROOT / f"{name}.py"
               for name, spec in seen["found"].items()), seen["found"]
    clean = {key: value for key, value in os.environ.items() if not key.startswith("PYTHON")}
    done = subprocess.run([sys.executable, "-c", "import run; print(run.__file__)"], cwd=ROOT, env=clean,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert Path(done.stdout.strip()) == ROOT / "run.py"
