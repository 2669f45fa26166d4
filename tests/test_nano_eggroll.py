"""nano_eggroll.py against the reference: the same noise, ranks and Adam steps as eggroll.py,
noise.py and optim.py, the same parameters after a few generations of snn_eggroll.generation_step, and
a short training run on the real recordings of nmnist-sample/ that learns."""

import os
import subprocess
import sys

import numpy as np
import pytest

import data
import eggroll
import nano_eggroll as nano
import noise
import optim
import snn
import snn_eggroll
from nmnist_files import SAMPLE
from processes import stopped



@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return data.load_nmnist(SAMPLE, cache_dir=tmp_path_factory.mktemp("frames"), progress=False)


def float64(params):
    return {k: v.astype(np.float64) for k, v in params.items()}


def run_reference(params, batches, s):
    """snn_eggroll.generation_step with the settings of nano's Settings s, one generation per batch."""
    config = snn_eggroll.Config(s.population, s.rank, s.sigma, s.seed, s.logit_scale)
    adam, lif, state = optim.Adam(s.lr), snn.LIF(s.beta, s.threshold), optim.init(params)
    for generation, (frames, labels) in enumerate(batches):
        params, state, _ = snn_eggroll.generation_step(params, state, frames, labels, generation, config, adam, lif)
    return params


def run_nano(params, batches, s):
    state, spread = nano.adam_init(params), []
    for generation, (frames, labels) in enumerate(batches):
        params, state, fit = nano.one_generation(params, state, frames, labels, generation, s)
        spread.append(np.unique(fit).size)
    return params, spread


def random_batches(n_batches, n_frames, batch, n_in, n_out, density, seed):
    rng = np.random.default_rng(seed)
    return [((rng.random((n_frames, batch, n_in)) < density).astype(np.float64), rng.integers(0, n_out, batch))
            for _ in range(n_batches)]


def assert_same_parameters(start, batches, s):
    """Both implementations from the same float64 parameters and frames; returns how many
    distinct fitnesses nano's population had in each generation.

    Tolerance 1e-12, float64 rounding with room. In float64 the currents of the two differ only
    by rounding (~1e-15 on currents of size ~10), which moves no spike, so both get the same spike
    counts; nano sums the fitness in snn.cross_entropy's order, so the fitnesses, ranks and the
    float32 pair differences f are the same; the gradient is the same float32 product of the same
    float32 noise (as eggroll.gradient, float32 like eggroll.pair_differences), and Adam the same
    float64 arithmetic. (In practice they agree bit for bit.) A changed rank,
    sign or spike moves parameters by orders of magnitude more, so it fails."""
    expected = run_reference(start, batches, s)
    got, spread = run_nano(start, batches, s)
    assert min(spread) > 2  # the members' fitnesses differ: the ranks and the update are not trivial
    for name in start:
        assert got[name].dtype == np.float64
        assert not np.allclose(got[name], start[name])  # the parameters moved
        np.testing.assert_allclose(got[name], expected[name], rtol=1e-12, atol=1e-12, err_msg=name)
    return spread


@pytest.mark.parametrize("pairs, rank, sigma", [(3, 2, 0.3), (70, 1, 0.3), (150, 3, 0.3), (70, 2, 0.01)])
def test_generations_give_the_reference_parameters_small_network(pairs, rank, sigma):
    """A 40 -> 12 LIF -> 5 LIF network, std-1 weights so that it spikes; 70 and 150 pairs are more
    than eggroll.PAIRS_PER_BLOCK (64) and not a multiple of it. LIF constants and Adam's rate
    other than the defaults, so that nano is seen to use the ones it is given. At sigma 0.01 many
    members move no spike and tie, so the shared mean ranks of ties enter the update."""
    s = nano.Settings(population=2 * pairs, rank=rank, sigma=sigma, lr=0.05, logit_scale=3.0, seed=7 + rank,
                      beta=0.8, threshold=1.5)
    start = float64(nano.init_params(pairs, (40, 12, 5), std=1.0))
    spread = assert_same_parameters(start, random_batches(4, 6, 9, 40, 5, 0.3, seed=pairs), s)
    if sigma < 0.1:
        assert max(spread) < s.population  # some fitnesses tie


def test_generations_give_the_reference_parameters_real_network_and_recordings(sample):
    """The 2312 -> 64 -> 10 network on real frames of nmnist-sample/, 70 pairs of rank 2."""
    s = nano.Settings(population=140, rank=2, sigma=0.2, lr=0.03, logit_scale=5.0, seed=3)
    batches = [(x.astype(np.float64), y) for x, y in
               (data.minibatch(sample.train, 16, np, s.seed, step) for step in range(3))]
    assert_same_parameters(float64(nano.init_params(s.seed)), batches, s)


