"""The mutation score of the core, from the results of `mutmut run` (make mutation).

    python tests/mutation_report.py          (in the repository root, after `mutmut run`)
    python tests/mutation_report.py --equivalent    also lists every equivalent mutant and its reason

Reads mutants/<file>.meta of eggroll.py, noise.py, snn.py, optim.py and baselines.py, takes out
the equivalent mutants listed in EQUIVALENT below (the one place they are recorded), and prints
per file: mutants, killed, equivalent, survived and the score killed / (mutants - equivalent),
then every survivor that is not equivalent, with its diff. Exit status 1 if a file scores below
98 %, a mutant was not run, or the results are missing.

Killed counts what the tests caught: a failing test, a timeout (a mutant that loops for ever) or
a crash. A mutant in a function no test of the pool runs ("no tests") counts as a survivor.
Not collected by pytest (its name does not start with test_).
"""
import fnmatch
import json
import re
import sys
from pathlib import Path

from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code

FILES = ("eggroll.py", "noise.py", "snn.py", "optim.py", "baselines.py")
TARGET = 98.0
DETECTED = {"killed", "timeout", "segfault"}
UNDETECTED = {"survived", "no tests", "suspicious"}

ARRAY_MODULE = ("array module: on a CPU every array is NumPy's and NumPy is also the default, so the "
                "mutant picks the same module; only a CuPy array tells (tests/test_gpu.py, on a GPU)")
ONE_PROCESS = ("team: a single process (distributed.ALONE) holds every pair and ignores these arguments; "
               "the shares of an MPI job are checked by tests/test_distributed.py, which starts processes")
NEGATIVE_RESHAPE = "reshape: NumPy takes any negative size as 'the rest', so -2 is -1"
COPY_FLAG = "astype's copy flag: only whether a copy is made, never a value (the result is not written to)"
PHILOX_WORDS = ("uint32: philox4x32 converts every counter word to uint32 itself, and counter words are "
                "< 2^32, so its input's dtype changes no bit")
PHILOX_PASS = ("pairs per Philox pass (a cache-size choice on a CPU, all pairs elsewhere): every number is "
               "elementwise, per pair, so no bit depends on it")
CHUNK = "members per chunk: a cache-size choice; members are simulated independently (the chunking tests)"

# Every equivalent mutant: (file, function (a glob), a regular expression found in the mutated line(s),
# why no test can tell it from the original). Matched by the mutated text, so mutmut's numbering may
# change; an entry that matches no survivor is reported as stale.
EQUIVALENT = [
    ("*", "*", r"array_module_of\(None\)", ARRAY_MODULE),
    ("noise.py", "philox4x32", r'hasattr\((None, "dtype"|c, "XXdtypeXX"|c, "DTYPE")\)', ARRAY_MODULE),
    ("*", "*", r"(normals|lowrank_factors|standard_normals)\(.*, \)", ARRAY_MODULE + " (the xp argument left out)"),
    ("noise.py", "standard_normals", r"if \(xp is numpy\) or True else", ARRAY_MODULE),
    ("snn.py", "simulate", r"members_per_chunk\(n_members, batch, n_hidden, None\)", CHUNK),
    ("eggroll.py", "generation_step", r"team\.(my_pairs|update_pairs)\((None, PAIRS_PER_BLOCK|config\.pairs, None)\)",
     ONE_PROCESS),
    ("eggroll.py", "generation_step", r"^\s*config\.spike_cost\), (None, PAIRS_PER_BLOCK|config\.pairs, None)\)$",
     ONE_PROCESS),
    ("eggroll.py", "generation_step", r"^\s*\)\s*# Eq\. \(6\)$", ONE_PROCESS + " (the pairs argument left out)"),
    ("eggroll.py", "generation_step", r"params, config, generation, \)\)", ONE_PROCESS),
    ("baselines.py", "es_generation_step",
     r"team\.(my_pairs|update_pairs)\((None, eggroll\.PAIRS_PER_BLOCK|config\.pairs, None)\)", ONE_PROCESS),
    ("baselines.py", "es_generation_step",
     r"^\s*config\.spike_cost\), (None, eggroll\.PAIRS_PER_BLOCK|config\.pairs, None)\)$", ONE_PROCESS),
    ("baselines.py", "es_generation_step", r"^\s*\)$", ONE_PROCESS + " (the pairs argument left out)"),
    ("baselines.py", "es_generation_step", r"^\s*\)\)\s*# Eqs\. \(10\), \(8\)$", ONE_PROCESS),
    ("*", "*", r"reshape\(.*-2\b", NEGATIVE_RESHAPE),
    ("*", "*", r"\.astype\([^()]*, (copy=None|copy=True|)\)", COPY_FLAG),
    ("noise.py", "philox4x32", r"xp\.asarray\(c, (dtype=None|)\)", PHILOX_WORDS),
    ("noise.py", "standard_normals", r"(xp\.arange\(n_blocks|xp\.asarray\(pairs), (dtype=None|)\)", PHILOX_WORDS),
    ("noise.py", "standard_normals", r"rows = max\(", PHILOX_PASS),
    ("snn.py", "simulate", r"hidden_spikes = xp\.zeros\(n_members, (dtype=None|)\)",
     "float64 is xp.zeros's default dtype, the one it restates"),
    ("snn.py", "cross_entropy", r"take_along_axis\(log_p, .*\), \)$", "axis=-1 is take_along_axis's default (NumPy >= 2.3; an older NumPy kills the mutant)"),
    ("snn.py", "correct_per_class", r"axis=\+1|shape\[\+1\]", "counts are (B, n_out): axis 1 is the last axis, -1"),
    ("eggroll.py", "population_product", r"if block\.shape\[0\] <= PAIRS_PER_BLOCK",
     "padding a full block with no rows (<= instead of <) leaves it the same block"),
    ("eggroll.py", "centred_ranks", r"tie_group\.reshape\(None\)",
     "fitnesses are 1-D, so unique's inverse is already flat: reshape(None) keeps it as reshape(-1) does"),
    ("baselines.py", "pair_noise", r"xp\.arange\(pair, pair \+ 2\)",
     "only row [0], pair p's, is used: drawing pair p + 1 beside it changes none of its bits"),
    ("baselines.py", "batched_forward", r"sigma / sign\[",
     "sign is +1 or -1, and sigma / +-1 is exactly sigma * +-1"),
    ("baselines.py", "lif_*", r"xp\.zeros_like\(None\)",
     "a zero 0-d array broadcasts as the zeros of the first step's shape: the same sums"),
    ("baselines.py", "bptt_step", r"bptt_forward\(params, frames, lif, (k=None|)\)",
     "k only shapes the surrogate derivative of the backward pass; the forward spike (Heaviside) ignores it"),
]


