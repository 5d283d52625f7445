"""Markdown: one chunk per heading section, titled with its heading breadcrumb.

Parsed with markdown-it-py (CommonMark with tables). Each top-level block (paragraph, list,
quote, code block, table, HTML) is a unit: a section is packed into chunks of at most
``max_chars`` on block boundaries, code blocks and tables are never cut in the middle (unless
one alone exceeds ``max_atomic_chars``, when it is split on lines), and an oversized paragraph
is split on sentences. YAML front matter goes to every chunk's metadata, not into its text;
its ``title`` heads the breadcrumb when the document has no top-level heading.

(The original design used DuckDB's community ``markdown`` extension, which must be downloaded
at run time and so cannot work offline or in a ``--network none`` container.)
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import yaml
from markdown_it import MarkdownIt
from markdown_it.token import Token

from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, hard_split, make_chunks, pack, split_text

_ATOMIC_BLOCKS = {"fence", "code_block", "table_open", "html_block"}
# Only the block structure is needed; skipping inline parsing halves the parse time.
_PARSER = MarkdownIt("commonmark").enable("table").disable("inline")
# Lines as CommonMark (and so markdown-it's token.map) counts them: str.splitlines would also
# split at \f, \x1c-\x1e, \x85, \u2028 and \u2029 and put the line numbers out of step.
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+$")
_FRONT_MATTER_END = ("\n---\n", "\n...\n", "\n---\r\n")


@dataclass
class _Block:
    text: str
    atomic: bool


@dataclass
class _Section:
    breadcrumb: list[str]
    blocks: list[_Block] = field(default_factory=list)


@dataclass
class MarkdownChunker:
    """Splits Markdown on headings.

    Args:
        max_chars: the largest chunk, in characters (a lone code block or table may exceed it).
        max_atomic_chars: a code block or table larger than this is split on lines after all.
        separator: joins the headings of a breadcrumb.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    max_atomic_chars: int = 8 * DEFAULT_MAX_CHARS
    separator: str = " > "

    def chunk(self, text: str, source: str) -> list[Chunk]:
        metadata, body = split_front_matter(text)
        root = metadata.get("title") if isinstance(metadata.get("title"), str) else None
        pieces = []
        for section in _sections(body, root):
            title = self.separator.join(section.breadcrumb) or None
            for piece in self._pack(section.blocks):
                pieces.append((piece, title, metadata))
        return make_chunks(pieces, source)

    def _pack(self, blocks: list[_Block]) -> list[str]:
        units: list[str] = []
        for block in blocks:
            if block.atomic and len(block.text) <= self.max_atomic_chars:
                units.append(block.text)
            elif block.atomic:
                lines = [
                    piece
                    for line in block.text.split("\n")
                    for piece in hard_split(line, self.max_chars)
                ]
                units.extend(pack(lines, self.max_chars, "\n"))
            else:
                units.extend(split_text(block.text, self.max_chars))
        return list(pack(units, self.max_chars, "\n\n"))


def split_front_matter(text: str) -> tuple[dict[str, Any], str]:
    """YAML front matter (``---`` ... ``---`` at the very start) as a JSON-safe dict, and the
    rest. Front matter that is not a YAML mapping is left in the text."""
    if not text.startswith("---\n") and not text.startswith("---\r\n"):
        return {}, text
    ends = [(text.find(end, 3), end) for end in _FRONT_MATTER_END]
    found = [(index, end) for index, end in ends if index != -1]
    if not found:
        return {}, text
    index, end = min(found)
    try:
        parsed = yaml.safe_load(text[4:index])
    except yaml.YAMLError:
        return {}, text
    if not isinstance(parsed, dict):
        return {}, text
    return json.loads(json.dumps(parsed, default=str)), text[index + len(end) :]


def _sections(body: str, root: str | None) -> list[_Section]:
    lines = _LINE.findall(body)
    tokens = _PARSER.parse(body)
    headings: list[tuple[int, str]] = []
    sections = [_Section([root] if root else [])]
    covered = 0
    for index, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or token.map is None:
            continue
        start, end = token.map
        _add_uncovered(sections[-1], lines, covered, start)
        covered = max(covered, end)
        if token.type == "heading_open":
            level = int(token.tag[1:])
            headings = [(lvl, name) for lvl, name in headings if lvl < level]
            headings.append((level, _inline_text(tokens[index + 1])))
            has_h1 = any(lvl == 1 for lvl, _ in headings)
            prefix = [] if has_h1 or not root else [root]
            sections.append(_Section(prefix + [name for _, name in headings]))
        else:
            block_text = "".join(lines[start:end]).strip("\n")
            if block_text.strip():
                sections[-1].blocks.append(_Block(block_text, token.type in _ATOMIC_BLOCKS))
    _add_uncovered(sections[-1], lines, covered, len(lines))
    return [section for section in sections if section.blocks]


def _add_uncovered(section: _Section, lines: list[str], start: int, end: int) -> None:
    """Keep source lines the parser left out of every block (e.g. link definitions)."""
    text = "".join(lines[start:end]).strip("\n")
    if text.strip():
        section.blocks.append(_Block(text, atomic=False))


def _inline_text(token: Token) -> str:
    return token.content.strip().rstrip("#").strip()
