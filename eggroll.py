"""EGGROLL: evolution strategies with low-rank perturbations, for any dict of named 1-D and 2-D arrays.

The method's equations are stated in README.md ("The method in equations") and derived in
docs/derivation.md; each function below holds the line of the equation it computes. The interface
is evosax's and pycma's, ask and tell (docs/your-network.md):

    es = Eggroll(population=512, rank=1, sigma=0.1, seed=1, lr=0.01)
    state = es.init({"enc.w": W1, "enc.b": b1, "out.w": W2, "out.b": b2})
    for generation in range(generations):
        pop = es.ask(state)                                        # keys only: no noise array is stored
        hidden = numpy.tanh(pop.linear("enc.w", x, bias="enc.b"))  # (2P, batch, m), Eq. (6)
        state, stats = es.tell(state, pop, fitness(pop.linear("out.w", hidden, bias="out.b"), labels))

Read top to bottom; the method is in the functions named, and the rest checks what callers give:
  1. the perturbations: factors A_p, B_p of E_p and a bias's noise delta_p, regenerated from
     their keys (noise.py) whenever they are needed: `lowrank_factors`                           (5)
  2. the population, `ask`'s answer: x (W + sigma E_p)ᵀ of every member, E_p never formed:
     x Wᵀ once, x [B_1 ... B_P] for the whole population in blocks of PAIRS_PER_BLOCK pairs,
     each pair's two members sharing it: `population_product`, `Population.linear`               (6)
  3. fitness shaping: centred ranks c in [-0.5, 0.5]; f_p = c(theta + sigma E_p) - c(theta - sigma E_p):
     `centred_ranks`, `pair_differences`
  4. the step g, one matrix product per weight: `lowrank_gradient`, `bias_gradient`          (7)-(8)
  5. `Eggroll.tell`: shape, form g from the keys, and let Adam climb it (optim.py)               (9)
Beside nano_eggroll.py, which takes the same step, the code differs in three ways: the members
are interleaved (below), a bias's noise rides in its weight's product as one more column
(`Population.rows`), and no factor is kept between ask and tell; the rest is speed (blocks of
pairs, the GPU), several processes (`team`) and the checks.

The method knows no network: its clients call `linear` where their layers multiply, the spiking
network of snn.py among them (snn_eggroll.py). What it refuses, and the fix it names, is in
interface_checks.py.

Factor layout: `A` has shape (pairs, r, m) and `B` shape (pairs, r, n); the rows of A[p] are the
columns of Eq. (5)'s A_p (m × r). Stacked, A.reshape(P r, m) is [A_1 ... A_P]ᵀ. (Upper case, as
in EGGROLL's paper, Sarkar et al.: a lower-case b is a bias.) Pairs are counted from 0 here (from 1
in the equations): member 2p is pair p's + side, theta + sigma E_p, member 2p + 1 its - side.
"""
import math
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy

from backend import array_module_of
from distributed import ALONE
import gpu
from interface_checks import FloatOverflow  # noqa: F401 -- raised by linear, perturbed and member: eggroll.FloatOverflow
from interface_checks import (MAX_GENERATION, MAX_PAIRS, a_kind, changes_since, check_agreed, check_differences,
                              check_eggroll_stepped, check_finite, check_finite_outputs, check_finite_params,
                              check_formed_size, check_known, check_layer, check_lrs, check_noise_size, check_optimiser,
                              check_params, check_params_size, check_resolved, check_settings, check_sigma,
                              check_told, check_whole, fingerprint_of, fitness_array, input_array, pair_span)
import noise
import optim

PLAIN_COPIES = (numpy.memmap, numpy.recarray)  # parameters init copies into a plain ndarray (a file's: in memory)
FAR_FROM_THE_LIMIT = "use a smaller sigma, or parameters further from that limit"  # a member beyond its float type
PAIRS_PER_BLOCK = 64  # pairs per product of the population: one shape for every BLAS call (population_product)


