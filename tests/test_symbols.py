"""Every mathematical symbol of the teaching files carries one meaning: the table "The symbols" of
docs/symbols.md lists each Greek letter they use, once, none of the usages that would give a
symbol of the table a second meaning appears in their prose (a .py file's prose: its comments and
docstrings), and none of the code names that would read as such a symbol appears in their code."""
import io
import re
import tokenize
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TEACHING = ["README.md", *sorted(f"docs/{path.name}" for path in (ROOT / "docs").glob("*.md")),
            "eggroll.py", "snn.py", "snn_eggroll.py", "nano_eggroll.py", "toy_eggroll.py", "lesson.py"]
# Files whose prose (comments and docstrings) follows the table but whose code keeps another
# convention's names: optim.py's state and settings are Kingma & Ba's m, v, t, beta1, beta2, eps.
PROSE_ONLY = ["optim.py"]
GREEK = re.compile(r"[\u0391-\u03a9\u03b1-\u03c9]")

# What each usage would make a symbol mean, the usage, and a line it catches. The table's meaning
# stays; the other is written as a word, a number or another letter.
SECOND_MEANINGS = [
    ("ε as Adam's constant, not the noise", r"(ε|\beps\b)\s*(=\s*(1e-8|10⁻⁸)|added)|\+ ε\)", "m̂/(√v̂ + ε)"),
    ("c as a constant factor, not the centred rank", r"\bc\s*>\s*0|\b(same|by|whatever|edges) c\b", "by the same c > 0"),
    ("q as a pair, not the share below a fitness", r"\bpair q\b|\bz_q\b", "every other pair q puts"),
    ("λ as the weight decay, not the spike price", r"λ\s*·\s*θ|λ\W{0,3}(the )?weight decay|weight decay\W{0,3}λ",
     "lr · λ · θ"),
    ("L as the layer count, not the loss", r"\.\.L\b|\blayer L\b|\bWL\b|\bL\s*(>=|≥)\s*2|\bL, the number",
     "l = 1..L, layer L the output"),
    ("k as an index, a moment or a kernel's size, not the surrogate's slope",
     r"Σ_k|_[a-z]?k\b|\bk = (𝔼|E)\[|\bk (x|×) k\b|\bk k\b", "E_ij = (1/√r) Σ_k a_ik b_jk"),
    ("s as σ, not a layer's input", r"\bs\^2|\bs eps|\(2 P s\)", "-(W^3 + s^2 k W)"),
    ("b as a factor, not a bias", r"a bᵀ|‖b‖|𝔼\[b²\]|\bb_jk\b", "At r = 1, E = a bᵀ"),
    ("G as a count of generations, not the true gradient", r"range\(G\)|\bg of G\b|\bG − 1\)",
     "for generation in range(G):"),
    ("N as a seed, not the batch size", r"--seed N\b|\bN of the one option", "N of the one option, --seed N"),
    ("p as a count of pairs, not a pair's index", r"\(2?p, |, p, |\bof p pairs\b", "perturbation (p, N, m)"),
    ("m, v as Adam's moments, not rows and potentials", r"m̂|v̂|\b[mv]_hat\b|\"[mv]\": \.\.\.",
     'state = {"m": ..., "v": ...}'),
    ("β₁, β₂ as Adam's decay rates, not the leak", r"β[₁₂]", "β₁ = 0.9, β₂ = 0.999"),
    ("rank as a process's number, not the noise's", r"\b(its|process's|local|which) rank\b(?!\s*r\b)",
     "printed in one line with that process's rank"),
    ("N as the Gaussian, not the batch size", r"\bN\(0, ", "an 8 x 6 matrix of N(0, 1) entries"),
    ("Pr as P times r, not a probability", r"\(Pr\b|\bPr\s*[×)]", "rank up to min(Pr, m, n)"),
    ("h as a hidden layer, not Stein's smooth function", r"\bh = |[(,] ?h,|\bh @ |\bh is one input",
     'h = numpy.tanh(pop.linear("enc.w", x, bias="enc.b"))'),
    ("y as the labels, not the readout's ŷ", r"\by = |[(,] ?y\)|== y\)", "-cross_entropy(logits, y))"),
    ("p as a probability, not a pair's index", r"\blog_p\b", "log_p = logits - numpy.log(total)"),
    ("e as one draw of the noise, not Euler's number", r"\bfor e in\b|\* e\)", "F(W + sigma * e) for e in eps"),
    ("p as a count of pairs in an array's shape, not a pair's index", r"\(T, p, ", "# (T, p, 2N pos, n)"),
    ("step as a time bin, not the update g", r"\btime steps?\b", "for every layer and time step t = 1..T"),
    ("ε_i as an entry, not the draw of pair p", r"ε_i(?![a-z])", "each of the d terms ε_i² has mean ‖G‖²"),
    ("j as one of the factors' r columns, not a matrix's column",
     r"\bj = 1 … r\b|\bcolumn j of [AB]_p\b|\bj-th column\b", "the sum over j = 1 … r of column j of A_p"),
    ("decay as Adam's averaging rates, not a weight decay or the leak", r"\bdecay rates?\b|\bdecays 0\.9",
     "avg a running mean (decays 0.9, 0.999)"),
    ("T as a transpose, not the frame count", r"\^T\b", "x (W + sigma E_p)^T"),
    ("step as θ's move or a frame, not g", r"\bBPTT steps?\b|\bAdam's steps?\b|\bs of steps\b|\bOne step of Eqs|"
     r"\bno step taken\b|\bcostly steps\b|\bstep of a recurrent loop\b", "where a BPTT step runs one"),
    ("[·] with a condition as 1 or 0, not matrices side by side (that is 𝟙[·])",
     r"(?<!𝟙)\[(V_t|z_p|i|j) ?(≥|>=|<|>|=) ", "o_t = [V_t ≥ V_th]"),
    ("x as a product's sign, not a layer's input", r"\bx (sigma|Adam's lr|lr)\b|\b(_scale|spike_cost) x\b",
     "output_sigma_scale x sigma"),
    ("rank as one column of the factors, not the noise's rank", r"\bone more rank\b",
     "a bias's noise rides in a product as one more rank"),
]

