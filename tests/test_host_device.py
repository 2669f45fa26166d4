"""The device path's host/device discipline, on a CPU: the core's public functions run on arrays of
tests/strict_array.py, a stand-in for CuPy that refuses NumPy arrays as CuPy does.

On a GPU, an array made on the host where the device was meant (noise drawn without its `xp`, zeros
from `numpy`, a module taken from the wrong array) meets the device's arrays and CuPy raises
TypeError. On a CPU every array is NumPy's and such a slip passes unseen; here it raises the same
TypeError, or leaves a NumPy array among the outputs. Every test checks that each output is a
device (strict) array equal bit for bit to the NumPy path's, and the last one that every choice
between a CUDA kernel and its NumPy twin is asked of the arrays' own module.
tests/test_gpu.py checks the kernels themselves, on a GPU.
"""
import dataclasses

import numpy as np
import pytest

import backend
import baselines
import data
import eggroll
import gpu
import noise
import optim
import snn
import snn_eggroll
import strict_array as xp
from network_gradient import network_gradient

SIZES = (20, 8, 4)
CONFIG = snn_eggroll.Config(population=6, rank=2, sigma=0.1, seed=3, logit_scale=2.0)
ES = baselines.ESConfig(population=6, sigma=0.1, seed=3, logit_scale=2.0)
BPTT = baselines.BPTTConfig(slope=baselines.SLOPE, logit_scale=2.0)
ADAM = optim.Adam(lr=0.01, weight_decay=0.1)


def problem(n_frames=4, batch=5, density=0.4):
    """Parameters, binary frames and labels on the host, with weights big enough to spike."""
    rng = np.random.default_rng(0)
    params = snn.init_params(0, SIZES, std=0.8)
    frames = (rng.random((n_frames, batch, SIZES[0])) < density).astype(np.float32)
    labels = rng.integers(0, SIZES[-1], batch)
    return params, frames, labels


def on_device(tree):
    """Every NumPy array of a tree of dicts and tuples moved to the (strict) device."""
    if isinstance(tree, dict):
        return {key: on_device(value) for key, value in tree.items()}
    if isinstance(tree, tuple):
        return tuple(on_device(value) for value in tree)
    return xp.asarray(tree) if isinstance(tree, np.ndarray) else tree


def assert_same(device, host):
    """`device` mirrors `host` with every NumPy array a strict array of the same dtype and bits."""
    if isinstance(host, dict):
        assert device.keys() == host.keys()
        for key in host:
            assert_same(device[key], host[key])
    elif isinstance(host, (tuple, list)):
        assert len(device) == len(host)
        for d, h in zip(device, host):
            assert_same(d, h)
    elif isinstance(host, (np.ndarray, np.generic)):
        assert isinstance(device, xp.StrictArray), f"a {type(device).__name__} left the device"
        assert device.dtype == host.dtype and np.array_equal(device.get(), host)
    else:
        assert device == host


def run_both(function, *args, **kwargs):
    """function on the host arguments and on their device copies: the device result is the host's."""
    host = function(*args, **kwargs)
    device = function(*on_device(args), **on_device(kwargs))
    assert_same(device, host)
    return host


