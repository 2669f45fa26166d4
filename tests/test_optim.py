"""Adam of optim.py: its first step by hand, decoupled weight decay, and the schedule."""
import numpy as np

import optim


def test_first_adam_step_moves_each_parameter_by_lr_in_the_direction_of_its_gradient():
    """At t = 1 the bias-corrected moments are g and g^2, so the step is lr g / (|g| + eps):
    lr sign(g) up to eps / |g| (1e-8 / 0.5 here, far below the 1e-6 relative tolerance), and
    exactly 0 where g = 0. Moments are stored uncorrected: m = 0.1 g, v = 0.001 g^2."""
    params = {"W": np.array([[1.0, -2.0, 0.5]], np.float32), "b": np.zeros(2, np.float32)}
    grads = {"W": np.array([[0.5, -3.0, 0.0]], np.float32), "b": np.array([2.0, -0.7], np.float32)}
    new, state = optim.ascend(params, grads, optim.init(params), optim.Adam(lr=0.1))
    np.testing.assert_allclose(new["W"], [[1.1, -2.1, 0.5]], rtol=1e-6)
    np.testing.assert_allclose(new["b"], [0.1, -0.1], rtol=1e-6)
    np.testing.assert_allclose(state["m"]["W"], 0.1 * grads["W"], rtol=1e-6)
    np.testing.assert_allclose(state["v"]["b"], 0.001 * grads["b"] ** 2, rtol=1e-6)
    assert state["t"] == 1 and new["W"].dtype == np.float32


def test_weight_decay_shrinks_by_lr_times_decay_times_theta_and_nothing_else():
    """With a zero gradient Adam's step is 0, so only the decoupled decay acts:
    theta <- theta - lr wd theta, exactly as AdamW (relative tolerance of float32 rounding)."""
    params = {"W": np.array([2.0, -4.0], np.float32)}
    new, _ = optim.ascend(params, {"W": np.zeros(2, np.float32)}, optim.init(params),
                          optim.Adam(lr=0.1, weight_decay=0.5))
    np.testing.assert_allclose(new["W"], params["W"] * (1 - 0.1 * 0.5), rtol=1e-6)


def test_cosine_learning_rate_falls_from_lr_to_zero():
    rates = [optim.scheduled_lr(0.03, "cosine", step, 100) for step in range(101)]
    assert rates[0] == 0.03 and abs(rates[50] - 0.015) < 1e-12 and rates[100] == 0.0
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    assert optim.scheduled_lr(0.03, "constant", 70, 100) == 0.03
