"""EGGROLL's gradient estimator against the full-rank ES baseline of baselines.py, and the ES baseline's
two evaluation modes against each other.

Gradient statistics use fixed seeds; every tolerance is 5 standard errors of the quantity compared,
estimated from the N independent generations drawn (stated in each docstring).
"""
import dataclasses
import json
import math
import re

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from dataclasses import replace

import baselines
import eggroll
import noise
import optim
import snn
import snn_eggroll
from test_eggroll import es_config, member_noise, record_simulation


# ---------------------------------------------------------------------------------------------
# Helpers: the two estimators, fed the raw fitness differences of an objective

def full_rank_noise(config, generation, params):
    """The ES baseline's perturbation of every parameter for all pairs, every entry N(0, 1)."""
    pairs = np.arange(config.pairs)
    drawn = {}
    for name, value in params.items():
        if name.startswith("W"):
            drawn[name] = baselines.full_rank_noise(config.seed, generation, pairs, name, value.shape, np).astype(np.float64)
        else:
            drawn[name] = noise.normals(config.seed, generation, pairs, name, value.shape[0]).astype(np.float64)
    return drawn


def lowrank_estimate(f, params, config, generation):
    """EGGROLL's g of any named parameters, through the generic interface's population."""
    es = eggroll.Eggroll(config.population, config.rank, config.sigma, config.seed)
    return eggroll.gradient(f, es.population_of(eggroll.State(params, {}, generation), slice(None)), config.pairs)


ESTIMATORS = {
    "eggroll": (member_noise, lowrank_estimate),
    "full_rank": (full_rank_noise, baselines.full_rank_gradient),
}


def estimates(kind, objective, params, config, generations):
    """The project's gradient estimate for each generation, from raw (not rank-shaped) antithetic
    fitness differences f_p = F(theta + sigma eps_p) - F(theta - sigma eps_p): {name: (N, *shape)}.

    `objective` maps a params dict whose values have a leading pair axis to the P fitnesses."""
    make_noise, estimate = ESTIMATORS[kind]
    out = {name: [] for name in params}
    for generation in range(generations):
        noise = make_noise(config, generation, params)
        f = (objective({k: params[k] + config.sigma * noise[k] for k in params})
             - objective({k: params[k] - config.sigma * noise[k] for k in params}))
        for name, g in estimate(f, params, config, generation).items():
            out[name].append(np.asarray(g, dtype=np.float64))
    return {name: np.stack(v) for name, v in out.items()}


def kurtosis_term(G, H, rank):
    """(2/r) [tr(G^T G H^T H) + tr(G^T H G^T H) + tr(G^T H H^T G)]: the excess of E[<G,E>^2 <H,E>^2]
    for E = (1/sqrt r) sum_k a_k b_k^T over the Gaussian value |G|^2 |H|^2 + 2 <G,H>^2."""
    return (2 / rank) * (np.trace(G.T @ G @ H.T @ H) + np.trace(G.T @ H @ G.T @ H) + np.trace(G.T @ H @ H.T @ G))


def gaussian_fourth(G, H):
    """E[<G,E>^2 <H,E>^2] for E with iid N(0, 1) entries (Isserlis): |G|^2 |H|^2 + 2 <G,H>^2."""
    return (G ** 2).sum() * (H ** 2).sum() + 2 * (G * H).sum() ** 2


# ---------------------------------------------------------------------------------------------
# The analytic moments used below, checked by plain Monte Carlo first

def test_fourth_moment_formula_by_monte_carlo():
    """The formula E[X^2 Y^2] = Gaussian value + kurtosis_term for X = <G,E>, Y = <H,E>,
    E = (1/sqrt r) sum_k a_k b_k^T, r = 2, checked against 10^6 plain NumPy draws (independent of
    the project's noise). Derivation: X = sum_k X_k / sqrt r with independent rank-1 terms; the
    terms with all four indices equal give (1/r) E[X_1^2 Y_1^2], and for one rank-1 term, conditioning
    on b, E[X_1^2 Y_1^2] = E[|Gb|^2 |Hb|^2 + 2 ((Gb).(Hb))^2] = |G|^2|H|^2 + 2 tr(G'G H'H)
    + 2 <G,H>^2 + 2 tr(G'H G'H) + 2 tr(G'H H'G). Tolerance: 5 SE, SE = sample std of X^2 Y^2 / 10^3.
    The Gaussian value alone is rejected (it lies > 10 SE away), so the term is really there.
    """
    rng = np.random.default_rng(1)
    m, n, r, N = 2, 3, 2, 1_000_000
    G, H = rng.normal(size=(m, n)), rng.normal(size=(m, n))
    a, b = rng.normal(size=(N, r, m)), rng.normal(size=(N, r, n))
    E = np.einsum("pkm,pkn->pmn", a, b) / math.sqrt(r)
    xy2 = np.einsum("pmn,mn->p", E, G) ** 2 * np.einsum("pmn,mn->p", E, H) ** 2
    se = xy2.std() / math.sqrt(N)
    assert abs(xy2.mean() - (gaussian_fourth(G, H) + kurtosis_term(G, H, r))) <= 5 * se
    assert abs(xy2.mean() - gaussian_fourth(G, H)) > 10 * se


