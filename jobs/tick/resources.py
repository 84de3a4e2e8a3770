"""The driver machine as the tick job sees it (/proc, the cgroup): CPUs, memory, peak RSS."""
from __future__ import annotations

import os
import sys
from typing import Optional

try:
    import resource as _resource  # the driver's peak memory (Unix only)
except ImportError:
    _resource = None


class Timer:
    """Wall-clock seconds per phase of a tick (reported in the summary: where the time goes),
    and the driver's peak resident memory during the tick after each phase (where the memory
    goes): Linux's VmHWM, reset when the tick starts, so a process that runs many ticks
    reports each tick's own peak; elsewhere the process's ru_maxrss."""

    def __init__(self):
        import time

        self._now = time.perf_counter
        self.t = self._now()
        self.phases: dict[str, float] = {}
        self.peaks: dict[str, float] = {}
        self._hwm = _reset_peak()

    def lap(self, name: str) -> None:
        t = self._now()
        self.phases[name] = round(self.phases.get(name, 0.0) + t - self.t, 4)
        self.t = t
        gb = _peak_gb(self._hwm)
        if gb is not None:
            self.peaks[name] = gb


def usable_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, e.g. `taskset`), else all."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux ≥ 4.0); False elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_gb(hwm: bool) -> Optional[float]:
    """The driver's peak resident memory in GiB: VmHWM since _reset_peak, or ru_maxrss."""
    if hwm:
        try:
            with open("/proc/self/status") as fh:
                for line in fh:
                    if line.startswith("VmHWM:"):
                        return round(int(line.split()[1]) / 2**20, 2)
        except OSError:
            pass
    if _resource is None:
        return None
    kb = _resource.getrusage(_resource.RUSAGE_SELF).ru_maxrss  # KiB (bytes on macOS)
    return round(kb / (2**30 if sys.platform == "darwin" else 2**20), 2)


def available_memory() -> Optional[int]:
    """Bytes this process may still allocate: MemAvailable, capped by the cgroup's limit
    (a container's memory.max less what the cgroup uses); None where neither is known."""
    avail = None
    try:
        with open("/proc/meminfo") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    try:
        with open("/sys/fs/cgroup/memory.max") as fh:
            lim = fh.read().strip()
        if lim != "max":
            with open("/sys/fs/cgroup/memory.current") as fh:
                free = int(lim) - int(fh.read().strip())
            avail = free if avail is None else min(avail, free)
    except (OSError, ValueError):
        pass
    return avail
