"""A team of K processes simulated in one: K threads whose collective calls meet in memory.

distributed.Team is built, by its own constructor, around `LocalComm`: a stand-in for mpi4py's
communicator with the calls a Team makes: non-blocking Iallgather, Iallgatherv, Iallreduce, Ibcast
and Ibarrier (whose requests answer Test and Wait), the blocking Allreduce of the gradients, with
SUM or MAX, and Split_type, Dup, Get_rank, Get_size, Abort; and the processes' notes to each other
(Isend, Iprobe, Recv: point-to-point messages, each on its communicator). So Team's own
share-out, gather and sum run unchanged, without MPI:

    results, teams = run_team(3, lambda team: snn_eggroll.generation_step(..., team=team), "seeds")

Each collective call is a rendezvous of all K threads. It raises where MPI would fail, garble or
hang: calls that do not match across processes, buffers whose sizes or types disagree with the
counts, a process waiting for one that has failed or has finished, and a wait longer than
`timeout` seconds. So a share-out that goes wrong fails a test; it never hangs it.

Not collected by pytest (its name does not start with test_).
"""
import contextlib
import sys
import threading
import time
import types

import numpy

import distributed

SUM, MAX = "SUM", "MAX"   # the reduction operations of the stand-in MPI module
ANY_SOURCE = -1
COMM_TYPE_SHARED = "COMM_TYPE_SHARED"
TIMEOUT = 60.0            # seconds a collective call may wait for the other processes
GRACE = 1.0               # seconds run_team waits for the others once a process failed


class CollectiveError(RuntimeError):
    """A collective call that real MPI would answer with an error, garbage or a hang."""


class Abandoned(CollectiveError):
    """A process waited in a collective call for a process that failed, finished or was too slow."""


class World:
    """What the K simulated processes share: one rendezvous per collective call, in call order."""

    def __init__(self, size, timeout=TIMEOUT):
        self.size, self.timeout = size, timeout
        self.condition = threading.Condition()
        self.calls = [0] * size          # collective calls each process has started
        self.rounds = {}                 # call index -> {rank: (kind, value)}
        self.reads = {}                  # call index -> processes that have taken the round's values
        self.failed = None               # (rank, exception) of the first process that failed
        self.failed_at = None            # and when (time.monotonic())
        self.finished = set()            # processes that returned
        self.mail = {}                   # (communicator, receiver) -> [(sender, tag, bytes)], in send order

    def post(self, rank, kind, value):
        """Start process `rank`'s next collective call; its index."""
        with self.condition:
            index = self.calls[rank]
            self.calls[rank] += 1
            self.rounds.setdefault(index, {})[rank] = (kind, value)
            self.condition.notify_all()
            return index

    def _outcome(self, rank, index):
        """Every process's value if call `index` is complete; None while it may yet complete;
        Abandoned once it never can. Called with the condition held."""
        deposits = self.rounds[index]
        if len(deposits) == self.size:
            everyone = [deposits[other] for other in range(self.size)]
            self.reads.setdefault(index, set()).add(rank)
            if len(self.reads[index]) == self.size:
                del self.rounds[index], self.reads[index]
            kinds = [kind for kind, _ in everyone]
            if len(set(kinds)) > 1:
                raise CollectiveError(f"process {rank}: collective call {index} does not match across "
                                      f"processes: {kinds}")
            return [value for _, value in everyone]
        kind = deposits[rank][0]
        if self.failed is not None:
            raise Abandoned(f"process {rank}: collective call {index} ({kind}) abandoned: "
                            f"process {self.failed[0]} failed")
        gone = sorted(other for other in self.finished if self.calls[other] <= index)
        if gone:
            raise Abandoned(f"process {rank}: collective call {index} ({kind}) is never made by "
                            f"process(es) {gone}, which finished")
        return None

    def _timed_out(self, rank, index):
        deposits = self.rounds[index]
        missing = sorted(set(range(self.size)) - set(deposits))
        self._failed(rank, None)
        return Abandoned(f"process {rank}: collective call {index} ({deposits[rank][0]}) waited "
                         f"{self.timeout:g} s for process(es) {missing}")

    def test(self, rank, index, began):
        """Non-blocking: every process's value of call `index` if complete, else None."""
        with self.condition:
            everyone = self._outcome(rank, index)
            if everyone is None and time.monotonic() - began > self.timeout:
                raise self._timed_out(rank, index)
            return everyone

    def wait(self, rank, index, began):
        """Every process's value of call `index`, once all have made it."""
        with self.condition:
            while True:
                everyone = self._outcome(rank, index)
                if everyone is not None:
                    return everyone
                left = self.timeout - (time.monotonic() - began)
                if left <= 0:
                    raise self._timed_out(rank, index)
                self.condition.wait(left)

    def _failed(self, rank, error):
        if self.failed is None:
            self.failed, self.failed_at = (rank, error), time.monotonic()
        self.condition.notify_all()

    def fail(self, rank, error):
        with self.condition:
            self._failed(rank, error)

    def send(self, context, source, dest, tag, data):
        with self.condition:
            self.mail.setdefault((context, dest), []).append((source, tag, data))

    def probe(self, context, rank, source, tag, take=False):
        """The first note (sender, tag, bytes) to `rank` from `source` (ANY_SOURCE: any) with `tag`,
        taken out of the mail if `take`; None if there is none."""
        with self.condition:
            box = self.mail.get((context, rank), [])
            for index, (sender, kind, data) in enumerate(box):
                if source in (ANY_SOURCE, sender) and kind == tag:
                    return box.pop(index) if take else (sender, kind, data)
            return None

    def finish(self, rank):
        with self.condition:
            self.finished.add(rank)
            self.condition.notify_all()


