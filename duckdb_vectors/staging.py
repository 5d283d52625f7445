"""Rewriting an index beside the one that is served: one writer, any number of readers.

DuckDB lets a process open a file for writing only when no other has it open, and readers
none while a writer has it. So a run that rewrites an index (``index``, ``upgrade``) works on
a copy beside it (the same file system) and, finished and checkpointed, renames the copy over
the index in one step: a reader sees the old file or the new one, whole, and none is locked
out. A run that fails or is interrupted removes its copy, leaving the index as it was.

Writers take turns: a run holds an exclusive ``flock`` on the index's folder (DuckDB's locks
are ``fcntl`` locks on the files, which ``flock`` does not touch, so readers are not held
up). Copies left by a run killed outright are removed by the next one.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import sys
from pathlib import Path

from .errors import DuckDBVectorsError
from .index.db import connect

_MARK = ".staging-"  # between the index's name and the writer's process id
# The indexes this process has begun to put in place: from then on a run has done its work,
# whatever signal comes (the command line's handler asks ``published``).
_published: list[Path] = []


def published() -> bool:
    """Whether this process has put (or is putting) a new index in place."""
    return bool(_published)


class Staging:
    """A copy of the index at ``target`` (nothing, for a new index) being written at ``path``,
    under the folder's writer lock. ``publish`` puts it in the index's place; ``discard``
    drops it. Either ends the staging and releases the lock."""

    def __init__(self, target: str | Path) -> None:
        self.target = Path(target)
        self.path = self.target.with_name(f"{self.target.name}{_MARK}{os.getpid()}")
        self._lock = _lock_folder(self.target.parent)
        try:
            _remove_leftovers(self.target)
            if self.target.exists():
                _copy(self.target, self.path)
        except BaseException:
            self.discard()
            raise

    @property
    def active(self) -> bool:
        return self._lock is not None

    def publish(self) -> None:
        """Put the copy in the index's place (call it with the copy closed and checkpointed).

        A write-ahead log of the old file goes first: beside the new file it would be replayed
        into it. Between the two steps a reader opens the old file without that log, a whole
        index that only misses what the new one has anyway.
        """
        if not self.active:
            return
        try:
            if _wal(self.path).exists():
                raise DuckDBVectorsError(f"{self.target}: the new index was not checkpointed")
            if self.path.exists():
                _published.append(self.target)
                _wal(self.target).unlink(missing_ok=True)
                os.replace(self.path, self.target)
        finally:
            self.discard()

    def discard(self) -> None:
        """Drop the copy, leaving the index as it was."""
        for leftover in (self.path, _wal(self.path)):
            leftover.unlink(missing_ok=True)
        if self._lock is not None:
            os.close(self._lock)
            self._lock = None


def _lock_folder(folder: Path) -> int:
    """An open descriptor of ``folder`` (made if need be) holding its writer lock (waiting
    for it, saying so)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    except OSError as error:
        raise DuckDBVectorsError(
            f"{folder} cannot hold the index: {error.strerror or error}"
        ) from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"waiting for another run writing an index in {folder} ...", file=sys.stderr)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX)
        except BaseException:
            os.close(descriptor)
            raise
    return descriptor


def _copy(target: Path, copy: Path) -> None:
    """Copy the index (and its write-ahead log, if a writer left one) while no process can be
    writing it: a read-only connection held meanwhile keeps writers out, as DuckDB locks."""
    with connect(target, read_only=True):
        shutil.copyfile(target, copy)
        if _wal(target).exists():
            shutil.copyfile(_wal(target), _wal(copy))


def _remove_leftovers(target: Path) -> None:
    """Copies of runs that were killed (the lock is held: no other run is writing)."""
    for leftover in target.parent.glob(f"{target.name}{_MARK}*"):
        leftover.unlink(missing_ok=True)


def _wal(path: Path) -> Path:
    return path.with_name(f"{path.name}.wal")
