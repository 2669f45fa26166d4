"""An MLP 784-128-128-10 (ReLU, softmax cross-entropy) trained on MNIST two ways on the CPU, from the
same initial weights on the same minibatches: EGGROLL through eggroll.py's ask/tell interface, and
backprop written out in NumPy. Both climb with the project's Adam (optim.py), the learning rate
falling to 0 on a cosine. --mnist: the folder of the four MNIST IDX files (mnist.py reads them).

    OPENBLAS_NUM_THREADS=1 python examples/mlp_mnist.py --mnist path/to/mnist
"""
import sys

try:  # Ctrl-C while the modules load: one line, as exits.py says it once they have
    import dataclasses
    import time
    from pathlib import Path

    import numpy as np

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the project's modules
    import data     # noqa: E402
    import eggroll  # noqa: E402
    import exits    # noqa: E402
    import mnist    # noqa: E402
    import optim    # noqa: E402
except KeyboardInterrupt:
    sys.stderr.write("error: interrupted; run it again\n")
    sys.exit(130)

LAYERS = ("h1", "h2", "out")


def init_mlp(seed, sizes=(784, 128, 128, 10)):
    """He-scaled weights (m × n, y = x W^T + b) and zero biases, float32."""
    rng = np.random.default_rng(seed)
    params = {}
    for layer, n, m in zip(LAYERS, sizes[:-1], sizes[1:]):
        params[f"{layer}.w"] = (rng.standard_normal((m, n)) * np.sqrt(2 / n)).astype(np.float32)
        params[f"{layer}.b"] = np.zeros(m, np.float32)
    return params


def mlp(linear, x):
    """The logits of the MLP, given linear(weight, x, bias) of its layers."""
    for layer in LAYERS:
        x = linear(f"{layer}.w", x, f"{layer}.b")
        x = np.maximum(x, 0) if layer != "out" else x
    return x


def logits_of(params, x):
    return mlp(lambda w, x, b: x @ params[w].T + params[b], x)


def cross_entropy(logits, labels):
    """Mean softmax cross-entropy over the batch axis: logits (..., N, 10) -> (...)."""
    shifted = logits - logits.max(-1, keepdims=True)
    log_probs = shifted - np.log(np.exp(shifted).sum(-1, keepdims=True))
    return -log_probs[..., np.arange(len(labels)), labels].mean(-1)


def accuracy(params, images, labels):
    return float((logits_of(params, images).argmax(-1) == labels).mean())


