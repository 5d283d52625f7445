"""A document as headed sections of text blocks: what the reStructuredText and HTML chunkers
reduce a page to, packed into chunks the way Markdown's are.

A chunk's title is its heading breadcrumb (``Guide > Install > Linux``). As in Markdown, a
level-1 heading starts a breadcrumb; under lower headings, or before any, the document's
``root`` title (an HTML page's ``<title>``) stands first. Code blocks and tables are atomic
blocks: packed whole, split on lines only when one alone is enormous.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import regex

from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, make_chunks
from .markdown import Block, MarkdownChunker  # Markdown's packing, reused as it is

_BACKTICK_RUN = regex.compile(r"`{3,}")


@dataclass
class _Section:
    breadcrumb: list[str]
    blocks: list[Block] = field(default_factory=list)


@dataclass
class Outline:
    """Headings and blocks in document order.

    Args:
        root: the document's title, shown before headings that are not level 1.
        metadata: stored with every chunk of the document.
    """

    root: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: list[_Section] = field(default_factory=list)
    _headings: list[tuple[int, str]] = field(default_factory=list)

    def heading(self, level: int, text: str) -> None:
        """Start a section under a heading of ``level`` (1 is the top)."""
        text = " ".join(text.split())
        if not text:
            return
        self._headings = [(lvl, name) for lvl, name in self._headings if lvl < level]
        self._headings.append((level, text))
        self.sections.append(_Section(self._breadcrumb()))

    def add(self, text: str, *, atomic: bool = False) -> None:
        """Add a block to the current section: prose, or an atomic code block or table."""
        if not text.strip():
            return
        if not self.sections:
            self.sections.append(_Section(self._breadcrumb()))
        self.sections[-1].blocks.append(Block(text.strip("\n"), atomic))

    def chunks(
        self,
        source: str,
        max_chars: int = DEFAULT_MAX_CHARS,
        max_atomic_chars: int = 8 * DEFAULT_MAX_CHARS,
        separator: str = " > ",
    ) -> list[Chunk]:
        packer = MarkdownChunker(max_chars, max_atomic_chars, separator)
        pieces = [
            (piece, separator.join(section.breadcrumb) or None, self.metadata)
            for section in self.sections
            for piece in packer.pack_blocks(section.blocks)
        ]
        return make_chunks(pieces, source)

    def _breadcrumb(self) -> list[str]:
        names = [name for _, name in self._headings]
        if self.root and not any(level == 1 for level, _ in self._headings):
            return [self.root, *names]
        return names


def fenced(code: str, language: str = "") -> str:
    """A code block as a Markdown fence, the form code takes in every chunk of the index;
    the fence is longer than any run of backticks inside the code."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{code.strip(chr(10))}\n{fence}"
