"""One population shared out over K processes, in one process: distributed.Team around the
simulated communicator of simulated_team.py (K threads), running snn_eggroll.generation_step and
baselines.es_generation_step as an MPI job would, without mpiexec.

Every process must end with the parameters, Adam state and stats of a single-process run: bit for
bit with update "seeds", within float32 rounding with update "allreduce". The populations cover
pair counts that fill whole 64-pair blocks (128 pairs) and that do not (30 and 165 pairs, more
than one block), and shares in which a process holds no pair (30 pairs on 2 or 3 processes, 128
pairs on 3). The real MPI jobs are in test_distributed.py; this file runs in about ten seconds.
"""
import functools
import io
import pickle
import re
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

import baselines
import distributed
import eggroll
import exits
import optim
import snn
import snn_eggroll
from simulated_team import Abandoned, CollectiveError, LocalComm, World, make_team, run_team

SIZES = (12, 8, 4)            # inputs, hidden, outputs: small, so each case takes milliseconds
STEPS, BATCH = 4, 6
GENERATIONS = 2
POPULATIONS = (60, 256, 2 * (64 * 2 + 37))   # 30 pairs, 128 (2 whole blocks), 165 (3 blocks, the last part-filled)
METHODS = ("eggroll", "es batched", "es sequential")
ADAM = optim.Adam(lr=0.05)


def config_of(method, population):
    if method == "eggroll":
        return snn_eggroll.Config(population, rank=2, sigma=0.5, seed=11, logit_scale=2.0)
    return baselines.ESConfig(population, sigma=0.5, seed=11, logit_scale=2.0, mode=method.split()[1])


def minibatches():
    """GENERATIONS minibatches of frames (T, N, n_in) and labels (N,), the same on every process."""
    rng = np.random.default_rng(7)
    frames = (rng.random((GENERATIONS, STEPS, BATCH, SIZES[0])) < 0.4).astype(np.float32)
    labels = rng.integers(0, SIZES[2], (GENERATIONS, BATCH))
    return frames, labels


def train(method, population, team=distributed.ALONE):
    """GENERATIONS generations from the same start: final parameters, Adam state and every stats."""
    step = snn_eggroll.generation_step if method == "eggroll" else baselines.es_generation_step
    config = config_of(method, population)
    params = snn.init_params(5, SIZES)
    state = optim.init(params)
    frames, labels = minibatches()
    history = []
    for generation in range(GENERATIONS):
        params, state, stats = step(params, state, frames[generation], labels[generation], generation, config,
                                    ADAM, team=team)
        history.append(stats)
    return {"params": params, "m": state["m"], "v": state["v"], "t": state["t"], "stats": history}


@functools.lru_cache(maxsize=None)
def alone(method, population):
    """The single-process run (distributed.ALONE) every team must reproduce."""
    return train(method, population)


def arrays(run):
    """The run's arrays by name: params/..., m/..., v/..."""
    return {f"{part}/{name}": value for part in ("params", "m", "v") for name, value in run[part].items()}


