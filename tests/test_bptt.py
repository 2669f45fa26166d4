"""Surrogate-gradient BPTT (baselines.py section 2): exact gradients in smooth mode, the same
forward as snn.forward, learning, and errors on bad input."""
import re
import warnings
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import baselines
import config
import optim
import snn


def small_problem(data, dtype=np.float64):
    """A random small network, binary frames and labels, with weights big enough to cross V_th."""
    n_in, n_hidden, n_out = data.draw(st.integers(3, 12)), data.draw(st.integers(2, 6)), data.draw(st.integers(2, 4))
    n_frames, batch = data.draw(st.integers(1, 5)), data.draw(st.integers(1, 4))
    lif = snn.LIF(beta=data.draw(st.floats(0.3, 0.95)), threshold=data.draw(st.floats(0.5, 1.5)))
    seed = data.draw(st.integers(0, 2 ** 16))
    params = snn.init_params(seed, (n_in, n_hidden, n_out), std=data.draw(st.floats(0.3, 1.5)))
    params = {name: value.astype(dtype) for name, value in params.items()}
    rng = np.random.default_rng(seed)
    frames = (rng.random((n_frames, batch, n_in)) < 0.5).astype(dtype)
    labels = rng.integers(0, n_out, batch)
    return params, frames, labels, lif


def reference_smooth_loss(params, frames, labels, lif, k, logit_scale, frozen_resets=None):
    """The smooth network written out plainly: S(V) = 1/2 + x / (1 + k|x|), x = V - V_th.

    With frozen_resets (one list of o_t per layer) the reset V_t (1 - o_t) uses those constants,
    which is what a detached reset differentiates. Returns the loss and the o_t of the resets.
    """
    inputs, resets = frames, []
    for layer in (1, 2):
        u = np.zeros((frames.shape[1], params[f"b{layer}"].shape[0]))
        spikes, layer_resets = [], []
        for t in range(frames.shape[0]):
            v = lif.beta * u + inputs[t] @ params[f"W{layer}"].T + params[f"b{layer}"]
            x = v - lif.threshold
            spikes.append(0.5 + x / (1 + k * np.abs(x)))
            layer_resets.append(spikes[-1] if frozen_resets is None else frozen_resets[layer - 1][t])
            u = v * (1 - layer_resets[-1])
        inputs = np.stack(spikes)
        resets.append(layer_resets)
    return snn.cross_entropy(inputs.sum(axis=0), labels, frames.shape[0], logit_scale), resets


def finite_differences(loss, params, h=1e-6):
    """(L(theta + h e_i) - L(theta - h e_i)) / 2h for every entry of every parameter."""
    grads = {}
    for name, value in params.items():
        grads[name] = np.zeros_like(value)
        for index in np.ndindex(value.shape):
            shifted = {key: v.copy() for key, v in params.items()}
            shifted[name][index] = value[index] + h
            up = loss(shifted)
            shifted[name][index] = value[index] - h
            grads[name][index] = (up - loss(shifted)) / (2 * h)
    return grads


def assert_gradients_match(grads, expected, tolerance=1e-6, floor=1e-2):
    """||g - g_fd|| <= tolerance (||g|| + ||g_fd||) per parameter, the norms floored at `floor`:
    rounding in float64 leaves ~1e-10 of noise in every finite difference, which would swamp
    the relative error of a gradient much smaller than 1e-2."""
    for name, value in expected.items():
        assert grads[name].shape == value.shape
        scale = max(np.linalg.norm(grads[name]) + np.linalg.norm(value), floor)
        error = np.linalg.norm(grads[name] - value) / scale
        assert error <= tolerance, f"{name}: relative error {error:.2e}"


smooth_settings = dict(k=st.floats(1.0, 30.0), logit_scale=st.floats(1.0, 5.0))


@settings(max_examples=40)
@given(data=st.data(), **smooth_settings)
def test_gradient_is_exact_in_smooth_mode_with_reset_differentiated(data, k, logit_scale):
    params, frames, labels, lif = small_problem(data)

    def loss(p):
        counts = baselines.bptt_forward(p, frames, lif, smooth=True, k=k)["counts"]
        return snn.cross_entropy(counts, labels, frames.shape[0], logit_scale)

    assert loss(params) == pytest.approx(reference_smooth_loss(params, frames, labels, lif, k, logit_scale)[0])
    cache = baselines.bptt_forward(params, frames, lif, smooth=True, k=k)
    grads = baselines.bptt_backward(params, cache, labels, lif, k, logit_scale, detach_reset=False)
    assert_gradients_match(grads, finite_differences(loss, params))


