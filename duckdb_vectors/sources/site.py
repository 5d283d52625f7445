"""A documentation site at an ``http(s)://`` URL: its pages below the start URL's folder.

The pages are what the site's sitemap lists (robots.txt's ``Sitemap:`` lines, else
``sitemap.xml`` in the start folder or at the site's root; sitemap indexes and gzipped sitemaps
are followed), kept within the start URL's origin and folder. A site without one is crawled
from the start page: ``<a href>`` links within the same scope, at most ``max_pages`` pages,
following links only through pages that the include/exclude patterns select (and the start
page). URLs lose their fragment and query string, ``<link rel=canonical>`` (same origin) names
a page, and a page's ``<link rel=alternate type=text/markdown>`` twin is read instead of its
HTML (see ``web`` for ids and twins).

A crawl fetches every page to find its links, so its bodies wait in a temporary folder until
``read`` sends them (removed in ``close``). Each crawled page's links are stored with its
validators (``crawl``, a JSON text), so a refresh that gets 304s still knows them: a site that
did not change costs one conditional request per page.
"""

from __future__ import annotations

import json
import logging
from collections import deque
from collections.abc import Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit
from xml.etree.ElementTree import Element, ParseError

import defusedxml.ElementTree as SafeXml
from defusedxml import DefusedXmlException
from selectolax.lexbor import LexborHTMLParser

from ..citations import PAGE_SUFFIXES
from ..errors import FetchError
from ..progress import counted
from . import Entry, InvalidSourceError, Validators
from .http import Response, inflate, problem_of
from .web import DISALLOWED, Planned, WebSource, normal

logger = logging.getLogger(__name__)

MAX_SITEMAPS = 50  # sitemap files read at most (an index and what it names)
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
# What a crawl follows besides pages without a suffix: documents a chunker reads.
_CRAWLED_SUFFIXES = PAGE_SUFFIXES | {".pdf"}


class SiteSource(WebSource):
    kind = "site"

    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        self.start()
        listed = self._sitemap_pages()
        if listed:
            entries = self.plan(listed)
            if self.planned:
                return sorted(entries, key=lambda entry: entry.source)
        return sorted(_Crawl(self, previous).run(), key=lambda entry: entry.source)

    # -- sitemaps

    def _sitemap_pages(self) -> list[str]:
        """The page URLs of the first sitemap that has any; [] for a site without one."""
        named = [url for url in self.fetcher.robots.sitemaps if urlsplit(url).scheme]
        candidates = named or [urljoin(self.root, "sitemap.xml"), f"{self.origin}/sitemap.xml"]
        for candidate in dict.fromkeys(candidates):
            pages = self._read_sitemaps(candidate)
            if pages:
                return pages
        return []

    def _read_sitemaps(self, first: str) -> list[str]:
        pending, read, pages = [first], set(), []
        while pending and len(read) < MAX_SITEMAPS:
            url = pending.pop(0)
            if url in read or not url.startswith(self.origin + "/"):
                continue
            read.add(url)
            found, nested = self._sitemap(url)
            pages += found
            pending += nested
        return pages

    def _sitemap(self, url: str) -> tuple[list[str], list[str]]:
        """The pages and the nested sitemaps one sitemap file lists."""
        try:
            data = self.fetcher.get(url, robots=False).body or b""
        except FetchError as error:
            if not error.gone:
                logger.warning("%s: sitemap not read (%s)", self.location, error)
            return [], []
        try:
            if data.startswith(b"\x1f\x8b"):  # a .xml.gz served as it is
                data = inflate([data], self.options.max_file_bytes)
            root = SafeXml.fromstring(data)
        except DefusedXmlException:
            raise InvalidSourceError(
                f"{url}: the sitemap declares XML entities or a DTD (an XML bomb?) and is"
                " refused; fix the sitemap, or remove it to have the site crawled"
            ) from None
        except (ParseError, OverflowError, OSError, ValueError) as error:
            logger.warning("%s: sitemap %s is not readable XML (%s)", self.location, url, error)
            return [], []
        kind = _local(root.tag)
        item = {"urlset": "url", "sitemapindex": "sitemap"}.get(kind)
        locations = [
            loc.text.strip()
            for child in root
            if _local(child.tag) == item
            for loc in child
            if _local(loc.tag) == "loc" and loc.text
        ]
        return (locations, []) if kind == "urlset" else ([], locations)


def _local(tag: str | Element) -> str:
    return str(tag).rsplit("}", 1)[-1]


@dataclass
class _Visit:
    """What fetching one page during a crawl gave."""

    url: str  # as requested
    page: str = ""  # its address: the canonical URL, else where redirects ended
    links: list[str] = field(default_factory=list)
    twin: str | None = None
    response: Response | None = None
    state: dict[str, str | list[str] | None] = field(default_factory=dict)
    error: FetchError | None = None


