"""Tests of snn.py: LIF semantics, the population simulation against a plain reference, chunking,
initialisation and the cross-entropy read-out."""
import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import gpu
import snn


def step(v, current, lif):
    """One LIF step through snn.lif_step with a fresh spike buffer; returns the spikes."""
    spikes = np.empty_like(v)
    out = snn.lif_step(v, current, lif, spikes)
    return spikes if out is None else out


def reference_forward(params, frames, lif=snn.LIF()):
    """Eqs. (1)-(2) written out plainly, one step and one layer at a time, float64.

    Returns the output spike counts (N, n_out) and the total number of hidden spikes.
    """
    n_frames, batch, _ = frames.shape
    v1 = np.zeros((batch, params["W1"].shape[0]))
    v2 = np.zeros((batch, params["W2"].shape[0]))
    counts, hidden_total = np.zeros_like(v2), 0.0
    for t in range(n_frames):
        v1 = lif.beta * v1 + (frames[t] @ params["W1"].T + params["b1"])
        o1 = v1 >= lif.threshold
        v1 = np.where(o1, 0.0, v1)
        hidden_total += o1.sum()
        v2 = lif.beta * v2 + (o1 @ params["W2"].T + params["b2"])
        o2 = v2 >= lif.threshold
        v2 = np.where(o2, 0.0, v2)
        counts += o2
    return counts, hidden_total


# ---------------------------------------------------------------------------------------------
# LIF step

@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lif_step_by_hand(dtype):
    """V <- beta V + I; spike iff V >= V_th (exactly at threshold spikes); spiking neurons reset to 0,
    the others keep V (negative included). beta = 0.5 and dyadic values make every sum exact, so the
    comparison is exact; the spikes are 0/1 in v's dtype and v is updated in place."""
    lif = snn.LIF(beta=0.5, threshold=1.0)
    v = np.array([0.0, 1.0, 0.5, 1.0, 1.0, 0.25, 0.5], dtype=dtype)
    current = np.array([0.5, 0.5, 0.75, 1.0, -1.0, 0.875, 0.7421875], dtype=dtype)
    # beta V + I:     0.5  1.0   1.0   1.5  -0.5   1.0   0.9921875
    spikes = step(v, current, lif)
    assert spikes.dtype == dtype
    assert spikes.tolist() == [0, 1, 1, 1, 0, 1, 0]
    assert v.tolist() == [0.5, 0.0, 0.0, 0.0, -0.5, 0.0, 0.9921875]


def test_lif_step_default_constants_and_threshold():
    """Default LIF (beta 0.9, V_th 1): from rest a current of exactly 1.0 spikes, 0.999 does not;
    a custom threshold is honoured (V = 2.0 spikes at V_th 2, 1.99 does not). Exact comparisons."""
    v = np.zeros(2)
    assert step(v, np.array([1.0, 0.999]), snn.LIF()).tolist() == [1, 0]
    assert v.tolist() == [0.0, 0.999]
    v = np.zeros(2)
    assert step(v, np.array([2.0, 1.99]), snn.LIF(threshold=2.0)).tolist() == [1, 0]


def test_lif_constant_current_spikes_periodically():
    """beta = 0.5 and constant I = 0.6: V runs 0.6, 0.9, 1.05 (spike, reset), 0.6, 0.9, 1.05, ...
    so the neuron spikes every third step; with I = 0.4, V approaches 0.8 < 1 and never spikes.
    Exact spike trains (the potentials stay >= 0.05 away from the threshold)."""
    lif = snn.LIF(beta=0.5, threshold=1.0)
    v = np.zeros(2)
    train = [step(v, np.array([0.6, 0.4]), lif).tolist() for _ in range(9)]
    assert [s[0] for s in train] == [0, 0, 1] * 3
    assert [s[1] for s in train] == [0] * 9


