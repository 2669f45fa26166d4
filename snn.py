"""A layered leaky integrate-and-fire (LIF) network, simulated for a whole population at once.

Network (the paper's: 2312 -> 64 LIF -> 10 LIF; any depth, dense or convolutional layers), for
every layer and frame (time bin) t = 1..T (0..T-1 in the code):

    V_t = beta * V_{t-1} + s_t Wᵀ + b                     (1)  membrane potential
    o_t = 𝟙[V_t >= V_th];  V_t <- 0 where o_t                (2)  spike, then reset to zero

s_t is the layer's input at frame t, a row (an event frame for layer 1, the previous layer's spikes o_t
for the others; the paper writes W s_t for columns). Layer l's parameters are named W{l} and b{l}, l
counted from 1; the last layer is the output.
The network's output is the mean spike rate of the output neurons over the T frames, read out by a
softmax (3) and scored by cross-entropy (4). A network may read out its output layer's mean membrane
potential instead (`readout="potential"`): those neurons integrate Eq. (1) without spiking or
resetting, so their output moves with every weight, not in jumps of whole spikes.

Evolution strategies evaluate many perturbed copies ("members") of the network on the same
minibatch; `simulate` runs them all, in cache-sized chunks of members, asking the caller for each
layer's input current s_t Wᵀ + b. That way every method (EGGROLL, full-rank ES, plain inference)
shares exactly this LIF code and differs only in how it forms the currents.

A network is data (`Network`, after the dynamics): its layers, each `Dense` (every neuron sees every input) or `Conv`
(a bank of square kernels slid over an image). A convolution is a dense layer applied to every
patch of its input: W (channels × in_channels kernel²) times each patch (`layer_current`), so
EGGROLL's low-rank noise perturbs a kernel bank as it does any weight matrix.
"""
import math
import re
from dataclasses import dataclass

import numpy

from backend import array_module_of, to_numpy
import gpu
from interface_checks import (ODD_ARRAYS, a_kind, check_array_module, check_number, check_whole, digest_of, magnitude,
                              refuse_beyond_ram)

SIZES = (2312, 64, 10)  # the paper's: inputs (34 × 34 pixels × 2 polarities), hidden LIF, output LIF
IMAGE = (2, 34, 34)     # an N-MNIST frame as an image: input (polarity * 34 + row) * 34 + column
INIT_STD = 0.3           # W, b ~ 𝒩(0, 0.3^2), as in the paper
# How each layer's W is drawn: "paper", from 𝒩(0, INIT_STD^2) in every layer; "fan-in", a layer after
# the first with n inputs from 𝒩(0, INIT_STD^2 · 64 / n), so that its current spreads as the paper's
# output layer's (64 inputs) does; "pass-through", a hidden layer after the first starts as a copy of
# its first inputs' spikes (W = 2 [I 0], b = 0: one input spike lifts V to 2, past V_th = 1, even
# perturbed), so a deeper network starts as the shallower one. 2312-64-10 is the same network under each.
INIT_RULES = ("paper", "fan-in", "pass-through")
FAN_IN_REFERENCE = SIZES[1]
PASS_THROUGH_WEIGHT = 2.0
CHUNK_BYTES = 1 << 20    # CPU: membrane potentials of one member chunk stay in a 1 MiB L2 cache
FLOAT32 = numpy.finfo(numpy.float32)


# ---------------------------------------------------------------------------------------------
# The dynamics, Eqs. (1)-(4): the neurons' constants, one frame, a population simulated, the readout

@dataclass(frozen=True)
class LIF:
    """Neuron constants shared by all layers.

    The paper does not give them. beta = 0.9 keeps a memory of about 1/(1 - beta) = 10 frames, the
    whole T = 10 window, so evidence from every frame adds up; V_th = 1.0 is snnTorch's default.
    """
    beta: float = 0.9
    threshold: float = 1.0

    def __post_init__(self):
        check_number("beta (the potential's decay per frame)", self.beta, 0, 1, "0.9")
        check_number("threshold", self.threshold, FLOAT32.tiny, FLOAT32.max, "1.0")  # what float32 potentials hold


def lif_step(v, current, lif, spikes):
    """One frame of Eqs. (1)-(2), in place on the potentials `v`; writes the spikes o_t (0 or 1) into
    `spikes`."""
    xp = array_module_of(v)
    if gpu.enabled(xp):
        return gpu.lif_step(v, current, lif, spikes)
    v *= lif.beta
    v += current
    xp.greater_equal(v, lif.threshold, out=spikes)
    v *= 1 - spikes
    return spikes


def members_per_chunk(n_members, batch, n_hidden, xp):
    """How many members to simulate together: all on a GPU, an L2-sized even number on a CPU."""
    if xp is not numpy:
        return n_members
    fit = CHUNK_BYTES // (batch * n_hidden * 4)
    return max(2, min(n_members, fit - fit % 2))


def check_lif(lif):
    """ValueError naming the fix unless `lif` is a LIF (its constants checked when it was made)."""
    if not isinstance(lif, LIF):
        raise ValueError(f"lif must be a snn.LIF, got {type(lif).__name__}: give e.g. snn.LIF(beta=0.9, threshold=1.0)")


