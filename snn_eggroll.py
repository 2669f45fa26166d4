"""EGGROLL's first client: the spiking network of snn.py, trained by eggroll.Eggroll.

Its population forward runs Eq. (6) in every layer (the first layer's input shared by every
member, each later layer's input a member's own spikes) into the LIF neurons of Eqs. (1)-(2), its
fitness is -cross-entropy (Eqs. (3)-(4)) less a price per hidden spike if one is set (Eq. (12)),
and `generation_step` is one generation of it as ask (the keys of Eq. (5)) -> forward -> fitness
-> tell (Eqs. (7)-(9)). The equations are numbered as in README.md ("The method in equations").
"""
from collections.abc import Mapping
from dataclasses import dataclass

import numpy

from backend import array_module_of
from distributed import ALONE
from eggroll import Eggroll, State, antithetic, population_product, with_ones
import gpu
from interface_checks import (GENERATION_FIX, MAX_GENERATION, a_kind, check_number, check_optimiser, check_pairs,
                              check_population, check_sigma, check_whole)
import optim
import snn

# A damaged or mismatched Adam state, fixed in this module's words (generation_step takes optim's state)
STEP_WORDS = {"made": "optim.init or the last generation_step", "first": "optim.init",
              "give": "give the state that optim.init or the last generation_step returned",
              "undamaged": "give an undamaged state", "restart": "optim.init(params)"}


def is_inner(name, params):
    """Whether parameter `name` is of a hidden layer after the first: layer 1 < l < the output's."""
    return 1 < snn.layer_of(name) < snn.n_layers(params)


