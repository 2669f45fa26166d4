"""The benchmark at a small size: every method runs and reports time and memory, and the FLOP and
noise-memory counts follow the method's arithmetic; what it will use is checked before any timing,
and the memory estimates cover the peaks measured on a GPU."""
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import bench
import config
import resources
import run
import run_folder
import snn


def test_bench_measures_every_method_at_a_small_size(monkeypatch):
    """bench_method runs each method's generation and reports positive seconds and memory; the
    noise memory of EGGROLL relative to ES follows r (m + n) / (m n) of the dominant layer."""
    monkeypatch.setitem(bench.REFERENCE, "batch", 8)
    monkeypatch.setitem(bench.REFERENCE, "time_bins", 3)
    for method, rank in bench.BENCH_METHODS:
        result = bench.bench_method(method, rank, "cpu", repeats=1, pairs=4)
        assert result["seconds"] > 0 and result["peak_rss_bytes"] > 0, method
        if method == "eggroll":
            assert result["forward_seconds"] > 0 and result["population_product_seconds"] > 0
    stages = bench.bench_kernels("cpu", repeats=1, pairs=4)  # on a CPU both columns run the NumPy code
    assert len(stages) >= 5 and all(t["kernel"] > 0 and t["numpy_twin"] > 0 for t in stages.values())
    n, h, _ = snn.SIZES
    for rank in config.RANKS:
        ratio = bench.noise_bytes("eggroll", rank, 256) / bench.noise_bytes("es-batched", None, 256)
        assert abs(ratio / (rank * (n + h) / (n * h)) - 1) < 0.1  # biases and layer 2 add a few %
    assert bench.flops_per_generation("eggroll", 1) < bench.flops_per_generation("eggroll", 8) \
        < bench.flops_per_generation("es-batched", None)


def test_an_eggroll_generations_flops_are_its_products_multiply_adds_twice():
    """bench's FLOP count of an EGGROLL generation, term by term from the shapes of its products (2 FLOPs
    a multiply-add; rows = T N frames of the minibatch, P pairs, 2P members, r the rank): layer 1's
    x W1^T once and x [B_1 ... B_P] once, each pair's (x B_p) A_p^T with the bias's column; layer 2's
    every member's h W2^T and h B_p then A_p^T; the step's (diag(f) A)^T B for both weights."""
    n, h, o = snn.SIZES
    rows = bench.REFERENCE["time_bins"] * bench.REFERENCE["batch"]
    for rank, pairs in ((1, 8), (4, 64)):
        layer1 = rows * n * h + rows * n * pairs * rank + pairs * rows * (rank + 1) * h
        layer2 = 2 * pairs * rows * (h * o + h * rank + (rank + 1) * o)
        step = pairs * rank * (h * n + o * h)
        assert bench.flops_per_generation("eggroll", rank, pairs) == 2 * (layer1 + layer2 + step), (rank, pairs)


