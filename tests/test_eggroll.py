"""Property tests of eggroll.py: Philox noise, low-rank perturbations, the population forward pass,
fitness shaping, the gradient estimate, input checks and a small end-to-end run.

Statistical tests use fixed seeds (and a derandomized hypothesis profile), and every tolerance is a
stated multiple (>= 5) of a standard error derived from the sample size, so they cannot flake.
"""
import dataclasses
import functools
import math
import re
from math import comb

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st
from scipy import stats

import eggroll
import interface_checks
import noise
import optim
import snn
import snn_eggroll


# ---------------------------------------------------------------------------------------------
# Helpers

def product_sum_moments(rank, max_order=8):
    """Exact moments E[x^k], k = 0..max_order, of x = (1/sqrt r) sum_{k<r} a_k b_k, a, b iid N(0, 1).

    One product y = a b has E[y^k] = ((k-1)!!)^2 for even k (1, 9, 225, 11025) and 0 for odd k;
    the moments of a sum of independent terms follow from the binomial expansion
    E[(S + y)^k] = sum_i C(k, i) E[S^i] E[y^(k-i)].
    """
    single = [1, 0, 1, 0, 9, 0, 225, 0, 11025]
    total = [1] + [0] * max_order
    for _ in range(rank):
        total = [sum(comb(k, i) * total[i] * single[k - i] for i in range(k + 1)) for k in range(max_order + 1)]
    return [total[k] / rank ** (k / 2) for k in range(max_order + 1)]


def record_simulation(run):
    """run() with snn.simulate wrapped so that every current it is handed is recorded.

    Returns run()'s result and a dict: "hidden" maps (t, member) -> hidden current (batch, n_hidden);
    "output" lists (start, stop, spikes, currents, callback) per call of the output-current callback,
    with members start..stop-1 on axis -3 of both arrays (whatever steps the leading axes hold);
    the callback can be called again with chosen spikes.
    """
    recorded = {"hidden": {}, "output": []}
    original = snn.simulate

    def recording_simulate(hidden_current, output_current, *args, **kwargs):
        def hidden(t, start, stop):
            current = hidden_current(t, start, stop)
            full = np.broadcast_to(current, (stop - start,) + current.shape[-2:])
            for member in range(start, stop):
                recorded["hidden"][t, member] = np.array(full[member - start], copy=True)
            return current

        def output(layer, spikes, start, stop):
            current = output_current(layer, spikes, start, stop)
            recorded["output"].append((start, stop, np.array(spikes, copy=True), np.array(current, copy=True),
                                       functools.partial(output_current, layer)))
            return current

        return original(hidden, output, *args, **kwargs)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(snn, "simulate", recording_simulate)
        result = run()
    return result, recorded


def es_config(population, rank, sigma=0.1, seed=0, logit_scale=1.0, output_sigma_scale=1.0):
    return snn_eggroll.Config(population, rank, sigma, seed, logit_scale, output_sigma_scale=output_sigma_scale)


def float64_params(seed, sizes, std=1.0):
    return {k: v.astype(np.float64) for k, v in snn.init_params(seed, sizes, std=std).items()}


def member_noise(config, generation, params):
    """Materialised float64 noise of every pair: {W: (P, m, n), b: (P, m)}, from the factor functions."""
    pairs = np.arange(config.pairs)
    drawn = {}
    for name, value in params.items():
        if name.startswith("W"):
            a, b = eggroll.lowrank_factors(config.seed, generation, pairs, name, value.shape, config.rank)
            drawn[name] = eggroll.materialise(a.astype(np.float64), b.astype(np.float64))
        else:
            drawn[name] = noise.normals(config.seed, generation, pairs, name, value.shape[0]).astype(np.float64)
    return drawn


network_shapes = st.tuples(
    st.integers(1, 7),   # n_in
    st.integers(1, 6),   # n_hidden
    st.integers(1, 4),   # n_out
    st.integers(1, 3),   # pairs
    st.integers(1, 4),   # T
    st.integers(1, 3),   # batch
    st.integers(1, 6),   # rank, clipped to the smallest weight side
    st.integers(0, 2 ** 40),  # seed
)


# ---------------------------------------------------------------------------------------------
# 2. Regeneration: noise is a pure function of its keys

@settings(max_examples=25)
@given(seed=st.integers(0, 2 ** 63), generation=st.integers(0, 2 ** 32 - 1),
       n_pairs=st.integers(1, 12), data=st.data())
