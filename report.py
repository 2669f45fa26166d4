"""The results of `run.py reproduce` as a person reads them: Table 1 (table.md), Table 2
(per_seed.md) and three figures, made from the run folders under results/<preset>/runs.
"""
import json
import statistics

import numpy

import config


def collect(results_dir):
    """{run name: [(final, metrics) per seed]} from the runs under results_dir/runs; final gets
    "real_acc" where the run was scored on other recordings (real.json)."""
    runs = {}
    for final_path in sorted((results_dir / "runs").glob("*/final.json")):
        name = final_path.parent.name.rsplit("-seed", 1)[0]
        final = json.loads(final_path.read_text())
        real_path = final_path.parent / "real.json"
        if real_path.exists():
            final["real_acc"] = json.loads(real_path.read_text())["accuracy"]["all"]
        metrics = [json.loads(line) for line in (final_path.parent / "metrics.jsonl").read_text().splitlines()]
        runs.setdefault(name, []).append((final, metrics))
    return runs


def seconds_to_reach(metrics, accuracy=0.75):
    """Training seconds until validation accuracy first reached `accuracy`, else None."""
    return next((m["wall_seconds"] for m in metrics if m["val_acc"] >= accuracy), None)


def mean_std(values):
    values = [v for v in values if v is not None]
    if not values:
        return None, None
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else 0.0)


def format_mean_std(values, scale=1.0, digits=2):
    mean, std = mean_std(values)
    return "n/a" if mean is None else f"{mean * scale:.{digits}f} ± {std * scale:.{digits}f}"


def devices_line(runs, names):
    """"Device: X", or where runs trained on several devices, which runs trained on which."""
    by_device = {}
    for name in names:
        for final, _ in runs[name]:
            by_device.setdefault(final.get("device", "?"), set()).add(name)
    if len(by_device) <= 1:
        return f"Device: {next(iter(by_device), '?')}"
    return "Devices: " + "; ".join(f"{device} for {', '.join(n for n in names if n in runs_on)}"
                                   for device, runs_on in by_device.items())


def write_report(results_dir, preset):
    """table.md (Table 1), per_seed.md (Table 2) and the PNG figures of a reproduce run."""
    results_dir.mkdir(parents=True, exist_ok=True)
    runs = collect(results_dir)
    order = ["bptt", "es"] + [f"eggroll-r{r}" for r in config.RANKS]
    names = [n for n in order if n in runs]
    es_finals = [f for f, _ in runs.get("es", [])]
    first = runs[names[0]][0][0] if names else {}
    scored_on_real = any("real_acc" in f for n in names for f, _ in runs[n])
    lines = [f"# Table 1 ({preset}): N-MNIST test accuracy over seeds {', '.join(map(str, config.SEEDS))} "
             f"(per_seed.md shows which ran)",
             "", f"{devices_line(runs, names)}; train/val/test = {first.get('n_train')}/"
             f"{first.get('n_val')}/{first.get('n_test')} recordings.", "",
             "| method | test acc % (mean ± std) | s / generation | speedup vs vanilla ES (same device) | "
             "s to 75 % val acc | spikes / sample |" + (" real recordings % |" if scored_on_real else ""),
             "|---|---|---|---|---|---|" + ("---|" if scored_on_real else "")]
    for name in names:
        finals = [f for f, _ in runs[name]]
        seconds = statistics.median(f["median_seconds_per_generation"] for f in finals)
        es_seconds = [f["median_seconds_per_generation"] for f in es_finals
                      if {f.get("device")} == {g.get("device") for g in finals}]
        speedup = f"{statistics.median(es_seconds) / seconds:.2f}×" if es_seconds and name != "bptt" else "–"
        reach = [seconds_to_reach(m) for _, m in runs[name]]
        reached = [r for r in reach if r is not None]
        reach_text = (format_mean_std(reached, digits=1) + (f" ({len(reached)}/{len(reach)} seeds)"
                      if len(reached) < len(reach) else "")) if reached else "not reached"
        unit = " (per step)" if name == "bptt" else ""
        lines.append(f"| {name} | {format_mean_std([f['test_acc'] for f in finals], 100)} | "
                     f"{seconds:.3f}{unit} | {speedup} | {reach_text} | "
                     f"{format_mean_std([f['spikes_per_sample'] for f in finals], digits=0)} |"
                     + (f" {format_mean_std([f.get('real_acc') for f in finals], 100)} |" if scored_on_real else ""))
    (results_dir / "table.md").write_text("\n".join(lines) + "\n")

    rows = ["# Table 2 " + f"({preset}): test accuracy % per seed", "",
            "| method | " + " | ".join(f"seed {s}" for s in config.SEEDS) + " |", "|---" * (len(config.SEEDS) + 1) + "|"]
    for name in names:
        by_seed = {f["config"]["seed"]: f["test_acc"] for f, _ in runs[name]}
        rows.append(f"| {name} | " + " | ".join(f"{100 * by_seed[s]:.2f}" if s in by_seed else "–"
                                               for s in config.SEEDS) + " |")
    (results_dir / "per_seed.md").write_text("\n".join(rows) + "\n")
    if names:
        plot_figures(results_dir, runs, names)


