"""EGGROLL: evolution strategies with low-rank perturbations, for the LIF network of snn.py.

Read top to bottom:
  1. Noise is a pure function of keys: Philox4x32-10, keyed by the seed, turns the counter
     (block, pair, parameter, generation) into Gaussian numbers, so any member's noise can be regenerated alone, in any order, on the
     CPU or a GPU, and nothing about noise is stored between the forward pass and the update.
  2. A weight matrix W (m x n) is perturbed by E = A B^T / sqrt(r), A (m x r), B (n x r)   (5)
     and a bias b (m) by a Gaussian vector delta. Members come in antithetic pairs theta +- sigma E.
  3. E is never materialised. For input x,  x (W + sigma E)^T = x W^T + sigma/sqrt(r) (x B) A^T  (6)
     Layer 1 sees the same frames at every member, so x W^T is computed once and x [B_1 ... B_P]
     is ONE matrix product for the whole population; the two members of a pair reuse it with
     opposite signs.
  4. Fitness = -cross-entropy; fitnesses are replaced by centred ranks in [-0.5, 0.5].
  5. The gradient estimate, with f_p = rank(theta_p+) - rank(theta_p-) over P pairs,
         g_W = 1/(2 P sigma) sum_p f_p E_p = (diag(f) A)^T B / (2 P sigma sqrt(r))       (7)
         g_b = 1/(2 P sigma) sum_p f_p delta_p                                            (8)
     is one matrix product, with A and B regenerated from their keys.
  6. Adam ascends g.                                                                       (9)

Factor layout: `a` has shape (pairs, r, m) and `b` shape (pairs, r, n); row k of a[p] is the k-th
column of the paper's A_p. Stacked, a.reshape(P r, m) is [A_1 ... A_P]^T.
"""
import math
from dataclasses import dataclass

import numpy

from backend import array_module_of
import snn

# ---------------------------------------------------------------------------------------------
# 0. Settings, and the checks that turn bad ones into clear errors

@dataclass(frozen=True)
class Config:
    """EGGROLL hyper-parameters. population = 2P members as P antithetic pairs."""
    population: int = 512
    rank: int = 4
    sigma: float = 0.1
    lr: float = 0.01
    seed: int = 0
    logit_scale: float = 1.0       # softmax(logit_scale * rate); 1 = the paper
    weight_decay: float = 0.0      # decoupled, as in AdamW; 0 = the paper
    adam_b1: float = 0.9           # Adam (Kingma & Ba, 2015) defaults
    adam_b2: float = 0.999
    adam_eps: float = 1e-8

    @property
    def pairs(self):
        return self.population // 2


def check_config(config, params, lowrank=True):
    """ValueError naming the problem and the fix, for settings the ES cannot run with."""
    if config.population < 2 or config.population % 2:
        raise ValueError(f"population must be an even number >= 2 (antithetic pairs), "
                         f"got {config.population}: use e.g. {max(2, config.population + config.population % 2)}")
    if not config.sigma > 0:
        raise ValueError(f"sigma must be > 0, got {config.sigma}: use e.g. 0.1")
    for name in ("W1", "W2") if lowrank else ():
        limit = min(params[name].shape)
        if not 1 <= config.rank <= limit:
            raise ValueError(f"rank must lie in 1..{limit} (the smaller side of {name}, "
                             f"{params[name].shape[0]}x{params[name].shape[1]}), got {config.rank}")


def check_frames(params, frames, labels):
    """ValueError unless frames is (T, B, n_in) for W1 and labels is (B,) of class indices."""
    n_in = params["W1"].shape[1]
    if frames.ndim != 3 or frames.shape[2] != n_in:
        raise ValueError(f"frames must have shape (T, B, {n_in}), got {tuple(frames.shape)}: "
                         f"bin events into T frames of {n_in} inputs")
    if labels.shape != (frames.shape[1],):
        raise ValueError(f"labels must have shape ({frames.shape[1]},) to match the batch of frames, "
                         f"got {tuple(labels.shape)}")


# ---------------------------------------------------------------------------------------------
# 1. Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011)

PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # round multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # Weyl key increments (golden ratio, sqrt(3) - 1)
MASK32 = 0xFFFFFFFF