# ---------------------------------------------------------------------------------------------
# Linear objective: unbiasedness and the covariance of both estimators

LINEAR_CASES = [(2, 3), (3, 3), (1, 4)]  # (m, n); rank r = min(m, n)


@pytest.mark.parametrize("m, n", LINEAR_CASES)
def test_estimators_on_a_linear_objective(m, n):
    """F(theta) = <G, theta>, r = min(m, n), raw fitness differences, P = 64 pairs per generation,
    N = 3000 generations of each estimator (eggroll.gradient, baselines.full_rank_gradient),
    with different seeds so the two samples are independent. For one pair g = <G,E> E, so:

    1. Both are unbiased for G: the mean of the N estimates is within 5 SE of G entrywise,
       SE = sample std of the estimates / sqrt(N).
    2. For a fixed random direction H, Var <H, g> per pair = E[<G,E>^2 <H,E>^2] - <G,H>^2, with
       the Gaussian fourth moment for ES and Gaussian + kurtosis_term for EGGROLL. A generation
       averages P iid pairs, so P (<H, g_gen> - <G,H>)^2 is an unbiased sample of the per-pair
       variance; its mean over N generations is within 5 SE of the analytic value,
       SE = sample std / sqrt(N).
    3. The two variances differ by exactly kurtosis_term (within 5 SE of the difference,
       SE = sqrt(SE_eggroll^2 + SE_es^2)): low-rank noise is not Gaussian - its entries have excess
       kurtosis 6/r - and the difference vanishes as O(1/r). The term is > 8 SE here (about 11 SE
       for these seeds), so equal covariances would miss the 5-SE window by >= 3 SE and fail.
    """
    rng = np.random.default_rng(10 * m + n)
    G, H = rng.normal(size=(m, n)), rng.normal(size=(m, n))
    theta = {"W1": rng.normal(size=(m, n))}
    pairs, N, rank = 64, 3000, min(m, n)

    def objective(p):
        return (G * p["W1"]).sum(axis=(-2, -1))

    variances, standard_errors = {}, {}
    for kind, seed in (("eggroll", 1), ("full_rank", 2)):
        config = es_config(population=2 * pairs, rank=rank, sigma=0.05, seed=seed)
        g = estimates(kind, objective, theta, config, N)["W1"]
        se_mean = g.std(axis=0, ddof=1) / math.sqrt(N)
        assert np.all(np.abs(g.mean(axis=0) - G) <= 5 * se_mean), kind
        u = pairs * (np.einsum("gmn,mn->g", g, H) - (G * H).sum()) ** 2
        variances[kind], standard_errors[kind] = u.mean(), u.std(ddof=1) / math.sqrt(N)

    gaussian = gaussian_fourth(G, H) - (G * H).sum() ** 2
    term = kurtosis_term(G, H, rank)
    assert abs(variances["full_rank"] - gaussian) <= 5 * standard_errors["full_rank"]
    assert abs(variances["eggroll"] - (gaussian + term)) <= 5 * standard_errors["eggroll"]
    se_difference = math.hypot(standard_errors["eggroll"], standard_errors["full_rank"])
    assert abs((variances["eggroll"] - variances["full_rank"]) - term) <= 5 * se_difference
    assert term > 8 * se_difference


def test_kurtosis_term_vanishes_as_rank_grows():
    """The extra covariance term is exactly (2/r) times a fixed quantity, so it shrinks as 1/r:
    r * kurtosis_term is the same for r = 1..8 (float64, relative 1e-12) and positive for G = H."""
    rng = np.random.default_rng(0)
    G, H = rng.normal(size=(8, 9)), rng.normal(size=(8, 9))
    scaled = [r * kurtosis_term(G, H, r) for r in range(1, 9)]
    assert np.allclose(scaled, scaled[0], rtol=1e-12)
    assert kurtosis_term(G, G, 3) > 0


# ---------------------------------------------------------------------------------------------
# Quadratic objective: both estimate the true gradient

