"""What this process may use: how much more memory (its container's limit, cgroup v2 or v1,
less its usage, never more than the machine has available), and how many CPUs (those it may
run on, fewer under a CPU quota such as ``docker run --cpus 1``).

Memory is read before the in-memory index loads: a container killed for memory while loading
restarts, loads and is killed again, saying nothing a user can act on.
"""

from __future__ import annotations

import os
from pathlib import Path

_CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 writes "no limit" as a huge number (the largest page-aligned 64-bit value).
_NO_LIMIT_V1 = 1 << 60


def available_memory() -> int | None:
    """Bytes this process can still allocate before the kernel refuses or kills it, as far as
    Linux says; None where it says nothing (not Linux)."""
    found = [value for value in (_cgroup_room(), _machine_available()) if value is not None]
    return min(found) if found else None


def available_cpus() -> float:
    """How many CPUs this process can keep busy at once: those it may run on, fewer if its
    cgroup's CPU quota allows less time (``--cpus 1`` gives 1.0 however many cores it sees)."""
    cpus = float(len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    quota = _cpu_quota()
    return cpus if quota is None else min(cpus, quota)


def cap_blas_threads() -> None:
    """Let numpy's BLAS run at most as many threads as this process has CPUs (for servers:
    the limit is process-wide). OpenBLAS starts a thread per core whatever the CPU quota, and
    threads beyond the CPU time at hand stall queries (see docs/performance.md, "BLAS threads")."""
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=max(1, int(available_cpus())), user_api="blas")


def _cgroup_room() -> int | None:
    for folder in _cgroup_folders("memory"):
        for limit_file, usage_file in _MEMORY_FILES:
            limit, usage = _read_number(folder / limit_file), _read_number(folder / usage_file)
            if limit is not None and usage is not None and limit < _NO_LIMIT_V1:
                return max(limit - usage, 0)
    return None


# The limit and usage files of a memory cgroup: v2, then v1.
_MEMORY_FILES = (
    ("memory.max", "memory.current"),
    ("memory.limit_in_bytes", "memory.usage_in_bytes"),
)


def _cpu_quota() -> float | None:
    """CPUs' worth of time per period the cgroup allows; None without a quota."""
    for folder in _cgroup_folders("cpu"):
        quota, _, period = _read_text(folder / "cpu.max").partition(" ")  # v2: "max 100000"
        if not quota:  # v1: two files, -1 for no quota
            quota, period = (
                _read_text(folder / "cpu.cfs_quota_us"),
                _read_text(folder / "cpu.cfs_period_us"),
            )
        quota, period = quota.strip(), period.strip()
        if quota.isdigit() and period.isdigit() and int(period) > 0:
            return int(quota) / int(period)
    return None


def _cgroup_folders(controller: str) -> list[Path]:
    """The folders of this process's cgroup for ``controller``, most specific first."""
    candidates = []
    for line in _read_text(Path("/proc/self/cgroup")).splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2: one unified hierarchy
            candidates.append(_CGROUP_ROOT / path.lstrip("/"))
        elif controller in controllers.split(","):
            candidates.append(_CGROUP_ROOT / controller / path.lstrip("/"))
    # Inside a container's namespace the process's own cgroup is the root.
    candidates += [_CGROUP_ROOT, _CGROUP_ROOT / controller]
    return candidates


def _machine_available() -> int | None:
    for line in _read_text(Path("/proc/meminfo")).splitlines():
        name, _, value = line.partition(":")
        if name == "MemAvailable":
            return int(value.split()[0]) * 1024
    return None


def _read_number(path: Path) -> int | None:
    text = _read_text(path).strip()
    return int(text) if text.isdigit() else None  # "max": no limit at this level


def _read_text(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""
