"""The GPU's own kernels. Each does in one launch (the population product in two) what a
NumPy function of this project defines:

    kernel                          its NumPy twin (the definition)
    philox_normals                  noise.standard_normals (noise.philox4x32 + noise.box_muller)
    nonzero_columns, sparse_product eggroll.population_product
    lowrank_lif_network             snn_eggroll.perturbed_forward's currents run through snn.simulate
                                    (and, at rank 0, snn.forward of a population)
    centred_ranks                   eggroll.centred_ranks (of up to 8,192 values)
    lif_step                        snn.lif_step
    adam_update                     optim.adam_update

A reader learning the method can skip this file. Written as whole-array operations, one Philox
draw is about 140 kernel launches and a generation over a thousand; on a GPU a launch costs more
than its arithmetic, so the GPU sat waiting on Python. The Python around each RawModule kernel is
written against the array module of its inputs, so tests/test_kernels.py can run it on NumPy with
the CUDA sources compiled for the CPU (`compiled` swapped out) and hold it to the twins in CI;
tests/test_gpu.py does so on a GPU.

Set KERNELS = False to run the NumPy definitions on CuPy instead (the benchmark does, to measure
what each kernel buys).
"""
import functools

import numpy

from backend import array_module_of

KERNELS = True
THREADS = 256  # threads per block


def enabled(xp):
    """Whether arrays of `xp` take the kernels of this file (CuPy, with KERNELS on)."""
    return KERNELS and xp.__name__ == "cupy"


@functools.lru_cache(maxsize=None)
def compiled(source, name, options=()):
    """The CUDA function `name` of `source`, compiled once per set of -D options."""
    import cupy
    return cupy.RawModule(code=source, options=options).get_function(name)