@dataclass(frozen=True)
class Config:
    """What one EGGROLL population of the spiking network needs:
    - population: 2P members, P antithetic pairs; rank: r; sigma: the perturbations' scale;
    - seed: the noise's; logit_scale: the readout's, softmax(logit_scale * rate) (Eq. (3));
    - spike_cost: the fitness's price of a hidden spike (Eq. (12));
    - output_sigma_scale: the output layer's sigma is output_sigma_scale × sigma;
    - inner_scale: the hidden layers' after the first take inner_scale × sigma and × Adam's lr."""
    population: int
    rank: int
    sigma: float
    seed: int
    logit_scale: float
    spike_cost: float = 0.0
    output_sigma_scale: float = 1.0
    inner_scale: float = 1.0

    @property
    def pairs(self):
        return self.population // 2

    def sigmas(self, params):
        """{name: sigma}: the output layer's (the last, by position) weights and bias get
        output_sigma_scale × sigma, the hidden layers' after the first inner_scale × sigma; a layer's
        bias shares its weights' sigma."""
        return {name: self.sigma * self.output_sigma_scale if snn.layer_of(name) == snn.n_layers(params) else
                self.sigma * self.inner_scale if is_inner(name, params) else self.sigma for name in params}

    def lrs(self, params, lr):
        """{name: Adam's lr}: lr, and inner_scale × lr for the hidden layers after the first."""
        return {name: lr * self.inner_scale if is_inner(name, params) else lr for name in params}

    def method(self, params, adam=optim.Adam(0.01), team=ALONE):
        """The Eggroll that trains `params` with these settings and Adam's lr and weight decay
        (check_config checks them; Eggroll's Adam averages as Kingma & Ba's)."""
        snn.check_names(params)  # before sigmas reads their layers off the names
        optim.check(adam)
        # else the Eggroll would name the output layer's sigma it makes
        check_number("output_sigma_scale", self.output_sigma_scale, 0, 1e6, "1.0", open_low=True)
        check_number("inner_scale", self.inner_scale, 0, 1e6, "1.0", open_low=True)
        if isinstance(self.sigma, (Mapping, list, tuple)) or hasattr(self.sigma, "ndim") and self.sigma.ndim > 0:
            # (Eggroll takes one per parameter; sigmas makes this network's)
            raise ValueError(f"sigma is one float for every layer here (the output layer's scaled by "
                             f"output_sigma_scale), got {a_kind(self.sigma)}: use e.g. 0.1, or eggroll.Eggroll for a "
                             f"sigma per parameter")
        check_sigma(self.sigma)  # before sigmas multiplies it
        kingma_ba = optim.averages_of(optim.Adam(adam.lr))
        if optim.averages_of(adam) != kingma_ba:
            raise ValueError(f"EGGROLL's Adam averages as Kingma & Ba's {kingma_ba} (the moments' coefficients and "
                             f"eps), got {optim.averages_of(adam)}: give optim.Adam(lr, weight_decay)")
        return Eggroll(self.population, self.rank, self.sigmas(params), self.seed, self.lrs(params, adam.lr),
                       adam.weight_decay, team=team)

    def members(self, params, generation, pairs=slice(None), network=None):
        """The Population of the pairs in the slice `pairs` (all P by default) at `generation`."""
        check_config(self, params, network)
        check_whole("generation", generation, 0, MAX_GENERATION,
                    "the number of the generation to draw (0 for the first)")
        check_pairs(pairs, self.population // 2)
        return self.method(params).population_of(State(params, {}, generation), pairs)


def population_forward(population, frames, lif=snn.LIF(), count_hidden=False, network=None):
    """Output spike counts (2·pairs, N, n_out) of the population's members on frames (T, N, n_in), Eq. (6)
    in every layer, and the hidden spike count of each member if count_hidden (else None).
    `network`: the layers (None: fully connected, read off the weights' shapes).

    Layer 1 sees the same frames in every member: x W1ᵀ once, x B_p for all pairs in one product
    per block (a convolution's x: every patch of every frame, `snn.Network.unfold`). Every later
    layer sees each member's own spikes s, so s [Wᵀ | B_p] is one product per pair, its + and -
    members together. On a GPU, a network of two dense layers runs its LIF layers, for every
    member and frame, as one kernel (gpu.lowrank_lif_network), if it reads out rates. With a
    potential readout (`snn.Network.readout`) the counts are the output potentials summed."""
    params = population.params
    network = snn.network_of(params, network)
    xp = array_module_of(frames)
    n_frames, batch, n_in = frames.shape
    sizes = network.sizes
    n_pairs, n_layers = len(population.pairs), len(sizes) - 1
    rows, factors_B = zip(*(population.rows(f"W{layer}", f"b{layer}", frames.dtype)
                            for layer in range(1, n_layers + 1)))
    x = network.unfold(1, frames.reshape(n_frames * batch, n_in))                  # (T N positions, fan_in)
    base = (x @ params["W1"].T + params["b1"]).reshape(n_frames, -1, params["W1"].shape[0])  # x Wᵀ, once
    xb = population_product(x, factors_B[0])                                      # x [B_1 ... B_P], (T N pos, P, r)
    readouts = {layer: xp.concatenate([xp.broadcast_to(params[f"W{layer}"].T, (n_pairs,) + params[f"W{layer}"].T.shape),
                                       factors_B[layer - 1].transpose(0, 2, 1)], axis=2)
                for layer in range(2, n_layers + 1)}                                # [Wᵀ | B_p], (P, n, m + r)
    if gpu.enabled(xp) and network.fused():  # what follows, as one kernel
        counts, hidden = gpu.lowrank_lif_network(base, xb, rows[0], readouts[2], rows[1], params["b2"], lif)
        return counts, (hidden if count_hidden else None)
    xb = xb.reshape(n_frames, base.shape[1], n_pairs, population.rank).transpose(0, 2, 1, 3)
    xb = with_ones(xb)                                                             # (T, P, N pos, r+1)
    # (2 N positions, 1) for layer l: +1 on the + member's rows, -1 on the - member's. It signs
    # [s B_p, 1] before the product with rows_p = [sigma/sqrt(r) A_pᵀ ; sigma delta_p], so the - member
    # gets W - sigma E_p and b - sigma delta_p: the ones column, which carries the bias noise, is signed too.
    sign = {layer: xp.repeat(xp.asarray([1, -1], dtype=frames.dtype), batch * network.positions(layer))[:, None]
            for layer in range(2, n_layers + 1)}

    def input_current(t, start, stop):
        chunk = slice(start // 2, stop // 2)  # the pairs of members start..stop-1 (chunks are even)
        return antithetic(base[t], xb[t, chunk] @ rows[0][chunk]).reshape(stop - start, batch, sizes[1])

    def layer_current(layer, spikes, start, stop):
        """Each member has its own spikes s, so s Wᵀ and s B_p are one product per pair: s [Wᵀ | B_p] =
        [s Wᵀ | s B_p], its first m columns the current without noise, its last r those of Eq. (6)."""
        chunk, n_out_layer = slice(start // 2, stop // 2), params[f"W{layer}"].shape[0]
        by_pair = network.unfold(layer, spikes.reshape(n_frames, -1, 2 * batch, sizes[layer - 1]))  # (T, P, 2N pos, n)
        projected = by_pair @ readouts[layer][chunk]                                    # (T, pairs, 2N pos, m+r)
        perturbation = (sign[layer] * with_ones(projected[..., n_out_layer:])) @ rows[layer - 1][chunk]  # (.., m)
        current = projected[..., :n_out_layer] + params[f"b{layer}"] + perturbation
        return current.reshape(n_frames, stop - start, batch, sizes[layer])

    return snn.simulate(input_current, layer_current, 2 * n_pairs, n_frames, batch, sizes, lif, xp,
                        frames.dtype, count_hidden, network.readout)


def perturbed_forward(params, frames, config, generation, lif=snn.LIF(), count_hidden=False, pairs=slice(None),
                      network=None):
    """population_forward (Eq. (6)) of the members theta +- sigma E_p of the pairs in the slice `pairs`
    (all P by default) at `generation`, with config's settings."""
    check_config_type(config)
    snn.check_inputs(params, frames, network)
    snn.check_frames_fit(params, frames)
    snn.check_lif(lif)
    return population_forward(config.members(params, generation, pairs, network), frames, lif, count_hidden,
                              network)


def fitness(counts, labels, n_frames, logit_scale, hidden_spikes=None, spike_cost=0.0):
    """Fitness of every member = -cross-entropy of softmax(output rates), Eqs. (3)-(4), less
    spike_cost × its hidden spikes per sample, Eq. (12); hidden_spikes: each member's over the batch.

    The spike count is not differentiable, but ES needs no gradient of it: the price goes
    straight into the fitness (BPTT needs a surrogate, baselines.bptt_backward)."""
    loss = snn.cross_entropy(counts, labels, n_frames, logit_scale)
    check_number("spike_cost", spike_cost, 0, 1e6, "0.0")
    if spike_cost:
        if getattr(hidden_spikes, "shape", None) != counts.shape[:-2]:
            raise ValueError(f"a price on spikes needs hidden_spikes, each member's count, of shape "
                             f"{tuple(counts.shape[:-2])}, got {getattr(hidden_spikes, 'shape', hidden_spikes)!r}: "
                             f"count them (count_hidden=True), or give spike_cost 0")
        if getattr(hidden_spikes, "dtype", numpy.dtype(object)).kind not in "fiu":  # complex or objects: no count
            kind = getattr(hidden_spikes, "dtype", a_kind(hidden_spikes))
            raise ValueError(f"hidden_spikes must be an array of counts, float or integer, got {kind}: count them "
                             f"(count_hidden=True)")
        if not bool(array_module_of(hidden_spikes).isfinite(hidden_spikes).all() and (hidden_spikes >= 0).all()):
            raise ValueError("hidden_spikes hold NaN, inf or a negative count, which no network's spikes make: count "
                             "them (count_hidden=True)")
        with numpy.errstate(over="ignore"):  # beyond the float range: refused just below
            loss = loss + spike_cost * hidden_spikes / counts.shape[-2]
        if not bool(array_module_of(loss).isfinite(loss).all()):
            raise ValueError(f"spike_cost {spike_cost:g} times hidden_spikes passes the loss's float range: lower "
                             f"spike_cost, or give counts a network makes")
    return -loss


def generation_step(params, state, frames, labels, generation, config, adam, lif=snn.LIF(), team=ALONE,
                    network=None):
    """One EGGROLL generation of the spiking network on a minibatch, frames (T, N, n_in) and labels
    (N,): ask -> the population's forward (Eq. (6)) and fitness (Eqs. (3)-(4), (12)) -> tell
    (Eqs. (7)-(9)).

    Takes the parameters, Adam's state and settings (optim.py); returns new parameters, new state
    and stats (mean and max fitness, spread of the shaped fitnesses). A `team` of processes
    (distributed.py) shares the pairs out; alone, a process holds them all and `team` does nothing.
    `network`: the layers (None: fully connected, read off the weights' shapes).
    """
    snn.check_frames(params, frames, labels, network)
    snn.check_frames_fit(params, frames)
    snn.check_lif(lif)
    optim.check(adam)
    optim.check_adam_state(state)  # (else tell would name its own State, which this call makes)
    check_whole("generation", generation, 0, MAX_GENERATION, GENERATION_FIX)  # (else named as the State's)
    check_config_type(config)
    es = config.method(params, adam, team)  # (its population, rank and sigma checked by Eggroll, its ask)
    check_readout_settings(config)
    if team.size > 1:  # a process scoring its members otherwise would rank them apart from the others, unseen
        scoring = {"logit_scale": float(config.logit_scale), "spike_cost": float(config.spike_cost),
                   "readout": snn.network_of(params, network).readout, "LIF": [float(lif.beta), float(lif.threshold)]}
        problem = team.disagreement({"scoring": scoring, "minibatch": snn.minibatch_summary(frames, labels)})
        if problem:
            raise ValueError(f"the processes of this team score their members by different settings or minibatches: "
                             f"{problem}; give every process the same minibatch, logit_scale, spike_cost, readout and "
                             f"LIF")
    current = State(params, state, generation)
    check_optimiser(current, STEP_WORDS)  # (else tell would name its own State, which this call makes)
    population = es.ask(current)                                                               # keys of Eq. (5)
    counts, hidden = population_forward(population, frames, lif, bool(config.spike_cost), network)  # Eq. (6)
    fit = fitness(counts, labels, frames.shape[0], config.logit_scale, hidden, config.spike_cost)  # (3)-(4), (12)
    new, stats = es.tell(current, population, fit)                                             # (7)-(9)
    return new.params, new.optimiser, stats


def check_config_type(config):
    """ValueError naming the fix unless `config` is a Config (another object's fields would be read as its)."""
    if not isinstance(config, Config):
        raise ValueError(f"config must be a snn_eggroll.Config, got {a_kind(config)}: give e.g. "
                         f"snn_eggroll.Config(population=512, rank=1, sigma=0.1, seed=1, logit_scale=1.0)")

def check_config(config, params, network=None):
    """ValueError naming the problem and the fix, for settings EGGROLL cannot run the network with
    (`network`: its layers, None: fully connected)."""
    check_population(config.population)
    check_sigma(config.sigma)
    check_readout_settings(config)
    snn.check_params(params, network)
    config.method(params).check(params)  # the rank against every weight matrix, as ask checks it


def check_readout_settings(config):
    """ValueError naming the fix unless config's logit_scale and spike_cost (any method's) are numbers
    the fitness can use: a readout scale float32 keeps apart from 0 and inf, a price >= 0."""
    check_number("logit_scale", config.logit_scale, 1e-6, 1e6, "1.0")
    check_number("spike_cost", config.spike_cost, 0, 1e6, "0.0")