# ---------------------------------------------------------------------------------------------
# 1. The perturbations of Eq. (5)

def lowrank_factors(seed, generation, pairs, name, shape, rank, xp=numpy):
    """A_p and B_p of Eq. (5), E_p = A_p B_pᵀ / sqrt(r), for weight `name` of shape (m, n): arrays
    (P, r, m) and (P, r, n), stored transposed (A[p] = A_pᵀ), entries 𝒩(0, 1)."""
    m, n = shape
    normals = noise.normals(seed, generation, pairs, name, rank * (m + n), xp)
    A = normals[:, :rank * m].reshape(-1, rank, m)
    B = normals[:, rank * m:].reshape(-1, rank, n)
    return A, B


def materialise(A, B):
    """E_p = A_p B_pᵀ / sqrt(r) as (P, m, n), every entry formed: for tests, explanation and the members
    a caller asks for whole (Population.perturbed, member); linear's products and the step never form it."""
    return (A.transpose(0, 2, 1) @ B) / math.sqrt(A.shape[1])


# ---------------------------------------------------------------------------------------------
# 2. The population's forward pass, Eq. (6)

def with_ones(x):
    """[x, 1]: a column of ones appended, so a bias's noise rides in a product as one more column."""
    xp = array_module_of(x)
    return xp.concatenate([x, xp.ones(x.shape[:-1] + (1,), dtype=x.dtype)], axis=-1)


def antithetic(base, perturbation):
    """Currents of both members of each pair: base + perturbation, then base - perturbation.

    base (batch, m) is shared by all members; perturbation (pairs, batch, m) is one per pair (or any
    shape after pairs that base broadcasts to). Returns (2·pairs, batch, m) in member order (pair 0 +,
    pair 0 -, pair 1 +, ...), written in place: no other array of that size is made.
    """
    xp = array_module_of(perturbation)
    pairs, shape = perturbation.shape[0], perturbation.shape[1:]
    current = xp.empty((pairs, 2, *shape), dtype=perturbation.dtype)
    xp.add(base, perturbation, out=current[:, 0])
    xp.subtract(base, perturbation, out=current[:, 1])
    return current.reshape(2 * pairs, *shape)


def population_product(x, factors):
    """x (batch, n) times the factors (pairs, width, n): (batch, pairs, width), one product per PAIRS_PER_BLOCK
    pairs with the last block padded by zeros. Every BLAS call then has one shape, so a pair's
    result is the same however many pairs a process holds (BLAS may round a product of another
    shape differently). On a GPU one kernel sums each result over the nonzero inputs alone
    (gpu.population_product): event frames are mostly zeros."""
    xp = array_module_of(x)
    if gpu.enabled(xp):
        return gpu.population_product(x, factors)
    pairs, width, n = factors.shape
    out = xp.empty((x.shape[0], pairs, width), dtype=x.dtype)
    for start in range(0, pairs, PAIRS_PER_BLOCK):
        block = factors[start:start + PAIRS_PER_BLOCK]
        stop = start + block.shape[0]
        if block.shape[0] < PAIRS_PER_BLOCK:
            block = xp.concatenate([block, xp.zeros((PAIRS_PER_BLOCK - block.shape[0], width, n), block.dtype)])
        product = x @ block.reshape(PAIRS_PER_BLOCK * width, n).T
        out[:, start:stop] = product.reshape(x.shape[0], PAIRS_PER_BLOCK, width)[:, :stop - start]
    return out


