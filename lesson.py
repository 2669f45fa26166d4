# %% [markdown]
# # EGGROLL in five claims
#
# EGGROLL (Sarkar et al., "Evolution Strategies at the Hyperscale", arXiv:2511.16652) is
# evolution strategies whose perturbations are low-rank. This lesson shows five of its claims with
# the project's own functions, on the 2312 → 64 LIF → 10 LIF network and the real N-MNIST
# recordings. Each claim draws one figure (PNG, into `--out`), prints one line of numbers and
# asserts what it shows, so a run that contradicts a claim fails loudly. Equations are numbered as
# in `eggroll.py`:
#
#     (5)  E_p = A_p B_pᵀ / √r                     A_p (m × r), B_p (n × r), entries N(0, 1)
#     (6)  x (W ± σE_p)ᵀ = x Wᵀ ± σ/√r (x B_p) A_pᵀ
#     (7)  g_W = Σ_p f_p E_p / (2Pσ) = (diag(f) A)ᵀ B / (2Pσ√r)     f_p = F(θ + σε_p) − F(θ − σε_p)
#     (8)  g_b = Σ_p f_p δ_p / (2Pσ)                δ_p ~ N(0, I), the bias noise
#     (9)  Adam, ascending g
#     (10) vanilla ES: Eq. (7) with full-rank E_p, every entry N(0, 1)
#
# Run it as a script, `.venv/bin/python lesson.py [--out DIR] [--data-root DIR]` (about a minute
# on 2 cores), or open it as a notebook (Jupyter with jupytext, or VS Code): `# %%` starts a cell.

# %%
import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

import baselines
import bench
import data
import eggroll
import noise
import optim
import resources
import run
import snn
from run_folder import UsageError

HERE = Path(__file__).resolve().parent if "__file__" in globals() else Path.cwd()  # a notebook has no __file__
parser = argparse.ArgumentParser(description="EGGROLL's claims, each drawn as a figure and checked.")
parser.add_argument("--out", type=Path, default=Path("lesson"), help="folder for the figures (default: lesson)")
parser.add_argument("--data-root", type=Path,
                    default=Path(os.environ.get("EGGROLL_TEST_NMNIST") or HERE.parent / "shared/data/nmnist-raw"),
                    help="the real N-MNIST recordings (default: $EGGROLL_TEST_NMNIST, else "
                         "../shared/data/nmnist-raw beside the repository)")
args = parser.parse_args([] if "ipykernel" in sys.modules else None)  # a notebook takes the defaults
try:
    resources.nmnist_recordings(args.data_root, "--data-root")  # before any work: the data is there
except UsageError as error:
    print(f"error: {error}", file=sys.stderr)
    sys.exit(2)
args.out.mkdir(parents=True, exist_ok=True)
began = time.perf_counter()


def save(figure, name):
    figure.savefig(args.out / name, dpi=120, bbox_inches="tight")


def standard_error(samples):
    return np.std(samples, ddof=1) / math.sqrt(len(samples))


# %% [markdown]
# ## 1. Why E = A Bᵀ/√r, Eq. (5)
#
# Full-rank noise for the 64 × 2312 first layer (Eq. 10) is 147,968 numbers per pair; the factors
# of Eq. (5) are r (64 + 2312). An entry E_ij = (1/√r) Σ_k a_ik b_jk sums r independent products of
# two N(0, 1) numbers, each of variance 1: the sum has variance r, and the 1/√r brings it back to 1
# at every rank. So ‖E‖_F ≈ √(mn) whatever r is, and σ is the same step length at every rank and in
# full-rank ES; without the 1/√r it would grow as √r. What the rank changes is the shape of the
# entries: products of Gaussians are heavy-tailed (excess kurtosis 6/r), Gaussian only as r → ∞.

# %%
m, n = snn.SIZES[1], snn.SIZES[0]
pairs = np.arange(32)
ranks = [1, 2, 4, 8, 16, 32, 64]
variance, excess_kurtosis, entries = {}, {}, {}  # per pair: mean E_ij², mean E_ij⁴ - 3; pair 0's entries
for rank in ranks + ["full"]:
    if rank == "full":
        E = baselines.full_rank_noise(0, 0, pairs, "W1", (m, n), np).astype(np.float64)
    else:
        a, b = eggroll.lowrank_factors(0, 0, pairs, "W1", (m, n), rank)
        E = eggroll.materialise(a.astype(np.float64), b.astype(np.float64))
    variance[rank] = (E ** 2).mean(axis=(1, 2))
    excess_kurtosis[rank] = (E ** 4).mean(axis=(1, 2)) - 3
    entries[rank] = E[0].ravel()
    # The entries of each E_p have variance 1 (mean 0), Gaussian or low-rank; their excess kurtosis
    # is 6/r, 0 for full rank. Tolerance: 5 standard errors over the 32 independent pairs.
    assert abs(variance[rank].mean() - 1) <= 5 * standard_error(variance[rank]), rank
    expected = 0 if rank == "full" else 6 / rank
    assert abs(excess_kurtosis[rank].mean() - expected) <= 5 * standard_error(excess_kurtosis[rank]), rank
