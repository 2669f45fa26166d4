"""The ask/tell interface's refusals: for every input EGGROLL cannot run with, a ValueError that names
the problem and its fix, before any work is done (a wrong-typed weight would otherwise step by whole
units, a stale population along the wrong noise, a NaN learning rate to all-NaN parameters).

eggroll.py, the method, calls them; nothing here computes any part of the method.
"""
import decimal
import hashlib
import math
import numbers
import os
from collections.abc import Iterator, Mapping, MappingView, Sequence, Set

import numpy

from backend import array_module_of, to_numpy
from distributed import different_calls
import noise

MAX_PAIRS = 2 ** 32  # a pair's index is one 32-bit word of the noise's counter (noise.py)
MAX_GENERATION = 2 ** 32 - 1  # so is the generation
# arrays whose arithmetic is not plain NumPy's: a matrix's ** is a matrix power, a masked array's
# hidden entries (a NaN, say) pass the finiteness checks and its results stay masked
ODD_ARRAYS = (numpy.matrix, numpy.ma.MaskedArray)
SMALLEST_FLOAT32 = float(numpy.finfo(numpy.float32).tiny)  # below float32's smallest normal, a step rounds to 0
GENERATION_FIX = "the count of generations before this one (0 for the first)"  # a step's generation
SHAPINGS = ("centred_ranks", "raw")


def check_settings(es):
    """ValueError naming the fix, for settings EGGROLL cannot run with, when the Eggroll is made:
    whole numbers (not bools) for the population, rank and seed, in range; every sigma finite
    and > 0; every lr and the weight decay finite and >= 0, their products < 1. The ranges are checked on the
    Python floats the step uses (a Fraction or a float32 product may round to 1 as floats)."""
    check_whole("population", es.population, None, 2 * MAX_PAIRS, "e.g. 512")
    check_population(es.population)
    check_whole("rank", es.rank, 1, None, "e.g. 1 or 4")  # at most the weights' smaller side (check)
    check_whole("seed", es.seed, 0, 2 ** 64 - 1, "e.g. 0")
    check_sigma(es.sigma)
    check_rates(es.lr, es.weight_decay)
    check_team(es.team)
    if not isinstance(es.shaping, str) or es.shaping not in SHAPINGS:
        raise ValueError(f"unknown shaping {es.shaping!r}: use one of {', '.join(SHAPINGS)}")


def check_team(team):
    """ValueError naming the fix unless `team` is a team of processes (distributed.py) or ALONE: what
    has every method and attribute a step calls on it."""
    missing = [method for method in ("my_pairs", "update_pairs", "gather", "sum", "disagreement")
               if not callable(getattr(team, method, None))] + [name for name in ("size", "update")
                                                                 if not hasattr(team, name)]
    if isinstance(team, type):
        raise ValueError(f"team must be distributed.ALONE or distributed.team(update), got the class "
                         f"{team.__name__}: give one of those")
    if missing:
        raise ValueError(f"team must be distributed.ALONE or distributed.team(update), got {team!r} "
                         f"(it has no {', '.join(missing)})")

def check_sigma(sigma):
    """ValueError naming the fix unless sigma is a finite number > 0, or a dict of them under string names."""
    for name, value in (sigma.items() if isinstance(sigma, dict) else [(None, sigma)]):
        if isinstance(sigma, dict) and not isinstance(name, str):
            raise ValueError(f"sigma's keys must be the parameters' names, strings, got {name!r}: "
                             f"use e.g. {{'W1': 0.1, 'b1': 0.1}}")
        if isinstance(value, (Mapping, list, tuple)) or numpy.ndim(value) > 0:
            if name is not None:
                raise ValueError(f"sigma of {name!r} must be a finite int or float > 0, got {a_kind(value)}: use "
                                 f"e.g. {{{name!r}: 0.1}}")
            raise ValueError(f"sigma is a float or a dict {{name: float}}, got {a_kind(value)}: use e.g. "
                             f"0.1 or {{'W1': 0.1, 'b1': 0.1}}")
        converted = as_float(value)
        if converted is None or not (math.isfinite(converted) and converted > 0):
            raise ValueError(f"sigma{'' if name is None else f' of {name!r}'} must be a finite int or float > 0, "
                             f"got {shown(value)}: use e.g. 0.1")


def check_pairs(pairs, n_pairs):
    """ValueError naming the fix unless `pairs` is a slice of whole ends within 0..n_pairs, in steps of
    one: the pairs a process evaluates (it may hold none, an empty slice)."""
    ends = [end for end in (pairs.start, pairs.stop) if end is not None] if isinstance(pairs, slice) else None
    if ends is None or pairs.step not in (None, 1) or not all(is_integer(end) and 0 <= end <= n_pairs for end in ends):
        raise ValueError(f"pairs must be a slice within the population's {n_pairs} pairs, in steps of one (a process "
                         f"may hold none), got {pairs!r}: use e.g. slice(0, {n_pairs})")


def check_float32_sigma(label, sigma, where):
    """ValueError naming the fix unless sigma lies in float32's range, `where` its noise or step is
    formed: a sigma float32 rounds to 0 or inf would perturb or step nowhere."""
    limits = numpy.finfo(numpy.float32)
    if not float(limits.tiny) <= sigma <= float(limits.max):
        raise ValueError(f"{label} must lie in {limits.tiny:.3g}..{limits.max:.3g}, float32's range, in which "
                         f"{where}, got {shown(sigma)}: use e.g. 0.1")


