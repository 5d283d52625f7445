"""MDX (Markdown with JSX, as Docusaurus, Nextra and Fumadocs write docs): Markdown chunking
without ES module blocks (a paragraph starting with ``import`` or ``export``) and
``{/* comments */}``. Indentation is layout in MDX, not an indented code block.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import ClassVar

from .markdown import MarkdownChunker, _TopLevelBlock
from .markup import ends_inside_a_tag

_MAY_OPEN_A_TAG = ("HtmlBlock", "Paragraph")
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

    def _top_level_blocks(self, body: str, source: bytes) -> Iterator[_TopLevelBlock]:
        """Blocks, with a component whose props run on past blank lines made one HTML block
        (MDX reads them as one JSX expression; Markdown would cut it at the blank line)."""
        joined: _TopLevelBlock | None = None
        for block in super()._top_level_blocks(body, source):
            if joined is None:
                if block.kind in _MAY_OPEN_A_TAG and _ends_inside_a_tag(source, block):
                    joined = _TopLevelBlock("HtmlBlock", block.start, block.end)
                else:
                    yield block
                continue
            joined.end = block.end
            if not _ends_inside_a_tag(source, joined):
                yield joined
                joined = None
        if joined is not None:
            yield joined

    def keeps_block(self, kind: str, text: str) -> bool:
        if kind == "Paragraph" and _ESM_BLOCK.match(text):
            return False
        return super().keeps_block(kind, text)


def _ends_inside_a_tag(source: bytes, block: _TopLevelBlock) -> bool:
    text = source[block.start : block.end]
    return b"<" in text and ends_inside_a_tag(text.decode())