def test_estimators_agree_on_a_quadratic_objective():
    """F(theta) = -1/2 (|W - W*|^2 + |b - b*|^2) with W 3x4 and b (3,), r = 3, P = 8 pairs, N = 1500
    generations each (different seeds: independent samples). Antithetic pairs cancel the quadratic
    term exactly, so both estimators are unbiased for the true gradient (W* - W, b* - b).
    Checks, entrywise, with SE = sample std / sqrt(N) of each estimator:
      each mean within 5 SE of the true gradient, and the two means within
      5 sqrt(SE_eggroll^2 + SE_es^2) of each other.
    """
    rng = np.random.default_rng(7)
    params = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=3)}
    target = {"W1": rng.normal(size=(3, 4)), "b1": rng.normal(size=3)}
    true_gradient = {k: target[k] - params[k] for k in params}
    pairs, N = 8, 1500

    def objective(p):
        return -0.5 * (((p["W1"] - target["W1"]) ** 2).sum(axis=(-2, -1)) + ((p["b1"] - target["b1"]) ** 2).sum(axis=-1))

    means, ses = {}, {}
    for kind, seed in (("eggroll", 3), ("full_rank", 4)):
        config = es_config(population=2 * pairs, rank=3, sigma=0.1, seed=seed)
        g = estimates(kind, objective, params, config, N)
        for name in params:
            means[kind, name] = g[name].mean(axis=0)
            ses[kind, name] = g[name].std(axis=0, ddof=1) / math.sqrt(N)
            assert np.all(np.abs(means[kind, name] - true_gradient[name]) <= 5 * ses[kind, name]), (kind, name)
    for name in params:
        difference = np.abs(means["eggroll", name] - means["full_rank", name])
        assert np.all(difference <= 5 * np.hypot(ses["eggroll", name], ses["full_rank", name])), name


def test_lowrank_gradient_is_the_weighted_sum_of_materialised_perturbations():
    """Eq. (7) without materialising equals sum_p f_p E_p / (2 P sigma) with E_p materialised, for
    random f; and the full-rank estimate equals sum_p f_p E_p / (2 P sigma) with its own noise.
    Tolerance 1e-5 relative to the largest entry: float32 products of <= 12 terms."""
    rng = np.random.default_rng(2)
    params = {"W1": np.zeros((4, 5), np.float32), "b1": np.zeros(4, np.float32)}
    config = es_config(population=12, rank=3, sigma=0.2, seed=5)
    f = rng.normal(size=6)
    for kind, (make_noise, estimate) in ESTIMATORS.items():
        drawn = make_noise(config, 9, params)
        grads = estimate(f, params, config, 9)
        for name in params:
            expected = np.tensordot(f, drawn[name], axes=1) / (2 * config.pairs * config.sigma)
            assert np.max(np.abs(grads[name] - expected)) <= 1e-5 * np.max(np.abs(expected)), (kind, name)


# ---------------------------------------------------------------------------------------------
# The ES baseline: batched and sequential evaluation agree

def es_problem(seed, dtype, sizes=(9, 7, 3), pairs=4, n_frames=5, batch=3):
    params = {k: v.astype(dtype) for k, v in snn.init_params(seed, sizes, std=1.0).items()}
    rng = np.random.default_rng(seed)
    frames = (rng.random((n_frames, batch, sizes[0])) < 0.5).astype(dtype)
    labels = rng.integers(0, sizes[2], batch)
    config = baselines.ESConfig(population=2 * pairs, sigma=0.3, seed=seed, logit_scale=1.0)
    return params, frames, labels, config


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@settings(max_examples=8)
@given(seed=st.integers(0, 10 ** 6), generation=st.integers(0, 50))
def test_es_batched_equals_sequential(dtype, seed, generation):
    """es_forward in "batched" and "sequential" mode gives identical output spike counts and hidden
    spike totals for the same seed and generation, in float64 and float32 (max |difference| == 0:
    the same perturbed weights, only the order of summation differs, ~1e-7 in float32, and a spike
    flips only if a potential lands that close to the threshold). Members do differ from each
    other, so the comparison is not trivially between equal rows."""
    params, frames, _, config = es_problem(seed, dtype)
    batched, batched_hidden = baselines.es_forward(params, frames, config, generation, count_hidden=True)
    sequential, sequential_hidden = baselines.es_forward(params, frames, replace(config, mode="sequential"),
                                                         generation, count_hidden=True)
    assert batched.shape == sequential.shape == (config.population, 3, 3)
    assert np.max(np.abs(batched - sequential)) == 0
    assert np.array_equal(batched_hidden, sequential_hidden)


