# %% [markdown]
# # EGGROLL in five claims
#
# Evolution strategies (ES) train a network without its gradient: perturb the weights θ by σε in a
# population of random directions, score every perturbed network (its fitness), and move θ along
# the directions that scored well. EGGROLL (Sarkar et al., "Evolution Strategies at the Hyperscale",
# arXiv:2511.16652) makes each perturbation of a weight matrix low-rank. This lesson checks five of
# its claims on the spiking network of Patankar & Gowda (arXiv:2605.30361) — N-MNIST recordings
# binned into T = 10 frames of 2312 inputs (34 × 34 pixels × 2 polarities), then 64 and 10 LIF
# (leaky integrate-and-fire) neurons — with the project's own functions. Each claim derives what
# it states, draws one figure, prints its numbers and asserts what it shows, so a run that
# contradicts a claim fails loudly.
#
# It assumes the method as [docs/derivation.md](docs/derivation.md) derives it, with the symbols
# and equation numbers of the [README's table](README.md#the-method-in-equations): E_p = A_p B_pᵀ/√r is
# one pair's low-rank noise of a weight matrix W (m × n), Eq. (5), written E where the pair is
# plain, and 𝔼 an expectation over the noise. Each claim says which part of the derivation it
# puts to the test.
#
# Run it: `OPENBLAS_NUM_THREADS=1 python lesson.py` (about 95 CPU seconds at one BLAS thread,
# [measured](results/reproductions/nano-and-lesson-times.md)) writes the figures into `lesson/`,
# overwriting only the figures its record `lesson/.figures.sha256` lists; `--out DIR` puts them
# elsewhere, `--page FILE.md` also writes this text with the numbers and figures as a
# markdown page (`make lesson` renders [docs/lesson.md](docs/lesson.md) so), `--claims 1,3` runs
# some claims only. Claims 1–4 need no data. Claim 5 trains on real N-MNIST recordings: those of
# `--data-root DIR`, else of `$NMNIST_ROOT`, else the 280 of `nmnist-sample/` that come with the
# repository; it alone takes `--data-root` and `--seconds`. It opens as a notebook too (Jupyter with
# jupytext, or VS Code): `# %%` starts a cell.

# %%
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import argparse
    import contextlib
    import io
    import math
    import os
    import re
    import textwrap
    import time
    import warnings
    from pathlib import Path

    import numpy as np

    import baselines
    import data
    import eggroll
    import emulate
    import exits
    import figure_record
    import noise
    import optim
    import run_folder
    import snn
    import snn_eggroll
except KeyboardInterrupt:
    if "ipykernel" in sys.modules:  # a notebook keeps its own handling
        raise
    sys.stderr.write("error: interrupted; run it again\n")
    sys.exit(130)

INPUT_DENSITY = 0.082  # fraction of the 2312 inputs active in a frame of the real recordings


def standard_error(samples):
    return np.std(samples, ddof=1) / math.sqrt(len(samples))


# %% [markdown]
# ## 1. E = A_p B_pᵀ/√r is as long a perturbation as full-rank noise, at every rank, Eq. (5)
#
# Full-rank noise for the 64 × 2312 first layer is mn = 147,968 numbers per pair; the factors of
# Eq. (5) are r (m + n) = 2,376 r. Does the low-rank E perturb the weights as far? The derivation
# (section 4) gives an entry's variance; this claim adds E's length and an entry's shape. An entry
# of E is a sum of r independent products of two independent 𝒩(0, 1) numbers, an entry of A_p and
# one of B_p, each product of mean 0 and variance 1 · 1 = 1:
#
#     E_ij = (1/√r) ((A_p)_i1 (B_p)_j1 + … + (A_p)_ir (B_p)_jr)
#     Var(E_ij) = (1/√r)² · (r · 1) = 1.
#
# The 1/√r brings the variance back to 1 at every rank, so ‖E‖²_F = Σ_ij E_ij² ≈ mn: a perturbation
# σE has the length σ√(mn) of full-rank ES at every rank, and one σ means the same at every rank
# (without the 1/√r the perturbation would grow as √r). What the rank does change is how the
# entries go together. E has rank r, and its entries, uncorrelated, are not independent: every
# entry of row i is made from row i of A_p, a_i, so given a_i they are independent Gaussians of
# variance ‖a_i‖²/r, and two of them have 𝔼[E_ij² E_ij′²] = 𝔼[‖a_i‖⁴]/r² = (r² + 2r)/r² = 1 + 2/r,
# not 1 (a column likewise, through B_p). This dependence is most of what low rank adds to the
# estimate's error (claim 3) and to its bias off quadratics (the derivation's second page,
# section 2). An entry alone changes less. Its fourth moment counts the terms of
# ((A_p)_i1 (B_p)_j1 + … + (A_p)_ir (B_p)_jr)⁴ whose factors pair up: r terms that are one product to the fourth,
# of mean 3 · 3 = 9, and 3 r (r − 1) terms that are two different products squared, of mean 1, so
#
#     𝔼[E_ij⁴] = (9 r + 3 r (r − 1)) / r² = 3 + 6/r,
#
# against 3 for a Gaussian: heavier tails at low rank (excess kurtosis 6/r), Gaussian only as
# r → ∞. Both departures fall as 1/r; this claim measures the length and an entry's tails, claim 3
# the error that both add.
# The check: the E_p of 32 pairs at each rank from 1 to 64 and at full rank (`eggroll.lowrank_factors`,
# `baselines.full_rank_noise`); their mean entry variance within 5 standard errors of 1, their
# mean excess kurtosis within 5 of 6/r (0 at full rank). At r = 1, where the 32 pairs' E_p vary
# most, the line gives the means' standard errors (±): there the two means lie 2.5 and 2.6 standard
# errors below 1 and √(mn), inside the check's 5.

# %%
def lowrank_scale():
    m, n = snn.SIZES[1], snn.SIZES[0]
    pairs, ranks = np.arange(32), [1, 2, 4, 8, 16, 32, 64]
    variance, excess_kurtosis, entries = {}, {}, {}  # per pair: mean E_ij², mean E_ij⁴ − 3; pair 0's entries
    for rank in ranks + ["full"]:
        if rank == "full":
            noise = baselines.full_rank_noise(0, 0, pairs, "W1", (m, n), np).astype(np.float64)  # every ε_p
        else:
            A, B = eggroll.lowrank_factors(0, 0, pairs, "W1", (m, n), rank)
            noise = eggroll.materialise(A.astype(np.float64), B.astype(np.float64))  # every E_p
        variance[rank] = (noise ** 2).mean(axis=(1, 2))
        excess_kurtosis[rank] = (noise ** 4).mean(axis=(1, 2)) - 3
        entries[rank] = noise[0].ravel()
        assert abs(variance[rank].mean() - 1) <= 5 * standard_error(variance[rank]), rank
        expected = 0 if rank == "full" else 6 / rank
        assert abs(excess_kurtosis[rank].mean() - expected) <= 5 * standard_error(excess_kurtosis[rank]), rank
    norms = {rank: np.sqrt(m * n * variance[rank]) for rank in variance}  # ‖E_p‖_F
    report(1, lowrank_scale_figure(m, n, pairs, ranks, variance, norms, entries),
           f"entry variance at r = 1: {variance[1].mean():.3f} ± {standard_error(variance[1]):.3f}, "
           + ", ".join(f"{r}: {variance[r].mean():.3f}" for r in ranks[1:])
           + f", full rank: {variance['full'].mean():.3f}; mean ‖E‖_F {norms[1].mean():.1f} ± "
           f"{standard_error(norms[1]):.1f} (r = 1), "
           f"{norms[64].mean():.1f} (r = 64), {norms['full'].mean():.1f} (full rank), √(mn) = {math.sqrt(m * n):.1f}; "
           f"excess kurtosis {excess_kurtosis[1].mean():.2f} (r = 1, 6/r = 6), {excess_kurtosis[64].mean():.3f} "
           f"(r = 64, 6/r = 0.094), {excess_kurtosis['full'].mean():.3f} (full rank)")


