"""The two baselines EGGROLL is measured against, on the same network, data and Adam.

1. Vanilla OpenAI-ES (Salimans et al., 2017): full-rank Gaussian perturbations E_p (m × n) drawn
   from the SAME Philox streams as EGGROLL's factors, antithetic pairs, centred ranks and Adam.
       g_W = 1/(2 P sigma) sum_p f_p E_p                                                 (10)
   Two ways to evaluate the population:
   - "sequential": a loop over members, each with W +- sigma E_p materialised (the paper's baseline);
   - "batched": all members at once, layer 1 as x [E_1^T ... E_P^T] in one matrix product.
2. Surrogate-gradient backpropagation through time, written by hand (see `bptt_*`).
"""
import dataclasses
import math
from dataclasses import dataclass

import numpy

from backend import array_module_of
from distributed import ALONE
import eggroll
import interface_checks
import noise
import optim
import snn
import snn_eggroll

ES_MODES = ("batched", "sequential")


# ---------------------------------------------------------------------------------------------
# 1. Vanilla ES

@dataclass(frozen=True)
class ESConfig:
    """What one vanilla-ES population needs: EGGROLL's settings without a rank, and the mode."""
    population: int
    sigma: float
    seed: int
    logit_scale: float
    mode: str = "batched"  # see ES_MODES; both give the same members
    spike_cost: float = 0.0

    @property
    def pairs(self):
        return self.population // 2


def full_rank_noise(seed, generation, pairs, name, shape, xp):
    """E_p for weight `name` of shape (m, n), every entry N(0, 1): (P, m, n), one for each pair
    number of the integer array `pairs`."""
    interface_checks.check_whole("seed", seed, 0, 2 ** 64 - 1, "e.g. 0")
    interface_checks.check_whole("generation", generation, 0, interface_checks.MAX_GENERATION,
                                 interface_checks.GENERATION_FIX)
    if not (hasattr(pairs, "dtype") and pairs.dtype.kind in "iu" and pairs.ndim == 1 and
            (pairs.size == 0 or 0 <= int(pairs.min()) and int(pairs.max()) < interface_checks.MAX_PAIRS)):
        raise ValueError(f"pairs must be a 1-D integer array of pair numbers from 0, got "
                         f"{interface_checks.a_kind(pairs)}"
                         + (f" {pairs.dtype} {tuple(pairs.shape)}" if hasattr(pairs, "dtype") else "")
                         + ": use e.g. numpy.arange(P)")
    if not (isinstance(shape, tuple) and len(shape) == 2 and all(interface_checks.is_integer(side) and side >= 1
                                                                 for side in shape)):
        raise ValueError(f"shape must be a weight's (m, n), two whole numbers >= 1, got {shape!r}")
    if not isinstance(name, str):
        raise ValueError(f"name must be the weight's name, a string (its noise's key), got "
                         f"{interface_checks.a_kind(name)}")
    interface_checks.check_array_module(xp)
    interface_checks.refuse_beyond_ram(f"full-rank noise of {pairs.shape[0]:,} pairs for a weight {shape}",
                                       pairs.shape[0] * shape[0] * shape[1] * 8, "as it is drawn",
                                       "draw fewer pairs at a time, or use a smaller weight")
    m, n = shape
    return noise.normals(seed, generation, pairs, name, m * n, xp).reshape(-1, m, n)


def pair_noise(params, config, generation, pair):
    """(E_p, delta_p) of one pair with every matrix materialised: a dict like params."""
    check_es_call(params, config, generation)
    interface_checks.check_whole("pair", pair, 0, config.pairs - 1, "0, the first (pairs count from 0)")
    xp = array_module_of(params["W1"])
    pairs = xp.arange(pair, pair + 1)
    drawn = {}
    for name, value in params.items():
        if name.startswith("W"):
            draw = full_rank_noise(config.seed, generation, pairs, name, value.shape, xp)[0]
        else:
            draw = noise.normals(config.seed, generation, pairs, name, value.shape[0], xp)[0]
        drawn[name] = draw.astype(value.dtype, copy=False)
    return drawn


