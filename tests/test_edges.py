"""The core's public functions at the edges of what the other tests feed them: generations with
more than one block of 64 pairs on one process, centred ranks of more values than the GPU ranks
by counting (8,192) and of a 2-D input, Philox words at the end of their range and after one
round, noise for no pair and for more blocks than one CPU pass, and the cross-entropy on array
modules whose take_along_axis needs its axis (NumPy < 2.3, CuPy). Array functions run on NumPy,
on the device stand-in of strict_array.py, and on CuPy where a GPU is.
"""
import math

import numpy as np
import pytest
from scipy import stats

import backend
import baselines
import eggroll
import gpu
import noise
import optim
import snn
import snn_eggroll
import strict_array
from network_gradient import network_gradient

CUPY = backend._usable_cupy()
GPU = [pytest.param(CUPY, id="cupy", marks=pytest.mark.skipif(CUPY is None, reason="needs CuPy and a GPU"))]
# NumPy, the CPU's stand-in for a device (tests/strict_array.py: the NumPy expressions on device
# arrays), and CuPy where a GPU is.
MODULES = [pytest.param(np, id="numpy"), pytest.param(strict_array, id="strict"), *GPU]


def on(xp, array):
    return array if xp is np else xp.asarray(array)


# ---------------------------------------------------------------------------------------------
# One process, more than one block of pairs

