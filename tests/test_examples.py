"""examples/mlp_mnist.py on small problems without MNIST: both trainers learn a separable synthetic
task, the hand-written backward pass is the gradient, the command runs end to end on a synthetic
IDX folder, and a missing --mnist folder is one line and exit status 2; the spiking examples of
depth (snn_depth.py, depth_signal.py, depth_speed.py) on the repository's sample."""
import argparse
import gzip
import json
import re
import os
import shutil
import signal
import struct
import subprocess
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pytest

import eggroll
import exits
import run_folder
import snn
from examples_import import example as load_example
from nmnist_files import write_dataset
from test_report import real_score

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "examples" / "mlp_mnist.py"
example = load_example("mlp_mnist")


def separable(n, seed=0):
    """n 784-pixel images in [0, 1], each one of 10 fixed random prototypes plus noise, and their labels."""
    prototypes = np.random.default_rng(1234).random((10, 784)) < 0.2
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 10, n)
    images = np.clip(prototypes[labels] * 0.8 + rng.normal(0, 0.3, (n, 784)), 0, 1)
    return images.astype(np.float32), labels


def loss(params, images, labels):
    return float(example.cross_entropy(example.logits_of(params, images), labels))


@pytest.fixture(scope="module")
def task():
    return separable(600), separable(300, seed=1)   # training and test sets of the same prototypes


@pytest.mark.parametrize("method", ["eggroll", "backprop"])
def test_each_method_learns_a_separable_task(task, method):
    (images, labels), (test_images, test_labels) = task
    start = example.init_mlp(seed=1)
    if method == "eggroll":
        trained = example.train_eggroll(start, images, labels, steps=40, batch_size=32, population=64, rank=1,
                                        sigma=0.02, lr=0.01, seed=1)
    else:
        trained = example.train_backprop(start, images, labels, steps=40, batch_size=32, lr=0.003, seed=1)
    assert example.accuracy(start, test_images, test_labels) < 0.3                 # chance: 0.1
    assert example.accuracy(trained, test_images, test_labels) > 0.8
    assert loss(trained, images, labels) < 0.5 * loss(start, images, labels)


def test_a_loss_of_zero_prints_as_zero_not_minus_zero(capsys, monkeypatch):
    """The population's mean loss, a cross-entropy, prints as 0.000 where the fitness is 0.0 (or a
    rounding's +1e-9), never as -0.000."""
    images, labels = separable(40)
    for fitness in (0.0, 1e-9):
        monkeypatch.setattr(example.eggroll.Eggroll, "tell",
                            lambda self, state, pop, fit, fitness=fitness: (state, {"mean_fitness": fitness}))
        example.train_eggroll(example.init_mlp(seed=1), images, labels, steps=10, batch_size=8, population=4, rank=1,
                              sigma=0.02, lr=0.01, seed=1)
        printed = capsys.readouterr().out
        assert "mean loss 0.000" in printed and "-0.000" not in printed, printed


def test_the_backward_pass_is_the_gradient_of_the_loss():
    images, labels = separable(8)
    params = {name: value.astype(np.float64) for name, value in example.init_mlp(seed=2).items()}
    grads = example.gradients(params, images.astype(np.float64), labels)
    rng = np.random.default_rng(3)
    for name, value in params.items():
        for index in map(tuple, rng.integers(0, value.shape, (3, value.ndim))):
            h = 1e-6
            up, down = dict(params), dict(params)
            up[name], down[name] = value.copy(), value.copy()
            up[name][index] += h
            down[name][index] -= h
            numeric = (loss(up, images, labels) - loss(down, images, labels)) / (2 * h)
            assert grads[name][index] == pytest.approx(numeric, rel=1e-4, abs=1e-7), (name, index)


def test_minibatches_cover_each_epoch_once_and_repeat_with_the_seed():
    batches = example.minibatches(10, 4, 5, seed=7)
    assert batches.shape == (5, 4)
    assert sorted(batches.ravel()[:10]) == sorted(batches.ravel()[10:]) == list(range(10))
    assert (batches == example.minibatches(10, 4, 5, seed=7)).all()
    assert not (batches == example.minibatches(10, 4, 5, seed=8)).all()


def write_idx(folder, name, array, magic):
    header = struct.pack(">II", magic, len(array)) + (struct.pack(">II", 28, 28) if array.ndim == 3 else b"")
    (folder / f"{name}.gz").write_bytes(gzip.compress(header + array.astype(np.uint8).tobytes(), mtime=0))


def write_mnist(folder):
    """MNIST's four IDX files in `folder`: 300 training and 100 test images of the separable task."""
    for split, n, seed in (("train", 300, 0), ("t10k", 100, 1)):
        images, labels = separable(n, seed)
        write_idx(folder, f"{split}-images-idx3-ubyte", (images * 255).reshape(n, 28, 28), 2051)
        write_idx(folder, f"{split}-labels-idx1-ubyte", labels, 2049)


@pytest.mark.filterwarnings("ignore:.*differ from the official MNIST files")
def test_the_command_trains_both_ways_on_an_idx_folder(tmp_path, capsys):
    write_mnist(tmp_path)
    status = example.main(["--mnist", str(tmp_path), "--steps", "30", "--batch-size", "32", "--population", "64",
                           "--lr", "0.01", "--backprop-lr", "0.003"])
    assert status == 0
    table = capsys.readouterr().out.splitlines()[-2:]
    accuracies = {line.split()[0]: float(line.split()[1]) for line in table}
    assert accuracies.keys() == {"eggroll", "backprop"}
    assert min(accuracies.values()) > 60                                            # percent; chance 10
    capsys.readouterr()
    status = example.main(["--mnist", str(tmp_path), "--steps", "1", "--population", "8", "--train-samples", "301"])
    assert status == 2 and capsys.readouterr() == ("", f"error: --train-samples 301: {tmp_path} holds 300 training "
                                                       f"images; use --train-samples 300 or fewer\n")
    for options, used in ((["--batch-size", "301"], 300), (["--train-samples", "40", "--batch-size", "41"], 40)):
        status = example.main(["--mnist", str(tmp_path), "--steps", "1", "--population", "8", *options])
        assert status == 2 and capsys.readouterr() == ("", f"error: --batch-size {used + 1}: training uses {used} "
                                                           f"images; use --batch-size {used} or fewer\n")
    status = example.main(["--mnist", str(tmp_path), "--steps", "1", "--population", "8", "--train-samples", "40",
                           "--batch-size", "40"])  # every training image in one minibatch: taken
    assert status == 0, capsys.readouterr().err
    status = example.main(["--mnist", str(tmp_path), "--steps", "1", "--population", "8", "--train-samples", "300"])
    assert status == 0, capsys.readouterr().err  # every image the folder holds: taken


@pytest.mark.parametrize("option, value, message", [
    ("--lr", "1e30", "eggroll overflowed float32: its steps are too large; bring --lr and --sigma nearer their defaults"),
    ("--lr", "1e38", "eggroll overflowed float32: its steps are too large; bring --lr and --sigma nearer their defaults"),
    ("--backprop-lr", "1e30", "backprop overflowed float32: its steps are too large; lower --backprop-lr")])
def test_steps_that_overflow_are_one_line_without_numpys_warnings(tmp_path, option, value, message):
    """A learning rate that pushes the weights past float32: the error line naming the options to
    lower, exit status 2, and no NumPy warning before it (only the synthetic files' own)."""
    write_mnist(tmp_path)
    done = subprocess.run([sys.executable, str(SCRIPT), "--mnist", str(tmp_path), "--steps", "3", "--population", "8",
                           "--batch-size", "16", option, value], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert [line for line in done.stderr.splitlines() if "differ from the official MNIST files" not in line] == \
        [f"error: {message}"], done.stderr
    assert option == "--lr" or "eggroll" not in done.stdout  # backprop's, told before EGGROLL trains
    assert done.stderr.startswith("warning: ") and done.stderr.splitlines()[0].endswith(
        "results on them are not comparable with the official MNIST's") and "recordings" not in done.stderr, \
        done.stderr


@pytest.mark.parametrize("args", [["--mnist", "no-such-folder"], ["--mnist", "."], []])
def test_no_mnist_is_one_line_and_exit_status_2(args, tmp_path):
    done = subprocess.run([sys.executable, str(SCRIPT), *args], cwd=tmp_path, capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    assert "--mnist" in lines[0]


def test_the_depth_example_trains_each_network_resumes_and_tables_them(tmp_path):
    """examples/snn_depth.py on the repository's sample, tiny networks of one and two hidden layers
    and a convolutional one, by EGGROLL and BPTT: each run's config.json holds its layers, its
    real.json scores it, the table has a row per run (EGGROLL's first, the smaller networks first),
    a second call trains nothing and writes the same table, and one asking for more generations
    trains runs of its own beside the others (their folders name the levers away from the recipe, a
    population among them).
    A width typed 012 is the network 12's, in its folder name and config.json."""
    real = write_dataset(tmp_path / "real" / "NMNIST", n_train=2, n_test=2, seed=4).parent  # other recordings
    copy = tmp_path / "copy"  # the recordings trained on, as another copy: no other recordings, refused
    shutil.copytree(ROOT / "nmnist-sample", copy)
    refused = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root",
                              str(ROOT / "nmnist-sample"), "--real-root", str(copy), "--out", str(tmp_path)],
                             capture_output=True, text=True, timeout=300)
    for shared in (280, 278):  # the copy, then with a recording taken out of each split (no split the same)
        if shared == 278:
            for split in ("Train", "Test"):
                sorted((copy / split / "3").iterdir())[0].unlink()
            refused = subprocess.run(refused.args, capture_output=True, text=True, timeout=300)
        assert refused.returncode == 2 and refused.stderr == (
            f"error: --real-root {copy} shares {shared} of its recordings with --data-root {ROOT / 'nmnist-sample'}, "
            f"the runs' own data, and their scores would be reported as other recordings'; give another copy of "
            f"N-MNIST, or drop --real-root\n"), refused.stderr
        assert not (tmp_path / "runs").exists()
    some = tmp_path / "some" / "NMNIST"  # other recordings, and one of the runs' own: refused too
    shutil.copytree(real / "NMNIST", some)
    trained_on = sorted((ROOT / "nmnist-sample" / "Train" / "3").iterdir())[0]
    shutil.copy(trained_on, some / "Train" / "3" / f"own-{trained_on.name}")
    refused = subprocess.run(refused.args[:5] + [str(some.parent)] + refused.args[6:], capture_output=True,
                             text=True, timeout=300)
    assert refused.returncode == 2 and refused.stderr.startswith(
        f"error: --real-root {some.parent} shares 1 of its recordings with --data-root "), refused.stderr
    command = [sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--real-root", str(real), "--out", str(tmp_path), "--generations", "2",
               "--epochs", "1", "--logit-scale", "1", "--hidden", "012,6", "12", "conv2k5s3"]
    first = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0 and "resume" not in first.stderr, first.stderr  # a run not begun is not resumed
    rows = [line.split(" | ")[:6] for line in first.stdout.splitlines() if " | 2312" in line]
    assert [row[:2] for row in rows] == [["| eggroll", "2312-12-10"], ["| eggroll", "2312-conv2k5s3-10"],
                                         ["| eggroll", "2312-12-6-10"], ["| bptt", "2312-12-10"],
                                         ["| bptt", "2312-conv2k5s3-10"], ["| bptt", "2312-12-6-10"]]
    assert rows[0][3:] == ["2 generations", "1", "0.2, 0.03, 1, 0.3"] and rows[3][3:] == ["1 epoch", "1", "–, –, –, 0.3"]
    runs = tmp_path / "runs"
    assert sorted(p.name for p in runs.iterdir()) == [
        "bptt-hidden-12-6-e1-seed1", "bptt-hidden-12-e1-seed1", "bptt-hidden-conv2k5s3-e1-seed1",
        "hidden-12-6-g2-logit1-seed1", "hidden-12-g2-logit1-seed1", "hidden-conv2k5s3-g2-logit1-seed1"]
    assert '"hidden": "12,6"' in (runs / "hidden-12-6-g2-logit1-seed1" / "config.json").read_text()
    assert (runs / "bptt-hidden-conv2k5s3-e1-seed1" / "real.json").is_file()
    table = (tmp_path / "table.md").read_text()
    again = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0 and (tmp_path / "table.md").read_text() == table
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=2, n_test=1, seed=3).parent  # other recordings
    rescored = [*command[:command.index("--real-root") + 1], str(other), *command[command.index("--out"):]]
    assert subprocess.run(rescored, capture_output=True, text=True, timeout=300).returncode == 0
    assert json.loads((runs / "bptt-hidden-conv2k5s3-e1-seed1" / "real.json").read_text())["samples"]["test"] == 10
    longer = [*command[:command.index("--generations") + 1], "3", *command[command.index("--logit-scale"):-3], "12",
              "--methods", "eggroll", "--population", "64"]  # (no --epochs: no BPTT run reads it)
    assert subprocess.run(longer, capture_output=True, text=True, timeout=300).returncode == 0
    assert json.loads((runs / "hidden-12-g3-logit1-m64-seed1" / "final.json").read_text())["config"]["population"] == 64
    assert [line.split(" | ")[2:4] for line in (tmp_path / "table.md").read_text().splitlines()[2:6]] == \
        [["512", "2 generations"]] * 3 + [["64", "3 generations"]]


