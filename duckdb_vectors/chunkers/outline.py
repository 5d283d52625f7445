"""A document as headed sections of text blocks: what the reStructuredText and HTML chunkers
reduce a page to, for ``SectionChunker.pack_sections``.

As in Markdown, a level-1 heading starts a breadcrumb; under lower headings, or before any,
the document's ``root`` title (an HTML page's ``<title>``) stands first.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .markdown import Block, Section, breadcrumb


@dataclass
class Outline:
    """Headings and blocks in document order.

    Args:
        root: the document's title, shown before headings that are not level 1.
        metadata: stored with every chunk of the document.
    """

    root: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    sections: list[Section] = field(default_factory=list)
    _headings: list[tuple[int, str]] = field(default_factory=list)

    def heading(self, level: int, text: str) -> None:
        """Start a section under a heading of ``level`` (1 is the top)."""
        text = " ".join(text.split())
        if not text:
            return
        self._headings = [(lvl, name) for lvl, name in self._headings if lvl < level]
        self._headings.append((level, text))
        self.sections.append(Section(breadcrumb(self._headings, self.root)))

    def add(self, text: str, *, atomic: bool = False) -> None:
        """Add a block to the current section: prose, or an atomic code block or table."""
        if not text.strip():
            return
        if not self.sections:
            self.sections.append(Section(breadcrumb(self._headings, self.root)))
        self.sections[-1].blocks.append(Block(text.strip("\n"), atomic))