def too_large(params, time_bins, largest_input=1.0):
    """The first layer l whose membrane potential could pass float32's range within `time_bins` frames,
    or None: layer 1's inputs lie within ±largest_input, every later layer's (spikes) in [0, 1], so each
    frame adds at most the largest row sum of |W_l| (times largest_input in layer 1) plus |b_l| to a
    potential that the leak only shrinks. No trained run's weights come near."""
    for layer in range(1, n_layers(params) + 1):
        weights, bias = params[f"W{layer}"], params[f"b{layer}"]
        xp = array_module_of(weights)
        rows = float(xp.abs(weights).sum(axis=1, dtype=xp.float64).max())
        reach = rows * (largest_input if layer == 1 else 1.0) + magnitude(bias)
        if not time_bins * reach < float(FLOAT32.max):
            return layer
    return None


def check_frames_fit(params, frames):
    """ValueError naming the fix unless the frames are finite (a NaN potential never spikes, so an ES
    population would score a silent neuron unseen, and BPTT's gradient would turn NaN further in) and
    no layer's potentials could pass float32's range on them (too_large): they would turn to inf and
    NaN, and the spikes counted from them mean nothing. One pass over the frames."""
    largest = magnitude(frames)
    if not math.isfinite(largest):
        raise ValueError("frames hold NaN or inf, which no neuron's potential survives: give finite inputs")
    layer = too_large(params, frames.shape[0], largest)
    if layer is not None:
        inputs = f" of inputs up to {largest:.3g}" if largest > 1 else ""
        fix = "give inputs in [0, 1], as data.py bins them, or" if largest > 1 else "give"
        raise ValueError(f"the weights of layer {layer} are too large for {frames.shape[0]} frames{inputs}: its "
                         f"membrane potentials could pass float32's range ({FLOAT32.max:.3g}); {fix} a network's "
                         f"weights of a usual size, e.g. snn.init_params()")

def check_readout(readout):
    """ValueError naming the fix unless `readout` is one of READOUTS (a name mistyped would read rates)."""
    if readout not in READOUTS:
        raise ValueError(f"readout {readout!r} is neither of {', '.join(READOUTS)}: use e.g. \"rate\"")


def simulate(input_current, layer_current, n_members, n_frames, batch, sizes=SIZES,
             lif=LIF(), xp=numpy, dtype=None, count_hidden=False, readout="rate"):
    """Run Eqs. (1)-(2) for n_members networks of `sizes` (inputs, the neurons of each layer) on one
    minibatch, a chunk of members at a time.

    input_current(t, start, stop) -> current s_t W1ᵀ + b1 into layer 1 of members start..stop-1 at
        frame t, shape (stop - start, batch, sizes[1]) or broadcastable to it;
    layer_current(layer, spikes, start, stop) -> currents o_t W_lᵀ + b_l into layer l >= 2 at every
        frame, (n_frames, stop - start, batch, sizes[l]), from those members' spikes o_t of layer
        l - 1, (n_frames, stop - start, batch, sizes[l - 1]). A layer only sees the spikes of the one
        before, so a chunk runs layer 1 through all frames first, then layer 2, and so on.
    Returns the output spike counts (n_members, batch, n_out) — with readout="potential" the output
    neurons' potentials V_t of Eq. (1), never spiking nor reset, summed over the frames — and, if
    count_hidden, the number of hidden spikes (every layer but the last) of each member over the
    batch and all frames (n_members,), else None.
    """
    check_readout(readout)
    dtype = dtype or xp.float32
    n_out = sizes[-1]
    counts = xp.zeros((n_members, batch, n_out), dtype=dtype)
    hidden_spikes = xp.zeros(n_members, dtype=xp.float64) if count_hidden else None
    chunk = members_per_chunk(n_members, batch, max(sizes[1:-1]), xp)
    for start in range(0, n_members, chunk):
        stop = min(start + chunk, n_members)
        v = xp.zeros((stop - start, batch, sizes[1]), dtype=dtype)
        spikes = xp.empty((n_frames,) + v.shape, dtype=dtype)
        for t in range(n_frames):
            lif_step(v, input_current(t, start, stop), lif, spikes[t])
        for layer in range(2, len(sizes)):
            if count_hidden:
                hidden_spikes[start:stop] += spikes.sum(axis=(0, 2, 3))
            currents = layer_current(layer, spikes, start, stop)
            v = xp.zeros((stop - start, batch, sizes[layer]), dtype=dtype)
            if layer == len(sizes) - 1 and readout == "potential":
                for t in range(n_frames):
                    v *= lif.beta
                    v += currents[t]
                    counts[start:stop] += v
            elif layer == len(sizes) - 1:
                out_spikes = xp.empty_like(v)
                for t in range(n_frames):
                    counts[start:stop] += lif_step(v, currents[t], lif, out_spikes)
            else:
                spikes = xp.empty((n_frames,) + v.shape, dtype=dtype)
                for t in range(n_frames):
                    lif_step(v, currents[t], lif, spikes[t])
    return counts, hidden_spikes


