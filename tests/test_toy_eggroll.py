"""The toy of docs/derivation.md: EGGROLL's own functions climb a quadratic on an 8 x 6 matrix, and
the step has the mean the derivation says. Each mean is over 2,000 independent generations at
W = 0, compared entry by entry within 5 of its standard errors."""
import hashlib
import math
import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import exits
import optim
import toy_eggroll as toy_module
from toy_eggroll import Toy, cosine, mean_step, optimum, ranked_step_length, train

ROOT = Path(__file__).resolve().parents[1]
DRAWS = 2000
RECORD = ".toy-figures.sha256"  # the sha256 of each figure the toy drew in a folder, beside them (figure_record.py)


@pytest.mark.parametrize("rank", [1, 4, None])
def test_the_toy_climbs_to_the_known_optimum(rank):
    """300 generations of Adam up the centred-rank step from W = 0 close ||W - W*||^2 at least
    100-fold (rank 1 measured 568-fold, full rank 262-fold)."""
    theta, distances, _ = train(replace(Toy(), rank=rank), generations=300)
    assert distances[0] == pytest.approx((optimum(1) ** 2).sum())
    assert distances[-1] <= distances[0] / 100, distances[::50]
    assert np.allclose(((theta - optimum(1)) ** 2).sum(), distances[-1])


def test_a_run_settles_where_adams_memory_and_the_learning_rate_put_it():
    """derivation-further's account of the toy's floor: after the dip ||W - W*||^2 rises as Adam's
    divisor sqrt(mean_square) forgets the climb (more than twice the dip's level from generation 1000
    on, the divisor falling by half), sooner with a memory of 100 generations (0.99) than of 1,000,
    and to a level set by the learning rate (below half of it at half the rate); the divisor is
    Adam's own, as optim's state holds it."""
    toy = Toy()
    _, distances, divisors = train(toy, 1200)
    _, short_memory, _ = train(toy, 1200, keep2=0.99)
    _, half_lr, _ = train(replace(toy, lr=toy.lr / 2), 1200)
    settled = distances[1000:].mean()
    assert settled > 2 * distances[150] and divisors[-1] < divisors[9] / 2, (distances[150], settled, divisors[9])
    assert short_memory[300] > 2 * distances[300], (short_memory[300], distances[300])
    assert half_lr[1000:].mean() < settled / 2, (half_lr[1000:].mean(), settled)
    params, state = {"W": np.zeros((8, 6))}, optim.init({"W": np.zeros((8, 6))})
    g, _ = toy_module.step(params["W"], optimum(1), toy, 0)
    _, state = optim.ascend(params, {"W": g}, state, optim.Adam(toy.lr))
    _, _, first = train(toy, 1)
    assert first[0] == pytest.approx(math.sqrt(state["v"]["W"].mean() / (1 - 0.999)))


def test_full_rank_settles_closer_although_rank_1_leads_at_300():
    """derivation-further's 'one of timing', on three seeds: rank 1 closer at generation 300, full
    rank closer on average from generation 1000 to 2000 (the toy prints ten)."""
    for seed in (1, 2, 3):
        rank1, full = (train(replace(Toy(), seed=seed, rank=rank), 2000)[1] for rank in (1, None))
        assert rank1[300] < full[300] and full[1000:].mean() < rank1[1000:].mean(), seed


@pytest.mark.parametrize("rank", [1, 2, None])
def test_raw_differences_give_the_true_gradient_on_average(rank):
    """Fed the raw antithetic differences F(W + sigma E) - F(W - sigma E) (exactly 2 sigma <G, E>
    on a quadratic), Eq. (7) at every rank, and Eq. (10), is unbiased: its mean is G = W* - W."""
    target, theta = optimum(1), np.zeros(toy_module.SHAPE)
    mean, error = mean_step(theta, target, replace(Toy(), rank=rank), DRAWS, ranked=False)
    assert np.all(np.abs(mean - (target - theta)) <= 5 * error), np.abs(mean - target).max()


@pytest.mark.parametrize("name", ["entry", "norm"])
@pytest.mark.parametrize("rank", [1, 2, None])
def test_off_a_quadratic_the_low_rank_step_is_biased_as_derived(rank, name):
    """On the quartics F = -1/4 sum W^4 and F = -1/4 |W|^4 the mean raw-difference step is the
    exact expression of E's fourth moments (quartic_means): the smoothed gradient with full-rank
    noise, away from it with rank-r noise (its entries' tails, and on the norm quartic also the
    entries that share a factor), every entry within 5 standard errors of that, and at rank 1 and
    2 far from the smoothed gradient."""
    sigma, fitness = 0.5, {"entry": toy_module.entry_quartic, "norm": toy_module.norm_quartic}[name]
    draws = dict(pairs=500, draws=100) if name == "entry" else dict(pairs=1000, draws=200)  # noisier
    theta, mean, error = toy_module.quartic_steps(replace(Toy(), rank=rank), fitness, sigma, **draws)
    smoothed, predicted = (toy_module.quartic_means(theta, sigma, r)[name] for r in (None, rank))
    assert np.all(np.abs(mean - predicted) <= 5 * error), (np.abs(mean - predicted) / error).max()
    if rank:  # with no bias the standardised distance would be about sqrt(48) = 6.9, give or take 0.7
        assert np.linalg.norm((mean - smoothed) / error) > 2.5 * math.sqrt(mean.size)


