"""EGGROLL: evolution strategies with low-rank perturbations, for the LIF network of snn.py.

The method's equations are stated in README.md ("The method in equations") and derived in
docs/derivation.md; each function below holds the line of the equation it computes. Read top to
bottom; one generation is `generation_step` at the end:
  1. the perturbations: factors A_p, B_p of E_p and a bias's noise delta_p, regenerated from
     their keys (noise.py) whenever they are needed                                        (5)
  2. the population's forward pass, E_p never formed: x W^T once, x [B_1 ... B_P] for the whole
     population in blocks of PAIRS_PER_BLOCK pairs, each pair's two members sharing it      (6)
  3. the fitness (-cross-entropy, less a price per hidden spike if one is set), replaced by
     centred ranks c in [-0.5, 0.5]; f_p = c(theta + sigma E_p) - c(theta - sigma E_p)   (3)-(4)
  4. the step g, one matrix product per weight                                          (7)-(8)
  5. Adam climbs g (optim.py)                                                              (9)

Factor layout: `a` has shape (pairs, r, m) and `b` shape (pairs, r, n); row k of a[p] is the k-th
column of the paper's A_p. Stacked, a.reshape(P r, m) is [A_1 ... A_P]^T.
"""
import math
from dataclasses import dataclass

import numpy

from backend import array_module_of
from distributed import ALONE
import gpu
import noise
import optim
import snn

PAIRS_PER_BLOCK = 64  # pairs per product of the population: one shape for every BLAS call (population_product)


@dataclass(frozen=True)
class Config:
    """What one EGGROLL population needs: population = 2P members as P antithetic pairs, the
    rank r and scale sigma of the perturbations (the output layer's: output_sigma_scale x sigma),
    the seed of the noise, the readout scale of the fitness (softmax(logit_scale * rate), Eq. (3))
    and the price of a hidden spike in it."""
    population: int
    rank: int
    sigma: float
    seed: int
    logit_scale: float
    spike_cost: float = 0.0
    output_sigma_scale: float = 1.0

    @property
    def pairs(self):
        return self.population // 2

    def layer_sigma(self, name):
        """sigma of parameter `name` (W1, b1, W2, b2): a layer's bias shares its weights' sigma."""
        return self.sigma * self.output_sigma_scale if name.endswith("2") else self.sigma


# ---------------------------------------------------------------------------------------------
# 1. The perturbations of Eq. (5)

def lowrank_factors(seed, generation, pairs, name, shape, rank, xp=numpy):
    """A_p and B_p of Eq. (5), E_p = A_p B_p^T / sqrt(r), for weight `name` of shape (m, n): arrays
    (P, r, m) and (P, r, n), entries N(0, 1)."""
    m, n = shape
    normals = noise.normals(seed, generation, pairs, name, rank * (m + n), xp)
    a = normals[:, :rank * m].reshape(-1, rank, m)
    b = normals[:, rank * m:].reshape(-1, rank, n)
    return a, b


def materialise(a, b):
    """E_p = A_p B_p^T / sqrt(r) as (P, m, n). Only for tests and explanation: training never does."""
    return (a.transpose(0, 2, 1) @ b) / math.sqrt(a.shape[1])


# ---------------------------------------------------------------------------------------------
# 2. The population's forward pass, Eq. (6)