# %% [markdown]
# ## 2. The population is evaluated without ever forming E, Eq. (6)
#
# A member's first layer multiplies its input x (one row per sample and frame, n = 2312 wide)
# by (W ± σE)ᵀ, E = A_p B_pᵀ/√r of one pair p (A_p m × r, B_p n × r). Transposing Eq. (5)
# gives Eᵀ = (A_p B_pᵀ)ᵀ/√r = B_p A_pᵀ/√r, and a product of matrices can be grouped either way (the derivation's
# section 4; here it is checked), so
#
#     x (W ± σE)ᵀ = x Wᵀ ± σ x Eᵀ = x Wᵀ ± (σ/√r) (x B_p) A_pᵀ.
#
# x Wᵀ is the same for every member: computed once. (x B_p) A_pᵀ costs n r + r m multiply-adds per row
# where x Eᵀ costs n m: 15.6 times fewer at r = 4 (m = 64, n = 2312). x [B_1 … B_P] serves the whole
# population (`eggroll.population_product` makes it one product per block of 64 pairs, so that
# every BLAS call has one shape), and the two members of a pair reuse it with opposite signs. A
# bias is a weight on a constant input 1, so its noise σδ rides along as one more column. The
# second layer applies Eq. (6) to each member's own hidden spikes: there no product is shared
# across the population.
#
# The check, in float64 so that rounding is not the question: 4 pairs at r = 4 and σ = 0.2, and as
# input 32 samples of 10 random binary frames with 8.2 % of the inputs active, the density of the
# real recordings (the identity holds for any x; real recordings come in claim 5). First the
# layer-1 currents of Eq. (6) against x (W + σE)ᵀ with E formed; then the output spike counts of
# `snn_eggroll.perturbed_forward` (Eq. (6) in both layers, all members at once) against `snn.forward`
# run on each member's weights W ± σE, formed: the same counts, exactly — and different from the
# unperturbed network's, so the noise is there.

# %%
def forward_trick():
    rng = np.random.default_rng(0)
    frames = (rng.random((10, 32, snn.SIZES[0])) < INPUT_DENSITY).astype(np.float64)  # (T, N, 2312)
    n_frames, batch, n = frames.shape
    params = {name: value.astype(np.float64) for name, value in snn.init_params(seed=1).items()}
    config = snn_eggroll.Config(population=8, rank=4, sigma=0.2, seed=1, logit_scale=1.0)
    pairs, sigma, generation = np.arange(config.pairs), config.sigma, 0

    factors = {name: [factor.astype(np.float64) for factor in eggroll.lowrank_factors(
        config.seed, generation, pairs, name, params[name].shape, config.rank)]
        for name in ("W1", "W2")}                                                 # A_p (P, r, m) and B_p (P, r, n)
    perturbation = {name: eggroll.materialise(*factors[name]) for name in factors}  # E_p, for comparison only
    perturbation.update({name: noise.normals(config.seed, generation, pairs, name, params[name].shape[0])
                         .astype(np.float64) for name in ("b1", "b2")})          # δ_p

    x = frames.reshape(n_frames * batch, n)
    xb = eggroll.population_product(x, factors["W1"][1]).transpose(1, 0, 2)     # x [B_1 … B_P]: (P, T N, r)
    lowrank_current = (x @ params["W1"].T + params["b1"]) \
        + sigma / math.sqrt(config.rank) * (xb @ factors["W1"][0]) + sigma * perturbation["b1"][:, None, :]
    formed_current = x @ (params["W1"] + sigma * perturbation["W1"]).transpose(0, 2, 1) \
        + (params["b1"] + sigma * perturbation["b1"])[:, None, :]
    current_gap = np.abs(lowrank_current - formed_current).max()
    assert current_gap <= 1e-10, current_gap

    lowrank_counts, _ = snn_eggroll.perturbed_forward(params, frames, config, generation)  # (2P, N, 10)
    formed_counts = np.empty_like(lowrank_counts)
    for member in range(config.population):
        pair, sign = member // 2, (1, -1)[member % 2]  # member 2p is pair p's + side, 2p + 1 its − side
        weights = {name: value + sign * sigma * perturbation[name][pair] for name, value in params.items()}
        formed_counts[member] = snn.forward(weights, frames)[0][0]
    unperturbed_counts = snn.forward(params, frames)[0][0]
    assert np.array_equal(lowrank_counts, formed_counts)  # the same spikes, exactly
    changed = (lowrank_counts != unperturbed_counts).mean()
    assert changed > 0.1, changed  # ... and not because the noise did nothing
    report(2, forward_trick_figure(n_frames, lowrank_current, formed_current, current_gap, lowrank_counts,
                                   formed_counts, unperturbed_counts, changed),
           f"{lowrank_counts.size} output spike counts of {config.population} members on {batch} "
           f"samples: {int((lowrank_counts != formed_counts).sum())} differ between Eq. (6) and W ± σE formed, "
           f"{int((lowrank_counts != unperturbed_counts).sum())} from the network without noise; largest "
           f"layer-1 current difference {current_gap:.1e}")