def test_one_pair_regenerates_its_slice_bit_for_bit(seed, generation, n_pairs, data):
    """Drawing the noise of chosen pairs alone (any subset, any order, repeats allowed) gives exactly
    the rows of the batched draw for all pairs: noise.standard_normals, lowrank_factors and noise.normals.

    Exact (bitwise) equality: training relies on regenerating a member's noise in the update.
    """
    chosen = data.draw(st.lists(st.integers(0, n_pairs - 1), min_size=1, max_size=6))
    all_pairs = np.arange(n_pairs)
    m, n = data.draw(st.integers(1, 6)), data.draw(st.integers(1, 6))
    rank = data.draw(st.integers(1, min(m, n)))
    count = data.draw(st.integers(1, 23))

    full = noise.standard_normals(seed, generation, all_pairs, 2, count)
    assert full.shape == (n_pairs, count) and full.dtype == np.float32
    assert np.array_equal(noise.standard_normals(seed, generation, chosen, 2, count), full[chosen])

    a_all, b_all = eggroll.lowrank_factors(seed, generation, all_pairs, "W2", (m, n), rank)
    a, b = eggroll.lowrank_factors(seed, generation, np.asarray(chosen), "W2", (m, n), rank)
    assert a_all.shape == (n_pairs, rank, m) and b_all.shape == (n_pairs, rank, n)
    assert np.array_equal(a, a_all[chosen]) and np.array_equal(b, b_all[chosen])
    for p in chosen:  # one pair at a time, as a worker regenerating a single member would
        a_one, b_one = eggroll.lowrank_factors(seed, generation, [p], "W2", (m, n), rank)
        assert np.array_equal(a_one[0], a_all[p]) and np.array_equal(b_one[0], b_all[p])

    delta_all = noise.normals(seed, generation, all_pairs, "b1", m)
    assert np.array_equal(noise.normals(seed, generation, chosen, "b1", m), delta_all[chosen])


# ---------------------------------------------------------------------------------------------
# 3. The low-rank perturbation E = A B^T / sqrt(r)

lowrank_shapes = st.tuples(st.integers(1, 5), st.integers(1, 5)).flatmap(
    lambda mn: st.tuples(st.just(mn[0]), st.just(mn[1]), st.integers(1, min(mn))))


@settings(max_examples=12)
@given(shape=lowrank_shapes, generation=st.integers(0, 1000))
@example(shape=(1, 1, 1), generation=0)
@example(shape=(5, 5, 5), generation=0)
@example(shape=(3, 5, 3), generation=1)
@example(shape=(4, 2, 2), generation=2)
def test_lowrank_entries_have_unit_variance_no_correlation_and_kurtosis_6_over_r(shape, generation):
    """Entries of E = A B^T / sqrt(r) over P = 100000 independent pairs: mean 0, variance 1, zero
    correlation between distinct entries, and excess kurtosis 6/r (each entry is a normalised sum of
    r iid products a b, and one product has kurtosis 9, i.e. excess 6).

    Standard errors are rigorous upper bounds from exact moments (product_sum_moments), with P the
    number of independent matrices (entries of one matrix are dependent, so they are not counted as
    extra samples; an average of equally distributed variables has at most their variance):
      mean of one entry:            SE <= sqrt(1 / P)
      mean of its square:           SE <= sqrt((mu4 - 1) / P)
      mean of a product E_ij E_kl:  SE <= sqrt(mu4 / P)        (Cauchy-Schwarz: E[x^2 y^2] <= mu4)
      mean of x^4 over the matrix:  SE <= sqrt((mu8 - mu4^2) / P)
    Each check allows 5 of these SE. The excess kurtosis is mean(x^4) - 3 with the known mean 0 and
    variance 1, so it is unbiased for mu4 - 3 = 6/r. For r <= 4 it must also be clearly non-zero:
    larger than 5 SE (its true value 6/r is >= 10 SE away from 0 for these P), so Gaussian full-rank
    noise would fail.
    """
    m, n, rank = shape
    P = 100_000
    a, b = eggroll.lowrank_factors(3, generation, np.arange(P), "W1", (m, n), rank)
    E = eggroll.materialise(a.astype(np.float64), b.astype(np.float64))
    assert E.shape == (P, m, n)
    mu = product_sum_moments(rank)
    assert mu[4] == pytest.approx(3 + 6 / rank)
    x = E.reshape(P, m * n)

    assert np.all(np.abs(x.mean(axis=0)) <= 5 * math.sqrt(1 / P))
    second = x.T @ x / P                              # (mn, mn): E[E_ij E_kl]
    assert np.all(np.abs(np.diag(second) - 1) <= 5 * math.sqrt((mu[4] - 1) / P))
    off_diagonal = second[~np.eye(m * n, dtype=bool)]
    assert np.all(np.abs(off_diagonal) <= 5 * math.sqrt(mu[4] / P))

    excess_kurtosis = (x ** 4).mean() - 3
    se_kurtosis = math.sqrt((mu[8] - mu[4] ** 2) / P)
    assert abs(excess_kurtosis - 6 / rank) <= 5 * se_kurtosis
    if rank <= 4:
        assert 6 / rank >= 10 * se_kurtosis  # the test has the power to tell it from 0 ...
        assert excess_kurtosis > 5 * se_kurtosis  # ... and it does


@settings(max_examples=20)
@given(shape=lowrank_shapes, pairs=st.integers(1, 4))
def test_materialise_is_the_sum_of_rank_one_terms(shape, pairs):
    """materialise(a, b)[p] = (1/sqrt r) sum_k outer(a[p, k], b[p, k]), written here with explicit
    outer products, and has rank <= r. Tolerance 1e-12: float64 sums of r <= 5 products of O(1)."""
    m, n, rank = shape
    a, b = eggroll.lowrank_factors(0, 0, np.arange(pairs), "W1", (m, n), rank)
    a, b = a.astype(np.float64), b.astype(np.float64)
    E = eggroll.materialise(a, b)
    for p in range(pairs):
        expected = sum(np.outer(a[p, k], b[p, k]) for k in range(rank)) / math.sqrt(rank)
        assert np.max(np.abs(E[p] - expected)) <= 1e-12
        assert np.linalg.matrix_rank(E[p]) <= rank