def test_population_forward_counts_are_every_member_formed_and_run_alone():
    """Eq. (6) without E_p gives each member the spike counts of its own weights theta +- sigma E_p,
    formed and run through forward one member at a time: the slow way population_forward's
    docstring writes out. Float64, whose rounding moves no spike here."""
    s = nano.Settings(population=2 * 5, rank=2, sigma=0.3, seed=4)
    params = float64(nano.init_params(2, (20, 7, 4), std=1.0))
    x = random_batches(1, 6, 5, 20, 4, 0.3, seed=1)[0][0]
    drawn = nano.draw_noise(params, 0, s)
    counts = nano.population_forward(params, drawn, x, s)
    slow = np.empty_like(counts)
    for p in range(5):
        for side, sign in enumerate((1, -1)):
            member = {W: params[W] + sign * s.sigma * drawn[W][0][p].T @ drawn[W][1][p] / np.sqrt(s.rank)
                      for W in ("W1", "W2")}
            member |= {b: params[b] + sign * s.sigma * drawn[b][p] for b in ("b1", "b2")}
            slow[side, p] = nano.forward(member, x, s)
    assert counts.shape == (2, 5, 5, 4) and np.array_equal(counts, slow)
    assert len({member.tobytes() for member in counts.reshape(10, -1)}) > 5  # the members differ


def test_the_parts_are_the_reference_bit_for_bit():
    """Initial weights, Eq. (5)'s factors and bias noise, centred ranks with ties, and Adam steps."""
    params = nano.init_params(5, (30, 8, 4))
    assert all(np.array_equal(params[k], v) for k, v in snn.init_params(5, (30, 8, 4)).items())
    s = nano.Settings(population=2 * 67, rank=3, seed=11)
    eps = nano.draw_noise(params, 4, s)
    for name in ("W1", "W2"):
        a, b = eggroll.lowrank_factors(11, 4, np.arange(67), name, params[name].shape, 3)
        assert np.array_equal(eps[name][0], a) and np.array_equal(eps[name][1], b)
    assert np.array_equal(eps["b1"], noise.normals(11, 4, np.arange(67), "b1", 8))
    values = np.random.default_rng(0).integers(0, 6, (2, 21)).astype(np.float64)  # many ties
    assert np.array_equal(nano.centred_ranks(values), eggroll.centred_ranks(values.ravel()).reshape(2, 21))
    state, reference_state, reference = nano.adam_init(params), optim.init(params), params
    for step in range(3):
        grads = {k: np.random.default_rng(step).normal(size=v.shape).astype(np.float32) for k, v in params.items()}
        params, state = nano.adam(params, grads, state, 0.01)
        reference, reference_state = optim.ascend(reference, grads, reference_state, optim.Adam(0.01))
        assert all(np.array_equal(params[k], reference[k]) for k in params)


def test_a_short_training_run_on_the_real_sample_learns(sample):
    """30 generations of 64 members on the real recordings (about a second on 2 cores) raise the
    network's fitness on all 162 training recordings by more than 0.5 (it goes from about -3.7 to
    -2.0) and its training accuracy by more than 8 points (from 14 % to about 30 %). Every number
    is seeded, so the run is the same each time."""
    s = nano.Settings(population=64)
    frames, labels = sample.train.frames(np.arange(len(sample.train))), sample.train.labels
    start = nano.init_params(s.seed)
    params, history = nano.train(sample, s, generations=30, batch_size=32)
    assert len(history) == 30
    fitness = [nano.fitness(nano.forward(p, frames, s), labels, len(frames), s.logit_scale) for p in (start, params)]
    assert fitness[1] > fitness[0] + 0.5
    assert nano.accuracy(params, sample.train, s) > nano.accuracy(start, sample.train, s) + 0.08


def test_no_two_members_score_alike_on_a_minibatch_of_recordings(sample, monkeypatch):
    """The network's fitness is a staircase in the weights, yet on a minibatch no two of nano's 256
    members tie (derivation.md, the aside on ties): the mean cross-entropy of 64 recordings changes with any
    one output count. Its first 10 generations at seed 1, every member's fitness distinct."""
    scored, one_generation = [], nano.one_generation

    def keeping(*args):
        params, state, fit = one_generation(*args)
        scored.append(fit)
        return params, state, fit
    monkeypatch.setattr(nano, "one_generation", keeping)
    nano.train(sample, nano.Settings(seed=1), generations=10, batch_size=64)
    assert len(scored) == 10 and all(len(np.unique(fit)) == fit.size == 256 for fit in scored)


