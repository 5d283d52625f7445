"""MDX (Markdown with JSX, as Docusaurus, Nextra and Fumadocs write docs): Markdown chunking,
plus what MDX adds around the text.

A top-level block that starts with ``import`` or ``export`` is an ES module block (MDX reads
it so: up to the next blank line) and is dropped; so are ``{/* comments */}``. Indentation is
layout in MDX, not an indented code block, so indented JSX is reduced like the rest. JSX components
are reduced to their text by ``markup`` (as HTML is in any Markdown file) and Docusaurus
admonitions (``:::tip[Title]``) by the colon-fence reader in ``myst``. Code blocks stay whole.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import ClassVar

from .markdown import MarkdownChunker

_ESM_BLOCK = re.compile(r"(?:import|export)\b")
_JS_COMMENT = re.compile(r"\{\s*/\*.*?\*/\s*\}", re.DOTALL)


@dataclass
class MdxChunker(MarkdownChunker):
    """Splits MDX on headings, like Markdown, without its ES module blocks and comments."""

    indented_code: ClassVar[bool] = False
    markup: ClassVar[re.Pattern[str]] = re.compile(
        MarkdownChunker.markup.pattern + r"|\{\s*/\*", MarkdownChunker.markup.flags
    )

    def reduce_text(self, text: str) -> str:
        if "/*" in text:
            text = _JS_COMMENT.sub("", text)
        return super().reduce_text(text)

    def keeps_block(self, kind: str, text: str) -> bool:
        if kind == "Paragraph" and _ESM_BLOCK.match(text):
            return False
        return super().keeps_block(kind, text)
