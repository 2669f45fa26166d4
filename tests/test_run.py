"""The command line: a killed run resumes to the very same weights, bad requests fail cleanly,
and `reproduce` writes its tables and figures and skips finished runs."""
import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import run
from nmnist_files import write_dataset

ROOT = Path(__file__).resolve().parents[1]
SMALL = ["--population", "8", "--batch-size", "16", "--eval-every", "5", "--quiet"]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """200 training and 30 test recordings of random events, and a cache folder."""
    base = tmp_path_factory.mktemp("nmnist")
    write_dataset(base / "NMNIST", n_train=20, n_test=3, n_events=300)
    return ["--data-root", str(base), "--cache-dir", str(base / "cache")]


def train_command(out, dataset, *extra):
    return [sys.executable, str(ROOT / "run.py"), "train", "--out", str(out), *SMALL, *dataset, *extra]


def stored_params(out):
    with np.load(out / run.CHECKPOINT) as stored:
        return {name: stored[name] for name in stored.files if name.startswith(("param/", "adam_"))}


def test_killed_run_resumes_to_bitwise_the_same_parameters(tmp_path, dataset):
    """Kill a run (SIGKILL) after its first checkpoint; --resume must end exactly where an
    uninterrupted run ends: every parameter and Adam moment equal bit for bit. The minibatches
    are augmented, so their random shifts must repeat too."""
    generations = ["--generations", "400", "--max-shift", "2"]
    subprocess.run(train_command(tmp_path / "whole", dataset, *generations), check=True, cwd=ROOT)

    killed = tmp_path / "killed"
    process = subprocess.Popen(train_command(killed, dataset, *generations), cwd=ROOT)
    deadline = time.time() + 120
    while not (killed / run.CHECKPOINT).exists() and time.time() < deadline:
        time.sleep(0.005)
    process.kill()
    process.wait()
    with np.load(killed / run.CHECKPOINT) as stored:
        step = int(stored["step"])
    assert 0 < step < 400, "the run must be killed mid-way for this test to mean anything"

    subprocess.run(train_command(killed, dataset, *generations, "--resume"), check=True, cwd=ROOT)
    whole, resumed = stored_params(tmp_path / "whole"), stored_params(killed)
    assert whole.keys() == resumed.keys()
    for name in whole:
        np.testing.assert_array_equal(whole[name], resumed[name], err_msg=name)
    lines = [json.loads(line) for line in (killed / "metrics.jsonl").read_text().splitlines()]
    assert [m["generation"] for m in lines] == list(range(5, 401, 5))


def run_main(args, capsys):
    code = run.main(args)
    return code, capsys.readouterr().err


def test_bad_requests_exit_2_with_one_line_and_touch_nothing(tmp_path, dataset, capsys):
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    before = {p.name: p.read_bytes() for p in out.iterdir()}

    cases = [
        (["--rank", "11"], "rank must lie in 1..10"),
        (["--population", "7"], "population must be an even number"),
        (["--sigma", "0"], "sigma must be > 0"),
        (["--seed", "-1"], "--seed must lie in"),
        (["--max-shift", "-1"], "--max-shift must lie in 0..33"),
        (["--max-shift", "34"], "--max-shift must lie in 0..33"),
        (["--generations", "3"], "already holds a run"),
        (["--generations", "3", "--resume"], "holds a run with other settings (generations)"),
    ]
    for extra, message in cases:
        code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset, *extra], capsys)
        assert code == 2 and message in err and err.count("\n") == 1, (extra, err)
    code, err = run_main(["train", "--out", str(tmp_path / "new"), "--data-root", str(tmp_path / "absent"),
                          "--cache-dir", str(tmp_path / "cache"), *SMALL], capsys)
    assert code == 2 and "N-MNIST not found" in err and not (tmp_path / "new").exists()
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before

    (out / run.CHECKPOINT).write_bytes(b"not a checkpoint")
    code, err = run_main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset, "--resume"], capsys)
    assert code == 2 and "is damaged" in err
    with pytest.raises(SystemExit) as exit_info:
        run.main(["train", "--method", "sgd"])
    assert exit_info.value.code == 2


