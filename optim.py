"""The optimiser all three methods share: Adam (Kingma & Ba, 2015), ascending, Eq. (9).

The ES methods hand it their gradient estimate g of the fitness and climb; BPTT hands it -g of
the loss. With weight_decay > 0 every parameter also shrinks by lr * weight_decay * theta, the
decoupled form of AdamW (Loshchilov & Hutter, 2019).
"""
import math
from dataclasses import dataclass

SCHEDULES = ("constant", "cosine")


@dataclass(frozen=True)
class Adam:
    """Adam's settings; lr is the rate of the current step (see `scheduled_lr`)."""
    lr: float
    weight_decay: float = 0.0
    b1: float = 0.9      # Kingma & Ba's constants
    b2: float = 0.999
    eps: float = 1e-8


def init(params):
    """Adam's state: first and second moments at zero, step count 0."""
    return {"m": {k: v * 0 for k, v in params.items()}, "v": {k: v * 0 for k, v in params.items()}, "t": 0}


def ascend(params, grads, state, adam):
    """One Adam step up the gradient: theta += lr m_hat / (sqrt(v_hat) + eps); new params and state."""
    t = state["t"] + 1
    b1, b2 = adam.b1, adam.b2
    new_params, m, v = {}, {}, {}
    for name, value in params.items():
        m[name] = b1 * state["m"][name] + (1 - b1) * grads[name]
        v[name] = b2 * state["v"][name] + (1 - b2) * grads[name] ** 2
        step = (m[name] / (1 - b1 ** t)) / ((v[name] / (1 - b2 ** t)) ** 0.5 + adam.eps)
        new_params[name] = (value + adam.lr * step - adam.lr * adam.weight_decay * value).astype(value.dtype)
    return new_params, {"m": m, "v": v, "t": t}


def scheduled_lr(lr, schedule, step, total_steps):
    """The learning rate of update `step` (0-based) of `total_steps`: constant, or cosine,
    lr (1 + cos(pi step / total_steps)) / 2, falling to 0 at the end."""
    if schedule == "cosine":
        return lr * (1 + math.cos(math.pi * step / total_steps)) / 2
    return lr