def test_es_members_differ():
    """Guard for the mode comparison: the 8 members of the fixed problem do not all spike alike."""
    params, frames, _, config = es_problem(0, np.float64)
    counts, _ = baselines.es_forward(params, frames, config, 0)
    assert len({c.tobytes() for c in counts}) > 1


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_es_generation_step_same_in_both_modes(dtype):
    """Three ES generations in "batched" and "sequential" mode produce bit-identical parameters,
    Adam state and stats (the same counts feed the same update), and the parameters do move."""
    params, frames, labels, config = es_problem(11, dtype)
    results = {}
    for mode in baselines.ES_MODES:
        p, state = params, optim.init(params)
        for generation in range(3):
            p, state, stats = baselines.es_generation_step(p, state, frames, labels, generation,
                                                           replace(config, mode=mode), optim.Adam(lr=0.05))
        results[mode] = (p, state, stats)
    (p_b, s_b, st_b), (p_s, s_s, st_s) = results["batched"], results["sequential"]
    for name in params:
        assert np.array_equal(p_b[name], p_s[name])
        assert np.array_equal(s_b["m"][name], s_s["m"][name])
        assert p_b[name].dtype == dtype
    assert st_b == st_s
    assert any(not np.array_equal(p_b[name], params[name]) for name in params)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_es_pair_noise_is_the_batched_draw(dtype):
    """pair_noise(p) = (E_p, delta_p) of full_rank_noise / bias noise, exactly what the batched and
    EGGROLL paths perturb by, in the params' dtype. Tolerance 1e-12 (noise drawn in float32, so
    exact in either dtype)."""
    params, _, _, config = es_problem(5, dtype)
    drawn = full_rank_noise(config, 6, params)
    for p in range(config.pairs):
        one = baselines.pair_noise(params, config, 6, p)
        for name in params:
            assert one[name].dtype == dtype
            assert np.max(np.abs(one[name] - drawn[name][p])) <= 1e-12


@pytest.mark.parametrize("mode", baselines.ES_MODES)
def test_es_share_of_pairs_is_its_rows_of_the_whole(mode):
    """es_forward of the pairs in a slice (a process's share) gives exactly the rows of those
    pairs' members in the whole population's counts and hidden-spike totals."""
    params, frames, _, config = es_problem(6, np.float32)
    config = replace(config, mode=mode)
    whole, whole_hidden = baselines.es_forward(params, frames, config, 3, count_hidden=True)
    share, share_hidden = baselines.es_forward(params, frames, config, 3, count_hidden=True, pairs=slice(1, 3))
    assert share.shape == (4, 3, 3)
    np.testing.assert_array_equal(share, whole[2:6])
    np.testing.assert_array_equal(share_hidden, whole_hidden[2:6])
    assert not np.array_equal(share, whole[:4])


def test_es_mode_chooses_the_evaluation(monkeypatch):
    """config.mode picks the function that evaluates the members, the one the benchmark times:
    "batched" runs batched_forward, "sequential" sequential_forward, each with every argument."""
    params, frames, _, config = es_problem(0, np.float32)
    calls = []
    for name in ("batched_forward", "sequential_forward"):
        monkeypatch.setattr(baselines, name, lambda *args, name=name: calls.append((name, args)) or (None, None))
    lif = snn.LIF(beta=0.5)
    for mode in ("sequential", "batched"):
        baselines.es_forward(params, frames, replace(config, mode=mode), 7, lif, True, slice(1, 2))
    assert [name for name, _ in calls] == ["sequential_forward", "batched_forward"]
    for _, args in calls:
        assert args[3:] == (7, lif, True, slice(1, 2)) and args[0] is params and args[1] is frames


def test_es_batched_hands_the_simulation_currents_in_the_frames_dtype():
    """Batched ES in float32 stays float32: every hidden and output current it hands snn.simulate
    (the perturbed weights and biases of both layers) is float32, like the sequential members."""
    params, frames, _, config = es_problem(2, np.float32)
    _, recorded = record_simulation(lambda: baselines.es_forward(params, frames, config, 1))
    assert recorded["hidden"] and recorded["output"]
    assert all(current.dtype == np.float32 for current in recorded["hidden"].values())
    assert all(current.dtype == np.float32 for _, _, _, current, _ in recorded["output"])


def test_es_batched_is_independent_of_chunking(monkeypatch):
    """Batched ES gives the same counts with members simulated 2 at a time (snn.CHUNK_BYTES) as all
    at once; the pair slicing of the chunks must line up. Exact equality."""
    params, frames, _, config = es_problem(8, np.float32)
    whole, _ = baselines.es_forward(params, frames, config, 1)
    monkeypatch.setattr(snn, "CHUNK_BYTES", 2 * 3 * 7 * 4)
    assert snn.members_per_chunk(config.population, 3, 7, np) == 2
    chunked, _ = baselines.es_forward(params, frames, config, 1)
    assert np.array_equal(chunked, whole)


# ---------------------------------------------------------------------------------------------
# Bad input

def test_unknown_es_mode_is_refused():
    """A mode other than batched/sequential raises ValueError naming it and the choices."""
    params, frames, labels, config = es_problem(0, np.float32)
    with pytest.raises(ValueError, match=r"unknown ES mode 'parallel': use one of batched, sequential"):
        baselines.es_forward(params, frames, replace(config, mode="parallel"), 0)
    with pytest.raises(ValueError, match=r"unknown ES mode"):
        baselines.es_generation_step(params, optim.init(params), frames, labels, 0, replace(config, mode=""),
                                     optim.Adam(lr=0.01))


