"""EGGROLL's ask/tell interface (eggroll.Eggroll) over any named 1-D and 2-D arrays, and the spiking
network of any depth as its client: the population's products against every member formed,
resume through pickle, clear errors, and the spiking network's generation as ask -> forward -> tell."""
import array
import collections
import dataclasses
import decimal
import os
import pickle
import re
import subprocess
import sys
import types
import unicodedata
import warnings
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse
from hypothesis import given, settings, strategies as st

import backend
import baselines
import distributed
import eggroll
import interface_checks
import noise
import optim
import snn
import snn_eggroll
from simulated_team import run_team
import strict_array

ROOT = Path(__file__).resolve().parent.parent


def mlp(seed=0, sizes=(6, 5, 3), dtype=np.float64):
    """A dict of weights and biases under names that are none of the spiking network's."""
    rng = np.random.default_rng(seed)
    params = {}
    for layer, (n, m) in enumerate(zip(sizes[:-1], sizes[1:])):
        params[f"layer{layer}.weight"] = rng.normal(0, 0.5, (m, n)).astype(dtype)
        params[f"layer{layer}.bias"] = rng.normal(0, 0.5, m).astype(dtype)
    return params


@settings(max_examples=20, deadline=None)
@given(pairs=st.integers(1, 70), rank=st.integers(1, 3), generation=st.integers(0, 5), per_member=st.booleans())
def test_linear_is_every_members_product_with_its_noise_formed(pairs, rank, generation, per_member):
    """pop.linear(name, x, bias) equals x (theta + sigma E_p)^T + b +- sigma delta_p with each member's
    parameters formed (pop.member), for x shared by all members and x one per member."""
    params = mlp(1)
    es = eggroll.Eggroll(2 * pairs, rank, {name: 0.1 * (i + 1) for i, name in enumerate(params)}, seed=3)
    pop = es.ask(eggroll.State(params, {}, generation))
    rng = np.random.default_rng(pairs)
    x = rng.normal(size=(2 * pairs, 4, 6) if per_member else (4, 6))
    out = pop.linear("layer0.weight", x, bias="layer0.bias")
    assert out.shape == (2 * pairs, 4, 5)
    for i in range(2 * pairs):
        member = pop.member(i)
        expected = (x[i] if per_member else x) @ member["layer0.weight"].T + member["layer0.bias"]
        np.testing.assert_allclose(out[i], expected, rtol=1e-6, atol=1e-9)


@settings(max_examples=20, deadline=None)
@given(pairs=st.integers(1, 6), rank=st.integers(1, 3), generation=st.integers(0, 50),
       dtype=st.sampled_from([np.float32, np.float64]))
def test_every_members_values_at_once_are_each_members_own(pairs, rank, generation, dtype):
    """pop.perturbed(name): (2·pairs, m, n) or (2·pairs, m), row i bit for bit member(i)[name], for weights and
    biases, in the parameter's float type; a batched product with it is each member's layer."""
    params = mlp(generation, dtype=dtype)
    es = eggroll.Eggroll(2 * pairs, rank, {name: 0.1 * (k + 1) for k, name in enumerate(params)}, seed=generation)
    pop = es.ask(eggroll.State(params, {}, generation))
    for name, value in params.items():
        every = pop.perturbed(name)
        assert every.dtype == dtype and every.shape == (2 * pairs,) + value.shape
        for i in range(2 * pairs):
            np.testing.assert_array_equal(every[i], pop.member(i)[name])
    x = np.random.default_rng(0).normal(size=(3, 6)).astype(dtype)
    np.testing.assert_allclose(x @ pop.perturbed("layer0.weight").transpose(0, 2, 1) + pop.perturbed("layer0.bias")[:, None],
                               pop.linear("layer0.weight", x, bias="layer0.bias"), rtol=1e-4, atol=1e-5)


def test_members_are_antithetic_and_drawn_from_the_keys():
    """Member 2p + 1 is theta - sigma E_p where member 2p is theta + sigma E_p, E_p = A_p B_p^T / sqrt(r)
    from the factors of name's own stream; the same ask twice gives the same members."""
    params = mlp(2)
    es = eggroll.Eggroll(8, 2, 0.3, seed=5)
    pop = es.ask(eggroll.State(params, {}, 7))
    a, b = eggroll.lowrank_factors(5, 7, np.arange(4), "layer1.weight", (3, 5), 2)
    for pair in range(4):
        plus, minus = pop.member(2 * pair), pop.member(2 * pair + 1)
        np.testing.assert_allclose(plus["layer1.weight"] - params["layer1.weight"],
                                   0.3 * eggroll.materialise(a, b)[pair], rtol=1e-6, atol=1e-12)
        for name in params:
            np.testing.assert_allclose(plus[name] + minus[name], 2 * params[name], rtol=1e-12, atol=1e-12)
    again = es.ask(eggroll.State(params, {}, 7))
    assert all(np.array_equal(pop.member(3)[n], again.member(3)[n]) for n in params)


def test_tell_is_its_stages_by_hand():
    """tell = centred ranks of the fitness, f_p, g of Eqs. (7)-(8) from the keys, one Adam step; raw
    shaping skips the ranks."""
    params = mlp(3)
    fitness = np.random.default_rng(0).normal(size=10)
    for shaping, shaped in (("centred_ranks", eggroll.centred_ranks(fitness)), ("raw", fitness)):
        es = eggroll.Eggroll(10, 2, 0.2, seed=1, lr=0.05, shaping=shaping)
        state = es.init(params)
        new, stats = es.tell(state, es.ask(state), fitness)
        grads = eggroll.gradient(eggroll.pair_differences(shaped), es.ask(state), 5)
        expected, _ = optim.ascend(params, grads, optim.init(params), optim.Adam(0.05))
        for name in params:
            np.testing.assert_array_equal(new.params[name], expected[name])
        assert new.generation == 1 and new.optimiser["t"] == 1
        assert stats["max_fitness"] == fitness.max()


def test_the_step_is_the_mean_of_each_pairs_difference_times_its_noise():
    """g of Eqs. (7)-(8) is sum_p f_p (member 2p - theta) / (2 P sigma^2), each member formed, for every
    parameter under its own sigma: Adam's step is blind to g's scale, so tell alone would not show a
    wrong 2P, sqrt(r) or sigma."""
    params = mlp(8)
    sigma = {name: 0.05 * (k + 1) for k, name in enumerate(params)}
    es = eggroll.Eggroll(10, 2, sigma, seed=6)
    pop = es.ask(eggroll.State(params, {}, 3))
    f = np.random.default_rng(8).normal(size=5).astype(np.float32)
    grads = eggroll.gradient(f, pop, 5)
    for name, value in params.items():
        expected = sum(f[p] * (pop.member(2 * p)[name] - value) for p in range(5)) / (2 * 5 * sigma[name] ** 2)
        np.testing.assert_allclose(grads[name], expected, rtol=1e-5, atol=1e-9)


def test_tell_takes_the_weight_decay_and_ranks_the_fitness_as_given():
    """tell's step is Adam's with this Eggroll's weight decay, from the centred ranks of the fitness in
    its own precision: float64 fitnesses a millionth apart, which float32 would tie, are ranked apart."""
    params = mlp(3)
    fitness = 1000 + 1e-6 * np.random.default_rng(1).normal(size=10)
    assert len(set(fitness.astype(np.float32))) < 10 == len(set(fitness))
    es = eggroll.Eggroll(10, 2, 0.2, seed=1, lr=0.05, weight_decay=0.1)
    state = es.init(params)
    new, stats = es.tell(state, es.ask(state), fitness)
    grads = eggroll.gradient(eggroll.pair_differences(eggroll.centred_ranks(fitness)), es.ask(state), 5)
    expected, _ = optim.ascend(params, grads, optim.init(params), optim.Adam(0.05, 0.1))
    for name in params:
        np.testing.assert_array_equal(new.params[name], expected[name])
    assert stats["max_fitness"] == fitness.max() and stats["mean_fitness"] == fitness.mean()


def test_numpy_integers_count_as_the_python_ints_they_hold():
    """A NumPy integer as a member's index, as the rank or population, or as the state's generation
    is its value: an odd unsigned index is the - side, a uint8 rank draws the rank's factors
    (rank * (m + n) does not wrap), and tell counts a uint8 generation on past 255."""
    params = {"w": np.random.default_rng(0).normal(size=(20, 30)), "b": np.ones(20)}
    es = eggroll.Eggroll(4, 4, 0.1, seed=3)
    state = es.init(params)
    pop = es.ask(state)
    for index in (np.uint64(3), np.uint8(3), np.int64(2)):
        assert all(np.array_equal(pop.member(index)[n], pop.member(int(index))[n]) for n in params)
    small = eggroll.Eggroll(np.uint8(4), np.uint8(4), 0.1, seed=np.uint8(3))
    assert small == es and type(small.rank) is int
    assert all(np.array_equal(small.ask(state).member(1)[n], pop.member(1)[n]) for n in params)
    late = eggroll.State(state.params, state.optimiser, np.uint8(255))
    assert es.tell(late, es.ask(late), [1.0, 2.0, 3.0, 4.0])[0].generation == 256


@pytest.mark.parametrize("fitness", [np.array([True, False, False, True]), np.array([0, 255, 3, 4], np.uint8),
                                     np.array([2 ** 62, -2 ** 62, 0, 1]), np.array([6e4, -6e4, 1, 2], np.float16),
                                     np.array([2 ** 24 + 1, 2 ** 24, 3, 4])])
def test_raw_fitnesses_of_any_real_type_are_stepped_as_their_values(fitness):
    """Raw shaping takes the differences of bools, integers and float16 as of their float64 values:
    none wraps (0 - 255 in uint8 is 1), overflows (2^62 - -2^62 in int64, 6e4 - -6e4 in float16), fails,
    or rounds (2^24 + 1 - 2^24 is 0 in float32). (sigma 1: a difference of 2^63 then keeps g^2 within float32.)"""
    es = eggroll.Eggroll(4, 1, 1.0, seed=0, shaping="raw")
    state = es.init(mlp(1))
    told, stats = es.tell(state, es.ask(state), fitness)
    expected, _ = es.tell(state, es.ask(state), fitness.astype(np.float64))
    assert all(np.array_equal(told.params[n], expected.params[n]) for n in state.params)


def test_a_sigma_dict_changed_after_the_eggroll_is_made_is_not_used():
    """The Eggroll holds a copy of a sigma dict, checked when made: a value changed in the caller's dict
    afterwards (here one the Eggroll refuses) changes nothing."""
    sigma = {name: 0.1 for name in mlp(1)}
    es = eggroll.Eggroll(4, 1, sigma, seed=0)
    sigma["layer0.weight"] = -5.0
    assert es.ask(es.init(mlp(1))).sigma["layer0.weight"] == 0.1


def test_init_copies_the_dict_and_arrays_it_is_given():
    """The state holds its own dict and arrays (pycma copies x0): a parameter replaced in the caller's
    dict after init, or changed in place, as a view of a larger array too, is not the state's."""
    params = mlp(1)
    whole = np.ones((5, 7))
    params["view"] = whole[:, :3]
    kept = {name: value.copy() for name, value in params.items()}
    state = eggroll.Eggroll(4, 1, 0.1, seed=0).init(params)
    params["layer0.weight"] *= 100
    whole[0, 0] = 99
    params["layer1.bias"] = np.zeros_like(params["layer1.bias"])
    assert state.params is not params
    assert all(np.array_equal(state.params[name], kept[name]) for name in kept)


def test_a_quadratic_in_named_parameters_is_climbed():
    """ask/tell on a fitness that is a black box of each member's parameters (pop.member): the
    distance to a target falls tenfold."""
    target = mlp(4, (8, 6, 2))
    start = {name: np.zeros_like(value) for name, value in target.items()}
    es = eggroll.Eggroll(32, 2, 0.05, seed=2, lr=0.1)
    state = es.init(start)

    def distance(params):
        return sum(((params[n] - target[n]) ** 2).sum() for n in target)
    for _ in range(100):
        pop = es.ask(state)
        state, _ = es.tell(state, pop, [-distance(pop.member(i)) for i in range(pop.members)])
    assert distance(state.params) < distance(start) / 10


def test_an_eggroll_hashes_as_settings_do():
    """An Eggroll is a key (a cache's, JAX's static argument), its sigma a float or a dict: equal
    settings hash alike, and the sigma dict, not hashed, still tells them apart."""
    sigma = {"w": 0.1}
    assert hash(eggroll.Eggroll(4, 1, sigma, 0)) == hash(eggroll.Eggroll(4, 1, dict(sigma), 0))
    assert eggroll.Eggroll(4, 1, sigma, 0) != eggroll.Eggroll(4, 1, {"w": 0.2}, 0)
    assert len({eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 1)}) == 2


def test_a_sigma_too_small_for_the_float32_step_is_refused_before_it_stalls():
    """The step g is formed in float32 whatever the parameters' type: a sigma below float32's range is
    refused for float64 weights too, and one whose g^2 overflows Adam's average (g ~ 1/sigma), which
    would then step by 0 for good, is refused at tell with the state left as it was."""
    with pytest.raises(ValueError, match="float32's range"):
        eggroll.Eggroll(4, 1, 1e-39, 0).init({"w": np.ones((2, 3))})
    for weights in (np.zeros((2, 3)), np.zeros((2, 3), np.float32)):  # 0 resolves any sigma
        es = eggroll.Eggroll(4, 1, 1e-25, 0)
        state = es.init({"w": weights})
        with pytest.raises(ValueError, match=re.escape("this step would make Adam's average of g^2 of parameter "
                                                       "'w' NaN or inf, g too large (sigma 1e-25, lr 0.01): raise "
                                                       "sigma;")), \
                np.errstate(over="ignore"):
            es.tell(state, es.ask(state), [1.0, 2.0, 4.0, 3.0])
        larger = eggroll.Eggroll(4, 1, 1e-15, 0)
        stepped, _ = larger.tell(state, larger.ask(state), [1.0, 2.0, 4.0, 3.0])
        assert np.isfinite(stepped.optimiser["v"]["w"]).all() and not np.array_equal(stepped.params["w"], weights)


def test_a_sigma_below_the_parameters_resolution_is_refused_not_left_to_tie():
    """A parameter so large that its float type's resolution there (eps times its largest magnitude)
    exceeds its sigma: its members differ from it by rounding alone (their fitnesses tie, the step is 0).
    Refused at init and at ask (where steps may have grown it) as a FloatOverflow naming the fixes,
    float64 among them for float32 parameters; the same sigma is taken for float64 parameters, and for
    parameters of zeros, whose members it moves."""
    ones = {"w": np.ones((2, 3), np.float32)}
    small = eggroll.Eggroll(4, 1, 1e-9, 0)
    said = ("parameter 'w' holds an entry of magnitude 1, where float32's resolution (1.19e-07) exceeds its sigma "
            "1e-09: its members would differ from it by rounding alone; raise sigma, or keep the parameter smaller "
            "(a smaller lr, if steps grew it), or give float64 parameters")
    with pytest.raises(eggroll.FloatOverflow, match=re.escape(said)):
        small.init(ones)
    with pytest.raises(eggroll.FloatOverflow, match=re.escape(said)):
        small.ask(eggroll.Eggroll(4, 1, 0.1, 0).init(ones))
    said = ("parameter 'w' holds an entry of magnitude 3, where float64's resolution (6.66e-16) exceeds its sigma "
            "1e-16: its members would differ from it by rounding alone; raise sigma, or keep the parameter smaller "
            "(a smaller lr, if steps grew it)")
    with pytest.raises(eggroll.FloatOverflow, match=re.escape(said) + "$"):
        eggroll.Eggroll(4, 1, 1e-16, 0).init({"w": np.array([[1.0, -3.0, 2.0]])})
    eggroll.Eggroll(4, 1, 2.0 ** -23, 0).init(ones)  # a sigma of the resolution itself is taken
    for weights in ({"w": np.ones((2, 3))}, {"w": np.zeros((2, 3), np.float32)}):
        state = small.init(weights)
        members = small.ask(state).perturbed("w")
        assert not np.array_equal(members[0], members[1]) and not np.array_equal(members[0], weights["w"])


def test_a_huge_whole_number_is_named_by_its_size_not_written_out():
    """An int setting of hundreds or thousands of digits (past 4,300 Python gives no repr) is refused in
    one short line that gives its size; up to 20 digits it is written out."""
    for settings, said in ((dict(sigma=10 ** 400), "sigma must be a finite int or float > 0, got an int of about 401 "
                                                   "digits: use e.g. 0.1"),
                           (dict(lr=-10 ** 400), "lr must be a finite int or float >= 0, got an int of about 401 "
                                                 "digits: use e.g. 0.01"),
                           (dict(seed=10 ** 5000), "seed must be a whole number in 0..18446744073709551615, got an int "
                                                   "of about 5001 digits: use e.g. 0"),
                           (dict(seed=10 ** 20 - 1), "seed must be a whole number in 0..18446744073709551615, got "
                                                     "99999999999999999999: use e.g. 0"),
                           (dict(seed=10 ** 20), "seed must be a whole number in 0..18446744073709551615, got an int "
                                                 "of about 21 digits: use e.g. 0"),
                           (dict(seed=2 ** 70), "seed must be a whole number in 0..18446744073709551615, got an int of "
                                                "about 22 digits: use e.g. 0")):  # 1.18e21
        with pytest.raises(ValueError) as refused:
            eggroll.Eggroll(**{"population": 4, "rank": 1, "sigma": 0.1, "seed": 0, **settings})
        assert str(refused.value) == said