class Request:
    """A started collective call: Test() (non-blocking) and Wait(), as mpi4py's Request. The
    receive buffers are filled when it completes."""

    def __init__(self, comm, index, complete):
        self.comm, self.index, self.complete = comm, index, complete
        self.began, self.done, self.result = time.monotonic(), False, None

    def _finish(self, everyone):
        self.done, self.result = True, self.complete(everyone)

    def Test(self):
        if not self.done:
            everyone = self.comm.world.test(self.comm.rank, self.index, self.began)
            if everyone is not None:
                self._finish(everyone)
        return self.done

    def Wait(self):
        if not self.done:
            self._finish(self.comm.world.wait(self.comm.rank, self.index, self.began))


def contiguous_numpy(buffer, what):
    if not isinstance(buffer, numpy.ndarray) or not buffer.flags.c_contiguous:
        raise CollectiveError(f"{what} must be a C-contiguous NumPy array (a buffer MPI can read), "
                              f"got {type(buffer).__name__}")
    return buffer


def reduce(everyone, op, what):
    """The elementwise reduction of the processes' arrays, in rank order (the same bits on all)."""
    first = everyone[0]
    for sender, data in enumerate(everyone):
        if data.shape != first.shape or data.dtype != first.dtype:
            raise CollectiveError(f"{what}: process {sender} sends {data.dtype}{data.shape}, "
                                  f"process 0 {first.dtype}{first.shape}")
    total = first.copy()
    for data in everyone[1:]:
        if op == SUM:
            total += data
        elif op == MAX:
            numpy.maximum(total, data, out=total)
        else:
            raise CollectiveError(f"{what}: operation {op!r} is not simulated")
    return total


def store(receive, data, what):
    if receive.size != data.size or receive.dtype != data.dtype:
        raise CollectiveError(f"{what}: {data.dtype}{data.shape} received into {receive.dtype}{receive.shape}")
    receive.reshape(-1)[:] = data.reshape(-1)


class Status:
    """mpi4py's Status, as Iprobe fills it: the note's sender and size."""
    source, count = ANY_SOURCE, 0

    def Get_source(self):
        return self.source

    def Get_count(self, datatype=None):
        return self.count


class Sent:
    """The request of a note: sent at once, as MPI sends a small one."""

    def Test(self):
        return True


