"""The CuPy path against the NumPy path: same noise bits, same spikes, same updates, and every
kernel of gpu.py against its NumPy twin.

Skipped where no CUDA GPU is usable (CI has none; tests/test_kernels.py checks the kernels'
sources on the CPU there). On a GPU machine:
    python -m pytest tests/test_gpu.py
Exact comparisons run in float64, where GEMM summation order (cuBLAS vs OpenBLAS) moves a
membrane potential by ~1e-15 and cannot plausibly flip a spike. The noise itself is float32 in
both (Box-Muller's log, sin and cos differ in the last bit between CUDA and the CPU's libm), so
a float64 update agrees to float32 rounding of the noise: within 1e-5 of the learning rate.
float32 runs are compared by the quantities training uses (fitness, gradient) within float32
tolerances.
"""
import json

import numpy as np
import pytest

import backend

cupy = backend._usable_cupy()
pytestmark = pytest.mark.skipif(cupy is None, reason="needs CuPy and a CUDA GPU")

import baselines  # noqa: E402
import config as run_config  # noqa: E402
import data  # noqa: E402
import eggroll  # noqa: E402
import gpu  # noqa: E402
import noise  # noqa: E402
import optim  # noqa: E402
import snn  # noqa: E402
import snn_eggroll
from nmnist_files import REAL_ROOT, needs_real  # noqa: E402

SIZES = (96, 16, 10)


def problem(dtype, seed=0, batch=24, n_frames=6, density=0.3, std=0.5):
    """Parameters, binary frames and labels on the CPU (NumPy), in `dtype`."""
    rng = np.random.default_rng(seed)
    params = {k: v.astype(dtype) for k, v in snn.init_params(seed, SIZES, std=std).items()}
    frames = (rng.random((n_frames, batch, SIZES[0])) < density).astype(dtype)
    labels = rng.integers(0, SIZES[-1], batch)
    return params, frames, labels


def on_gpu(tree):
    if isinstance(tree, dict):
        return {k: on_gpu(v) for k, v in tree.items()}
    return cupy.asarray(tree) if isinstance(tree, np.ndarray) else tree


def assert_same_update(new_gpu, new_cpu, params, lr):
    """The GPU's step new - params equals the CPU's within 1e-5 lr (float32 noise rounding), and
    the step is not zero, so a wrong sign, pair or scale cannot pass."""
    for name in params:
        step_cpu = new_cpu[name] - params[name]
        assert np.abs(step_cpu).max() > 0.1 * lr
        np.testing.assert_allclose(new_gpu[name].get() - params[name], step_cpu, rtol=0, atol=1e-5 * lr)


def test_philox_bits_are_identical():
    """Philox4x32-10 is integer arithmetic: noise.philox4x32 on CuPy arrays gives NumPy's words."""
    blocks = np.arange(5000, dtype=np.uint32)[None, :]
    pairs = np.arange(7, dtype=np.uint32)[:, None]
    key = (0x1234567890ABCDEF, 0x12345678)
    cpu = noise.philox4x32((blocks, pairs, 2, 99), key)
    on_gpu_words = noise.philox4x32((cupy.asarray(blocks), cupy.asarray(pairs), 2, 99), key)
    for word_cpu, word_gpu in zip(cpu, on_gpu_words):
        np.testing.assert_array_equal(word_cpu, word_gpu.get())


PHILOX_WORDS_KERNEL = gpu.PHILOX_SOURCE + r"""
extern "C" __global__ void philox_words(unsigned int* counters, const unsigned int* keys, long long n) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n; i += (long long)blockDim.x * gridDim.x)
        philox4x32_10(counters + 4 * i, keys[2 * i], keys[2 * i + 1]);
}
"""


def test_philox_kernel_words_are_numpy_words():
    """The device function inside gpu.philox_normals gives noise.philox4x32's words, bit for bit,
    on 100,000 random counters under 8 random keys."""
    rng = np.random.default_rng(3)
    counters = rng.integers(0, 2 ** 32, (100_000, 4), dtype=np.uint64).astype(np.uint32)
    key_words = rng.integers(0, 2 ** 32, (8, 2), dtype=np.uint64).astype(np.uint32)
    which_key = np.arange(len(counters)) % len(key_words)
    words = cupy.asarray(counters)
    gpu.launch(gpu.compiled(PHILOX_WORDS_KERNEL, "philox_words"), len(counters),
               (words, cupy.asarray(key_words[which_key]), np.int64(len(counters))))
    for k, key in enumerate(key_words):
        rows = which_key == k
        expected = noise.philox4x32(tuple(counters[rows].T), (int(key[0]), int(key[1])))
        np.testing.assert_array_equal(words[cupy.asarray(rows)].get(), np.stack(expected, axis=1))