@pytest.mark.parametrize("population", [2 * (64 * 2 + 37), 512])
@pytest.mark.parametrize("method", ["eggroll", "es"])
def test_a_generation_of_several_blocks_of_pairs_is_its_stages_by_hand(method, population):
    """165 pairs (two whole blocks of 64 and one of 37) and 256 (the paper's population of 512):
    one generation on one process equals its stages composed here over all pairs (every member's
    counts, the fitnesses, centred ranks, pair differences, the gradient and one Adam step), bit
    for bit. A share-out that held or summed one block only would miss pairs 64 and up."""
    params = snn.init_params(3, (10, 6, 4))
    rng = np.random.default_rng(4)
    frames = (rng.random((4, 5, 10)) < 0.4).astype(np.float32)
    labels = rng.integers(0, 4, 5)
    adam = optim.Adam(lr=0.05)
    if method == "eggroll":
        config = snn_eggroll.Config(population, rank=2, sigma=0.5, seed=9, logit_scale=2.0)
        step, forward, gradient = snn_eggroll.generation_step, snn_eggroll.perturbed_forward, network_gradient
    else:
        config = baselines.ESConfig(population, sigma=0.5, seed=9, logit_scale=2.0)
        step, forward, gradient = baselines.es_generation_step, baselines.es_forward, baselines.full_rank_gradient
    counts, _ = forward(params, frames, config, 6)
    assert counts.shape == (population, 5, 4)
    fitnesses = snn_eggroll.fitness(counts, labels, 4, config.logit_scale)
    f = eggroll.pair_differences(eggroll.centred_ranks(fitnesses))
    assert f.shape == (population // 2,) and np.count_nonzero(f[64:]) > 50  # the late pairs matter
    expected, _ = optim.ascend(params, gradient(f, params, config, 6), optim.init(params), adam)

    new, state, stats_ = step(params, optim.init(params), frames, labels, 6, config, adam)
    assert stats_["mean_fitness"] == float(fitnesses.astype(np.float64).mean())  # tell's fitness is float64
    assert stats_["max_fitness"] == float(fitnesses.max())
    for name in params:
        np.testing.assert_array_equal(new[name], expected[name], err_msg=name)
    assert state["t"] == 1


# ---------------------------------------------------------------------------------------------
# Centred ranks: many values, and a 2-D input

def scaled_ranks(values):
    """scipy's average-method ranks of all values (flattened), scaled to [-0.5, 0.5]."""
    flat = np.ravel(values)
    return (stats.rankdata(flat, method="average") - 1) / max(flat.size - 1, 1) - 0.5


@pytest.mark.parametrize("xp", MODULES)
@pytest.mark.parametrize("size", [gpu.RANKS_BY_COUNTING_MAX, gpu.RANKS_BY_COUNTING_MAX + 1, 20_000])
@pytest.mark.parametrize("distinct", [7, 10 ** 9])
def test_centred_ranks_of_many_values_are_scipys(xp, size, distinct):
    """At and above the 8,192 values a GPU ranks by counting (beyond, it sorts, as a CPU always
    does), with many ties and almost none: scipy's average ranks scaled to [-0.5, 0.5], to 1e-12
    (float64 rounding of one division), summing to 0 (1e-9: 20,000 terms of size <= 0.5)."""
    values = (np.random.default_rng(size + distinct).integers(0, distinct, size) / 7).astype(np.float32)
    got = eggroll.centred_ranks(on(xp, values))
    assert got.shape == (size,) and got.dtype == np.float64
    got = backend.to_numpy(got)
    np.testing.assert_allclose(got, scaled_ranks(values), rtol=0, atol=1e-12)
    assert abs(got.sum()) <= 1e-9


@pytest.mark.parametrize("xp", MODULES)
@pytest.mark.parametrize("shape", [(3, 4), (2, 3, 2), (1, 5), (90, 100)])
def test_centred_ranks_of_a_2d_input_rank_all_values_together_flat(xp, shape):
    """The contract for an input of more than one axis: every value is ranked among all of them,
    and the ranks come back flat, (values.size,), in the input's C order: what the GPU kernel
    returns (gpu.centred_ranks ravels), so CPU and GPU agree. Ties across rows share one rank.
    (90, 100) is 9,000 values: sorted on a GPU too. Tolerance 1e-12."""
    values = np.random.default_rng(shape[0]).integers(0, 5, shape).astype(np.float64)
    got = eggroll.centred_ranks(on(xp, values))
    assert got.shape == (values.size,)
    got = backend.to_numpy(got)
    np.testing.assert_allclose(got, scaled_ranks(values), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(got, backend.to_numpy(eggroll.centred_ranks(on(xp, values.ravel()))))


def test_centred_ranks_of_a_2d_input_by_hand():
    """[[10, 30], [20, 30]]: ranks 0, 2.5, 1, 2.5 of 0..3, so (-0.5, 1/3, -1/6, 1/3), flat."""
    got = eggroll.centred_ranks(np.array([[10.0, 30.0], [20.0, 30.0]]))
    assert got.shape == (4,)
    np.testing.assert_allclose(got, [-0.5, 1 / 3, -1 / 6, 1 / 3], rtol=0, atol=1e-15)


# ---------------------------------------------------------------------------------------------
# Philox at the edges

M0, M1 = 0xD2511F53, 0xCD9E8D57
W0, W1 = 0x9E3779B9, 0xBB67AE85


def philox_by_hand(counter, key, rounds):
    """Philox4x32-R in Python integers, from Salmon et al.'s definition."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for round_index in range(rounds):
        if round_index:
            k0, k1 = (k0 + W0) % 2 ** 32, (k1 + W1) % 2 ** 32
        p0, p1 = M0 * c0, M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 % 2 ** 32, (p0 >> 32) ^ c3 ^ k1, p0 % 2 ** 32
    return c0, c1, c2, c3


@pytest.mark.parametrize("rounds", [1, 2, 3, 7, 10])
def test_philox_words_are_uint32_after_any_number_of_rounds(rounds):
    """philox4x32 with R rounds equals the definition in Python integers, for integer and uint32
    array counters, and its words are uint32 (also after one round, when two of them have not
    yet been recomputed from the products)."""
    rng = np.random.default_rng(rounds)
    counters = [tuple(int(w) for w in rng.integers(0, 2 ** 32, 4, dtype=np.uint64)) for _ in range(5)]
    counters += [(0, 0, 0, 0), (2 ** 32 - 1,) * 4]
    key = (0xA4093822, 0x299F31D0)
    for counter in counters:
        got = noise.philox4x32(counter, key, rounds=rounds)
        assert all(word.dtype == np.uint32 for word in got), [word.dtype for word in got]
        assert tuple(int(word) for word in got) == philox_by_hand(counter, key, rounds)
    arrays = [np.array([c[i] for c in counters], dtype=np.uint32) for i in range(4)]
    got = noise.philox4x32(arrays, key, rounds=rounds)
    for index, counter in enumerate(counters):
        assert tuple(int(word[index]) for word in got) == philox_by_hand(counter, key, rounds)
    assert all(word.dtype == np.uint32 for word in got)


@pytest.mark.parametrize("word", [0, 1, 2, 3])
def test_philox_refuses_a_counter_word_beyond_32_bits(word):
    """A counter word of 2^32 + 5 (generation 2^32 + 5, say) raises OverflowError instead of
    wrapping round to word 5's numbers; 2^32 - 1 is the last word accepted. Through
    standard_normals too, for the generation and for a pair given as a Python int."""
    counter = [0, 0, 0, 0]
    counter[word] = 2 ** 32 + 5
    with pytest.raises(OverflowError):
        noise.philox4x32(counter, (1, 2))
    counter[word] = 2 ** 32 - 1
    assert all(w.dtype == np.uint32 for w in noise.philox4x32(counter, (1, 2)))
    with pytest.raises(OverflowError):
        noise.standard_normals(1, 2 ** 32 + 5, [0], 0, 4)
    with pytest.raises(OverflowError):
        noise.standard_normals(1, 0, [2 ** 32 + 5], 0, 4)


# ---------------------------------------------------------------------------------------------
# Noise for no pair, and for more blocks than one CPU pass

@pytest.mark.parametrize("xp", [pytest.param(np, id="numpy"), *GPU])
@pytest.mark.parametrize("count", [1, 5, 2312 * 2])
def test_noise_for_no_pair_is_empty(xp, count):
    """A process that holds no pair draws no noise: (0, count) float32, no error."""
    got = noise.standard_normals(3, 1, xp.arange(0), 2, count, xp)
    assert got.shape == (0, count) and got.dtype == np.float32
    assert noise.normals(3, 1, xp.arange(0), "W1", count, xp).shape == (0, count)


def test_noise_for_no_pair_is_empty_on_the_numpy_expressions_of_a_device():
    """The same on the NumPy expressions run on device arrays (strict_array's, as CuPy's with
    gpu.KERNELS off): a process of a GPU job that holds no pair."""
    got = noise.standard_normals(3, 1, strict_array.arange(0), 2, 5, strict_array)
    assert isinstance(got, strict_array.StrictArray) and got.shape == (0, 5) and got.dtype == np.float32


def test_noise_of_more_blocks_than_one_pass_is_the_definition():
    """More Philox blocks per pair than one CPU pass holds (BLOCKS_PER_PASS): every row is its
    stream by definition, the words of blocks 0..n-1 through Box-Muller in order, bit for bit,
    alone or beside other pairs (full-rank noise of the paper's W1 is 36,992 blocks a pair)."""
    count = 4 * noise.BLOCKS_PER_PASS + 6
    pairs = np.array([5, 0, 77])
    got = noise.standard_normals(123, 4, pairs, 2, count)
    assert got.shape == (3, count) and got.dtype == np.float32
    blocks = np.arange(-(-count // 4), dtype=np.uint32)
    for row, pair in enumerate(pairs):
        words = noise.philox4x32((blocks, pair, 2, 4), (123, 0))
        first, second = noise.box_muller(words[0], words[1])
        third, fourth = noise.box_muller(words[2], words[3])
        expected = np.stack([first, second, third, fourth], axis=1).ravel()[:count]
        np.testing.assert_array_equal(got[row], expected)
        np.testing.assert_array_equal(noise.standard_normals(123, 4, [pair], 2, count)[0], expected)


# ---------------------------------------------------------------------------------------------
# The cross-entropy where take_along_axis needs its axis

def test_cross_entropy_names_the_class_axis(monkeypatch):
    """NumPy before 2.3 and CuPy have no default axis in take_along_axis (NumPy >= 2.3 takes -1):
    with such a take_along_axis the cross-entropy still picks each sample's label along the class
    axis, for one member (N, n_out) and for many (P, N, n_out)."""
    original = np.take_along_axis

    def take_along_axis(arr, indices, axis):  # no default: the signature of NumPy < 2.3 and CuPy
        return original(arr, indices, axis)

    monkeypatch.setattr(np, "take_along_axis", take_along_axis)
    counts = np.array([[[2.0, 0.0], [2.0, 0.0]], [[0.0, 2.0], [1.0, 1.0]]])
    labels = np.array([0, 1])
    low, high = math.log(1 + math.exp(-1)), math.log(1 + math.e)
    np.testing.assert_allclose(snn.cross_entropy(counts, labels, 2), [(low + high) / 2, (high + math.log(2)) / 2],
                               rtol=0, atol=1e-12)
    assert abs(snn.cross_entropy(counts[0], labels, 2) - (low + high) / 2) <= 1e-12