def test_es_checks_sigma_population_and_frames():
    """Full-rank ES refuses sigma <= 0, an odd population and mis-shaped frames like EGGROLL does."""
    params, frames, labels, config = es_problem(0, np.float32)
    state = optim.init(params)
    with pytest.raises(ValueError, match="sigma must be a finite int or float > 0"):
        baselines.es_forward(params, frames, replace(config, sigma=0.0), 0)
    with pytest.raises(ValueError, match="population must be an even number"):
        baselines.es_forward(params, frames, replace(config, population=7), 0)
    with pytest.raises(ValueError, match=r"frames must have shape \(T, N, 9\)"):
        baselines.es_generation_step(params, state, frames[..., :8], labels, 0, config, optim.Adam(lr=0.01))
    counts, _ = baselines.es_forward(params, frames, replace(config, population=4), 0)
    assert counts.shape == (4, 3, 3)


# ---------------------------------------------------------------------------------------------
# The baseline pinned to its definitions, not only to itself

def test_full_rank_noise_is_the_named_philox_streams():
    """E_p of weight W is the stream noise.normals(seed, generation, p, "W", m n) read row by row,
    bit for bit: the same streams EGGROLL's factors come from, so both methods draw their noise
    from one definition."""
    pairs = np.array([0, 3, 7])
    for name, shape in (("W1", (7, 9)), ("W2", (3, 7))):
        drawn = baselines.full_rank_noise(5, 11, pairs, name, shape, np)
        stream = noise.normals(5, 11, pairs, name, shape[0] * shape[1])
        assert drawn.shape == (3, *shape) and np.array_equal(drawn, stream.reshape(3, *shape))


@pytest.mark.parametrize("mode", baselines.ES_MODES)
def test_es_members_are_the_materialised_perturbations(mode):
    """Member 2p +- 1 of es_forward is the network theta +- sigma (E_p, delta_p), with E_p and delta_p
    taken from noise.normals directly, under the LIF constants given (not the defaults): the same
    output spike counts and hidden-spike totals, exactly in float64, in either mode. Without
    count_hidden, es_forward and both evaluations return None for the totals."""
    params, frames, _, config = es_problem(3, np.float64)
    config, lif = replace(config, mode=mode), snn.LIF(beta=0.7, threshold=0.8)
    pairs = np.arange(config.pairs)
    counts, hidden = baselines.es_forward(params, frames, config, 2, lif, count_hidden=True)
    assert hidden.shape == (config.population,)
    for p in pairs:
        for side, sign in enumerate((1, -1)):
            member = {}
            for name, value in params.items():
                stream = noise.normals(config.seed, 2, pairs[p:p + 1], name, value.size)[0]
                member[name] = value + sign * config.sigma * stream.reshape(value.shape).astype(np.float64)
            member_counts, member_hidden = snn.forward(member, frames, lif, count_hidden=True)
            np.testing.assert_array_equal(member_counts[0], counts[2 * p + side])
            assert member_hidden[0] == hidden[2 * p + side]
    assert not np.array_equal(counts, baselines.es_forward(params, frames, config, 2)[0])
    evaluate = baselines.batched_forward if mode == "batched" else baselines.sequential_forward
    for plain_counts, none in (baselines.es_forward(params, frames, config, 2, lif),
                               evaluate(params, frames, config, 2, lif)):
        assert none is None and np.array_equal(plain_counts, counts)


def test_es_generation_fitness_is_the_cross_entropy_of_the_rates():
    """The mean fitness an ES generation reports is -cross-entropy of softmax(logit_scale * counts / T)
    over the members, computed here by hand with T (5) != B (3), so reading the rate over the
    batch instead of the steps cannot pass; to 1e-12. The members run with the LIF constants the
    generation is given (not the defaults, which give other counts here)."""
    from scipy.special import log_softmax
    params, frames, labels, config = es_problem(4, np.float64)
    config, lif = replace(config, logit_scale=3.0), snn.LIF(beta=0.6, threshold=0.9)
    counts, _ = baselines.es_forward(params, frames, config, 0, lif)
    assert not np.array_equal(counts, baselines.es_forward(params, frames, config, 0)[0])
    log_p = log_softmax(config.logit_scale * counts / frames.shape[0], axis=-1)
    by_hand = log_p[:, np.arange(len(labels)), labels].mean(axis=1)
    _, _, stats = baselines.es_generation_step(params, optim.init(params), frames, labels, 0, config,
                                               optim.Adam(lr=0.01), lif)
    assert frames.shape[0] != frames.shape[1] and by_hand.std() > 0
    assert stats["mean_fitness"] == pytest.approx(by_hand.mean(), abs=1e-12)
    assert stats["max_fitness"] == pytest.approx(by_hand.max(), abs=1e-12)