def changed_lines(diff):
    """The lines of a mutant's function as the mutation left them (the + side of the diff)."""
    return [line[1:] for line in diff.splitlines()[2:] if line.startswith("+")]


def equivalence(path, function, lines):
    """The reason recorded for this mutant, with its entry's index, or None."""
    for index, (file_glob, function_glob, pattern, reason) in enumerate(EQUIVALENT):
        if fnmatch.fnmatch(path, file_glob) and fnmatch.fnmatch(function, function_glob) \
                and any(re.search(pattern, line) for line in lines):
            return index, reason
    return None


def function_of(mutant):
    """eggroll.x_perturbed_forward__mutmut_3 -> perturbed_forward (a method: Class.method)."""
    name = mutant.rpartition(".")[2].partition("__mutmut_")[0]
    name = name[2:] if name.startswith("x_") else name.lstrip("x")
    return name.replace("ǁ", ".").strip(".")


def main():
    rows, survivors, used, problems, equivalents = [], [], set(), [], []
    for path in FILES:
        meta = Path("mutants") / f"{path}.meta"
        if not meta.exists():
            problems.append(f"{meta} is missing: run `mutmut run` (make mutation) first")
            continue
        counts = dict(mutants=0, killed=0, equivalent=0, survived=0)
        for mutant, exit_code in sorted(json.loads(meta.read_text())["exit_code_by_key"].items()):
            status = status_by_exit_code[exit_code]
            counts["mutants"] += 1
            if status in DETECTED:
                counts["killed"] += 1
                continue
            if status not in UNDETECTED:
                problems.append(f"{mutant}: {status} (the run did not finish: rerun make mutation)")
                continue
            diff = get_diff_for_mutant(mutant, path=path)
            found = equivalence(path, function_of(mutant), changed_lines(diff))
            if found:
                counts["equivalent"] += 1
                used.add(found[0])
                equivalents.append((mutant, changed_lines(diff), found[1]))
            else:
                counts["survived"] += 1
                survivors.append((mutant, status, diff))
        tested = counts["mutants"] - counts["equivalent"]
        counts["score"] = 100.0 * counts["killed"] / tested if tested else 100.0
        rows.append((path, counts))

    print(f"{'file':<14}{'mutants':>9}{'killed':>9}{'equivalent':>12}{'survived':>10}{'score':>9}")
    for path, c in rows:
        print(f"{path:<14}{c['mutants']:>9}{c['killed']:>9}{c['equivalent']:>12}{c['survived']:>10}{c['score']:>8.1f}%")
    total = {key: sum(c[key] for _, c in rows) for key in ("mutants", "killed", "equivalent", "survived")}
    tested = total["mutants"] - total["equivalent"]
    print(f"{'all':<14}{total['mutants']:>9}{total['killed']:>9}{total['equivalent']:>12}{total['survived']:>10}"
          f"{100.0 * total['killed'] / max(tested, 1):>8.1f}%")
    print(f"score = killed / (mutants - equivalent); target >= {TARGET:g} % per file")

    if "--equivalent" in sys.argv[1:]:
        print(f"\n{len(equivalents)} equivalent mutants:")
        for mutant, lines, reason in equivalents:
            print(f"  {mutant}: {' / '.join(line.strip() for line in lines)}\n      {reason}")
    if survivors:
        print(f"\n{len(survivors)} survivors that are not recorded as equivalent:")
        for mutant, status, diff in survivors:
            print(f"\n# {mutant}: {status}\n{diff}")
    stale = [entry for index, entry in enumerate(EQUIVALENT) if index not in used]
    for file_glob, function_glob, pattern, _ in stale:
        print(f"note: equivalent entry ({file_glob}, {function_glob}, {pattern!r}) matched no survivor")
    low = [path for path, c in rows if c["score"] < TARGET]
    for problem in problems:
        print(f"error: {problem}")
    if low:
        print(f"error: below {TARGET:g} %: {', '.join(low)}")
    return 1 if low or problems else 0


if __name__ == "__main__":
    sys.exit(main())