@pytest.mark.parametrize("scale", [1, 3])
def test_centred_ranks_step_along_the_gradient_at_a_length_of_their_own(scale):
    """With centred ranks the mean step of Gaussian noise is kappa_P / (2 sigma) along G/||G|| where
    F is nearly linear over the population: its length does not follow ||G|| (W* tripled, the same
    length). Rank-1 noise makes it shorter; its cosine with G stays above 0.99."""
    target, theta = scale * optimum(1), np.zeros(toy_module.SHAPE)
    unit = target / np.linalg.norm(target)
    mean, error = mean_step(theta, target, replace(Toy(), rank=None), DRAWS)
    assert np.all(np.abs(mean - ranked_step_length(8, 0.1) * unit) <= 5 * error)
    lowrank_mean, _ = mean_step(theta, target, Toy(), DRAWS)
    assert cosine(lowrank_mean, target) > 0.99


def test_the_ranked_length_formula_tends_to_one_over_root_pi():
    assert ranked_step_length(1, 0.5) == pytest.approx(math.sqrt(2 / math.pi))  # one pair: E|z|
    assert ranked_step_length(10 ** 6, 0.5) == pytest.approx(1 / math.sqrt(math.pi), rel=1e-5)


def run_toy(*options, cwd):
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    return subprocess.run([sys.executable, str(ROOT / "toy_eggroll.py"), *options], cwd=cwd, capture_output=True,
                          text=True, timeout=300, env={**clean, "MPLCONFIGDIR": str(cwd / ".matplotlib")})