def test_the_stand_in_refuses_host_arrays_as_cupy_does():
    """The premise of this file: a strict array is found by backend.array_module_of, takes no
    kernels, goes to the host only explicitly, and a NumPy array cannot meet it."""
    x = xp.arange(6, dtype=xp.float32).reshape(2, 3)
    assert backend.array_module_of(x) is xp and not gpu.enabled(xp)
    assert backend.array_module_of(np.zeros(2)) is np and not gpu.enabled(np)
    assert isinstance(backend.to_numpy(x), np.ndarray) and np.array_equal(xp.asnumpy(x), np.arange(6).reshape(2, 3))
    host = np.ones((2, 3), dtype=np.float32)
    for mix in (lambda: np.asarray(x), lambda: x + host, lambda: host * x, lambda: host.T @ x,
                lambda: xp.concatenate([x, host]), lambda: xp.add(x, x, out=host),
                lambda: x.__setitem__(0, host[0]), lambda: host.__setitem__(0, x[0]), lambda: host.__iadd__(x),
                lambda: xp.zeros_like(None)):  # CuPy has no object arrays
        with pytest.raises(TypeError):
            mix()
    assert isinstance(np.exp(x) + np.float32(1) + 1, xp.StrictArray)  # dispatched to the device, as CuPy does
    for dispatched in (np.concatenate([x, x]), np.empty_like(x), np.take_along_axis(x, xp.zeros((2, 1), int), -1)):
        assert isinstance(dispatched, xp.StrictArray)  # NumPy functions too (__array_function__)


def test_noise_on_the_device():
    """philox4x32 on device counters, standard_normals, normals and lowrank_factors with xp: device
    arrays with NumPy's bits."""
    blocks, pairs = np.arange(9, dtype=np.uint32)[None, :], np.arange(3, dtype=np.uint32)[:, None]
    run_both(noise.philox4x32, (blocks, pairs, 2, 7), (0x1234567890ABCDEF, 0x12345678))
    key = (CONFIG.seed, 5)
    host_pairs, device_pairs = np.arange(3), xp.arange(3)
    assert_same(noise.standard_normals(*key, device_pairs, 1, 11, xp), noise.standard_normals(*key, host_pairs, 1, 11))
    assert_same(noise.normals(*key, device_pairs, "b2", 7, xp), noise.normals(*key, host_pairs, "b2", 7))
    assert_same(eggroll.lowrank_factors(*key, device_pairs, "W1", (8, 20), 2, xp),
                eggroll.lowrank_factors(*key, host_pairs, "W1", (8, 20), 2))
    assert_same(baselines.full_rank_noise(*key, device_pairs, "W2", (4, 8), xp),
                baselines.full_rank_noise(*key, host_pairs, "W2", (4, 8), np))