def sequential_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False, pairs=slice(None)):
    """Output spike counts (2·pairs, N, n_out) of the pairs in the slice `pairs`, one member at a time
    (member 2p = +, 2p + 1 = -)."""
    check_es_forward(params, frames, config, generation, lif, pairs)
    xp = array_module_of(frames)
    chosen = range(config.pairs)[pairs]
    counts = xp.empty((2 * len(chosen), frames.shape[1], params["W2"].shape[0]), dtype=frames.dtype)
    hidden = xp.empty(2 * len(chosen)) if count_hidden else None
    for index, pair in enumerate(chosen):
        perturbation = pair_noise(params, config, generation, pair)
        for side, sign in enumerate((1, -1)):
            member = {name: value + (sign * config.sigma) * perturbation[name] for name, value in params.items()}
            member_counts, member_hidden = snn.counts_of(member, frames, lif, 1, count_hidden, None)
            counts[2 * index + side] = member_counts[0]
            if count_hidden:
                hidden[2 * index + side] = member_hidden[0]
    return counts, hidden


def batched_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False, pairs=slice(None)):
    """Output spike counts (2·pairs, N, n_out) of the pairs in the slice `pairs`, all members at once,
    layer 1 as the population product x [E_1^T ... E_P^T]."""
    check_es_forward(params, frames, config, generation, lif, pairs)
    xp = array_module_of(frames)
    n_frames, batch, n_in = frames.shape
    n_hidden, n_out = params["W1"].shape[0], params["W2"].shape[0]
    pairs = xp.arange(config.pairs)[pairs]
    n_pairs, members = pairs.shape[0], 2 * pairs.shape[0]
    key = (config.seed, generation, pairs)
    sigma = config.sigma
    x = frames.reshape(n_frames * batch, n_in)
    base = (x @ params["W1"].T + params["b1"]).reshape(n_frames, batch, n_hidden)
    noise1 = full_rank_noise(*key, "W1", (n_hidden, n_in), xp)
    xe = eggroll.population_product(x, noise1).reshape(n_frames, batch, n_pairs, n_hidden)
    del noise1
    delta1 = noise.normals(*key, "b1", n_hidden, xp)
    sign = xp.asarray([1, -1], dtype=frames.dtype)                             # (+, -) of a pair
    noise2 = full_rank_noise(*key, "W2", (n_out, n_hidden), xp)
    w2 = (params["W2"] + sigma * sign[None, :, None, None] * noise2[:, None])  # (P, 2, n_out, n_hidden)
    w2 = w2.reshape(members, n_out, n_hidden)                                  # member 2p + s
    delta2 = noise.normals(*key, "b2", n_out, xp)
    b2 = (params["b2"] + sigma * sign[None, :, None] * delta2[:, None]).reshape(members, 1, n_out)

    def hidden_current(t, start, stop):
        chunk = slice(start // 2, stop // 2)  # the pairs of members start..stop-1
        perturbation = sigma * (xe[t, :, chunk].transpose(1, 0, 2) + delta1[chunk, None, :])
        return eggroll.antithetic(base[t], perturbation)

    def output_current(layer, spikes, start, stop):
        return spikes @ w2[start:stop].transpose(0, 2, 1) + b2[start:stop]          # (T, c, N, O)

    return snn.simulate(hidden_current, output_current, members, n_frames, batch,
                        (n_in, n_hidden, n_out), lif, xp, frames.dtype, count_hidden)


def full_rank_gradient(f, params, config, generation, pairs=slice(None)):
    """Eq. (10) for every weight and Eq. (8) for every bias, summed over the pairs in the slice
    `pairs` (all by default), the noise regenerated from its keys; f (pairs,) the pairs' f_p. Any
    named 1-D and 2-D parameters (the toy's too), config any settings with pairs, seed and sigma."""
    if not all(hasattr(config, name) for name in ("pairs", "seed", "sigma")):
        raise ValueError(f"config must hold the population's pairs, seed and sigma, as baselines.ESConfig does, got "
                         f"{interface_checks.a_kind(config)}")
    interface_checks.check_sigma(config.sigma)
    interface_checks.check_whole("seed", config.seed, 0, 2 ** 64 - 1, "e.g. 0")
    if not isinstance(params, dict) or not params:
        raise ValueError(f"params must be a dict of named 1-D and 2-D float arrays, got "
                         f"{'an empty dict' if isinstance(params, dict) else interface_checks.a_kind(params)}")
    for name, value in params.items():
        if getattr(value, "dtype", None) not in (numpy.float32, numpy.float64) or value.ndim not in (1, 2) or \
                isinstance(value, interface_checks.ODD_ARRAYS):
            got = f"{value.dtype} {tuple(value.shape)}" if hasattr(value, "dtype") else interface_checks.a_kind(value)
            raise ValueError(f"parameter {name!r} must be a float32 or float64 array of 1 or 2 dimensions, got {got}")
        if not bool(array_module_of(value).isfinite(value).all()):
            raise ValueError(f"parameter {name!r} holds NaN or inf: give finite parameters")
    interface_checks.check_pairs(pairs, config.pairs)
    n_chosen = len(range(config.pairs)[pairs])
    if not (hasattr(f, "dtype") and f.dtype.kind == "f" and tuple(f.shape) == (n_chosen,)) or \
            isinstance(f, interface_checks.ODD_ARRAYS):
        got = f"{f.dtype} {tuple(f.shape)}" if hasattr(f, "dtype") else interface_checks.a_kind(f)
        raise ValueError(f"f must be a float array ({n_chosen},), one f_p per pair of `pairs`, as "
                         f"eggroll.pair_differences gives it, got {got}")
    if not bool(array_module_of(f).isfinite(f).all()):
        raise ValueError("f holds NaN or inf: give the pair differences of finite fitnesses")
    xp = array_module_of(f)
    chosen = xp.arange(config.pairs)[pairs]
    grads = {}
    for name, value in params.items():
        if name.startswith("W"):
            perturbations = full_rank_noise(config.seed, generation, chosen, name, value.shape, xp)
            grads[name] = (f @ perturbations.reshape(chosen.shape[0], value.size)).reshape(value.shape) \
                / (2 * config.pairs * config.sigma)
        else:
            delta = noise.normals(config.seed, generation, chosen, name, value.shape[0], xp)
            grads[name] = eggroll.bias_gradient(f, delta, config.sigma, config.pairs)
    return grads


def check_two_layers(params, method):
    """ValueError naming the fix unless params (W1, b1, ...) are a fully connected network of two LIF
    layers, the only network `method` (vanilla ES) runs here."""
    snn.check_names(params)
    if snn.n_layers(params) != 2:
        raise ValueError(f"{method} runs networks of two LIF layers (one hidden), got {snn.n_layers(params)}: "
                         f"use one hidden size, or EGGROLL or BPTT for a deeper network")
    w1, w2 = params["W1"], params["W2"]
    if all(getattr(w, "ndim", None) == 2 for w in (w1, w2)) and w2.shape[1] != w1.shape[0]:
        raise ValueError(f"{method} runs fully connected networks, whose W2 reads W1's {w1.shape[0]} outputs, got "
                         f"W1 {tuple(w1.shape)} and W2 {tuple(w2.shape)} (a convolution's?): use one hidden size, "
                         f"or EGGROLL or BPTT for a convolutional network")


def check_es_config(config):
    """ValueError naming the fix unless config is an ESConfig (its values are checked where used)."""
    if not isinstance(config, ESConfig):
        raise ValueError(f"config must be a baselines.ESConfig, got {interface_checks.a_kind(config)}: give e.g. "
                         f"baselines.ESConfig(population=512, sigma=0.1, seed=1, logit_scale=1.0)")


def check_es_call(params, config, generation, pairs=slice(None)):
    """ValueError naming the fix unless the parameters, settings, generation and pairs are what the
    vanilla-ES functions take (check_es_forward checks a forward pass's frames and LIF too)."""
    check_es_config(config)
    check_two_layers(params, "vanilla ES")
    snn.check_params(params)
    interface_checks.check_whole("generation", generation, 0, interface_checks.MAX_GENERATION,
                                 interface_checks.GENERATION_FIX)
    interface_checks.check_whole("seed", config.seed, 0, 2 ** 64 - 1, "e.g. 0")
    if config.mode not in ES_MODES:
        raise ValueError(f"unknown ES mode {config.mode!r}: use one of {', '.join(ES_MODES)}")
    interface_checks.check_whole("population", config.population, None, 2 * interface_checks.MAX_PAIRS, "e.g. 512")
    interface_checks.check_population(config.population)
    if isinstance(config.sigma, dict):
        raise ValueError(f"vanilla ES takes one sigma for every parameter, a float, got {config.sigma!r}: use e.g. 0.1")
    interface_checks.check_sigma(config.sigma)
    interface_checks.check_float32_sigma("sigma", config.sigma, "the noise is drawn")
    interface_checks.check_resolved(params, dict.fromkeys(params, config.sigma))  # else every member is the mean
    interface_checks.check_pairs(pairs, config.pairs)


def check_es_forward(params, frames, config, generation, lif, pairs):
    """check_es_call, and the frames (T, N, n_in) and LIF of a forward pass."""
    check_es_call(params, config, generation, pairs)
    snn.check_inputs(params, frames)
    snn.check_frames_fit(params, frames)
    snn.check_lif(lif)


def es_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False, pairs=slice(None)):
    """Output spike counts of the full-rank ES members of `pairs`, evaluated as config.mode says
    (each mode checks its arguments)."""
    check_es_config(config)
    forward = batched_forward if config.mode == "batched" else sequential_forward  # (another mode: refused there)
    return forward(params, frames, config, generation, lif, count_hidden, pairs)