def test_lif_step_on_a_gpu_is_one_kernel_call(monkeypatch):
    """Where arrays take gpu.py's kernels, lif_step hands v, the current, the LIF constants and the
    spike buffer to gpu.lif_step, in that order, and returns what it returns (here a stand-in
    kernel on NumPy arrays; tests/test_gpu.py runs the real one against the NumPy step)."""
    calls, done = [], np.ones(3)
    monkeypatch.setattr(gpu, "enabled", lambda xp: True)
    monkeypatch.setattr(gpu, "lif_step", lambda *args: calls.append(args) or done)
    v, current, spikes, lif = np.zeros(3), np.ones(3), np.empty(3), snn.LIF(beta=0.5)
    assert snn.lif_step(v, current, lif, spikes) is done
    assert len(calls) == 1 and all(a is b for a, b in zip(calls[0], (v, current, lif, spikes)))
    assert len(calls[0]) == 4 and not v.any()


# ---------------------------------------------------------------------------------------------
# The whole network

network = st.tuples(st.integers(1, 8), st.integers(1, 8), st.integers(1, 5),   # n_in, n_hidden, n_out
                    st.integers(1, 6), st.integers(1, 4), st.integers(0, 10 ** 6))  # T, batch, seed


@settings(max_examples=40)
@given(network)
def test_forward_matches_plain_reference(shape):
    """snn.forward (float64) gives exactly the spike counts and hidden-spike totals of the plain
    step-by-step reference above, for random shapes, N(0, 1) weights and binary frames.
    Exact: both are float64 with the same sums up to rounding (~1e-15), far from flipping a spike."""
    n_in, n_hidden, n_out, n_frames, batch, seed = shape
    params = {k: v.astype(np.float64) for k, v in snn.init_params(seed, (n_in, n_hidden, n_out), std=1.0).items()}
    frames = (np.random.default_rng(seed).random((n_frames, batch, n_in)) < 0.5).astype(np.float64)
    counts, hidden = snn.forward(params, frames, count_hidden=True)
    expected, expected_hidden = reference_forward(params, frames)
    assert counts.shape == (1, batch, n_out)
    assert np.array_equal(counts[0], expected)
    assert hidden.tolist() == [expected_hidden]


def test_forward_refuses_more_members_than_the_ram_holds_before_allocating():
    """Members beyond RAM are one line naming the fix, not NumPy's MemoryError from the counts' zeros."""
    params = snn.init_params(1, (8, 6, 4))
    frames = np.ones((3, 2, 8), np.float32)
    with pytest.raises(ValueError) as refused:
        snn.forward(params, frames, n_members=10 ** 12)
    assert str(refused.value).startswith("1,000,000,000,000 members' output counts of 2 samples, 32,000.0 GB before "
                                         "any spike, more than this machine's ")
    assert str(refused.value).endswith(" GB of RAM: ask fewer members (n_members)")


def test_forward_spikes_at_all():
    """Guard for the reference test: on this fixed network some hidden and some output neurons do
    spike and others do not, so a simulation that never (or always) spikes fails the comparison."""
    params = {k: v.astype(np.float64) for k, v in snn.init_params(1, (8, 6, 4), std=1.0).items()}
    frames = (np.random.default_rng(1).random((6, 4, 8)) < 0.5).astype(np.float64)
    counts, hidden = snn.forward(params, frames, count_hidden=True)
    assert 0 < counts.sum() < counts.size * 6
    assert 0 < hidden[0] < 4 * 6 * 6



@pytest.mark.parametrize("layer", [1, 2])
def test_weights_whose_potentials_would_pass_float32_are_one_line_not_nan_counts(layer):
    """Finite weights so large that a layer's potentials could pass float32's range in T frames (the
    largest row sum of |W| plus |b|, times T): a ValueError naming the layer, before any product, where
    the counts would come from inf and NaN potentials; just below the bound the network runs."""
    params = snn.init_params(seed=1)
    frames = (np.random.default_rng(0).random((10, 4, 2312)) < 0.05).astype(np.float32)
    bound = snn.FLOAT32.max / 10 / (np.abs(params[f"W{layer}"].astype(np.float64)).sum(axis=1).max()
                                    + np.abs(params[f"b{layer}"].astype(np.float64)).max())
    for scale, refused in ((bound * 1.01, True), (bound / 1.01, False)):
        scaled = {**params, f"W{layer}": (params[f"W{layer}"] * scale).astype(np.float32),
                  f"b{layer}": (params[f"b{layer}"] * scale).astype(np.float32)}
        assert (snn.too_large(scaled, 10) == layer) is refused
    scaled = {**params, f"W{layer}": params[f"W{layer}"] * np.float32(1e38)}
    with pytest.raises(ValueError, match=rf"^the weights of layer {layer} are too large for 10 frames: its membrane "
                                         r"potentials could pass float32's range \(3.4e\+38\); give a network's "
                                         r"weights of a usual size, e.g. snn.init_params\(\)$"):
        snn.forward(scaled, frames)