@pytest.mark.parametrize("max_shift", [0, 2])
def test_minibatches_are_made_on_the_device(max_shift):
    """A split whose packed frames are on the device (Split.on) gives the host's minibatches, made
    there: gathered, unpacked and shifted without the frames leaving the device."""
    rng = np.random.default_rng(1)
    n_time_bins, n = 3, 10
    packed = rng.integers(0, 256, (n, n_time_bins * data.N_INPUTS // 8), dtype=np.uint8)
    host = data.Split(packed, rng.integers(0, 10, n), n_time_bins)
    device = host.on(xp)
    assert isinstance(device.packed, xp.StrictArray) and isinstance(device.labels, np.ndarray)
    for step in (0, 3):
        assert_same(data.minibatch(device, 4, xp, 5, step, max_shift=max_shift),
                    data.minibatch(host, 4, np, 5, step, max_shift=max_shift))
    assert_same(device.frames(np.arange(n), xp), host.frames(np.arange(n)))


def test_network_on_the_device():
    """snn.forward of one member and of a population (hidden counts too), cross_entropy and
    correct_per_class; init_params straight onto the device."""
    params, frames, labels = problem()
    assert_same(snn.init_params(0, SIZES, std=0.8, xp=xp), params)
    counts = run_both(snn.forward, params, frames)[0]
    run_both(snn.forward, params, frames, n_members=3, count_hidden=True)
    run_both(snn.cross_entropy, counts, labels, frames.shape[0], 2.0)
    assert np.array_equal(snn.correct_per_class(xp.asarray(counts[0]), xp.asarray(labels)),
                          snn.correct_per_class(counts[0], labels))
    assert counts.any(), "no output spikes: the comparison would be vacuous"


@pytest.mark.parametrize("spike_cost", [0.0, 0.5])
def test_eggroll_generation_on_the_device(spike_cost):
    """perturbed_forward, centred_ranks, gradient, optim.ascend and a whole generation_step: new
    parameters, Adam's state and stats as on the host, every array still on the device."""
    params, frames, labels = problem()
    config = dataclasses.replace(CONFIG, spike_cost=spike_cost)
    counts, _ = run_both(snn_eggroll.perturbed_forward, params, frames, config, 4, count_hidden=True)
    shaped = run_both(eggroll.centred_ranks, np.array([0.3, -1.0, 0.3, 2.0, -1.0, 0.5]))
    grads = run_both(network_gradient, eggroll.pair_differences(shaped), params, config, 4)
    run_both(optim.ascend, params, grads, optim.init(params), ADAM)
    state = optim.init(params)
    for generation in range(2):
        params, state, _ = run_both(snn_eggroll.generation_step, params, state, frames, labels, generation, config, ADAM)
    assert counts.any()


@pytest.mark.parametrize("mode,spike_cost", [("batched", 0.0), ("sequential", 0.5)])
def test_full_rank_es_generation_on_the_device(mode, spike_cost):
    """The vanilla-ES baseline's generation in both evaluation modes, and its gradient."""
    params, frames, labels = problem()
    config = dataclasses.replace(ES, mode=mode, spike_cost=spike_cost)
    f = np.array([0.5, -0.25, 0.125], dtype=np.float32)
    run_both(baselines.full_rank_gradient, f, params, config, 1)
    run_both(baselines.es_forward, params, frames, config, 1, count_hidden=True)
    run_both(baselines.es_generation_step, params, optim.init(params), frames, labels, 1, config, ADAM)


@pytest.mark.parametrize("smooth,detach_reset,spike_cost", [(False, True, 0.0), (True, False, 0.5)])
def test_bptt_on_the_device(smooth, detach_reset, spike_cost):
    """bptt_forward (Heaviside and smooth spikes), bptt_backward and a bptt_step."""
    params, frames, labels = problem()
    cache = run_both(baselines.bptt_forward, params, frames, smooth=smooth)
    run_both(baselines.bptt_backward, params, cache, labels, logit_scale=2.0, detach_reset=detach_reset,
             spike_cost=spike_cost)
    config = dataclasses.replace(BPTT, detach_reset=detach_reset, spike_cost=spike_cost)
    run_both(baselines.bptt_step, params, optim.init(params), frames, labels, config, ADAM)
    assert cache["o1"].any() and cache["counts"].any()


def test_a_convolutional_network_on_the_device():
    """A deeper network with two convolutions (padding, stride) takes the generic path on a GPU:
    inference, EGGROLL's population and generation, and BPTT's step, im2col and col2im included."""
    network = snn.Network(snn.Network.parse("conv3k3p1,conv4k3s2,6", n_out=4).layers, (2, 5, 5)).checked()
    rng = np.random.default_rng(0)
    params = snn.init_network(0, network, std=0.8)
    frames = (rng.random((4, 5, network.sizes[0])) < 0.4).astype(np.float32)
    labels = rng.integers(0, 4, 5)
    assert_same(snn.init_network(0, network, std=0.8, xp=xp), params)
    counts = run_both(snn.forward, params, frames, n_members=3, count_hidden=True, network=network)[0]
    run_both(snn_eggroll.perturbed_forward, params, frames, CONFIG, 4, count_hidden=True, network=network)
    run_both(snn_eggroll.generation_step, params, optim.init(params), frames, labels, 0, CONFIG, ADAM,
             network=network)
    cache = run_both(baselines.bptt_forward, params, frames, network=network)
    run_both(baselines.bptt_step, params, optim.init(params), frames, labels, dataclasses.replace(BPTT, spike_cost=0.5),
             ADAM, network=network)
    assert counts.any() and cache["o2"].any()


def test_kernels_are_chosen_by_the_arrays_module(monkeypatch):
    """Every gpu.enabled question of the core names the module of the arrays at hand: on a GPU,
    asking about another module would skip the kernel (or take it for host arrays)."""
    asked = []
    monkeypatch.setattr(gpu, "enabled", lambda module: asked.append(module) or False)
    params, frames, labels = on_device(problem())
    state = optim.init(params)
    snn_eggroll.generation_step(params, state, frames, labels, 0, CONFIG, ADAM)
    baselines.es_generation_step(params, state, frames, labels, 0, ES, ADAM)
    baselines.bptt_step(params, state, frames, labels, BPTT, ADAM)
    snn.forward(params, frames, n_members=3)
    eggroll.centred_ranks(xp.arange(5.0))
    assert asked and all(module is xp for module in asked), {getattr(m, "__name__", m) for m in asked}


def test_the_ask_tell_interface_on_the_device():
    """A population's linear layers (shared and per-member x, with and without a bias), its
    members' weights and a tell: on the device as on the host, every array still on the device."""
    rng = np.random.default_rng(3)
    params = {"w": rng.standard_normal((5, 4)).astype(np.float32), "b": rng.standard_normal(5).astype(np.float32)}
    es = eggroll.Eggroll(6, 2, 0.1, seed=4)

    def generation(params, x, per_member):
        state = es.init(params)
        population = es.ask(state)
        out = population.linear("w", x, bias="b")
        return (out, population.linear("w", per_member), population.perturbed("w"),
                es.tell(state, population, out.sum(axis=(1, 2)))[0].params)

    x = rng.standard_normal((3, 4)).astype(np.float32)
    run_both(generation, params, x, rng.standard_normal((6, 3, 4)).astype(np.float32))


def refused_both(function, *args, **kwargs):
    """function's refusal of the host arguments and of their device copies: the same error, word for word."""
    with pytest.raises(ValueError) as host:
        function(*args, **kwargs)
    with pytest.raises(type(host.value)) as device:
        function(*on_device(args), **on_device(kwargs))
    assert str(device.value) == str(host.value)
    return str(host.value)


def test_refusals_on_the_device_say_what_they_say_on_the_host():
    """The checks' refusals of device arrays (a non-finite frame or Adam moment, an overflowed step of each
    method, another network's BPTT cache, a negative spike count, an interface step beyond float32) raise
    the host's line, not CuPy's TypeError from a device value put to a host question."""
    params, frames, labels = problem()
    nan_frames = frames.copy()
    nan_frames[0, 0, 0] = np.nan
    damaged = optim.init(params)
    damaged["v"]["W1"][0, 0] = np.nan
    huge = optim.Adam(lr=1e39)
    other = {name: value.copy() for name, value in params.items()}
    other["W2"][0, 0] += 1
    said = [refused_both(baselines.es_forward, params, nan_frames, ES, 0),
            refused_both(snn_eggroll.generation_step, params, damaged, frames, labels, 0, CONFIG, ADAM),
            refused_both(baselines.es_generation_step, params, optim.init(params), frames, labels, 0, ES, huge),
            refused_both(baselines.bptt_step, params, optim.init(params), frames, labels, BPTT, huge),
            refused_both(baselines.bptt_backward, other, baselines.bptt_forward(params, frames), labels),
            refused_both(snn_eggroll.fitness, np.ones((2, 5, 4), np.float32), labels, 4, 1.0,
                         np.array([1.0, -1.0], np.float32), 0.5)]
    es = eggroll.Eggroll(4, 1, 0.1, seed=0, shaping="raw")
    for start in ({"w": np.ones((2, 3), np.float32)}, {"w": xp.asarray(np.ones((2, 3), np.float32))}):
        state = es.init(start)
        with pytest.raises(eggroll.FloatOverflow) as raised:
            es.tell(state, es.ask(state), [1e38, -1e38, 1e38, -1e38])
        said.append(str(raised.value))
    assert said[-1] == said[-2] and all(line.count("\n") == 0 for line in said), said