class LocalComm:
    """Process `rank`'s communicator in a World: the part of mpi4py.MPI.Comm that Team uses."""

    def __init__(self, world, rank, context=()):
        self.world, self.rank, self.context = world, rank, context
        self.log = []  # the collective calls this process made, blocking or not, in order
        self.dups = 0

    def Dup(self):
        """A communicator of its own for the same processes (each process makes its Dups in the same
        order, so the n-th Dup of every process is one communicator)."""
        self.dups += 1
        return LocalComm(self.world, self.rank, (*self.context, self.dups))

    # Notes -----------------------------------------------------------------------------------

    def Isend(self, buf, dest, tag=0):
        data = contiguous_numpy(buf, "Isend's buffer").tobytes()
        if not 0 <= dest < self.world.size or dest == self.rank:
            raise CollectiveError(f"Isend from process {self.rank} to {dest}")
        self.world.send(self.context, self.rank, dest, tag, data)
        return Sent()

    def Iprobe(self, source=ANY_SOURCE, tag=0, status=None):
        note = self.world.probe(self.context, self.rank, source, tag)
        if note is not None and status is not None:
            status.source, status.count = note[0], len(note[2])
        return note is not None

    def Recv(self, buf, source=ANY_SOURCE, tag=0):
        note = self.world.probe(self.context, self.rank, source, tag, take=True)
        if note is None:
            raise CollectiveError(f"process {self.rank}: Recv from {source} with tag {tag} would wait for ever")
        receive = contiguous_numpy(buf, "Recv's buffer")
        store(receive, numpy.frombuffer(note[2], dtype=receive.dtype), "Recv")

    def Get_rank(self):
        return self.rank

    def Get_size(self):
        return self.world.size

    def Split_type(self, split_type, key=0, info=None):
        """The processes on this machine: all of them. Not a rendezvous here (real MPI's is), so
        that the Teams can be built one after another before the processes start."""
        if split_type != COMM_TYPE_SHARED:
            raise CollectiveError(f"Split_type({split_type!r}): only COMM_TYPE_SHARED is simulated")
        return LocalComm(self.world, self.rank)

    def _start(self, kind, value, complete):
        self.log.append(kind)
        return Request(self, self.world.post(self.rank, kind, value), complete)

    # Buffers ---------------------------------------------------------------------------------

    def Iallgatherv(self, sendbuf, recvbuf):
        """mpi4py's Iallgatherv(sendbuf, [recvbuf, counts]): every process's sendbuf, concatenated
        in rank order at the displacements the counts give."""
        send = contiguous_numpy(sendbuf, "Allgatherv's send buffer")
        receive, counts = recvbuf
        contiguous_numpy(receive, "Allgatherv's receive buffer")
        counts = [int(c) for c in counts]
        if len(counts) != self.world.size or sum(counts) > receive.size:
            raise CollectiveError(f"Allgatherv: counts {counts} for {self.world.size} processes "
                                  f"and a receive buffer of {receive.size}")

        def complete(everyone):
            start = 0
            for sender, data in enumerate(everyone):
                if data.dtype != receive.dtype:
                    raise CollectiveError(f"Allgatherv: process {sender} sends {data.dtype}, "
                                          f"process {self.rank} receives {receive.dtype}")
                if data.size != counts[sender]:
                    raise CollectiveError(f"Allgatherv: process {sender} sends {data.size} values, process "
                                          f"{self.rank} expects {counts[sender]} (MPI_ERR_TRUNCATE or garbage)")
                receive.reshape(-1)[start:start + data.size] = data.reshape(-1)
                start += data.size

        return self._start("Allgatherv", send.copy(), complete)

    def Iallgather(self, sendbuf, recvbuf):
        """Every process's sendbuf (all of one size), concatenated in rank order."""
        send = contiguous_numpy(sendbuf, "Allgather's send buffer")
        receive = contiguous_numpy(recvbuf, "Allgather's receive buffer")
        return self._start("Allgather", send.copy(),
                           lambda everyone: store(receive, numpy.concatenate([d.reshape(-1) for d in everyone]),
                                                  "Allgather"))

    def Iallreduce(self, sendbuf, recvbuf, op=SUM):
        """Elementwise SUM (or MAX) over the processes, added in rank order; the same bits on all."""
        send = contiguous_numpy(sendbuf, "Allreduce's send buffer")
        receive = contiguous_numpy(recvbuf, "Allreduce's receive buffer")
        return self._start(f"Allreduce {op}", send.copy(),
                           lambda everyone: store(receive, reduce(everyone, op, "Allreduce"), "Allreduce"))

    def Ibcast(self, buf, root=0):
        """Root's buffer into every other process's, in place (the root's is only read)."""
        buffer = contiguous_numpy(buf, "Bcast's buffer")
        if self.rank == root:
            return self._start(f"Bcast from {root}", buffer.copy(), lambda everyone: None)
        return self._start(f"Bcast from {root}", None, lambda everyone: store(buffer, everyone[root], "Bcast"))

    def Ibarrier(self):
        return self._start("Barrier", None, lambda everyone: None)

    def Allreduce(self, sendbuf, recvbuf, op=SUM):
        """Blocking, as Team.sum calls it."""
        self.Iallreduce(sendbuf, recvbuf, op).Wait()

    def Abort(self, code):
        error = SystemExit(code)
        self.world.fail(self.rank, error)
        raise error