def test_its_command_says_one_line_when_the_frames_cannot_be_cached(tmp_path):
    """`python nano_eggroll.py` with a frame cache that cannot be written: one line, exit status 2."""
    (tmp_path / "file").write_text("")
    done = subprocess.run([sys.executable, nano.__file__], capture_output=True, text=True, timeout=300,
                          env=dict(os.environ, EGGROLL_CACHE=str(tmp_path / "file" / "cache")))
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: cannot use the frame cache folder {tmp_path / 'file' / 'cache'}")
    assert f"{tmp_path / 'file'} is a file, not a folder" in done.stderr  # not "free disk space"


def test_its_command_takes_only_a_seed_and_ends_quietly_when_its_reader_goes(tmp_path):
    """--seed SEED is the one option; any other is refused in one line (exit status 2); a closed stdout
    (`| head -c 20`) ends the run at its next line with one line on stderr, exit status 141, no traceback."""
    for wrong in (["--generations", "5"], ["--seed"], ["3"]):
        done = subprocess.run([sys.executable, nano.__file__, *wrong], capture_output=True, text=True, timeout=60)
        assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
        assert done.stderr.endswith("; see nano_eggroll.py --help\n"), done.stderr
    one_thread = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    status, err = stopped([sys.executable, nano.__file__], "reader gone", env=one_thread)
    assert status == 141 and err == "error: standard output was closed\n", err


@pytest.mark.parametrize("value", ["²", "-1", "2.5", "٣", str(2 ** 63), ""])
@pytest.mark.parametrize("form", ["--seed VALUE", "--seed=VALUE"])
def test_a_seed_that_is_no_whole_number_is_one_line_naming_the_option(value, form):
    """--seed takes ASCII digits in 0..2^63-1, given as --seed N or --seed=N: a superscript two,
    another script's digit, a number out of range or nothing is one line naming --seed and the range,
    not int()'s words."""
    args = ["--seed", value] if form == "--seed VALUE" else [f"--seed={value}"]
    done = subprocess.run([sys.executable, nano.__file__, *args], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stdout == "" and done.stderr == (
        f"error: argument --seed: expected an integer in 0..2^63-1, got {value!r}; see nano_eggroll.py --help\n")


@pytest.mark.parametrize("args, seed", [([], 1), (["--seed", "3"], 3), (["--seed=3"], 3), ([f"--seed={2 ** 63 - 1}"], 2 ** 63 - 1)])
def test_the_seed_option_reads_a_seed_as_given(args, seed, monkeypatch):
    """The seed main() trains with: Settings' default, or --seed's, up to 2^63-1."""
    trained = []
    monkeypatch.setattr(nano.data, "load_nmnist", lambda *args, **kwargs: None)
    monkeypatch.setattr(nano, "train", lambda splits, settings, **kwargs: trained.append(settings.seed) or 1 / 0)
    with pytest.raises(ZeroDivisionError):
        nano.main(args)
    assert trained == [seed]


def test_the_help_lists_the_seed_option():
    done = subprocess.run([sys.executable, nano.__file__, "--help"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "usage: nano_eggroll.py [-h] [--seed SEED]" in done.stdout
    assert "--seed SEED  of the initial weights" in done.stdout and nano.__doc__.split("\n")[0] in done.stdout


def test_a_neuron_whose_potential_reaches_the_threshold_exactly_spikes():
    """Eq. (2), o_t = [V_t >= V_th], as snn.lif_step and baselines have it: a potential equal to the
    threshold spikes and resets; one just below it does not."""
    currents = np.array([[1.0, np.nextafter(1.0, 0.0)], [0.0, 0.0]], dtype=np.float64)  # (T = 2, neurons)
    spikes = nano.lif(currents, beta=0.5, threshold=1.0)
    assert spikes.tolist() == [[1.0, 0.0], [0.0, 0.0]]


def test_its_log_has_a_line_every_log_every_generations_and_one_for_the_last(sample, capsys):
    """train(..., log_every=3) over 5 generations logs generations 0 and 3, and the last, 4: the line a
    user reads for the network's final training accuracy."""
    nano.train(sample, nano.Settings(population=8), generations=5, batch_size=8, log_every=3)
    logged = [int(line.split()[1]) for line in capsys.readouterr().out.splitlines()]
    assert logged == [0, 3, 4]