@dataclass(frozen=True, eq=False)  # a Population is itself, not its fields: it hashes
class Population:
    """`ask`'s answer: the members theta +- sigma E_p of the pairs `pairs` at one generation, as keys.

    Nothing random is stored: every factor is regenerated from (seed, generation, pair, name)
    when a product needs it. Each pair gives two members: the one numbered twice the pair's position
    in `pairs` is its + side, the next its - side."""
    params: dict
    sigma: dict          # {name: sigma}
    rank: int
    seed: int
    generation: int
    pairs: range         # the indices of the pairs: keys, so that asking costs nothing however many
    # the parameters' fingerprint when ask made it (interface_checks.fingerprint_of), for tell to compare;
    # None in the populations tell and member make for themselves, which are never told
    fingerprint: tuple = field(default=None, repr=False)

    def __post_init__(self):
        if not (isinstance(self.sigma, dict) and set(self.sigma) == set(self.params) and isinstance(self.pairs, range)
                and all(0 <= end < MAX_PAIRS for end in (*self.pairs[:1], *self.pairs[-1:]))):  # a range's ends bound it
            raise ValueError("a Population is made by Eggroll.ask (its sigma {name: float} for every parameter, its "
                             "pairs a range in 0..2^32 - 1): ask for one")
        check_sigma(self.sigma)  # the noise's keys and scales, as Eggroll checks them
        check_whole("rank", self.rank, 1, None, "e.g. 1 or 4")
        check_whole("seed", self.seed, 0, 2 ** 64 - 1, "e.g. 0")
        check_whole("generation", self.generation, 0, MAX_GENERATION, "the generation of the State that ask was given")
        check_params(self, self.params)  # as Eggroll.check: this answers rank and sigmas as an Eggroll does
        if not (self.fingerprint is None or isinstance(self.fingerprint, tuple) and len(self.fingerprint) == 2
                and isinstance(self.fingerprint[0], dict) and isinstance(self.fingerprint[1], str)):
            raise ValueError("a Population is made by Eggroll.ask (its fingerprint is ask's, of the parameters it "
                             "was asked for): ask for one")

    def sigmas(self, params):
        """{name: sigma} for every parameter, as Eggroll.sigmas gives them."""
        return dict(self.sigma)

    @property
    def members(self):
        return 2 * len(self.pairs)

    def factors(self, name):
        """Eq. (5)'s factors of weight `name`, stored transposed as lowrank_factors gives them: A (pairs,
        r, m) with A[p] = A_pᵀ and B (pairs, r, n) with B[p] = B_pᵀ; or delta_p (pairs, m) of a 1-D parameter."""
        check_known(self.params, name)
        # every product and member goes through here: sigma checked again, as the dict may have been
        # changed by hand since ask (a negative one would swap the members)
        check_sigma({name: self.sigma.get(name)})
        value = self.params[name]
        check_noise_size(len(self.pairs), name, value, self.rank)
        xp = array_module_of(value)
        pairs = xp.arange(self.pairs.start, self.pairs.stop, self.pairs.step)
        if value.ndim == 2:
            return lowrank_factors(self.seed, self.generation, pairs, name, value.shape, self.rank, xp)
        return noise.normals(self.seed, self.generation, pairs, name, value.shape[0], xp)

    def rows(self, weight, bias, dtype):
        """[sigma/sqrt(r) A_pᵀ ; sigma delta_p] (pairs, r + 1, m) and B (pairs, r, n), B[p] = B_pᵀ, in `dtype`: a
        bias is a weight on a constant input 1, so its noise rides in the pair's product as one more column,
            x (W + sigma E_p)ᵀ + b + sigma delta_p = x Wᵀ + b + [x B_p, 1] rows_p."""
        check_layer(self.params, weight, bias)
        try:
            dtype = numpy.dtype(dtype)  # float is float64, as NumPy reads it
        except TypeError:  # a name NumPy knows no type by
            raise ValueError(f"rows are float32 or float64, got {dtype!r}") from None
        if dtype not in (numpy.float32, numpy.float64):
            raise ValueError(f"rows are float32 or float64, got {dtype}")
        A, B = (factor.astype(dtype, copy=False) for factor in self.factors(weight))  # float64 stays float64
        xp = array_module_of(A)
        if bias is None:
            delta = xp.zeros((A.shape[0], A.shape[2]), dtype=dtype)
        else:
            delta = self.factors(bias).astype(dtype, copy=False)
        sigma = self.sigma[weight]
        bias_sigma = self.sigma[bias] if bias is not None else sigma
        return xp.concatenate([sigma / math.sqrt(self.rank) * A, bias_sigma * delta[:, None, :]], axis=1), B

    def linear(self, name, x, bias=None):
        """x (W + sigma E_p)ᵀ, W parameter `name` (+ the bias's member), for every member, Eq. (6):
        (2·pairs, batch, m).

        x is (batch, n), shared by all members, or (2·pairs, batch, n), one per member (a hidden layer's
        output); its batch rows are samples, or frames of samples (snn_eggroll.py: T N of them).
        E_p is never formed: x Wᵀ once, and x B_p for all pairs in one product per block. The
        product is in x's float type, float32 or float64 (input_array: integers, bools and float16
        are first made the weight's, long doubles float64; integers it cannot hold exactly are refused)."""
        x = input_array(x, self.params, name, self.members)  # the outputs' size checked too
        w = self.params[name]
        xp = array_module_of(x)
        with numpy.errstate(over="ignore", invalid="ignore", under="ignore"):  # an overflow: said below
            rows, B = self.rows(name, bias, x.dtype)
            base = x @ w.T.astype(x.dtype, copy=False)                        # x Wᵀ, once
            if bias is not None:
                base = base + self.params[bias].astype(x.dtype, copy=False)
            if x.ndim == 2:                                                   # one x for every member
                xb = with_ones(population_product(x, B).transpose(1, 0, 2))   # (pairs, batch, r + 1)
                out = antithetic(base, xb @ rows)
            else:
                by_pair = x.reshape(len(self.pairs), 2, math.prod(x.shape[1:-1]), x.shape[-1])  # (pairs, 2, batch, n)
                xb = with_ones(by_pair @ B.transpose(0, 2, 1)[:, None])       # (pairs, 2, batch, r + 1)
                sign = xp.asarray([1, -1], dtype=x.dtype)[None, :, None, None]
                out = base + (sign * (xb @ rows[:, None])).reshape(base.shape)
        check_finite_outputs(out, f"linear({name!r}, x): the members' outputs",
                             "scale x, the parameters or sigma down"
                             + ", or give x as float64" * (x.dtype != numpy.float64),
                             {used: self.params[used] for used in (name, bias) if used is not None})
        return out

    def perturbed(self, name):
        """Every member's value of parameter `name` at once, (2·pairs, m, n) or (2·pairs, m): theta +-
        sigma E_p, each E_p formed (m n numbers a member), in member order. For a layer applied many
        times a generation (a recurrent loop) or elementwise (a gain): formed once, instead of a
        `linear` per frame or a `member` per member. Its row `index` is member(index)[name], bit for bit."""
        check_known(self.params, name)
        value = self.params[name]
        check_formed_size(self.members, name, value)
        factors = self.factors(name)
        if value.ndim == 2:  # in the parameter's float type, as `member` forms it
            drawn_noise = materialise(*(factor.astype(value.dtype) for factor in factors))
        else:
            drawn_noise = factors.astype(value.dtype)
        with numpy.errstate(over="ignore", under="ignore"):  # an overflow is said once, below, not warned
            drawn_noise *= self.sigma[name]                                  # sigma E_p, in place
            members = antithetic(value, drawn_noise)
        check_finite_outputs(members, f"perturbed({name!r}): the members' values", FAR_FROM_THE_LIMIT, {name: value})
        return members

    def member(self, index):
        """The parameters of member number `index`, every E_p formed: a dict like params, for a fitness
        that is a black box."""
        if not self.members:
            raise ValueError("this population holds no members (a process given no pairs): ask no member of it")
        check_whole("member", index, 0, self.members - 1, f"0..{self.members - 1}")
        index = int(index)  # a NumPy unsigned index would wrap 1 - 2 (index % 2), the - side's sign
        pair, sign = index // 2, 1 - 2 * (index % 2)
        one = Population(self.params, self.sigma, self.rank, self.seed, self.generation, self.pairs[pair:pair + 1])
        drawn = {}
        for name, value in self.params.items():
            factors = one.factors(name)
            if value.ndim == 2:  # E_p = A_p B_pᵀ / sqrt(r), in the parameter's float type as `linear` forms it
                drawn_noise = materialise(*(factor.astype(value.dtype, copy=False) for factor in factors))[0]
            else:
                drawn_noise = factors[0].astype(value.dtype, copy=False)
            with numpy.errstate(over="ignore", under="ignore"):  # an overflow is said once, below, not warned
                drawn[name] = (value + sign * self.sigma[name] * drawn_noise).astype(value.dtype, copy=False)
            check_finite_outputs(drawn[name], f"member({index})[{name!r}]: its values", FAR_FROM_THE_LIMIT,
                                 {name: value})
        return drawn