_building = threading.Lock()


@contextlib.contextmanager
def stand_in_mpi4py(comm):
    """`from mpi4py import MPI` gives an MPI module whose COMM_WORLD is `comm`, for a while."""
    mpi = types.SimpleNamespace(COMM_WORLD=comm, COMM_TYPE_SHARED=COMM_TYPE_SHARED, SUM=SUM, MAX=MAX,
                                ANY_SOURCE=ANY_SOURCE, Status=Status, Is_finalized=lambda: False)
    module = types.ModuleType("mpi4py")
    module.MPI = mpi
    with _building:
        saved = sys.modules.get("mpi4py")
        sys.modules["mpi4py"] = module
        try:
            yield mpi
        finally:
            if saved is None:
                del sys.modules["mpi4py"]
            else:
                sys.modules["mpi4py"] = saved


def make_team(comm, update="seeds"):
    """distributed.Team(update) of process comm.Get_rank(), built by Team's own constructor."""
    with stand_in_mpi4py(comm):
        return distributed.Team(update)


def run_team(size, body, update="seeds", timeout=TIMEOUT):
    """body(team) on each of `size` simulated processes at once; (results, teams), both in rank order.

    The first process to fail (not merely abandoned by another) has its exception raised here, with
    its rank noted; processes still running GRACE seconds after one failed are left behind (daemon
    threads), and a process still running `timeout` + GRACE seconds after the start is an error.
    """
    world = World(size, timeout)
    teams = [make_team(LocalComm(world, rank), update) for rank in range(size)]
    results, errors = [None] * size, [None] * size

    def process(rank):
        try:
            results[rank] = body(teams[rank])
        except BaseException as error:  # reported below, in the calling thread
            errors[rank] = error
            world.fail(rank, error)
        else:
            world.finish(rank)

    threads = [threading.Thread(target=process, args=(rank,), name=f"simulated process {rank}", daemon=True)
               for rank in range(size)]
    for thread in threads:
        thread.start()
    began = time.monotonic()
    while any(thread.is_alive() for thread in threads):  # until all return, or one failed and others linger
        now = time.monotonic()
        if now - began > timeout + GRACE or (world.failed_at is not None and now - world.failed_at > GRACE):
            break
        next(thread for thread in threads if thread.is_alive()).join(0.01)
    stuck = [rank for rank, thread in enumerate(threads) if thread.is_alive()]
    if stuck:
        world.fail(stuck[0], None)  # any still waiting in a collective call give up
    failures = [(rank, error) for rank, error in enumerate(errors) if error is not None]
    if failures:
        rank, error = next(((r, e) for r, e in failures if not isinstance(e, Abandoned)), failures[0])
        if hasattr(error, "add_note"):
            error.add_note(f"(in simulated process {rank} of {size})")
        raise error
    if stuck:
        raise Abandoned(f"simulated process(es) {stuck} of {size} still running after {timeout:g} s")
    return results, teams
