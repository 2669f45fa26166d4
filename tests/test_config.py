"""config.py: one RunConfig makes the method configurations and the stored config.json, stored
runs of earlier versions read as the same runs, and the presets go from general to specific."""
import argparse
import dataclasses

import pytest

import config
import exits
from run import add_config_options, config_from_options


def test_method_configurations_carry_the_run_settings():
    run = config.RunConfig(population=64, rank=2, sigma=0.3, seed=7, logit_scale=5.0, lr=0.02,
                           weight_decay=0.1, lr_schedule="cosine", es_mode="sequential", slope=1.0)
    egg = run.eggroll()
    assert (egg.population, egg.rank, egg.sigma, egg.seed, egg.logit_scale) == (64, 2, 0.3, 7, 5.0)
    es = run.es()
    assert (es.population, es.sigma, es.seed, es.logit_scale, es.mode) == (64, 0.3, 7, 5.0, "sequential")
    assert (run.bptt().slope, run.bptt().logit_scale) == (1.0, 5.0)
    priced = config.RunConfig(spike_cost=0.003)
    assert priced.eggroll().spike_cost == priced.es().spike_cost == priced.bptt().spike_cost == 0.003
    assert run.eggroll().spike_cost == run.es().spike_cost == run.bptt().spike_cost == 0.0
    assert run.adam(0, 10).lr == 0.02 and run.adam(5, 10).lr == pytest.approx(0.01)
    assert run.adam(0, 10).weight_decay == 0.1


def test_stored_holds_only_what_the_method_uses():
    assert "rank" in config.stored(config.RunConfig(method="eggroll"))
    es = config.stored(config.RunConfig(method="es"))
    assert "rank" not in es and "es_mode" in es and "epochs" not in es and "slope" not in es
    bptt = config.stored(config.RunConfig(method="bptt"))
    assert {"epochs", "slope"} <= set(bptt) and not {"generations", "population", "sigma", "eval_every"} & set(bptt)
    assert not {"device", "data_root", "cache_dir", "download"} & set(es)


def test_a_config_json_of_an_earlier_version_reads_as_the_same_run():
    """Earlier versions stored every setting, BPTT's epochs as "generations", and lacked settings
    added since (max_shift): the stored run equals the run of today's options."""
    old_bptt = dict(method="bptt", rank=4, es_mode="batched", seed=2, generations=60, population=512,
                    batch_size=256, sigma=0.1, lr=0.02, lr_schedule="cosine", logit_scale=10.0,
                    weight_decay=0.1, init_std=0.3, beta=0.9, threshold=1.0, time_bins=10, slope=1.0,
                    eval_every=100)
    today = config.RunConfig(method="bptt", seed=2, epochs=60, lr=0.02, lr_schedule="cosine", logit_scale=10.0,
                             weight_decay=0.1, slope=1.0)
    assert config.stored(config.from_stored(old_bptt)) == config.stored(today)
    old_es = {**old_bptt, "method": "es", "generations": 800, "slope": 25.0}
    assert config.stored(config.from_stored(old_es)) == config.stored(
        config.RunConfig(method="es", seed=2, generations=800, lr=0.02, lr_schedule="cosine", logit_scale=10.0,
                         weight_decay=0.1, eval_every=100))