def test_bench_checks_what_it_will_use_before_any_timing(tmp_path, capsys, monkeypatch):
    """Memory for --pairs, the --data-root copy and the --json file's folder are checked before
    the first timing, and options --distributed would pass over refused: one line naming the option,
    exit status 2, nothing timed or written."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts))
    cases = [(["--pairs", "100000000", "--methods", "eggroll-r1", "--repeats", "1"],
              "error: --pairs 100000000 needs about "),
             (["--pairs", "99999999999999999999"], "error: --pairs 99999999999999999999 needs about "),
             (["--json", str(tmp_path / "absent" / "b.json")], f"error: --json {tmp_path / 'absent' / 'b.json'}: "
                                                               f"the folder {tmp_path / 'absent'} does not exist"),
             (["--json", str(tmp_path)], f"error: --json {tmp_path} is a folder"),
             (["--data-root", str(tmp_path / "absent")], f"error: --data-root {tmp_path / 'absent'} holds no N-MNIST"),
             (["--methods", "eggroll-r3"], "error: unknown method 'eggroll-r3' in --methods"),
             (["--methods", "all,bptt"], "error: --methods all stands alone: give 'all', or some of "),
             (["--distributed", "--methods", "bogus"], "error: --distributed always times eggroll-r4 and es-batched "
                                                       "on minibatches of random frames: drop --methods"),
             (["--distributed", "--data-root", str(tmp_path)], "error: --distributed always times eggroll-r4 and "
                                                               "es-batched on minibatches of random frames: drop "
                                                               "--data-root")]
    for extra, message in cases:
        assert run.main(["bench", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith(message) and err.count("\n") == 1, (extra, err)
        assert "--pairs" not in extra or "of RAM" in err and err.rstrip().endswith("lower --pairs"), err
    assert not started and list(tmp_path.iterdir()) == []


def test_bench_keeps_its_frame_cache_out_of_run_folders_and_the_projects_own(tmp_path, capsys, monkeypatch):
    """--cache-dir (or $EGGROLL_CACHE) at a run folder or one of the project's folders: refused in one
    line as train refuses it, before any timing or any frame is cached there."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts))
    root = Path(run.__file__).resolve().parent
    sample = root / "nmnist-sample"
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    for cache, environment, said in ((run_dir, None, f"{run_dir} is a run folder of this project"),
                                     (None, str(run_dir), f"{run_dir} is a run folder of this project"),
                                     (root / "docs", None, "is the project's folder docs/")):
        if environment:
            monkeypatch.setenv("EGGROLL_CACHE", environment)
        assert run.main(["bench", "--data-root", str(sample), *(["--cache-dir", str(cache)] if cache else [])]) == 2
        monkeypatch.delenv("EGGROLL_CACHE", raising=False)
        err = capsys.readouterr().err
        assert err.startswith("error: the frame cache's folder (--cache-dir or $EGGROLL_CACHE) ") and said in err \
            and err.count("\n") == 1, err
    assert not started and [path.name for path in run_dir.iterdir()] == [run_folder.RUN_MARK]
    assert not list((root / "docs").glob("nmnist-*.npz"))


def test_bench_writes_nothing_inside_an_nmnist_copy(tmp_path, capsys, monkeypatch):
    """--json or --cache-dir among a copy's recordings: one line naming the copy, before any timing."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts))
    sample = Path(run.__file__).resolve().parent / "nmnist-sample"
    copy = tmp_path / "copy"
    shutil.copytree(sample, copy)
    for extra, fix in ((["--json", str(copy / "Train" / "b.json")], "give --json a path outside it"),
                       (["--data-root", str(sample), "--cache-dir", str(copy / "Test" / "c")],
                        "point --cache-dir (or $EGGROLL_CACHE) at a folder outside it")):
        assert run.main(["bench", *extra]) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and f"lies inside {copy}, which holds N-MNIST" in err and err.endswith(
            f"; {fix}\n"), err
    assert run.main(["bench", "--json", str(copy / "b.json")]) == 2  # in the copy's own folder, beside Train
    assert capsys.readouterr().err == (f"error: {copy} holds N-MNIST (its Train and Test folders): it is a data folder, "
                                       f"which the project only reads, not where a benchmark's JSON goes; give --json "
                                       f"a path outside it\n")
    assert not started and sorted(p.name for p in (copy / "Train").iterdir()) == list("0123456789")


def test_a_json_path_that_ends_as_a_folders_is_refused(tmp_path, capsys, monkeypatch):
    """--json nd/ names a folder, which the bench would write as a file named nd: one line with the
    fix, before any timing, nothing made."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts))
    monkeypatch.chdir(tmp_path)
    assert run.main(["bench", "--json", "nd/"]) == 2
    assert capsys.readouterr().err == ("error: --json nd/ ends with /, a folder's path: give the path of the JSON "
                                       "file, e.g. nd/bench.json\n")
    assert not started and list(tmp_path.iterdir()) == []


def test_memory_estimates_cover_the_gpu_peaks_measured_and_fit_an_80_gb_gpu():
    """The peak GPU memory bench measured on an H200 (docs/speed.md) lies below the estimate, and the
    largest hyperscale runs' estimates fit an 80 GB GPU: 512 and 65,536 EGGROLL members, 8,192 of
    inference, 512 and 8,192 of vanilla ES."""
    measured = [("eggroll", 1, 256, 82e6), ("eggroll", 4, 256, 105e6), ("eggroll", 1, 4096, 0.5e9),
                ("eggroll", 4, 4096, 0.7e9), ("eggroll", 1, 32768, 3.4e9), ("inference", None, 32768, 0.9e9),
                ("es-batched", None, 256, 729e6), ("es-batched", None, 4096, 10.6e9)]
    for method, rank, pairs, peak in measured:
        estimate = resources.generation_bytes(method, rank, pairs, bench.REFERENCE["batch"],
                                              bench.REFERENCE["time_bins"], gpu=True)
        assert peak <= estimate < 40e9, (method, rank, pairs, estimate)


