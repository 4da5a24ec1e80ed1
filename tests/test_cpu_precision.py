"""Which of the CPU's flags (arena_tf/host.py, tests/test_host.py) say it computes bfloat16."""

from arena_tf import cpu_precision


def test_native_bf16_is_avx512_bf16_or_amx_bf16():
    assert cpu_precision.native_bf16_flags({"avx512f", "avx512_bf16"}) == ["avx512_bf16"]
    assert cpu_precision.native_bf16_flags({"amx_tile", "amx_bf16", "avx512_bf16"}) == [
        "avx512_bf16",
        "amx_bf16",
    ]
    assert cpu_precision.native_bf16_flags({"avx2", "avx512f"}) == []
