"""
N-MNIST emulated from MNIST: every digit turned into an N-MNIST-format recording by a model of the
recording set-up of Orchard et al. (2015), an ATIS event camera on a pan-tilt unit that views the
digit through three saccades (`python run.py emulate`, docs/data.md).

The model, per digit, in the order light takes through it:

1. Display and optics. The digit is shown dark on a bright surround, luminance
   `background + (1 - background) · ((255 - v) / 255) ** gamma`, blurred by a Gaussian PSF and
   placed at a small random sub-pixel offset (`canvas`).
2. Pixel. Each of the 34 × 34 sensor pixels sees that luminance bilinearly interpolated where the
   trajectory has moved the digit, every 0.5 ms; its log passes a first-order low-pass (the
   photoreceptor) and is compared with the pixel's reference level. An event fires where the change
   reaches the contrast threshold, its time interpolated inside the step, and the pixel is then held
   in reset for its refractory period, the reference following the input (`Emulator.recordings`).
   Each pixel's initial reference level is random, between its two thresholds. Polarity bit 1 =
   luminance increase, so bit 1 where the digit's ink moves away.
3. Noise. Background events, Poisson per pixel with a log-normal spread of rates and 96 % of bit 1,
   three hot pixels of the real sensor crop, Gaussian timestamp jitter and a per-recording time
   offset (`Emulator.noise_and_timing`).
4. Trajectory. One image-plane path for every digit, measured on real recordings: three saccades
   over 310 ms, 2 ms knots linearly interpolated (`TRAJECTORY`).

Its parameters were calibrated on, and its statistics compared with, 1,100 real N-MNIST recordings of
the same digits. It is an emulation: results on it are results on emulated N-MNIST.

Determinism. A recording's random draws come from a Philox generator keyed by (seed, split, 1-based
MNIST index), the emulated sensor's (thresholds, refractory periods, noise rates) by the seed alone,
and the simulation is element-wise over a batch: a recording does not depend on which digits share
its batch or its worker. Its bytes are those of the emulator the project's emulated N-MNIST was made
with wherever NumPy computes exp and log as that data's machines did (x86-64 with AVX2 or more:
`bytes_as_made`); elsewhere the last bit of exp and log moves about 0.2 % of the events.

Output, as the official N-MNIST zips extract and as tonic expects (data.load_nmnist reads it):
<out>/NMNIST/{Train,Test}/<label>/<NNNNN>.bin (NNNNN the 1-based MNIST index; 5 bytes per event:
x, y, polarity in bit 7 and a 23-bit time in microseconds, sorted by time), zero-byte train.zip and
test.zip, EMULATED.json, the data's fingerprint (`provenance`), and, written last, FINISHED.json, the
recordings of each split (`recordings`): training refuses an emulation without it (`check_finished`). Every
recording is written whole or not at all, so an interrupted emulation resumes where it stopped.
"""
import hashlib
import json
import os
import platform
import re
import shlex
import signal
import sys
import threading
import time
import warnings
from contextlib import closing
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path

import numpy as np
from tqdm import tqdm

import data
import exits
from interface_checks import a_kind, check_number, check_whole
import mnist
from run_folder import (TEMPORARY, UsageError, holder, is_own_file, os_problem, owned, read_json, refuse_link,
                        write_atomically, writing)

VERSION = 1  # of the emulator's bytes: a change to any recording's bytes is a new version
SENSOR = 34  # pixels per side of the sensor's field
DIGIT = 28   # pixels per side of an MNIST digit
PAD = 10     # margin of the padded digit canvas, more than the largest shift plus the blur
SPLIT_ID = {"train": 1, "test": 2}
SPLIT_FOLDER = {"train": "Train", "test": "Test"}
PROVENANCE = "EMULATED.json"
FINISHED = "FINISHED.json"  # written last: what `recordings` finds, so a reader knows the emulation is whole
BATCH = 128  # digits simulated together (speed only: the bytes do not depend on it)

# The calibrated parameters; units: ms, pixels, natural-log luminance.
DT_MS = 0.5                # simulation time step
DURATION_MS = 310.0        # length of a recording
GAMMA = 1.9                # display gamma: luminance ~ (shown value / 255) ** gamma
BACKGROUND = 0.12          # display black level and sensor dark current, relative to full white
PSF_SIGMA = 0.55           # Gaussian optical blur, pixels
THRESHOLD_ON = 0.27        # contrast threshold of a luminance increase
THRESHOLD_OFF = 0.27       # contrast threshold of a luminance decrease
THRESHOLD_SIGMA = 0.0      # per-pixel threshold mismatch (std); the fit preferred none
REFRACTORY_MS = 0.55       # reset hold after an event, at least one time step
REFRACTORY_SIGMA = 0.15    # per-pixel log-normal spread of the refractory period
LOWPASS_MS = 1.55          # photoreceptor low-pass time constant
NOISE_HZ = 0.30            # mean background event rate per pixel
NOISE_SIGMA = 0.6          # per-pixel log-normal spread of that rate
NOISE_ON_FRACTION = 0.96   # background events with polarity bit 1
HOT_PIXELS = ((1, 13, 1.5), (29, 1, 0.85), (32, 8, 0.44))  # (x, y, mean events per recording)
JITTER_US = 150.0          # Gaussian timestamp jitter (std)
TIME_OFFSET_MS = 1.5       # per-recording start offset (std)
POSITION_SIGMA = 0.15      # per-recording placement jitter (std, pixels)


