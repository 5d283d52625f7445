"""Loading a store's model and in-memory index in a background thread, for servers.

With two or more CPUs a server starts the load before importing the MCP SDK, which then
overlaps it (DuckDB and numpy release the GIL). With one (as the Docker MCP Gateway runs a
server) an early load only delays ``initialize``, so it starts after that answer.
"""

from __future__ import annotations

import threading

from ..resources import available_cpus, cap_blas_threads
from ..store import VectorStore


class BackgroundWarmUp:
    """``store.warm_up()`` in a daemon thread, started at most once."""

    def __init__(self, store: VectorStore) -> None:
        self.store = store
        self.done = threading.Event()
        self.error: BaseException | None = None
        self._started = threading.Lock()

    @classmethod
    def failed(cls, store: VectorStore, error: BaseException) -> BackgroundWarmUp:
        """A load that has ended in ``error``, for whoever waits for one."""
        warm_up = cls(store)
        warm_up._started.acquire()
        warm_up.error = error
        warm_up.done.set()
        return warm_up

    def start(self) -> BackgroundWarmUp:
        """Start loading, once, however often this is called."""
        if self._started.acquire(blocking=False):
            threading.Thread(target=self._run, name="warm-up", daemon=True).start()
        return self

    def start_early(self) -> BackgroundWarmUp:
        """Start loading now if a second CPU can run the load beside the server's start."""
        if available_cpus() >= 2:
            self.start()
        return self

    def wait(self) -> BaseException | None:
        """Wait for the load to end (starting it if need be); the error it raised, if any."""
        self.start()
        self.done.wait()
        return self.error

    def _run(self) -> None:
        try:
            cap_blas_threads()
            self.store.warm_up()
        except BaseException as error:  # reported to whoever waits for the load
            self.error = error
        finally:
            self.done.set()
