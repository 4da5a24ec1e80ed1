"""The machine this process runs on, as reports name it: the CPU's model name, family and model,
and its widest vector unit, read from /proc/cpuinfo."""

import pathlib
import platform

CPUINFO = pathlib.Path("/proc/cpuinfo")
# The vector units a CPU's flags name, widest first (x86, then Arm).
VECTOR_UNITS = (
    ("amx_bf16", "AMX-BF16"),
    ("avx512_bf16", "AVX-512 BF16"),
    ("avx512f", "AVX-512"),
    ("avx2", "AVX2"),
    ("sve2", "SVE2"),
    ("sve", "SVE"),
    ("asimd", "NEON"),
)
# What tells CPUs of one model name apart (x86: family and model; Arm: designer and part).
IDENTIFIERS = (
    ("cpu family", "family"),
    ("model", "model"),
    ("CPU implementer", "implementer"),
    ("CPU part", "part"),
)


def first_processor(cpuinfo=CPUINFO):
    """{field: value} of the first processor in `cpuinfo` (empty where it cannot be read)."""
    try:
        text = pathlib.Path(cpuinfo).read_text()
    except OSError:
        return {}
    fields = {}
    for line in text.splitlines():
        key, colon, value = line.partition(":")
        if not colon:  # the blank line after the first processor
            if fields:
                break
            continue
        fields.setdefault(key.strip(), value.strip())
    return fields


def flags_of(fields):
    """The set of flags among first_processor's `fields` (x86 'flags', Arm 'Features')."""
    return set(fields.get("flags", fields.get("Features", "")).split())


def cpu_flags(cpuinfo=CPUINFO):
    """The set of the first processor's flags; empty where `cpuinfo` cannot be read."""
    return flags_of(first_processor(cpuinfo))


def cpu_model(cpuinfo=CPUINFO):
    """The CPU's model name (the platform's processor string where /proc/cpuinfo has none), with
    its family and model (Arm: implementer and part) and widest vector unit where known: a
    virtual machine may name only the maker ('AMD EPYC'), the same for a Zen 1 with AVX2 as for a
    Zen 4 with AVX-512 BF16."""
    fields = first_processor(cpuinfo)
    name = fields.get("model name") or platform.processor() or "unknown"
    identity = " ".join(f"{label} {fields[key]}" for key, label in IDENTIFIERS if fields.get(key))
    flags = flags_of(fields)
    unit = [label for flag, label in VECTOR_UNITS if flag in flags][:1]
    details = ([identity] if identity else []) + unit
    return f"{name} ({', '.join(details)})" if details else name
