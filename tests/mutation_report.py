"""The mutation score of the core, or of the newer files, from the results of `mutmut run`.

    python tests/mutation_report.py          (in the repository root, after `mutmut run`: make mutation)
    python tests/mutation_report.py --equivalent    also lists every named equivalent and its reason
    python tests/mutation_report.py --newer --prepare DIR    a copy of the project in DIR whose
        [tool.mutmut] mutates the newer files (NEWER) instead of the core (make mutation-newer)
    python tests/mutation_report.py --newer  (in that copy, after `mutmut run`)

Reads mutants/<file>.meta of each file the suite mutates (the core: the source_paths of
pyproject's [tool.mutmut]) and prints per file: mutants, killed, named equivalents, GPU-only mutants, survivors and the score
killed / (mutants - equivalent - GPU-only), then every survivor with its diff. Exit status 1 if a
file scores below 98 %, a mutant was not run, the results are missing, or a named mutant no longer
matches its entry (mutmut renumbers a function's mutants when it changes) or was killed after all.

Killed counts what the tests caught: a failing test, a timeout (a mutant that loops for ever) or
a crash. A mutant in a function no test of the pool runs ("no tests") counts as a survivor.

A mutant is EQUIVALENT only if no input and no environment the project supports (the NumPy
versions pyproject allows, CuPy with or without its kernels, any number of processes) can tell it
from the original; each is named below with the line the mutation leaves and the reason. A mutant
that only a GPU can tell apart (a line inside a branch that runs on CuPy alone) is GPU_ONLY, named
with the test of tests/test_gpu.py that kills it there (`.ci/gpu` runs them on a GPU machine).
Everything else that survives is a survivor, and lowers the score.
Not collected by pytest (its name does not start with test_).
"""
import json
import shutil
import sys
import tomllib
from pathlib import Path

from mutmut.mutation.diff_apply import get_diff_for_mutant
from mutmut.stats import status_by_exit_code

ROOT = Path(__file__).resolve().parent.parent
CORE = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mutmut"]
# The newer files: the settings, the resources a run asks for, the refusals and the run folder, each
# mutant run against the tests of the pool that reach its function.
NEWER_FILES = ["config.py", "resources.py", "exits.py", "run_folder.py"]
NEWER = dict(CORE, source_paths=NEWER_FILES,  # beside them, the whole project: the tests start its scripts
             also_copy=sorted({path.name for path in ROOT.glob("*.py")} - set(NEWER_FILES))
             + ["nmnist-sample", "docs", "results", "examples"],
             pytest_add_cli_args_test_selection=["tests/test_config.py", "tests/test_exits.py",
                                                 "tests/test_run_folder.py", "tests/test_stray_runs.py",
                                                 "tests/test_hostile_files.py", "tests/test_ownership.py",
                                                 "tests/test_levers.py"])
TARGET = 98.0
DETECTED = {"killed", "timeout", "segfault"}
UNDETECTED = {"survived", "no tests", "suspicious"}

NEGATIVE_RESHAPE = ("reshape: NumPy (every version) and CuPy (internal.infer_unknown_dimension) take any "
                    "negative size as the one unknown size, so -2 is -1")
COPY_FLAG = ("astype's copy flag: NumPy and CuPy read None as False, and a copy or not changes no value: the "
             "result is only read, never written to")
NEP18 = ("array module: every xp.f it calls on a CuPy array is a NumPy function or ufunc that NumPy hands to "
         "CuPy's own (__array_function__, __array_ufunc__), and its dtypes are NumPy's in both; on NumPy "
         "inputs the module is NumPy either way")
PHILOX_WORDS = ("uint32: philox4x32 converts every counter word to uint32 itself, and these block numbers are "
                "< 2^32, so the dtype of their arange changes no bit")
SILENT_SPIKES = "float64 is the default dtype of numpy.zeros and cupy.zeros, the one it restates"
OUTPUT_WIDTH = ("the output layer's width is the last weight's rows, whether the network is read off the weights "
                "or given (its shapes checked against the weights just before)")