# ---------------------------------------------------------------------------------------------
# 4. The population forward pass equals materialised perturbations

def reference_member_counts(params, noise, frames, sigma, p, sign):
    """snn.forward of one member theta + sign sigma (E_p, delta_p), every matrix materialised."""
    member = {name: value + sign * sigma * noise[name][p] for name, value in params.items()}
    counts, _ = snn.forward(member, frames)
    return counts[0]


def draw_network(shape, frame_dtype=np.float64):
    n_in, n_hidden, n_out, pairs, n_frames, batch, rank, seed = shape
    rank = min(rank, n_in, n_hidden, n_out)
    params = float64_params(seed % 1000, (n_in, n_hidden, n_out))
    frames = (np.random.default_rng(seed).random((n_frames, batch, n_in)) < 0.6).astype(frame_dtype)
    config = es_config(population=2 * pairs, rank=rank, sigma=0.5, seed=seed)
    return params, frames, config


@settings(max_examples=30)
@given(shape=network_shapes, generation=st.integers(0, 100))
@example(shape=(7, 6, 4, 3, 4, 3, 4, 12345), generation=7)
def test_lowrank_forward_spike_counts_equal_materialised_forward(shape, generation):
    """perturbed_forward's member 2p (2p + 1) spikes exactly like snn.forward with
    W + sigma E_p, b + sigma delta_p (W - sigma E_p, b - sigma delta_p), E_p = materialise(A_p, B_p).

    Float64 parameters and frames; the two paths differ only by float64 rounding (~1e-15), so the
    spike counts must agree exactly (max |difference| == 0). Weights ~ N(0, 1) and sigma = 0.5 so
    that neurons do spike and members do differ.
    """
    params, frames, config = draw_network(shape)
    counts, _ = snn_eggroll.perturbed_forward(params, frames, config, generation)
    noise = member_noise(config, generation, params)
    assert counts.shape == (config.population,) + frames.shape[1:2] + (params["W2"].shape[0],)
    for member in range(config.population):
        expected = reference_member_counts(params, noise, frames, config.sigma, member // 2, 1 - 2 * (member % 2))
        assert np.max(np.abs(counts[member] - expected)) == 0


@settings(max_examples=30)
@given(shape=network_shapes, generation=st.integers(0, 100))
@example(shape=(7, 6, 4, 3, 4, 3, 4, 12345), generation=7)
def test_lowrank_currents_equal_materialised_currents_float64(shape, generation):
    """Eq. (6) in float64: every hidden current perturbed_forward hands to the LIF simulation equals
    x (W1 +- sigma E_p)^T + b1 +- sigma delta_p, and every output current equals
    o (W2 +- sigma E_p)^T + b2 +- sigma delta_p for the hidden spikes o it was given, with E_p
    materialised in float64 from the same factors.

    Tolerance 1e-10: the currents are sums of <= 8 terms of size <= ~10 in float64, so the two
    association orders differ by ~1e-14. A perturbation rounded to float32 anywhere (relative error
    6e-8 of terms of size ~1) would show up as ~1e-8 and fail.
    """
    params, frames, config = draw_network(shape)
    (counts, _), recorded = record_simulation(lambda: snn_eggroll.perturbed_forward(params, frames, config, generation))
    noise = member_noise(config, generation, params)
    assert len(recorded["hidden"]) == frames.shape[0] * config.population
    worst_hidden = worst_output = 0.0
    for (t, member), current in recorded["hidden"].items():
        p, sign = member // 2, 1 - 2 * (member % 2)
        w1 = params["W1"] + sign * config.sigma * noise["W1"][p]
        expected = frames[t] @ w1.T + params["b1"] + sign * config.sigma * noise["b1"][p]
        worst_hidden = max(worst_hidden, np.max(np.abs(current - expected)))
    assert recorded["output"]
    for start, stop, spikes, current, _ in recorded["output"]:
        for member in range(start, stop):
            p, sign = member // 2, 1 - 2 * (member % 2)
            w2 = params["W2"] + sign * config.sigma * noise["W2"][p]
            expected = spikes[..., member - start, :, :] @ w2.T + params["b2"] + sign * config.sigma * noise["b2"][p]
            worst_output = max(worst_output, np.max(np.abs(current[..., member - start, :, :] - expected)))
    assert worst_hidden <= 1e-10, f"hidden currents differ by {worst_hidden:.3g}"
    assert worst_output <= 1e-10, f"output currents differ by {worst_output:.3g}"


@settings(max_examples=15)
@given(shape=network_shapes, generation=st.integers(0, 100))
def test_lowrank_currents_equal_materialised_currents_float32(shape, generation):
    """The same as the float64 test in the float32 the training runs in: hidden currents within
    1e-4 of the float64 reference x (W1 +- sigma E_p)^T + b1 +- sigma delta_p.

    Tolerance: float32 has relative precision 6e-8; currents are sums of <= 8 products of size
    <= ~10, so rounding stays below ~1e-5; 1e-4 leaves a factor 10 and still catches any wrong
    sign, scale (e.g. a missing 1/sqrt r) or factor.
    """
    params, frames, config = draw_network(shape, np.float32)
    params32 = {k: v.astype(np.float32) for k, v in params.items()}
    _, recorded = record_simulation(lambda: snn_eggroll.perturbed_forward(params32, frames, config, generation))
    noise = member_noise(config, generation, params)
    for (t, member), current in recorded["hidden"].items():
        assert current.dtype == np.float32
        p, sign = member // 2, 1 - 2 * (member % 2)
        w1 = params32["W1"].astype(np.float64) + sign * config.sigma * noise["W1"][p]
        b1 = params32["b1"].astype(np.float64) + sign * config.sigma * noise["b1"][p]
        expected = frames[t].astype(np.float64) @ w1.T + b1
        assert np.max(np.abs(current - expected)) <= 1e-4
    assert recorded["output"]
    for _, _, _, current, _ in recorded["output"]:
        assert current.dtype == np.float32  # the output layer's perturbation, bias noise included, too


def test_perturbed_forward_counts_hidden_spikes_only_when_asked():
    """With count_hidden=True the second result is each member's total of hidden spikes, exactly
    that of the materialised member theta +- sigma E_p run by snn.forward (float64); by default it
    is None and the counts are the same. The counts keep the frames' dtype, float64 here, so the
    float64 comparisons above do run in float64."""
    params, frames, config = draw_network((7, 6, 4, 3, 4, 3, 4, 12345))
    counts, hidden = snn_eggroll.perturbed_forward(params, frames, config, 7, count_hidden=True)
    noise = member_noise(config, 7, params)
    expected = []
    for member in range(config.population):
        p, sign = member // 2, 1 - 2 * (member % 2)
        perturbed = {name: value + sign * config.sigma * noise[name][p] for name, value in params.items()}
        expected.append(snn.forward(perturbed, frames, count_hidden=True)[1][0])
    assert counts.dtype == np.float64 and hidden.shape == (config.population,)
    np.testing.assert_array_equal(hidden, expected)
    assert len(set(expected)) > 1
    plain, no_hidden = snn_eggroll.perturbed_forward(params, frames, config, 7)
    assert no_hidden is None and np.array_equal(plain, counts)


class RecordedProducts(np.ndarray):
    """An array that records, for every matrix product self @ other, the shape and dtype of other."""
    log = []

    def __matmul__(self, other):
        RecordedProducts.log.append((other.shape, other.dtype))
        return np.asarray(self) @ other


@pytest.mark.parametrize("pairs", [1, 63, 64, 65, 130])
def test_population_product_is_one_product_per_block_of_64_pairs(pairs):
    """population_product(x, factors) is x times every pair's factors, (N, p, k), within float32
    rounding of a float64 reference (1e-5: sums of 9 products of size ~3). As its docstring says,
    it makes ceil(p / 64) products whose right operands all have ONE shape, (n, 64 k), in x's dtype
    (the last block padded with zeros), so a pair gets the same bits alone as among p pairs."""
    rng = np.random.default_rng(pairs)
    k, n = 3, 9
    x = (rng.random((6, n)) < 0.5).astype(np.float32)
    factors = rng.normal(size=(pairs, k, n)).astype(np.float32)
    RecordedProducts.log = []
    out = eggroll.population_product(x.view(RecordedProducts), factors)
    assert type(out) is np.ndarray and out.shape == (6, pairs, k) and out.dtype == np.float32
    blocks = -(-pairs // eggroll.PAIRS_PER_BLOCK)
    assert RecordedProducts.log == [((n, eggroll.PAIRS_PER_BLOCK * k), np.dtype(np.float32))] * blocks
    reference = np.einsum("bn,pkn->bpk", x.astype(np.float64), factors.astype(np.float64))
    assert np.max(np.abs(out - reference)) <= 1e-5
    for p in {0, pairs // 2, pairs - 1}:
        np.testing.assert_array_equal(eggroll.population_product(x, factors[p:p + 1])[:, 0], out[:, p])


def test_lowrank_forward_is_independent_of_member_chunking():
    """perturbed_forward gives the same spike counts whether the members run 2 at a time or all at
    once (snn.CHUNK_BYTES decides); the per-pair slicing start // 2 .. stop // 2 must line up.
    Exact equality: the per-member arithmetic is the same, only grouped differently."""
    params = snn.init_params(4, (12, 8, 3), std=1.0)
    frames = (np.random.default_rng(4).random((5, 3, 12)) < 0.5).astype(np.float32)
    config = es_config(population=10, rank=2, sigma=0.3, seed=9)
    whole, hidden_whole = snn_eggroll.perturbed_forward(params, frames, config, 2, count_hidden=True)
    for chunk in (2, 4, 6):
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(snn, "CHUNK_BYTES", chunk * 3 * 8 * 4)
            assert snn.members_per_chunk(10, 3, 8, np) == chunk
            chunked, hidden_chunked = snn_eggroll.perturbed_forward(params, frames, config, 2, count_hidden=True)
        assert np.array_equal(chunked, whole)
        assert np.array_equal(hidden_chunked, hidden_whole)


@pytest.mark.parametrize("change, told", [
    (lambda p: {**p, "W1": p["W1"] * np.nan}, "W1 holds NaN or inf, which no update makes: give finite parameters"),
    (lambda p: {**p, "b2": p["b2"].astype(np.float64)}, "the parameters mix float32 and float64: give them all one "
                                                        "float type"),
    (lambda p: {**p, "W2": p["W2"][:, :10]}, "W2 (10, 10) and b2 (10,) do not fit the layer before")])
def test_a_configs_members_refuse_parameters_no_network_has(change, told):
    """Config.members, the population a client draws without running it, checks the parameters as
    perturbed_forward does: NaN weights, mixed float types or a layer that does not fit are named,
    not drawn into members."""
    config = snn_eggroll.Config(8, 1, 0.1, 0, 1.0)
    with pytest.raises(ValueError, match="^" + re.escape(told)):
        config.members(change(snn.init_params(0)), 0)


# ---------------------------------------------------------------------------------------------
# 5. Antithetic pairs

def test_antithetic_members_are_mirror_images():
    """Members 2p and 2p + 1 are theta + sigma E_p and theta - sigma E_p: given the same input, their
    currents lie symmetrically around the unperturbed current (sum = 2 x theta^T), in both layers,
    and differ (the perturbation is visible). All-ones frames make x B_p = sum of B_p's columns,
    non-zero. Hidden spikes are set equal for both members of a pair to probe the output layer.

    Tolerance 1e-12 on float64 currents of size ~10 (rounding ~1e-15); the difference must exceed
    1e-3, far above rounding, so identical members (no perturbation) would fail.
    """
    params = float64_params(1, (6, 5, 3))
    frames = np.ones((3, 2, 6))
    config = es_config(population=8, rank=2, sigma=0.2, seed=3)
    _, recorded = record_simulation(lambda: snn_eggroll.perturbed_forward(params, frames, config, 4))
    unperturbed = frames[0] @ params["W1"].T + params["b1"]
    for t in range(3):
        for p in range(config.pairs):
            plus, minus = recorded["hidden"][t, 2 * p], recorded["hidden"][t, 2 * p + 1]
            assert np.max(np.abs(plus + minus - 2 * unperturbed)) <= 1e-12
            assert np.max(np.abs(plus - minus)) > 1e-3

    assert recorded["output"]
    for start, stop, recorded_spikes, _, output_current in recorded["output"]:
        spikes = (np.random.default_rng(start).random(recorded_spikes.shape) < 0.5).astype(np.float64)
        spikes[..., 1::2, :, :] = spikes[..., 0::2, :, :]      # the same spikes for + and - (start is even)
        current = output_current(spikes, start, stop)
        for member in range(start, stop, 2):
            own = spikes[..., member - start, :, :]
            unperturbed = own @ params["W2"].T + params["b2"]
            plus, minus = current[..., member - start, :, :], current[..., member + 1 - start, :, :]
            assert np.max(np.abs(plus + minus - 2 * unperturbed)) <= 1e-12
            assert np.max(np.abs(plus - minus)) > 1e-3


def test_constant_fitness_gives_zero_gradient_and_no_update():
    """If every member scores the same, the centred ranks are all 0, every pair difference is 0, so
    the gradient is exactly 0 and Adam leaves the parameters exactly unchanged (m = v = 0, step 0).
    Exact equality. As a control, one differing member makes some gradient entry non-zero."""
    params = snn.init_params(2, (6, 4, 3))
    config = es_config(population=6, rank=2, sigma=0.1, seed=1)
    counts = np.full((6, 5, 3), 2.0, dtype=np.float32)
    labels = np.array([0, 1, 2, 0, 1])
    shaped = eggroll.centred_ranks(snn_eggroll.fitness(counts, labels, 4, logit_scale=1.0))
    assert np.array_equal(shaped, np.zeros(6))
    f = eggroll.pair_differences(shaped)
    grads = eggroll.gradient(f, config.members(params, 0), config.pairs)
    for grad in grads.values():
        assert not grad.any()
    new_params, state = optim.ascend(params, grads, optim.init(params), optim.Adam(lr=0.1))
    for name in params:
        assert np.array_equal(new_params[name], params[name])
        assert new_params[name].dtype == params[name].dtype
    assert state["t"] == 1

    counts[3, 0] = [0.0, 4.0, 0.0]  # member 3 (pair 1's - side) now differs
    f = eggroll.pair_differences(eggroll.centred_ranks(snn_eggroll.fitness(counts, labels, 4, logit_scale=1.0)))
    assert f[1] != 0 and f[0] == f[2] == 0
    assert any(grad.any() for grad in eggroll.gradient(f, config.members(params, 0), config.pairs).values())


def test_pair_differences_are_plus_minus_minus():
    """f_p = shaped[2p] - shaped[2p + 1]: the + member comes first, and f is float32 (the noise's
    dtype) whatever the dtype of the shaped fitnesses. Exact on small integers."""
    f = eggroll.pair_differences(np.array([5.0, 1.0, -2.0, 3.0]))
    assert f.dtype == np.float32 and np.array_equal(f, [4.0, -5.0])


def test_generation_step_is_its_stages_by_hand():
    """One generation with a non-default LIF and T (5) != B (3) equals its stages composed here:
    the members' counts from perturbed_forward with that LIF, fitness = mean log softmax(logit_scale
    * counts / T)[label] (computed with scipy, to 1e-12), centred ranks, pair differences, Eqs.
    (7)-(8) and one Adam step (the new parameters bit for bit). Its stats are exactly mean_fitness,
    max_fitness and shaped_std of those fitnesses and ranks (1e-12, float64). The LIF matters here:
    the default one gives other counts, and the members' fitnesses differ."""
    from scipy.special import log_softmax
    params = float64_params(5, (8, 6, 3))
    rng = np.random.default_rng(5)
    frames = (rng.random((5, 3, 8)) < 0.5).astype(np.float64)
    labels = rng.integers(0, 3, 3)
    config = es_config(population=12, rank=2, sigma=0.5, seed=5, logit_scale=3.0)
    lif, adam = snn.LIF(beta=0.6, threshold=0.8), optim.Adam(lr=0.05)
    counts, _ = snn_eggroll.perturbed_forward(params, frames, config, 4, lif)
    assert not np.array_equal(counts, snn_eggroll.perturbed_forward(params, frames, config, 4)[0])
    log_p = log_softmax(config.logit_scale * counts / frames.shape[0], axis=-1)
    fitnesses = log_p[:, np.arange(3), labels].mean(axis=1)
    assert fitnesses.std() > 0 and frames.shape[0] != frames.shape[1]
    shaped = eggroll.centred_ranks(snn_eggroll.fitness(counts, labels, frames.shape[0], config.logit_scale))
    grads = eggroll.gradient(eggroll.pair_differences(shaped), config.members(params, 4), config.pairs)
    expected, _ = optim.ascend(params, grads, optim.init(params), adam)

    new, state, stats_ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 4, config, adam, lif)
    assert set(stats_) == {"mean_fitness", "max_fitness", "shaped_std"}
    assert stats_["mean_fitness"] == pytest.approx(fitnesses.mean(), abs=1e-12)
    assert stats_["max_fitness"] == pytest.approx(fitnesses.max(), abs=1e-12)
    assert stats_["shaped_std"] == pytest.approx(eggroll.centred_ranks(fitnesses).std(), abs=1e-12)
    for name in params:
        np.testing.assert_array_equal(new[name], expected[name])
    assert state["t"] == 1


def test_generation_step_takes_adams_weight_decay():
    """Adam's decoupled weight decay reaches the generation's step: the parameters are those of the
    same generation without it, less lr x weight_decay x theta (optim.py)."""
    params = float64_params(2, (8, 6, 3))
    rng = np.random.default_rng(2)
    frames = (rng.random((4, 5, 8)) < 0.5).astype(np.float64)
    labels = rng.integers(0, 3, 5)
    config = es_config(population=8, rank=2, sigma=0.5, seed=2, logit_scale=3.0)
    plain, _, _ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 1, config, optim.Adam(0.05))
    decayed, _, _ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 1, config,
                                                optim.Adam(0.05, weight_decay=0.2))
    for name in params:
        np.testing.assert_allclose(decayed[name], plain[name] - 0.05 * 0.2 * params[name], rtol=0, atol=1e-12)