def test_hidden_spikes_are_counted_only_when_asked():
    """forward and simulate return None for the hidden-spike totals unless count_hidden is set,
    and the same output counts either way."""
    params = snn.init_params(1, (8, 6, 4), std=1.0)
    frames = (np.random.default_rng(1).random((6, 4, 8)) < 0.5).astype(np.float32)
    counted, hidden = snn.forward(params, frames, count_hidden=True)
    counts, none = snn.forward(params, frames)
    assert none is None and hidden.shape == (1,) and hidden[0] > 0 and np.array_equal(counts, counted)
    hidden_current = (frames.reshape(-1, 8) @ params["W1"].T + params["b1"]).reshape(6, 4, 6)
    counts, none = snn.simulate(lambda t, start, stop: hidden_current[t],
                                lambda layer, spikes, start, stop: spikes @ params["W2"].T + params["b2"],
                                1, 6, 4, (8, 6, 4))
    assert none is None and np.array_equal(counts, counted)


@pytest.mark.parametrize("sizes", [(8, 6, 4), (8, 6, 5, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_simulation_runs_in_the_frames_dtype(monkeypatch, dtype, sizes):
    """A float32 network is simulated in float32 throughout (the training's precision, and what the
    GPU kernels compute) and a float64 one in float64: every membrane potential, input current and
    spike buffer lif_step sees, in every layer of one or two hidden layers, and the output counts,
    have the frames' dtype; hidden-spike totals are float64 counts."""
    params = {k: v.astype(dtype) for k, v in snn.init_params(2, sizes, std=1.0).items()}
    frames = (np.random.default_rng(2).random((5, 3, 8)) < 0.5).astype(dtype)
    seen, plain_step = set(), snn.lif_step

    def recording_step(v, current, lif, spikes):
        seen.add((v.dtype, np.asarray(current).dtype, spikes.dtype))
        return plain_step(v, current, lif, spikes)

    monkeypatch.setattr(snn, "lif_step", recording_step)
    counts, hidden = snn.forward(params, frames, n_members=3, count_hidden=True)
    assert seen == {(np.dtype(dtype),) * 3}
    assert counts.dtype == dtype and hidden.dtype == np.float64 and counts.sum() > 0


@pytest.mark.parametrize("chunk", [2, 4, 6])
def test_chunking_does_not_change_results(monkeypatch, chunk):
    """Simulating 7 members `chunk` at a time (set through snn.CHUNK_BYTES) gives exactly the counts
    and hidden-spike totals of simulating them all at once, and every member equals the single
    network. members_per_chunk must actually return `chunk`, so the chunked path is exercised."""
    params = snn.init_params(3, (10, 8, 3), std=1.0)
    frames = (np.random.default_rng(3).random((5, 3, 10)) < 0.5).astype(np.float32)
    single, single_hidden = snn.forward(params, frames, count_hidden=True)
    whole, whole_hidden = snn.forward(params, frames, n_members=7, count_hidden=True)
    monkeypatch.setattr(snn, "CHUNK_BYTES", chunk * 3 * 8 * 4)
    assert snn.members_per_chunk(7, 3, 8, np) == chunk
    chunked, chunked_hidden = snn.forward(params, frames, n_members=7, count_hidden=True)
    assert np.array_equal(chunked, whole) and np.array_equal(chunked_hidden, whole_hidden)
    assert all(np.array_equal(chunked[i], single[0]) for i in range(7))
    assert np.all(chunked_hidden == single_hidden[0])
    assert single.sum() > 0


@settings(max_examples=50)
@given(n_members=st.integers(1, 300), batch=st.integers(1, 64), n_hidden=st.integers(1, 128))
def test_members_per_chunk_on_cpu(n_members, batch, n_hidden):
    """On the CPU a chunk has at least 2 members (so antithetic pairs stay together), at most
    max(2, n_members), is even unless it is all of an odd population, and fits CHUNK_BYTES
    (float32 potentials) whenever 2 members do."""
    chunk = snn.members_per_chunk(n_members, batch, n_hidden, np)
    assert 2 <= chunk <= max(2, n_members)
    assert chunk % 2 == 0 or chunk == n_members
    if 2 * batch * n_hidden * 4 <= snn.CHUNK_BYTES:
        assert chunk * batch * n_hidden * 4 <= snn.CHUNK_BYTES


# ---------------------------------------------------------------------------------------------
# Initialisation

def test_init_params_shapes_dtype_and_std():
    """Default sizes 2312 -> 64 -> 10: W_l is (fan_out, fan_in), b_l (fan_out,), all float32, entries
    N(0, 0.3^2). Pooled over all 148,682 entries, n: SE(mean) = 0.3/sqrt(n) = 7.8e-4 and
    SE(std) ~ 0.3/sqrt(2n) = 5.5e-4; both checked to 5 SE. W1 alone (147,968 entries) likewise.
    Seeds are reproducible and different seeds give different weights."""
    params = snn.init_params(0)
    assert {k: v.shape for k, v in params.items()} == {"W1": (64, 2312), "b1": (64,), "W2": (10, 64), "b2": (10,)}
    assert all(v.dtype == np.float32 for v in params.values())
    for values in (np.concatenate([v.ravel() for v in params.values()]), params["W1"].ravel()):
        x = values.astype(np.float64)
        n = x.size
        assert abs(x.mean()) <= 5 * 0.3 / math.sqrt(n)
        assert abs(x.std() - 0.3) <= 5 * 0.3 / math.sqrt(2 * n)
    again = snn.init_params(0)
    assert all(np.array_equal(again[k], params[k]) for k in params)
    assert not np.array_equal(snn.init_params(1)["W1"], params["W1"])
    custom = snn.init_params(0, sizes=(5, 4, 3), std=2.0)
    assert custom["W1"].shape == (4, 5) and custom["W2"].shape == (3, 4)


def test_init_biases_are_their_own_n_0_03_draws():
    """The biases alone are N(0, 0.3^2) too (pooled with 148,608 weight entries, a bias offset would
    hide): b1 and b2 of 300 seeds, n = 22,200 entries, mean within 5 SE = 5 * 0.3/sqrt(n) = 0.010 of
    0 and std within 5 * 0.3/sqrt(2n) = 0.007 of 0.3."""
    biases = np.concatenate([np.concatenate([params["b1"], params["b2"]])
                             for params in (snn.init_params(seed) for seed in range(300))]).astype(np.float64)
    n = biases.size
    assert n == 300 * 74
    assert abs(biases.mean()) <= 5 * 0.3 / math.sqrt(n)
    assert abs(biases.std() - 0.3) <= 5 * 0.3 / math.sqrt(2 * n)


# ---------------------------------------------------------------------------------------------
# Read-out

@settings(max_examples=40)
@given(members=st.integers(1, 4), batch=st.integers(1, 6), classes=st.integers(2, 6),
       n_frames=st.integers(1, 10), logit_scale=st.sampled_from([0.5, 1.0, 10.0, 200.0]),
       seed=st.integers(0, 10 ** 6))
def test_cross_entropy_matches_direct_computation(members, batch, classes, n_frames, logit_scale, seed):
    """cross_entropy = mean over the batch of -log softmax(logit_scale * counts / T)[label], per
    member, compared with scipy's logsumexp formula written out here. Relative tolerance 1e-12
    (float64; the largest logits, 200, stay far from overflow with the max subtracted).
    Also: the log-probabilities exponentiate to rows summing to 1 (1e-12)."""
    from scipy.special import logsumexp

    rng = np.random.default_rng(seed)
    counts = rng.integers(0, n_frames + 1, (members, batch, classes)).astype(np.float64)
    labels = rng.integers(0, classes, batch)
    logits = logit_scale * counts / n_frames
    expected = -(logits[:, np.arange(batch), labels] - logsumexp(logits, axis=-1)).mean(axis=-1)
    got = snn.cross_entropy(counts, labels, n_frames, logit_scale)
    assert got.shape == (members,)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)
    single = snn.cross_entropy(counts[0], labels, n_frames, logit_scale)
    assert np.allclose(single, expected[0], rtol=1e-12, atol=1e-12)
    log_p = snn.log_softmax_of_rates(counts, n_frames, logit_scale)
    assert np.allclose(np.exp(log_p).sum(axis=-1), 1, rtol=0, atol=1e-12)


def test_cross_entropy_by_hand():
    """Two classes, T = 2: counts (2, 0) give rates (1, 0), so -log p(0) = log(1 + e^-1) and
    -log p(1) = log(1 + e); the batch mean of both. Tolerance 1e-12 (float64)."""
    counts = np.array([[2.0, 0.0], [2.0, 0.0]])
    got = snn.cross_entropy(counts, np.array([0, 1]), 2)
    assert abs(got - (math.log(1 + math.exp(-1)) + math.log(1 + math.e)) / 2) <= 1e-12


def test_the_losses_refuse_labels_that_would_index_another_class():
    """A label of -1 would pick the last class, a float or one label short would fail inside NumPy:
    the loss (cross_entropy, so EGGROLL's fitness) and BPTT's backward refuse each in one line."""
    import baselines
    import snn_eggroll
    counts = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, 1.0]])
    params = snn.init_network(0, snn.Network.dense((4, 3, 3)))
    cache = baselines.bptt_forward(params, np.ones((2, 2, 4), np.float32))
    classes = "labels must be integers in 0..2, the classes of the 3 outputs, got "
    for labels, told in ((np.array([0, -1]), f"{classes}int64 labels from -1 to 0"),
                         (np.array([0, 3]), f"{classes}int64 labels from 0 to 3"),
                         (np.array([0.0, 1.0]), f"{classes}float64 labels"),
                         (np.array([0]), "labels must have shape (2,) to match {}, got (1,)"),
                         ([0, 1], "labels must be an array, got a list: give numpy.asarray(labels)"),
                         (np.ma.masked_array([0, 1], [False, True]),  # the masked label would be scored
                          "labels must be an array, got a numpy.ma.MaskedArray: give numpy.asarray(labels)")):
        for loss, batch in ((lambda: snn.cross_entropy(counts, labels, 2), "the counts' samples"),
                            (lambda: snn_eggroll.fitness(counts[None], labels, 2, 1.0), "the counts' samples"),
                            (lambda: baselines.bptt_backward(params, cache, labels), "the batch of the cached frames")):
            with pytest.raises(ValueError) as refused:
                loss()
            assert str(refused.value) == told.format(batch)
    assert snn.cross_entropy(counts, np.array([0, 2]), 2) > 0  # as they should be, taken
    assert set(baselines.bptt_backward(params, cache, np.array([0, 2]))) == set(params)
    for changed, told in ((dict(k=-1.0), "k must be an int or float in (0, 1e+06], got -1.0: use e.g. 25"),
                          (dict(k=0.0), "k must be an int or float in (0, 1e+06], got 0.0: use e.g. 25"),
                          (dict(k=1e6 + 0.5), "k must be an int or float in (0, 1e+06], got 1000000.5: use e.g. 25"),
                          (dict(logit_scale=0.0), "logit_scale must be an int or float in [1e-06, 1e+06], got 0.0: "
                                                  "use e.g. 1.0"),
                          (dict(spike_cost=float("nan")), "spike_cost must be an int or float in [0, 1e+06], got "
                                                          "nan: use e.g. 0.0"),
                          (dict(detach_reset=None), "detach_reset must be True or False, got None")):
        with pytest.raises(ValueError) as refused:  # BPTT's backward called alone checks its settings as bptt_step
            baselines.bptt_backward(params, cache, np.array([0, 2]), **changed)
        assert str(refused.value) == told


