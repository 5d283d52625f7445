"""Loading a store's model and in-memory index in a background thread, for servers.

When to start it depends on the CPUs at hand. With two or more, a server starts the load as
soon as its index file is open, before it imports its own framework: the MCP SDK's import
(0.3-0.5 s) then overlaps the load, which spends its time in DuckDB and numpy, which let the
importing thread run. With one (``docker run --cpus 1``, as the Docker MCP Gateway runs a
server), nothing overlaps: a load started early only delays the answer to ``initialize``, so
the server starts it once that answer is out (``start_early`` says which).
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
        """Start loading, once, however often this is called (a server calls it after every
        answer)."""
        if self._started.acquire(blocking=False):
            threading.Thread(target=self._run, name="warm-up", daemon=True).start()
        return self

    def start_early(self) -> BackgroundWarmUp:
        """Start loading now if a second CPU can run the load beside the server's start."""
        if available_cpus() >= 2:
            self.start()
        return self

    def wait(self) -> BaseException | None:
        """Wait for the load to end (starting it, if nothing has); the error it raised, if it
        failed."""
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
