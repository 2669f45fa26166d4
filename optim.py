"""The optimiser all three methods share: Adam (Kingma & Ba, 2015), ascending, Eq. (9):
theta += lr avg(g) / (sqrt(avg(g^2)) + eps) per entry, avg(g) and avg(g^2) its first and second
moments (running means over Adam's updates, bias-corrected), eps its constant 10^-8. Its state keeps
the moments under Kingma & Ba's "m" and "v", not a matrix's rows m or a potential V, and the count
of updates so far, Q in the docs, under their "t", not a frame t.

The ES methods hand it their step g and climb it (g estimates the smoothed fitness's gradient when
formed from raw fitness differences, not from centred ranks as in training: docs/derivation-further.md,
section 1); BPTT hands it the negative of its surrogate gradient of the loss. With weight_decay > 0
every parameter also shrinks by lr * weight_decay * theta, the decoupled form of AdamW (Loshchilov
& Hutter, 2019). Its settings beta1 and beta2, the averaging factors (0.9, 0.999) of the two
moments, keep Kingma & Ba's names: they are not the LIF neuron's leak β.
"""
import math
from dataclasses import dataclass

import numpy

from backend import array_module_of
import gpu
from interface_checks import (ODD_ARRAYS, SMALLEST_FLOAT32, FloatOverflow, a_kind, check_number, check_rates,
                              check_whole, magnitude)

SCHEDULES = ("constant", "cosine")


@dataclass(frozen=True)
class Adam:
    """Adam's settings; lr is the learning rate of the current update (see `scheduled_lr`)."""
    lr: float
    weight_decay: float = 0.0
    beta1: float = 0.9      # the averaging factors of the first and second moments, Eq. (9)'s 0.9 and 0.999
    beta2: float = 0.999
    eps: float = 1e-8       # Adam's constant, Eq. (9)'s 10^-8 added to the root (not the noise)


def check(adam):
    """ValueError naming the fix unless adam's settings make a step: lr and weight_decay as an
    Eggroll's (interface_checks.check_rates), beta1 and beta2 in [0, 1) and eps > 0."""
    if not isinstance(adam, Adam):
        raise ValueError(f"adam must be an optim.Adam, got {type(adam).__name__}: give e.g. optim.Adam(0.01)")
    check_rates(adam.lr, adam.weight_decay)
    for name, value, example in (("beta1", adam.beta1, "0.9"), ("beta2", adam.beta2, "0.999")):
        check_number(name, value, 0, 1, example, open_high=True)  # 1 would divide by 1 - 1^Q = 0 in Eq. (9)
    # below float32's smallest normal number eps is 0 in a float32 step: a zero g would make 0 / 0
    check_number("eps", adam.eps, SMALLEST_FLOAT32, 1, "1e-8")


def averages_of(adam):
    """Adam's averaging settings: the coefficients of its two moments and its constant eps."""
    return adam.beta1, adam.beta2, adam.eps


def init(params):
    """Adam's state: first and second moments at zero, update count Q = 0."""
    if not isinstance(params, dict):
        raise ValueError(f"params must be a dict of named arrays, got {a_kind(params)}: give e.g. "
                         f"{{'W1': numpy.zeros((64, 2312), numpy.float32)}}")
    check_float_arrays(params)
    return {"m": {name: value * 0 for name, value in params.items()},
            "v": {name: value * 0 for name, value in params.items()}, "t": 0}


def check_adam_state(state):
    """ValueError naming the fix unless `state` holds Adam's m, v and t (their values: check_state)."""
    if not (isinstance(state, dict) and "t" in state and all(isinstance(state.get(moment), dict) for moment in "mv")):
        raise ValueError("state is not Adam's state (m, v and t): give optim.init(params), or the state the last "
                         "update returned")


def names(named):
    """The keys of a dict as a message lists them, sorted as text (keys of mixed types do not sort)."""
    return ", ".join(sorted(map(str, named)))


def is_float_array(value, widest):
    """Whether value is an array of float32 or float64 no wider than dtype `widest`, and not a
    numpy.matrix (whose ** is a matrix power, not Adam's square per entry). A float16 g would be
    squared in float16, where g^2 underflows to 0 below 2.4e-4 and overflows above 256."""
    return getattr(value, "dtype", None) in (numpy.float32, numpy.float64) and hasattr(value, "shape") and \
        numpy.result_type(value.dtype, widest) == widest and not isinstance(value, ODD_ARRAYS)


def check_float_arrays(params):
    """ValueError naming the fix unless every parameter is a finite array of float32 or float64 (an
    integer array would drop the step, float16 overflow Adam's average of g^2 at a g of 256, and a NaN
    or inf parameter make its update NaN)."""
    for name, value in params.items():
        if getattr(value, "dtype", None) not in (numpy.float32, numpy.float64) or isinstance(value, ODD_ARRAYS):
            kind = f"{a_kind(value)}, not an array" if not hasattr(value, "dtype") else \
                f"{a_kind(value)} of {value.dtype}" if isinstance(value, ODD_ARRAYS) else value.dtype
            raise ValueError(f"parameter {name!r} is {kind}: Adam steps arrays of float32 or float64; give it as "
                             f"one, e.g. numpy.asarray({name}, numpy.float32)")
        if not bool(array_module_of(value).isfinite(value).all()):
            raise ValueError(f"parameter {name!r} holds NaN or inf, which every update would keep: give finite "
                             f"parameters")