def test_a_populations_sigma_changed_by_hand_is_refused_where_it_is_used():
    """ask's Population holds its sigma in a dict: a value changed by hand after ask (a negative sigma
    would swap the members' signs, a NaN make them NaN) or removed is refused by linear, perturbed,
    member and factors, not used."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": np.ones((2, 3), np.float32)})
    x = np.ones((5, 3), np.float32)
    for change, said in ((lambda sigma: sigma.update(w=-1.0), "got -1.0"),
                         (lambda sigma: sigma.update(w=float("nan")), "got nan"),
                         (lambda sigma: sigma.pop("w"), "got None")):
        for use in ("linear", "perturbed", "member", "factors"):
            pop = es.ask(state)
            change(pop.sigma)
            with pytest.raises(ValueError) as refused:
                {"linear": lambda: pop.linear("w", x), "perturbed": lambda: pop.perturbed("w"),
                 "member": lambda: pop.member(1), "factors": lambda: pop.factors("w")}[use]()
            if use == "member" and said == "got None":  # member makes a Population of one pair, checked whole
                assert str(refused.value) == ("a Population is made by Eggroll.ask (its sigma {name: float} for "
                                              "every parameter, its pairs a range in 0..2^32 - 1): ask for one")
            else:
                assert str(refused.value) == f"sigma of 'w' must be a finite int or float > 0, {said}: use e.g. 0.1"


def test_a_pickled_state_resumes_with_the_same_bits():
    """Five generations straight, or two, a pickle round trip of state (and of the Eggroll), three more."""
    x = np.random.default_rng(1).normal(size=(16, 6)).astype(np.float32)
    es = eggroll.Eggroll(20, 1, 0.1, seed=9, lr=0.02)

    def generation(es, state):
        pop = es.ask(state)
        out = np.tanh(pop.linear("layer0.weight", x, bias="layer0.bias"))
        scores = pop.linear("layer1.weight", out, bias="layer1.bias")
        return es.tell(state, pop, -(scores ** 2).mean(axis=(1, 2)))[0]
    straight = es.init(mlp(5, dtype=np.float32))
    for _ in range(5):
        straight = generation(es, straight)
    resumed = es.init(mlp(5, dtype=np.float32))
    for _ in range(2):
        resumed = generation(es, resumed)
    resumed, es = pickle.loads(pickle.dumps((resumed, es)))
    for _ in range(3):
        resumed = generation(es, resumed)
    assert resumed.generation == 5
    for name in straight.params:
        np.testing.assert_array_equal(resumed.params[name], straight.params[name])


@pytest.mark.parametrize("make, message", [
    (lambda es, s: es.ask(s).linear("nope", np.ones((2, 6))), "unknown parameter 'nope'"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((2, 6)), bias="nope"), "unknown parameter 'nope'"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((2, 7))), "x of shape"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((3, 2, 6))), "needs 2·pairs = 4 members"),
    (lambda es, s: es.ask(s).member(4), "member must be a whole number in 0..3, got 4"),
    (lambda es, s: es.ask(s).member(-1), "member must be a whole number in 0..3, got -1"),
    (lambda es, s: es.ask(s).member(2.0), "member must be a whole number in 0..3, got 2.0"),
    (lambda es, s: es.init(list(s.params.values())), "params must be a dict of named arrays, got a list"),
    (lambda es, s: es.ask(s.params), "state must be the State that init or tell returned, got a dict"),
    (lambda es, s: es.tell(s.params, es.ask(s), np.zeros(4)), "state must be the State that init or tell"),
    (lambda es, s: es.tell(s, es.ask(s), ["a", "b", "c", "d"]), "fitness must be real numbers, one per member"),
    (lambda es, s: es.tell(s, es.ask(s), [1j, 0, 0, 0]), "fitness must be real numbers, one per member"),
    (lambda es, s: es.ask(s).perturbed("nope"), "unknown parameter 'nope'"),
    (lambda es, s: es.tell(s, es.ask(s), np.zeros(5)), "fitness must have shape (4,)"),
    (lambda es, s: es.tell(s, es.ask(s), [1.0, 2.0, 3.0]), "fitness must have shape (4,), one number per member of "
                                                           "ask's population in member order, got (3,)"),
    (lambda es, s: es.tell(s, es.ask(s), 5.0), "fitness must have shape (4,), one number per member of ask's "
                                               "population in member order, got ()"),
    (lambda es, s: es.tell(s, es.ask(s), 1j), "fitness must be real numbers, one per member, got a complex"),
    (lambda es, s: es.tell(s, es.ask(s), np.zeros((4, 1))), "fitness must have shape (4,), one number per member of "
                                                             "ask's population in member order, got (4, 1)"),
    (lambda es, s: es.tell(s, es.ask(s), [0.0, np.nan, 1.0, 2.0]), "NaN or inf"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw").tell(s, es.ask(s), [0.0, np.inf, 1.0, 2.0]),
     "NaN or inf"),
    # the population told is the one this Eggroll asked for this state
    (lambda es, s: es.tell(s, np.zeros(4), np.zeros(4)), "tell takes (state, population, fitness), got a NumPy array"),
    (lambda es, s: es.tell(es.tell(s, es.ask(s), np.arange(4.0))[0], es.ask(s), np.arange(4.0)),
     "the population is generation 0's, the state is at generation 1"),
    (lambda es, s: es.tell(s, es.ask(es.init(mlp(7))), np.arange(4.0)), "asked of another state's parameters"),
    (lambda es, s: es.tell(s, eggroll.Eggroll(4, 1, 0.1, seed=1).ask(s), np.arange(4.0)), "its seed 1, this Eggroll's 0"),
    (lambda es, s: es.tell(s, eggroll.Eggroll(4, 2, 0.1, seed=0).ask(s), np.arange(4.0)), "its rank 2, this Eggroll's 1"),
    (lambda es, s: es.tell(s, eggroll.Eggroll(4, 1, 0.2, seed=0).ask(s), np.arange(4.0)),
     "the population was asked with sigma {'layer0.weight': 0.2, 'layer0.bias': 0.2, 'layer1.weight': 0.2, "
     "'layer1.bias': 0.2}, this Eggroll's is {'layer0.weight': 0.1, 'layer0.bias': 0.1, 'layer1.weight': 0.1, "
     "'layer1.bias': 0.1}: tell its fitness to the Eggroll that asked it, and change a sigma after tell"),
    (lambda es, s: es.tell(s, eggroll.Eggroll(8, 1, 0.1, seed=0).ask(s), np.arange(8.0)), "its pairs 0..3, this Eggroll's 0..1 of its 2"),
    (lambda es, s: eggroll.Eggroll(4, 4, 0.1, 0).init(s.params), "rank must lie in 1..3"),
    (lambda es, s: eggroll.Eggroll(3, 1, 0.1, 0).init(s.params), "even number"),
    (lambda es, s: eggroll.Eggroll(4, 1, {"layer0.weight": 0.1}, 0).init(s.params), "one sigma per parameter"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, lr={"layer0.weight": 0.1}).init(s.params),
     "lr names ['layer0.weight'] but the parameters are ['layer0.bias', 'layer0.weight', 'layer1.bias', "
     "'layer1.weight']: give one lr per parameter, or one float for all"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, lr={1: 0.1, **dict.fromkeys(s.params, 0.1)}),
     "lr's keys must be the parameters' names, strings, got 1"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, lr={**dict.fromkeys(s.params, 0.1), "layer0.bias": np.nan}),
     "lr of 'layer0.bias' must be a finite int or float >= 0, got nan: use e.g. 0.01"),
    (lambda es, s: eggroll.Eggroll(4, 1, {1: 0.1, **dict.fromkeys(s.params, 0.1)}, 0),
     "sigma's keys must be the parameters' names, strings, got 1"),
    (lambda es, s: eggroll.Eggroll(4, 1, dict.fromkeys([*s.params, "extra"], 0.1), 0).init(s.params),
     "one sigma per parameter"),
    (lambda es, s: eggroll.Eggroll(4, 1, -0.1, 0), "sigma must be a finite int or float > 0, got -0.1"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.0, 0), "sigma must be a finite int or float > 0, got 0.0"),
    (lambda es, s: eggroll.Eggroll(4, 1, {**dict.fromkeys(s.params, 0.1), "layer0.bias": 0}, 0),
     "sigma of 'layer0.bias' must be a finite int or float > 0, got 0"),
    (lambda es, s: eggroll.Eggroll(4, 1, {"layer0.weight": np.inf}, 0), "sigma of 'layer0.weight' must be a finite"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, shaping="z"), "unknown shaping"),
    (lambda es, s: es.init({"cube": np.ones((2, 2, 2))}), "reshape it"),
    (lambda es, s: es.init({}), "params is empty"),
    # settings are whole numbers in range and finite numbers, refused when the Eggroll is made
    (lambda es, s: eggroll.Eggroll(4.0, 1, 0.1, 0), "population must be a whole number <= 8589934592, got 4.0"),
    (lambda es, s: eggroll.Eggroll(True, 1, 0.1, 0), "population must be a whole number"),
    (lambda es, s: eggroll.Eggroll(2 ** 34, 1, 0.1, 0), "population must be a whole number <= 8589934592"),
    (lambda es, s: eggroll.Eggroll(4, 1.0, 0.1, 0), "rank must be a whole number >= 1, got 1.0"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 2 ** 64), "seed must be a whole number in 0..18446744073709551615"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, -1), "seed must be a whole number in 0.."),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, lr=np.nan), "lr must be a finite int or float >= 0, got nan"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, lr=-0.01), "lr must be a finite int or float >= 0"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, weight_decay=np.nan), "weight_decay must be a finite int or float >= 0"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, weight_decay=-1.0), "weight_decay must be a finite int or float >= 0"),
    (lambda es, s: eggroll.Eggroll(4, 1, True, 0), "sigma must be a finite int or float > 0, got True"),
    # parameters: float32 or float64, non-empty, named by strings
    (lambda es, s: es.init({"w": np.ones((3, 6), dtype=np.int64)}), "'w' is int64: EGGROLL steps float32 or float64"),
    (lambda es, s: es.init({"w": np.ones((3, 6), dtype=bool)}), "give w.astype(numpy.float32)"),
    (lambda es, s: es.init({"w": np.ones(3, dtype=np.float16)}), "'w' is float16"),
    (lambda es, s: es.init({"w": np.ones((3, 6)), "b": np.ones(0)}), "'b' has shape (0,), no entries"),
    (lambda es, s: es.init({0: np.ones((3, 6))}), "parameter name 0 is not a string"),
    (lambda es, s: es.init({"w": [[1.0] * 6] * 3}), "parameter 'w' is a list, not an array: give numpy.asarray(w, "),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ma.masked_array(np.ones((2, 6)), mask=np.eye(2, 6))),
     "x is a masked array: give every input a number (numpy.ma.filled(x, 0))"),
    # linear: a bias that fits its weight, a weight stored (in, out), a 1-D parameter as a weight
    (lambda es, s: es.ask(es.init({"w": np.ones((3, 6)), "b": np.ones(4)})).linear("w", np.ones((2, 6)), bias="b"),
     "bias 'b' has shape (4,), but w makes 3 outputs: give a 1-D bias of length 3"),
    (lambda es, s: es.ask(es.init({"w": np.ones((3, 6)), "v": np.ones((3, 6))})).linear("w", np.ones((2, 6)),
                                                                                          bias="v"),
     "bias 'v' has shape (3, 6)"),
    (lambda es, s: es.ask(es.init({"w": np.ones((6, 3))})).linear("w", np.ones((2, 6))),
     "a layer is x W^T, so x needs 3 columns; store w as (out, in), its transpose"),
    (lambda es, s: es.ask(es.init({"w": np.ones((3, 6)), "b": np.ones(3)})).linear("b", np.ones((2, 3))),
     "a layer needs a 2-D weight, got b of shape (3,)"),
    # linear: x real numbers, (N, n) or (2·pairs, N, n); names are strings; factors of a known name
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones(6)),
     "x of shape (6,) is not (N, n), one x for every member, nor (2·pairs, N, n), one per member"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.float64(1.0)),
     "x of shape () is not (N, n)"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((2, 6), dtype=complex)),
     "x must be an array of ints or floats, got an array of complex128"),
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((2, 6), dtype=object)),
     "x must be an array of ints or floats, got an array of object"),
    (lambda es, s: es.ask(s).linear("layer0.weight", [[1.0] * 6, [1.0] * 5]), "x must be an array of real numbers"),
    (lambda es, s: es.ask(s).linear(["layer0.weight"], np.ones((2, 6))), "a parameter's name is a string, got ['layer0"),
    (lambda es, s: es.ask(s).perturbed(0), "a parameter's name is a string, got 0"),
    (lambda es, s: es.ask(s).perturbed(10 ** 39), f"a parameter's name is a string, got {10 ** 39}: "),  # 40 characters
    (lambda es, s: es.ask(s).perturbed(10 ** 40), "a parameter's name is a string, got an int: "),  # 41: not shown
    (lambda es, s: es.ask(s).linear("layer0.weight", np.ones((2, 6)), bias=np.zeros(64)),  # the bias itself, not
     "a parameter's name is a string, got a NumPy array: the parameters are "),             # its name: not printed
    (lambda es, s: es.ask(s).factors("nope"), "unknown parameter 'nope': the parameters are layer0.bias"),
    # init: finite values in plain arrays; rank >= 1 with biases alone; a team; sigma a float or a dict
    (lambda es, s: es.init({**s.params, "layer0.bias": np.array([0.0, np.nan, 0, 0, 0])}),
     "parameter 'layer0.bias' holds NaN or inf"),
    (lambda es, s: es.init({"w": np.full((3, 6), np.inf)}), "parameter 'w' holds NaN or inf"),
    (lambda es, s: es.init({"w": np.matrix(np.ones((3, 6)))}), "parameter 'w' is a numpy.matrix"),
    (lambda es, s: eggroll.Eggroll(4, 0, 0.1, 0), "rank must be a whole number >= 1, got 0: use e.g. 1 or 4"),
    (lambda es, s: eggroll.Eggroll(4, -1, 0.1, 0), "rank must be a whole number >= 1, got -1: use e.g. 1 or 4"),
    (lambda es, s: eggroll.Eggroll(4, 1, 0.1, 0, team=None), "team must be distributed.ALONE or distributed.team"),
    (lambda es, s: eggroll.Eggroll(4, 1, [0.1], 0), "sigma is a float or a dict {name: float}, got a list"),
    (lambda es, s: eggroll.Eggroll(4, 1, np.array([0.1, 0.2]), 0), "sigma is a float or a dict {name: float}, got a"),
    # the state: a generation that keys the noise, parameters in a dict, Adam's state to tell
    (lambda es, s: es.ask(eggroll.State(s.params, {}, 1.5)), "state.generation must be a whole number in 0..4294967295"),
    (lambda es, s: es.ask(eggroll.State(s.params, {}, -1)), "state.generation must be a whole number in 0..4294967295"),
    (lambda es, s: es.ask(eggroll.State(s.params, {}, 2 ** 32 + 1)), "state.generation must be a whole number in 0.."),
    (lambda es, s: es.ask(eggroll.State(list(s.params.values()), {}, 0)), "state.params must be a dict"),
    (lambda es, s: (lambda hand: es.tell(hand, es.ask(hand), np.arange(4.0)))(eggroll.State(s.params, {}, 0)),
     "state.optimiser does not hold Adam's state of the parameters"),
    # tell: a fitness numpy cannot make an array of, a masked one
    (lambda es, s: es.tell(s, es.ask(s), [1.0, [2.0], 3.0, 4.0]), "fitness must be real numbers, one per member: "),
    (lambda es, s: es.tell(s, es.ask(s), np.ma.masked_array(np.arange(4.0), mask=[0, 1, 0, 0])),
     "fitness is a masked array"),
    # a step that would leave a parameter NaN or inf is refused
    (lambda es, s: eggroll.Eggroll(4, 1, 1e-320, 0).ask(s),
     "sigma must lie in 1.18e-38..3.4e+38, float32's range, in which the step is formed, got 1e-320: use e.g. 0.1"),
    (lambda es, s: (lambda e, s: e.tell(s, e.ask(s), np.arange(4.0)))(eggroll.Eggroll(4, 1, 0.1, 0, lr=1e39),
                                                                          es.init(mlp(6, dtype=np.float32))),
     "this step would make parameter 'layer0.weight' NaN or inf (lr 1e+39): lower lr; the parameters and state "
     "given are left as they were"),
    (lambda es, s: (lambda e: e.tell(s, e.ask(s), [1e38, -1e38, 1e38, -1e38]))(
        eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw")),
     "or scale the fitness down (raw differences set g's size) or shape it by centred ranks"),
])
def test_bad_input_is_one_value_error_naming_the_fix(make, message):
    es = eggroll.Eggroll(4, 1, 0.1, seed=0)
    state = es.init(mlp(6))
    with pytest.raises(ValueError, match=re.escape(message)):
        make(es, state)


W = {"w": np.ones((2, 3), np.float32)}


class ArrayLike:
    """Shaped like a weight matrix, but no array: it has no dtype to compute in."""
    ndim, shape = 2, (2, 3)


@pytest.mark.parametrize("make, message", [
    (lambda: eggroll.Eggroll(4.0, 1, 0.1, 0), "population must be a whole number <= 8589934592, got 4.0: use the "
                                              "int 4: a float is not taken for a count, even a whole one"),
    (lambda: eggroll.Eggroll(4, 1.5, 0.1, 0), "rank must be a whole number >= 1, got 1.5: use e.g. 1 or 4"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, -1),
     "seed must be a whole number in 0..18446744073709551615, got -1: use e.g. 0"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, lr=float("nan")), "lr must be a finite int or float >= 0, got nan: use e.g. 0.01"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, weight_decay=-1.0),
     "weight_decay must be a finite int or float >= 0, got -1.0: use e.g. 0.0"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, shaping="nope"), "unknown shaping 'nope': use one of centred_ranks, raw"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({}), "params is empty: give a dict of named 1-D and 2-D arrays"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": np.array([[1.0, np.nan]], np.float32)}),
     "parameter 'w' holds NaN or inf: EGGROLL steps finite parameters; give it finite starting values"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": 1.0}),
     "parameter 'w' has shape (): EGGROLL perturbs 1-D (biases) and 2-D (weights) arrays; reshape it to one of them"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.State(W, {}, 0)).member(7),
     "member must be a whole number in 0..3, got 7: use 0..3"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.State(W, {}, -1)),
     "state.generation must be a whole number in 0..4294967295, got -1: use the State that init or tell returned, "
     "whose generation counts from 0"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.State([1], {}, 0)),
     "state.params must be a dict of named arrays, got a list: make the state with init(params)"),
    (lambda: (lambda es, state: es.tell(state, es.ask(state), [1.0, 2.0, 3.0, 4.0]))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.State(W, {}, 0)),
     "state.optimiser does not hold Adam's state of the parameters: tell a State that init or tell returned "
     "(a State(params, {}, generation) made by hand can be asked, not told)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, team=None),
     "team must be distributed.ALONE or distributed.team(update), got None (it has no my_pairs, update_pairs, "
     "gather, sum, disagreement, size, update)"),
    (lambda: (lambda es: es.ask(es.init(dict(W, b=np.ones(2, np.float32)))).linear("nope", np.ones((2, 3))))(
        eggroll.Eggroll(4, 1, 0.1, 0)), "unknown parameter 'nope': the parameters are b, w"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": np.ones((2, 2, 2), np.float32)}),
     "parameter 'w' has shape (2, 2, 2): EGGROLL perturbs 1-D (biases) and 2-D (weights) arrays; reshape it to one "
     "of them"),
    (lambda: (lambda es, state: es.tell(state, es.ask(state), np.ma.masked_array([1.0, 2, 3, 4], [0, 1, 0, 0])))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness is a masked array: give every member a number (numpy.ma.filled(fitness, low))"),
    (lambda: (lambda es: es.ask(es.init(W)).linear("w", np.ma.masked_array(np.ones((2, 3)), mask=np.eye(2, 3))))(
        eggroll.Eggroll(4, 1, 0.1, 0)), "x is a masked array: give every input a number (numpy.ma.filled(x, 0))"),
    (lambda: (lambda es, state: es.tell(state, es.ask(state), [0.0, np.inf, 1.0, 2.0]))(
        eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw"), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness holds NaN or inf: lower the learning rate or sigma, or check the inputs for non-finite values (a member "
     "to be ranked last takes a finite fitness below the others'); the first is member 1"),
    (lambda: eggroll.Eggroll(4, 1, {"w": 0.1}, 0).init(dict(W, b=np.ones(2, np.float32))),
     "sigma names ['w'] but the parameters are ['b', 'w']: give one sigma per parameter, or one float for all"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": (1.0, 2.0)}),
     "parameter 'w' is a tuple, not an array: give numpy.asarray(w, dtype=numpy.float32)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"enc": {"w": W["w"], "b": np.ones(2, np.float32)}}),
     "parameter 'enc' is a dict of parameters: give one flat dict of named arrays, e.g. {'enc.w': ...} for each of "
     "them"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"enc": {}}),
     "parameter 'enc' is a dict of parameters: give one flat dict of named arrays, e.g. {'enc.w': ...} for each of "
     "them"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": ArrayLike()}),
     "parameter 'w' is a test_interface.ArrayLike, not an array: give numpy.asarray(w, dtype=numpy.float32)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": np.ones((2, 3), np.dtype(np.float64).newbyteorder())}),
     f"parameter 'w' is {np.dtype(np.float64).newbyteorder()}: EGGROLL steps float32 or float64 arrays in this "
     f"machine's byte order; give w.astype(numpy.float64)"),
    (lambda: eggroll.Eggroll(4, 1, 1e39, 0).init(W),  # one float: not named as one parameter's
     "sigma must lie in 1.18e-38..3.4e+38, float32's range, in which the step is formed, got 1e+39: use e.g. 0.1"),
    (lambda: eggroll.Eggroll(4, 1, {"w": 1e-39}, 0).init(W),
     "sigma of 'w' must lie in 1.18e-38..3.4e+38, float32's range, in which the step is formed, got 1e-39: use e.g. 0.1"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.State(W, {}, 2 ** 32)),
     "state.generation 4294967296 is past the last the noise can key, 4294967295: every generation of this seed is "
     "spent; go on from its parameters under another seed, Eggroll(..., seed=S).init(state.params)"),
])
def test_a_refusal_reads_in_full_with_its_example(make, message):
    """The whole message, its example of a good value included: a user copies the fix from it."""
    with pytest.raises(ValueError) as raised:
        make()
    assert str(raised.value) == message


def refusal(make):
    """The message of the ValueError that make() raises, NumPy warnings made errors."""
    with pytest.raises(ValueError) as raised, warnings.catch_warnings():
        warnings.simplefilter("error")
        make()
    return str(raised.value)


def test_what_declares_more_than_the_ram_is_refused_by_its_size_before_its_values_are_read():
    """A broadcast view declares an array of any size without holding it: an x, a fitness or a
    parameter too large is refused by its shape before a copy of its values (isfinite, a cast) would
    ask NumPy for more than the machine holds (a MemoryError in NumPy's words)."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    pop = es.ask(state)
    for x in (np.broadcast_to(np.float32(1), (10 ** 10, 3)), np.broadcast_to(np.int64(1), (10 ** 10, 3)),
              np.broadcast_to(np.array(1, dtype=object), (10 ** 10, 3))):
        assert refusal(lambda: pop.linear("w", x)).startswith(
            "x of shape (10000000000, 3) would be read whole, 150.0 GB as its checks and its cast make it, more than "
            "this machine's ")
    wide = eggroll.Eggroll(4, 1, 0.1, 0)  # outputs that fit, from an x that does not
    members = wide.ask(wide.init({"w": np.ones((1, 2 ** 20), np.float32)}))
    assert refusal(lambda: members.linear("w", np.broadcast_to(np.float32(1), (2 ** 20, 2 ** 20)))).endswith(
        " GB of RAM: give x fewer rows at a time")
    huge = {"w": np.broadcast_to(np.float32(0.5), (10 ** 6, 10 ** 6))}
    assert refusal(lambda: es.ask(eggroll.State(huge, {}, 0))).startswith(
        "parameter 'w' of shape (1000000, 1000000) in float32 would be held with Adam's two moments of it")
    assert refusal(lambda: es.tell(state, pop, np.broadcast_to(1.0, (10 ** 12,)))) == (
        "fitness must have shape (4,), one number per member of ask's population in member order, got "
        "(1000000000000,)")
    message = refusal(lambda: es.init({"w": np.broadcast_to(np.float32(0.5), (10 ** 6, 10 ** 6))}))
    assert message.startswith("parameter 'w' of shape (1000000, 1000000) in float32 would be held with Adam's two "
                              "moments of it, 12,000.0 GB in all, more than this machine's ") and message.endswith(
        " GB of RAM: give a smaller parameter, or split it into several"), message


def test_a_long_double_x_is_multiplied_in_float64():
    """A long double x, for a float32 weight, is made float64, the widest product type: inputs float32
    would merge (1 and 1 + 2^-30) give two products, as their float64 x does; outputs beyond float64's
    range are one FloatOverflow, no NumPy warning from the cast."""
    pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W))
    x = np.array([[1.0, 1.0, 1.0], [1 + 2.0 ** -30, 1.0, 1.0]], np.longdouble)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = pop.linear("w", x)
    assert out.dtype == np.float64 and np.array_equal(out, pop.linear("w", x.astype(np.float64)))
    assert not np.array_equal(out[:, 0], out[:, 1])
    finer = np.array([[1.0, 1.0, 1.0]], np.longdouble) + np.longdouble(2.0) ** -60  # beyond float64: rounded, as float64
    assert np.array_equal(pop.linear("w", finer), pop.linear("w", finer.astype(np.float64)))
    with pytest.raises(eggroll.FloatOverflow), warnings.catch_warnings():
        warnings.simplefilter("error")
        pop.linear("w", np.full((2, 3), 1e308, np.longdouble))