def forward(params, frames, lif=LIF(), n_members=1, count_hidden=False, network=None):
    """The unperturbed network on frames (T, N, n_in): (output spike counts (n_members, N, n_out), hidden
    spikes of each member (n_members,) if count_hidden, else None).
    `network`: the layers (None: fully connected, read off the weights' shapes).

    Every member has the same weights; n_members > 1 is plain batch inference of a population,
    the yardstick for what perturbations cost (on a GPU, for two dense layers read out by rate, one
    kernel: gpu.population_lif_network). Layer 1 sees the same frames at every member, so its current
    s_t W1ᵀ + b1 is one matrix product for all frames and members.
    """
    check_inputs(params, frames, network)
    check_frames_fit(params, frames)
    check_lif(lif)
    check_whole("n_members", n_members, 1, None, "1")
    if not isinstance(count_hidden, (bool, numpy.bool_)):  # a string such as "no" would be taken as true
        raise ValueError(f"count_hidden must be True or False, got {count_hidden!r}")
    n_out = params[f"W{n_layers(params)}"].shape[0]  # the output layer's rows, whatever its layers
    counts_bytes = n_members * frames.shape[1] * n_out * frames.dtype.itemsize
    refuse_beyond_ram(f"{n_members:,} members' output counts of {frames.shape[1]:,} samples", counts_bytes,
                      "before any spike", "ask fewer members (n_members)")
    return counts_of(params, frames, lif, n_members, count_hidden, network)


def counts_of(params, frames, lif, n_members, count_hidden, network):
    """`forward` of inputs already checked: for a caller that checked them once and runs many
    networks on them (vanilla ES, one member at a time)."""
    xp = array_module_of(frames)
    network = network_of(params, network)
    n_frames, batch, n_in = frames.shape
    sizes = network.sizes
    inputs = frames.reshape(n_frames * batch, n_in)
    hidden = layer_current(params, 1, inputs, network).reshape(n_frames, batch, sizes[1])
    if n_members > 1 and gpu.enabled(xp) and network.fused():  # every member and frame in one kernel
        counts, hidden_counts = gpu.population_lif_network(hidden, params["W2"], params["b2"], n_members, lif)
        return counts, (hidden_counts if count_hidden else None)
    return simulate(lambda t, start, stop: hidden[t],
                    lambda layer, spikes, start, stop: layer_current(params, layer, spikes, network),
                    n_members, n_frames, batch, sizes, lif, xp, frames.dtype, count_hidden, network.readout)


def log_softmax_of_rates(counts, n_frames, logit_scale=1.0):
    """Eq. (3): log softmax(logit_scale * counts / T) over the last (class) axis (counts: summed
    potentials with a potential readout, so their mean over the frames)."""
    largest = check_counts(counts, "(..., N, n_out)")
    check_whole("n_frames", n_frames, 1, 2 ** 31, "T, the frames the counts were summed over")
    n_frames = int(n_frames)  # a NumPy int64 would turn float32 rates into float64
    check_number("logit_scale", logit_scale, 1e-6, 1e6, "1.0")
    if not 2 * largest * logit_scale / n_frames < float(numpy.finfo(counts.dtype).max):  # logits and their spread
        raise ValueError(f"counts up to {largest:.3g} times logit_scale / T ({logit_scale:g} / {n_frames}) pass "
                         f"{counts.dtype}'s range in the softmax: lower logit_scale, or give counts a network makes")
    xp = array_module_of(counts)
    logits = counts * (logit_scale / n_frames)
    logits = logits - logits.max(axis=-1, keepdims=True)
    return logits - xp.log(xp.exp(logits).sum(axis=-1, keepdims=True))


def cross_entropy(counts, labels, n_frames, logit_scale=1.0):
    """Eq. (4): mean over the batch of -log y_hat[label], y_hat the softmax of Eq. (3), for every
    member; counts (..., N, n_out)."""
    log_y_hat = log_softmax_of_rates(counts, n_frames, logit_scale)  # (which checks its arguments)
    check_labels(labels, counts.shape[-2], counts.shape[-1], "the counts' samples")
    xp = array_module_of(counts)
    picked = xp.take_along_axis(log_y_hat, labels.reshape((1,) * (counts.ndim - 2) + (-1, 1)), axis=-1)
    return -picked[..., 0].mean(axis=-1)


def check_counts(counts, shape):
    """ValueError naming the fix unless counts are what forward returns, a finite float32 or float64
    array of `shape`, "(N, n_out)" or "(..., N, n_out)", of at least one sample and one class; the
    counts' largest magnitude."""
    if getattr(counts, "dtype", None) not in (numpy.float32, numpy.float64) or \
            isinstance(counts, ODD_ARRAYS) or \
            counts.ndim < 2 or shape == "(N, n_out)" and counts.ndim != 2 or 0 in counts.shape[-2:]:
        # (no member is taken: a process of a team may hold none)
        got = f"a {counts.dtype} array of shape {tuple(counts.shape)}" if type(counts) is numpy.ndarray else \
            f"{a_kind(counts)} of shape {tuple(counts.shape)}" if hasattr(counts, "shape") else a_kind(counts)
        raise ValueError(f"counts must be a float32 or float64 array {shape} of at least one sample and one class, "
                         f"got {got}: give what forward returns")
    largest = magnitude(counts)
    if not math.isfinite(largest):  # a NaN count would score NaN, unseen
        raise ValueError("counts hold NaN or inf, which no network's spikes make: give finite counts")
    return largest


