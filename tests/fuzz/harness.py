"""What every fuzz target shares: the verdict on one input, the limits, the seeds.

A target is a small function that feeds bytes to one parser or boundary of the package. An
input passes when the function returns, or raises an error the package raises on purpose (see
``declared``) with a one-line message; anything else is a finding. The limits (seconds per
input, memory) are libFuzzer's own (``-timeout``, ``-rss_limit_mb``), set by ``__main__``.
"""

from __future__ import annotations

import hashlib
import json
import os
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb_vectors
from duckdb_vectors.errors import DuckDBVectorsError, SkipFile

REPOSITORY = Path(__file__).resolve().parents[2]
TEST_DATA = REPOSITORY / "tests" / "data"
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", REPOSITORY.parent / "shared"))
EVALDATA = SHARED / "evaldata"
PACKAGE = Path(duckdb_vectors.__file__).resolve().parent

TIMEOUT_SECONDS = 5  # an input that takes longer is a finding
RSS_LIMIT_MB = 2048  # so is a process that grows past this
MAX_LEN = 64 * 1024  # the longest input a text target is given (longer seeds are left out)
SEEDS_PER_SOURCE = 40  # files taken from each seed folder, spread over it


class Finding(AssertionError):
    """An input the package answered wrongly: the message says how."""


@dataclass(frozen=True)
class Target:
    """One fuzz target: ``function`` takes the fuzzer's bytes; ``seeds`` gives the inputs the
    fuzzer starts from (read when the run starts, never stored in the repository);
    ``libraries``: the pure-Python parsers it hands input to, instrumented for coverage too."""

    name: str
    function: Callable[[bytes], None]
    seeds: Callable[[], Iterable[bytes]]
    max_len: int = MAX_LEN
    libraries: tuple[str, ...] = ()
    about: str = ""


@dataclass
class Registry:
    targets: dict[str, Target] = field(default_factory=dict)

    def target(
        self,
        seeds: Callable[[], Iterable[bytes]],
        max_len: int = MAX_LEN,
        libraries: tuple[str, ...] = (),
    ) -> Callable[[Callable[[bytes], None]], Callable[[bytes], None]]:
        """Register the decorated function as the target named after it (``_`` as ``-``)."""

        def register(function: Callable[[bytes], None]) -> Callable[[bytes], None]:
            name = function.__name__.replace("_", "-")
            about = " ".join((function.__doc__ or "").split()).split(". ")[0]
            self.targets[name] = Target(name, function, seeds, max_len, libraries, about)
            return function

        return register


def declared(error: BaseException) -> bool:
    """Whether ``error`` is one the package raises on purpose: its own errors (``errors.py``),
    and the plain ``ValueError``/``TypeError`` its argument checks raise (``inputs.py``) when
    raised by the package's own code; not their subclasses (a ``UnicodeEncodeError`` or a
    ``JSONDecodeError`` escaping is a bug)."""
    if isinstance(error, (DuckDBVectorsError, SkipFile)):
        return True
    if type(error) not in (ValueError, TypeError) or error.__traceback__ is None:
        return False
    raiser = traceback.extract_tb(error.__traceback__)[-1].filename
    return Path(raiser).resolve().is_relative_to(PACKAGE)


def check_message(error: BaseException) -> None:
    """The package's errors are one line that says what is wrong (and never a traceback)."""
    message = str(error)
    if not message.strip() or "\n" in message.strip() or "Traceback" in message:
        raise Finding(f"{type(error).__name__} is not one clear line: {message!r:.300}")


def run_one(target: Target, data: bytes) -> None:
    """Feed ``data`` to ``target``: a declared error is a fine answer, anything else raises."""
    try:
        target.function(data)
    except Exception as error:
        if not declared(error):
            raise
        check_message(error)


def text_of(data: bytes) -> str:
    """The fuzzer's bytes as text; undecodable bytes become lone surrogates, which callers
    (MCP clients among them) can send too."""
    return data.decode("utf-8", "surrogateescape")


def json_or_text(text: str) -> Any:
    """``text`` parsed as JSON if it is JSON, else the text itself."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return text


# -- seeds ----------------------------------------------------------------------------------


def files(*patterns: str, root: Path | None = None) -> Callable[[], Iterator[bytes]]:
    """Seeds from files: for each glob pattern (relative to ``tests/data`` and to the shared
    evaluation data, or to ``root``), ``SEEDS_PER_SOURCE`` files spread over the sorted
    matches. Folders that are not on this machine give none."""

    def seeds() -> Iterator[bytes]:
        for base in [root] if root else [TEST_DATA, EVALDATA]:
            for pattern in patterns:
                matches = sorted(path for path in base.glob(pattern) if path.is_file())
                step = max(1, len(matches) // SEEDS_PER_SOURCE)
                for path in matches[::step][:SEEDS_PER_SOURCE]:
                    yield path.read_bytes()

    return seeds


def lines(pattern: str, key: str) -> Callable[[], Iterator[bytes]]:
    """Seeds from the ``key`` field of JSON Lines files in the shared evaluation data."""

    def seeds() -> Iterator[bytes]:
        for path in sorted(EVALDATA.glob(pattern)):
            with path.open(encoding="utf-8") as lines:
                for number, line in enumerate(lines):
                    if number % 10 == 0:
                        yield json.loads(line)[key].encode()

    return seeds


def given(*seeds: bytes | str | Any) -> Callable[[], list[bytes]]:
    """Seeds written here: bytes as they are, text as UTF-8, anything else as its JSON."""

    def encoded(seed: bytes | str | Any) -> bytes:
        if isinstance(seed, bytes):
            return seed
        return (seed if isinstance(seed, str) else json.dumps(seed)).encode(
            "utf-8", "surrogateescape"
        )

    return lambda: [encoded(seed) for seed in seeds]


def both(*sources: Callable[[], Iterable[bytes]]) -> Callable[[], Iterator[bytes]]:
    return lambda: (seed for source in sources for seed in source())


def write_seeds(target: Target, folder: Path) -> int:
    """Write the target's seeds into ``folder`` (named by their hash): how many. Those longer
    than the target's ``max_len`` are left out: the time limit is for inputs of that size."""
    folder.mkdir(parents=True, exist_ok=True)
    count = 0
    for seed in target.seeds():
        if len(seed) <= target.max_len:
            (folder / hashlib.sha1(seed).hexdigest()).write_bytes(seed)
            count += 1
    return count