def plot_figures(results_dir, runs, names):
    """rank_ablation.png, convergence.png and wallclock.png."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ranks = [r for r in config.RANKS if f"eggroll-r{r}" in runs]
    if ranks:
        fig, (acc_ax, time_ax) = plt.subplots(1, 2, figsize=(9, 3.5))
        accs = [mean_std([100 * f["test_acc"] for f, _ in runs[f"eggroll-r{r}"]]) for r in ranks]
        times = [statistics.median(f["median_seconds_per_generation"] for f, _ in runs[f"eggroll-r{r}"]) for r in ranks]
        acc_ax.errorbar(ranks, [a for a, _ in accs], yerr=[s for _, s in accs], marker="o", capsize=3, label="EGGROLL")
        time_ax.plot(ranks, times, marker="o", label="EGGROLL")
        if "es" in runs:
            es_acc = mean_std([100 * f["test_acc"] for f, _ in runs["es"]])[0]
            acc_ax.axhline(es_acc, color="gray", linestyle=":", label="vanilla ES")
            time_ax.axhline(statistics.median(f["median_seconds_per_generation"] for f, _ in runs["es"]),
                            color="gray", linestyle=":", label="vanilla ES")
        for ax, label in ((acc_ax, "test accuracy (%)"), (time_ax, "seconds per generation")):
            ax.set_xscale("log", base=2)
            ax.set_xticks(ranks, [str(r) for r in ranks])
            ax.set_xlabel("rank r")
            ax.set_ylabel(label)
            ax.legend()
        fig.tight_layout()
        fig.savefig(results_dir / "rank_ablation.png", dpi=120)
        plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 4))
    for name in names:
        if name == "bptt":
            continue
        curves = [m for _, m in runs[name]]
        length = min(len(c) for c in curves)
        x = [c["generation"] for c in curves[0][:length]]
        values = numpy.asarray([[100 * p["val_acc"] for p in c[:length]] for c in curves])
        mean, std = values.mean(0), values.std(0)
        ax.plot(x, mean, label=name)
        ax.fill_between(x, mean - std, mean + std, alpha=0.2)
    if "bptt" in runs:
        ax.axhline(mean_std([100 * f["val_acc"] for f, _ in runs["bptt"]])[0], color="black",
                   linestyle="--", label="bptt (final)")
    ax.set_xlabel("generation")
    ax.set_ylabel("validation accuracy (%)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(results_dir / "convergence.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.5))
    totals = [mean_std([f["total_seconds"] for f, _ in runs[n]]) for n in names]
    ax.bar(names, [t for t, _ in totals], yerr=[s for _, s in totals], capsize=3)
    ax.set_ylabel("training wall-clock (s)")
    fig.tight_layout()
    fig.savefig(results_dir / "wallclock.png", dpi=120)
    plt.close(fig)