@settings(max_examples=40)
@given(data=st.data(), **smooth_settings)
def test_gradient_is_exact_in_smooth_mode_with_reset_detached(data, k, logit_scale):
    params, frames, labels, lif = small_problem(data)
    _, resets = reference_smooth_loss(params, frames, labels, lif, k, logit_scale)

    def loss(p):
        return reference_smooth_loss(p, frames, labels, lif, k, logit_scale, frozen_resets=resets)[0]

    cache = baselines.bptt_forward(params, frames, lif, smooth=True, k=k)
    grads = baselines.bptt_backward(params, cache, labels, lif, k, logit_scale, detach_reset=True)
    assert_gradients_match(grads, finite_differences(loss, params))


@settings(max_examples=30)
@given(data=st.data())
def test_heaviside_forward_matches_snn_forward(data):
    params, frames, _, lif = small_problem(data, dtype=np.float32)
    counts, _ = snn.forward(params, frames, lif)
    np.testing.assert_array_equal(baselines.bptt_forward(params, frames, lif)["counts"], counts[0])


def test_bptt_backward_defaults_are_the_documented_ones():
    """bptt_backward without its optional arguments is the default LIF, k = SLOPE, logit scale 1
    and the reset detached (snnTorch's choice), bit for bit; on this problem a logit scale of 2 or
    a differentiated reset gives other gradients."""
    params = snn.init_params(3, (10, 6, 3), std=1.0)
    rng = np.random.default_rng(3)
    frames = (rng.random((5, 4, 10)) < 0.5).astype(np.float64)
    labels = rng.integers(0, 3, 4)
    cache = baselines.bptt_forward(params, frames)
    grads = baselines.bptt_backward(params, cache, labels)
    explicit = baselines.bptt_backward(params, cache, labels, snn.LIF(), baselines.SLOPE, 1.0, True)
    assert all(np.array_equal(grads[name], explicit[name]) for name in params)
    for other in (baselines.bptt_backward(params, cache, labels, logit_scale=2.0),
                  baselines.bptt_backward(params, cache, labels, detach_reset=False)):
        assert any(not np.array_equal(grads[name], other[name]) for name in params)


def test_heaviside_forward_matches_snn_forward_at_full_size():
    params = snn.init_params(0)
    frames = (np.random.default_rng(0).random((10, 32, snn.SIZES[0])) < 0.05).astype(np.float32)
    counts, _ = snn.forward(params, frames)
    assert counts.sum() > 0
    np.testing.assert_array_equal(baselines.bptt_forward(params, frames)["counts"], counts[0])