# ---------------------------------------------------------------------------------------------
# 1. display and optics

def blur_weights(offsets):
    """Row-normalised Gaussian interpolation weights, out[i] = Σ_j w[i, j] in[j], for the
    offsets between output and input pixels."""
    w = np.exp(-0.5 * (offsets / PSF_SIGMA) ** 2)
    return w / w.sum(axis=1, keepdims=True)


def canvas(image, dx, dy):
    """The displayed luminance (0..1) of an MNIST digit, blurred and shifted by (dx, dy), on a
    padded canvas: canvas[r, c] is the luminance at digit coordinate (c - PAD, r - PAD)."""
    if type(image) is not np.ndarray or image.dtype != np.uint8 or image.shape != (DIGIT, DIGIT):
        got = f"{image.dtype} {image.shape}" if type(image) is np.ndarray else a_kind(image)
        raise ValueError(f"image must be one MNIST digit, a uint8 array ({DIGIT}, {DIGIT}), got {got}")
    for name, shift in (("dx", dx), ("dy", dy)):
        check_number(name, shift, -DIGIT, DIGIT, "0, no shift")
    coords = np.arange(DIGIT + 2 * PAD, dtype=np.float64) - PAD
    source = np.arange(DIGIT, dtype=np.float64)
    wy = blur_weights(coords[:, None] - dy - source[None, :])
    wx = blur_weights(coords[:, None] - dx - source[None, :])
    shown, surround = (1.0 - image.astype(np.float64) / 255.0) ** GAMMA, 1.0  # a dark digit on white
    luminance = wy @ (shown - surround) @ wx.T + surround
    return BACKGROUND + (1.0 - BACKGROUND) * luminance


# ---------------------------------------------------------------------------------------------
# 2. pixel

def check_recordings_request(images, split, indices):
    """ValueError naming what Emulator.recordings takes unless images are MNIST digits (B, 28, 28)
    uint8, split one of SPLIT_ID and indices B whole numbers >= 1 (each digit's place in its split)."""
    if type(images) is not np.ndarray or images.dtype != np.uint8 or images.ndim != 3 or \
            images.shape[1:] != (DIGIT, DIGIT):
        got = f"{images.dtype} {images.shape}" if type(images) is np.ndarray else a_kind(images)
        raise ValueError(f"images must be MNIST digits, a uint8 array (B, {DIGIT}, {DIGIT}) as mnist.load gives "
                         f"them, got {got}")
    if not isinstance(split, str) or split not in SPLIT_ID:
        raise ValueError(f"split must be one of {', '.join(map(repr, SPLIT_ID))}, got {split!r}")
    if not hasattr(indices, "__len__") or len(indices) != len(images):
        raise ValueError(f"indices must give each of the {len(images)} digits its 1-based place in its split, got "
                         f"{len(indices) if hasattr(indices, '__len__') else a_kind(indices)}")
    for index in indices:
        check_whole("index", index, 1, None, "1, a digit's 1-based place in its split")


