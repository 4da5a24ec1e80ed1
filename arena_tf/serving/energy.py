"""Energy of a measurement window in W.h, from a sensor where one is readable, else an estimate.

Sources, in order: NVML GPU energy counters (on --device gpu) and RAPL package counters
(/sys/class/powercap/intel-rapl:N/energy_uj, where readable) are measurements and add up; when
neither is readable, codecarbon's offline tracker (if installed) gives an estimate, labelled
"estimated"; when nothing is available the energy is None and the note says why. No number is
ever made up. As a sensor counts the whole package or GPU, other work on the machine is included
and idle power is not subtracted (Pentathlon subtracts it using a wall power meter).

    meter = EnergyMeter(device="cpu").start()
    ...                                     # the timed work
    reading = meter.stop()                  # Reading(wh=..., source="rapl", estimated=False, note)
"""

import dataclasses
import logging
import pathlib

from arena_tf.serving import gpu

RAPL_ROOT = pathlib.Path("/sys/class/powercap")


@dataclasses.dataclass
class Reading:
    wh: float
    source: str
    estimated: bool
    note: str


class Unavailable(RuntimeError):
    """This source cannot measure here; the message says why."""


class Rapl:
    """CPU package energy from the Linux powercap RAPL counters (wraparound handled)."""

    name = "rapl"
    estimated = False

    def __init__(self, root=RAPL_ROOT):
        self.root = pathlib.Path(root)
        self.zones = sorted(p for p in self.root.glob("intel-rapl:*") if p.name.count(":") == 1)
        if not self.zones:
            raise Unavailable(f"RAPL: no {self.root}/intel-rapl:N (not exposed on this machine)")
        try:
            self.ranges = [int((z / "max_energy_range_uj").read_text()) for z in self.zones]
            self.read()
        except OSError as error:
            raise Unavailable(
                f"RAPL: counters not readable ({error.strerror}; needs root)"
            ) from None

    def read(self):
        return [int((z / "energy_uj").read_text()) for z in self.zones]

    def start(self):
        self.first = self.read()

    def stop(self):
        deltas = [(b - a) % (r + 1) for a, b, r in zip(self.first, self.read(), self.ranges)]
        return sum(deltas) / 1e6 / 3600  # uJ -> W.h


class Nvml:
    """GPU energy from NVML's total energy counters (mJ since driver load)."""

    name = "nvml"
    estimated = False

    def __init__(self):
        try:
            gpu.energy_millijoules()
        except gpu.GpuUnavailable as error:
            raise Unavailable(f"NVML: {error}") from None

    def start(self):
        self.first = gpu.energy_millijoules()

    def stop(self):
        return (gpu.energy_millijoules() - self.first) / 1e3 / 3600  # mJ -> W.h


class Codecarbon:
    """codecarbon's offline tracker for the whole machine: an estimate (from CPU TDP and load
    where no sensor is readable), never a measurement."""

    name = "codecarbon"
    estimated = True

    def __init__(self):
        try:
            from codecarbon import OfflineEmissionsTracker
        except ImportError:
            raise Unavailable("codecarbon: not installed (pip install codecarbon)") from None
        logging.getLogger("codecarbon").setLevel(logging.ERROR)
        # Built here, not in start(): its first construction takes seconds. The country only
        # matters for emissions; only the energy is read.
        self.tracker = OfflineEmissionsTracker(
            country_iso_code="USA", save_to_file=False, log_level="error", tracking_mode="machine"
        )

    def start(self):
        self.tracker.start()

    def stop(self):
        self.tracker.stop()
        return float(self.tracker.final_emissions_data.energy_consumed) * 1000  # kWh -> W.h


def open_sources(factories):
    """(the sources that can measure here, the reasons of those that cannot)."""
    sources, reasons = [], []
    for factory in factories:
        try:
            sources.append(factory())
        except Unavailable as error:
            reasons.append(str(error))
    return sources, reasons


class EnergyMeter:
    """One measurement window over the best sources available for `device`."""

    def __init__(self, device="cpu", measured=None, estimators=(Codecarbon,)):
        measured = (
            measured if measured is not None else ((Nvml, Rapl) if device == "gpu" else (Rapl,))
        )
        self.sources, self.reasons = open_sources(measured)
        if not self.sources:
            self.sources, more = open_sources(estimators)
            self.reasons += more

    def start(self):
        for source in self.sources:
            source.start()
        return self

    def stop(self):
        """The window's Reading: wh None (with every reason) when no source could measure."""
        if not self.sources:
            return Reading(None, None, False, "; ".join(self.reasons))
        wh = sum(source.stop() for source in self.sources)
        estimated = any(source.estimated for source in self.sources)
        label = "+".join(source.name for source in self.sources)
        note = "; ".join(self.reasons)
        if estimated:
            note = f"estimated by {label}, no sensor readable: {note}"
        return Reading(wh, f"{label} (estimated)" if estimated else label, estimated, note)