def separable_batch(n_frames=5, batch=64, n_in=20, n_out=2, seed=0):
    """Binary frames whose label is the group of n_in / n_out inputs that fires most often."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, n_out, batch)
    rate = np.full((batch, n_in), 0.1)
    for c in range(n_out):
        rate[labels == c, c * n_in // n_out:(c + 1) * n_in // n_out] = 0.6
    return (rng.random((n_frames, batch, n_in)) < rate).astype(np.float32), labels


def test_bptt_steps_lower_the_loss():
    frames, labels = separable_batch()
    params = snn.init_params(0, (frames.shape[2], 16, 2))
    state = optim.init(params)
    config, adam = baselines.BPTTConfig(baselines.SLOPE, logit_scale=1.0), optim.Adam(lr=0.05)
    losses = []
    for _ in range(20):
        params, state, stats = baselines.bptt_step(params, state, frames, labels, config, adam)
        losses.append(stats["loss"])
    counts = baselines.bptt_forward(params, frames)["counts"]
    final = float(snn.cross_entropy(counts, labels, frames.shape[0]))
    assert final < losses[0] - 0.1, losses + [final]


def test_bad_input_raises():
    frames, labels = separable_batch()
    params = snn.init_params(0, (frames.shape[2], 16, 2))
    state, config = optim.init(params), baselines.BPTTConfig(baselines.SLOPE, logit_scale=1.0)
    adam = optim.Adam(lr=0.01)
    with pytest.raises(ValueError, match="frames must have shape"):
        baselines.bptt_step(params, state, frames[..., :-1], labels, config, adam)
    with pytest.raises(ValueError, match="labels must have shape"):
        baselines.bptt_step(params, state, frames, labels[:-1], config, adam)
    with pytest.raises(ValueError, match="labels must be integers in 0..1, the classes of the 2 outputs, got int64 "
                                         "labels from 0 to 2"):
        baselines.bptt_step(params, state, frames, np.where(labels == 1, 2, labels), config, adam)
    with warnings.catch_warnings():  # each said in one line, with no NumPy warning on the way
        warnings.simplefilter("error")
        for bad in (np.nan, np.inf):  # as snn.forward and the ES steps say it
            with pytest.raises(ValueError, match=re.escape(
                    "frames hold NaN or inf, which no neuron's potential survives: give finite inputs")):
                baselines.bptt_step(params, state, np.where(np.arange(frames.size).reshape(frames.shape) == 7, bad,
                                                            frames).astype(frames.dtype), labels, config, adam)
        huge = {**params, "W1": np.full_like(params["W1"], 3e38)}  # potentials would overflow float32 to inf
        with pytest.raises(ValueError, match=re.escape(f"the weights of layer 1 are too large for {frames.shape[0]} "
                                                       f"frames: its membrane potentials could pass float32's range")):
            baselines.bptt_step(huge, state, frames, labels, config, adam)  # refused before a step, as snn.forward


def test_a_huge_learning_rate_steps_without_numpy_warnings():
    """Adam at lr 1e30 drives the weights to ~1e30, where the surrogate's square overflows float32 to
    inf and its derivative to 0: a right answer, taken without a RuntimeWarning on the way."""
    frames, labels = separable_batch()
    params = snn.init_params(0, (frames.shape[2], 16, 2))
    state, config = optim.init(params), baselines.BPTTConfig(baselines.SLOPE, logit_scale=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for _ in range(3):
            params, state, stats = baselines.bptt_step(params, state, frames, labels, config, optim.Adam(lr=1e30))
    assert np.isfinite(stats["loss"]) and max(float(np.abs(value).max()) for value in params.values()) > 1e29


def test_heaviside_spikes_at_the_threshold_itself():
    """Eq. (2) spikes at V >= V_th: a potential exactly at the threshold spikes, in the surrogate
    network's forward as in snn.forward (W1 = 0 and b1 = V_th make V_0 = V_th exactly)."""
    lif = snn.LIF(beta=0.9, threshold=0.75)
    assert baselines.heaviside(np.array([0.75, np.nextafter(0.75, 0)]), lif, baselines.SLOPE).tolist() == [1.0, 0.0]
    spikes = baselines.heaviside(np.array([0.75, 0.5], np.float32), lif, baselines.SLOPE)
    assert spikes.dtype == np.float32 and spikes.tolist() == [1.0, 0.0]  # "as v's dtype"
    params = snn.init_params(0, (4, 3, 2))
    params["W1"][:], params["b1"][:] = 0, 0.75
    frames = np.ones((2, 5, 4), dtype=np.float32)
    cache = baselines.bptt_forward(params, frames, lif)
    assert (cache["o1"][0] == 1).all()
    np.testing.assert_array_equal(cache["counts"], snn.forward(params, frames, lif)[0][0])


