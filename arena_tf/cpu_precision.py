"""Whether this CPU computes bfloat16 natively: the avx512_bf16 or amx_bf16 flags of /proc/cpuinfo
(`python -m arena_tf.benchmark precision` names them beside its float32 / mixed_bfloat16 steps/s).
"""

from arena_tf.host import cpu_flags

# Flags of CPUs with bfloat16 arithmetic in hardware (x86: AVX512-BF16 dot products; AMX tiles).
NATIVE_BF16_FLAGS = ("avx512_bf16", "amx_bf16")


def native_bf16_flags(flags=None):
    """The NATIVE_BF16_FLAGS among `flags` (default: this CPU's), in NATIVE_BF16_FLAGS' order."""
    flags = cpu_flags() if flags is None else flags
    return [name for name in NATIVE_BF16_FLAGS if name in flags]