@pytest.mark.parametrize("changes, message", [
    (dict(seed=-1), "--seed must lie in 0..2^63-1, got -1: use e.g. --seed 1"),
    (dict(max_shift=34), "--max-shift must lie in 0..33, got 34"),
    (dict(lr=0.0), "--lr must lie in (0, 1], got 0.0: use e.g. --lr 0.01"),
    (dict(lr=float("nan")), "--lr must lie in (0, 1], got nan"),
    (dict(sigma=float("inf")), "--sigma must lie in [1e-06, 10], got inf"),
    (dict(beta=1.5), "--beta must lie in [0.0, 1.0], got 1.5"),
    (dict(population=7), "--population must be an even number >= 2 (P antithetic pairs), got 7"),
    (dict(generations=0), "--generations must lie in 1..1000000000, got 0"),
    (dict(generations=10 ** 23), "--generations must lie in 1..1000000000, got 100000000000000000000000"),
    (dict(method="bptt", epochs=0), "--epochs must lie in 1..1000000000, got 0"),
    (dict(spike_cost=-0.001), "--spike-cost must lie in [0.0, 1.0], got -0.001: use e.g. --spike-cost 0.003"),
    (dict(method="bptt", spike_cost=1.5), "--spike-cost must lie in [0.0, 1.0], got 1.5"),
    (dict(inner_scale=0.0), "--inner-scale must lie in (0, 100], got 0.0: use e.g. --inner-scale 0.1"),
    (dict(rank=100), "--rank 100 exceeds the smaller side of W2 (10x64) of the network 2312-64-10: use --rank <= 10"),
    (dict(rank=5, hidden="conv4k5s3,32"), "--rank 5 exceeds the smaller side of W1 (4x50) of the network "
                                          "2312-conv4k5s3-32-10: use --rank <= 4"),
    (dict(hidden="conv2k34"), "--rank 4 (the default) exceeds the smaller side of W1 (2x2312) of the network "
                              "2312-conv2k34-10: use --rank <= 2"),  # a rank no option gave is named as the default
])
def test_check_names_the_option_the_rule_and_an_example(changes, message):
    with pytest.raises(ValueError) as error:
        config.check(config.RunConfig(**changes))
    assert message in str(error.value)


def test_the_readout_scale_is_taken_from_its_lowest_value_up():
    """--logit-scale's range is closed at 0.001 (what --help states): 0.001 is taken, anything below
    refused, 1000 taken."""
    for scale in (0.001, 1000.0):
        config.check(config.RunConfig(logit_scale=scale))
    with pytest.raises(ValueError, match=r"--logit-scale must lie in \[0\.001, 1000\], got 0\.0009"):
        config.check(config.RunConfig(logit_scale=0.0009))


@pytest.mark.parametrize("values, message", [
    (dict(method="eggroll", seed="1"), 'seed must be an integer, got "1"'),
    (dict(method="eggroll", seed=1.0), "seed must be an integer, got 1.0"),
    (dict(method="eggroll", rank=True), "rank must be an integer, got true"),
    (dict(method="es", sigma=None), "sigma must be a number, got null"),
    (dict(method="es", es_mode="parallel"), 'es_mode must be one of batched, sequential, got "parallel"'),
    (dict(method="bptt", epochs=0), "epochs must lie in 1..1000000000, got 0"),
    (dict(method="bptt", generations=0), "epochs must lie in 1..1000000000, got 0"),  # a BPTT run stored before epochs existed
    (dict(method="eggroll", lr=float("nan")), "lr must lie in (0, 1], got nan"),
])
def test_a_stored_setting_is_checked_by_the_rules_of_its_option(values, message):
    with pytest.raises(ValueError) as error:
        config.from_stored(values)
    assert str(error.value) == message


def test_a_stored_network_is_read_as_the_option_stores_it():
    """config.json's "hidden": "064" (edited by hand) is the run's 64, and 128,064 its 128,64: the
    same stored settings as the option gives, so no check calls it another run's."""
    for typed, stored in (("064", "64"), ("128,064", "128,64"), ("conv08k5s2,32", "conv8k5s2,32")):
        assert config.stored(config.from_stored(dict(method="eggroll", hidden=typed))) == \
            config.stored(config.RunConfig(hidden=stored))


def test_a_stored_setting_the_method_ignores_is_checked_for_its_type_only():
    assert config.from_stored(dict(method="es", rank=0)).rank == 0
    with pytest.raises(ValueError, match='rank must be an integer, got "4"'):
        config.from_stored(dict(method="es", rank="4"))
    beta = config.from_stored(dict(method="eggroll", beta=1)).beta
    assert beta == 1.0 and isinstance(beta, float)


