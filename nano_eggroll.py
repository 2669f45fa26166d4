"""nano EGGROLL: evolution strategies with low-rank perturbations, training a spiking network, on one page.

The same method as eggroll.py and snn_eggroll.py, without what makes them fast or safe: blocks of
pairs, members simulated a group at a time, a GPU, several processes and the input checks.
The equations are numbered as in README.md ("The method in equations") and derived in
docs/derivation.md; each function holds the line it computes.

The network: an N-MNIST recording binned into T = 10 frames of 2312 inputs (34 × 34 pixels × 2
polarities: brightness going up or down), into 64 and then 10 LIF (leaky integrate-and-fire)
neurons. A LIF neuron adds its input current to a potential that is multiplied by beta (its leak)
each frame, and spikes and resets to 0 when the potential reaches its threshold. The output neuron
that spikes most names the digit.

One generation: draw every pair's noise (5), run the 2P members theta +- sigma E_p without ever
forming E_p (6), score them (3)-(4), replace the fitnesses by their centred ranks c, weigh pair p by
f_p = c(theta + sigma E_p) - c(theta - sigma E_p), form the step g (7)-(8) and climb it by Adam (9).

The noise comes from the project's Philox streams (noise.py), so this file and eggroll.py draw the
same numbers and take the same steps (tests/test_nano_eggroll.py holds them to it); this file keeps
a generation's factors from the forward pass to the step, where eggroll.py draws them again.

`OPENBLAS_NUM_THREADS=1 python nano_eggroll.py` trains 300 generations of 256 members on the 162
training recordings of nmnist-sample/ in about 17–40 CPU seconds and scores its 100 test recordings: 68 % or
70 % at seed 1, 57–70 % over seeds 1–3 (results/reproductions/nano-and-lesson-times.md).
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import argparse
    import math
    import time
    from dataclasses import dataclass
    from pathlib import Path

    import numpy as np

    import data   # the project's N-MNIST loader, for the training loop only
    import exits  # how the command ends: one line and an exit status for every error
    import noise  # Philox4x32-10: noise.normals(seed, generation, pairs, name, count), float32
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; nothing was written, run it again to start over\n")
    sys.exit(130)


@dataclass(frozen=True)
class Settings:
    """The sigma, learning rate and readout of the `best` preset (config.py: the longer-training
    recipe of docs/accuracy.md, `make reproduce-best`), the learning rate held constant, with half
    its 512 members (main() also takes minibatches of 64, not its 256). The paper's protocol differs
    from `best` in lr 0.1, held constant, and logit scale 1."""
    population: int = 256      # 2P, the count of members: P antithetic pairs
    rank: int = 1              # r, the rank of the noise
    sigma: float = 0.2         # the scale of a perturbation
    lr: float = 0.03           # Adam's learning rate
    logit_scale: float = 5.0   # softmax(logit_scale * rate), rate = counts / T, Eq. (3)
    seed: int = 1              # of the initial weights, the noise and the minibatches
    beta: float = 0.9          # LIF leak
    threshold: float = 1.0     # LIF threshold V_th


# ---------------------------------------------------------------------------------------------
# The spiking network, Eqs. (1)-(4)

def init_params(seed, sizes=(2312, 64, 10), std=0.3):
    """W_l (fan_out × fan_in) and b_l ~ 𝒩(0, std^2), float32, as snn.init_params draws them."""
    rng = np.random.default_rng(seed)
    params = {}
    for layer, (n_in, n_out) in enumerate(zip(sizes[:-1], sizes[1:]), start=1):
        params[f"W{layer}"] = rng.normal(0.0, std, (n_out, n_in)).astype(np.float32)
        params[f"b{layer}"] = rng.normal(0.0, std, n_out).astype(np.float32)
    return params


def lif(currents, beta, threshold):
    """Eqs. (1)-(2) for every neuron, V_t = beta V_{t-1} + s_t Wᵀ + b and o_t = 𝟙[V_t >= V_th], then
    V_t <- 0 where o_t: input currents s_t Wᵀ + b (T, ...) -> output spikes o_t (T, ...), 0 or 1."""
    v = np.zeros_like(currents[0])
    spikes = np.empty_like(currents)
    for t in range(len(currents)):
        v = beta * v + currents[t]       # (1)
        spikes[t] = v >= threshold       # (2)
        v = v * (1 - spikes[t])          # reset to 0 where it spiked
    return spikes


def forward(params, x, settings):
    """The network itself on frames x (T, N, n_in): output spike counts (N, 10)."""
    hidden = lif(x @ params["W1"].T + params["b1"], settings.beta, settings.threshold)
    return lif(hidden @ params["W2"].T + params["b2"], settings.beta, settings.threshold).sum(axis=0)


def fitness(counts, labels, n_frames, logit_scale):
    """-cross-entropy of softmax(logit_scale * rate), rate = counts / T (T = n_frames), Eqs. (3)-(4):
    counts (..., N, 10) -> (...), the mean over the batch. Sums in the order of snn.cross_entropy,
    to the last bit."""
    logits = counts * (logit_scale / n_frames)
    logits = logits - logits.max(axis=-1, keepdims=True)
    log_y_hat = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))   # log softmax, (3)
    one_hot = labels[:, None] == np.arange(counts.shape[-1])
    return (log_y_hat * one_hot).sum(axis=-1).mean(axis=-1)                  # mean log y_hat[label], (4)


# ---------------------------------------------------------------------------------------------
# EGGROLL

def draw_noise(params, generation, settings):
    """Eq. (5) for every pair: W -> (At, Bt) of shapes (P, r, m) and (P, r, n), stored transposed: At[p]
    is A_pᵀ, its rows the columns of Eq. (5)'s A_p (m × r); b -> delta (P, m). Float32, from the same
    streams and in the same layout as eggroll.lowrank_factors (its A and B): one row of r (m + n)
    normals per pair, At's part first.
    E_p = At[p].T @ Bt[p] / sqrt(r) is never formed here (eggroll.materialise forms it, for tests and for
    members asked for whole)."""
    pairs, r = np.arange(settings.population // 2), settings.rank
    perturbations = {}
    for name, value in params.items():
        if name.startswith("W"):
            m, n = value.shape
            normals = noise.normals(settings.seed, generation, pairs, name, r * (m + n))
            perturbations[name] = (normals[:, :r * m].reshape(-1, r, m), normals[:, r * m:].reshape(-1, r, n))
        else:
            perturbations[name] = noise.normals(settings.seed, generation, pairs, name, value.shape[0])
    return perturbations


def population_forward(params, perturbations, x, settings, arrays=None):
    """Output spike counts (2, P, N, 10) of every member on frames x (T, N, n_in) by Eq. (6),
    x (W +- sigma E_p)ᵀ = x Wᵀ +- sigma/sqrt(r) (x B_p) A_pᵀ. [0, p] is theta + sigma E_p and
    [1, p] is theta - sigma E_p (eggroll.py interleaves them instead: member 2p is pair p's +,
    2p + 1 its -). A bias's noise sigma delta_p joins the same per-pair term, so the two members
    of a pair differ only in its sign.

    Every array's shape is in docs/derivation.md's table of one generation, in letters and in numbers;
    the comments below give each line's. `arrays`, a dict if given, receives the arrays by name (each
    side's for the + side), for a reader to look at, as the derivation's trace does.

    The same counts, the slow way, each E_p formed (tests/test_nano_eggroll.py checks that the two agree):

        for p in range(P):
            for side, sign in enumerate((1, -1)):
                member = {W: params[W] + sign * sigma * At_W[p].T @ Bt_W[p] / sqrt(r) for W in ("W1", "W2")}
                member |= {b: params[b] + sign * sigma * delta_b[p] for b in ("b1", "b2")}
                counts[side, p] = forward(member, x, settings)                      # (N, 10)
    """
    # the noise in the frames' type (float32 or 64): the factors of W1 and W2, the noise of b1 and b2
    At_W1, Bt_W1 = (factor.astype(x.dtype) for factor in perturbations["W1"])   # (P, r, 64), (P, r, 2312)
    At_W2, Bt_W2 = (factor.astype(x.dtype) for factor in perturbations["W2"])   # (P, r, 10), (P, r, 64)
    delta_b1, delta_b2 = perturbations["b1"].astype(x.dtype), perturbations["b2"].astype(x.dtype)  # (P, 64), (P, 10)
    n_frames, batch, n_in = x.shape                                             # T frames, N samples, 2312
    P, r, _ = At_W1.shape
    sigma_over_root_r = settings.sigma / math.sqrt(r)
    # Layer 1: every member sees the same frames, so x W1ᵀ + b1 is computed once, and x B_p for every
    # pair is ONE product, x [B_1 ... B_P]. At_W1[p] is A_pᵀ (r × m) and Bt_W1[p] is B_pᵀ (r × n).
    base = x @ params["W1"].T + params["b1"]                                    # (T, N, 64)
    xB = x @ Bt_W1.reshape(P * r, n_in).T  # (T, N, P r): x [B_1 ... B_P]; pair p's r columns: x B_p
    xB_by_pair = xB.reshape(n_frames, batch, P, r).transpose(0, 2, 1, 3)  # (T, P, N, r): pairs before samples
    # (T, P, N, r) @ (P, r, 64): matmul multiplies the last two axes and broadcasts the leading ones,
    # so for each frame t and pair p it takes xB_by_pair[t, p] (N, r) @ At_W1[p] (r, 64): pair p's rows x B_p
    # meet its own A_pᵀ alone.
    # As einsums, with the letters of docs/symbols.md (T frames, P pairs, N samples, r the
    # rank, n a layer's inputs, m its neurons): xB_by_pair = einsum("TNn,Prn->TPNr", x, Bt_W1), then
    # einsum("TPNr,Prm->TPNm", xB_by_pair, At_W1)
    pair_term = (sigma_over_root_r * xB_by_pair) @ At_W1 + settings.sigma * delta_b1[:, None, :]  # (T, P, N, 64)

    def side(sign):  # every pair's + member (theta + sigma E_p), or every pair's - member, as sign says
        # every array here has the axes (T, P, N, units): frame, pair, sample, neuron
        hidden = lif(base[:, None] + sign * pair_term, settings.beta, settings.threshold)  # (T, P, N, 64)
        # Layer 2 (its n = 64 inputs are layer 1's m): each member has hidden spikes of its own, so its product
        # with B_p is its own:
        # (T, P, N, 64) @ (P, 64, r) pairs pair p's member with B_p, then @ At_W2 (P, r, 10): as einsums,
        # einsum("TPNn,Prn->TPNr", hidden, Bt_W2), then einsum("TPNr,Prm->TPNm", hidden_B, At_W2)
        hidden_B = hidden @ Bt_W2.transpose(0, 2, 1)                                         # (T, P, N, r)
        member_term = (sigma_over_root_r * hidden_B) @ At_W2 + settings.sigma * delta_b2[:, None, :]  # (T, P, N, 10)
        output = hidden @ params["W2"].T + params["b2"] + sign * member_term                      # (T, P, N, 10)
        if arrays is not None and sign == 1:
            arrays.update(hidden=hidden, hidden_B=hidden_B, member_term=member_term, output=output)
        return lif(output, settings.beta, settings.threshold).sum(0)
    if arrays is not None:
        arrays.update(base=base, xB=xB, xB_by_pair=xB_by_pair, pair_term=pair_term)
    return np.stack([side(1), side(-1)])  # each side's counts (P, N, 10): (2, P, N, 10)


def centred_ranks(values):
    """Ranks scaled to [-0.5, 0.5] (sum 0); tied values share their mean rank. Compares all
    members with all (fine for thousands of them; eggroll.py sorts instead)."""
    flat = values.ravel()
    below = (flat[None, :] < flat[:, None]).sum(axis=1)
    tied = (flat[None, :] == flat[:, None]).sum(axis=1)     # itself included
    fitness_rank = below + (tied - 1) / 2
    return (fitness_rank / (flat.size - 1) - 0.5).reshape(values.shape)


def gradient(f, perturbations, sigma):
    """The step g, Eqs. (7)-(8), from the pair differences f (P,); named after the gradient it stands in
    for (with Gaussian noise and raw differences, ∇J: docs/derivation.md, sections 1-2):
    g_W = sum_p f_p E_p / (2 P sigma) = (diag(𝐟) 𝐀)ᵀ 𝐁 / (2 P sigma sqrt(r)), one product (𝐀, 𝐁: every
    pair's factors stacked, At.reshape(P r, m) and Bt.reshape(P r, n); 𝐟: each f_p r times);
    g_b = sum_p f_p delta_p / (2 P sigma). In float32, the noise's and f's type, as eggroll.py."""
    grads = {}
    for name, drawn in perturbations.items():
        if name.startswith("W"):
            At, Bt = drawn
            P, r, m = At.shape
            # At (P, r, m) holds At[p] = A_pᵀ, so At.reshape(P r, m) is Eq. (7)'s 𝐀: pair p's r rows are the
            # columns of A_p, and f (P,) broadcast as (P, 1, 1) repeats each f_p over its r rows.
            weighted = (f[:, None, None] * At).reshape(P * r, m)             # diag(𝐟) 𝐀, (P r, m)
            grads[name] = weighted.T @ Bt.reshape(P * r, -1) / (2 * P * sigma * math.sqrt(r))  # (m, P r) @ (P r, n)
        else:
            grads[name] = f @ drawn / (2 * len(f) * sigma)
    return grads


def adam(params, grads, state, lr, keep1=0.9, keep2=0.999, floor=1e-8):
    """Eq. (9) at weight decay 0 (the recipe's): one Adam update, climbing g, as optim.adam_update:
    its first and second moments, exponential moving averages of g and g² over the generations (each
    keeps a share keep1, keep2, of its old value per update), bias-corrected, and the floor 10⁻⁸ added to the root of
    the second. `state` holds both moments
    ("momentum", "mean_square") and the count of Adam's updates so far, Q ("updates")."""
    updates = state["updates"] + 1
    new, momentum, mean_square = {}, {}, {}
    for name in params:
        momentum[name] = keep1 * state["momentum"][name] + (1 - keep1) * grads[name]
        mean_square[name] = keep2 * state["mean_square"][name] + (1 - keep2) * grads[name] ** 2
        direction = (momentum[name] / (1 - keep1 ** updates)) / (np.sqrt(mean_square[name] / (1 - keep2 ** updates))
                                                               + floor)
        new[name] = (params[name] + lr * direction).astype(params[name].dtype)
    return new, {"momentum": momentum, "mean_square": mean_square, "updates": updates}


def adam_init(params):
    """Adam's state at the start: both moments zero, no update made (Q = 0)."""
    return {"momentum": {name: np.zeros_like(value) for name, value in params.items()},
            "mean_square": {name: np.zeros_like(value) for name, value in params.items()}, "updates": 0}


def one_generation(params, state, x, labels, generation, settings):
    """One EGGROLL generation on the minibatch x (T, N, n_in), labels (N,). Returns the new
    parameters, Adam's new state and the fitness of every member (2, P). Each line's shapes are at its
    end; with this file's settings, in numbers, in docs/derivation.md's table of one generation."""
    perturbations = draw_noise(params, generation, settings)  # (5): W -> At (P, r, m), Bt (P, r, n); b -> (P, m)
    counts = population_forward(params, perturbations, x, settings)                 # (6): (2, P, N, 10)
    fit = fitness(counts, labels, x.shape[0], settings.logit_scale)                # (3)-(4): (2, P); T = x.shape[0]
    centred = centred_ranks(fit)                                                    # all 2P members: (2, P)
    f = (centred[0] - centred[1]).astype(np.float32)                                # f_p, pair by pair: (P,)
    params, state = adam(params, gradient(f, perturbations, settings.sigma), state, settings.lr)  # (7)-(9)
    return params, state, fit


# ---------------------------------------------------------------------------------------------
# Training on real N-MNIST recordings

def accuracy(params, split, settings):
    """Share of the split's recordings whose most-spiking output is their label (ties: lowest)."""
    counts = forward(params, split.frames(np.arange(len(split))), settings)
    return float((counts.argmax(axis=-1) == split.labels).mean())


def train(splits, settings, generations, batch_size, log_every=0):
    """EGGROLL from init_params(settings.seed) on splits.train, each generation's minibatch as
    data.minibatch draws it. Returns the parameters and the mean fitness of the population, generation
    by generation; a logged line gives that mean (the members', before the update) and the training
    accuracy after the update."""
    params = init_params(settings.seed)
    state, history = adam_init(params), []
    for generation in range(generations):
        x, labels = data.minibatch(splits.train, batch_size, np, settings.seed, generation)
        params, state, fit = one_generation(params, state, x, labels, generation, settings)
        history.append(float(fit.mean()))
        if log_every and (generation % log_every == 0 or generation == generations - 1):
            print(f"generation {generation:4d}  mean fitness {history[-1]:7.3f}  "
                  f"train accuracy {accuracy(params, splits.train, settings):6.1%}")
    return params, history


# ---------------------------------------------------------------------------------------------
# The command line (nothing of the method below)

def main(argv=None):
    parser = exits.Parser(prog="nano_eggroll.py", description=__doc__,
                          formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=exits.at_least(0, below=2 ** 63), default=Settings.seed,
                        help="of the initial weights, the noise and the minibatches (default: 1); the other "
                             "settings are the Settings class and main()")
    settings = Settings(seed=parser.parse_args(argv).seed)
    began, cpu_began = time.perf_counter(), time.process_time()
    # data.py bins the recordings into frames once and caches them (in $EGGROLL_CACHE, else ~/.cache/eggroll-snn/frames)
    splits = data.load_nmnist(Path(__file__).resolve().parent / "nmnist-sample", progress=False)
    params, _ = train(splits, settings, generations=300, batch_size=64, log_every=30)
    exits.say(f"test accuracy {accuracy(params, splits.test, settings):.1%} on {len(splits.test)} real "
              f"recordings, {time.perf_counter() - began:.0f} s ({time.process_time() - cpu_began:.0f} CPU s)",
              "run it again with standard output open")


if __name__ == "__main__":  # a damaged recording, an unwritable cache, Ctrl-C: one line (exits.py)
    exits.leave(exits.handled(main, "nothing was written, run it again to start over"))