@pytest.mark.parametrize("detach_reset", [True, False])
def test_bptt_step_passes_its_readout_scale_and_reset_to_the_backward_pass(detach_reset):
    """bptt_step's Adam step is the one from bptt_backward with the config's own logit scale (10, as
    in the presets) and reset choice, bit for bit, and differs from the step with those two
    settings swapped or left at their defaults. The network runs with the LIF constants given
    (not the defaults, which spike differently here), and the loss it reports is the cross-entropy
    of softmax(10 counts / T) with T (4) != B (5), computed here with scipy (to 1e-6, float32)."""
    from scipy.special import log_softmax
    params = snn.init_params(1, (12, 6, 3), std=1.0)
    rng = np.random.default_rng(1)
    frames = (rng.random((4, 5, 12)) < 0.5).astype(np.float32)
    labels = rng.integers(0, 3, 5)
    config = baselines.BPTTConfig(slope=2.0, logit_scale=10.0, detach_reset=detach_reset)
    adam, lif = optim.Adam(lr=0.01), snn.LIF(beta=0.5, threshold=0.7)
    new, _, stats = baselines.bptt_step(params, optim.init(params), frames, labels, config, adam, lif)
    counts = baselines.bptt_forward(params, frames, lif)["counts"]
    assert not np.array_equal(counts, baselines.bptt_forward(params, frames)["counts"])
    log_p = log_softmax(10.0 * counts.astype(np.float64) / 4, axis=-1)
    assert stats["loss"] == pytest.approx(-log_p[np.arange(5), labels].mean(), rel=1e-6)

    def step_from(logit_scale, detach):
        cache = baselines.bptt_forward(params, frames, lif, k=config.slope)
        grads = baselines.bptt_backward(params, cache, labels, lif, config.slope, logit_scale, detach)
        return optim.ascend(params, {n: -g for n, g in grads.items()}, optim.init(params), adam)[0]

    expected = step_from(10.0, detach_reset)
    for name in params:
        np.testing.assert_array_equal(new[name], expected[name])
    for other in (step_from(1.0, detach_reset), step_from(10.0, not detach_reset)):
        assert any(not np.array_equal(new[name], other[name]) for name in params)


# ---------------------------------------------------------------------------------------------
# A price on hidden spikes, Eq. (12)

@settings(max_examples=30)
@given(data=st.data(), spike_cost=st.floats(0.01, 0.5), **smooth_settings)
def test_spike_cost_gradient_is_exact_in_smooth_mode(data, spike_cost, k, logit_scale):
    """L_lambda = CE + spike_cost x (hidden spikes per sample), the smooth spikes S(V) counted: bptt_backward
    with the cost equals finite differences of that loss (reset differentiated), and the cost moves
    the gradient (its part alone, spike_cost / N per hidden spike, is not zero)."""
    params, frames, labels, lif = small_problem(data)

    def loss(p):
        cache = baselines.bptt_forward(p, frames, lif, smooth=True, k=k)
        return snn.cross_entropy(cache["counts"], labels, frames.shape[0], logit_scale) + \
            spike_cost * cache["o1"].sum() / frames.shape[1]

    cache = baselines.bptt_forward(params, frames, lif, smooth=True, k=k)
    grads = baselines.bptt_backward(params, cache, labels, lif, k, logit_scale, detach_reset=False,
                                    spike_cost=spike_cost)
    assert_gradients_match(grads, finite_differences(loss, params))
    free = baselines.bptt_backward(params, cache, labels, lif, k, logit_scale, detach_reset=False)
    assert any(not np.allclose(grads[name], free[name], rtol=0, atol=1e-12) for name in ("W1", "b1"))
    np.testing.assert_array_equal(grads["W2"], free["W2"])  # the output layer's spikes cost nothing


def test_bptt_step_with_a_spike_cost_reports_and_descends_the_priced_loss():
    """bptt_step with spike_cost 0.05 reports CE + 0.05 x hidden spikes / N (T (4) != N (5)) and
    takes bptt_backward's step with that cost, bit for bit; without it, the step differs."""
    params = snn.init_params(1, (12, 6, 3), std=1.0)
    rng = np.random.default_rng(1)
    frames = (rng.random((4, 5, 12)) < 0.5).astype(np.float32)
    labels = rng.integers(0, 3, 5)
    config, adam = baselines.BPTTConfig(slope=2.0, logit_scale=10.0, spike_cost=0.05), optim.Adam(lr=0.01)
    new, _, stats = baselines.bptt_step(params, optim.init(params), frames, labels, config, adam)
    cache = baselines.bptt_forward(params, frames, k=config.slope)
    cross_entropy = float(snn.cross_entropy(cache["counts"], labels, 4, 10.0))
    assert cache["o1"].sum() > 0
    assert stats["loss"] == pytest.approx(cross_entropy + 0.05 * float(cache["o1"].sum()) / 5, rel=1e-6)

    def step_from(spike_cost):
        grads = baselines.bptt_backward(params, cache, labels, snn.LIF(), 2.0, 10.0, True, spike_cost)
        return optim.ascend(params, {n: -g for n, g in grads.items()}, optim.init(params), adam)[0]

    for name in params:
        np.testing.assert_array_equal(new[name], step_from(0.05)[name])
    assert any(not np.array_equal(new[name], step_from(0.0)[name]) for name in params)


