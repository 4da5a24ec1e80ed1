"""How results name the CPU, read from /proc/cpuinfo (stand-in files here): the maker's model name
alone ('AMD EPYC' under a virtual machine) cannot tell a Zen 1 from a Zen 4 apart."""

from arena_tf import host

ZEN1 = (
    "processor\t: 0\nvendor_id\t: AuthenticAMD\ncpu family\t: 23\nmodel\t\t: 1\n"
    "model name\t: AMD EPYC\nflags\t\t: fpu sse2 fma avx2\n\n"
)
ZEN4 = (
    "processor\t: 0\ncpu family\t: 25\nmodel\t\t: 17\nmodel name\t: AMD EPYC\n"
    "flags\t\t: fpu avx2 avx512f avx512_bf16\n\n"
)
ARM = (
    "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd sve\nCPU implementer\t: 0x41\n"
    "CPU part\t: 0xd0c\n\n"
)


def cpuinfo(tmp_path, text):
    path = tmp_path / "cpuinfo"
    path.write_text(text)
    return path


def test_the_model_name_carries_family_model_and_widest_vector_unit(tmp_path):
    assert host.cpu_model(cpuinfo(tmp_path, ZEN1)) == "AMD EPYC (family 23 model 1, AVX2)"
    assert host.cpu_model(cpuinfo(tmp_path, ZEN4)) == (
        "AMD EPYC (family 25 model 17, AVX-512 BF16)"
    )


def test_the_first_processor_alone_is_read(tmp_path):
    path = cpuinfo(tmp_path, ZEN1 + ZEN4.replace("processor\t: 0", "processor\t: 1"))
    assert host.first_processor(path)["cpu family"] == "23"
    assert host.cpu_flags(path) == {"fpu", "sse2", "fma", "avx2"}


def test_a_cpu_without_a_model_name_is_named_by_the_platform_and_its_part(tmp_path, monkeypatch):
    monkeypatch.setattr(host.platform, "processor", lambda: "aarch64")
    assert host.cpu_flags(cpuinfo(tmp_path, ARM)) == {"fp", "asimd", "sve"}
    assert host.cpu_model(cpuinfo(tmp_path, ARM)) == "aarch64 (implementer 0x41 part 0xd0c, SVE)"
    assert host.cpu_model(tmp_path / "absent") == "aarch64"
    assert host.cpu_flags(tmp_path / "absent") == set()