def sha256(path):
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def test_its_command_draws_the_figure_and_says_user_errors_in_one_line(tmp_path):
    """The toy replaces a figure it drew before (one whose sha256 the record beside it, .toy-figures.sha256,
    holds), and the record then holds the new one's; a user's file at --out, a PNG too, is refused
    in one line before any work and left as it is, as is a record that is not one; the staircase's
    figure, drawn beside it (its name's stem + -staircase), is held alike."""
    drawn_before = (ROOT / "docs" / "lesson" / "1_lowrank_scale.png").read_bytes()  # another figure
    (tmp_path / "toy.png").write_bytes(drawn_before)
    (tmp_path / RECORD).write_text(f"{sha256(tmp_path / 'toy.png')}  toy.png\n{'0' * 64}  other.png\n")
    result = run_toy("--out", "toy.png", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert "EGGROLL r = 1: ||W - W*||^2 from 37.74" in result.stdout, result.stdout
    pages = "".join((ROOT / "docs" / name).read_text() for name in ("derivation.md", "derivation-further.md"))
    for line in result.stdout.splitlines()[:-1]:  # the derivation's two pages quote what the toy prints
        assert f"\n    {line}\n" in pages, line
    drawn = (tmp_path / "toy.png").read_bytes()
    assert drawn.startswith(b"\x89PNG\r\n\x1a\n") and drawn != drawn_before
    assert (tmp_path / "toy-staircase.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
    record = sorted(f"{digest}  {name}\n" for digest, name in (
        ("0" * 64, "other.png"), (sha256(tmp_path / "toy.png"), "toy.png"),
        (sha256(tmp_path / "toy-staircase.png"), "toy-staircase.png")))
    assert sorted((tmp_path / RECORD).read_text().splitlines(keepends=True)) == record
    (tmp_path / "notes.png").write_text("mine")
    (tmp_path / "photo.png").write_bytes(drawn_before)  # a PNG the toy did not draw there
    (tmp_path / "lesson.png").write_bytes(drawn_before)  # a figure the lesson or the report drew, in their record
    (tmp_path / "mine-staircase.png").write_text("mine")  # where --out mine.png would draw the staircase
    (tmp_path / ".figures.sha256").write_text(f"{sha256(tmp_path / 'lesson.png')}  lesson.png\n")
    refused = "is a file this command did not write (not a figure the toy drew: its .toy-figures.sha256 does not " \
              "hold it): it is left as it is; give another --out"
    for options, fragment in ((["--outt", "x.png"], "unrecognized arguments"),
                              (["--out", "."], ". is a folder: give the path of a .png file to draw the figure in, e.g. ./figure.png"),
                              (["--out", ""], "expected the path of a .png file to draw the figure in, got ''"),
                              (["--out", "photo.png"], f"photo.png {refused}"),
                              (["--out", "lesson.png"], f"lesson.png {refused}"),
                              (["--out", "notes.png"], f"notes.png {refused}"),
                              (["--out", "mine.png"], f"mine-staircase.png {refused}")):
        result = run_toy(*options, cwd=tmp_path)
        assert result.returncode == 2 and result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, \
            result.stderr
        assert fragment in result.stderr and "Traceback" not in result.stderr and result.stdout == ""
    assert sorted(path.name for path in tmp_path.iterdir()) == [".figures.sha256", ".matplotlib", RECORD, "lesson.png",
                                                                "mine-staircase.png", "notes.png", "photo.png",
                                                                "toy-staircase.png", "toy.png"]
    assert (tmp_path / "lesson.png").read_bytes() == drawn_before
    assert (tmp_path / "notes.png").read_text() == "mine" and (tmp_path / "photo.png").read_bytes() == drawn_before
    assert (tmp_path / "toy.png").read_bytes() == drawn and (tmp_path / "mine-staircase.png").read_text() == "mine"
    assert sorted((tmp_path / RECORD).read_text().splitlines(keepends=True)) == record
    (tmp_path / RECORD).write_text("mine\n")
    result = run_toy("--out", "new.png", cwd=tmp_path)
    assert result.returncode == 2 and result.stderr == (
        f"error: {RECORD} is not the record of the figures drawn there (\"<sha256>  <figure>\" lines): it is left "
        f"as it is; give another --out\n"), result.stderr
    assert (tmp_path / RECORD).read_text() == "mine\n" and not (tmp_path / "new.png").exists()


def test_the_committed_figure_is_the_toys_own_in_its_record():
    """`make derivation` redraws docs/derivation.png and docs/derivation-staircase.png:
    docs/.toy-figures.sha256 holds both, so they are replaced, not refused as a user's."""
    figures = sorted(f"{sha256(ROOT / 'docs' / name)}  {name}\n"
                     for name in ("derivation.png", "derivation-staircase.png"))
    assert sorted((ROOT / "docs" / RECORD).read_text().splitlines(keepends=True)) == figures


@pytest.mark.parametrize("out", ["x.txt", "notes.md", "figure.png.bak", "figure"])
def test_a_figure_path_not_ending_in_png_is_refused(tmp_path, out):
    """--out names the PNG file the figure is drawn in: a path of another kind (x.txt), as a folder
    is, is one line, exit status 2, before any work, nothing written."""
    result = run_toy("--out", out, cwd=tmp_path)
    assert result.returncode == 2 and result.stdout == "" and result.stderr == (
        f"error: argument --out: expected the path of a .png file to draw the figure in, got {out!r}; see "
        f"toy_eggroll.py --help\n"), result.stderr
    assert [path.name for path in tmp_path.iterdir() if path.name != ".matplotlib"] == []  # matplotlib's own


def test_a_closed_standard_output_is_one_line_and_the_figure_stays_whole(tmp_path):
    """`toy_eggroll.py | true`: the reader gone before the toy prints; exit status 141, one line."""
    clean = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    process = subprocess.Popen([sys.executable, str(ROOT / "toy_eggroll.py"), "--out", "toy.png"], cwd=tmp_path,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env={**clean, "MPLCONFIGDIR": str(tmp_path / ".matplotlib")})
    process.stdout.close()
    err = process.communicate(timeout=300)[1].decode()
    assert process.returncode == 141 and err == "error: standard output was closed\n", err
    assert (tmp_path / "toy.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")


def test_a_ctrl_c_says_what_it_leaves_written(tmp_path, monkeypatch, capsys):
    """Ctrl-C before the figure is drawn: nothing was written. During the checks that follow it: the
    figure is there, whole, and the line says so rather than "nothing was written"."""
    monkeypatch.setattr(toy_module, "DRAWN", [])

    def interrupted(*_):
        raise KeyboardInterrupt
    monkeypatch.setattr(toy_module, "figure_numbers", interrupted)
    assert exits.handled(lambda: toy_module.main(["--out", str(tmp_path / "early.png")]),
                         toy_module.after_interruption) == 130
    assert capsys.readouterr().err == "error: interrupted; nothing was written; run it again\n"
    assert not (tmp_path / "early.png").exists()
    monkeypatch.undo()
    monkeypatch.setattr(toy_module, "DRAWN", [])
    monkeypatch.setattr(toy_module, "checks", interrupted)
    out = tmp_path / "toy.png"
    assert exits.handled(lambda: toy_module.main(["--out", str(out)]), toy_module.after_interruption) == 130
    stairs = tmp_path / "toy-staircase.png"
    assert capsys.readouterr().err.splitlines()[-1] == (f"error: interrupted; the figures are in {out} and {stairs}, "
                                                        f"the checks after them cut short; run it again for them")
    assert out.read_bytes().startswith(b"\x89PNG\r\n\x1a\n") and stairs.read_bytes().startswith(b"\x89PNG")
    monkeypatch.undo()
    monkeypatch.setattr(toy_module, "DRAWN", [])
    monkeypatch.setattr(toy_module, "draw_staircase_figure", interrupted)
    later = tmp_path / "later.png"
    assert exits.handled(lambda: toy_module.main(["--out", str(later)]), toy_module.after_interruption) == 130
    assert capsys.readouterr().err.splitlines()[-1] == (f"error: interrupted; the figure is in {later}, the "
                                                        f"staircase's figure not drawn and the checks not made; "
                                                        f"run it again for them")
    assert later.exists() and not (tmp_path / "later-staircase.png").exists()


@pytest.mark.parametrize("theta, sigma", [(1.2, 0.1), (1.2, 0.6), (-0.4, 0.3), (2.2, 1.0)])
def test_the_staircase_is_smoothed_as_derived_and_es_finds_the_slope(theta, sigma):
    """J of the staircase, in closed form, is the mean of F over 400,000 Gaussian draws around theta;
    J' is J's own central difference; ES's raw-difference estimate of J' from 100,000 pairs lies
    within 5 standard errors of it; F itself is flat at theta."""
    eps = np.random.default_rng(4).standard_normal(400_000)
    samples = toy_module.staircase(theta + sigma * eps)
    value, slope = toy_module.smoothed_staircase(theta, sigma)
    assert abs(value - samples.mean()) <= 5 * samples.std() / math.sqrt(eps.size)
    after, before = (toy_module.smoothed_staircase(theta + h, sigma)[0] for h in (1e-5, -1e-5))
    assert slope == pytest.approx((after - before) / 2e-5, abs=1e-4)
    pairs = 100_000
    draws = np.random.default_rng(5).standard_normal(pairs)
    each = (toy_module.staircase(theta + sigma * draws) - toy_module.staircase(theta - sigma * draws)) * draws \
        / (2 * sigma)
    assert abs(toy_module.staircase_slopes(theta, sigma, pairs, seed=5)[1] - slope) <= 5 * each.std() / math.sqrt(pairs)
    assert toy_module.staircase(theta + 1e-3) == toy_module.staircase(theta - 1e-3)


@pytest.mark.parametrize("name", ["a\nb.png", "a\rb.png"])
def test_a_figure_name_with_a_line_break_is_refused_before_any_work(tmp_path, name):
    """The record of the figures holds one line a figure: a name holding a line break (a newline, or
    a carriage return, which the record's lines cannot hold either) could not be read back, so it is
    refused in one line, nothing written (the figure, the record)."""
    done = subprocess.run([sys.executable, str(ROOT / "toy_eggroll.py"), "--out", str(tmp_path / name)],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "a figure's name holds a line break" in done.stderr and list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("inside", [".", "Train/3"])
def test_the_toy_never_draws_inside_an_nmnist_copy(tmp_path, inside):
    """A figure among recordings (the copy itself, a digit folder): refused in one line before any
    work, nothing written there."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "nmnist-sample", copy)
    before = sorted(copy.rglob("*"))
    folder = copy / inside if inside != "." else copy
    done = subprocess.run([sys.executable, str(ROOT / "toy_eggroll.py"), "--out", str(folder / "toy.png")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    where = "holds" if inside == "." else f"lies inside {copy}, which holds"
    a_data_folder = "it is a data folder" if inside == "." else "a data folder"  # the copy itself, or the copy
    assert done.returncode == 2 and done.stderr == (f"error: {folder} {where} N-MNIST (its Train and Test folders): "
                                                    f"{a_data_folder}, which the project only reads; give another "
                                                    f"--out\n")
    assert sorted(copy.rglob("*")) == before


@pytest.mark.parametrize("inside", [".", "figures"])
def test_the_toy_never_draws_in_a_run_folder(tmp_path, inside):
    """A figure in a run folder (it holds the project's mark), or a folder inside one: refused in one
    line before any work, nothing written there."""
    run = tmp_path / "run"
    (run / "figures").mkdir(parents=True)
    (run / ".eggroll-run").write_text("a run folder")
    folder = run / inside if inside != "." else run
    done = subprocess.run([sys.executable, str(ROOT / "toy_eggroll.py"), "--out", str(folder / "toy.png")],
                          capture_output=True, text=True, timeout=120, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    where = "is" if inside == "." else f"lies inside {run},"
    assert done.returncode == 2 and done.stderr == (f"error: {folder} {where} a run folder of this project (it holds "
                                                    f".eggroll-run): a run folder holds its run's files only; give "
                                                    f"another --out\n")
    assert sorted(path.name for path in run.rglob("*")) == [".eggroll-run", "figures"]