# ---------------------------------------------------------------------------------------------
# 3. Fitness shaping (vanilla ES shares these)

def centred_ranks(values):
    """The centred ranks c of `values`: ranks (0 for the lowest) / (count - 1) - 0.5, in [-0.5, 0.5]
    with sum 0; tied values share their mean rank."""
    xp = array_module_of(check_finite(values))
    if gpu.enabled(xp) and values.size <= gpu.RANKS_BY_COUNTING_MAX:
        return gpu.centred_ranks(values)
    _, tie_group, group_sizes = xp.unique(values, return_inverse=True, return_counts=True)
    first_rank = xp.cumsum(group_sizes) - group_sizes
    fitness_ranks = (first_rank + (group_sizes - 1) / 2)[tie_group.reshape(-1)]
    return fitness_ranks / max(values.size - 1, 1) - 0.5


def pair_differences(shaped):
    """f_p = shaped(theta + sigma E_p) - shaped(theta - sigma E_p), from the shaped fitnesses (centred
    ranks, or the raw fitnesses) of members ordered (+, -) by pair, as float32."""
    xp = array_module_of(shaped)
    return (shaped[0::2] - shaped[1::2]).astype(xp.float32)


def population_stats(fitnesses, shaped):
    """What a generation reports: mean (summed in float64) and max fitness, and the spread of the
    shaped fitnesses."""
    with numpy.errstate(over="ignore", invalid="ignore", under="ignore"):  # a sum beyond float64: inf, or inf - inf
        mean, spread = float(fitnesses.mean(dtype="float64")), float(shaped.std())
    if not math.isfinite(mean):  # finite float64 fitnesses near its largest, whose sum overflows: shares summed
        mean = float((fitnesses / fitnesses.size).sum())
    if not math.isfinite(spread):  # raw fitnesses whose squares overflow: the spread of them scaled to at most 1
        largest = float(abs(shaped).max())
        spread = largest * float((shaped / largest).std())
    return {"mean_fitness": mean, "max_fitness": float(fitnesses.max()), "shaped_std": spread}


