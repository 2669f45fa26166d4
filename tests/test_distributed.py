"""One population over MPI processes: the split of the pairs, the fixed-shape population product
that makes the split invisible, and real `mpiexec` jobs on the real recordings whose weights equal
the single-process run bit for bit (update "seeds") or within float32 rounding (update
"allreduce"), resume with another number of processes, and end when one process dies; a process
that fails its checks is named by its rank, and a signal stops every process at one step."""
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import baselines
import distributed
import eggroll
import run_folder
import snn
import snn_eggroll
from nmnist_files import REAL_ROOT, needs_real

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec", path=str(Path(sys.executable).parent)) or shutil.which("mpiexec")


# ---------------------------------------------------------------------------------------------
# Without MPI: the split and the products

@settings(max_examples=60)
@given(n_pairs=st.integers(0, 700), block=st.integers(1, 70), size=st.integers(1, 9))
def test_shares_cover_every_pair_once_in_whole_blocks(n_pairs, block, size):
    """The K shares are contiguous, in rank order, cover 0..P-1 exactly once, start on a block
    boundary, and differ by at most one block."""
    shares = [distributed.share(n_pairs, block, rank, size) for rank in range(size)]
    assert shares[0].start == 0 and shares[-1].stop == n_pairs
    for before, after in zip(shares, shares[1:]):
        assert before.stop == after.start
    assert all(s.start % block == 0 or s.start == n_pairs for s in shares)
    blocks = [-(-(s.stop - s.start) // block) for s in shares]
    assert max(blocks) - min(blocks) <= 1


@settings(max_examples=60)
@given(n_pairs=st.integers(1, 700), block=st.integers(1, 70), size=st.integers(1, 9))
def test_idle_counts_the_processes_without_a_pair(n_pairs, block, size):
    """distributed.idle is the count of empty shares: none where the blocks are at least the processes."""
    shares = [distributed.share(n_pairs, block, rank, size) for rank in range(size)]
    empty = sum(share.stop == share.start for share in shares)
    assert distributed.idle(n_pairs, block, size) == empty
    assert (empty == 0) == (-(-n_pairs // block) >= size)


@pytest.mark.parametrize("problems, said", [
    (["--population 8: needs 30.2 GB, more than the 23.6 GB free", "--population 8: needs 30.2 GB, more than the "
      "23.5 GB free"], "--population 8: needs 30.2 GB, more than the 23.6 GB free"),  # RAM read a moment apart
    (["no data in /a", None], "rank 0 of 2: no data in /a"),
    (["no data in /a", "no cache folder /b"], "rank 0 of 2: no data in /a; rank 1 of 2: no cache folder /b")])
def test_the_processes_checks_are_said_once_naming_the_ranks_unless_all_failed_alike(problems, said):
    """training.checked_together: every process raises one JobError; where all failed alike, their
    messages the same but for numbers such as the free RAM each read, it is the first one's words alone."""
    import training
    team = type("Pair", (distributed.Alone,), dict(size=2, problems=lambda self, problem: problems,
                                                    stop_if_signalled=lambda self: None))()
    with pytest.raises(training.JobError) as raised:
        with training.checked_together(team):
            pass
    assert str(raised.value) == said


def test_each_process_of_a_machine_takes_its_own_gpu():
    """A job of 4 processes on two machines of 2 GPUs each, dealt out in turn (mpiexec --map-by
    node): ranks 0 and 2 share machine A, 1 and 3 machine B. Each takes the GPU of its rank on its
    machine, so no two share one; a single process takes the first."""
    dealt = [type("Process", (distributed.Alone,), dict(rank=rank, size=4, local_rank=rank // 2, local_size=2))()
             for rank in range(4)]
    by_machine = {(process.rank % 2, process.gpu(2)) for process in dealt}
    assert len(by_machine) == 4 and [process.gpu(2) for process in dealt] == [0, 0, 1, 1]
    assert distributed.ALONE.gpu(8) == 0 and dealt[3].gpu(1) == 0


def test_a_job_with_idle_processes_is_told_how_to_keep_them_at_work(capsys):
    """train's note: 64 pairs (one block) over 2 processes leave one idle; 128 pairs, or BPTT, none."""
    import config
    import training
    training.note_idle_processes(config.RunConfig(population=128), 2)
    assert capsys.readouterr().err == ("note: the population's 64 pairs go out in blocks of 64, so 1 of the 2 "
                                       "processes gets none and only waits; --population 256 or more keeps every one at work\n")
    training.note_idle_processes(config.RunConfig(population=256), 2)
    training.note_idle_processes(config.RunConfig(method="bptt", population=128), 2)
    assert capsys.readouterr().err == ""
    training.note_idle_processes(config.RunConfig(method="es", population=128), 2)  # vanilla ES deals blocks too
    assert capsys.readouterr().err.startswith("note: the population's 64 pairs go out in blocks of 64, so 1 of the 2")


@pytest.mark.parametrize("rank_variable, size_variable", [("PMI_RANK", "PMI_SIZE"),
                                                          ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
                                                          ("PMIX_RANK", None)])
def test_a_process_learns_its_rank_and_its_jobs_size_from_any_launcher(monkeypatch, rank_variable, size_variable):
    """Before MPI starts, a process reads its rank and its job's size from the variables its launcher
    sets (MPICH and Intel MPI, Open MPI, PMIx); outside a job it is rank 0 of 1."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    assert (distributed.launched_rank(), distributed.launched_size()) == (0, 1)
    monkeypatch.setenv(rank_variable, "2")
    if size_variable:
        monkeypatch.setenv(size_variable, "3")
    assert (distributed.launched_rank(), distributed.launched_size()) == (2, 3 if size_variable else 1)


def test_a_launcher_variable_that_is_no_number_is_passed_over(monkeypatch):
    """A rank or size variable set but not a whole number (empty, or a wrapper's text) is no launcher's:
    the next one is read, and outside a job the process is rank 0 of 1 (not int()'s ValueError)."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("PMI_RANK", "abc")
    monkeypatch.setenv("PMI_SIZE", "-3")
    assert (distributed.launched_rank(), distributed.launched_size()) == (0, 1)
    monkeypatch.setenv("OMPI_COMM_WORLD_RANK", "2")
    monkeypatch.setenv("OMPI_COMM_WORLD_SIZE", "3")
    assert (distributed.launched_rank(), distributed.launched_size()) == (2, 3)


@pytest.mark.parametrize("rank", [1, 4])
def test_population_product_of_any_share_equals_its_columns_of_the_whole(rank):
    """x [B_1 ... B_P] for a share of the pairs is, bit for bit, that share's columns of the product
    for all pairs: every BLAS call has the same shape, whoever computes it. 150 pairs (3 blocks,
    the last one part-filled), shares of 2 and 3 processes."""
    rng = np.random.default_rng(rank)
    x = (rng.random((60, 2312)) < 0.1).astype(np.float32)
    factors = rng.standard_normal((150, rank, 2312)).astype(np.float32)
    whole = eggroll.population_product(x, factors)
    assert whole.shape == (60, 150, rank)
    np.testing.assert_allclose(whole, np.einsum("nk,prk->npr", x, factors), rtol=1e-4, atol=1e-4)
    for size in (2, 3):
        for process in range(size):
            mine = distributed.share(150, eggroll.PAIRS_PER_BLOCK, process, size)
            assert np.array_equal(eggroll.population_product(x, factors[mine]), whole[:, mine])


def test_gradients_of_the_shares_sum_to_the_whole_gradient():
    """The all-reduce update: the gradients of the K shares, Eqs. (7)-(8) over each share's pairs,
    add up to the gradient over all pairs within float32 rounding (1e-5 of the largest entry)."""
    params = snn.init_params(0)
    config = snn_eggroll.Config(population=300, rank=2, sigma=0.1, seed=4, logit_scale=1.0)
    f = np.random.default_rng(1).uniform(-1, 1, config.pairs).astype(np.float32)
    whole = eggroll.gradient(f, config.members(params, 3), config.pairs)
    for size in (2, 3):
        parts = [eggroll.gradient(f[s], config.members(params, 3, s), config.pairs)
                 for s in (distributed.share(config.pairs, eggroll.PAIRS_PER_BLOCK, k, size) for k in range(size))]
        for name in whole:
            np.testing.assert_allclose(sum(p[name] for p in parts), whole[name], rtol=0,
                                       atol=1e-5 * np.abs(whole[name]).max())


@pytest.mark.parametrize("method", ["eggroll", "batched", "sequential"])
def test_a_process_without_pairs_contributes_nothing(method):
    """With more processes than blocks of pairs a process holds none: its forward pass gives no
    members and its part of the all-reduce update is zero, in the parameters' shapes (EGGROLL and
    both vanilla-ES modes)."""
    params = snn.init_params(0, (40, 8, 10))
    frames = (np.random.default_rng(0).random((3, 4, 40)) < 0.3).astype(np.float32)
    nothing = distributed.share(30, eggroll.PAIRS_PER_BLOCK, 0, 2)  # 30 pairs, one block: process 1's
    assert nothing.start == nothing.stop
    f = np.zeros(0, dtype=np.float32)
    if method == "eggroll":
        config = snn_eggroll.Config(60, 2, sigma=0.1, seed=0, logit_scale=1.0)
        counts, hidden = snn_eggroll.perturbed_forward(params, frames, config, 0, count_hidden=True, pairs=nothing)
        grads = eggroll.gradient(f, config.members(params, 0, nothing), config.pairs)
    else:
        config = baselines.ESConfig(60, sigma=0.1, seed=0, logit_scale=1.0, mode=method)
        counts, hidden = baselines.es_forward(params, frames, config, 0, count_hidden=True, pairs=nothing)
        grads = baselines.full_rank_gradient(f, params, config, 0, nothing)
    assert counts.shape == (0, 4, 10) and hidden.shape == (0,)
    for name, value in params.items():
        assert grads[name].shape == value.shape and not grads[name].any()


# ---------------------------------------------------------------------------------------------
# Real MPI jobs

def mpiexec_works():
    if MPIEXEC is None:
        return "no mpiexec on PATH or beside the Python interpreter (pip install -e \".[mpi]\")"
    try:
        probe = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-c",
                                "from mpi4py import MPI; assert MPI.COMM_WORLD.Get_size() == 2"],
                               capture_output=True, timeout=60)
    except subprocess.TimeoutExpired:
        return "mpiexec -n 2 did not start within 60 s"
    return None if probe.returncode == 0 else f"mpiexec -n 2 cannot start: {probe.stderr.decode()[-300:]}"


MPI_PROBLEM = mpiexec_works()
needs_mpi = pytest.mark.skipif(MPI_PROBLEM is not None, reason=str(MPI_PROBLEM))

# 200 pairs: four blocks of 64 pairs, the last part-filled, so 2 and 3 processes get unequal shares.
SETTINGS = ["--population", "400", "--rank", "2", "--batch-size", "32", "--generations", "6", "--eval-every", "3",
            "--quiet", "--data-root", str(REAL_ROOT)]
# Vanilla ES (no rank) on 65 pairs, blocks of 64 and 1, so 2 processes get unequal shares: its full-rank
# noise costs about ten times EGGROLL's a member here, so it gets a third of the members.
ES_SETTINGS = ["--population", "130", *(option for option in SETTINGS[2:] if option not in ("--rank", "2"))]


def train(out, cache, processes=None, *extra, timeout=300):
    """run.py train, alone (processes=None) or under mpiexec -n processes with --distributed."""
    settings = ES_SETTINGS if "es" in extra else SETTINGS
    command = [sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), "--cache-dir", str(cache),
               *settings, *extra]
    if processes:
        command = [MPIEXEC, "-n", str(processes), *command, "--distributed"]
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def weights(out):
    with np.load(out / run_folder.CHECKPOINT) as stored:
        return {name: stored[name] for name in stored.files if name.startswith(("param/", "adam_"))}


def assert_same_bits(expected, actual):
    assert expected.keys() == actual.keys()
    for name in expected:
        np.testing.assert_array_equal(expected[name], actual[name], err_msg=name)


@pytest.fixture(scope="module")
def alone(tmp_path_factory):
    """The single-process runs (EGGROLL and vanilla ES) the MPI jobs must reproduce."""
    base = tmp_path_factory.mktemp("alone")
    for method in ("eggroll", "es"):
        done = train(base / method, base / "cache", None, "--method", method)
        assert done.returncode == 0, done.stderr
    return base


@needs_real
@needs_mpi
@pytest.mark.parametrize("method, processes", [("eggroll", 1), ("eggroll", 2), ("eggroll", 3), ("es", 2)])
def test_an_mpi_job_ends_with_the_weights_of_a_single_process(alone, tmp_path, method, processes):
    done = train(tmp_path / "run", alone / "cache", processes, "--method", method)
    assert done.returncode == 0, done.stderr
    assert_same_bits(weights(alone / method), weights(tmp_path / "run"))
    assert done.stdout.count("test_acc") == 1  # the first process alone reports
    alone_said = ("warning: --distributed in a job of one process: train ran as without it; to share the population "
                  "out, start K processes: mpiexec -n K python run.py train --distributed ...\n")
    assert (done.stderr == alone_said) == (processes == 1) and (alone_said in done.stderr) == (processes == 1), \
        done.stderr
    expected, final = (json.loads((folder / "final.json").read_text()) for folder in (alone / method, tmp_path / "run"))
    for key in ("val_acc", "test_acc", "spikes_per_sample", "val_acc_per_digit", "test_acc_per_digit"):
        assert final[key] == expected[key], key  # evaluation split over the processes, counts summed exactly


@needs_real
@needs_mpi
def test_the_allreduce_update_agrees_within_float32_rounding(alone, tmp_path):
    """Summing the shares' gradients in another order moves the weights by float32 rounding only:
    after 6 Adam steps at lr 0.01, every weight within 1e-3 of the single-process run (measured:
    about 1e-5), and the run did not simply repeat the bits of the other update."""
    done = train(tmp_path / "run", alone / "cache", 2, "--update", "allreduce")
    assert done.returncode == 0, done.stderr
    expected, actual = weights(alone / "eggroll"), weights(tmp_path / "run")
    names = [n for n in expected if n.startswith("param/")]
    assert max(np.abs(expected[n] - actual[n]).max() for n in names) <= 1e-3
    assert any(not np.array_equal(expected[n], actual[n]) for n in names)
    # its checkpoint says how it was summed, which a resume must repeat; a single process's says none
    assert run_folder.checkpoint_identity(tmp_path / "run")["summed"] == "allreduce on 2 processes"
    assert run_folder.checkpoint_identity(alone / "eggroll")["summed"] is None


@needs_real
@needs_mpi
def test_help_on_one_process_of_a_job_ends_every_process(tmp_path):
    """--help given to the second process only: the first, which would wait for it, is told, and the
    job ends in one line within seconds; --help to every process shows the help once."""
    run_py = [sys.executable, str(ROOT / "run.py"), "train", "--distributed"]
    command = [MPIEXEC, "-n", "1", *run_py, "--out", str(tmp_path / "run"), *SETTINGS, ":", "-n", "1", *run_py,
               "--help"]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and not (tmp_path / "run").exists(), done.stderr
    assert done.stderr.strip().splitlines()[-1] == ("error: rank 1 of 2: run.py train --help shows the options "
                                                    "and starts nothing; run it without --help")
    every = subprocess.run([MPIEXEC, "-n", "2", *run_py, "--help"], cwd=ROOT, capture_output=True, text=True,
                           timeout=60)
    assert every.stdout.count("usage: run.py train") == 1, every.stdout


@needs_mpi
def test_a_job_whose_process_dies_ends_and_resumes_with_another_number_of_processes(alone, tmp_path):
    """Kill the first process of a 3-process job after its first checkpoint: the job ends (no
    process is left waiting), and --resume with 2 processes ends with the single-process weights."""
    longer = ("--generations", "30")
    whole = train(tmp_path / "whole", alone / "cache", None, *longer)
    assert whole.returncode == 0, whole.stderr
    out = tmp_path / "run"
    command = [MPIEXEC, "-n", "3", sys.executable, str(ROOT / "run.py"), "train", "--out", str(out),
               "--cache-dir", str(alone / "cache"), *SETTINGS, *longer, "--distributed"]
    job = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"),
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 120
        while not (out / run_folder.CHECKPOINT).exists() and time.time() < deadline and job.poll() is None:
            time.sleep(0.002)
        os.kill(int((out / run_folder.LOCK).read_text()), signal.SIGKILL)  # the first process
        job.wait(timeout=60)  # raises TimeoutExpired if the others were left waiting
    finally:
        if job.poll() is None:
            job.kill()
            job.wait()
    assert job.returncode != 0 and not (out / "final.json").exists()
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert 3 <= int(stored["step"]) < 30, "the job must die mid-way for this test to mean anything"
    done = train(out, alone / "cache", 2, *longer, "--resume")
    assert done.returncode == 0, done.stderr
    assert_same_bits(weights(tmp_path / "whole"), weights(out))


@needs_real
@needs_mpi
def test_bptt_is_refused_with_one_line(tmp_path):
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(ROOT / "run.py"), "train", "--method", "bptt",
                           "--out", str(tmp_path / "run"), "--data-root", str(REAL_ROOT), "--cache-dir",
                           str(tmp_path / "cache"), "--quiet", "--distributed"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2
    assert "error: BPTT runs on one process: drop --distributed" in done.stderr
    assert done.stderr.count("error:") == 1 and not (tmp_path / "run").exists()


def test_without_mpi4py_distributed_names_the_install_command(tmp_path):
    """A Python that cannot import mpi4py: one line naming the install command, exit status 2."""
    fake = tmp_path / "no_mpi" / "mpi4py"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError('mpi4py is not installed')\n")
    env = dict(os.environ, PYTHONPATH=str(fake.parent))
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--distributed", "--out",
                           str(tmp_path / "run")], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert 'error: --distributed needs mpi4py and an MPI library: pip install -e ".[mpi]"' in done.stderr
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------------------------------------
# Every process speaks

def job(command, tmp_path, timeout=300):
    """Run an MPI job in its own session (so that it can be ended whole), its stderr as text."""
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        err = process.communicate(timeout=timeout)[1]
        return process.returncode, err
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@needs_real
@needs_mpi
def test_a_process_that_fails_its_checks_is_named_by_rank_and_nothing_is_written(tmp_path):
    """One process of the job cannot read its data, or write its frame cache: the first process
    prints one line with that process's rank and reason, and the run folder is never made. A run
    too large for memory, or a mistyped option, is refused by every process alike: one line."""
    out, cache = tmp_path / "run", tmp_path / "cache"
    (tmp_path / "file").write_text("")
    train = [sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), *SETTINGS[:-2], "--distributed"]
    first = [MPIEXEC, "-n", "1", "env", f"NMNIST_ROOT={REAL_ROOT}", f"EGGROLL_CACHE={cache}", *train]
    cases = [(["env", f"NMNIST_ROOT={tmp_path / 'absent'}", f"EGGROLL_CACHE={cache}"],
              f"error: rank 1 of 2: N-MNIST not found in {tmp_path / 'absent'}"),
             (["env", f"NMNIST_ROOT={REAL_ROOT}", f"EGGROLL_CACHE={tmp_path / 'file' / 'cache'}"],
              "error: rank 1 of 2: ")]
    for environment, message in cases:
        code, err = job([*first, ":", "-n", "1", *environment, *train], tmp_path)
        assert code == 2 and err.count("error:") == 1 and message in err, err
        assert str(tmp_path / "file" / "cache") in err or "N-MNIST" in err, err
        assert not out.exists()
    code, err = job([MPIEXEC, "-n", "2", *train[:-1], "--data-root", str(REAL_ROOT), "--cache-dir", str(cache),
                     "--population", "100000000", "--distributed"], tmp_path)
    assert code == 2 and err.count("error:") == 1 and "rank" not in err, err
    assert "error: --population 100000000: the run needs about " in err and "RAM for 2 processes" in err, err
    code, err = job([MPIEXEC, "-n", "2", *train, "--rank", "x"], tmp_path)  # argparse's errors, once too
    assert code == 2 and err == "error: argument --rank: invalid int value: 'x'; see run.py train --help\n", err
    assert not out.exists()


@needs_real
@needs_mpi
@pytest.mark.parametrize("signal_name, target", [("SIGINT", "mpiexec"), ("SIGTERM", "mpiexec"),
                                                 ("SIGTERM", "first process"), ("SIGINT", "first process")])
def test_a_signal_stops_every_process_at_one_step_and_says_how_to_continue(tmp_path, signal_name, target):
    """Ctrl-C or SIGTERM to mpiexec (which passes it on to every process), or to one process alone:
    all stop at the same generation, the first prints one line with the step and --resume, the
    exit status is 130 or 143, and the checkpoint is whole."""
    out = tmp_path / "run"
    command = [MPIEXEC, "-n", "2", sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), "--cache-dir",
               str(tmp_path / "cache"), *SETTINGS, "--generations", "100000", "--distributed"]
    process = subprocess.Popen(command, cwd=ROOT, env=dict(os.environ, OPENBLAS_NUM_THREADS="1"), text=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (out / run_folder.CHECKPOINT).exists() and time.time() < deadline and process.poll() is None:
            time.sleep(0.01)
        pid = process.pid if target == "mpiexec" else int((out / run_folder.LOCK).read_text())
        os.kill(pid, getattr(signal, signal_name))
        err = process.communicate(timeout=120)[1]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert process.returncode == 128 + getattr(signal, signal_name) and len(lines) == 1, err
    assert lines[0].startswith(f"error: interrupted: {out} stopped at step ") and "rerun with --resume" in lines[0]
    with np.load(out / run_folder.CHECKPOINT) as stored:
        assert int(stored["step"]) >= 3


# ---------------------------------------------------------------------------------------------
# Processes given different runs, and a process that never comes

@needs_real
@needs_mpi
def test_processes_given_different_runs_stop_before_anything_is_written(tmp_path):
    """mpiexec's MPMD form gives each process its own command line: processes given another seed,
    another copy of the data (one recording fewer), another version of the code or another --out (only
    process 0 writes, so the others' --out was dropped unsaid) all stop before
    the first generation, with one line naming what differs and the ranks, exit status 2, and no
    run folder. (Without the comparison the first two ran to the end, with a config.json naming one
    seed and weights of neither run.)"""
    out, cache = tmp_path / "run", tmp_path / "cache"
    fewer = tmp_path / "fewer"
    shutil.copytree(REAL_ROOT, fewer)  # a copy, not links: tmp_path may be on another file system
    next((fewer / "Train" / "3").glob("*.bin")).unlink()
    code = tmp_path / "code"
    code.mkdir()
    for module in ROOT.glob("*.py"):
        shutil.copyfile(module, code / module.name)
    with open(code / "snn.py", "a") as edited:
        edited.write("\n# another version of the code\n")
    settings = ["--population", "16", "--batch-size", "32", "--generations", "3", "--quiet", "--data-root",
                str(REAL_ROOT)]
    train = lambda script, *extra: [sys.executable, str(script), "train", "--out", str(out), "--cache-dir", str(cache),
                                    *settings, "--distributed", *extra]
    cases = [((ROOT / "run.py", "--seed", "1"), (ROOT / "run.py", "--seed", "2"), "--seed (rank 0: 1; rank 1: 2)"),
             ((ROOT / "run.py",), (ROOT / "run.py", "--data-root", str(fewer)), "the train split (rank 0: "),
             ((ROOT / "run.py",), (code / "run.py",), "the project's code (rank 0: sha256 "),
             ((ROOT / "run.py",), (ROOT / "run.py", "--out", str(tmp_path / "other")),  # process 0 alone writes
              f"--out (rank 0: {out}; rank 1: {tmp_path / 'other'})")]
    for first, second, named in cases:
        status, err = job([MPIEXEC, "-n", "1", *train(*first), ":", "-n", "1", *train(*second)], tmp_path)
        assert status == 2 and err.count("error:") == 1, err
        assert f"error: the processes of this job were given different runs: {named}" in err, err
        assert not out.exists() and not (tmp_path / "other").exists()


def lines_within(stream, count, seconds):
    """The next `count` lines of `stream`, or those that came within `seconds`."""
    lines = []

    def read():
        for _ in range(count):
            lines.append(stream.readline())

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(seconds)
    return list(lines)


@needs_mpi
def test_a_signal_reaches_a_process_waiting_for_one_that_never_comes(tmp_path):
    """Process 0 waits in a collective call that process 1 never makes: SIGTERM (to mpiexec, which
    passes it on) still ends the job, once process 0 has waited its patience for the other, and the
    line process 0 printed last reaches mpiexec's output before the job is torn down. Each line is
    one write: mpiexec passes on the processes' output write by write, so print's several writes
    (unbuffered, as under PYTHONUNBUFFERED) of two processes could interleave into a blank line."""
    script = tmp_path / "never_comes.py"
    script.write_text(f"import signal, sys, time\n"
                      f"sys.path.insert(0, {str(ROOT)!r})\n"
                      f"import distributed\n"
                      f"team = distributed.team('seeds')\n"
                      f"team.patience = 1.0\n"
                      f"signal.signal(signal.SIGTERM, lambda signum, frame: team.on_signal(signum))\n"
                      f"say = lambda line: (sys.stdout.write(line + '\\n'), sys.stdout.flush())\n"
                      f"say(f'ready {{team.rank}}')\n"
                      f"if team.rank == 0:\n"
                      f"    try:\n"
                      f"        team.problems(None)\n"
                      f"    except distributed.Stopped as stop:\n"
                      f"        say(f'stopped waiting {{stop}}')\n"
                      f"        team.abort(143)\n"
                      f"while True:\n"
                      f"    time.sleep(0.1)  # process 1: the signal is noted, and it never comes\n")
    process = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, str(script)], cwd=ROOT, text=True,
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True,
                               env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        ready = lines_within(process.stdout, 2, seconds=120)
        assert sorted(line.split()[-1] for line in ready) == ["0", "1"], ready
        time.sleep(0.5)
        os.kill(process.pid, signal.SIGTERM)
        said = process.communicate(timeout=60)[0]
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert "stopped waiting SIGTERM" in said and process.returncode != 0


@needs_mpi
@pytest.mark.parametrize("second, said", [
    (["--bogus"], "error: rank 1 of 2: unrecognized arguments: --bogus; see run.py train --help"),
    (["--rank", "x"], "error: rank 1 of 2: argument --rank: invalid int value: 'x'; see run.py train --help"),
    ([], "error: rank 1 of 2: this process is one of an MPI job's, but train was not given --distributed: give "
         "every process `train --distributed`; see run.py train --help")])
def test_a_command_line_refused_on_one_process_ends_every_process_with_its_rank(tmp_path, second, said):
    """A mistyped option on the second process only, or no --distributed there (mpiexec's MPMD
    form): not silence and a hang until SIGTERM, but one line naming the rank and the error, exit
    status 2 from the job, and no run folder."""
    train = [sys.executable, str(ROOT / "run.py"), "train", "--out", str(tmp_path / "run"), "--quiet"]
    first = [MPIEXEC, "-n", "1", *train, "--distributed"]
    code, err = job([*first, ":", "-n", "1", *train, *second, *(["--distributed"] if second else [])], tmp_path,
                    timeout=120)
    assert code == 2 and err == said + "\n", err
    assert not (tmp_path / "run").exists()


@needs_mpi
def test_a_signal_ends_a_job_whose_other_process_never_starts_mpi(tmp_path):
    """A process given another command line (here one that never starts MPI) leaves the other
    waiting in MPI's start, beyond Python's signal handlers: SIGTERM to mpiexec still ends the job."""
    command = [MPIEXEC, "-n", "1", sys.executable, str(ROOT / "run.py"), "train", "--distributed", "--quiet",
               "--out", str(tmp_path / "run"), ":", "-n", "1", sys.executable, "-c", "pass"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               start_new_session=True)
    try:
        time.sleep(4)  # the first process is waiting for the second by now
        assert process.poll() is None
        os.kill(process.pid, signal.SIGTERM)
        process.wait(timeout=60)  # raises TimeoutExpired if the signal was held back
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    assert process.returncode != 0 and not (tmp_path / "run").exists()


@needs_mpi
def test_processes_given_different_commands_stop_before_anything_is_written(tmp_path):
    """mpiexec's MPMD form with a training run on one process and a benchmark on the other, or two
    benchmarks of different sizes: one line naming what differs and the ranks, exit status 2."""
    run_py = [sys.executable, str(ROOT / "run.py")]
    bench = [*run_py, "bench", "--distributed", "--repeats", "1", "--pairs"]
    cases = [([*run_py, "train", "--distributed", "--quiet", "--out", str(tmp_path / "run")], [*bench, "4"],
              "the command (rank 0: train; rank 1: bench)"),
             ([*bench, "4"], [*bench, "8"], "--pairs (rank 0: 4; rank 1: 8)")]
    for first, second, named in cases:
        status, err = job([MPIEXEC, "-n", "1", *first, ":", "-n", "1", *second], tmp_path, timeout=120)
        assert status == 2 and err.count("error:") == 1, err
        assert f"error: the processes of this job were given different runs: {named}" in err, err
        assert not (tmp_path / "run").exists()


@needs_mpi
def test_bench_of_a_job_with_an_idle_process_says_so_and_shows_means(tmp_path):
    """bench --distributed --pairs 64 on 2 processes: one has no pair, which a note says, and the
    rows' collectives and bytes are means over the processes, not the idle first one's zeros."""
    status, err = job([MPIEXEC, "-n", "2", sys.executable, str(ROOT / "run.py"), "bench", "--distributed",
                       "--repeats", "1", "--pairs", "64", "--json", str(tmp_path / "bench.json")], tmp_path,
                      timeout=300)
    assert status == 0 and err.count("leave 1 of the 2 processes without one: --pairs 128 or more") == 1, err
    rows = json.loads((tmp_path / "bench.json").read_text())["rows"]
    assert all(row["bytes_sent_per_process"] > 0 and row["communication_seconds"] > 0 for row in rows), rows
    # an all-reduce has every process send the whole step once, 4 bytes a parameter (and a few fingerprints'):
    # the mean is that, where a sum over the 2 processes would be twice it
    step = 4 * sum(m * n + m for m, n in zip(snn.SIZES[1:], snn.SIZES[:-1]))
    assert all(step <= row["bytes_sent_per_process"] < 1.1 * step for row in rows if row["update"] == "allreduce"), rows


@needs_mpi
@pytest.mark.parametrize("fitness, said", [
    ("numpy.zeros(pop.members - (team.rank == 0))", "rank 0 of 2: ValueError: fitness must have shape (128,), one "
                                                    "number per member of ask's population in member order, got (127,)"),
    ("numpy.where((numpy.arange(pop.members) == 3) & (team.rank == 1), numpy.nan, 0.0)",  # rank 1's member 3
     "rank 1 of 2: ValueError: fitness holds NaN or inf: lower the learning rate or sigma, or check the inputs for "
     "non-finite values (a member to be ranked last takes a finite fitness below the others'); the first is member 3")])
def test_a_script_whose_process_fails_ends_every_process_with_one_line(tmp_path, fitness, said):
    """A script of its own on distributed.team("seeds"): one process tells a fitness one member short,
    or a NaN, and raises; the other, waiting for it in the fitnesses' gather, is ended with the job
    within seconds, and the error is one line naming the rank (and the member), stderr's only line."""
    (tmp_path / "script.py").write_text(
        "import numpy, distributed, eggroll\n"
        "team = distributed.team('seeds')\n"
        "es = eggroll.Eggroll(256, 1, 0.1, seed=0, team=team)\n"
        "state = es.init({'w': numpy.ones((3, 4))})\n"
        "pop = es.ask(state)\n"
        f"fitness = {fitness}\n"
        "es.tell(state, pop, fitness)\n")
    began = time.monotonic()
    done = subprocess.run([MPIEXEC, "-n", "2", sys.executable, str(tmp_path / "script.py")], capture_output=True,
                          text=True, timeout=120, cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.returncode != 0 and time.monotonic() - began < 60
    assert done.stderr.splitlines() == [f"error: {said}"], done.stderr  # not MPI_Abort's line after it


def script_job(tmp_path, text, *arguments, timeout=120):
    """A script of its own on distributed.team("seeds") under mpiexec -n 2: (exit status, stdout,
    stderr's error lines, stderr, seconds)."""
    (tmp_path / "script.py").write_text(text)
    began = time.monotonic()
    process = subprocess.Popen([MPIEXEC, "-n", "2", sys.executable, str(tmp_path / "script.py"), *arguments],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path,
                               env={**os.environ, "PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1"},
                               start_new_session=True)  # so that a job left waiting is ended whole
    try:
        out, err = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    errors = [line for line in err.splitlines() if line.startswith("error:")]
    return process.returncode, out, errors, err, time.monotonic() - began


@needs_mpi
@pytest.mark.parametrize("leaving", ["sys.exit(3)", "pass  # the script returns"])
def test_a_process_that_leaves_while_another_waits_for_it_ends_the_job_with_one_line(tmp_path, leaving):
    """Process 0 ends by sys.exit(3), or its script returns, while process 1 waits for it in a
    collective call: not a hang, but one line naming both ranks once process 1 has waited its
    patience (1 s here), and a non-zero exit status."""
    code, _, errors, err, seconds = script_job(tmp_path, (
        "import sys, distributed\n"
        "team = distributed.team('seeds')\n"
        "team.patience = 1.0\n"
        "if team.rank == 0:\n"
        f"    {leaving}\n"
        "else:\n"
        "    team.problems(None)\n"), timeout=60)
    assert code != 0 and seconds < 30, err
    assert errors == [f"error: rank 0 of 2 {distributed.LEFT_HOW} while rank 1 waited for it in a collective "
                      "call; end a job by raising an exception (under the team's sys.excepthook), which stops every "
                      "process"], err
    assert "Traceback" not in err


@needs_mpi
def test_a_process_whose_peers_never_start_mpi_says_so_and_ends(tmp_path):
    """Rank 0 makes a team, rank 1 runs alone (distributed.ALONE) and exits: rank 0, held in MPI's
    start, is ended by its watchdog after its patience (2 s here) with one line naming its rank and
    the fix, not left waiting for ever."""
    code, _, errors, err, seconds = script_job(tmp_path, (
        "import distributed\n"
        "distributed.JOIN_PATIENCE = 2.0\n"
        "team = distributed.team('seeds') if distributed.launched_rank() == 0 else distributed.ALONE\n"
        "print('made', team.rank, flush=True)\n"), timeout=60)
    assert code != 0 and seconds < 30, err
    assert errors == ["error: rank 0 of 2: waited 2 s for the job's other processes to start MPI: every process of "
                      "mpiexec must make the team, distributed.team(...), or none"], err


@needs_mpi
def test_processes_that_end_normally_at_different_times_end_the_job_normally(tmp_path):
    """After the last collective call process 0 works on three times its patience while process 1
    has already exited (its note that it left unread): the job ends normally, status 0, both done."""
    code, out, _, err, seconds = script_job(tmp_path, (
        "import time, distributed\n"
        "team = distributed.team('seeds')\n"
        "team.patience = 1.0\n"
        "team.problems(None)\n"
        "team.barrier()\n"
        "if team.rank == 0:\n"
        "    time.sleep(3.0)\n"
        "print('done', team.rank, flush=True)\n"), timeout=60)
    assert code == 0 and err == "" and sorted(out.split("\n")) == ["", "done 0", "done 1"], err
    assert seconds >= 3.0


@needs_mpi
@pytest.mark.parametrize("case, said", [
    ("setting", ["error: ValueError: sigma must be a finite int or float > 0, got -0.1: use e.g. 0.1"]),
    ("nan", ["error: ValueError: fitness holds NaN or inf: lower the learning rate or sigma, or check the inputs "
             "for non-finite values (a member to be ranked last takes a finite fitness below the others'); the first "
             "is member 0"]),
    ("own", ["error: rank 0 of 2: ValueError: process 0's own", "error: rank 1 of 2: ValueError: process 1's own"])])
def test_an_error_every_process_meets_alike_is_said_once(tmp_path, case, said):
    """The same bad setting on both processes, or a NaN fitness told on both: one line, without a
    rank, and a non-zero status; errors that differ are each said, with their ranks."""
    code, _, errors, err, _ = script_job(tmp_path, (
        "import sys, numpy, distributed, eggroll\n"
        "team = distributed.team('seeds')\n"
        "case = sys.argv[1]\n"
        "if case == 'own':\n"
        "    raise ValueError(f'process {team.rank}\\'s own')\n"
        "es = eggroll.Eggroll(256, 1, -0.1 if case == 'setting' else 0.1, seed=0, team=team)\n"
        "state = es.init({'w': numpy.ones((3, 4))})\n"
        "pop = es.ask(state)\n"
        "es.tell(state, pop, numpy.full(pop.members, numpy.nan))\n"), case, timeout=60)
    assert code != 0 and sorted(errors) == said, err
    assert "Traceback" not in err


def test_a_signal_the_program_began_ignoring_stays_ignored_while_mpi_starts(monkeypatch):
    """team() lets SIGINT, SIGTERM and SIGHUP end a process while MPI starts, but one the program began
    ignoring (nohup's SIGHUP) stays ignored then too; afterwards each handler is as it was."""
    pytest.importorskip("mpi4py")
    seen = {}

    class Started:
        size = 1

        def __init__(self, update):
            seen.update({signum: signal.getsignal(signum) for signum in (signal.SIGHUP, signal.SIGTERM)})
    monkeypatch.setattr(distributed, "Team", Started)
    monkeypatch.setattr(distributed, "launched_size", lambda: 1)
    previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        distributed.team("seeds")
        assert seen == {signal.SIGHUP: signal.SIG_IGN, signal.SIGTERM: signal.SIG_DFL}
        assert signal.getsignal(signal.SIGHUP) == signal.SIG_IGN
    finally:
        signal.signal(signal.SIGHUP, previous)