def earlier_record(pairs=4, rows=(("eggroll", 1),), **more):
    """A benchmark's JSON as bench writes it, of the settings check_request compares."""
    from backend import device_name
    return json.dumps({"machine": "an earlier run", "device": device_name(np), "pairs": pairs,
                       "rows": [{"method": method, "rank": rank} for method, rank in rows], **more}, indent=1)


def test_an_existing_json_file_is_replaced_so_the_bench_runs_twice(tmp_path, capsys, monkeypatch):
    """`make bench` writes bench.json each time: an existing file of the same settings is a path to
    replace (through a temporary file beside it), not a folder that is missing."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts.json))
    target = tmp_path / "bench.json"
    target.write_text(earlier_record())  # bench's own JSON of these settings: replaced; another file is not
    for _ in range(2):
        assert run.main(["bench", "--pairs", "4", "--methods", "eggroll-r1", "--repeats", "1", "--json",
                         str(target)]) == 0, capsys.readouterr().err
    assert started == [str(target)] * 2


@pytest.mark.parametrize("record, differ", [
    (earlier_record(pairs=256), "pairs 256, not 4"),
    (earlier_record(rows=(("eggroll", 1), ("inference", None))), "methods eggroll-r1, inference, not eggroll-r1"),
    (earlier_record(data={"n_train": 162}), "--data-root True, not False"),
    (earlier_record(device="NVIDIA H200"), "device NVIDIA H200, not {cpu}"),
    ('{\n "machine": "an earlier run"\n}', "not a whole record")])
def test_a_json_record_of_other_settings_is_kept_not_replaced(tmp_path, capsys, monkeypatch, record, differ):
    """A benchmark's JSON measured at other pairs, methods, device or data is another measurement (the
    committed results/bench/ records among them): refused in one line before any timing, left as it
    is."""
    started = []
    monkeypatch.setattr(bench, "bench", lambda opts: started.append(opts.json))
    target = tmp_path / "bench.json"
    target.write_text(record)
    assert run.main(["bench", "--pairs", "4", "--methods", "eggroll-r1", "--repeats", "1", "--json",
                     str(target)]) == 2
    from backend import device_name
    assert capsys.readouterr().err == (
        f"error: --json {target} holds a benchmark of other settings ({differ.format(cpu=device_name(np))}): it is left "
        f"as it is; give another --json, or move it away to measure these there\n")
    assert not started and target.read_text() == record


def test_the_data_pipeline_times_minibatches_of_a_split_smaller_than_one_batch(tmp_path):
    """The sample's training split (162 recordings) holds no whole batch of 256: the pipeline times
    batches of the whole split instead, and says so, rather than 0 samples/s."""
    from nmnist_files import SAMPLE
    timed = bench.data_pipeline(SAMPLE, tmp_path / "cache", batch_size=256)
    assert timed["n_train"] == 162 and timed["batch_size"] == 162 and timed["batches_samples_per_s"] > 0


def test_a_method_named_twice_is_one_row_timed_once():
    """--methods eggroll-r1,es-batched,eggroll-r1: each row once, in the order first named."""
    assert bench.chosen_methods("eggroll-r1,es-batched,eggroll-r1") == [("eggroll", 1), ("es-batched", None)]
    with pytest.raises(ValueError, match=re.escape("--methods 'eggroll-r1, es-batched' holds a space: separate the "
                                                   "names by single commas, e.g. es-batched,es-sequential")):
        bench.chosen_methods("eggroll-r1, es-batched")  # not "unknown method ' es-batched'", a name it then lists


@pytest.mark.parametrize("script, args, told", [
    ("bench.py", [], "bench.py holds the benchmark, which runs as `python run.py bench` (its options: `python run.py "
                     "bench --help`)"),
    ("bench.py", ["--help"], "bench.py holds the benchmark"),
    ("bench.py", ["--pairs", "4"], "bench.py holds the benchmark"),
    ("reproduce.py", ["--help"], "reproduce.py holds the paper's grid of runs, its tables and figures, which runs as "
                                 "`python run.py reproduce` (its options: `python run.py reproduce --help`)"),
    ("report.py", ["x"], "report.py holds reproduce's tables and figures, which runs as `python run.py reproduce "
                         "--report-only` (its options: `python run.py reproduce --help`)"),
    ("emulate.py", [], "emulate.py holds the emulation of N-MNIST from MNIST, which runs as `python run.py emulate`"),
    ("training.py", ["--out", "x"], "training.py holds the training loop, which runs as `python run.py train` (its "
                                    "options: `python run.py train --help`)")])
def test_a_module_of_run_py_run_as_a_script_names_the_command_that_runs_it(tmp_path, script, args, told):
    """`python bench.py` (or reproduce.py, report.py, emulate.py, training.py) is no command of its own:
    one line naming the run.py command that runs it, exit status 2, and nothing done or written."""
    done = subprocess.run([sys.executable, str(Path(bench.__file__).with_name(script)), *args], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == "" and done.stderr.startswith(f"error: {told}") and \
        done.stderr.count("\n") == 1, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmSize is read from /proc")
def test_under_an_address_space_limit_the_bench_measures_or_is_refused_in_one_line(tmp_path):
    """Under ulimit -v from 256 to 500 MB, `bench --pairs 1` measures, or is refused before it
    starts in one line that names the limit as the fix (--pairs is 1 already), exit 2; never
    OpenBLAS's own abort in the products it times after the methods (it once failed at 280-300 MB)."""
    import resource
    outcomes = set()
    for megabytes in (256, 280, 300, 350, 500):
        limit = lambda: resource.setrlimit(resource.RLIMIT_AS, (megabytes * 2**20, resource.RLIM_INFINITY))
        done = subprocess.run([sys.executable, str(Path(run.__file__)), "bench", "--pairs", "1", "--methods",
                               "inference", "--repeats", "1", "--json", str(tmp_path / f"{megabytes}.json")],
                              cwd=tmp_path, preexec_fn=limit, capture_output=True, text=True)
        if done.returncode == 0:
            assert (tmp_path / f"{megabytes}.json").exists()
        else:
            assert done.returncode == 2 and done.stderr.count("\n") == 1 and \
                done.stderr.rstrip().endswith("raise the limit (ulimit -v)"), (megabytes, done.stderr[-500:])
        outcomes.add(done.returncode)
    assert outcomes == {0, 2}