def philox4x32(counter, key, rounds=10):
    """Philox4x32-R of a 4-word counter under a 2-word key; words are uint32 arrays or ints.

    One round: (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)),
    with the key bumped by the Weyl constants between rounds. Written in uint64 array arithmetic
    so NumPy and CuPy give the same bits. Counters broadcast against each other.
    """
    xp = next((array_module_of(c) for c in counter if hasattr(c, "dtype")), numpy)
    c0, c1, c2, c3 = (xp.asarray(c, dtype=xp.uint32) for c in counter)
    k0, k1 = (int(k) & MASK32 for k in key)
    for round_index in range(rounds):
        if round_index:
            k0, k1 = (k0 + PHILOX_W[0]) & MASK32, (k1 + PHILOX_W[1]) & MASK32
        product0 = c0.astype(xp.uint64) * xp.uint64(PHILOX_M[0])
        product1 = c2.astype(xp.uint64) * xp.uint64(PHILOX_M[1])
        c0, c1, c2, c3 = ((product1 >> xp.uint64(32)).astype(xp.uint32) ^ c1 ^ xp.uint32(k0),
                          product1.astype(xp.uint32),
                          (product0 >> xp.uint64(32)).astype(xp.uint32) ^ c3 ^ xp.uint32(k1),
                          product0.astype(xp.uint32))
    return c0, c1, c2, c3


def _box_muller(bits_radius, bits_angle):
    """Two independent N(0, 1) float32 arrays from two uint32 arrays (24 bits of each used)."""
    xp = array_module_of(bits_radius)
    u_radius = ((bits_radius >> xp.uint32(8)).astype(xp.float32) + 1) * xp.float32(2.0 ** -24)  # (0, 1]
    u_angle = (bits_angle >> xp.uint32(8)).astype(xp.float32) * xp.float32(2.0 ** -24)          # [0, 1)
    radius = xp.sqrt(xp.float32(-2) * xp.log(u_radius))
    angle = xp.float32(2 * math.pi) * u_angle
    return radius * xp.cos(angle), radius * xp.sin(angle)


BLOCKS_PER_PASS = 1 << 15  # CPU: Philox blocks per pass, so its temporaries stay in cache