# %% [markdown]
# ## 3. The estimate's error falls as 1/P, and low rank adds little to it, Eqs. (7), (8), (10)
#
# Fed raw fitness differences, ES estimates the gradient of the smoothed fitness
# J(θ) = 𝔼_ε[F(θ + σε)]: the derivation (sections 1 and 2) shows the estimate's mean is that
# gradient. Training feeds centred ranks instead. With Gaussian noise in a large population, the
# ranked step estimates the smoothed gradient of a reshaped fitness, the share of the population
# that a member beats; with low-rank noise no objective is derived (the table on the derivation's
# second page). Either way each pair pulls the way raw
# differences would, but the step is not ∇J and need not point along it (the derivation's second page,
# section 1). This claim feeds raw differences and measures the estimate's error, at
# full and at low rank. To know that gradient
# exactly, take a fitness whose smoothing is known: F(θ) = −½ ‖θ − θ*‖² over the d = 596 parameters
# of a small 32 → 16 → 4 network (θ and the target θ* from `snn.init_params`), whose gradient is
# G = θ* − θ. For a quadratic the antithetic difference is exact, the even terms cancelling:
#
#     F(θ + σε) − F(θ − σε) = 2σ ⟨G, ε⟩.
#
# Fed these raw differences as f_p (not their centred ranks: Eqs. (7), (8) and (10) are linear in
# f, and they would change the objective), each estimator returns g = (1/P) Σ_p ⟨G, ε_p⟩ ε_p. Its
# mean is 𝔼[ε εᵀ] G = G for Gaussian ε, and the same for E_p in ε's place, whose entries are also
# uncorrelated with variance 1 (claim 1). Its error, over P independent pairs:
#
#     𝔼‖g − G‖² = (𝔼[⟨G, ε⟩² ‖ε‖²] − ‖G‖²) / P = (d + 1) ‖G‖² / P       for Gaussian ε,
#
# since 𝔼[⟨G, ε⟩² ‖ε‖²] = (d + 2) ‖G‖²: ⟨G, ε⟩² times one of the d squared entries of ε has mean
# ‖G‖² plus twice the square of G's matching entry (that entry's fourth moment is 3, not 1). So the
# measure of the right panel, P ‖g − G‖² / ‖G‖² — the squared error relative to ‖G‖², times the
# number of pairs — stays at d + 1 = 597 at every population size exactly when the error falls as
# 1/P. Low-rank noise adds to 𝔼[⟨G, E⟩² ‖E‖²], mostly through the dependence between its entries
# (claim 1): (2/r)(m + n + 1) ‖G_W‖² more per weight matrix W (m × n), G_W the true gradient's part
# for W (the aside below derives it; tests/test_es.py checks it at every rank). Here that is 15 % more
# error at r = 1 and 4 % at r = 4; for the 64 × 2312 layer it would be at most 4,754/r against
# d + 1 = 148,683, 3 % at r = 1.
#
# > **Aside: where the excess comes from.** At r = 1, A_p and B_p are single columns, E = A_p B_pᵀ,
# > ⟨G, E⟩ = A_pᵀ (G B_p) and ‖E‖² = ‖A_p‖² ‖B_p‖². Average first over A_p, a Gaussian vector of m
# > entries (the count above, with G B_p for G), then over B_p:
# > 𝔼[(A_pᵀ G B_p)² ‖A_p‖² ‖B_p‖²] = (m + 2) 𝔼[‖G B_p‖² ‖B_p‖²] = (m + 2)(n + 2) ‖G‖²,
# > 2 (m + n + 1) ‖G‖² more than the Gaussian's (mn + 2) ‖G‖². At rank r, E is 1/√r times r
# > independent such terms; only products of four entries within one term average more than the
# > Gaussian's, r terms weighted (1/√r)⁴, so the excess is divided by r. Of it, each entry's own tail,
# > 𝔼[E_ij⁴] = 3 + 6/r, gives (6/r) ‖G_W‖²; the other (2/r)(m + n − 2) ‖G_W‖² comes from the m + n − 2
# > entries that share a row or a column with each entry, 𝔼[E_ij² E_ij′²] = 1 + 2/r: dependence, not
# > tails.
#
# The check: `eggroll.gradient` at r = 1 and r = 4 and `baselines.full_rank_gradient`, each
# regenerating its noise from its keys, 8 independent estimates at each population size 2P from 16
# to 16,384 members; the mean error within 5 standard errors of its prediction, and the cosine
# between g and G rising from below 0.3 to above 0.95.

# %%
def gradient_estimate():
    sizes = (32, 16, 4)
    theta = {name: value.astype(np.float64) for name, value in snn.init_params(seed=2, sizes=sizes).items()}
    target = {name: value.astype(np.float64) for name, value in snn.init_params(seed=3, sizes=sizes).items()}
    true_gradient = np.concatenate([(target[name] - theta[name]).ravel() for name in theta])  # G = θ* − θ

    def fitness(members):
        """F = −½ ‖θ − θ*‖² of members whose parameters have a leading pair axis."""
        return -0.5 * sum(((members[name] - target[name]) ** 2).reshape(len(members[name]), -1).sum(axis=1)
                          for name in members)

    def drawn_noise(config, generation):
        """Every pair's ε, formed from the Philox streams that the estimators regenerate."""
        pairs, drawn = np.arange(config.pairs), {}
        for name, value in theta.items():
            if not name.startswith("W"):
                drawn[name] = noise.normals(config.seed, generation, pairs, name, value.shape[0])
            elif isinstance(config, snn_eggroll.Config):
                drawn[name] = eggroll.materialise(*(factor.astype(np.float64) for factor in eggroll.lowrank_factors(
                    config.seed, generation, pairs, name, value.shape, config.rank)))
            else:
                drawn[name] = baselines.full_rank_noise(config.seed, generation, pairs, name, value.shape, np)
        return {name: value.astype(np.float64) for name, value in drawn.items()}

    def predicted_error(rank):
        """𝔼[P ‖g − G‖²] / ‖G‖²: d + 1, plus the low-rank term of each weight matrix."""
        excess = sum(2 / rank * (sum(part.shape) + 1) * (part ** 2).sum() for name, part in
                     ((name, target[name] - theta[name]) for name in theta) if rank and name.startswith("W"))
        return true_gradient.size + 1 + excess / (true_gradient ** 2).sum()

    def lowrank_estimate(f, params, config, generation):
        """eggroll.gradient of config's population at `generation`, all its pairs."""
        return eggroll.gradient(f, config.members(params, generation), config.pairs)

    estimators = {"EGGROLL r = 1": (1, lowrank_estimate), "EGGROLL r = 4": (4, lowrank_estimate),
                  "full-rank ES": (None, baselines.full_rank_gradient)}
    populations = [2 ** power for power in range(4, 15)]
    repeats, sigma = 8, 0.1
    cosine, error = {}, {}  # per estimator: (population size, repeat)
    for seed, (label, (rank, estimate)) in enumerate(estimators.items(), start=1):
        cosine[label], error[label] = np.empty((len(populations), repeats)), np.empty((len(populations), repeats))
        for i, population in enumerate(populations):
            for repeat in range(repeats):
                generation = repeats * i + repeat  # a fresh, independent draw for every estimate
                config = snn_eggroll.Config(population, rank, sigma, seed, 1.0) if rank else \
                    baselines.ESConfig(population, sigma, seed, 1.0)
                perturbation = drawn_noise(config, generation)  # every pair's ε_p: E_p, or Gaussian
                f = fitness({name: theta[name] + sigma * perturbation[name] for name in theta}) - \
                    fitness({name: theta[name] - sigma * perturbation[name] for name in theta})
                g = np.concatenate([part.ravel() for part in estimate(f, theta, config, generation).values()])
                cosine[label][i, repeat] = g @ true_gradient / (np.linalg.norm(g) * np.linalg.norm(true_gradient))
                error[label][i, repeat] = config.pairs * ((g - true_gradient) ** 2).sum() / (true_gradient ** 2).sum()
        assert abs(error[label].mean() - predicted_error(rank)) <= 5 * standard_error(error[label].ravel()), label
        assert cosine[label][0].mean() < 0.3 and cosine[label][-1].mean() > 0.95, label
    report(3, gradient_estimate_figure(estimators, populations, repeats, cosine, error, predicted_error),
           f"mean cosine with G from {populations[0]} to {populations[-1]} members: " + "; ".join(
               f"{label} {cosine[label][0].mean():.3f} → {cosine[label][-1].mean():.3f}" for label in estimators)
           + "; P ‖g − G‖² / ‖G‖² measured (predicted) " + "; ".join(
               f"{label} {error[label].mean():.0f} ± {standard_error(error[label].ravel()):.0f} "
               f"({predicted_error(rank):.0f})" for label, (rank, _) in estimators.items()))


