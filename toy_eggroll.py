"""EGGROLL on a toy you can see: an 8 × 6 matrix W climbing a quadratic whose optimum is known.

The companion of docs/derivation.md, which derives the step this file takes. The fitness is

    F(W) = -1/2 ||W - W*||_F^2,   its gradient G = W* - W,   its optimum W*,

and a generation is snn_eggroll.generation_step's, with the project's own functions and F in place of
the spiking network: draw the factors of P pairs (eggroll.lowrank_factors, Eq. (5)), score the 2P
members W + sigma E_p and W - sigma E_p, replace the fitnesses by their centred ranks
(eggroll.centred_ranks), take each pair's difference f_p (eggroll.pair_differences), form the step
g (eggroll.lowrank_gradient, Eq. (7)) and climb it with Adam (optim.ascend, Eq. (9)). With rank None
the noise is full rank (baselines.full_rank_noise, baselines.full_rank_gradient, Eq. (10)). E_p is
formed here (eggroll.materialise) because the members are scored as matrices; the spiking network
never forms it.

`OPENBLAS_NUM_THREADS=1 python toy_eggroll.py` trains with both kinds of noise (about 30 CPU
seconds at one BLAS thread), prints how far each got and draws the figure into toy_eggroll.png,
the staircase's beside it in toy_eggroll-staircase.png (`--out FILE.png` elsewhere, the staircase
in FILE-staircase.png; `make derivation` redraws docs/derivation.png and
docs/derivation-staircase.png, the figures of docs/derivation.md). Each figure's sha256 joins the
toy's record of the figures it drew in its folder, .toy-figures.sha256 (figure_record.py): a file
there that the record does not hold, a PNG too or a figure of the report or the lesson, is not the
toy's, and is refused before any work, never replaced.
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import math
    from dataclasses import dataclass, replace

    import numpy as np

    import baselines
    import eggroll
    import exits
    import figure_record
    import optim
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; nothing was written; run it again\n")
    sys.exit(130)

SHAPE = (8, 6)   # m × n
STREAM = "W1"    # the Philox stream (noise.PARAM_IDS) the toy's noise is drawn from
DRAWN = []       # the figures main() has written, once it has: what a Ctrl-C after them leaves


@dataclass(frozen=True)
class Toy:
    """The toy's settings: P pairs (2P members), rank r of the noise (None: full rank), sigma,
    Adam's learning rate, and one seed for the optimum W* and the noise."""
    pairs: int = 8
    rank: int | None = 1
    sigma: float = 0.1
    lr: float = 0.05
    seed: int = 1


def optimum(seed):
    """W*: an 8 × 6 matrix of 𝒩(0, 1) entries, float64."""
    return np.random.default_rng(seed).normal(size=SHAPE)


def fitness(members, target):
    """F = -1/2 ||W - W*||_F^2 of each matrix in `members` (..., m, n)."""
    return -0.5 * ((members - target) ** 2).sum(axis=(-2, -1))


def noise_of(toy, generation):
    """E_p of every pair, (P, m, n) float64, and the factors (A, B) it was formed from (None at full
    rank)."""
    pairs = np.arange(toy.pairs)
    if toy.rank is None:
        return baselines.full_rank_noise(toy.seed, generation, pairs, STREAM, SHAPE, np).astype(np.float64), None
    factors = eggroll.lowrank_factors(toy.seed, generation, pairs, STREAM, SHAPE, toy.rank)
    A, B = (factor.astype(np.float64) for factor in factors)
    return eggroll.materialise(A, B), (A, B)


def members_of(theta, perturbation, sigma):
    """The population in eggroll.py's order: member 2p is W + sigma E_p, 2p + 1 is W - sigma E_p."""
    return np.stack([theta + sigma * perturbation, theta - sigma * perturbation], axis=1).reshape(-1, *SHAPE)


def step(theta, target, toy, generation, ranked=True):
    """One generation's estimate g at W (m, n), Eq. (7) (Eq. (10) at full rank), from the pairs'
    differences of centred ranks, or of raw fitnesses if not `ranked`. Returns g and the population:
    its noise (P, m, n), every E_p or at full rank every ε_p, members (2P, m, n) and their centred ranks (2P,)."""
    perturbation, factors = noise_of(toy, generation)
    members = members_of(theta, perturbation, toy.sigma)
    scores = fitness(members, target)
    shaped = eggroll.centred_ranks(scores)
    f = eggroll.pair_differences(shaped if ranked else scores).astype(np.float64)
    if factors is None:
        config = baselines.ESConfig(2 * toy.pairs, toy.sigma, toy.seed, logit_scale=1.0)
        g = baselines.full_rank_gradient(f, {STREAM: theta}, config, generation)[STREAM]
    else:
        g = eggroll.lowrank_gradient(f, *factors, toy.sigma, toy.pairs)
    return g, {"noise": perturbation, "members": members, "shaped": shaped}