def test_the_depth_example_on_other_data_than_its_runs_gives_advice_that_fits_it(tmp_path):
    """snn_depth.py continues its runs itself (it has no --resume): a run it began on other data
    is refused in one line whose fix is one of its own options, the --data-root the run trained on
    or another folder for the runs (--out). (A finished run on other data: the table's refusal.)"""
    command = [sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--out", str(tmp_path / "depth"), "--generations", "1", "--hidden", "4", "--methods", "eggroll"]
    assert subprocess.run(command, capture_output=True, text=True, timeout=300).returncode == 0
    (tmp_path / "depth" / "runs" / "hidden-4-g1-seed1" / "final.json").unlink()  # as if stopped before its end
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=30, n_test=1, seed=3).parent  # a minibatch's worth
    command[command.index("--data-root") + 1] = str(other)
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    checkpoint = tmp_path / "depth" / "runs" / "hidden-4-g1-seed1" / run_folder.CHECKPOINT
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"error: checkpoint {checkpoint} was trained on other data (train: "), done.stderr
    assert done.stderr.endswith("; give the --data-root it was trained on to continue it, or train on this data in "
                                "another folder (`run.py evaluate` scores a run on other data)\n"), done.stderr


def test_the_depth_table_leaves_out_what_is_not_a_finished_run(tmp_path, capsys):
    """snn_depth's table holds the finished runs under runs/ (here a committed one) and leaves out,
    with a line on stderr, a folder whose final.json lacks the scores (or, as a run from before
    they were measured, its test split's spikes) or which run.py did not make."""
    import shutil
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "results" / "depth" / "runs" / "hidden-64-g300-logit1-seed1", runs / "real")
    scored = json.loads((runs / "real" / "final.json").read_text())
    del scored["test_sparsity"]
    out_of_range = {**scored, "test_sparsity": {}, "val_acc": 1.5}  # what run.py's readers refuse, refused here too
    junks = (("no-scores", {"test_acc": 0.5}), ("no-sparsity", scored), ("no-mark", None),
             ("val-beyond-digits", out_of_range))
    for junk, final in junks:
        shutil.copytree(runs / "real", runs / junk)
        if final is None:
            (runs / junk / ".eggroll-run").unlink()
        else:
            (runs / junk / "final.json").write_text(json.dumps(final))
    table = load_example("snn_depth").write_table(tmp_path)[0].read_text().splitlines()
    assert len(table) == 3 and "| 75.01 |" in table[2]
    err = capsys.readouterr().err
    assert all(f"{runs / junk} is left out of the table" in err for junk, _ in junks)
    assert f"{runs / 'no-sparsity'} is left out of the table: not a finished run of run.py train (its final.json " \
           f"has no test_sparsity)" in err
    assert f"{runs / 'no-mark'} is left out of the table: not a finished run of run.py train (not a run folder of " \
           f"run.py train)" in err
    assert f"{runs / 'val-beyond-digits'} is left out of the table: not a finished run of run.py train (val_acc" in err


def test_the_depth_tables_budget_is_singular_for_one(tmp_path):
    """A budget of one generation or one epoch is "1 generation", "1 epoch"; more, plural."""
    import shutil
    rows = {}
    for name, key in (("hidden-64-g300-logit1-seed1", "generations"), ("bptt-hidden-64-seed1", "epochs")):
        for count in (1, 2):
            copy = tmp_path / f"{name}-{count}"
            shutil.copytree(ROOT / "results" / "depth" / "runs" / name, copy)
            settings = json.loads((copy / "config.json").read_text())
            (copy / "config.json").write_text(json.dumps({**settings, key: count}))
            rows[key, count] = load_example("snn_depth").table([copy]).splitlines()[2].split(" | ")[3]
    assert rows == {("generations", 1): "1 generation", ("generations", 2): "2 generations",
                    ("epochs", 1): "1 epoch", ("epochs", 2): "2 epochs"}


def test_the_depth_tables_step_seconds_of_a_short_run_are_not_rounded_to_zero(tmp_path):
    """A run of a few steps (a try on the sample) takes well under a second: its step seconds show two
    decimals, not 0; from 10 s on, whole seconds (every committed run)."""
    import shutil
    shown = {}
    for seconds in (0.05, 9.994, 10.0, 163.4):
        copy = tmp_path / f"run-{seconds}"
        shutil.copytree(ROOT / "results" / "depth" / "runs" / "hidden-64-g300-logit1-seed1", copy)
        final = json.loads((copy / "final.json").read_text())
        (copy / "final.json").write_text(json.dumps({**final, "total_seconds": seconds}))
        shown[seconds] = load_example("snn_depth").table([copy]).splitlines()[2].split(" | ")[10]
    assert shown == {0.05: "0.05", 9.994: "9.99", 10.0: "10", 163.4: "163"}


def test_the_depth_table_takes_a_run_that_names_no_data_beside_runs_that_name_theirs(tmp_path):
    runs = tmp_path / "runs"
    for name in ("hidden-64-g300-logit1-seed1", "bptt-hidden-64-seed1"):
        shutil.copytree(ROOT / "results" / "depth" / "runs" / name, runs / name)
    old = runs / "bptt-hidden-64-seed1" / "final.json"  # as runs trained before final.json named their data
    old.write_text(json.dumps({**json.loads(old.read_text()), "data": None}))
    table = load_example("snn_depth").write_table(tmp_path)[0].read_text().splitlines()
    assert [row.split(" | ")[0] for row in table[2:]] == ["| eggroll", "| bptt"]


def test_runs_scored_on_two_contents_of_one_copy_are_told_apart_in_the_depth_table(tmp_path, capsys):
    runs, scored = tmp_path / "runs", "hidden-64-g300-sigma0.1-logit1-out0.25-readout-potential-seed{}"
    for seed in (4, 5):
        shutil.copytree(ROOT / "results" / "depth" / "runs" / scored.format(seed), runs / scored.format(seed))
    write_table = load_example("snn_depth").write_table
    header = write_table(tmp_path)[0].read_text().splitlines()[0]
    assert "real recordings % (../shared/data/nmnist-raw) |" in header and capsys.readouterr().err == ""
    changed = runs / scored.format(5) / "real.json"  # scored after a recording of the copy was deleted
    real = json.loads(changed.read_text())
    changed.write_text(json.dumps({**real, "data": {**real["data"], "test": "99 samples, sha256 0123456789abcdef"}}))
    table = write_table(tmp_path)[0].read_text().splitlines()
    assert "real recordings % |" in table[0], table[0]
    assert [row.split(" | ")[8].split(" (")[1] for row in table[2:]] == [
        f"../shared/data/nmnist-raw, test split {real['data']['test']})",
        "../shared/data/nmnist-raw, test split 99 samples, sha256 0123456789abcdef)"]
    assert "scored on 2 different contents of ../shared/data/nmnist-raw" in capsys.readouterr().err


def test_the_depth_example_passes_on_the_warnings_of_the_runs_it_trains(tmp_path):
    """A run snn_depth.py trains that learns nothing (sigma 1e-6 moves no output spike) warns so in
    run.py; the script, which runs run.py with its output captured, passes the warning on, and still
    exits 0 with its table."""
    command = [sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--out", str(tmp_path), "--methods", "eggroll", "--hidden", "12", "--generations", "2",
               "--population", "8", "--sigma", "1e-6"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "at step 1 every member scored alike on the whole minibatch" in done.stderr, done.stderr
    assert " | 2312-12-10 | 8 | 2 generations | " in done.stdout


def test_a_table_kept_in_its_out_file_is_named_when_standard_output_is_closed(tmp_path):
    """depth_speed.py --out FILE with standard output closed: the table is in FILE, and the one line
    says so rather than ask for the --out already given."""
    out = tmp_path / "speed.md"
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_speed.py"), "--hidden", "8",
                           "--members", "8", "--repeats", "1", "--out", str(out)], stderr=subprocess.PIPE, text=True,
                          timeout=300, preexec_fn=lambda: os.close(1), env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 2 and done.stderr == (f"error: cannot write to standard output: it is closed; the table "
                                                    f"is in {out}\n"), done.stderr
    assert out.read_text().startswith("cpu")