norms = {rank: np.sqrt(m * n * variance[rank]) for rank in variance}  # ‖E_p‖_F

figure = Figure(figsize=(14, 3.8), layout="constrained")
variance_ax, norm_ax, shape_ax = figure.subplots(1, 3)
variance_ax.errorbar(ranks, [variance[r].mean() for r in ranks], [variance[r].std() for r in ranks], marker="o",
                     capsize=3, label="A Bᵀ/√r (Eq. 5)")
variance_ax.plot(ranks, [r * variance[r].mean() for r in ranks], "--", marker="s", label="A Bᵀ, without 1/√r")
variance_ax.axhline(variance["full"].mean(), color="gray", linestyle=":", label="full-rank Gaussian (Eq. 10)")
variance_ax.set(xscale="log", yscale="log", xlabel="rank r", ylabel="variance of an entry",
                title="entry variance: 1 at every rank")
for rank in ranks:
    norm_ax.scatter(np.full(len(pairs), rank), norms[rank], s=6, color="C0", alpha=0.5)
norm_ax.scatter(np.full(len(pairs), 128), norms["full"], s=6, color="gray", alpha=0.5)
norm_ax.axhline(math.sqrt(m * n), color="k", linewidth=0.8, label=f"√(mn) = {math.sqrt(m * n):.1f}")
norm_ax.set_xscale("log", base=2)
norm_ax.set_xticks(ranks + [128], [str(r) for r in ranks] + ["full"])
norm_ax.set(xlabel="rank r", ylabel="‖E_p‖_F, 32 pairs", title="Frobenius norm: the same step length")
bins = np.linspace(-8, 8, 81)
for rank in (1, 4, 64, "full"):
    density, _ = np.histogram(entries[rank], bins, density=True)
    shape_ax.step(bins[:-1], density, where="post", label=f"r = {rank}" if rank != "full" else "full rank")
shape_ax.plot(bins, np.exp(-bins ** 2 / 2) / math.sqrt(2 * math.pi), "k:", label="N(0, 1)")
shape_ax.set(yscale="log", ylim=(1e-5, 2), xlabel="entry of E_p", ylabel="density",
             title="but heavy tails at low rank: kurtosis 3 + 6/r")
for ax in (variance_ax, norm_ax, shape_ax):
    ax.legend(fontsize=8)
save(figure, "1_lowrank_scale.png")
print("claim 1: entry variance at r = " + ", ".join(f"{r}: {variance[r].mean():.3f}" for r in ranks)
      + f", full rank: {variance['full'].mean():.3f}; mean ‖E‖_F {norms[1].mean():.1f} (r = 1), "
      f"{norms[64].mean():.1f} (r = 64), {norms['full'].mean():.1f} (full), √(mn) = {math.sqrt(m * n):.1f}; "
      f"excess kurtosis {excess_kurtosis[1].mean():.2f} (r = 1, 6/r = 6), {excess_kurtosis[64].mean():.3f} "
      f"(r = 64), {excess_kurtosis['full'].mean():.3f} (full)")

# %% [markdown]
# ## 2. The forward trick, Eq. (6), on real recordings
#
# EGGROLL never forms E. For input x, x (W ± σE)ᵀ = x Wᵀ ± σ/√r (x B) Aᵀ: x Wᵀ is shared by every
# member, and x [B_1 … B_P] is one matrix product for the whole population
# (`eggroll.population_product`). A bias is a weight on a constant input 1, so its noise σδ rides
# along. Here: 4 pairs at r = 4 and σ = 0.2 on 32 real validation recordings, in float64. First the
# layer-1 currents of Eq. (6) against those of W + σE materialised; then `eggroll.perturbed_forward`
# against `snn.forward` of every member with its weights materialised: the same spikes.