# ---------------------------------------------------------------------------------------------
# 4. The step g, Eqs. (7)-(8)

def lowrank_gradient(f, A, B, sigma, n_pairs):
    """Eq. (7): (diag(𝐟) 𝐀)ᵀ 𝐁 / (2 P sigma sqrt(r)), from f (pairs,), A (pairs, r, m), B (pairs, r, n)
    of some or all of the population's P = n_pairs pairs (a process may hold a part); 𝐀 is
    A.reshape(pairs r, m), every pair's A_pᵀ stacked, 𝐁 likewise, and 𝐟 each f_p r times."""
    pairs, rank, m = A.shape
    weighted = (f[:, None, None] * A).reshape(pairs * rank, m)
    return weighted.T @ B.reshape(pairs * rank, B.shape[2]) / (2 * n_pairs * sigma * math.sqrt(rank))


def bias_gradient(f, delta, sigma, n_pairs):
    """Eq. (8): sum_p f_p delta_p / (2 P sigma), over the pairs of f and delta, P = n_pairs."""
    return f @ delta / (2 * n_pairs * sigma)


def gradient(f, population, n_pairs):
    """g for every parameter, Eqs. (7)-(8), summed over the population's pairs from their pair
    differences f float32; n_pairs = P, the whole population's pairs.

    Every factor is regenerated from its key: nothing was stored since the forward pass.
    """
    grads = {}
    for name, value in population.params.items():
        if value.ndim == 2:
            grads[name] = lowrank_gradient(f, *population.factors(name), population.sigma[name], n_pairs)
        else:
            grads[name] = bias_gradient(f, population.factors(name), population.sigma[name], n_pairs)
    return grads


