"""One population over many processes (MPI through mpi4py): fitnesses travel, not noise.

Every member's noise is a pure function of (seed, generation, pair, parameter), and every process
reads the same minibatch (a function of seed and step). So process k evaluates its own share of
the antithetic pairs, one collective call gathers the 2P fitnesses to every process, and then

  update "seeds":     every process ranks all fitnesses and forms the same update from the
                      regenerated noise of all pairs: identical weights everywhere, bit for bit
                      those of a single process, and nothing else is sent;
  update "allreduce": every process forms the gradient of its own pairs and one all-reduce sums
                      them (one float per parameter): less work per process, equal to a single
                      process within float32 rounding.

Pairs are shared out in whole blocks of `pairs_per_block`, the block the population's matrix
products are computed in, so every product has the same shape and the same operands whatever the
number of processes. The methods see a `Team`; `ALONE` is the team of one process.

Every process speaks: a check that fails on one process is reported by the first with that
process's rank (`problems`), and a signal any process receives stops them all at the same
generation (`stop_if_signalled`), so that none is left waiting in a collective call. Before a
run, the processes compare what defines it (`disagreement`): a job whose processes were given
different settings, data or code stops before its first generation; and EGGROLL's ask compares,
every generation, a fingerprint of each process's settings, generation and parameters, and its
tell the generation each process tells (a state resumed otherwise on one process stops the job,
not its weights).

No collective call that can wait on a late peer holds a process beyond the reach of a signal:
each is started non-blocking and waited for in Python (`Team.wait`), where a signal is noted. (The
gradients' all-reduce stays blocking, so its float sums keep the MPI's order; every process comes
to it straight from the fitnesses' gather.) A process that
received one keeps waiting PATIENCE seconds for the others (who stop with it at the next
generation); if they never come, it raises Stopped alone, and the caller ends the job.

A process that leaves the job without an error (sys.exit, or its script returns) tells the others
so as it exits (`Team.leaving`, run at exit: a note on the team's own communicator). One still
waiting for it in a collective call PATIENCE seconds after the note came raises Left, whose line
names the rank that left, and the job ends; a job whose processes all end normally, at whatever
times, is never ended so (a note that no process reads is dropped by MPI's end). An error that
no code caught ends the job in one line (`ending_the_job`, `last_words`): said once, without a
rank, when every process still in the job fails alike within TOGETHER seconds; else by each
process that has it, with its rank, so that no process's error is hidden.
"""
import atexit
import hashlib
import json
import os
import pickle
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy

from backend import array_module_of, to_numpy

UPDATES = ("seeds", "allreduce")
PATIENCE = 10.0  # seconds a signalled process waits in a collective call for the others before it gives up
FORWARD = 0.5    # seconds given to mpiexec to pass on a process's last lines before it ends the job
JOIN_PATIENCE = 60.0  # seconds MPI's start may wait for the job's other processes before this one says so and ends
SPIN = 0.05      # seconds a collective call is polled without pause before the polls back off to 1 ms
TOGETHER = 1.0   # seconds a failing process listens for the others failing alike, before it speaks alone
LEFT, FAILED = 1, 2  # tags of the notes the processes send each other (Team.notes): it left the job, it failed