def check_state(params, grads, state):
    """ValueError naming the fix unless the parameters are arrays of floats, grads hold a finite step
    of each one's shape (its type, or a narrower float), and state is Adam's state of them (init's,
    or the last update's): moments of each parameter's shape, finite, the average of g^2 >= 0, and a
    whole update count Q >= 0. A damaged state would step to NaN unseen."""
    for name, named in (("params", params), ("grads", grads)):
        if not isinstance(named, dict):
            raise ValueError(f"{name} must be a dict of named arrays, got {a_kind(named)}: give e.g. "
                             f"{{'W1': numpy.zeros((64, 2312), numpy.float32)}}")
    if set(grads) != set(params):
        raise ValueError(f"grads name {names(grads)} but the parameters are {names(params)}: give one step per "
                         f"parameter")
    check_adam_state(state)
    # (beyond int64's range beta ** t overflows the float it is taken as)
    check_whole("Adam's update count t", state["t"], 0, 2 ** 63 - 1, "the count optim.init starts at 0")
    check_float_arrays(params)
    for name, value in params.items():
        step = grads[name]  # of floats no wider than the parameter's, which Adam's moments keep
        if not (is_float_array(step, value.dtype) and step.shape == value.shape):
            got = a_kind(step) if not (hasattr(step, "dtype") and hasattr(step, "shape")) else \
                f"{a_kind(step)} of {step.dtype} and shape {tuple(step.shape)}" if isinstance(step, ODD_ARRAYS) else \
                f"a {step.dtype} array of shape {tuple(step.shape)}"
            raise ValueError(f"the step of parameter {name!r} must be an array of its shape {tuple(value.shape)}, of "
                             f"float32 or float64 no wider than its {value.dtype}, got {got}: give one step per "
                             f"parameter")
        if not bool(array_module_of(step).isfinite(step).all()):
            raise ValueError(f"the step of parameter {name!r} holds NaN or inf, which would make the parameter NaN: "
                             f"give a finite step")
        largest = magnitude(step)
        if not largest < math.sqrt(float(numpy.finfo(value.dtype).max)):
            raise FloatOverflow(f"the step of parameter {name!r} reaches {largest:.3g}, whose square passes "
                                f"{value.dtype}'s range: Adam's average of g^2 would be inf and stop the parameter; "
                                f"scale the step down")
        for moment, what in (("m", "average of g"), ("v", "average of g^2")):
            values = state[moment].get(name)
            if not (is_float_array(values, value.dtype) and values.shape == value.shape):
                raise ValueError(f"Adam's state holds no {what} of parameter {name!r} as floats of its shape "
                                 f"{tuple(value.shape)}: give optim.init(params) for these parameters, or the state "
                                 f"the last update returned")
            xp = array_module_of(values)
            if not bool(xp.isfinite(values).all()) or moment == "v" and bool((values < 0).any()):
                raise ValueError(f"Adam's {what} of parameter {name!r} holds NaN, inf or (g^2's) a negative value, "
                                 f"which no update makes: the state was damaged; give an undamaged one, or "
                                 f"optim.init(params) (Adam from zero)")


def ascend(params, grads, state, adam):
    """One Adam update up g for every parameter, with the settings `adam` (one Adam for all, or
    {name: Adam}); new params and state (the old ones are left as they were)."""
    check_state(params, grads, state)
    adams = adam if isinstance(adam, dict) else dict.fromkeys(params, adam)
    if set(adams) != set(params):
        raise ValueError(f"adam names {names(adams)} but the parameters are {names(params)}: give one optim.Adam per "
                         f"parameter, or one for all")
    for settings in adams.values():  # a NaN, infinite or negative lr, or a beta of 1, would step to NaN or downhill
        check(settings)
    t = int(state["t"]) + 1  # a Python int: a NumPy int32 count (from an .npz) would wrap
    new_params, m, v = {}, {}, {}
    for name, value in params.items():
        adam_on = gpu.adam_update if gpu.enabled(array_module_of(value)) else adam_update  # the device's, or NumPy's
        new_params[name], m[name], v[name] = adam_on(value, grads[name], state["m"][name], state["v"][name], t,
                                                     adams[name])
    return new_params, {"m": m, "v": v, "t": t}


def adam_update(value, grad, m, v, t, adam):
    """Adam's update number Q (the argument t) for one parameter, Eq. (9): the first and second
    moments (the code's m and v), avg(g) and avg(g^2), move towards grad and grad^2,
    theta += lr avg(g) / (sqrt(avg(g^2)) + eps), both corrected for their start at zero, then the
    decoupled decay. Returns the new theta, m and v."""
    m = adam.beta1 * m + (1 - adam.beta1) * grad
    v = adam.beta2 * v + (1 - adam.beta2) * grad ** 2
    move = (m / (1 - adam.beta1 ** t)) / ((v / (1 - adam.beta2 ** t)) ** 0.5 + adam.eps)
    return (value + adam.lr * move - adam.lr * adam.weight_decay * value).astype(value.dtype), m, v


def scheduled_lr(lr, schedule, index, count):
    """The learning rate of the update numbered `index` (from 0) of a run's `count`: constant, or
    cosine, lr (1 + cos(pi index / count)) / 2, falling to 0 at the end."""
    check_rates(lr, 0.0)
    check_whole("count", count, 1, None, "the run's number of updates")
    check_whole("index", index, 0, count, "the update's number, from 0")  # past count, cosine would climb again
    if schedule not in SCHEDULES:  # a name mistyped would train at the constant rate unseen
        raise ValueError(f"unknown learning-rate schedule {schedule!r}: use one of {', '.join(SCHEDULES)}")
    if schedule == "cosine":
        return lr * (1 + math.cos(math.pi * index / count)) / 2
    return lr
