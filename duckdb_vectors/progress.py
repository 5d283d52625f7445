"""Progress of long work on stderr: one line redrawn in place on a terminal, plain lines
otherwise (build logs, CI, an MCP server's log), at most one every few seconds."""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TextIO

PLAIN_INTERVAL_SECONDS = 5.0


class StatusLine:
    """Shows the latest status of a long task; ``final`` lines always stay on screen."""

    def __init__(self, stream: TextIO | None = None, live: bool | None = None) -> None:
        self.stream = stream or sys.stderr
        self.live = self.stream.isatty() if live is None else live
        self._last_plain = float("-inf")
        self._drawn = False

    def update(self, text: str) -> None:
        if self.live:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write("\r\x1b[K" + text[:width])
            self._drawn = True
        elif time.monotonic() - self._last_plain >= PLAIN_INTERVAL_SECONDS:
            self._write_line(text)
        self.stream.flush()

    def final(self, text: str) -> None:
        """A line that stays: the live line is cleared first, so they never share a line."""
        self.clear()
        self._write_line(text)
        self.stream.flush()

    def clear(self) -> None:
        if self._drawn:
            self.stream.write("\r\x1b[K")
            self._drawn = False

    def _write_line(self, text: str) -> None:
        self.stream.write(text + "\n")
        self._last_plain = time.monotonic()


@contextmanager
def counted(
    total: int | None, unit: str, description: str, enabled: bool | None
) -> Iterator[Callable[[int], None]]:
    """Progress toward ``total`` units (None: a count, for work of unknown size such as a
    crawl), advanced by the function it yields: a bar on a terminal; asked for elsewhere (a
    build log), a plain line every few seconds; else nothing. A run that fails midway leaves
    no final line claiming it finished."""
    live = sys.stderr.isatty()
    if not (live if enabled is None else enabled):
        yield lambda _count: None
        return
    if live:
        from tqdm import tqdm
        from tqdm.contrib.logging import logging_redirect_tqdm

        # Warnings logged meanwhile are written above the bar, not onto its line.
        with (
            logging_redirect_tqdm(),
            tqdm(total=total, unit=unit, file=sys.stderr, desc=description) as bar,
        ):
            yield bar.update
        return
    status, done = StatusLine(live=False), 0

    def line() -> str:
        return f"{description}: {done:,}{'' if total is None else f'/{total:,}'} {unit}s"

    def advance(count: int) -> None:
        nonlocal done
        done += count
        status.update(line())

    advance(0)
    yield advance
    status.final(line())