def check_params(es, params):
    """ValueError naming the fix, for parameters EGGROLL cannot run with (or that these settings
    do not fit): a dict of non-empty 1-D and 2-D float32 or float64 arrays under string names."""
    if not params:
        raise ValueError("params is empty: give a dict of named 1-D and 2-D arrays")
    for name, value in params.items():
        if not isinstance(name, str):
            raise ValueError(f"parameter name {name!r} is not a string: name every parameter, e.g. 'W1'")
        try:
            name.encode()  # its noise's key is SHA-256 of its UTF-8 bytes (noise.param_id)
        except UnicodeEncodeError:
            raise ValueError(f"parameter name {name!r} is no UTF-8 text (a lone surrogate): rename it") from None
        if isinstance(value, Mapping):  # a tree of parameters, as JAX's libraries hold them
            inner = next(iter(value), "w")
            raise ValueError(f"parameter {name!r} is {a_kind(value)} of parameters: give one flat dict of named arrays, "
                             f"e.g. {{'{name}.{inner}': ...}} for each of them")
        if not hasattr(value, "dtype") and not isinstance(value, numbers.Number):  # a number: "shape ()" below
            raise ValueError(f"parameter {name!r} is {a_kind(value)}, not an array: give "
                             f"numpy.asarray({name}, dtype=numpy.float32)")
        if getattr(value, "ndim", None) not in (1, 2):
            raise ValueError(f"parameter {name!r} has shape {tuple(getattr(value, 'shape', ()))}: EGGROLL "
                             f"perturbs 1-D (biases) and 2-D (weights) arrays; reshape it to one of them")
        if value.size == 0:
            raise ValueError(f"parameter {name!r} has shape {tuple(value.shape)}, no entries: leave it out")
        if isinstance(value, numpy.ndarray) and type(value) not in (numpy.ndarray, numpy.memmap, numpy.recarray):
            # a matrix, a masked array (a recarray's products are an ndarray's: its fields' type is refused below)
            raise ValueError(f"parameter {name!r} is a {type(value).__module__}.{type(value).__name__}, whose "
                             f"products and masks follow other rules: give numpy.asarray({name})")
        xp = array_module_of(value)
        if not (isinstance(value, numpy.ndarray) or xp is not numpy and hasattr(xp, "asnumpy")):  # torch's, JAX's
            raise ValueError(f"parameter {name!r} is {a_kind(value)}: EGGROLL steps NumPy arrays, or CuPy's on a "
                             f"GPU; give {dense(value, name)}")
        if value.dtype not in (numpy.float32, numpy.float64):
            native = value.dtype.newbyteorder("=")
            swapped = native in (numpy.float32, numpy.float64)  # '>f8' on this machine, say
            order = " in this machine's byte order" if swapped else ""
            raise ValueError(f"parameter {name!r} is {value.dtype}: EGGROLL steps float32 or float64 arrays{order}; "
                             f"give {name}.astype(numpy.{native.name if swapped else 'float32'})")
        if value.ndim == 2 and not 1 <= es.rank <= min(value.shape):
            raise ValueError(f"rank must lie in 1..{min(value.shape)} (the smaller side of {name}, "
                             f"{value.shape[0]}x{value.shape[1]}), got {es.rank}")
    modules = {array_module_of(value).__name__ for value in params.values()}
    if len(modules) > 1:
        raise ValueError(f"the parameters live in different array modules ({', '.join(sorted(modules))}): give "
                         f"them all as NumPy arrays, or all as CuPy arrays")
    check_sigma(es.sigma)  # a sigma dict may have been changed since the Eggroll was made
    sigmas = es.sigmas(params)
    if set(sigmas) != set(params):  # in ascii, names that print alike ('é' as one code point or two) show apart
        raise ValueError(f"sigma names {ascii(sorted(sigmas))} but the parameters are {ascii(sorted(params))}: "
                         f"give one sigma per parameter, or one float for all")
    for name in params:  # of the step g, formed in float32 whatever the parameters' type
        check_float32_sigma(f"sigma of {name!r}" if isinstance(es.sigma, dict) else "sigma", sigmas[name],
                            "the step is formed")
    ids = {}
    for name in params:
        other = ids.setdefault(noise.param_id(name), name)
        if other != name:
            raise ValueError(f"parameters {other!r} and {name!r} share a noise stream: rename one")


def check_lrs(es, params):
    """ValueError naming the fix unless an Eggroll's lr (changed since it was made, as a dict may be)
    is one float, or one for each of `params`."""
    check_rates(es.lr, es.weight_decay)
    named = es.lrs(params)
    if set(named) != set(params):
        raise ValueError(f"lr names {ascii(sorted(named))} but the parameters are {ascii(sorted(params))}: "
                         f"give one lr per parameter, or one float for all")


def check_agreed(es, params, digest, generation, optimiser):
    """ValueError on every process of a team (distributed.team) whose processes hold other settings,
    another update, other parameters (`digest`, digest_of's), another Adam state or another
    generation: each would step along its own noise or moments, unseen. A collective call: ask makes
    it on every process."""
    if es.team.size == 1:
        return
    problem = disagreement(es, "ask", {**settings_of(es, params), "generation": int(generation),
                                       "parameters": digest[:16], "optimiser": optimiser_summary(optimiser)})
    if problem:
        raise ValueError(f"the processes of this team hold different Eggrolls or states: {problem}; give every "
                         f"process the same settings, and the same state (the same starting parameters, or the "
                         f"same pickled State)")


def optimiser_summary(optimiser):
    """What a team's processes compare of Adam's state (optim.init's): the digest of its moments and its
    step count; else what it is (a State made by hand to ask holds none, which tell refuses)."""
    if not (isinstance(optimiser, Mapping) and all(isinstance(optimiser.get(moment), Mapping) for moment in "mv")):
        return a_kind(optimiser)
    moments = {f"{moment}/{name}": value for moment in "mv" for name, value in optimiser[moment].items()}
    return f"{digest_of(moments)[:16]}, t {optimiser.get('t')}"


