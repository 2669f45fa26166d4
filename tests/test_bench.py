"""The benchmark at a small size: every method runs and reports time and memory, and the FLOP and
noise-memory counts follow the method's arithmetic."""
import bench
import config
import snn


def test_bench_measures_every_method_at_a_small_size(monkeypatch):
    """bench_method runs each method's generation and reports positive seconds and memory; the
    noise memory of EGGROLL relative to ES follows r (m + n) / (m n) of the dominant layer."""
    monkeypatch.setitem(bench.REFERENCE, "batch", 8)
    monkeypatch.setitem(bench.REFERENCE, "time_bins", 3)
    for method, rank in bench.BENCH_METHODS:
        result = bench.bench_method(method, rank, "cpu", repeats=1, pairs=4)
        assert result["seconds"] > 0 and result["peak_rss_bytes"] > 0, method
        if method == "eggroll":
            assert result["forward_seconds"] > 0 and result["population_product_seconds"] > 0
    stages = bench.bench_kernels("cpu", repeats=1, pairs=4)  # on a CPU both columns run the NumPy code
    assert len(stages) >= 5 and all(t["kernel"] > 0 and t["numpy_twin"] > 0 for t in stages.values())
    n, h, _ = snn.SIZES
    for rank in config.RANKS:
        ratio = bench.noise_bytes("eggroll", rank) / bench.noise_bytes("es-batched", None)
        assert abs(ratio / (rank * (n + h) / (n * h)) - 1) < 0.1  # biases and layer 2 add a few %
    assert bench.flops_per_generation("eggroll", 1) < bench.flops_per_generation("eggroll", 8) \
        < bench.flops_per_generation("es-batched", None)