def correct_per_class(counts, labels):
    """For each class, how many samples of that class the most-spiking output neuron classifies
    right (ties: lowest class); a NumPy array of length n_out. counts (N, n_out), labels (N,)."""
    check_counts(counts, "(N, n_out)")
    n_out = counts.shape[-1]
    check_labels(labels, counts.shape[0], n_out, "the counts' samples")
    hits = to_numpy(counts.argmax(axis=1) == labels)
    return numpy.bincount(to_numpy(labels)[hits], minlength=n_out)


# ---------------------------------------------------------------------------------------------
# The network as data: its layers, their shapes and parameters, and the checks of them

@dataclass(frozen=True)
class Dense:
    """A fully connected LIF layer of `width` neurons: each sees every input."""
    width: int

    def __str__(self):
        return str(self.width)


@dataclass(frozen=True)
class Conv:
    """A convolutional LIF layer: `channels` kernels of kernel × kernel pixels, slid over its input
    image `stride` pixels at a time, the image padded by `padding` zeros on every side. One neuron
    per kernel and position, ordered (row, column, channel)."""
    channels: int
    kernel: int
    stride: int = 1
    padding: int = 0

    def __str__(self):
        return (f"conv{self.channels}k{self.kernel}" + (f"s{self.stride}" if self.stride != 1 else "")
                + (f"p{self.padding}" if self.padding else ""))