def test_an_x_of_integers_beyond_int64_is_named_as_such():
    """Python ints beyond 2^63 make an array of objects: named as integers no float type holds exactly,
    not as objects to be made float32 (which would round them)."""
    pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W))
    assert refusal(lambda: pop.linear("w", [[2 ** 70, 1, 1]])) == (
        "x holds integers beyond 2^63, which no float type of a weight holds exactly: scale it")


def test_an_x_of_objects_is_called_integers_beyond_int64_from_2_to_the_63_on():
    """An object array of Python ints: 2^63 and beyond (int64 ends at 2^63 - 1) named as integers no
    float type holds exactly; 2^63 - 1 or 200, as objects, are refused as any array of objects is."""
    pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W))
    beyond = "x holds integers beyond 2^63, which no float type of a weight holds exactly: scale it"
    for value in (2 ** 63, -(2 ** 63), 2 ** 64):
        assert refusal(lambda: pop.linear("w", np.array([[value, 1, 1]], dtype=object))) == beyond, value
    for value in (2 ** 63 - 1, 200):
        assert refusal(lambda: pop.linear("w", np.array([[value, 1, 1]], dtype=object))).startswith(
            "x must be an array of ints or floats, got an array of object"), value


def test_a_range_of_pairs_is_said_with_both_ends_or_as_none():
    """A message's range of pairs: its first and last, both in, or "none" for an empty one (a process
    of a team that holds no pair)."""
    assert interface_checks.pair_span(range(3, 8)) == "3..7"
    assert interface_checks.pair_span(range(0, 1)) == "0..0"
    assert interface_checks.pair_span(range(5, 5)) == "none"


def test_the_size_check_of_linear_names_the_type_its_product_takes(monkeypatch):
    """float64 x on float32 weights: the product is float64, and the outputs' size is weighed (and
    named) as float64; float32 x on float64 weights keeps x's float32, as linear returns it."""
    for params_type, x_type in ((np.float32, np.float64), (np.float64, np.float32)):
        weights = {"w": np.ones((3, 2), params_type)}
        pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(weights))
        with monkeypatch.context() as small:  # 300 bytes: x fits, 4 members' (5, 3) outputs do not (360 B or more)
            small.setattr(interface_checks.os, "sysconf", lambda name: {"SC_PAGE_SIZE": 1, "SC_PHYS_PAGES": 300}[name])
            assert f"outputs of shape (5, 3) in {np.dtype(x_type)}, " in refusal(
                lambda: pop.linear("w", np.ones((5, 2), x_type)))


def test_a_fitness_of_0d_arrays_in_an_object_array_steps_as_their_numbers():
    """A reduction's 0-d arrays, gathered in an object array (as in a list): the same step as the
    numbers they hold, bit for bit."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    pop = es.ask(state)
    boxed = np.empty(4, dtype=object)
    for member in range(4):
        boxed[member] = np.asarray(float(member * member))
    stepped, plain = es.tell(state, pop, boxed)[0], es.tell(state, pop, [0.0, 1.0, 4.0, 9.0])[0]
    assert np.array_equal(stepped.params["w"], plain.params["w"])
    assert not np.array_equal(stepped.params["w"], state.params["w"])


@pytest.mark.parametrize("swap, kind", [(lambda v: np.ma.masked_array(v, np.zeros(v.shape, bool)), "numpy.ma.MaskedArray"),
                                        (np.asmatrix, "numpy.matrix")])
def test_adams_moments_of_another_array_type_are_refused(swap, kind):
    """A State restored by hand whose moments are a subclass of ndarray (a masked array would make
    the parameters masked, a matrix multiplies as one): one ValueError naming the moment."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    for moment in "mv":
        optimiser = dict(state.optimiser, **{moment: {"w": swap(state.optimiser[moment]["w"])}})
        changed = eggroll.State(state.params, optimiser, 0)
        message = refusal(lambda: es.tell(changed, es.ask(changed), [1.0, 2.0, 3.0, 4.0]))
        assert message.startswith(f"Adam's average of g{'^2' * (moment == 'v')} of parameter 'w' is a {kind} of "
                                  f"float32, not a NumPy array of float32 as the parameter: "), message


def test_a_team_takes_a_sigma_dict_of_numpy_scalars_as_one_process_does():
    """A sigma value made a NumPy float32 after the Eggroll was made: a team's processes compare it as
    the float it is (not a JSON error), and step as one process alone would."""
    def body(team):
        es = eggroll.Eggroll(4, 1, {"w": 0.1}, 1, team=team)
        state = es.init(W)
        es.sigma["w"] = np.float32(0.05)
        pop = es.ask(state)
        return es.tell(state, pop, np.arange(float(pop.members)))[0].params["w"]
    together = run_team(2, body)[0]
    alone = eggroll.Eggroll(4, 1, {"w": 0.1}, 1)
    state = alone.init(W)
    alone.sigma["w"] = np.float32(0.05)
    expected = alone.tell(state, alone.ask(state), np.arange(4.0))[0].params["w"]
    assert all(np.array_equal(w, expected) for w in together)


@pytest.mark.parametrize("odd", [np.complex64(3 + 99j), np.datetime64("2020-01-01"), np.timedelta64(5, "D")])
def test_a_fitness_list_with_a_complex_number_or_a_date_is_refused(odd):
    """Beside Python ints (a list NumPy holds as objects), a complex number, a date or a duration is no
    score: refused by member, as an array of them is, not taken by its real part or its day count."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    assert refusal(lambda: es.tell(state, es.ask(state), [odd, 0, 1, 2])).startswith(
        f"fitness must be real numbers, one per member, got a numpy.{type(odd).__name__} (member 0: ")


def test_numbers_below_their_float_types_smallest_are_rounded_whatever_numpy_seterr_asks():
    """Under numpy.seterr(all="raise"), an underflow is what the method means by it (a number rounded
    to 0): generations of tied fitnesses decaying Adam's moments, a tiny lr, a subnormal x, a sigma near
    float32's smallest (on parameters of 0, which it resolves) give the same results as under NumPy's
    defaults, not a FloatingPointError."""
    def run(es, generations, fitness, x):
        state = es.init({"w": np.ones((2, 3), np.float32) if es.sigma > 1e-7 else np.zeros((2, 3), np.float32)})
        for _ in range(generations):
            pop = es.ask(state)
            outputs = pop.linear("w", x)
            state = es.tell(state, pop, fitness(state.generation))[0]
        return state.params["w"], outputs, pop.member(1)["w"]
    cases = [(eggroll.Eggroll(4, 1, 0.1, 0), 800, lambda g: [1.0, 0.0, 0.0, 1.0] if g == 0 else [0.0] * 4,
              np.ones((2, 3), np.float32)),
             (eggroll.Eggroll(4, 1, 0.1, 0, lr=1e-45), 2, lambda g: [1.0, 0.0, 0.0, 1.0], np.full((2, 3), 1e-40, np.float32)),
             (eggroll.Eggroll(4, 1, 1.2e-38, 0), 2, lambda g: [0.0] * 4, np.ones((2, 3), np.float32)),
             (eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw"), 2, lambda g: [1e-20, 0.0, 0.0, 2e-20],
              np.ones((2, 3), np.float32))]
    for es, generations, fitness, x in cases:
        with np.errstate(all="ignore"):
            quiet = run(es, generations, fitness, x)
        with np.errstate(all="raise"):
            strict = run(es, generations, fitness, x)
        assert all(np.array_equal(a, b) for a, b in zip(quiet, strict))


def test_raw_differences_below_float32s_smallest_step_as_0_whatever_numpy_seterr_asks():
    """shaping="raw": a difference of 1e-50 is 0 in float32, that pair's weight; under
    numpy.seterr(all="raise") the step is the same, not a FloatingPointError of the cast."""
    es = eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw")
    state = es.init(W)
    pop = es.ask(state)
    quiet = es.tell(state, pop, [1e-50, 0.0, 0.0, 1.0])[0]
    with np.errstate(all="raise"):
        strict = es.tell(state, pop, [1e-50, 0.0, 0.0, 1.0])[0]
    assert np.array_equal(quiet.params["w"], strict.params["w"])


def told(es, state, population, fitness=(1.0, 2.0, 3.0, 4.0)):
    """The message of tell's refusal."""
    with pytest.raises(ValueError) as raised, np.errstate(all="ignore"):
        es.tell(state, population, list(fitness))
    return str(raised.value)


def test_a_foreign_population_or_state_is_told_in_full():
    es, other = eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 1)
    state = es.init(W)
    assert told(es, state, other.ask(state)) == (
        "the population was asked of another Eggroll (its seed 1, this Eggroll's 0): tell its fitness to the "
        "Eggroll that asked it")
    assert told(es, state, eggroll.Eggroll(4, 2, 0.1, 1).ask(state)) == (
        "the population was asked of another Eggroll (its seed 1, this Eggroll's 0; its rank 2, this Eggroll's 1): "
        "tell its fitness to the Eggroll that asked it")
    assert told(es, state, eggroll.Eggroll(4, 1, 0.2, 1).ask(state)) == (  # sigma too: not a sigma changed alone
        "the population was asked of another Eggroll (its seed 1, this Eggroll's 0; its sigma {'w': 0.2}, this "
        "Eggroll's {'w': 0.1}): tell its fitness to the Eggroll that asked it")
    assert told(es, state, eggroll.Eggroll(6, 1, 0.1, 0).ask(state)) == (
        "the population was asked of another Eggroll (its pairs 0..2, this Eggroll's 0..1 of its 2): tell its "
        "fitness to the Eggroll that asked it")
    assert told(es, state, es.ask(es.init({"w": np.zeros((2, 3), np.float32)}))) == (
        "the population was asked of another state's parameters, or of this state's before they changed (values): "
        "tell the state it was asked of, as it was asked")
    no_adam = ("state.optimiser does not hold Adam's state of the parameters: tell a State that init or tell "
               "returned (a State(params, {}, generation) made by hand can be asked, not told)")
    assert told(es, eggroll.State(W, None, 0), es.ask(eggroll.State(W, None, 0))) == no_adam
    other_names = dict(state.optimiser, m={"x": np.zeros(1)})
    handmade = eggroll.State(state.params, other_names, 0)
    assert told(es, handmade, es.ask(handmade)) == (
        "Adam's state holds no moments of parameter 'w' of shape (2, 3): it was added to the state or reshaped since "
        "init or tell; add or reshape parameters before init, or start again with init(state.params) (Adam and the "
        "generation from zero)")
    raw = eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw")
    start = raw.init(W)
    assert told(raw, start, raw.ask(start), (1e38, -1e38, 1e38, -1e38)) == (
        "this step would make parameter 'w' NaN or inf (sigma 0.1, lr 0.01): raise sigma, or scale "
        "the fitness down (raw differences set g's size) or shape it by centred ranks; the parameters and "
        "state given are left as they were")


def test_a_population_of_a_later_generation_is_refused_too():
    """tell refuses a population of any generation but the state's: a later one (asked of a state made
    by hand around the same parameters) as well as a stale one, for its noise is not the step's."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    later = eggroll.State(state.params, state.optimiser, 3)
    assert told(es, state, es.ask(later)) == (
        "the population is generation 3's, the state is at generation 0: tell the fitness of ask(state) with that "
        "same state")


def test_a_state_missing_any_part_of_adams_state_is_not_told():
    """tell checks every part of Adam's state before it steps: the second moments under the parameters'
    names (not only the first), and the step count t; a state lacking one is refused by name, not a
    KeyError from inside Adam."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    no_adam = ("state.optimiser does not hold Adam's state of the parameters: tell a State that init or tell "
               "returned (a State(params, {}, generation) made by hand can be asked, not told)")
    for optimiser, said in ((dict(state.optimiser, v={"x": np.zeros(1)}), "Adam's state holds no moments of "
                                                                           "parameter 'w' of shape (2, 3)"),
                            ({"m": state.optimiser["m"], "v": state.optimiser["v"]}, no_adam),
                            (dict(state.optimiser, m={"w": state.optimiser["m"]["w"].tolist()}),  # as read from JSON
                             "Adam's average of g of parameter 'w' is a list, not a NumPy array of float32 as the "
                             "parameter: tell a State that init or tell returned, or, restoring one from a file, give "
                             "each moment as its parameter's array type and dtype (e.g. numpy.asarray(m, "
                             "dtype=params[name].dtype))"),
                            (dict(state.optimiser, v={"w": np.zeros((2, 3), np.complex64)}),
                             "Adam's average of g^2 of parameter 'w' is a NumPy array of complex64, not a NumPy array "
                             "of float32 as the parameter"),
                            (dict(state.optimiser, m={"w": np.full((2, 3), Fraction(0), dtype=object)}),
                             "Adam's average of g of parameter 'w' is a NumPy array of object, not"),
                            (dict(state.optimiser, m={"w": np.zeros((2, 3))}),
                             "Adam's average of g of parameter 'w' is a NumPy array of float64, not"),
                            ({"m": {}, "v": {"w": [[0.0] * 3] * 2}, "t": 0},  # the second moment checked too
                             "Adam's average of g^2 of parameter 'w' is a list, not")):
        handmade = eggroll.State(state.params, optimiser, 0)
        assert told(es, handmade, es.ask(handmade)).startswith(said)


