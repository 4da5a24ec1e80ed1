"""The machine this process runs on, as reports name it (the CPU's model)."""

import pathlib
import platform

CPUINFO = pathlib.Path("/proc/cpuinfo")


def cpu_model(cpuinfo=CPUINFO):
    """The CPU's model name from /proc/cpuinfo (the platform's processor string elsewhere)."""
    try:
        for line in pathlib.Path(cpuinfo).read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