def with_ones(x):
    """[x, 1]: a column of ones appended, so a bias's noise rides in a product as one more rank."""
    xp = array_module_of(x)
    return xp.concatenate([x, xp.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def antithetic(base, perturbation):
    """Currents of both members of each pair: base + perturbation, then base - perturbation.

    base (N, m) is shared by all members; perturbation (c, N, m) is one per pair. Returns
    (2c, N, m) in member order (pair 0 +, pair 0 -, pair 1 +, ...).
    """
    xp = array_module_of(perturbation)
    pairs, batch, m = perturbation.shape
    current = xp.empty((pairs, 2, batch, m), dtype=perturbation.dtype)
    xp.add(base, perturbation, out=current[:, 0])
    xp.subtract(base, perturbation, out=current[:, 1])
    return current.reshape(2 * pairs, batch, m)


def population_product(x, factors):
    """x (N, n) times the factors (p, k, n) of p pairs: (N, p, k), one product per PAIRS_PER_BLOCK
    pairs with the last block padded by zeros. Every BLAS call then has one shape, so a pair's
    result is the same however many pairs a process holds (BLAS may round a product of another
    shape differently). On a GPU one kernel sums each result over the nonzero inputs alone
    (gpu.population_product): event frames are mostly zeros."""
    xp = array_module_of(x)
    if gpu.enabled(xp):
        return gpu.population_product(x, factors)
    pairs, k, n = factors.shape
    out = xp.empty((x.shape[0], pairs, k), dtype=x.dtype)
    for start in range(0, pairs, PAIRS_PER_BLOCK):
        block = factors[start:start + PAIRS_PER_BLOCK]
        stop = start + block.shape[0]
        if block.shape[0] < PAIRS_PER_BLOCK:
            block = xp.concatenate([block, xp.zeros((PAIRS_PER_BLOCK - block.shape[0], k, n), block.dtype)])
        product = x @ block.reshape(PAIRS_PER_BLOCK * k, n).T
        out[:, start:stop] = product.reshape(x.shape[0], PAIRS_PER_BLOCK, k)[:, :stop - start]
    return out


def perturbed_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False,
                      pairs=slice(None)):
    """Output spike counts (2p, N, n_out) of the members theta +- sigma E_p, Eq. (6), of the
    pairs in the slice `pairs` (all P by default), and the hidden spike count of each member if
    count_hidden (else None).

    Member 2p is pair p's + side, member 2p + 1 its - side. A bias is a weight on a constant input
    1, so its noise sigma delta_p rides in the same per-pair product as one extra rank:
        current_p = x W^T + b  +-  [x B_p, 1] [sigma/sqrt(r) A_p^T ; sigma delta_p].
    On a GPU, the LIF layers of every member and step run as one kernel (gpu.lowrank_lif_network).
    """
    xp = array_module_of(frames)
    check_config(config, params)
    n_steps, batch, n_in = frames.shape
    n_hidden, n_out = params["W1"].shape[0], params["W2"].shape[0]
    pairs = xp.arange(config.pairs)[pairs]
    n_pairs = pairs.shape[0]

    def layer_noise(layer, m, n):
        """rows = [sigma/sqrt(r) A_p^T ; sigma delta_p] (P, r + 1, m) and the factors B_p (P, r, n)."""
        a, b = lowrank_factors(config.seed, generation, pairs, f"W{layer}", (m, n), config.rank, xp)
        delta = noise.normals(config.seed, generation, pairs, f"b{layer}", m, xp)
        a, b, delta = (v.astype(frames.dtype, copy=False) for v in (a, b, delta))  # float64 stays float64
        sigma = config.layer_sigma(f"W{layer}")
        return xp.concatenate([sigma / math.sqrt(config.rank) * a, sigma * delta[:, None, :]], axis=1), b

    rows1, factors_b1 = layer_noise(1, n_hidden, n_in)
    rows2, factors_b2 = layer_noise(2, n_out, n_hidden)
    x = frames.reshape(n_steps * batch, n_in)
    base = (x @ params["W1"].T + params["b1"]).reshape(n_steps, batch, n_hidden)   # x W^T, once
    xb = population_product(x, factors_b1)                                        # x [B_1 ... B_P], (T N, P, r)
    readout = xp.concatenate([xp.broadcast_to(params["W2"].T, (n_pairs, n_hidden, n_out)),
                              factors_b2.transpose(0, 2, 1)], axis=2)              # [W2^T | B_p], (P, H, O+r)
    if gpu.enabled(xp):  # what follows, as one kernel
        counts, hidden = gpu.lowrank_lif_network(base, xb, rows1, readout, rows2, params["b2"], lif)
        return counts, (hidden if count_hidden else None)
    xb = xb.reshape(n_steps, batch, n_pairs, config.rank).transpose(0, 2, 1, 3)
    xb = with_ones(xb)                                                             # (T, P, N, r+1)
    # (2N, 1): +1 on the + member's rows, -1 on the - member's; it also signs the ones column,
    # which carries the bias noise.
    sign = xp.repeat(xp.asarray([1, -1], dtype=frames.dtype), batch)[:, None]

    def hidden_current(t, start, stop):
        chunk = slice(start // 2, stop // 2)  # the pairs of members start..stop-1 (chunks are even)
        return antithetic(base[t], xb[t, chunk] @ rows1[chunk])

    def output_current(spikes, start, stop):
        """Each member has its own hidden spikes s, so s W2^T and s B_p are one product per pair."""
        chunk = slice(start // 2, stop // 2)
        by_pair = spikes.reshape(n_steps, -1, 2 * batch, n_hidden)                # (T, c, 2N, H)
        projected = by_pair @ readout[chunk]                                       # (T, c, 2N, O+r)
        perturbation = (sign * with_ones(projected[..., n_out:])) @ rows2[chunk]   # (T, c, 2N, O)
        current = projected[..., :n_out] + params["b2"] + perturbation
        return current.reshape(n_steps, stop - start, batch, n_out)

    return snn.simulate(hidden_current, output_current, 2 * n_pairs, n_steps, batch,
                        (n_in, n_hidden, n_out), lif, xp, frames.dtype, count_hidden)


# ---------------------------------------------------------------------------------------------
# 3. Fitness and its shaping (vanilla ES shares these)

def fitness(counts, labels, n_steps, logit_scale, hidden_spikes=None, spike_cost=0.0):
    """Fitness of every member = -cross-entropy of softmax(output rates), Eqs. (3)-(4), less
    spike_cost x its hidden spikes per sample; hidden_spikes: each member's over the batch.

    The spike count is not differentiable, but ES needs no gradient of it: the price goes
    straight into the fitness (BPTT needs a surrogate, baselines.bptt_backward)."""
    loss = snn.cross_entropy(counts, labels, n_steps, logit_scale)
    if spike_cost:
        loss = loss + spike_cost * hidden_spikes / counts.shape[-2]
    return -loss


def centred_ranks(values):
    """The centred ranks c of `values`: ranks (0 for the lowest) / (count - 1) - 0.5, in [-0.5, 0.5]
    with sum 0; tied values share their mean rank."""
    xp = array_module_of(values)
    if not bool(xp.isfinite(values).all()):
        raise ValueError("fitness holds NaN or inf: lower the learning rate or sigma, "
                         "or check the input frames for non-finite values")
    if gpu.enabled(xp) and values.size <= gpu.RANKS_BY_COUNTING_MAX:
        return gpu.centred_ranks(values)
    _, tie_group, group_sizes = xp.unique(values, return_inverse=True, return_counts=True)
    first_rank = xp.cumsum(group_sizes) - group_sizes
    ranks = (first_rank + (group_sizes - 1) / 2)[tie_group.reshape(-1)]
    return ranks / max(values.size - 1, 1) - 0.5


def pair_differences(shaped):
    """f_p = c(theta + sigma E_p) - c(theta - sigma E_p), c the shaped fitness, for members ordered
    (+, -) by pair, as float32."""
    xp = array_module_of(shaped)
    return (shaped[0::2] - shaped[1::2]).astype(xp.float32)


def population_stats(fitnesses, shaped):
    """What a generation reports: mean and max fitness, and the spread of the shaped fitnesses."""
    return {"mean_fitness": float(fitnesses.mean()), "max_fitness": float(fitnesses.max()),
            "shaped_std": float(shaped.std())}


# ---------------------------------------------------------------------------------------------
# 4. The gradient estimate, Eqs. (7)-(8)

def lowrank_gradient(f, a, b, sigma, n_pairs):
    """Eq. (7): (diag(f) A)^T B / (2 P sigma sqrt(r)), from f (p,), a (p, r, m), b (p, r, n) of p of
    the population's P = n_pairs pairs (a process may hold a part)."""
    pairs, rank, m = a.shape
    weighted = (f[:, None, None] * a).reshape(pairs * rank, m)
    return weighted.T @ b.reshape(pairs * rank, b.shape[2]) / (2 * n_pairs * sigma * math.sqrt(rank))


def bias_gradient(f, delta, sigma, n_pairs):
    """Eq. (8): sum_p f_p delta_p / (2 P sigma), over the pairs of f and delta, P = n_pairs."""
    return f @ delta / (2 * n_pairs * sigma)


def gradient(f, params, config, generation, pairs=slice(None)):
    """g for every parameter, Eqs. (7)-(8), summed over the pairs in the slice `pairs` (all by
    default), from their pair differences f float32.

    Every factor is regenerated from its key: nothing was stored since the forward pass.
    """
    xp = array_module_of(f)
    chosen = xp.arange(config.pairs)[pairs]
    grads = {}
    for name, value in params.items():
        if name.startswith("W"):
            a, b = lowrank_factors(config.seed, generation, chosen, name, value.shape, config.rank, xp)
            grads[name] = lowrank_gradient(f, a, b, config.layer_sigma(name), config.pairs)
        else:
            delta = noise.normals(config.seed, generation, chosen, name, value.shape[0], xp)
            grads[name] = bias_gradient(f, delta, config.layer_sigma(name), config.pairs)
    return grads


# ---------------------------------------------------------------------------------------------
# One generation

def generation_step(params, state, frames, labels, generation, config, adam, lif=snn.LIF(), team=ALONE):
    """One EGGROLL generation on a minibatch, frames (T, N, n_in) and labels (N,).

    Takes the parameters, Adam's state and settings (optim.py); returns new parameters, new state
    and stats (mean and max fitness, spread of the shaped fitnesses). A `team` of processes
    (distributed.py) shares the pairs out; alone, a process holds them all and `team` does nothing.
    """
    check_frames(params, frames, labels)
    mine = team.my_pairs(config.pairs, PAIRS_PER_BLOCK)
    counts, hidden = perturbed_forward(params, frames, config, generation, lif, count_hidden=bool(config.spike_cost),
                                       pairs=mine)                                                # Eq. (6)
    fitnesses = team.gather(fitness(counts, labels, frames.shape[0], config.logit_scale, hidden,  # Eqs. (3)-(4)
                                    config.spike_cost), config.pairs, PAIRS_PER_BLOCK)
    shaped = centred_ranks(fitnesses)
    summed = team.update_pairs(config.pairs, PAIRS_PER_BLOCK)
    grads = team.sum(gradient(pair_differences(shaped)[summed], params, config, generation, summed))  # (7)-(8)
    params, state = optim.ascend(params, grads, state, adam)                               # Eq. (9)
    return params, state, population_stats(fitnesses, shaped)


# ---------------------------------------------------------------------------------------------
# Checks that turn bad settings and inputs into clear errors

def check_population(population, sigma):
    """ValueError naming the fix unless population is 2P antithetic members and sigma > 0."""
    if population < 2 or population % 2:
        raise ValueError(f"population must be an even number >= 2 (antithetic pairs), "
                         f"got {population}: use e.g. {max(2, population + population % 2)}")
    if not sigma > 0:
        raise ValueError(f"sigma must be > 0, got {sigma}: use e.g. 0.1")


def check_config(config, params):
    """ValueError naming the problem and the fix, for settings EGGROLL cannot run with."""
    check_population(config.population, config.sigma)
    if not config.output_sigma_scale > 0:
        raise ValueError(f"output_sigma_scale must be > 0, got {config.output_sigma_scale}: use e.g. 1.0")
    for name in ("W1", "W2"):
        limit = min(params[name].shape)
        if not 1 <= config.rank <= limit:
            raise ValueError(f"rank must lie in 1..{limit} (the smaller side of {name}, "
                             f"{params[name].shape[0]}x{params[name].shape[1]}), got {config.rank}")


def check_frames(params, frames, labels):
    """ValueError unless frames is (T, N, n_in) for W1 and labels is (N,) of class indices."""
    n_in = params["W1"].shape[1]
    if frames.ndim != 3 or frames.shape[2] != n_in:
        raise ValueError(f"frames must have shape (T, N, {n_in}), got {tuple(frames.shape)}: "
                         f"bin events into T frames of {n_in} inputs")
    if labels.shape != (frames.shape[1],):
        raise ValueError(f"labels must have shape ({frames.shape[1]},) to match the batch of frames, "
                         f"got {tuple(labels.shape)}")
