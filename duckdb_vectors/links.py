"""Links between the pages of one index run, rewritten so that a reader can follow them.

A Markdown page links another by a path only the site generator understands: relative to the
page (``../guide/install.md``), to the site's root (Jekyll's ``{% link docs/x.md %}``, which
the chunker reduces to that path), or to the built page (``install.html``). So a link to a
page of the same run becomes that page's citation URL (under ``--base-url``, keeping the
fragment) or, without one, its source id, which ``fetch`` reads. Other links stay as written.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from urllib.parse import unquote, urlsplit

from .citations import PAGE_SUFFIXES, UrlRule
from .models import Chunk

# ``[text](target)`` or ``[text](target "title")``: the target is group 2.
_LINK = re.compile(r"(\]\()([^)\s]+)((?:\s+\"[^\"\n]*\")?\))")
# What may name a page in a document's source: a Markdown link's target, or a template tag's
# page (``chunkers.templates`` reduces ``{% link x.md %}`` to ``x.md``).
_TARGET = re.compile(
    rb"\]\(\s*([^)\s{][^)\s]*)"  # [text](target), not ({% link ... %})
    rb"|\{%-?\s*(?:link|post_url)\s+([^\s%]+)"  # {% link target %}
    rb"|\{\{[<%]\s*(?:rel)?ref\s+\"?([^\"\s>%]+)"  # {{< ref "target" >}}
)
# What a link to a built page, or to a page without its suffix, may name it by.
_BUILT_SUFFIXES = frozenset({"", ".html", ".htm"})


class Pages:
    """The pages of a run, by their path relative to the folder (``guide/install.md``)."""

    def __init__(self, paths: Iterable[str]) -> None:
        self.paths = frozenset(paths)
        self._stems: dict[str, list[str]] = {}
        for path in self.paths:
            self._stems.setdefault(_without_page_suffix(path), []).append(path)

    def find(self, target: str, page: str) -> str | None:
        """The page ``target`` (a link's path, without its fragment) names, linked from
        ``page``: relative to ``page``, to the folder, or to a site root above the folder
        (the longest page path it ends with); None if it names none, or several."""
        relative = posixpath.normpath(posixpath.join(posixpath.dirname(page), target))
        for candidate in (relative, target.lstrip("/")):
            found = self._one(candidate)
            if found is not None:
                return found
        parts = PurePosixPath(target.lstrip("/")).parts
        for start in range(1, len(parts)):
            found = self._one("/".join(parts[start:]))
            if found is not None:
                return found
        return None

    def _one(self, path: str) -> str | None:
        if path in self.paths:
            return path
        stem, suffix = posixpath.splitext(path)
        if suffix.lower() not in _BUILT_SUFFIXES:
            return None
        matches = self._stems.get(stem, []) + self._stems.get(f"{path.rstrip('/')}/index", [])
        return matches[0] if len(matches) == 1 else None


def rewrite(
    chunks: list[Chunk], page: str, pages: Pages, urls: UrlRule, prefix: str
) -> list[Chunk]:
    """``chunks`` of ``page`` with their links to other ``pages`` made followable (see the
    module); ``prefix`` is the run's source prefix, which a source id carries."""

    def followable(link: re.Match[str]) -> str:
        opening, target, closing = link.groups()
        parts = urlsplit(target)
        if parts.scheme or parts.netloc or not parts.path:
            return link.group(0)
        found = pages.find(unquote(parts.path), page)
        if found is None:
            return link.group(0)
        url = urls.url(found, {})
        if url is not None:
            return f"{opening}{url}{'#' + parts.fragment if parts.fragment else ''}{closing}"
        return f"{opening}{prefix}{found}{closing}"  # a fragment would read as a chunk id

    rewritten = []
    for chunk in chunks:
        text = _LINK.sub(followable, chunk.text) if "](" in chunk.text else chunk.text
        rewritten.append(chunk if text == chunk.text else chunk.model_copy(update={"text": text}))
    return rewritten


def fingerprint(data: bytes, page: str, pages: Pages) -> str:
    """What the rewritten links of the document ``page`` (its bytes ``data``) depend on besides
    the bytes: which page each link target in it names, if any. A run compares it to decide
    whether an unchanged file's chunks still hold: a page added or removed elsewhere changes
    the links that name it."""
    named = []
    for match in _TARGET.finditer(data):
        target = next(group for group in match.groups() if group).decode("utf-8", "replace")
        parts = urlsplit(target)
        if not (parts.scheme or parts.netloc) and parts.path:
            named.append(f"{parts.path}={pages.find(unquote(parts.path), page)}")
    return hashlib.sha256("\n".join(sorted(set(named))).encode()).hexdigest()[:16]


def _without_page_suffix(path: str) -> str:
    stem, suffix = posixpath.splitext(path)
    return stem if suffix.lower() in PAGE_SUFFIXES else path