class Emulator:
    """The emulated sensor of one seed (thresholds, refractory periods and noise rates, fixed for
    every recording as a real sensor's are) and the recordings it makes of MNIST digits."""

    def __init__(self, seed=0):
        check_whole("seed", seed, 0, None, "0, the emulation's default")
        self.seed = int(seed)
        g = np.random.Generator(np.random.Philox(np.random.SeedSequence([self.seed, 0x5E4502])))  # the sensor's key
        shape = (SENSOR, SENSOR)
        # the mismatch is drawn even at THRESHOLD_SIGMA = 0: the draws after it follow it in the stream
        on_mismatch, off_mismatch = g.standard_normal(shape), g.standard_normal(shape)
        self.threshold_on = np.maximum(THRESHOLD_ON + THRESHOLD_SIGMA * on_mismatch, 0.05).astype(np.float32)
        self.threshold_off = np.maximum(THRESHOLD_OFF + THRESHOLD_SIGMA * off_mismatch, 0.05).astype(np.float32)
        refractory = REFRACTORY_MS * np.exp(REFRACTORY_SIGMA * g.standard_normal(shape))
        self.refractory = np.maximum(refractory, DT_MS).astype(np.float32)
        rate = np.exp(NOISE_SIGMA * g.standard_normal(shape) - 0.5 * NOISE_SIGMA * NOISE_SIGMA) * NOISE_HZ
        self.noise_rate = rate.ravel()  # events per second per pixel, mean NOISE_HZ
        self.n_steps = int(round(DURATION_MS / DT_MS)) + 1
        self.x, self.y = trajectory(np.arange(self.n_steps) * DT_MS)

    def generator(self, split, index):
        """The Philox generator of one recording: MNIST digit `index` (1-based) of `split`."""
        return np.random.Generator(np.random.Philox(np.random.SeedSequence([self.seed, SPLIT_ID[split], int(index)])))

    def frame(self, canvases, k):
        """The luminance each sensor pixel sees at time step k: the canvases (B, 48, 48) moved by
        the trajectory and bilinearly interpolated, (B, 34, 34)."""
        sx, sy = self.x[k], self.y[k]
        ix, iy = int(np.floor(sx)), int(np.floor(sy))
        fx, fy = np.float32(sx - ix), np.float32(sy - iy)
        r0, c0 = PAD - iy - 1, PAD - ix - 1  # sensor pixel (x, y) sees digit coordinate (x - sx, y - sy)
        a = canvases[:, r0 + 1:r0 + 1 + SENSOR, c0 + 1:c0 + 1 + SENSOR]  # (x - ix, y - iy)
        b = canvases[:, r0 + 1:r0 + 1 + SENSOR, c0:c0 + SENSOR]          # (x - ix - 1, y - iy)
        c = canvases[:, r0:r0 + SENSOR, c0 + 1:c0 + 1 + SENSOR]          # (x - ix, y - iy - 1)
        d = canvases[:, r0:r0 + SENSOR, c0:c0 + SENSOR]                  # (x - ix - 1, y - iy - 1)
        return ((1 - fx) * (1 - fy)) * a + (fx * (1 - fy)) * b + ((1 - fx) * fy) * c + (fx * fy) * d

    def recordings(self, images, split, indices):
        """The recordings of MNIST digits `images` (B, 28, 28) uint8, whose 1-based indices in
        `split` are `indices`: a list of (x, y, polarity, t_us) int64 arrays, sorted by time."""
        check_recordings_request(images, split, indices)
        n = len(images)
        generators = [self.generator(split, index) for index in indices]
        # each recording's first draws, in this order: time offset, placement, initial reference level
        time_offset = np.empty(n)
        canvases = np.empty((n, DIGIT + 2 * PAD, DIGIT + 2 * PAD), np.float32)
        phase = np.empty((n, SENSOR, SENSOR), np.float32)
        for b, g in enumerate(generators):
            time_offset[b] = TIME_OFFSET_MS * g.standard_normal()
            dx, dy = POSITION_SIGMA * g.standard_normal(2)
            canvases[b] = canvas(images[b], dx, dy)
            phase[b] = g.random((SENSOR, SENSOR))

        dt = np.float32(DT_MS)
        alpha = np.float32(1.0 - np.exp(-np.float32(DT_MS / LOWPASS_MS)))  # the low-pass's step
        on, off, refractory = self.threshold_on, self.threshold_off, self.refractory
        level = np.log(self.frame(canvases, 0))  # the photoreceptor's low-passed log luminance
        reference = level - (phase * (on + off) - off)  # the initial change lies in (-off, on)
        ready_at = np.zeros((n, SENSOR, SENSOR), np.float32)
        fired, times, polarities = [], [], []
        for k in range(1, self.n_steps):
            t_now = np.float32(k * DT_MS)
            previous = level
            level = previous + alpha * (np.log(self.frame(canvases, k)) - previous)
            change = level - reference
            ready = ready_at <= t_now
            up = ready & (change >= on)
            down = ready & (change <= -off)
            fire = up | down
            where = np.flatnonzero(fire)
            if where.size:
                before, after, ref = previous.ravel()[where], level.ravel()[where], reference.ravel()[where]
                is_up = up.ravel()[where]
                pixel = where % (SENSOR * SENSOR)
                crossed = np.where(is_up, ref + on.ravel()[pixel], ref - off.ravel()[pixel])
                step = after - before
                fraction = np.where(step != 0, (crossed - before) / np.where(step != 0, step, 1), 1.0)
                t_event = t_now - dt + dt * np.clip(fraction, 0.0, 1.0)
                t_event = np.maximum(t_event, ready_at.ravel()[where])
                ready_at.ravel()[where] = t_event + refractory.ravel()[pixel]
                fired.append(where)
                times.append(t_event)
                polarities.append(is_up)  # bit 1: the luminance rose
            held = ready_at > t_now  # in reset: the reference follows the input
            np.copyto(reference, level, where=held | fire)

        where = np.concatenate(fired) if fired else np.zeros(0, np.int64)
        t_ms = np.concatenate(times).astype(np.float64) if times else np.zeros(0)
        polarity = np.concatenate(polarities) if polarities else np.zeros(0, bool)
        sample = where // (SENSOR * SENSOR)
        order = np.argsort(sample, kind="stable")
        sample, where, t_ms, polarity = sample[order], where[order], t_ms[order], polarity[order]
        bounds = np.searchsorted(sample, np.arange(n + 1))
        return [self.noise_and_timing(g, where[bounds[b]:bounds[b + 1]] % (SENSOR * SENSOR),
                                      t_ms[bounds[b]:bounds[b + 1]], polarity[bounds[b]:bounds[b + 1]],
                                      time_offset[b])
                for b, g in enumerate(generators)]

    # -----------------------------------------------------------------------------------------
    # 3. noise

    def noise_and_timing(self, g, pixel, t_ms, polarity, time_offset):
        """One recording's events with background noise and hot pixels added, its timestamps
        jittered and offset: (x, y, polarity, t_us), sorted by time, ties by pixel."""
        counts = g.poisson(self.noise_rate * (DURATION_MS / 1000.0))  # uniform in time
        hot = [(y * SENSOR + x, mean) for x, y, mean in HOT_PIXELS]
        hot_counts = g.poisson([mean for _, mean in hot])
        noise_pixel = np.concatenate([np.repeat(np.arange(SENSOR * SENSOR), counts)]
                                     + [np.full(count, p) for (p, _), count in zip(hot, hot_counts)]).astype(np.int64)
        noise_t = g.random(noise_pixel.size) * DURATION_MS
        noise_polarity = g.random(noise_pixel.size) < NOISE_ON_FRACTION
        pixel = np.concatenate([pixel, noise_pixel])
        t_ms = np.concatenate([t_ms, noise_t])
        polarity = np.concatenate([polarity, noise_polarity])
        t_us = np.rint(t_ms * 1000.0 + JITTER_US * g.standard_normal(t_ms.size) + time_offset * 1000.0)
        keep = (t_us >= 0) & (t_us < 2 ** 23)
        pixel, t_us, polarity = pixel[keep], t_us[keep].astype(np.int64), polarity[keep]
        order = np.lexsort((pixel, t_us))
        pixel, t_us, polarity = pixel[order], t_us[order], polarity[order]
        return pixel % SENSOR, pixel // SENSOR, polarity.astype(np.int64), t_us