# %% [markdown]
# ## 4. A generation of low-rank noise takes far less memory and time, Eqs. (5)–(7)
#
# Memory: the noise alive at once in a generation is, per pair and layer, r (m + n) numbers of
# factors plus the m of the bias noise for EGGROLL, against m n + m for vanilla ES, which forms
# every ε_p whole (for the update of Eq. (10), if not before). For both layers at r = 4:
#
#     ES / EGGROLL = (64·2312 + 64 + 10·64 + 10) / (4 (64 + 2312) + 64 + 4 (10 + 64) + 10)
#                  = 148,682 / 9,874 ≈ 15.
#
# Time: the largest product of a generation is layer 1's per-pair term, x [B_1 … B_P] with
# T N n r P multiply-adds for EGGROLL (claim 2) against x [ε_1ᵀ … ε_Pᵀ] with T N n m P for vanilla
# ES: m / r = 16 times more at r = 4; drawing the noise is likewise r (m + n) numbers against m n.
# The spiking simulation of the 2P members costs both the same, so the measured ratio lies below
# 16. Measured here: `snn_eggroll.generation_step` and the batched `baselines.es_generation_step` (one
# whole generation: forward, centred ranks, estimate and Adam's update), the median of 5 calls after
# one warm-up, on 32 samples of random binary frames at the real recordings' input density. Time
# is the process's CPU time, summed over its threads: unlike the wall clock, it leaves out the time
# other programs run, but they still slow it through the caches and memory they share, so the
# ratios are steadiest on an idle machine. The same ratio measured elsewhere in the project differs
# with the setting: 6.0× in [the README's table](README.md#why-low-rank-pays) (`make bench`, one
# generation of 512 members on minibatches of 256) and 7.52× per generation in [the paper's
# grid](results/paper/table.md) (whole training runs of 512 members on minibatches of 256); each
# finds the low-rank generation several times cheaper.

# %%
def noise_megabytes(rank, pairs):
    """float32 noise held at once in one generation: factors and bias noise of both layers for
    EGGROLL at rank r, the full E_p and bias noise for vanilla ES (rank None)."""
    (n, m1, m2) = snn.SIZES
    numbers = sum((m * n_in if rank is None else rank * (m + n_in)) + m for m, n_in in ((m1, n), (m2, m1)))
    return 4 * pairs * numbers / 1e6


def median_seconds(call, repeats=5):
    """Median CPU seconds (this process's, all its threads) of `repeats` calls after one warm-up
    call: unlike the wall clock, it leaves out the time other programs on the machine run."""
    call()
    seconds = []
    for _ in range(repeats):
        started = time.process_time()
        call()
        seconds.append(time.process_time() - started)
    return float(np.median(seconds))


