"""Targets that fail on purpose, one per verdict of the runner: ``tests/test_fuzzing.py`` runs
them (``python -m fuzz --targets-from fuzz.selfcheck``) to show each kind of finding is caught."""

from __future__ import annotations

import time

from .harness import Registry, given

SELFCHECK = Registry()
TARGETS = SELFCHECK.targets


@SELFCHECK.target(given(b"seed"))
def crashes(data: bytes) -> None:
    """Raises what the package never raises on purpose."""
    raise KeyError(data)


@SELFCHECK.target(given(b"seed"))
def hangs(data: bytes) -> None:
    """Takes longer than the limit."""
    time.sleep(30)


@SELFCHECK.target(given(b"seed"))
def grows(data: bytes) -> None:
    """Holds more memory than the cap (600 MB)."""
    held = [bytes(1 << 20) + bytes([i % 256]) for i in range(600)]
    time.sleep(5)
    assert held