# %%
splits = data.load_nmnist(args.data_root, progress=False)
frames = splits.val.frames(np.arange(32)).astype(np.float64)  # (T, B, 2312)
n_steps, batch, _ = frames.shape
params = {name: value.astype(np.float64) for name, value in snn.init_params(seed=1).items()}
config = eggroll.Config(population=8, rank=4, sigma=0.2, seed=1, logit_scale=1.0)
pairs, sigma, generation = np.arange(config.pairs), config.sigma, 0

factors = {name: [f.astype(np.float64) for f in eggroll.lowrank_factors(config.seed, generation, pairs, name,
                                                                        params[name].shape, config.rank)]
           for name in ("W1", "W2")}                                # A_p (P, r, m) and B_p (P, r, n)
perturbation = {name: eggroll.materialise(*factors[name]) for name in factors}  # E_p, for comparison only
perturbation.update({name: noise.normals(config.seed, generation, pairs, name, params[name].shape[0]).astype(np.float64)
                     for name in ("b1", "b2")})                     # δ_p

x = frames.reshape(n_steps * batch, n)
xb = eggroll.population_product(x, factors["W1"][1]).transpose(1, 0, 2)  # x [B_1 … B_P]: (P, T B, r)
lowrank_current = (x @ params["W1"].T + params["b1"]) + sigma / math.sqrt(config.rank) * (xb @ factors["W1"][0]) \
    + sigma * perturbation["b1"][:, None, :]
materialised_current = x @ (params["W1"] + sigma * perturbation["W1"]).transpose(0, 2, 1) \
    + (params["b1"] + sigma * perturbation["b1"])[:, None, :]
current_gap = np.abs(lowrank_current - materialised_current).max()
assert current_gap <= 1e-10, current_gap

lowrank_counts, _ = eggroll.perturbed_forward(params, frames, config, generation)  # (2P, B, 10)
materialised_counts = np.empty_like(lowrank_counts)
for member in range(config.population):
    pair, sign = member // 2, (1, -1)[member % 2]  # member 2p is pair p's + side, 2p + 1 its - side
    weights = {name: value + sign * sigma * perturbation[name][pair] for name, value in params.items()}
    materialised_counts[member] = snn.forward(weights, frames)[0][0]
unperturbed_counts = snn.forward(params, frames)[0][0]
assert np.array_equal(lowrank_counts, materialised_counts)  # the same spikes, exactly
changed = (lowrank_counts != unperturbed_counts).mean()
assert changed > 0.1, changed  # ... and not because the perturbation did nothing


def joint_histogram(along_x, along_y):
    """How often each pair of spike counts (along_x, along_y) occurs: (T + 1) × (T + 1), y first."""
    table = np.zeros((n_steps + 1, n_steps + 1))
    np.add.at(table, (along_y.astype(int).ravel(), along_x.astype(int).ravel()), 1)
    return table


figure = Figure(figsize=(14, 4), layout="constrained")
current_ax, same_ax, changed_ax = figure.subplots(1, 3)
current_ax.scatter(materialised_current[0].ravel()[::7], lowrank_current[0].ravel()[::7], s=2, alpha=0.3)
current_ax.set(xlabel="x (W + σE)ᵀ + b + σδ, E materialised", ylabel="x Wᵀ + b + σ/√r (x B) Aᵀ + σδ, Eq. (6)",
               title=f"layer-1 currents, pair 0 +: max |Δ| {current_gap:.1e}")
for ax, (along_x, along_y), title, label in (
        (same_ax, (materialised_counts, lowrank_counts), "output spike counts: identical",
         "eggroll.perturbed_forward"),
        (changed_ax, (np.broadcast_to(unperturbed_counts, lowrank_counts.shape), lowrank_counts),
         f"against the unperturbed W: {100 * changed:.0f} % differ", "perturbed member")):
    image = ax.imshow(np.log10(1 + joint_histogram(along_x, along_y)), origin="lower", cmap="viridis")
    ax.set(xlabel="snn.forward, W + σE materialised" if ax is same_ax else "snn.forward, unperturbed W",
           ylabel=label, title=title)
    figure.colorbar(image, ax=ax, label="log10(1 + count)")
save(figure, "2_forward_trick.png")
print(f"claim 2: {lowrank_counts.size} output spike counts of {config.population} members on {batch} real "
      f"recordings: {int((lowrank_counts != materialised_counts).sum())} differ between Eq. (6) and W ± σE "
      f"materialised, {int((lowrank_counts != unperturbed_counts).sum())} from the unperturbed network; "
      f"max |layer-1 current difference| {current_gap:.1e}")