def train(toy, generations=300, keep2=0.999):
    """Adam up the centred-rank step from W = 0, mean_square kept at keep2 (Eq. (9)'s 0.999): the
    final W, ||W - W*||^2 before each generation and after the last, and after each update the root
    mean square over W's entries of Adam's divisor √mean_square (bias-corrected)."""
    target, theta = optimum(toy.seed), np.zeros(SHAPE)
    params, state = {STREAM: theta}, optim.init({STREAM: theta})
    adam = optim.Adam(toy.lr, 0.0, 0.9, keep2)  # weight decay 0; momentum kept at 0.9
    distances, divisors, mean_square = [], [], np.zeros(SHAPE)  # mean_square: Adam's, followed beside it
    for generation in range(generations):
        distances.append(float(((params[STREAM] - target) ** 2).sum()))
        g, _ = step(params[STREAM], target, toy, generation)
        params, state = optim.ascend(params, {STREAM: g}, state, adam)
        mean_square = keep2 * mean_square + (1 - keep2) * g ** 2
        divisors.append(math.sqrt((mean_square / (1 - keep2 ** (generation + 1))).mean()))
    distances.append(float(((params[STREAM] - target) ** 2).sum()))
    return params[STREAM], np.array(distances), np.array(divisors)


def mean_step(theta, target, toy, draws, ranked=True):
    """The mean of `draws` independent estimates at W (no update made; each draw's noise keyed by its
    number, as a generation's is), and its standard error per entry."""
    steps = np.stack([step(theta, target, toy, draw, ranked)[0] for draw in range(draws)])
    return steps.mean(axis=0), steps.std(axis=0, ddof=1) / math.sqrt(draws)


def ranked_step_length(pairs, sigma):
    """||𝔼[g]|| of the centred-rank step with Gaussian noise where F is linear near W (||G|| large
    against sigma): kappa_P / (2 sigma), kappa_P = (2 (P - 1)/sqrt(pi) + sqrt(2/pi)) / (2P - 1),
    1/sqrt(pi) for a large population (docs/derivation-further.md). It does not depend on ||G||."""
    kappa = (2 * (pairs - 1) / math.sqrt(math.pi) + math.sqrt(2 / math.pi)) / (2 * pairs - 1)
    return kappa / (2 * sigma)


def raw_variance_ratio(shape, rank):
    """The variance of the raw-difference step, summed over entries, with rank-r noise against
    full-rank noise, on a quadratic: one pair's term <G, E> E has summed variance
    ||G||^2 (mn + 1 + 2(m + n + 1)/r) against ||G||^2 (mn + 1) (E's fourth moments, as in
    quartic_means; at r = 1 the first is ((m + 2)(n + 2) - 1) ||G||^2)."""
    m, n = shape
    return (m * n + 1 + 2 * (m + n + 1) / rank) / (m * n + 1)


def cosine(first, second):
    return float((first * second).sum() / (np.linalg.norm(first) * np.linalg.norm(second)))


def staircase(theta):
    """A fitness with no gradient: -|theta| rounded to a whole number, flat between its jumps as a
    spike count is between the weights at which a spike appears or vanishes."""
    return -np.round(np.abs(theta))


EDGES = np.arange(10) + 0.5  # where round(|theta|) jumps by one, as far out as the figure goes


def smoothed_staircase(theta, sigma):
    """J(theta) = 𝔼 F(theta + sigma eps) and J'(theta), eps ~ 𝒩(0, 1), exactly: round(|theta + sigma eps|)
    counts the EDGES it reaches, each edge with probability Pr(|theta + sigma eps| >= edge) =
    Phi((theta - edge)/sigma) + Phi((-theta - edge)/sigma)."""
    theta = np.asarray(theta, dtype=float)[..., None]
    cdf = np.vectorize(lambda z: 0.5 * (1 + math.erf(z / math.sqrt(2))))
    pdf = lambda z: np.exp(-z ** 2 / 2) / math.sqrt(2 * math.pi)
    value = -(cdf((theta - EDGES) / sigma) + cdf((-theta - EDGES) / sigma)).sum(axis=-1)
    slope = -(pdf((theta - EDGES) / sigma) - pdf((theta + EDGES) / sigma)).sum(axis=-1) / sigma
    return value, slope