@pytest.mark.parametrize("mode", baselines.ES_MODES)
def test_es_spike_cost_takes_each_members_hidden_spikes_per_sample_off_its_fitness(mode):
    """With spike_cost 0.05, in either mode, an ES generation's fitnesses are -cross-entropy less
    0.05 x each materialised member's hidden spikes (snn.forward) / N, T (5) != N (3), to 1e-12; the
    members differ in their spikes, so the price is not a constant shift."""
    from scipy.special import log_softmax
    params, frames, labels, config = es_problem(4, np.float64)
    config = replace(config, spike_cost=0.05, mode=mode)
    fitnesses, hidden = [], []
    for pair in range(config.pairs):
        perturbation = baselines.pair_noise(params, config, 0, pair)
        for sign in (1, -1):
            member = {name: value + sign * config.sigma * perturbation[name] for name, value in params.items()}
            counts, spikes = snn.forward(member, frames, count_hidden=True)
            log_p = log_softmax(counts[0] / frames.shape[0], axis=-1)[np.arange(len(labels)), labels]
            fitnesses.append(log_p.mean() - 0.05 * spikes[0] / frames.shape[1])
            hidden.append(spikes[0])
    _, _, stats = baselines.es_generation_step(params, optim.init(params), frames, labels, 0, config,
                                               optim.Adam(lr=0.01))
    assert len(set(hidden)) > 1 and frames.shape[0] != frames.shape[1]
    assert stats["mean_fitness"] == pytest.approx(np.mean(fitnesses), abs=1e-12)
    assert stats["max_fitness"] == pytest.approx(np.max(fitnesses), abs=1e-12)


def test_es_processes_given_other_settings_or_weights_are_refused_together():
    """Vanilla ES under a team compares, each generation, its settings, Adam's, the generation and
    the parameters' digest across processes, as EGGROLL's ask does: a process with another sigma,
    Adam, generation or weights is refused on every process, in one line naming the difference; the
    same are taken."""
    import interface_checks
    from simulated_team import run_team
    params = snn.init_params(0, (12, 8, 3))
    moved = {**params, "W1": params["W1"] + 1}
    frames = (np.random.default_rng(0).random((4, 6, 12)) < 0.4).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1, 2])

    def step_with(sigma=lambda rank: 0.1, weights=lambda rank: params, generation=lambda rank: 0,
                  lr=lambda rank: 0.01, samples=lambda rank: slice(None), adam_state=lambda rank: optim.init(params)):
        def body(team):
            try:
                baselines.es_generation_step(weights(team.rank), adam_state(team.rank), frames[:, samples(team.rank)],
                                             labels[samples(team.rank)],
                                             generation(team.rank), baselines.ESConfig(8, sigma(team.rank), 1, 1.0),
                                             optim.Adam(lr(team.rank)), team=team)
            except ValueError as error:
                return str(error)
            return "stepped"
        return run_team(2, body)[0]
    told = "the processes of this team hold different ES settings, states or minibatches: {}; give every process " \
           "the same settings, parameters, Adam state, generation and minibatch"
    es = lambda sigma: json.dumps(dataclasses.asdict(baselines.ESConfig(8, sigma, 1, 1.0)), sort_keys=True)
    assert step_with(sigma=lambda rank: 0.1 * (rank + 1)) == [told.format(f"ES (rank 0: {es(0.1)}; rank 1: "
                                                                          f"{es(0.2)})")] * 2
    adam = lambda lr: json.dumps(dataclasses.asdict(optim.Adam(lr)), sort_keys=True)
    assert step_with(lr=lambda rank: 0.01 * (rank + 1)) == [told.format(f"adam (rank 0: {adam(0.01)}; rank 1: "
                                                                        f"{adam(0.02)})")] * 2
    assert step_with(generation=lambda rank: rank) == [told.format("generation (rank 0: 0; rank 1: 1)")] * 2
    counted = lambda rank: {**optim.init(params), "t": 3 * rank}  # Adam's step count differs: each its own step
    said = step_with(adam_state=counted)
    assert said[0] == said[1] and re.search(r"states or minibatches: optimiser \(rank 0: [0-9a-f]{16}, t 0; rank 1: "
                                            r"[0-9a-f]{16}, t 3\);", said[0]), said
    digests = [interface_checks.digest_of(weights)[:16] for weights in (params, moved)]
    assert step_with(weights=lambda rank: moved if rank else params) == \
        [told.format(f"parameters (rank 0: {digests[0]}; rank 1: {digests[1]})")] * 2
    reversed_ = lambda rank: slice(None, None, -1) if rank else slice(None)  # the same samples, another order
    assert step_with(samples=reversed_) == [told.format(
        f'minibatch (rank 0: {{"frames": [[4, 6, 12], "{summary(frames)}"], "labels": "{summary(labels)}"}}; '
        f'rank 1: {{"frames": [[4, 6, 12], "{summary(frames[:, ::-1])}"], "labels": "{summary(labels[::-1])}"}})')] * 2
    swapped = lambda rank: [3, 1, 2, 0, 4, 5] if rank else slice(None)  # two samples of one digit: the same labels
    assert step_with(samples=swapped) == [told.format(
        f'minibatch (rank 0: {{"frames": [[4, 6, 12], "{summary(frames)}"], "labels": "{summary(labels)}"}}; '
        f'rank 1: {{"frames": [[4, 6, 12], "{summary(frames[:, [3, 1, 2, 0, 4, 5]])}"], "labels": '
        f'"{summary(labels)}"}})')] * 2
    assert step_with() == ["stepped", "stepped"]