def test_depth_signal_refuses_a_sigma_float32_cannot_resolve_in_its_own_options(tmp_path):
    """--sigma 1e-6 at --init-std 10: every member would equal the mean but for rounding; one line in
    the script's options (as run.py train says it), not the library's (float64 parameters)."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--generations", "1", "--populations", "8", "--batch-size",
                           "16", "--init-std", "10", "--sigma", "1e-6", "--out", str(tmp_path / "signal")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.startswith("error: --sigma 1e-06 lies below what float32 resolves at "
                                                           "the initial weights of layer 1 (W1: "), done.stderr
    assert done.stderr.endswith("; raise --sigma, or lower --init-std\n") and done.stderr.count("\n") == 1
    assert not (tmp_path / "signal").exists()  # refused before its folder is made


@pytest.mark.parametrize("options, said", [
    (["--lr", "1e-12"], "error: --lr 1e-12: steps of about 1e-12 round away at most of layer 1's initial weights"),
    (["--lr", "5"], "error: --lr must lie in (0, 1], got 5.0: use e.g. --lr 0.01\n"),
    (["--logit-scale", "5000"], "error: --logit-scale must lie in [0.001, 1000], got 5000.0: use e.g. --logit-scale "),
    (["--seed", str(2 ** 63)], f"error: --seed must lie in 0..2^63-1, got {2 ** 63}: use e.g. --seed 1\n")])
def test_depth_signal_takes_the_ranges_of_run_py_train_before_reading_data(tmp_path, options, said):
    """The settings run.py train would refuse (or whose steps round away) are refused as it refuses
    them, before the data is read (here a folder that holds none) and before --out is made."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root",
                           str(tmp_path / "none"), *options, "--out", str(tmp_path / "signal")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr.startswith(said) and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / "signal").exists()


def test_recordings_shared_between_two_copies_leave_out_those_without_an_event():
    """training.shared_recordings, which snn_depth reads to refuse a --real-root that is its own data:
    a recording without an event repeats in every copy by nature and is not counted; one with the
    same events is, whichever split of either copy holds it."""
    import data
    import training

    def copy(*splits):  # each split a list of frames, each frame's first byte given, the rest zeros
        def split(firsts):
            packed = np.zeros((len(firsts), 10 * snn.SIZES[0] // 8), dtype=np.uint8)
            packed[:, 0] = firsts
            return data.Split(packed, np.zeros(len(firsts), dtype=np.int64), 10)
        return data.NMNIST(*(split(firsts) for firsts in splits), {})
    own = copy([0, 1], [2], [0])
    assert training.shared_recordings(own, copy([0], [3], [0, 5])) == 0
    assert training.shared_recordings(own, copy([0], [3], [0, 1])) == 1
    assert training.shared_recordings(own, copy([2, 1], [0], [4])) == 2


def test_snn_depths_init_rule_applies_to_bptt_too_and_marks_its_runs_folder():
    """--init-rule fan-in reaches BPTT's runs as EGGROLL's (both draw the network), and names each
    run's folder, so that a run of the paper's rule is never resumed as a fan-in one."""
    depth = load_example("snn_depth")
    opts = argparse.Namespace(**{name: default for name, (default, _, _) in depth.LEVERS.items()},
                              out=Path("out"), seed=1)
    opts.init_rule = "fan-in"
    for method in ("eggroll", "bptt"):
        assert depth.levers(method, opts)["init_rule"] == "fan-in"
        assert depth.run_folder(method, "64", opts).name.endswith("-init-fan-in-seed1")


def test_snn_depths_depth_levers_reach_eggroll_and_name_the_committed_folders(tmp_path):
    """--init-rule pass-through and --inner-scale 0.1 with the committed runs' other levers name the
    committed folder of 2312-128-64-10 (so that the documented command resumes it, not a new run); the
    inner scale is EGGROLL's alone, and a network of one hidden layer takes none (its run is the one
    without it; networks that all have one are refused); a scale that is no positive number is refused
    by snn_depth's own parser in one line, before any run."""
    depth = load_example("snn_depth")
    opts = argparse.Namespace(**{name: default for name, (default, _, _) in depth.LEVERS.items()},
                              out=ROOT / "results" / "depth", seed=1)
    opts.generations, opts.sigma, opts.logit_scale, opts.readout = 300, 0.1, 1.0, "potential"
    opts.output_sigma_scale, opts.init_rule, opts.inner_scale = 0.25, "pass-through", 0.1
    folder = depth.run_folder("eggroll", "128,64", opts)
    assert folder.name == ("hidden-128-64-g300-sigma0.1-logit1-init-pass-through-out0.25-inner0.1-readout-potential-"
                           "seed1")
    assert (folder / "final.json").is_file() and "inner_scale" not in depth.levers("bptt", opts)
    for value in ("0", "-1", "x"):
        refused = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", "none",
                                  "--out", str(tmp_path), "--inner-scale", value], capture_output=True, text=True,
                                 timeout=60)
        assert refused.returncode == 2 and refused.stderr.startswith("error: argument --inner-scale") \
            and refused.stderr.count("\n") == 1, refused.stderr
    # a network of one hidden layer has none after the first: its run is the one without the scale, and
    # with the paper's initialisation, which pass-through is there
    assert depth.run_folder("eggroll", "64", opts).name == \
        "hidden-64-g300-sigma0.1-logit1-out0.25-readout-potential-seed1"
    for option, value, said in (("--inner-scale", "0.1", "--inner-scale scales"),
                                ("--init-rule", "pass-through", "--init-rule pass-through draws")):
        refused = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", "none",
                                  "--out", str(tmp_path), option, value, "--hidden", "64", "conv8k5s3"],
                                 capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and refused.stderr == (
            f"error: {said} the hidden layers after the first, which none of --hidden 64 conv8k5s3 has: add a "
            f"network of two hidden layers (e.g. 128,64), or drop it; see snn_depth.py --help\n"), refused.stderr
    assert not (tmp_path / "runs").exists()


def test_two_sigmas_that_print_alike_in_short_get_two_run_folders():
    """A lever's value marks the folder short where that reads back as the value (every committed
    run's name), in full where not: sigma 0.1 and 0.10000001 are two runs, never one folder."""
    depth = load_example("snn_depth")
    opts = argparse.Namespace(**{name: default for name, (default, _, _) in depth.LEVERS.items()},
                              out=Path("out"), seed=1)
    names = []
    for sigma in (0.1, 0.10000001):
        opts.sigma, opts.generations = sigma, 300
        names.append(depth.run_folder("eggroll", "128,64", opts).name)
    assert names == ["hidden-128-64-g300-sigma0.1-seed1", "hidden-128-64-g300-sigma0.10000001-seed1"]
    assert {path.name for path in (ROOT / "results" / "depth" / "runs").iterdir()} >= {
        "hidden-128-64-g300-sigma0.1-logit1-out0.25-readout-potential-seed1"}


def test_two_sigmas_that_print_alike_in_short_get_two_rows_of_the_depth_table(tmp_path):
    name = "hidden-64-g300-sigma0.1-logit1-out0.25-readout-potential-seed4"
    run = shutil.copytree(ROOT / "results" / "depth" / "runs" / name,
                          tmp_path / "runs" / name.replace("0.1", "0.10000001"))
    for record, settings in (("config.json", lambda held: held), ("final.json", lambda held: held["config"])):
        held = json.loads((run / record).read_text())
        settings(held)["sigma"] = 0.10000001
        (run / record).write_text(json.dumps(held))
    row = load_example("snn_depth").write_table(tmp_path)[0].read_text().splitlines()[2]
    assert " | 0.10000001, 0.03, 1, 0.3; output σ × 0.25; potential readout | " in row, row


def test_a_copy_is_named_relative_to_the_project_only_inside_it_or_beside_it(tmp_path, monkeypatch):
    """real.json names the --real-root copy as the records must read on any machine: inside the
    project or beside it (../shared/...) relative to the project; elsewhere by its absolute path, not a
    climb of several folders (../../tmp/...)."""
    depth = load_example("snn_depth")
    assert depth.copy_name(ROOT / "nmnist-sample") == "nmnist-sample"
    assert depth.copy_name(ROOT.parent / "shared" / "data") == os.path.join("..", "shared", "data")
    (tmp_path / "project").mkdir()
    (tmp_path / "far" / "away" / "copy").mkdir(parents=True)
    (tmp_path / "shared").symlink_to(tmp_path / "far" / "away" / "copy")  # beside it, a link to a copy elsewhere
    monkeypatch.setattr(depth, "ROOT", tmp_path / "project")
    assert depth.copy_name(tmp_path / "shared") == os.path.join("..", "shared")
    elsewhere = Path("/eggroll-snn-test-copy") / "NMNIST"  # two folders above any project of a folder of its own
    assert depth.copy_name(elsewhere) == str(elsewhere)


def test_the_depth_table_says_which_copy_each_real_score_is_from(tmp_path):
    """Runs all scored on one --real-root copy: the header names it. Runs scored on different copies
    (a later call with another --real-root for other networks): each score names its own."""
    import shutil
    runs = []
    for name in ("bptt-hidden-64-seed1", "bptt-hidden-128-seed1"):
        shutil.copytree(ROOT / "results" / "depth" / "runs" / name, tmp_path / name)
        runs.append(tmp_path / name)
    for run, copy, accuracy in ((runs[0], "A", 0.5), (runs[1], "A", 0.25)):
        real = json.loads((run / "real.json").read_text())  # each run's own score, its copy and accuracy changed
        real.pop("accuracy_per_digit")  # (which the accuracy set here would lie outside)
        (run / "real.json").write_text(json.dumps({**real, "data_root": copy, **real_score(accuracy)}))
    lines = load_example("snn_depth").table(runs).splitlines()
    assert "| real recordings % (A) |" in lines[0] and "| 50.00 |" in lines[2] and "| 25.00 |" in lines[3]
    (runs[1] / "real.json").write_text(json.dumps({**real, "data_root": "B", **real_score(0.25)}))
    lines = load_example("snn_depth").table(runs).splitlines()
    assert "| real recordings % |" in lines[0] and "| 50.00 (A) |" in lines[2] and "| 25.00 (B) |" in lines[3]


def test_the_depth_examples_output_sigma_lever_reaches_train_and_marks_its_folder(tmp_path, monkeypatch):
    """--output-sigma-scale, away from its default 1, is passed to run.py train and named in the run's
    folder, after the other levers; BPTT, which has no sigma, takes no part of it."""
    from types import SimpleNamespace
    depth = load_example("snn_depth")
    opts = SimpleNamespace(out=tmp_path, seed=1, data_root="data", real_root=None,
                           **{name: default for name, (default, _, _) in depth.LEVERS.items()})
    opts.generations, opts.sigma, opts.logit_scale, opts.output_sigma_scale = 300, 0.1, 1.0, 2.0
    commands = []
    monkeypatch.setattr(depth.subprocess, "run", lambda command, **_: commands.append(command)
                        or subprocess.CompletedProcess(command, 0, stdout="", stderr=""))
    depth.train("eggroll", "128,64", opts)
    depth.train("bptt", "128,64", opts)
    assert commands[0][commands[0].index("--output-sigma-scale") + 1] == "2.0"
    assert commands[0][commands[0].index("--out") + 1] == str(tmp_path / "runs" / "hidden-128-64-g300-sigma0.1-logit1-out2-seed1")
    assert "--output-sigma-scale" not in commands[1] and commands[1][commands[1].index("--out") + 1] == \
        str(tmp_path / "runs" / "bptt-hidden-128-64-seed1")
    recipe = lambda name: depth.table([ROOT / "results" / "depth" / "runs" / name]).splitlines()[2].split(" | ")[5]
    assert recipe("hidden-128-64-g300-sigma0.1-logit1-out2-seed1") == "0.1, 0.03, 1, 0.3; output σ × 2"
    assert recipe("hidden-128-64-g300-sigma0.1-logit1-seed1") == "0.1, 0.03, 1, 0.3"  # the default, unsaid


