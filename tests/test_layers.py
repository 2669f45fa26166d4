"""A network as data (snn.Network): dense and convolutional LIF layers of any depth, the same in
every method. A convolution is checked against the sum a textbook writes, its col2im against the
adjoint identity, EGGROLL's population of a convolutional network against each member's own
forward pass, and BPTT's hand-written gradient through it against finite differences."""
import dataclasses
import math
import os
import re
import types

import numpy as np
import pytest
from hypothesis import example, given, settings, strategies as st

import baselines
import config
import data
import eggroll
import interface_checks
import optim
import snn
import snn_eggroll
import training


def as_float64(params):
    return {name: value.astype(np.float64) for name, value in params.items()}


def direct_convolution(images, weight, bias, spec):
    """The convolution as a textbook writes it: images (M, C, H, W), weight (K, k k C) in (dy, dx,
    channel) order; out[m, y, x, o] = b_o + sum over dy, dx, c of image[m, c, s y + dy - p, s x + dx - p]
    weight[o, dy, dx, c] (zero outside the image). Returns (M, out_h, out_w, K)."""
    k, s, p = spec.kernel, spec.stride, spec.padding
    padded = np.pad(images, ((0, 0), (0, 0), (p, p), (p, p)))
    kernels = weight.reshape(spec.channels, k, k, images.shape[1])
    out_h, out_w = (padded.shape[2] - k) // s + 1, (padded.shape[3] - k) // s + 1
    out = np.zeros((images.shape[0], out_h, out_w, spec.channels))
    for y in range(out_h):
        for x in range(out_w):
            window = padded[:, :, s * y:s * y + k, s * x:s * x + k]
            out[:, y, x] = np.einsum("mcyx,oyxc->mo", window, kernels) + bias
    return out


conv_layers = st.builds(snn.Conv, channels=st.integers(1, 4), kernel=st.integers(1, 4), stride=st.integers(1, 3),
                        padding=st.integers(0, 2))


@settings(max_examples=40, deadline=None)
@given(first=conv_layers, second=conv_layers, side=st.integers(4, 9), seed=st.integers(0, 2 ** 16))
@example(first=snn.Conv(3, 2, 2, 0), second=snn.Conv(2, 2, 2, 1), side=9, seed=1)  # kernels that tile their input
@example(first=snn.Conv(2, 3, 3, 1), second=snn.Conv(2, 1, 1, 0), side=8, seed=2)
def test_a_convolution_is_the_textbook_sum_in_either_layer(first, second, side, seed):
    """Layer 1 reads the frames as (channel, y, x); layer 2 its predecessor's spikes as (y, x, channel).
    A stride equal to the kernel (patches that tile the input, cut by reshaping) is the same sum."""
    network = snn.Network((first, second, snn.Dense(3)), (2, side, side))
    try:
        network.checked()
    except ValueError:
        return  # a kernel that does not fit: refused, as test_a_bad_layer_is_one_line_naming_the_fix checks
    rng = np.random.default_rng(seed)
    params = as_float64(snn.init_network(seed, network, std=1.0))
    x = rng.random((3, 2, network.sizes[0]))                                          # (T, N, C H W)
    want = direct_convolution(x.reshape(6, 2, side, side), params["W1"], params["b1"], first)
    np.testing.assert_allclose(snn.layer_current(params, 1, x, network), want.reshape(3, 2, -1), rtol=1e-12, atol=1e-12)
    channels, height, width = network.shapes()[1]
    spikes = rng.random((3, 2, network.sizes[1]))                                     # (T, N, H W C)
    images = spikes.reshape(6, height, width, channels).transpose(0, 3, 1, 2)
    want = direct_convolution(images, params["W2"], params["b2"], second)
    np.testing.assert_allclose(snn.layer_current(params, 2, spikes, network), want.reshape(3, 2, -1),
                               rtol=1e-12, atol=1e-12)


@settings(max_examples=30, deadline=None)
@given(first=conv_layers, second=conv_layers, seed=st.integers(0, 2 ** 16))
def test_fold_is_the_adjoint_of_unfold_and_counts_the_synapses(first, second, seed):
    """<unfold(x), g> = <x, fold(g)> for random x and g, in both layouts; and every use of a weight
    is a synapse: the synapses of all inputs add up to kernels x positions x patch entries that fall
    inside the image (all of them without padding)."""
    network = snn.Network((first, second, snn.Dense(2)), (3, 8, 8))
    try:
        network.checked()
    except ValueError:
        return
    rng = np.random.default_rng(seed)
    for layer in (1, 2):
        x = rng.random((2, 3, network.sizes[layer - 1]))
        unfolded = network.unfold(layer, x)
        g = rng.random(unfolded.shape)
        assert np.isclose(np.sum(unfolded * g), np.sum(x * network.fold(layer, g)), rtol=1e-10)
        assert network.fold(layer, g.astype(np.float32)).dtype == np.float32  # BPTT's float32 stays float32
        inside = network.unfold(layer, np.ones((1, network.sizes[layer - 1]))).sum()  # patch entries on the image
        fan_out, fan_in = network.weight_shape(layer)
        assert network.synapses(layer).sum() == fan_out * inside
        if not network.layers[layer - 1].padding:
            assert inside == network.positions(layer) * fan_in


@pytest.mark.parametrize("image", [(2, 6, 9), (2, 9, 6)])
def test_fold_is_the_adjoint_of_unfold_on_an_image_that_is_not_square(image):
    """col2im crops its padded image back to the input's height and width, each its own: on a
    non-square image too, fold is unfold's adjoint and keeps the input's shape."""
    network = snn.Network((snn.Conv(2, 3, 2, 1), snn.Conv(3, 2, 1, 1), snn.Dense(2)), image).checked()
    rng = np.random.default_rng(0)
    for layer in (1, 2):
        x = rng.random((2, 3, network.sizes[layer - 1]))
        unfolded = network.unfold(layer, x)
        g = rng.random(unfolded.shape)
        folded = network.fold(layer, g)
        assert folded.shape == x.shape
        assert np.isclose(np.sum(unfolded * g), np.sum(x * folded), rtol=1e-10)


def test_unfold_and_fold_name_the_shape_they_take():
    """An input or a gradient of another shape is one line naming the shape, not a reshape's error
    deep inside (or, for a dense layer, a wrong array passed through)."""
    network = snn.Network.parse("conv8k5s2,32")
    cases = ((lambda: network.unfold(1, np.zeros((3, 100))), "x of layer 1 must have shape (..., N, 2312), the "
              "layer's input, got (3, 100)"),
             (lambda: network.unfold(2, np.zeros(1800)), "x of layer 2 must have shape (..., N, 1800), the layer's "
              "input, got (1800,)"),
             (lambda: network.fold(1, np.zeros((3, 50))), "grad of layer 1 must have shape (..., N × 225 positions, "
              "50), what unfold returns, got (3, 50)"),
             (lambda: network.fold(1, np.zeros((0, 50))), "grad of layer 1 must have shape (..., N × 225 positions, "
              "50), what unfold returns, got (0, 50)"),
             (lambda: network.fold(2, [1.0]), "grad of layer 2 must have shape (..., N, 1800), what unfold "
              "returns, got a list"))
    for call, told in cases:
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == told
    assert network.fold(1, network.unfold(1, np.ones((3, 2312)))).shape == (3, 2312)


def test_a_dense_layer_feeds_its_width_and_its_products_are_the_plain_ones():
    network = snn.Network.parse("12,5", n_out=3, image=(2, 3, 3))
    assert network.sizes == (18, 12, 5, 3) and network.positions(2) == 1
    assert (network.synapses(1) == 12).all() and (network.synapses(3) == 3).all()
    x = np.arange(36.0).reshape(2, 18)
    assert network.unfold(1, x) is x and network.fold(1, x) is x


@pytest.mark.parametrize("hidden, layers, text", [
    ("64", (snn.Dense(64), snn.Dense(10)), "64"),
    ("128,64", (snn.Dense(128), snn.Dense(64), snn.Dense(10)), "128,64"),
    ("conv8k5s2,64", (snn.Conv(8, 5, 2), snn.Dense(64), snn.Dense(10)), "conv8k5s2,64"),
    ("conv4k3s1p1,conv8k3s2p0", (snn.Conv(4, 3, 1, 1), snn.Conv(8, 3, 2), snn.Dense(10)), "conv4k3p1,conv8k3s2"),
])
def test_a_hidden_value_is_parsed_into_its_layers(hidden, layers, text):
    network = snn.Network.parse(hidden)
    assert network.layers == layers and str(network) == text and snn.Network.parse(text) == network


def test_the_shapes_of_a_convolutional_network():
    network = snn.Network.parse("conv8k5s2,conv16k3p1,64")
    assert network.shapes() == [(2, 34, 34), (8, 15, 15), (16, 15, 15), (64, 1, 1), (10, 1, 1)]
    assert network.sizes == (2312, 1800, 3600, 64, 10)
    assert [network.weight_shape(layer) for layer in (1, 2, 3, 4)] == [(8, 50), (16, 72), (64, 3600), (10, 64)]
    params = snn.init_network(0, network)
    assert {name: value.shape for name, value in params.items()} == {
        "W1": (8, 50), "b1": (8,), "W2": (16, 72), "b2": (16,), "W3": (64, 3600), "b3": (64,), "W4": (10, 64),
        "b4": (10,)}


@pytest.mark.parametrize("hidden", ["64", "128,64", "conv8k5s3", "conv8k5s2,conv16k3p1,64"])
def test_the_fan_in_rule_scales_the_weights_of_every_layer_after_the_first_by_its_inputs(hidden):
    """init rule "fan-in": the same draws as "paper", W_l of a layer l > 1 with n inputs multiplied
    by sqrt(64 / n), to float32's rounding; the first layer's W and every bias unchanged, and
    2312-64-10 (its output layer's 64 inputs) the same to the bit."""
    network = snn.Network.parse(hidden)
    paper, fan_in = snn.init_network(5, network), snn.init_network(5, network, rule="fan-in")
    assert list(paper) == list(fan_in)
    for name in paper:
        n_in = paper[name].shape[-1]
        factor = np.sqrt(64 / n_in) if name.startswith("W") and name != "W1" else 1.0
        assert fan_in[name].dtype == np.float32
        np.testing.assert_allclose(fan_in[name], paper[name] * factor, rtol=2e-7, atol=0)
        assert np.array_equal(fan_in[name], paper[name]) == (factor == 1.0)
    with pytest.raises(ValueError, match=r"^init rule 'fanin' is none of paper, fan-in, pass-through: use e.g. "
                                         r"\"paper\"$"):
        snn.init_network(5, network, rule="fanin")