def settings_of(es, params):
    """What an Eggroll's step of `params` depends on beside their values: its settings (sigma and lr as each
    parameter's, however they were given) and its team's update."""
    return {"population": es.population, "rank": es.rank, "sigma": es.sigmas(params), "seed": es.seed,
            "lr": es.lrs(params), "weight_decay": es.weight_decay, "shaping": es.shaping, "update": es.team.update}


def fingerprint_of(params):
    """The parameters as a step needs them unchanged from ask to tell: their layout (layout_of) and the
    sha256 of their values (digest_of)."""
    return layout_of(params), digest_of(params)


def layout_of(params):
    """{name: (dtype, shape)} of every parameter (None where a value has no such attribute)."""
    return {name: (getattr(getattr(value, "dtype", None), "str", None), getattr(value, "shape", None))
            for name, value in params.items()}


def digest_of(params):
    """The sha256 (hex) of every parameter's name, dtype, shape and values (of a host copy), in name
    order: the same parameters, on any process, in any dict order, give the same digest."""
    digest = hashlib.sha256()
    for name, value in sorted(params.items()):
        host = numpy.ascontiguousarray(to_numpy(value))
        digest.update(f"{name} {host.dtype.str} {host.shape}".encode() + host.tobytes())
    return digest.hexdigest()


def changes_since(asked, params):
    """What changed in `params` since their fingerprint `asked` was taken: the names added, removed,
    retyped or reshaped, else "values", or None if nothing did."""
    then, now = asked[0], layout_of(params)
    kept = [name for name in now if name in then]
    named = [f"{change} {', '.join(map(repr, names))}" for change, names in (
        ("added", [name for name in now if name not in then]),
        ("removed", [name for name in then if name not in now]),
        ("retyped", [name for name in kept if now[name][0] != then[name][0]]),
        ("reshaped", [name for name in kept if now[name][1] != then[name][1]])) if names]
    if named:
        return "; ".join(named)
    return None if digest_of(params) == asked[1] else "values"


def check_told(es, params, generation):
    """ValueError on every process of a team whose processes tell different generations, or with
    settings changed on some since ask: their fitnesses would be gathered into one step, each along
    another generation's noise, or each process would take another step. A collective call."""
    if es.team.size == 1:
        return
    problem = disagreement(es, "tell", {**settings_of(es, params), "generation": int(generation)})
    if problem and problem.startswith("generation ("):
        raise ValueError(f"the processes of this team tell different generations: {problem}; every process tells "
                         f"the fitness of ask(state) for the same state")
    if problem:
        raise ValueError(f"the processes of this team tell with different Eggrolls: {problem}; change a setting on "
                         f"every process alike, between a tell and the next ask")


def disagreement(es, call, values):
    """Where the processes of es.team hold different `values` (Team.disagreement), each tagged with the
    call (ask or tell) that compares them, or None; a ValueError on every process if they are in
    different calls (one skipped a tell, say), whose values no comparison of one call's would explain."""
    problem = es.team.disagreement({"call": call, **values})
    if problem and problem.startswith("call ("):
        raise ValueError(different_calls(problem))
    return problem


def dense(value, name):
    """The call that makes `value`, named `name`, a NumPy array of floats: a sparse matrix's
    toarray (scipy.sparse: asarray would wrap it as one object), else numpy.asarray."""
    return f"{name}.toarray()" if hasattr(value, "toarray") else f"numpy.asarray({name}, dtype=numpy.float32)"


def a_kind(value):
    """"a list", "an int", "a NumPy array", "a numpy.matrix", "an array.array": the article and the name of
    value's type, for a message."""
    if type(value) is numpy.ndarray:
        return "a NumPy array"
    kind = type(value).__name__ if type(value).__module__ == "builtins" else \
        f"{type(value).__module__}.{type(value).__name__}"  # array.array, decimal.Decimal: not the builtins
    return f"{'an' if kind[0].lower() in 'aeiou' else 'a'} {kind}"


def pair_span(pairs):
    """A range of pairs for a message: "0..7" (both ends in), "none" if empty."""
    return f"{pairs.start}..{pairs.stop - 1}" if len(pairs) else "none"


def shown(value):
    """repr(value) for a message, but an int of more than 20 digits as its size (an int of 10^400 would
    fill the line, and one past 4,300 digits has no repr)."""
    if isinstance(value, int) and abs(value) >= 10 ** 20:
        return f"an int of about {math.floor(math.log10(abs(value))) + 1} digits"
    return repr(value)


def array_kind(value):
    """"a NumPy array of float32", "a cupy.ndarray of float64", "a list": for a message."""
    return f"{a_kind(value)} of {value.dtype}" if hasattr(value, "dtype") else a_kind(value)


def is_integer(value):
    """A Python or NumPy integer, not a bool."""
    return isinstance(value, (int, numpy.integer)) and not isinstance(value, (bool, numpy.bool_))


def check_rates(lr, weight_decay):
    """ValueError naming the fix unless Adam's lr (an Eggroll's: or a dict of them under string names)
    and weight decay are finite and >= 0, each lr x weight decay < 1 (optim.check checks an
    optim.Adam's with it, check_settings an Eggroll's)."""
    lrs = [(f"lr of {name!r}", value) for name, value in lr.items()] if isinstance(lr, dict) else [("lr", lr)]
    for name in lr if isinstance(lr, dict) else ():
        if not isinstance(name, str):
            raise ValueError(f"lr's keys must be the parameters' names, strings, got {name!r}: use e.g. "
                             f"{{'W1': 0.01, 'b1': 0.01}}")
    for setting, value in lrs + [("weight_decay", weight_decay)]:
        converted = as_float(value)
        if converted is None or not (math.isfinite(converted) and converted >= 0):
            raise ValueError(f"{setting} must be a finite int or float >= 0, got {shown(value)}: use e.g. "
                             f"{'0.0' if setting == 'weight_decay' else '0.01'}")
    for setting, value in lrs:
        if float(value) * float(weight_decay) >= 1:
            raise ValueError(f"{setting} x weight_decay must be < 1, got {float(value)} x {float(weight_decay)}: "
                             f"each step multiplies the parameters by 1 - lr x weight_decay, which would zero or "
                             f"flip them; lower one")