def output_shape(spec, image):
    """The (channels, height, width) a layer `spec` makes of its input image (channels, height, width)."""
    if isinstance(spec, Dense):
        return spec.width, 1, 1
    _, height, width = image
    return (spec.channels, (height + 2 * spec.padding - spec.kernel) // spec.stride + 1,
            (width + 2 * spec.padding - spec.kernel) // spec.stride + 1)


READOUTS = ("rate", "potential")  # what the output layer gives the softmax of Eq. (3)
CONV = re.compile(r"conv(?P<channels>\d+)k(?P<kernel>\d+)(?:s(?P<stride>\d+))?(?:p(?P<padding>\d+))?", re.ASCII)
MAX_WIDTH = 65536  # neurons of a dense layer, kernels of a convolution
MAX_NEURONS = 2 ** 20  # neurons of a convolutional layer, its kernels times its positions


@dataclass(frozen=True)
class Network:
    """A spiking network as data: its input image (channels, height, width), its LIF layers,
    Dense or Conv, the last the output, and its readout: the output neurons' spike rate ("rate",
    the paper's) or mean membrane potential ("potential"). Convolutions come first, on the image.

    The frames are images in (channel, row, column) order (data.py bins them so); a convolution's
    spikes are in (row, column, channel) order, so that its currents need no transpose."""
    layers: tuple
    image: tuple = IMAGE
    readout: str = "rate"

    @classmethod
    def parse(cls, hidden, n_out=SIZES[-1], image=IMAGE, readout="rate"):
        """The network of a --hidden value, its layers comma-separated: a width (64) or a convolution
        conv<channels>k<kernel>[s<stride>][p<padding>] (conv8k5s2: 8 kernels of 5 × 5, stride 2, no
        padding); then n_out outputs.
        ValueError naming the fix for a layer that cannot be built."""
        if not isinstance(hidden, str):
            raise ValueError(f"hidden must be a string of layers, got {a_kind(hidden)}: use e.g. \"64\" or "
                             f"\"conv8k5s2,64\"")
        layers = []
        for part in hidden.split(","):
            digits = max(map(len, re.findall(r"[1-9][0-9]*", part)), default=0)
            if digits > len(str(MAX_NEURONS)):  # (Python's int() refuses past 4,300 digits, in its own words)
                raise ValueError(f"layer {part[:12]}... holds a number of {digits} digits, beyond any layer's size: "
                                 f"give 1..{MAX_WIDTH} neurons or kernels, e.g. 64 or conv8k5s2")
            conv = CONV.fullmatch(part)
            if part.isascii() and part.isdigit():  # not a superscript or another script's digits
                layers.append(Dense(int(part)))
            elif conv:
                layers.append(Conv(**{key: int(value) for key, value in conv.groupdict().items() if value}))
            elif part.strip() != part:
                raise ValueError(f"layer {part!r} holds spaces: write the layers without them, e.g. "
                                 f"{','.join(piece.strip() for piece in hidden.split(',')).strip(',') or 64}")
            else:
                raise ValueError(f"layer {part!r} is neither a width (64) nor a convolution "
                                 f"conv<channels>k<kernel>[s<stride>][p<padding>], its parts in that order "
                                 f"(conv8k5s2: 8 kernels of 5 x 5, stride 2; conv8k3s1p1: padding 1)")
        return cls(tuple(layers) + (Dense(n_out),), image, readout).checked()

    @classmethod
    def dense(cls, sizes):
        """The fully connected network of sizes (inputs, hidden..., outputs)."""
        return cls(tuple(Dense(size) for size in sizes[1:]), (sizes[0], 1, 1)).checked()

    def __str__(self):
        """The hidden layers as --hidden writes them: 64, 128,64, conv8k5s2,64."""
        return ",".join(str(layer) for layer in self.layers[:-1])

    def checked(self):
        """The network, or a ValueError naming the first layer that cannot be built, and the fix."""
        check_readout(self.readout)
        if not (isinstance(self.image, tuple) and len(self.image) == 3):
            raise ValueError(f"image must be (channels, height, width), got {self.image!r}: use e.g. (2, 34, 34)")
        for side in self.image:  # Python ints, whose products do not wrap as a NumPy int16's would
            check_whole("each side of the image", side, 1, None, "(2, 34, 34)")
            if not isinstance(side, int):
                raise ValueError(f"each side of the image must be a Python int, got {side!r}: give int(side)")
        if not (isinstance(self.layers, tuple) and len(self.layers) >= 2
                and all(isinstance(spec, (Dense, Conv)) for spec in self.layers) and isinstance(self.layers[-1], Dense)):
            raise ValueError(f"layers must be a tuple of Dense and Conv layers, at least one hidden, ending with the "
                             f"Dense output layer, got {self.layers!r}: make them with Network.parse(hidden)")
        for spec in self.layers:  # whole numbers (their ranges below), as Network.parse makes them
            for field_name in ("width",) if isinstance(spec, Dense) else ("channels", "kernel", "stride", "padding"):
                value = getattr(spec, field_name)  # a Python int, as for the image's sides
                if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                    raise ValueError(f"{type(spec).__name__}'s {field_name} must be a whole number >= 0 (a Python "
                                     f"int), got {value!r}: make the layers with Network.parse(hidden)")
        image = self.image
        for layer, spec in enumerate(self.layers, start=1):
            name = f"layer {layer} ({spec})"
            if isinstance(spec, Dense) and not 1 <= spec.width <= MAX_WIDTH:
                raise ValueError(f"{name} has {spec.width} neurons: give it 1..{MAX_WIDTH}, e.g. 64")
            if isinstance(spec, Conv):
                if not (1 <= spec.channels <= MAX_WIDTH and spec.kernel >= 1 and spec.stride >= 1):
                    raise ValueError(f"{name} needs 1..{MAX_WIDTH} kernels of at least 1 x 1 and a stride of at "
                                     f"least 1: use e.g. conv8k5s2")
                if layer > 1 and isinstance(self.layers[layer - 2], Dense):
                    raise ValueError(f"{name} follows a dense layer, which has no image: put the convolutions "
                                     f"first (e.g. conv8k5s2,64)")
                if spec.stride > spec.kernel:  # the inputs between two patches would reach no neuron
                    raise ValueError(f"{name} strides by {spec.stride}, more than its {spec.kernel} x {spec.kernel} "
                                     f"kernel, so the inputs between its patches would be read by no kernel: use a "
                                     f"stride of at most {spec.kernel}, e.g. conv{spec.channels}k{spec.kernel}"
                                     f"s{spec.kernel}")
                if spec.padding >= spec.kernel:
                    raise ValueError(f"{name} pads by {spec.padding}, not less than its {spec.kernel} x {spec.kernel} "
                                     f"kernel, so its edge neurons would see padding alone: use at most "
                                     f"p{spec.kernel - 1}, e.g. conv{spec.channels}k{spec.kernel}p{spec.kernel // 2}")
                fits = min(image[1:]) + 2 * spec.padding
                if spec.kernel > fits:
                    raise ValueError(f"{name}: a {spec.kernel} x {spec.kernel} kernel does not fit its {image[1]} x "
                                     f"{image[2]} input padded by {spec.padding}: use a kernel of at most {fits}, "
                                     f"or more padding")
            image = output_shape(spec, image)
            if math.prod(image) > MAX_NEURONS:  # a convolution's (a dense layer's are its width)
                raise ValueError(f"{name} has {math.prod(image):,} neurons ({spec.channels} kernels at "
                                 f"{image[1]} x {image[2]} positions), over {MAX_NEURONS:,}: use fewer kernels, "
                                 f"a larger stride or less padding, e.g. conv8k5s2")
        return self

    def shapes(self):
        """The input image and each layer's output, (channels, height, width); a dense layer's is (width, 1, 1)."""
        shapes = [self.image]
        for spec in self.layers:
            shapes.append(output_shape(spec, shapes[-1]))
        return shapes

    @property
    def sizes(self):
        """(inputs, the neurons of each layer): what `simulate` runs."""
        return tuple(channels * height * width for channels, height, width in self.shapes())

    def spec(self, layer):
        """The Dense or Conv of W{layer}, layer counted from 1 (ValueError naming the range otherwise)."""
        check_whole("layer", layer, 1, len(self.layers), f"1 for the first of its {len(self.layers)}, as in W1")
        return self.layers[layer - 1]

    def weight_shape(self, layer):
        """(fan_out, fan_in) of W{layer}: a convolution's is (channels, in_channels kernel²), one row per
        kernel."""
        spec, (channels, height, width) = self.spec(layer), self.shapes()[layer - 1]
        if isinstance(spec, Conv):
            return spec.channels, channels * spec.kernel ** 2
        return spec.width, channels * height * width

    def is_dense(self):
        return all(isinstance(spec, Dense) for spec in self.layers)

    def fused(self):
        """Whether the GPU's one-kernel forward of two dense layers and a rate readout runs it."""
        return len(self.layers) == 2 and self.is_dense() and self.readout == "rate"

    def positions(self, layer):
        """Where W{layer} is applied in each sample: out_h × out_w for a convolution, 1 for a dense layer
        (whose output shape is (width, 1, 1))."""
        self.spec(layer)
        _, height, width = self.shapes()[layer]
        return height * width

    def synapses(self, layer):
        """How many synapses of `layer` each of its inputs feeds, (n,): a dense layer's width; in a
        convolution, its kernels times the patches that read the input (fewer at the borders)."""
        fan_out, fan_in = self.weight_shape(layer)
        reads = self.fold(layer, numpy.ones((self.positions(layer), fan_in)))[0]  # 1 per input of a dense layer
        return fan_out * reads

    def unfold(self, layer, x):
        """What W{layer} multiplies in the layer's input x (..., N, n), one row per product: x itself
        for a dense layer; for a convolution every patch of every sample (im2col), (..., N positions,
        in_channels kernel²), positions in (row, column) order, a patch's entries in (dy, dx, channel)
        order."""
        spec = self.spec(layer)
        self.check_shape(layer, x, "x", self.sizes[layer - 1], 1, "the layer's input")
        if isinstance(spec, Dense):
            return x
        xp = array_module_of(x)
        images, (_, out_h, out_w) = self.images(layer, x), self.shapes()[layer]
        kernel, stride = spec.kernel, spec.stride
        shape = x.shape[:-2] + (x.shape[-2] * out_h * out_w, kernel * kernel * images.shape[1])
        if stride == kernel:  # the patches tile the image: each is a block of it, no gathering needed
            tiles = images[:, :, :kernel * out_h, :kernel * out_w].reshape(
                images.shape[:2] + (out_h, kernel, out_w, kernel))  # (sample, channel, row, dy, column, dx)
            return tiles.transpose(0, 2, 4, 3, 5, 1).reshape(shape)  # (sample, row, column, dy, dx, channel)
        # gathered as (dy, dx, channel, sample, row, column), each (dy, dx) one block, then reordered
        patches = xp.empty((kernel, kernel) + images.shape[1:2] + images.shape[:1] + (out_h, out_w), dtype=x.dtype)
        for dy in range(kernel):
            for dx in range(kernel):
                patches[dy, dx] = images[:, :, dy:dy + stride * out_h:stride,
                                         dx:dx + stride * out_w:stride].transpose(1, 0, 2, 3)
        patches = patches.transpose(3, 4, 5, 0, 1, 2)  # (sample, row, column, dy, dx, channel)
        return patches.reshape(shape)

    def check_shape(self, layer, array, name, width, rows, like):
        """ValueError naming the shape W{layer}'s unfold or fold takes unless `array` is (..., N rows,
        width) with N >= 1."""
        shape = tuple(getattr(array, "shape", ()))
        if len(shape) < 2 or shape[-1] != width or shape[-2] == 0 or shape[-2] % rows:
            samples = "N" if rows == 1 else f"N × {rows} positions"
            raise ValueError(f"{name} of layer {layer} must have shape (..., {samples}, {width}), {like}, got "
                             f"{shape if hasattr(array, 'shape') else a_kind(array)}")

    def images(self, layer, x):
        """The layer's input x (..., n) as padded images (samples, channels, height, width): layer 1
        reads the frames' (channel, row, column) order, a later convolution its predecessor's (row,
        column, channel)."""
        xp = array_module_of(x)
        channels, height, width = self.shapes()[layer - 1]
        images = x.reshape(-1, channels, height, width) if layer == 1 else \
            x.reshape(-1, height, width, channels).transpose(0, 3, 1, 2)
        pad = self.layers[layer - 1].padding
        return xp.pad(images, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else images

    def fold(self, layer, grad):
        """The adjoint of `unfold` (col2im): grad (..., N positions, in_channels kernel²) back onto the
        layer's input (..., N, n), each patch entry added to the input it was read from."""
        spec = self.spec(layer)
        self.check_shape(layer, grad, "grad", self.weight_shape(layer)[1], self.positions(layer),
                         "what unfold returns")
        if isinstance(spec, Dense):
            return grad
        xp = array_module_of(grad)
        (channels, height, width), (_, out_h, out_w) = self.shapes()[layer - 1:layer + 1]
        kernel, stride, pad = spec.kernel, spec.stride, spec.padding
        # (dy, dx, channel, sample, row, column)
        by_patch = grad.reshape(-1, out_h, out_w, kernel, kernel, channels).transpose(3, 4, 5, 0, 1, 2)
        images = xp.zeros((by_patch.shape[3], channels, height + 2 * pad, width + 2 * pad), dtype=grad.dtype)
        for dy in range(kernel):
            for dx in range(kernel):
                images[:, :, dy:dy + stride * out_h:stride,
                       dx:dx + stride * out_w:stride] += by_patch[dy, dx].transpose(1, 0, 2, 3)
        images = images[:, :, pad:pad + height, pad:pad + width]
        if layer > 1:
            images = images.transpose(0, 2, 3, 1)
        samples = grad.shape[-2] // (out_h * out_w)
        return images.reshape(grad.shape[:-2] + (samples, channels * height * width))


PAPER = Network.dense(SIZES)


def network_of(params, network=None):
    """`network`, or, if None, the fully connected network of params' weight shapes."""
    check_network(network)
    return network if network is not None else Network.dense(sizes_of(params))


def check_network(network):
    """ValueError naming the fix unless `network` is None (fully connected) or a Network."""
    if network is not None and not isinstance(network, Network):
        raise ValueError(f"network must be a snn.Network, got {type(network).__name__}: use Network.parse(hidden)")


def layer_current(params, layer, x, network):
    """x W_lᵀ + b_l of Eq. (1), layer l's input current from its input x (..., N, n): (..., N,
    neurons). A convolution applies W_l to every patch of x (`Network.unfold`), one product for all."""
    current = network.unfold(layer, x) @ params[f"W{layer}"].T + params[f"b{layer}"]
    return current.reshape(x.shape[:-1] + (-1,))


def init_network(seed, network, std=INIT_STD, xp=numpy, rule="paper"):
    """W_l (fan_out × fan_in) and b_l of every layer drawn i.i.d. from 𝒩(0, std^2), float32; under
    rule "fan-in" (INIT_RULES) the W_l of a layer l > 1 with n inputs from 𝒩(0, std^2 · 64 / n);
    under "pass-through" a hidden layer l > 1 passes its first inputs on (W_l = 2 [I 0], b_l = 0),
    its draws made and left unused, so that every other layer is the paper rule's."""
    if network is None:
        raise ValueError("network must be a snn.Network, got NoneType: use Network.parse(hidden)")
    check_network(network)
    network.checked()
    check_whole("seed", seed, 0, 2 ** 64 - 1, "e.g. 1")
    check_number("std", std, 0, 10, "0.3", open_low=True)
    check_array_module(xp)
    if rule not in INIT_RULES:
        raise ValueError(f"init rule {rule!r} is none of {', '.join(INIT_RULES)}: use e.g. \"paper\"")
    shapes = [network.weight_shape(layer) for layer in range(1, len(network.layers) + 1)]
    refuse_beyond_ram(f"the weights of {network.sizes[0]}-{str(network).replace(',', '-')}-{network.sizes[-1]}",
                      sum(4 * (m * n + m) for m, n in shapes) + 8 * max(m * n for m, n in shapes),
                      "as float32 beside the float64 draw of the largest", "give the network smaller layers")
    rng = numpy.random.default_rng(seed)
    params = {}
    for layer in range(1, len(network.layers) + 1):
        n_out, n_in = network.weight_shape(layer)
        scale = std * math.sqrt(FAN_IN_REFERENCE / n_in) if rule == "fan-in" and layer > 1 else std
        params[f"W{layer}"] = xp.asarray(rng.normal(0.0, scale, (n_out, n_in)), dtype=xp.float32)
        params[f"b{layer}"] = xp.asarray(rng.normal(0.0, std, n_out), dtype=xp.float32)
        if rule == "pass-through" and 1 < layer < len(network.layers):
            params[f"W{layer}"] = xp.asarray(PASS_THROUGH_WEIGHT * numpy.eye(n_out, n_in), dtype=xp.float32)
            params[f"b{layer}"] = xp.zeros(n_out, dtype=xp.float32)
    return params


def init_params(seed, sizes=SIZES, std=INIT_STD, xp=numpy):
    """init_network of the fully connected network of sizes (inputs, hidden..., outputs)."""
    return init_network(seed, Network.dense(sizes), std, xp)


def n_layers(params):
    """How many LIF layers a network's parameters {W1, b1, W2, b2, ...} hold."""
    return sum(1 for name in params if isinstance(name, str) and name.startswith("W"))


def layer_of(name):
    """l of parameter W{l} or b{l}."""
    return int(name[1:])


def sizes_of(params):
    """(inputs, hidden..., outputs) of a fully connected network's parameters."""
    return (params["W1"].shape[1],) + tuple(params[f"W{layer}"].shape[0] for layer in range(1, n_layers(params) + 1))


def check_params(params, network=None):
    """ValueError naming the fix unless params are W1, b1, W2, b2, ... (two layers at least), float32 or
    float64 arrays, finite, of the shapes of `network` (None: of a fully connected network, each layer
    fitting the one before)."""
    check_network(network)
    if network is not None:
        network.checked()  # made by hand, or changed by dataclasses.replace: Network.parse checks its own
    check_names(params, network)
    layers = n_layers(params)
    for name, value in sorted(params.items()):  # Adam would cast an integer update back to whole units
        if getattr(value, "dtype", None) not in (numpy.float32, numpy.float64):
            kind = value.dtype if hasattr(value, "dtype") else f"{a_kind(value)}, not an array"
            raise ValueError(f"{name} is {kind}: a spiking network's parameters are float32 or float64 arrays; give "
                             f"them as .astype(numpy.float32), or make them with snn.init_network(seed, network)")
        if not bool(array_module_of(value).isfinite(value).all()):  # a NaN potential never spikes: silent counts
            raise ValueError(f"{name} holds NaN or inf, which no update makes: give finite parameters, as "
                             f"snn.init_network(seed, network) makes them")
    dtypes = sorted({str(value.dtype) for value in params.values()})
    if len(dtypes) > 1:  # the products would run in one type and the states in another, unsaid
        raise ValueError(f"the parameters mix {' and '.join(dtypes)}: give them all one float type, e.g. "
                         f"{{name: value.astype(numpy.float32) for name, value in params.items()}}")
    read_off_shapes, network = network is None, network_of(params, network)
    for layer in range(1, layers + 1):
        w, b = params[f"W{layer}"], params[f"b{layer}"]
        if w.ndim != 2 or tuple(w.shape) != network.weight_shape(layer) or b.shape != (w.shape[0],):
            if w.ndim == 2 and w.shape[0] != w.shape[1] and b.shape == (w.shape[1],):  # in × out, its bias out
                raise ValueError(f"W{layer} {tuple(w.shape)} looks transposed: a weight is (outputs, inputs), as its "
                                 f"bias b{layer} {tuple(b.shape)} counts the outputs; give W{layer}.T")
            fix = ("; if they are a convolutional network's, pass its layers, network=snn.Network.parse(...)"
                   if read_off_shapes else "")
            wanted, source = network.weight_shape(layer), \
                "a dense network read off the weights' shapes" if read_off_shapes else "the network given"
            raise ValueError(f"W{layer} {tuple(w.shape)} and b{layer} {tuple(b.shape)} do not fit the layer "
                             f"before: {source} wants W{layer} {wanted} and b{layer} ({wanted[0]},) there; make them "
                             f"with snn.init_network(seed, network){fix}")


def check_names(params, network=None):
    """ValueError naming the fix unless params is a dict named W1, b1, W2, b2, ..., one weight and bias
    per layer of `network` (None: of at least 2 layers)."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of W1, b1, W2, b2, ..., got {a_kind(params)}: make them with "
                         f"snn.init_network(seed, network)")
    layers = n_layers(params)
    expected = {f"{kind}{layer}" for layer in range(1, layers + 1) for kind in "Wb"}
    if layers < 2 or set(params) != expected or (network is not None and layers != len(network.layers)):
        wanted = f"{len(network.layers)} layers" if network is not None else "at least 2 layers"
        raise ValueError(f"a spiking network's parameters are W1, b1, W2, b2, ..., one weight and bias per layer, "
                         f"{wanted}, got "
                         f"{', '.join(sorted(map(str, params)))}: make them with snn.init_network(seed, network)")


def check_inputs(params, frames, network=None):
    """ValueError unless params are a network (check_params) and frames is a float32 or float64 array
    (T, N, n_in) for its input, T and N at least 1. (Finite frames: check_frames_fit, where a NaN
    would pass unseen.)"""
    check_params(params, network)
    sizes = network_of(params, network).sizes
    if not hasattr(frames, "shape"):
        raise ValueError(f"frames must be an array, got {type(frames).__name__}: give numpy.asarray(frames)")
    if frames.ndim != 3 or frames.shape[2] != sizes[0]:
        raise ValueError(f"frames must have shape (T, N, {sizes[0]}), got {tuple(frames.shape)}: "
                         f"bin events into T frames of {sizes[0]} inputs")
    if 0 in frames.shape:
        raise ValueError(f"frames of shape {tuple(frames.shape)} hold no frame or no sample: give at least one of each")
    if frames.dtype not in (numpy.float32, numpy.float64):
        swapped = " (floats in the other byte order)" if frames.dtype.kind == "f" and frames.dtype.itemsize >= 4 else ""
        raise ValueError(f"frames are {frames.dtype}{swapped}: give them as floats, frames.astype(numpy.float32) (0 "
                         f"and 1 for events)")


def check_frames(params, frames, labels, network=None):
    """check_inputs, and a ValueError unless labels is an integer array (N,) of class indices
    0..n_out - 1, one per sample of the frames."""
    check_inputs(params, frames, network)
    if hasattr(labels, "shape") and labels.shape == frames.shape[:1] != frames.shape[1:2]:  # (N, T, n_in) frames?
        raise ValueError(f"labels must have shape ({frames.shape[1]},) to match the batch of frames, got "
                         f"{tuple(labels.shape)}, the length of the frames' first axis: frames are (T, N, n_in), time "
                         f"first; if yours are (N, T, n_in), give frames.transpose(1, 0, 2)")
    check_labels(labels, frames.shape[1], network_of(params, network).sizes[-1], "the batch of frames")


def minibatch_summary(frames, labels):
    """What the processes of a team compare of their minibatch, so that none scores its members on
    another: the frames' shape, a digest of each sample's input count in each frame (one pass over
    the frames, where a digest of every frame would hash them all) and the labels' digest."""
    return {"frames": [list(frames.shape), digest_of({"counts": frames.sum(axis=2)})[:16]],
            "labels": digest_of({"labels": labels})[:16]}


def check_labels(labels, n_samples, n_out, batch):
    """ValueError unless labels is an integer array (n_samples,) of class indices 0..n_out - 1 (a
    label of -1 would index the last class unseen). `batch` names what gives n_samples."""
    if not hasattr(labels, "shape") or isinstance(labels, ODD_ARRAYS):  # a masked label would still be scored
        raise ValueError(f"labels must be an array, got {a_kind(labels)}: give numpy.asarray(labels)")
    if labels.shape != (n_samples,):
        raise ValueError(f"labels must have shape ({n_samples},) to match {batch}, got {tuple(labels.shape)}")
    if labels.dtype.kind not in "iu" or not bool(((labels >= 0) & (labels < n_out)).all()):
        raise ValueError(f"labels must be integers in 0..{n_out - 1}, the classes of the {n_out} outputs, got "
                         f"{labels.dtype} labels" + ("" if labels.dtype.kind not in "iu" else
                                                    f" from {int(labels.min())} to {int(labels.max())}"))