def test_a_spike_cost_teaches_bptt_to_fire_less():
    """40 steps on a separable task: with spike_cost 0.02 the hidden layer ends with under half the
    spikes it has without a cost (here 1.4 against 29.3 per sample), and both still classify the batch
    (>= 90 %). Deterministic: fixed data and weights."""
    frames, labels = separable_batch()
    hidden, accuracy = {}, {}
    for spike_cost in (0.0, 0.02):
        params = snn.init_params(0, (frames.shape[2], 16, 2))
        state, adam = optim.init(params), optim.Adam(lr=0.05)
        config = baselines.BPTTConfig(baselines.SLOPE, logit_scale=5.0, spike_cost=spike_cost)
        for _ in range(40):
            params, state, _ = baselines.bptt_step(params, state, frames, labels, config, adam)
        cache = baselines.bptt_forward(params, frames)
        hidden[spike_cost] = float(cache["o1"].sum()) / frames.shape[1]
        accuracy[spike_cost] = float((cache["counts"].argmax(axis=1) == labels).mean())
    assert hidden[0.02] < 0.5 * hidden[0.0], hidden
    assert min(accuracy.values()) >= 0.9, accuracy


def test_the_default_surrogate_slope_is_snntorchs_25_as_the_docs_say():
    assert baselines.SLOPE == 25 and config.RunConfig().slope == 25
    assert "slope k = 25 by default" in (Path(baselines.__file__).parent / "docs" / "results.md").read_text()


def test_the_leaky_readouts_backward_is_the_adjoint_of_its_forward():
    """leaky_forward is linear in its currents, so leaky_backward must be its adjoint: for any
    currents I and any dL/dV G (different at every frame), <forward(I), G> = <I, backward(G)>."""
    rng = np.random.default_rng(4)
    lif = snn.LIF(beta=0.7)
    currents, grad_v = rng.normal(size=(6, 3, 2)), rng.normal(size=(6, 3, 2))
    left = (baselines.leaky_forward(currents, lif) * grad_v).sum()
    right = (currents * baselines.leaky_backward(grad_v, lif)).sum()
    assert left == pytest.approx(right, rel=1e-12)


def test_backward_refuses_a_cache_of_another_forward():
    """bptt_backward given the cache of another network (a readout it was not told), another LIF or
    other parameters would return another network's gradients: one ValueError naming which; the
    cache of the same ones, or of an equal copy of the parameters, is taken."""
    params = snn.init_params(0, (6, 5, 3), std=1.0)
    frames = (np.random.default_rng(0).random((4, 2, 6)) < 0.5).astype(np.float32)
    labels = np.array([0, 2])
    potential = snn.Network.parse("5", n_out=3, image=(6, 1, 1), readout="potential")
    fix = "than bptt_backward is given: give both the same params, network= and lif="
    for cache, other, what in (
            (baselines.bptt_forward(params, frames, network=potential), {}, "network (its layers or readout)"),
            (baselines.bptt_forward(params, frames, lif=snn.LIF(0.5)), {}, "LIF"),
            (baselines.bptt_forward(snn.init_params(7, (6, 5, 3), std=1.0), frames), {}, "parameters"),
            (baselines.bptt_forward(params, frames), dict(lif=snn.LIF(0.5)), "LIF")):
        with pytest.raises(ValueError) as refused:
            baselines.bptt_backward(params, cache, labels, **other)
        assert str(refused.value) == f"the cache was made by bptt_forward with another {what} {fix}"
    with pytest.raises(ValueError, match="cache must be the dict bptt_forward returned, got a dict without its made_wit"):
        baselines.bptt_backward(params, {"frames": frames}, labels)
    copied = {name: value.copy() for name, value in params.items()}
    assert set(baselines.bptt_backward(copied, baselines.bptt_forward(params, frames), labels)) == set(params)


def test_float64_frames_step_float32_weights_as_float32_frames_do():
    """Frames wider than the weights (float64, as snn.forward and the ES steps take them) give wider
    gradients; the step keeps the weights' float32, and lands within float32's rounding of the step
    from the same frames in float32."""
    frames, labels = separable_batch()
    params = snn.init_params(0, (frames.shape[2], 16, 2))
    config, adam = baselines.BPTTConfig(baselines.SLOPE, logit_scale=1.0), optim.Adam(lr=0.01)
    wide, _, _ = baselines.bptt_step(params, optim.init(params), frames.astype(np.float64), labels, config, adam)
    narrow, _, _ = baselines.bptt_step(params, optim.init(params), frames.astype(np.float32), labels, config, adam)
    for name in params:
        assert wide[name].dtype == np.float32
        np.testing.assert_allclose(wide[name], narrow[name], rtol=0, atol=1e-6)