def test_a_spike_cost_takes_each_members_hidden_spikes_per_sample_off_its_fitness():
    """With spike_cost 0.05 a generation's fitness of member theta +- sigma E_p is its mean log
    softmax(counts / T)[label] less 0.05 x its hidden spikes / N, the member materialised and run by
    snn.forward, computed with scipy (T (5) != B (3), to 1e-12); the update is that of the centred
    ranks of those fitnesses, bit for bit. The cost reorders the members here, so the test can tell
    a priced generation from a free one."""
    from scipy.special import log_softmax
    params, frames, config = draw_network((7, 6, 4, 6, 5, 3, 2, 12345))
    config = dataclasses.replace(config, spike_cost=0.05)
    labels = np.random.default_rng(1).integers(0, 4, 3)
    noise_ = member_noise(config, 3, params)
    free, hidden = [], []
    for member in range(config.population):
        p, sign = member // 2, 1 - 2 * (member % 2)
        perturbed = {name: value + sign * config.sigma * noise_[name][p] for name, value in params.items()}
        counts, spikes = snn.forward(perturbed, frames, count_hidden=True)
        free.append(log_softmax(counts[0] / 5, axis=-1)[np.arange(3), labels].mean())
        hidden.append(spikes[0])
    fitnesses = np.array(free) - 0.05 * np.array(hidden) / 3
    shaped = eggroll.centred_ranks(fitnesses)
    assert not np.array_equal(shaped, eggroll.centred_ranks(np.array(free)))
    adam = optim.Adam(lr=0.05)
    grads = eggroll.gradient(eggroll.pair_differences(shaped), config.members(params, 3), config.pairs)
    expected, _ = optim.ascend(params, grads, optim.init(params), adam)
    new, _, stats_ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 3, config, adam)
    assert stats_["mean_fitness"] == pytest.approx(fitnesses.mean(), abs=1e-12)
    assert stats_["max_fitness"] == pytest.approx(fitnesses.max(), abs=1e-12)
    for name in params:
        np.testing.assert_array_equal(new[name], expected[name])


