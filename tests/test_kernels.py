"""The CUDA sources of gpu.py, checked without a GPU.

The kernels are plain C++ inside. Compiled for the CPU by g++, with a few lines standing in for
CUDA's built-ins (one thread, one block: every kernel strides over its whole range), they must
give what their NumPy twins give: Philox's words bit for bit, the normals to float32 rounding of
log/sin/cos, the forward pass's spike counts exactly in float64, and the centred ranks bit for
bit. Where nvcc is installed, the sources must also compile for a GPU. So CI, which has no GPU,
still tests the kernels' arithmetic; tests/test_gpu.py runs them on a GPU.
"""
import ctypes
import shutil
import subprocess

import numpy as np
import pytest

import eggroll
import gpu
import noise
import snn
import snn_eggroll

CUDA_ON_CPU = r"""
#include <math.h>
#define __global__
#define __device__ static inline
#define __shared__
#define __syncthreads()
struct Index { unsigned int x, y, z; };
static const Index threadIdx = {0, 0, 0}, blockIdx = {0, 0, 0}, blockDim = {1, 1, 1}, gridDim = {1, 1, 1};
static inline unsigned int __umulhi(unsigned int a, unsigned int b) {
    return (unsigned int)(((unsigned long long)a * b) >> 32);
}
"""
# Entry points for the device functions, so that the tests can call them one at a time.
PHILOX_ENTRY_POINTS = r"""
extern "C" void philox_words(unsigned int* c, unsigned int k0, unsigned int k1) { philox4x32_10(c, k0, k1); }
extern "C" void box_muller_pair(unsigned int a, unsigned int b, float* out) { box_muller(a, b, out); }
"""
NETWORK_SIZES = (96, 16, 10)

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ to compile the CUDA sources for the CPU")


@pytest.fixture(scope="module")
def build(tmp_path_factory):
    """build(source, options) -> the source compiled for the CPU as a ctypes library (memoised)."""
    folder, built = tmp_path_factory.mktemp("kernels"), {}

    def compile_for_cpu(source, options=()):
        if (source, options) not in built:
            library = folder / f"kernels{len(built)}.so"
            shared = "\nREAL tile[1 << 21];\n" if "extern __shared__ REAL tile[]" in source else ""  # its memory
            subprocess.run(["g++", "-O2", "-ffp-contract=off", "-shared", "-fPIC", *options, "-x", "c++", "-",
                            "-o", str(library)], input=CUDA_ON_CPU + source + shared, text=True, check=True)
            built[source, options] = ctypes.CDLL(str(library))
        return built[source, options]
    return compile_for_cpu


def pointer(array):
    return array.ctypes.data_as(ctypes.c_void_p)


C_ARGUMENTS = {np.dtype(np.int32): ctypes.c_int, np.dtype(np.int64): ctypes.c_longlong,
               np.dtype(np.uint32): ctypes.c_uint, np.dtype(np.float32): ctypes.c_float,
               np.dtype(np.float64): ctypes.c_double}


@pytest.fixture
def cpu_kernels(build, monkeypatch):
    """gpu.compiled swapped for the kernel built for the CPU, called as CuPy calls a RawKernel,
    kernel(grid, block, args): arrays (C-contiguous, as the kernels assume) go as pointers, NumPy
    scalars by value in their own C type. gpu.py's own Python then runs on NumPy arrays, so the
    order of its arguments and the layout of its arrays are checked here too."""
    def compiled(source, name, options=()):
        function = getattr(build(source, options), name)

        def kernel(grid, block, args, shared_mem=0):
            assert all(a.flags.c_contiguous for a in args if isinstance(a, np.ndarray)), name
            function(*(pointer(a) if isinstance(a, np.ndarray) else C_ARGUMENTS[a.dtype](a) for a in args))
        return kernel
    monkeypatch.setattr(gpu, "compiled", compiled)


@pytest.fixture
def kernels_on_cpu(cpu_kernels, monkeypatch):
    """The GPU branches of noise.py and eggroll.py taken on NumPy arrays, through those kernels."""
    monkeypatch.setattr(gpu, "enabled", lambda xp: True)