# Code names (in a .py file's code, or a code block of a page) that would read as a symbol of the
# table with a second meaning, and a line each catches; the table's meaning stays.
SECOND_MEANINGS_IN_CODE = [
    ("m, v, t, β, ε as Adam's moments, step count, decays and floor", r"\bbeta[12]\b|\beps=1e-8|\[\"[mvt]\"\]",
     'm[name] = beta1 * state["m"][name] + (1 - beta1) * grads[name]'),
    ("k, s as a kernel's size and stride, not the surrogate's slope and a layer's input",
     r"\bk, s\b|\bk \* k\b|range\(k\)|\bs \* out_", "for dy in range(k):"),
    ("A1, B1, d1 as one layer's factors and bias noise, not pair 1's factors and d", r"\b[AB][12]\b|\bd[12]\b",
     'A1, B1 = perturbations["W1"]'),
    ("a, b, f, e as the factors, not a row of A, a bias, the pair weights and Euler's number",
     r"\ba, b = |\bfor (f|e|name, e) in\b", "(f.astype(np.float64) for f in factors)"),
    ("p, s, y, g as parameters, state, labels and generation", r"lambda p, s\b", "lambda p, s, x, y, g: step(p, s)"),
    ("d, k, p, v, g as a run, an exponent, a population, a value, a gradient's part",
     r"\bfor (d|k|p|v) in (distances|runs|range\(4|populations|theta|estimate)|\bp // 2\b|\bfor name, g in\b",
     "[noise_megabytes(rank, p // 2) for p in populations]"),
    ("v and rank as fitness values and a fitness rank, not a potential and the noise's rank",
     r"\bv = values\b|\brank = below\b", "v = values.ravel()"),
    ("L as the layer count in a message, not the loss", r"\bWL\b|\bL >= 2\b", 'else "L >= 2"'),
    ("N as a seed, not the batch size", r"--seed N\b", 'USAGE = ("usage: python nano_eggroll.py [--seed N]\\n"'),
    ("p as a count of pairs in a message, not a pair's index", r"\(2p, |\b2p = ",
     'f"x of shape (2p, N, n) needs 2p = {self.members} members"'),
    ("N as the Gaussian in a figure's text, not the batch size", r"\bN\(0, ", 'label="N(0, 1)")'),
    ("the paper as EGGROLL's, not Patankar & Gowda's", r"the paper's [AB]_p|as in the paper:",
     "row j of A[p] is column j of the paper's A_p"),
]