def es_generation_step(params, state, frames, labels, generation, config, adam, lif=snn.LIF(), team=ALONE):
    """One vanilla-ES generation: the same stages, arguments and stats as snn_eggroll.generation_step."""
    check_es_config(config)
    interface_checks.check_team(team)
    snn.check_frames(params, frames, labels)
    snn.check_frames_fit(params, frames)
    snn.check_lif(lif)
    interface_checks.check_whole("generation", generation, 0, interface_checks.MAX_GENERATION,
                                 interface_checks.GENERATION_FIX)
    interface_checks.check_whole("seed", config.seed, 0, 2 ** 64 - 1, "e.g. 0")
    snn_eggroll.check_readout_settings(config)
    optim.check(adam)
    if team.size > 1:  # a process with other settings or weights would step along other noise, unseen
        problem = team.disagreement({"ES": dataclasses.asdict(config), "generation": int(generation),
                                     "adam": dataclasses.asdict(adam),
                                     "parameters": interface_checks.digest_of(params)[:16],
                                     "optimiser": interface_checks.optimiser_summary(state),
                                     "minibatch": snn.minibatch_summary(frames, labels)})
        if problem:
            raise ValueError(f"the processes of this team hold different ES settings, states or minibatches: "
                             f"{problem}; give every process the same settings, parameters, Adam state, generation and "
                             f"minibatch")
    mine = team.my_pairs(config.pairs, eggroll.PAIRS_PER_BLOCK)
    counts, hidden = es_forward(params, frames, config, generation, lif, count_hidden=bool(config.spike_cost),
                                pairs=mine)
    fitnesses = team.gather(snn_eggroll.fitness(counts, labels, frames.shape[0], config.logit_scale, hidden,  # (3)-(4)
                                                config.spike_cost), config.pairs, eggroll.PAIRS_PER_BLOCK)
    shaped = eggroll.centred_ranks(fitnesses)
    summed = team.update_pairs(config.pairs, eggroll.PAIRS_PER_BLOCK)
    grads = team.sum(full_rank_gradient(eggroll.pair_differences(shaped)[summed], params, config, generation,
                                        summed))                                            # Eqs. (10), (8)
    with numpy.errstate(over="ignore"):  # an overflow is said below, in one line
        stepped, state = optim.ascend(params, grads, state, adam)                            # Eq. (9)
    interface_checks.check_stepped(stepped, f"lr {adam.lr!r}, sigma {config.sigma!r}", "lower lr, or raise sigma")
    return stepped, state, eggroll.population_stats(fitnesses, shaped)


