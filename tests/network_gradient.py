"""The step g of the spiking network's population in the form of baselines.full_rank_gradient, so
that the tests can hold EGGROLL's and vanilla ES's estimators side by side."""
import eggroll


def network_gradient(f, params, config, generation, pairs=slice(None)):
    """eggroll.gradient of the pairs in the slice `pairs` of config's population at `generation`."""
    return eggroll.gradient(f, config.members(params, generation, pairs), config.pairs)
