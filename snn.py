"""A two-layer leaky integrate-and-fire (LIF) network, simulated for a whole population at once.

Network (2312 -> 64 LIF -> 10 LIF), for every layer and time step t = 1..T:

    V_t = beta * V_{t-1} + W s_t + b                       (1)  membrane potential
    o_t = [V_t >= V_th];  V_t <- 0 where o_t                (2)  spike, then reset to zero

s_t is the layer's input at step t (an event frame for layer 1, the hidden spikes o_t for layer 2).
The network's output is the mean spike rate of the 10 output neurons over T steps, read out by a
softmax (3) and scored by cross-entropy (4). Evolution strategies evaluate many perturbed copies
("members") of the network on the same minibatch; `simulate` runs them all, in cache-sized chunks
of members, asking the caller for each layer's input current W s_t + b. That way every method
(EGGROLL, full-rank ES, plain inference) shares exactly this LIF code and differs only in how it
forms the currents.
"""
from dataclasses import dataclass

import numpy

from backend import array_module_of, to_numpy
import gpu

SIZES = (2312, 64, 10)  # inputs (34 x 34 pixels x 2 polarities), hidden LIF, output LIF
INIT_STD = 0.3           # W, b ~ N(0, 0.3^2), as in the paper
CHUNK_BYTES = 1 << 20    # CPU: membrane potentials of one member chunk stay in a 1 MiB L2 cache


@dataclass(frozen=True)
class LIF:
    """Neuron constants shared by all layers.

    The paper does not give them. beta = 0.9 keeps a memory of about 1/(1 - beta) = 10 steps, the
    whole T = 10 window, so evidence from every frame adds up; V_th = 1.0 is snnTorch's default.
    """
    beta: float = 0.9
    threshold: float = 1.0


def init_params(seed, sizes=SIZES, std=INIT_STD, xp=numpy):
    """W_l (fan_out x fan_in) and b_l drawn i.i.d. from N(0, std^2), float32."""
    rng = numpy.random.default_rng(seed)
    params = {}
    for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"W{layer}"] = xp.asarray(rng.normal(0.0, std, (n_out, n_in)), dtype=xp.float32)
        params[f"b{layer}"] = xp.asarray(rng.normal(0.0, std, n_out), dtype=xp.float32)
    return params


def lif_step(v, current, lif, spikes):
    """One step of Eqs. (1)-(2), in place on v; writes the spikes o_t (0 or 1) into `spikes`."""
    xp = array_module_of(v)
    if gpu.enabled(xp):
        return gpu.lif_step(v, current, lif, spikes)
    v *= lif.beta
    v += current
    xp.greater_equal(v, lif.threshold, out=spikes)
    v *= 1 - spikes
    return spikes


def members_per_chunk(n_members, batch, n_hidden, xp):
    """How many members to simulate together: all on a GPU, an L2-sized even number on a CPU."""
    if xp is not numpy:
        return n_members
    fit = CHUNK_BYTES // (batch * n_hidden * 4)
    return max(2, min(n_members, fit - fit % 2))


def simulate(hidden_current, output_current, n_members, n_steps, batch, sizes=SIZES,
             lif=LIF(), xp=numpy, dtype=None, count_hidden=False):
    """Run Eqs. (1)-(2) for n_members networks on one minibatch, a chunk of members at a time.

    hidden_current(t, start, stop) -> current W1 s_t + b1 into the hidden layer of members
        start..stop-1 at step t, shape (stop - start, batch, n_hidden) or broadcastable to it;
    output_current(spikes, start, stop) -> currents W2 o_t + b2 into the output layer at every
        step, (n_steps, stop - start, batch, n_out), from those members' hidden spikes o_t,
        (n_steps, stop - start, batch, n_hidden). Layer 2 only sees layer 1's spikes, so a chunk
        runs layer 1 through all steps first, then layer 2.
    Returns the output spike counts (n_members, batch, n_out) and, if count_hidden, the number
    of hidden spikes of each member over the batch and all steps (n_members,), else None.
    """
    _, n_hidden, n_out = sizes
    dtype = dtype or xp.float32
    counts = xp.zeros((n_members, batch, n_out), dtype=dtype)
    hidden_spikes = xp.zeros(n_members, dtype=xp.float64) if count_hidden else None
    chunk = members_per_chunk(n_members, batch, n_hidden, xp)
    for start in range(0, n_members, chunk):
        stop = min(start + chunk, n_members)
        v = xp.zeros((stop - start, batch, n_hidden), dtype=dtype)
        spikes = xp.empty((n_steps,) + v.shape, dtype=dtype)
        for t in range(n_steps):
            lif_step(v, hidden_current(t, start, stop), lif, spikes[t])
        if count_hidden:
            hidden_spikes[start:stop] = spikes.sum(axis=(0, 2, 3))
        currents = output_current(spikes, start, stop)
        v = xp.zeros((stop - start, batch, n_out), dtype=dtype)
        out_spikes = xp.empty_like(v)
        for t in range(n_steps):
            counts[start:stop] += lif_step(v, currents[t], lif, out_spikes)
    return counts, hidden_spikes


def forward(params, frames, lif=LIF(), n_members=1, count_hidden=False):
    """The unperturbed network on frames (T, N, n_in): output spike counts (n_members, N, n_out).

    Every member has the same weights; n_members > 1 is plain batch inference of a population,
    the yardstick for what perturbations cost (on a GPU, one kernel: gpu.population_lif_network).
    Layer 1 sees the same frames at every member, so its current W1 s_t + b1 is one matrix
    product for all steps and members.
    """
    xp = array_module_of(frames)
    n_steps, batch, n_in = frames.shape
    sizes = (n_in, params["W1"].shape[0], params["W2"].shape[0])
    hidden = (frames.reshape(n_steps * batch, n_in) @ params["W1"].T + params["b1"])
    hidden = hidden.reshape(n_steps, batch, sizes[1])
    if n_members > 1 and gpu.enabled(xp):  # a population: every member and step in one kernel
        counts, hidden_counts = gpu.population_lif_network(hidden, params["W2"], params["b2"], n_members, lif)
        return counts, (hidden_counts if count_hidden else None)
    return simulate(lambda t, start, stop: hidden[t],
                    lambda spikes, start, stop: spikes @ params["W2"].T + params["b2"],
                    n_members, n_steps, batch, sizes, lif, xp, frames.dtype, count_hidden)


def log_softmax_of_rates(counts, n_steps, logit_scale=1.0):
    """Eq. (3): log softmax(logit_scale * counts / T) over the last (class) axis."""
    xp = array_module_of(counts)
    logits = counts * (logit_scale / n_steps)
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - xp.log(xp.exp(logits).sum(axis=-1, keepdims=True))


def cross_entropy(counts, labels, n_steps, logit_scale=1.0):
    """Eq. (4): mean over the batch of -log p(label), for every member; counts (..., N, n_out)."""
    xp = array_module_of(counts)
    log_p = log_softmax_of_rates(counts, n_steps, logit_scale)
    picked = xp.take_along_axis(log_p, labels.reshape((1,) * (counts.ndim - 2) + (-1, 1)), axis=-1)
    return -picked[..., 0].mean(axis=-1)


def correct_per_class(counts, labels):
    """For each class c, how many samples of class c the most-spiking output neuron classifies
    right (ties: lowest class); a NumPy array of length n_out. counts (N, n_out), labels (N,)."""
    hits = to_numpy(counts.argmax(axis=-1) == labels)
    return numpy.bincount(to_numpy(labels)[hits], minlength=counts.shape[-1])