class _Crawl:
    """Breadth-first over the site's links, ``concurrency`` pages in flight."""

    def __init__(self, site: SiteSource, previous: Mapping[str, Validators]) -> None:
        self.site = site
        self.start = normal(site.location)
        # What the last run recorded of each crawled URL, by the URL: a document's validators
        # hold the states of every URL that named it (its page, an alias, a redirect).
        self.known: dict[str, dict] = {}
        for validators in previous.values():
            for state in json.loads(validators.get("crawl", "[]")):
                self.known[state["url"]] = state
        self.states: dict[str, list[dict]] = {}
        self.entries: list[Entry] = []

    def run(self) -> list[Entry]:
        site = self.site
        first = self.visit(self.start)
        if first.error is not None:
            raise site.unreadable(first.error)
        seen = {self.start}
        queue: deque[str] = deque()
        self.take(first, seen, queue)
        budget = site.options.max_pages - 1
        workers = site.options.concurrency
        with (
            ThreadPoolExecutor(max_workers=workers) as pool,
            counted(None, "page", "crawling", site.options.progress) as advance,
        ):
            advance(1)
            running: set[Future[_Visit]] = set()
            while queue or running:
                while queue and budget > 0 and len(running) < 2 * workers:
                    running.add(pool.submit(self.visit, queue.popleft()))
                    budget -= 1
                if not running:
                    break
                done, running = wait(running, return_when=FIRST_COMPLETED)
                for future in done:
                    self.take(future.result(), seen, queue)
                advance(len(done))
        if queue:
            logger.warning(
                "%s: stopped after %d pages (raise --max-pages to crawl more)",
                site.location,
                site.options.max_pages,
            )
        for source, planned in site.planned.items():
            states = sorted(self.states[source], key=lambda state: state["url"])
            planned.extra = {"crawl": json.dumps(states, sort_keys=True)}
        refused = {
            entry.source: entry for entry in self.entries if entry.source not in site.planned
        }
        return [*refused.values(), *(Entry(source) for source in site.planned)]

    def visit(self, url: str) -> _Visit:
        known = self.known.get(url)
        try:
            response = self.site.fetcher.get(url, known)
        except FetchError as error:
            # A page that fails this time still leads where it led: what it links is not
            # pruned for that.
            links = known["links"] if known is not None and not error.gone else []
            return _Visit(url, links=links, error=error)
        if response.unchanged and known is not None:
            links, twin, page = known["links"], known["twin"], known["page"]
            validators = known
        else:
            links, twin, page = self.outgoing(response)
            validators = response.validators
        state = {
            "url": url,
            "page": page,
            "links": links,
            "twin": twin,
            "etag": validators.get("etag"),
            "last_modified": validators.get("last_modified"),
        }
        return _Visit(url, page, links, twin, response, state)

    def outgoing(self, response: Response) -> tuple[list[str], str | None, str]:
        """A page's in-scope links, its Markdown twin and its address."""
        site = self.site
        if response.content_type not in _HTML_TYPES or response.body is None:
            return [], None, response.url
        tree = LexborHTMLParser(response.body.decode("utf-8", "replace"))
        base = response.url
        if (tag := tree.css_first("base[href]")) is not None:
            base = urljoin(base, tag.attributes.get("href") or "")

        def named(selector: str) -> list[str]:
            hrefs = (node.attributes.get("href") or "" for node in tree.css(selector))
            return [url for href in hrefs if site.in_scope(url := normal(urljoin(base, href)))]

        canonical = named("link[rel~=canonical][href]")
        twins = named('link[rel~=alternate][type="text/markdown"][href]')
        links = [url for url in dict.fromkeys(named("a[href]")) if _crawlable(url)]
        return links, (twins[0] if twins else None), (canonical[0] if canonical else response.url)

    def take(self, visit: _Visit, seen: set[str], queue: deque[str]) -> None:
        """Plan a visited page and queue the links it names that were not seen yet."""
        site = self.site
        if visit.error is not None:
            self.entries.append(Entry(site.page_id(visit.url), problem_of(visit.error)))
            self.follow(visit.links, seen, queue)
            return
        if not site.in_scope(visit.page):  # redirected, or canonical, elsewhere on the site
            return
        page_id = site.page_id(visit.page)
        source = site.page_id(visit.twin) if visit.twin else page_id
        if visit.url == self.start or site.selection.selects(page_id):
            self.follow(visit.links, seen, queue)
        if not site.selection.selects(source):
            return
        self.states.setdefault(source, []).append(visit.state)
        if source in site.planned:  # another URL of a page already planned
            return
        response = visit.response
        assert response is not None
        if visit.twin:
            site.planned[source] = Planned(visit.twin, visit.page)
        elif response.unchanged:
            site.planned[source] = Planned(visit.url, visit.page, unchanged=True)
        else:
            spooled = site.spool(response.body or b"")
            planned = Planned(visit.url, visit.page, spooled=spooled)
            planned.validators = response.validators
            site.planned[source] = planned

    def follow(self, links: list[str], seen: set[str], queue: deque[str]) -> None:
        """Queue the links not seen yet that robots.txt and the patterns let through."""
        site = self.site
        for link in links:
            if link in seen:
                continue
            seen.add(link)
            if not site.fetcher.allowed(link):
                self.entries.append(Entry(site.page_id(link), DISALLOWED))
            elif site.selection.selects(site.page_id(link)):
                queue.append(link)


def _crawlable(url: str) -> bool:
    """A link to a page or a document, not to an image, an archive or a stylesheet."""
    name = urlsplit(url).path.rsplit("/", 1)[-1]
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name else ""
    return not suffix or f".{suffix}" in _CRAWLED_SUFFIXES or not suffix.isalpha()