@pytest.mark.parametrize("sigma", [0.1, np.float64(0.1), np.float32(0.1)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_member_keeps_its_parameters_float_type(dtype, sigma):
    """A member's parameters are in their own float type whatever the type of sigma: a NumPy float64
    sigma does not make a float32 member float64."""
    es = eggroll.Eggroll(4, 2, sigma, 0)
    params = {"w": np.ones((2, 3), dtype), "b": np.ones(2, dtype)}
    member = es.ask(es.init(params)).member(1)
    assert {name: value.dtype for name, value in member.items()} == {"w": dtype, "b": dtype}


@pytest.mark.parametrize("dtype", [np.uint8, np.int64, bool])
@pytest.mark.parametrize("weights", [np.float32, np.float64])
def test_integer_inputs_give_each_members_true_product(dtype, weights):
    """An x of pixels (uint8), counts (int64) or spikes (bool) is multiplied in the weight's float
    type: every member's output is x (theta + sigma E_p)^T + its bias, formed here in float64."""
    es = eggroll.Eggroll(6, 2, 0.3, seed=5)
    state = es.init(mlp(2, dtype=weights))
    x = np.random.default_rng(0).integers(0, 2 if dtype is bool else 256, (4, 6)).astype(dtype)
    out = es.ask(state).linear("layer0.weight", x, bias="layer0.bias")
    assert out.dtype == weights
    for i in range(6):
        member = es.ask(state).member(i)
        exact = x.astype(np.float64) @ member["layer0.weight"].astype(np.float64).T + member["layer0.bias"]
        np.testing.assert_allclose(out[i], exact, rtol=1e-5 if weights is np.float32 else 1e-12, atol=1e-3)
    assert np.array_equal(es.ask(state).linear("layer0.weight", x.tolist(), bias="layer0.bias"), out)  # rows as lists


@pytest.mark.parametrize("weights", [np.float32, np.float64])
def test_a_float16_input_is_multiplied_in_the_weights_float_type(weights):
    """An x of float16 is made the weight's float type, as an integer x is: in float16 the members'
    differences, sigma x E_p^T, would round away (to a few parts in a thousand)."""
    es = eggroll.Eggroll(4, 1, 1e-3, seed=0)
    pop = es.ask(es.init(mlp(3, dtype=weights)))
    x = np.random.default_rng(1).normal(size=(3, 6)).astype(np.float16)
    out = pop.linear("layer0.weight", x, bias="layer0.bias")
    assert out.dtype == weights
    np.testing.assert_array_equal(out, pop.linear("layer0.weight", x.astype(weights), bias="layer0.bias"))


@pytest.mark.parametrize("weights", [np.float32, np.float64])
@pytest.mark.parametrize("inputs", [np.float32, np.float64, ">f4", ">f8"])
@pytest.mark.parametrize("per_member", [False, True])
def test_linear_is_in_xs_float_type_with_or_without_a_bias(weights, inputs, per_member):
    """A float x is multiplied in its own float type, whatever the weights' (the docstring's rule) and
    whatever its byte order, shared or one per member; without a bias each member's output is
    x (theta + sigma E_p)^T alone."""
    es = eggroll.Eggroll(4, 2, 0.3, seed=1)
    pop = es.ask(es.init(mlp(3, dtype=weights)))
    x = np.random.default_rng(2).normal(size=(4, 3, 6) if per_member else (3, 6)).astype(inputs)
    for bias in (None, "layer0.bias"):
        out = pop.linear("layer0.weight", x, bias=bias)
        assert out.dtype == np.dtype(inputs).newbyteorder("=")
        for i in range(4):
            member = {name: value.astype(np.float64) for name, value in pop.member(i).items()}
            exact = (x[i] if per_member else x).astype(np.float64) @ member["layer0.weight"].T
            np.testing.assert_allclose(out[i], exact + (member[bias] if bias else 0), rtol=1e-5, atol=1e-5)


def test_linears_errors_name_what_is_there():
    """The messages in full: the parameters there are, the members a per-member x needs, and the
    transpose named only when the weight fits x the other way round (a 2-D or a per-member x)."""
    es = eggroll.Eggroll(4, 1, 0.1, seed=0)
    pop = es.ask(es.init({"w": np.ones((3, 6)), "b": np.ones(3)}))
    cases = [(lambda: pop.linear("v", np.ones((2, 6))), "unknown parameter 'v': the parameters are b, w"),
             (lambda: pop.perturbed(7), "a parameter's name is a string, got 7: the parameters are b, w"),
             (lambda: pop.linear("w", np.ones((5, 2, 6))), "x of shape (2·pairs, N, n) needs 2·pairs = 4 members, got 5"),
             (lambda: pop.linear("w", np.ones((2, 7))),
              "x of shape (2, 7) does not fit w of shape (3, 6): a layer is x W^T, so x needs 6 columns"),
             (lambda: pop.linear("w", np.ones((4, 6, 3))),
              "x of shape (4, 6, 3) does not fit w of shape (3, 6): a layer is x W^T, so x needs 6 columns; "
              "store w as (out, in), its transpose")]
    for call, message in cases:
        with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
            call()


def test_asking_costs_nothing_however_large_the_population():
    """ask hands out keys: the largest population the noise can key (2^32 pairs) is asked at once,
    and a pair far out in it is the pair drawn alone."""
    es = eggroll.Eggroll(2 ** 33, 1, 0.1, seed=3)
    state = es.init(mlp(1))
    population = es.ask(state)
    assert population.members == 2 ** 33
    last = population.member(2 ** 33 - 2)
    alone = eggroll.Eggroll(2 ** 33, 1, 0.1, seed=3).population_of(state, slice(2 ** 32 - 1, 2 ** 32)).member(0)
    for name in last:
        np.testing.assert_array_equal(last[name], alone[name])


def test_a_population_of_any_slice_of_pairs_holds_those_pairs_of_the_whole():
    """population_of(state, pairs) for a slice with a step (a negative one too) holds, member for
    member, the members of those pairs in the whole population, and its products are theirs."""
    es = eggroll.Eggroll(20, 2, 0.2, seed=4)
    state = es.init(mlp(7))
    whole = es.ask(state)
    x = np.random.default_rng(7).normal(size=(3, 6))
    every = whole.linear("layer0.weight", x, bias="layer0.bias")
    for pairs in (slice(1, 8, 3), slice(9, None, -4)):
        part = es.population_of(state, pairs)
        held = [2 * pair + side for pair in range(10)[pairs] for side in (0, 1)]
        assert part.members == len(held) == 6
        for i, member in enumerate(held):
            assert all(np.array_equal(part.member(i)[n], whole.member(member)[n]) for n in state.params)
        np.testing.assert_allclose(part.linear("layer0.weight", x, bias="layer0.bias"), every[held],
                                   rtol=1e-12, atol=1e-12)


PINNED_IDS = {"enc.w": 0xD456AFBE, "W3": 0x8905AE21}  # 2^31 | the first 31 bits of SHA-256(name), little-endian


def test_two_names_of_one_stream_are_refused():
    """p19847 and p42256 share the 31 bits of their streams' word (a collision found by search):
    perturbed alike, they would move together, so init refuses them."""
    assert noise.param_id("p19847") == noise.param_id("p42256")
    with pytest.raises(ValueError, match="parameters 'p19847' and 'p42256' share a noise stream: rename one"):
        eggroll.Eggroll(4, 1, 0.1, 0).init({"p19847": np.ones(3), "p42256": np.ones(3)})


def test_a_names_stream_is_the_same_in_every_process():
    """param_id of a name beyond the paper's four is fixed by the name alone: the same in processes
    with different hash seeds (Python's hash() of a str is not), and these values for good."""
    script = "import noise; print([noise.param_id(n) for n in ('enc.w', 'layer0.weight', 'W3')])"
    said = {subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True, cwd=ROOT,
                           env={**os.environ, "PYTHONHASHSEED": seed}).stdout for seed in ("1", "2")}
    assert said == {f"{[noise.param_id(n) for n in ('enc.w', 'layer0.weight', 'W3')]}\n"}
    assert noise.param_id("enc.w") == PINNED_IDS["enc.w"] and noise.param_id("W3") == PINNED_IDS["W3"]


def test_noise_streams_are_keyed_by_name():
    """The paper's four parameters keep their streams (every committed run keeps its bits); any other
    name has its own, the same in every call, apart from those four and from its neighbours'."""
    assert [noise.param_id(name) for name in ("W1", "b1", "W2", "b2")] == [0, 1, 2, 3]
    names = ["W3", "b3", "enc.w", "enc.b", "layer0.weight", "layer1.weight"]
    ids = [noise.param_id(name) for name in names]
    assert len(set(ids)) == len(ids) and all(i >= 2 ** 31 for i in ids)
    assert ids == [noise.param_id(name) for name in names]
    assert not np.array_equal(noise.normals(1, 0, [0], "enc.w", 8), noise.normals(1, 0, [0], "enc.b", 8))


# ---------------------------------------------------------------------------------------------
# The spiking network of any depth

def deep_problem(sizes=(12, 7, 5, 4)):
    params = {name: value.astype(np.float64) for name, value in snn.init_params(2, sizes, std=0.6).items()}
    frames = (np.random.default_rng(3).random((5, 6, sizes[0])) < 0.4).astype(np.float64)
    return params, frames


def test_a_deeper_networks_members_run_as_their_parameters_say():
    """Three LIF layers: the population's output counts equal snn.forward of each member's formed
    parameters; every layer's noise reaches the output (none is left out)."""
    params, frames = deep_problem()
    config = snn_eggroll.Config(12, 2, 0.4, seed=4, logit_scale=2.0, output_sigma_scale=0.5)
    population = config.members(params, 3)
    assert population.sigma == {"W1": 0.4, "b1": 0.4, "W2": 0.4, "b2": 0.4, "W3": 0.2, "b3": 0.2}
    counts, hidden = snn_eggroll.population_forward(population, frames, count_hidden=True)
    assert counts.shape == (12, 6, 4) and counts.any()
    for i in range(12):
        expected, expected_hidden = snn.forward(population.member(i), frames, count_hidden=True)
        np.testing.assert_array_equal(counts[i], expected[0])
        assert hidden[i] == expected_hidden[0]
    assert len({counts[i].tobytes() for i in range(12)}) > 1


def test_a_deeper_network_trains_every_layer():
    """generation_step on three layers moves W3 by the step its own noise gives, and ask -> forward ->
    tell by hand gives the same bits."""
    params, frames = deep_problem()
    labels = np.arange(6) % 4
    config = snn_eggroll.Config(16, 1, 0.3, seed=1, logit_scale=3.0)
    adam = optim.Adam(0.05)
    new, state, _ = snn_eggroll.generation_step(params, optim.init(params), frames, labels, 2, config, adam)
    es = config.method(params, adam)
    before = eggroll.State(params, optim.init(params), 2)
    counts, _ = snn_eggroll.population_forward(es.ask(before), frames)
    by_hand, _ = es.tell(before, es.ask(before), snn_eggroll.fitness(counts, labels, 5, 3.0))
    for name in params:
        np.testing.assert_array_equal(new[name], by_hand.params[name])
        assert not np.array_equal(new[name], params[name]), name


def test_generation_steps_adam_state_is_fixed_in_its_own_words_not_ask_and_tells():
    """generation_step takes optim's state, not an eggroll.State: a state of float64 moments for
    float32 parameters, or of other parameters, is named with optim.init's fix, never "tell a State"."""
    params, frames = deep_problem()  # float64
    labels, config, adam = np.arange(6) % 4, snn_eggroll.Config(8, 1, 0.3, 1, 1.0), optim.Adam(0.05)
    narrow = {name: value.astype(np.float32) for name, value in params.items()}
    fewer = {name: value for name, value in params.items() if name != "b3"}
    for given, state, said in [
            (narrow, optim.init(params), "Adam's average of g of parameter 'W1' is a NumPy array of float64, not a "
                                         "NumPy array of float32 as the parameter: give the state that optim.init or "
                                         "the last generation_step returned, or, restoring one"),
            (params, optim.init(fewer), "Adam's state holds no moments of parameter 'b3' of shape (4,): it was "
                                        "added to the state or reshaped since optim.init or the last generation_step; "
                                        "add or reshape parameters before optim.init, or start again with "
                                        "optim.init(params)")]:
        with pytest.raises(ValueError) as refused:
            snn_eggroll.generation_step(given, state, frames.astype(given["W1"].dtype), labels, 0, config, adam)
        assert str(refused.value).startswith(said) and "tell" not in str(refused.value), str(refused.value)


def test_vanilla_es_refuses_a_deeper_network_and_bptt_steps_it():
    params, frames = deep_problem()
    labels = np.zeros(6, dtype=int)
    with pytest.raises(ValueError, match=r"^vanilla ES runs networks of two LIF layers \(one hidden\), got 3: use one "
                                         r"hidden size, or EGGROLL or BPTT for a deeper network$"):
        baselines.es_forward(params, frames.astype(np.float32), baselines.ESConfig(4, 0.1, 0, 1.0), 0)
    conv = snn.init_network(0, snn.Network.parse("conv8k5s2"))  # not told to pass network=, which ES lacks
    with pytest.raises(ValueError, match=r"^vanilla ES runs fully connected networks, whose W2 reads W1's 8 outputs, "
                                         r"got W1 \(8, 50\) and W2 \(10, 1800\) \(a convolution's\?\): use one "
                                         r"hidden size, or EGGROLL or BPTT for a convolutional network$"):
        baselines.es_forward(conv, np.ones((2, 3, 2312), np.float32), baselines.ESConfig(4, 0.1, 0, 1.0), 0)
    stepped, _, stats = baselines.bptt_step(params, optim.init(params), frames, labels,
                                            baselines.BPTTConfig(1.0, 1.0), optim.Adam(0.01))
    assert set(stepped) == set(params) and all(not np.array_equal(stepped[k], params[k]) for k in ("W1", "b3"))


@pytest.mark.parametrize("broken", [
    lambda p: {k: v for k, v in p.items() if k != "b2"},
    lambda p: {**p, "W2": p["W2"][:, :3]},
    lambda p: {"W1": p["W1"], "b1": p["b1"]},
])
def test_a_network_with_missing_or_misfitting_layers_is_refused(broken):
    params, frames = deep_problem()
    with pytest.raises(ValueError, match="snn.init_network"):
        snn_eggroll.perturbed_forward(broken(params), frames, snn_eggroll.Config(4, 1, 0.1, 0, 1.0), 0)


@pytest.mark.parametrize("sigma", [Fraction(1, 10), np.float64(0.1), np.float32(0.1), np.float16(0.1)])
def test_a_sigma_of_any_real_type_steps_as_the_python_float_it_holds(sigma):
    """A Fraction, a NumPy float64 (np.logspace's) or float16 sigma is taken as float(sigma): the
    products stay in x's float type, a row of `perturbed` is `member` bit for bit, and the step is the
    float sigma's (a float16 sigma would overflow 2 P sigma to inf and step by 0)."""
    params = mlp(2, dtype=np.float32)
    es, plain = eggroll.Eggroll(8, 2, sigma, 0), eggroll.Eggroll(8, 2, float(sigma), 0)
    state = es.init(params)
    pop, x = es.ask(state), np.ones((3, 6), np.float32)
    out = pop.linear("layer0.weight", x, bias="layer0.bias")
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, plain.ask(state).linear("layer0.weight", x, bias="layer0.bias"))
    assert np.array_equal(pop.perturbed("layer0.weight")[3], pop.member(3)["layer0.weight"])
    fitness = np.arange(8.0)
    told, plainly = es.tell(state, pop, fitness)[0], plain.tell(state, plain.ask(state), fitness)[0]
    assert all(np.array_equal(told.params[n], plainly.params[n]) for n in params)
    assert all(told.params[n].dtype == np.float32 and told.optimiser["v"][n].dtype == np.float32 for n in params)


@pytest.mark.parametrize("make, message", [
    (lambda: eggroll.Eggroll(4, 1, 10 ** 400, 0), "sigma must be a finite int or float > 0, got an int of about 401 "
                                                  "digits"),
    (lambda: eggroll.Eggroll(4, 1, {"w": 10 ** 400}, 0), "sigma of 'w' must be a finite int or float > 0, got an int "
                                                         "of about 401 digits"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, lr=10 ** 400), "lr must be a finite int or float >= 0, got an int of about "
                                                          "401 digits"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, weight_decay=-10 ** 400), "weight_decay must be a finite int or float >= 0, got"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, team=distributed.Alone),
     "team must be distributed.ALONE or distributed.team(update), got the class Alone: give one of those"),
    (lambda: distributed.team("nope"), "unknown update 'nope': use one of seeds, allreduce"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"\ud800": np.ones(3)}),
     "parameter name '\\ud800' is no UTF-8 text (a lone surrogate): rename it"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": (v for v in [1.0, 2.0])}),
     "parameter 'w' is a generator, not an array: give numpy.asarray(w, dtype=numpy.float32)"),
    (lambda: (lambda es, s: es.tell(s, es.ask(s), (v for v in range(4))))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness is a generator, not numbers in member order: give list(fitness)"),
])
def test_a_setting_or_input_of_an_odd_type_is_one_value_error(make, message):
    """Ints too large for a float, a class for a team, an update no team knows, a name with no UTF-8
    bytes for the noise's key, a generator for an array: each one ValueError naming the fix."""
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_tell_checks_the_state_it_is_told_again():
    """Parameters or Adam's state changed in a state between ask and tell, or made by hand, are refused
    before any step: a weight made float16 or float32 (its moments are float64), a reshaped bias (which
    would broadcast to a matrix), a weight of other shape, a bias of other values, a step count that is no
    whole number."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    fitness = [1.0, 2.0, 3.0, 4.0]
    since_ask = "the state's parameters changed since ask ({}): tell the state as it was asked, and change it after"
    for name, value, change in [("layer0.weight", lambda v: v.astype(np.float16), "retyped 'layer0.weight'"),
                                ("layer0.weight", lambda v: v.astype(np.float32), "retyped 'layer0.weight'"),
                                ("layer0.bias", lambda v: v[:, None], "reshaped 'layer0.bias'"),
                                ("layer1.weight", lambda v: np.ones((7, 9)), "reshaped 'layer1.weight'"),
                                ("layer1.bias", lambda v: v + 1, "values")]:
        state = es.init(mlp(1))
        pop = es.ask(state)
        state.params[name] = value(state.params[name])
        with pytest.raises(ValueError) as raised:
            es.tell(state, pop, fitness)
        assert str(raised.value) == since_ask.format(change)
    for swap, kind in [(lambda v: np.ma.masked_array(v, np.zeros(v.shape, bool)), "numpy.ma.MaskedArray"),
                       (np.asmatrix, "numpy.matrix")]:  # the same shape and type, swapped in place: checked again
        state = es.init(mlp(1))
        pop = es.ask(state)
        state.params["layer0.weight"] = swap(state.params["layer0.weight"])
        with pytest.raises(ValueError, match=re.escape(f"parameter 'layer0.weight' is a {kind}")):
            es.tell(state, pop, fitness)
    state = es.init(mlp(1))
    for optimiser, match in [(dict(state.optimiser, t="0"), "step count t must be a whole number in 0..9223372036854775807, got '0'"),
                             (dict(state.optimiser, t=-1), "step count t must be a whole number in 0..9223372036854775807, got -1"),
                             (dict(state.optimiser, m={n: None for n in state.params}), "Adam's state")]:
        hand_made = eggroll.State(state.params, optimiser, 0)
        with pytest.raises(ValueError, match=re.escape(match)):
            es.tell(hand_made, es.ask(hand_made), fitness)


def test_rows_refuse_what_is_no_layer():
    """Population.rows, the noise of one layer, takes a 2-D weight, its own 1-D bias and a float type (a
    name NumPy knows no type by is refused as another type is)."""
    pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(mlp(1)))
    for weight, bias, dtype, match in [("layer0.bias", None, np.float32, "a layer needs a 2-D weight"),
                                       ("layer0.weight", "layer1.weight", np.float32, "bias 'layer1.weight' has shape"),
                                       ("layer0.weight", "layer1.bias", np.float32, "bias 'layer1.bias' has shape"),
                                       ("layer0.weight", None, np.int64, "rows are float32 or float64, got int64"),
                                       ("layer0.weight", None, "banana", "rows are float32 or float64, got 'banana'")]:
        with pytest.raises(ValueError, match=re.escape(match)):
            pop.rows(weight, bias, dtype)
    rows, B = pop.rows("layer0.weight", "layer0.bias", np.float64)
    assert rows.dtype == B.dtype == np.float64 and rows.shape == (2, 2, 5) and B.shape == (2, 1, 6)


def test_a_process_given_no_pairs_runs_every_layer_and_is_told_so_for_a_member():
    """A team may give a process no pairs: its layers, shared x or one per member, give (0, N, m), and
    its noise is (0, count); asking it for a member says why there is none."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(mlp(1))
    none = es.population_of(state, slice(0, 0))
    assert none.linear("layer0.weight", np.ones((3, 6))).shape == (0, 3, 5)
    assert none.linear("layer1.weight", np.ones((0, 3, 5)), bias="layer1.bias").shape == (0, 3, 3)
    assert noise.normals(0, 0, np.arange(2), "w", 0).shape == (2, 0)
    with pytest.raises(ValueError, match="this population holds no members"):
        none.member(0)


def test_fitness_of_any_float_type_or_byte_order_is_stepped_alike():
    """tell ranks and gathers the fitness in float64, in this machine's byte order: float32, float64
    and big-endian fitnesses of the same values give the same step, alone or from processes of a team
    that gave different types (which would otherwise gather each other's bytes as garbage)."""
    params = mlp(1, dtype=np.float32)
    values = np.array([0.5, -1.25, 3.0, 2.0, 0.25, 7.5, -3.0, 1.0] * 16)
    es = eggroll.Eggroll(128, 1, 0.1, 0)
    state = es.init(params)
    steps = [es.tell(state, es.ask(state), values.astype(dtype))[0].params
             for dtype in (np.float32, np.float64, np.dtype(">f8"), np.dtype(">f4"))]

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        state = es.init(params)
        pop = es.ask(state)
        mine = np.concatenate([values, values])[2 * pop.pairs.start:2 * pop.pairs.stop]
        return es.tell(state, pop, mine.astype([np.float32, ">f8"][team.rank]))[0].params

    alone = eggroll.Eggroll(256, 1, 0.1, 0)
    start = alone.init(params)
    steps.append(alone.tell(start, alone.ask(start), np.concatenate([values, values]))[0].params)
    steps += run_team(2, body)[0]
    assert all(np.array_equal(step[n], steps[0 if i < 4 else 4][n]) for i, step in enumerate(steps) for n in params)


def test_processes_given_other_settings_or_parameters_are_refused_at_ask():
    """Under a team, ask compares every process's settings and parameters: a seed or a weight that
    differs on one process is one ValueError on each, naming what differs; the same on all is taken."""
    def init_with(seed_of, params_of):
        def body(team):
            es = eggroll.Eggroll(4, 1, 0.1, seed_of(team.rank), team=team)
            state = es.init(params_of(team.rank))
            try:
                es.ask(state)
            except ValueError as error:
                return str(error)
            return state
        return run_team(2, body)[0]

    refused = init_with(lambda rank: rank, lambda rank: mlp(0))
    assert refused[0] == refused[1] and refused[0].startswith(
        "the processes of this team hold different Eggrolls or states: seed (rank 0: 0; rank 1: 1)")
    refused = init_with(lambda rank: 0, lambda rank: mlp(rank))  # named by a fingerprint short enough to read
    assert refused[0] == refused[1] and re.search(r"states: parameters \(rank 0: [0-9a-f]{16}; rank 1: [0-9a-f]{16}\);",
                                                  refused[0])
    taken = init_with(lambda rank: 0, lambda rank: mlp(0))
    assert all(isinstance(state, eggroll.State) for state in taken)


@pytest.mark.parametrize("change", ["t", "m"])
def test_processes_holding_other_adam_states_are_refused_at_ask(change):
    """Under a team, ask compares Adam's state too: a step count or a moment that differs on one
    process (each would then take its own step) is one ValueError on each, naming it; the state a
    process made by hand to ask, with no moments, is named as what it is."""
    def body(team):
        es = eggroll.Eggroll(4, 1, 0.1, 0, team=team)
        state = es.init(mlp(0))
        if team.rank == 1:
            moved = {**state.optimiser["m"], "layer0.bias": state.optimiser["m"]["layer0.bias"] + 1} if change == "m" \
                else state.optimiser["m"]
            state = eggroll.State(state.params, {**state.optimiser, "m": moved, "t": 7 if change == "t" else 0}, 0)
        try:
            es.ask(state)
        except ValueError as error:
            return str(error)
    refused = run_team(2, body)[0]
    assert refused[0] == refused[1] and re.search(
        r"states: optimiser \(rank 0: [0-9a-f]{16}, t 0; rank 1: [0-9a-f]{16}, t " + ("7" if change == "t" else "0")
        + r"\);", refused[0]), refused
    assert interface_checks.optimiser_summary({}) == "a dict"