def test_a_spike_cost_teaches_eggroll_to_fire_less():
    """60 generations on the synthetic task of section 8 from the same start: with spike_cost 0.01 the
    hidden layer fires under half as often on 400 held-out samples as without (here 5.1 against 13.2
    per sample), and the network still learns the task (>= 0.85 where it reaches 0.955; binomial SE
    0.01). Deterministic seeds."""
    test_frames, test_labels = synthetic_task(np.random.default_rng(123), 400)
    hidden, accuracy = {}, {}
    for spike_cost in (0.0, 0.01):
        rng, params = np.random.default_rng(0), snn.init_params(0, sizes=(24, 16, 4))
        config = dataclasses.replace(es_config(population=64, rank=2, sigma=0.3, seed=1), spike_cost=spike_cost)
        state, adam = optim.init(params), optim.Adam(lr=0.05)
        for generation in range(60):
            frames, labels = synthetic_task(rng, 32)
            params, state, _ = snn_eggroll.generation_step(params, state, frames, labels, generation, config, adam)
        counts, spikes = snn.forward(params, test_frames, count_hidden=True)
        hidden[spike_cost] = float(spikes[0]) / test_labels.size
        accuracy[spike_cost] = snn.correct_per_class(counts[0], test_labels).sum() / test_labels.size
    assert hidden[0.01] < 0.5 * hidden[0.0], hidden
    assert min(accuracy.values()) >= 0.85, accuracy