def test_log_softmax_by_hand_and_stable_for_far_apart_logits():
    """Eq. (3) by hand: counts (2, 0) over T = 2 with the default logit scale 1 are logits (1, 0),
    log p = (-log(1 + e^-1), -log(1 + e)). With logit scale 1000 one sample has logits (1000, 0, 0)
    and another (0, 0, 0): each sample is shifted by its own largest logit, so neither overflows
    (e^1000) nor underflows to log 0: log p = (0, -1000, -1000) and -log 3 each. Tolerance 1e-12."""
    got = snn.log_softmax_of_rates(np.array([[2.0, 0.0]]), 2)
    np.testing.assert_allclose(got, [[-math.log(1 + math.exp(-1)), -math.log(1 + math.e)]], rtol=0, atol=1e-12)
    counts = np.array([[[10.0, 0.0, 0.0], [0.0, 0.0, 0.0]]])
    got = snn.log_softmax_of_rates(counts, 10, logit_scale=1000.0)
    np.testing.assert_allclose(got, [[[0.0, -1000.0, -1000.0], [-math.log(3)] * 3]], rtol=0, atol=1e-12)


def test_correct_per_class_counts_argmax_with_lowest_class_on_ties():
    """correct_per_class() counts, per label, the samples whose most-spiking class is the label;
    a tie goes to the lowest class (argmax). Exact integers."""
    counts = np.array([[3, 1, 0], [2, 2, 0], [2, 2, 0], [0, 0, 0], [0, 1, 5]], np.float32)
    labels = np.array([0, 0, 1, 0, 1])
    np.testing.assert_array_equal(snn.correct_per_class(counts, labels), [3, 0, 0])
    counts, labels = np.array([[0, 5, 1], [0, 0, 4], [1, 0, 4], [0, 3, 3]], np.float32), np.array([1, 2, 2, 2])
    np.testing.assert_array_equal(snn.correct_per_class(counts, labels), [0, 1, 2])
    np.testing.assert_array_equal(snn.correct_per_class(np.array([[0., 1.]]), np.array([0])), [0, 0])