# ---------------------------------------------------------------------------------------------
# 4. trajectory: t_ms, x, y of the digit's top-left corner in the sensor's field (digit pixel (c, r)
# is seen by sensor pixel (c + x, r + y)). Three saccades: 0-90 ms down (+y, then +x), 90-224 ms
# up and right, 224-310 ms left. The path was measured on the real recordings (image-gradient
# correlation per 5 ms window), its timing warped per saccade so that the emulated cumulative event
# count follows the real one, then moved by a rigid (+0.07, +0.17) px from per-recording matching.

TRAJECTORY = np.array([float(v) for v in """
    0  0.568  1.209     2  0.567  1.217     4  0.564  1.230     6  0.559  1.251     8  0.551  1.280
   10  0.540  1.321    12  0.524  1.374    14  0.505  1.441    16  0.483  1.521    18  0.461  1.611
   20  0.442  1.710    22  0.427  1.817    24  0.417  1.934    26  0.411  2.069    28  0.409  2.227
   30  0.411  2.407    32  0.415  2.598    34  0.421  2.793    36  0.430  2.997    38  0.442  3.215
   40  0.460  3.447    42  0.484  3.683    44  0.514  3.919    46  0.554  4.158    48  0.603  4.397
   50  0.660  4.631    52  0.727  4.854    54  0.804  5.069    56  0.896  5.275    58  1.000  5.466
   60  1.113  5.633    62  1.234  5.773    64  1.360  5.887    66  1.491  5.979    68  1.620  6.050
   70  1.736  6.101    72  1.829  6.134    74  1.897  6.152    76  1.944  6.162    78  1.979  6.166
   80  2.005  6.168    82  2.026  6.169    84  2.043  6.170    86  2.055  6.170    88  2.067  6.170
   90  2.079  6.170    92  2.092  6.170    94  2.109  6.170    96  2.129  6.170    98  2.151  6.170
  100  2.174  6.170   102  2.199  6.170   104  2.225  6.170   106  2.253  6.170   108  2.282  6.170
  110  2.313  6.170   112  2.346  6.170   114  2.380  6.170   116  2.416  6.169   118  2.456  6.167
  120  2.502  6.162   122  2.559  6.153   124  2.632  6.136   126  2.721  6.106   128  2.824  6.061
  130  2.943  5.994   132  3.078  5.903   134  3.225  5.787   136  3.374  5.652   138  3.518  5.503
  140  3.656  5.341   142  3.791  5.161   144  3.920  4.964   146  4.041  4.753   148  4.151  4.532
  150  4.252  4.301   152  4.345  4.064   154  4.427  3.831   156  4.501  3.609   158  4.570  3.396
  160  4.640  3.181   162  4.715  2.965   164  4.792  2.760   166  4.865  2.582   168  4.933  2.435
  170  4.995  2.313   172  5.055  2.206   174  5.113  2.104   176  5.168  2.011   178  5.215  1.930
  180  5.250  1.866   182  5.275  1.817   184  5.294  1.779   186  5.307  1.750   188  5.318  1.726
  190  5.329  1.705   192  5.342  1.684   194  5.358  1.661   196  5.379  1.637   198  5.406  1.611
  200  5.438  1.584   202  5.475  1.557   204  5.515  1.530   206  5.556  1.507   208  5.595  1.488
  210  5.629  1.472   212  5.658  1.461   214  5.682  1.453   216  5.701  1.448   218  5.717  1.444
  220  5.724  1.445   222  5.680  1.474   224  5.587  1.524   226  5.482  1.570   228  5.401  1.593
  230  5.318  1.609   232  5.216  1.622   234  5.088  1.632   236  4.934  1.639   238  4.764  1.642
  240  4.594  1.642   242  4.428  1.638   244  4.265  1.632   246  4.094  1.623   248  3.913  1.612
  250  3.729  1.598   252  3.548  1.585   254  3.368  1.570   256  3.181  1.555   258  2.980  1.540
  260  2.774  1.525   262  2.577  1.511   264  2.398  1.499   266  2.231  1.489   268  2.066  1.479
  270  1.905  1.469   272  1.756  1.461   274  1.627  1.453   276  1.516  1.447   278  1.420  1.441
  280  1.332  1.436   282  1.251  1.431   284  1.174  1.428   286  1.099  1.425   288  1.025  1.423
  290  0.956  1.422   292  0.898  1.421   294  0.854  1.420   296  0.823  1.420   298  0.802  1.420
  300  0.788  1.420   302  0.780  1.420   304  0.776  1.420   306  0.773  1.420   308  0.772  1.420
  310  0.771  1.420   312  0.771  1.420
""".split()]).reshape(-1, 3)