# ---------------------------------------------------------------------------------------------
# 5. Ask and tell

@dataclass(frozen=True, eq=False)  # a State is itself, not its arrays (whose == is elementwise): it hashes
class State:
    """What one generation hands the next: the parameters, Adam's state (optim.init) and the
    generation, which keys the noise. It pickles; a run loaded from it goes on with the same bits."""
    params: dict
    optimiser: dict
    generation: int = 0


@dataclass(frozen=True)
class Eggroll:
    """EGGROLL over named parameters: `population`, the number of members, 2P in P antithetic pairs;
    perturbation rank r, noise scale sigma (a float, or {name: float} for every parameter), the noise's
    seed, Adam's lr (a float, or {name: float} as sigma) and decoupled weight decay, the shaping of the
    fitness (centred ranks, or raw differences), and a `team` of processes (distributed.py) that share
    the pairs out."""
    population: int
    rank: int
    sigma: object = field(hash=False)  # a dict has no hash; equal Eggrolls still hash alike
    seed: int
    lr: object = field(default=0.01, hash=False)
    weight_decay: float = 0.0
    shaping: str = "centred_ranks"
    team: object = field(default=ALONE, compare=False)

    def __post_init__(self):
        for setting in ("sigma", "lr"):  # a copy: a value changed in the caller's dict is not used unchecked
            if isinstance(getattr(self, setting), Mapping):
                object.__setattr__(self, setting, dict(getattr(self, setting)))
        check_settings(self)
        # Python ints and floats: no product of them wraps in a NumPy integer type (rank * (m + n) in
        # a uint8), and none sets the float type of a product (a float64 or float16 sigma would)
        for setting in ("population", "rank", "seed"):
            object.__setattr__(self, setting, int(getattr(self, setting)))
        object.__setattr__(self, "weight_decay", float(self.weight_decay))
        for setting in ("sigma", "lr"):
            value = getattr(self, setting)
            object.__setattr__(self, setting, {name: float(number) for name, number in value.items()}
                               if isinstance(value, dict) else float(value))

    @property
    def pairs(self):
        return self.population // 2

    def init(self, params):
        """The first state: a copy of the dict `params` (any names, 1-D and 2-D arrays), Adam at zero.
        Under a team, every process calls it, or one does and broadcasts the state: the processes
        compare their settings and parameters at ask."""
        if not isinstance(params, Mapping):
            raise ValueError(f"params must be a dict of named arrays, got {a_kind(params)}: use e.g. "
                             f"{{'W1': W1, 'b1': b1}}")
        self.check(params)
        check_params_size(params)
        check_finite_params(params, "give it finite starting values")
        check_resolved(params, self.sigmas(params))
        params = {name: numpy.array(value) if type(value) in PLAIN_COPIES else value.copy()
                  for name, value in params.items()}  # the caller's arrays may change
        return State(params, optim.init(params), 0)

    def check(self, params):
        """ValueError naming the fix, for parameters EGGROLL cannot run with (or that these settings
        do not fit): a dict of non-empty 1-D and 2-D float32 or float64 arrays under string names."""
        check_params(self, params)
        check_lrs(self, params)

    def ask(self, state):
        """The population of this process's pairs at state.generation (all of them alone). Under a
        team, every process calls it (they compare their settings, parameters and generation)."""
        check_state(state)
        self.check(state.params)
        check_params_size(state.params)
        check_finite_params(state.params, "no update makes one (tell refuses it): the state's parameters were changed "
                                          "since init or tell; ask with the State that init or tell returned")
        check_resolved(state.params, self.sigmas(state.params))
        fingerprint = fingerprint_of(state.params)  # for tell to compare; its digest, for a team's check
        check_agreed(self, state.params, fingerprint[1], state.generation, state.optimiser)
        return self.population_of(state, self.team.my_pairs(self.pairs, PAIRS_PER_BLOCK), fingerprint)

    def tell(self, state, population, fitness):
        """The next state from the fitness of `population`'s members, one each in member order, higher
        is better, and the generation's stats (mean and max fitness, spread of the shaped fitness):
        the fitness of every process gathered, shaped, f_p formed, the step g of Eqs. (7)-(8) from
        the keys, summed over processes, and Adam's update up it, Eq. (9). `population` is what this
        Eggroll's ask gave for `state`; another's is a ValueError, as its noise is not the step's."""
        fitness = self.told(state, population, fitness)  # every check of what tell is given
        # The method: gather every member's fitness, shape them (centred_ranks, section 3 of docs/derivation.md),
        # f_p (pair_differences), the step g (gradient, Eqs. (7)-(8)) summed over processes, and Adam's update
        # up it (ascend, Eq. (9)). A number below its float type's smallest is rounded to 0 as the method means
        # it, whatever numpy.seterr asks (a difference below float32's, Adam's moments after many tied
        # generations, a tiny lr); one beyond its range is refused by the check after it.
        with numpy.errstate(under="ignore", over="ignore"):
            fitnesses = self.team.gather(fitness, self.pairs, PAIRS_PER_BLOCK)
            shaped = centred_ranks(fitnesses) if self.shaping == "centred_ranks" else check_finite(fitnesses)
            f = check_differences(pair_differences(shaped))
            summed = self.team.update_pairs(self.pairs, PAIRS_PER_BLOCK)
            g = self.team.sum(gradient(f[summed], self.population_of(state, summed), self.pairs))    # (7)-(8)
            check_eggroll_stepped(g, None, self)  # g itself beyond float's range: said as the step it makes
            adams = {name: optim.Adam(lr, self.weight_decay) for name, lr in self.lrs(state.params).items()}
            params, optimiser = optim.ascend(state.params, g, state.optimiser, adams)                # (9)
            check_eggroll_stepped(params, optimiser, self)
        return State(params, optimiser, int(state.generation) + 1), population_stats(fitnesses, shaped)

    def told(self, state, population, fitness):
        """tell's checks of what it is given (the state, that `population` is ask(state)'s, the
        parameters, Adam's state, the fitness, the settings); the fitness as an array of the
        parameters' float type."""
        check_state(state)
        self.check_asked(state, population)
        self.check(state.params)
        check_optimiser(state)
        with numpy.errstate(under="ignore"):  # a fitness below float32's smallest is 0, as the method means it
            fitness = fitness_array(fitness, population.members, next(iter(state.params.values())))
        check_told(self, state.params, state.generation)
        return fitness

    def check_asked(self, state, population):
        """ValueError naming the fix unless `population` is ask(state)'s of this Eggroll."""
        if not isinstance(population, Population):
            raise ValueError(f"tell takes (state, population, fitness), got {a_kind(population)} as the "
                             f"population: pass ask(state)'s answer before the fitness")
        if population.fingerprint is None:  # made by hand, or pickled by a version before tell compared them
            raise ValueError("this population was not made by this eggroll.py's ask (made by hand, or pickled by an "
                             "older version): ask the state again (the same members, the same bits)")
        if population.generation != state.generation:
            raise ValueError(f"the population is generation {population.generation}'s, the state is at generation "
                             f"{state.generation}: tell the fitness of ask(state) with that same state")
        changed = changes_since(population.fingerprint, state.params)
        if changed and population.params is state.params:
            raise ValueError(f"the state's parameters changed since ask ({changed}): tell the state as it was asked, "
                             f"and change it after")
        if changed:  # another dict: another state's, or this one's pickled apart from the population and changed
            raise ValueError(f"the population was asked of another state's parameters, or of this state's before they "
                             f"changed ({changed}): tell the state it was asked of, as it was asked")
        check_sigma(self.sigma)  # a sigma dict may have been changed since ask
        asked = {"seed": self.seed, "rank": self.rank, "pairs": range(self.pairs)[self.team.my_pairs(
            self.pairs, PAIRS_PER_BLOCK)], "sigma": self.sigmas(state.params)}  # what ask(state) would give now
        differ = [name for name, value in asked.items() if getattr(population, name) != value]
        if differ == ["sigma"]:
            raise ValueError(f"the population was asked with sigma {population.sigma}, this Eggroll's is "
                             f"{asked['sigma']}: tell its fitness to the Eggroll that asked it, and change a sigma "
                             f"after tell, not between ask and tell")
        if differ:
            shown = lambda name, value: pair_span(value) if name == "pairs" else value
            asked_of = "; ".join(f"its {name} {shown(name, getattr(population, name))}, this Eggroll's "
                                 f"{shown(name, asked[name])}" + (f" of its {self.pairs}" if name == "pairs" else "")
                                 for name in differ)
            raise ValueError(f"the population was asked of another Eggroll ({asked_of}): tell its fitness to the "
                             f"Eggroll that asked it")

    def population_of(self, state, pairs, fingerprint=None):
        """The Population of the pairs in the slice `pairs` of 0..P-1 at state.generation (with ask's
        `fingerprint` of the parameters, for tell to compare)."""
        return Population(state.params, self.sigmas(state.params), self.rank, self.seed, int(state.generation),
                          range(self.pairs)[pairs], fingerprint)

    def sigmas(self, params):
        """{name: sigma} for every parameter."""
        if isinstance(self.sigma, dict):  # Python floats: the dict may have been changed since (check_params)
            return {name: float(sigma) for name, sigma in self.sigma.items()}
        return {name: self.sigma for name in params}

    def lrs(self, params):
        """{name: lr} for every parameter."""
        if isinstance(self.lr, dict):  # Python floats: the dict may have been changed since (check_params)
            return {name: float(lr) for name, lr in self.lr.items()}
        return {name: self.lr for name in params}


def check_state(state):
    """ValueError naming the fix unless `state` is a State (of init or tell): a dict of parameters, and
    a generation that keys the noise, a whole number in 0..2^32 - 1 (one 32-bit word of its counter)."""
    if not isinstance(state, State):
        raise ValueError(f"state must be the State that init or tell returned, got {a_kind(state)}")
    if not isinstance(state.params, Mapping):
        raise ValueError(f"state.params must be a dict of named arrays, got {a_kind(state.params)}: "
                         f"make the state with init(params)")
    if isinstance(state.generation, numbers.Integral) and state.generation == MAX_GENERATION + 1:
        raise ValueError(f"state.generation {state.generation} is past the last the noise can key, {MAX_GENERATION}: "
                         f"every generation of this seed is spent; go on from its parameters under another seed, "
                         f"Eggroll(..., seed=S).init(state.params)")
    check_whole("state.generation", state.generation, 0, MAX_GENERATION,
                "the State that init or tell returned, whose generation counts from 0")