def staircase_slopes(theta, sigma, pairs=1000, seed=0):
    """At theta: J'(theta) and ES's estimate of it from `pairs` antithetic pairs,
    sum_p (F(theta + sigma eps_p) - F(theta - sigma eps_p)) eps_p / (2 P sigma), sections 1-2 with
    raw differences."""
    eps = np.random.default_rng(seed).standard_normal(pairs)
    estimate = ((staircase(theta + sigma * eps) - staircase(theta - sigma * eps)) * eps).sum() / (2 * pairs * sigma)
    return float(smoothed_staircase(theta, sigma)[1]), float(estimate)


def staircase_spread(theta, sigma, pairs=1000, seeds=500):
    """The standard error of staircase_slopes' estimate: its spread over `seeds` seeds."""
    return float(np.std([staircase_slopes(theta, sigma, pairs, seed)[1] for seed in range(seeds)]))


def checks(toy=Toy(), draws=2000):
    """The lines of the derivation's two pages that the figure does not show: the mean
    of `draws` steps of raw differences against G, in standard errors; their variance with low-rank
    noise against full-rank noise, measured and exact; and the step's length with centred ranks and
    with raw differences (full-rank noise) as W* is tripled."""
    theta, full_rank = np.zeros(SHAPE), replace(toy, rank=None)
    worst, variance = [], {}
    for label, setting in (("rank 1", toy), ("rank 2", replace(toy, rank=2)), ("full rank", full_rank)):
        mean, error = mean_step(theta, optimum(toy.seed), setting, draws, ranked=False)
        worst.append(f"{(np.abs(mean - optimum(toy.seed)) / error).max():.1f} ({label})")
        variance[setting.rank] = float((error ** 2).sum())  # a step's variance summed over entries, / draws
    ratios = ", ".join(f"{variance[rank] / variance[None]:.2f}x (rank {rank}; exact "
                       f"{raw_variance_ratio(SHAPE, rank):.2f}x)" for rank in (1, 2))
    lengths = {(scale, ranked): float(np.linalg.norm(mean_step(theta, scale * optimum(toy.seed), full_rank, draws,
                                                               ranked)[0]))
               for scale in (1, 3) for ranked in (True, False)}
    return [f"raw differences, mean of {draws} steps at W = 0: at most " + ", ".join(worst)
            + " standard errors from G at any entry",
            f"raw differences, variance of one step at W = 0 summed over entries, against full-rank noise's: {ratios}; "
            f"exact for a 64 x 2312 layer {raw_variance_ratio((64, 2312), 1):.2f}x (rank 1)",
            f"W* tripled, full-rank noise: step length {lengths[1, True]:.2f} -> {lengths[3, True]:.2f} with centred "
            f"ranks, {lengths[1, False]:.1f} -> {lengths[3, False]:.1f} with raw differences"]


def across_check(toy=Toy(), draws=20000):
    """The line of docs/derivation-further.md, section 1, on the part of the mean centred-rank step across G
    at W = 0, on the toy's F and on the linear F(W) = <W*, W> (gradient W* everywhere), with rank-1
    and with full-rank noise: the mean of `draws` steps, its cosine with G, the length of its part
    across G, and the length that part would have from sampling noise alone (the root of the summed
    variances of a single step's across part, over `draws`). Section 4's argument, for Gaussian
    noise, puts the mean step along G; at rank 1 the across part is larger than the noise explains.
    The draws are `draws` populations of P pairs, one Philox pair each; ranks by sorting (the
    fitnesses are continuous, so no ties)."""
    target, theta = optimum(toy.seed), np.zeros(SHAPE)
    along = target / np.linalg.norm(target)
    parts = []
    for name, score in (("toy's F", lambda members: fitness(members, target)),
                        ("linear F", lambda members: (members * target).sum(axis=(-2, -1)))):
        for label, rank in (("rank 1", 1), ("full rank", None)):
            noise, _ = noise_of(replace(toy, rank=rank, pairs=toy.pairs * draws), 0)
            noise = noise.reshape(draws, toy.pairs, *SHAPE)
            scores = score(np.stack([theta + toy.sigma * noise, theta - toy.sigma * noise], axis=2))
            shaped = np.argsort(np.argsort(scores.reshape(draws, -1), axis=1), axis=1) / (2 * toy.pairs - 1) - 0.5
            f = shaped[:, 0::2] - shaped[:, 1::2]
            steps = np.einsum("...p,...pmn->...mn", f, noise) / (2 * toy.pairs * toy.sigma)  # one step a draw
            across = steps - (steps * along).sum(axis=(1, 2))[:, None, None] * along
            mean, expected = steps.mean(axis=0), math.sqrt(across.var(axis=0, ddof=1).sum() / draws)
            length, off = np.linalg.norm(mean), np.linalg.norm(across.mean(axis=0))
            parts.append(f"{name} {label}: cosine {cosine(mean, target):.4f}, length {length:.2f}, across G "
                         f"{off:.3f} = {100 * off / length:.1f} % of it (noise alone {expected:.3f})")
    return [f"mean of {draws:,} centred-rank steps at W = 0, its part across G: " + "; ".join(parts)]