def trajectory(t_ms):
    """The digit's position (x, y) at times `t_ms`, interpolated between the knots of TRAJECTORY."""
    return np.interp(t_ms, TRAJECTORY[:, 0], TRAJECTORY[:, 1]), np.interp(t_ms, TRAJECTORY[:, 0], TRAJECTORY[:, 2])


def bytes_as_made():
    """Whether NumPy here computes exp and log as it did where the project's emulated N-MNIST was
    made, so that every recording is the same bytes: x86-64 with AVX2 and FMA3 in use (NumPy's
    X86_V3, where it names that level), with or without AVX-512."""
    from numpy._core._multiarray_umath import __cpu_features__ as features
    level = ("X86_V3",) if "X86_V3" in features else ("AVX2", "FMA3")
    return platform.machine().lower() in ("x86_64", "amd64") and all(features.get(name) for name in level)


# ---------------------------------------------------------------------------------------------
# recordings on disk

def encode(x, y, polarity, t_us):
    """A recording's bytes in N-MNIST's format: 5 bytes per event, x, y, then the polarity in bit 7
    above a 23-bit time in microseconds."""
    fields = {"x": (x, SENSOR), "y": (y, SENSOR), "polarity": (polarity, 2), "t_us": (t_us, 2 ** 23)}
    arrays = {name: np.asarray(value) for name, (value, _) in fields.items()}
    arrays = {name: array.astype(np.int64) if array.size == 0 else array for name, array in arrays.items()}  # [] too
    if len({array.shape for array in arrays.values()}) != 1 or arrays["t_us"].ndim != 1:
        raise ValueError(f"x, y, polarity and t_us must be 1-D arrays of one length, one entry per event, got shapes "
                         f"{', '.join(str(array.shape) for array in arrays.values())}")
    for name, (_, size) in fields.items():  # beyond its bits a field would wrap into another value, unseen
        array = arrays[name]
        if array.dtype.kind not in "iu":
            raise ValueError(f"{name} must be integers in 0..{size - 1}, N-MNIST's format, got {array.dtype}")
        if array.size and (int(array.min()) < 0 or int(array.max()) >= size):
            raise ValueError(f"{name} must be integers in 0..{size - 1}, N-MNIST's format, got {array.dtype} from "
                             f"{array.min()} to {array.max()}")
    if bool((np.diff(arrays["t_us"].astype(np.int64)) < 0).any()):  # a reader refuses time going back
        raise ValueError("t_us must not decrease: a recording's events go in time order")
    t_us = np.asarray(t_us, np.int64)
    events = np.empty((t_us.size, 5), np.uint8)
    events[:, 0] = x
    events[:, 1] = y
    events[:, 2] = ((np.asarray(polarity, np.int64) << 7) | (t_us >> 16)) & 0xFF
    events[:, 3] = (t_us >> 8) & 0xFF
    events[:, 4] = t_us & 0xFF
    return events.tobytes()


def recording_path(out, split, label, index):
    """Where the recording of MNIST digit `index` (1-based) of `split` goes under `out`."""
    if not isinstance(out, (str, os.PathLike)) or not str(out).strip():
        raise ValueError(f"out must be a folder's path (a str or pathlib.Path), got "
                         f"{repr(out) if isinstance(out, str) else a_kind(out)}")
    if not isinstance(split, str) or split not in SPLIT_FOLDER:
        raise ValueError(f"split must be one of {', '.join(map(repr, SPLIT_FOLDER))}, got {split!r}")
    check_whole("label", label, 0, 9, "0, a digit")
    check_whole("index", index, 1, None, "1, a digit's 1-based place in its split")
    return Path(out) / "NMNIST" / SPLIT_FOLDER[split] / str(int(label)) / f"{int(index):05d}.bin"


# ---------------------------------------------------------------------------------------------
# the emulation of a whole dataset

