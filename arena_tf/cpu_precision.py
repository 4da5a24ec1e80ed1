"""Whether this CPU computes bfloat16 natively: the avx512_bf16 or amx_bf16 flags of /proc/cpuinfo
(`python -m arena_tf.benchmark precision` names them beside its float32 / mixed_bfloat16 steps/s).
"""

import pathlib

CPUINFO = pathlib.Path("/proc/cpuinfo")
# Flags of CPUs with bfloat16 arithmetic in hardware (x86: AVX512-BF16 dot products; AMX tiles).
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def cpu_flags(cpuinfo=CPUINFO):
    """The set of the first processor's flags in /proc/cpuinfo (empty where it cannot be read)."""
    try:
        for line in pathlib.Path(cpuinfo).read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def native_bf16_flags(flags=None):
    """The NATIVE_BF16_FLAGS among `flags` (default: this CPU's), in NATIVE_BF16_FLAGS' order."""
    flags = cpu_flags() if flags is None else flags
    return [name for name in NATIVE_BF16_FLAGS if name in flags]