RANGE_ENDS = ("every element of a range lies between its first and its last, so more of them than the ends bound "
              "nothing more")
SIGN = "sign is +1 or -1, and sigma / +-1 is exactly sigma * +-1"
FORWARD_SLOPE = ("k only shapes the surrogate derivative, which bptt_backward takes from config.slope; "
                 "bptt_step's forward spikes with the Heaviside step, which ignores k")
FRESH_SUM = ("astype's copy flag on a sum just made: copied again or not, the array returned is the "
             "caller's alone")
STATE_GENERATION = "State's generation defaults to 0, the one it restates"
KIND_LETTERS = ("a dtype's kind is one letter, and no kind is X: a string of kind letters between XX and XX "
                "holds the same kinds as without them")
WIDER_BUFFER = ("a zero buffer wider than the padded image: only its [pad, pad + size) part is read, the same "
                "values")
PASS_SIZE = ("how many pairs go through Philox in one pass only sets the chunks; each pair's normals are the "
             "same whatever chunk it is in (standard_normals is a pure function of its keys)")
LOWER_VOWELS = ("kind[0].lower() is a lower-case letter, or no letter, never X: the vowels between XX and XX "
                "are the same lower-case letters")
FLOAT_SIZES = ("a NumPy float is 2, 4, 8, 12 or 16 bytes wide, and float64 and narrower convert to float64 exactly, "
               "so the checks of long doubles find nothing in them: > 9 and >= 8 pick the same long doubles, for the "
               "same result")
ASTYPE_NONE = "NumPy and CuPy read astype(None) as float64, the type it names"
INT_WIDTHS = ("only integer, bool, float16 and long double x reach it (float32 and float64 x are taken as they are), "
              "and only integers pass its kind test; integers are 8, 16, 32 or 64 bits wide, float32 holds 24 bits of "
              "an integer exactly and float64 53, so 8 or 9 bits a byte, > or >=, pick the same widths (int32 and "
              "int64 in float32, int64 in float64)")
INT_FITNESS = ("integers are 1, 2, 4 or 8 bytes wide and float64 holds every int32 exactly: held apart whether or "
               "not int32 is checked, and > 5 picks the same int64 and uint64")

UNDER_DEFAULT = ("an underflow setting of None, or none, leaves NumPy's own, which is to ignore underflow: the "
                 "setting it restates (CuPy's arrays do not consult it)")
CHECKED_AGAIN = ("a logit scale above 10^6 that this bound lets through is refused, in the same words, by "
                 "snn.cross_entropy's own check, which every method's fitness or loss makes before any value is used")
NEGATED_COPY = "astype's copy flag before a negation, which makes a new array either way"
DIVIDE_UNUSED = ("no division by zero or log of zero arises in BPTT's step (its log-sum-exp sums at least exp(0) = 1, "
                 "the surrogate's denominator is at least 1), so the divide setting is never consulted")