def check_number(name, value, low, high, example, open_low=False, open_high=False):
    """ValueError naming the fix unless value is an int or float (Python's or NumPy's, not a bool,
    Fraction or Decimal, which NumPy's arrays would not take as numbers) in [low, high], the bound
    left out with open_low or open_high; NaN is in no range."""
    plain = isinstance(value, (int, float, numpy.integer, numpy.floating)) and not isinstance(value,
                                                                                        (bool, numpy.bool_))
    inside = plain and (low < value if open_low else low <= value) and (value < high if open_high else value <= high)
    if not inside:
        bounds = f"{'(' if open_low else '['}{low:g}, {high:g}{')' if open_high else ']'}"
        raise ValueError(f"{name} must be an int or float in {bounds}, got {shown(value)}: use e.g. {example}")


def magnitude(values):
    """The largest |value| of an array as a Python float (NaN if one is NaN, 0 if it is empty), from
    its max and min: no temporary array as large as it."""
    return max(float(values.max()), -float(values.min())) if values.size else 0.0

def is_real(value):
    """A real number, not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, (bool, numpy.bool_))


def as_float(value):
    """A real number (not a bool) as the Python float a step uses (an infinity if it lies beyond
    float's range), or None for any other value: a check of a setting's range checks this."""
    if not is_real(value):
        return None
    try:
        return float(value)
    except OverflowError:  # an int or a Fraction: refused as not finite, whatever its sign
        return math.inf


def array_type(value):
    """type(value), a numpy.memmap (numpy.load(..., mmap_mode=...)) counted as the NumPy array its
    arithmetic gives."""
    return numpy.ndarray if isinstance(value, numpy.memmap) else type(value)


ASK_TELL = {"made": "init or tell", "first": "init", "give": "tell a State that init or tell returned",
            "undamaged": "tell an undamaged State", "restart": "init(state.params)"}  # the fixes, in ask/tell's words


def check_optimiser(state, words=ASK_TELL):
    """ValueError naming the fix unless state.optimiser holds Adam's state (optim.init) of every parameter:
    moments of its shape, finite, the average of g^2 >= 0, and a whole step count. `words`: the fixes
    in the words of the caller's interface (ASK_TELL's keys)."""
    optimiser = state.optimiser
    if not (isinstance(optimiser, Mapping) and "t" in optimiser
            and all(isinstance(optimiser.get(moment), Mapping) for moment in "mv")):
        raise ValueError("state.optimiser does not hold Adam's state of the parameters: tell a State that init or "
                         "tell returned (a State(params, {}, generation) made by hand can be asked, not told)")
    for name, value in state.params.items():
        for moment, what in (("m", "average of g"), ("v", "average of g^2")):
            values = optimiser[moment].get(name)  # (None: no moments of the parameter, said below)
            if values is not None and (getattr(values, "dtype", None) != value.dtype
                                       or array_type(values) is not array_type(value)):
                raise ValueError(f"Adam's {what} of parameter {name!r} is {array_kind(values)}, not {array_kind(value)} as "
                                 f"the parameter: {words['give']}, or, restoring one "
                                 f"from a file, give each moment as its parameter's array type and dtype (e.g. "
                                 f"numpy.asarray(m, dtype=params[name].dtype))")
        shapes = {getattr(optimiser[moment].get(name), "shape", None) for moment in "mv"}
        if shapes != {value.shape}:
            raise ValueError(f"Adam's state holds no moments of parameter {name!r} of shape {tuple(value.shape)}: it "
                             f"was added to the state or reshaped since {words['made']}; add or reshape parameters "
                             f"before {words['first']}, or start again with {words['restart']} (Adam and the "
                             f"generation from zero)")
    for name in set(optimiser["m"]) | set(optimiser["v"]):
        if name not in state.params:
            raise ValueError(f"Adam's state holds moments of {name!r}, which the state's parameters lack: it was "
                             f"removed since {words['made']}; start again with {words['restart']} (Adam and the "
                             f"generation from zero)")
    for name in state.params:
        for moment, what in (("m", "average of g"), ("v", "average of g^2")):
            values = optimiser[moment][name]
            if not bool(array_module_of(values).isfinite(values).all()):
                problem = "NaN or inf"
            elif moment == "v" and bool((values < 0).any()):
                problem = "a negative value"
            else:
                continue
            raise ValueError(f"Adam's {what} of parameter {name!r} holds {problem}, which no update makes: the state's "
                             f"optimiser was damaged; {words['undamaged']}, or start again with {words['restart']} "
                             f"(Adam and the generation from zero)")
    check_whole("state.optimiser's step count t", optimiser["t"], 0, 2 ** 63 - 1,
                "the State that init or tell returned, whose count starts at 0")


def check_array_module(xp):
    """ValueError naming the fix unless xp is an array module: numpy or cupy (or the tests' stand-in
    for CuPy, which has their asarray and float32)."""
    if not (hasattr(xp, "asarray") and hasattr(xp, "float32")):
        raise ValueError(f"xp must be the module numpy or cupy, got {a_kind(xp)}: give backend.array_module()")


def check_whole(setting, value, low, high, example):
    """ValueError naming the fix unless value is a whole number (not a bool) in [low, high] (None:
    no bound)."""
    whole = isinstance(value, numbers.Integral) and not isinstance(value, (bool, numpy.bool_))
    if not whole or (low is not None and value < low) or (high is not None and value > high):
        limits = {(False, False): f" in {low}..{high}", (False, True): f" >= {low}", (True, False): f" <= {high}",
                  (True, True): ""}[(low is None, high is None)]
        if isinstance(value, numpy.ndarray) and value.ndim == 0 and value.dtype.kind in "iu":
            example = f"int() of it (a count saved with numpy.save comes back as a 0-d array), or {example}"
        elif isinstance(value, float) and value.is_integer():
            example = f"the int {int(value)}: a float is not taken for a count, even a whole one"
        raise ValueError(f"{setting} must be a whole number{limits}, got {shown(value)}: use {example}")


def check_stepped(params, settings, fix):
    """FloatOverflow naming the fix if a step left a parameter NaN or inf (an lr so large that the step
    overflows, a sigma so small that g does): `settings` the step's, one text or a function of the
    parameter's name (formed only for the message), `fix` what to change. The caller's parameters and
    state are left as they were."""
    for name, value in params.items():
        if not bool(array_module_of(value).isfinite(value).all()):
            made = settings(name) if callable(settings) else settings
            raise FloatOverflow(f"this step would make parameter {name!r} NaN or inf ({made}): {fix}; the parameters "
                                f"and state given are left as they were")


def check_eggroll_stepped(params, optimiser, es):
    """check_stepped with EGGROLL's settings and fix. Given the step g as `params` and no optimiser,
    whether g itself is finite, before Adam takes it: g grows as 1/sigma (raw differences also set its
    size). Given the stepped parameters and Adam's state, whether they are: Adam moves a parameter by
    about lr whatever g is, so only a smaller lr helps; and whether Adam's average of g^2 is finite,
    which would stop the parameter where it is from then on."""
    raw = ", or scale the fitness down (raw differences set g's size) or shape it by centred ranks" \
        if es.shaping == "raw" else ""

    def settings(name):
        return f"sigma {es.sigmas(params)[name]!r}, lr {es.lrs(params)[name]!r}"
    def too_large(name):
        return FloatOverflow(f"this step would make Adam's average of g^2 of parameter {name!r} NaN or inf, g too "
                             f"large ({settings(name)}): raise sigma{raw}; the parameters and state given are left as "
                             f"they were")
    if optimiser is None:
        check_stepped(params, settings, f"raise sigma{raw}")
        for name, value in params.items():  # g^2 beyond its float type's range: said before Adam meets it
            if not magnitude(value) < math.sqrt(float(numpy.finfo(value.dtype).max)):
                raise too_large(name)
        return
    check_stepped(params, lambda name: f"lr {es.lrs(params)[name]!r}", "lower lr")
    for name, average in optimiser["v"].items():
        if not bool(array_module_of(average).isfinite(average).all()):
            raise too_large(name)


def check_differences(differences):
    """The pair differences f_p (float32) as they are, or a ValueError if one is inf: raw fitnesses whose
    differences exceed float32's range, which no sigma or lr can step along."""
    if not bool(array_module_of(differences).isfinite(differences).all()):
        raise ValueError("the fitness differences exceed float32's range, in which the step is formed: scale the "
                         "fitness (or shape it by centred ranks)")
    return differences