def share(n_pairs, pairs_per_block, rank, size):
    """The pairs of process `rank` of `size`: whole blocks, as evenly as they go (size need not
    divide the number of pairs; a process may get none)."""
    n_blocks = -(-n_pairs // pairs_per_block)
    first, last = (n_blocks * rank) // size, (n_blocks * (rank + 1)) // size
    return slice(min(first * pairs_per_block, n_pairs), min(last * pairs_per_block, n_pairs))


def idle(n_pairs, pairs_per_block, size):
    """How many of `size` processes `share` gives no pair: a population of fewer blocks than processes."""
    return sum(not range(n_pairs)[share(n_pairs, pairs_per_block, rank, size)] for rank in range(size))


class Stopped(KeyboardInterrupt):
    """SIGINT (Ctrl-C) or SIGTERM: exit status 128 + its number. `everywhere`: raised by every
    process of a job at the same point (Team.stop_if_signalled)."""

    def __init__(self, signum, everywhere=False):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.everywhere = signum, everywhere


LEFT_HOW = ("left the job (an exit, a return, a KeyboardInterrupt, or an error under a sys.excepthook set after "
            "the team's)")


class Left(RuntimeError):
    """Process `gone` left the job without the team's error hook (sys.exit, its script returned, a
    KeyboardInterrupt, a hook of the script's own) while the processes `waiters` waited for it in a
    collective call: a script's error, which would leave them waiting for ever."""

    def __init__(self, gone, waiters, size):
        waited = f"rank{'s' * (len(waiters) > 1)} {', '.join(map(str, waiters))}"
        super().__init__(f"rank {gone} of {size} {LEFT_HOW} while {waited} waited for it in a collective call; end a "
                         f"job by raising an exception (under the team's sys.excepthook), which stops every process")
        self.gone, self.waiters, self.size = gone, waiters, size


class Alone:
    """A single process: it holds every pair, and nothing travels."""
    rank, size, local_rank, local_size = 0, 1, 0, 1
    update = "seeds"  # its one process sums every pair's noise, as each process of a team(update="seeds") does

    def my_pairs(self, n_pairs, pairs_per_block):
        """The pairs this process evaluates, as a slice of 0..n_pairs-1."""
        return slice(0, n_pairs)

    def gpu(self, devices):
        """The GPU this process uses among its machine's `devices`: one per process, by its rank on its
        machine (by its rank in the job, two processes of a machine would share a GPU when mpiexec deals
        the processes out to the machines in turn)."""
        return self.local_rank % devices

    def update_pairs(self, n_pairs, pairs_per_block):
        """The pairs whose noise this process sums into its gradient."""
        return slice(0, n_pairs)

    def gather(self, values, n_pairs, pairs_per_block):
        """Every process's values, one per member of its share of n_pairs pairs, concatenated in
        pair order."""
        return values

    def sum(self, grads):
        """The gradients summed over processes."""
        return grads

    def total(self, counts):
        """A float64 NumPy array of counts added up over processes."""
        return counts

    def broadcast(self, value):
        """Rank 0's value (any picklable object) on every process: this one's."""
        return value

    def barrier(self):
        """Wait until every process has come here: at once, alone."""

    def problems(self, problem):
        """Every process's `problem` (any picklable value), in rank order."""
        return [problem]

    def disagreement(self, values):
        """Where the processes were given different `values` ({name: JSON value}): one line naming
        the first name that differs and which ranks hold what, or None. (One process agrees.)"""
        return None

    def on_signal(self, signum):
        """The handler of SIGINT and SIGTERM: a single process stops where the signal arrives."""
        raise Stopped(signum)

    def stop_if_signalled(self):
        """Stopped on every process if any process of the job received a signal: called by all
        at the same point, so that they stop together. (A single process stopped already.)"""


ALONE = Alone()


class Team(Alone):
    """The processes of an MPI job (mpiexec -n K ...), all holding the same parameters."""

    def __init__(self, update="seeds"):
        from mpi4py import MPI  # only here: a single process needs no MPI
        self.mpi, self.comm, self.update = MPI, MPI.COMM_WORLD, update
        self.rank, self.size = self.comm.Get_rank(), self.comm.Get_size()
        host = self.comm.Split_type(MPI.COMM_TYPE_SHARED)  # the processes on this machine
        self.local_rank, self.local_size = host.Get_rank(), host.Get_size()  # for one GPU per process
        self.seconds, self.bytes_sent = 0.0, 0  # spent in and sent by collectives, for the benchmark
        self.signal = 0  # the signal this process received, noted for stop_if_signalled
        self.patience = PATIENCE
        self.notes = self.comm.Dup()  # the processes' notes to each other, apart from any the script sends
        self.left = {}  # rank -> when (time.monotonic()) this process heard that it left the job
        self.sent = []  # the requests of the notes this process sent, kept (with their buffers) until its end

    def my_pairs(self, n_pairs, pairs_per_block):
        return share(n_pairs, pairs_per_block, self.rank, self.size)

    def __reduce__(self):
        raise TypeError("a Team does not pickle (its link to the job's processes cannot travel), nor an Eggroll "
                        "that holds one: pickle the State, and make the Eggroll again with distributed.team(...)")

    def update_pairs(self, n_pairs, pairs_per_block):
        return slice(0, n_pairs) if self.update == "seeds" else self.my_pairs(n_pairs, pairs_per_block)

    def wait(self, request):
        """Wait for a non-blocking collective call to complete, polling it (without pause for SPIN
        seconds, then every millisecond) so that a signal reaches this process: noted, as ever.
        Once signalled, a process waits PATIENCE seconds more for the others (who stop at the next
        generation); if they have not come, it raises Stopped alone (not `everywhere`), and its
        caller ends the job (exits.fail), rather than wait for ever on a process that never comes.
        Once another process has left the job (`leaving`), the call has PATIENCE seconds more to
        complete (it may be the last, which the other completed before it left); then Left."""
        began, signalled, pause = time.monotonic(), None, 1e-5
        while not request.Test():
            now = time.monotonic()
            if self.signal and signalled is None:
                signalled = now
            if signalled is not None and now - signalled > self.patience:
                raise Stopped(self.signal)
            if now - began > SPIN:
                self.hear_leaving()
                if self.left and now - max(min(self.left.values()), began) > self.patience:
                    raise Left(min(self.left, key=self.left.get), [self.rank], self.size)
                time.sleep(pause)
                pause = min(2 * pause, 1e-3)

    def hear_leaving(self):
        """Note every process that has said it left the job (`leaving`) since the last look."""
        status = self.mpi.Status()
        while self.notes.Iprobe(source=self.mpi.ANY_SOURCE, tag=LEFT, status=status):
            gone = status.Get_source()
            self.notes.Recv(numpy.empty(0, dtype=numpy.uint8), source=gone, tag=LEFT)
            self.left.setdefault(gone, time.monotonic())

    def leaving(self):
        """Run at this process's exit (registered by `team`): tell every other process still in the
        job that this one has left, so that none waits for it for ever (`wait`). The notes are sent
        without waiting for anyone to read them; a process that exits normally never does."""
        if self.mpi.Is_finalized():
            return
        self.hear_leaving()
        told = [self.notes.Isend(numpy.empty(0, dtype=numpy.uint8), dest=other, tag=LEFT)
                for other in range(self.size) if other != self.rank and other not in self.left]
        self.sent += told
        until = time.monotonic() + FORWARD
        while not all(request.Test() for request in told) and time.monotonic() < until:
            time.sleep(1e-3)  # an empty note leaves at once; one that cannot must not hold the exit

    def failing(self, message):
        """Tell the other processes this one fails with `message`, and listen for up to TOGETHER
        seconds for theirs: the ranks, in order, that fail with this same message if they are every
        process still in the job (not `left`), else None (another process fails otherwise, or not
        yet, or not at all)."""
        mine = numpy.frombuffer(hashlib.sha256(message.encode()).digest(), dtype=numpy.uint8)
        self.hear_leaving()
        self.sent += [self.notes.Isend(mine, dest=other, tag=FAILED) for other in range(self.size)
                      if other != self.rank and other not in self.left]
        heard, until = {self.rank: mine}, time.monotonic() + TOGETHER
        while True:
            self.hear_leaving()
            for other in range(self.size):
                if other not in heard and self.notes.Iprobe(source=other, tag=FAILED):
                    heard[other] = numpy.empty_like(mine)
                    self.notes.Recv(heard[other], source=other, tag=FAILED)
            unheard = [other for other in range(self.size) if other not in heard and other not in self.left]
            otherwise = any(not numpy.array_equal(theirs, mine) for theirs in heard.values())
            if otherwise or not unheard or time.monotonic() > until:
                break  # (one failing otherwise may end the job soon: this process speaks at once)
            time.sleep(1e-3)
        return None if unheard or otherwise else sorted(heard)

    def last_words(self, message, error=None):
        """The line this process says as it fails with `message` (one line) and the job ends, or None
        where another process says it: an error that every process still in the job met alike is said
        once, by the first of them, without a rank; any other with this process's rank. Left, met by
        every process still waiting, names them all."""
        alike = self.failing(f"left {error.gone}" if isinstance(error, Left) else message)
        if alike and alike[0] != self.rank:
            return None
        if isinstance(error, Left):
            return f"error: {Left(error.gone, alike or [self.rank], self.size)}"
        return f"error: {message}" if alike else f"error: rank {self.rank} of {self.size}: {message}"

    def allgather_object(self, value):
        """Every process's `value` (picklable), in rank order."""
        mine = numpy.frombuffer(pickle.dumps(value), dtype=numpy.uint8)
        sizes = numpy.empty(self.size, dtype=numpy.int64)
        self.wait(self.comm.Iallgather(numpy.array([mine.size], dtype=numpy.int64), sizes))
        everything = numpy.empty(int(sizes.sum()), dtype=numpy.uint8)
        self.wait(self.comm.Iallgatherv(mine, [everything, sizes.tolist()]))
        ends = numpy.cumsum(sizes)
        return [pickle.loads(everything[end - size:end].tobytes()) for size, end in zip(sizes, ends)]

    def gather(self, values, n_pairs, pairs_per_block):
        xp, local = array_module_of(values), numpy.ascontiguousarray(to_numpy(values))
        shares = [share(n_pairs, pairs_per_block, rank, self.size) for rank in range(self.size)]
        counts = [2 * (mine.stop - mine.start) for mine in shares]  # members per process, known to all
        everyone = numpy.empty(sum(counts), dtype=local.dtype)
        began = time.perf_counter()
        self.wait(self.comm.Iallgatherv(local, [everyone, counts]))
        self.seconds += time.perf_counter() - began
        self.bytes_sent += local.nbytes * (self.size - 1)
        return xp.asarray(everyone)

    def sum(self, grads):
        if self.update == "seeds":
            return grads
        xp = array_module_of(next(iter(grads.values())))
        names = sorted(grads)  # one order on every process, whatever order each process's dict holds
        flat = numpy.concatenate([to_numpy(grads[name]).ravel() for name in names])
        total = numpy.empty_like(flat)
        began = time.perf_counter()
        # Blocking, unlike the other calls: an MPI may sum in another order in its non-blocking
        # all-reduce, and these sums are floats. Every process comes here straight from gather.
        self.comm.Allreduce(flat, total)
        self.seconds += time.perf_counter() - began
        self.bytes_sent += 2 * flat.nbytes * (self.size - 1) // self.size  # a ring all-reduce
        summed, start = {}, 0
        for name in names:
            g = grads[name]
            summed[name] = xp.asarray(total[start:start + g.size].reshape(g.shape))
            start += g.size
        return {name: summed[name] for name in grads}

    def total(self, counts):
        summed = numpy.empty_like(counts)
        self.wait(self.comm.Iallreduce(counts, summed))
        return summed

    def broadcast(self, value):
        self.check_same_call("broadcast")
        data = numpy.frombuffer(pickle.dumps(value), dtype=numpy.uint8) if self.rank == 0 else None
        size = numpy.array([0 if data is None else data.size], dtype=numpy.int64)
        self.wait(self.comm.Ibcast(size, root=0))
        if data is None:
            data = numpy.empty(int(size[0]), dtype=numpy.uint8)
        self.wait(self.comm.Ibcast(data, root=0))
        return value if self.rank == 0 else pickle.loads(data.tobytes())

    def barrier(self):
        self.check_same_call("barrier")
        self.wait(self.comm.Ibarrier())

    def check_same_call(self, call):
        """A ValueError on every process unless each is in `call`: one in another collective call
        would wait for ever, or read another call's bytes. (The comparisons of ask and tell meet it.)"""
        problem = self.disagreement({"call": call})
        if problem is not None:
            raise ValueError(different_calls(problem))

    def problems(self, problem):
        every = self.allgather_object({"call": "problems", "problem": problem})
        calls = first_difference([{"call": values.get("call")} for values in every])
        if calls is not None:
            raise ValueError(different_calls(calls))
        return [values["problem"] for values in every]

    def disagreement(self, values):
        return first_difference(self.allgather_object(values))

    def on_signal(self, signum):
        self.signal = signum  # stopping here could leave the others waiting in a collective call

    def stop_if_signalled(self):
        mine, signum = numpy.array([self.signal], dtype=numpy.int64), numpy.empty(1, dtype=numpy.int64)
        self.wait(self.comm.Iallreduce(mine, signum, op=self.mpi.MAX))
        if signum[0]:
            raise Stopped(int(signum[0]), everywhere=True)

    def ending_the_job(self, previous):
        """A sys.excepthook for the team's script: an error that no code caught on this process is
        printed in one line with the process's rank (once, without it, if every process met it
        alike: `last_words`), and ends every process of the job, which may be waiting for this one
        in a collective call. Ctrl-C and the like go to `previous`."""
        def hook(kind, error, trace):
            if not issubclass(kind, Exception):
                return previous(kind, error, trace)
            line = self.last_words(str(error) if kind is Left else f"{kind.__name__}: {error}".replace("\n", " "),
                                   error)
            if line is not None:
                try:
                    sys.stderr.write(line + "\n")
                except (OSError, ValueError):  # stderr closed: the job still ends
                    pass
            self.abort(1, quiet=line is None)
        return hook

    def abort(self, code, quiet=False):
        """End every process of the job at once (when one process failed alone). The lines this
        process printed last are first given FORWARD seconds to reach mpiexec, which drops what it
        has not yet passed on when it ends the job. `quiet`: another process says why and ends the
        job; this one waits for it (TOGETHER + FORWARD seconds and one more) before it ends it."""
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):  # closed, or a full disk: nothing more can be said
                pass
        time.sleep(TOGETHER + FORWARD + 1.0 if quiet else FORWARD)
        # MPI_Abort prints a line of its own ("Abort(1) on node 0 ...") after the one that says why: it
        # goes to the null device (put back should Abort return, as a simulated team's raises SystemExit)
        kept, null = os.dup(2), os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 2)
        os.close(null)
        try:
            self.comm.Abort(code)
        finally:
            os.dup2(kept, 2)
            os.close(kept)