# name -> (text the mutated line contains, why no supported input or environment tells it apart)
EQUIVALENT = {
    "eggroll.x_centred_ranks__mutmut_28": ("tie_group.reshape(-2)", NEGATIVE_RESHAPE),
    "eggroll.x_lowrank_factors__mutmut_26": (".reshape(-2, rank, m)", NEGATIVE_RESHAPE),
    "eggroll.x_lowrank_factors__mutmut_36": (".reshape(-2, rank, n)", NEGATIVE_RESHAPE),
    "eggroll.x_pair_differences__mutmut_2": (
        "array_module_of(None)", "array module: used only for xp.float32, and CuPy's float32 is NumPy's"),
    "eggroll.x_population_product__mutmut_28": (
        "if block.shape[0] <= PAIRS_PER_BLOCK:",
        "padding a full block with no rows (<= instead of <) leaves it the same block, the same product"),
    "snn_eggroll.x_population_forward__mutmut_53": ('.reshape(n_frames, -2, params["W1"].shape[0])', NEGATIVE_RESHAPE),
    "snn_eggroll.xǁConfigǁmethod__mutmut_54": (
        "optim.averages_of(optim.Adam(None))", "averages_of reads beta1, beta2 and eps, never the learning rate"),
    "eggroll.xǁPopulationǁ__post_init____mutmut_12": ("*self.pairs[:2]", RANGE_ENDS),
    "eggroll.xǁPopulationǁ__post_init____mutmut_14": ("*self.pairs[-2:]", RANGE_ENDS),
    "snn.x_cross_entropy__mutmut_39": ("(-2, 1)", NEGATIVE_RESHAPE),
    "snn.x_cross_entropy__mutmut_24": ("array_module_of(None)", NEP18),
    "snn.x_check_params__mutmut_32": ("array_module_of(None).isfinite(value)", NEP18),
    "snn.x_check_frames__mutmut_32": ("network_of(params, None).sizes[-1]", OUTPUT_WIDTH),
    "snn.x_check_frames__mutmut_34": ("network_of(params, ).sizes[-1]", OUTPUT_WIDTH),
    "snn.x_check_labels__mutmut_16": ('labels.dtype.kind not in "XXiuXX" or', KIND_LETTERS),
    "snn.x_check_labels__mutmut_32": ('labels.dtype.kind not in "XXiuXX" else', KIND_LETTERS),
    "snn.x_log_softmax_of_rates__mutmut_56": ("array_module_of(None)", NEP18),
    "snn.x_layer_current__mutmut_12": ("x.shape[:-1] + (-2,)", NEGATIVE_RESHAPE),
    "snn.x_simulate__mutmut_19": ("xp.zeros(n_members, dtype=None)", SILENT_SPIKES),
    "snn.x_simulate__mutmut_21": ("xp.zeros(n_members, )", SILENT_SPIKES),
    "snn.xǁNetworkǁfold__mutmut_56": ("grad.reshape(-2, out_h", NEGATIVE_RESHAPE),
    "snn.xǁNetworkǁfold__mutmut_71": ("height + 3 * pad", WIDER_BUFFER),
    "snn.xǁNetworkǁfold__mutmut_74": ("width + 3 * pad", WIDER_BUFFER),
    "snn.xǁNetworkǁimages__mutmut_2": ("array_module_of(None)", NEP18),
    "snn.xǁNetworkǁimages__mutmut_18": ("x.reshape(-2, channels, height, width)", NEGATIVE_RESHAPE),
    "snn.xǁNetworkǁimages__mutmut_38": ("x.reshape(-2, height, width, channels)", NEGATIVE_RESHAPE),
    "snn.xǁNetworkǁimages__mutmut_47": ("if (pad) or True else images", "padding by 0 pixels gives the same values"),
    "noise.x_box_muller__mutmut_2": ("array_module_of(None)", NEP18),
    "noise.x_param_id__mutmut_10": (
        "digest()[:5]", "a fifth byte read little-endian lands above bit 31, which & 0x7FFFFFFF clears"),
    "noise.x_standard_normals__mutmut_21": ("xp.arange(n_blocks, dtype=None)", PHILOX_WORDS),
    "noise.x_standard_normals__mutmut_49": ("BLOCKS_PER_PASS // max(n_blocks, 2)", PASS_SIZE),
    "noise.x_standard_normals__mutmut_23": ("xp.arange(n_blocks, )", PHILOX_WORDS),
    "baselines.x_batched_forward__mutmut_107": ("sigma / sign[None, :, None, None]", SIGN),
    "baselines.x_batched_forward__mutmut_136": ("sigma / sign[None, :, None]", SIGN),
    "baselines.x_bptt_backward__mutmut_19": ("array_module_of(None)", NEP18),
    "baselines.x_bptt_backward__mutmut_121": (
        "if layer >= 1:", "the gradient of the input frames (layer 1's fold) is computed, never read"),
    "baselines.x_bptt_backward__mutmut_137": ("reshape(n_frames, -2, fan_out)", NEGATIVE_RESHAPE),
    "baselines.x_bptt_backward__mutmut_174": ('grad_currents[layer].reshape(-2, params', NEGATIVE_RESHAPE),
    "baselines.x_bptt_backward__mutmut_183": ("patches.reshape(flat.shape[0], -2)", NEGATIVE_RESHAPE),
    "baselines.x_sequential_forward__mutmut_65": (
        "snn.counts_of(member, frames, lif, 2,", "a second member of the same weights is run and never read: [0] is"),
    "baselines.x_bptt_forward__mutmut_37": ("array_module_of(None)", NEP18),
    "baselines.x_check_cache__mutmut_37": ("array_module_of(None).array_equal(", NEP18),
    "snn_eggroll.x_fitness__mutmut_75": ("array_module_of(None).isfinite(hidden_spikes)", NEP18),
    "baselines.x_bptt_forward__mutmut_83": (".reshape(n_frames, batch, -2)", NEGATIVE_RESHAPE),
    "baselines.x_leaky_forward__mutmut_3": ("array_module_of(None).empty_like(current)", NEP18),
    "baselines.x_leaky_backward__mutmut_3": ("array_module_of(None).empty_like(grad_v)", NEP18),
    "baselines.x_bptt_step__mutmut_2": ("array_module_of(None)", NEP18),
    "baselines.x_full_rank_noise__mutmut_131": (".reshape(-2, m, n)", NEGATIVE_RESHAPE),
    "baselines.x_lif_backward__mutmut_2": ("array_module_of(None)", NEP18),
    "baselines.x_full_rank_gradient__mutmut_110": ("array_module_of(None).isfinite(f)", NEP18),
    "baselines.x_lif_forward__mutmut_52": ("array_module_of(None)", NEP18),
    "baselines.x_pair_noise__mutmut_34": (
        "xp.arange(pair, pair + 2)", "only row [0], pair p's, is used, and noise is a pure function of its "
                                     "pair: drawing pair p + 1 beside it changes none of its bits"),
    "baselines.x_pair_noise__mutmut_70": ("astype(value.dtype, copy=None)", COPY_FLAG),
    "baselines.x_pair_noise__mutmut_72": ("astype(value.dtype, )", COPY_FLAG),
    "baselines.x_pair_noise__mutmut_73": ("astype(value.dtype, copy=True)", COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_47": ('self.pairs[pair:pair + 2]', "only the first pair's factors, pair p's, are read, and noise is a pure function of its pair: drawing p + 1 beside it changes none of its bits"),
    "eggroll.xǁPopulationǁmember__mutmut_55": ('factor.astype(value.dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_57": ('factor.astype(value.dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_58": ('factor.astype(value.dtype, copy=True)', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_62": ('factors[0].astype(value.dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_64": ('factors[0].astype(value.dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_66": ('factors[0].astype(value.dtype, copy=True)', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_14": ('factor.astype(dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_16": ('factor.astype(dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_17": ('factor.astype(dtype, copy=True)', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_31": ('self.factors(bias).astype(dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_33": ('self.factors(bias).astype(dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁrows__mutmut_35": ('self.factors(bias).astype(dtype, copy=True)', COPY_FLAG),
    "interface_checks.x_check_finite__mutmut_4": ('array_module_of(None)', "array module: used only for xp.float32, and CuPy's float32 is NumPy's"),
    "interface_checks.x_check_formed_size__mutmut_10": (
        "* 3 / 2", "a float's itemsize is even, so 3 times the bytes is even and halves exactly either way"),
    "interface_checks.x_check_outputs_size__mutmut_10": (
        "* 3 / 2", "a float's itemsize is even, so 3 times the bytes is even and halves exactly either way"),
    "interface_checks.x_check_stepped__mutmut_4": ("array_module_of(None).isfinite(value)", NEP18),
    "interface_checks.x_check_eggroll_stepped__mutmut_43": ("array_module_of(None).isfinite(average)", NEP18),
    "interface_checks.x_check_whole__mutmut_22": ('(True, True): "XXXX"', 'no caller leaves out both bounds (a population has only an upper one; a rank, member, seed, generation or count a lower one), so the entry of neither bound is never read'),
    "interface_checks.x_check_whole__mutmut_30": ('value.dtype.kind in "XXiuXX"', KIND_LETTERS),
    "interface_checks.x_fitness_array__mutmut_129": ('not in "XXbiufXX"', KIND_LETTERS),
    "interface_checks.x_check_finite_outputs__mutmut_3": ("array_module_of(None).isfinite(values)", NEP18),
    "interface_checks.x_fitness_array__mutmut_90": ('in "XXiuXX"', KIND_LETTERS),
    "interface_checks.x_fitness_array__mutmut_114": ('in "XXUSXX"', KIND_LETTERS),
    "interface_checks.x_check_differences__mutmut_4": ('array_module_of(None).isfinite(differences)', NEP18),
    "interface_checks.x_exactly__mutmut_9": ('in "XXiuXX" and', KIND_LETTERS),
    "interface_checks.x_exactly__mutmut_12": ('9 * x.dtype.itemsize > digits', INT_WIDTHS),
    "interface_checks.x_exactly__mutmut_13": ('8 * x.dtype.itemsize >= digits', INT_WIDTHS),
    "interface_checks.x_is_long_double__mutmut_5": ('dtype.itemsize >= 8', FLOAT_SIZES),
    "interface_checks.x_is_long_double__mutmut_6": ('dtype.itemsize > 9', FLOAT_SIZES),
    "interface_checks.x_fitness_array__mutmut_92": ('fitness.dtype.itemsize >= 4', INT_FITNESS),
    "interface_checks.x_fitness_array__mutmut_93": ('fitness.dtype.itemsize > 5', INT_FITNESS),
    "interface_checks.x_fitness_array__mutmut_99": ('converted = fitness.astype(None)', ASTYPE_NONE),
    "interface_checks.x_fitness_array__mutmut_144": ('fitness = fitness.astype(None)', ASTYPE_NONE),
    "interface_checks.x_a_kind__mutmut_23": ("in 'XXaeiouXX'", LOWER_VOWELS),
    "interface_checks.x_check_finite_params__mutmut_4": ("array_module_of(None).isfinite(value)", NEP18),
    "eggroll.xǁEggrollǁinit__mutmut_28": ('State(params, optim.init(params), )', STATE_GENERATION),
    "eggroll.xǁPopulationǁlinear__mutmut_34": ('w.T.astype(x.dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁlinear__mutmut_36": ('w.T.astype(x.dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁlinear__mutmut_37": ('w.T.astype(x.dtype, copy=True)', COPY_FLAG),
    "eggroll.xǁPopulationǁlinear__mutmut_42": ('self.params[bias].astype(x.dtype, copy=None)', COPY_FLAG),
    "eggroll.xǁPopulationǁlinear__mutmut_44": ('self.params[bias].astype(x.dtype, )', COPY_FLAG),
    "eggroll.xǁPopulationǁlinear__mutmut_45": ('self.params[bias].astype(x.dtype, copy=True)', COPY_FLAG),
    "eggroll.xǁPopulationǁmember__mutmut_77": ('drawn_noise).astype(value.dtype, copy=None)', FRESH_SUM),
    "eggroll.xǁPopulationǁmember__mutmut_79": ('drawn_noise).astype(value.dtype, )', FRESH_SUM),
    "eggroll.xǁPopulationǁmember__mutmut_83": ('drawn_noise).astype(value.dtype, copy=True)', FRESH_SUM),
    "eggroll.x_population_stats__mutmut_3": ('invalid="ignore", under=None)', UNDER_DEFAULT),
    "eggroll.x_population_stats__mutmut_6": ('invalid="ignore", )', UNDER_DEFAULT),
    "eggroll.xǁPopulationǁperturbed__mutmut_21": ('errstate(over="ignore", under=None)', UNDER_DEFAULT),
    "eggroll.xǁPopulationǁperturbed__mutmut_23": ('errstate(over="ignore", )', UNDER_DEFAULT),
    "interface_checks.x_beyond_float64__mutmut_3": ('errstate(over="ignore", under=None)', UNDER_DEFAULT),
    "interface_checks.x_beyond_float64__mutmut_5": ('errstate(over="ignore", )', UNDER_DEFAULT),
    "interface_checks.x_beyond_float64__mutmut_15": ('values.astype(None)', ASTYPE_NONE),
    "interface_checks.x_check_finite_outputs__mutmut_8": ("array_module_of(None).isfinite(value)", NEP18),
    "interface_checks.x_check_optimiser__mutmut_92": ('array_module_of(None).isfinite(values)', NEP18),
    "interface_checks.x_input_array__mutmut_68": ('not in "XXbiufXX"', KIND_LETTERS),
    "interface_checks.x_input_array__mutmut_135": ("array_module_of(None).isfinite(x)", NEP18),
    "snn_eggroll.x_check_readout_settings__mutmut_14": ('config.logit_scale, 1e-6, 1000001.0', CHECKED_AGAIN),
    "snn_eggroll.x_population_forward__mutmut_156": (
        "for layer in range(n_layers + 1)}", "signs for layers 0 and 1 too: only those of layers 2.. are read"),
    "snn_eggroll.x_population_forward__mutmut_207": ("spikes.reshape(n_frames, -2, 2 * batch", NEGATIVE_RESHAPE),
    "snn_eggroll.xǁConfigǁmembers__mutmut_34": (
        "State(params, None, generation)", "population_of reads a state's params and generation, never Adam's"),
    "optim.x_check_state__mutmut_75": ("array_module_of(None).isfinite(step)", NEP18),
    "optim.x_check_state__mutmut_105": ("array_module_of(None)", NEP18),
    "baselines.x_bptt_step__mutmut_20": ('invalid="ignore", divide=None)', DIVIDE_UNUSED),
    "baselines.x_bptt_step__mutmut_23": ('invalid="ignore", )', DIVIDE_UNUSED),
    "baselines.x_bptt_step__mutmut_39": ("bptt_forward(params, frames, lif, network=network)", FORWARD_SLOPE),
    "baselines.x_bptt_step__mutmut_106": ("-g.astype(params[name].dtype, copy=None)", NEGATED_COPY),
    "baselines.x_bptt_step__mutmut_108": ("-g.astype(params[name].dtype, )", NEGATED_COPY),
    "baselines.x_bptt_step__mutmut_109": ("-g.astype(params[name].dtype, copy=True)", NEGATED_COPY),
}

# name -> (text the mutated line contains, the GPU test that kills it)
GPU_ONLY = {
}

# The newer files' equivalents, named as above.
NEWER_EQUIVALENT = {
}


def prepare(folder):
    """A copy of the project in folder (made; it must not exist) whose [tool.mutmut] is NEWER's."""
    skip = shutil.ignore_patterns(".git", ".venv", "mutants", "build", "local", "__pycache__", ".pytest_cache",
                                  ".hypothesis", "runs")
    shutil.copytree(ROOT, folder, ignore=skip)
    for committed in (ROOT / "results").glob("**/runs"):  # the results' run folders, which the tests read
        shutil.copytree(committed, folder / committed.relative_to(ROOT), ignore=skip)
    text = (ROOT / "pyproject.toml").read_text()
    section = "\n".join(f"{key} = {json.dumps(value)}" for key, value in NEWER.items())
    (folder / "pyproject.toml").write_text(text[:text.index("[tool.mutmut]")] + f"[tool.mutmut]\n{section}\n")


def changed_lines(diff):
    """The lines of a mutant's function as the mutation left them (the + side of the diff)."""
    return [line[1:] for line in diff.splitlines()[2:] if line.startswith("+")]


def listed(mutant, diff, table, kind, problems):
    """The table's entry for this mutant, if it names it and its recorded line still matches."""
    if mutant not in table:
        return None
    text, why = table[mutant]
    if not any(text in line for line in changed_lines(diff)):
        problems.append(f"{mutant} is listed as {kind} for a line containing {text!r}, but now changes "
                        f"{' / '.join(line.strip() for line in changed_lines(diff))!r}: mutmut renumbered "
                        f"it; record it again")
        return None
    return why


def main():
    newer = "--newer" in sys.argv[1:]
    if "--prepare" in sys.argv[1:]:
        prepare(Path(sys.argv[sys.argv.index("--prepare") + 1]))
        return 0
    files, equivalent = (NEWER["source_paths"], NEWER_EQUIVALENT) if newer else (CORE["source_paths"], EQUIVALENT)
    rows, survivors, problems, equivalents, gpu_only, seen = [], [], [], [], [], set()
    for path in files:
        meta = Path("mutants") / f"{path}.meta"
        if not meta.exists():
            problems.append(f"{meta} is missing: run `mutmut run` ({'make mutation-newer' if newer else 'make mutation'}) first")
            continue
        counts = dict(mutants=0, killed=0, equivalent=0, gpu=0, survived=0)
        for mutant, exit_code in sorted(json.loads(meta.read_text())["exit_code_by_key"].items()):
            status = status_by_exit_code[exit_code]
            counts["mutants"] += 1
            seen.add(mutant)
            if status in DETECTED:
                counts["killed"] += 1
                for table, kind in ((equivalent, "equivalent"), (GPU_ONLY, "GPU-only")):
                    if mutant in table:
                        problems.append(f"{mutant} is listed as {kind} but the tests killed it: take it out")
                continue
            if status not in UNDETECTED:
                problems.append(f"{mutant}: {status} (the run did not finish: rerun make mutation)")
                continue
            diff = get_diff_for_mutant(mutant, path=path)
            why = listed(mutant, diff, equivalent, "equivalent", problems)
            test = listed(mutant, diff, GPU_ONLY, "GPU-only", problems)
            if why:
                counts["equivalent"] += 1
                equivalents.append((mutant, changed_lines(diff), why))
            elif test:
                counts["gpu"] += 1
                gpu_only.append((mutant, changed_lines(diff), test))
            else:
                counts["survived"] += 1
                survivors.append((mutant, status, diff))
        tested = counts["mutants"] - counts["equivalent"] - counts["gpu"]
        counts["score"] = 100.0 * counts["killed"] / tested if tested else 100.0
        rows.append((path, counts))
    for mutant in sorted((equivalent.keys() | GPU_ONLY.keys()) - seen):
        problems.append(f"{mutant} is listed but mutmut made no such mutant: take it out")

    keys = ("mutants", "killed", "equivalent", "gpu", "survived")
    print(f"{'file':<14}{'mutants':>9}{'killed':>9}{'equivalent':>12}{'GPU-only':>10}{'survived':>10}{'score':>9}")
    for path, c in rows + [("all", {key: sum(c[key] for _, c in rows) for key in keys})]:
        tested = c["mutants"] - c["equivalent"] - c["gpu"]
        print(f"{path:<14}{c['mutants']:>9}{c['killed']:>9}{c['equivalent']:>12}{c['gpu']:>10}{c['survived']:>10}"
              f"{100.0 * c['killed'] / max(tested, 1):>8.1f}%")
    print(f"score = killed / (mutants - equivalent - GPU-only); target >= {TARGET:g} % per file")

    if "--equivalent" in sys.argv[1:]:
        print(f"\n{len(equivalents)} equivalent mutants:")
        for mutant, lines, why in equivalents:
            print(f"  {mutant}: {' / '.join(line.strip() for line in lines)}\n      {why}")
    if gpu_only:
        print(f"\n{len(gpu_only)} mutants only a GPU tells apart, and the test that does:")
        for mutant, lines, test in gpu_only:
            print(f"  {mutant}: {' / '.join(line.strip() for line in lines)}\n      {test}")
    if survivors:
        print(f"\n{len(survivors)} survivors:")
        for mutant, status, diff in survivors:
            print(f"\n# {mutant}: {status}\n{diff}")
    low = [path for path, c in rows if c["score"] < TARGET]
    for problem in problems:
        print(f"error: {problem}")
    if low:
        print(f"error: below {TARGET:g} %: {', '.join(low)}")
    return 1 if low or problems else 0


if __name__ == "__main__":
    sys.exit(main())
