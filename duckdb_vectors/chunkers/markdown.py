"""Markdown: one chunk per heading section, titled with its heading breadcrumb.

Parsed with pyromark (pulldown-cmark: CommonMark with tables). Each top-level block
(paragraph, list, quote, code block, table, HTML) is a unit: a section is packed into chunks
of at most ``max_chars`` on block boundaries, code blocks and tables are never cut in the
middle (unless one alone exceeds ``max_atomic_chars``, when it is split on lines), and an
oversized paragraph is split on sentences. YAML front matter goes to every chunk's metadata,
not into its text; its ``title`` heads the breadcrumb when the document has no top-level
heading.

(The original design used DuckDB's community ``markdown`` extension, which must be downloaded
at run time and so cannot work offline or in a ``--network none`` container.)
"""

from __future__ import annotations

import bisect
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any

import pyromark
import yaml

from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, SkipFile, hard_split, make_chunks, pack, split_text

# pulldown-cmark (Rust) parses the DuckDB docs 16x faster than markdown-it-py did; parsing was
# the largest cost of an index run after embedding.
_OPTIONS = pyromark.Options.ENABLE_TABLES
_ATOMIC_BLOCKS = {"CodeBlock", "Table", "HtmlBlock"}
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it
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
        parsed = yaml.load(text[4:index], Loader=_YAML_LOADER)
    except yaml.YAMLError:
        return {}, text
    if not isinstance(parsed, dict):
        return {}, text
    return json.loads(json.dumps(parsed, default=str)), text[index + len(end) :]


@dataclass
class _TopLevelBlock:
    """A top-level element of the document, as a span of UTF-8 byte offsets."""

    kind: str
    start: int
    end: int
    heading_level: int = 0
    heading_text: str = ""


def _sections(body: str, root: str | None) -> list[_Section]:
    try:
        source = body.encode("utf-8")
    except UnicodeEncodeError as error:
        raise SkipFile(f"not valid UTF-8 text (at character {error.start})") from None
    # Lines as CommonMark counts them (bytes.splitlines ends them at \n, \r\n or \r only; for
    # str it would also split at \f, \x85, \u2028...). Bytes: the parser gives byte offsets.
    lines = source.splitlines(keepends=True)
    line_starts = list(accumulate((len(line) for line in lines), initial=0))
    headings: list[tuple[int, str]] = []
    sections = [_Section([root] if root else [])]
    covered = 0
    for block in _top_level_blocks(body, source):
        first = bisect.bisect_right(line_starts, block.start) - 1
        end = max(first + 1, bisect.bisect_left(line_starts, block.end))
        # A line belongs to the first block that claims it: pulldown-cmark can end a block
        # inside the next one's first line (a list's span takes the indentation of the
        # paragraph after it), and that line must not be kept twice.
        start = max(first, covered)
        if start < end:
            _add_uncovered(sections[-1], lines, covered, start)
            covered = end
        if block.heading_level:
            level = block.heading_level
            headings = [(lvl, name) for lvl, name in headings if lvl < level]
            headings.append((level, block.heading_text.strip().rstrip("#").strip()))
            has_h1 = any(lvl == 1 for lvl, _ in headings)
            prefix = [] if has_h1 or not root else [root]
            sections.append(_Section(prefix + [name for _, name in headings]))
        elif start < end:
            block_text = _decode(lines[start:end]).strip("\n")
            if block_text.strip():
                sections[-1].blocks.append(_Block(block_text, block.kind in _ATOMIC_BLOCKS))
    _add_uncovered(sections[-1], lines, covered, len(lines))
    return [section for section in sections if section.blocks]


def _top_level_blocks(body: str, source: bytes) -> Iterator[_TopLevelBlock]:
    """The document's top-level blocks, from the parser's event stream. A heading's text is
    its inline source (``Using `COPY` ``), from the first to the last inline event's span.

    Every event of the document passes through this loop, so the nested ones (most of them)
    get only dict membership tests: 6x less time here than naming each event's tag.
    """
    depth = 0
    block = _TopLevelBlock("", 0, 0)
    inline_start, inline_end = -1, -1
    for event, span in pyromark.events_with_range(body, options=_OPTIONS):
        is_tagged = type(event) is dict  # {"Start": ...}, {"Text": ...}; else "SoftBreak"...
        if depth == 0:
            if is_tagged and "Start" in event:
                block = _TopLevelBlock(_kind(event["Start"]), span["start"], span["end"])
                if block.kind == "Heading":
                    block.heading_level = int(event["Start"]["Heading"]["level"][1:])
                inline_start, inline_end = -1, -1
                depth = 1
            else:  # a block without children, e.g. a thematic break
                yield _TopLevelBlock(_kind(event), span["start"], span["end"])
            continue
        if is_tagged and "End" in event:
            depth -= 1
            if depth == 0:
                if block.heading_level and inline_start >= 0:
                    block.heading_text = source[inline_start:inline_end].decode()
                yield block
                continue
        elif is_tagged and "Start" in event:
            depth += 1
        if block.heading_level:
            inline_start = span["start"] if inline_start < 0 else inline_start
            inline_end = max(inline_end, span["end"])


def _kind(start: str | dict[str, Any]) -> str:
    return start if isinstance(start, str) else next(iter(start))


def _decode(lines: list[bytes]) -> str:
    return b"".join(lines).decode()


def _add_uncovered(section: _Section, lines: list[bytes], start: int, end: int) -> None:
    """Keep source lines the parser left out of every block (e.g. link definitions)."""
    text = _decode(lines[start:end]).strip("\n")
    if text.strip():
        section.blocks.append(_Block(text, atomic=False))
