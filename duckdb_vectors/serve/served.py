"""The index a server answers from, followed when a writer renames a new file over it
(``staging``).

Before each request a read-only server checks whether the file at its path is still the one
it opened; if not, it lets the requests in flight finish, holds new ones back, and takes over
the new index (keeping the model if it is the same), so no request sees half an index.
DuckDB keeps one database per path in a process, so the old index is closed first; if the new
one cannot be loaded, requests say why until the file changes again.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from ..errors import DuckDBVectorsError
from ..store import VectorStore
from .warming import BackgroundWarmUp


class ServedIndex:
    """A server's store and its load (``warm_up``), followed across swaps of its file."""

    def __init__(self, store: VectorStore, warm_up: BackgroundWarmUp) -> None:
        self.store = store
        self.warm_up = warm_up
        self._file = Path(store.db_path)
        # Only a read-only store on a file follows it: a writable one is the file's writer.
        follows = store.read_only and self._file.is_file()
        self._opened = _identity(self._file) if follows else None
        self._in_flight = 0
        self._reloading: anyio.Event | None = None

    @property
    def immutable(self) -> bool:
        """Whether the index cannot change while served: read-only, in a folder this process
        cannot write (a baked image's), so no new index can be swapped in."""
        return self.store.read_only and not os.access(self._file.parent, os.W_OK)

    def replaced(self) -> bool:
        """Whether another file is now at the index's path than the one being served."""
        return self._opened is not None and _identity(self._file) not in (None, self._opened)

    async def serving(self) -> None:
        """Wait until the index can be read (taking over a swapped-in file first); the caller
        is then in flight until ``done``."""
        while self._reloading is not None:
            await self._reloading.wait()
        if self.replaced():
            self._reloading = reloading = anyio.Event()
            try:
                while self._in_flight:
                    await anyio.sleep(0.005)
                await anyio.to_thread.run_sync(self._take_over)
            finally:
                self._reloading = None
                reloading.set()
        self._in_flight += 1

    def done(self) -> None:
        self._in_flight -= 1

    def _take_over(self) -> None:
        """Close the index being served and open and load the one now at its path."""
        old = self.store
        self._opened = _identity(self._file)
        old.close()
        try:
            new = _reopened(old)
        except DuckDBVectorsError as error:  # say so on every request, until the file changes
            self.warm_up = BackgroundWarmUp.failed(old, error)
            return
        warm_up = BackgroundWarmUp(new)
        warm_up.wait()
        self.store, self.warm_up = new, warm_up


def _reopened(old: VectorStore) -> VectorStore:
    """The index now at ``old``'s path, with its settings and, if it fits, its loaded model."""
    if old.loaded_embedder is not None:
        try:
            return VectorStore.from_settings(old.settings, old.loaded_embedder)
        except DuckDBVectorsError:
            pass  # built with another model: open it with its own
    return VectorStore.from_settings(old.settings)


def _identity(path: Path) -> tuple[int, int] | None:
    try:
        found = os.stat(path)
    except OSError:  # between a writer's two steps, or gone: keep serving what is open
        return None
    return found.st_dev, found.st_ino
