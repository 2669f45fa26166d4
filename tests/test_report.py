"""The report of `reproduce`: which device each figure came from, and speedups only against vanilla
ES on the same device."""
import json

import report


def test_report_names_the_device_of_every_run():
    finals = lambda device: [({"device": device}, [])]
    one = {"es": finals("cpu"), "eggroll-r4": finals("cpu")}
    assert report.devices_line(one, ["es", "eggroll-r4"]) == "Device: cpu"
    two = {"bptt": finals("cpu"), "es": finals("gpu"), "eggroll-r4": finals("gpu")}
    assert report.devices_line(two, ["bptt", "es", "eggroll-r4"]) == "Devices: cpu for bptt; gpu for es, eggroll-r4"


def test_speedup_is_only_against_vanilla_es_on_the_same_device(tmp_path, monkeypatch):
    monkeypatch.setattr(report, "plot_figures", lambda *args: None)
    for name, device, seconds in [("es", "gpu", 0.3), ("eggroll-r1", "gpu", 0.1), ("eggroll-r4", "cpu", 0.2)]:
        out = tmp_path / "best" / "runs" / f"{name}-seed1"
        out.mkdir(parents=True)
        final = {"test_acc": 0.9, "median_seconds_per_generation": seconds, "spikes_per_sample": 100.0,
                 "device": device, "config": {"seed": 1}, "n_train": 1, "n_val": 1, "n_test": 1}
        (out / "final.json").write_text(json.dumps(final))
        (out / "metrics.jsonl").write_text(json.dumps({"val_acc": 0.8, "wall_seconds": 1.0}) + "\n")
    report.write_report(tmp_path / "best", "best")
    rows = {line.split(" | ")[0]: line.split(" | ") for line in (tmp_path / "best" / "table.md").read_text().splitlines()}
    assert rows["| eggroll-r1"][3] == "3.00×" and rows["| eggroll-r4"][3] == "–" and rows["| es"][3] == "1.00×"