def summary(values):
    """The digest of labels, or of frames' counts a frame and sample, that a team's processes compare
    (snn.minibatch_summary)."""
    import interface_checks
    return interface_checks.digest_of({"labels": values} if values.ndim == 1 else {"counts": values.sum(axis=2)})[:16]


@pytest.mark.parametrize("changed, named", [
    (dict(logit_scale=2.0), 'scoring (rank 0: {"LIF": [0.9, 1.0], "logit_scale": 1.0'),
    (dict(spike_cost=0.01), '"spike_cost": 0.01'), (dict(lif=snn.LIF(beta=0.8)), '"LIF": [0.8, 1.0]'),
    (dict(readout="potential"), '"readout": "potential"'),
    (dict(samples=slice(None, None, -1)), 'minibatch (rank 0: {"frames": [[4, 6, 12], '),
    (dict(samples=[3, 1, 2, 0, 4, 5]), 'minibatch (rank 0: {"frames": [[4, 6, 12], '),  # the same labels
    (dict(labels=np.array([1, 0, 2, 0, 1, 2])), 'minibatch (rank 0: {"frames": [[4, 6, 12], '),  # the same frames
    (dict(samples=slice(1, None)), '"frames": [[4, 5, 12], ')])
def test_eggroll_processes_scoring_members_otherwise_are_refused_together(changed, named):
    """EGGROLL's generation under a team: ask compares the Eggroll's settings, and the generation the
    settings its fitness scores members by and the minibatch, so that a process with another readout
    scale, spike price, readout, LIF or minibatch (the same samples in another order, or one fewer)
    is refused on every process in one line naming it (two samples of one digit swapped, too); the same
    are taken."""
    from simulated_team import run_team
    network = snn.Network.parse("8", n_out=3, image=(12, 1, 1))
    params = snn.init_network(0, network)
    frames = (np.random.default_rng(0).random((4, 6, 12)) < 0.4).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1, 2])

    def step_with(settings_of):
        def body(team):
            settings = {**dict(logit_scale=1.0, spike_cost=0.0, lif=snn.LIF(), readout="rate", samples=slice(None),
                               labels=labels), **settings_of(team.rank)}
            try:
                snn_eggroll.generation_step(params, optim.init(params), frames[:, settings["samples"]],
                                            settings["labels"][settings["samples"]], 0,
                                            snn_eggroll.Config(8, 1, 0.1, 1, settings["logit_scale"],
                                                               spike_cost=settings["spike_cost"]),
                                            optim.Adam(0.01), settings["lif"], team,
                                            replace(network, readout=settings["readout"]))
            except ValueError as error:
                return str(error)
            return "stepped"
        return run_team(2, body)[0]
    refused = step_with(lambda rank: changed if rank else {})
    assert refused[0] == refused[1] and refused[0].startswith(
        "the processes of this team score their members by different settings or minibatches: "), refused
    assert named in refused[0] and refused[0].endswith("; give every process the same minibatch, logit_scale, "
                                                       "spike_cost, readout and LIF"), refused
    assert step_with(lambda rank: changed) == ["stepped", "stepped"]