def launch(kernel, n_threads, args):
    """Run `kernel` on n_threads threads (every kernel here strides over its range)."""
    kernel((max(1, -(-n_threads // THREADS)),), (THREADS,), args)


# ---------------------------------------------------------------------------------------------
# Noise: Philox4x32-10 and Box-Muller in one kernel

PHILOX_SOURCE = r"""
// Philox4x32-10 of counter c under key (k0, k1), in place: noise.philox4x32.
__device__ void philox4x32_10(unsigned int c[4], unsigned int k0, unsigned int k1) {
    for (int round = 0; round < 10; ++round) {
        if (round > 0) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        unsigned int hi0 = __umulhi(0xD2511F53u, c[0]), lo0 = 0xD2511F53u * c[0];
        unsigned int hi1 = __umulhi(0xCD9E8D57u, c[2]), lo1 = 0xCD9E8D57u * c[2];
        unsigned int c1 = c[1], c3 = c[3];
        c[0] = hi1 ^ c1 ^ k0;  c[1] = lo1;  c[2] = hi0 ^ c3 ^ k1;  c[3] = lo0;
    }
}

// Two N(0, 1) numbers from two 32-bit words, 24 bits of each: noise.box_muller.
__device__ void box_muller(unsigned int bits_radius, unsigned int bits_angle, float* out) {
    float u_radius = ((float)(bits_radius >> 8) + 1.0f) * 5.9604644775390625e-8f;  // (0, 1], 2^-24 steps
    float u_angle = (float)(bits_angle >> 8) * 5.9604644775390625e-8f;              // [0, 1)
    float radius = sqrtf(-2.0f * logf(u_radius));
    float angle = 6.283185307179586f * u_angle;
    out[0] = radius * cosf(angle);
    out[1] = radius * sinf(angle);
}

// out (n_rows, count) float32: row i is the stream (seed, generation, pairs[i], param_id);
// one thread per Philox block of 4 numbers.
extern "C" __global__ void philox_normals(const unsigned int* pairs, long long n_rows, long long count,
                                          unsigned int param_id, unsigned int generation,
                                          unsigned int key0, unsigned int key1, float* out) {
    long long n_blocks = (count + 3) / 4;
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < n_rows * n_blocks;
         index += (long long)blockDim.x * gridDim.x) {
        long long row = index / n_blocks, block = index % n_blocks;
        unsigned int words[4] = {(unsigned int)block, pairs[row], param_id, generation};
        philox4x32_10(words, key0, key1);
        float normals[4];
        box_muller(words[0], words[1], normals);
        box_muller(words[2], words[3], normals + 2);
        for (int q = 0; q < 4 && 4 * block + q < count; ++q)
            out[row * count + 4 * block + q] = normals[q];
    }
}
"""


def standard_normals(seed, generation, pairs, param_id, count, xp):
    """noise.standard_normals on CuPy (xp) in one launch: float32 (len(pairs), count)."""
    pair_words = xp.ascontiguousarray(xp.asarray(pairs, dtype=xp.uint32).ravel())
    out = xp.empty((pair_words.shape[0], count), dtype=xp.float32)
    n_blocks = -(-count // 4)
    launch(compiled(PHILOX_SOURCE, "philox_normals"), pair_words.shape[0] * n_blocks,
           (pair_words, numpy.int64(pair_words.shape[0]), numpy.int64(count), numpy.uint32(param_id),
            numpy.uint32(generation), numpy.uint32(seed & 0xFFFFFFFF), numpy.uint32((seed >> 32) & 0xFFFFFFFF),
            out))
    return out


# ---------------------------------------------------------------------------------------------
# The population product x [B_1 ... B_P]^T over the nonzero inputs only

SPARSE_PRODUCT_SOURCE = r"""
// eggroll.population_product, out (N, C) = x (N, n) factors^T (C, n), summing over the nonzeros of
// x only: event frames are about 8 % ones, so a dense product multiplies zeros 92 % of the time.
// REAL and COLUMNS are set by -D options. Every out[i, c] is one sum in increasing input order, so
// a column's result never depends on which other columns (pairs) are computed beside it.

// Row i's nonzero inputs j, in increasing order, at columns[i * width + s] with their values, the
// count rounded up to a multiple of 4 with (column 0, value 0) entries. A block per row: each
// thread counts the nonzeros of its chunk of the row, the first thread adds up where each
// chunk's entries start, and each thread writes its own.
extern "C" __global__ void nonzero_columns(const REAL* x, long long n_rows, int n, int width,
                                           int* columns, REAL* values, int* counts) {
    __shared__ int starts[1025];  // starts[t]: the first entry of thread t's chunk; starts[blockDim.x]: the count
    int chunk = (n + blockDim.x - 1) / blockDim.x;
    int begin = threadIdx.x * chunk < n ? threadIdx.x * chunk : n, end = begin + chunk < n ? begin + chunk : n;
    for (long long row = blockIdx.x; row < n_rows; row += gridDim.x) {
        const REAL* x_row = x + row * n;
        int mine = 0;
        for (int j = begin; j < end; ++j) mine += x_row[j] != 0;
        __syncthreads();  // every thread has read the last row's starts
        starts[threadIdx.x + 1] = mine;
        __syncthreads();
        if (threadIdx.x == 0) {
            starts[0] = 0;
            for (int t = 1; t <= blockDim.x; ++t) starts[t] += starts[t - 1];
        }
        __syncthreads();
        int s = starts[threadIdx.x];
        for (int j = begin; j < end; ++j)
            if (x_row[j] != 0) { columns[row * width + s] = j; values[row * width + s] = x_row[j]; ++s; }
        if (threadIdx.x == 0) {
            int count = starts[blockDim.x];
            for (; count % 4; ++count) { columns[row * width + count] = 0; values[row * width + count] = 0; }
            counts[row] = count;
        }
    }
}

// A block copies COLUMNS rows of factors into shared memory, as tile[j * COLUMNS + c], and its
// threads then take (row, column) items, COLUMNS neighbouring threads per row: they read the same
// nonzero j and neighbouring tile entries. The rows are shared out over gridDim.y.
extern "C" __global__ void sparse_product(const int* columns, const REAL* values, const int* counts,
                                          long long n_rows, int width, const REAL* factors, long long n_columns,
                                          int n, REAL* out) {
    extern __shared__ REAL tile[];  // (n, COLUMNS)
    long long rows_per_block = (n_rows + gridDim.y - 1) / gridDim.y;
    long long first_row = blockIdx.y * rows_per_block;
    long long last_row = first_row + rows_per_block < n_rows ? first_row + rows_per_block : n_rows;
    for (long long first = blockIdx.x * (long long)COLUMNS; first < n_columns; first += (long long)gridDim.x * COLUMNS) {
        __syncthreads();  // the last tile is read by every thread before it is overwritten
        for (long long k = threadIdx.x; k < (long long)COLUMNS * n; k += blockDim.x) {
            long long c = k / n, j = k % n;  // neighbouring threads read neighbouring factors
            tile[j * COLUMNS + c] = first + c < n_columns ? factors[(first + c) * n + j] : 0;
        }
        __syncthreads();
        for (long long item = threadIdx.x; item < (last_row - first_row) * COLUMNS; item += blockDim.x) {
            long long row = first_row + item / COLUMNS;
            int c = item % COLUMNS;
            const int* row_columns = columns + row * width;
            const REAL* row_values = values + row * width;
            REAL sum = 0;
            for (int s = 0; s < counts[row]; s += 4) {
                sum += row_values[s] * tile[row_columns[s] * COLUMNS + c];
                sum += row_values[s + 1] * tile[row_columns[s + 1] * COLUMNS + c];
                sum += row_values[s + 2] * tile[row_columns[s + 2] * COLUMNS + c];
                sum += row_values[s + 3] * tile[row_columns[s + 3] * COLUMNS + c];
            }
            if (first + c < n_columns) out[row * n_columns + first + c] = sum;
        }
    }
}
"""
TILE_ROW_BYTES = 64       # COLUMNS factor entries per input in the tile: 16 float32 or 8 float64
PRODUCT_THREADS = 1024    # the tile (148 KB at 2312 inputs) fills most of a multiprocessor's shared memory
PRODUCT_MIN_BLOCKS = 264  # about two blocks per multiprocessor of an H100 or H200; rows are split to get there


def population_product(x, factors):
    """eggroll.population_product (x (N, n), factors (p, k, n) -> (N, p, k)) in two launches:
    the nonzeros of each row of x, then their sums over the factors."""
    xp = array_module_of(x)
    n_rows, n = x.shape
    pairs, k, _ = factors.shape
    n_columns = pairs * k
    tile_columns = TILE_ROW_BYTES // x.dtype.itemsize
    options = (f"-DREAL={C_TYPES[x.dtype]}", f"-DCOLUMNS={tile_columns}")
    width = -(-n // 4) * 4
    columns = xp.empty((n_rows, width), dtype=xp.int32)
    values = xp.empty((n_rows, width), dtype=x.dtype)
    counts = xp.empty(n_rows, dtype=xp.int32)
    compiled(SPARSE_PRODUCT_SOURCE, "nonzero_columns", options)(
        (max(1, n_rows),), (THREADS,),
        (xp.ascontiguousarray(x), numpy.int64(n_rows), numpy.int32(n), numpy.int32(width), columns, values, counts))
    out = xp.empty((n_rows, n_columns), dtype=x.dtype)
    if n_columns and n_rows:
        tiles = -(-n_columns // tile_columns)
        row_groups = max(1, min(-(-PRODUCT_MIN_BLOCKS // tiles), n_rows // 64))
        shared = n * TILE_ROW_BYTES
        kernel = compiled(SPARSE_PRODUCT_SOURCE, "sparse_product", options)
        if shared > 48 * 1024:  # the most a kernel gets without asking
            kernel.max_dynamic_shared_size_bytes = shared
        kernel((tiles, row_groups), (PRODUCT_THREADS,),
               (columns, values, counts, numpy.int64(n_rows), numpy.int32(width),
                xp.ascontiguousarray(factors.reshape(n_columns, n), dtype=x.dtype), numpy.int64(n_columns),
                numpy.int32(n), out), shared_mem=shared)
    return out.reshape(n_rows, pairs, k)


# ---------------------------------------------------------------------------------------------
# The EGGROLL population's forward pass: both LIF layers over all steps in one kernel

LOWRANK_LIF_SOURCE = r"""
// snn_eggroll.perturbed_forward for every member and sample at once, with REAL, N_HIDDEN, N_OUT and
// RANK set by -D options (so the per-thread arrays have fixed sizes). One thread runs
// one member on one sample through all T steps of Eqs. (1)-(2); member 2p is pair p's + side,
// 2p + 1 its - side. With x the frames and o the hidden spikes, the currents are Eq. (6):
//     hidden:  x W1^T + b1  +-  [x B_p, 1] [sigma/sqrt(r) A_p^T ; sigma delta_p]
//     output:  o W2^T + b2  +-  [o B_p, 1] [sigma/sqrt(r) A_p^T ; sigma delta_p]   (layer 2's factors)
extern "C" __global__ void lowrank_lif_network(
        const REAL* base,     // (T, N_HIDDEN, N): x W1^T + b1, samples last (neighbouring threads, neighbouring samples)
        const REAL* xb,       // (T, P, RANK, N): x B_p, samples last
        const REAL* rows1,    // (P, RANK + 1, N_HIDDEN): [sigma/sqrt(r) A_p^T ; sigma delta_p], layer 1
        const REAL* readout,  // (P, N_HIDDEN, N_OUT + RANK): [W2^T | B_p^T], layer 2
        const REAL* rows2,    // (P, RANK + 1, N_OUT): [sigma/sqrt(r) A_p^T ; sigma delta_p], layer 2
        const REAL* b2,       // (N_OUT,)
        REAL beta, REAL threshold, int n_frames, int batch, int n_pairs,
        REAL* counts,         // out (2P, N, N_OUT): output spikes over the T steps
        REAL* hidden_counts)  // out (2P, N): hidden spikes over the T steps
{
    for (long long index = blockIdx.x * (long long)blockDim.x + threadIdx.x; index < 2LL * n_pairs * batch;
         index += (long long)blockDim.x * gridDim.x) {
        long long member = index / batch, sample = index % batch, pair = member / 2;
        REAL sign = member % 2 ? -1 : 1;
        const REAL* pair_rows1 = rows1 + pair * (RANK + 1) * N_HIDDEN;
        const REAL* pair_readout = readout + pair * N_HIDDEN * (N_OUT + RANK);
        const REAL* pair_rows2 = rows2 + pair * (RANK + 1) * N_OUT;
        REAL v_hidden[N_HIDDEN], v_out[N_OUT], out_spikes[N_OUT], hidden_spikes = 0;
        for (int j = 0; j < N_HIDDEN; ++j) v_hidden[j] = 0;
        for (int o = 0; o < N_OUT; ++o) v_out[o] = out_spikes[o] = 0;
        for (int t = 0; t < n_frames; ++t) {
            const REAL* base_t = base + (long long)t * N_HIDDEN * batch + sample;
            const REAL* xb_t = xb + ((long long)t * n_pairs + pair) * RANK * batch + sample;
            REAL projected[N_OUT + RANK];  // o_t [W2^T | B_p^T]
            for (int q = 0; q < N_OUT + RANK; ++q) projected[q] = 0;
            for (int j = 0; j < N_HIDDEN; ++j) {
                REAL perturbation = pair_rows1[RANK * N_HIDDEN + j];
                for (int k = 0; k < RANK; ++k) perturbation += xb_t[k * batch] * pair_rows1[k * N_HIDDEN + j];
                REAL v = beta * v_hidden[j] + (base_t[j * batch] + sign * perturbation);  // Eq. (1)
                REAL spike = v >= threshold ? 1 : 0;                               // Eq. (2)
                v_hidden[j] = v >= threshold ? 0 : v;
                hidden_spikes += spike;
                for (int q = 0; q < N_OUT + RANK; ++q) projected[q] += spike * pair_readout[j * (N_OUT + RANK) + q];
            }
            for (int o = 0; o < N_OUT; ++o) {
                REAL perturbation = pair_rows2[RANK * N_OUT + o];
                for (int k = 0; k < RANK; ++k) perturbation += projected[N_OUT + k] * pair_rows2[k * N_OUT + o];
                REAL v = beta * v_out[o] + (projected[o] + b2[o] + sign * perturbation);
                out_spikes[o] += v >= threshold ? 1 : 0;
                v_out[o] = v >= threshold ? 0 : v;
            }
        }
        for (int o = 0; o < N_OUT; ++o) counts[index * N_OUT + o] = out_spikes[o];
        hidden_counts[index] = hidden_spikes;
    }
}
"""

C_TYPES = {numpy.dtype(numpy.float32): "float", numpy.dtype(numpy.float64): "double"}


def lowrank_lif_options(dtype, n_hidden, n_out, rank):
    """The -D options that specialise LOWRANK_LIF_SOURCE to a network and a float type."""
    return (f"-DREAL={C_TYPES[numpy.dtype(dtype)]}", f"-DN_HIDDEN={n_hidden}", f"-DN_OUT={n_out}", f"-DRANK={rank}")


def lowrank_lif_network(base, xb, rows1, readout, rows2, b2, lif):
    """The arrays snn_eggroll.perturbed_forward forms, base (T, N, n_hidden), xb (T N, P, r) and the
    rest as in LOWRANK_LIF_SOURCE, through both LIF layers: output spike counts (2P, N, n_out) and
    hidden spike counts per member (2P,) float64. base and xb are copied samples-last first, so
    that the threads of a warp (neighbouring samples) read neighbouring numbers."""
    xp = array_module_of(base)
    n_frames, batch, n_hidden = base.shape
    n_pairs, rank, n_out = xb.shape[1], xb.shape[2], b2.shape[0]
    dtype = base.dtype
    real = dtype.type
    counts = xp.empty((2 * n_pairs, batch, n_out), dtype=dtype)
    hidden_counts = xp.empty((2 * n_pairs, batch), dtype=dtype)
    kernel = compiled(LOWRANK_LIF_SOURCE, "lowrank_lif_network", lowrank_lif_options(dtype, n_hidden, n_out, rank))
    samples_last = (base.transpose(0, 2, 1), xb.reshape(n_frames, batch, n_pairs, rank).transpose(0, 2, 3, 1))
    arrays = (xp.ascontiguousarray(a, dtype=dtype) for a in (*samples_last, rows1, readout, rows2, b2))
    launch(kernel, 2 * n_pairs * batch,
           (*arrays, real(lif.beta), real(lif.threshold), numpy.int32(n_frames), numpy.int32(batch),
            numpy.int32(n_pairs), counts, hidden_counts))
    return counts, hidden_counts.sum(axis=1, dtype=xp.float64)


def population_lif_network(base, w2, b2, n_members, lif):
    """snn.forward of a population (n_members copies of one network) as lowrank_lif_network at
    rank 0, its perturbations all zero: output spike counts (n_members, N, n_out) and hidden spike
    counts per member (n_members,) float64, from base (T, N, n_hidden) = x W1^T + b1."""
    xp = array_module_of(base)
    n_frames, batch, n_hidden = base.shape
    n_out, pairs = b2.shape[0], -(-n_members // 2)
    no_factors = xp.empty((n_frames * batch, pairs, 0), dtype=base.dtype)
    zero_rows1 = xp.zeros((pairs, 1, n_hidden), dtype=base.dtype)
    zero_rows2 = xp.zeros((pairs, 1, n_out), dtype=base.dtype)
    readout = xp.broadcast_to(w2.T, (pairs, n_hidden, n_out))
    counts, hidden_counts = lowrank_lif_network(base, no_factors, zero_rows1, readout, zero_rows2, b2, lif)
    return counts[:n_members], hidden_counts[:n_members]


# ---------------------------------------------------------------------------------------------
# Fitness shaping: centred ranks without sorting

RANKS_SOURCE = r"""
// eggroll.centred_ranks of n values (REAL set by -D): value i's rank is the number of smaller
// values plus half the number of other equal ones (tied values share their mean rank), scaled
// to [-0.5, 0.5] in double as NumPy does. One thread per value, n comparisons each.
extern "C" __global__ void centred_ranks(const REAL* values, long long n, double* out) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)blockDim.x * gridDim.x) {
        long long smaller = 0, equal = 0;
        for (long long j = 0; j < n; ++j) {
            smaller += values[j] < values[i];
            equal += values[j] == values[i];
        }
        out[i] = (smaller + (equal - 1) / 2.0) / (double)(n > 1 ? n - 1 : 1) - 0.5;
    }
}
"""


# Counting does n^2 comparisons: 0.4 ms for 8,192 values on an H200, where sorting (the NumPy
# definition on CuPy, n log n) takes 1.1 ms; at 65,536 values counting would take about 24 ms.
RANKS_BY_COUNTING_MAX = 8192


def centred_ranks(values):
    """eggroll.centred_ranks of finite values in one launch: float64 (values.size,), the same bits.
    For up to RANKS_BY_COUNTING_MAX values; eggroll.centred_ranks sorts more."""
    xp = array_module_of(values)
    values = xp.ascontiguousarray(values).ravel()
    out = xp.empty(values.size, dtype=xp.float64)
    kernel = compiled(RANKS_SOURCE, "centred_ranks", (f"-DREAL={C_TYPES[values.dtype]}",))
    launch(kernel, values.size, (values, numpy.int64(values.size), out))
    return out


# ---------------------------------------------------------------------------------------------
# Elementwise kernels: one LIF step, one Adam step

@functools.lru_cache(maxsize=None)
def _lif_step_kernel():
    import cupy
    return cupy.ElementwiseKernel(
        "T current, T beta, T threshold", "T v, T spike",
        "T u = beta * v + current; spike = u >= threshold ? (T)1 : (T)0; v = u >= threshold ? (T)0 : u",
        "eggroll_lif_step")


def lif_step(v, current, lif, spikes):
    """snn.lif_step in one launch: V and I read once, V and o written once."""
    _lif_step_kernel()(current, v.dtype.type(lif.beta), v.dtype.type(lif.threshold), v, spikes)
    return spikes


@functools.lru_cache(maxsize=None)
def _adam_kernel():
    import cupy
    return cupy.ElementwiseKernel(
        "T value, T grad, T m_old, T v_old, T lr, T lr_decay, T beta1, T one_minus_beta1, T beta2, "
        "T one_minus_beta2, T correction1, T correction2, T eps",
        "T new_value, T m, T v",
        "m = beta1 * m_old + one_minus_beta1 * grad; "
        "v = beta2 * v_old + one_minus_beta2 * (grad * grad); "
        "new_value = value + lr * ((m / correction1) / (sqrt(v / correction2) + eps)) - lr_decay * value",
        "eggroll_adam_update")


def adam_update(value, grad, m, v, t, adam):
    """optim.adam_update in one launch; the constants are rounded from Python floats as NumPy does."""
    real = value.dtype.type
    constants = (adam.lr, adam.lr * adam.weight_decay, adam.beta1, 1 - adam.beta1, adam.beta2, 1 - adam.beta2,
                 1 - adam.beta1 ** t, 1 - adam.beta2 ** t, adam.eps)
    return _adam_kernel()(value, grad.astype(value.dtype, copy=False), m, v, *(real(c) for c in constants))