def test_the_hidden_layers_after_the_first_are_perturbed_and_stepped_at_the_inner_scale():
    """inner_scale s: the hidden layers after the first (W2, b2 and W3, b3 of 6-5-4-3-2) are perturbed
    with s sigma and stepped with s lr, the first and the output layer (output_sigma_scale) as
    before; one generation is an Eggroll's of those sigmas and lrs, bit for bit. A network of one
    hidden layer has no such layer: the scale changes none of its bits."""
    params = snn.init_network(3, snn.Network.parse("5,4,3", n_out=2, image=(1, 2, 3)))
    frames = (np.random.default_rng(1).random((3, 4, 6)) < 0.5).astype(np.float32)
    labels, adam = np.array([0, 1, 1, 0]), optim.Adam(0.02)
    config = snn_eggroll.Config(8, 1, 0.2, seed=2, logit_scale=1.0, output_sigma_scale=0.5, inner_scale=0.25)
    layer_scale = {1: 1.0, 2: 0.25, 3: 0.25, 4: 0.5}
    assert config.sigmas(params) == {name: 0.2 * layer_scale[snn.layer_of(name)] for name in params}
    assert config.lrs(params, 0.02) == {name: 0.02 * (0.25 if snn.layer_of(name) in (2, 3) else 1) for name in params}
    stepped, _, _ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 0, config, adam)
    by_hand = eggroll.Eggroll(8, 1, config.sigmas(params), 2, config.lrs(params, 0.02))
    state = by_hand.init(params)
    population = by_hand.ask(state)
    counts, _ = snn_eggroll.population_forward(population, frames)
    expected = by_hand.tell(state, population, snn_eggroll.fitness(counts, labels, 3, 1.0))[0].params
    assert all(np.array_equal(stepped[name], expected[name]) for name in params)
    shallow = snn.init_network(3, snn.Network.parse("5", n_out=2, image=(1, 2, 3)))
    steps = [snn_eggroll.generation_step(shallow, optim.init(shallow), frames, labels, 0,
                                         dataclasses.replace(config, inner_scale=scale), adam)[0]
             for scale in (1, 0.25)]
    assert all(np.array_equal(steps[0][name], steps[1][name]) for name in shallow)


@pytest.mark.parametrize("hidden", ["64", "128,64", "64,64,32", "conv8k5s3,16"])
def test_the_pass_through_rule_starts_every_later_hidden_layer_as_a_copy_of_its_first_inputs(hidden):
    """init rule "pass-through": a hidden layer l > 1 starts at W_l = 2 [I 0], b_l = 0, so that its
    neuron i fires whenever input i spiked; the first and the output layer are the paper rule's
    draws to the bit (the rule draws the later ones too, and leaves them unused)."""
    network = snn.Network.parse(hidden)
    paper, passing = snn.init_network(5, network), snn.init_network(5, network, rule="pass-through")
    last = len(network.layers)
    assert list(paper) == list(passing)
    for name in paper:
        layer = snn.layer_of(name)
        assert passing[name].dtype == np.float32 and passing[name].shape == paper[name].shape
        if 1 < layer < last:
            expected = 2 * np.eye(*paper[name].shape) if name.startswith("W") else np.zeros(paper[name].shape)
            assert np.array_equal(passing[name], expected), name
        else:
            assert np.array_equal(passing[name], paper[name]), name
    for layer in range(2, last):  # one frame of spikes s into layer l: V = W_l s + b_l, a spike where V >= 1
        spikes = (np.random.default_rng(layer).random((10, 3, network.sizes[layer - 1])) < 0.3).astype(np.float32)
        current = spikes @ passing[f"W{layer}"].T + passing[f"b{layer}"]
        assert np.array_equal(current >= 1, spikes[..., :network.sizes[layer]] == 1)


