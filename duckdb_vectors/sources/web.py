"""What the llms.txt and site sources share: a root URL, the ids of its pages, Markdown twins,
and reading the pages a listing planned.

Ids are URL paths below the root (the start URL's folder), unquoted, so that the chunker can
choose by suffix: ``guide/install.html`` as it is; ``guide/`` -> ``guide/index.html``; a path
without a known suffix (``guide/install``) -> ``guide/install.html``; a Markdown twin keeps its
own path (``guide/install.md``). A query string is never part of an id (see ``normal``).

A Markdown twin is a page's Markdown source served beside it: when a listing holds both
``PAGE.md`` and its page (``PAGE.html``, ``PAGE``, ``PAGE/``, or ``PAGE.html.md`` beside
``PAGE.html``), the twin is read instead of the HTML, and cited by the page's address.
"""

from __future__ import annotations

import logging
import mimetypes
import posixpath
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from urllib.parse import unquote, urljoin, urlsplit, urlunsplit

from ..citations import PAGE_SUFFIXES, UrlRule
from ..errors import FetchError
from ..selection import FileSelection
from . import (
    Entry,
    Fetched,
    InvalidSourceError,
    Problem,
    Source,
    SourceOptions,
    SourceRecord,
    Validators,
)
from .http import Address, Fetcher, in_parallel, origin, problem_of

logger = logging.getLogger(__name__)

DISALLOWED = Problem("robots.txt disallows it", skipped=True, keep=False)


def is_web(location: str) -> bool:
    return urlsplit(location).scheme.lower() in ("http", "https")


def normal(url: str) -> str:
    """``url`` as a page is known by: without its fragment and query string (a query names a
    view of a page, or an endless calendar, not another page), ``/./`` and ``/../`` resolved."""
    parts = urlsplit(url)
    path = posixpath.normpath(parts.path) if parts.path not in ("", "/") else "/"
    if parts.path.endswith("/") and path != "/":
        path += "/"
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, "", ""))


def folder_of(url: str) -> str:
    """The folder a start URL names: ``/docs/``, ``/docs/index.html`` and ``/docs`` (a last
    part without a file suffix) all mean ``/docs/``."""
    parts = urlsplit(normal(url))
    path = parts.path
    if not path.endswith("/"):
        last = path.rsplit("/", 1)[-1]
        path = path.rsplit("/", 1)[0] + "/" if _has_file_suffix(last) else path + "/"
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _has_file_suffix(name: str) -> bool:
    suffix = posixpath.splitext(name)[1].lower()
    return bool(suffix) and (suffix in PAGE_SUFFIXES or mimetypes.guess_type(f"x{suffix}")[0])


def markdown_twins(urls: Iterable[str]) -> dict[str, str]:
    """The pages of ``urls`` that have a Markdown twin among them: twin URL -> page URL."""
    listed = set(urls)
    twins = {}
    for url in listed:
        if not url.endswith(".md"):
            continue
        base = url[: -len(".md")]
        candidates = [base, base + ".html", base + ".htm", base + "/"]
        if base.endswith("/index"):
            candidates.append(base[: -len("index")])
        page = next((candidate for candidate in candidates if candidate in listed), None)
        if page is not None:
            twins[url] = page
    return twins


@dataclass
class Planned:
    """How ``read`` gets one listed document.

    ``url``: what to fetch (a twin's own URL); ``cite``: the page's address. A listing that
    already fetched the document left its bytes (``data``, or spooled at ``spooled``), or a
    304 (``unchanged``). ``extra``: validators the listing adds (a crawled page's links); a
    document is fetched conditionally only while its stored ``extra`` is the same.
    """

    url: str
    cite: str
    data: bytes | None = None
    spooled: Path | None = None
    unchanged: bool = False
    validators: dict[str, str] = field(default_factory=dict)
    extra: dict[str, str] = field(default_factory=dict)