def check_finite(fitnesses):
    """`fitnesses` as they are, or a ValueError if one is NaN or inf (their centred ranks would mean
    nothing)."""
    if not bool(array_module_of(fitnesses).isfinite(fitnesses).all()):
        raise ValueError(NOT_FINITE)
    return fitnesses


NOT_FINITE = ("fitness holds NaN or inf: lower the learning rate or sigma, or check the inputs for non-finite values "
              "(a member to be ranked last takes a finite fitness below the others')")


def check_formed_size(members, name, value):
    """ValueError, before anything is drawn or allocated, if every member's copy of parameter `name`
    (Population.perturbed's answer) and the noise it is formed from, half as large, would not fit in
    this machine's RAM."""
    refuse_beyond_ram(f"perturbed({name!r}) would form {members:,} members' copies of a {value.dtype} parameter of "
                      f"shape {tuple(value.shape)}", members * value.size * value.dtype.itemsize * 3 // 2,
                      "with their noise", f"use linear({name!r}, x), which never forms E_p, or member(i), one member "
                                          f"at a time")


def check_outputs_size(members, name, shape, dtype):
    """ValueError, before anything is drawn or allocated, if every member's output of linear (`shape`
    each) and the pairs' perturbations of it, half as large, would not fit in this machine's RAM."""
    refuse_beyond_ram(f"linear({name!r}, x) would form {members:,} members' outputs of shape {tuple(shape)} in "
                      f"{dtype}", members * math.prod(shape) * dtype.itemsize * 3 // 2, "with the pairs' perturbations",
                      "give x fewer rows at a time, or ask a smaller population (a team of processes shares one: "
                      "distributed.team)")


def check_noise_size(pairs, name, value, rank):
    """ValueError, before anything is drawn or allocated, if the noise of parameter `name` for `pairs`
    pairs (Population.factors' answer: r (m + n) float32 numbers a pair, or m for a 1-D parameter) and
    what drawing it takes, as much again, would not fit in this machine's RAM."""
    count = rank * sum(value.shape) if value.ndim == 2 else value.shape[0]
    refuse_beyond_ram(f"factors({name!r}) would draw {pairs:,} pairs' noise of {count:,} numbers each", pairs * (
        8 * count + 12), "with what drawing it takes", "ask a smaller population (a team of processes shares one: "
                                                       "distributed.team)")


