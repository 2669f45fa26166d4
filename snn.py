"""A layered leaky integrate-and-fire (LIF) network, simulated for a whole population at once.

Network (the paper's: 2312 -> 64 LIF -> 10 LIF; any sizes, two or more LIF layers), for every
layer and time step t = 1..T:

    V_t = beta * V_{t-1} + W s_t + b                       (1)  membrane potential
    o_t = [V_t >= V_th];  V_t <- 0 where o_t                (2)  spike, then reset to zero

s_t is the layer's input at step t (an event frame for layer 1, the previous layer's spikes o_t for
the others). Layer l's parameters are named W{l} and b{l}, l = 1..L, layer L the output.
The network's output is the mean spike rate of the output neurons over T steps, read out by a
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

SIZES = (2312, 64, 10)  # the paper's: inputs (34 x 34 pixels x 2 polarities), hidden LIF, output LIF
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
    """W_l (fan_out x fan_in) and b_l drawn i.i.d. from N(0, std^2), float32, for sizes
    (inputs, hidden..., outputs)."""
    rng = numpy.random.default_rng(seed)
    params = {}
    for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"W{layer}"] = xp.asarray(rng.normal(0.0, std, (n_out, n_in)), dtype=xp.float32)
        params[f"b{layer}"] = xp.asarray(rng.normal(0.0, std, n_out), dtype=xp.float32)
    return params


def n_layers(params):
    """L, the number of LIF layers of a network's parameters {W1, b1, ..., WL, bL}."""
    return sum(1 for name in params if name.startswith("W"))


def layer_of(name):
    """l of parameter W{l} or b{l}."""
    return int(name[1:])


def sizes_of(params):
    """(inputs, hidden..., outputs) of a network's parameters."""
    return (params["W1"].shape[1],) + tuple(params[f"W{layer}"].shape[0] for layer in range(1, n_layers(params) + 1))


def check_params(params):
    """ValueError naming the fix unless params are W1, b1, ..., WL, bL (L >= 2) of matching shapes."""
    layers = n_layers(params)
    expected = {f"{kind}{layer}" for layer in range(1, layers + 1) for kind in "Wb"}
    if layers < 2 or set(params) != expected:
        raise ValueError(f"a spiking network's parameters are W1, b1, ..., WL, bL with L >= 2 layers, got "
                         f"{', '.join(sorted(params))}: make them with snn.init_params(seed, sizes)")
    for layer in range(1, layers + 1):
        w, b = params[f"W{layer}"], params[f"b{layer}"]
        if w.ndim != 2 or b.shape != (w.shape[0],) or (layer > 1 and w.shape[1] != params[f"W{layer - 1}"].shape[0]):
            raise ValueError(f"W{layer} {tuple(w.shape)} and b{layer} {tuple(b.shape)} do not fit the layer "
                             f"before: make them with snn.init_params(seed, sizes)")


def check_frames(params, frames, labels):
    """ValueError unless params are a network (check_params), frames is (T, N, n_in) for W1 and
    labels is (N,) of class indices."""
    check_params(params)
    n_in = params["W1"].shape[1]
    if frames.ndim != 3 or frames.shape[2] != n_in:
        raise ValueError(f"frames must have shape (T, N, {n_in}), got {tuple(frames.shape)}: "
                         f"bin events into T frames of {n_in} inputs")
    if labels.shape != (frames.shape[1],):
        raise ValueError(f"labels must have shape ({frames.shape[1]},) to match the batch of frames, "
                         f"got {tuple(labels.shape)}")


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


