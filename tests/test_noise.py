"""Property tests of noise.py: Philox4x32-10 against Random123's known answers, independence of
its streams, and the normals drawn from it.

Statistical tests use fixed seeds, and every tolerance is a stated multiple (>= 5) of a standard
error derived from the sample size, so they cannot flake.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from scipy import stats

import noise


# ---------------------------------------------------------------------------------------------
# Philox4x32-10

@pytest.mark.parametrize("counter, key, expected", [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF), (0xFFFFFFFF, 0xFFFFFFFF),
     (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_known_answers(counter, key, expected):
    """Philox4x32-10 reproduces Random123's known-answer vectors (kat_vectors), bit for bit.

    Exact equality: a single wrong multiplier, rotation of words or key schedule changes every bit.
    Checked both with integer words and with the words as uint32 arrays (the vectorised path).
    """
    assert tuple(int(w) for w in noise.philox4x32(counter, key)) == expected
    as_arrays = [np.full(3, c, dtype=np.uint32) for c in counter]
    for word, want in zip(noise.philox4x32(as_arrays, key), expected):
        assert word.dtype == np.uint32
        assert (word == want).all()


def test_philox_counters_are_independent_elementwise():
    """A vector of counters gives, element by element, what each counter gives alone (no mixing).

    Exact equality: the array path must be a pure elementwise map.
    """
    rng = np.random.default_rng(5)
    counters = [rng.integers(0, 2 ** 32, 16, dtype=np.uint64).astype(np.uint32) for _ in range(4)]
    key = (0x12345678, 0x9ABCDEF0)
    together = noise.philox4x32(counters, key)
    for i in range(16):
        alone = noise.philox4x32([int(c[i]) for c in counters], key)
        assert tuple(int(w[i]) for w in together) == tuple(int(w) for w in alone)


@pytest.mark.parametrize("change", ["seed", "seed_high_word", "generation", "pair", "param"])
def test_every_key_and_counter_word_changes_the_stream(change):
    """Changing the seed (either 32-bit half), the generation, the pair or the parameter gives a
    different, uncorrelated stream.

    n = 4096 normals per stream: for independent streams the sample correlation has standard error
    1/sqrt(n) = 0.0156; the bound 5/sqrt(n) = 0.078 is 5 SE. Streams that ignored the changed word
    would be identical (correlation 1) and fail both checks.
    """
    base = dict(seed=7, generation=3, pair=2, param=1)
    other = dict(base)
    if change == "seed_high_word":
        other["seed"] = base["seed"] + 2 ** 32
    else:
        other[change] += 1
    n = 4096

    def stream(seed, generation, pair, param):
        return noise.standard_normals(seed, generation, [pair], param, n)[0].astype(np.float64)

    x, y = stream(**base), stream(**other)
    assert not np.array_equal(x, y)
    assert abs(np.corrcoef(x, y)[0, 1]) <= 5 / math.sqrt(n)


def test_standard_normals_are_standard_normal():
    """2^18 normals of one seed: mean 0, variance 1, and a Kolmogorov-Smirnov distance to N(0, 1)
    small enough for a normal sample.

    n = 262144. SE(mean) = 1/sqrt(n) = 0.00195, bound 5 SE; SE(variance) = sqrt(2/n) = 0.00276,
    bound 5 SE. KS: sqrt(n) D converges to the Kolmogorov distribution, P(sqrt(n) D > 2.5) ~ 7e-6,
    so the bound D <= 2.5/sqrt(n) = 0.0049 only fails for a visibly wrong distribution (e.g. Box-Muller
    with uniform numbers off by a factor, or a missing cos/sin half, fail it by far).
    """
    n = 2 ** 18
    z = noise.standard_normals(2024, 0, np.arange(64), 0, n // 64).ravel().astype(np.float64)
    assert z.size == n
    assert abs(z.mean()) <= 5 / math.sqrt(n)
    assert abs(z.var() - 1) <= 5 * math.sqrt(2 / n)
    assert stats.kstest(z, "norm").statistic <= 2.5 / math.sqrt(n)
    # The four normals of a Philox block come from two Box-Muller pairs: each lane is N(0, 1) too.
    lanes = z.reshape(-1, 4)
    for lane in lanes.T:
        assert abs(lane.var() - 1) <= 5 * math.sqrt(2 / lane.size)


# ---------------------------------------------------------------------------------------------
# Streams

@settings(max_examples=20)
@given(short=st.integers(1, 40), extra=st.integers(0, 40), pair=st.integers(0, 1000))
def test_a_shorter_draw_is_a_prefix_of_a_longer_one(short, extra, pair):
    """standard_normals(count=c) is the first c numbers of the stream, whatever c is (block padding
    to a multiple of 4 must not shift anything). Exact equality."""
    longer = noise.standard_normals(11, 5, [pair], 3, short + extra)
    assert np.array_equal(noise.standard_normals(11, 5, [pair], 3, short), longer[:, :short])


def test_each_block_of_four_normals_is_box_muller_of_its_philox_words_in_order():
    """Normals 4k..4k+3 of a stream are Box-Muller of Philox words (0, 1) then (2, 3) at counter
    (block k, pair, parameter id, generation) and key (seed's low word, high word), for every block
    and pair. Exact equality (the same float32 operations)."""
    seed, generation, pairs, param_id = 2 ** 33 + 7, 3, [0, 5], noise.param_id("W2")
    drawn = noise.standard_normals(seed, generation, pairs, param_id, 12)
    for row, pair in enumerate(pairs):
        for block in range(3):
            words = [np.asarray(word) for word in noise.philox4x32(
                (np.uint32(block), np.uint32(pair), np.uint32(param_id), np.uint32(generation)),
                (seed & noise.MASK32, seed >> 32))]
            by_hand = [*noise.box_muller(words[0], words[1]), *noise.box_muller(words[2], words[3])]
            assert np.array_equal(drawn[row, 4 * block:4 * block + 4], np.array(by_hand, np.float32)), (pair, block)


def test_box_muller_by_hand():
    """Box-Muller of the extreme words, by hand, as float32 arrays: radius bits 0 give u = 2^-24,
    so radius sqrt(-2 ln 2^-24) = sqrt(48 ln 2); all ones give u = 1, radius 0; angle bits 0 give
    angle 0 (cos 1, sin 0) and 2^30 a quarter turn (cos 0, sin 1). Tolerance 1e-6 relative
    (float32 log, sqrt, sin and cos)."""
    radius_bits = np.array([0, 0, 0xFFFFFFFF], dtype=np.uint32)
    angle_bits = np.array([0, 1 << 30, 0], dtype=np.uint32)
    z_cos, z_sin = noise.box_muller(radius_bits, angle_bits)
    assert z_cos.dtype == z_sin.dtype == np.float32
    r = math.sqrt(48 * math.log(2))
    np.testing.assert_allclose(z_cos, [r, 0, 0], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(z_sin, [0, r, 0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("count, expected", [(5, [5]), (4 * (noise.BLOCKS_PER_PASS // 3), [3, 2]),
                                             (4 * (noise.BLOCKS_PER_PASS + 1), [1, 1, 1, 1, 1])])
def test_philox_passes_hold_a_cache_of_pairs_on_numpy_and_every_pair_off_it(monkeypatch, count, expected):
    """On NumPy a pass of Philox holds max(1, BLOCKS_PER_PASS // blocks) pairs, in order, so its
    temporaries stay in cache; off NumPy (CuPy without its kernels; the stand-in here) one pass
    holds every pair, the most a device can run at once. The numbers are the same either way."""
    import strict_array
    passes = []
    philox = noise.philox4x32

    def recording(counter, key, rounds=10):
        passes.append(counter[1].shape[0])  # the pairs' words, (pairs in this pass, 1)
        return philox(counter, key, rounds)

    monkeypatch.setattr(noise, "philox4x32", recording)
    pairs = [4, 0, 9, 2, 7]
    host = noise.standard_normals(11, 3, pairs, 1, count)
    assert passes == expected

    passes.clear()
    device = noise.standard_normals(11, 3, strict_array.asarray(np.array(pairs)), 1, count, strict_array)
    assert passes == [len(pairs)]
    np.testing.assert_array_equal(strict_array.asnumpy(device), host)


def test_every_parameter_draws_its_own_stream():
    """The module-level table noise.PARAM_IDS, which mutation testing does not reach (it mutates
    function bodies): each parameter's stream is its own, so no two parameters share noise. (With
    b2 given W2's id, b2's noise was W2's first row: every seeded run changed, no test failed.)"""
    draws = {name: noise.normals(7, 3, [0, 5], name, 256) for name in noise.PARAM_IDS}
    assert sorted(noise.PARAM_IDS) == ["W1", "W2", "b1", "b2"]
    for first in draws:
        for second in draws:
            if first < second:
                assert (draws[first] != draws[second]).mean() > 0.99, (first, second)


@pytest.mark.parametrize("name, expected", [("W1", (0.380400687456131, -0.296277791261673)),
                                            ("b1", (-0.16504697501659393, 2.6764473915100098)),
                                            ("W2", (-0.4288627803325653, -0.14084623754024506)),
                                            ("b2", (0.7245372533798218, -0.8440953493118286))])
def test_each_parameters_stream_known_answers(name, expected):
    """The first two normals of each parameter's stream at seed 1, generation 0, pair 0, as every
    committed run drew them: a changed parameter id, key, counter layout or Box-Muller changes them."""
    assert tuple(float(v) for v in noise.normals(1, 0, [0], name, 2)[0]) == expected


@pytest.mark.parametrize("seed, expected", [(2 ** 31 + 1, (1.0945624113082886, 1.3547149896621704)),
                                            (2 ** 32 + 1, (0.4320286214351654, 0.8548939228057861)),
                                            (2 ** 63 + 2 ** 40 + 1, (-1.896092176437378, -0.8901724815368652))])
def test_a_64_bit_seeds_two_words_are_philoxs_key(seed, expected):
    """Seed (hi << 32) | lo keys Philox with (lo, hi): the first two normals of W1's stream at
    generation 0, pair 0, for seeds beyond 31 and 32 bits, as drawn; seed 2^32 + 1 is key (1, 1)."""
    assert tuple(float(v) for v in noise.normals(seed, 0, [0], "W1", 2)[0]) == expected
    words = noise.philox4x32((0, 0, 0, 0), (seed & noise.MASK32, seed >> 32))
    plus = noise.box_muller(np.asarray(words[0]), np.asarray(words[1]))
    assert tuple(float(v) for v in plus) == expected