def test_check_ignores_settings_the_method_does_not_use():
    config.check(config.RunConfig(method="bptt", generations=0))
    config.check(config.RunConfig(method="es", rank=100))
    config.check(config.RunConfig(rank=10))  # the paper's network: at most its 10 outputs
    config.check(config.RunConfig(method="eggroll", epochs=0))


def test_preset_settings_go_from_common_to_method_to_run(monkeypatch):
    monkeypatch.setitem(config.PRESETS, "quick", {"common": dict(generations=5, sigma=0.2),
                                                  "eggroll": dict(generations=7), "eggroll-r2": dict(generations=9),
                                                  "es": dict(sigma=0.1)})
    runs = {(c.name, c.seed): c for c in config.preset_runs("quick")}
    assert runs["eggroll-r1", 1].generations == 7 and runs["eggroll-r2", 3].generations == 9
    assert runs["es", 2].generations == 5 and runs["es", 2].sigma == 0.1
    assert runs["eggroll-r2", 1].sigma == 0.2 and runs["eggroll-r2", 1].rank == 2
    assert len(runs) == len(config.SEEDS) * (2 + len(config.RANKS))


def test_hyperscale_parts_hold_the_runs_they_promise():
    protocol, budget, headline = (config.hyperscale_runs(part) for part in ("protocol", "budget", "headline"))
    count = lambda runs, name, members: sum(c.name == name and c.population == members for c in runs)
    assert len(protocol) == 5 * 3 * 3 + 4 * 3 == 57
    assert all(count(protocol, name, m) == 3 for name in ["es"] + [f"eggroll-r{r}" for r in config.RANKS]
               for m in (512, 2048, 8192))
    assert count(protocol, "es", 32768) == 0 and count(protocol, "eggroll-r8", 32768) == 3
    assert len(budget) == 8 + 8 + 5 == 21 and {c.seed for c in budget} == {1}
    assert sorted(c.population for c in budget if c.name == "eggroll-r4") == [2 ** k for k in range(9, 17)]
    assert sorted(c.population for c in budget if c.name == "es") == [2 ** k for k in range(9, 14)]
    assert sorted((c.name, c.population, c.seed) for c in headline) == \
        [("eggroll-r1", 65536, s) for s in (1, 2, 3)] + [("es", 4096, s) for s in (1, 2, 3)]
    for runs in (protocol, budget, headline):
        names = [config.run_folder_name(c, "hyperscale") for c in runs]
        assert len(set(names)) == len(names)
    assert config.run_folder_name(protocol[2], "hyperscale") == "eggroll-r4-m512-seed1"


def test_hyperscale_settings_are_the_paper_protocol_the_best_recipe_and_the_headline():
    paper = dict(generations=100, batch_size=256, eval_every=10, lr=0.1, lr_schedule="constant", logit_scale=1.0,
                 sigma=0.2)
    for run in config.hyperscale_runs("protocol"):
        assert {k: getattr(run, k) for k in paper} == paper
    recipe = dict(generations=1000, batch_size=256, eval_every=100, lr=0.03, lr_schedule="cosine", logit_scale=5.0)
    for run in config.hyperscale_runs("budget"):
        assert {k: getattr(run, k) for k in recipe} == recipe and run.sigma == (0.1 if run.method == "es" else 0.2)
    headline = dict(generations=3000, batch_size=256, eval_every=250, lr=0.03, lr_schedule="cosine", logit_scale=5.0)
    for run in config.hyperscale_runs("headline"):
        assert {k: getattr(run, k) for k in headline} == headline
        assert run.name in ("eggroll-r1", "es") and run.sigma == (0.1 if run.method == "es" else 0.2)
    for part in config.HYPERSCALE:
        for run in config.hyperscale_runs(part):
            config.check(run)