# ---------------------------------------------------------------------------------------------
# 6. Centred ranks

@settings(max_examples=60)
@given(st.lists(st.integers(-3, 3), min_size=2, max_size=40))
def test_centred_ranks_properties(values):
    """Centred ranks of arrays with many ties: in [-0.5, 0.5], sum 0, order-preserving, tied values
    share one (mean) rank, equal to scipy's average-method ranks scaled to [-0.5, 0.5], and the
    extremes reach -0.5 / 0.5 when the smallest / largest value is unique.

    Tolerances 1e-12 cover float64 rounding of sums of <= 40 numbers of size <= 0.5.
    """
    x = np.asarray(values, dtype=np.float64)
    r = eggroll.centred_ranks(x)
    assert r.shape == x.shape
    assert np.all(r >= -0.5) and np.all(r <= 0.5)
    assert abs(r.sum()) <= 1e-12
    expected = (stats.rankdata(x, method="average") - 1) / (x.size - 1) - 0.5
    assert np.max(np.abs(r - expected)) <= 1e-12
    for i in range(x.size):
        for j in range(x.size):
            if x[i] == x[j]:
                assert r[i] == r[j]
            elif x[i] < x[j]:
                assert r[i] < r[j]
    if (x == x.min()).sum() == 1:
        assert r[x.argmin()] == -0.5
    if (x == x.max()).sum() == 1:
        assert r[x.argmax()] == 0.5


