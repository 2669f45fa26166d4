"""Noise as a pure function of keys: Philox4x32-10 turned into named streams of Gaussian numbers.

Evolution strategies need the same perturbation twice, in the forward pass and in the update, and
a distributed or resumed run needs it anywhere, in any order. So noise is never stored: every
number is a function of (seed, generation, pair, parameter, position), computed by the
counter-based generator Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2,
3", SC 2011) with

    key     = the 64-bit seed
    counter = (block, pair, parameter id, generation)       one block -> 4 uint32 words -> 4 normals

and Box-Muller for the normals. A pair's noise is the same whether it is drawn alone or with the
whole population, on NumPy or on CuPy. The functions here take keys as Eggroll checks them (a seed
in 0..2^64 - 1, a generation and pairs in 0..2^32 - 1) and check nothing: a seed or a pair array
outside its range wraps to another key (a seed of -1 is 2^64 - 1), a generation outside it fails in
NumPy's conversion to uint32.
"""
import hashlib
import math

import numpy

from backend import array_module_of
import gpu

PHILOX_M = (0xD2511F53, 0xCD9E8D57)  # round multipliers
PHILOX_W = (0x9E3779B9, 0xBB67AE85)  # Weyl key increments (golden ratio, sqrt(3) - 1)
MASK32 = 0xFFFFFFFF
PARAM_IDS = {"W1": 0, "b1": 1, "W2": 2, "b2": 3}  # the parameter word of the counter: the paper's network
BLOCKS_PER_PASS = 1 << 15  # CPU: Philox blocks per pass, so its temporaries stay in cache


def philox4x32(counter, key, rounds=10):
    """Philox4x32-R of a 4-word counter under a 2-word key; words are uint32 arrays or ints.

    One round: (c0, c1, c2, c3) -> (hi(M1 c2) ^ c1 ^ k0, lo(M1 c2), hi(M0 c0) ^ c3 ^ k1, lo(M0 c0)),
    with the key bumped by the Weyl constants between rounds. Written in uint64 array arithmetic
    so NumPy and CuPy give the same bits. Counters broadcast against each other.
    """
    xp = next((array_module_of(c) for c in counter if hasattr(c, "dtype")), numpy)
    c0, c1, c2, c3 = (xp.asarray(c, dtype=xp.uint32) for c in counter)
    k0, k1 = (int(k) & MASK32 for k in key)
    for round_index in range(rounds):
        if round_index:
            k0, k1 = (k0 + PHILOX_W[0]) & MASK32, (k1 + PHILOX_W[1]) & MASK32
        product0 = c0.astype(xp.uint64) * xp.uint64(PHILOX_M[0])
        product1 = c2.astype(xp.uint64) * xp.uint64(PHILOX_M[1])
        c0, c1, c2, c3 = ((product1 >> xp.uint64(32)).astype(xp.uint32) ^ c1 ^ xp.uint32(k0),
                          product1.astype(xp.uint32),
                          (product0 >> xp.uint64(32)).astype(xp.uint32) ^ c3 ^ xp.uint32(k1),
                          product0.astype(xp.uint32))
    return c0, c1, c2, c3


def box_muller(bits_radius, bits_angle):
    """Two independent N(0, 1) float32 arrays from two uint32 arrays (24 bits of each used)."""
    xp = array_module_of(bits_radius)
    u_radius = ((bits_radius >> xp.uint32(8)).astype(xp.float32) + 1) * xp.float32(2.0 ** -24)  # (0, 1]
    u_angle = (bits_angle >> xp.uint32(8)).astype(xp.float32) * xp.float32(2.0 ** -24)          # [0, 1)
    radius = xp.sqrt(xp.float32(-2) * xp.log(u_radius))
    angle = xp.float32(2 * math.pi) * u_angle
    return radius * xp.cos(angle), radius * xp.sin(angle)


def standard_normals(seed, generation, pairs, param_id, count, xp=numpy):
    """The first `count` N(0, 1) numbers of stream (seed, generation, pair, param_id), per pair.

    Returns float32 (len(pairs), count). A pure function: the rows for pairs [p] equal row p of
    the draw for all pairs, bit for bit. On a CPU a few pairs go at a time, so that Philox's
    temporaries stay in cache. On a GPU, one kernel computes the same (gpu.philox_normals).
    """
    if gpu.enabled(xp):
        return gpu.standard_normals(seed, generation, pairs, param_id, count, xp)
    n_blocks = -(-count // 4)
    blocks = xp.arange(n_blocks, dtype=xp.uint32)[None, :]
    pair_words = xp.asarray(pairs, dtype=xp.uint32)[:, None]
    normals = xp.empty((pair_words.shape[0], n_blocks, 4), dtype=xp.float32)
    rows = max(1, BLOCKS_PER_PASS // max(n_blocks, 1) if xp is numpy else pair_words.shape[0])  # >= 1: no pair, no pass
    for start in range(0, pair_words.shape[0], rows):
        words = philox4x32((blocks, pair_words[start:start + rows], param_id, generation), (seed, seed >> 32))
        chunk = normals[start:start + rows]
        chunk[..., 0], chunk[..., 1] = box_muller(words[0], words[1])
        chunk[..., 2], chunk[..., 3] = box_muller(words[2], words[3])
    return xp.ascontiguousarray(normals.reshape(pair_words.shape[0], 4 * n_blocks)[:, :count])


def param_id(name):
    """The parameter word of `name`'s stream: PARAM_IDS for the paper's four parameters (every
    committed run keeps its bits), else 2^31 + the first 31 bits of SHA-256(name), the same on
    every machine and in every process, and never one of PARAM_IDS."""
    if name in PARAM_IDS:
        return PARAM_IDS[name]
    return 0x80000000 | (int.from_bytes(hashlib.sha256(name.encode()).digest()[:4], "little") & 0x7FFFFFFF)


def normals(seed, generation, pairs, name, count, xp=numpy):
    """The stream of parameter `name` (any string): (len(pairs), count) float32."""
    return standard_normals(seed, generation, pairs, param_id(name), count, xp)
