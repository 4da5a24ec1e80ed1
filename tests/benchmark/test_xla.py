"""The XLA probe: kernel rates with and without XLA, and XLA's memory plan read from its dump."""

from arena_tf.benchmark import xla


def test_kernel_rates_are_measured_with_and_without_xla():
    result = xla.measure_kernels({"matmul_sizes": [64], "repeats": 2, "batch": 1, "length": 15})
    for mode in ("tf", "xla"):
        assert result["matmul_gflops"][mode]["64"] > 0
        assert result["elementwise_ms"][mode] > 0


def test_the_plan_is_the_largest_total_among_the_dumped_reports(tmp_path):
    (tmp_path / "module_0001.step.cpu_after_optimizations-memory-usage-report.txt").write_text(
        "Total bytes used: 7778091856 (7.24GiB)\n\nAllocations sorted by size:\n"
    )
    (tmp_path / "module_0000.init.cpu_after_optimizations-memory-usage-report.txt").write_text(
        "Total bytes used: 1024 (1.0KiB)\n"
    )
    (tmp_path / "module_0001.step.cpu_after_optimizations.txt").write_text("Total bytes used: 9e9")
    assert xla.planned_bytes(tmp_path) == 7778091856
    assert xla.planned_bytes(tmp_path / "missing") is None