def check_params_size(params):
    """ValueError, before any copy, if a parameter, its copy and Adam's two moments of it (init's state)
    would not fit in this machine's RAM: a broadcast view or a file's memmap may declare more."""
    for name, value in params.items():
        refuse_beyond_ram(f"parameter {name!r} of shape {tuple(value.shape)} in {value.dtype} would be held "
                          f"with Adam's two moments of it", 3 * value.size * value.dtype.itemsize, "in all",
                          "give a smaller parameter, or split it into several")


def check_finite_params(params, fix):
    """ValueError "parameter <name> holds NaN or inf: EGGROLL steps finite parameters; <fix>" for the
    first parameter that holds one."""
    for name, value in params.items():
        if not bool(array_module_of(value).isfinite(value).all()):
            raise ValueError(f"parameter {name!r} holds NaN or inf: EGGROLL steps finite parameters; {fix}")


def check_resolved(params, sigmas):
    """Unresolved (a FloatOverflow) naming the fix if a parameter is so large that its float type's resolution at its
    largest entry (eps times that entry's magnitude) exceeds its sigma: its members would differ from it
    by rounding alone, their fitnesses tie and the step is 0 or rounding noise."""
    for name, value in params.items():
        largest = max(float(value.max()), -float(value.min()))
        spacing = float(numpy.finfo(value.dtype).eps) * largest
        if sigmas[name] < spacing:
            error = Unresolved(f"parameter {name!r} holds an entry of magnitude {largest:.3g}, where {value.dtype}'s "
                               f"resolution ({spacing:.3g}) exceeds its sigma {sigmas[name]!r}: its members would "
                               f"differ from it by rounding alone; raise sigma, or keep the parameter smaller (a "
                               f"smaller lr, if steps grew it)"
                               f"{', or give float64 parameters' if value.dtype == numpy.float32 else ''}")
            error.name, error.largest, error.spacing, error.sigma = name, largest, spacing, sigmas[name]
            raise error


class FloatOverflow(ValueError):
    """Members' values or outputs (check_finite_outputs), or a step's parameters (check_stepped),
    beyond their float type's range from finite inputs, or parameters so large that it no longer
    resolves sigma (check_resolved): for a caller that tells the user which setting to change."""


class Unresolved(FloatOverflow):
    """check_resolved's FloatOverflow; its attributes name the parameter, its largest entry in
    magnitude, its float type's resolution there and the sigma below it."""


def check_finite_outputs(values, what, fix, inputs=None):
    """FloatOverflow "<what> overflow <dtype>: <fix>" where the array `values` holds inf or NaN (a
    product or a sum beyond its float type's range: its inputs are finite, checked before). Where
    one of the parameters `inputs` ({name: array}) made them holds NaN or inf itself (changed by hand
    since ask), a ValueError says so instead: looked at only once the values are found wrong."""
    if not array_module_of(values).isfinite(values).all():
        for name, value in (inputs or {}).items():
            if not bool(array_module_of(value).isfinite(value).all()):
                raise ValueError(f"parameter {name!r} holds NaN or inf, which ask refuses: it was changed since "
                                 f"ask; ask again with finite parameters")
        raise FloatOverflow(f"{what} overflow {values.dtype}, whose largest number is {numpy.finfo(values.dtype).max:.3g}: "
                         f"{fix}")


def refuse_beyond_ram(what, needed, besides, fix):
    """ValueError "<what>, <needed> GB <besides>, more than this machine's RAM: <fix>" where `needed`
    bytes exceed the RAM the system reports (none where it reports none)."""
    try:
        ram = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):  # a system that does not say: nothing to compare with
        return
    if needed > ram:
        raise ValueError(f"{what}, {needed / 1e9:,.1f} GB {besides}, more than this machine's {ram / 1e9:,.1f} GB of "
                         f"RAM: {fix}")


def check_known(params, name, bias=None):
    """ValueError naming the parameters there are, for a name (or a bias other than None) that is none
    of them."""
    for given in (name, bias) if bias is not None else (name,):
        if not isinstance(given, str):
            shown_given = repr(given) if len(repr(given)) <= 40 else a_kind(given)  # not a whole array
            raise ValueError(f"a parameter's name is a string, got {shown_given}: the parameters are "
                             f"{', '.join(sorted(params))}")
        if given not in params:
            raise ValueError(f"unknown parameter {given!r}: the parameters are {', '.join(sorted(params))}")


def check_population(population):
    """ValueError naming the fix unless population is 2P antithetic members."""
    if population < 2 or population % 2:
        raise ValueError(f"population must be an even number >= 2 (antithetic pairs), "
                         f"got {population}: use e.g. {max(2, population + population % 2)}")