def test_hyperscale_runs_come_cheap_first_and_the_headline_seed_by_seed():
    """Population ascending, then seed, then method with vanilla ES (full-rank, the dearest) last;
    the headline's EGGROLL and ES runs of seed 1 first, then seed 2's, then seed 3's."""
    methods = ["eggroll-r1", "eggroll-r2", "eggroll-r4", "eggroll-r8", "es"]
    for part in ("protocol", "budget"):
        keys = [(c.population, c.seed, methods.index(c.name)) for c in config.hyperscale_runs(part)]
        assert keys == sorted(keys), part
    assert [(c.seed, c.name) for c in config.hyperscale_runs("headline")] == \
        [(seed, name) for seed in (1, 2, 3) for name in ("eggroll-r1", "es")]
    protocol = config.hyperscale_runs("protocol")
    assert [config.run_folder_name(c, "hyperscale") for c in protocol[:6]] == \
        ["eggroll-r1-m512-seed1", "eggroll-r2-m512-seed1", "eggroll-r4-m512-seed1", "eggroll-r8-m512-seed1",
         "es-m512-seed1", "eggroll-r1-m512-seed2"]


def test_the_other_presets_keep_their_folder_names():
    assert [config.run_folder_name(c) for c in config.preset_runs("paper")[:3]] == \
        ["bptt-seed1", "es-seed1", "eggroll-r1-seed1"]


def test_the_spike_cost_preset_prices_the_paper_runs_and_a_pair_at_matched_accuracy():
    """Every seed x cost x (BPTT, EGGROLL r = 4) of the paper preset, seed by seed, then at each
    matched cost (seed 1) BPTT stopped after 2 epochs and EGGROLL r = 4 with the best preset's
    recipe; each run is its preset's run with the spike cost (and BPTT's epochs) changed, so the
    runs at cost 0 are those presets' own."""
    runs = config.spike_cost_runs()
    paper = {(c.name, c.seed): c for c in config.preset_runs("paper")}
    best = {(c.name, c.seed): c for c in config.preset_runs("best")}
    matched = 2 * len(config.MATCHED_COSTS)
    sweep, pairs = runs[:-matched], runs[-matched:]
    assert len(sweep) == len(config.SEEDS) * len(config.SPIKE_COSTS) * 2 and len(config.SPIKE_COSTS) >= 4
    assert [c.seed for c in sweep] == sorted(c.seed for c in sweep)
    for run in sweep:
        assert run.name in ("bptt", "eggroll-r4")
        assert run == dataclasses.replace(paper[run.name, run.seed], spike_cost=run.spike_cost)
    for bptt, eggroll, cost in zip(pairs[0::2], pairs[1::2], config.MATCHED_COSTS):
        assert bptt == dataclasses.replace(paper["bptt", 1], epochs=2, spike_cost=cost)
        assert eggroll == dataclasses.replace(best["eggroll-r4", 1], spike_cost=cost)
    for run in runs:
        config.check(run)
    assert {c.spike_cost for c in sweep} == set(config.SPIKE_COSTS) and 0.0 in config.SPIKE_COSTS
    assert 0.0 in config.MATCHED_COSTS
    names = [config.run_folder_name(c, "spike-cost") for c in runs]
    assert len(set(names)) == len(names)
    assert names[:4] == ["bptt-e5-cost0-seed1", "eggroll-r4-g100-cost0-seed1", "bptt-e5-cost0.0003-seed1",
                         "eggroll-r4-g100-cost0.0003-seed1"]
    assert names[-2:] == [f"bptt-e2-cost{config.MATCHED_COSTS[-1]:g}-seed1",
                          f"eggroll-r4-g4000-cost{config.MATCHED_COSTS[-1]:g}-seed1"]
    assert config.run_label(pairs[-1], "spike-cost") == \
        f"eggroll-r4 seed 1, 4000 generations, spike cost {config.MATCHED_COSTS[-1]:g}"
    assert config.run_label(sweep[0]) == "bptt seed 1"
    assert [config.run_length(c) for c in (sweep[0], sweep[1], pairs[0], pairs[1])] == \
        ["5 epochs", "100 generations", "2 epochs", "4000 generations"]