def test_states_and_populations_hash_and_compare_as_themselves():
    """A State or a Population is itself: it hashes, and == is identity, never NumPy's elementwise
    truth (which raises); the population's sigma is its own copy, not the Eggroll's."""
    es = eggroll.Eggroll(4, 1, {name: 0.1 for name in mlp(1)}, 0)
    state = es.init(mlp(1))
    pop = es.ask(state)
    assert len({state, pop, state}) == 2
    assert state == state and state != pickle.loads(pickle.dumps(state))
    pop.sigma["layer0.weight"] = -5.0
    assert es.sigma["layer0.weight"] == 0.1 and es.ask(state).sigma["layer0.weight"] == 0.1


def test_a_read_only_mapping_is_taken_as_sigma():
    """Any Mapping of names to floats is a sigma, as any Mapping is a params."""
    sigma = types.MappingProxyType({name: 0.1 for name in mlp(1)})
    es = eggroll.Eggroll(4, 1, sigma, 0)
    assert es.sigma == dict(sigma) and es == eggroll.Eggroll(4, 1, dict(sigma), 0)


class CountingTeam(distributed.Alone):
    """A team of two that agrees with itself and keeps what it was asked to compare."""
    size, update = 2, "allreduce"

    def __init__(self):
        self.compared = []

    def disagreement(self, values):
        self.compared.append(values)
        return None


def test_a_team_compares_settings_update_generation_and_parameters_at_every_ask():
    team = CountingTeam()
    es = eggroll.Eggroll(4, 1, 0.1, 0, team=team)
    state = es.init(W)
    es.ask(state)
    es.ask(eggroll.State(state.params, state.optimiser, 3))
    assert [values["generation"] for values in team.compared] == [0, 3]
    assert {"population", "rank", "sigma", "seed", "lr", "weight_decay", "shaping", "update",
            "parameters"} <= set(team.compared[0])
    assert team.compared[0]["update"] == "allreduce"  # the team's own: processes that sum otherwise differ
    assert team.compared[0]["parameters"] == team.compared[1]["parameters"]


def test_processes_agree_whatever_order_their_dicts_hold_and_disagree_on_a_resumed_state():
    """The same parameters and sigma in another dict order are the same Eggroll and state: allreduce
    sums each name's gradient with its own (not the next name's), and the processes end alike; a
    process asking at another generation stops every process with one ValueError."""
    params = mlp(1, dtype=np.float32)

    def body(team):
        ordered = params if team.rank == 0 else dict(reversed(list(params.items())))
        sigma = {name: 0.1 for name in (reversed(list(params)) if team.rank else params)}  # each in its own order
        es = eggroll.Eggroll(256, 1, sigma, 0, team=team)
        state = es.init(ordered)
        for _ in range(2):
            pop = es.ask(state)
            out = pop.linear("layer1.weight", np.tanh(pop.linear("layer0.weight", np.ones((3, 6), np.float32))))
            state, _ = es.tell(state, pop, out.sum(axis=(1, 2)))
        return state.params

    first, second = run_team(2, body, "allreduce")[0]
    assert all(np.array_equal(first[name], second[name]) for name in params)

    def skewed(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        state = es.init(params)
        try:
            es.ask(eggroll.State(state.params, state.optimiser, team.rank))
        except ValueError as error:
            return str(error)

    said = run_team(2, skewed)[0]
    assert said[0] == said[1] and "generation (rank 0: 0; rank 1: 1)" in said[0]


@pytest.mark.parametrize("change, message", [
    (lambda es: es.sigma.update(w="0.1"), "sigma of 'w' must be a finite int or float > 0, got '0.1'"),
    (lambda es: es.sigma.update(w=np.array([0.1, 0.2])), "sigma of 'w' must be a finite int or float > 0, got a NumPy array"),
])
def test_a_sigma_dict_changed_in_place_is_checked_again_at_ask(change, message):
    es = eggroll.Eggroll(4, 1, {"w": 0.1}, 0)
    state = es.init(W)
    change(es)
    with pytest.raises(ValueError, match=re.escape(message)):
        es.ask(state)


def test_a_float16_put_into_a_sigma_dict_steps_as_its_float():
    fitness = np.random.default_rng(0).normal(size=64)
    steps = []
    for sigma in (1.0, np.float16(1.0)):
        es = eggroll.Eggroll(64, 1, {"w": 1.0}, 0)
        state = es.init(W)
        es.sigma["w"] = sigma
        steps.append(es.tell(state, es.ask(state), fitness)[0].params["w"])
    assert np.array_equal(*steps) and not np.array_equal(steps[0], W["w"])


class DuckTeam:
    def my_pairs(self, n_pairs, per_block):
        return slice(0, n_pairs)

    update_pairs = my_pairs

    def gather(self, values, *args):
        return values

    def sum(self, grads):
        return grads


class NotNumpy:
    """An array of another library (torch's, JAX's): NumPy's dtype, no NumPy array."""
    ndim, shape, size, dtype = 2, (2, 3), 6, np.dtype(np.float32)


class ArrayApiArray(NotNumpy):
    """An array of a library that names its module by the array API (JAX's): a module with no asnumpy,
    neither NumPy nor CuPy."""
    def __array_namespace__(self):
        return types.SimpleNamespace(float32=np.float32, float64=np.float64)


class SizelessTeam(DuckTeam):
    """A team with every method but no size or update: how many processes it has, and how they sum, are
    unknown."""
    def disagreement(self, values):
        return None


@pytest.mark.parametrize("make, message", [
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, team=DuckTeam()), "(it has no disagreement, size, update)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, lr=0.5, weight_decay=2.0), "lr x weight_decay must be < 1, got 0.5 x 2.0"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, lr={"w": 0.1, "b": 0.5}, weight_decay=2.0),
     "lr of 'b' x weight_decay must be < 1, got 0.5 x 2.0"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, shaping=np.array(["raw"])), "unknown shaping array(['raw']"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": NotNumpy()}),
     "parameter 'w' is a test_interface.NotNumpy: EGGROLL steps NumPy arrays, or CuPy's on a GPU; give numpy.asarray(w, dtype=numpy.float32)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": ArrayApiArray()}),
     "parameter 'w' is a test_interface.ArrayApiArray: EGGROLL steps NumPy arrays, or CuPy's on a GPU; give numpy.asarray(w, dtype=numpy.float32)"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": scipy.sparse.csr_matrix(np.ones((2, 3)))}),
     "parameter 'w' is a scipy.sparse._csr.csr_matrix: EGGROLL steps NumPy arrays, or CuPy's on a GPU; give "
     "w.toarray()"),  # numpy.asarray would wrap it as one object
    (lambda: (lambda es: es.ask(es.init(W)).linear("w", scipy.sparse.csr_matrix(np.ones((4, 3)))))(
        eggroll.Eggroll(4, 1, 0.1, 0)), "x must be an array of ints or floats, got an array of object: give "
     "x.toarray()"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0, team=SizelessTeam()), "(it has no size, update)"),
    (lambda: (lambda es, s: es.tell(s, es.ask(s), np.array(list("abcd"))))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness must be real numbers, one per member, got text (member 0: 'a')"),
    (lambda: (lambda es, s: es.tell(s, es.ask(s), np.ones(4, np.complex64)))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness must be real numbers, one per member, got an array of complex64"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": strict_array.asarray(np.ones((2, 3), np.float32)),
                                                 "b": np.ones(2, np.float32)}),
     "the parameters live in different array modules (numpy, strict_array): give them all as NumPy arrays"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W)).factors(None),
     "a parameter's name is a string, got None"),
    (lambda: eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W)).rows(None, None, np.float32),
     "a parameter's name is a string, got None"),
    (lambda: eggroll.Population(W, 0.1, 1, 0, 0, range(2)), "a Population is made by Eggroll.ask"),
    (lambda: eggroll.Population(W, {"w": 0.1}, 1, 0, 0, [0, 1]), "a Population is made by Eggroll.ask"),
    (lambda: eggroll.Population(W, {"w": 0.1}, 1, 0, 0, (0, 1)), "a Population is made by Eggroll.ask"),
    (lambda: (lambda es, s: es.tell(s, es.ask(s), np.array([2 ** 60 + 3, 2 ** 60 + 1, 2 ** 60 + 2, 2 ** 60])))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "fitness holds numbers closer together than float64, in which they are ranked, can tell apart"),
    (lambda: (lambda es, s: es.tell(eggroll.State(s.params, dict(s.optimiser, t=10 ** 400), 0), es.ask(s), range(4)))(
        eggroll.Eggroll(4, 1, 0.1, 0), eggroll.Eggroll(4, 1, 0.1, 0).init(W)),
     "state.optimiser's step count t must be a whole number in 0..9223372036854775807"),
])
def test_odd_teams_settings_arrays_names_and_counts_are_refused_by_name(make, message):
    with pytest.raises(ValueError, match=re.escape(message)):
        make()


def test_integers_float64_cannot_hold_are_refused_without_a_warning_first():
    """Two uint64 fitnesses near 2^64, which float64 makes one: the one ValueError says so, with no
    RuntimeWarning about the cast printed before it."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="fitness holds numbers closer together than float64"):
            es.tell(state, es.ask(state), np.array([2 ** 64 - 1, 2 ** 64 - 2, 0, 1], dtype=np.uint64))


def test_parameters_added_since_ask_are_named_so():
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    pop = es.ask(state)
    state.params["extra"] = np.ones(2, np.float32)
    with pytest.raises(ValueError, match=re.escape("the state's parameters changed since ask (added 'extra')")):
        es.tell(state, pop, range(4))


def test_fractions_are_fitness_and_float_is_float64_for_rows_and_a_numpy_count_does_not_wrap():
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    told = es.tell(state, es.ask(state), [Fraction(1, 3), Fraction(2, 3), Fraction(1), Fraction(0)])[0]
    assert np.array_equal(told.params["w"], es.tell(state, es.ask(state), [1 / 3, 2 / 3, 1.0, 0.0])[0].params["w"])
    assert es.ask(state).rows("w", None, float)[0].dtype == np.float64
    _, moments = optim.ascend(W, W, dict(optim.init(W), t=np.int32(2 ** 31 - 1)), optim.Adam(0.01))
    assert moments["t"] == 2 ** 31


def test_more_refusals_read_in_full():
    """The message of each refusal in full: a sigma dict of dicts, a parameter in the other byte order
    as float32 too, a masked parameter, a fitness of text given as a list, a per-member x of more than
    three dimensions with the wrong member count, rows of float16, a bool or text learning rate."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    swapped = np.dtype(np.float32).newbyteorder()
    pop = es.ask(es.init({"w": np.ones((3, 6)), "b": np.ones(3)}))
    cases = [
        (lambda: eggroll.Eggroll(4, 1, {"w": {"x": 0.1}}, 0),
         "sigma of 'w' must be a finite int or float > 0, got a dict: use e.g. {'w': 0.1}"),
        (lambda: es.init({"w": np.ones((2, 3), swapped)}),
         f"parameter 'w' is {swapped}: EGGROLL steps float32 or float64 arrays in this machine's byte order; "
         f"give w.astype(numpy.float32)"),
        (lambda: es.init({"w": np.ma.masked_array(np.ones((2, 3)), mask=np.eye(2, 3))}),
         "parameter 'w' is a numpy.ma.MaskedArray, whose products and masks follow other rules: give "
         "numpy.asarray(w)"),
        (lambda: (lambda state: es.tell(state, es.ask(state), ["a", "b", "c", "d"]))(es.init(W)),
         "fitness must be real numbers, one per member, got text (member 0: 'a')"),
        (lambda: pop.linear("w", np.ones((5, 2, 2, 6))), "x of shape (2·pairs, N, n) needs 2·pairs = 4 members, got 5"),
        (lambda: pop.rows("w", "b", np.float16), "rows are float32 or float64, got float16"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0, lr=True), "lr must be a finite int or float >= 0, got True: use e.g. 0.01"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0, weight_decay="0.1"),
         "weight_decay must be a finite int or float >= 0, got '0.1': use e.g. 0.0"),
    ]
    for make, message in cases:
        with pytest.raises(ValueError) as raised:
            make()
        assert str(raised.value) == message


def test_a_per_member_x_of_more_dimensions_is_each_members_product():
    """x of shape (2·pairs, a, N, n), one stack of inputs per member, gives each member's own product."""
    es = eggroll.Eggroll(4, 1, 0.2, seed=2)
    pop = es.ask(es.init(mlp(3)))
    x = np.random.default_rng(3).normal(size=(4, 2, 3, 6))
    out = pop.linear("layer0.weight", x, bias="layer0.bias")
    for i in range(4):
        member = pop.member(i)
        np.testing.assert_allclose(out[i], x[i] @ member["layer0.weight"].T + member["layer0.bias"], rtol=1e-12,
                                   atol=1e-12)


def test_the_ends_of_float32s_range_are_sigmas():
    """float32's smallest normal number and its largest are each a sigma init takes (the range is closed;
    the parameters 0, which any sigma moves)."""
    for sigma in (float(np.finfo(np.float32).tiny), float(np.finfo(np.float32).max)):
        state = eggroll.Eggroll(4, 1, sigma, 0).init({"w": np.zeros((2, 3), np.float32)})
        assert set(state.params) == {"w"}


@pytest.mark.parametrize("changed", [[0.1], float("nan"), 0.0])
def test_a_sigma_dict_changed_to_nonsense_between_ask_and_tell_is_said_as_such(changed):
    """A sigma dict the caller changes after ask to what no sigma can be is refused at tell as a sigma,
    not as a population of another sigma (nor by float()'s TypeError)."""
    es = eggroll.Eggroll(4, 1, {"w": 0.1}, 0)
    state = es.init(W)
    population = es.ask(state)
    es.sigma["w"] = changed
    assert told(es, state, population).startswith("sigma of 'w' must be a finite int or float > 0, got ")


def test_the_digest_of_parameters_holds_their_names():
    """Two dicts of the same values under other names digest apart (a team compares digests)."""
    value = np.arange(6, dtype=np.float32).reshape(2, 3)
    assert interface_checks.digest_of({"a": value}) != interface_checks.digest_of({"b": value})
    assert interface_checks.digest_of({"a": value, "b": value + 1}) == \
        interface_checks.digest_of({"b": value + 1, "a": value.copy()})


def test_a_refused_step_names_a_sigma_dicts_own_sigma():
    """With sigma a dict, the refusal of a step whose g^2 overflows names the parameter's own sigma."""
    es = eggroll.Eggroll(4, 1, {"w": 1e-25, "b": 0.1}, 0)
    state = es.init({"w": np.zeros((2, 3), np.float32), "b": np.ones(2, np.float32)})  # 0 resolves any sigma
    with np.errstate(over="ignore"):
        message = told(es, state, es.ask(state))
    assert message.startswith("this step would make Adam's average of g^2 of parameter 'w' NaN or inf, g too "
                              "large (sigma 1e-25, lr 0.01): raise sigma;")


def test_adams_state_of_other_names_or_no_dict_is_not_told():
    """Adam's moments must be dicts under exactly the parameters' names: a moment that is no dict, or
    one with a name more, is refused by name (not a TypeError, not taken)."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    no_adam = ("state.optimiser does not hold Adam's state of the parameters: tell a State that init or tell "
               "returned (a State(params, {}, generation) made by hand can be asked, not told)")
    for optimiser in (dict(state.optimiser, m=None), dict(state.optimiser, v=5)):
        handmade = eggroll.State(state.params, optimiser, 0)
        assert told(es, handmade, es.ask(handmade)) == no_adam
    for moment in ("m", "v"):  # a name more in either moment
        extra = dict(state.optimiser, **{moment: {**state.optimiser[moment], "x": np.zeros(1)}})
        handmade = eggroll.State(state.params, extra, 0)
        assert told(es, handmade, es.ask(handmade)) == (
            "Adam's state holds moments of 'x', which the state's parameters lack: it was removed since init or "
            "tell; start again with init(state.params) (Adam and the generation from zero)")


def test_learning_rates_of_any_real_type_step_as_the_python_floats_they_hold():
    """A Fraction or NumPy lr and weight decay are taken as float: the Eggroll holds Python floats, and
    tell's step is the float settings' bit for bit (a NumPy float64 lr would form a float32 weight's
    step in float64)."""
    params = mlp(2, dtype=np.float32)
    plain = eggroll.Eggroll(8, 2, 0.1, 0, lr=0.01, weight_decay=0.5)
    state = plain.init(params)
    fitness = np.arange(8.0)
    expected = plain.tell(state, plain.ask(state), fitness)[0].params
    for lr, decay in ((Fraction(1, 100), Fraction(1, 2)), (np.float64(0.01), np.float64(0.5))):
        es = eggroll.Eggroll(8, 2, 0.1, 0, lr=lr, weight_decay=decay)
        assert type(es.lr) is float and type(es.weight_decay) is float
        stepped = es.tell(state, es.ask(state), fitness)[0].params
        assert all(np.array_equal(stepped[n], expected[n]) for n in params)


def test_an_lr_dict_steps_each_parameter_as_an_eggroll_of_its_lr_alone():
    """lr {name: lr}: tell steps each parameter as an Eggroll of that one lr does, bit for bit (the
    noise and the step g do not depend on lr; Adam, per parameter, does); its values are Python floats;
    one changed by hand after init is checked again at ask."""
    params = mlp(2, dtype=np.float32)
    rates = {name: rate for name, rate in zip(params, (0.01, 0.002, 0.05, Fraction(1, 1000)))}
    es = eggroll.Eggroll(8, 2, 0.1, 0, lr=rates, weight_decay=0.5)
    assert all(type(lr) is float for lr in es.lr.values())
    state, fitness = es.init(params), np.arange(8.0)
    stepped = es.tell(state, es.ask(state), fitness)[0].params
    for name, lr in rates.items():
        alone = eggroll.Eggroll(8, 2, 0.1, 0, lr=lr, weight_decay=0.5)
        assert np.array_equal(stepped[name], alone.tell(state, alone.ask(state), fitness)[0].params[name]), name
    plain = eggroll.Eggroll(8, 2, 0.1, 0, lr=0.01, weight_decay=0.5)  # the first lr, for every parameter
    plainly = plain.tell(state, plain.ask(state), fitness)[0].params
    assert [np.array_equal(stepped[name], plainly[name]) for name in params] == [True, False, False, False]
    es.lr["layer0.bias"] = -1.0
    with pytest.raises(ValueError, match=r"^lr of 'layer0.bias' must be a finite int or float >= 0, got -1.0"):
        es.ask(state)


def test_a_sigma_dict_of_any_real_type_holds_python_floats():
    """The values of a sigma dict are taken as float, as a single sigma is: a NumPy float64 one does not
    make a float32 layer's products float64."""
    params = mlp(2, dtype=np.float32)
    es = eggroll.Eggroll(4, 1, {name: np.float64(0.1) for name in params}, 0)
    assert all(type(sigma) is float for sigma in es.sigma.values())
    pop = es.ask(es.init(params))
    assert pop.linear("layer0.weight", np.ones((3, 6), np.float32), bias="layer0.bias").dtype == np.float32


def test_any_mapping_of_parameters_is_a_state_to_ask():
    """A State made by hand around a read-only Mapping of parameters is asked as the dict would be."""
    params = mlp(1)
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    pop = es.ask(eggroll.State(types.MappingProxyType(params), {}, 2))
    plain = es.ask(eggroll.State(params, {}, 2))
    assert all(np.array_equal(pop.member(3)[n], plain.member(3)[n]) for n in params)


def test_a_rank_above_a_bias_length_is_taken():
    """The rank bounds the weights alone: a bias shorter than the rank is perturbed as any bias is."""
    es = eggroll.Eggroll(4, 3, 0.1, 0)
    state = es.init({"w": np.ones((3, 6)), "b": np.ones(2)})
    assert es.ask(state).member(1)["b"].shape == (2,)


def test_a_state_made_by_one_process_and_broadcast_steps_as_one_made_by_every_process():
    """init is no collective call, so one process may make the state and broadcast it (a state loaded
    from one file, say): the team then steps exactly as when every process made its own."""
    def steps(made_by_rank_0_only):
        def body(team):
            es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)  # 2 blocks of 64 pairs: one for each process
            state = es.init(mlp(0)) if team.rank == 0 or not made_by_rank_0_only else None
            if made_by_rank_0_only:
                state = team.broadcast(state)
            for _ in range(2):
                pop = es.ask(state)
                fitness = pop.linear("layer0.weight", np.ones((2, 6), np.float32)).sum(axis=(1, 2))
                state, _ = es.tell(state, pop, fitness)
            return state.params
        return run_team(2, body)[0]

    alone, together = steps(True), steps(False)
    assert distributed.ALONE.broadcast(alone) is alone and distributed.ALONE.barrier() is None  # the script alone
    for name in together[0]:
        assert np.array_equal(alone[0][name], together[0][name]) and np.array_equal(alone[1][name], together[1][name])
    assert not np.array_equal(together[0]["layer0.weight"], mlp(0)["layer0.weight"])  # it stepped