def memory_and_time():
    rng = np.random.default_rng(0)
    frames = (rng.random((10, 32, snn.SIZES[0])) < INPUT_DENSITY).astype(np.float32)
    labels = rng.integers(0, snn.SIZES[-1], 32)
    params = snn.init_params(seed=0)
    state, adam, lif = optim.init(params), optim.Adam(lr=0.01), snn.LIF()
    populations = [16, 32, 64, 128, 256, 512]
    methods = {"EGGROLL r = 1": 1, "EGGROLL r = 4": 4, "vanilla ES": None}
    megabytes = {label: [noise_megabytes(rank, population // 2) for population in populations]
                 for label, rank in methods.items()}
    seconds = {label: [] for label in methods}
    for population in populations:
        for label, rank in methods.items():
            if rank:
                config = snn_eggroll.Config(population, rank, sigma=0.1, seed=0, logit_scale=1.0)
                one_generation = lambda: snn_eggroll.generation_step(
                    params, state, frames, labels, 0, config, adam, lif)
            else:
                config = baselines.ESConfig(population, sigma=0.1, seed=0, logit_scale=1.0)
                one_generation = lambda: baselines.es_generation_step(
                    params, state, frames, labels, 0, config, adam, lif)
            seconds[label].append(median_seconds(one_generation))
    memory_ratio = [es / egg for es, egg in zip(megabytes["vanilla ES"], megabytes["EGGROLL r = 4"])]
    speedup = seconds["vanilla ES"][-1] / seconds["EGGROLL r = 4"][-1]
    assert min(memory_ratio) > 10, memory_ratio
    assert speedup > 2, speedup
    report(4, memory_and_time_figure(populations, methods, megabytes, seconds, memory_ratio, speedup),
           f"at {populations[-1]} members, noise MB " + ", ".join(
               f"{label} {megabytes[label][-1]:.2f}" for label in methods) + "; CPU seconds per generation (N = 32) "
           + ", ".join(f"{label} {seconds[label][-1]:.3f}" for label in methods)
           + f"; vanilla ES / EGGROLL r = 4: {memory_ratio[-1]:.1f}× the memory, {speedup:.1f}× the time")


# %% [markdown]
# ## 5. In the same time, EGGROLL trains further than vanilla ES, on real recordings
#
# Claims 1–4 say that a low-rank generation perturbs the weights as far as a full-rank one (its
# noise is as long), that on claim 3's quadratic, fed raw differences, its estimate errs little more
# than full-rank noise's, and that it costs far less. So in equal time EGGROLL should get further.
# Three methods train the same network from the same initial weights on the same real recordings,
# each for the same CPU time (20 seconds by default, `--seconds`; the process's CPU time over all
# its threads, as in claim 4, the evaluations not counted). The budget
# is time, not a count of network evaluations: a generation of 256 members runs 256 networks on its
# minibatch where a BPTT update runs one and its backward pass, and what a user pays for is time.
#
# - EGGROLL r = 4 (`snn_eggroll.generation_step`) and vanilla ES (`baselines.es_generation_step`, all
#   members at once): 256 members, minibatches of 64, σ = 0.2, Adam at lr 0.1, logit scale 1. That
#   σ, learning rate and readout are the paper preset's, chosen on validation accuracy for EGGROLL
#   r = 4 and shared by vanilla ES, whose σ alone was then checked
#   ([docs/results.md](docs/results.md)): the race runs on EGGROLL r = 4's settings, not on each
#   method's best. A generation: draw a minibatch, evaluate the population by Eq. (6), shape the
#   fitnesses into centred ranks, take the f_p, form Eqs. (7)–(8) (or (10)) and climb by Adam, Eq. (9).
# - BPTT (`baselines.bptt_step`): backpropagation through the 10 frames, with the fast-sigmoid
#   surrogate slope k = 2 for the spike's derivative, minibatches of 64, Adam at lr 0.02, logit
#   scale 10 (the paper preset's settings, the learning rate held constant: in a time budget the
#   number of updates is not known in advance).
#
# Accuracy is the most-spiking output's on the test recordings (at most the first 1,000), after
# geometrically spaced numbers of updates; nothing is chosen by it. The data: `--data-root`, else
# `$NMNIST_ROOT`, else the 280 recordings of `nmnist-sample/` (180 training, split 162 / 18 into
# training and validation by `data.load_nmnist`, the 18 unused here; 100 test).

# %%
def accuracy(params, split):
    """The fraction of `split` whose most-spiking output (ties: the lowest) is its label."""
    hits = 0
    for start in range(0, len(split), 500):
        chosen = np.arange(start, min(start + 500, len(split)))
        counts = snn.forward(params, split.frames(chosen))[0][0]
        hits += int((counts.argmax(axis=-1) == split.labels[chosen]).sum())
    return hits / len(split)


def train_for(seconds, update, train, test, also=()):
    """Updates by `update` from the same initial weights until `seconds` of CPU time are spent: the
    curve (updates, seconds, test accuracy) after 0, 1, 2, 3, 5, 7, 10, 15, 20, 30, … updates, after
    the numbers in `also`, and at the end."""
    params = snn.init_params(seed=1)
    state, spent, updates = optim.init(params), 0.0, 0
    curve = [(0, 0.0, accuracy(params, test))]
    checkpoints = {round(mantissa * 10 ** decade) for decade in range(6) for mantissa in (1, 1.5, 2, 3, 5, 7)}
    checkpoints.update(also)
    while spent < seconds:
        started = time.process_time()
        frames, labels = data.minibatch(train, 64, np, seed=1, step=updates)
        params, state = update(params, state, frames, labels, updates)
        spent += time.process_time() - started
        updates += 1
        if updates in checkpoints:
            curve.append((updates, spent, accuracy(params, test)))
    if curve[-1][0] != updates:
        curve.append((updates, spent, accuracy(params, test)))
    return np.array(curve)


def training_race(seconds, data_root):
    """The race: `seconds` of CPU time for each method, on the recordings of `data_root` (--data-root,
    or None: $NMNIST_ROOT, else the sample)."""
    splits, root = load_recordings(data_root)
    test = data.Split(splits.test.packed[:1000], splits.test.labels[:1000], splits.test.n_time_bins)
    lif = snn.LIF()
    es_adam, bptt_adam = optim.Adam(lr=0.1), optim.Adam(lr=0.02)
    lowrank = snn_eggroll.Config(population=256, rank=4, sigma=0.2, seed=1, logit_scale=1.0)
    full_rank = baselines.ESConfig(population=256, sigma=0.2, seed=1, logit_scale=1.0)
    surrogate = baselines.BPTTConfig(slope=2.0, logit_scale=10.0)
    methods = {
        "EGGROLL r = 4": lambda params, state, frames, labels, generation: snn_eggroll.generation_step(
            params, state, frames, labels, generation, lowrank, es_adam, lif)[:2],
        "vanilla ES": lambda params, state, frames, labels, generation: baselines.es_generation_step(
            params, state, frames, labels, generation, full_rank, es_adam, lif)[:2],
        "BPTT": lambda params, state, frames, labels, generation: baselines.bptt_step(
            params, state, frames, labels, surrogate, bptt_adam, lif)[:2]}
    es_curve = train_for(seconds, methods["vanilla ES"], splits.train, test)
    at = int(es_curve[-1, 0])  # vanilla ES's last generation: EGGROLL is scored after as many too
    curves = {label: es_curve if label == "vanilla ES" else
              train_for(seconds, update, splits.train, test, also=[at] if label == "EGGROLL r = 4" else [])
              for label, update in methods.items()}
    final = {label: curve[-1, 2] for label, curve in curves.items()}
    updates = {label: int(curve[-1, 0]) for label, curve in curves.items()}
    ratio = updates["EGGROLL r = 4"] / updates["vanilla ES"]
    # The cheaper generation (claim 4) goes further: in the same time, at least 3 times as many
    # generations, well above chance, and ahead of vanilla ES.
    assert ratio >= 3, f"generations in {seconds:g} CPU seconds: " + ", ".join(
        f"{label} {count}" for label, count in updates.items())
    assert final["EGGROLL r = 4"] >= 0.4 and final["EGGROLL r = 4"] > final["vanilla ES"], \
        f"test accuracy after {seconds:g} CPU seconds: " + ", ".join(
            f"{label} {100 * accuracy:.0f} %" for label, accuracy in final.items())
    egg_at = float(curves["EGGROLL r = 4"][curves["EGGROLL r = 4"][:, 0] == at, 2][0])
    report(5, training_race_figure(seconds, test, curves, updates, final, ratio, at, egg_at),
           f"{len(splits.train)} training and {len(splits.test)} test recordings of {shown(root)}; "
           f"in {seconds:g} CPU seconds of training each: {race_results(seconds, updates, final)}; "
           f"EGGROLL after {at} generations: {100 * egg_at:.0f} %")


def race_results(seconds, updates, final):
    """Claim 5's numbers of each method, in the order of `updates`: its updates in `seconds` (BPTT's
    updates, ES's generations), their CPU seconds each, and its test accuracy `final`."""
    def counted(label):
        count, word = updates[label], "update" if label == "BPTT" else "generation"
        return f"{count} {word}{'s' * (count != 1)}"
    return "; ".join(f"{label} {counted(label)} ({seconds / updates[label]:.3f} CPU s each), test accuracy "
                     f"{100 * final[label]:.0f} %" for label in updates)


# %% [markdown]
# ## What to read next
#
# After the README's shortest path and this lesson, `eggroll.py` top to bottom:
# the method of `nano_eggroll.py` made fast and checked (blocks of 64
# pairs, the GPU, several processes). Then `noise.py` (the Philox streams the factors are
# regenerated from), `snn.py` (the LIF network), `snn_eggroll.py` (its population, simulated in
# cache-sized groups of members), `optim.py` (Adam, Eq. (9)), `baselines.py` (vanilla ES and BPTT),
# and the tests that hold them to their equations (tests/test_eggroll.py, tests/test_es.py). Every
# file and equation has its place in [docs/code.md](docs/code.md).

# %%
# ---------------------------------------------------------------------------------------------
# The figures: each claim's measurements drawn; nothing here is measured or checked.


def new_figure(figsize):
    """An empty matplotlib figure of `figsize` inches. Matplotlib is imported here, when the first
    figure is drawn, not with the modules above: a refused command or --help answers without it."""
    from matplotlib.figure import Figure
    return Figure(figsize=figsize, layout="constrained")


def lowrank_scale_figure(m, n, pairs, ranks, variance, norms, entries):
    """Claim 1: an entry's variance and distribution and the noise's length, at each rank and at full rank."""
    figure = new_figure((14, 4.3))
    figure.suptitle("Claim 1: with the 1/√r of Eq. (5), an entry of E has variance 1 at every rank, so E is as long "
                    "as full-rank noise at every rank;\nwhat the rank changes is how the entries go together (a "
                    "row's entries share a row of A_p) and, right, an entry's tails, heavier at low rank")
    variance_ax, norm_ax, shape_ax = figure.subplots(1, 3)
    variance_ax.errorbar(ranks, [variance[r].mean() for r in ranks], [variance[r].std() for r in ranks],
                         marker="o", capsize=3, label="A_p B_pᵀ/√r, Eq. (5)")
    variance_ax.plot(ranks, [r * variance[r].mean() for r in ranks], "--", marker="s", label="A_p B_pᵀ, without the 1/√r")
    variance_ax.axhline(variance["full"].mean(), color="gray", linestyle=":", label="full-rank Gaussian (vanilla ES)")
    variance_ax.set(xscale="log", yscale="log", xlabel="rank r of the perturbation",
                    ylabel="variance of an entry of E (mean ± std over 32 pairs)", title="variance: 1 at every rank")
    for rank in ranks:
        norm_ax.scatter(np.full(len(pairs), rank), norms[rank], s=6, color="C0", alpha=0.5)
    norm_ax.scatter(np.full(len(pairs), 128), norms["full"], s=6, color="gray", alpha=0.5)
    norm_ax.axhline(math.sqrt(m * n), color="k", linewidth=0.8, label=f"√(mn) = {math.sqrt(m * n):.1f}")
    norm_ax.set_xscale("log", base=2)
    norm_ax.set_xticks(ranks + [128], [str(r) for r in ranks] + ["full"])
    norm_ax.set(xlabel="rank r of the perturbation",
                ylabel="length of the noise, ‖E‖_F (one dot per pair;\nthe perturbation σE is σ times as long)",
                title="length: √(mn) at every rank")
    bins = np.linspace(-8, 8, 81)
    for rank in (1, 4, 64, "full"):
        density, _ = np.histogram(entries[rank], bins, density=True)
        shape_ax.step(bins[:-1], density, where="post", label=f"r = {rank}" if rank != "full" else "full rank")
    shape_ax.plot(bins, np.exp(-bins ** 2 / 2) / math.sqrt(2 * math.pi), "k:", label=r"$\mathcal{N}(0, 1)$")
    shape_ax.set(yscale="log", ylim=(1e-5, 2), xlabel="value of an entry of E (one pair's 147,968)",
                 ylabel="probability density", title="one entry's shape: kurtosis 3 + 6/r")
    for ax in (variance_ax, norm_ax, shape_ax):
        ax.legend(fontsize=8)
    return figure


def forward_trick_figure(n_frames, lowrank_current, formed_current, current_gap, lowrank_counts, formed_counts,
                         unperturbed_counts, changed):
    """Claim 2: currents and spike counts by Eq. (6) against those of W ± σE formed and of the network without noise."""

    def joint_histogram(along_x, along_y):
        """How often each pair of spike counts (along_x, along_y) occurs: (T + 1) × (T + 1), along_y first."""
        table = np.zeros((n_frames + 1, n_frames + 1))
        np.add.at(table, (along_y.astype(int).ravel(), along_x.astype(int).ravel()), 1)
        return table

    figure = new_figure((14, 4.6))
    figure.suptitle(f"Claim 2: Eq. (6) gives the currents of W ± σE to {current_gap:.0e} and exactly the same "
                    f"spikes without forming E, while the noise\nchanges {100 * changed:.0f} % of the spike counts "
                    f"(8 members × 32 samples × 10 outputs)")
    current_ax, same_ax, changed_ax = figure.subplots(1, 3)
    current_ax.scatter(formed_current[0].ravel()[::7], lowrank_current[0].ravel()[::7], s=2, alpha=0.3)
    current_ax.set(xlabel="layer-1 current, x (W + σE)ᵀ + b + σδ with E formed",
                   ylabel="layer-1 current by Eq. (6), E never formed",
                   title=f"currents agree: largest difference {current_gap:.1e}")
    for ax, (along_x, along_y), title, xlabel in (
            (same_ax, (formed_counts, lowrank_counts), "spike counts: identical (all on the diagonal)",
             "output spikes of a member, E formed"),
            (changed_ax, (np.broadcast_to(unperturbed_counts, lowrank_counts.shape), lowrank_counts),
             f"against the network without noise: {100 * changed:.0f} % differ",
             "output spikes of the network without noise")):
        image = ax.imshow(np.log10(1 + joint_histogram(along_x, along_y)), origin="lower", cmap="viridis")
        ax.set(xlabel=xlabel, ylabel="output spikes of the member by Eq. (6)", title=title)
        figure.colorbar(image, ax=ax, label="how often: log10(1 + count)")
    return figure


def gradient_estimate_figure(estimators, populations, repeats, cosine, error, predicted_error):
    """Claim 3: each estimator's cosine with the true gradient and its error, measured and predicted, per population size."""
    extra = {rank: 100 * (predicted_error(rank) / predicted_error(None) - 1) for rank in (1, 4)}
    figure = new_figure((13, 5))
    figure.suptitle(f"Claim 3: the error of the gradient estimate falls as 1/P at every rank, as predicted; "
                    f"low rank adds only {extra[1]:.0f} % (r = 1)\nand {extra[4]:.0f} % (r = 4) to the error of "
                    f"full-rank ES, so the cosine with the true gradient rises alike")
    cosine_ax, error_ax = figure.subplots(1, 2)
    for colour, (label, (rank, _)) in enumerate(estimators.items()):
        style = dict(color=f"C{colour}")
        cosine_ax.errorbar(populations, cosine[label].mean(axis=1), cosine[label].std(axis=1), marker="o",
                           capsize=3, label=label, **style)
        cosine_ax.plot(populations, [1 / math.sqrt(1 + predicted_error(rank) / (population // 2))
                                     for population in populations],
                       ":", **style)
        error_ax.errorbar(populations, error[label].mean(axis=1), error[label].std(axis=1) / math.sqrt(repeats),
                          marker="o", capsize=3, label=label, **style)
        error_ax.axhline(predicted_error(rank), linestyle=":", **style)
    cosine_ax.set(xlabel="population 2P (members)", ylabel="cosine(estimate g, true gradient G)",
                  title=f"direction: mean ± std of {repeats} estimates\ndotted: predicted cosine "
                        "1/√(1 + 𝔼‖g − G‖²/‖G‖²), the error taken across G")
    error_ax.set(xlabel="population 2P (members)",
                 ylabel="P ‖g − G‖² / ‖G‖²\n(squared error relative to ‖G‖², times the pairs P)",
                 title="error: flat means it falls as 1/P; mean ± standard error\n"
                       "dotted: predicted, d + 1 (+ the low-rank term)")
    for ax in (cosine_ax, error_ax):
        ax.set_xscale("log", base=2)
        ax.legend(fontsize=8)
    return figure


def memory_and_time_figure(populations, methods, megabytes, seconds, memory_ratio, speedup):
    """Claim 4: the noise a generation holds and the CPU time it takes, per method and population size."""
    figure = new_figure((12, 4.4))
    figure.suptitle(f"Claim 4: at {populations[-1]} members, a generation of EGGROLL r = 4 holds "
                    f"{memory_ratio[-1]:.0f}× less noise than vanilla ES and takes {speedup:.0f}× less CPU time")
    memory_ax, time_ax = figure.subplots(1, 2)
    for label in methods:
        memory_ax.plot(populations, megabytes[label], marker="o", label=label)
        time_ax.plot(populations, seconds[label], marker="o", label=label)
    memory_ax.set(ylabel="noise held at once in a generation (MB)",
                  title="memory per pair and layer: r (m + n) + m numbers\nagainst m n + m (the weights' noise and the bias's)")
    time_ax.set(ylabel="CPU seconds per generation, N = 32\n(the process's CPU time, over all its threads)",
                title="time: median of 5 generations")
    for ax in (memory_ax, time_ax):
        ax.set(yscale="log", xlabel="population 2P (members)")
        ax.set_xscale("log", base=2)
        ax.set_xticks(populations, [str(population) for population in populations])
        ax.legend(fontsize=8)
    return figure


def training_race_figure(seconds, test, curves, updates, final, ratio, at, egg_at):
    """Claim 5: each method's test accuracy against CPU seconds of training and against updates made."""
    gap = 100 * (egg_at - final["vanilla ES"])
    pace = "about alike" if abs(gap) <= 10 else f"EGGROLL {'ahead' if gap > 0 else 'behind'}"

    figure = new_figure((13, 5))
    figure.suptitle(f"Claim 5: in the same {seconds:g} CPU seconds on real recordings, EGGROLL makes {ratio:.0f}× "
                    f"the generations of vanilla ES and reaches\n{100 * final['EGGROLL r = 4']:.0f} % test accuracy "
                    f"against {100 * final['vanilla ES']:.0f} %; BPTT, with gradients through time, reaches "
                    f"{100 * final['BPTT']:.0f} % (chance: 10 %)")
    time_ax, update_ax = figure.subplots(1, 2)
    for label, curve in curves.items():
        time_ax.plot(curve[1:, 1], 100 * curve[1:, 2], marker=".", label=f"{label}: {updates[label]} updates")
        update_ax.plot(curve[1:, 0], 100 * curve[1:, 2], marker=".", label=label)
    for ax in (time_ax, update_ax):
        ax.axhline(10, color="gray", linestyle=":", label="chance")
        ax.set(xscale="log", ylim=(0, 100), ylabel=f"test accuracy (%), {len(test)} recordings")
        ax.legend(fontsize=8)
    time_ax.set(xlabel="CPU seconds of training (log scale)",
                title=f"the same time for each: EGGROLL's generations are {ratio:.0f}× cheaper")
    update_ax.set(xlabel="updates made (log scale; ES: generations, BPTT: minibatch updates)",
                  title=f"per update {pace}: after {at} generations,\nEGGROLL {100 * egg_at:.0f} %, "
                        f"vanilla ES {100 * final['vanilla ES']:.0f} %")
    return figure


# %%
# ---------------------------------------------------------------------------------------------
# How the lesson runs: what a claim's report keeps and prints; where claim 5's recordings are; the
# options; what the lesson will write, checked before any work; the page; and main, which runs the
# claims in order and writes every file at the end.

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()  # a notebook has no __file__
SAMPLE = HERE / "nmnist-sample"
CLAIMS = (1, 2, 3, 4, 5)
PAGE_HEADER = "# EGGROLL in five claims"  # how the page (--page) begins: the first line of the lesson's text
FIGURES = {1: "1_lowrank_scale.png", 2: "2_forward_trick.png", 3: "3_gradient_estimate.png",
           4: "4_memory_time.png", 5: "5_training.png"}


figures, printed = {}, {}  # per claim: the PNG's bytes, the printed lines


def report(claim, figure, line):
    """Keep a claim's figure (written at the end) and print its line of numbers."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    figures[claim], printed[claim] = buffer.getvalue(), wrapped(f"claim {claim}: {line}")
    exits.say(printed[claim], "run it again with standard output open")
    if "ipykernel" in sys.modules:  # in a notebook, show it
        from IPython.display import display
        display(figure)


def wrapped(line, width=100):
    """A line of numbers folded for a terminal `width` columns wide: each of its '; '-separated
    parts on a line of its own, continued lines indented."""
    return ";\n".join(textwrap.fill(part, width, initial_indent="    " if index else "", subsequent_indent="    ",
                                     break_long_words=False, break_on_hyphens=False)
                       for index, part in enumerate(line.split("; ")))


def recordings_root(option):
    """Where the real recordings are: `option` (--data-root), else $NMNIST_ROOT, else the sample; and
    which it is."""
    if option is not None:
        return option, "--data-root"
    if os.environ.get("NMNIST_ROOT"):
        return Path(os.environ["NMNIST_ROOT"]), "$NMNIST_ROOT"
    return SAMPLE, "the sample"


def recordings_there(option):
    """Where the real recordings are (recordings_root), or one line and exit status 2 where there are
    none: said before any claim runs."""
    root, named = recordings_root(option)
    odd = data.not_a_folder(root)
    if odd:
        fail(f"{named} {root} is {odd}, so it holds no N-MNIST; point --data-root or $NMNIST_ROOT at a copy, or "
             f"leave both unset for the recordings of nmnist-sample/")
    if not any((base / "Train").is_dir() and (base / "Test").is_dir() for base in (root, root / "NMNIST")):
        fail(f"{named} {root} holds no N-MNIST (expected {root}/Train/<digit>/*.bin and {root}/Test/<digit>/*.bin, "
             f"or the same under {root}/NMNIST); point --data-root or $NMNIST_ROOT at a copy, or leave both "
             f"unset for the recordings of nmnist-sample/")
    try:
        emulated = emulate.provenance(root) is not None
    except ValueError as error:  # an emulation's record damaged
        fail(str(error))
    if emulated:  # claim 5 is a race on real recordings, as its figure says
        fail(f"{named} {root} is emulated N-MNIST (run.py emulate made it), and claim 5 races on real recordings; "
             f"point --data-root or $NMNIST_ROOT at recorded N-MNIST, or leave both unset for nmnist-sample/")
    return root


def load_recordings(option):
    """The real recordings' splits and where they are (recordings_there), or one line and exit status
    2 when they are missing or damaged."""
    root = recordings_there(option)
    return data.load_nmnist(root, progress=False), root  # a damaged recording: one line (exits.excepthook)


def shown(path):
    """A path as the reader should see it: relative to the repository when inside it."""
    try:
        return str(Path(path).resolve().relative_to(HERE)) or "."
    except ValueError:
        return str(path)


def fail(message):
    """A user's error: one line on stderr, exit status 2, nothing written."""
    sys.exit(exits.fail(message))


def claim_numbers(text):
    """--claims 1,3 → [1, 3]."""
    parts = [part.strip() for part in text.split(",")]
    if not all(part.isascii() and part.isdigit() and int(part) in CLAIMS for part in parts):
        raise argparse.ArgumentTypeError(f"give claims among 1..5 separated by commas, e.g. 1,3, not {text!r}")
    return sorted({int(part) for part in parts})


def options(argv):
    """The lesson's options, from `argv` (None: the command line)."""
    parser = exits.Parser(prog="lesson.py",
                          description="EGGROLL's claims, each derived, drawn as a figure and checked.")
    parser.add_argument("--out", type=lambda text: exits.path_given(exits.not_standard_output(text)),
                        default=Path("lesson"), help="folder for the figures (default: lesson)")
    parser.add_argument("--page", type=exits.path_given, help="also write the lesson's text, printed numbers and "
                                                              "figures as a markdown page FILE (the figures linked "
                                                              "from it)")
    parser.add_argument("--data-root", type=exits.path_given, help="claim 5 only: real N-MNIST recordings, "
                                                                   "<DIR>/Train/<digit>/*.bin and <DIR>/Test/... "
                                                                   "(default: $NMNIST_ROOT, else nmnist-sample/ "
                                                                   "beside lesson.py)")
    parser.add_argument("--claims", type=claim_numbers, default=list(CLAIMS), help="which claims to run, e.g. 1,3 "
                                                                                   "(default: all five)")
    parser.add_argument("--seconds", type=exits.positive_number, help="claim 5 only: CPU seconds of training for each method "
                                                      "(default: 20)")
    args = parser.parse_args(argv)
    for option, value in (("--data-root", args.data_root), ("--seconds", args.seconds)):
        if value is not None and 5 not in args.claims:  # given, and no claim run would use it
            parser.error(f"{option} is for claim 5 only, which --claims {','.join(map(str, args.claims))} does not "
                         f"run: drop {option}, or add 5 to --claims")
    if args.seconds is None:
        args.seconds = 20.0
    if not 0 < args.seconds <= 86_400:
        fail(f"--seconds {args.seconds:g} must lie in (0, 86400]")
    return args


def writable_folder_above(path, option):
    """The nearest existing folder at or above `path`, which must be writable, else a user error."""
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        fail(f"{option} {path}: {existing} is not a folder; choose another path")
    kernel = run_folder.kernel_fix(existing)
    if kernel:
        fail(f"{option} {path}: {kernel}")
    if not os.access(existing, os.W_OK | os.X_OK):
        fail(f"{option} {path}: the folder {existing} is not writable; choose another path")
    return existing


def check_what_is_written(args):
    """Everything the lesson will write, checked before any work (it writes all of it at the end):
    folders that exist or can be made, no link in the way, the page a markdown file apart from the
    figures, no file the lesson did not write: a figure only over one that the record of the
    figures drawn in --out holds (figure_record.py), the page only over a page of this lesson."""
    if args.out.exists() and not args.out.is_dir():
        fail(f"--out {args.out} is a file, not a folder; give a folder for the figures")
    if args.out.resolve() == HERE:
        fail(f"--out {args.out} is the project's own folder, among its source files; give a folder for the figures, "
             f"e.g. lesson")
    shared = run_folder.shared_folder(args.out)
    if shared:
        fail(f"--out {args.out} is {shared}, and the lesson draws its figures straight into it: give a folder of their "
             f"own, e.g. {args.out / 'lesson'}")
    writable_folder_above(args.out, "--out")
    figure_record.refuse_data_folder(args.out, "choose another --out")
    run_folder.refuse_run_folder(args.out, "choose another --out")
    if args.page is not None:
        if args.page.is_dir():
            fail(f"--page {args.page} is a folder; give the path of a markdown file")
        for claim, name in FIGURES.items():
            if args.page.resolve() == (args.out / name).resolve():
                fail(f"--page {args.page} is where the lesson draws claim {claim}'s figure; give the page a path of "
                     f"its own ending in .md")
        if args.page.suffix.lower() != ".md":
            fail(f"--page {args.page} is not a markdown page; give the path of a file ending in .md")
        writable_folder_above(args.page.parent, "--page")
        figure_record.refuse_data_folder(args.page.parent, "choose another --page")
        run_folder.refuse_run_folder(args.page.parent, "choose another --page")
    figure_paths = [args.out / FIGURES[claim] for claim in args.claims]
    for path in [*figure_paths, args.out / figure_record.RECORD] + [args.page] * (args.page is not None):
        if path.is_symlink():  # nothing is written through a link (run_folder.writing)
            fail(f"cannot write {path}: it is a symbolic link, and the lesson writes no file through one; remove it "
                 f"or choose another --out or --page")
    for path in [*figure_paths, args.out / figure_record.RECORD]:
        if path.exists() and not path.is_file():  # a folder, a pipe: never replaced (run_folder.writing)
            fail(f"cannot write {path}: it is not a regular file; move it out of {args.out}, or choose another --out")
    for path in figure_paths:  # the lesson's own figures are redrawn, no other file
        figure_record.refuse_unrecorded(path, "the lesson", f"move it out of {args.out}, or choose another --out")
    exits.refuse_foreign_file(args.page, PAGE_HEADER.encode(), "a page of this lesson", "choose another --page")


def markdown_cells(source):
    """The text of the `# %% [markdown]` cells of a percent-format script, without the `# `."""
    cells, current = [], None
    for line in source.splitlines() + ["# %%"]:
        if line.startswith("# %%"):
            if current is not None:
                cells.append("\n".join(current).strip())
            current = [] if line.strip() == "# %% [markdown]" else None
        elif current is not None:
            current.append(line[2:] if line.startswith("# ") else line.lstrip("#"))
    return cells


def linked(path, folder):
    """How a page in `folder` links to a file of the repository: relatively from inside it, else by
    the whole path."""
    return os.path.relpath(path, folder) if folder.is_relative_to(HERE) else str(path)


def page(took, out, destination):
    """The lesson as markdown for the page `destination`, its figures in the folder `out`: its prose,
    and after each claim's text its figure and printed line. `took`: how long the run took, as
    timing() says it."""
    folder = destination.resolve().parent
    prose = markdown_cells(Path(__file__).read_text(encoding="utf-8"))
    parts = []
    for index, cell in enumerate(prose):
        # links in the prose are relative to the repository; the page may live elsewhere
        parts.append(re.sub(r"\]\((?!https?:)([^)]+)\)", lambda link: f"]({linked(HERE / link[1], folder)})", cell))
        if index == 0:
            command = " ".join(["python", shown(Path(sys.argv[0])), *sys.argv[1:]])
            parts.append(f"*This page is `lesson.py` as `{command}` ran it, on {os.cpu_count()} CPU cores; it "
                         f"took {took}. Its text, and after each claim the figure it drew and the line it "
                         f"printed. Timings are this machine's.*")
        claim = re.match(r"## (\d)\. ", cell)
        if claim and int(claim[1]) in printed:
            number = int(claim[1])
            figure = os.path.relpath(out.resolve() / FIGURES[number], folder)  # written together
            parts.append(f"![Claim {number}]({figure})\n\n```text\n{printed[number]}\n```")
    return "\n\n".join(parts) + "\n"


def timing(wall, cpu):
    """How long the claims took, as the page and the last line say it: the wall time, which other
    programs on the machine stretch, the process's CPU seconds, which they do not, and the load
    average (over the last minute, at the end) that tells which is which."""
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    return f"{wall:.0f} s wall, {cpu:.0f} CPU s{load}"


def main():
    """The options and what they will write checked, the chosen claims run in order, then the figures
    and the page written."""
    args = options([] if "ipykernel" in sys.modules else None)  # a notebook takes the defaults
    if "ipykernel" not in sys.modules:  # a notebook keeps its own handling
        # Ctrl-C, SIGTERM or SIGHUP, standard output gone (a closed pipe, a full disk), damaged data:
        # one line and the cause's exit status, not a traceback. Nothing is left: the files are written at the end.
        sys.excepthook = exits.excepthook("run it again")
        warnings.formatwarning = exits.warning_line  # a warning (a copied recording, say): one line, as run.py's
        sys.stdout, sys.stderr = (stream and exits.Printable(stream) for stream in (sys.stdout, sys.stderr))  # an
        # escape sequence in a path it prints is shown, not obeyed (a stream closed, `>&-`, stays None)
    if not __debug__:  # python -O skips every assert: the claims would pass unchecked
        sys.exit(exits.fail("lesson.py checks each claim with assert, which python -O skips: run it without -O"))
    check_what_is_written(args)
    if 5 in args.claims:
        recordings_there(args.data_root)  # missing recordings: said before the first claim runs, not after four
    lesson = {1: lowrank_scale, 2: forward_trick, 3: gradient_estimate, 4: memory_and_time,
              5: lambda: training_race(args.seconds, args.data_root)}
    began, cpu_began = time.perf_counter(), time.process_time()
    for claim in args.claims:
        try:
            lesson[claim]()
        except AssertionError as refuted:  # a claim's own check, failed here: one line, exit status 1
            more = f"; give it more CPU seconds than --seconds {args.seconds:g} (default 20)" * (claim == 5)
            sys.exit(exits.fail(f"claim {claim} did not hold: {refuted}{more}; nothing was written", status=1))
    took = timing(time.perf_counter() - began, time.process_time() - cpu_began)
    made = [folder for folder in (args.out, *args.out.parents, *(args.page.parents if args.page else ()))
            if not os.path.lexists(folder)]  # what a failed write removes again, if left empty
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        for number, content in figures.items():  # each known by the record of the figures drawn there
            with figure_record.writing(args.out / FIGURES[number]) as temporary:
                temporary.write_bytes(content)
        if args.page is not None and "__file__" in globals():
            args.page.parent.mkdir(parents=True, exist_ok=True)
            run_folder.write_atomically(args.page, page(took, args.out, args.page))  # whole or not at all
    except (OSError, figure_record.UsageError) as error:  # a full disk, a limit on a file's size
        for folder in sorted(set(made), key=lambda path: len(path.parts), reverse=True):  # deepest first
            with contextlib.suppress(OSError):
                folder.rmdir()
        if isinstance(error, figure_record.UsageError):  # it names the file and the fix
            raise
        fail(run_folder.os_problem(error, "write", error.filename or args.out))
    exits.say(f"figures in {args.out}" + (f", page {args.page}" if args.page is not None else "")
              + f"; took {took}", f"the figures are in {args.out}")


# %%
main()