def quartic_steps(toy, fitness, sigma=0.5, pairs=1000, draws=400):
    """Off quadratics the low-rank step is biased: the mean of `draws` raw-difference steps of
    `fitness` (members (..., m, n) -> (...)) at W = W*, each from `pairs` pairs (no update made; each
    draw's noise keyed by its number, as a generation's is), and its standard error per entry."""
    theta, setting = optimum(toy.seed), replace(toy, sigma=sigma, pairs=pairs)
    steps = []
    for draw in range(draws):
        perturbation, factors = noise_of(setting, draw)
        f = eggroll.pair_differences(fitness(members_of(theta, perturbation, sigma))).astype(np.float64)
        if factors is None:
            config = baselines.ESConfig(2 * pairs, sigma, toy.seed, logit_scale=1.0)
            steps.append(baselines.full_rank_gradient(f, {STREAM: theta}, config, draw)[STREAM])
        else:
            steps.append(eggroll.lowrank_gradient(f, *factors, sigma, pairs))
    steps = np.stack(steps)
    return theta, steps.mean(axis=0), steps.std(axis=0, ddof=1) / math.sqrt(draws)


def entry_quartic(members):
    """F = -1/4 sum_ij W_ij^4: each entry on its own."""
    return -0.25 * ((members ** 2) ** 2).sum(axis=(-2, -1))  # W^4 as two squares: NumPy squares fast


def norm_quartic(members):
    """F = -1/4 |W|^4 = -1/4 (sum_ij W_ij^2)^2: every entry with every other."""
    return -0.25 * (members ** 2).sum(axis=(-2, -1)) ** 2


def quartic_means(theta, sigma, rank):
    """The exact mean raw-difference steps, Gaussian noise (the smoothed gradient) and E = A Bᵀ/sqrt(r)
    (rank None: Gaussian), of both quartics, from E's fourth moments (docs/derivation-further.md, section 2):
      entry quartic: -(W^3 + sigma^2 𝔼[E_ij^4] W), 𝔼[E_ij^4] = 3 + 6/r (3 for Gaussian noise);
      norm quartic:  -(|W|^2 + sigma^2 (mn + 2 + 2(m + n + 1)/r)) W, of which 6/r is the same
                     fourth moment of an entry and 2(m + n - 2)/r the entries sharing its row or
                     column (𝔼[E_ij^2 E_ij'^2] = 1 + 2/r, not 1: they share a_i, row i of A_p)."""
    m, n = theta.shape
    excess_entry, excess_norm = (6 / rank, 2 * (m + n + 1) / rank) if rank else (0, 0)
    norm = (theta ** 2).sum()
    return {"entry": -(theta ** 3 + sigma ** 2 * (3 + excess_entry) * theta),
            "norm": -(norm + sigma ** 2 * (m * n + 2 + excess_norm)) * theta}