@pytest.mark.parametrize("counter, key, expected", [  # Random123's kat_vectors, as in test_noise.py
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((0xFFFFFFFF,) * 4, (0xFFFFFFFF,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
])
def test_philox_kernel_known_answers(build, counter, key, expected):
    """The kernel's Philox4x32-10 reproduces Random123's known answers, bit for bit."""
    words = np.array(counter, dtype=np.uint32)
    build(gpu.PHILOX_SOURCE + PHILOX_ENTRY_POINTS).philox_words(pointer(words), ctypes.c_uint(key[0]),
                                                                ctypes.c_uint(key[1]))
    assert tuple(int(w) for w in words) == expected


def test_philox_kernel_words_equal_numpy_words(build):
    """On 2,000 random counters and keys, the kernel's words are noise.philox4x32's, bit for bit."""
    rng = np.random.default_rng(0)
    library = build(gpu.PHILOX_SOURCE + PHILOX_ENTRY_POINTS)
    counters = rng.integers(0, 2 ** 32, (2000, 4), dtype=np.uint64).astype(np.uint32)
    keys = rng.integers(0, 2 ** 32, (2000, 2), dtype=np.uint64).astype(np.uint32)
    for counter, key in zip(counters, keys):
        words = counter.copy()
        library.philox_words(pointer(words), ctypes.c_uint(int(key[0])), ctypes.c_uint(int(key[1])))
        np.testing.assert_array_equal(words, [int(w) for w in noise.philox4x32(tuple(counter), tuple(key))])


def test_box_muller_kernel_equals_numpy_to_float32_rounding(build):
    """The kernel's Box-Muller on the same words: the normals to the last bits of log, sin, cos,
    including the extreme words (u = 2^-24 and u = 1, angles 0 and just below 2 pi)."""
    library = build(gpu.PHILOX_SOURCE + PHILOX_ENTRY_POINTS)
    rng = np.random.default_rng(1)
    words = np.concatenate([rng.integers(0, 2 ** 32, (5000, 2), dtype=np.uint64).astype(np.uint32),
                            np.array([[0, 0], [0xFFFFFFFF, 0xFFFFFFFF], [0, 0xFFFFFFFF], [0xFFFFFFFF, 0]], np.uint32)])
    out = np.empty((len(words), 2), dtype=np.float32)
    for row, (a, b) in enumerate(words):
        library.box_muller_pair(ctypes.c_uint(int(a)), ctypes.c_uint(int(b)), pointer(out[row]))
    want = np.stack(noise.box_muller(words[:, 0], words[:, 1]), axis=1)
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("count", [1, 3, 4, 10, 2312 * 4 + 64 * 4])
def test_philox_normals_kernel_equals_standard_normals(cpu_kernels, count):
    """gpu.standard_normals = noise.standard_normals: every row (pair), every count (a cut last
    block), pair ids given as a strided view."""
    pairs = np.array([0, 99, 5, 99, 6, 99, 1000, 99, 2 ** 31 + 7], dtype=np.uint32)[::2]
    got = gpu.standard_normals(0x1234567890ABCDEF, 42, pairs, 2, count, np)
    want = noise.standard_normals(0x1234567890ABCDEF, 42, pairs, 2, count)
    assert got.shape == want.shape == (5, count) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def network_problem(dtype, seed=0, batch=24, n_frames=6, density=0.3):
    rng = np.random.default_rng(seed)
    params = {k: v.astype(dtype) for k, v in snn.init_params(seed, NETWORK_SIZES, std=0.5).items()}
    frames = (rng.random((n_frames, batch, NETWORK_SIZES[0])) < density).astype(dtype)
    return params, frames


@pytest.mark.parametrize("rank, population", [(1, 6), (2, 64), (4, 10)])
def test_lowrank_network_kernel_equals_perturbed_forward_in_float64(kernels_on_cpu, monkeypatch, rank, population):
    """snn_eggroll.perturbed_forward through the kernel = through snn.simulate: every member's output
    and hidden spike counts, exactly (float64: a different summation order moves a potential by
    ~1e-16 and cannot plausibly flip a spike). Also for a slice of the pairs (a process's share)."""
    params, frames = network_problem(np.float64)
    config = snn_eggroll.Config(population, rank, sigma=0.2, seed=3, logit_scale=5.0)
    for pairs in (slice(None), slice(1, 3)):
        counts, hidden = snn_eggroll.perturbed_forward(params, frames, config, 7, count_hidden=True, pairs=pairs)
        with monkeypatch.context() as plain:
            plain.setattr(gpu, "enabled", lambda xp: False)
            want_counts, want_hidden = snn_eggroll.perturbed_forward(params, frames, config, 7, count_hidden=True,
                                                                     pairs=pairs)
        np.testing.assert_array_equal(counts, want_counts)
        np.testing.assert_array_equal(hidden, want_hidden)
    assert 0.5 < want_counts.mean() < 5.5 and want_counts.std() > 0.5  # spiking, and not all alike


def test_lowrank_network_kernel_agrees_in_float32(kernels_on_cpu, monkeypatch):
    """At the reference width (64 hidden, 10 outputs, r = 4) in float32: the output counts agree
    but for spikes within rounding of the threshold."""
    params = snn.init_params(0, (300, 64, 10))
    rng = np.random.default_rng(0)
    frames = (rng.random((10, 32, 300)) < 0.1).astype(np.float32)
    config = snn_eggroll.Config(32, 4, sigma=0.1, seed=1, logit_scale=5.0)
    counts, _ = snn_eggroll.perturbed_forward(params, frames, config, 0)
    monkeypatch.setattr(gpu, "enabled", lambda xp: False)
    want, _ = snn_eggroll.perturbed_forward(params, frames, config, 0)
    assert counts.dtype == np.float32 and counts.shape == want.shape
    assert np.mean(counts != want) < 1e-3 and want.mean() > 0.3


def numpy_lif_step(v, current, lif, spikes):
    """gpu.lif_step's NumPy twin: the kernel is a CuPy ElementwiseKernel, with no CPU build."""
    v *= lif.beta
    v += current
    np.greater_equal(v, lif.threshold, out=spikes)
    v *= 1 - spikes
    return spikes


@pytest.mark.parametrize("hidden, readout, fused", [("16,12", "rate", False), ("conv3k3s2p1", "rate", False),
                                                     ("16", "rate", True), ("16", "potential", False)])
def test_only_two_dense_layers_take_the_network_kernel(kernels_on_cpu, monkeypatch, hidden, readout, fused):
    """gpu.lowrank_lif_network knows two dense LIF layers read out by rate and nothing else:
    population_forward gives it such a network, and runs a deeper network, a convolution or a
    potential readout layer by layer (its first product still through the sparse kernel). Either
    way every member's hidden and output spike counts are the NumPy path's, exactly (float64)."""
    network = snn.Network.parse(hidden, n_out=10, image=(1, 6, 6), readout=readout)
    params = {k: v.astype(np.float64) for k, v in snn.init_network(2, network, std=0.6).items()}
    frames = (np.random.default_rng(2).random((5, 7, network.sizes[0])) < 0.4).astype(np.float64)
    config = snn_eggroll.Config(8, 2, sigma=0.3, seed=5, logit_scale=5.0)
    monkeypatch.setattr(gpu, "lif_step", numpy_lif_step)  # a layer stepped alone
    taken, kernel = [], gpu.lowrank_lif_network
    monkeypatch.setattr(gpu, "lowrank_lif_network", lambda *args: taken.append(hidden) or kernel(*args))
    counts, spikes = snn_eggroll.perturbed_forward(params, frames, config, 3, count_hidden=True, network=network)
    assert taken == ([hidden] if fused else [])
    with monkeypatch.context() as plain:
        plain.setattr(gpu, "enabled", lambda xp: False)
        want, want_spikes = snn_eggroll.perturbed_forward(params, frames, config, 3, count_hidden=True,
                                                          network=network)
    assert counts.shape == want.shape == (8, 7, 10) and want.std() > 0
    if readout == "rate":
        np.testing.assert_array_equal(counts, want)
    else:  # potentials show the noise kernel's normals, equal to NumPy's but for the last bits of log and cos
        np.testing.assert_allclose(counts, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(spikes, want_spikes)


def sparse_product_problem(dtype, pairs, rank, integer_factors, n_rows=37, n=300):
    """Binary frames at 10 % density with an all-zero row, an all-one row and a row of other
    values (halves), and factors (pairs, rank, n): small integers (every sum exact in any order)
    or normals."""
    rng = np.random.default_rng(pairs * 10 + rank)
    x = (rng.random((n_rows, n)) < 0.1).astype(dtype)
    x[3], x[5], x[7] = 0, 1, rng.integers(-6, 7, n) / 2 * (rng.random(n) < 0.3)
    factors = rng.integers(-8, 9, (pairs, rank, n)) if integer_factors else rng.normal(size=(pairs, rank, n))
    return x, factors.astype(dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("pairs, rank", [(1, 1), (5, 4), (70, 1), (3, 64)])
def test_sparse_product_kernel_equals_population_product(kernels_on_cpu, monkeypatch, dtype, pairs, rank):
    """eggroll.population_product through the kernel (sums over the nonzero inputs only) = through
    BLAS: bit for bit where every sum is exact (small integer factors), to rounding for normal
    ones; tiles of columns cut anywhere (pairs x rank not a multiple of the tile), rank 64 as in
    vanilla ES; and a share of the pairs gives, bit for bit, its columns of the whole."""
    for integer_factors in (True, False):
        x, factors = sparse_product_problem(dtype, pairs, rank, integer_factors)
        got = eggroll.population_product(x, factors)
        with monkeypatch.context() as plain:
            plain.setattr(gpu, "enabled", lambda xp: False)
            want = eggroll.population_product(x, factors)
        assert got.shape == want.shape == (x.shape[0], pairs, rank) and got.dtype == dtype
        if integer_factors:
            np.testing.assert_array_equal(got, want)
        else:
            np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-4)
        assert not got[3].any() and np.abs(want).max() > 1
        share = slice(pairs // 3, pairs - pairs // 3)
        np.testing.assert_array_equal(eggroll.population_product(x, factors[share]), got[:, share])


def test_population_inference_kernel_equals_simulate_in_float64(kernels_on_cpu, monkeypatch):
    """snn.forward of a population (an odd number of members, so the kernel's last pair is cut)
    through the rank-0 network kernel = through snn.simulate: every member's output and hidden
    spike counts, exactly in float64, and all members alike."""
    params, frames = network_problem(np.float64)
    counts, hidden = snn.forward(params, frames, n_members=5, count_hidden=True)
    monkeypatch.setattr(gpu, "enabled", lambda xp: False)
    want_counts, want_hidden = snn.forward(params, frames, n_members=5, count_hidden=True)
    assert counts.shape == want_counts.shape == (5, frames.shape[1], NETWORK_SIZES[-1])
    np.testing.assert_array_equal(counts, want_counts)
    np.testing.assert_array_equal(hidden, want_hidden)
    assert want_counts.std() > 0.5 and (want_counts == want_counts[0]).all()


def test_network_kernels_count_hidden_spikes_only_when_asked(kernels_on_cpu, monkeypatch):
    """Through the kernels too, perturbed_forward and snn.forward return None for the hidden-spike
    totals unless count_hidden is set, and the same output counts. snn.forward takes the population
    kernel for a population (n_members > 1: 2 members already) and not for a single network (which
    steps with gpu.lif_step, a CuPy ElementwiseKernel with no CPU build: a NumPy twin stands in)."""
    monkeypatch.setattr(gpu, "lif_step", numpy_lif_step)
    params, frames = network_problem(np.float64, batch=8, n_frames=4)
    config = snn_eggroll.Config(6, 2, sigma=0.2, seed=3, logit_scale=5.0)
    counted, _ = snn_eggroll.perturbed_forward(params, frames, config, 7, count_hidden=True)
    counts, hidden = snn_eggroll.perturbed_forward(params, frames, config, 7)
    assert hidden is None and np.array_equal(counts, counted)
    populations, kernel = [], gpu.population_lif_network
    monkeypatch.setattr(gpu, "population_lif_network", lambda *args: populations.append(args[3]) or kernel(*args))
    for n_members in (2, 1):
        counted, _ = snn.forward(params, frames, n_members=n_members, count_hidden=True)
        counts, hidden = snn.forward(params, frames, n_members=n_members)
        assert hidden is None and np.array_equal(counts, counted)
    assert populations == [2, 2]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n, distinct", [(1, 1), (2, 1), (7, 3), (512, 40), (512, 10 ** 9)])
def test_ranks_kernel_equals_centred_ranks_bit_for_bit(kernels_on_cpu, monkeypatch, dtype, n, distinct):
    """eggroll.centred_ranks through the kernel = through np.unique, bit for bit, with and
    without ties (n values drawn from `distinct` levels)."""
    values = np.random.default_rng(n).integers(0, distinct, n).astype(dtype) / 7
    got = eggroll.centred_ranks(values)
    monkeypatch.setattr(gpu, "enabled", lambda xp: False)
    want = eggroll.centred_ranks(values)
    assert got.dtype == want.dtype == np.float64
    np.testing.assert_array_equal(got, want)
    monkeypatch.setattr(gpu, "enabled", lambda xp: True)
    with pytest.raises(ValueError, match="NaN or inf"):  # the check still comes first
        eggroll.centred_ranks(np.append(values, np.nan))


def test_many_ranks_are_sorted_not_counted(kernels_on_cpu, monkeypatch):
    """Above gpu.RANKS_BY_COUNTING_MAX values the counting kernel (n^2 comparisons) is not used:
    the ranks come from the sorting definition, which gives the same bits."""
    values = np.random.default_rng(0).integers(0, 300, gpu.RANKS_BY_COUNTING_MAX + 1).astype(np.float32)
    counted = gpu.centred_ranks(values)
    monkeypatch.setattr(gpu, "centred_ranks", lambda values: pytest.fail("counted"))
    np.testing.assert_array_equal(eggroll.centred_ranks(values), counted)
    with pytest.raises(pytest.fail.Exception):
        eggroll.centred_ranks(values[:gpu.RANKS_BY_COUNTING_MAX])


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc")
@pytest.mark.parametrize("source, options", [
    (gpu.PHILOX_SOURCE, ()),
    (gpu.RANKS_SOURCE, ("-DREAL=float",)),
    (gpu.LOWRANK_LIF_SOURCE, gpu.lowrank_lif_options(np.float32, 64, 10, 4)),
    (gpu.LOWRANK_LIF_SOURCE, gpu.lowrank_lif_options(np.float64, 16, 10, 1)),
    (gpu.LOWRANK_LIF_SOURCE, gpu.lowrank_lif_options(np.float32, 64, 10, 0)),
    (gpu.SPARSE_PRODUCT_SOURCE, ("-DREAL=float", "-DCOLUMNS=16")),
    (gpu.SPARSE_PRODUCT_SOURCE, ("-DREAL=double", "-DCOLUMNS=8")),
])
def test_sources_compile_for_a_gpu(tmp_path, source, options):
    """nvcc compiles every source for an H100 (sm_90) without a warning."""
    path = tmp_path / "kernel.cu"
    path.write_text(source)
    done = subprocess.run(["nvcc", "-arch=sm_90", "-ptx", *options, str(path), "-o", str(tmp_path / "kernel.ptx")],
                          capture_output=True, text=True)
    assert done.returncode == 0 and "warning" not in done.stderr.lower(), done.stderr