def emulate(out, mnist_folder=None, splits=("train", "test"), workers=1, seed=0, progress=True,
            elsewhere="emulate into another --out", every_digit=False):
    """Emulate every MNIST digit of `splits` into <out>/NMNIST, from the MNIST files in
    `mnist_folder` (downloaded into the cache folder if None), on `workers` processes. Recordings
    already there are kept (one cut short is made again), so a second call finishes what an
    interrupted one began. With `every_digit`, MNIST files that lack a digit in a split (whose
    emulation training would refuse) are refused before anything is made. Returns {"recordings":
    written now, "kept": already there, "events": written now}."""
    if not isinstance(out, (str, os.PathLike)) or not isinstance(mnist_folder, (str, os.PathLike, type(None))) or \
            not isinstance(splits, (tuple, list)) or not splits or not set(splits) <= set(SPLIT_FOLDER) or \
            len(set(splits)) != len(splits):
        raise ValueError(f"emulate takes a folder `out` and `mnist_folder` (a str or a Path; None: downloaded) and "
                         f"one or both splits of {tuple(SPLIT_FOLDER)}, each once, got {a_kind(out)}, "
                         f"{a_kind(mnist_folder)} and {splits!r}: e.g. emulate('emulated', splits=('train', 'test'))")
    check_whole("workers", workers, 1, 4096, "1, or the CPU cores to use")
    check_whole("seed", seed, 0, None, "0, the emulation's default")
    root = Path(out) / "NMNIST"
    inside = data.data_folder_problem(out, inside_only=True)
    if inside is not None:  # a split or digit folder of a copy, which the project only reads (run.py says it first)
        raise UsageError(f"{inside}; emulate into a folder of its own")
    refuse_link(root)
    refuse_copy_itself(Path(out))
    if data.holds_frame_caches(out):  # a data folder there would make every command refuse it as their cache
        raise UsageError(f"{out} holds frame caches of this project (nmnist-*.npz files), a folder the commands read "
                         f"frames from; {elsewhere}")
    if mnist_folder is not None and Path(mnist_folder).resolve() in (Path(out).resolve(), *Path(out).resolve().parents):
        raise UsageError(f"{out} lies in the MNIST folder {mnist_folder}, which the project only reads; {elsewhere}, "
                         f"outside it")
    refuse_recorded(root)  # before MNIST is read or fetched, and before the folder is made
    with warnings.catch_warnings(record=True) as unofficial:  # said once the folder is found fit: one line if not
        warnings.simplefilter("always")
        digits, sha256 = mnist.load(mnist.fetch(progress=progress) if mnist_folder is None else mnist_folder)
        for split in splits:
            lacking = sorted(set(range(10)) - set(int(label) for label in digits[split][1]))
            if lacking and every_digit:
                raise UsageError(f"the MNIST files in {mnist_folder} hold no digit {lacking[0]} in the {split} split, "
                                 f"so their emulation could not be trained and scored (every digit is needed in each "
                                 f"split); give --mnist the four files of MNIST itself")
            if lacking:  # a few digits of the user's, say: emulated, and said
                warnings.warn_explicit(f"the MNIST files in {mnist_folder} hold no digit{'s' * (len(lacking) > 1)} "
                                       f"{', '.join(map(str, lacking))} in the {split} split, so the emulation's "
                                       f"{SPLIT_FOLDER[split]} folders of "
                                       f"{'those digits' if len(lacking) > 1 else 'that digit'} stay empty, and train "
                                       f"and evaluate refuse the copy (every digit is needed in each split)",
                                       UserWarning, __file__, 0)
    fingerprint = {"emulator": "eggroll-snn emulate.py", "version": VERSION, "seed": int(seed), "mnist_sha256": sha256}
    with owned(root):  # one emulation per folder at a time
        return emulate_into(root, out, digits, splits, fingerprint, workers, seed, progress, elsewhere, unofficial)


def emulate_into(root, out, digits, splits, fingerprint, workers, seed, progress, elsewhere, warned):
    """`emulate`, once it holds <out>/NMNIST; FINISHED is written last, once every recording is. The
    warnings `warned` when MNIST was read are given once the folder is found fit for the emulation."""
    prepare(root, fingerprint, elsewhere)
    for split in splits:  # before the mark goes: a refused rerun changes nothing
        refuse_strays(root / SPLIT_FOLDER[split], {recording_path(out, split, label, i + 1).relative_to(root)
                                                   for i, label in enumerate(digits[split][1])}, root)
    refuse_link(root / FINISHED)  # the mark is the emulation's own file, never a link to another
    for warning in warned:
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    jobs, kept = [], 0
    for split in splits:
        images, labels = digits[split]
        todo = [i for i, label in enumerate(labels) if not kept_as_made(recording_path(out, split, label, i + 1))]
        kept += len(labels) - len(todo)
        jobs += [(split, images[todo[start:start + BATCH]], labels[todo[start:start + BATCH]],
                  [i + 1 for i in todo[start:start + BATCH]], str(out)) for start in range(0, len(todo), BATCH)]
    if jobs and os.path.lexists(root / FINISHED):  # recordings are about to be added: the old count no longer holds
        os.unlink(root / FINISHED)  # (a rerun stopped before this point leaves a finished copy finished)
    written = events = 0
    with tqdm(total=sum(len(job[2]) for job in jobs), desc=f"emulating N-MNIST into {root}", unit="recording",
              disable=not progress, dynamic_ncols=True) as bar:
        try:
            with closing(run_jobs(jobs, workers, seed)) as results:  # closed (the pool stopped) before the sweep
                for n, n_events in results:
                    written, events = written + n, events + n_events
                    bar.update(n)
                    bar.set_postfix(events_per_recording=round(events / written))
        finally:
            remove_partial_files(root)
    found = recordings(root)
    unfinished = [(flag, found[folder], len(digits[flag][1])) for flag, folder in SPLIT_FOLDER.items()
                  if flag not in splits and 0 < found[folder] < len(digits[flag][1])]
    if unfinished:  # the other split's emulation was stopped: the mark would call it whole
        flag, made, wanted = unfinished[0]
        warnings.warn(f"the {flag} split of {root} holds {made} of its {wanted} recordings (its emulation was "
                      f"stopped), so the emulation is not marked finished and training refuses it; finish it with "
                      f"`run.py emulate --split {flag} --out {out}` (the same --mnist and --seed)")
    else:
        write_atomically(root / FINISHED, json.dumps(found) + "\n")
    return {"recordings": written, "kept": kept, "events": events}


def kept_as_made(path):
    """Whether a rerun keeps the recording at `path`: there, and not cut short (a file of the
    emulation's own whose size is no whole number of 5-byte events, from a copy or a full disk, is
    made again; a link, or one name of a hard-linked file, is someone else's too, and kept)."""
    return path.exists() and not (is_own_file(path) and path.stat().st_size % 5)


