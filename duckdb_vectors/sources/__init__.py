"""Where an index run's documents come from: a folder, a git repository, an ``llms.txt``, a
documentation site.

A ``Source`` lists the documents it holds now (``list``), then reads them (``read``), sending
back what it recorded last time (``Validators``: an ETag, a Last-Modified date, a git blob) so
that a document that did not change is confirmed rather than read again. ``indexer.index_source``
runs the same incremental write for every kind: adding a kind is a module with a ``Source``
class and a line in ``KINDS``, and touches nothing else.

Document ids (``Entry.source``) are relative paths with ``/`` separators, under the run's
source prefix: a folder's or repository's file path, a site's URL path below its root.
"""

from __future__ import annotations

import importlib
from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from ..citations import UrlRule
from ..config import DEFAULT_MAX_FILE_BYTES
from ..errors import InvalidSourceError
from ..index.manifest import SourceRecord

# What a source recorded about a document when it read it, returned to it on the next run:
# e.g. {"etag": ..., "last_modified": ...} for a page, {"blob": ...} for a git file.
Validators = Mapping[str, str]


@dataclass(frozen=True)
class Problem:
    """Why a document was not indexed this time.

    ``skipped``: left out by a rule (too large, no text, refused symlink), not an error.
    ``keep``: its chunks from an earlier run stay (a page that fails this time is not pruned).
    """

    reason: str
    skipped: bool = False
    keep: bool = True


@dataclass(frozen=True)
class Entry:
    """A document a source holds now, or one its listing refused (``problem`` set)."""

    source: str
    problem: Problem | None = None


@dataclass(frozen=True)
class Fetched:
    """What reading one entry gave: its bytes, a confirmation that the stored document is
    current (``unchanged``: a 304, the same git blob), or a problem.

    ``url`` is the document's own citation (a page's URL); None lets the run's ``UrlRule``
    decide (``--base-url``, front matter). ``validators`` are stored with the document and
    handed back to ``read`` on the next run.
    """

    source: str
    data: bytes | None = None
    unchanged: bool = False
    url: str | None = None
    validators: Validators = field(default_factory=dict)
    problem: Problem | None = None


@dataclass(frozen=True)
class SourceOptions:
    """What a run asks of any source; each kind uses the options that apply to it."""

    include: Sequence[str] = ()  # gitignore-style patterns on document ids
    exclude: Sequence[str] = ()
    include_hidden: bool = False
    recursive: bool = True
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES  # a larger document is skipped
    max_pages: int = 5_000  # a site or llms.txt: pages read at most
    concurrency: int = 4  # requests in flight per host
    delay: float = 0.0  # seconds between requests to one host
    timeout: float = 30.0  # seconds per request phase (connect, read)
    headers: Mapping[str, str] = field(default_factory=dict)  # never stored nor logged
    progress: bool | None = None  # a crawl's count of pages on stderr (default: on a terminal)


class Source(ABC):
    """One place documents come from. ``kind`` names it in the manifest and in errors."""

    kind: str

    def __init__(self, location: str, options: SourceOptions) -> None:
        self.location = location
        self.options = options

    @classmethod
    @abstractmethod
    def matches(cls, location: str) -> bool:
        """Whether ``location`` (a SOURCE as typed) is of this kind."""

    @abstractmethod
    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        """Every document the source holds now, sorted by id. ``previous`` maps the ids
        stored by the last run to their validators (a crawl may revalidate as it lists).
        Raises ``InvalidSourceError`` with one line naming the location when it cannot be
        read at all (nothing is written then)."""

    @abstractmethod
    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        """One ``Fetched`` per entry without a problem, in any order. A document whose id is in
        ``previous`` may be confirmed ``unchanged`` instead of read."""

    def citations(self) -> UrlRule | None:
        """How its documents are cited when the run is given no ``UrlRule`` (a site: under
        its own address); None: from front matter only."""
        return None

    @abstractmethod
    def record(self) -> SourceRecord:
        """What to record of this source, once it has been read."""

    def close(self) -> None:  # noqa: B027 - most sources hold nothing
        """Release what reading held (a checkout, a connection pool)."""


# SOURCE kinds, tried in order: the first whose ``matches`` accepts a location reads it.
KINDS: tuple[str, ...] = (
    "duckdb_vectors.sources.git:GitSource",
    "duckdb_vectors.sources.llms_txt:LlmsTxtSource",
    "duckdb_vectors.sources.site:SiteSource",
    "duckdb_vectors.sources.folder:FolderSource",
)


def kind_of(location: str) -> type[Source]:
    for name in KINDS:
        module, _, attribute = name.partition(":")
        kind = getattr(importlib.import_module(module), attribute)
        if kind.matches(location):
            return kind
    raise InvalidSourceError(
        f"{location} is not a folder, a git+https://, git+ssh:// or git+file:// URL, or an"
        " http(s):// URL; pass one of those"
    )


def open_source(location: str, options: SourceOptions | None = None) -> Source:
    """The source that reads ``location`` (see ``KINDS``)."""
    return kind_of(location)(location, options or SourceOptions())
