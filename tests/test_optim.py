"""Adam of optim.py: its first step by hand, decoupled weight decay, and the schedule."""
import numpy as np
import pytest

import gpu
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
    assert optim.scheduled_lr(5.0, "constant", 0, 100) == 5.0  # a learning rate above 1 too (lr x decay < 1)
    with pytest.raises(ValueError) as refused:  # a mistyped name, not the constant rate unseen
        optim.scheduled_lr(0.03, "cosin", 70, 100)
    assert str(refused.value) == "unknown learning-rate schedule 'cosin': use one of constant, cosine"


def test_eps_damps_the_first_step_of_a_gradient_as_small_as_itself():
    """At t = 1 the step is lr g / (|g| + eps): for g = 3 eps it is 3/4 of lr, for g = -eps half of
    lr down. Float64, relative tolerance 1e-9 (the bias corrections round in the last bits)."""
    params = {"W": np.zeros(2)}
    new, _ = optim.ascend(params, {"W": np.array([3e-8, -1e-8])}, optim.init(params), optim.Adam(lr=0.1))
    np.testing.assert_allclose(new["W"], [0.075, -0.05], rtol=1e-9)


def test_ascend_takes_one_adam_per_parameter_or_one_for_all():
    """adam {name: Adam}: each parameter steps as one Adam of its settings alone would step it; a dict
    that names other parameters is refused in one line, the parameters left as they were."""
    params = {"W": np.array([1.0, -2.0]), "b": np.array([0.5])}
    grads = {"W": np.array([0.3, -0.1]), "b": np.array([2.0])}
    new, _ = optim.ascend(params, grads, optim.init(params), {"W": optim.Adam(0.1), "b": optim.Adam(0.01, 0.5)})
    for name, adam in (("W", optim.Adam(0.1)), ("b", optim.Adam(0.01, 0.5))):
        alone, _ = optim.ascend(params, grads, optim.init(params), adam)
        assert np.array_equal(new[name], alone[name]), name
    assert not np.array_equal(new["b"], optim.ascend(params, grads, optim.init(params), optim.Adam(0.1))[0]["b"])
    with pytest.raises(ValueError, match=r"^adam names W, c but the parameters are W, b: give one optim.Adam per "
                                         r"parameter, or one for all$"):
        optim.ascend(params, grads, optim.init(params), {"W": optim.Adam(0.1), "c": optim.Adam(0.1)})
    assert params["W"].tolist() == [1.0, -2.0]



@pytest.mark.parametrize("adam, said", [
    (optim.Adam(float("nan")), "lr must be a finite int or float >= 0, got nan: use e.g. 0.01"),
    (optim.Adam(float("inf")), "lr must be a finite int or float >= 0, got inf: use e.g. 0.01"),
    (optim.Adam(-0.1), "lr must be a finite int or float >= 0, got -0.1: use e.g. 0.01"),
    (optim.Adam(0.1, weight_decay=-5), "weight_decay must be a finite int or float >= 0, got -5: use e.g. 0.0"),
    (optim.Adam(0.1, beta1=1.0), "beta1 must be an int or float in [0, 1), got 1.0: use e.g. 0.9"),
    (optim.Adam(0.1, beta2=1.0), "beta2 must be an int or float in [0, 1), got 1.0: use e.g. 0.999"),
    (optim.Adam("0.1"), "lr must be a finite int or float >= 0, got '0.1'"),
    ({"W": optim.Adam(0.1), "b": "x"}, "adam must be an optim.Adam, got str: give e.g. optim.Adam(0.01)"),
    (optim.Adam(0.1, eps=1e-300), "eps must be an int or float in [1.17549e-38, 1], got 1e-300")])
def test_ascend_refuses_settings_that_would_step_to_nan_or_downhill(adam, said):
    """ascend checks Adam's settings as a generation does (optim.check): a NaN or infinite lr, or a beta
    of 1, would make every parameter NaN, a negative lr would step down g; one line, nothing changed."""
    params = {"W": np.array([1.0, -2.0]), "b": np.array([0.5])}
    grads = {"W": np.array([0.3, -0.1]), "b": np.array([2.0])}
    state = optim.init(params)
    with pytest.raises(ValueError) as refused:
        optim.ascend(params, grads, state, adam)
    assert str(refused.value).startswith(said) and "\n" not in str(refused.value), str(refused.value)
    assert params["W"].tolist() == [1.0, -2.0] and state["t"] == 0

def test_ascend_on_a_gpu_takes_the_one_launch_update(monkeypatch):
    """Where arrays take gpu.py's kernels, every parameter's step is gpu.adam_update (here a
    recording stand-in running the NumPy update; tests/test_gpu.py holds the kernel to it), with
    the parameter, its gradient, moments, step count and settings."""
    calls = []

    def recording_update(value, grad, m, v, t, adam):
        calls.append((value, grad, t, adam))
        return optim.adam_update(value, grad, m, v, t, adam)

    params = {"W": np.array([1.0, -2.0]), "b": np.array([0.5])}
    grads = {"W": np.array([0.5, -3.0]), "b": np.array([2.0])}
    adam = optim.Adam(lr=0.1)
    expected, _ = optim.ascend(params, grads, optim.init(params), adam)
    monkeypatch.setattr(gpu, "enabled", lambda xp: True)
    monkeypatch.setattr(gpu, "adam_update", recording_update)
    new, state = optim.ascend(params, grads, optim.init(params), adam)
    passed = [(c[0] is params[n], c[1] is grads[n], c[2], c[3]) for c, n in zip(calls, params)]
    assert passed == [(True, True, 1, adam)] * len(params)
    assert all(np.array_equal(new[n], expected[n]) for n in params) and state["t"] == 1