def test_a_run_stored_before_a_setting_existed_resumes_with_its_default(tmp_path, dataset, capsys):
    """A config.json without max_shift (written before the option existed) is the default,
    max_shift 0: --resume accepts it, and refuses --max-shift 1 as other settings."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    config = json.loads((out / "config.json").read_text())
    del config["max_shift"]
    (out / "config.json").write_text(json.dumps(config))
    assert run.main(["train", "--out", str(out), "--generations", "2", "--resume", *SMALL, *dataset]) == 0
    code, err = run_main(["train", "--out", str(out), "--generations", "2", "--resume", "--max-shift", "1",
                          *SMALL, *dataset], capsys)
    assert code == 2 and "other settings (max_shift)" in err


def test_force_replaces_a_run(tmp_path, dataset):
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "2", *SMALL, *dataset]) == 0
    assert run.main(["train", "--out", str(out), "--generations", "3", "--force", *SMALL, *dataset]) == 0
    assert json.loads((out / "final.json").read_text())["generations"] == 3


def test_reproduce_writes_tables_and_figures_and_skips_finished_runs(tmp_path, dataset, monkeypatch):
    monkeypatch.setitem(run.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                              eval_every=1),
                                               "bptt": dict(generations=1, lr=1e-3)})
    monkeypatch.setattr(run, "SEEDS", (1, 2))
    monkeypatch.setattr(run, "RANKS", (1, 2))
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset]
    assert run.main(args) == 0
    report = tmp_path / "quick"
    table = (report / "table.md").read_text()
    for name in ("bptt", "es", "eggroll-r1", "eggroll-r2"):
        assert f"| {name} |" in table
    per_seed = (report / "per_seed.md").read_text()
    assert "seed 1" in per_seed and "seed 2" in per_seed
    for figure in ("rank_ablation.png", "convergence.png", "wallclock.png"):
        assert (report / figure).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    finals = sorted(report.glob("runs/*/final.json"))
    assert len(finals) == 8
    stamps = [f.stat().st_mtime_ns for f in finals]
    assert run.main(args) == 0
    assert [f.stat().st_mtime_ns for f in finals] == stamps

    real_root = dataset[dataset.index("--data-root") + 1]
    assert run.main(args + ["--report-only", "--real-root", real_root]) == 0
    assert [f.stat().st_mtime_ns for f in finals] == stamps
    assert len(list(report.glob("runs/*/real.json"))) == 8
    assert "real recordings % |" in (report / "table.md").read_text()


def test_reproduce_can_train_part_of_the_grid(tmp_path, dataset, monkeypatch):
    monkeypatch.setitem(run.PRESETS, "quick", {"common": dict(generations=2, population=4, batch_size=50,
                                                              eval_every=1)})
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", *dataset,
            "--runs", "es,eggroll-r2", "--seeds", "2,3"]
    assert run.main(args) == 0
    assert sorted(p.parent.name for p in tmp_path.glob("quick/runs/*/final.json")) == \
        ["eggroll-r2-seed2", "eggroll-r2-seed3", "es-seed2", "es-seed3"]


def test_preset_settings_go_from_common_to_method_to_run(monkeypatch):
    monkeypatch.setitem(run.PRESETS, "quick", {"common": dict(generations=5, sigma=0.2),
                                               "eggroll": dict(generations=7), "eggroll-r2": dict(generations=9),
                                               "es": dict(sigma=0.1)})
    settings = {(name, s["seed"]): s for name, s in run.reproduce_runs("quick")}
    assert settings["eggroll-r1", 1]["generations"] == 7 and settings["eggroll-r2", 3]["generations"] == 9
    assert settings["es", 2]["generations"] == 5 and settings["es", 2]["sigma"] == 0.1
    assert settings["eggroll-r2", 1]["sigma"] == 0.2 and settings["eggroll-r2", 1]["rank"] == 2


def test_report_names_the_device_of_every_run():
    finals = lambda device: [({"device": device}, [])]
    one = {"es": finals("cpu"), "eggroll-r4": finals("cpu")}
    assert run.devices_line(one, ["es", "eggroll-r4"]) == "Device: cpu"
    two = {"bptt": finals("cpu"), "es": finals("gpu"), "eggroll-r4": finals("gpu")}
    assert run.devices_line(two, ["bptt", "es", "eggroll-r4"]) == "Devices: cpu for bptt; gpu for es, eggroll-r4"


def test_speedup_is_only_against_vanilla_es_on_the_same_device(tmp_path, monkeypatch):
    monkeypatch.setattr(run, "plot_figures", lambda *args: None)
    for name, device, seconds in [("es", "gpu", 0.3), ("eggroll-r1", "gpu", 0.1), ("eggroll-r4", "cpu", 0.2)]:
        out = tmp_path / "best" / "runs" / f"{name}-seed1"
        out.mkdir(parents=True)
        final = {"test_acc": 0.9, "median_seconds_per_generation": seconds, "spikes_per_sample": 100.0,
                 "device": device, "config": {"seed": 1}, "n_train": 1, "n_val": 1, "n_test": 1}
        (out / "final.json").write_text(json.dumps(final))
        (out / "metrics.jsonl").write_text(json.dumps({"val_acc": 0.8, "wall_seconds": 1.0}) + "\n")
    run.write_report(tmp_path / "best", "best")
    rows = {line.split(" | ")[0]: line.split(" | ") for line in (tmp_path / "best" / "table.md").read_text().splitlines()}
    assert rows["| eggroll-r1"][3] == "3.00×" and rows["| eggroll-r4"][3] == "–" and rows["| es"][3] == "1.00×"


def test_report_only_trains_nothing(tmp_path, dataset):
    args = ["reproduce", "--config", "quick", "--results", str(tmp_path), "--quiet", "--report-only", *dataset]
    assert run.main(args) == 0
    assert not list(tmp_path.glob("quick/runs/*")) and (tmp_path / "quick" / "table.md").exists()


def test_evaluate_reports_the_accuracy_training_reported(tmp_path, dataset, capsys):
    """`evaluate` on the training data's own copy gives the val and test accuracy of final.json."""
    out = tmp_path / "run"
    assert run.main(["train", "--out", str(out), "--generations", "3", *SMALL, *dataset]) == 0
    final = json.loads((out / "final.json").read_text())
    capsys.readouterr()
    assert run.main(["evaluate", str(out), *dataset]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["generation"] == 3
    assert report["accuracy"]["val"] == final["val_acc"] and report["accuracy"]["test"] == final["test_acc"]
    assert report["samples"] == {"train": 180, "val": 20, "test": 30}
    assert report["accuracy_per_digit"]["test"] == final["test_acc_per_digit"]
    labels = run.data.load_nmnist(dataset[1], cache_dir=dataset[3], progress=False).val.labels
    per_digit = report["accuracy_per_digit"]["val"]
    present = [digit for digit in range(10) if (labels == digit).any()]
    assert [digit for digit in range(10) if per_digit[digit] is not None] == present
    weighted = sum(per_digit[d] * (labels == d).sum() for d in present) / labels.size
    assert abs(weighted - final["val_acc"]) < 1e-12
    code, err = run_main(["evaluate", str(tmp_path / "absent")], capsys)
    assert code == 2 and "holds no trained run" in err


def test_cosine_learning_rate_falls_from_lr_to_zero():
    opts = run.argparse.Namespace(lr=0.03, lr_schedule="cosine")
    rates = [run.learning_rate(opts, step, 100) for step in range(101)]
    assert rates[0] == 0.03 and abs(rates[50] - 0.015) < 1e-12 and rates[100] == 0.0
    assert all(a >= b for a, b in zip(rates, rates[1:]))
    assert run.learning_rate(run.argparse.Namespace(lr=0.03, lr_schedule="constant"), 70, 100) == 0.03


def test_resume_drops_a_cut_metrics_line_and_refuses_a_run_without_checkpoint(tmp_path, dataset, capsys):
    """A kill during the metrics append leaves half a line: --resume drops it. A finished run whose
    checkpoint is gone cannot be resumed: --resume refuses instead of retraining over it."""
    out = tmp_path / "run"
    args = ["train", "--out", str(out), "--generations", "10", *SMALL, *dataset]
    assert run.main(args) == 0
    (out / "metrics.jsonl").write_text((out / "metrics.jsonl").read_text() + '{"generation": 1')
    (out / "final.json").unlink()
    assert run.main(args + ["--resume"]) == 0
    assert [json.loads(line)["generation"] for line in (out / "metrics.jsonl").read_text().splitlines()] == [5, 10]

    (out / run.CHECKPOINT).unlink()
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    code, err = run_main(args + ["--resume"], capsys)
    assert code == 2 and "no checkpoint.npz to resume from" in err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_bench_measures_every_method_at_a_small_size(monkeypatch):
    """bench_method runs each method's generation and reports positive seconds and memory; the
    noise memory of EGGROLL relative to ES follows r (m + n) / (m n) of the dominant layer."""
    monkeypatch.setitem(run.REFERENCE, "pairs", 4)
    monkeypatch.setitem(run.REFERENCE, "batch", 8)
    monkeypatch.setitem(run.REFERENCE, "time_bins", 3)
    for method, rank in run.BENCH_METHODS:
        result = run.bench_method(method, rank, "cpu", repeats=1)
        assert result["seconds"] > 0 and result["peak_rss_bytes"] > 0, method
        if method == "eggroll":
            assert result["forward_seconds"] > 0 and result["population_product_seconds"] > 0
    n, h, _ = run.snn.SIZES
    for rank in run.RANKS:
        ratio = run.noise_bytes("eggroll", rank) / run.noise_bytes("es-batched", None)
        assert abs(ratio / (rank * (n + h) / (n * h)) - 1) < 0.1  # biases and layer 2 add a few %
    assert run.flops_per_generation("eggroll", 1) < run.flops_per_generation("eggroll", 8) \
        < run.flops_per_generation("es-batched", None)