# ---------------------------------------------------------------------------------------------
# 2. Surrogate-gradient BPTT
#
# Every layer runs Eqs. (1)-(2) as V_t = beta U_{t-1} + I_t,  o_t = S(V_t),  U_t = V_t (1 - o_t),
# with I_t = s_t Wᵀ + b, V_t the membrane potential before the reset and U_t the one after it.
# The forward spike is S = H(V - V_th); backward replaces its derivative by the fast sigmoid
# (Zenke & Ganguli, "SuperSpike", 2018):
#     dS/dV ~ 1 / (1 + k |V - V_th|)^2                                                     (11)
# k = 25 is snnTorch's `surrogate.fast_sigmoid(slope=25)` default. A price on hidden spikes adds
#     L_lambda = CE + spike_cost * sum_t sum_j o1_tj / N                                   (12)
# (the sum over every hidden layer's spikes in a deeper network; the ES fitness's penalty,
# snn_eggroll.fitness); its gradient spike_cost / N on every o1_tj reaches
# the weights through Eq. (11), the usual differentiable firing-rate penalty.

SLOPE = 25.0  # k of Eq. (11)


@dataclass(frozen=True)
class BPTTConfig:
    """The surrogate's slope k, Eq. (11), the readout scale of Eq. (3), whether the reset is
    detached from the graph (snnTorch's choice; see `bptt_backward`), and the price of a hidden
    spike, Eq. (12)."""
    slope: float
    logit_scale: float
    detach_reset: bool = True
    spike_cost: float = 0.0