def test_the_vanilla_es_building_blocks_refuse_what_es_forward_refuses():
    """Each function a reader may call for Eq. (10) on its own checks its arguments as es_forward
    does: a wrong length or a NaN of f, a pair outside the population, a sigma of 0, frames of
    another shape, the noise's keys; one line each, not NumPy's error or a NaN step."""
    params, lif = snn.init_params(1), snn.LIF()
    settings = baselines.ESConfig(population=8, sigma=0.1, seed=1, logit_scale=1.0)
    frames = np.ones((3, 2, 2312), np.float32)
    still = baselines.ESConfig(population=8, sigma=0.0, seed=1, logit_scale=1.0)
    cases = [
        (lambda: baselines.full_rank_gradient(np.ones(3), params, settings, 0), "f must be a float array (4,), one f_p "
         "per pair of `pairs`, as eggroll.pair_differences gives it, got float64 (3,)"),
        (lambda: baselines.full_rank_gradient([1.0, 1.0, 1.0, 1.0], params, settings, 0), "f must be a float array "
         "(4,), one f_p per pair of `pairs`, as eggroll.pair_differences gives it, got a list"),
        (lambda: baselines.es_forward({**params, "W1": params["W1"].tolist()}, frames, settings, 0),
         "W1 is a list, not an array: a spiking network's parameters are float32 or float64 arrays; give them as "
         ".astype(numpy.float32), or make them with snn.init_network(seed, network)"),
        (lambda: baselines.full_rank_gradient(np.ones(4), params, still, 0), "sigma must be a finite int or float > "
         "0, got 0.0: use e.g. 0.1"),
        (lambda: baselines.full_rank_gradient(np.ones(4), params, {"pairs": 4}, 0), "config must hold the "
         "population's pairs, seed and sigma, as baselines.ESConfig does, got a dict"),
        (lambda: baselines.full_rank_gradient(np.ones(4), {}, settings, 0), "params must be a dict of named 1-D and "
         "2-D float arrays, got an empty dict"),
        (lambda: baselines.full_rank_gradient(np.ones(4), {**params, "W1": params["W1"].astype(np.int64)}, settings,
                                              0), "parameter 'W1' must be a float32 or float64 array of 1 or 2 "
         "dimensions, got int64 (64, 2312)"),
        (lambda: baselines.full_rank_gradient(np.ones(4), {**params, "b1": params["b1"] * np.nan}, settings, 0),
         "parameter 'b1' holds NaN or inf: give finite parameters"),
        (lambda: baselines.full_rank_noise(1, 0, np.arange(4), 5, (3, 3), np), "name must be the weight's name, a "
         "string (its noise's key), got an int"),
        (lambda: baselines.full_rank_noise(1, 0, np.arange(4), "W1", (3, 3), None), "xp must be the module numpy or "
         "cupy, got a NoneType: give backend.array_module()"),
        (lambda: baselines.full_rank_noise(1, 0, np.arange(3), "W1", (10 ** 6, 10 ** 6), np), "full-rank noise of 3 "
         "pairs for a weight (1000000, 1000000), 24,000.0 GB as it is drawn, more than this machine's "),
        (lambda: baselines.full_rank_gradient(np.full(4, np.nan), params, settings, 0),
         "f holds NaN or inf: give the pair differences of finite fitnesses"),
        (lambda: baselines.pair_noise(params, settings, 0, 4), "pair must be a whole number in 0..3, got 4: use 0, the "
         "first (pairs count from 0)"),
        (lambda: baselines.batched_forward(params, frames, still, 0), "sigma must be a finite int or float > 0, got "
         "0.0: use e.g. 0.1"),
        (lambda: baselines.sequential_forward(params, frames, still, 0), "sigma must be a finite int or float > 0, "
         "got 0.0: use e.g. 0.1"),
        (lambda: baselines.sequential_forward(params, frames[0], settings, 0), "frames must have shape (T, N, 2312), "
         "got (2, 2312): bin events into T frames of 2312 inputs"),
        (lambda: baselines.full_rank_noise(-1, 0, np.arange(4), "W1", (3, 3), np), "seed must be a whole number in "
         "0..18446744073709551615, got -1: use e.g. 0"),
        (lambda: baselines.full_rank_noise(1, 0, 4, "W1", (3, 3), np), "pairs must be a 1-D integer array of pair "
         "numbers from 0, got an int: use e.g. numpy.arange(P)"),
        (lambda: baselines.full_rank_noise(1, 0, np.arange(4), "W1", (-3, 3), np), "shape must be a weight's (m, n), "
         "two whole numbers >= 1, got (-3, 3)")]
    for call, told in cases:
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == told or told.endswith("machine's ") and str(refused.value).startswith(told)
    pairs = np.arange(4)  # what they take, still taken: the gradient of the pair differences, the pairs' noise
    f = np.array([1.0, -0.5, 0.25, 0.0])
    expected = np.einsum("p,pmn->mn", f, baselines.full_rank_noise(1, 0, pairs, "W1", (64, 2312), np)) / (2 * 4 * 0.1)
    assert np.allclose(baselines.full_rank_gradient(f, params, settings, 0)["W1"], expected)
    assert np.array_equal(baselines.pair_noise(params, settings, 0, 3)["W1"],
                          baselines.full_rank_noise(1, 0, pairs, "W1", (64, 2312), np)[3].astype(np.float32))