def minibatches(n, batch_size, steps, seed):
    """(steps, batch_size) indices: shuffled epochs of range(n), one after the other, cut into minibatches."""
    rng = np.random.default_rng(seed)
    order = np.concatenate([rng.permutation(n) for _ in range(-(-steps * batch_size // n))])
    return order[:steps * batch_size].reshape(steps, batch_size)


def train_eggroll(params, images, labels, steps, batch_size, population, rank, sigma, lr, seed):
    """EGGROLL: each generation, 2P members theta +- sigma E_p, fitness = -their cross-entropy."""
    es = eggroll.Eggroll(population=population, rank=rank, sigma=sigma, seed=seed, lr=lr)
    state = es.init(params)
    for step, batch in enumerate(minibatches(len(images), batch_size, steps, seed)):
        es = dataclasses.replace(es, lr=optim.scheduled_lr(lr, "cosine", step, steps))
        pop = es.ask(state)
        logits = mlp(lambda w, x, b: pop.linear(w, x, bias=b), images[batch])   # (2P, N, 10)
        state, stats = es.tell(state, pop, -cross_entropy(logits, labels[batch]))
        if (step + 1) % max(1, steps // 10) == 0:
            loss = max(0.0, -stats["mean_fitness"])  # a cross-entropy, >= 0 (not -0.0, nor a rounding's -1e-8)
            print(f"eggroll generation {step + 1}: the population's mean loss {loss:.3f}", flush=True)
    return state.params


def gradients(params, x, labels):
    """The gradient of the mean cross-entropy, by the chain rule layer by layer, backwards."""
    activations = [x]
    for layer in LAYERS:
        z = activations[-1] @ params[f"{layer}.w"].T + params[f"{layer}.b"]
        activations.append(np.maximum(z, 0) if layer != "out" else z)
    delta = np.exp(activations[-1] - activations[-1].max(-1, keepdims=True))
    delta /= delta.sum(-1, keepdims=True)                  # softmax
    delta[np.arange(len(labels)), labels] -= 1
    delta /= len(labels)                                   # d loss / d logits
    grads = {}
    for i in reversed(range(len(LAYERS))):
        layer, inputs = LAYERS[i], activations[i]
        grads[f"{layer}.w"], grads[f"{layer}.b"] = delta.T @ inputs, delta.sum(0)
        if i:
            delta = (delta @ params[f"{layer}.w"]) * (inputs > 0)   # through the ReLU below
    return grads


def train_backprop(params, images, labels, steps, batch_size, lr, seed):
    """Backprop: Adam down the exact gradient of each minibatch's loss."""
    state = optim.init(params)
    for step, batch in enumerate(minibatches(len(images), batch_size, steps, seed)):
        grads = gradients(params, images[batch], labels[batch])
        adam = optim.Adam(optim.scheduled_lr(lr, "cosine", step, steps))
        params, state = optim.ascend(params, {k: -g for k, g in grads.items()}, state, adam)
    return params


def load(folder):
    """MNIST's training and test sets as (images (N, 784) float32 in [0, 1], labels int)."""
    try:
        splits, _ = mnist.load(folder, "results on them are not comparable with the official MNIST's")
    except data.MissingDataError as error:  # mnist.py's fix offers a download, which this example has not
        raise data.MissingDataError(f"{str(error).split('; ')[0]}; give --mnist the folder that holds "
                                    f"{', '.join(mnist.NAMES)}, gzipped (.gz) or not") from None
    return [(images.reshape(len(images), -1).astype(np.float32) / 255, labels.astype(int))
            for images, labels in (splits["train"], splits["test"])]


def main(argv=None):
    parser = exits.Parser(prog="mlp_mnist.py", description=__doc__.split("\n\n")[0].replace("\n", " "))
    add = parser.add_argument
    add("--mnist", required=True, type=exits.path_given, help="folder of the four MNIST IDX files")
    add("--seed", type=exits.at_least(0), default=1, help="of the initial weights, the minibatches and the noise (default: 1)")
    add("--steps", type=exits.at_least(1), default=3000, help="minibatches: EGGROLL's generations, backprop's steps (3000)")
    add("--batch-size", type=exits.at_least(1), default=128, help="images per minibatch (128)")
    add("--train-samples", type=exits.at_least(1), help="train on the first N training images (all, 60000 in MNIST)")
    add("--population", type=exits.members, default=512, help="EGGROLL's members, 2P: an even number (512)")
    add("--rank", type=exits.at_least(1), default=1, help="of EGGROLL's perturbations (1)")
    add("--sigma", type=exits.positive_number, default=0.02, help="EGGROLL's noise scale (0.02)")
    add("--lr", type=exits.positive_number, default=0.006, help="EGGROLL's peak learning rate (0.006)")
    add("--backprop-lr", type=exits.positive_number, default=0.001, help="backprop's peak learning rate (0.001)")
    opts = parser.parse_args(argv)

    def command():
        shapes = {name: value.shape for name, value in init_mlp(opts.seed).items() if value.ndim == 2}
        name = min(shapes, key=lambda name: min(shapes[name]))
        if opts.rank > min(shapes[name]):  # a perturbation of rank r needs r <= the smaller side of every weight
            raise exits.UsageError(f"--rank {opts.rank} exceeds the smaller side of {name} ({shapes[name][0]}x"
                                   f"{shapes[name][1]}): use --rank <= {min(shapes[name])}")
        (images, labels), (test_images, test_labels) = load(opts.mnist)
        if opts.train_samples is not None and opts.train_samples > len(images):  # trained on what it names, not silently on fewer
            raise exits.UsageError(f"--train-samples {opts.train_samples}: {opts.mnist} holds {len(images):,} "
                                   f"training images; use --train-samples {len(images)} or fewer")
        training = len(images[:opts.train_samples])
        if opts.batch_size > training:  # a minibatch of every image many times over: said, not trained on
            raise exits.UsageError(f"--batch-size {opts.batch_size}: training uses {training:,} images; use "
                                   f"--batch-size {training} or fewer")
        batches = images[:opts.train_samples], labels[:opts.train_samples], opts.steps, opts.batch_size
        rows = {}
        for name, train, settings, rates in (  # backprop first: its seconds, not EGGROLL's minutes, before its error
                ("backprop", train_backprop, (opts.backprop_lr,), "lower --backprop-lr"),
                ("eggroll", train_eggroll, (opts.population, opts.rank, opts.sigma, opts.lr),
                 "bring --lr and --sigma nearer their defaults")):
            start = time.perf_counter()
            try:  # weights pushed out of float32's range: one line naming the options, not NumPy's warnings
                with np.errstate(over="raise", invalid="raise"):
                    params = train(init_mlp(opts.seed), *batches, *settings, opts.seed)
            except (FloatingPointError, eggroll.FloatOverflow):  # NumPy's, or the members' or a step's (Eggroll)
                raise exits.UsageError(f"{name} overflowed float32: its steps are too large; {rates}") from None
            seconds = time.perf_counter() - start
            rows[name] = f"{name:10s} {100 * accuracy(params, test_images, test_labels):16.2f} {seconds:8.1f}"
        table = [f"{'method':10s} {'test accuracy %':>16s} {'wall s':>8s}", rows["eggroll"], rows["backprop"]]
        exits.say("\n".join(table), "run it again with standard output open")
    return exits.handled(command, again="run it again")


if __name__ == "__main__":
    exits.leave(main())