def check_bptt_config(config):
    """ValueError naming the fix unless config is a BPTTConfig of a slope k > 0, a readout scale and
    spike price the fitness can use (snn_eggroll.check_readout_settings) and a bool detach_reset."""
    if not isinstance(config, BPTTConfig):
        raise ValueError(f"config must be a baselines.BPTTConfig, got {type(config).__name__}: give e.g. "
                         f"baselines.BPTTConfig(slope=25.0, logit_scale=10.0)")
    interface_checks.check_number("slope", config.slope, 0, 1e6, "25", open_low=True)
    snn_eggroll.check_readout_settings(config)
    if not isinstance(config.detach_reset, (bool, numpy.bool_)):
        raise ValueError(f"detach_reset must be True or False, got {config.detach_reset!r}")


def check_spike_arguments(v, lif, k):
    """ValueError naming the fix unless v is a float array of potentials, lif a snn.LIF and k a
    surrogate slope > 0 (BPTTConfig's check)."""
    if not (hasattr(v, "dtype") and v.dtype.kind == "f") or isinstance(v, interface_checks.ODD_ARRAYS):
        got = f"{v.dtype} {tuple(v.shape)}" if hasattr(v, "dtype") else interface_checks.a_kind(v)
        raise ValueError(f"v must be a float array of potentials, got {got}: give e.g. numpy.asarray(v, numpy.float32)")
    snn.check_lif(lif)
    interface_checks.check_number("k", k, 0, 1e6, "25, the surrogate's slope", open_low=True)


def heaviside(v, lif, k):
    """The forward spike of Eq. (2), [V >= V_th], as v's dtype."""
    check_spike_arguments(v, lif, k)
    return (v >= lif.threshold).astype(v.dtype)


def smooth_spike(v, lif, k):
    """S(V) = 1/2 + x / (1 + k |x|), x = V - V_th: the antiderivative of Eq. (11), for checking.

    Its exact derivative is Eq. (11), so in smooth mode the backward pass is the true gradient.
    It runs from 1/2 - 1/k to 1/2 + 1/k and crosses 1/2 at the threshold.
    """
    check_spike_arguments(v, lif, k)
    x = v - lif.threshold
    return 0.5 + x / (1 + k * abs(x))


def surrogate(v, lif, k):
    """Eq. (11): do/dV = 1 / (1 + k |V - V_th|)^2, o the spike."""
    check_spike_arguments(v, lif, k)
    return 1 / (1 + k * abs(v - lif.threshold)) ** 2