def holders(population, processes):
    """How many processes hold at least one pair."""
    shares = [distributed.share(population // 2, eggroll.PAIRS_PER_BLOCK, rank, processes)
              for rank in range(processes)]
    return sum(s.stop > s.start for s in shares)


def test_the_cases_cover_what_they_claim():
    """More than one block of pairs (whole and part-filled), and processes that hold no pair; and
    the single-process runs really learn something (fitnesses differ, every parameter moves), so a
    share-out that loses or repeats pairs cannot hide behind a zero update."""
    assert [p // 2 % eggroll.PAIRS_PER_BLOCK for p in POPULATIONS] == [30, 0, 37]
    assert [p // 2 > eggroll.PAIRS_PER_BLOCK for p in POPULATIONS] == [False, True, True]
    assert [holders(p, 2) for p in POPULATIONS] == [1, 2, 2]
    assert [holders(p, 3) for p in POPULATIONS] == [1, 2, 3]
    start = snn.init_params(5, SIZES)
    for method in METHODS:
        for population in POPULATIONS:
            run = alone(method, population)
            assert all(stats["shaped_std"] > 0.2 for stats in run["stats"]), (method, population)
            for name, value in run["params"].items():
                assert (value != start[name]).all(), (method, population, name)


@pytest.mark.parametrize("processes", [1, 2, 3])
@pytest.mark.parametrize("population", POPULATIONS)
@pytest.mark.parametrize("method", METHODS)
def test_seeds_update_gives_every_process_the_single_process_run_bit_for_bit(method, population, processes):
    """Update "seeds": each process evaluates its share, one Allgatherv per generation brings every
    fitness to every process, and each forms the whole update itself: parameters, Adam's moments
    and the stats equal the single-process run's exactly, on every process. (EGGROLL's ask first
    compares the processes' states, a fingerprint's size and bytes gathered, its tell the
    generations they tell, and the generation the settings its fitness scores by, likewise; a
    vanilla-ES generation compares them once.)"""
    expected = alone(method, population)
    results, teams = run_team(processes, functools.partial(train, method, population), "seeds")
    for rank, (got, team) in enumerate(zip(results, teams)):
        assert team.rank == rank and team.size == processes and team.update == "seeds"
        compared = ["Allgather", "Allgatherv"] * (3 if method == "eggroll" else 1) if processes > 1 else []
        assert team.comm.log == (compared + ["Allgatherv"]) * GENERATIONS, rank  # the checks; the fitnesses
        assert got["t"] == GENERATIONS and got["stats"] == expected["stats"], rank
        want = arrays(expected)
        for name, value in arrays(got).items():
            assert value.dtype == want[name].dtype, (rank, name)
            np.testing.assert_array_equal(value, want[name], err_msg=f"process {rank}: {name}")


@pytest.mark.parametrize("processes", [1, 2, 3])
@pytest.mark.parametrize("population", POPULATIONS)
@pytest.mark.parametrize("method", ["eggroll", "es batched"])
def test_allreduce_update_gives_every_process_the_same_weights_within_float32_rounding(method, population,
                                                                                        processes):
    """Update "allreduce": each process forms the gradient of its own pairs and one Allreduce sums
    them. Every process ends with the same bits as every other, and within float32 rounding of the
    single-process run: Adam's moments within 1e-5 of their largest entry (measured: below 1e-6),
    the parameters within 1e-5 (measured: at most 6e-8), the first generation's stats exactly (its
    members are the same) and the second's within 1e-6 (measured: exact)."""
    expected = alone(method, population)
    results, teams = run_team(processes, functools.partial(train, method, population), "allreduce")
    want = arrays(expected)
    for rank, (got, team) in enumerate(zip(results, teams)):
        compared = ["Allgather", "Allgatherv"] * (3 if method == "eggroll" else 1) if processes > 1 else []
        assert team.comm.log == (compared + ["Allgatherv", "Allreduce SUM"]) * GENERATIONS, rank
        assert got["t"] == GENERATIONS
        assert got["stats"][0] == expected["stats"][0], rank
        for key, value in expected["stats"][1].items():
            assert got["stats"][1][key] == pytest.approx(value, abs=1e-6), (rank, key)
        for name, value in arrays(got).items():
            np.testing.assert_array_equal(value, arrays(results[0])[name], err_msg=f"process {rank}: {name}")
            assert value.dtype == want[name].dtype, name
            tolerance = 1e-5 if name.startswith("params/") else 1e-5 * np.abs(want[name]).max()
            np.testing.assert_allclose(value, want[name], rtol=0, atol=tolerance, err_msg=f"process {rank}: {name}")


@pytest.mark.parametrize("update", distributed.UPDATES)
def test_a_spike_cost_travels_with_the_fitnesses(update):
    """With a price on hidden spikes each process counts its own members' hidden spikes; 165 pairs
    on 2 processes end with the single-process weights (exactly with "seeds")."""
    config = snn_eggroll.Config(2 * 165, rank=2, sigma=0.5, seed=11, logit_scale=2.0, spike_cost=0.02)
    params = snn.init_params(5, SIZES)
    frames, labels = minibatches()

    def one_generation(team):
        return snn_eggroll.generation_step(params, optim.init(params), frames[0], labels[0], 0, config, ADAM,
                                           team=team)[0]

    expected = one_generation(distributed.ALONE)
    results, _ = run_team(2, one_generation, update)
    for got in results:
        for name in params:
            if update == "seeds":
                np.testing.assert_array_equal(got[name], expected[name])
            else:
                np.testing.assert_allclose(got[name], expected[name], rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------------
# The simulated communicator itself: it fails where MPI would fail, hang or garble

def test_the_simulated_team_is_built_by_teams_own_constructor():
    """Team's constructor reads rank, size and the processes on this machine from the communicator."""
    world = World(3)
    teams = [make_team(LocalComm(world, rank), "allreduce") for rank in range(3)]
    assert [(t.rank, t.size, t.local_rank, t.local_size, t.update) for t in teams] == \
        [(r, 3, r, 3, "allreduce") for r in range(3)]
    assert all(t.seconds == 0.0 and t.bytes_sent == 0 and t.signal == 0 for t in teams)


def test_gather_total_broadcast_problems_and_signals_over_the_simulated_team():
    """Team's other collectives over 3 processes: gather puts shares in pair order (a process with
    no pair sends nothing), total adds counts, broadcast gives rank 0's value, problems lists every
    process's, and a signal received by one process stops all of them at the same call."""
    def body(team):
        mine = team.my_pairs(100, 64)
        values = np.arange(2 * mine.start, 2 * mine.stop, dtype=np.float64)
        gathered = team.gather(values, 100, 64)
        total = team.total(np.array([team.rank, 1.0]))
        told = team.broadcast({"from": team.rank})
        problems = team.problems(None if team.rank != 1 else "rank 1 cannot read")
        if team.rank == 2:
            team.on_signal(15)
        try:
            team.stop_if_signalled()
        except distributed.Stopped as stopped:
            return gathered, total, told, problems, (stopped.signum, stopped.everywhere), mine
        return None

    results, teams = run_team(3, body)
    for rank, (gathered, total, told, problems, stopped, mine) in enumerate(results):
        np.testing.assert_array_equal(gathered, np.arange(200.0))
        np.testing.assert_array_equal(total, [3.0, 3.0])
        assert told == {"from": 0} and problems == [None, "rank 1 cannot read", None]
        assert stopped == (15, True)
        assert mine == [slice(0, 0), slice(0, 64), slice(64, 100)][rank]
    assert [t.bytes_sent for t in teams] == [0, 128 * 8 * 2, 72 * 8 * 2]


def test_an_allreduce_counts_the_bytes_a_ring_all_reduce_sends():
    """update="allreduce": each of K processes sends 2 (K - 1)/K of the summed buffer (a ring), here
    36 float32 of 3 processes, 2 * 144 * 2 // 3 = 192 bytes each; the sums are every process's."""
    grads = {"w": np.ones((4, 8), np.float32), "b": np.ones(4, np.float32)}
    results, teams = run_team(3, lambda team: team.sum(grads), update="allreduce")
    assert [t.bytes_sent for t in teams] == [192, 192, 192]
    assert all(np.array_equal(summed["w"], 3 * grads["w"]) for summed in results)


def test_a_process_that_fails_is_reported_and_the_others_do_not_hang():
    """One process raises before a collective call: its exception (not the others' abandoned
    waits) comes out, at once."""
    def body(team):
        if team.rank == 1:
            raise ZeroDivisionError("process 1 fails")
        return team.problems("fine")

    with pytest.raises(ZeroDivisionError, match="process 1 fails"):
        run_team(3, body, timeout=30)


def test_a_process_that_skips_a_collective_call_is_an_error_not_a_hang():
    """A process that finishes while the others wait in a collective call, and collective calls
    that do not match, fail at once; a process that never comes fails after the timeout."""
    with pytest.raises(Abandoned, match="never made by process"):
        run_team(2, lambda team: team.problems("x") if team.rank == 0 else None, timeout=30)
    with pytest.raises(CollectiveError, match="does not match"):
        run_team(2, lambda team: team.total(np.zeros(1)) if team.rank == 0 else team.broadcast("x"), timeout=30)
    told = "the processes of this team are in different calls (rank 0: problems; rank 1: broadcast): every process " \
           "makes the same calls of the team in the same order (ask, then tell, each generation)"

    def mismatched(team):
        try:
            return team.problems("x") if team.rank == 0 else team.broadcast("x")
        except ValueError as error:
            return str(error)
    assert run_team(2, mismatched, timeout=30)[0] == [told, told]  # said on both, where they met
    late = threading.Event()
    try:
        with pytest.raises(Abandoned, match="waited 0.5 s"):
            run_team(2, lambda team: team.problems("x") if team.rank == 0 else late.wait(30), timeout=0.5)
    finally:
        late.set()


def test_a_team_and_an_eggroll_that_holds_one_refuse_to_pickle_in_one_line():
    """A Team's MPI link cannot travel: pickling it, or an Eggroll that holds it, says so and what to
    pickle instead, rather than fail inside on the mpi4py module it holds."""
    held = object.__new__(distributed.Team)  # no MPI started: what a Team holds is never reached
    for value in (held, eggroll.Eggroll(4, 1, 0.1, 0, team=held)):
        with pytest.raises(TypeError, match=re.escape("a Team does not pickle (its link to the job's processes cannot "
                                                      "travel), nor an Eggroll that holds one: pickle the State")):
            pickle.dumps(value)


def test_a_process_holds_the_share_of_its_rank_in_the_job_not_on_its_machine():
    """my_pairs follows the process's rank in the whole job: on two machines of one process each (local
    rank 0 on both) the second process holds the second share, and sums it in the all-reduce update."""
    world = World(2)
    teams = [make_team(LocalComm(world, rank), "allreduce") for rank in range(2)]
    for team in teams:
        team.local_rank, team.local_size = 0, 1  # one process on each machine
    assert [team.my_pairs(100, 64) for team in teams] == [slice(0, 64), slice(64, 100)]
    assert [team.update_pairs(100, 64) for team in teams] == [slice(0, 64), slice(64, 100)]


def test_allreduce_sums_float64_gradients_in_float64():
    """Team.sum under "allreduce" gives every process each gradient summed over the processes, in its
    shape, and float64 gradients are summed in float64, not rounded to float32 on the way (1e-15 here;
    float32 would be 1e-8 off)."""
    def body(team):
        return team.sum({"w": np.full((2, 3), 1 / 3) * (team.rank + 1), "b": np.full(4, 0.1) * (team.rank + 1)})

    results, _ = run_team(2, body, "allreduce")
    for summed in results:
        assert summed["w"].shape == (2, 3) and summed["b"].shape == (4,)
        assert summed["w"].dtype == summed["b"].dtype == np.float64
        np.testing.assert_allclose(summed["w"], np.full((2, 3), 1.0), rtol=1e-15)
        np.testing.assert_allclose(summed["b"], np.full(4, 0.3), rtol=1e-15)


def test_a_share_that_disagrees_with_the_counts_is_refused():
    """Allgatherv refuses a process that sends more or fewer values than the counts say (MPI
    truncates, or fills the rest with garbage), and a send of another dtype."""
    def too_many(team):
        return team.gather(np.zeros(2 * 30 + 2), 30, 64)

    with pytest.raises(CollectiveError, match="sends 62 values"):
        run_team(2, too_many, timeout=30)

    def other_dtype(team):
        everyone = np.empty(2)
        team.comm.Iallgatherv(np.zeros(1, dtype=np.float32 if team.rank else np.float64), [everyone, [1, 1]]).Wait()

    with pytest.raises(CollectiveError, match="sends float32"):
        run_team(2, other_dtype, timeout=30)


# ---------------------------------------------------------------------------------------------
# The team's script: an error on one process ends the job

def sleeps_of_this_thread(monkeypatch):
    """The seconds this thread is told to sleep, noted instead of slept (other threads, such as a
    simulated process left behind by an earlier test, sleep as ever)."""
    slept, here, sleep = [], threading.current_thread(), time.sleep
    monkeypatch.setattr(time, "sleep", lambda seconds: slept.append(seconds) if threading.current_thread() is here
                        else sleep(seconds))
    return slept


def test_an_uncaught_error_is_one_line_with_the_rank_and_ends_the_job(monkeypatch, capsys):
    """Team.ending_the_job's hook: an Exception no code caught is one line on stderr naming the
    process's rank (a message of several lines joined), after which the job is aborted with status 1,
    this process's output first flushed and given FORWARD seconds to reach mpiexec; a closed stderr
    still ends the job. Ctrl-C and Stopped go to the previous hook."""
    monkeypatch.setattr(distributed, "TOGETHER", 0.0)  # the other process is not failing: no one to hear
    slept = sleeps_of_this_thread(monkeypatch)
    team = make_team(LocalComm(World(2), 1))
    previous = []
    hook = team.ending_the_job(lambda kind, error, trace: previous.append(kind))
    with pytest.raises(SystemExit) as ended:
        hook(ValueError, ValueError("first\nsecond"), None)
    assert ended.value.code == 1 and slept[-1:] == [distributed.FORWARD]
    assert capsys.readouterr().err == "error: rank 1 of 2: ValueError: first second\n"
    for kind in (KeyboardInterrupt, distributed.Stopped):
        hook(kind, kind(15) if kind is distributed.Stopped else kind(), None)
    assert previous == [KeyboardInterrupt, distributed.Stopped]
    closed = io.StringIO()
    closed.close()
    monkeypatch.setattr(sys, "stderr", closed)
    with pytest.raises(SystemExit) as ended:
        hook(RuntimeError, RuntimeError("unsaid"), None)
    assert ended.value.code == 1


def test_abort_ends_the_job_with_its_status(monkeypatch):
    """Team.abort(status) ends every process of the job with that exit status (143 after SIGTERM),
    once this process's output has had FORWARD seconds to reach mpiexec."""
    slept = sleeps_of_this_thread(monkeypatch)
    with pytest.raises(SystemExit) as ended:
        make_team(LocalComm(World(2), 0)).abort(143)
    assert ended.value.code == 143 and slept == [distributed.FORWARD]


def test_an_error_every_process_meets_alike_is_said_once_and_no_other_is_hidden(monkeypatch):
    """Team.last_words: the same error on every process is said once, by the first, without a rank;
    errors that differ, or one that another process does not meet (within TOGETHER seconds), are
    each said by their process with its rank."""
    def saying(messages):
        return run_team(len(messages), lambda team: messages[team.rank] and team.last_words(messages[team.rank]),
                        timeout=30)[0]

    assert saying(["ValueError: bad"] * 3) == ["error: ValueError: bad", None, None]
    assert saying(["A", "A", "B"]) == ["error: rank 0 of 3: A", "error: rank 1 of 3: A", "error: rank 2 of 3: B"]
    monkeypatch.setattr(distributed, "TOGETHER", 0.2)
    assert saying([None, "A", None]) == [None, "error: rank 1 of 3: A", None]
    assert saying(["A", "A"]) == ["error: A", None]  # heard at once, not after TOGETHER


def test_a_process_whose_error_another_says_is_quiet_and_waits_for_the_job_to_end(monkeypatch, capsys):
    """The hook of a process whose error the first process says too: nothing on stderr, and it ends
    the job itself only after the first has had time to say it and end it."""
    slept = sleeps_of_this_thread(monkeypatch)
    world = World(2)
    first, second = make_team(LocalComm(world, 0)), make_team(LocalComm(world, 1))
    said = []
    other = threading.Thread(target=lambda: said.append(first.last_words("ValueError: bad")))
    other.start()
    with pytest.raises(SystemExit) as ended:
        second.ending_the_job(None)(ValueError, ValueError("bad"), None)
    other.join()
    assert said == ["error: ValueError: bad"] and capsys.readouterr().err == ""
    assert ended.value.code == 1 and slept[-1] == distributed.TOGETHER + distributed.FORWARD + 1.0


def test_a_run_py_error_every_process_meets_alike_is_said_once(monkeypatch, capsys):
    """exits.fail in a job: a usage error every process met alike (not checked together) is one
    line, by the first, exit status 2 from every process."""
    def body(team):
        with pytest.raises(SystemExit) as ended:
            exits.fail("--out runs/x is a file: give a folder", team)
        return ended.value.code

    monkeypatch.setattr(distributed.Team, "abort", lambda team, code, quiet=False: team.comm.Abort(code))  # no pause
    assert run_team(2, body, timeout=30)[0] == [2, 2]
    assert capsys.readouterr().err == "error: --out runs/x is a file: give a folder\n"


def test_a_process_that_left_is_named_by_the_ones_that_wait_for_it(monkeypatch):
    """A process that leaves the job (Team.leaving, run at its exit) while the others wait for it in
    a collective call: each waits PATIENCE seconds more, then raises Left; the line is said once,
    naming the rank that left and the ranks that waited."""
    gone = threading.Barrier(3)

    def body(team):
        team.patience = 0.3
        if team.rank == 0:
            team.leaving()
            gone.wait(30)
            return None
        began = time.monotonic()
        with pytest.raises(distributed.Left) as left:
            team.problems(None)
        waited = time.monotonic() - began
        line = team.last_words(str(left.value), left.value)
        gone.wait(30)
        return line, waited

    results = run_team(3, body, timeout=30)[0]
    assert results[1][0] == (f"error: rank 0 of 3 {distributed.LEFT_HOW} while ranks 1, 2 waited for it in a "
                             "collective call; end a job by raising an exception (under the team's sys.excepthook), "
                             "which stops every process")
    assert results[2][0] is None and all(0.3 < waited < 5 for _, waited in results[1:])
    assert str(distributed.Left(0, [1], 2)) == (
        "rank 0 of 2 left the job (an exit, a return, a KeyboardInterrupt, or an error under a sys.excepthook set "
        "after the team's) while rank 1 waited for it in a collective call; end a job by raising an exception (under "
        "the team's sys.excepthook), which stops every process")


def test_a_disagreement_names_the_ranks_that_hold_each_value():
    """Team.disagreement names the first value that differs with the ranks holding each, "ranks" for
    several; text as it is, other values as JSON."""
    def body(team):
        return team.disagreement({"seed": 0, "shaping": "raw" if team.rank == 2 else "centred_ranks",
                                  "sigma": 0.1 if team.rank == 1 else 0.2})

    results, _ = run_team(3, body)
    assert results == ["shaping (ranks 0, 1: centred_ranks; rank 2: raw)"] * 3
    agreed, _ = run_team(3, lambda team: team.disagreement({"seed": 0, "sigma": {"w": 0.1}}))
    assert agreed == [None] * 3
    # a setting only a later rank holds (a lever left at its default is not stored) differs too
    later, _ = run_team(2, lambda team: team.disagreement({"seed": 0, **({"batch_growth": 4} if team.rank else {})}))
    assert later == ["batch_growth (rank 0: null; rank 1: 4)"] * 2


def test_the_code_version_tells_modules_of_other_names_apart(tmp_path):
    """Two copies of the project agree on their code only if every module has the same name and
    contents: the same contents under another name are other code."""
    for folder, name in (("one", "b.py"), ("two", "c.py")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.py").write_text("x = 1\n")
        (tmp_path / folder / name).write_text("y = 2\n")
    assert distributed.code_version(tmp_path / "one") != distributed.code_version(tmp_path / "two")
    (tmp_path / "two" / "c.py").rename(tmp_path / "two" / "b.py")
    assert distributed.code_version(tmp_path / "one") == distributed.code_version(tmp_path / "two")


def test_the_code_version_does_not_follow_the_order_a_folder_lists_its_files_in(tmp_path, monkeypatch):
    """Two copies of the same modules whose folders list them in other orders (files made in another
    order on another node): the same code."""
    for folder, names in (("one", ("a.py", "b.py", "c.py")), ("two", ("c.py", "b.py", "a.py"))):
        (tmp_path / folder).mkdir()
        for name in names:
            (tmp_path / folder / name).write_text(f"{name} = 1\n")
    listed = {"one": ["a.py", "b.py", "c.py"], "two": ["c.py", "b.py", "a.py"]}
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter(self / name for name in listed[self.name]))
    assert distributed.code_version(tmp_path / "one") == distributed.code_version(tmp_path / "two")


@pytest.mark.parametrize("size, signum", [(2, 2), (3, 15)])
def test_a_signal_every_process_receives_stops_each_with_that_signal(size, signum):
    """The same signal on every process: each stops with that signal's number (the largest of those
    received, never their sum), as one every process met."""
    def body(team):
        team.on_signal(signum)
        with pytest.raises(distributed.Stopped) as stopped:
            team.stop_if_signalled()
        return stopped.value.signum, stopped.value.everywhere
    assert run_team(size, body)[0] == [(signum, True)] * size


class CompletesIn:
    """A request that completes `seconds` after it is made (never, for None); `on_test` is called at
    each look at it."""
    def __init__(self, seconds, on_test=None):
        self.at = None if seconds is None else time.monotonic() + seconds
        self.on_test = on_test

    def Test(self):
        if self.on_test:
            self.on_test()
        return self.at is not None and time.monotonic() >= self.at


def test_a_call_begun_long_after_a_leave_was_heard_still_has_its_own_patience():
    """A process that left was heard of in an earlier call: a later call still waits its own
    PATIENCE before it gives up, counted from its own start."""
    team = make_team(LocalComm(World(2), 1))
    team.patience = 0.3
    team.left = {0: time.monotonic() - 1.0}  # heard a second ago
    team.wait(CompletesIn(0.1))              # completes within this call's patience: no Left


def test_a_process_that_gives_up_waiting_after_a_signal_stops_alone_not_everywhere():
    """A signal arrived and the others never answer: this process stops as one that met it alone
    (it says so with its rank and ends the job), never as one every process met (silent)."""
    team = make_team(LocalComm(World(2), 1))
    team.patience = 0.2
    team.on_signal(15)
    with pytest.raises(distributed.Stopped) as stopped:
        team.wait(CompletesIn(None))
    assert (stopped.value.signum, stopped.value.everywhere) == (15, False)


def test_left_names_the_process_heard_to_leave_first_not_the_lowest_rank():
    """Two processes left, rank 2 heard first (it broke, rank 1 merely followed): the line names
    rank 2, whose own log says why."""
    team = make_team(LocalComm(World(3), 0))
    team.patience = 0.1
    now = time.monotonic()
    team.left = {1: now - 0.5, 2: now - 1.0}
    with pytest.raises(distributed.Left) as left:
        team.wait(CompletesIn(None))
    assert left.value.gone == 2


def test_a_signal_late_in_a_long_call_still_gets_its_full_patience():
    """A signal 0.4 s into a call that completes at 0.6 s: the patience (0.3 s) runs from the signal,
    so the call completes and the job then stops together, not this process alone at once."""
    team = make_team(LocalComm(World(2), 1))
    team.patience = 0.3
    began = time.monotonic()

    def signal_late():
        if time.monotonic() - began > 0.4 and not team.signal:
            team.on_signal(15)
    try:
        team.wait(CompletesIn(0.6, on_test=signal_late))
    except distributed.Stopped:  # a KeyboardInterrupt: made a plain failure, not the end of the session
        pytest.fail(f"stopped {time.monotonic() - began:.2f} s into the call, the signal's patience not spent")
    assert team.signal == 15


def test_the_memory_checks_count_the_processes_on_this_machine_not_the_whole_job(tmp_path, monkeypatch):
    """A job of two processes on two machines (one each): train's and bench's memory checks ask for
    one process's memory on this machine, not the job's (which would refuse a job that fits)."""
    import bench
    import config
    import resources
    import training
    from run_folder import UsageError
    asked = []

    def stop(processes):  # the count each check is asked about, then no further
        asked.append(processes)
        raise UsageError("stop here")
    monkeypatch.setattr(resources, "check_run_memory", lambda config_, xp, recordings, processes: stop(processes))
    monkeypatch.setattr(resources, "shortfall", lambda needed, xp, processes=1: stop(processes))
    run = config.RunConfig(method="eggroll", data_root=str(Path(__file__).resolve().parent.parent / "nmnist-sample"))
    import types
    opts = types.SimpleNamespace(distributed=True, methods="all", data_root=None, device="cpu", json=None, pairs=4,
                                 cache_dir=None)

    def body(team):
        team.local_rank, team.local_size = 0, 1  # one process on each machine
        with pytest.raises(UsageError, match="stop here"):
            training.set_up(run, tmp_path / "run", team, progress=False, command="train")  # one --out, as a job needs
        with pytest.raises(UsageError, match="stop here"):
            bench.check_request(opts, team)
    run_team(2, body)
    assert asked == [1, 1, 1, 1], asked
