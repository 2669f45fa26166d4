"""One population over many processes (MPI through mpi4py): only fitnesses travel.

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
generation (`stop_if_signalled`), so that none is left waiting in a collective call.
"""
import os
import signal
import time

import numpy

from backend import array_module_of, to_numpy

UPDATES = ("seeds", "allreduce")


def share(n_pairs, pairs_per_block, rank, size):
    """The pairs of process `rank` of `size`: whole blocks, as evenly as they go (size need not
    divide the number of pairs; a process may get none)."""
    n_blocks = -(-n_pairs // pairs_per_block)
    first, last = (n_blocks * rank) // size, (n_blocks * (rank + 1)) // size
    return slice(min(first * pairs_per_block, n_pairs), min(last * pairs_per_block, n_pairs))


class Stopped(KeyboardInterrupt):
    """SIGINT (Ctrl-C) or SIGTERM: exit status 128 + its number. `everywhere`: raised by every
    process of a job at the same point (Team.stop_if_signalled)."""

    def __init__(self, signum, everywhere=False):
        super().__init__(signal.Signals(signum).name)
        self.signum, self.everywhere = signum, everywhere


class Alone:
    """A single process: it holds every pair, and nothing travels."""
    rank, size, local_rank, local_size = 0, 1, 0, 1

    def my_pairs(self, n_pairs, pairs_per_block):
        """The pairs this process evaluates, as a slice of 0..n_pairs-1."""
        return slice(0, n_pairs)

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

    def problems(self, problem):
        """Every process's `problem` (any picklable value), in rank order."""
        return [problem]

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

    def my_pairs(self, n_pairs, pairs_per_block):
        return share(n_pairs, pairs_per_block, self.rank, self.size)

    def update_pairs(self, n_pairs, pairs_per_block):
        return slice(0, n_pairs) if self.update == "seeds" else self.my_pairs(n_pairs, pairs_per_block)

    def gather(self, values, n_pairs, pairs_per_block):
        xp, local = array_module_of(values), numpy.ascontiguousarray(to_numpy(values))
        shares = [share(n_pairs, pairs_per_block, rank, self.size) for rank in range(self.size)]
        counts = [2 * (mine.stop - mine.start) for mine in shares]  # members per process, known to all
        everyone = numpy.empty(sum(counts), dtype=local.dtype)
        began = time.perf_counter()
        self.comm.Allgatherv(local, [everyone, counts])
        self.seconds += time.perf_counter() - began
        self.bytes_sent += local.nbytes * (self.size - 1)
        return xp.asarray(everyone)

    def sum(self, grads):
        if self.update == "seeds":
            return grads
        xp = array_module_of(next(iter(grads.values())))
        flat = numpy.concatenate([to_numpy(g).ravel() for g in grads.values()])
        total = numpy.empty_like(flat)
        began = time.perf_counter()
        self.comm.Allreduce(flat, total)
        self.seconds += time.perf_counter() - began
        self.bytes_sent += 2 * flat.nbytes * (self.size - 1) // self.size  # a ring all-reduce
        summed, start = {}, 0
        for name, g in grads.items():
            summed[name] = xp.asarray(total[start:start + g.size].reshape(g.shape))
            start += g.size
        return summed

    def total(self, counts):
        summed = numpy.empty_like(counts)
        self.comm.Allreduce(counts, summed)
        return summed

    def broadcast(self, value):
        """Rank 0's value (any picklable object) on every process."""
        return self.comm.bcast(value, root=0)

    def problems(self, problem):
        return self.comm.allgather(problem)

    def on_signal(self, signum):
        self.signal = signum  # stopping here could leave the others waiting in a collective call

    def stop_if_signalled(self):
        signum = self.comm.allreduce(self.signal, op=self.mpi.MAX)
        if signum:
            raise Stopped(signum, everywhere=True)

    def abort(self, code):
        """End every process of the job at once (when one process failed alone)."""
        self.comm.Abort(code)


def team(update):
    """The Team of this MPI job; RuntimeError naming the install command if mpi4py is missing."""
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise RuntimeError("--distributed needs mpi4py and an MPI library: pip install -e \".[mpi]\" "
                           "(or pip install mpi4py built against your cluster's MPI)") from None
    return Team(update)


def launched_rank():
    """This process's rank in an MPI job, from the launcher's environment (MPICH and Intel MPI,
    Open MPI, PMIx), before MPI is started; 0 outside a job."""
    for name in ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK"):
        if os.environ.get(name, "").isdigit():
            return int(os.environ[name])
    return 0
