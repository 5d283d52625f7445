"""An ``llms.txt`` (or ``llms-full.txt``) at an ``http(s)://`` URL.

``llms.txt`` is a Markdown list of a site's pages for language models: each link it makes to
a page of the same origin, below the file's folder, is a document (a ``.md`` link is read as
it is, and a page listed beside its ``.md`` twin is read as the twin; see ``web``). Ids are the
URL paths relative to the file's folder.

``llms-full.txt`` holds the pages themselves, one after another. When its pages carry their
address (a ``Source: URL`` or ``URL: URL`` line just under their heading, as generators write
them), each such heading starts a document whose id is that URL's path, with ``.md``: the text
is Markdown whatever the page was. Otherwise its ``#`` headings split it (``##`` when it has a
single ``#`` title), and a heading's slug names its document. Each section carries the file's
validators, so a refresh asks once whether the file changed.
"""

from __future__ import annotations

import logging
import posixpath
import re
from collections.abc import Iterator, Mapping, Sequence

from ..errors import FetchError
from . import Entry, Fetched, Validators
from .http import Response
from .web import Planned, WebSource, absolute, is_web, normal

logger = logging.getLogger(__name__)

# ``[text](target)`` or ``[text](<target> "title")``: the target is group 1.
_LINK = re.compile(r"\[[^\]\n]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"\n]*\")?\s*\)")
_HEADING = re.compile(r"^(#{1,2})\s+(.+?)\s*#*\s*$")
_ADDRESS = re.compile(r"^\s*(?:source|url)\s*:\s*<?(https?://[^\s>]+)>?\s*$", re.IGNORECASE)
_FENCE = re.compile(r"^\s*(```|~~~)")
_NAMES = ("llms.txt", "llms-full.txt")


class LlmsTxtSource(WebSource):
    kind = "llms.txt"

    @classmethod
    def matches(cls, location: str) -> bool:
        path = location.split("?", 1)[0].split("#", 1)[0]
        return is_web(location) and path.rsplit("/", 1)[-1] in _NAMES

    @property
    def full(self) -> bool:
        return self.address.url.endswith("llms-full.txt")

    def list(self, previous: Mapping[str, Validators]) -> list[Entry]:
        self.start()
        stored = _shared(previous) if self.full else None
        response = self._get(stored)
        if response.unchanged and stored is not None:
            for source in previous:
                self.planned[source] = Planned(self.location, self.location, unchanged=True)
            return [Entry(source) for source in sorted(previous)]
        text = (response.body or b"").decode("utf-8", "replace")
        if not self.full:
            links = [absolute(match.group(1), self.location) for match in _LINK.finditer(text)]
            self._warn_outside(links)
            return sorted(self.plan(links), key=lambda entry: entry.source)
        self._plan_sections(text, response.validators)
        return self.bounded(Entry(source) for source in sorted(self.planned))

    def read(
        self, entries: Sequence[Entry], previous: Mapping[str, Validators]
    ) -> Iterator[Fetched]:
        # The run may not take the 304 the listing got (its chunker settings changed): then
        # the sections are read from the file again.
        if any(
            planned.unchanged and source not in previous for source, planned in self.planned.items()
        ):
            response = self._get(None)
            self._plan_sections(
                (response.body or b"").decode("utf-8", "replace"), response.validators
            )
        yield from super().read(entries, previous)

    def _warn_outside(self, links: list[str]) -> None:
        outside = {url for url in map(normal, links) if is_web(url) and not self.in_scope(url)}
        same_site = [url for url in outside if url.startswith(self.origin + "/")]
        if same_site:
            logger.warning(
                "%s: %d linked pages of the site are outside %s and are not read",
                self.location,
                len(same_site),
                self.root,
            )

    def _get(self, stored: Validators | None) -> Response:
        try:
            return self.fetcher.get(self.location, stored)
        except FetchError as error:
            raise self.unreadable(error) from None

    def _plan_sections(self, text: str, validators: dict[str, str]) -> None:
        for source, url, section in self._sections(text):
            self.planned[source] = Planned(
                self.location, url, data=section.encode(), validators=validators
            )

    def _sections(self, text: str) -> list[tuple[str, str, str]]:
        """(id, citation URL, Markdown) of each page of an llms-full.txt."""
        lines = text.splitlines(keepends=True)
        headings = _headings(lines)
        addressed = [(index, url) for index, _, _, url in headings if url]
        if addressed:
            starts = addressed
        else:
            level = 1 if sum(depth == 1 for _, depth, _, _ in headings) > 1 else 2
            starts = [(index, None) for index, depth, _, _ in headings if depth == level]
        titles = {index: title for index, _, title, _ in headings}
        sections = []
        if not starts or "".join(lines[: starts[0][0]]).strip():
            # What comes before the first page (the file's title and summary).
            end = starts[0][0] if starts else len(lines)
            sections.append(("index.md", self.location, "".join(lines[:end])))
        for number, (index, url) in enumerate(starts):
            end = starts[number + 1][0] if number + 1 < len(starts) else len(lines)
            body = "".join(lines[index:end])
            if url is not None and self.in_scope(normal(url)):
                source = _as_markdown(self.page_id(normal(url)))
            else:
                source = _slug(titles[index]) + ".md"
            sections.append((source, url or self.location, body))
        return _unique(sections)


def _headings(lines: list[str]) -> list[tuple[int, int, str, str | None]]:
    """(line, depth, title, address) of each ``#``/``##`` heading outside code blocks; the
    address from a ``Source:`` line within the three lines under it."""
    found = []
    fenced = False
    for index, line in enumerate(lines):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        heading = None if fenced else _HEADING.match(line)
        if heading is None:
            continue
        address = None
        for below in lines[index + 1 : index + 4]:
            if (match := _ADDRESS.match(below)) is not None:
                address = match.group(1)
                break
        found.append((index, len(heading.group(1)), heading.group(2), address))
    return found


def _as_markdown(source: str) -> str:
    stem, suffix = posixpath.splitext(source)
    return source if suffix.lower() in (".md", ".markdown") else f"{stem}.md"


def _slug(title: str) -> str:
    slug = re.sub(r"[^\w]+", "-", title.lower()).strip("-")
    return slug or "section"


def _unique(sections: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """Sections with ids made unique (``-2``, ``-3`` ... after a repeated one)."""
    seen: dict[str, int] = {}
    unique = []
    for source, url, body in sections:
        count = seen.get(source, 0) + 1
        seen[source] = count
        if count > 1:
            stem, suffix = posixpath.splitext(source)
            source = f"{stem}-{count}{suffix}"
        unique.append((source, url, body))
    return unique


def _shared(previous: Mapping[str, Validators]) -> Validators | None:
    """The llms-full.txt's validators every stored section carries, if they all agree."""
    distinct = {tuple(sorted(validators.items())) for validators in previous.values()}
    return dict(distinct.pop()) if len(distinct) == 1 else None