def test_the_depth_examples_readout_lever_reaches_both_methods_and_marks_their_folders(tmp_path, monkeypatch):
    """--readout potential is passed to run.py train for EGGROLL and BPTT alike, marks both runs'
    folders and is named in the table's recipe; the default, rate, marks no folder and is not named."""
    import shutil
    from types import SimpleNamespace
    depth = load_example("snn_depth")
    opts = SimpleNamespace(out=tmp_path, seed=2, data_root="data", real_root=None,
                           **{name: default for name, (default, _, _) in depth.LEVERS.items()})
    commands = []
    monkeypatch.setattr(depth.subprocess, "run", lambda command, **_: commands.append(command)
                        or subprocess.CompletedProcess(command, 0, stdout="", stderr=""))
    depth.train("eggroll", "64", opts)
    opts.readout = "potential"
    depth.train("eggroll", "64", opts)
    depth.train("bptt", "64", opts)
    assert commands[0][commands[0].index("--readout") + 1] == "rate"
    assert commands[0][commands[0].index("--out") + 1] == str(tmp_path / "runs" / "hidden-64-seed2")
    for command, folder in zip(commands[1:], ["hidden-64-readout-potential-seed2", "bptt-hidden-64-readout-potential-seed2"]):
        assert command[command.index("--readout") + 1] == "potential"
        assert command[command.index("--out") + 1] == str(tmp_path / "runs" / folder)
    run = tmp_path / "copied"
    shutil.copytree(ROOT / "results" / "depth" / "runs" / "hidden-64-g300-sigma0.1-logit1-seed1", run)
    settings = json.loads((run / "config.json").read_text())
    (run / "config.json").write_text(json.dumps({**settings, "readout": "potential"}))
    assert depth.table([run]).splitlines()[2].split(" | ")[5] == "0.1, 0.03, 1, 0.3; potential readout"


def test_the_depth_example_writes_real_json_whole_and_never_through_a_link(tmp_path, monkeypatch):
    """snn_depth writes a run's real.json as the project writes every file (run_folder.writing): a
    new file renamed into place, so a real.json that is a link is refused in one line and the file it
    names left as it was, not written through; a plain one is replaced with the new scores."""
    from types import SimpleNamespace
    depth = load_example("snn_depth")
    opts = SimpleNamespace(out=tmp_path, seed=1, data_root="data", real_root=str(tmp_path / "real"),
                           **{name: default for name, (default, _, _) in depth.LEVERS.items()})
    scores = {**real_score(0.5)}
    monkeypatch.setattr(depth.subprocess, "run", lambda command, **_: subprocess.CompletedProcess(
        command, 0, stdout=json.dumps(scores), stderr=""))
    monkeypatch.setattr(depth.training, "scored_on", lambda out, root: False)
    out = depth.run_folder("eggroll", "64", opts)
    out.mkdir(parents=True)
    theirs = tmp_path / "theirs.json"
    theirs.write_text("kept")
    (out / "real.json").symlink_to(theirs)
    with pytest.raises(run_folder.UsageError, match=f"{out / 'real.json'} is a symbolic link"):
        depth.train("eggroll", "64", opts)
    assert theirs.read_text() == "kept" and sorted(p.name for p in out.iterdir()) == ["real.json"]
    (out / "real.json").unlink()
    (out / "real.json").write_text("old")
    depth.train("eggroll", "64", opts)
    assert json.loads((out / "real.json").read_text())["accuracy"] == scores["accuracy"]
    assert sorted(p.name for p in out.iterdir()) == ["real.json"]


def test_the_depth_speed_example_times_each_network_beside_the_papers(tmp_path):
    """examples/depth_speed.py: a row per network, the paper's first at 1.0x, every time positive,
    and each EGGROLL generation's peak memory within resources.py's estimate (which run.py train
    checks before it starts); --out keeps the same table."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_speed.py"), "--hidden", "8,4", "conv2k5s3",
                           "--members", "4", "--repeats", "1", "--out", str(tmp_path / "speed.md")],
                          capture_output=True, text=True, timeout=300, env={**os.environ, "OPENBLAS_NUM_THREADS": "1"})
    assert done.returncode == 0, done.stderr
    rows = [line.split(" | ") for line in done.stdout.splitlines() if line.startswith("| 2312")]
    assert [row[0] for row in rows] == ["| 2312-64-10", "| 2312-8-4-10", "| 2312-conv2k5s3-10"]
    assert [row[1] for row in rows] == ["74", "22", "210"]
    assert all(cell.endswith("(1.0x)") for cell in rows[0][2:5])
    assert all(float(cell.split()[0]) > 0 for row in rows for cell in row[2:5])
    peaks = [[float(number.strip("(|) ").replace(",", "")) for number in row[5].rstrip(" |").split()] for row in rows]
    assert all(0 < peak <= estimate for peak, estimate in peaks)
    assert (tmp_path / "speed.md").read_text() == done.stdout


def run_depth_signal(out, *options):
    """examples/depth_signal.py on the sample with `options`, its records and table into `out`."""
    return subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), *options, "--out", str(out), "--cache-dir", str(out / "cache")],
                          capture_output=True, text=True, timeout=300)


def test_the_depth_signal_example_records_every_layer(tmp_path):
    """examples/depth_signal.py on the sample: a record per generation, population, rank and layer,
    each cosine in [-1, 1] and firing rate in [0, 1], a layer's rate the same for every estimate of
    one generation, and the table beside them."""
    done = run_depth_signal(tmp_path, "--hidden", "12,6", "--generations", "2", "--every", "2", "--populations",
                            "8,16", "--ranks", "1,2", "--batch-size", "16")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "12-6-sigma0.2-logit5.jsonl").read_text().splitlines()]
    assert len(records) == 2 * 2 * 2 * 3  # generations 0 and 2, two populations, two ranks, three layers
    assert all(-1 <= r["cosine"] <= 1 and 0 <= r["firing_rate"] <= 1 for r in records)
    for generation in (0, 2):
        for layer in (1, 2, 3):
            rates = {r["firing_rate"] for r in records if r["generation"] == generation and r["layer"] == layer}
            assert len(rates) == 1
    assert (tmp_path / "12-6-sigma0.2-logit5.md").read_text().startswith("| generation | members | rank | cos W1 | cos W2 | cos W3 |")
    without_out = done.args[:-4] + done.args[-2:]
    refused = subprocess.run(without_out + ["--out", "/proc/depth"], capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "cannot use /proc/depth" in refused.stderr
    assert refused.stdout == ""  # refused before the first measurement
    printed = subprocess.run(without_out, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert printed.returncode == 0 and "| generation | members | rank |" in printed.stdout  # without --out: no file
    assert sorted(path.name for path in tmp_path.iterdir()) == ["12-6-sigma0.2-logit5.jsonl", "12-6-sigma0.2-logit5.md",
                                                                 "cache"]


def test_depth_signal_measures_the_cosine_with_the_direction_of_ascent(tmp_path):
    """g climbs the fitness and BPTT's gradient descends the loss: their cosine is taken against
    -gradient, so the output layer's, where the signal is strongest, is clearly positive (0.39 and
    0.28 at these settings and seed; against +gradient it would be as clearly negative)."""
    done = run_depth_signal(tmp_path, "--hidden", "12", "--generations", "2", "--every", "2", "--populations", "128",
                            "--ranks", "4", "--batch-size", "64")
    assert done.returncode == 0, done.stderr
    records = [json.loads(line) for line in (tmp_path / "12-sigma0.2-logit5.jsonl").read_text().splitlines()]
    assert [round(r["cosine"], 2) > 0.1 for r in records if r["layer"] == 2] == [True, True], records


def test_depth_signal_keeps_the_records_and_table_of_other_settings(tmp_path):
    """Every record states the settings it was made with and the table's last line them too; a rerun
    into the same --out with other settings (more members, another lr) is one line, exit status 2,
    before any work, the records and the table as they were (the table alone, too); the same
    settings run again and write the same files."""
    command = [sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--hidden", "8", "--generations", "1", "--every", "1", "--populations", "8", "--ranks", "1",
               "--batch-size", "8", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache")]
    assert subprocess.run(command, capture_output=True, text=True, timeout=300).returncode == 0
    records, table = tmp_path / "8-sigma0.2-logit5.jsonl", tmp_path / "8-sigma0.2-logit5.md"
    written = records.read_text(), table.read_text()
    assert all(json.loads(line)["settings"] == {"generations": 1, "every": 1, "populations": [8], "ranks": [1],
                                                "batch_size": 8, "sigma": 0.2, "lr": 0.03, "logit_scale": 5.0,
                                                "init_std": 0.3, "seed": 1} for line in written[0].splitlines())
    assert written[1].endswith("\nGenerations 1, measured every 1, minibatch 8; members 8; ranks 1; sigma 0.2, lr "
                               "0.03 on a cosine, readout scale 5, init std 0.3, seed 1.\n")
    for option, value, difference in (("--populations", "16", "populations [8], not [16]"),
                                      ("--lr", "0.1", "lr 0.03, not 0.1")):
        other = [*command, option, value]
        done = subprocess.run(other, capture_output=True, text=True, timeout=300)
        assert done.returncode == 2 and done.stdout == "" and done.stderr == (
            f"error: {records} holds records made with other settings ({difference}); give another --out for these "
            f"settings (they are left as they are)\n"), done.stderr
        assert (records.read_text(), table.read_text()) == written
    records.rename(tmp_path / "kept.jsonl")
    done = subprocess.run(other, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr == f"error: {table} is a table of other settings than these; give " \
                                                   f"another --out for these settings (it is left as it is)\n"
    assert table.read_text() == written[1] and not records.exists()
    (tmp_path / "kept.jsonl").rename(records)
    assert subprocess.run(command, capture_output=True, text=True, timeout=300).returncode == 0
    assert (records.read_text(), table.read_text()) == written
    other = write_dataset(tmp_path / "other" / "NMNIST", n_train=10, n_test=2, seed=3).parent  # the same settings
    elsewhere = [str(other) if arg == str(ROOT / "nmnist-sample") else arg for arg in command]  # on other data
    done = subprocess.run(elsewhere, capture_output=True, text=True, timeout=300)
    assert done.returncode == 2 and done.stderr == f"error: {records} holds records measured on other data " \
                                                   f"(--data-root); give another --out for this data (they are " \
                                                   f"left as they are)\n", done.stderr
    assert (records.read_text(), table.read_text()) == written


def test_adam_fed_pure_noise_walks_lr_times_root_of_the_steps():
    """layer_drift's noise walk: the RMS distance of Adam's steps on pure noise is lr sqrt(steps) at
    a constant lr, within 3 % (the SE of 10,000 entries is 0.7 %) after 400 steps, and 5-15 % more
    after 50, the first steps' bias correction weighing them up. Its first step moves every entry by
    lr exactly, as Adam's first step does (g / sqrt(g^2))."""
    drift = load_example("layer_drift")
    assert drift.noise_walk(0.01, "constant", 1) == pytest.approx(0.01, rel=1e-4)
    assert drift.noise_walk(0.01, "constant", 400) == pytest.approx(0.01 * 400 ** 0.5, rel=0.03)
    assert 1.05 < drift.noise_walk(0.01, "constant", 50) / (0.01 * 50 ** 0.5) < 1.15
    assert drift.noise_walk(0.03, "cosine", 100) < drift.noise_walk(0.03, "constant", 100)