@pytest.mark.parametrize("typed, stored", [("064", None), ("0128,064", "128,64"), ("conv08k5s2", "conv8k5s2")])
def test_a_hidden_value_is_stored_as_the_network_writes_it(typed, stored):
    """--hidden 064 is the paper's network (stored as no setting at all), 0128,064 the run 128,64:
    one network, one config.json, so a run is never "other settings" for how its width was typed."""
    parser = exits.Parser(prog="run.py")
    add_config_options(parser)
    given = config_from_options(parser.parse_args(["--method", "eggroll", "--hidden", typed]))
    assert config.stored(given).get("hidden") == stored


def test_a_bptt_config_json_holding_epochs_keeps_them_beside_any_generations():
    """Only a BPTT config.json without `epochs` gave them as `generations`: one that holds both
    (every setting stored, generations at its default) is read with its own epochs."""
    stored = {"method": "bptt", "epochs": 60, "generations": 100, "seed": 2}
    assert config.from_stored(stored).epochs == 60
    assert config.from_stored({"method": "bptt", "generations": 60}).epochs == 60


# A lever is stored in config.json only away from its default, so its default is part of every run
# folder written before: a run trained with --sigma-schedule cosine at the default --sigma-min holds
# no sigma_min, and reads back with whatever the default is now.
LEVER_DEFAULTS = {"sigma_schedule": "constant", "sigma_min": 0.02, "output_sigma_scale": 1.0, "inner_scale": 1.0,
                  "batch_growth": 1, "hidden": "64", "readout": "rate", "init_rule": "paper"}


def test_a_levers_default_is_the_one_earlier_run_folders_were_written_with():
    levers = {spec.name: spec.default for spec in dataclasses.fields(config.RunConfig) if spec.metadata["lever"]}
    assert levers == LEVER_DEFAULTS


def test_a_config_json_without_sigma_min_reads_as_the_run_it_trained():
    stored = {"method": "eggroll", "sigma_schedule": "cosine", "sigma": 0.2}
    run = config.from_stored(stored)
    assert run.sigma_at(1, 1) == 0.02


@pytest.mark.parametrize("low, high, open_low, inside, outside, said", [
    (0, 1, True, [1, 0.5, 1e-300], [0, 1.0000001, -1, float("nan"), float("inf")], "must lie in (0, 1]"),
    (1e-6, 10, False, [1e-6, 10, 0.3], [1e-7, 10.5, float("nan")], "must lie in [1e-06, 10]"),
    (1, 64, False, [1, 64], [0, 65], "must lie in 1..64")])
def test_a_range_holds_its_ends_as_it_says(low, high, open_low, inside, outside, said):
    """between's ranges: an open lower end excludes only that end, the upper end is always in, NaN and
    inf are never in; the words say the same."""
    check, text, _ = config.between(low, high, "1", open_low=open_low)
    assert all(check(value) for value in inside) and not any(check(value) for value in outside)
    assert text == said


def test_a_scripts_empty_hidden_option_is_named_as_empty():
    """The examples' --hidden "": the layers it expects, not "layer '' is neither a width" behind a
    stray colon; a value it takes comes back as run.py stores it."""
    with pytest.raises(argparse.ArgumentTypeError) as caught:
        config.hidden_option("")
    assert str(caught.value) == ("expected hidden layers separated by commas, each a width or convCkK[sS][pP] "
                                 "(e.g. 64 or conv8k5s2,64), got ''")
    assert config.hidden_option("conv8k5s2,064") == "conv8k5s2,64"