def refuse_strays(folder, made, root):
    """A UsageError naming the first recording under `folder` that is not one of the paths `made`
    (relative to `root`) this emulation writes: one moved to another digit's folder, or added."""
    strays = sorted(path for path in folder.glob("*/*.bin") if path.relative_to(root) not in made)
    if strays:
        raise UsageError(f"{strays[0]} is not a recording this emulation makes (its digit or number is not "
                         f"MNIST's){f', nor are {len(strays) - 1} more' if len(strays) > 1 else ''}; move "
                         f"{'them' if len(strays) > 1 else 'it'} out of {root}, then rerun")


def check_finished(root=None):
    """A BadDataError naming the fix if the N-MNIST copy at `root` (data.resolve_root's rules) is an
    emulation that did not finish (no FINISHED mark) or whose recordings are not the ones it counted.
    The fix is the emulation's command again, which keeps every recording already made and makes the
    rest (`emulate`): deleting the folder would throw that work away."""
    root = data.resolve_root(root)
    for folder in (root / "NMNIST", root):
        if os.path.lexists(folder / PROVENANCE):
            break
    else:
        return  # recorded, not emulated
    seed = provenance(folder)["seed"]
    test_only = " --split test" * data.only_test_recordings(folder)  # an emulation of the test split alone
    command = f"`python run.py emulate --out {shlex.quote(str(folder.parent))} --seed {seed}{test_only}` (with its " \
              f"--mnist, if it was given one)"
    fix = f"rerun {command} to finish it: the recordings already made are kept"
    if not os.path.lexists(folder / FINISHED):
        running = holder(folder)
        if running is not None:  # not to be started again: it would be refused as in use
            raise data.BadDataError(f"{folder} holds an emulation still being made (by process {running}); wait for "
                                    f"it to finish, then run again")
        raise data.BadDataError(f"{folder} holds an emulation that did not finish (no {FINISHED}); {fix}")
    finished, found = read_json(folder / FINISHED, fix, data.BadDataError), recordings(folder)
    if not (isinstance(finished, dict) and set(finished) == set(found) and isinstance(finished["paths_sha256"], str)
            and all(type(finished[split]) is int and finished[split] >= 0 for split in SPLIT_FOLDER.values())):
        raise data.BadDataError(f"{folder / FINISHED} is damaged (not the recordings of each split and a SHA256 of "
                                f"their paths, as the emulation writes it); {fix}")
    if finished != found:
        counts = [" and ".join(f"{held.get(split)} {flag}" for flag, split in SPLIT_FOLDER.items())
                  for held in (found, finished)]
        if counts[0] != counts[1]:
            raise data.BadDataError(f"{folder} holds {counts[0]} recordings, but its emulation finished with "
                                    f"{counts[1]}; {fix}")
        raise data.BadDataError(f"{folder} holds other recordings than its emulation finished with (one moved to "
                                f"another digit or renamed); rerun {command}: it names each recording that is not "
                                f"where it made it, to move out, and makes the missing ones")
    for split, flag in zip(SPLIT_FOLDER.values(), SPLIT_FOLDER):
        if not found[split]:  # emulated with --split of the other: training and scoring read both
            raise data.BadDataError(f"{folder} holds no emulated {split} recordings; add them with `run.py emulate "
                                    f"--split {flag} --out {folder.parent}` and the same --mnist and --seed")


def recordings(root):
    """What FINISHED.json holds: the number of recordings in each split folder of `root`, and a
    sha256 of their paths (split/digit/name), which a recording moved to another digit changes."""
    paths = {split: sorted(path.relative_to(root).as_posix() for path in (root / split).glob("*/*.bin"))
             for split in SPLIT_FOLDER.values()}
    listing = "\n".join(path for split in paths.values() for path in split)
    return {**{split: len(names) for split, names in paths.items()},
            "paths_sha256": hashlib.sha256(listing.encode()).hexdigest()[:16]}


SETTING_WORDS = {"emulator": "the emulator", "version": "the emulator's version", "seed": "--seed",
                 "mnist_sha256": "the MNIST files"}  # an emulation's record, as a message names its entries


def setting_difference(key, theirs, ours):
    """How one entry of two emulations' records differs, in words: "--seed 0 there, 3 here"."""
    if key == "mnist_sha256":
        return "other MNIST files (their SHA256 differ)"
    return f"{SETTING_WORDS.get(key, key)} {theirs} there, {ours} here"


def prepare(root, fingerprint, elsewhere="emulate into another --out"):
    """Make <root>/{Train,Test}/<digit>/, the zero-byte train.zip and test.zip tonic looks for, and
    EMULATED.json; a UsageError ending with `elsewhere` (what the command's user does instead) if
    `root` holds recordings made otherwise (another seed, other MNIST files, another emulator
    version, or not emulated)."""
    stored = provenance(root.parent)
    if stored is not None and stored != fingerprint:
        differ = "; ".join(setting_difference(key, stored.get(key), fingerprint[key]) for key in fingerprint
                           if stored.get(key) != fingerprint[key])
        raise UsageError(f"{root} holds recordings emulated otherwise ({differ}); {elsewhere} (those recordings are "
                         f"left as they are)")
    refuse_recorded(root)
    try:
        for split in SPLIT_FOLDER.values():
            for digit in data.DIGITS:
                for folder in (root / split, root / split / digit):  # never into a folder elsewhere
                    refuse_link(folder)
                    folder.mkdir(exist_ok=True)
        for name in ("train.zip", "test.zip"):
            if not os.path.lexists(root / name):
                write_atomically(root / name, "")
            refuse_link(root / name)
    except OSError as error:
        raise UsageError(os_problem(error, "create", error.filename)) from None
    remove_partial_files(root)
    if stored is None:
        write_atomically(root / PROVENANCE, json.dumps(fingerprint, indent=2) + "\n")