def test_the_layer_drift_example_measures_each_layer_of_a_run(tmp_path):
    """examples/layer_drift.py on a tiny EGGROLL run of two hidden layers (drawn by the fan-in rule, the
    inner one at half the lr): a row per weight matrix, its RMS change from its own initialisation as the
    checkpoint holds it, the noise walk at that layer's lr, and the coherent part sqrt(moved^2 - walk^2);
    a folder without a run is one line, exit status 2."""
    run = tmp_path / "run"
    trained = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--data-root", str(ROOT / "nmnist-sample"),
                              "--cache-dir", str(tmp_path / "cache"), "--out", str(run), "--quiet", "--hidden", "12,6",
                              "--generations", "3", "--population", "8", "--batch-size", "16", "--eval-every", "3",
                              "--lr", "0.1", "--init-rule", "fan-in", "--inner-scale", "0.5"], capture_output=True,
                             text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    command = [sys.executable, str(ROOT / "examples" / "layer_drift.py"), str(run), "--out", str(tmp_path / "drift.md")]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    config, drift = run_folder.read_config(run), load_example("layer_drift")
    start = snn.init_network(config.seed, snn.Network.parse("12,6"), std=config.init_std, rule="fan-in")
    stored, rows = np.load(run / "checkpoint.npz"), drift.drift(run)
    assert [(row["weights"], row["size"]) for row in rows] == [("W1", "12×2312"), ("W2", "6×12"), ("W3", "10×6")]
    for row in rows:
        assert row["moved"] == pytest.approx(np.sqrt(((stored[f"param/{row['weights']}"] - start[row["weights"]]) ** 2).mean()))
        lr = 0.1 * 0.5 if row["weights"] == "W2" else 0.1  # the inner layer steps at lr x --inner-scale
        assert row["noise_walk"] == drift.noise_walk(lr, config.lr_schedule, 3) and row["moved"] > 0
        assert row["coherent"] == pytest.approx(np.sqrt(max(row["moved"] ** 2 - row["noise_walk"] ** 2, 0)))
    assert (tmp_path / "drift.md").read_text() == drift.table(rows) and f"| {rows[0]['moved']:.3f} |" in done.stdout
    twice = subprocess.run([*command[:3], str(run / "."), "--out", str(tmp_path / "twice.md")], capture_output=True,
                           text=True, timeout=300)  # one run named twice: its rows once
    assert twice.returncode == 0 and (tmp_path / "twice.md").read_text() == drift.table(rows), twice.stderr
    far = tmp_path / "far"  # finite weights of 1e30, whose float32 squares overflow: measured, not inf, no warning
    shutil.copytree(run, far)
    arrays = dict(np.load(far / "checkpoint.npz"))
    arrays["param/W3"] = np.full_like(arrays["param/W3"], 1e30)
    np.savez(far / "checkpoint.npz", **arrays)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        moved = {row["weights"]: row["moved"] for row in drift.drift(far)}
    assert moved["W3"] == pytest.approx(np.sqrt(((1e30 - start["W3"].astype(np.float64)) ** 2).mean()))
    assert moved["W1"] == rows[0]["moved"]
    refused = subprocess.run(command[:2] + [str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1 and "holds no trained run" in refused.stderr
    (tmp_path / "a file").write_text("")
    for given, said in ((tmp_path / "a file", "is not a folder, so it holds no trained run; give the folder of a run"),
                        (tmp_path / "absent", "does not exist; give the folder of a run")):
        refused = subprocess.run(command[:2] + [str(given)], capture_output=True, text=True, timeout=60)
        assert refused.returncode == 2 and refused.stderr == f"error: {given} {said} (run.py train --out)\n", \
            refused.stderr
    partway = tmp_path / "partway"  # a checkpoint of the run after one update, put over the finished run's
    shutil.copytree(run, partway)
    arrays = dict(np.load(partway / "checkpoint.npz"))
    arrays.update(step=arrays["step"].dtype.type(1), adam_t=arrays["adam_t"].dtype.type(1),
                  step_seconds=arrays["step_seconds"][:1])
    np.savez(partway / "checkpoint.npz", **arrays)
    with pytest.raises(run_folder.UsageError, match="holds the weights after 1 updates, and final.json records a run "
                                                    "of 3: it is not the finished run's weights"):
        drift.drift(partway)
    (run / "final.json").rename(tmp_path / "final.json")  # as a run that has not finished
    refused = subprocess.run(command[:3], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and "has not finished (no final.json); finish it with `python run.py train --out " \
        f"{run} --resume --method eggroll" in refused.stderr, refused.stderr
    settings = json.loads((run / "config.json").read_text())  # unfinished, and of weight decay: finishing it would not do
    (run / "config.json").write_text(json.dumps(dict(settings, weight_decay=0.01)))
    with pytest.raises(run_folder.UsageError, match="is not an EGGROLL run without weight decay; give such a run$"):
        drift.drift(run)
    (run / "config.json").write_text(json.dumps(settings))
    with run_folder.owned(run):  # as a run being trained now: no command to finish it, which would be refused
        refused = subprocess.run(command[:3], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and refused.stderr == f"error: {run} is being trained now (by process " \
        f"{os.getpid()}): give it once it has finished\n", refused.stderr
    (tmp_path / "final.json").rename(run / "final.json")
    checkpoint = (run / "checkpoint.npz").read_bytes()
    refused = subprocess.run(command[:3] + ["--out", str(run / "checkpoint.npz")], capture_output=True, text=True,
                             timeout=60)  # a table is written to a .md file, never over a run's checkpoint
    assert refused.returncode == 2 and "expected the path of a .md file" in refused.stderr
    assert (run / "checkpoint.npz").read_bytes() == checkpoint
    (run / "checkpoint.npz").unlink()  # as a committed run: its records, no weights
    refused = subprocess.run(command[:3], capture_output=True, text=True, timeout=60)
    assert refused.returncode == 2 and f"{run} holds a finished run but not its checkpoint.npz (a committed run keeps " \
        "none): train it again into a folder of your own, `python run.py train --out DIR --resume --method eggroll" \
        in refused.stderr and refused.stderr.endswith("(with the --data-root it trained on), and give that folder\n")


def test_depth_signal_takes_a_batch_larger_than_the_training_split_whole(tmp_path):
    """--batch-size above the training recordings (162 in the sample) measures and trains on all of
    them, as run.py train does, not an error of NumPy's after the first measurement."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--hidden", "12,6", "--generations", "1", "--every", "1",
                           "--populations", "8", "--ranks", "1", "--batch-size", "100000", "--cache-dir",
                           str(tmp_path / "cache")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ") and
            line[2].isdigit()] == ["| 0", "| 1"]


def test_depth_signal_measures_the_last_generation_too(tmp_path):
    """--every beyond --generations still measures the trained end, not only generation 0."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--hidden", "8", "--generations", "2", "--every", "5",
                           "--populations", "8", "--ranks", "1", "--batch-size", "8", "--cache-dir",
                           str(tmp_path / "cache")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stderr == "", done.stderr
    assert [line.split(" | ")[0] for line in done.stdout.splitlines() if line.startswith("| ") and
            line[2].isdigit()] == ["| 0", "| 2"]


@pytest.mark.parametrize("options, message", [
    (["--populations", "abc"], "expected even integers >= 2 (P antithetic pairs) separated by commas, got 'abc'"),
    (["--ranks", "1.5"], "expected integers >= 1 separated by commas, got '1.5'"),
    (["--populations", ""], "expected even integers >= 2 (P antithetic pairs) separated by commas, got ''"),
    (["--out", str(ROOT / "README.md")], f"expected a folder to write the records into, got '{ROOT / 'README.md'}'"),
])
def test_depth_signals_lists_are_whole_numbers_or_one_line(options, message):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root", "x", *options],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr


@pytest.mark.parametrize("options, message", [
    (["--methods", "bptt", "--sigma", "0.5"], "--sigma is for eggroll, which --methods bptt does not train: drop it, "
                                              "or add eggroll to --methods"),
    (["--methods", "eggroll", "--epochs", "3"], "--epochs is for bptt, which --methods eggroll does not train"),
])
def test_the_depth_example_refuses_an_option_no_chosen_method_reads(tmp_path, options, message):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", "x", "--out",
                           str(tmp_path / "depth"), *options], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert not (tmp_path / "depth").exists()


def test_an_option_of_two_methods_is_taken_with_either_alone(tmp_path):
    """--init-std, which EGGROLL and BPTT both read, is taken with --methods eggroll alone."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--out", str(tmp_path), "--methods", "eggroll", "--hidden", "8",
                           "--generations", "1", "--init-std", "0.5"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert [path.name for path in (tmp_path / "runs").iterdir()] == ["hidden-8-g1-init0.5-seed1"]


def test_depth_speed_refuses_members_beyond_free_memory_before_any_timing(tmp_path):
    """More members than one generation's estimate leaves room for: one line naming --members and
    the estimate, before the first timing (an out-of-memory line would cite an estimate never checked)."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_speed.py"), "--hidden", "64", "--members",
                           "4000000000", "--repeats", "1", "--out", str(tmp_path / "speed.md")],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("error: --members 4000000000: an EGGROLL generation of 2312-64-10 needs about ")
    assert done.stderr.endswith(" free; lower --members\n") and done.stdout == ""
    assert list(tmp_path.iterdir()) == []
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_speed.py"), "--hidden", "65536,65536",
                           "--members", "4", "--repeats", "1"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr  # 17 GB a weight: the weights' fault
    assert done.stderr.startswith("error: --hidden 65536,65536: an EGGROLL generation of 2312-65536-65536-10 needs ")
    assert done.stderr.endswith("free; leave 65536,65536 out of --hidden, or narrow it: its weights and Adam's "
                                "moments alone do not fit\n"), done.stderr


@pytest.mark.parametrize("script, option, extra", [
    ("examples/versus_libraries.py", "--population", ["--out", "{tmp}/out"]),
    ("examples/mlp_mnist.py", "--population", ["--mnist", "{tmp}/mnist"]),
    ("examples/depth_speed.py", "--members", ["--out", "{tmp}/speed.md"])])
@pytest.mark.parametrize("members", ["7", "0"])
def test_an_odd_population_is_refused_as_its_option_before_any_work(tmp_path, script, option, extra, members):
    """A population that is no number of antithetic pairs: one line naming the option, exit status 2,
    before anything is written (versus_libraries.py made its --out folder first)."""
    done = subprocess.run([sys.executable, str(ROOT / script), option, members,
                           *(part.format(tmp=tmp_path) for part in extra)],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        f"error: argument {option}: expected an even integer >= 2 (P antithetic pairs), got '{members}'; see "
        f"{Path(script).name} --help\n"), done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("populations", ["7", "256,7", "0", "8,,16"])
def test_the_signal_examples_populations_are_refused_as_their_option_before_any_work(tmp_path, populations):
    """--populations of depth_signal.py, each a number of antithetic pairs: one that is not is one
    line naming --populations, exit status 2, before any data is read."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "depth_signal.py"), "--data-root", "nowhere",
                           "--populations", populations, "--out", str(tmp_path / "out")],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        f"error: argument --populations: expected even integers >= 2 (P antithetic pairs) separated by commas, got "
        f"'{populations}'; see depth_signal.py --help\n"), done.stderr
    assert list(tmp_path.iterdir()) == []


class Parsed(Exception):
    """Raised, with the parser, where an example's main() would read its command line."""


def default_words(value):
    """How an option's default is written in its help: a list item by item, a path inside the
    repository relative to it, a number as %g writes it."""
    if isinstance(value, list):
        return [str(item) for item in value]
    if isinstance(value, Path):
        return [str(value.relative_to(ROOT))]
    return [f"{value:g}" if isinstance(value, float) else str(value)]


@pytest.mark.parametrize("script", sorted(path.stem for path in (ROOT / "examples").glob("*.py")))
def test_every_option_of_an_example_has_a_help_that_names_its_default(script, monkeypatch):
    """--help of each script of examples/ says what every option is, and its default where it has one."""
    def parsed(parser, args=None, namespace=None):
        raise Parsed(parser)
    module = load_example(script)
    monkeypatch.setattr(exits.Parser, "parse_args", parsed)
    with pytest.raises(Parsed) as stop:
        module.main()
    for action in stop.value.args[0]._actions:
        assert action.help, f"{script}.py {action.option_strings or action.dest} has no help"
        if action.default not in (None, False, argparse.SUPPRESS) and not action.required:
            assert all(word in action.help for word in default_words(action.default)), \
                f"{script}.py {action.option_strings}: its help {action.help!r} does not name {action.default!r}"


@pytest.mark.parametrize("script, out, message", [
    (script, "", "expected a folder to write the records into, got ''")
    for script in ("examples/snn_depth.py", "examples/depth_signal.py", "examples/versus_libraries.py")] + [
    (script, "nowhere/table.md", "nowhere is not a folder: create it or give another path")
    for script in ("examples/depth_speed.py", "examples/layer_drift.py")])
def test_an_out_that_cannot_be_written_is_refused_before_any_work(tmp_path, script, out, message):
    """--out "" (which would be the current folder) or a table in a folder that does not exist: one
    line, exit status 2, nothing written."""
    done = subprocess.run([sys.executable, str(ROOT / script), "--out", out], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("source", ["NMNIST_ROOT", "the default"])
def test_a_data_root_not_given_is_named_by_where_it_came_from(tmp_path, source):
    """evaluate without --data-root reads $NMNIST_ROOT, else the default folder: where that holds no
    N-MNIST, the one line names where the root came from, not an option the user never gave."""
    trained = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--data-root", str(ROOT / "nmnist-sample"),
                              "--cache-dir", str(tmp_path / "cache"), "--out", str(tmp_path / "run"), "--quiet",
                              "--generations", "1", "--population", "8", "--batch-size", "16", "--eval-every", "1"],
                             capture_output=True, text=True, timeout=300)
    assert trained.returncode == 0, trained.stderr
    env = {key: value for key, value in os.environ.items() if key not in ("NMNIST_ROOT", "XDG_CACHE_HOME")}
    env |= {"NMNIST_ROOT": str(tmp_path / "absent")} if source == "NMNIST_ROOT" else {"HOME": str(tmp_path / "home")}
    done = subprocess.run([sys.executable, str(ROOT / "run.py"), "evaluate", str(tmp_path / "run"), "--cache-dir",
                           str(tmp_path / "cache")], capture_output=True, text=True, timeout=120, env=env)
    root = tmp_path / "absent" if source == "NMNIST_ROOT" else tmp_path / "home" / ".cache" / "eggroll-snn" / "nmnist"
    named = "$NMNIST_ROOT" if source == "NMNIST_ROOT" else "--data-root (not given: the default)"
    assert done.returncode == 2 and done.stderr.startswith(f"error: {named} {root} holds no N-MNIST") and \
        done.stderr.endswith("; point --data-root (or $NMNIST_ROOT) at a copy\n") and done.stderr.count("\n") == 1, \
        done.stderr