@pytest.mark.parametrize("params, said", [([1, 2], "params must be a dict of named arrays, got a list"),
                                          (None, "params must be a dict of named arrays, got a NoneType"),
                                          ({"w": [1.0]}, "parameter 'w' is a list, not an array: Adam steps arrays"),
                                          ({"w": np.ones(2, int)}, "parameter 'w' is int64: Adam steps arrays")])
def test_adams_state_is_made_of_named_float_arrays_only(params, said):
    """optim.init of a list failed inside ("no attribute 'items'"); of a dict of lists it made moments
    of []: each is one ValueError naming what to give, as a step of such parameters is."""
    with pytest.raises(ValueError) as refused:
        optim.init(params)
    assert str(refused.value).startswith(said)



def test_adam_refuses_parameters_and_steps_that_would_turn_its_state_nan_or_inf():
    """A NaN or inf parameter (every update keeps it), float16 (whose g^2 overflows at a g of 256) and
    a step whose square passes the parameter's float range (Adam's average of g^2 would be inf, and the
    next update call the state damaged): one line each, nothing changed; just inside the range it steps."""
    for params, said in (({"W": np.array([np.nan, 1.0], np.float32)}, "parameter 'W' holds NaN or inf"),
                         ({"W": np.array([np.inf, 1.0])}, "parameter 'W' holds NaN or inf"),
                         ({"W": np.ones(2, np.float16)}, "parameter 'W' is float16: Adam steps arrays of float32 or "
                                                         "float64")):
        with pytest.raises(ValueError, match=f"^{said}"):
            optim.init(params)
    params = {"W": np.ones(2, np.float32)}
    state = optim.init(params)
    with pytest.raises(ValueError, match="^parameter 'W' holds NaN or inf"):
        optim.ascend({"W": np.array([np.nan, 1.0], np.float32)}, {"W": np.ones(2, np.float32)}, state, optim.Adam(0.1))
    with pytest.raises(optim.FloatOverflow, match=r"^the step of parameter 'W' reaches 2e\+19, whose square passes "
                                                  r"float32's range: Adam's average of g\^2 would be inf"):
        optim.ascend(params, {"W": np.full(2, 2e19, np.float32)}, state, optim.Adam(0.1))  # past sqrt(3.4e38)
    stepped, after = optim.ascend(params, {"W": np.full(2, 1e19, np.float32)}, state, optim.Adam(0.1))
    assert np.isfinite(after["v"]["W"]).all() and params["W"].tolist() == [1.0, 1.0] and state["t"] == 0

def with_moment(moment, value):
    """optim.init's state of a 3 x 2 parameter with one moment replaced by `value`."""
    state = optim.init({"W": np.ones((3, 2), np.float32)})
    return {**state, moment: {"W": value}}


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("params, grads, state, said", [
    ([np.ones((3, 2), np.float32)], None, None, "params must be a dict of named arrays, got a list"),  # unhashable
    (None, {"W": np.ones((3, 2), np.float32), 1: np.ones(2)}, None,  # keys that do not sort together
     "grads name 1, W but the parameters are W: give one step per parameter"),
    (None, None, {**optim.init({"W": np.ones((3, 2), np.float32)}), "t": 10 ** 400},  # beta ** t: no float
     "Adam's update count t must be a whole number in 0..9223372036854775807, got an int of about 401 digits"),
    (None, None, with_moment("m", np.zeros((3, 2), complex)),  # whose imaginary part Adam would drop
     "Adam's state holds no average of g of parameter 'W' as floats of its shape (3, 2)"),
    (None, None, with_moment("v", np.zeros((3, 2), object)),
     "Adam's state holds no average of g^2 of parameter 'W' as floats of its shape (3, 2)"),
    ({"W": np.asmatrix(np.ones((3, 2), np.float32))}, None, None,  # whose ** is a matrix power
     "parameter 'W' is a numpy.matrix of float32: Adam steps arrays of float32 or float64"),
    (None, {"W": np.asmatrix(np.ones((3, 2), np.float32))}, None,
     "the step of parameter 'W' must be an array of its shape (3, 2), of float32 or "
     "float64 no wider than its float32, got a numpy.matrix of float32 and shape (3, 2)"),
    (None, {"W": np.ma.masked_array(np.ones((3, 2), np.float32), mask=np.eye(3, 2))}, None,  # a NaN may hide
     "the step of parameter 'W' must be an array of its shape (3, 2), of float32 or float64 no wider than its "
     "float32, got a numpy.ma.MaskedArray of float32 and shape (3, 2)"),
    (None, {"W": np.full((3, 2), 1e-4, np.float16)}, None,  # g^2 0 in float16: W moved by m / eps, 100 at once
     "the step of parameter 'W' must be an array of its shape (3, 2), of float32 or float64 no wider than its "
     "float32, got a float16 array")])
def test_ascend_names_what_it_cannot_step_of_any_kind(params, grads, state, said):
    """Keys of mixed types, a count beyond int64, complex or object moments, numpy.matrix parameters
    or steps and a float16 step each raised Python's or NumPy's error (or stepped along a matrix power,
    or by m / eps where float16's g^2 underflowed):
    one ValueError naming the fix, nothing changed."""
    params = params or {"W": np.ones((3, 2), np.float32)}
    grads = grads or {"W": np.ones((3, 2), np.float32)}
    state = state or optim.init({"W": np.ones((3, 2), np.float32)})
    with pytest.raises(ValueError) as refused:
        optim.ascend(params, grads, state, optim.Adam(0.01))
    assert str(refused.value).startswith(said)