def test_centred_ranks_by_hand():
    """A hand-worked case: values (10, 30, 20, 30) have ranks (0, 2.5, 1, 2.5) of 0..3, so centred
    ranks (-0.5, 1/3, -1/6, 1/3). Tolerance 1e-15 (float64 rounding of one division)."""
    r = eggroll.centred_ranks(np.array([10.0, 30.0, 20.0, 30.0]))
    assert np.max(np.abs(r - np.array([-0.5, 1 / 3, -1 / 6, 1 / 3]))) <= 1e-15


# ---------------------------------------------------------------------------------------------
# 7. Bad input is refused with a message naming the problem

ADAM = optim.Adam(lr=0.01)


def small_problem():
    params = snn.init_params(0, (6, 4, 3))
    frames = np.zeros((2, 5, 6), dtype=np.float32)
    labels = np.zeros(5, dtype=np.int64)
    return params, optim.init(params), frames, labels


@pytest.mark.parametrize("frames_shape, labels_shape, message", [
    ((5, 6), (5,), r"frames must have shape \(T, N, 6\), got \(5, 6\)"),
    ((2, 5, 7), (5,), r"frames must have shape \(T, N, 6\), got \(2, 5, 7\)"),
    ((2, 1, 5, 6), (5,), r"frames must have shape"),
    ((2, 5, 6), (4,), r"labels must have shape \(5,\).*got \(4,\)"),
    ((2, 5, 6), (5, 1), r"labels must have shape \(5,\).*got \(5, 1\)"),
])
def test_generation_step_rejects_bad_shapes(frames_shape, labels_shape, message):
    """Frames that are not (T, N, n_in) for W1, or labels that are not (N,), raise ValueError naming
    the expected and the given shapes, before any work is done."""
    params, state, _, _ = small_problem()
    with pytest.raises(ValueError, match=message):
        snn_eggroll.generation_step(params, state, np.zeros(frames_shape, np.float32),
                                    np.zeros(labels_shape, np.int64), 0, es_config(population=4, rank=2), ADAM)


@pytest.mark.parametrize("changes, message", [
    (dict(sigma=0.0), r"sigma must be a finite int or float > 0, got 0\.0"),
    (dict(sigma=-0.1), r"sigma must be a finite int or float > 0, got -0\.1"),
    (dict(sigma=float("nan")), r"sigma must be a finite int or float > 0, got nan"),
    (dict(population=3), r"population must be an even number >= 2.*got 3"),
    (dict(population=1), r"population must be an even number >= 2.*got 1"),
    (dict(population=0), r"population must be an even number >= 2.*got 0"),
    (dict(population=-2), r"population must be an even number >= 2.*got -2"),
    (dict(rank=0), r"rank must be a whole number >= 1, got 0: use e\.g\. 1 or 4"),
    (dict(rank=4), r"rank must lie in 1\.\.3 \(the smaller side of W2, 3x4\), got 4"),
    (dict(rank=7), r"rank must lie in 1\.\.4 \(the smaller side of W1, 4x6\), got 7"),
])
def test_generation_step_rejects_bad_config(changes, message):
    """sigma <= 0 (or NaN), an odd or < 2 population, and a rank outside 1..min(m, n) of either weight
    raise ValueError naming the setting and the value given."""
    params, state, frames, labels = small_problem()
    config = es_config(**{**dict(population=4, rank=2), **changes})
    with pytest.raises(ValueError, match=message):
        snn_eggroll.generation_step(params, state, frames, labels, 0, config, ADAM)