@pytest.mark.parametrize("script", ["examples/mlp_mnist.py", "examples/snn_depth.py", "examples/depth_signal.py",
                                    "examples/depth_speed.py", "examples/layer_drift.py", "toy_eggroll.py", "lesson.py"])
def test_a_mistyped_option_is_one_line_not_a_usage_block(script):
    """Every script's argument error: one line naming the problem and --help, exit status 2."""
    done = subprocess.run([sys.executable, str(ROOT / script), "--bogus"], capture_output=True, text=True,
                          timeout=120, cwd=ROOT)
    name = Path(script).name
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.endswith(f"; see {name} --help\n") and done.stderr.count("\n") == 1, done.stderr
    assert "usage:" not in done.stderr


@pytest.mark.parametrize("script, again", [
    ("toy_eggroll.py", "nothing was written; run it again"),
    ("lesson.py", "run it again"),
    ("nano_eggroll.py", "nothing was written, run it again to start over"),
    ("examples/mlp_mnist.py", "run it again"),
    ("examples/snn_depth.py", "rerun the same command to continue (finished runs are left as they are)"),
    ("examples/depth_signal.py", "rerun the same command"),
    ("examples/depth_speed.py", "rerun the same command"),
    ("examples/layer_drift.py", "rerun the same command"),
    ("examples/versus_libraries.py", "rerun the same command")])
def test_ctrl_c_while_the_modules_load_is_one_line(tmp_path, script, again):
    """Ctrl-C before exits.py has loaded (SIGINT sent as NumPy is imported, as a slow start-up meets
    it): the script's own line, as exits.py words it later, exit status 130, not a traceback."""
    (tmp_path / "numpy.py").write_text("import os\nimport signal\n\nos.kill(os.getpid(), signal.SIGINT)\n")
    # Ctrl-C's default action, as a terminal starts the script, also where the tests run in the background
    # (whose processes start with SIGINT ignored, which Python keeps)
    done = subprocess.run([sys.executable, str(ROOT / script)], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)},
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    assert done.returncode == 130 and done.stdout == "" and done.stderr == f"error: interrupted; {again}\n", \
        done.stderr


