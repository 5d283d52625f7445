"""How much more memory this process may take: its container's limit (cgroup v2 or v1) less
what the container uses now, and never more than the machine has available.

Read before the in-memory index is loaded: a container killed for memory while loading is
restarted, loads again and is killed again, and says nothing a user can act on.
"""

from __future__ import annotations

from pathlib import Path

_CGROUP_ROOT = Path("/sys/fs/cgroup")
# cgroup v1 writes "no limit" as a huge number (the largest page-aligned 64-bit value).
_NO_LIMIT_V1 = 1 << 60


def available_memory() -> int | None:
    """Bytes this process can still allocate before the kernel refuses or kills it, as far as
    Linux says; None where it says nothing (not Linux)."""
    found = [value for value in (_cgroup_room(), _machine_available()) if value is not None]
    return min(found) if found else None


def _cgroup_room() -> int | None:
    for limit_file, usage_file in _cgroup_files():
        limit, usage = _read_number(limit_file), _read_number(usage_file)
        if limit is not None and usage is not None and limit < _NO_LIMIT_V1:
            return max(limit - usage, 0)
    return None


def _cgroup_files() -> list[tuple[Path, Path]]:
    """The limit and usage files of this process's memory cgroup, most specific first."""
    candidates = []
    for line in _read_text(Path("/proc/self/cgroup")).splitlines():
        hierarchy, _, rest = line.partition(":")
        controllers, _, path = rest.partition(":")
        if hierarchy == "0" and controllers == "":  # v2: one unified hierarchy
            folder = _CGROUP_ROOT / path.lstrip("/")
            candidates.append((folder / "memory.max", folder / "memory.current"))
        elif "memory" in controllers.split(","):
            folder = _CGROUP_ROOT / "memory" / path.lstrip("/")
            candidates.append((folder / "memory.limit_in_bytes", folder / "memory.usage_in_bytes"))
    # Inside a container's namespace the process's own cgroup is the root.
    candidates.append((_CGROUP_ROOT / "memory.max", _CGROUP_ROOT / "memory.current"))
    memory_v1 = _CGROUP_ROOT / "memory"
    candidates.append((memory_v1 / "memory.limit_in_bytes", memory_v1 / "memory.usage_in_bytes"))
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
