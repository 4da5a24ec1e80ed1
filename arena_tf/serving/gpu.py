"""NVIDIA GPUs through NVML (pynvml, optional): presence, energy counters, peak memory of a process.

ok, reason = gpu.available()          # (False, 'pynvml is not installed ...') on this machine
sampler = gpu.MemorySampler(pid).start(); ...; peak_bytes, note = sampler.stop()
"""

import os
import threading


class GpuUnavailable(RuntimeError):
    """No usable NVIDIA GPU or NVML; the message says why."""


def nvml():
    """The initialised pynvml module; GpuUnavailable saying why not."""
    try:
        import pynvml
    except ImportError:
        raise GpuUnavailable("pynvml is not installed (pip install nvidia-ml-py)") from None
    try:
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
    except pynvml.NVMLError as error:
        raise GpuUnavailable(f"NVML found no NVIDIA driver or GPU ({error})") from None
    if not count:
        raise GpuUnavailable("NVML sees no GPU")
    return pynvml


def handles():
    lib = nvml()
    return lib, [lib.nvmlDeviceGetHandleByIndex(i) for i in range(lib.nvmlDeviceGetCount())]


def available():
    """(True, '') when an NVIDIA GPU is visible, else (False, why)."""
    try:
        nvml()
        return True, ""
    except GpuUnavailable as error:
        if os.path.exists("/dev/nvidia0"):
            return True, f"/dev/nvidia0 exists but NVML is unusable: {error}"
        return False, f"no NVIDIA GPU is visible: {error}; no /dev/nvidia0"


def energy_millijoules():
    """Total energy counters of every GPU since driver load (mJ); GpuUnavailable if unsupported."""
    lib, devices = handles()
    try:
        return sum(lib.nvmlDeviceGetTotalEnergyConsumption(h) for h in devices)
    except lib.NVMLError as error:
        raise GpuUnavailable(f"NVML cannot read GPU energy counters ({error})") from None


class MemorySampler:
    """Samples the GPU memory used by process `pid` (every `interval` s) in a thread; `stop()`
    returns (peak bytes or None, note)."""

    def __init__(self, pid, interval=0.05):
        self.pid = pid
        self.interval = interval
        self.peak = None
        self.note = ""
        self._stop = threading.Event()
        self._thread = None

    def start(self):
        try:
            self.lib, self.devices = handles()
        except GpuUnavailable as error:
            self.note = str(error)
            return self
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()
        return self

    def _run(self):
        while not self._stop.wait(self.interval):
            self.sample()

    def sample(self):
        used = 0
        for handle in self.devices:
            for process in self.lib.nvmlDeviceGetComputeRunningProcesses(handle):
                if process.pid == self.pid and process.usedGpuMemory:
                    used += process.usedGpuMemory
        self.peak = max(self.peak or 0, used)

    def stop(self):
        if self._thread is not None:
            self._stop.set()
            self._thread.join()
            self.sample()
        if self.peak is None and not self.note:
            self.note = "NVML reported no GPU memory for the model process"
        return self.peak, self.note
