"""The two baselines EGGROLL is measured against, on the same network, data and Adam.

1. Vanilla OpenAI-ES (Salimans et al., 2017): full-rank Gaussian perturbations E_p (m x n) drawn
   from the SAME Philox streams as EGGROLL's factors, antithetic pairs, centred ranks and Adam.
       g_W = 1/(2 P sigma) sum_p f_p E_p                                                 (10)
   Two ways to evaluate the population:
   - "sequential": a loop over members, each with W +- sigma E_p materialised (the paper's baseline);
   - "batched": all members at once, layer 1 as x [E_1^T ... E_P^T] in one matrix product.
2. Surrogate-gradient backpropagation through time, written by hand (see `bptt_*`).
"""
import math

from backend import array_module_of
import eggroll
import snn

ES_MODES = ("batched", "sequential")


# ---------------------------------------------------------------------------------------------
# 1. Vanilla ES

def full_rank_noise(seed, generation, pairs, name, shape, xp):
    """E_p for weight `name` of shape (m, n), every entry N(0, 1): (P, m, n)."""
    m, n = shape
    return eggroll.standard_normals(seed, generation, pairs, eggroll.PARAM_IDS[name], m * n, xp).reshape(-1, m, n)


def member_params(params, config, generation, pair, sign):
    """theta_p +- sigma (E_p, delta_p) with every matrix materialised, for one member."""
    xp = array_module_of(params["W1"])
    pairs = xp.arange(pair, pair + 1)
    member = {}
    for name, value in params.items():
        if name.startswith("W"):
            noise = full_rank_noise(config.seed, generation, pairs, name, value.shape, xp)[0]
        else:
            noise = eggroll.bias_noise(config.seed, generation, pairs, name, value.shape[0], xp)[0]
        member[name] = value + (sign * config.sigma) * noise
    return member


def sequential_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False):
    """Output spike counts (2P, B, n_out), one member at a time (member 2p = +, 2p + 1 = -)."""
    xp = array_module_of(frames)
    counts, hidden = [], []
    for member in range(config.population):
        one = member_params(params, config, generation, member // 2, 1 - 2 * (member % 2))
        member_counts, member_hidden = snn.forward(one, frames, lif, count_hidden=count_hidden)
        counts.append(member_counts)
        hidden.append(member_hidden)
    return xp.concatenate(counts), (xp.concatenate(hidden) if count_hidden else None)


def batched_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False):
    """Output spike counts (2P, B, n_out) of all members at once, layer 1 as one matrix product."""
    xp = array_module_of(frames)
    n_steps, batch, n_in = frames.shape
    n_hidden, n_out = params["W1"].shape[0], params["W2"].shape[0]
    pairs = xp.arange(config.pairs)
    key = (config.seed, generation, pairs)
    sigma = config.sigma
    x = frames.reshape(n_steps * batch, n_in)
    base = (x @ params["W1"].T + params["b1"]).reshape(n_steps, batch, n_hidden)
    noise1 = full_rank_noise(*key, "W1", (n_hidden, n_in), xp)
    xe = (x @ noise1.reshape(config.pairs * n_hidden, n_in).T).reshape(n_steps, batch, config.pairs, n_hidden)
    del noise1
    delta1 = eggroll.bias_noise(*key, "b1", n_hidden, xp)
    sign = xp.asarray([1, -1], dtype=frames.dtype)                             # (+, -) of a pair
    noise2 = full_rank_noise(*key, "W2", (n_out, n_hidden), xp)
    w2 = (params["W2"] + sigma * sign[None, :, None, None] * noise2[:, None])  # (P, 2, n_out, n_hidden)
    w2 = w2.reshape(config.population, n_out, n_hidden)                        # member 2p + s
    delta2 = eggroll.bias_noise(*key, "b2", n_out, xp)
    b2 = (params["b2"] + sigma * sign[None, :, None] * delta2[:, None]).reshape(config.population, 1, n_out)

    def hidden_current(t, start, stop):
        first, last = start // 2, stop // 2
        perturbation = sigma * (xe[t, :, first:last].transpose(1, 0, 2) + delta1[first:last, None, :])
        current = sign[None, :, None, None] * perturbation[:, None] + base[t]
        return current.reshape(stop - start, batch, n_hidden)

    def output_current(spikes, start, stop):
        return spikes @ w2[start:stop].transpose(0, 2, 1) + b2[start:stop]

    return snn.simulate(hidden_current, output_current, config.population, n_steps, batch,
                        (n_in, n_hidden, n_out), lif, xp, frames.dtype, count_hidden)


def full_rank_gradient(f, params, config, generation):
    """Eqs. (10) and (8): sum_p f_p E_p / (2 P sigma) per weight, regenerating E_p from its key."""
    xp = array_module_of(f)
    f = f.astype(xp.float32)
    pairs = xp.arange(config.pairs)
    grads = {}
    for name, value in params.items():
        if name.startswith("W"):
            noise = full_rank_noise(config.seed, generation, pairs, name, value.shape, xp)
            grads[name] = (f @ noise.reshape(config.pairs, -1)).reshape(value.shape) / (2 * config.pairs * config.sigma)
        else:
            delta = eggroll.bias_noise(config.seed, generation, pairs, name, value.shape[0], xp)
            grads[name] = eggroll.bias_gradient(f, delta, config.sigma)
    return grads


def es_forward(params, frames, config, generation, mode="batched", lif=snn.LIF(), count_hidden=False):
    """Output spike counts of the full-rank ES population, evaluated `mode`-wise."""
    if mode not in ES_MODES:
        raise ValueError(f"unknown ES mode {mode!r}: use one of {', '.join(ES_MODES)}")
    eggroll.check_config(config, params, lowrank=False)
    forward = batched_forward if mode == "batched" else sequential_forward
    return forward(params, frames, config, generation, lif, count_hidden)


def es_generation_step(params, state, frames, labels, generation, config, lif=snn.LIF(), mode="batched"):
    """One vanilla-ES generation; the same signature and stats as eggroll.generation_step."""
    eggroll.check_frames(params, frames, labels)
    counts, _ = es_forward(params, frames, config, generation, mode, lif)
    return eggroll.evolve(params, state, counts, labels, frames.shape[0], config, generation,
                          estimate=full_rank_gradient)