def lif_forward(current, lif, spike, k):
    """One layer over all frames from its currents I (T, N, n): pre-reset potentials V and spikes o."""
    if not (hasattr(current, "dtype") and current.dtype.kind == "f" and current.ndim == 3 and 0 not in current.shape) \
            or isinstance(current, interface_checks.ODD_ARRAYS):
        got = f"{current.dtype} {tuple(current.shape)}" if hasattr(current, "dtype") else \
            interface_checks.a_kind(current)
        raise ValueError(f"current must be a float array (T, N, n) of at least one frame, sample and neuron, got "
                         f"{got}" + (f" ({interface_checks.a_kind(current)})" if isinstance(
                             current, interface_checks.ODD_ARRAYS) else ""))
    if spike not in (heaviside, smooth_spike):
        raise ValueError(f"spike must be baselines.heaviside or baselines.smooth_spike, got {spike!r}")
    check_spike_arguments(current, lif, k)
    if not math.isfinite(interface_checks.magnitude(current)):  # a NaN potential never spikes: silent spikes
        raise ValueError("current holds NaN or inf, which no network's inputs make: give finite currents")
    xp = array_module_of(current)
    v, spikes = xp.empty_like(current), xp.empty_like(current)
    u = xp.zeros_like(current[0])
    for t in range(current.shape[0]):
        v[t] = lif.beta * u + current[t]
        spikes[t] = spike(v[t], lif, k)
        u = v[t] * (1 - spikes[t])
    return v, spikes


def bptt_forward(params, frames, lif=snn.LIF(), smooth=False, k=SLOPE, network=None):
    """The network on frames (T, N, n_in), keeping what `bptt_backward` needs. `network`: the
    layers (None: fully connected, read off the weights' shapes).

    Layer 1's current W1 s_t + b1 is one matrix product for all frames, as in snn.forward; each later
    layer's follows once all spikes of the one before are known. smooth=True spikes with
    `smooth_spike` instead of H. Returns a dict: frames, v{l} and o{l} of every layer l (each
    (T, N, n)) and counts (N, n_out), the sum of the output layer's spikes; with a potential readout
    the output layer's v is its potential, never reset, its o all zeros, and counts the sum of v;
    and made_with, the parameters, network and LIF it ran, which bptt_backward checks are its own.
    """
    snn.check_inputs(params, frames, network)
    snn.check_lif(lif)
    if smooth not in (True, False):  # a string would spike smoothly, unseen
        raise ValueError(f"smooth must be True or False, got {smooth!r}")
    interface_checks.check_number("k", k, 0, 1e6, "25", open_low=True)
    network = snn.network_of(params, network)
    xp = array_module_of(frames)
    n_frames, batch, n_in = frames.shape
    spike = smooth_spike if smooth else heaviside
    cache = {"frames": frames, "made_with": {"params": params, "network": network, "lif": lif}}
    inputs = frames.reshape(n_frames * batch, n_in)  # layer 1's, then each layer's the spikes of the one before
    n_layers = len(network.layers)
    for layer in range(1, n_layers + 1):
        current = snn.layer_current(params, layer, inputs, network).reshape(n_frames, batch, -1)
        if layer == n_layers and network.readout == "potential":  # V itself is read out: no spike, no reset
            cache[f"v{layer}"], cache[f"o{layer}"] = leaky_forward(current, lif), xp.zeros_like(current)
        else:
            cache[f"v{layer}"], cache[f"o{layer}"] = lif_forward(current, lif, spike, k)
        inputs = cache[f"o{layer}"]
    read = cache[f"v{n_layers}"] if network.readout == "potential" else inputs
    cache["counts"] = read.sum(axis=0)
    return cache


def leaky_forward(current, lif):
    """A potential readout's output neurons: Eq. (1) alone, V_t = beta V_{t-1} + I_t, no spike nor
    reset; V (T, N, n)."""
    v = array_module_of(current).empty_like(current)
    v[0] = current[0]
    for t in range(1, current.shape[0]):
        v[t] = lif.beta * v[t - 1] + current[t]
    return v


def leaky_backward(grad_v, lif):
    """dL/dI (T, N, n) of `leaky_forward` from dL/dV_t (T, N, n) as the loss reads each V_t:
    dL/dI_t = dL/dV_t + beta dL/dI_{t+1}."""
    grad_current = array_module_of(grad_v).empty_like(grad_v)
    grad_current[-1] = grad_v[-1]
    for t in reversed(range(grad_v.shape[0] - 1)):
        grad_current[t] = grad_v[t] + lif.beta * grad_current[t + 1]
    return grad_current