@pytest.mark.parametrize("counts, said", [
    ([[0., 1.]], "counts must be a float32 or float64 array (N, n_out) of at least one sample and one class, got a "
                 "list"),
    (np.zeros((2, 1, 2)), "counts must be a float32 or float64 array (N, n_out) of at least one sample and one class, "
                          "got a float64 array of shape (2, 1, 2)"),
    (np.array([[np.nan, 1.]]), "counts hold NaN or inf"),
    (np.asmatrix(np.eye(3, 1)), "counts must be a float32 or float64 array (N, n_out) of at least one sample and one "
                                "class, got a numpy.matrix of shape (3, 1)"),  # whose argmax keeps two axes
    (np.ma.masked_array([[np.nan, 1.]], mask=[[True, False]]), "counts must be a float32 or float64 array (N, n_out) "
                                                                 "of at least one sample and one class, got a "
                                                                 "numpy.ma.MaskedArray of shape (1, 2)")])
@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_correct_per_class_refuses_what_forward_does_not_return(counts, said):
    """Counts that are no network's (a list, a member axis, a NaN whose argmax is 0, a matrix, a masked array)
    are refused, not tallied."""
    with pytest.raises(ValueError) as refused:
        snn.correct_per_class(counts, np.array([0]))
    assert str(refused.value).startswith(said)