def fitness_array(fitness, members, like):
    """`fitness` as a float64 array of `like`'s module, or a ValueError naming the fix unless it is one
    real number per member. float64 holds every float32, float16, bool and integer up to 2^53 as it
    is (their ranks unchanged), their differences neither wrap nor overflow, and every process of a
    team gathers the same type; numbers that it would make equal (integers beyond 2^53, long doubles,
    Fractions, Decimals), or that lie beyond its range, are refused."""
    if isinstance(fitness, numpy.ma.MaskedArray):  # asarray drops the mask: a masked member would be ranked
        raise ValueError("fitness is a masked array: give every member a number (numpy.ma.filled(fitness, low))")
    if fitness is None and members == 0:
        raise ValueError("fitness is None, and this process holds no members (its team gave it no pairs): tell it "
                         "an empty fitness, []")
    if fitness is None:
        raise ValueError("fitness is None: give one real number per member, a list or array of them")
    if isinstance(fitness, (str, bytes, bytearray, memoryview)):  # bytes would be read as one number a byte
        raise ValueError(f"fitness must be real numbers, one per member, got {a_kind(fitness)}: give a list or "
                         f"array of them")
    if isinstance(fitness, (Iterator, Set, Mapping, MappingView)):  # no member order, or read once
        fix = "give list(fitness)" if isinstance(fitness, Iterator) else "give a list or array in member order"
        raise ValueError(f"fitness is {a_kind(fitness)}, not numbers in member order: {fix}")
    if hasattr(fitness, "shape") and tuple(fitness.shape) != (members,):  # before any copy of its values
        raise ValueError(wrong_fitness_shape(members, fitness.shape))
    given = fitness
    if isinstance(fitness, Sequence):  # a list, tuple or deque of numbers, or of a reduction's 0-d arrays, say
        fitness = [number_of(value) for value in fitness]
    # a list's integers are held as objects, checked below: beside a float NumPy would make them float64
    # itself, merging those beyond 2^53 unseen
    as_objects = isinstance(fitness, list) and any(map(is_integer, fitness))
    try:  # on the host, where Fractions, None and ints beyond int64 are objects to check (a device has none)
        fitness = numpy.asarray(to_numpy(fitness) if array_module_of(fitness) is not numpy else fitness,
                                dtype=object if as_objects else None)
    except (TypeError, ValueError) as error:  # ragged, say
        raise ValueError(f"fitness must be real numbers, one per member: {error}") from None
    if fitness.dtype.kind == "O":  # Fractions, Decimals, ints beyond int64, say: numbers, if float() takes them
        for member, value in enumerate(fitness.ravel()):
            if value is None:
                raise ValueError(f"fitness holds None (member {member}): give every member a number")
            if isinstance(value, (str, bytes, bytearray)):  # which float() would read as a number
                raise ValueError(f"fitness must be real numbers, one per member, got text (member {member}: "
                                 f"{value!r})")
            value = number_of(value)  # (a duration is a NumPy integer, but no score: refused as its arrays are)
            scores = isinstance(value, (numbers.Real, decimal.Decimal, numpy.bool_))
            if not scores or isinstance(value, numpy.timedelta64):
                raise ValueError(f"fitness must be real numbers, one per member, got {a_kind(value)} (member "
                                 f"{member}: {value!r})")
    beyond = beyond_float64(fitness)
    if beyond is not None:
        raise ValueError(f"fitness holds numbers beyond float64's range, in which they are ranked (member {beyond}): "
                         f"scale them before tell")
    wide = is_long_double(fitness.dtype) or fitness.dtype.kind in "iu" and fitness.dtype.itemsize > 4  # int64: 2^53
    if fitness.dtype.kind == "O" or wide:  # Fractions, Decimals, big ints, long doubles: float64 may round them
        try:
            converted = fitness.astype(numpy.float64)
        except (TypeError, ValueError):  # a Decimal's signalling NaN, which float() refuses: named with its member
            for member, value in enumerate(fitness.ravel()):
                try:
                    float(value)
                except (TypeError, ValueError):
                    raise ValueError(f"fitness must be real numbers, one per member, got {value!r} (member "
                                     f"{member}), no number float64 can hold: give every member a number") from None
            raise
        if made_equal(fitness, converted):
            raise ValueError("fitness holds numbers closer together than float64, in which they are ranked, can "
                             "tell apart: shift or scale them (e.g. subtract their smallest) before tell")
        fitness = converted
    if fitness.dtype.kind in "US":  # a list of text, or an array of it
        texts = [member for member, value in enumerate(given) if isinstance(value, (str, bytes))] \
            if isinstance(given, Sequence) else []
        member, value = (texts[0], given[texts[0]]) if texts else (0, fitness.ravel()[0].item())
        raise ValueError(f"fitness must be real numbers, one per member, got text (member {member}: {value!r})")
    if fitness.dtype.kind not in "biuf":  # None, complex: no order to rank
        what = f"an array of {fitness.dtype}" if hasattr(given, "dtype") or isinstance(given, Sequence) else a_kind(given)
        raise ValueError(f"fitness must be real numbers, one per member, got {what}")
    fitness = fitness.astype(numpy.float64)  # native byte order too
    if fitness.shape != (members,):
        raise ValueError(wrong_fitness_shape(members, fitness.shape))
    finite = numpy.isfinite(fitness)
    if not finite.all():  # said here, where the member is known (under a team, on its own process)
        raise ValueError(f"{NOT_FINITE}; the first is member {int(finite.argmin())}")
    return array_module_of(like).asarray(fitness)


def wrong_fitness_shape(members, shape):
    return (f"fitness must have shape ({members},), one number per member of ask's population in member order, "
            f"got {tuple(shape)}")


def number_of(value):
    """One member's fitness as a host value: a device array copied, a 0-d array's number taken out
    (as NumPy's scalar of its type), anything else as it is."""
    if array_module_of(value) is not numpy:
        value = to_numpy(value)
    return value[()] if isinstance(value, numpy.ndarray) and value.ndim == 0 else value


def is_long_double(dtype):
    """A float type wider than float64 (numpy.longdouble on most machines)."""
    return dtype.kind == "f" and dtype.itemsize > 8


def beyond_float64(values):
    """The flat index of the first of `values` (an array) that is a finite number beyond float64's
    range, or None: a Python int, Fraction, Decimal or long double that float64 would make inf (or
    cannot take at all)."""
    if is_long_double(values.dtype):
        with numpy.errstate(over="ignore", under="ignore"):
            beyond = numpy.isfinite(values) & ~numpy.isfinite(values.astype(numpy.float64))
        return int(beyond.argmax()) if beyond.any() else None
    if values.dtype.kind != "O":  # NumPy's other numbers all fit
        return None
    for index, value in enumerate(values.ravel()):
        if isinstance(value, (str, bytes, bytearray)):  # text, whatever float() makes of it: no number
            continue
        try:
            as_float = float(value)
        except OverflowError:  # an int or a Fraction
            return index
        except (TypeError, ValueError):  # None, a signalling NaN: no number, refused as such elsewhere
            continue
        if math.isinf(as_float) and value != as_float:  # a Decimal, say: finite, made inf
            return index
    return None


