"""Where a chunk can be cited: the public URL of the page it came from.

An index run records each document's URL in its chunks' metadata under ``url`` (outside the
etag: a new URL re-embeds nothing), which hits return as their ``url``. It comes from the
page's front matter when that names where the page is (``FRONT_MATTER_KEYS``, as Jekyll, Hugo
and Docusaurus use them; a relative one only with ``base_url``), else from the source path
under ``base_url``, its suffix rewritten the way the site is built (``style``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any, Literal
from urllib.parse import quote, urljoin, urlsplit

from .errors import InvalidUrlError
from .models import Chunk

URL_KEY = "url"  # the metadata key a chunk's URL is recorded under
# Every document of an index is a resource at this URI (the MCP server reads them).
DOCUMENT_URI_PREFIX = "duckdb-vectors://doc/"
FRONT_MATTER_KEYS = ("permalink", "url", "slug")
UrlStyle = Literal["html", "pretty", "source"]
URL_STYLES: tuple[UrlStyle, ...] = ("html", "pretty", "source")
# Source suffixes that a site generator turns into pages (others, e.g. a PDF, are served as is).
PAGE_SUFFIXES = frozenset({".md", ".markdown", ".mdx", ".rst", ".txt", ".ipynb", ".html", ".htm"})


@dataclass(frozen=True)
class UrlRule:
    """How an index run finds each document's URL.

    Args:
        base_url: the site's address, e.g. ``https://docs.example.com/``; None: URLs come only
            from front matter that names an absolute one.
        style: how a source path becomes a page path: ``html`` (``guide/install.md`` ->
            ``guide/install.html``), ``pretty`` (-> ``guide/install/``; ``guide/index.md`` ->
            ``guide/``) or ``source`` (the path as it is).
    """

    base_url: str | None = None
    style: UrlStyle = "html"

    def __post_init__(self) -> None:
        if self.style not in URL_STYLES:
            raise InvalidUrlError(f"url style must be one of {', '.join(URL_STYLES)}")
        if self.base_url is not None:
            parts = urlsplit(self.base_url)
            if parts.scheme not in ("http", "https") or not parts.netloc:
                raise InvalidUrlError(
                    f"--base-url {self.base_url!r} is not an http(s) URL;"
                    " give the site's address, e.g. https://docs.example.com/"
                )
            if not self.base_url.endswith("/"):  # so a relative path joins below it
                object.__setattr__(self, "base_url", self.base_url + "/")

    def url(self, path: str, front_matter: Mapping[str, Any]) -> str | None:
        """The URL of the document at ``path`` (relative to the indexed folder)."""
        named = _named_url(front_matter)
        if named is not None:
            if urlsplit(named).scheme:
                return named
            return urljoin(self.base_url, named) if self.base_url else None
        if self.base_url is None:
            return None
        return urljoin(self.base_url, quote(self._page_path(path)))

    def cite(self, chunks: list[Chunk], path: str, known: str | None = None) -> list[Chunk]:
        """``chunks`` of the document at ``path``, each with the document's URL recorded:
        ``known`` when its source knows it (a page's own address), else as the rule finds it."""
        if not chunks:
            return chunks
        url = known or self.url(path, chunks[0].metadata)
        if url is None:
            return chunks
        return [
            chunk.model_copy(update={"metadata": {**chunk.metadata, URL_KEY: url}})
            for chunk in chunks
        ]

    def _page_path(self, path: str) -> str:
        page = PurePosixPath(path)
        if self.style == "source" or page.suffix.lower() not in PAGE_SUFFIXES:
            return path
        if self.style == "html":
            return str(page.with_suffix(".html"))
        folder = page.parent if page.stem.lower() == "index" else page.with_suffix("")
        return "" if str(folder) == "." else f"{folder}/"


def document_uri(source: str | None) -> str | None:
    """The resource URI of the document ``source``, if the chunk has a source."""
    return None if source is None else DOCUMENT_URI_PREFIX + quote(source, safe="/")


def url_of(chunk: Chunk) -> str | None:
    """The URL recorded for a chunk, if it is an absolute one."""
    url = chunk.metadata.get(URL_KEY)
    return url if isinstance(url, str) and urlsplit(url).scheme in ("http", "https") else None


def _named_url(front_matter: Mapping[str, Any]) -> str | None:
    for key in FRONT_MATTER_KEYS:
        value = front_matter.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None