def test_the_network_sizes_are_the_sensors_and_the_digits():
    """snn.SIZES, a module-level table: the input layer is the sensor's pixels times its two
    polarities, as the frames are laid out (data.N_INPUTS), and the output layer one neuron a digit."""
    import data
    assert snn.SIZES[0] == data.N_INPUTS == 34 * 34 * 2 and snn.SIZES[-1] == len(data.DIGITS) == 10
    params = snn.init_params(1)
    assert [params[f"W{layer}"].shape for layer in (1, 2)] == [(snn.SIZES[1], snn.SIZES[0]), (snn.SIZES[2], snn.SIZES[1])]


def test_the_loss_of_no_member_is_empty():
    """A process of a team may hold no member: the loss of counts (0, N, n_out) is an empty array, not
    a refusal (counts with no sample or no class are refused)."""
    labels = np.array([0, 2])
    assert snn.cross_entropy(np.zeros((0, 2, 3), np.float32), labels, 5).shape == (0,)
    with pytest.raises(ValueError, match="of at least one sample and one class, got a float32 array of shape"):
        snn.cross_entropy(np.zeros((1, 2, 0), np.float32), labels, 5)


def test_every_entry_point_refuses_weights_or_frames_whose_potentials_would_pass_float32():
    """The bound of too_large scales layer 1's row sums by the frames' largest magnitude: frames of
    1e38 refused by forward, and weights too large refused by BPTT's and vanilla ES's steps and by an
    EGGROLL generation as by forward, each in one line, no NumPy warning on the way."""
    import warnings
    import baselines
    import optim
    import snn_eggroll
    params = snn.init_network(1, snn.Network.dense((8, 4, 3)))
    frames = (np.random.default_rng(0).random((5, 2, 8)) < 0.5).astype(np.float32)
    labels = np.array([0, 2])
    state, adam = optim.init(params), optim.Adam(0.01)
    huge = {**params, "W1": np.full((4, 8), 3e37, np.float32)}
    weights_said = "the weights of layer 1 are too large for 5 frames: its membrane potentials could pass float32's"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="^the weights of layer 1 are too large for 5 frames of inputs up to 1e"
                                             r"\+38: .*give inputs in \[0, 1\], as data.py bins them"):
            snn.forward(params, frames * np.float32(1e38))
        for step in (lambda: snn.forward(huge, frames),
                     lambda: baselines.bptt_step(huge, state, frames, labels, baselines.BPTTConfig(25.0, 1.0), adam),
                     lambda: baselines.es_generation_step(huge, state, frames, labels, 0,
                                                          baselines.ESConfig(8, 0.1, 0, 1.0), adam),
                     lambda: snn_eggroll.generation_step(huge, state, frames, labels, 0,
                                                         snn_eggroll.Config(8, 1, 0.1, 0, 1.0), adam)):
            with pytest.raises(ValueError, match=f"^{weights_said}"):
                step()
        assert snn.forward(params, frames)[0].shape == (1, 2, 3)  # the usual weights and frames run