def test_the_spike_functions_refuse_a_slope_potentials_or_lif_they_cannot_use():
    """Eq. (11)'s surrogate and the spikes beside it take a slope k > 0 (BPTTConfig's range), float
    potentials and a snn.LIF: a k of -1 would give inf, of 0 a derivative of 1 everywhere."""
    lif, v = snn.LIF(), np.zeros(3, np.float32)
    said = "k must be an int or float in (0, 1e+06], got {}: use e.g. 25, the surrogate's slope"
    for spike in (baselines.heaviside, baselines.smooth_spike, baselines.surrogate):
        for k in (-1.0, 0.0, "a", float("nan")):
            with pytest.raises(ValueError) as refused:
                spike(v, lif, k)
            assert str(refused.value) == said.format(repr(k) if isinstance(k, str) else k)
        with pytest.raises(ValueError, match=r"^v must be a float array of potentials, got a list: "):
            spike([0.0, 1.0], lif, 25.0)
        with pytest.raises(ValueError, match=r"^v must be a float array of potentials, got int64 \(3,\): "):
            spike(np.zeros(3, np.int64), lif, 25.0)
        with pytest.raises(ValueError, match=r"^k must be an int or float in \(0, 1e\+06\], got 1000000.5"):
            spike(v, lif, 1e6 + 0.5)
        with pytest.raises(ValueError, match=r"^lif must be a snn.LIF, got NoneType"):
            spike(v, None, 25.0)
    with pytest.raises(ValueError, match=r"^current must be a float array \(T, N, n\) of at least one frame, sample "
                                         r"and neuron, got a list$"):
        baselines.lif_forward([[1.0]], lif, baselines.heaviside, 25.0)
    with pytest.raises(ValueError, match=r"^current must be a float array \(T, N, n\) of at least one frame, sample "
                                         r"and neuron, got int64 \(2, 1, 1\)$"):
        baselines.lif_forward(np.ones((2, 1, 1), np.int64), lif, baselines.heaviside, 25.0)
    with pytest.raises(ValueError, match=r"^current holds NaN or inf, which no network's inputs make: give finite "
                                         r"currents$"):
        baselines.lif_forward(np.full((2, 1, 1), np.inf, np.float32), lif, baselines.heaviside, 25.0)
    with pytest.raises(ValueError, match=r"^spike must be baselines.heaviside or baselines.smooth_spike, got "):
        baselines.lif_forward(np.ones((2, 1, 1)), lif, np.round, 25.0)
    assert baselines.surrogate(np.float32([1.0]), lif, 25.0)[0] == 1.0  # at the threshold, as Eq. (11) says
    v_out, spikes = baselines.lif_forward(np.ones((2, 1, 1)), lif, baselines.heaviside, 25.0)
    assert spikes.ravel().tolist() == [1.0, 1.0] and v_out.ravel().tolist() == [1.0, 1.0]


def test_bptt_backward_refuses_a_cache_changed_after_bptt_forward():
    """A cache whose frames were cut to other samples, or that lost an array, would give gradients of
    another shape or a KeyError: one line saying it was changed."""
    params = snn.init_params(0, (2312, 8, 10))
    frames, labels = np.ones((3, 5, 2312), np.float32), np.zeros(5, np.int64)
    cut = baselines.bptt_forward(params, frames)
    cut["frames"] = frames[:, :3]
    lost = baselines.bptt_forward(params, frames)
    del lost["v1"]
    for cache, given, part in ((cut, labels[:3], "counts is of another shape than its frames"),
                               (lost, labels, "v1 is missing")):
        with pytest.raises(ValueError) as refused:
            baselines.bptt_backward(params, cache, given)
        assert str(refused.value) == (f"the cache's {part}: it was changed after bptt_forward; give bptt_backward "
                                      f"what bptt_forward returned")
    grads = baselines.bptt_backward(params, baselines.bptt_forward(params, frames), labels)
    assert {name: grad.shape for name, grad in grads.items()} == {name: value.shape for name, value in params.items()}