def first_difference(every):
    """Where the dicts `every` (one a process, {name: JSON value}) differ: "<name> (rank 0: <value>;
    ranks 1, 2: <value>)" for the first name that differs, or None."""
    for name in dict.fromkeys(key for values in every for key in values):
        held = {}
        for rank, values in enumerate(every):
            value = values.get(name)
            held.setdefault(value if isinstance(value, str) else json.dumps(value, sort_keys=True),
                            []).append(str(rank))
        if len(held) > 1:
            return f"{name} (" + "; ".join(f"rank{'s' * (len(ranks) > 1)} {', '.join(ranks)}: {value}"
                                           for value, ranks in held.items()) + ")"
    return None


def different_calls(problem):
    """The line every process of a team says when Team.disagreement found them in different calls
    (`problem`: "call (rank 0: tell; rank 1: ask)")."""
    return (f"the processes of this team are in different calls ({problem[len('call ('):]}: every process makes the "
            f"same calls of the team in the same order (ask, then tell, each generation)")


def team(update):
    """The Team of this MPI job; RuntimeError naming the install command if mpi4py is missing."""
    if update not in UPDATES:
        raise ValueError(f"unknown update {update!r}: use one of {', '.join(UPDATES)}")
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise RuntimeError("--distributed needs mpi4py and an MPI library: pip install -e \".[mpi]\" "
                           "(or pip install mpi4py built against your cluster's MPI)") from None
    # MPI's start waits, beyond the reach of Python's signal handlers, for every process of the job:
    # if one never comes (given another command line), SIGINT, SIGTERM and SIGHUP must still end it,
    # but for one the program began ignoring (nohup's SIGHUP), which stays ignored.
    stopping = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    handlers = {signum: signal.signal(signum, signal.SIG_DFL) for signum in stopping
                if signal.getsignal(signum) != signal.SIG_IGN}
    watchdog = started_watchdog() if launched_size() > 1 else None
    try:
        made = Team(update)
    finally:
        if watchdog is not None:
            watchdog.stdin.close()  # MPI started (or failed): the watchdog ends, silent
            watchdog.wait()
        for signum, handler in handlers.items():
            signal.signal(signum, handler)
    if made.size > 1:
        sys.excepthook = made.ending_the_job(sys.excepthook)
        atexit.register(made.leaving)  # before MPI's end, which mpi4py runs after every atexit function
    return made


