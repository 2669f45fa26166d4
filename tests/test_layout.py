"""The layout's rules, checked: imports point one way (no module imports the command line, the
lesson only the method's modules and how a command ends), run.py stays a command line,
nano_eggroll.py stays one page."""
import ast
import io
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
METHOD = {"backend", "gpu", "noise", "snn", "optim", "eggroll", "snn_eggroll", "baselines", "data"}
NETWORKS = {"snn", "snn_eggroll", "baselines", "training"}  # the method's clients


def project_imports(path):
    """The project's modules that the file at `path` imports."""
    modules = {p.stem for p in ROOT.glob("*.py")}
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module.partition(".")[0])
    return names & modules


def lines_of_code(path):
    """Lines holding code: not blank, not only a comment, not in a docstring."""
    source = path.read_text()
    docstrings = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef)) and ast.get_docstring(node) is not None:
            docstrings.update(range(node.body[0].lineno, node.body[0].end_lineno + 1))
    skipped = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    code = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skipped:
            code.update(range(token.start[0], token.end[0] + 1))
    return len(code - docstrings)


def test_no_module_imports_the_command_line_and_the_lesson_imports_only_the_method():
    importers = [path.name for path in ROOT.glob("*.py") if "run" in project_imports(path)]
    assert importers == []
    assert project_imports(ROOT / "lesson.py") <= METHOD | {"exits", "figure_record", "run_folder", "emulate"}
    # and plumbing: the entry points' handler, the writers of its figures and its page, and the check that
    # an emulated copy finished (emulate.check_finished, as run.py train's)
    assert project_imports(ROOT / "nano_eggroll.py") == {"noise", "data", "exits"}
    assert "run" not in project_imports(ROOT / "exits.py")  # the entry points' one handler (exits.py)


def test_the_method_imports_no_network():
    """eggroll.py knows no network: the spiking network is one of its clients (snn_eggroll.py)."""
    assert project_imports(ROOT / "eggroll.py") & NETWORKS == set()
    assert "eggroll" in project_imports(ROOT / "snn_eggroll.py")


def test_run_py_is_a_command_line_and_nano_eggroll_one_page():
    assert len((ROOT / "run.py").read_text().splitlines()) <= 450
    assert lines_of_code(ROOT / "nano_eggroll.py") <= 150


def test_the_checks_can_fail(tmp_path):
    """The counters see what they should: an import of run, and code lines apart from a docstring."""
    sample = tmp_path / "sample.py"
    sample.write_text('"""A docstring\nof two lines."""\nimport run  # a comment\n\nfrom eggroll import x\nx = 1\n')
    assert lines_of_code(sample) == 3
    assert project_imports(sample) == {"run", "eggroll"}
    sample.write_text("import snn\n")
    assert project_imports(sample) & NETWORKS == {"snn"}