def prose(name):
    """A teaching file's text, or for a .py file its comments and docstrings only."""
    text = (ROOT / name).read_text(encoding="utf-8")
    if not name.endswith(".py"):
        return text
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return "\n".join(token.string for token in tokens if token.type == tokenize.COMMENT
                     or token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith('"""'))


def table_symbols():
    """The first column of docs/symbols.md's table, one entry per comma-separated symbol."""
    section = (ROOT / "docs" / "symbols.md").read_text(encoding="utf-8").split("# The symbols", 1)[1]
    rows = re.findall(r"^\| (.+?) \| .* \|$", section, flags=re.M)
    return [symbol.strip() for row in rows[1:] for symbol in row.split(", ")]


def first_read_symbols():
    """The first column of docs/derivation.md's short table for a first read, one entry per symbol."""
    page = (ROOT / "docs" / "derivation.md").read_text(encoding="utf-8")
    table = page.split("| symbol | on a first read |", 1)[1].split("\n\n", 1)[0]
    rows = re.findall(r"^\| (.+?) \| .* \|$", table, flags=re.M)
    return [symbol.strip() for row in rows[1:] for symbol in re.split(r"[,;] ", row)]


def test_the_first_read_table_uses_the_tables_symbols():
    listed = {symbol.removesuffix("(·)") for symbol in table_symbols()}
    first_read = first_read_symbols()
    assert len(first_read) >= 10 and "J(θ)" in first_read
    assert sorted(set(first_read) - listed) == [], "docs/derivation.md's first-read rows: add these to docs/symbols.md"


def test_the_table_lists_each_symbol_once_and_defines_a_generation():
    symbols = table_symbols()
    assert "generation" in symbols and "θ" in symbols
    assert sorted(s for s in set(symbols) if symbols.count(s) > 1) == []


@pytest.mark.parametrize("name", TEACHING + PROSE_ONLY)
def test_every_greek_letter_is_in_the_table(name):
    listed = set(GREEK.findall(" ".join(table_symbols())))
    assert sorted(set(GREEK.findall(prose(name))) - listed) == [], f"{name}: add these to docs/symbols.md's table"


@pytest.mark.parametrize("meaning, usage, example", SECOND_MEANINGS, ids=[m[0] for m in SECOND_MEANINGS])
def test_no_symbol_takes_a_second_meaning(meaning, usage, example):
    assert re.search(usage, example), "the usage no longer catches its own example"
    found = [f"{name}: {match.group(0)!r}" for name in TEACHING + PROSE_ONLY
             for match in re.finditer(usage, prose(name))]
    assert found == [], f"{meaning}: {found}"


@pytest.mark.parametrize("meaning, usage, example", SECOND_MEANINGS_IN_CODE,
                         ids=[m[0] for m in SECOND_MEANINGS_IN_CODE])
def test_no_code_name_reads_as_a_symbol_of_another_meaning(meaning, usage, example):
    assert re.search(usage, example), "the usage no longer catches its own example"
    found = [f"{name}: {match.group(0)!r}" for name in TEACHING
             for match in re.finditer(usage, (ROOT / name).read_text(encoding="utf-8"))]
    assert found == [], f"{meaning}: {found}"