def quartic_check(toy=Toy(), sigma=0.5, pairs=1000, draws=200):
    """The lines of docs/derivation-further.md's section 3: how far the mean low-rank step lies from the
    smoothed gradient on each quartic, beside the exact expression, and on the norm quartic the
    part that the entries' own fourth moment (the tails) accounts for."""
    lines = []
    for name, fitness, formula in (("entry", entry_quartic, "F = -1/4 sum W^4"),
                                   ("norm", norm_quartic, "F = -1/4 |W|^4")):
        parts = []
        for label, rank in (("rank 1", 1), ("rank 2", 2), ("rank 6", 6), ("full rank", None)):
            theta, mean, _ = quartic_steps(replace(toy, rank=rank), fitness, sigma, pairs, draws)
            smoothed = quartic_means(theta, sigma, None)[name]
            gap = lambda mean_step: f"{100 * np.linalg.norm(mean_step - smoothed) / np.linalg.norm(smoothed):.1f} %"
            tails = "" if name == "entry" or rank is None else \
                f", tails alone {gap(smoothed - sigma ** 2 * 6 / rank * theta)}"
            parts.append(f"{gap(mean)} ({label}; exact {gap(quartic_means(theta, sigma, rank)[name])}{tails})")
        lines.append(f"quartic {formula} at W*, sigma {sigma}, mean of {draws} raw-difference steps of "
                     f"{pairs:,} pairs each: from the smoothed gradient by " + ", ".join(parts))
    return lines


def seeds_check(seeds=range(1, 11), generations=300, long=2000):
    """The lines of docs/derivation-further.md on rank 1's lead: each seed's fall of ||W - W*||^2 in
    `generations` with rank-1 and with full-rank noise, the same settings otherwise; then, the same
    runs carried on to `long`, where each settles: its mean distance from generation 1000 on."""
    falls, settled = [], []
    for seed in seeds:
        distances = [train(replace(Toy(), seed=seed, rank=rank), long)[1] for rank in (1, None)]
        falls.append([run[0] / run[generations] for run in distances])
        settled.append([run[1000:].mean() for run in distances])
    ahead = sum(lowrank > full for lowrank, full in falls)
    ratios = [lowrank / full for lowrank, full in falls]
    full_lower = sum(full < lowrank for lowrank, full in settled)
    return [f"seeds {seeds[0]}-{seeds[-1]}, {generations} generations: ||W - W*||^2 falls "
            f"{min(fold[0] for fold in falls):.0f}- to {max(fold[0] for fold in falls):.0f}-fold with rank-1 noise, "
            f"{min(fold[1] for fold in falls):.0f}- to {max(fold[1] for fold in falls):.0f}-fold with full-rank noise; "
            f"rank 1 ends closer on {ahead} of {len(falls)} seeds, by {min(ratios):.1f}x to {max(ratios):.1f}x",
            f"the same runs carried on to {long} generations: from generation 1000 on ||W - W*||^2 averages "
            f"{np.median([level[0] for level in settled]):.3f} with rank-1 noise, "
            f"{np.median([level[1] for level in settled]):.3f} with full-rank noise (medians over the seeds); "
            f"full rank settles closer on {full_lower} of {len(settled)} seeds"]


def floor_check(toy=Toy(), long=2000):
    """The lines of docs/derivation-further.md on why a run bottoms out and rises: one long run at the
    figure's settings, Adam's divisor √mean_square along it, and the same run with mean_square kept
    at 0.99 (a memory of about 100 generations, not 1,000) and with half the learning rate."""
    _, distances, divisors = train(toy, long)
    _, short_memory, _ = train(toy, long, keep2=0.99)
    _, half_lr, _ = train(replace(toy, lr=toy.lr / 2), long)
    return [f"rank 1, lr {toy.lr}: ||W - W*||^2 {distances[150]:.3f} at generation 150, {distances[300]:.3f} at 300, "
            f"{distances[1000:].mean():.3f} on average from 1000 to {long}; Adam's divisor sqrt(mean_square), "
            f"root mean square over entries, {divisors[9]:.2f} at 10, {divisors[299]:.2f} at 300, "
            f"{divisors[-1]:.2f} at {long}",
            f"mean_square kept at 0.99 (for 0.999): {short_memory[300]:.3f} at 300, {short_memory[1000:].mean():.3f} "
            f"from 1000 on; lr {toy.lr / 2}: {half_lr[1000:].mean():.4f} from 1000 on"]


# What the figure of docs/derivation.md shows and the lines printed beside it, from the functions above.


def staircase_view(theta0=1.2, sigmas=(0.1, 0.6)):
    """The staircase F and its smoothing J at each sigma on theta from -3 to 3, and at theta0, for each
    sigma, J(theta0), J'(theta0), ES's estimate of J'(theta0) from 1,000 pairs and that estimate's
    standard error."""
    theta = np.linspace(-3, 3, 1201)
    return {"theta": theta, "F": staircase(theta), "theta0": theta0,
            "J": {sigma: smoothed_staircase(theta, sigma)[0] for sigma in sigmas},
            "at theta0": {sigma: (smoothed_staircase(theta0, sigma)[0], *staircase_slopes(theta0, sigma),
                              staircase_spread(theta0, sigma)) for sigma in sigmas}}