def lif_backward(grad_spikes, v, spikes, lif, k, detach_reset):
    """dL/dI (T, N, n) of one layer from dL/do (T, N, n), backwards through time.

        dL/dV_t = dL/do_t S'(V_t) + dL/dU_t dU_t/dV_t,   dL/dU_t = beta dL/dV_{t+1},   dL/dI_t = dL/dV_t
        dU_t/dV_t = 1 - o_t - V_t S'(V_t),  or  1 - o_t with the reset detached.
    """
    xp = array_module_of(v)
    grad_current = xp.empty_like(v)
    grad_u = xp.zeros_like(v[0])
    for t in reversed(range(v.shape[0])):
        slope = surrogate(v[t], lif, k)
        keep = 1 - spikes[t] if detach_reset else 1 - spikes[t] - v[t] * slope
        grad_current[t] = grad_spikes[t] * slope + grad_u * keep
        grad_u = lif.beta * grad_current[t]
    return grad_current


def check_cache(params, cache, lif, network):
    """ValueError naming the fix unless `cache` is what bptt_forward returned for these parameters,
    network and LIF: another's would give another network's gradients, unseen."""
    made = cache.get("made_with") if isinstance(cache, dict) else None
    if not isinstance(made, dict):
        raise ValueError(f"cache must be the dict bptt_forward returned, got {interface_checks.a_kind(cache)} without "
                         f"its made_with: give bptt_backward what bptt_forward(params, frames, ...) returned")
    differ = [what for what, same in (
        ("network (its layers or readout)", made["network"] == network), ("LIF", made["lif"] == lif),
        ("parameters", made["params"].keys() == params.keys() and all(
            made["params"][name] is value or bool(array_module_of(value).array_equal(made["params"][name], value))
            for name, value in params.items())))
        if not same]
    if differ:
        raise ValueError(f"the cache was made by bptt_forward with another {differ[0]} than bptt_backward is given: "
                         f"give both the same params, network= and lif=")
    layers = range(1, len(network.layers) + 1)
    arrays = ["frames", "counts"] + [f"{kind}{layer}" for layer in layers for kind in "vo"]
    missing = [name for name in arrays if not hasattr(cache.get(name), "shape")]
    n_frames, batch = cache["frames"].shape[:2] if not missing else (None, None)
    sizes = network.sizes
    changed = missing or [name for name, shape, wanted in (
        ("frames", cache["frames"].shape, (n_frames, batch, sizes[0])), ("counts", cache["counts"].shape,
                                                                       (batch, sizes[-1])),
        *((f"{kind}{layer}", cache[f"{kind}{layer}"].shape, (n_frames, batch, sizes[layer]))
          for layer in layers for kind in "vo")) if tuple(shape) != wanted]
    if changed:
        raise ValueError(f"the cache's {changed[0]} is {'missing' if missing else 'of another shape than its frames'}"
                         f": it was changed after bptt_forward; give bptt_backward what bptt_forward returned")