# %% [markdown]
# ## 3. The estimate against the population, Eqs. (7), (8), (10)
#
# ES estimates the gradient of the smoothed objective J(θ) = E_ε F(θ + σε). To know that gradient
# exactly we take a fitness whose smoothing is known in closed form: F(θ) = −½ ‖θ − θ*‖² over
# the parameters of a small 32 → 16 → 4 network (d = 596; θ and the target θ* from
# `snn.init_params`). For any noise whose entries have mean 0, variance 1 and no correlation —
# Gaussian, or low-rank (claim 1) — J(θ) = F(θ) − σ²d/2, so the reference is ∇J = θ* − θ. The
# estimators are the project's own, fed raw antithetic differences f_p (no rank shaping, which
# would change the objective): `eggroll.gradient` at r = 1 and r = 4 and
# `baselines.full_rank_gradient`, each regenerating its noise from the keys.
#
# Each pair contributes ⟨G, ε⟩ ε, so P ‖g − G‖² / ‖G‖² has mean d + 1 for Gaussian noise at every P
# (the error shrinks as 1/P), plus (2/r)(m + n + 1) ‖G_W‖² / ‖G‖² per weight matrix for low-rank
# noise: its kurtosis term, the O(1/r) gap to full rank (tests/test_es.py checks it per direction).
# Here it adds 15 % at r = 1 and 4 % at r = 4; for the 64 × 2312 layer it is 4754/r against
# d + 1 = 147,969, 3 % at r = 1.

# %%
sizes = (32, 16, 4)
theta = {name: value.astype(np.float64) for name, value in snn.init_params(seed=2, sizes=sizes).items()}
target = {name: value.astype(np.float64) for name, value in snn.init_params(seed=3, sizes=sizes).items()}
true_gradient = np.concatenate([(target[name] - theta[name]).ravel() for name in theta])  # G = ∇J


def fitness(members):
    """F = −½ ‖θ − θ*‖² of members whose parameters have a leading pair axis."""
    return -0.5 * sum(((members[name] - target[name]) ** 2).reshape(len(members[name]), -1).sum(axis=1)
                      for name in members)


def drawn_noise(config, generation):
    """Every pair's ε, materialised from the Philox streams that the estimator regenerates."""
    pairs, drawn = np.arange(config.pairs), {}
    for name, value in theta.items():
        if not name.startswith("W"):
            drawn[name] = noise.normals(config.seed, generation, pairs, name, value.shape[0])
        elif isinstance(config, eggroll.Config):
            drawn[name] = eggroll.materialise(*(f.astype(np.float64) for f in eggroll.lowrank_factors(
                config.seed, generation, pairs, name, value.shape, config.rank)))
        else:
            drawn[name] = baselines.full_rank_noise(config.seed, generation, pairs, name, value.shape, np)
    return {name: value.astype(np.float64) for name, value in drawn.items()}


def predicted_error(rank):
    """E[P ‖g − G‖²] / ‖G‖²: d + 1, plus the low-rank kurtosis term of each weight matrix."""
    gradient = {name: target[name] - theta[name] for name in theta}
    excess = sum(2 / rank * (sum(g.shape) + 1) * (g ** 2).sum() for name, g in gradient.items()
                 if rank and name.startswith("W"))
    return true_gradient.size + 1 + excess / (true_gradient ** 2).sum()


estimators = {"EGGROLL r = 1": (1, eggroll.gradient), "EGGROLL r = 4": (4, eggroll.gradient),
              "full-rank ES": (None, baselines.full_rank_gradient)}
populations = [2 ** k for k in range(4, 15)]
repeats, sigma = 8, 0.1
cosine, error = {}, {}  # per estimator: (population, repeat)
for seed, (label, (rank, estimate)) in enumerate(estimators.items(), start=1):
    cosine[label], error[label] = np.empty((len(populations), repeats)), np.empty((len(populations), repeats))
    for i, population in enumerate(populations):
        for repeat in range(repeats):
            generation = repeats * i + repeat  # a fresh, independent draw for every estimate
            config = eggroll.Config(population, rank, sigma, seed, 1.0) if rank else \
                baselines.ESConfig(population, sigma, seed, 1.0)
            eps = drawn_noise(config, generation)
            f = fitness({k: theta[k] + sigma * eps[k] for k in theta}) - \
                fitness({k: theta[k] - sigma * eps[k] for k in theta})
            g = np.concatenate([v.ravel() for v in estimate(f, theta, config, generation).values()])
            cosine[label][i, repeat] = g @ true_gradient / (np.linalg.norm(g) * np.linalg.norm(true_gradient))
            error[label][i, repeat] = config.pairs * ((g - true_gradient) ** 2).sum() / (true_gradient ** 2).sum()
    # The error follows its prediction (5 standard errors over all estimates) and the estimate
    # turns towards the true gradient as the population grows.
    assert abs(error[label].mean() - predicted_error(rank)) <= 5 * standard_error(error[label].ravel()), label
    assert cosine[label][0].mean() < 0.3 and cosine[label][-1].mean() > 0.95, label