# A process of its own, started before MPI: MPI's start holds the Python that started it, so no
# thread of it can keep time. Unless its stdin closes within the patience, it says why and ends it.
WATCHDOG = """import os, select, signal, sys
parent, patience, said = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3]
if not select.select([sys.stdin], [], [], patience)[0]:
    sys.stderr.write(said + "\\n")
    sys.stderr.flush()
    os.kill(parent, signal.SIGTERM)
"""


def started_watchdog():
    """A watchdog (WATCHDOG) of MPI's start in this process: a process of the job that never starts
    MPI (it runs alone, or another script) would leave this one waiting there for ever."""
    said = (f"error: rank {launched_rank()} of {launched_size()}: waited {JOIN_PATIENCE:g} s for the job's other "
            f"processes to start MPI: every process of mpiexec must make the team, distributed.team(...), or none")
    return subprocess.Popen([sys.executable, "-c", WATCHDOG, str(os.getpid()), str(JOIN_PATIENCE), said],
                            stdin=subprocess.PIPE)


def code_version(folder=Path(__file__).resolve().parent):
    """The project's code as a job's processes compare it: a sha256 of its .py files (name and
    contents), which two copies share only if every module is the same."""
    digest = hashlib.sha256()
    for path in sorted(folder.glob("*.py")):
        digest.update(path.name.encode() + b"\0")
        try:
            digest.update(path.read_bytes())
        except OSError:
            digest.update(b"unreadable")
        digest.update(b"\0")
    return f"sha256 {digest.hexdigest()[:16]} of its .py files"


def launched_rank():
    """This process's rank in an MPI job, from the launcher's environment (MPICH and Intel MPI,
    Open MPI, PMIx), before MPI is started; 0 outside a job."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0


def launched_size():
    """How many processes the MPI job of this process has, from the launcher's environment (MPICH
    and Intel MPI, Open MPI), before MPI is started; 1 outside a job."""
    for name in ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 1