def test_the_readouts_loss_refuses_what_would_pass_its_float_range():
    """cross_entropy: counts whose logits (counts x logit_scale / T, and their spread) pass the float
    range would give NaN; fitness: hidden spikes of no count type, or a price whose product passes the
    range, would give a complex or infinite fitness. One line each."""
    import snn_eggroll
    with pytest.raises(ValueError, match=r"^counts up to 3e\+38 times logit_scale / T \(1e\+06 / 1\) pass float32's "
                                         r"range in the softmax: lower logit_scale"):
        snn.cross_entropy(np.array([[3e38, 0, 0], [0, 0, 1]], np.float32), np.array([0, 2]), 1, 1e6)
    assert np.isfinite(snn.cross_entropy(np.array([[3e3, 0, 0], [0, 0, 1]], np.float32), np.array([0, 2]), 1, 1e6))
    import warnings
    counts, labels = np.zeros((4, 2, 3), np.float32), np.array([0, 2])
    with pytest.raises(ValueError, match="^hidden_spikes must be an array of counts, float or integer, got complex128"):
        snn_eggroll.fitness(counts, labels, 5, 1.0, np.ones(4, complex), 0.1)
    with warnings.catch_warnings():  # said in one line, with no NumPy warning on the way
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^spike_cost 1e\+06 times hidden_spikes passes the loss's float range"):
            snn_eggroll.fitness(counts, labels, 5, 1.0, np.full(4, 1e308), 1e6)
    assert np.isfinite(snn_eggroll.fitness(counts, labels, 5, 1.0, np.ones(4, np.int64), 0.1)).all()