def test_processes_given_another_sigma_or_shape_are_refused_and_another_order_is_taken():
    """ask compares every setting of a team's processes, sigma among them (each parameter's, a float
    and a dict that give every parameter the same sigma alike), and each parameter's shape as well as
    its values; the same parameters in another dict order are the same parameters."""
    def init_with(sigma_of, params_of):
        def body(team):
            es = eggroll.Eggroll(4, 1, sigma_of(team.rank), 0, team=team)
            state = es.init(params_of(team.rank))
            try:
                es.ask(state)
            except ValueError as error:
                return str(error)
            return state
        return run_team(2, body)[0]

    refused = init_with(lambda rank: 0.1 * (rank + 1), lambda rank: W)
    assert refused[0] == refused[1] and refused[0].startswith(
        'the processes of this team hold different Eggrolls or states: sigma (rank 0: {"w": 0.1}; rank 1: {"w": 0.2})')
    taken = init_with(lambda rank: {"w": 0.1} if rank else 0.1, lambda rank: W)  # one sigma, given two ways
    assert all(isinstance(state, eggroll.State) for state in taken)
    refused = init_with(lambda rank: 0.1, lambda rank: {"w": np.zeros((2, 3) if rank else (3, 2), np.float32)})
    assert refused[0] == refused[1] and "states: parameters (rank 0: " in refused[0]
    params = mlp(0)
    taken = init_with(lambda rank: 0.1, lambda rank: dict(reversed(params.items())) if rank else params)
    assert all(isinstance(state, eggroll.State) for state in taken)


def test_the_newer_refusals_read_in_full():
    """The whole line of each: a hand-made Population, a member of an empty share, parameters added
    since ask, integers float64 cannot hold, a step count that is no whole number."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    added = eggroll.State(dict(state.params), state.optimiser, 0)
    asked = es.ask(added)
    added.params["extra"] = np.ones(2, np.float32)
    for make, message in [
        (lambda: eggroll.Population(W, 0.1, 1, 0, 0, range(2)),
         "a Population is made by Eggroll.ask (its sigma {name: float} for every parameter, its pairs a range in "
         "0..2^32 - 1): ask "
         "for one"),
        (lambda: es.population_of(state, slice(0, 0)).member(0),
         "this population holds no members (a process given no pairs): ask no member of it"),
        (lambda: es.tell(added, asked, range(4)),
         "the state's parameters changed since ask (added 'extra'): tell the state as it was asked, and change it "
         "after"),
        (lambda: es.tell(state, es.ask(state), np.array([2 ** 60 + 3, 2 ** 60 + 1, 2 ** 60 + 2, 2 ** 60])),
         "fitness holds numbers closer together than float64, in which they are ranked, can tell apart: shift or "
         "scale them (e.g. subtract their smallest) before tell"),
        (lambda: es.tell(eggroll.State(state.params, dict(state.optimiser, t=0.5), 0), es.ask(state), range(4)),
         "state.optimiser's step count t must be a whole number in 0..9223372036854775807, got 0.5: use the State "
         "that init or tell returned, whose count starts at 0"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": np.ones((2, 3), np.dtype(np.float32).newbyteorder())}),
         f"parameter 'w' is {np.dtype(np.float32).newbyteorder()}: EGGROLL steps float32 or float64 arrays in this "
         f"machine's byte order; give w.astype(numpy.float32)"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": np.ones((2, 3), np.float16)}),
         "parameter 'w' is float16: EGGROLL steps float32 or float64 arrays; give w.astype(numpy.float32)"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": 1.0}),
         "parameter 'w' has shape (): EGGROLL perturbs 1-D (biases) and 2-D (weights) arrays; reshape it to one of "
         "them"),
        (lambda: eggroll.Eggroll(4, 1, 0.1, 0).init({"w": range(3)}),
         "parameter 'w' is a range, not an array: give numpy.asarray(w, dtype=numpy.float32)"),
    ]:
        with pytest.raises(ValueError) as raised:
            make()
        assert str(raised.value) == message
    assert eggroll.Eggroll(4, 1, 0.1, 0).ask(state).linear("w", np.ones((1, 3), np.float32)).shape == (4, 1, 2)


def test_a_population_pickled_apart_from_its_state_is_told_as_the_one_asked():
    """A state and its population saved in two files (a checkpoint mid-generation) hold equal copies
    of the parameters, not one dict: tell takes them, and steps as it would have without the pickle."""
    es = eggroll.Eggroll(8, 1, 0.1, 0)
    state = es.init(mlp(2))
    pop = es.ask(state)
    fitness = pop.linear("layer0.weight", np.ones((3, 6))).sum(axis=(1, 2))
    apart = es.tell(pickle.loads(pickle.dumps(state)), pickle.loads(pickle.dumps(pop)), fitness)[0]
    together = es.tell(state, pop, fitness)[0]
    assert all(np.array_equal(apart.params[name], together.params[name]) for name in state.params)
    changed = pickle.loads(pickle.dumps(state))
    changed.params["layer0.bias"][0] += 1.0  # changed after the pickle: refused, not stepped
    with pytest.raises(ValueError, match=re.escape("the population was asked of another state's parameters, or of this "
                                                   "state's before they changed (values)")):
        es.tell(changed, pickle.loads(pickle.dumps(pop)), fitness)


@pytest.mark.parametrize("fitness", [
    [2 ** 70 + 3, 2 ** 70 + 1, 2 ** 70 + 2, 2 ** 70],                          # Python ints beyond int64
    [Fraction(1, 3) + Fraction(k, 10 ** 30) for k in (3, 1, 2, 0)],             # closer than float64's step
    [Decimal(f"1.{k:021d}") for k in (3, 1, 2, 0)],                            # 1 + 3e-21, ...
    [2 ** 60 + 3, 2 ** 60 + 1, 2 ** 60 + 2, -1.0],                             # beside a float NumPy makes them float64
    [2 ** 64 - 1, 2 ** 64 - 2, 0, 1],                                          # uint64's range, NumPy's float64 too
    [np.int64(2 ** 60 + 3), np.int64(2 ** 60 + 1), np.int64(2 ** 60 + 2), 1.0],
    collections.deque([2 ** 60 + 3, 2 ** 60 + 1, 2 ** 60 + 2, -1.0]),          # any sequence, not a list alone
    collections.UserList([2 ** 60 + 3, 2 ** 60 + 1, 2 ** 60 + 2, -1.0]),
    (np.array(2 ** 60 + 3), 2 ** 60 + 1, 2 ** 60 + 2, -1.0),                   # a 0-d array's integer too
])
def test_numbers_float64_would_make_equal_are_refused_not_tied(fitness):
    """Different fitnesses that float64, in which they are ranked, cannot tell apart would tie and give
    no step: refused by name, as integers it makes equal are; the same numbers held apart are taken."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError, match="fitness holds numbers closer together than float64, in which they are "
                                         "ranked, can tell apart: shift or scale them"):
        es.tell(state, es.ask(state), fitness)
    apart = [float((value - min(fitness)) * 10 ** 30) for value in fitness]  # shifted and scaled, as advised
    assert not np.array_equal(es.tell(state, es.ask(state), apart)[0].params["w"], W["w"])


@pytest.mark.skipif(np.finfo(np.longdouble).eps >= np.finfo(np.float64).eps, reason="long double is float64 here")
def test_long_doubles_float64_would_make_equal_are_refused():
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    fitness = np.longdouble(1) + np.array([3, 1, 2, 0], np.longdouble) * np.longdouble(2.0 ** -60)
    with pytest.raises(ValueError, match="fitness holds numbers closer together than float64"):
        es.tell(state, es.ask(state), fitness)


@pytest.mark.parametrize("fitness", [
    [np.array(1.0), 2, 3, 4],                                        # a reduction's 0-d array beside a penalty 0
    [Fraction(1, 3), np.array(2.0), 3.0, np.float32(4.0)],
    (np.array(1, np.int8), np.array(2.0, np.float16), 3, np.array(True) + 3),
])
def test_a_fitness_of_0_d_arrays_among_numbers_is_stepped_as_their_values(fitness):
    """A member's fitness is often a reduction's answer, a 0-d array (always so on a GPU): among
    Python's or NumPy's numbers it counts as its number."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    told, _ = es.tell(state, es.ask(state), fitness)
    expected, _ = es.tell(state, es.ask(state), [float(value) for value in fitness])
    assert np.array_equal(told.params["w"], expected.params["w"])


def test_a_missing_fitness_is_named_as_missing_not_as_nan():
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError, match=re.escape("fitness holds None (member 1): give every member a number")):
        es.tell(state, es.ask(state), [1.0, None, 2.0, 3.0])


@pytest.mark.parametrize("x, kind", [(None, "a NoneType"), ((row for row in np.ones((2, 3))), "a generator"),
                                     (np.ones((2, 3), np.complex64), "an array of complex64")])
def test_an_x_of_no_numbers_names_its_kind_and_a_fix_that_applies_to_it(x, kind):
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    pop = es.ask(es.init(W))
    with pytest.raises(ValueError, match=re.escape(f"x must be an array of ints or floats, got {kind}: give "
                                                   f"numpy.asarray(x, dtype=numpy.float32)")):
        pop.linear("w", x)


def test_kinds_outside_the_builtins_are_named_with_their_module():
    """A parameter that is an array.array, a sigma that is a Decimal: named so, not "an array" (which
    a reader takes for NumPy's) or a bare class name."""
    with pytest.raises(ValueError, match=re.escape("parameter 'w' is an array.array, not an array")):
        eggroll.Eggroll(4, 1, 0.1, 0).init({"w": array.array("f", [1.0, 2.0])})
    with pytest.raises(ValueError, match=re.escape("sigma must be a finite int or float > 0, got Decimal('0.1')")):
        eggroll.Eggroll(4, 1, Decimal("0.1"), 0)


def test_a_memory_mapped_parameter_is_taken_and_copied_into_memory(tmp_path):
    np.save(tmp_path / "w.npy", W["w"])
    mapped = np.load(tmp_path / "w.npy", mmap_mode="r")
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": mapped})
    assert type(state.params["w"]) is np.ndarray and np.array_equal(state.params["w"], W["w"])
    fitness = np.arange(4.0)
    stepped = es.tell(state, es.ask(state), fitness)[0].params["w"]
    plain = es.init(W)
    assert np.array_equal(stepped, es.tell(plain, es.ask(plain), fitness)[0].params["w"])


@pytest.mark.parametrize("fitness, as_floats", [
    ([Fraction(1), Fraction(1), Fraction(2), Fraction(3)], [1.0, 1.0, 2.0, 3.0]),
    ([2 ** 70, 2 ** 70, 2 ** 70 + 2 ** 20, 0], [1.0, 1.0, 2.0, 0.0]),
    (np.array([1, 1, 2, 3], dtype=np.longdouble), [1.0, 1.0, 2.0, 3.0])])
def test_ties_already_in_an_exact_fitness_are_ranked_as_ties(fitness, as_floats):
    """A tie the fitness holds itself (two members that scored the same Fraction) is no tie float64
    made: told, and stepped as the same ranks in floats."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": np.ones((2, 2))})
    got = es.tell(state, es.ask(state), fitness)[0].params["w"]
    assert np.array_equal(got, es.tell(state, es.ask(state), as_floats)[0].params["w"])


def test_a_sigma_dict_in_another_order_is_the_same_setting_for_a_team():
    def body(team):
        sigma = {"w": 0.1, "b": 0.2} if team.rank == 0 else {"b": 0.2, "w": 0.1}
        return eggroll.Eggroll(4, 1, sigma, 0, team=team).init({"w": np.ones((2, 2)), "b": np.ones(2)})
    assert all(isinstance(state, eggroll.State) for state in run_team(2, body)[0])


@pytest.mark.parametrize("update", ["seeds", "allreduce"])
def test_processes_telling_different_generations_are_refused_on_every_process(update):
    """A process that tells an older (state, population), each valid alone, while the others tell the
    current one: the gathered fitnesses would mix two generations. One ValueError on every process."""
    params = mlp(1, dtype=np.float32)

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        first = es.init(params)
        asked = es.ask(first)
        fitness = lambda pop: pop.linear("layer0.weight", np.ones((2, 6), np.float32)).sum(axis=(1, 2))
        second, _ = es.tell(first, asked, fitness(asked))
        later = es.ask(second)
        try:
            es.tell(first, asked, fitness(asked)) if team.rank == 1 else es.tell(second, later, fitness(later))
        except ValueError as error:
            return str(error)

    said = run_team(2, body, update)[0]
    assert said[0] == said[1] == ("the processes of this team tell different generations: generation (rank 0: 1; "
                                  "rank 1: 0); every process tells the fitness of ask(state) for the same state")


@pytest.mark.parametrize("setting, value", [("lr", 0.02), ("weight_decay", 0.1), ("shaping", "raw")])
def test_a_setting_changed_on_one_process_between_ask_and_tell_is_refused_on_every_process(setting, value):
    """One process changes its Eggroll after ask: each would take another step from the same gathered
    fitnesses, and the processes' parameters part unseen. One ValueError on every process."""
    params = mlp(1, dtype=np.float32)

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, lr=0.01, team=team)
        state = es.init(params)
        asked = es.ask(state)
        if team.rank == 1:
            es = dataclasses.replace(es, **{setting: value})  # a schedule applied late, on one process
        try:
            es.tell(state, asked, asked.linear("layer0.weight", np.ones((2, 6), np.float32)).sum(axis=(1, 2)))
        except ValueError as error:
            return str(error)

    said = run_team(2, body)[0]
    assert said[0] == said[1] and said[0].startswith(f"the processes of this team tell with different Eggrolls: "
                                                     f"{setting} (rank 0: "), said


@pytest.mark.parametrize("lr, weight_decay, said", [
    (Fraction(1, 3), 3 - Fraction(1, 10 ** 20), "0.3333333333333333 x 3.0"),  # < 1 exactly, 1.0 as floats
    (np.float32(0.49382624), 2.0250037733722026, "0.4938262403011322 x 2.0250037733722026")])  # < 1 in float32
def test_lr_times_weight_decay_is_checked_as_the_floats_the_step_uses(lr, weight_decay, said):
    """The settings are checked as the Python floats the step multiplies the parameters by: a product
    below 1 only in its own type would zero or flip every parameter."""
    with pytest.raises(ValueError) as raised:
        eggroll.Eggroll(4, 1, 0.1, 0, lr=lr, weight_decay=weight_decay)
    assert str(raised.value) == (f"lr x weight_decay must be < 1, got {said}: each step multiplies the parameters "
                                 f"by 1 - lr x weight_decay, which would zero or flip them; lower one")
    with pytest.raises(ValueError, match=re.escape("sigma must be a finite int or float > 0, got Fraction(1, 1")):
        eggroll.Eggroll(4, 1, Fraction(1, 10 ** 400), 0)  # > 0, but 0.0 as a float


@pytest.mark.parametrize("fitness, member", [
    ([10 ** 400, 1, 2, 3], 0), ([1, -10 ** 400, 2, 3], 1), ([Fraction(10 ** 400, 3), 1, 2, 3], 0),
    ([1, 2, Decimal("1e400"), 3], 2), (np.array([1, 2, 3, 10], np.longdouble) ** np.array([1, 1, 1, 400]), 3)])
def test_a_finite_fitness_beyond_float64s_range_is_refused_as_such(fitness, member):
    """A number float64, in which the fitness is ranked, cannot hold (an int or Fraction it cannot take,
    a Decimal or long double it would make inf) is no NaN or inf: one ValueError saying to scale it."""
    if not isinstance(fitness, list) and np.isinf(fitness[member]):
        pytest.skip("long double is float64 here")
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError) as raised, warnings.catch_warnings():
        warnings.simplefilter("error")  # no overflow warning first
        es.tell(state, es.ask(state), fitness)
    assert str(raised.value) == (f"fitness holds numbers beyond float64's range, in which they are ranked (member "
                                 f"{member}): scale them before tell")


@pytest.mark.parametrize("x", [[[10 ** 400, 0, 0]], np.array([[Decimal("-1e400"), 0, 0]], dtype=object)])
def test_an_x_beyond_float64s_range_is_refused_as_such(x):
    """Numbers in x that no float type holds are refused as such, not as no numbers with a fix (asarray to
    float32) that would make them inf."""
    pop = eggroll.Eggroll(4, 1, 0.1, 0).ask(eggroll.Eggroll(4, 1, 0.1, 0).init(W))
    with pytest.raises(ValueError) as raised:
        pop.linear("w", x)
    assert str(raised.value) == "x holds numbers beyond float64's range: scale them"


@pytest.mark.parametrize("fitness", [np.array([2 ** 53 + 1, 0, 1, 2]),
                                     -(1_700_000_000_000_000_123 + 4096 * np.array([2, 0, 3, 1])),  # -time.time_ns()
                                     np.array([2 ** 64 - 1, 0, 1, 2], np.uint64)])
def test_integers_beyond_2_to_the_53_that_float64_holds_apart_are_ranked(fitness):
    """Integers beyond 2^53 that float64 keeps apart (nanosecond times, thousands apart) rank as they are,
    as Python ints beyond int64 do: only integers float64 would make equal are refused."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    got = es.tell(state, es.ask(state), fitness)[0].params["w"]
    assert np.array_equal(got, es.tell(state, es.ask(state), fitness.tolist())[0].params["w"])
    assert np.array_equal(got, es.tell(state, es.ask(state), fitness.astype(np.float64))[0].params["w"])


@pytest.mark.parametrize("fitness, said", [
    (np.array(["1", "2", "3", "4"], dtype=object), "member 0: '1'"),
    (np.array([1.0, b"2", 3.0, 4.0], dtype=object), "member 1: b'2'"),
    (np.array(["1", "1.0", "2", "3"], dtype=object), "member 0: '1'"),  # not "closer together than float64"
    (np.frompyfunc(lambda v: bytearray(b"4") if v == 4 else v, 1, 1)(np.arange(1.0, 5.0)),
     "member 3: bytearray(b'4')")])
def test_text_among_a_fitness_is_refused_as_text(fitness, said):
    """Text is no number, whatever float() reads it as: refused in an object array as in a list of text."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError) as raised:
        es.tell(state, es.ask(state), fitness)
    assert str(raised.value) == f"fitness must be real numbers, one per member, got text ({said})"


@pytest.mark.parametrize("fitness, kind", [(b"\x01\x02\x03\x04", "a bytes"), (bytearray(b"\x01\x02\x03\x04"), "a bytearray"),
                                           (memoryview(b"\x01\x02\x03\x04"), "a memoryview"), ("1234", "a str")])
def test_text_or_bytes_as_the_whole_fitness_is_refused_not_read_one_number_a_byte(fitness, kind):
    """Four bytes for four members would be four numbers to NumPy and to a sequence's loop: refused as
    what they are, before any step, whichever of Python's text or byte types holds them."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError) as raised:
        es.tell(state, es.ask(state), fitness)
    assert str(raised.value) == f"fitness must be real numbers, one per member, got {kind}: give a list or array of them"


def test_none_or_a_signalling_nan_is_named_as_what_it_is():
    """None told by a process that holds members: the fitness is None, and each member wants a number
    (not "tell it []", the fix for a process given no pairs, which would be refused for its shape)."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError) as raised:
        es.tell(state, es.ask(state), None)
    assert str(raised.value) == "fitness is None: give one real number per member, a list or array of them"
    for member in (0, 2):  # a Decimal's signalling NaN, which float() refuses: named with its member
        fitness = [1.0, 2.0, 3.0, 4.0]
        fitness[member] = decimal.Decimal("sNaN")
        with pytest.raises(ValueError) as raised:
            es.tell(state, es.ask(state), fitness)
        assert str(raised.value) == (f"fitness must be real numbers, one per member, got Decimal('sNaN') (member "
                                     f"{member}), no number float64 can hold: give every member a number")