def bptt_backward(params, cache, labels, lif=snn.LIF(), k=SLOPE, logit_scale=1.0, detach_reset=True,
                  spike_cost=0.0, network=None):
    """Gradients of the loss, Eqs. (3)-(4) and (12), for every parameter: a dict like params.

    Backward through every layer and frame, with Eq. (11) for every spike; a convolution's
    gradients gather over its patches, and its input's go back through col2im (`Network.fold`).
    detach_reset=True matches snnTorch (snntorch/_neurons/neurons.py, `mem_reset`: reset =
    spike_grad(mem - threshold).clone().detach()): no gradient flows through the o_t of the reset
    V_t (1 - o_t), only through V_t. detach_reset=False differentiates the reset too; with
    smooth=True in `bptt_forward` this is then the exact gradient of the smooth network.
    """
    network = snn.network_of(params, network)
    snn.check_lif(lif)
    check_cache(params, cache, lif, network)
    xp = array_module_of(cache["v1"])
    n_frames, batch, n_in = cache["frames"].shape
    n_layers = len(network.layers)
    snn.check_labels(labels, batch, network.sizes[-1], "the batch of the cached frames")
    interface_checks.check_number("k", k, 0, 1e6, "25", open_low=True)  # named as this function names it
    check_bptt_config(BPTTConfig(k, logit_scale, detach_reset, spike_cost))  # as bptt_step's, if called alone
    # Eqs. (3)-(4): dL/dlogits = (softmax - onehot) / N; logits = logit_scale * counts / T.
    grad_logits = xp.exp(snn.log_softmax_of_rates(cache["counts"], n_frames, logit_scale))
    grad_logits[xp.arange(batch), labels] -= 1
    grad_counts = grad_logits * (logit_scale / (n_frames * batch))
    grad_spikes = xp.broadcast_to(grad_counts, cache[f"o{n_layers}"].shape)  # counts = sum_t o_t (or V_t) of the output
    grad_currents = {}
    for layer in range(n_layers, 0, -1):
        if layer == n_layers and network.readout == "potential":
            grad_currents[layer] = leaky_backward(grad_spikes, lif)
        else:
            grad_currents[layer] = lif_backward(grad_spikes, cache[f"v{layer}"], cache[f"o{layer}"], lif, k,
                                                detach_reset)
        if layer > 1:
            fan_out = params[f"W{layer}"].shape[0]
            grad_spikes = network.fold(layer, grad_currents[layer].reshape(n_frames, -1, fan_out) @ params[f"W{layer}"])
            if spike_cost:
                grad_spikes = grad_spikes + spike_cost / batch                                  # Eq. (12)
    grads = {}
    for layer in range(1, n_layers + 1):
        inputs = cache["frames"].reshape(n_frames * batch, n_in) if layer == 1 else cache[f"o{layer - 1}"]
        patches = network.unfold(layer, inputs)
        flat = grad_currents[layer].reshape(-1, params[f"W{layer}"].shape[0])
        grads[f"W{layer}"] = flat.T @ patches.reshape(flat.shape[0], -1)
        grads[f"b{layer}"] = flat.sum(axis=0)
    return grads


def bptt_step(params, state, frames, labels, config, adam, lif=snn.LIF(), network=None):
    """One BPTT update on a minibatch: forward, loss, backward, then Adam (optim.py) up -g.
    `network`: the layers (None: fully connected, read off the weights' shapes).

    Returns new parameters, new Adam state and stats = {"loss": the loss before the step, L or,
    with a price on spikes, L_lambda}.
    """
    xp = array_module_of(frames)
    snn.check_frames(params, frames, labels, network)
    snn.check_frames_fit(params, frames)
    snn.check_lif(lif)
    check_bptt_config(config)
    optim.check(adam)
    with numpy.errstate(over="ignore", invalid="ignore", divide="ignore"):  # a NaN or inf: said below, in one line
        cache = bptt_forward(params, frames, lif, k=config.slope, network=network)
        loss = snn.cross_entropy(cache["counts"], labels, frames.shape[0], config.logit_scale)      # Eqs. (3)-(4)
        if config.spike_cost:
            hidden = sum(cache[f"o{layer}"].sum() for layer in range(1, snn.n_layers(params)))
            loss = loss + config.spike_cost * hidden / frames.shape[1]                              # Eq. (12)
        grads = bptt_backward(params, cache, labels, lif, config.slope, config.logit_scale, config.detach_reset,
                              config.spike_cost, network)
    if not all(bool(xp.isfinite(value).all()) for value in (loss, *grads.values())):
        raise ValueError("BPTT loss or gradient holds NaN or inf: lower the learning rate, "
                         "or check the input frames for non-finite values")
    with numpy.errstate(over="ignore", invalid="ignore"):  # an overflow is said below, in one line
        # frames wider than the weights (float64) give wider gradients: stepped in the weights' own type
        descent = {name: -g.astype(params[name].dtype, copy=False) for name, g in grads.items()}
        stepped, state = optim.ascend(params, descent, state, adam)  # Eq. (9)
    interface_checks.check_stepped(stepped, f"lr {adam.lr!r}", "lower lr")
    return stepped, state, {"loss": float(loss)}
