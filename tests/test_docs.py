"""The documentation keeps its own rules: README.md stays a short front door that names the paper it
reproduces, and every relative link and #anchor in README.md and docs/*.md leads somewhere."""
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
README_MAX_BYTES = 12_000  # UTF-8: θ, σ, ± and the like count two or three

FENCE = re.compile(r"^(`{3,}|~{3,}).*?^\1[ \t]*$", re.M | re.S)
CODE_SPAN = re.compile(r"(`+)(.+?)\1", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
HEADING = re.compile(r"^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$", re.M)


def without_code(text):
    """The text with fenced blocks, indented blocks and code spans blanked, so links shown as code
    (and brackets inside code) are not read as links."""
    text = FENCE.sub("", text)
    text = "\n".join("" if line.startswith(("    ", "\t")) else line for line in text.split("\n"))
    return CODE_SPAN.sub(" ", text)


def slug(heading):
    """GitHub's anchor for a heading: its text without markup, lowercased, every character but
    letters, digits, spaces, '-' and '_' dropped, spaces turned into '-'."""
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link's text only
    text = re.sub(r"<[^>]+>", "", text)                          # inline HTML
    text = text.replace("`", "").strip().lower()
    text = "".join(c for c in text if c.isalnum() or c in " -_")
    return text.replace(" ", "-")


def anchors(path):
    """Every anchor a markdown file's headings give, repeats numbered as GitHub numbers them."""
    seen, result = {}, set()
    for match in HEADING.finditer(FENCE.sub("", path.read_text(encoding="utf-8"))):
        base = slug(match.group(2))
        count = seen.get(base, 0)
        seen[base] = count + 1
        result.add(base if count == 0 else f"{base}-{count}")
    return result


def broken_links(path):
    """The relative links and #anchors of a markdown file that lead nowhere, each as a line saying
    why. Links to other sites (a scheme such as https: or mailto:) are not followed."""
    problems = []
    for target in LINK.findall(without_code(path.read_text(encoding="utf-8"))):
        if not target or re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", target):
            continue
        file_part, _, anchor = target.partition("#")
        linked = path if not file_part else (path.parent / unquote(file_part)).resolve()
        if not linked.exists():
            problems.append(f"{path.name}: {target}: no file {linked}")
        elif anchor and linked.suffix == ".md" and unquote(anchor).lower() not in anchors(linked):
            problems.append(f"{path.name}: {target}: no heading '#{anchor}' in {linked.name}")
    return problems


def documentation_files():
    return [README] + sorted((ROOT / "docs").glob("*.md"))


def test_readme_is_a_short_front_door():
    size = len(README.read_bytes())
    assert size <= README_MAX_BYTES, f"README.md has {size} bytes, over {README_MAX_BYTES}: move detail into docs/"


def test_readme_names_the_reproduced_paper_and_eggroll():
    text = README.read_text(encoding="utf-8")
    for reference in ("arXiv:2605.30361", "arXiv:2511.16652"):
        assert reference in text, f"README.md does not cite {reference}"


def test_every_relative_link_and_anchor_resolves():
    files = documentation_files()
    assert len(files) > 1, "docs/*.md is missing"
    problems = [problem for path in files for problem in broken_links(path)]
    assert not problems, "\n".join(problems)


def test_the_link_checker_catches_what_it_should(tmp_path):
    """The checker itself: on a page with one good and several bad links, it reports exactly the
    bad ones, and passes over links shown as code and links to other sites."""
    (tmp_path / "other.md").write_text("# A title\n\n## Spikes and energy: do ES-trained networks spike less?\n"
                                       "## Results of the `best` preset\n## Twice\n## Twice\n")
    (tmp_path / "figure.png").write_bytes(b"")
    page = tmp_path / "page.md"
    page.write_text(
        "# Page\n\n"
        "[good](other.md) [good anchor](other.md#spikes-and-energy-do-es-trained-networks-spike-less)\n"
        "[code anchor](other.md#results-of-the-best-preset) [repeat](other.md#twice-1) [here](#page)\n"
        "![figure](figure.png) [site](https://example.org/missing.md) `[as code](missing.md)`\n\n"
        "```\n[in a fence](missing.md)\n```\n\n"
        "[missing file](missing.md)\n"
        "![missing image](figure.svg)\n"
        "[missing anchor](other.md#no-such-heading)\n"
        "[missing local anchor](#nowhere)\n")
    problems = broken_links(page)
    assert len(problems) == 4, problems
    for target in ("missing.md:", "figure.svg", "#no-such-heading", "#nowhere"):
        assert any(target in problem for problem in problems), (target, problems)
    assert broken_links(tmp_path / "other.md") == []


def test_slugs_follow_githubs_rules():
    assert slug("Spikes and energy: do ES-trained networks spike less?") == \
        "spikes-and-energy-do-es-trained-networks-spike-less"
    assert slug("Results of the `best` preset") == "results-of-the-best-preset"
    assert slug("Speed and memory (`make bench`)") == "speed-and-memory-make-bench"
    assert slug("On a CPU (`make bench`)") == "on-a-cpu-make-bench"
    assert slug("Bit for bit, at a fixed BLAS thread count") == "bit-for-bit-at-a-fixed-blas-thread-count"
    assert slug("snake_case and [a link](x.md)") == "snake_case-and-a-link"


def test_the_readme_quotes_its_bench_record():
    """README's table of one generation is results/bench/cpu-2core.json (`make bench`'s --json),
    row by row, as the bench prints it (MB of 10^6 bytes)."""
    record = json.loads((ROOT / "results" / "bench" / "cpu-2core.json").read_text())
    rows = {(row["method"], row["rank"]): row for row in record["rows"]}
    es, r4, r1 = rows["es-batched", None], rows["eggroll", 4], rows["eggroll", 1]
    text = README.read_text(encoding="utf-8")
    noise = [row["noise_bytes"] / 1e6 for row in (es, r4, r1)]
    expected = [
        f"| noise memory | {noise[0]:.2f} MB | {noise[1]:.2f} MB (1/{noise[0] / noise[1]:.0f}) | "
        f"{noise[2]:.2f} MB (1/{noise[0] / noise[2]:.0f}) |",
        "| matrix products | " + " | ".join(f"{row['gflop_per_generation']:.1f} GFLOP" for row in (es, r4, r1)) + " |",
        f"| time | {es['seconds_per_generation']:.3f} s | {r4['seconds_per_generation']:.3f} s "
        f"({r4['speedup_vs_es_batched']:.1f}× faster) | {r1['seconds_per_generation']:.3f} s "
        f"({r1['speedup_vs_es_batched']:.1f}× faster) |",
        "| peak memory | " + " | ".join(f"{row['peak_rss_bytes'] / 1e6:.0f} MB" for row in (es, r4, r1)) + " |"]
    for line in expected:
        assert line in text, line


def test_the_plain_loop_of_the_derivation_runs_and_climbs_where_the_page_says(capsys):
    """derivation.md's first code block: the plain ES loop closes ||W - W*||^2 at least 1,000-fold in
    its 300 generations, to the value the page quotes and the line it prints below the block."""
    page = (ROOT / "docs" / "derivation.md").read_text()
    scope = {}
    exec(re.findall(r"```python\n(.*?)```", page, re.S)[0], scope)
    distance = ((scope["W"] - scope["W_star"]) ** 2).sum()
    assert distance < (scope["W_star"] ** 2).sum() / 1000
    assert f"the plain loop above ends at\n‖W − W*‖² = {distance:.2g}, " in page
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"plain ES: ||W - W*||^2 = {distance:.2g} after 300 generations"]
    assert f"```\n\n    {printed[0]}\n" in page


