"""Loading a store's model and in-memory index in a background thread, for servers.

A server starts the load as soon as its index file is open, before it imports its own
framework: the MCP SDK takes about a second to import, which then overlaps the load (the load
spends its time in DuckDB and numpy, which let the importing thread run).
"""

from __future__ import annotations

import threading

from .store import VectorStore


class BackgroundWarmUp:
    """``store.warm_up()`` in a daemon thread, started at most once."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._started = threading.Lock()

    def start(self) -> BackgroundWarmUp:
        """Start loading, once, however often this is called (a transport may enter a server's
        lifespan more than once)."""
        if self._started.acquire(blocking=False):
            threading.Thread(target=self._run, name="warm-up", daemon=True).start()
        return self

    def wait(self) -> BaseException | None:
        """Wait for the load to end; the error it raised, if it failed."""
        self.done.wait()
        return self.error

    def _run(self) -> None:
        try:
            self.store.warm_up()
        except BaseException as error:  # reported to whoever waits for the load
            self.error = error
        finally:
            self.done.set()