def plane_view(gradient, g, members, theta, vectors):
    """The plane of G and of g's part across G around W: where the members lie in it, F on a
    101 × 101 grid of it, and the direction of each of `vectors` in it. The grid reaches `span`
    either side of W, 1.1 times the farthest member's coordinate, so that every member shows."""
    along = gradient / np.linalg.norm(gradient)
    across = g - (g * along).sum() * along
    across /= np.linalg.norm(across)
    offsets = members - theta
    coordinates = ((offsets * along).sum(axis=(1, 2)), (offsets * across).sum(axis=(1, 2)))
    span = 1.1 * max(np.abs(coordinate).max() for coordinate in coordinates)
    grid_along, grid_across = np.meshgrid(np.linspace(-span, span, 101), np.linspace(-span, span, 101))
    return {"members": coordinates,
            "grid": (grid_along, grid_across),
            "F": -0.5 * ((grid_along - np.linalg.norm(gradient)) ** 2 + grid_across ** 2),
            "directions": [np.array([(vector * along).sum(), (vector * across).sum()]) for vector in vectors],
            "span": span}


def figure_numbers(toy=Toy(), generations=300, draws=2000):
    """What the figure shows, by name. At W = 0, where G = W* ("G"): one generation's step ("g", of rank
    "rank") and population (step's) with the toy's noise and with full-rank noise ("full population");
    the cosines with G of both steps and of the mean of `draws` steps with each noise, the mean steps'
    lengths beside the Gaussian prediction, and the population in the plane of G and g ("plane").
    Then ||W - W*||^2 over `generations` of training with each noise ("runs") and how many fold it
    fell ("fall"); the staircase ("staircase"); and the settings themselves."""
    target = optimum(toy.seed)
    theta = np.zeros(SHAPE)
    gradient = target - theta
    lowrank_g, population = step(theta, target, toy, 0)
    full_g, full_population = step(theta, target, replace(toy, rank=None), 0)
    mean_g = {label: mean_step(theta, target, setting, draws)[0]
              for label, setting in (("rank 1", toy), ("full rank", replace(toy, rank=None)))}
    runs = {"EGGROLL r = 1": train(toy, generations)[1], "full-rank ES": train(replace(toy, rank=None), generations)[1]}
    return {"G": gradient, "g": lowrank_g, "rank": np.linalg.matrix_rank(lowrank_g), "population": population,
            "full population": full_population,
            "cosine": {"g": cosine(lowrank_g, gradient), "full g": cosine(full_g, gradient),
                       **{label: cosine(g, gradient) for label, g in mean_g.items()}},
            "length": {label: np.linalg.norm(g) for label, g in mean_g.items()},
            "predicted length": ranked_step_length(toy.pairs, toy.sigma),
            "plane": plane_view(gradient, lowrank_g, population["members"], theta,
                                (gradient, lowrank_g, mean_g["rank 1"])),
            "runs": runs, "fall": {label: distances[0] / distances[-1] for label, distances in runs.items()},
            "staircase": staircase_view(), "toy": toy, "generations": generations, "draws": draws}


def figure_lines(numbers):
    """The lines printed beside the figure, from figure_numbers' `numbers`."""
    stairs, generations, draws = numbers["staircase"], numbers["generations"], numbers["draws"]
    lines = [f"staircase F = -round(|theta|) at theta = {stairs['theta0']}: F' = 0; " + ", ".join(
                 f"J' = {exact:.3f}, ES from 1,000 pairs {estimate:.3f} +- {error:.3f} (sigma {sigma})"
                 for sigma, (_, exact, estimate, error) in stairs["at theta0"].items()),
             f"one generation at W = 0: step g of rank {numbers['rank']}, cosine with G "
             f"{numbers['cosine']['g']:.3f} (rank-1 noise), {numbers['cosine']['full g']:.3f} (full-rank noise)",
             f"mean of {draws} steps at W = 0: cosine with G " + ", ".join(
                 f"{numbers['cosine'][label]:.4f} ({label}), length {length:.2f}"
                 for label, length in numbers["length"].items())
             + f" (Gaussian prediction {numbers['predicted length']:.2f})"]
    lines += [f"{label}: ||W - W*||^2 from {distances[0]:.2f} to {distances[-1]:.4f} in {generations} generations "
              f"({numbers['fall'][label]:.0f}-fold)" for label, distances in numbers["runs"].items()]
    return lines


