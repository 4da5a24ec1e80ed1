"""Which bfloat16 flags the CPU lists, read from /proc/cpuinfo (a stand-in file here)."""

from arena_tf import cpu_precision

ZEN5 = "processor\t: 0\nflags\t\t: fpu sse2 avx2 avx512f avx512_bf16 avx512_vnni\nbugs\t: x\n"


def test_the_flags_of_the_first_processor_are_read(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(ZEN5 + "processor\t: 1\nflags\t\t: fpu amx_bf16\n")
    assert cpu_precision.cpu_flags(cpuinfo) >= {"avx2", "avx512f", "avx512_bf16"}
    assert "amx_bf16" not in cpu_precision.cpu_flags(cpuinfo)
    assert cpu_precision.cpu_flags(tmp_path / "absent") == set()


def test_native_bf16_is_avx512_bf16_or_amx_bf16():
    assert cpu_precision.native_bf16_flags({"avx512f", "avx512_bf16"}) == ["avx512_bf16"]
    assert cpu_precision.native_bf16_flags({"amx_tile", "amx_bf16", "avx512_bf16"}) == [
        "avx512_bf16", "amx_bf16"]
    assert cpu_precision.native_bf16_flags({"avx2", "avx512f"}) == []