def test_the_derivations_units_show_raw_differences_diverge_and_ranks_not(capsys):
    """derivation-further.md's code block, run after derivation.md's plain loop: it prints the lines
    the page shows;
    raw differences in units 30 times as large end far out, centred ranks end where they do in the
    first units; its centred ranks are eggroll.centred_ranks' (no ties on this F)."""
    import eggroll
    page = (ROOT / "docs" / "derivation-further.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "derivation.md").read_text(), re.S)
    scope = {}
    exec(blocks[0], scope)
    capsys.readouterr()
    exec(re.findall(r"```python\n(.*?)```", page, re.S)[0], scope)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 4 and all(f"    {line}\n" in page for line in printed), printed
    distance = [float(line.rsplit("= ", 1)[1]) for line in printed]
    assert distance[1] > 1e6 * distance[0] and distance[2] == distance[3]
    x = np.random.default_rng(0).normal(size=16)
    assert np.allclose(scope["argsort_centred_ranks"](x), eggroll.centred_ranks(x))


def test_the_derivations_staircase_prints_what_the_page_shows_and_matches_the_toy(capsys):
    """derivation.md's second code block, run after the plain loop: it prints the lines the page
    shows, its J' and estimates are toy_eggroll's (the figure's), and each estimate lies within three
    of the page's standard errors of J'."""
    import toy_eggroll
    page = (ROOT / "docs" / "derivation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    scope = {}
    exec(blocks[0], scope)
    capsys.readouterr()
    exec(blocks[1], scope)
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2 and all(f"    {line}\n" in page for line in printed), printed
    for line, sigma, error in zip(printed, (0.1, 0.6), (0.027, 0.041)):
        exact, estimate = (float(part.split()[-1]) for part in line.split(", "))
        assert np.allclose((exact, estimate), toy_eggroll.staircase_slopes(1.2, sigma), atol=5e-4)
        assert abs(estimate - exact) < 3 * error
    assert scope["F"](scope["W_star"]) == 0  # the plain loop's F is left as it was


def test_the_derivations_blocks_run_in_page_order_print_what_the_page_shows(capsys):
    """A reader runs derivation.md's code blocks one after another in one session: every line each
    prints is on the page (no block changes a name a later one reads, as a loop over sigma would)."""
    page = (ROOT / "docs" / "derivation.md").read_text()
    scope, printed = {}, []
    for block in re.findall(r"```python\n(.*?)```", page, re.S):
        exec(block, scope)
        printed += capsys.readouterr().out.splitlines()
    assert len(printed) == 21 and all(f"    {line}\n" in page for line in printed), printed


def test_the_derivations_worked_centred_ranks_are_eggrolls():
    """derivation.md's P = 2 example of section 3: eggroll's centred ranks and pair differences of its
    four fitnesses (pair by pair, + then -) are the page's."""
    import eggroll
    page = " ".join((ROOT / "docs" / "derivation.md").read_text().split())
    c = eggroll.centred_ranks(np.array([-0.5, -3.0, -2.0, -1.0]))
    assert np.allclose(c, [1 / 2, -1 / 2, -1 / 6, 1 / 6]) and np.allclose(eggroll.pair_differences(c), [1, -1 / 3])
    assert "pair 1's + and − members score −0.5 and −3, pair 2's −2 and −1" in page
    assert "c = ½, −½, −1/6 and 1/6. So f_1 = ½ − (−½) = 1" in page
    assert "f_2 = −1/6 − 1/6 = −1/3" in page


def test_the_derivations_layout_of_the_factors_is_eggrolls():
    """derivation.md's fourth code block, after the plain loop: its assertions hold, and its arrays are
    the layout eggroll's functions take and give: lowrank_factors' shapes, (P, r, m) and (P, r, n),
    and materialise of them is A_p B_p^T / sqrt(r) with A_p = At[p].T."""
    import eggroll
    page = (ROOT / "docs" / "derivation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    scope = {}
    exec(blocks[0], scope)
    exec(blocks[3], scope)
    At, Bt = scope["At"], scope["Bt"]
    P, r, m = At.shape
    E = eggroll.materialise(At, Bt)
    for p in range(P):
        assert np.allclose(E[p], At[p].T @ Bt[p] / np.sqrt(r))
    drawn_A, drawn_B = eggroll.lowrank_factors(0, 0, np.arange(P), "W1", (m, Bt.shape[2]), r)
    assert drawn_A.shape == At.shape and drawn_B.shape == Bt.shape
    assert np.array_equal(scope["bold_A"], At.reshape(P * r, m))
    # the page's two NumPy spellings of Eq. (7) beside the layout, on the block's factors and f
    prose = " ".join(page.split())
    einsum = re.search(r"over pairs and columns is then `(.+?)`", prose).group(1)
    product = re.search(r"and its one product `(.+?)`", prose).group(1)
    names = {"np": np, "f": scope["f"], "At": At, "Bt": Bt, "P": P, "r": r, "m": m, "n": Bt.shape[2]}
    summed = sum(scope["f"][p] * At[p].T @ Bt[p] for p in range(P))
    assert np.allclose(eval(einsum, names), summed) and np.allclose(eval(product, names), summed)


def test_the_derivations_whole_generation_is_the_methods_and_climbs(capsys):
    """derivation.md's last code block, run after the plain loop as a reader would (the blocks between
    leave the plain loop's rng as it is, so the page's numbers are the same run in page order): its centred ranks
    are eggroll.centred_ranks' (no ties on this F), its f the project's pair differences of them, its
    step Eq. (7)'s, the sum of f_p E_p formed; 300 generations of it with Adam close ||W - W*||^2 at
    least 100-fold, to the value the page quotes."""
    import eggroll
    page = (ROOT / "docs" / "derivation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    scope = {}
    exec(blocks[0], scope)
    capsys.readouterr()
    exec(blocks[4], scope)
    distance = ((scope["W"] - scope["W_star"]) ** 2).sum()
    assert distance < (scope["W_star"] ** 2).sum() / 100
    assert f"rank-1 noise together) at {distance:.2g};" in page
    printed = capsys.readouterr().out.splitlines()
    assert printed == [f"the whole method: ||W - W*||^2 = {distance:.2g} after 300 generations"]
    assert f"```\n\n    {printed[0]}\n" in page
    fit, c, f = scope["fit"], scope["c"], scope["f"]
    assert np.allclose(c.ravel(), eggroll.centred_ranks(fit.ravel()), atol=1e-12)
    # the page's members are (2, P), nano_eggroll.py's order; eggroll.py interleaves them, pair by pair
    assert np.allclose(f, eggroll.pair_differences(eggroll.centred_ranks(fit.T.ravel())), atol=1e-6)
    formed = (f[:, None, None] * scope["E"]).sum(axis=0) / (2 * scope["P"] * scope["sigma"])
    assert abs(scope["g"] - formed).max() < 1e-9


def test_the_derivations_whole_method_with_raw_differences_ends_where_the_page_says(capsys):
    """derivation.md's claim that the centred ranks cost the whole method its precision: its last toy
    block with raw differences for f (the line the page gives) ends at least 1,000 times closer than
    with the ranks, at the value the page quotes."""
    page = (ROOT / "docs" / "derivation.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", page, re.S)
    ranked_line = "    f = c[0] - c[1]"
    assert blocks[4].count(ranked_line) == 1
    distances = []
    for line in (ranked_line, "    f = fit[0] - fit[1]"):
        scope = {}
        exec(blocks[0], scope)
        exec(blocks[4].replace(ranked_line, line), scope)
        distances.append(((scope["W"] - scope["W_star"]) ** 2).sum())
    capsys.readouterr()
    assert distances[1] < distances[0] / 1000
    assert f"with raw differences for f (`f = fit[0] - fit[1]`) it ends at {distances[1]:.2g}." in page


def test_running_mds_generation_loop_runs_as_printed():
    """docs/running.md's loop, run in the project's folder as the page says (its first two
    generations, not a hundred): every name it uses is imported, and each generation moves the
    weights and keeps them finite."""
    block = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "running.md").read_text(), re.S)[0]
    assert "for generation in range(100):" in block
    scope = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        exec(block.replace("range(100)", "range(2)"), scope)
    finally:
        os.chdir(cwd)
    start = scope["snn"].init_params(seed=1)
    assert all(np.isfinite(scope["params"][name]).all() and not np.array_equal(scope["params"][name], start[name])
               for name in start)


def test_your_networks_program_runs_as_printed_from_elsewhere(tmp_path):
    """docs/your-network.md's first code block, saved in a folder outside the project and run with
    the project on PYTHONPATH as the page says, trains its MLP from chance (about 1 in 3) to at
    least 90 % of its samples."""
    block = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / "your-network.md").read_text(), re.S)[0]
    (tmp_path / "program.py").write_text(block)
    done = subprocess.run([sys.executable, "program.py"], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                          env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    accuracy = re.fullmatch(r"training accuracy (\d+)% after 200 generations\n", done.stdout)
    assert accuracy and int(accuracy.group(1)) >= 90, done.stdout


def test_every_name_in_the_equation_table_is_one_the_code_has():
    """README's equation table points at the code: each `module.function` of its "where" column and
    each name of its nano_eggroll.py column exists (a function renamed in the code fails here)."""
    import importlib
    section = README.read_text(encoding="utf-8").split("## The method in equations", 1)[1].split("\n## ", 1)[0]
    rows = [line.split(" | ") for line in section.splitlines() if line.startswith("| (")]
    assert len(rows) >= 12
    nano = importlib.import_module("nano_eggroll")
    for row in rows:
        for name in re.findall(r"`([a-z_]+)\.([a-z_]+)`", row[2]):
            assert hasattr(importlib.import_module(name[0]), name[1]), f"{row[0]}: {'.'.join(name)}"
        for name in re.findall(r"`([a-z_]+)`", row[3]):
            assert callable(getattr(nano, name, None)), f"{row[0]}: nano_eggroll.{name}"


def test_the_derivations_network_table_gives_nano_eggrolls_shapes():
    """derivation.md's table of one generation on the network: every shape it gives in numbers is the
    shape of that array when nano_eggroll.py's functions run at the table's sizes (T = 10, N = 64,
    P = 128, r = 1), as population_forward hands its arrays to a reader."""
    import nano_eggroll as nano
    page = (ROOT / "docs" / "derivation.md").read_text()
    table = page.split("| array | what it holds | shape |", 1)[1].split("\n\n", 1)[0]
    given = {}
    for row in re.findall(r"^\| (.+?) \| .* \| (.+?) \|$", table, flags=re.M):
        names = re.findall(r"`(\w+)`", row[0]) or [row[0]]
        shapes = [tuple(int(n) for n in found.split(",") if n.strip())
                  for found in re.findall(r"= \(([\d, ]+)\)", row[1])]
        given.update(zip(names, shapes * len(names) if len(shapes) == 1 else shapes))
    settings = nano.Settings()
    params = nano.init_params(1)
    x = (np.random.default_rng(0).random((10, 64, 2312)) < 0.1).astype(np.float32)
    perturbations = nano.draw_noise(params, 0, settings)
    arrays = {}
    counts = nano.population_forward(params, perturbations, x, settings, arrays)
    fit = nano.fitness(counts, np.arange(64) % 10, 10, settings.logit_scale)
    arrays |= {"x": x, "At_W1": perturbations["W1"][0], "Bt_W1": perturbations["W1"][1], "counts": counts,
               "fit": fit, "centred": nano.centred_ranks(fit), "f": fit[0]}
    assert {name: given.get(name) for name in arrays} == {name: array.shape for name, array in arrays.items()}


def test_the_derivations_pairs_beat_one_sided_terms_by_what_the_page_says():
    """derivation.md, section 2: on the staircase at sigma 0.1 and theta 1.2, 2,000 one-sided score-function
    terms and 1,000 antithetic pairs (the same 2,000 evaluations), each over seeds 0-499: the page's two
    standard deviations, the pairs' the same as toy_eggroll's spread the page quotes in section 1."""
    import toy_eggroll
    page = " ".join((ROOT / "docs" / "derivation.md").read_text().split())
    F_stair = lambda theta: -np.round(np.abs(theta))
    spreads = {}
    for sigma in (0.1, 0.6):
        one_sided, paired = [], []
        for seed in range(500):
            eps = np.random.default_rng(seed).normal(size=2000)
            one_sided.append((F_stair(1.2 + sigma * eps) * eps).mean() / sigma)
            pairs = eps[:1000]
            paired.append(((F_stair(1.2 + sigma * pairs) - F_stair(1.2 - sigma * pairs)) * pairs).mean() / (2 * sigma))
        assert np.std(paired) == toy_eggroll.staircase_spread(1.2, sigma)
        spreads[sigma] = np.std(one_sided), np.std(paired)
    (one_01, paired_01), (one_06, paired_06) = spreads[0.1], spreads[0.6]
    assert (f"2,000 one-sided terms F(θ + σε) ε / σ estimate J′ with a standard deviation of {one_01:.2f} "
            f"over 500 seeds; 1,000 pairs, the same 2,000 evaluations, with {paired_01:.3f}.") in page
    assert f"at σ 0.6 it is {one_06:.3f} against {paired_06:.3f}." in page