def refuse_copy_itself(out):
    """A UsageError if `out` is itself an emulation's NMNIST folder, which holds its Train and Test:
    the emulation would go into a copy nested inside it, <out>/NMNIST. (A recorded copy there is
    refused by refuse_recorded.)"""
    if os.path.lexists(out / PROVENANCE):
        raise UsageError(f"--out {out} holds an N-MNIST copy's Train and Test folders itself, and the emulation "
                         f"goes into <--out>/NMNIST, a copy inside that one; give the folder above it, {out.parent}, "
                         f"or another folder")


def refuse_recorded(root):
    """A UsageError if <root> (an emulation's NMNIST folder) or the folder above it holds recordings
    with no EMULATED.json: a recorded copy (or another program's), which an emulation never mixes into."""
    if provenance(root.parent) is None:
        for folder in (root, root.parent):  # N-MNIST's layout, <split>/<digit>/*.bin, not any file of that suffix
            if any(any((folder / split / digit).glob("*.bin")) for split in SPLIT_FOLDER.values()
                   for digit in data.DIGITS):
                raise UsageError(f"{folder} holds recordings that were not emulated here (no {root / PROVENANCE}); "
                                 f"emulate into another folder (run.py emulate's --out, reproduce --data emulated's "
                                 f"--data-root)")


PARTIAL = re.compile(r"\d{5}\.bin" + TEMPORARY)  # run_folder.writing's temporary file of a recording


def remove_partial_files(root):
    """Remove the temporary files of recordings whose writing was cut short (a killed worker): in
    <root>/<split>/<digit>/ alone, by the name `writing` gave them, never through a link."""
    for split in SPLIT_FOLDER.values():
        for digit in data.DIGITS:
            folder = root / split / digit
            if os.path.islink(root / split) or os.path.islink(folder) or not folder.is_dir():
                continue
            for entry in os.scandir(folder):
                if PARTIAL.fullmatch(entry.name) and entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)


def run_jobs(jobs, workers, seed):
    """(recordings, events) of each job as it finishes: in this process, or on `workers` processes."""
    if workers <= 1:
        _worker["emulator"] = Emulator(seed)
        yield from map(emulate_batch, jobs)
        return
    with ProcessPoolExecutor(workers, mp_context=get_context("spawn"), initializer=start_worker,
                             initargs=(seed, os.getpid())) as pool:
        futures = [pool.submit(emulate_batch, job) for job in jobs]
        try:
            for future in as_completed(futures):
                yield future.result()
        finally:  # an error or an interruption: the batches in progress finish, the others never start
            pool.shutdown(wait=True, cancel_futures=True)


_worker = {}  # the Emulator of this process


def start_worker(seed, parent):
    """Make a worker process's Emulator. Ctrl-C is left to the main process, which stops the pool;
    should that process die without stopping it (kill -9), the worker ends within ORPHAN_CHECK seconds."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=end_when_orphaned, args=(parent,), daemon=True).start()
    _worker["emulator"] = Emulator(seed)


ORPHAN_CHECK = 1.0  # seconds between a worker's looks at whether its parent is alive


def end_when_orphaned(parent):
    """Exit this worker once its parent process is gone (it is then another process's child)."""
    while os.getppid() == parent:
        time.sleep(ORPHAN_CHECK)
    os._exit(1)


def emulate_batch(job):
    """Emulate one batch of digits and write each recording whole; (recordings, events)."""
    split, images, labels, indices, out = job
    n_events = 0
    for label, index, events in zip(labels, indices, _worker["emulator"].recordings(images, split, indices)):
        with writing(recording_path(out, split, label, index)) as temporary:
            temporary.write_bytes(encode(*events))
        n_events += events[3].size
    return len(indices), n_events


def provenance(root=None):
    """The fingerprint of emulated N-MNIST under `root` (data.resolve_root's rules): the emulator's
    version, the seed and the SHA256 of the MNIST files it was made from; None if the recordings
    there were not emulated (no EMULATED.json)."""
    root = data.resolve_root(root)
    for path in (root / "NMNIST" / PROVENANCE, root / PROVENANCE):
        if path.exists() or path.is_symlink():
            fix = (f"put back the {PROVENANCE} that `run.py emulate` wrote there, or emulate into another --out: "
                   f"without it the recordings beside it would pass for recorded N-MNIST")
            stored = read_json(path, fix, data.BadDataError)
            if not isinstance(stored, dict) or not {"version", "seed", "mnist_sha256"} <= set(stored):
                raise data.BadDataError(f"{path} is not an emulation's record (no emulator version, seed or SHA256 of "
                                        f"the MNIST files); {fix}")
            whole = {key: type(stored[key]) is int and stored[key] >= 0 for key in ("version", "seed")}
            if not all(whole.values()) or not isinstance(stored["mnist_sha256"], dict):
                wrong = next(key for key, fine in {**whole, "mnist_sha256": False}.items() if not fine)
                raise data.BadDataError(f"{path} is damaged ({SETTING_WORDS[wrong]}: {json.dumps(stored[wrong])}); "
                                        f"{fix}")
            return stored
    return None


if __name__ == "__main__":  # the emulation is a command of run.py's
    sys.exit(exits.runs_as("emulate.py", "the emulation of N-MNIST from MNIST", "emulate"))