@pytest.mark.parametrize("xp", [types.SimpleNamespace(float32=np.float32), types.SimpleNamespace(asarray=np.asarray)])
def test_a_module_with_half_of_an_array_modules_names_is_refused_by_each_caller(xp):
    """An array module needs asarray and float32 (numpy, cupy, the tests' stand-in): one without either
    is refused in one line by init_network, full_rank_noise and the frames, not met as an
    AttributeError inside them."""
    said = f"xp must be the module numpy or cupy, got {interface_checks.a_kind(xp)}: give backend.array_module()"
    split = data.Split(np.zeros((2, data.N_INPUTS // 8), np.uint8), np.array([0, 1]), 1)
    for call in (lambda: snn.init_network(1, snn.Network.parse("8"), xp=xp),
                 lambda: baselines.full_rank_noise(1, 0, np.arange(2), "W1", (3, 3), xp),
                 lambda: split.frames([0], xp=xp)):
        with pytest.raises(ValueError) as refused:
            call()
        assert str(refused.value) == said


def test_weights_beyond_the_machines_ram_are_refused_before_they_are_drawn(monkeypatch):
    """init_network counts its float32 weights and the float64 draw of the largest before drawing:
    beyond the RAM, one line naming the network (not NumPy's MemoryError); within it, drawn."""
    monkeypatch.setattr(os, "sysconf", lambda name: {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 10 ** 5}[name])  # 0.41 GB
    assert snn.init_network(1, snn.Network.parse("4096,4096"))["W2"].shape == (4096, 4096)  # 0.24 GB
    with pytest.raises(ValueError) as refused:
        snn.init_network(1, snn.Network.parse("8192,8192"))
    assert str(refused.value) == ("the weights of 2312-8192-8192-10, 0.9 GB as float32 beside the float64 draw of "
                                  "the largest, more than this machine's 0.4 GB of RAM: give the network smaller "
                                  "layers")


def test_init_params_is_init_network_of_the_dense_network():
    """The runs trained before networks were data keep their initial weights."""
    for sizes in [snn.SIZES, (12, 7, 5, 4)]:
        old, new = snn.init_params(3, sizes, std=0.5), snn.init_network(3, snn.Network.dense(sizes), std=0.5)
        assert all(np.array_equal(old[name], new[name]) for name in old) and list(old) == list(new)


@pytest.mark.parametrize("hidden, message", [
    ("conv8k40", "layer 1 (conv8k40): a 40 x 40 kernel does not fit its 34 x 34 input padded by 0: use a kernel of "
                 "at most 34"),
    ("conv8k5s2,conv4k16", "layer 2 (conv4k16): a 16 x 16 kernel does not fit its 15 x 15 input"),
    ("conv8k37p1", "a 37 x 37 kernel does not fit its 34 x 34 input padded by 1: use a kernel of at most 36"),
    ("conv0k5", "layer 1 (conv0k5) needs 1..65536 kernels"),
    ("conv8k5s0", "stride of at least 1"),
    ("conv8k5p5", "layer 1 (conv8k5p5) pads by 5, not less than its 5 x 5 kernel, so its edge neurons would see "
                  "padding alone: use at most p4, e.g. conv8k5p2"),
    ("conv8k0", "kernels of at least 1 x 1"),
    ("1000000", "layer 1 (1000000) has 1000000 neurons: give it 1..65536"),  # 7 digits: still read, and named
    ("10000000", "layer 10000000... holds a number of 8 digits, beyond any layer's size"),
    ("conv8k3s33", "layer 1 (conv8k3s33) strides by 33, more than its 3 x 3 kernel, so the inputs between its "
                   "patches would be read by no kernel: use a stride of at most 3, e.g. conv8k3s3"),
    ("64,conv8k3", "layer 2 (conv8k3) follows a dense layer, which has no image: put the convolutions first"),
    ("64,0", "layer 2 (0) has 0 neurons: give it 1..65536"),
    ("64,", "layer '' is neither a width"),
    ("conv8x5", "layer 'conv8x5' is neither a width (64) nor a convolution conv<channels>k<kernel>[s<stride>]"
                "[p<padding>], its parts in that order (conv8k5s2: 8 kernels of 5 x 5, stride 2; conv8k3s1p1: "
                "padding 1)"),
    ("conv8k3p1s2", "layer 'conv8k3p1s2' is neither a width (64) nor a convolution conv<channels>k<kernel>[s<stride>]"
                    "[p<padding>], its parts in that order"),
    ("\uff16\uff14", "layer '\uff16\uff14' is neither a width"),  # full-width digits: int() reads them, the docs do not
    ("conv\uff18k5", "layer 'conv\uff18k5' is neither a width"),
    ("64, 32", "layer ' 32' holds spaces: write the layers without them, e.g. 64,32"),
    ("conv8k5s2 ,64", "layer 'conv8k5s2 ' holds spaces: write the layers without them, e.g. conv8k5s2,64"),
    (" ", "layer ' ' holds spaces: write the layers without them, e.g. 64"),  # no empty example
])
def test_a_bad_layer_is_one_line_naming_the_fix(hidden, message):
    with pytest.raises(ValueError) as caught:
        config.check(config.RunConfig(hidden=hidden))
    assert str(caught.value).startswith(f"--hidden {hidden}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_layer_of_either_end_of_the_promised_range_is_accepted():
    """The range a refused layer's line names, 1..MAX_WIDTH neurons or kernels, holds at both ends;
    one past it is refused. A convolution's neurons, kernels times positions, are held to MAX_NEURONS."""
    for width in (1, snn.MAX_WIDTH):
        assert snn.Network.parse(f"{width}").layers[0] == snn.Dense(width)
        assert snn.Network.parse(f"conv{width}k34").layers[0] == snn.Conv(width, 34)  # one position
    for hidden in (f"{snn.MAX_WIDTH + 1}", f"conv{snn.MAX_WIDTH + 1}k34"):
        with pytest.raises(ValueError, match=f"1..{snn.MAX_WIDTH}"):
            snn.Network.parse(hidden)
    side = math.isqrt(snn.MAX_NEURONS)
    assert snn.Network.parse("conv1k1", image=(1, side, side)).sizes[1] == snn.MAX_NEURONS
    with pytest.raises(ValueError, match=rf"^layer 1 \(conv1k1\) has {snn.MAX_NEURONS + side:,} neurons \(1 kernels at "
                                         rf"{side} x {side + 1} positions\), over {snn.MAX_NEURONS:,}: use fewer"):
        snn.Network.parse("conv1k1", image=(1, side, side + 1))
    with pytest.raises(ValueError, match=r"at least one hidden"):  # a network of its output layer alone
        snn.init_params(1, sizes=(2312, 64))
    with pytest.raises(ValueError, match=r"^layer 1 \(-5\) has -5 neurons|whole number >= 0"):
        snn.Network.dense((2312, -5, 10))  # as parse and checked refuse it
    with pytest.raises(ValueError, match=r"holds a number of 5000 digits, beyond any layer's size"):
        snn.Network.parse("9" * 5000)  # not Python's int() limit, in its own words


def test_a_layers_limits_hold_at_their_edges_and_name_the_input_as_it_is():
    """A 1 x 1 kernel is accepted (the smallest the line names); the padding advised is whole; a
    kernel is held to the shorter side of a non-square image, and the line gives height x width."""
    assert snn.Network.parse("conv4k1").layers[0] == snn.Conv(4, 1)
    with pytest.raises(ValueError, match=r"use at most p4, e\.g\. conv8k5p2$"):
        snn.Network.parse("conv8k5p5")
    with pytest.raises(ValueError, match=r"^layer 1 \(conv2k5\): a 5 x 5 kernel does not fit its 3 x 9 input padded "
                                         r"by 0: use a kernel of at most 3, or more padding$"):
        snn.Network.parse("conv2k5", image=(1, 3, 9))
    assert snn.Network.parse("conv2k3", image=(1, 3, 9)).shapes()[1] == (2, 1, 7)


def test_vanilla_es_runs_only_the_papers_form_and_bptt_any_network():
    assert config.RunConfig(hidden="conv2k36p1").sizes == (2312, 2, 10)  # the largest kernel padding lets fit
    for hidden in ("128,64", "conv8k5s2"):
        with pytest.raises(ValueError, match="vanilla ES runs one dense hidden layer here"):
            config.check(config.RunConfig(method="es", hidden=hidden))
        config.check(config.RunConfig(method="bptt", hidden=hidden))
        config.check(config.RunConfig(method="eggroll", hidden=hidden))


def small_network(hidden, readout="rate"):
    layers = snn.Network.parse(hidden, n_out=3).layers
    return snn.Network(layers, (2, 7, 7), readout).checked()


@pytest.mark.parametrize("hidden, readout", [("conv3k3s2p1,5", "rate"), ("conv2k3,conv3k2s2,4", "rate"), ("6,5", "rate"),
                                             ("6,5", "potential"), ("conv2k3,4", "potential")])
def test_eggrolls_population_of_a_network_is_each_members_own_forward_pass(hidden, readout):
    """Eq. (6) in every layer, a convolution's noise on its kernel matrix through its patches: the
    population's counts (a potential readout's summed potentials) and hidden spikes equal
    snn.forward of every member's formed parameters."""
    network = small_network(hidden, readout)
    params = as_float64(snn.init_network(1, network, std=0.8))
    frames = (np.random.default_rng(0).random((4, 3, network.sizes[0])) < 0.4).astype(np.float64)
    settings_ = snn_eggroll.Config(population=8, rank=2, sigma=0.4, seed=1, logit_scale=1.0)
    counts, hidden_spikes = snn_eggroll.perturbed_forward(params, frames, settings_, 3, count_hidden=True,
                                                          network=network)
    members = settings_.members(params, 3, network=network)
    assert np.abs(counts).sum() > 0 and hidden_spikes.sum() > 0
    for i in range(8):
        own, own_hidden = snn.forward(members.member(i), frames, count_hidden=True, network=network)
        if readout == "rate":  # whole spikes: exactly
            np.testing.assert_array_equal(counts[i], own[0])
        else:  # potentials: x (W + sigma E)^T and x W^T + sigma (x B) A^T / sqrt(r) round apart
            np.testing.assert_allclose(counts[i], own[0], rtol=1e-12, atol=1e-12)
        assert hidden_spikes[i] == own_hidden[0]


@pytest.mark.parametrize("hidden, readout", [("conv3k3s2p1,5", "rate"), ("conv2k3,conv3k2s2,4", "rate"),
                                             ("6,5,4", "rate"), ("6,5,4", "potential"), ("conv2k3,4", "potential")])
def test_bptts_gradient_through_any_network_is_the_finite_difference_one(hidden, readout):
    """With smooth spikes and the reset differentiated, bptt_backward is the exact gradient of the
    loss with its spike price on every hidden layer, Eq. (12): central differences agree (a
    potential readout's output layer has no spike to smooth: its loss is smooth as it is)."""
    network = small_network(hidden, readout)
    rng = np.random.default_rng(2)
    params = as_float64(snn.init_network(1, network, std=0.8))
    frames = (rng.random((4, 3, network.sizes[0])) < 0.4).astype(np.float64)
    labels = rng.integers(0, 3, 3)
    lif, k, scale, price = snn.LIF(), 2.0, 2.0, 0.01

    def loss(p):
        cache = baselines.bptt_forward(p, frames, lif, smooth=True, k=k, network=network)
        hidden_spikes = sum(cache[f"o{layer}"].sum() for layer in range(1, len(network.layers)))
        return snn.cross_entropy(cache["counts"], labels, 4, scale) + price * hidden_spikes / 3

    cache = baselines.bptt_forward(params, frames, lif, smooth=True, k=k, network=network)
    grads = baselines.bptt_backward(params, cache, labels, lif, k, scale, detach_reset=False, spike_cost=price,
                                    network=network)
    assert list(grads) == list(params)
    for name, grad in grads.items():
        flat = params[name].reshape(-1)
        for i in rng.choice(flat.size, min(5, flat.size), replace=False):
            kept = flat[i]
            flat[i] = kept + 1e-6
            up = loss(params)
            flat[i] = kept - 1e-6
            down = loss(params)
            flat[i] = kept
            assert grad.reshape(-1)[i] == pytest.approx((up - down) / 2e-6, rel=1e-4, abs=1e-8), (name, i)


def test_a_potential_readout_integrates_eq_1_without_spiking_or_reset():
    """readout="potential": the output neurons' V_t = beta V_{t-1} + W o_t + b, written out here
    from the rate network's hidden spikes, never reset although V passes the threshold; the
    forward pass returns sum_t V_t, whose mean over the frames Eq. (3) reads; evaluation counts no
    output spike and classifies by the largest potential."""
    rate, potential = snn.Network.parse("6", n_out=3), snn.Network.parse("6", n_out=3, readout="potential")
    params = as_float64(snn.init_network(4, rate, std=0.3))
    bits = (np.random.default_rng(5).random((5, 6, snn.SIZES[0])) < 0.1).astype(np.uint8)  # (N, T, inputs)
    frames = bits.transpose(1, 0, 2).astype(np.float64)
    hidden = baselines.bptt_forward(params, frames, snn.LIF(), network=rate)["o1"]
    v, total, passed = np.zeros((5, 3)), np.zeros((5, 3)), False
    for t in range(6):
        v = 0.9 * v + hidden[t] @ params["W2"].T + params["b2"]
        total += v
        passed |= bool((v >= 1.0).any())
    summed, _ = snn.forward(params, frames, network=potential)
    assert passed and hidden.sum() > 0
    np.testing.assert_allclose(summed[0], total, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(baselines.bptt_forward(params, frames, snn.LIF(), network=potential)["counts"],
                               total, rtol=1e-12, atol=1e-12)
    split = data.Split(np.packbits(bits, axis=-1).reshape(5, -1), total.argmax(axis=1), 6)
    accuracy, spikes, _, where = training.evaluate(params, split, snn.LIF(), np, network=potential)
    assert accuracy == 1.0 and where["output_spikes_per_sample"] == 0
    assert spikes == pytest.approx(hidden.sum() / 5)
    with pytest.raises(ValueError, match="readout 'spikes' is neither of rate, potential"):
        snn.Network.parse("6", readout="spikes")


@pytest.mark.parametrize("hidden", ["6,5,4", "conv2k3,conv3k2s2,4"])
def test_bptts_loss_prices_the_spikes_of_every_hidden_layer(hidden):
    """The loss bptt_step reports with a spike cost is the cross-entropy plus the cost times the
    hidden spikes per sample of every hidden layer, Eq. (12), as snn.forward counts them."""
    network = small_network(hidden)
    rng = np.random.default_rng(3)
    params = as_float64(snn.init_network(1, network, std=0.8))
    frames = (rng.random((4, 3, network.sizes[0])) < 0.4).astype(np.float64)
    labels = rng.integers(0, 3, 3)
    cache = baselines.bptt_forward(params, frames, network=network)
    assert all(cache[f"o{layer}"].sum() > 0 for layer in range(1, len(network.layers)))  # every hidden layer fires
    counts, hidden_spikes = snn.forward(params, frames, count_hidden=True, network=network)
    price, scale = 0.01, 2.0
    _, _, stats = baselines.bptt_step(params, optim.init(params), frames, labels,
                                      baselines.BPTTConfig(25.0, scale, spike_cost=price), optim.Adam(0.01),
                                      network=network)
    expected = snn.cross_entropy(counts[0], labels, 4, scale) + price * hidden_spikes[0] / 3
    assert stats["loss"] == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_bptts_gradient_keeps_the_parameters_float_type(dtype):
    """Through two convolutions (col2im between them) every gradient is in the parameters' float type."""
    network = small_network("conv2k3,conv3k2s2,4")
    params = {name: value.astype(dtype) for name, value in snn.init_network(1, network, std=0.8).items()}
    frames = (np.random.default_rng(0).random((4, 3, network.sizes[0])) < 0.4).astype(dtype)
    cache = baselines.bptt_forward(params, frames, snn.LIF(), network=network)
    grads = baselines.bptt_backward(params, cache, np.array([0, 1, 2]), snn.LIF(), network=network)
    assert {name: grad.dtype for name, grad in grads.items()} == dict.fromkeys(params, np.dtype(dtype))


def test_the_population_forward_counts_hidden_spikes_only_when_asked():
    network = small_network("conv3k3s2p1,5")
    params = snn.init_network(1, network, std=0.8)
    frames = (np.random.default_rng(0).random((4, 3, network.sizes[0])) < 0.4).astype(np.float32)
    population = snn_eggroll.Config(population=4, rank=1, sigma=0.4, seed=1, logit_scale=1.0).members(params, 0,
                                                                                                      network=network)
    assert snn_eggroll.population_forward(population, frames, network=network)[1] is None
    assert snn_eggroll.population_forward(population, frames, count_hidden=True, network=network)[1].shape == (4,)


@pytest.mark.parametrize("hidden", ["6,5", "conv2k3,conv3k2s2,4"])
def test_the_hidden_count_sums_every_hidden_layer_of_every_member(hidden):
    """A member's hidden spikes are those of all its hidden layers, as BPTT's forward of its own
    weights spikes them, float32 throughout; and its output counts are that forward's."""
    network = small_network(hidden)
    params = snn.init_network(2, network, std=0.8)
    frames = (np.random.default_rng(1).random((5, 3, network.sizes[0])) < 0.4).astype(np.float32)
    population = snn_eggroll.Config(population=4, rank=1, sigma=0.3, seed=2, logit_scale=1.0).members(params, 0,
                                                                                                      network=network)
    counts, hidden_spikes = snn_eggroll.population_forward(population, frames, count_hidden=True, network=network)
    assert counts.dtype == np.float32
    for i in range(4):
        cache = baselines.bptt_forward(population.member(i), frames, snn.LIF(), network=network)
        expected = sum(float(cache[f"o{layer}"].sum()) for layer in range(1, len(network.sizes) - 1))
        assert expected > 0 and hidden_spikes[i] == expected, (i, hidden_spikes[i], expected)
        np.testing.assert_array_equal(counts[i], cache["counts"])


def test_a_convolutional_network_trains_by_eggroll_and_by_bptt():
    """A few steps of each on a task the convolution can see (a bright left or right half) lower
    the loss; ES of the same network is refused in one line."""
    network = small_network("conv3k3s2,6")
    rng = np.random.default_rng(5)
    labels = rng.integers(0, 3, 24)
    images = np.zeros((24, 2, 7, 7))
    for i, label in enumerate(labels):
        images[i, :, :, [slice(0, 3), slice(2, 5), slice(4, 7)][label]] = 1
    frames = np.broadcast_to((images.reshape(24, -1) * (rng.random((6, 24, 98)) < 0.7)), (6, 24, 98)).astype(np.float32)
    frames = np.ascontiguousarray(frames)
    start = snn.init_network(0, network, std=0.5)
    loss = lambda p: float(snn.cross_entropy(snn.forward(p, frames, network=network)[0][0], labels, 6, 5.0))  # noqa: E731
    params, state = start, optim.init(start)
    egg = snn_eggroll.Config(population=64, rank=1, sigma=0.2, seed=1, logit_scale=5.0)
    for generation in range(30):
        params, state, _ = snn_eggroll.generation_step(params, state, frames, labels, generation, egg,
                                                       optim.Adam(0.05), network=network)
    assert loss(params) < loss(start) - 0.1
    params, state = start, optim.init(start)
    for _ in range(30):
        params, state, _ = baselines.bptt_step(params, state, frames, labels, baselines.BPTTConfig(1.0, 5.0),
                                               optim.Adam(0.05), network=network)
    assert loss(params) < loss(start) - 0.1
    with pytest.raises(ValueError, match="do not fit the layer before"):
        baselines.es_generation_step(start, optim.init(start), frames, labels, 0, baselines.ESConfig(4, 0.1, 0, 5.0),
                                     optim.Adam(0.01))
    with pytest.raises(ValueError, match=r"if they are a convolutional network's, pass its layers, network=snn"):
        snn_eggroll.generation_step(start, optim.init(start), frames, labels, 0, egg, optim.Adam(0.05))
    with pytest.raises(ValueError, match=r"init_network\(seed, network\)$"):  # the layers given: no such advice
        snn.check_params({**start, "b1": start["b1"][:-1]}, network)


@pytest.mark.parametrize("method, rank, members", [("eggroll", 1, 64), ("eggroll", 4, 32), ("inference", None, 8),
                                                   ("bptt", None, 0)])
def test_the_memory_estimate_covers_a_convolutional_generation(method, rank, members):
    """resources.generation_bytes of a convolutional network, before anything is allocated, covers
    the peak tracemalloc sees (NumPy's arrays), within 4x: the layer-1 patches, the population
    product over every position and the wide LIF layer are counted."""
    import tracemalloc
    import resources
    network = snn.Network.parse("conv8k5s2,32")
    batch, time_bins = 16, 10
    rng = np.random.default_rng(0)
    frames = (rng.random((time_bins, batch, network.sizes[0])) < 0.05).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    params = snn.init_network(0, network)
    state, adam = optim.init(params), optim.Adam(0.01)
    calls = {"eggroll": lambda: snn_eggroll.generation_step(params, state, frames, labels, 0,
                                                            snn_eggroll.Config(members, rank or 1, 0.1, 0, 1.0), adam,
                                                            network=network),
             "inference": lambda: snn.forward(params, frames, n_members=members, network=network),
             "bptt": lambda: baselines.bptt_step(params, state, frames, labels, baselines.BPTTConfig(25, 1), adam,
                                                 network=network)}
    tracemalloc.start()
    calls[method]()
    peak = tracemalloc.get_traced_memory()[1] + frames.nbytes  # the frames are made before
    tracemalloc.stop()
    estimate = resources.generation_bytes(method, rank, members // 2, batch, time_bins, network=network)
    assert peak <= estimate <= 4 * peak, (method, peak, estimate)


def test_bptts_memory_estimate_covers_a_convolution_whose_patches_outweigh_its_neurons():
    """A 9 x 9 kernel reads 162 inputs per position, 20 times what its LIF neurons hold: BPTT's
    estimate counts layer 1's patches, forward and back, so it still covers the peak tracemalloc
    sees (the neurons' arrays alone are a sixth of it)."""
    import tracemalloc
    import resources
    network = snn.Network.parse("conv2k9,8")
    batch, time_bins = 4, 10
    rng = np.random.default_rng(0)
    frames = (rng.random((time_bins, batch, network.sizes[0])) < 0.05).astype(np.float32)
    labels = rng.integers(0, 10, batch)
    params = snn.init_network(0, network)
    tracemalloc.start()
    baselines.bptt_step(params, optim.init(params), frames, labels, baselines.BPTTConfig(25, 1), optim.Adam(0.01),
                        network=network)
    peak = tracemalloc.get_traced_memory()[1] + frames.nbytes
    tracemalloc.stop()
    assert peak <= resources.generation_bytes("bptt", None, 0, batch, time_bins, network=network)


@pytest.mark.parametrize("method", ["inference", "bptt"])
def test_the_memory_estimate_counts_the_hidden_layers_together(method):
    """resources.generation_bytes holds a deeper network's hidden layers as one layer as wide as
    they are together: inference and BPTT, whose arrays are the neurons' and not the weights',
    need as much for 2312-64-64-10 as for 2312-128-10, not what 2312-64-10 needs."""
    import resources

    def estimate(hidden):
        return resources.generation_bytes(method, None, 256, 64, 10, network=snn.Network.parse(hidden))
    assert estimate("64,64") == estimate("128") != estimate("64")
    assert estimate("32,32,64") == estimate("128")


@pytest.mark.parametrize("hidden, rank", [("64", 1), ("conv4k5s2,16,8", 3)])
def test_the_noise_estimate_is_the_noise_eggroll_draws(hidden, rank):
    """resources.noise_bytes of EGGROLL is the float32 size of what its population draws per pair:
    the factors A_p and B_p of every weight and the noise delta_p of every bias."""
    import eggroll
    import resources
    network = snn.Network.parse(hidden)
    params = snn.init_network(0, network)
    pairs = 3
    population = eggroll.Population(params, {name: 0.1 for name in params}, rank, 1, 0, range(pairs))
    drawn = 0
    for name in params:
        factors = population.factors(name)
        drawn += sum(f.size for f in factors) if params[name].ndim == 2 else factors.size
    assert resources.noise_bytes("eggroll", rank, pairs, network) == 4 * drawn


def test_evaluation_counts_every_layers_spikes_and_synapses():
    """training.evaluate on 2312-conv2k5s3-6-10: hidden spikes summed over both hidden layers, and
    synaptic operations each input event times its synapses into the convolution plus each hidden
    spike times its synapses into the next layer, as counted here from BPTT's forward pass."""
    network = snn.Network.parse("conv2k5s3,6")
    params = snn.init_network(3, network, std=0.6)
    rng = np.random.default_rng(0)
    bits = (rng.random((12, 4, snn.SIZES[0])) < 0.2).astype(np.uint8)
    split = data.Split(np.packbits(bits, axis=-1).reshape(12, -1), rng.integers(0, 10, 12), 4)
    frames = split.frames(np.arange(12))
    cache = baselines.bptt_forward(params, frames, snn.LIF(), network=network)
    spikes = [frames.sum(axis=(0, 1))] + [cache[f"o{layer}"].sum(axis=(0, 1)) for layer in (1, 2)]
    _, _, _, where = training.evaluate(params, split, snn.LIF(), np, network=network)
    assert spikes[1].sum() > 0 and spikes[2].sum() > 0
    assert where["hidden_spikes_per_sample"] == pytest.approx((spikes[1].sum() + spikes[2].sum()) / 12, rel=1e-12)
    assert where["input_synaptic_ops_per_sample"] == pytest.approx((network.synapses(1) * spikes[0]).sum() / 12,
                                                                   rel=1e-12)
    assert where["synaptic_ops_per_sample"] == pytest.approx(
        sum((network.synapses(layer) * counts).sum() for layer, counts in enumerate(spikes, start=1)) / 12, rel=1e-12)
    assert where["silent_hidden_fraction"] == pytest.approx(np.mean(np.concatenate(spikes[1:]) == 0), abs=1e-12)



@pytest.mark.parametrize("make, network, message", [
    (lambda: {"W1": np.ones((10, 2312), np.float32), "b1": np.ones(10, np.float32)}, None,
     "a spiking network's parameters are W1, b1, W2, b2, ..., one weight and bias per layer, at least 2 layers, "
     "got W1, b1: make them with snn.init_network(seed, network)"),
    (lambda: snn.init_network(0, snn.Network.parse("64")), snn.Network.parse("128,64"),
     "a spiking network's parameters are W1, b1, W2, b2, ..., one weight and bias per layer, 3 layers, "
     "got W1, W2, b1, b2: make them with snn.init_network(seed, network)"),
    (lambda: snn.init_network(0, snn.Network.parse("conv8k5s2,64")), None,
     "W2 (64, 1800) and b2 (64,) do not fit the layer before: a dense network read off the weights' shapes wants "
     "W2 (64, 8) and b2 (64,) there; make them with snn.init_network(seed, network); if they are a convolutional "
     "network's, pass its layers, network=snn.Network.parse(...)"),
    (lambda: snn.init_network(0, snn.Network.parse("64")), snn.Network.parse("128"),
     "W1 (64, 2312) and b1 (64,) do not fit the layer before: the network given wants W1 (128, 2312) and b1 (128,) "
     "there; make them with snn.init_network(seed, network)"),
    (lambda: {**snn.init_params(0), "W1": snn.init_params(0)["W1"].T.copy()}, None,  # in × out: its bias says so
     "W1 (2312, 64) looks transposed: a weight is (outputs, inputs), as its bias b1 (64,) counts the outputs; give "
     "W1.T"),
    (lambda: {**snn.init_params(0), "W2": snn.init_params(0)["W2"].T.copy()}, snn.Network.parse("64"),
     "W2 (64, 10) looks transposed: a weight is (outputs, inputs), as its bias b2 (10,) counts the outputs; give "
     "W2.T"),
])
def test_parameters_that_are_no_network_are_told_in_full(make, network, message):
    with pytest.raises(ValueError) as raised:
        snn.check_params(make(), network)
    assert str(raised.value) == message


def refused_in_full(cases):
    """Each (make, message): make() raises a ValueError whose text is the whole message."""
    for make, message in cases:
        with pytest.raises(ValueError) as raised:
            make()
        assert str(raised.value) == message, (message, str(raised.value))


def test_the_spiking_clients_inputs_and_settings_are_checked_by_name():
    """generation_step (through snn.check_frames and snn_eggroll.check_config) and the network's
    own types refuse in one line what would train on the wrong thing or fail deep inside: labels
    outside the classes or not integers, frames with NaN, inf or no sample, frames not of floats,
    lists, a network or LIF made by hand with no sense, settings of the readout out of range, and an
    Adam whose averages EGGROLL's would not use."""
    network = snn.Network.parse("6", n_out=3, image=(2, 4, 4))
    params = snn.init_network(0, network)
    frames = (np.random.default_rng(0).random((4, 5, 32)) < 0.3).astype(np.float32)
    labels = np.array([0, 1, 2, 0, 1])
    config_ = snn_eggroll.Config(8, 1, 0.1, 1, 1.0)
    LABELS = "labels must be integers in 0..2, the classes of the 3 outputs, got "
    NAN = "frames hold NaN or inf, which no neuron's potential survives: give finite inputs"

    def step(frames=frames, labels=labels, settings=config_, adam=optim.Adam(0.01), network=network):
        return snn_eggroll.generation_step(params, optim.init(params), frames, labels, 0, settings, adam,
                                           network=network)
    with_nan, with_inf = frames.copy(), frames.copy()
    with_nan[0, 0, 0], with_inf[1, 2, 3] = np.nan, np.inf
    cases = [
        (lambda: step(labels=np.array([-1, 1, 2, 0, 1])), "labels must be integers in 0..2, the classes of the 3 "
                                                         "outputs, got int64 labels from -1 to 2"),
        (lambda: step(labels=np.array([3, 1, 2, 0, 1])), f"{LABELS}int64 labels from 0 to 3"),
        (lambda: step(labels=labels.astype(float)), f"{LABELS}float64 labels"),
        (lambda: step(labels=labels.astype(bool)), f"{LABELS}bool labels"),
        (lambda: step(labels=labels[:3]), "labels must have shape (5,) to match the batch of frames, got (3,)"),
        (lambda: step(labels=labels[:4]), "labels must have shape (5,) to match the batch of frames, got (4,), the "
                                          "length of the frames' first axis: frames are (T, N, n_in), time first; if "
                                          "yours are (N, T, n_in), give frames.transpose(1, 0, 2)"),
        (lambda: step(labels=labels.tolist()), "labels must be an array, got a list: give numpy.asarray(labels)"),
        (lambda: step(frames=frames.tolist()), "frames must be an array, got list: give numpy.asarray(frames)"),
        (lambda: step(frames=with_nan), NAN),
        (lambda: step(frames=with_inf), NAN),
        (lambda: baselines.es_generation_step(params, optim.init(params), with_nan, labels, 0,
                                              baselines.ESConfig(8, 0.1, 1, 1.0), optim.Adam(0.01)), NAN),
        (lambda: step(frames=frames[:0]), "frames of shape (0, 5, 32) hold no frame or no sample: give at least one "
                                          "of each"),
        (lambda: step(frames=frames[:, :0], labels=labels[:0]), "frames of shape (4, 0, 32) hold no frame or no sample: "
                                                                "give at least one of each"),
        (lambda: step(frames=frames.astype(np.uint8)), "frames are uint8: give them as floats, "
                                                       "frames.astype(numpy.float32) (0 and 1 for events)"),
        (lambda: step(network=snn.Network(network.layers, network.image, readout="potental")),
         "readout 'potental' is neither of rate, potential: use e.g. \"rate\""),
        (lambda: snn.init_network(0, snn.Network((snn.Dense(0), snn.Dense(3)), (2, 4, 4))),
         "layer 1 (0) has 0 neurons: give it 1..65536, e.g. 64"),
        (lambda: snn.LIF(beta=float("nan")), "beta (the potential's decay per frame) must be an int or float in [0, 1], "
                                             "got nan: use e.g. 0.9"),
        (lambda: snn.LIF(threshold=0.0), "threshold must be an int or float in [1.17549e-38, 3.40282e+38], got 0.0: use "
                                         "e.g. 1.0"),
        (lambda: step(settings=snn_eggroll.Config(8, 1, 0.1, 1, float("nan"))),
         "logit_scale must be an int or float in [1e-06, 1e+06], got nan: use e.g. 1.0"),
        (lambda: step(settings=snn_eggroll.Config(8, 1, 0.1, 1, 1.0000001e6)),
         "logit_scale must be an int or float in [1e-06, 1e+06], got 1000000.1: use e.g. 1.0"),
        (lambda: step(settings=snn_eggroll.Config(8, 1, 0.1, 1, 1.0, spike_cost=-0.1)),
         "spike_cost must be an int or float in [0, 1e+06], got -0.1: use e.g. 0.0"),
        (lambda: step(settings=snn_eggroll.Config(8, 1, 0.1, 1, 1.0, spike_cost=1.0000001e6)),
         "spike_cost must be an int or float in [0, 1e+06], got 1000000.1: use e.g. 0.0"),
        (lambda: step(adam=optim.Adam(0.01, beta1=0.5)), "EGGROLL's Adam averages as Kingma & Ba's (0.9, 0.999, "
                                                         "1e-08) (the moments' coefficients and eps), got (0.5, 0.999, "
                                                         "1e-08): give optim.Adam(lr, weight_decay)")]
    refused_in_full(cases)
    step()  # and the same call, as it should be, steps
    step(settings=snn_eggroll.Config(8, 1, 0.1, 1, 1e6, spike_cost=1e6))  # each range's upper end is in it


def test_a_population_changed_by_dataclasses_replace_is_checked_as_ask_makes_one():
    """Parameters of another kind or shape, a fingerprint that is not ask's or a rank above a
    weight's smaller side, put into a Population by dataclasses.replace: refused where it is made."""
    import dataclasses
    import eggroll
    es = eggroll.Eggroll(8, 1, 0.1, 3)
    population = es.ask(es.init({"w": np.ones((5, 4), np.float32)}))
    cases = [(dict(fingerprint=5), "a Population is made by Eggroll.ask (its fingerprint is ask's"),
             (dict(params={"w": np.ones((2, 2, 2), np.float32)}), "parameter 'w' has shape (2, 2, 2)"),
             (dict(params={"w": [[1.0] * 4] * 5}), "parameter 'w' is a list, not an array"),
             (dict(params={"w": np.ones((5, 4), np.int32)}), "parameter 'w' is int32"),
             (dict(rank=10), "rank must lie in 1..4 (the smaller side of w, 5x4), got 10")]
    for changes, message in cases:
        with pytest.raises(ValueError, match=re.escape(message)):
            dataclasses.replace(population, **changes)


def test_the_spiking_librarys_entry_points_refuse_what_they_cannot_run_by_name():
    """The forward passes, BPTT's and vanilla ES's steps, the network's and LIF's constructors and
    init_network refuse in one line what would run wrong or fail deep inside: frames of another
    width, type or none, NaN frames at inference, a Fraction or a threshold float32 rounds to 0,
    layers or images no network has, a convolution as the output, settings out of range, an Adam
    whose decay would flip the weights, a generation or seed no noise key holds, parameters not
    finite (whose silent neurons would count nothing), a LIF of another type, the loss's settings
    called alone, a schedule's index past its count, integer parameters given to Adam."""
    from fractions import Fraction
    network = snn.Network.dense((12, 8, 3))
    params = snn.init_network(0, network)
    conv = snn.Network.parse("conv2k3,3", n_out=3, image=(2, 4, 4))
    conv_params = snn.init_network(0, conv)
    frames = np.ones((5, 4, 12), np.float32)
    EVENTS = " (0 and 1 for events)"
    AS_FLOATS = f": give them as floats, frames.astype(numpy.float32){EVENTS}"
    counts = np.ones((2, 4, 3), np.float32)
    labels = np.array([0, 1, 2, 0])
    with_nan = frames.copy()
    with_nan[0, 0, 0] = np.nan
    bptt = baselines.BPTTConfig(25.0, 2.0)
    es = baselines.ESConfig(8, 0.2, 1, 2.0)

    def bptt_step(settings=bptt, adam=optim.Adam(0.01)):
        return baselines.bptt_step(params, optim.init(params), frames, labels, settings, adam)

    def es_step(settings=es, generation=1, adam=optim.Adam(0.01), state=None):
        state = optim.init(params) if state is None else state
        return baselines.es_generation_step(params, state, frames, labels, generation, settings, adam)

    def damaged(moment, value, name="W1"):
        state = optim.init(params)
        state[moment][name] = state[moment][name] + value
        return state
    DAMAGED = ("which no update makes: the state was damaged; give an undamaged one, or optim.init(params) (Adam "
               "from zero)")
    cases = [
        (lambda: snn.forward(params, frames[..., :11]), "frames must have shape (T, N, 12), got (5, 4, 11): bin "
                                                        "events into T frames of 12 inputs"),
        (lambda: snn.forward(conv_params, frames, network=conv), "frames must have shape (T, N, 32), got (5, 4, 12): "
                                                                 "bin events into T frames of 32 inputs"),
        (lambda: snn.forward(params, frames.astype(np.float16)), f"frames are float16{AS_FLOATS}"),
        (lambda: snn.forward(params, frames[:0]), "frames of shape (0, 4, 12) hold no frame or no sample: give at least "
                                                  "one of each"),
        (lambda: snn.forward(params, with_nan), "frames hold NaN or inf, which no neuron's potential survives: give "
                                                "finite inputs"),
        (lambda: snn.forward(params, frames, n_members=0), "n_members must be a whole number >= 1, got 0: use 1"),
        (lambda: snn.forward({**params, "W2": params["W2"] * np.nan}, frames),
         "W2 holds NaN or inf, which no update makes: give finite parameters, as snn.init_network(seed, network) makes "
         "them"),
        (lambda: snn.forward(params, frames.astype(">f4")), "frames are >f4 (floats in the other byte order): give "
                                                            f"them as floats, frames.astype(numpy.float32){EVENTS}"),
        (lambda: snn.forward(params, frames, lif={"beta": 0.9}), "lif must be a snn.LIF, got dict: give e.g. "
                                                                 "snn.LIF(beta=0.9, threshold=1.0)"),
        (lambda: snn_eggroll.perturbed_forward(params, with_nan, snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 0),
         "frames hold NaN or inf, which no neuron's potential survives: give finite inputs"),
        (lambda: snn.cross_entropy(counts, labels, 0), "n_frames must be a whole number in 1..2147483648, got 0: use "
                                                       "T, the frames the counts were summed over"),
        (lambda: snn.cross_entropy(counts, labels, 5, -5.0), "logit_scale must be an int or float in [1e-06, 1e+06], "
                                                             "got -5.0: use e.g. 1.0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, np.ones(2), -1.0),
         "spike_cost must be an int or float in [0, 1e+06], got -1.0: use e.g. 0.0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, None, 0.5),
         "a price on spikes needs hidden_spikes, each member's count, of shape (2,), got None: count them "
         "(count_hidden=True), or give spike_cost 0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, np.ones(3), 0.5),
         "a price on spikes needs hidden_spikes, each member's count, of shape (2,), got (3,): count them "
         "(count_hidden=True), or give spike_cost 0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, np.array([1.0, -1.0]), 0.5),
         "hidden_spikes hold NaN, inf or a negative count, which no network's spikes make: count them "
         "(count_hidden=True)"),
        (lambda: snn.cross_entropy(counts.tolist(), labels, 5), "counts must be a float32 or float64 array (..., N, "
                                                                "n_out) of at least one sample and one class, got a "
                                                                "list: give what forward returns"),
        (lambda: snn.cross_entropy(counts[0, 0], labels, 5), "counts must be a float32 or float64 array (..., N, "
                                                             "n_out) of at least one sample and one class, got a "
                                                             "float32 array of shape (3,): give what forward returns"),
        (lambda: snn.cross_entropy(counts[:, :0], labels[:0], 5), "counts must be a float32 or float64 array (..., N, "
                                                                  "n_out) of at least one sample and one class, got a "
                                                                  "float32 array of shape (2, 0, 3): give what forward "
                                                                  "returns"),
        (lambda: snn.cross_entropy(counts * np.nan, labels, 5), "counts hold NaN or inf, which no network's spikes "
                                                                "make: give finite counts"),
        (lambda: snn.correct_per_class(counts[0], np.array([0, 1, 2, -1])),
         "labels must be integers in 0..2, the classes of the 3 outputs, got int64 labels from -1 to 2"),
        (lambda: snn.Network.parse(64), "hidden must be a string of layers, got an int: use e.g. \"64\" or "
                                        "\"conv8k5s2,64\""),
        (lambda: snn.forward(params, frames, network="8"), "network must be a snn.Network, got str: use "
                                                           "Network.parse(hidden)"),
        (lambda: snn.forward([params], frames), "params must be a dict of W1, b1, W2, b2, ..., got a list: make them "
                                                "with snn.init_network(seed, network)"),
        (lambda: baselines.bptt_forward(params, frames, lif=(0.9, 1.0)), "lif must be a snn.LIF, got tuple: give e.g. "
                                                                         "snn.LIF(beta=0.9, threshold=1.0)"),
        (lambda: baselines.bptt_forward(params, frames, smooth="no"), "smooth must be True or False, got 'no'"),
        (lambda: baselines.bptt_forward(params, frames, smooth=True, k=-1), "k must be an int or float in (0, 1e+06], "
                                                                            "got -1: use e.g. 25"),
        (lambda: baselines.bptt_backward(params, baselines.bptt_forward(params, frames), labels, lif="x"),
         "lif must be a snn.LIF, got str: give e.g. snn.LIF(beta=0.9, threshold=1.0)"),
        (lambda: snn_eggroll.generation_step(params, None, frames, labels, 0, snn_eggroll.Config(8, 1, 0.1, 1, 1.0),
                                             optim.Adam(0.01)),
         "state is not Adam's state (m, v and t): give optim.init(params), or the state the last update returned"),
        (lambda: snn_eggroll.generation_step(params, optim.init(params), frames, labels, 0,
                                             snn_eggroll.Config(8, 1, {"W1": 0.1}, 1, 1.0), optim.Adam(0.01)),
         "sigma is one float for every layer here (the output layer's scaled by output_sigma_scale), got a dict: use "
         "e.g. 0.1, or eggroll.Eggroll for a sigma per parameter"),
        (lambda: snn_eggroll.generation_step(params, optim.init(params), frames, labels, -1,
                                             snn_eggroll.Config(8, 1, 0.1, 1, 1.0), optim.Adam(0.01)),
         "generation must be a whole number in 0..4294967295, got -1: use the count of generations before this one "
         "(0 for the first)"),
        (lambda: snn_eggroll.generation_step(params, optim.init(params), frames.transpose(1, 0, 2), labels, 0,
                                             snn_eggroll.Config(8, 1, 0.1, 1, 1.0), optim.Adam(0.01)),
         "labels must have shape (5,) to match the batch of frames, got (4,), the length of the frames' first axis: "
         "frames are (T, N, n_in), time first; if yours are (N, T, n_in), give frames.transpose(1, 0, 2)"),
        *[(lambda config=config: snn_eggroll.generation_step(params, optim.init(params), frames, labels, 0, config,
                                                             optim.Adam(0.01)),
           f"config must be a snn_eggroll.Config, got {kind}: give e.g. snn_eggroll.Config(population=512, rank=1, "
           f"sigma=0.1, seed=1, logit_scale=1.0)") for config, kind in ((None, "a NoneType"), ({}, "a dict"),
                                                                       (es, "a baselines.ESConfig"))],
        *[(lambda call=call: call(snn_eggroll.Config(8, 1, 0.1, 1, 1.0)),
           "config must be a baselines.ESConfig, got a snn_eggroll.Config: give e.g. baselines.ESConfig("
           "population=512, sigma=0.1, seed=1, logit_scale=1.0)")
          for call in (es_step, lambda config: baselines.es_forward(params, frames, config, 0))],
        *[(lambda sigma=sigma: snn_eggroll.generation_step(params, optim.init(params), frames, labels, 0,
                                                           snn_eggroll.Config(8, 1, sigma, 1, 1.0), optim.Adam(0.01)),
           said) for sigma, said in (
              ("0.2", "sigma must be a finite int or float > 0, got '0.2': use e.g. 0.1"),
              (None, "sigma must be a finite int or float > 0, got None: use e.g. 0.1"),
              ([0.2], "sigma is one float for every layer here (the output layer's scaled by output_sigma_scale), got "
                      "a list: use e.g. 0.1, or eggroll.Eggroll for a sigma per parameter"),
              (np.array([0.2, 0.2]), "sigma is one float for every layer here (the output layer's scaled by "
                                     "output_sigma_scale), got a NumPy array: use e.g. 0.1, or eggroll.Eggroll for a "
                                     "sigma per parameter"))],
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 0,
                                               pairs=slice(0, 4, 2)),
         "pairs must be a slice within the population's 4 pairs, in steps of one (a process may hold none), got "
         "slice(0, 4, 2): use e.g. slice(0, 4)"),
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0,
                                                                                  output_sigma_scale=1000000.5), 0),
         "output_sigma_scale must be an int or float in (0, 1e+06], got 1000000.5: use e.g. 1.0"),
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0,
                                                                                  inner_scale=1000000.5), 0),
         "inner_scale must be an int or float in (0, 1e+06], got 1000000.5: use e.g. 1.0"),
        (lambda: baselines.bptt_forward(params, frames, smooth=True, k=1000000.5),
         "k must be an int or float in (0, 1e+06], got 1000000.5: use e.g. 25"),
        (lambda: baselines.bptt_backward(params, [], labels), "cache must be the dict bptt_forward returned, got a list "
                                                              "without its made_with: give bptt_backward what "
                                                              "bptt_forward(params, frames, ...) returned"),
        (lambda: baselines.bptt_backward(params, baselines.bptt_forward(params, frames), labels, network="8"),
         "network must be a snn.Network, got str: use Network.parse(hidden)"),
        (lambda: snn.init_network(0, None), "network must be a snn.Network, got NoneType: use Network.parse(hidden)"),
        (lambda: snn.forward({1: params["W1"], **params}, frames),
         "a spiking network's parameters are W1, b1, W2, b2, ..., one weight and bias per layer, at least 2 layers, "
         "got 1, W1, W2, b1, b2: make them with snn.init_network(seed, network)"),
        (lambda: snn.correct_per_class(counts[0], labels[:3]),
         "labels must have shape (4,) to match the counts' samples, got (3,)"),
        (lambda: optim.ascend({"a": np.ones(2)}, {"a": memoryview(np.ones(2))}, optim.init({"a": np.ones(2)}),
                              optim.Adam(0.1)),
         "the step of parameter 'a' must be an array of its shape (2,), of float32 or "
         "float64 no wider than its float64, got a memoryview: give one step per parameter"),
        (lambda: optim.ascend({"a": np.ones(2)}, {"a": [1.0, 1.0]}, optim.init({"a": np.ones(2)}), optim.Adam(0.1)),
         "the step of parameter 'a' must be an array of its shape (2,), of float32 or "
         "float64 no wider than its float64, got a list: give one step per parameter"),
        (lambda: optim.scheduled_lr(0.1, "cosine", 15, 10), "index must be a whole number in 0..10, got 15: use the "
                                                            "update's number, from 0"),
        (lambda: optim.scheduled_lr(0.1, "cosine", 0, 0), "count must be a whole number >= 1, got 0: use the run's "
                                                          "number of updates"),
        (lambda: optim.scheduled_lr(float("nan"), "constant", 0, 10), "lr must be a finite int or float >= 0, got "
                                                                      "nan: use e.g. 0.01"),
        (lambda: optim.ascend({"a": np.ones(2, int)}, {"a": np.ones(2)}, optim.init({"a": np.ones(2, int)}),
                              optim.Adam(0.1)),
         "parameter 'a' is int64: Adam steps arrays of float32 or float64; give it as one, e.g. "
         "numpy.asarray(a, numpy.float32)"),
        (lambda: optim.ascend({"a": [1.0, 2.0]}, {"a": np.ones(2)}, optim.init({"a": np.ones(2)}), optim.Adam(0.1)),
         "parameter 'a' is a list, not an array: Adam steps arrays of float32 or float64; give it as one, e.g. "
         "numpy.asarray(a, numpy.float32)"),
        (lambda: snn.cross_entropy(counts, labels, 5, 1.0000001e6), "logit_scale must be an int or float in "
                                                                    "[1e-06, 1e+06], got 1000000.1: use e.g. 1.0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, np.ones(2), 1.0000001e6),
         "spike_cost must be an int or float in [0, 1e+06], got 1000000.1: use e.g. 0.0"),
        (lambda: snn_eggroll.fitness(counts, labels, 5, 1.0, [1.0, 1.0], 0.5),
         "a price on spikes needs hidden_spikes, each member's count, of shape (2,), got [1.0, 1.0]: count them "
         "(count_hidden=True), or give spike_cost 0"),
        (lambda: es_step(baselines.ESConfig(8, {"W1": 0.2}, 1, 2.0)),
         "vanilla ES takes one sigma for every parameter, a float, got {'W1': 0.2}: use e.g. 0.1"),
        (lambda: es_step(state=damaged("m", np.nan)), f"Adam's average of g of parameter 'W1' holds NaN, inf or "
                                                      f"(g^2's) a negative value, {DAMAGED}"),
        (lambda: baselines.bptt_step(params, damaged("v", -1.0, "b2"), frames, labels, bptt, optim.Adam(0.01)),
         f"Adam's average of g^2 of parameter 'b2' holds NaN, inf or (g^2's) a negative value, {DAMAGED}"),
        (lambda: es_step(state={**optim.init(params), "t": -3}), "Adam's update count t must be a whole number in "
                                                                 "0..9223372036854775807, got -3: use the count "
                                                                 "optim.init starts at 0"),
        (lambda: es_step(state={"m": {}, "v": {}}), "state is not Adam's state (m, v and t): give optim.init(params), "
                                                    "or the state the last update returned"),
        (lambda: es_step(state=optim.init({"W1": params["W1"]})),
         "Adam's state holds no average of g of parameter 'b1' as floats of its shape (8,): give optim.init(params) "
         "for these parameters, or the state the last update returned"),
        (lambda: optim.ascend(params, {"W1": params["W1"], "W2": params["W2"]}, optim.init(params), optim.Adam(0.01)),
         "grads name W1, W2 but the parameters are W1, W2, b1, b2: give one step per parameter"),
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 0, pairs=2),
         "pairs must be a slice within the population's 4 pairs, in steps of one (a process may hold none), got 2: "
         "use e.g. slice(0, 4)"),
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 0,
                                               pairs=slice(5, 9)),
         "pairs must be a slice within the population's 4 pairs, in steps of one (a process may hold none), got "
         "slice(5, 9, None): use e.g. slice(0, 4)"),
        (lambda: baselines.es_forward(params, frames, baselines.ESConfig(8, 0.1, 1, 1.0), 0, pairs=slice(2, 9)),
         "pairs must be a slice within the population's 4 pairs, in steps of one (a process may hold none), got "
         "slice(2, 9, None): use e.g. slice(0, 4)"),
        (lambda: baselines.es_forward(params, frames * np.nan, baselines.ESConfig(8, 0.1, 1, 1.0), 0),
         "frames hold NaN or inf, which no neuron's potential survives: give finite inputs"),
        (lambda: baselines.es_forward(params, frames, baselines.ESConfig(8, 0.1, 1, 1.0), -1),
         "generation must be a whole number in 0..4294967295, got -1: use the count of generations before this one "
         "(0 for the first)"),
        (lambda: optim.ascend(params, {**params, "W1": params["W1"][:1]}, optim.init(params), optim.Adam(0.01)),
         "the step of parameter 'W1' must be an array of its shape (8, 12), of float32 or "
         "float64 no wider than its float32, got a float32 array of shape (1, 12): give one step per parameter"),
        (lambda: optim.ascend(params, {**params, "W1": params["W1"].astype(np.float64)}, optim.init(params),
                              optim.Adam(0.01)),
         "the step of parameter 'W1' must be an array of its shape (8, 12), of float32 or "
         "float64 no wider than its float32, got a float64 array of shape (8, 12): give one step per parameter"),
        (lambda: optim.ascend(params, {**params, "W1": params["W1"] * np.nan}, optim.init(params), optim.Adam(0.01)),
         "the step of parameter 'W1' holds NaN or inf, which would make the parameter NaN: give a finite step"),
        (lambda: snn.simulate(None, None, 1, 5, 4, readout="potentials"),
         "readout 'potentials' is neither of rate, potential: use e.g. \"rate\""),
        (lambda: baselines.bptt_forward(params, frames.astype(np.int64)), f"frames are int64{AS_FLOATS}"),
        (lambda: snn_eggroll.perturbed_forward(params, frames.tolist(), snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 0),
         "frames must be an array, got list: give numpy.asarray(frames)"),
        (lambda: snn_eggroll.perturbed_forward(params, frames, snn_eggroll.Config(8, 1, 0.1, 1, 1.0), 1.5),
         "generation must be a whole number in 0..4294967295, got 1.5: use the number of the generation to draw (0 "
         "for the first)"),
        (lambda: snn.LIF(beta=Fraction(1, 2)), "beta (the potential's decay per frame) must be an int or float in "
                                               "[0, 1], got Fraction(1, 2): use e.g. 0.9"),
        (lambda: snn.LIF(threshold=1e-50), "threshold must be an int or float in [1.17549e-38, 3.40282e+38], got 1e-50: "
                                           "use e.g. 1.0"),
        (lambda: snn.LIF(beta=True), "beta (the potential's decay per frame) must be an int or float in [0, 1], got "
                                     "True: use e.g. 0.9"),
        (lambda: snn.Network.parse("8", image=(2, -3, 34)), "each side of the image must be a whole number >= 1, got -3: "
                                                            "use (2, 34, 34)"),
        (lambda: snn.Network(network.layers, [12, 1, 1]).checked(), "image must be (channels, height, width), got "
                                                                    "[12, 1, 1]: use e.g. (2, 34, 34)"),
        (lambda: snn.Network((snn.Dense(8), snn.Conv(2, 3)), (2, 6, 6)).checked(),
         "layers must be a tuple of Dense and Conv layers, at least one hidden, ending with the Dense output layer, "
         "got (Dense(width=8), Conv(channels=2, kernel=3, stride=1, padding=0)): make them with Network.parse(hidden)"),
        (lambda: snn.Network(()).checked(), "layers must be a tuple of Dense and Conv layers, at least one hidden, "
                                            "ending with the Dense output layer, got (): make them with "
                                            "Network.parse(hidden)"),
        (lambda: snn.init_network(1, network, xp="numpy"), "xp must be the module numpy or cupy, got a str: give "
                                                           "backend.array_module()"),
        (lambda: snn.Network((snn.Dense(2.5), snn.Dense(3)), (12, 1, 1)).checked(),
         "Dense's width must be a whole number >= 0 (a Python int), got 2.5: make the layers with "
         "Network.parse(hidden)"),
        (lambda: snn.Network((snn.Conv(np.int16(1000), 1), snn.Dense(3))).checked(),  # 1,156,000 neurons, wrapped
         "Conv's channels must be a whole number >= 0 (a Python int), got np.int16(1000): make the layers with "
         "Network.parse(hidden)"),
        (lambda: snn.Network((snn.Conv(2, 1), snn.Dense(3)), (np.int16(2), np.int16(1100), np.int16(1100))).checked(),
         "each side of the image must be a Python int, got np.int16(2): give int(side)"),
        (lambda: snn.Network((snn.Conv(2, 3, 1, -1), snn.Dense(3)), (2, 6, 6)).checked(),
         "Conv's padding must be a whole number >= 0 (a Python int), got -1: make the layers with "
         "Network.parse(hidden)"),
        (lambda: snn.init_network(0, network, std=float("nan")), "std must be an int or float in (0, 10], got nan: use "
                                                                 "e.g. 0.3"),
        (lambda: snn.init_network(-1, network), "seed must be a whole number in 0..18446744073709551615, got -1: use "
                                                "e.g. 1"),
        (lambda: snn.init_network(0, "12,8"), "network must be a snn.Network, got str: use Network.parse(hidden)"),
        (lambda: bptt_step(baselines.BPTTConfig(-25.0, 2.0)), "slope must be an int or float in (0, 1e+06], got -25.0: "
                                                              "use e.g. 25"),
        (lambda: bptt_step(baselines.BPTTConfig(1.0000001e6, 2.0)), "slope must be an int or float in (0, 1e+06], got "
                                                                    "1000000.1: use e.g. 25"),
        (lambda: bptt_step(baselines.BPTTConfig(25.0, 0.0)), "logit_scale must be an int or float in [1e-06, 1e+06], "
                                                             "got 0.0: use e.g. 1.0"),
        (lambda: bptt_step(baselines.BPTTConfig(25.0, 2.0, spike_cost=1.0000001e6)),  # BPTT's only check of the price
         "spike_cost must be an int or float in [0, 1e+06], got 1000000.1: use e.g. 0.0"),
        (lambda: bptt_step(baselines.BPTTConfig(25.0, 2.0, detach_reset="no")),
         "detach_reset must be True or False, got 'no'"),
        (lambda: bptt_step(es), "config must be a baselines.BPTTConfig, got ESConfig: give e.g. "
                                "baselines.BPTTConfig(slope=25.0, logit_scale=10.0)"),
        (lambda: bptt_step(adam={"lr": 0.01}), "adam must be an optim.Adam, got dict: give e.g. optim.Adam(0.01)"),
        (lambda: bptt_step(adam=optim.Adam(float("nan"))), "lr must be a finite int or float >= 0, got nan: use e.g. 0.01"),
        (lambda: bptt_step(adam=optim.Adam(0.5, weight_decay=2.0)),
         "lr x weight_decay must be < 1, got 0.5 x 2.0: each step multiplies the parameters by 1 - lr x weight_decay, "
         "which would zero or flip them; lower one"),
        (lambda: bptt_step(adam=optim.Adam(1e39)), "this step would make parameter 'W1' NaN or inf (lr 1e+39): lower "
                                                   "lr; the parameters and state given are left as they were"),
        (lambda: es_step(adam=optim.Adam(1e39)), "this step would make parameter 'W1' NaN or inf (lr 1e+39, sigma "
                                                 "0.2): lower lr, or raise sigma; the parameters and state given are "
                                                 "left as they were"),
        (lambda: bptt_step(adam=optim.Adam(0.01, beta1=1.0)), "beta1 must be an int or float in [0, 1), got 1.0: use "
                                                              "e.g. 0.9"),
        (lambda: bptt_step(adam=optim.Adam(0.01, beta2=-0.5)), "beta2 must be an int or float in [0, 1), got -0.5: use "
                                                               "e.g. 0.999"),
        (lambda: bptt_step(adam=optim.Adam(0.01, eps=0.0)), "eps must be an int or float in [1.17549e-38, 1], got 0.0: "
                                                            "use e.g. 1e-8"),
        (lambda: es_step(generation="1"), "generation must be a whole number in 0..4294967295, got '1': use the "
                                          "count of generations before this one (0 for the first)"),
        (lambda: es_step(generation=-1), "generation must be a whole number in 0..4294967295, got -1: use the "
                                         "count of generations before this one (0 for the first)"),
        (lambda: es_step(baselines.ESConfig(8, 0.2, 2 ** 64, 2.0)), "seed must be a whole number in "
                                                                    "0..18446744073709551615, got 18446744073709551616: "
                                                                    "use e.g. 0"),
        (lambda: es_step(baselines.ESConfig(8, 0.2, 1, -2.0)), "logit_scale must be an int or float in [1e-06, 1e+06], "
                                                               "got -2.0: use e.g. 1.0"),
        (lambda: es_step(baselines.ESConfig(8, 0.2, 1, 2.0, spike_cost=-1)), "spike_cost must be an int or float in "
                                                                             "[0, 1e+06], got -1: use e.g. 0.0"),
        (lambda: es_step(adam=optim.Adam(-0.05)), "lr must be a finite int or float >= 0, got -0.05: use e.g. 0.01"),
        (lambda: es_step(baselines.ESConfig(8, 1e-40, 1, 2.0)), "sigma must lie in 1.18e-38..3.4e+38, float32's range, "
                                                                "in which the noise is drawn, got 1e-40: use e.g. 0.1"),
        (lambda: es_step(baselines.ESConfig(8.0, 0.2, 1, 2.0)), "population must be a whole number <= 8589934592, got "
                                                                "8.0: use the int 8: a float is not taken for a "
                                                                "count, even a whole one"),
        (lambda: snn.forward({**params, "W2": params["W2"].astype(np.int32)}, frames),
         "W2 is int32: a spiking network's parameters are float32 or float64 arrays; give them as "
         ".astype(numpy.float32), or make them with snn.init_network(seed, network)"),
        (lambda: baselines.bptt_forward({**params, "b1": params["b1"].tolist()}, frames),
         "b1 is a list, not an array: a spiking network's parameters are float32 or float64 arrays; give them as "
         ".astype(numpy.float32), or make them with snn.init_network(seed, network)")]
    refused_in_full(cases)
    bptt_step(), es_step()  # and the same calls, as they should be, step
    square = np.ones((4, 4, 12), np.float32)  # T = N: labels of N samples match the frames' first axis too
    snn_eggroll.generation_step(params, optim.init(params), square, labels, 0, snn_eggroll.Config(8, 1, np.float64(0.1),
                                                                                                  1, 1.0),
                                optim.Adam(0.01))  # a NumPy scalar sigma is one float
    snn.forward(conv_params, np.ones((5, 4, 32), np.float32), network=conv)  # a network's own width, not its weights'
    snn.LIF(beta=0), snn.LIF(beta=1.0), bptt_step(baselines.BPTTConfig(1e6, 2.0))  # the ranges' ends are in them
    bptt_step(baselines.BPTTConfig(25.0, 2.0, detach_reset=np.bool_(True)))  # NumPy's bool is a bool
    tiny = float(np.finfo(np.float32).tiny)
    zeros = {name: value * 0 for name, value in params.items()}  # (which float32 resolves at any sigma)
    for sigma, weights in ((tiny, zeros), (float(np.finfo(np.float32).max), params)):  # float32's range, ends and all
        with np.errstate(over="ignore", invalid="ignore"):  # (members at sigma float32's largest overflow)
            baselines.es_forward(weights, frames, baselines.ESConfig(8, sigma, 1, 2.0), 0)
    with pytest.raises(interface_checks.Unresolved, match="^parameter 'W1' holds an entry of magnitude "):
        baselines.es_forward(params, frames, baselines.ESConfig(8, tiny, 1, 2.0), 0)  # each member the mean: as EGGROLL