def test_nano_eggroll_answers_help():
    """nano_eggroll.py --help prints what the file is and does, and exits 0 without training."""
    done = subprocess.run([sys.executable, str(ROOT / "nano_eggroll.py"), "--help"], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0 and done.stdout.startswith("usage: nano_eggroll.py [-h] [--seed SEED]\n\nnano EGGROLL: "
                                                           "evolution strategies") and not done.stderr


@pytest.mark.parametrize("command, message", [
    (["examples/mlp_mnist.py", "--mnist", "nowhere", "--rank", "1000"],
     "--rank 1000 exceeds the smaller side of out.w (10x128): use --rank <= 10"),
    (["examples/depth_speed.py", "--rank", "11", "--out", "{tmp}/speed.md"],
     "--rank 11 exceeds the smaller side of W2 (10x64) of the network 2312-64-10: use --rank <= 10"),
    (["examples/depth_signal.py", "--data-root", "nowhere", "--hidden", "8", "--ranks", "1,9", "--out", "{tmp}"],
     "--ranks 9 exceeds the smaller side of W1 (8x2312) of the network 2312-8-10: use --ranks <= 8")])
def test_a_rank_beyond_the_networks_weights_is_refused_as_its_option(tmp_path, command, message):
    """A rank larger than the smaller side of a weight matrix: one line naming the option and the
    largest rank it takes, exit status 2, before any work."""
    done = subprocess.run([sys.executable, *[part.format(tmp=tmp_path) for part in command]], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == "" and done.stderr == f"error: {message}\n", done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("option, value", [("--backprop-lr", "nan"), ("--lr", "-0.01"), ("--sigma", "inf"),
                                           ("--seed", "-1"), ("--population", "0")])
def test_mlp_mnist_refuses_nonsense_settings(option, value):
    """A NaN, negative or infinite rate, a negative seed: refused in one line before any data is read."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "mlp_mnist.py"), "--mnist", "nowhere", option, value],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.startswith(f"error: argument {option}: expected") \
        and done.stderr.count("\n") == 1, done.stderr


def test_the_depth_studys_shifts_are_bptts_lever_and_name_the_committed_folders():
    """--max-shift is BPTT's alone: 0 and 2 name the committed runs of conv64k17s17 (so that the documented
    commands find them), 1, the recipe's, marks no name; their table rows say the shifts."""
    depth = load_example("snn_depth")
    opts = argparse.Namespace(**{name: default for name, (default, _, _) in depth.LEVERS.items()},
                              out=ROOT / "results" / "depth", seed=1)
    opts.epochs = 15
    names = {}
    for shift in (0, 1, 2):
        opts.max_shift = shift
        assert depth.levers("bptt", opts)["max_shift"] == shift and "max_shift" not in depth.levers("eggroll", opts)
        names[shift] = depth.run_folder("bptt", "conv64k17s17", opts)
        assert (names[shift] / "final.json").is_file()
    assert [folder.name for folder in names.values()] == [
        "bptt-hidden-conv64k17s17-e15-shift0-seed1", "bptt-hidden-conv64k17s17-e15-seed1",
        "bptt-hidden-conv64k17s17-e15-shift2-seed1"]
    rows = depth.table(list(names.values())).splitlines()[2:]
    assert ["no shifts" in row for row in rows] == [True, False, False]
    assert ["shifts of up to 2 pixels" in row for row in rows] == [False, False, True]


def test_the_depth_studys_shifts_are_refused_past_run_py_trains_range_before_any_run(tmp_path):
    """--max-shift 40, which run.py train refuses (0..33), is refused as the options are read, not
    after the EGGROLL runs before BPTT's have trained; nothing is made."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--max-shift", "40", "--out", str(tmp_path / "depth")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == ("error: argument --max-shift: expected an integer in 0..33, got "
                                                    "'40'; see snn_depth.py --help\n"), done.stderr
    assert list(tmp_path.iterdir()) == []


def test_mlp_mnist_refuses_an_empty_mnist_folder_rather_than_read_the_current_one(tmp_path):
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "mlp_mnist.py"), "--mnist", "", "--steps", "2"],
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == ("error: argument --mnist: an empty path: give a path (. for the "
                                                    "current folder); see mlp_mnist.py --help\n"), done.stderr


def test_ctrl_c_on_the_depth_example_is_one_line(tmp_path):
    """Ctrl-C reaches the script and the run.py it started (one process group): one line, the
    script's, which says how to go on; not also run.py's, which names a command not typed."""
    command = [sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--out", str(tmp_path), "--generations", "500", "--hidden", "12", "--methods", "eggroll"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob("runs/*/metrics.jsonl")) and time.monotonic() < deadline:
            time.sleep(0.2)
        time.sleep(1)
        os.killpg(process.pid, signal.SIGINT)
        _, err = process.communicate(timeout=120)
    finally:
        process.kill()
        process.wait()
    assert process.returncode == 130
    assert err == "error: interrupted; rerun the same command to continue (finished runs are left as they are)\n"


def test_the_library_comparison_scores_formed_members_as_eggroll_scores_its_own():
    """examples/versus_libraries.py scores OpenES's and sep-CMA's members with their weights formed
    (losses_of on flat vectors): for EGGROLL's members, formed by pop.member, those losses are the
    ones pop.linear gives, and flat/unflat are inverse; the table puts eggroll's time at 1.0x."""
    versus = load_example("versus_libraries")
    rng = np.random.default_rng(0)
    x, y = rng.random((40, 64)).astype(np.float32), rng.integers(0, 10, 40)
    params = versus.init_mlp(12, seed=2)
    es = eggroll.Eggroll(8, 1, 0.05, seed=3)
    pop = es.ask(es.init(params))
    through_linear = versus.cross_entropy(pop.linear("W2", np.tanh(pop.linear("W1", x, bias="b1")), bias="b2"), y)
    vectors = np.stack([versus.flat(pop.member(i)) for i in range(8)])
    np.testing.assert_allclose(versus.losses_of(vectors, params, x, y), through_linear, rtol=1e-5)
    back = versus.unflat(versus.flat(params)[None], params)
    assert all(np.array_equal(back[name][0], params[name]) for name in params)
    record = dict(method="eggroll", hidden=12, population=8, generations=1, evaluations=8, sigma=0.05, lr=0.02, seed=1,
                  train_acc=0.5, test_acc=0.25, seconds_per_generation=0.2, peak_memory_mib=100.0)
    text = versus.table([record, dict(record, method="sepcma", seconds_per_generation=0.6)])
    assert "| 12 | eggroll (this project), rank 1 | 25.0 | 50.0 | 0.2000 | 1.0 | 100 |" in text
    assert "| 12 | pycma sep-CMA | 25.0 | 50.0 | 0.6000 | 3.0 | 100 |" in text


def test_the_depth_example_checks_its_data_before_training(tmp_path):
    """A --real-root that holds no N-MNIST is named as --real-root, before any run trains."""
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--real-root", str(tmp_path / "absent"), "--out",
                           str(tmp_path / "out"), "--hidden", "8", "--methods", "eggroll"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith(f"error: --real-root {tmp_path / 'absent'} holds no N-MNIST")
    assert not (tmp_path / "out").exists()


VERSUS = ROOT / "examples" / "versus_libraries.py"


@pytest.mark.parametrize("one, message", [
    (["foo", "8"], "argument --one: METHOD must be one of eggroll, openes, sepcma, got 'foo'"),
    (["eggroll", "x"], "argument --one: HIDDEN: expected an integer >= 1, got 'x'"),
    (["eggroll", "0"], "argument --one: HIDDEN: expected an integer >= 1, got '0'"),
    (["eggroll", "8.5"], "argument --one: HIDDEN: expected an integer >= 1, got '8.5'"),
])
def test_the_library_comparisons_one_run_is_asked_for_by_a_known_method_and_width(tmp_path, one, message):
    """--one METHOD HIDDEN: a method not among the comparison's or a width that is no whole number
    is one line naming what it takes, exit status 2, no traceback."""
    done = subprocess.run([sys.executable, str(VERSUS), "--out", str(tmp_path), "--one", *one], capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert done.stdout == "" and list(tmp_path.iterdir()) == []


def test_the_library_comparisons_one_run_refuses_an_out_it_would_not_write(tmp_path):
    """--one prints its record and writes nothing: an --out beside it is refused in one line, not
    passed over, and no folder is made; the comparison's own runs are given no --out."""
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, str(VERSUS), "--one", "eggroll", "4", "--generations", "1", "--population",
                           "8", "--out", str(out)], capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("error: argument --one: it prints its record and writes "
                                                           "nothing; drop --out") and done.stdout == "", done.stderr
    assert not out.exists()
    done = subprocess.run([sys.executable, str(VERSUS), "--hidden", "2", "--generations", "1", "--population", "8",
                           "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and (out / "runs" / "eggroll-h2" / "final.json").is_file(), done.stderr
    versus = load_example("versus_libraries")  # a library not installed is named, not passed over in silence
    assert all(f"{versus.METHODS[m]} ({versus.LIBRARIES[m]} is not installed)" in done.stderr
               for m in versus.METHODS if not versus.available(m)), done.stderr


def versus_record(method="eggroll", hidden=12, **settings):
    return {"method": method, "hidden": hidden, "population": 8, "generations": 1, "evaluations": 8, "sigma": 0.05,
            "lr": 0.02, "seed": 1, "train_acc": 0.5, "test_acc": 0.25, "seconds_per_generation": 0.2,
            "peak_memory_mib": 100.0, **settings}


def test_the_library_table_holds_only_the_rows_of_its_settings(tmp_path, capsys):
    """Records of other settings under runs/ are left out of the table, said in one line; the
    table's last line states the settings its rows were made with."""
    versus = load_example("versus_libraries")
    for name, record in (("eggroll-h12", versus_record()), ("sepcma-h12", versus_record("sepcma")),
                         ("eggroll-h32", versus_record(hidden=32, population=256, evaluations=256))):
        (tmp_path / "runs" / name).mkdir(parents=True)
        (tmp_path / "runs" / name / "final.json").write_text(json.dumps(record))
    wanted = {"population": 8, "generations": 1, "sigma": 0.05, "lr": 0.02, "seed": 1}
    text = versus.write_table(tmp_path, wanted)[0].read_text()
    assert "| 12 | pycma sep-CMA |" in text and "| 32 |" not in text
    assert text.endswith("\n\n8 members, 1 generations (8 evaluations of the whole training split each), sigma 0.05, "
                         "Adam's lr 0.02 (EGGROLL, OpenES), seed 1.\n")
    err = capsys.readouterr().err
    assert err == (f"1 record(s) in {tmp_path / 'runs'} made with other settings are left out of the table (e.g. "
                   f"population 256, not 8)\n")


def test_the_library_comparison_keeps_records_and_tables_of_other_settings(tmp_path):
    """A record of other settings where this command would write, or a table.md of other
    settings: one line, exit status 2, before any work, the files as they were; a library that is
    not installed is named in one line, not passed over in silence."""
    (tmp_path / "runs" / "eggroll-h2").mkdir(parents=True)
    record = json.dumps(versus_record(hidden=2, generations=3, evaluations=24))
    (tmp_path / "runs" / "eggroll-h2" / "final.json").write_text(record)
    command = [sys.executable, str(VERSUS), "--out", str(tmp_path), "--hidden", "2", "--population", "8",
               "--generations", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120)
    lines = done.stderr.splitlines()
    assert done.returncode == 2 and lines[-1] == (
        f"error: {tmp_path / 'runs' / 'eggroll-h2'} holds a record made with other settings (generations 3, not 1); "
        f"give another --out for these settings (that record is left as it is)")
    assert (tmp_path / "runs" / "eggroll-h2" / "final.json").read_text() == record
    assert len(lines) == 1, lines  # the refusal alone, not after the note on the libraries left out
    (tmp_path / "runs" / "eggroll-h2").rename(tmp_path / "eggroll-h2")
    for table, message in (("| hidden | method | test % |\n\n8 members, 3 generations\n", "is a table of other settings"),
                           ("my notes\n", "is a file this command did not write")):
        (tmp_path / "table.md").write_text(table)
        done = subprocess.run(command, capture_output=True, text=True, timeout=120)
        assert done.returncode == 2 and message in done.stderr.splitlines()[-1]
        assert (tmp_path / "table.md").read_text() == table
    assert list((tmp_path / "runs").iterdir()) == []


@pytest.mark.parametrize("command, victim", [
    (["toy_eggroll.py", "--out", "{tmp}/notes.png"], "notes.png"),
    (["lesson.py", "--claims", "1", "--out", "{tmp}/figures", "--page", "{tmp}/notes.md"], "notes.md"),
    (["lesson.py", "--claims", "1", "--out", "{tmp}"], "1_lowrank_scale.png"),
    (["examples/layer_drift.py", "{tmp}", "--out", "{tmp}/notes.md"], "notes.md"),
    (["examples/depth_speed.py", "--out", "{tmp}/notes.md"], "notes.md"),
    (["examples/depth_signal.py", "--data-root", "nowhere", "--hidden", "12,6", "--out", "{tmp}"],
     "12-6-sigma0.2-logit5.md"),
    (["examples/depth_signal.py", "--data-root", "nowhere", "--hidden", "12,6", "--out", "{tmp}"],
     "12-6-sigma0.2-logit5.jsonl"),
    (["examples/snn_depth.py", "--data-root", "nowhere", "--out", "{tmp}"], "table.md"),
    (["examples/versus_libraries.py", "--out", "{tmp}"], "table.md"),
    (["run.py", "bench", "--json", "{tmp}/notes.md"], "notes.md"),
])
def test_a_users_file_given_as_an_output_is_never_overwritten(tmp_path, command, victim):
    """A file the command did not write, named as its output (or lying under the name it writes
    in its --out folder): one line naming it, exit status 2, before any work, the file as it was."""
    (tmp_path / victim).write_text("my notes\n")
    done = subprocess.run([sys.executable, *[part.format(tmp=tmp_path) for part in command]], capture_output=True,
                          text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stdout == "", done.stderr
    last = done.stderr.splitlines()[-1]  # versus_libraries says first which libraries it leaves out
    assert last.startswith(f"error: {tmp_path / victim} is a file this command did not write (not ") \
        and "): it is left as it is; " in last and done.stderr.count("\n") <= 2, done.stderr
    assert (tmp_path / victim).read_text() == "my notes\n"


TABLE_OUTSIDE = ", not where a table goes; give --out a path outside it"
RECORDS_ELSEWHERE = ", not where records go; give another --out"


@pytest.mark.parametrize("command, ending", [
    (["examples/layer_drift.py", "{tmp}/other", "--out", "{place}/drift.md"], TABLE_OUTSIDE),
    (["examples/depth_speed.py", "--out", "{place}/speed.md"], TABLE_OUTSIDE),
    (["examples/depth_signal.py", "--data-root", "{copy}", "--hidden", "8", "--populations", "16", "--ranks", "1",
      "--out", "{place}"], RECORDS_ELSEWHERE),
    (["examples/versus_libraries.py", "--hidden", "8", "--out", "{place}"], RECORDS_ELSEWHERE)])
@pytest.mark.parametrize("inside", ["", "/Train/3"])
def test_no_table_or_record_is_written_among_an_nmnist_copys_recordings(tmp_path, command, ending, inside):
    """A copy of N-MNIST is only read: a table or records aimed at its folder, or at a digit folder in
    it, is one line naming the copy, exit status 2, before any work, the copy as it was."""
    copy = tmp_path / "copy"
    shutil.copytree(ROOT / "nmnist-sample", copy)
    before = sorted(copy.rglob("*"))
    done = subprocess.run([sys.executable, *[part.format(tmp=tmp_path, copy=copy, place=f"{copy}{inside}")
                                             for part in command]], capture_output=True, text=True, timeout=120, cwd=ROOT)
    where = f"{copy}{inside} lies inside {copy}, which holds N-MNIST" if inside else f"{copy} holds N-MNIST"
    last = done.stderr.splitlines()[-1]  # versus_libraries says first which libraries it leaves out
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") <= 2, done.stderr
    assert last.startswith(f"error: {where}") and last.endswith(ending), last
    assert sorted(copy.rglob("*")) == before


@pytest.mark.parametrize("command, given", [
    (["examples/layer_drift.py", "{tmp}/other", "--out", "{run}/drift.md"], "{run}"),
    (["examples/depth_speed.py", "--out", "{run}/inside/speed.md"], "{run}/inside"),
    (["examples/depth_signal.py", "--data-root", "nowhere", "--hidden", "12,6", "--out", "{run}"], "{run}"),
    (["examples/snn_depth.py", "--data-root", "nowhere", "--out", "{run}/inside"], "{run}/inside"),
    (["examples/versus_libraries.py", "--out", "{run}"], "{run}"),
    (["run.py", "bench", "--json", "{run}/bench.json"], "{run}"),
])
def test_no_table_or_record_is_written_into_a_run_folder(tmp_path, command, given):
    """A run folder (it holds the project's mark) holds its run's files only: a table, records or a
    benchmark's JSON aimed at it or inside it is one line naming the run folder, exit status 2, before
    any work, nothing written there."""
    run = tmp_path / "run"
    (run / "inside").mkdir(parents=True)
    (run / ".eggroll-run").write_text("a run folder")
    before = sorted(run.rglob("*"))
    done = subprocess.run([sys.executable, *[part.format(tmp=tmp_path, run=run) for part in command]],
                          capture_output=True, text=True, timeout=120, cwd=ROOT)
    place = "is" if given == "{run}" else f"lies inside {run},"
    last = done.stderr.splitlines()[-1]
    assert done.returncode == 2 and done.stdout == "" and done.stderr.count("\n") == 1, done.stderr
    assert last == (f"error: {given.format(run=run)} {place} a run folder of this project (it holds .eggroll-run): "
                    f"a run folder holds its run's files only; give {'--json a path outside it' if 'bench' in command else 'another --out'}"), last
    assert sorted(run.rglob("*")) == before


@pytest.mark.parametrize("command", [["run.py", "evaluate", "{tmp}/run"], ["examples/depth_signal.py"]])
def test_missing_data_is_advised_what_the_command_can_do(tmp_path, command):
    """evaluate and depth_signal.py download nothing: a --data-root without N-MNIST is one line that
    points --data-root at a copy, never at a --download they do not have."""
    if "evaluate" in command:  # a trained run to score, so that the data is what is missing
        trained = subprocess.run([sys.executable, str(ROOT / "run.py"), "train", "--data-root",
                                  str(ROOT / "nmnist-sample"), "--cache-dir", str(tmp_path / "cache"), "--out",
                                  str(tmp_path / "run"), "--quiet", "--generations", "1", "--population", "8",
                                  "--batch-size", "16", "--eval-every", "1"], capture_output=True, text=True, timeout=300)
        assert trained.returncode == 0, trained.stderr
    done = subprocess.run([sys.executable, *[part.format(tmp=tmp_path) for part in command], "--data-root",
                           str(tmp_path / "absent")], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert f"--data-root {tmp_path / 'absent'} holds no N-MNIST" in done.stderr and "point --data-root at a copy" \
        in done.stderr and "--download" not in done.stderr


@pytest.mark.parametrize("script", ["examples/mlp_mnist.py", "examples/snn_depth.py", "examples/depth_signal.py",
                                    "examples/depth_speed.py", "examples/layer_drift.py",
                                    "examples/versus_libraries.py", "toy_eggroll.py"])
def test_every_scripts_help_says_what_it_does_in_whole_sentences(script):
    """--help's description is the docstring's first paragraph, whole: not cut at its first line."""
    done = subprocess.run([sys.executable, str(ROOT / script), "--help"], capture_output=True, text=True, timeout=120,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr
    description = done.stdout.split("\n\n")[1]
    assert description.rstrip().endswith("."), description


def test_the_depth_table_never_mixes_two_data_sets(tmp_path):
    """snn_depth.py with --out holding runs trained on other data than --data-root: one line naming
    a run and the data root, exit status 2, before any run trains; a runs folder already mixed is
    refused where the table is written, the table as it was."""
    runs = tmp_path / "runs"
    shutil.copytree(ROOT / "results" / "depth" / "runs" / "hidden-64-g300-logit1-seed1", runs / "hidden-64-g300-logit1-seed1")
    command = [sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root", str(ROOT / "nmnist-sample"),
               "--out", str(tmp_path), "--methods", "eggroll", "--hidden", "8", "--generations", "1"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=300, cwd=tmp_path,
                          env={**os.environ, "EGGROLL_CACHE": str(tmp_path / "cache")})
    assert done.returncode == 2 and done.stderr == (
        f"error: {runs / 'hidden-64-g300-logit1-seed1'} and --data-root {ROOT / 'nmnist-sample'} are different data "
        f"sets (a run's final.json says which it trained on), and a table never mixes two: give the --data-root the "
        f"runs trained on, or another --out\n")
    assert sorted(path.name for path in runs.iterdir()) == ["hidden-64-g300-logit1-seed1"]
    other = runs / "hidden-8-seed1"
    shutil.copytree(runs / "hidden-64-g300-logit1-seed1", other)
    final = json.loads((other / "final.json").read_text())
    (other / "final.json").write_text(json.dumps({**final, "data": {"fingerprint": {"train": "9 samples"}},
                                                  "n_train": 9}))
    depth = load_example("snn_depth")
    with pytest.raises(depth.exits.UsageError, match="are different data sets"):
        depth.write_table(tmp_path)
    assert not (tmp_path / "table.md").exists()


def test_the_depth_example_refuses_a_project_folder_as_its_out_by_the_path_given(tmp_path):
    """snn_depth.py --out examples: one line naming --out as given (not a run folder under it), exit
    status 2, nothing written there."""
    before = sorted((ROOT / "examples").iterdir())
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "snn_depth.py"), "--data-root",
                           str(ROOT / "nmnist-sample"), "--out", str(ROOT / "examples"), "--generations", "1"],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 2 and done.stderr == (
        f"error: --out {ROOT / 'examples'} is the project's folder examples/, which holds its own files only; "
        f"give another --out\n"), done.stderr
    assert sorted((ROOT / "examples").iterdir()) == before


def test_the_depth_table_leaves_out_a_real_json_of_another_run(tmp_path, capsys):
    """A real.json copied from another run (here 2312-64-10's into 2312-128-10's folder) is no score of
    this run: its cell is left empty, with a line on stderr naming the file and the fix."""
    runs = []
    for name in ("bptt-hidden-64-seed1", "bptt-hidden-128-seed1"):
        shutil.copytree(ROOT / "results" / "depth" / "runs" / name, tmp_path / name)
        runs.append(tmp_path / name)
    shutil.copy(runs[0] / "real.json", runs[1] / "real.json")
    lines = load_example("snn_depth").table(runs).splitlines()
    assert lines[2].split(" | ")[8] != "–" and lines[3].split(" | ")[8] == "–", lines
    assert capsys.readouterr().err == (f"warning: {runs[1] / 'real.json'} is no score of this run (it scored the run "
                                       f"results/depth/runs/bptt-hidden-64-seed1): it is left out of the table; "
                                       f"--real-root scores this run again\n")
    json.dump({**json.loads((runs[1] / "real.json").read_text()), "run": str(runs[1]), "generation": 1},
              (runs[1] / "real.json").open("w"))
    load_example("snn_depth").table(runs)
    assert "is no score of this run (it scored generation 1, and this run finished at 1050)" in capsys.readouterr().err
    (runs[1] / "real.json").write_text("{}")
    load_example("snn_depth").table(runs)
    assert "is no score of this run (accuracy.train is missing)" in capsys.readouterr().err


def test_layer_drift_names_a_checkpoint_that_is_no_regular_file_as_such(tmp_path):
    """A finished run whose checkpoint.npz is a named pipe is not a run without a checkpoint: one line
    saying what is there (as run.py evaluate says it), not advice to train it again."""
    shutil.copytree(ROOT / "results" / "depth" / "runs" / "hidden-64-g300-logit1-seed1", tmp_path / "run")
    os.mkfifo(tmp_path / "run" / "checkpoint.npz")
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "layer_drift.py"), str(tmp_path / "run")],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr == (f"error: cannot read {tmp_path / 'run' / 'checkpoint.npz'}: it is "
                                                    f"a named pipe (FIFO), not a regular file; move it away and put the "
                                                    f"file back\n")


def test_depth_signal_draws_each_measured_generations_noise_from_its_own_seed(monkeypatch):
    """The estimate measured at generation G draws its noise from --seed + G, so that the points of a
    run are independent draws, not one noise measured again (and --seed 1 reproduces the records)."""
    signal = load_example("depth_signal")
    seeds = []

    def recording_estimate(params, frames, labels, network, population, rank, seed, opts):
        seeds.append(seed)
        return {name: np.ones_like(value) for name, value in params.items()}
    monkeypatch.setattr(signal, "eggroll_estimate", recording_estimate)
    network = snn.Network.parse("6")
    params = snn.init_network(1, network)
    rng = np.random.default_rng(0)
    frames, labels = (rng.random((3, 4, 2312)) < 0.1).astype(np.float32), rng.integers(0, 10, 4)
    opts = argparse.Namespace(populations=[8], ranks=[1], seed=7, logit_scale=1.0,
                              **{name: 0 for name in signal.SETTINGS if name not in ("populations", "ranks", "seed",
                                                                                      "logit_scale")})
    for generation in (0, 5, 10):
        signal.measure(params, frames, labels, network, generation, opts)
    assert seeds == [7, 12, 17]


def test_layer_drift_reads_a_run_folder_as_evaluate_does(tmp_path):
    """layer_drift refuses what evaluate refuses: a run's file that is a link, a folder without the
    project's mark, a run without its config.json (named as such, not as a missing folder)."""
    drift = load_example("layer_drift")
    run = tmp_path / "run"
    run.mkdir()
    np.savez(run / "checkpoint.npz", step=np.int64(1))
    with pytest.raises(run_folder.UsageError, match=f"is not a run folder of this project \\(it has no "
                                                    f"{re.escape(run_folder.RUN_MARK)}\\)"):
        drift.drift(run)
    (run / run_folder.RUN_MARK).write_text(run_folder.MARK_TEXT)
    with pytest.raises(run_folder.UsageError, match="holds a run without its config.json, so its settings are unknown"):
        drift.drift(run)
    (tmp_path / "elsewhere.json").write_text("{}")
    (run / "config.json").symlink_to(tmp_path / "elsewhere.json")
    with pytest.raises(run_folder.UsageError, match="config.json is a symbolic link"):
        drift.drift(run)