def simulate(input_current, layer_current, n_members, n_steps, batch, sizes=SIZES,
             lif=LIF(), xp=numpy, dtype=None, count_hidden=False):
    """Run Eqs. (1)-(2) for n_members networks of `sizes` (inputs, hidden..., outputs) on one
    minibatch, a chunk of members at a time.

    input_current(t, start, stop) -> current W1 s_t + b1 into layer 1 of members start..stop-1 at
        step t, shape (stop - start, batch, sizes[1]) or broadcastable to it;
    layer_current(layer, spikes, start, stop) -> currents W_l o_t + b_l into layer l >= 2 at every
        step, (n_steps, stop - start, batch, sizes[l]), from those members' spikes o_t of layer
        l - 1, (n_steps, stop - start, batch, sizes[l - 1]). A layer only sees the spikes of the one
        before, so a chunk runs layer 1 through all steps first, then layer 2, and so on.
    Returns the output spike counts (n_members, batch, n_out) and, if count_hidden, the number
    of hidden spikes (every layer but the last) of each member over the batch and all steps
    (n_members,), else None.
    """
    dtype = dtype or xp.float32
    n_out = sizes[-1]
    counts = xp.zeros((n_members, batch, n_out), dtype=dtype)
    hidden_spikes = xp.zeros(n_members, dtype=xp.float64) if count_hidden else None
    chunk = members_per_chunk(n_members, batch, max(sizes[1:-1]), xp)
    for start in range(0, n_members, chunk):
        stop = min(start + chunk, n_members)
        v = xp.zeros((stop - start, batch, sizes[1]), dtype=dtype)
        spikes = xp.empty((n_steps,) + v.shape, dtype=dtype)
        for t in range(n_steps):
            lif_step(v, input_current(t, start, stop), lif, spikes[t])
        for layer in range(2, len(sizes)):
            if count_hidden:
                hidden_spikes[start:stop] += spikes.sum(axis=(0, 2, 3))
            currents = layer_current(layer, spikes, start, stop)
            v = xp.zeros((stop - start, batch, sizes[layer]), dtype=dtype)
            if layer == len(sizes) - 1:
                out_spikes = xp.empty_like(v)
                for t in range(n_steps):
                    counts[start:stop] += lif_step(v, currents[t], lif, out_spikes)
            else:
                spikes = xp.empty((n_steps,) + v.shape, dtype=dtype)
                for t in range(n_steps):
                    lif_step(v, currents[t], lif, spikes[t])
    return counts, hidden_spikes


def forward(params, frames, lif=LIF(), n_members=1, count_hidden=False):
    """The unperturbed network on frames (T, N, n_in): output spike counts (n_members, N, n_out).

    Every member has the same weights; n_members > 1 is plain batch inference of a population,
    the yardstick for what perturbations cost (on a GPU, for two layers, one kernel:
    gpu.population_lif_network). Layer 1 sees the same frames at every member, so its current
    W1 s_t + b1 is one matrix product for all steps and members.
    """
    xp = array_module_of(frames)
    n_steps, batch, n_in = frames.shape
    sizes = sizes_of(params)
    hidden = (frames.reshape(n_steps * batch, n_in) @ params["W1"].T + params["b1"])
    hidden = hidden.reshape(n_steps, batch, sizes[1])
    if n_members > 1 and gpu.enabled(xp) and len(sizes) == 3:  # a population: every member and step in one kernel
        counts, hidden_counts = gpu.population_lif_network(hidden, params["W2"], params["b2"], n_members, lif)
        return counts, (hidden_counts if count_hidden else None)
    return simulate(lambda t, start, stop: hidden[t],
                    lambda layer, spikes, start, stop: spikes @ params[f"W{layer}"].T + params[f"b{layer}"],
                    n_members, n_steps, batch, sizes, lif, xp, frames.dtype, count_hidden)


def log_softmax_of_rates(counts, n_steps, logit_scale=1.0):
    """Eq. (3): log softmax(logit_scale * counts / T) over the last (class) axis."""
    xp = array_module_of(counts)
    logits = counts * (logit_scale / n_steps)
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - xp.log(xp.exp(logits).sum(axis=-1, keepdims=True))


def cross_entropy(counts, labels, n_steps, logit_scale=1.0):
    """Eq. (4): mean over the batch of -log y_hat[label], y_hat the softmax of Eq. (3), for every
    member; counts (..., N, n_out)."""
    xp = array_module_of(counts)
    log_p = log_softmax_of_rates(counts, n_steps, logit_scale)
    picked = xp.take_along_axis(log_p, labels.reshape((1,) * (counts.ndim - 2) + (-1, 1)), axis=-1)
    return -picked[..., 0].mean(axis=-1)


def correct_per_class(counts, labels):
    """For each class, how many samples of that class the most-spiking output neuron classifies
    right (ties: lowest class); a NumPy array of length n_out. counts (N, n_out), labels (N,)."""
    hits = to_numpy(counts.argmax(axis=-1) == labels)
    return numpy.bincount(to_numpy(labels)[hits], minlength=counts.shape[-1])