def test_an_overflowing_bptt_or_es_step_is_one_error_without_numpys_warnings():
    """An lr so large that Adam's step overflows float32: BPTT's and vanilla ES's steps raise one
    FloatOverflow naming it, with no NumPy warning before it (as EGGROLL's tell)."""
    import warnings
    params = snn.init_network(0, snn.Network.dense((12, 8, 3)))
    frames, labels = np.ones((5, 4, 12), np.float32), np.array([0, 1, 2, 0])
    steps = (lambda: baselines.bptt_step(params, optim.init(params), frames, labels, baselines.BPTTConfig(25.0, 2.0),
                                         optim.Adam(1e39)),
             lambda: baselines.es_generation_step(params, optim.init(params), frames, labels, 1,
                                                  baselines.ESConfig(8, 0.2, 1, 2.0), optim.Adam(1e39)))
    for step in steps:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(interface_checks.FloatOverflow, match="this step would make parameter 'W1' NaN or inf"):
                step()


def test_a_price_on_spikes_costs_a_silent_member_nothing():
    """Hidden counts of 0 (a member whose hidden layers never spike) are taken, and cost nothing."""
    counts, labels = np.ones((2, 4, 3), np.float32), np.array([0, 1, 2, 0])
    assert np.array_equal(snn_eggroll.fitness(counts, labels, 5, 1.0, np.zeros(2), 0.5),
                          snn_eggroll.fitness(counts, labels, 5, 1.0))


@pytest.mark.parametrize("params, adam, said", [
    (snn.init_params(1), 0.01, "adam must be an optim.Adam, got float: give e.g. optim.Adam(0.01)"),
    ({"foo": np.ones(3, np.float32)}, optim.Adam(0.01),  # whose layer sigmas read off the name
     "a spiking network's parameters are W1, b1, W2, b2, ..., one weight and bias per layer, at least 2 layers, got "
     "foo")])
def test_the_configs_method_names_what_it_cannot_make_an_eggroll_of(params, adam, said):
    """Config.method with Adam's lr alone, or parameters not named W1, b1, ...: one ValueError naming
    the fix (it raised AttributeError, or int()'s error on the name)."""
    config = snn_eggroll.Config(population=8, rank=1, sigma=0.1, seed=1, logit_scale=1.0)
    with pytest.raises(ValueError) as refused:
        config.method(params, adam)
    assert str(refused.value).startswith(said)