def test_the_distributed_table_shows_the_share_of_time_in_collectives_in_percent():
    """format_distributed: 0.2 s of 0.5 s a generation in collectives is a 40.0 % share."""
    row = {"method": "eggroll r=4", "update": "seeds", "processes": 2, "seconds_per_generation": 0.5,
           "communication_seconds": 0.2, "bytes_sent_per_process": 512.0}
    table = bench.format_distributed({"machine": "cpu", "processes": 2, "blas_threads": "1", "rows": [row]})
    assert "| eggroll r=4 | seeds | 2 | 0.500 | 0.2000 | 40.0 % | 512 |" in table, table


def test_the_bench_table_is_a_table_every_row_as_wide_as_its_header():
    """format_bench of the committed CPU record: the delimiter row and every row have as many cells as
    the header (one cell fewer and Markdown shows the lines as text)."""
    import json
    summary = json.loads((Path(bench.__file__).parent / "results" / "bench" / "cpu-2core.json").read_text())
    table = [line for line in bench.format_bench(summary).splitlines() if line.startswith("|")]
    assert len(table) == 2 + len(summary["rows"]) and table[1].startswith("|---")
    assert {line.count("|") for line in table} == {table[0].count("|")}, table


def test_a_json_path_that_is_no_regular_file_is_refused_before_any_timing(tmp_path):
    """--json /dev/null (a device) or a named pipe would not hold the record, or would block: refused
    by name, with the fix."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    for path in ("/dev/null", pipe):
        with pytest.raises(run_folder.UsageError) as refused:
            resources.check_writable(path, "--json")
        assert str(refused.value) == f"--json {path} is not a regular file; give a file path"