def made_equal(given, converted):
    """Whether `converted`, the fitness `given` as float64, holds two of its different values as one:
    their ranks would tie, and the step lose them. (Python's numbers compare and hash by value across
    types, so a set counts the different values of any mix of them; a 0-d array counts as its number.)"""
    return len(set(converted.ravel().tolist())) < len({number_of(value) for value in given.ravel().tolist()})


def check_layer(params, name, bias=None):
    """ValueError naming the fix unless `name` is a 2-D weight and `bias` None or its 1-D bias."""
    check_known(params, name, bias)
    w = params[name]
    if w.ndim != 2:
        raise ValueError(f"a layer needs a 2-D weight, got {name} of shape {tuple(w.shape)}: a 1-D "
                         f"parameter is a bias, bias={name!r} beside its weight")
    if bias is not None and params[bias].shape != (w.shape[0],):
        raise ValueError(f"bias {bias!r} has shape {tuple(params[bias].shape)}, but {name} makes "
                         f"{w.shape[0]} outputs: give a 1-D bias of length {w.shape[0]}")


def input_array(x, params, name, members):
    """x as a float32 or float64 array that layer `name` can take, (N, n) or (members, N, n),
    or a ValueError naming the fix. An x of integers or bools (pixels, spikes), or of float16, is made the
    weight's float type, so that it gives each member's true product (float16 would round the members'
    differences away); integers that type cannot hold exactly (beyond 2^24 for float32) are refused. A
    long double x is made float64, the widest product type (float32 would merge inputs float64 holds apart)."""
    check_layer(params, name)
    w = params[name]
    if isinstance(x, numpy.ma.MaskedArray):  # asarray drops the mask: a masked input would count as its data
        raise ValueError("x is a masked array: give every input a number (numpy.ma.filled(x, 0))")
    given = x
    try:
        x = array_module_of(w).asarray(x)  # a list of rows, say; an array as it is
    except (TypeError, ValueError) as error:  # ragged rows, say
        raise ValueError(f"x must be an array of real numbers, (N, n) or (2·pairs, N, n): {error}") from None
    product = numpy.dtype(numpy.float64 if is_long_double(x.dtype) else (  # the widest product type
        x.dtype if x.dtype.newbyteorder("=") in (numpy.float32, numpy.float64) else w.dtype).newbyteorder("="))
    refuse_beyond_ram(f"x of shape {tuple(x.shape)} would be read whole", x.size * (1 + product.itemsize),
                      "as its checks and its cast make it", "give x fewer rows at a time")  # a broadcast view, say
    if beyond_float64(x) is not None:
        raise ValueError("x holds numbers beyond float64's range: scale them")
    if x.dtype.kind == "O" and all(map(is_integer, x.ravel())) and any(abs(int(v)) >= 2 ** 63 for v in x.ravel()):
        raise ValueError("x holds integers beyond 2^63, which no float type of a weight holds exactly: scale it")
    if x.dtype.kind not in "biuf":  # complex, text, objects: no product that means a member's layer
        what = f"an array of {x.dtype}" if hasattr(given, "dtype") or isinstance(given, (list, tuple)) else a_kind(given)
        raise ValueError(f"x must be an array of ints or floats, got {what}: give {dense(given, 'x')}")
    if x.ndim < 2:
        raise ValueError(f"x of shape {tuple(x.shape)} is not (N, n), one x for every member, nor (2·pairs, N, n), "
                         f"one per member: give one sample as x[None] (shape (1, n))")
    if x.shape[-1] != w.shape[1]:
        transposed = x.shape[-1] == w.shape[0]
        raise ValueError(f"x of shape {tuple(x.shape)} does not fit {name} of shape {tuple(w.shape)}: a layer "
                         f"is x W^T, so x needs {w.shape[1]} columns"
                         + (f"; store {name} as (out, in), its transpose" if transposed else ""))
    if x.ndim > 2 and x.shape[0] != members:
        raise ValueError(f"x of shape (2·pairs, N, n) needs 2·pairs = {members} members, got {x.shape[0]}")
    check_outputs_size(members, name, (*x.shape[x.ndim > 2:-1], w.shape[0]), product)
    if x.dtype.kind == "f" and not array_module_of(x).isfinite(x).all():  # read once the outputs are known to fit
        raise ValueError("x holds inf or NaN: give every input a finite number")
    if x.dtype.newbyteorder("=") in (numpy.float32, numpy.float64):  # in another machine's byte order ('>f8') too
        return x if x.dtype.isnative else x.astype(x.dtype.newbyteorder("="))
    return exactly(x, product)


def exactly(x, dtype):
    """x (integers, bools, float16, long doubles) as float `dtype`, or a ValueError naming the fix if it
    holds integers that `dtype` cannot hold exactly: rounded, two inputs would give one product."""
    converted = x.astype(dtype)  # no overflow: a long double is made float64, and one beyond it refused before
    digits = numpy.finfo(dtype).nmant + 1  # the integers up to 2^digits are exact
    if x.dtype.kind in "iu" and 8 * x.dtype.itemsize > digits:  # int32 or int64 in float32, say
        with numpy.errstate(invalid="ignore"):  # one near 2^63 rounds past int64's range: not held, as said
            held = bool((converted.astype(x.dtype) == x).all())
        if not held:
            fix = "give numpy.asarray(x, dtype=numpy.float64), which multiplies in float64, or scale it" \
                if dtype == numpy.float32 else "scale it"
            raise ValueError(f"x holds integers beyond 2^{digits} that {dtype}, the weight's type and the "
                             f"product's, cannot hold exactly: {fix}")
    return converted