class WebSource(Source):
    """A source read over HTTP(S) from one origin, below a root folder URL."""

    def __init__(self, location: str, options: SourceOptions) -> None:
        self.address = Address.parse(location)
        super().__init__(self.address.url, options)  # never the credentials
        self.root = folder_of(self.address.url)
        self.origin = origin(self.root)
        self.fetcher = Fetcher(self.address, options)
        self.selection = FileSelection(tuple(options.include), tuple(options.exclude))
        self.planned: dict[str, Planned] = {}
        self._spool: Path | None = None
        self._spooled = 0
        self._listed_at: datetime | None = None

    @classmethod
    def matches(cls, location: str) -> bool:
        return is_web(location)

    # -- what both kinds' listings use

    def start(self) -> None:
        """Read robots.txt; raise ``InvalidSourceError`` when the site cannot be reached or
        forbids reading the start URL."""
        self._listed_at = datetime.now(UTC)
        try:
            self.fetcher.load_robots()
        except FetchError as error:
            raise self.unreadable(error) from None
        if not self.fetcher.allowed(self.location):
            raise InvalidSourceError(
                f"{self.location}: the site's robots.txt disallows {self.origin} to"
                " duckdb-vectors; ask its owners, or index a local copy of the pages"
            )

    def unreadable(self, error: FetchError) -> InvalidSourceError:
        return InvalidSourceError(
            f"{self.location} cannot be read: {error}; check the URL, and that the site is up"
        )

    def in_scope(self, url: str) -> bool:
        return origin(url) == self.origin and urlsplit(url).path.startswith(
            urlsplit(self.root).path
        )

    def page_id(self, url: str) -> str:
        """The id of an in-scope URL (see the module)."""
        relative = unquote(urlsplit(url).path[len(urlsplit(self.root).path) :])
        if relative == "" or relative.endswith("/"):
            return relative + "index.html"
        if not _has_file_suffix(relative.rsplit("/", 1)[-1]):
            return relative + ".html"
        return relative

    def plan(self, urls: Sequence[str]) -> list[Entry]:
        """Entries for listed page URLs (in their order, made absolute and normal): in scope,
        selected, allowed by robots.txt, twins read for their pages, at most ``max_pages``."""
        kept = list(dict.fromkeys(normal(url) for url in urls))
        kept = [url for url in kept if self.in_scope(url)]
        twins = markdown_twins(kept)
        pages_with_twins = set(twins.values())
        entries = []
        for url in kept:
            if url in pages_with_twins:
                continue
            source = self.page_id(url)
            if source in self.planned or not self.selection.selects(source):
                continue
            if not self.fetcher.allowed(url):
                entries.append(Entry(source, DISALLOWED))
                continue
            self.planned[source] = Planned(url, twins.get(url, url))
        return entries + self.bounded(Entry(source) for source in self.planned)

    def bounded(self, entries: Iterable[Entry]) -> list[Entry]:
        listed = list(entries)
        limit = self.options.max_pages
        if len(listed) > limit:
            logger.warning(
                "%s lists %d pages: reading the first %d (raise --max-pages to read more)",
                self.location,
                len(listed),
                limit,
            )
            for entry in listed[limit:]:
                self.planned.pop(entry.source, None)
            listed = listed[:limit]
        return listed

    def spool(self, data: bytes) -> Path:
        """Keep a body a listing fetched on disk until ``read`` sends it."""
        if self._spool is None:
            self._spool = Path(tempfile.mkdtemp(prefix="duckdb-vectors-pages-"))
        self._spooled += 1
        path = self._spool / str(self._spooled)
        path.write_bytes(data)
        return path

    # -- the Source interface

    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        to_fetch = []
        for entry in entries:
            planned = self.planned.get(entry.source)
            if planned is None:  # a listing read again in ``read`` no longer has it
                yield Fetched(entry.source, problem=Problem("no longer listed", keep=False))
            elif planned.spooled is not None or planned.data is not None:
                yield self._ready(entry.source, planned)
            elif planned.unchanged and _current(planned, previous.get(entry.source)):
                yield Fetched(entry.source, unchanged=True, validators=previous[entry.source])
            else:
                to_fetch.append(entry.source)

        def fetch(source: str) -> Fetched:
            return self._fetch(source, self.planned[source], previous.get(source))

        yield from in_parallel(fetch, to_fetch, self.options.concurrency)

    def _ready(self, source: str, planned: Planned) -> Fetched:
        data = planned.data
        if planned.spooled is not None:
            data = planned.spooled.read_bytes()
            planned.spooled.unlink()
        validators = {**planned.validators, **planned.extra}
        return Fetched(source, data=data, url=planned.cite, validators=validators)

    def _fetch(self, source: str, planned: Planned, stored: Validators | None) -> Fetched:
        if not _current(planned, stored):
            stored = None
        try:
            response = self.fetcher.get(planned.url, stored)
        except FetchError as error:
            return Fetched(source, problem=problem_of(error))
        if response.unchanged and stored is not None:
            return Fetched(source, unchanged=True, validators=stored)
        validators = {**response.validators, **planned.extra}
        return Fetched(source, data=response.body, url=planned.cite, validators=validators)

    def citations(self) -> UrlRule:
        # Links between pages become the pages' URLs; ids are the URL paths below the root.
        return UrlRule(base_url=self.root, style="source")

    def record(self) -> SourceRecord:
        return SourceRecord(kind=self.kind, location=self.location, fetched_at=self._listed_at)

    def close(self) -> None:
        self.fetcher.close()
        if self._spool is not None:
            shutil.rmtree(self._spool, ignore_errors=True)
            self._spool = None


def _current(planned: Planned, stored: Validators | None) -> bool:
    """Whether a stored document's validators may confirm it: not when what its listing adds
    (a crawled page's links) changed, since the run must then record the new ones, and so
    read the document whole."""
    return stored is not None and all(stored.get(k) == v for k, v in planned.extra.items())


def absolute(url: str, base: str) -> str:
    return urljoin(base, url.strip())