# The figure of docs/derivation.md: it draws what figure_numbers computed.


def draw(numbers):
    """The figure of figure_numbers' `numbers`: one generation at W = 0, the mean of many steps there,
    and training with each kind of noise (the staircase has a figure of its own: draw_staircase_figure)."""
    toy, generations, draws = numbers["toy"], numbers["generations"], numbers["draws"]
    gradient, lowrank_g, population, full_population = (numbers[name] for name in ("G", "g", "population",
                                                                                     "full population"))
    from matplotlib.figure import Figure  # here, not with the modules above: a refused command answers without it
    figure = Figure(figsize=(16, 8.4), layout="constrained")
    figure.suptitle(f"Rank-1 noise, full-rank steps: {toy.pairs} pairs of rank-1 perturbations of the 8 × 6 toy "
                    f"give a step of rank {numbers['rank']},\nwhose mean over {draws} draws lies close to the true "
                    f"gradient (cosine {numbers['cosine']['rank 1']:.3f}); Adam on it closes ‖W − W*‖² "
                    f"{numbers['fall']['EGGROLL r = 1']:.0f}-fold in {generations} generations")
    top, bottom = figure.subfigures(2, 1, height_ratios=[1, 1.15])
    heat = top.subplots(1, 4)
    first = 0  # the first pair, E_1 and ε_1, is index 0 of the arrays
    scale = np.abs(np.concatenate([population["noise"][first].ravel(), full_population["noise"][first].ravel()])).max()
    for ax, matrix, title in (
            (heat[0], population["noise"][first], "EGGROLL's noise of the first pair, E_1 = A_1 B_1ᵀ:\n"
                                                  "rank 1, rows multiples of one"),
            (heat[1], full_population["noise"][first], "full-rank noise of the first pair, ε_1:\n"
                                                       r"48 independent $\mathcal{N}(0, 1)$, rank 6"),
            (heat[2], lowrank_g, f"one step g, {toy.pairs} rank-1 pairs,\nEq. (7): rank {numbers['rank']}"),
            (heat[3], gradient, "the true gradient\nG = W* − W, at W = 0")):
        limit = scale if ax in heat[:2] else np.abs(matrix).max()
        image = ax.imshow(matrix, cmap="RdBu_r", vmin=-limit, vmax=limit)
        ax.set_title(title, fontsize=10)
        ax.set(xticks=[], yticks=[])
        top.colorbar(image, ax=ax, shrink=0.8)
    plane_ax, curve_ax = bottom.subplots(1, 2)
    draw_plane(plane_ax, bottom, numbers)
    for label, distances in numbers["runs"].items():
        curve_ax.plot(distances, label=label)
    curve_ax.set(yscale="log", xlabel="generation", ylabel="‖W − W*‖²  (= −2F)",
                 title=f"training: Adam (lr {toy.lr}) up the centred-rank step,\n{toy.pairs} pairs a generation")
    curve_ax.legend(fontsize=8)
    return figure


def draw_plane(ax, subfigure, numbers):
    """The population in the plane of G and of g's part across G (plane_view's), pairs joined and
    coloured by centred rank, F's contours, and the directions of G, g and the mean step as arrows
    of one length, G's drawn last so that the mean step's, nearly along it, does not hide it."""
    plane, toy, draws = numbers["plane"], numbers["toy"], numbers["draws"]
    on_along, on_across = plane["members"]
    span = plane["span"]
    ax.contour(*plane["grid"], plane["F"], levels=12, colors="0.75", linewidths=0.7)
    for p in range(toy.pairs):
        ax.plot(on_along[2 * p:2 * p + 2], on_across[2 * p:2 * p + 2], color="0.85", linewidth=0.8, zorder=1)
    dots = ax.scatter(on_along, on_across, c=numbers["population"]["shaped"], cmap="coolwarm", s=45, edgecolor="k",
                      zorder=2)
    subfigure.colorbar(dots, ax=ax, label="centred rank c of the member's fitness")
    arrow = 0.7 * span
    gradient_direction, g_direction, mean_direction = plane["directions"]
    for direction, colour, label, width in ((mean_direction, "C1", f"mean of {draws} steps", 6),
                                            (g_direction, "C2", "this generation's step g", 2),
                                            (gradient_direction, "k", "true gradient G", 1.2)):
        direction = direction * (arrow / np.linalg.norm(direction))
        ax.annotate("", direction, (0, 0), arrowprops=dict(arrowstyle="->", color=colour, linewidth=width))
        ax.plot([], [], color=colour, linewidth=width, label=label)
    ax.set(aspect="equal", xlim=(-span, span), ylim=(-span, span),
           xlabel="along G (the fitness rises to the right)", ylabel="across G, towards g",
           title=f"one generation: all {2 * toy.pairs} members W ± σE_p (σ = {toy.sigma}), pairs joined,\n"
                 f"coloured by centred rank; contours of F; arrows: directions only, not to scale")
    ax.legend(fontsize=7, loc="upper left")