def standard_normals(seed, generation, pairs, param_id, count, xp=numpy):
    """The first `count` N(0, 1) numbers of stream (seed, generation, pair, param_id), per pair.

    Key = the 64-bit seed; counter = (block, pair, param_id, generation); each block of the stream
    gives 4 normals. Returns float32 (len(pairs), count). A pure function: the rows for pairs
    [p] equal row p of the draw for all pairs, bit for bit. On a CPU a few pairs go at a time.
    """
    n_blocks = -(-count // 4)
    blocks = xp.arange(n_blocks, dtype=xp.uint32)[None, :]
    pair_words = xp.asarray(pairs, dtype=xp.uint32)[:, None]
    normals = xp.empty((pair_words.shape[0], n_blocks, 4), dtype=xp.float32)
    rows = max(1, BLOCKS_PER_PASS // n_blocks) if xp is numpy else pair_words.shape[0]
    for start in range(0, pair_words.shape[0], rows):
        words = philox4x32((blocks, pair_words[start:start + rows], param_id, generation), (seed, seed >> 32))
        chunk = normals[start:start + rows]
        chunk[..., 0], chunk[..., 1] = _box_muller(words[0], words[1])
        chunk[..., 2], chunk[..., 3] = _box_muller(words[2], words[3])
    return xp.ascontiguousarray(normals.reshape(pair_words.shape[0], 4 * n_blocks)[:, :count])


# ---------------------------------------------------------------------------------------------
# 2. The perturbations of Eq. (5)

PARAM_IDS = {"W1": 0, "b1": 1, "W2": 2, "b2": 3}  # the parameter word of the Philox counter


def lowrank_factors(seed, generation, pairs, name, shape, rank, xp=numpy):
    """A_p and B_p of Eq. (5) for weight `name` of shape (m, n): arrays (P, r, m) and (P, r, n)."""
    m, n = shape
    normals = standard_normals(seed, generation, pairs, PARAM_IDS[name], rank * (m + n), xp)
    a = normals[:, :rank * m].reshape(-1, rank, m)
    b = normals[:, rank * m:].reshape(-1, rank, n)
    return a, b


def bias_noise(seed, generation, pairs, name, size, xp=numpy):
    """delta_p for bias `name`: (P, size) standard normals."""
    return standard_normals(seed, generation, pairs, PARAM_IDS[name], size, xp)


def materialise(a, b):
    """E_p = A_p B_p^T / sqrt(r) as (P, m, n). Only for tests and explanation: training never does."""
    return (a.transpose(0, 2, 1) @ b) / math.sqrt(a.shape[1])


# ---------------------------------------------------------------------------------------------
# 3. The population's forward pass, Eq. (6)

def with_ones(x):
    """[x, 1]: a column of ones appended, so a bias's noise rides in a product as one more rank."""
    xp = array_module_of(x)
    return xp.concatenate([x, xp.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def antithetic(base, perturbation):
    """Currents of both members of each pair: base + perturbation, then base - perturbation.

    base (B, m) is shared by all members; perturbation (c, B, m) is one per pair. Returns
    (2c, B, m) in member order (pair 0 +, pair 0 -, pair 1 +, ...).
    """
    xp = array_module_of(perturbation)
    pairs, batch, m = perturbation.shape
    current = xp.empty((pairs, 2, batch, m), dtype=perturbation.dtype)
    xp.add(base, perturbation, out=current[:, 0])
    xp.subtract(base, perturbation, out=current[:, 1])
    return current.reshape(2 * pairs, batch, m)


def perturbed_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False):
    """Output spike counts (2P, B, n_out) of the members theta_p +- sigma E_p, Eq. (6).

    Member 2p is pair p's + side, member 2p + 1 its - side. A bias is a weight on a constant input
    1, so its noise sigma delta_p rides in the same per-pair product as one extra rank:
        current_p = x W^T + b  +-  [x B_p, 1] [sigma/sqrt(r) A_p^T ; sigma delta_p].
    """
    xp = array_module_of(frames)
    check_config(config, params)
    n_steps, batch, n_in = frames.shape
    n_hidden, n_out = params["W1"].shape[0], params["W2"].shape[0]
    pairs = xp.arange(config.pairs)
    scale = config.sigma / math.sqrt(config.rank)
    stream = (config.seed, generation, pairs)

    def layer_noise(layer, m, n):
        """rows = [sigma/sqrt(r) A_p^T ; sigma delta_p] (P, r + 1, m) and the factors B_p (P, r, n)."""
        a, b = lowrank_factors(*stream, f"W{layer}", (m, n), config.rank, xp)
        delta = bias_noise(*stream, f"b{layer}", m, xp)
        a, b, delta = (v.astype(frames.dtype, copy=False) for v in (a, b, delta))  # float64 stays float64
        return xp.concatenate([scale * a, config.sigma * delta[:, None, :]], axis=1), b

    rows1, factors_b1 = layer_noise(1, n_hidden, n_in)
    rows2, factors_b2 = layer_noise(2, n_out, n_hidden)
    x = frames.reshape(n_steps * batch, n_in)
    base = (x @ params["W1"].T + params["b1"]).reshape(n_steps, batch, n_hidden)   # x W^T, once
    xb = x @ factors_b1.reshape(config.pairs * config.rank, n_in).T                # ONE product
    xb = xb.reshape(n_steps, batch, config.pairs, config.rank).transpose(0, 2, 1, 3)
    xb = with_ones(xb)                                                             # (T, P, B, r+1)
    readout = xp.concatenate([xp.broadcast_to(params["W2"].T, (config.pairs, n_hidden, n_out)),
                              factors_b2.transpose(0, 2, 1)], axis=2)              # [W2^T | B_p], (P, H, O+r)
    # (2B, 1): +1 on the + member's rows, -1 on the - member's; it also signs the ones column,
    # which carries the bias noise.
    sign = xp.repeat(xp.asarray([1, -1], dtype=frames.dtype), batch)[:, None]

    def hidden_current(t, start, stop):
        chunk = slice(start // 2, stop // 2)  # the pairs of members start..stop-1 (chunks are even)
        return antithetic(base[t], xb[t, chunk] @ rows1[chunk])

    def output_current(spikes, start, stop):
        """Each member has its own hidden spikes s, so s W2^T and s B_p are one product per pair."""
        chunk = slice(start // 2, stop // 2)
        by_pair = spikes.reshape(n_steps, -1, 2 * batch, n_hidden)                # (T, c, 2B, H)
        projected = by_pair @ readout[chunk]                                       # (T, c, 2B, O+r)
        perturbation = (sign * with_ones(projected[..., n_out:])) @ rows2[chunk]   # (T, c, 2B, O)
        current = projected[..., :n_out] + params["b2"] + perturbation
        return current.reshape(n_steps, stop - start, batch, n_out)

    return snn.simulate(hidden_current, output_current, config.population, n_steps, batch,
                        (n_in, n_hidden, n_out), lif, xp, frames.dtype, count_hidden)


# ---------------------------------------------------------------------------------------------
# 4. Fitness and its shaping

def fitness(counts, labels, n_steps, logit_scale=1.0):
    """Fitness of every member = -cross-entropy of softmax(output rates), Eqs. (3)-(4)."""
    return -snn.cross_entropy(counts, labels, n_steps, logit_scale)


def centred_ranks(values):
    """Ranks scaled to [-0.5, 0.5] with sum 0; tied values share their mean rank."""
    xp = array_module_of(values)
    if not bool(xp.isfinite(values).all()):
        raise ValueError("fitness holds NaN or inf: lower the learning rate or sigma, "
                         "or check the input frames for non-finite values")
    _, tie_group, group_sizes = xp.unique(values, return_inverse=True, return_counts=True)
    first_rank = xp.cumsum(group_sizes) - group_sizes
    ranks = (first_rank + (group_sizes - 1) / 2)[tie_group.reshape(-1)]
    return ranks / max(values.size - 1, 1) - 0.5


def pair_differences(shaped):
    """f_p = shaped(theta_p+) - shaped(theta_p-) for members ordered (+, -) by pair."""
    return shaped[0::2] - shaped[1::2]


# ---------------------------------------------------------------------------------------------
# 5. The gradient estimate, Eqs. (7)-(8)

def lowrank_gradient(f, a, b, sigma):
    """Eq. (7): (diag(f) A)^T B / (2 P sigma sqrt(r)), from f (P,), a (P, r, m), b (P, r, n)."""
    pairs, rank, m = a.shape
    weighted = (f[:, None, None] * a).reshape(pairs * rank, m)
    return weighted.T @ b.reshape(pairs * rank, -1) / (2 * pairs * sigma * math.sqrt(rank))


def bias_gradient(f, delta, sigma):
    """Eq. (8): sum_p f_p delta_p / (2 P sigma)."""
    return f @ delta / (2 * f.shape[0] * sigma)


def regenerated_lowrank_gradient(f, name, shape, config, generation):
    """Eq. (7) for weight `name`, its factors A and B regenerated from their keys."""
    xp = array_module_of(f)
    a, b = lowrank_factors(config.seed, generation, xp.arange(config.pairs), name, shape, config.rank, xp)
    return lowrank_gradient(f, a, b, config.sigma)


def estimate_gradient(f, params, config, generation, weight_gradient=regenerated_lowrank_gradient):
    """g for every parameter: weights by `weight_gradient`, Eq. (7), biases by Eq. (8).

    Every noise is regenerated from its key: nothing was stored since the forward pass.
    """
    xp = array_module_of(f)
    f = f.astype(xp.float32)
    grads = {}
    for name, value in params.items():
        if name.startswith("W"):
            grads[name] = weight_gradient(f, name, value.shape, config, generation)
        else:
            delta = bias_noise(config.seed, generation, xp.arange(config.pairs), name, value.shape[0], xp)
            grads[name] = bias_gradient(f, delta, config.sigma)
    return grads


# ---------------------------------------------------------------------------------------------
# 6. Adam, ascending, Eq. (9)

def adam_init(params):
    """Adam's state: first and second moments at zero, step count 0."""
    return {"m": {k: v * 0 for k, v in params.items()}, "v": {k: v * 0 for k, v in params.items()}, "t": 0}


def adam_ascend(params, grads, state, config):
    """One Adam step up the gradient: theta += lr m_hat / (sqrt(v_hat) + eps); new params and state.

    With weight_decay > 0 every parameter also shrinks by lr * weight_decay * theta (AdamW's
    decoupled form).
    """
    t = state["t"] + 1
    b1, b2 = config.adam_b1, config.adam_b2
    new_params, m, v = {}, {}, {}
    for name, value in params.items():
        m[name] = b1 * state["m"][name] + (1 - b1) * grads[name]
        v[name] = b2 * state["v"][name] + (1 - b2) * grads[name] ** 2
        step = (m[name] / (1 - b1 ** t)) / ((v[name] / (1 - b2 ** t)) ** 0.5 + config.adam_eps)
        new_params[name] = (value + config.lr * step - config.lr * config.weight_decay * value).astype(value.dtype)
    return new_params, {"m": m, "v": v, "t": t}


# ---------------------------------------------------------------------------------------------
# One generation

def evolve(params, state, counts, labels, n_steps, config, generation, estimate=estimate_gradient):
    """Everything after the forward pass: fitness, centred ranks, f_p, the estimate g, Adam.

    `estimate(f, params, config, generation)` turns pair differences into gradients; the
    full-rank ES baseline passes its own. Returns new params, new state and stats: mean and max
    fitness of the population and the spread (std) of the shaped fitnesses.
    """
    raw = fitness(counts, labels, n_steps, config.logit_scale)
    shaped = centred_ranks(raw)
    grads = estimate(pair_differences(shaped), params, config, generation)
    params, state = adam_ascend(params, grads, state, config)
    stats = {"mean_fitness": float(raw.mean()), "max_fitness": float(raw.max()),
             "shaped_std": float(shaped.std())}
    return params, state, stats


def generation_step(params, state, frames, labels, generation, config, lif=snn.LIF()):
    """One EGGROLL generation: (params, Adam state, minibatch, generation) -> (params, state, stats)."""
    check_frames(params, frames, labels)
    counts, _ = perturbed_forward(params, frames, config, generation, lif)
    return evolve(params, state, counts, labels, frames.shape[0], config, generation)