@pytest.mark.parametrize("moment", ["m", "v"])
@pytest.mark.parametrize("on_device", ["parameter", "moment"])
def test_a_moment_in_another_array_module_than_its_parameter_is_refused_by_name(moment, on_device):
    """Adam's moments restored onto the device beside host parameters, or the other way: the moment is
    named with both array types and the fix, not a TypeError from inside the step."""
    import strict_array
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": strict_array.asarray(W["w"])} if on_device == "parameter" else W)
    on_host = backend.to_numpy(state.optimiser[moment]["w"])
    moved = strict_array.asarray(on_host) if on_device == "moment" else on_host
    optimiser = {**state.optimiser, moment: {"w": moved}}
    kinds = ["a strict_array.StrictArray of float32", "a NumPy array of float32"]
    moment_kind, parameter_kind = kinds if on_device == "moment" else kinds[::-1]
    what = {"m": "average of g", "v": "average of g^2"}[moment]
    assert told(es, eggroll.State(state.params, optimiser, 0), es.ask(state)).startswith(
        f"Adam's {what} of parameter 'w' is {moment_kind}, not {parameter_kind} as the parameter: ")


def test_none_from_a_process_given_no_members_says_so():
    """A process of a team given no pairs holds no members: None as its fitness is told to be [] (it has
    no member 0 to name), and [] is taken."""
    def body(team, fitness_of_none):
        es = eggroll.Eggroll(2, 1, 0.1, 0, team=team)
        state = es.init(W)
        pop = es.ask(state)
        return es.tell(state, pop, fitness_of_none if pop.members == 0 else [1.0, 2.0])[0].params["w"]

    with pytest.raises(ValueError) as raised:
        run_team(2, lambda team: body(team, None))
    assert str(raised.value) == ("fitness is None, and this process holds no members (its team gave it no pairs): "
                                 "tell it an empty fitness, []")
    first, second = run_team(2, lambda team: body(team, []))[0]
    assert np.array_equal(first, second)


@pytest.mark.parametrize("fitness, said", [
    ([Fraction(3, 1), Fraction(1, 3), Fraction(2, 1), Fraction(0)], None),
    ([2 ** 70 + 3 * 2 ** 20, 2 ** 70 + 2 ** 20, 2 ** 70 + 2 * 2 ** 20, 2 ** 70], None),
    ([strict_array.asarray(np.float32(v)) for v in (3, 1, 2, 0)], None),  # one device number a member
    ([1.0, None, 2.0, 3.0], "fitness holds None (member 1): give every member a number")])
def test_a_fitness_for_device_parameters_is_read_on_the_host_first(fitness, said):
    """With the parameters on a device (strict_array, CuPy's stand-in), the fitness is read as it is on
    the host: Fractions and Python ints are ranked, None is named, then the float64 fitness moves to the
    device; the step is the host's bit for bit."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    on_device = es.init({"w": strict_array.asarray(W["w"])})
    if said is not None:
        with pytest.raises(ValueError) as raised:
            es.tell(on_device, es.ask(on_device), fitness)
        assert str(raised.value) == said
        return
    stepped = es.tell(on_device, es.ask(on_device), fitness)[0].params["w"]
    on_host = es.init(W)
    host_fitness = [value.get() if isinstance(value, strict_array.StrictArray) else value for value in fitness]
    assert isinstance(stepped, strict_array.StrictArray)
    assert np.array_equal(stepped.get(), es.tell(on_host, es.ask(on_host), host_fitness)[0].params["w"])


def test_values_changed_in_place_between_ask_and_tell_are_refused_pickled_or_not():
    """A state's values changed in place after ask (the fitness was scored at the old ones): refused at
    tell, as a change of names, types or shapes is, whether or not the population was pickled apart from
    the state, and on the one process of a team that changed them."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    pop = es.ask(state)
    apart = pickle.loads(pickle.dumps(pop))
    state.params["w"][:] = 100
    assert told(es, state, pop) == ("the state's parameters changed since ask (values): tell the state as it was "
                                    "asked, and change it after")
    assert told(es, state, apart) == ("the population was asked of another state's parameters, or of this state's "
                                      "before they changed (values): tell the state it was asked of, as it was asked")
    state.params["w"][:] = 1  # as asked again
    assert es.tell(state, apart, [1.0, 2.0, 3.0, 4.0])[0].generation == 1

    def body(team):
        es = eggroll.Eggroll(4, 1, 0.1, 0, team=team)
        state = es.init(W)
        pop = es.ask(state)
        if team.rank == 1:
            state.params["w"][0, 0] = 5.0
        return es.tell(state, pop, [1.0, 2.0][:pop.members])

    with pytest.raises(ValueError, match=re.escape("the state's parameters changed since ask (values)")):
        run_team(2, body)


def test_a_population_pickled_by_an_older_version_or_made_by_hand_is_asked_again():
    """A Population unpickled from a version before tell compared fingerprints has none (pickle restores
    the fields it saved), nor has one made by hand: tell says to ask again, which gives the same members
    and the same step."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    pop = es.ask(state)
    older = object.__new__(eggroll.Population)  # as pickle rebuilds one: its saved fields, no __init__
    vars(older).update({name: value for name, value in vars(pop).items() if name != "fingerprint"},
                       layout={"w": ((2, 3), "<f4")})
    again = ("this population was not made by this eggroll.py's ask (made by hand, or pickled by an older version): "
             "ask the state again (the same members, the same bits)")
    assert told(es, state, older) == again
    by_hand = eggroll.Population(pop.params, pop.sigma, pop.rank, pop.seed, pop.generation, pop.pairs)
    assert told(es, state, by_hand) == again
    assert np.array_equal(es.ask(state).member(1)["w"], older.member(1)["w"])


@pytest.mark.parametrize("change, now", [(lambda sigma: sigma.update(c=0.1), "{'w': 0.1, 'b': 0.1, 'c': 0.1}"),
                                         (lambda sigma: sigma.pop("b"), "{'w': 0.1}")])
def test_a_sigma_name_added_or_removed_between_ask_and_tell_is_a_sigma_changed_since_ask(change, now):
    """A name added to or removed from a sigma dict after ask is a sigma changed between ask and tell, said
    so, not blamed on a Population made by hand."""
    es = eggroll.Eggroll(4, 1, {"w": 0.1, "b": 0.1}, 0)
    state = es.init(dict(W, b=np.ones(2, np.float32)))
    pop = es.ask(state)
    change(es.sigma)
    assert told(es, state, pop) == (
        f"the population was asked with sigma {{'w': 0.1, 'b': 0.1}}, this Eggroll's is {now}: tell its fitness to "
        f"the Eggroll that asked it, and change a sigma after tell, not between ask and tell")


@pytest.mark.parametrize("x, weights, fix", [
    (np.array([[2 ** 24 + 1, 0, 0]]), np.float32,
     "give numpy.asarray(x, dtype=numpy.float64), which multiplies in float64, or scale it"),
    (np.array([[2 ** 64 - 1, 0, 0]], np.uint64), np.float32,
     "give numpy.asarray(x, dtype=numpy.float64), which multiplies in float64, or scale it"),
    (np.array([[2 ** 53 + 1, 0, 0]]), np.float64, "scale it")])
def test_integer_inputs_the_weights_float_type_cannot_hold_are_refused(x, weights, fix):
    """An integer x is made the weight's float type: one it would round (2^24 + 1 in float32) would give
    the product of another x, so it is refused; integers it holds, large or not, are taken as before."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    pop = es.ask(es.init({"w": np.ones((2, 3), weights)}))
    digits = np.finfo(weights).nmant + 1
    with pytest.raises(ValueError) as raised, warnings.catch_warnings():
        warnings.simplefilter("error")
        pop.linear("w", x)
    assert str(raised.value) == (f"x holds integers beyond 2^{digits} that {np.dtype(weights)}, the weight's type "
                                 f"and the product's, cannot hold exactly: {fix}")
    held = np.array([[2 ** digits, 2 ** (digits + 1), -2 ** digits]], x.dtype if x.dtype != np.uint64 else np.int64)
    np.testing.assert_array_equal(pop.linear("w", held), pop.linear("w", held.astype(weights)))
    assert pop.linear("w", x.astype(np.float64)).dtype == np.float64  # the fix named, taken


@pytest.mark.parametrize("shape", [(3, 0), (0, 3), (0,)])
def test_a_parameter_of_no_entries_is_named_whichever_side_is_empty(shape):
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    with pytest.raises(ValueError) as raised:
        es.init({"w": np.ones((2, 3), np.float32), "empty": np.ones(shape, np.float32)})
    assert str(raised.value) == f"parameter 'empty' has shape {shape}, no entries: leave it out"


def test_a_step_that_makes_one_entry_inf_is_refused():
    """Raw differences so large that g overflows in one entry only: the step is refused (a parameter
    NaN or inf anywhere, check_eggroll_stepped), not returned with that entry inf."""
    es = eggroll.Eggroll(4, 1, 0.1, 0, lr=1.0, shaping="raw")
    state = es.init({"w": np.ones((2, 3), np.float32), "b": np.ones(2, np.float32)})
    moved = {name: value.copy() for name, value in state.params.items()}
    moved["w"][0, 0] = np.inf
    with pytest.raises(ValueError, match="this step would make parameter 'w' NaN or inf"):
        interface_checks.check_eggroll_stepped(moved, state.optimiser, es)
    interface_checks.check_eggroll_stepped(state.params, state.optimiser, es)  # finite everywhere: taken


def test_every_members_copy_beyond_the_machines_ram_is_refused_before_anything_is_drawn(monkeypatch):
    """perturbed forms every member's copy of a parameter: where that is more than the machine's RAM it
    is one ValueError naming the size and the ways that never form E_p, before any noise is drawn;
    within it, perturbed answers as before."""
    es = eggroll.Eggroll(2 ** 20, 1, 0.1, 1)
    population = es.ask(es.init({"w": np.ones((3000, 3000), np.float32)}))
    monkeypatch.setattr(eggroll.Population, "factors", lambda *args: pytest.fail("noise drawn"))
    with pytest.raises(ValueError) as refused:
        population.perturbed("w")
    assert str(refused.value).startswith("perturbed('w') would form 1,048,576 members' copies of a float32 parameter of "
                                         "shape (3000, 3000), 56,623.1 GB with their noise, more than this machine's ") and \
        str(refused.value).endswith(" GB of RAM: use linear('w', x), which never forms E_p, or member(i), one member "
                                    "at a time")
    monkeypatch.undo()
    small = eggroll.Eggroll(4, 1, 0.1, 1)
    population = small.ask(small.init({"w": np.ones((3, 2), np.float32)}))
    assert population.perturbed("w").shape == (4, 3, 2)


def test_every_members_copy_is_weighed_against_the_ram_the_system_reports(monkeypatch):
    """check_formed_size against a machine of 4.1 GB (1,000,000 pages of 4,096 bytes): copies that fit
    in it with their noise (half their size) are formed, one entry more is refused naming both sizes;
    where the system reports no RAM, nothing is refused."""
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1_000_000}
    monkeypatch.setattr(interface_checks.os, "sysconf", lambda name: pages[name])
    vector = lambda size: types.SimpleNamespace(size=size, dtype=np.dtype(np.float32), shape=(size,))  # no memory
    fills = 4_096_000_000 // (8 * 4 * 3 // 2)  # 8 members' float32 copies and their noise: 4,095,999,984 bytes
    interface_checks.check_formed_size(8, "b", vector(fills))
    with pytest.raises(ValueError) as refused:
        interface_checks.check_formed_size(8, "b", vector(fills + 1))
    assert str(refused.value) == ("perturbed('b') would form 8 members' copies of a float32 parameter of shape "
                                  "(85333334,), 4.1 GB with their noise, more than this machine's 4.1 GB of RAM: use "
                                  "linear('b', x), which never forms E_p, or member(i), one member at a time")
    pages.update(SC_PAGE_SIZE=1000, SC_PHYS_PAGES=1_350_000)  # sizes on the edge of rounding to one decimal
    with pytest.raises(ValueError, match="of shape \\(59375000,\\), 2.9 GB with their noise, more than this machine's "
                                         "1.4 GB of RAM"):
        interface_checks.check_formed_size(8, "b", vector(59_375_000))
    pages.update(SC_PAGE_SIZE=4096, SC_PHYS_PAGES=2_000_000_000)
    with pytest.raises(ValueError, match="of shape \\(1000000000000,\\), 48,000.0 GB with their noise, more than "
                                         "this machine's 8,192.0 GB of RAM"):
        interface_checks.check_formed_size(8, "b", vector(10 ** 12))
    monkeypatch.setattr(interface_checks.os, "sysconf", lambda name: (_ for _ in ()).throw(ValueError(name)))
    interface_checks.check_formed_size(8, "b", vector(10 ** 12))


def test_every_members_output_beyond_the_machines_ram_is_refused_before_anything_is_drawn(monkeypatch):
    """linear forms every member's output: where that and the pairs' perturbations of it (half as large)
    are more than the machine's RAM (here 4.1 GB), one ValueError names the sizes and what to do, before
    any noise is drawn; an x of one row per member is weighed by its own rows."""
    monkeypatch.setattr(interface_checks.os, "sysconf", {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1_000_000}.get)
    es = eggroll.Eggroll(2 ** 22, 1, 0.1, 1)  # 4,194,304 members of (rows, 4) float32 outputs: 24 bytes a row
    population = es.ask(es.init({"w": np.ones((4, 3), np.float32)}))
    monkeypatch.setattr(eggroll.Population, "rows", lambda *args: pytest.fail("noise drawn"))
    with pytest.raises(ValueError) as refused:
        population.linear("w", np.ones((41, 3), np.float32))
    assert str(refused.value) == ("linear('w', x) would form 4,194,304 members' outputs of shape (41, 4) in float32, "
                                  "4.1 GB with the pairs' perturbations, more than this machine's 4.1 GB of RAM: give "
                                  "x fewer rows at a time, or ask a smaller population (a team of processes shares "
                                  "one: distributed.team)")
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1}  # a machine of 4,096 bytes: x of one row set per member
    monkeypatch.setattr(interface_checks.os, "sysconf", pages.get)
    small = eggroll.Eggroll(4, 1, 0.1, 1)
    with pytest.raises(ValueError, match="would form 4 members' outputs of shape \\(100, 40\\) in float32, 0.0 GB"):
        small.ask(small.init({"w": np.ones((40, 1), np.float32)})).linear("w", np.ones((4, 100, 1), np.float32))
    with pytest.raises(ValueError, match="^x of shape \\(4, 1000, 1\\) would be read whole, 0.0 GB as its checks"):
        small.ask(small.init({"w": np.ones((1, 1), np.float32)})).linear("w", np.ones((4, 1000, 1), np.float32))
    pages["SC_PHYS_PAGES"] = 1_000_000
    interface_checks.check_outputs_size(2 ** 22, "w", (40, 4), np.dtype(np.float32))  # 4,026,531,840 bytes: they fit
    pages.update(SC_PHYS_PAGES=3)  # 12,288 bytes: outputs and perturbations of just that size fit, a float more not
    interface_checks.check_outputs_size(2, "w", (1024,), np.dtype(np.float32))
    with pytest.raises(ValueError, match="would form 2 members' outputs of shape \\(1025,\\)"):
        interface_checks.check_outputs_size(2, "w", (1025,), np.dtype(np.float32))


def test_a_step_beyond_floats_range_is_one_error_and_no_numpy_warning():
    """Raw fitnesses whose step overflows float32: tell's one ValueError says what to change, with no
    RuntimeWarning of NumPy's before it (the step is checked whole, not warned about piece by piece)."""
    raw = eggroll.Eggroll(8, 1, 0.1, 1, shaping="raw")
    state = raw.init({"w": np.ones((4, 3), np.float32)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match="this step would make parameter 'w' NaN or inf"):
            raw.tell(state, raw.ask(state), np.array([1e38, -1e38] * 4))


def test_adams_update_keeps_the_parameters_float_type_whatever_the_gradients():
    """A float64 g (a client's own gradient estimate) on a float32 parameter: the parameter stays
    float32, as its moments' type is checked against it at the next tell."""
    value = np.ones((2, 3), np.float32)
    new, m, v = optim.adam_update(value, np.full((2, 3), 0.5, np.float64), value * 0, value * 0, 1, optim.Adam(lr=0.1))
    assert new.dtype == np.float32 and np.allclose(new, 1.1)


@pytest.mark.parametrize("moment, value, said", [("m", np.nan, "average of g of parameter 'w' holds NaN or inf"),
                                                 ("v", np.inf, "average of g^2 of parameter 'w' holds NaN or inf"),
                                                 ("v", -1.0, "average of g^2 of parameter 'w' holds a negative value")])
def test_adams_moments_damaged_are_refused_by_name_not_blamed_on_sigma(moment, value, said):
    """A NaN, infinite or negative moment (a damaged checkpoint) is named before the step, which it would
    make NaN (not a sigma or an lr to change)."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(dict(W, b=np.ones(2, np.float32)))
    state.optimiser[moment]["w"][0, 0] = value
    assert told(es, state, es.ask(state)) == (
        f"Adam's {said}, which no update makes: the state's optimiser was damaged; tell an undamaged State, or start "
        f"again with init(state.params) (Adam and the generation from zero)")


def test_a_record_array_without_fields_is_taken_and_copied_into_a_plain_array():
    """A numpy.recarray of floats multiplies as an ndarray does: init takes it, as a memmap, into a plain
    ndarray, and steps it as the plain array."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": W["w"].view(np.recarray)})
    assert type(state.params["w"]) is np.ndarray
    plain = es.init(W)
    fitness = np.arange(4.0)
    assert np.array_equal(es.tell(state, es.ask(state), fitness)[0].params["w"],
                          es.tell(plain, es.ask(plain), fitness)[0].params["w"])


def test_names_that_differ_only_in_unicode_normalisation_are_shown_apart():
    """A sigma name and a parameter name that print alike (é as one code point, or e and an accent) are
    shown by their code points, so that the mismatch can be seen."""
    composed, decomposed = unicodedata.normalize("NFC", "é"), unicodedata.normalize("NFD", "é")
    with pytest.raises(ValueError) as raised:
        eggroll.Eggroll(4, 1, {composed: 0.1}, 0).init({decomposed: np.ones(3)})
    assert str(raised.value) == ("sigma names ['\\xe9'] but the parameters are ['e\\u0301']: give one sigma per "
                                 "parameter, or one float for all")