def test_a_layer_number_outside_the_network_is_one_line_not_another_layers_shape():
    """Network's per-layer helpers count layers from 1, as W1: 0 or one past the output would read
    another layer (a negative index) or fail inside NumPy; each is a ValueError naming the range."""
    network = snn.Network.parse("conv8k5s2,64")
    for call in (lambda layer: network.weight_shape(layer), lambda layer: network.positions(layer),
                 lambda layer: network.unfold(layer, np.ones((2, 2312))),
                 lambda layer: network.fold(layer, np.ones(3))):
        for layer in (0, 4, 1.0):
            with pytest.raises(ValueError, match=r"^layer must be a whole number in 1\.\.3, got "):
                call(layer)
    assert network.weight_shape(1) == (8, 50) and network.weight_shape(3) == (10, 64) and network.positions(2) == 1


def test_a_population_forward_without_a_config_is_one_line():
    """perturbed_forward reads the population's settings off a snn_eggroll.Config, as generation_step
    does: a dict or another method's settings is a ValueError naming the fix, not an AttributeError."""
    import baselines
    import snn_eggroll
    params, frames = snn.init_params(1), np.zeros((2, 1, 2312), np.float32)
    for config in ({}, None, baselines.ESConfig(8, 0.1, 0, 1.0)):
        with pytest.raises(ValueError, match="^config must be a snn_eggroll.Config, got "):
            snn_eggroll.perturbed_forward(params, frames, config, 0)


def test_a_vanilla_es_generation_without_a_team_is_one_line():
    """es_generation_step shares its pairs out through `team`, as an Eggroll does: None or a class is a
    ValueError naming what to give, as Eggroll's settings say it, not an AttributeError."""
    import baselines
    import distributed
    import optim
    params = snn.init_network(1, snn.Network.dense((8, 4, 3)))
    frames, labels = np.zeros((5, 2, 8), np.float32), np.array([0, 2])
    for team, said in ((None, "got None (it has no my_pairs"), (distributed.Team, "got the class Team")):
        with pytest.raises(ValueError) as refused:
            baselines.es_generation_step(params, optim.init(params), frames, labels, 0,
                                         baselines.ESConfig(8, 0.1, 0, 1.0), optim.Adam(0.01), team=team)
        assert str(refused.value).startswith(f"team must be distributed.ALONE or distributed.team(update), {said}")


@pytest.mark.parametrize("counts, n_frames, said", [
    (np.full((2, 3), np.nan, np.float32), 10, "counts hold NaN or inf"),  # a NaN softmax, silently
    (np.ones((2, 3), np.float32), 0, "n_frames must be a whole number in 1..2147483648, got 0")])  # ZeroDivisionError
def test_eq_3s_log_softmax_checks_what_it_is_given_as_the_loss_does(counts, n_frames, said):
    """log_softmax_of_rates, Eq. (3) on its own (README's table of equations names it), refuses
    counts and a T the cross-entropy refuses."""
    with pytest.raises(ValueError) as refused:
        snn.log_softmax_of_rates(counts, n_frames)
    assert str(refused.value).startswith(said)


def test_forward_refuses_a_flag_given_as_text_and_parameters_of_two_float_types():
    """count_hidden="no" would count (a string is true); a float64 W1 beside float32 others would run
    the products in one type and the potentials in another, unsaid."""
    params, frames = snn.init_params(1, (8, 6, 4)), np.ones((2, 3, 8), np.float32)
    with pytest.raises(ValueError, match=r"^count_hidden must be True or False, got 'no'$"):
        snn.forward(params, frames, count_hidden="no")
    with pytest.raises(ValueError) as refused:
        snn.forward({**params, "W1": params["W1"].astype(np.float64)}, frames)
    assert str(refused.value) == ("the parameters mix float32 and float64: give them all one float type, e.g. "
                                  "{name: value.astype(numpy.float32) for name, value in params.items()}")
    assert snn.forward(params, frames, count_hidden=np.bool_(True))[1].shape == (1,)