figure = Figure(figsize=(11, 4), layout="constrained")
cosine_ax, error_ax = figure.subplots(1, 2)
for colour, (label, (rank, _)) in enumerate(estimators.items()):
    style = dict(color=f"C{colour}")
    cosine_ax.errorbar(populations, cosine[label].mean(axis=1), cosine[label].std(axis=1), marker="o", capsize=3,
                       label=label, **style)
    cosine_ax.plot(populations, [1 / math.sqrt(1 + predicted_error(rank) / (p // 2)) for p in populations], ":",
                   **style)
    error_ax.errorbar(populations, error[label].mean(axis=1), error[label].std(axis=1) / math.sqrt(repeats),
                      marker="o", capsize=3, label=label, **style)
    error_ax.axhline(predicted_error(rank), linestyle=":", **style)
cosine_ax.set(xlabel="population 2P", ylabel="cosine(g, θ* − θ)",
              title=f"mean ± std of {repeats} estimates; dotted: 1/√(1 + error/P)")
error_ax.set(xlabel="population 2P", ylabel="P ‖g − G‖² / ‖G‖²",
             title="mean ± standard error; dotted: d + 1 (+ the low-rank term)")
for ax in (cosine_ax, error_ax):
    ax.set_xscale("log", base=2)
    ax.legend(fontsize=8)
save(figure, "3_gradient_cosine.png")
print("claim 3: mean cosine with θ* − θ at population " + "; ".join(
    f"{label} {cosine[label][0].mean():.3f} → {cosine[label][-1].mean():.3f}" for label in estimators)
    + f" ({populations[0]} → {populations[-1]}); P‖g − G‖²/‖G‖² measured (predicted) " + "; ".join(
    f"{label} {error[label].mean():.0f} ± {standard_error(error[label].ravel()):.0f} "
    f"({predicted_error(rank):.0f})" for label, (rank, _) in estimators.items()))

# %% [markdown]
# ## 4. Memory and time per generation
#
# The noise alive at once in a generation is r (m + n) numbers per pair and layer for EGGROLL
# against m n for vanilla ES (`resources.noise_bytes`, the bench's column): 1/15 at r = 4. Time is
# `bench.time_calls` (the median of 5 generations after a warm-up) of `eggroll.generation_step` and
# batched `baselines.es_generation_step` on the bench's inputs (random binary frames at N-MNIST's
# input density), here at B = 32 rather than the bench's 256 to stay short. Vanilla ES draws and
# multiplies all of E_p; EGGROLL draws r (m + n) numbers and multiplies x by B_p.

# %%
params, frames, labels = bench.bench_inputs(np)
frames, labels = frames[:, :32], labels[:32]
state, adam, lif = optim.init(params), optim.Adam(lr=0.01), snn.LIF()
populations = [16, 32, 64, 128, 256, 512]
methods = {"EGGROLL r = 1": ("eggroll", 1), "EGGROLL r = 4": ("eggroll", 4), "vanilla ES": ("es-batched", None)}
noise_megabytes = {label: [resources.noise_bytes(method, rank, p // 2) / 1e6 for p in populations]
                   for label, (method, rank) in methods.items()}
seconds = {label: [] for label in methods}
for population in populations:
    for label, (method, rank) in methods.items():
        if method == "eggroll":
            config = eggroll.Config(population, rank, sigma=0.1, seed=0, logit_scale=1.0)
            step = lambda: eggroll.generation_step(params, state, frames, labels, 0, config, adam, lif)
        else:
            config = baselines.ESConfig(population, sigma=0.1, seed=0, logit_scale=1.0)
            step = lambda: baselines.es_generation_step(params, state, frames, labels, 0, config, adam, lif)
        seconds[label].append(bench.time_calls(step, 5, np))
memory_ratio = [es / egg for es, egg in zip(noise_megabytes["vanilla ES"], noise_megabytes["EGGROLL r = 4"])]
speedup = seconds["vanilla ES"][-1] / seconds["EGGROLL r = 4"][-1]
assert min(memory_ratio) > 10, memory_ratio
assert speedup > 2, speedup

figure = Figure(figsize=(11, 4), layout="constrained")
memory_ax, time_ax = figure.subplots(1, 2)
for label in methods:
    memory_ax.plot(populations, noise_megabytes[label], marker="o", label=label)
    time_ax.plot(populations, seconds[label], marker="o", label=label)
memory_ax.set(ylabel="noise MB per generation", title=f"noise memory: ES / EGGROLL r = 4 = {memory_ratio[0]:.1f}")
time_ax.set(ylabel="seconds per generation", title=f"time at B = 32: ES / EGGROLL r = 4 = {speedup:.1f} at "
                                                   f"{populations[-1]}")
for ax in (memory_ax, time_ax):
    ax.set(yscale="log", xlabel="population 2P")
    ax.set_xscale("log", base=2)
    ax.set_xticks(populations, [str(p) for p in populations])
    ax.legend(fontsize=8)
save(figure, "4_memory_time.png")
print(f"claim 4: at population {populations[-1]}, noise MB " + ", ".join(
    f"{label} {noise_megabytes[label][-1]:.2f}" for label in methods) + "; seconds per generation (B = 32) "
    + ", ".join(f"{label} {seconds[label][-1]:.3f}" for label in methods)
    + f"; ES / EGGROLL r = 4: {memory_ratio[-1]:.1f}× the memory, {speedup:.1f}× the time")

# %% [markdown]
# ## 5. Training on the real recordings
#
# The loop of README's "One generation, from Python": each generation draws a minibatch, evaluates
# the population with Eq. (6), shapes fitnesses into centred ranks, forms Eqs. (7)–(8) and takes an
# Adam step, Eq. (9). EGGROLL r = 4, population 256, B = 64, with the settings the README's tuning
# chose (lr 0.1, σ 0.2, logit scale 1), on the 900 training recordings; every 10 generations
# `run.evaluate` scores the unperturbed network on the 100 validation recordings (one recording is
# one point of accuracy, so the curve is noisy).

# %%
generations, eval_every = 300, 10
params = snn.init_params(seed=1)
state, adam, lif = optim.init(params), optim.Adam(lr=0.1), snn.LIF()
config = eggroll.Config(population=256, rank=4, sigma=0.2, seed=1, logit_scale=1.0)
evaluated, accuracy, mean_fitness = [0], [run.evaluate(params, splits.val, lif, np)[0]], []
training_began = time.perf_counter()
for generation in range(generations):
    frames, labels = data.minibatch(splits.train, 64, np, seed=1, step=generation)
    params, state, stats = eggroll.generation_step(params, state, frames, labels, generation, config, adam, lif)
    mean_fitness.append(stats["mean_fitness"])
    if (generation + 1) % eval_every == 0:
        evaluated.append(generation + 1)
        accuracy.append(run.evaluate(params, splits.val, lif, np)[0])
training_seconds = time.perf_counter() - training_began
test_accuracy = run.evaluate(params, splits.test, lif, np)[0]
assert accuracy[-1] >= 0.5 and accuracy[-1] >= accuracy[0] + 0.3, accuracy  # chance is 0.1

figure = Figure(figsize=(11, 4), layout="constrained")
accuracy_ax, fitness_ax = figure.subplots(1, 2)
accuracy_ax.plot(evaluated, 100 * np.array(accuracy), marker=".")
accuracy_ax.axhline(10, color="gray", linestyle=":", label="chance")
accuracy_ax.set(xlabel="generation", ylabel="validation accuracy (%)", ylim=(0, 100),
                title=f"EGGROLL r = 4, 256 members: test {100 * test_accuracy:.0f} % at the end")
accuracy_ax.legend(fontsize=8)
fitness_ax.plot(np.arange(1, generations + 1), mean_fitness, linewidth=0.8)
fitness_ax.set(xlabel="generation", ylabel="mean fitness (−cross-entropy)", title="population's mean fitness")
save(figure, "5_training.png")
every_hundred = [(g, a) for g, a in zip(evaluated, accuracy) if g % 100 == 0]
print("claim 5: validation accuracy " + ", ".join(f"{100 * a:.0f} % at generation {g}" for g, a in every_hundred)
      + f"; test {100 * test_accuracy:.0f} % ({len(splits.test)} recordings); "
      f"{training_seconds / generations:.3f} s per generation")
print(f"figures in {args.out}; {time.perf_counter() - began:.0f} s in all")