def draw_staircase_figure(numbers):
    """The staircase's figure, drawn beside the toy's: F, its smoothings J and ES's slopes."""
    from matplotlib.figure import Figure
    figure = Figure(figsize=(7, 4.6), layout="constrained")
    draw_staircase(figure.subplots(), numbers["staircase"])
    return figure


def staircase_path(out):
    """Where the staircase's figure goes: beside the toy's figure `out`, its name's stem + -staircase."""
    return out.with_name(f"{out.stem}-staircase{out.suffix}")


def draw_staircase(ax, stairs):
    """The staircase, its smoothings and ES's slope estimates at theta0 (staircase_view's)."""
    theta, theta0 = stairs["theta"], stairs["theta0"]
    ax.plot(theta, stairs["F"], color="0.3", linewidth=2, label="F = −round(|θ|): no gradient")
    for (sigma, (height, exact, estimate, _)), colour in zip(stairs["at theta0"].items(), ("C0", "C3")):
        ax.plot(theta, stairs["J"][sigma], color=colour, label=f"J, σ = {sigma}: J′({theta0}) = {exact:.2f}")
        ax.plot([theta0 - 0.6, theta0 + 0.6], [height - 0.6 * estimate, height + 0.6 * estimate], color=colour,
                linestyle="--", linewidth=1.5)
    ax.plot([], [], color="0.5", linestyle="--", label="ES's slope from 1,000 pairs")
    ax.set(xlabel="θ", ylabel="fitness", title="ES climbs J(θ) = 𝔼 F(θ + σε), smooth\nwhere F is a staircase")
    ax.legend(fontsize=8, loc="lower center")


def main(argv=None):
    parser = exits.Parser(prog="toy_eggroll.py",
                          description="EGGROLL on an 8 x 6 quadratic toy: trains, prints, draws the figure.")
    parser.add_argument("--out", type=exits.figure_file, default="toy_eggroll.png",
                        help="the figure's .png file (default: toy_eggroll.png), the staircase's drawn beside it "
                             "(toy_eggroll-staircase.png); their sha256 join the toy's "
                             "record .toy-figures.sha256 beside them, and a file there that the record does not hold "
                             "(one the toy did not draw, a PNG too, or a figure of the report or the lesson) is "
                             "never overwritten")
    args = parser.parse_args(argv)
    outs = [args.out, staircase_path(args.out)]
    for out in outs:
        figure_record.refuse_unrecorded(out, "the toy", "give another --out", figure_record.TOY_RECORD)
    numbers = figure_numbers()
    # the figures first: if the lines cannot be printed, they are there
    for out, drawing in zip(outs, (draw, draw_staircase_figure)):
        with figure_record.writing(out, figure_record.TOY_RECORD) as temporary:
            drawing(numbers).savefig(temporary, format="png", dpi=72)
        DRAWN.append(out)
    saved = f"the figures are in {outs[0]} and {outs[1]}"
    exits.say("\n".join(figure_lines(numbers)), saved)
    for check in (checks, across_check, seeds_check, floor_check, quartic_check):  # each printed once measured
        exits.say("\n".join(check()), saved)
    exits.say(f"figures: {outs[0]}, {outs[1]}", saved)


def after_interruption():
    """What a Ctrl-C leaves: nothing, the toy's figure alone, or both figures with the checks cut short."""
    if len(DRAWN) == 2:
        return f"the figures are in {DRAWN[0]} and {DRAWN[1]}, the checks after them cut short; run it again for them"
    if DRAWN:
        return (f"the figure is in {DRAWN[0]}, the staircase's figure not drawn and the checks not made; run it "
                f"again for them")
    return "nothing was written; run it again"


if __name__ == "__main__":  # Ctrl-C, SIGTERM, an unwritable figure or output: one line (exits.py)
    exits.leave(exits.handled(main, after_interruption))