@pytest.mark.parametrize("scale", [0.0, -1.0, float("nan"), "2"])
@pytest.mark.parametrize("setting", ["output_sigma_scale", "inner_scale"])
def test_a_layers_sigma_scale_not_above_zero_is_named(scale, setting):
    """perturbed_forward and generation_step refuse an output_sigma_scale or inner_scale <= 0, NaN or
    not a number naming that setting and a value for it, not the layer's sigma it would make."""
    params, state, frames, labels = small_problem()
    config = dataclasses.replace(es_config(4, 2), **{setting: scale})
    for call in (lambda: snn_eggroll.perturbed_forward(params, frames, config, 0),
                 lambda: snn_eggroll.generation_step(params, state, frames, labels, 0, config, ADAM)):
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == f"{setting} must be an int or float in (0, 1e+06], got {scale!r}: use e.g. 1.0"


@pytest.mark.parametrize("population, suggestion", [(3, 4), (5, 6), (1, 2), (0, 2), (-2, 2), (-3, 2)])
def test_bad_population_error_suggests_the_next_even_population(population, suggestion):
    """The error for a population that is odd or < 2 suggests the next even number, at least 2."""
    with pytest.raises(ValueError, match=rf"got {population}: use e\.g\. {suggestion}$"):
        interface_checks.check_population(population)


def test_rank_equal_to_the_smaller_side_is_accepted():
    """The largest legal rank, min(m, n) of the smallest weight (3 here), runs and returns finite
    parameters of unchanged shapes and dtypes; it must not be refused by an off-by-one."""
    params, state, frames, labels = small_problem()
    new_params, _, stats_ = snn_eggroll.generation_step(params, state, frames, labels, 0,
                                                        es_config(population=4, rank=3), ADAM)
    for name in params:
        assert new_params[name].shape == params[name].shape and new_params[name].dtype == params[name].dtype
        assert np.isfinite(new_params[name]).all()
    assert np.isfinite(stats_["mean_fitness"])


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_centred_ranks_rejects_non_finite_fitness(bad):
    """NaN or infinite fitness raises ValueError saying so (ranks of NaN are meaningless), and
    what to do about it (an infeasible member given -inf, say, gets a finite low fitness)."""
    with pytest.raises(ValueError, match=re.escape("fitness holds NaN or inf: lower the learning rate or sigma, or "
                                                   "check the inputs for non-finite values (a member to be ranked "
                                                   "last takes a finite fitness below the others')")):
        eggroll.centred_ranks(np.array([0.1, bad, 0.3, 0.2]))


# ---------------------------------------------------------------------------------------------
# 8. End to end: EGGROLL learns a small spiking classification task

def synthetic_task(rng, n_samples, n_classes=4, n_in=24, n_frames=6, p_on=0.4, p_off=0.1):
    """Binary event frames (T, N, n_in): class c lights its own n_in / n_classes pixels with
    probability p_on in every frame, all other pixels fire with p_off."""
    labels = rng.integers(0, n_classes, n_samples)
    prob = np.full((n_samples, n_in), p_off)
    width = n_in // n_classes
    for c in range(n_classes):
        prob[labels == c, c * width:(c + 1) * width] = p_on
    frames = (rng.random((n_frames, n_samples, n_in)) < prob).astype(np.float32)
    return frames, labels


def test_eggroll_learns_a_synthetic_spiking_task():
    """80 generations of EGGROLL (population 64, rank 2, sigma 0.3, lr 0.05) on fresh minibatches of
    32 take a 24 -> 16 -> 4 LIF network from about chance (0.25) to >= 0.85 accuracy on 400 held-out
    samples. Deterministic seeds; the run reaches ~0.97, and with 400 test samples the binomial
    standard error of an accuracy near 0.9 is 0.015, so 0.85 sits > 5 SE below the expected level.
    The initial network must be near chance (<= 0.45), so the gain is learnt, not inherited.
    """
    rng = np.random.default_rng(0)
    params = snn.init_params(0, sizes=(24, 16, 4))
    config, adam = es_config(population=64, rank=2, sigma=0.3, seed=1), optim.Adam(lr=0.05)
    state = optim.init(params)
    test_frames, test_labels = synthetic_task(np.random.default_rng(123), 400)

    def accuracy(p):
        counts, _ = snn.forward(p, test_frames)
        return snn.correct_per_class(counts[0], test_labels).sum() / test_labels.size

    assert accuracy(params) <= 0.45
    first_fitness = None
    for generation in range(80):
        frames, labels = synthetic_task(rng, 32)
        params, state, stats_ = snn_eggroll.generation_step(params, state, frames, labels, generation, config, adam)
        first_fitness = stats_["mean_fitness"] if first_fitness is None else first_fitness
    assert accuracy(params) >= 0.85
    assert stats_["mean_fitness"] > first_fitness
    assert all(v.dtype == np.float32 for v in params.values())