def test_the_mean_fitness_of_finite_fitnesses_near_float64s_largest_is_finite():
    """The mean of finite fitnesses whose sum overflows float64 is their mean, not inf (and no warning);
    any other fitness's mean is NumPy's, bit for bit."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = es.tell(state, es.ask(state), [1.7e308, 1.7e308, 1e308, 0.0])[1]
    assert stats["mean_fitness"] == 1.1e308 and stats["max_fitness"] == 1.7e308
    fitness = np.random.default_rng(0).normal(size=4) * 1e3
    assert es.tell(state, es.ask(state), fitness)[1]["mean_fitness"] == float(fitness.mean())


@pytest.mark.parametrize("fitness", [[1e39, -1e39, 0.0, 1.0], [1e308, -1e308, 1e308, -1e308]])
def test_raw_fitness_differences_beyond_float32s_range_are_refused_before_the_step(fitness):
    """Raw shaping forms the step from the pairs' differences in float32: differences beyond its range
    are refused as such, with no overflow warning, not as a step a higher sigma or lower lr would mend."""
    es = eggroll.Eggroll(4, 1, 0.1, 0, shaping="raw")
    state = es.init(W)
    with pytest.raises(ValueError) as raised, warnings.catch_warnings():
        warnings.simplefilter("error")
        es.tell(state, es.ask(state), fitness)
    assert str(raised.value) == ("the fitness differences exceed float32's range, in which the step is formed: scale "
                                 "the fitness (or shape it by centred ranks)")


def test_a_process_that_skips_a_tell_is_said_to_be_in_another_call():
    """One process asks again where the others tell: the comparisons ask and tell make meet each other,
    and every process says which call each is in, not that their settings differ."""
    params = mlp(1, dtype=np.float32)

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        state = es.init(params)
        try:
            for generation in range(2):
                pop = es.ask(state)
                if team.rank == 1 and generation == 0:
                    continue  # this process skips a tell
                fitness = pop.linear("layer0.weight", np.ones((2, 6), np.float32)).sum(axis=(1, 2))
                state, _ = es.tell(state, pop, fitness)
        except ValueError as error:
            return str(error)

    said = run_team(2, body)[0]
    assert said[0] == said[1] == ("the processes of this team are in different calls (rank 0: tell; rank 1: ask): "
                                  "every process makes the same calls of the team in the same order (ask, then "
                                  "tell, each generation)")


@pytest.mark.parametrize("call", ["broadcast", "barrier"])
def test_a_process_that_broadcasts_or_waits_alone_is_said_to_be_in_another_call(call):
    """One process broadcasts a state (or waits at a barrier) where the other asks: both say which
    call each is in, in one line, where they would wait for each other for ever."""
    params = mlp(1, dtype=np.float32)

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        state = es.init(params)
        try:
            if team.rank == 0:
                state = team.broadcast(state) if call == "broadcast" else team.barrier()
            es.ask(state)
        except ValueError as error:
            return str(error)

    said = run_team(2, body)[0]
    assert said[0] == said[1] == (f"the processes of this team are in different calls (rank 0: {call}; rank 1: "
                                  f"ask): every process makes the same calls of the team in the same order (ask, "
                                  f"then tell, each generation)")


@pytest.mark.parametrize("change, said", [
    (lambda p: p.__setitem__("c", np.ones(2)), "added 'c'"),
    (lambda p: p.pop("b"), "removed 'b'"),
    (lambda p: p.__setitem__("w", p["w"].astype(np.float32)), "retyped 'w'"),
    (lambda p: p.__setitem__("b", p["b"][:, None]), "reshaped 'b'"),
    (lambda p: (p.__setitem__("c", np.ones(2)), p.__setitem__("d", np.ones(2)),
                p.__setitem__("w", p["w"].astype(np.float32))), "added 'c', 'd'; retyped 'w'"),
    (lambda p: p["w"].__setitem__((0, 0), 5.0), "values"),
    (lambda p: p.__setitem__("w", [[1.0, 1, 1], [1, 1, 1]]), "retyped 'w'; reshaped 'w'"),  # no array at all
])
def test_what_changed_in_the_state_since_ask_is_named_in_full(change, said):
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": np.ones((2, 3)), "b": np.ones(2)})
    pop = es.ask(state)
    change(state.params)
    with pytest.raises(ValueError, match=re.escape(f"the state's parameters changed since ask ({said}): tell the "
                                                   f"state as it was asked, and change it after")):
        es.tell(state, pop, range(4))


def test_a_team_tags_each_comparison_with_its_call_and_a_dict_is_no_fitness():
    team = CountingTeam()
    es = eggroll.Eggroll(4, 1, 0.1, 0, team=team)
    state = es.init(W)
    es.ask(state)
    assert [values["call"] for values in team.compared] == ["ask"]  # init compares nothing: ask does
    with pytest.raises(ValueError, match=re.escape("fitness is a dict, not numbers in member order")):
        eggroll.Eggroll(4, 1, 0.1, 0).tell(state, eggroll.Eggroll(4, 1, 0.1, 0).ask(state), {"a": 1})


@pytest.mark.parametrize("x", [np.array([["a", 10 ** 400, 0]], dtype=object),
                               np.array([[None, 10 ** 400, 0]], dtype=object)])
def test_a_number_beyond_float64_is_found_past_text_or_none_before_it(x):
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    pop = es.ask(es.init({"w": np.ones((2, 3))}))
    with pytest.raises(ValueError, match=re.escape("x holds numbers beyond float64's range: scale them")):
        pop.linear("w", x)


@pytest.mark.parametrize("fitness, said", [
    ([Decimal("sNaN"), 10 ** 400, 1, 2], "fitness holds numbers beyond float64's range, in which they are ranked "
                                         "(member 1): scale them before tell"),
    (np.ones(4, np.complex128), "fitness must be real numbers, one per member, got an array of complex128")])
def test_a_fitness_past_a_signalling_nan_or_of_wide_complex_numbers_is_named(fitness, said):
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": np.ones((2, 3))})
    with pytest.raises(ValueError, match=re.escape(said)):
        es.tell(state, es.ask(state), fitness)


@pytest.mark.parametrize("generation", [2.0 ** 32, np.float64(2 ** 32)])
def test_a_float_generation_past_the_last_is_refused_as_no_whole_number(generation):
    """A generation must be a whole number first: a float one past the last is told so, not that the
    seed's generations are spent (the fix for a whole number past the last)."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError, match=r"^state\.generation must be a whole number in 0\.\.4294967295, got "):
        es.ask(eggroll.State(state.params, state.optimiser, generation))


def test_a_numpy_seed_is_kept_as_the_python_int_a_team_compares():
    """A NumPy seed becomes a Python int, which the processes of a team compare as JSON."""
    assert type(eggroll.Eggroll(4, 1, 0.1, np.int64(3)).seed) is int

    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, np.int64(3), team=team)
        return len(es.ask(es.init(W)).pairs)
    assert run_team(2, body)[0] == [64, 64]


@pytest.mark.parametrize("fitness", [[1, 2, 3, float("inf")], [Decimal(1), Decimal(2), Decimal(3), Decimal("-Infinity")]])
def test_an_infinite_fitness_among_exact_numbers_is_named_as_inf_not_as_beyond_range(fitness):
    """inf among ints or Decimals (held as objects) is no finite number beyond float64's range: it is
    told as NaN or inf, with that fix."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError, match="^fitness holds NaN or inf: lower the learning rate or sigma"):
        es.tell(state, es.ask(state), fitness)


def test_a_teams_gathered_fitness_and_step_stay_on_the_device():
    """Under a team, the gathered fitnesses and the step are the parameters' array type (a GPU's),
    here the strict double that refuses to mix with NumPy's."""
    def body(team):
        es = eggroll.Eggroll(256, 1, 0.1, 0, team=team)
        state = es.init({"w": strict_array.asarray(W["w"])})
        pop = es.ask(state)
        fitness = strict_array.asarray(np.arange(2 * 64 * team.rank, 2 * 64 * (team.rank + 1), dtype=np.float32))
        gathered = team.gather(fitness, es.pairs, eggroll.PAIRS_PER_BLOCK)
        return type(gathered).__name__, type(es.tell(state, pop, fitness)[0].params["w"]).__name__
    assert run_team(2, body)[0] == [("StrictArray", "StrictArray")] * 2


def test_a_native_float_x_is_multiplied_as_it_is_not_copied():
    """input_array hands a float32 or float64 x in this machine's byte order on as it is: a large
    input (a batch of images, every member's) is not copied at every layer."""
    for dtype in (np.float32, np.float64):
        x = np.ones((3, 3), dtype)
        assert interface_checks.input_array(x, W, "w", 4) is x
    swapped = np.ones((3, 3), np.dtype(np.float64).newbyteorder())
    assert interface_checks.input_array(swapped, W, "w", 4).dtype == np.float64


def test_the_noise_of_a_population_beyond_the_machines_ram_is_refused_before_it_is_drawn(monkeypatch):
    """factors draws every pair's noise at once: where that (r (m + n) float32 numbers a pair, or m for
    a bias) and what drawing it takes, as much again and a pair's index, are more than the machine's
    RAM, one ValueError names the size and the fix, before anything is drawn; one pair fewer fits."""
    pages = {"SC_PAGE_SIZE": 4096, "SC_PHYS_PAGES": 1}  # a machine of 4,096 bytes
    monkeypatch.setattr(interface_checks.os, "sysconf", pages.get)
    weight = np.ones((3, 2), np.float32)  # rank 2: 10 numbers a pair, 92 bytes with the drawing: 44 pairs fit
    interface_checks.check_noise_size(44, "w", weight, 2)
    with pytest.raises(ValueError) as refused:
        interface_checks.check_noise_size(45, "w", weight, 2)
    assert str(refused.value) == ("factors('w') would draw 45 pairs' noise of 10 numbers each, 0.0 GB with what "
                                  "drawing it takes, more than this machine's 0.0 GB of RAM: ask a smaller population "
                                  "(a team of processes shares one: distributed.team)")
    interface_checks.check_noise_size(113, "b", np.ones(3, np.float32), 2)  # a bias: m numbers a pair, any rank
    with pytest.raises(ValueError, match="would draw 114 pairs' noise of 3 numbers each"):
        interface_checks.check_noise_size(114, "b", np.ones(3, np.float32), 2)
    pages["SC_PHYS_PAGES"] = 1_000_000
    es = eggroll.Eggroll(2 ** 33, 1, 0.1, 1)
    population = es.ask(es.init({"w": np.ones((2, 2), np.float32)}))
    monkeypatch.setattr(eggroll.noise, "normals", lambda *args: pytest.fail("noise drawn"))
    with pytest.raises(ValueError, match="^factors\\('w'\\) would draw 4,294,967,296 pairs' noise of 4 numbers each, "
                                         "189.0 GB with what drawing it takes, more than this machine's 4.1 GB"):
        population.factors("w")


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("bad", [np.inf, -np.inf, np.nan])
def test_an_x_that_holds_inf_or_nan_is_refused(dtype, bad):
    """An x holding inf or NaN, shared or one per member, is one ValueError, not members' outputs of inf
    and NaN with NumPy's warnings."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    pop = es.ask(es.init(W))
    for shape in ((5, 3), (4, 5, 3)):
        x = np.ones(shape, dtype)
        x[..., -1, 1] = bad
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError, match="^x holds inf or NaN: give every input a finite number$"):
                pop.linear("w", x)


def test_members_beyond_their_float_type_are_refused_without_numpys_warnings():
    """Finite inputs whose products or members overflow their float type (x near float32's largest
    number, parameters there, a sigma that large): one ValueError naming the float type and the fix,
    from linear, perturbed and member alike, and no NumPy warning."""
    big, ones = np.float32(3e38), np.ones((5, 3), np.float32)
    small = eggroll.Eggroll(4, 1, 0.1, 0)
    large_sigma = eggroll.Eggroll(4, 1, 3e38, 0)
    resolved = eggroll.Eggroll(4, 1, 1e32, 0)  # above float32's resolution at 3e38, 3.6e31
    product = "linear('w', x): the members' outputs overflow float{}, whose largest number is {}: scale x, the " \
              "parameters or sigma down{}"
    value = "{}: {} values overflow float32, whose largest number is 3.4e+38: use a smaller sigma, or parameters " \
            "further from that limit"
    cases = [(lambda: small.ask(small.init(W)).linear("w", np.full((5, 3), big)),
              product.format(32, "3.4e+38", ", or give x as float64")),
             (lambda: small.ask(small.init(W)).linear("w", np.full((5, 3), 1e308)),  # a float64 x: the product in float64
              product.format(64, "1.8e+308", "")),
             (lambda: resolved.ask(resolved.init({"w": np.full((4, 3), big)})).linear("w", ones),
              product.format(32, "3.4e+38", ", or give x as float64")),
             (lambda: large_sigma.ask(large_sigma.init({"w": np.ones((4, 3), np.float32)})).linear("w", ones),
              product.format(32, "3.4e+38", ", or give x as float64")),
             (lambda: large_sigma.ask(large_sigma.init({"w": np.ones((4, 3), np.float32)})).member(1),
              value.format("member(1)['w']", "its")),
             (lambda: large_sigma.ask(large_sigma.init({"w": np.ones((4, 3), np.float32)})).perturbed("w"),
              value.format("perturbed('w')", "the members'")),
             (lambda: large_sigma.ask(large_sigma.init({"b": np.ones(4, np.float32)})).perturbed("b"),
              value.format("perturbed('b')", "the members'"))]
    for make, told in cases:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with pytest.raises(ValueError) as refused:
                make()
        assert str(refused.value) == told
    assert np.isfinite(small.ask(small.init(W)).linear("w", np.full((5, 3), 1e30, np.float32))).all()  # within range


def test_a_generations_statistics_of_fitnesses_near_float64s_largest_are_finite_and_warn_nothing():
    """Fitnesses whose sum or squares pass float64's range (±1.7e308, or raw ones of 1e200): the mean and
    the spread tell's statistics report are the true ones, finite, and NumPy warns nothing."""
    huge = np.array([1.7e308, -1.7e308, 1.7e308, -1.5e308])
    raw = np.array([1e200, -1e200, 3e200, 0.0])
    opposed = np.array([1.7e308] * 4 + [-1.7e308] * 4)  # NumPy's pairwise sum meets inf + -inf: NaN, "invalid"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        stats = eggroll.population_stats(huge, raw)
        assert eggroll.population_stats(opposed, raw)["mean_fitness"] == 0.0
    assert stats["mean_fitness"] == pytest.approx(0.05e308, rel=1e-12) and stats["max_fitness"] == 1.7e308
    assert stats["shaped_std"] == pytest.approx(1e200 * np.std([1.0, -1.0, 3.0, 0.0]), rel=1e-12)
    small = np.array([1.0, -2.0, 0.5, 4.0], np.float32)
    assert eggroll.population_stats(small, small) == {"mean_fitness": float(small.mean(dtype="float64")),
                                                      "max_fitness": 4.0, "shaped_std": float(small.std())}


MADE_BY_ASK = "a Population is made by Eggroll.ask (its sigma {name: float} for every parameter, its pairs a range in " \
    "0..2^32 - 1): ask for one"


@pytest.mark.parametrize("change, told", [
    (dict(rank=0), "rank must be a whole number >= 1, got 0: use e.g. 1 or 4"),
    (dict(rank=1.5), "rank must be a whole number >= 1, got 1.5: use e.g. 1 or 4"),
    (dict(seed=-5), "seed must be a whole number in 0..18446744073709551615, got -5: use e.g. 0"),
    (dict(generation=2 ** 32), "generation must be a whole number in 0..4294967295, got 4294967296: use the generation "
                               "of the State that ask was given"),
    (dict(pairs=range(2 ** 32, 2 ** 32 + 1)), MADE_BY_ASK), (dict(pairs=range(-1, 1)), MADE_BY_ASK),
    (dict(sigma={"w": -1.0}), "sigma of 'w' must be a finite int or float > 0, got -1.0: use e.g. 0.1"),
    (dict(sigma={"w": float("nan")}), "sigma of 'w' must be a finite int or float > 0, got nan: use e.g. 0.1"),
    (dict(fingerprint=({}, 3)), "a Population is made by Eggroll.ask (its fingerprint is ask's, of the parameters it "
                                "was asked for): ask for one")])
def test_a_population_made_by_hand_is_checked_as_ask_would_make_it(change, told):
    """A Population made by hand (not by ask) with a rank, seed, generation, pair, sigma or fingerprint that
    ask never gives: one ValueError naming it, not NumPy's errors later nor a seed or pair that aliases
    another."""
    made = dict(params=W, sigma={"w": 0.1}, rank=1, seed=0, generation=0, pairs=range(2))
    eggroll.Population(**made)
    with pytest.raises(ValueError) as refused:
        eggroll.Population(**{**made, **change})
    assert str(refused.value) == told


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_parameters_made_non_finite_after_init_are_refused_at_ask(bad):
    """A NaN or inf written into the state's parameters after init: ask names the parameter and that no
    step makes one, not a later overflow blamed on sigma or the learning rate."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init({"w": np.ones((2, 3), np.float32), "b": np.zeros(2, np.float32)})
    es.ask(state)
    state.params["b"][1] = bad
    with pytest.raises(ValueError) as refused:
        es.ask(state)
    assert str(refused.value) == ("parameter 'b' holds NaN or inf: EGGROLL steps finite parameters; no update makes "
                                  "one (tell refuses it): the state's parameters were changed since init or tell; ask "
                                  "with the State that init or tell returned")


@pytest.mark.parametrize("fitness, said", [
    ((float(i) for i in range(4)), "fitness is a generator, not numbers in member order: give list(fitness)"),
    (map(float, range(4)), "fitness is a map, not numbers in member order: give list(fitness)"),
    ({0.0, 1.0, 2.0, 3.0}, "fitness is a set, not numbers in member order: give a list or array in member order"),
    ({i: float(i) for i in range(4)}, "fitness is a dict, not numbers in member order: give a list or array in "
                                      "member order"),
    ({i: float(i) for i in range(4)}.values(), "fitness is a dict_values, not numbers in member order: give a list "
                                               "or array in member order"),
    (["1", "2", "3", "4"], "fitness must be real numbers, one per member, got text (member 0: '1')"),
    ([1.0, b"2", 3.0, 4.0], "fitness must be real numbers, one per member, got text (member 1: b'2')"),
    (np.array(["1", "2", "3", "4"]), "fitness must be real numbers, one per member, got text (member 0: '1')")])
def test_a_fitness_without_member_order_or_of_text_is_named_as_such(fitness, said):
    """An iterator, set or dict has no member order (an iterator is read once): named, with the fix;
    text, as a list or as an array of it, is named with the first member that holds it."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError) as raised:
        es.tell(state, es.ask(state), fitness)
    assert str(raised.value) == said


def test_a_count_restored_as_a_0d_array_is_told_to_become_an_int():
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    state = es.init(W)
    with pytest.raises(ValueError, match=re.escape("state.generation must be a whole number in 0..4294967295, got "
                                                   "array(2): use int() of it (a count saved with numpy.save comes "
                                                   "back as a 0-d array), or the State")):
        es.ask(eggroll.State(state.params, state.optimiser, np.array(2)))
    restored = eggroll.State(state.params, {**state.optimiser, "t": np.array(0)}, 0)
    with pytest.raises(ValueError, match=re.escape("step count t must be a whole number in 0..9223372036854775807, "
                                                   "got array(0): use int() of it")):
        es.tell(restored, es.ask(restored), [1.0, 2.0, 3.0, 4.0])


@pytest.mark.parametrize("settings, said", [
    (dict(rank=np.float64(2.0)), "rank must be a whole number >= 1, got np.float64(2.0): use the int 2: a float"),
    (dict(rank=2.5), "rank must be a whole number >= 1, got 2.5: use e.g. 1 or 4")])
def test_a_whole_float_for_a_count_is_told_to_be_an_int(settings, said):
    """8.0 is refused as a count like 2.5, but the message does not leave 8.0 looking whole: it names
    the int to give."""
    with pytest.raises(ValueError) as raised:
        eggroll.Eggroll(**{**dict(population=4, rank=1, sigma=0.1, seed=0), **settings})
    assert str(raised.value).startswith(said)


def test_a_sigma_dicts_value_that_is_no_number_is_named():
    with pytest.raises(ValueError, match=re.escape("sigma of 'w' must be a finite int or float > 0, got a dict: use "
                                                   "e.g. {'w': 0.1}")):
        eggroll.Eggroll(4, 1, {"w": {"x": 0.1}}, 0)


def test_memory_mapped_parameters_step_as_their_arrays_do(tmp_path):
    """Parameters loaded with numpy.load(..., mmap_mode="r") init, ask and tell like the arrays they
    hold, and so does a State restored with them and moments as plain arrays: the same step."""
    es = eggroll.Eggroll(4, 1, 0.1, 0)
    np.save(tmp_path / "w.npy", W["w"])
    mapped = {"w": np.load(tmp_path / "w.npy", mmap_mode="r")}
    fitness = [1.0, 4.0, 2.0, 3.0]
    want, _ = es.tell(es.init(W), es.ask(es.init(W)), fitness)
    got, _ = es.tell(es.init(mapped), es.ask(es.init(mapped)), fitness)
    restored = eggroll.State(mapped, {"m": {"w": np.zeros_like(W["w"])}, "v": {"w": np.zeros_like(W["w"])}, "t": 0}, 0)
    again, _ = es.tell(restored, es.ask(restored), fitness)
    np.testing.assert_array_equal(got.params["w"], want.params["w"])
    np.testing.assert_array_equal(again.params["w"], want.params["w"])


@pytest.mark.parametrize("use", ["linear", "perturbed", "member"])
def test_a_parameter_made_nan_after_ask_is_said_to_be_changed_not_to_overflow(use):
    """A weight set to NaN by hand after ask makes NaN members: said as a parameter changed since
    ask (ask refuses NaN), not as an overflow whose fix is to scale something down."""
    es = eggroll.Eggroll(8, 1, 0.1, 0)
    state = es.init({"w": np.ones((4, 3), np.float32), "b": np.zeros(4, np.float32)})
    pop = es.ask(state)
    state.params["w"][0, 0] = np.nan
    with pytest.raises(ValueError) as refused:
        {"linear": lambda: pop.linear("w", np.ones((2, 3), np.float32), bias="b"),
         "perturbed": lambda: pop.perturbed("w"), "member": lambda: pop.member(0)}[use]()
    assert str(refused.value) == ("parameter 'w' holds NaN or inf, which ask refuses: it was changed since ask; ask "
                                  "again with finite parameters")