@pytest.mark.parametrize("kernels", [True, False])
def test_normals_agree_to_float32_rounding(monkeypatch, kernels):
    """Box-Muller on the same bits, from the kernel or from the NumPy definition run on CuPy:
    equal up to the last bits of log, sqrt, sin and cos; every count, a cut last block too."""
    monkeypatch.setattr(gpu, "KERNELS", kernels)
    for count in (1, 7, 2312 * 4 + 64 * 4):
        cpu = noise.standard_normals(7, 3, np.arange(40), 0, count)
        on_gpu = noise.standard_normals(7, 3, cupy.arange(40), 0, count, cupy)
        assert on_gpu.dtype == cpu.dtype == np.float32 and on_gpu.shape == cpu.shape
        np.testing.assert_allclose(on_gpu.get(), cpu, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("distinct", [5, 10 ** 9])
def test_ranks_kernel_equals_centred_ranks_bit_for_bit(dtype, distinct):
    """gpu.centred_ranks = eggroll.centred_ranks on NumPy, bit for bit, with many ties and none,
    at 8,192 members."""
    values = np.random.default_rng(distinct).integers(0, distinct, 8192).astype(dtype) / 7
    got = eggroll.centred_ranks(cupy.asarray(values))
    assert isinstance(got, cupy.ndarray)
    np.testing.assert_array_equal(got.get(), eggroll.centred_ranks(values))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_kernel_equals_adam_update(dtype):
    """gpu.adam_update = optim.adam_update (step 3, with weight decay) to the dtype's rounding,
    and the old moments are left as they were."""
    rng = np.random.default_rng(2)
    value, grad, m, v = (rng.normal(0, 1, (64, 300)).astype(dtype) for _ in range(4))
    v = np.abs(v)
    adam = optim.Adam(lr=0.05, weight_decay=0.1)
    m_gpu, v_gpu = cupy.asarray(m), cupy.asarray(v)
    got = gpu.adam_update(cupy.asarray(value), cupy.asarray(grad), m_gpu, v_gpu, 3, adam)
    want = optim.adam_update(value, grad, m, v, 3, adam)
    tolerance = 1e-6 if dtype == np.float32 else 1e-14
    for got_array, want_array in zip(got, want):
        assert got_array.dtype == want_array.dtype == dtype
        np.testing.assert_allclose(got_array.get(), want_array, rtol=tolerance, atol=tolerance)
    np.testing.assert_array_equal(m_gpu.get(), m)
    np.testing.assert_array_equal(v_gpu.get(), v)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fused_lif_step_equals_numpy_step(dtype):
    """The ElementwiseKernel computes Eqs. (1)-(2) as the NumPy path does, in place on v."""
    rng = np.random.default_rng(1)
    v = rng.normal(0.5, 0.6, (8, 32, 16)).astype(dtype)
    current = rng.normal(0.2, 0.5, (32, 16)).astype(dtype)  # broadcast over members, as in forward
    lif = snn.LIF(0.9, 1.0)
    u = dtype(0.9) * v + current  # before the reset; the GPU may fuse this multiply-add
    v_gpu, spikes_gpu = cupy.asarray(v), cupy.empty(v.shape, dtype)
    snn.lif_step(v_gpu, cupy.asarray(current), lif, spikes_gpu)
    spikes = np.empty_like(v)
    snn.lif_step(v, current, lif, spikes)
    clear = np.abs(u - 1.0) > 1e-5  # not within rounding of the threshold
    np.testing.assert_array_equal(spikes_gpu.get()[clear], spikes[clear])
    np.testing.assert_allclose(v_gpu.get(), v, rtol=1e-6, atol=1e-6)
    assert 0.1 < spikes.mean() < 0.9  # both outcomes were exercised


@pytest.mark.parametrize("spike_cost", [0.0, 0.01])
def test_forward_and_eggroll_generation_match_in_float64(spike_cost):
    """One EGGROLL generation on the GPU = on the CPU, with and without a price on hidden spikes:
    output and hidden spike counts (of all pairs and of a slice), new params, Adam state."""
    params, frames, labels = problem(np.float64)
    config = snn_eggroll.Config(population=64, rank=2, sigma=0.1, seed=5, logit_scale=5.0, spike_cost=spike_cost)
    adam = optim.Adam(lr=0.01)
    for pairs in (slice(None), slice(5, 20)):
        counts_cpu, hidden_cpu = snn_eggroll.perturbed_forward(params, frames, config, 3, count_hidden=True, pairs=pairs)
        counts_gpu, hidden_gpu = snn_eggroll.perturbed_forward(on_gpu(params), cupy.asarray(frames), config, 3,
                                                               count_hidden=True, pairs=pairs)
        np.testing.assert_array_equal(counts_gpu.get(), counts_cpu)
        np.testing.assert_array_equal(hidden_gpu.get(), hidden_cpu)
        assert 0 < counts_cpu.mean() < 6  # neither silent nor saturated
    state = optim.init(params)
    new_cpu, state_cpu, stats_cpu = snn_eggroll.generation_step(params, state, frames, labels, 3, config, adam)
    new_gpu, state_gpu, stats_gpu = snn_eggroll.generation_step(
        on_gpu(params), on_gpu(state), cupy.asarray(frames), cupy.asarray(labels), 3, config, adam)
    assert_same_update(new_gpu, new_cpu, params, adam.lr)
    for name in params:
        v_cpu = state_cpu["v"][name]  # (1 - b2) g^2: compared on its own scale, where g ~ 0 too
        np.testing.assert_allclose(state_gpu["v"][name].get(), v_cpu, rtol=1e-5, atol=1e-6 * v_cpu.max())
    assert stats_gpu == pytest.approx(stats_cpu, rel=1e-12)


def test_reference_size_generation_agrees_in_float32():
    """At the reference size in float32, GPU and CPU agree on what training uses: the fitness of
    every member (a handful of spikes may flip at the threshold) and the ranks-based gradient."""
    params = snn.init_params(0)
    rng = np.random.default_rng(0)
    frames = (rng.random((10, 256, 2312)) < 0.082).astype(np.float32)
    labels = rng.integers(0, 10, 256)
    config = snn_eggroll.Config(population=512, rank=4, sigma=0.1, seed=1, logit_scale=5.0)
    counts_cpu, _ = snn_eggroll.perturbed_forward(params, frames, config, 0)
    counts_gpu, _ = snn_eggroll.perturbed_forward(on_gpu(params), cupy.asarray(frames), config, 0)
    assert np.mean(counts_gpu.get() != counts_cpu) < 1e-3
    fitness_cpu = snn_eggroll.fitness(counts_cpu, labels, 10, 5.0)
    fitness_gpu = snn_eggroll.fitness(counts_gpu, cupy.asarray(labels), 10, 5.0).get()
    np.testing.assert_allclose(fitness_gpu, fitness_cpu, atol=0.02)
    f = eggroll.pair_differences(eggroll.centred_ranks(fitness_cpu))
    grad_cpu = eggroll.gradient(f, config.members(params, 0), config.pairs)
    grad_gpu = eggroll.gradient(cupy.asarray(f), config.members(on_gpu(params), 0), config.pairs)
    for name in params:
        np.testing.assert_allclose(grad_gpu[name].get(), grad_cpu[name], rtol=1e-3, atol=1e-4)


def test_network_kernel_equals_numpy_definition_on_the_gpu(monkeypatch):
    """At the reference size in float32, on the same GPU: the forward pass through
    gpu.lowrank_lif_network and through the NumPy definition on CuPy (KERNELS off) agree but for
    spikes within rounding of the threshold."""
    params = snn.init_params(0, xp=cupy)
    frames = cupy.asarray(np.random.default_rng(0).random((10, 256, 2312)) < 0.082, dtype=cupy.float32)
    config = snn_eggroll.Config(population=512, rank=4, sigma=0.1, seed=1, logit_scale=5.0)
    counts, hidden = snn_eggroll.perturbed_forward(params, frames, config, 0, count_hidden=True)
    monkeypatch.setattr(gpu, "KERNELS", False)
    want, want_hidden = snn_eggroll.perturbed_forward(params, frames, config, 0, count_hidden=True)
    assert float((counts != want).mean()) < 1e-3 and float(want.mean()) > 0.1
    np.testing.assert_allclose(hidden.get(), want_hidden.get(), rtol=1e-3)


@pytest.mark.parametrize("mode", baselines.ES_MODES)
@pytest.mark.parametrize("spike_cost", [0.0, 0.01])
def test_full_rank_es_generation_matches_in_float64(mode, spike_cost):
    """Vanilla ES (both modes, with and without a spike cost) gives the same update on both devices."""
    params, frames, labels = problem(np.float64, seed=2)
    config = baselines.ESConfig(population=32, sigma=0.1, seed=3, logit_scale=5.0, mode=mode, spike_cost=spike_cost)
    adam, state = optim.Adam(lr=0.01), optim.init(params)
    new_cpu, _, _ = baselines.es_generation_step(params, state, frames, labels, 1, config, adam)
    new_gpu, _, _ = baselines.es_generation_step(on_gpu(params), on_gpu(state), cupy.asarray(frames),
                                                 cupy.asarray(labels), 1, config, adam)
    assert_same_update(new_gpu, new_cpu, params, adam.lr)


@pytest.mark.parametrize("spike_cost", [0.0, 0.01])
def test_bptt_step_matches_in_float64(spike_cost):
    """The hand-written surrogate-gradient BPTT step gives the same loss and update on both, with
    and without a spike cost."""
    params, frames, labels = problem(np.float64, seed=4)
    config, adam = baselines.BPTTConfig(slope=1.0, logit_scale=10.0, spike_cost=spike_cost), optim.Adam(lr=2e-3)
    state = optim.init(params)
    new_cpu, _, stats_cpu = baselines.bptt_step(params, state, frames, labels, config, adam)
    new_gpu, _, stats_gpu = baselines.bptt_step(on_gpu(params), on_gpu(state), cupy.asarray(frames),
                                                cupy.asarray(labels), config, adam)
    assert stats_gpu == pytest.approx(stats_cpu, rel=1e-9)
    for name in params:
        np.testing.assert_allclose(new_gpu[name].get(), new_cpu[name], rtol=1e-9, atol=1e-12)


def test_correct_per_class_counts_on_the_gpu_even_with_no_hit():
    """Per-digit hits from CuPy arrays, including a batch with none right (an empty bincount)."""
    counts = cupy.asarray([[0, 5, 1], [0, 0, 4], [1, 0, 4], [0, 3, 3]])
    np.testing.assert_array_equal(snn.correct_per_class(counts, cupy.asarray([1, 2, 2, 2])), [0, 1, 2])
    np.testing.assert_array_equal(snn.correct_per_class(cupy.asarray([[0, 1]]), cupy.asarray([0])), [0, 0])


def test_translate_is_the_same_on_the_gpu():
    """Augmentation moves the same events on CuPy as on NumPy (binary frames, exact)."""
    rng = np.random.default_rng(0)
    frames = (rng.random((4, 32, data.N_INPUTS)) < 0.2).astype(np.float32)
    shifts = rng.integers(-3, 4, (32, 2))
    moved = data.translate(cupy.asarray(frames), shifts)
    assert isinstance(moved, cupy.ndarray)
    np.testing.assert_array_equal(moved.get(), data.translate(frames, shifts))


def test_train_on_gpu_writes_a_run_the_cpu_can_evaluate(tmp_path):
    """run.py train --device gpu on a small N-MNIST copy: final.json names the GPU, and its
    checkpoint loads on the CPU and scores the same test accuracy there (to one sample)."""
    import training
    from nmnist_files import write_dataset
    root = write_dataset(tmp_path / "NMNIST", n_train=20, n_test=3, n_events=300)
    config = run_config.RunConfig(generations=3, population=16, batch_size=16, eval_every=1, device="gpu",
                                  data_root=str(root), cache_dir=str(tmp_path / "cache"))
    final = training.train(config, tmp_path / "run", progress=False)
    assert final["device"].startswith("gpu")
    assert json.loads((tmp_path / "run" / "final.json").read_text())["test_acc"] == final["test_acc"]
    scored = training.evaluate_run(tmp_path / "run", root, tmp_path / "cache", device="cpu")
    assert scored["accuracy"]["test"] == pytest.approx(final["test_acc"], abs=1.5 / scored["samples"]["test"])


@needs_real
def test_short_training_on_gpu_matches_the_cpu_run(tmp_path):
    """EGGROLL r = 4 for 60 generations on the real recordings, on the GPU and on the CPU: both
    learn (test accuracy far above chance 0.10) and end within 5 points of each other (float32
    rounding flips a rare spike, so the runs drift apart slowly)."""
    import training
    finals = {}
    for device in ("cpu", "gpu"):
        config = run_config.RunConfig(method="eggroll", rank=4, generations=60, population=256, batch_size=128,
                                      eval_every=60, device=device, data_root=str(REAL_ROOT),
                                      cache_dir=str(tmp_path / "cache"))
        finals[device] = training.train(config, tmp_path / device, progress=False)
    assert finals["gpu"]["device"].startswith("gpu")
    assert min(finals["cpu"]["test_acc"], finals["gpu"]["test_acc"]) > 0.3
    assert abs(finals["gpu"]["test_acc"] - finals["cpu"]["test_acc"]) <= 0.05


@pytest.mark.parametrize("pairs, rank", [(300, 4), (4100, 1), (20, 64)])
def test_sparse_product_kernel_equals_blas_at_the_reference_size(monkeypatch, pairs, rank):
    """gpu.population_product on N-MNIST-sized frames (2,560 rows of 2,312 inputs, 8 % ones): bit
    for bit the BLAS product where every sum is exact (small integer factors), to float32
    rounding for normal factors; tiles and row groups cut anywhere; a share of the pairs gives,
    bit for bit, its columns of the whole."""
    rng = np.random.default_rng(pairs)
    x = cupy.asarray(rng.random((2560, 2312)) < 0.082, dtype=cupy.float32)
    for factors in (rng.integers(-8, 9, (pairs, rank, 2312)), rng.normal(size=(pairs, rank, 2312))):
        factors = cupy.asarray(factors, dtype=cupy.float32)
        got = eggroll.population_product(x, factors)
        share = slice(pairs // 3, pairs - pairs // 3)
        assert cupy.array_equal(eggroll.population_product(x, factors[share]), got[:, share])
        with monkeypatch.context() as twin:
            twin.setattr(gpu, "KERNELS", False)
            want = eggroll.population_product(x, factors)
        if factors.dtype == cupy.float32 and bool((factors == cupy.rint(factors)).all()):
            assert cupy.array_equal(got, want)
        else:
            np.testing.assert_allclose(got.get(), want.get(), rtol=1e-4, atol=1e-3)


def test_population_inference_kernel_equals_simulate_in_float64(monkeypatch):
    """snn.forward of 7 members through the rank-0 network kernel = through snn.simulate on the
    GPU: output and hidden spike counts, exactly in float64."""
    params, frames, _ = problem(np.float64)
    counts, hidden = snn.forward(on_gpu(params), cupy.asarray(frames), n_members=7, count_hidden=True)
    monkeypatch.setattr(gpu, "KERNELS", False)
    want, want_hidden = snn.forward(on_gpu(params), cupy.asarray(frames), n_members=7, count_hidden=True)
    assert counts.shape == want.shape == (7, frames.shape[1], SIZES[-1]) and float(want.std()) > 0.5
    assert cupy.array_equal(counts, want) and cupy.array_equal(hidden, want_hidden)


@needs_real
def test_two_processes_sharing_the_gpu_end_with_the_weights_of_one(tmp_path):
    """mpiexec -n 2 run.py train --distributed --device gpu, both processes on this one GPU: the
    weights, Adam state and accuracies of a single process on the same GPU, bit for bit (every
    product of the population has one shape and every sum one order, whoever computes it)."""
    from test_distributed import MPI_PROBLEM, assert_same_bits, train, weights
    if MPI_PROBLEM is not None:
        pytest.skip(MPI_PROBLEM)
    done = {}
    for processes in (None, 2):
        out = tmp_path / f"run-{processes or 1}"
        done[processes] = train(out, tmp_path / "cache", processes, "--device", "gpu")
        assert done[processes].returncode == 0, done[processes].stderr
    assert_same_bits(weights(tmp_path / "run-1"), weights(tmp_path / "run-2"))
    finals = [json.loads((tmp_path / f"run-{k}" / "final.json").read_text()) for k in (1, 2)]
    assert finals[0]["device"].startswith("gpu") and finals[1]["processes"] == 2
    for key in ("val_acc", "test_acc", "spikes_per_sample"):
        assert finals[0][key] == finals[1][key], key
