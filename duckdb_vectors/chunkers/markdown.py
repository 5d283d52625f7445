"""Markdown: one chunk per heading section, titled with its heading breadcrumb.

Parsed with pyromark (pulldown-cmark). Each top-level block (paragraph, list, quote, code block,
table, HTML) is a unit: a section is packed into chunks of at most ``max_chars`` on block
boundaries, code blocks and tables are cut (on lines) only when one alone exceeds
``max_atomic_chars``, an oversized paragraph on sentences. YAML front matter goes to every
chunk's metadata, not its text; its ``title`` heads the breadcrumb when the document has no
top-level heading.

A chunk holds what a reader of the rendered page sees: HTML and JSX (``markup``), template tags
(``templates``) and MyST directives, roles and targets (``myst``) are reduced to their text,
while code is masked before any reduction and put back byte for byte. The MyST reductions apply
to every Markdown file (MyST files are usually plain ``.md``): what they match is markup a
CommonMark renderer would show literally, so ordinary Markdown passes through unchanged.
"""

from __future__ import annotations

import bisect
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from itertools import accumulate
from typing import Any, ClassVar

import pyromark
import yaml

from ..errors import SkipFile
from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, hard_split, make_chunks, pack, split_text
from .markup import strip_markup
from .myst import (
    ROLE_NAME,
    ColonFences,
    fence_directive,
    is_comment,
    render_directive,
    strip_targets,
)
from .navigation import is_navigation, links_within
from .roles import role_text
from .templates import strip_template_tags

_OPTIONS = pyromark.Options.ENABLE_TABLES
_YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it
_FRONT_MATTER_END = ("\n---\n", "\n...\n", "\n---\r\n")
# Code is replaced by these marks (private-use characters no reduction matches) while the
# text around it is reduced; a role name glued to a mark is read with it.
_MASK = "\ue000{}\ue001"
_MASKED = re.compile(r"\ue000(\d+)\ue001")
# kramdown attribute lists on their own line ({: .class}) and heading ids (## Title {#id}).
_ATTRIBUTE_LIST_LINE = re.compile(r"^[ \t]*\{:[^}\n]*\}[ \t]*(?:\n|\Z)", re.MULTILINE)
_HEADING_ID = re.compile(r"\s*\{#[\w.:-]+\}\s*$")
_HTML_CODE = "<pre"  # an HTML block holding this is code: it is not cut
_ATOMIC_BLOCKS = ("Table", "HtmlBlock")  # (and code blocks)
_SOURCE_ATOMIC = ("CodeBlock", "Table", "HtmlBlock")  # when blocks are kept as written
_LISTINGS = ("List", "Table")


@dataclass
class Block:
    text: str
    atomic: bool
    listing: bool = False  # a list or a table: what a navigation section is made of


@dataclass
class _Heading:
    level: int
    title: str


@dataclass
class Section:
    breadcrumb: list[str]
    level: int = 0  # of its heading
    blocks: list[Block] = field(default_factory=list)


@dataclass(slots=True)
class _Code:
    """A code span or code block inside a top-level block, as UTF-8 byte offsets."""

    start: int
    end: int
    info: str | None  # a code block's info string ("" if none); None for a code span
    content: list[str]  # a code span's code; a MyST directive's content
    indented: bool = False  # an indented code block (no fence)


@dataclass
class _TopLevelBlock:
    """A top-level element of the document, as a span of UTF-8 byte offsets."""

    kind: str
    start: int
    end: int
    heading_level: int = 0
    inline_start: int = -1  # a heading's text
    inline_end: int = -1
    code: list[_Code] = field(default_factory=list)


@dataclass
class SectionChunker:
    """The base of the chunkers that split a document on its headings (Markdown, HTML, reST):
    each section's blocks are packed into chunks titled with its breadcrumb.

    Args:
        max_chars: the largest chunk, in characters (a lone code block or table may exceed it).
        max_atomic_chars: a code block or table larger than this is split on lines after all.
        separator: joins the headings of a breadcrumb.
    """

    max_chars: int = DEFAULT_MAX_CHARS
    max_atomic_chars: int = 8 * DEFAULT_MAX_CHARS
    separator: str = " > "

    def pack_sections(
        self, sections: list[Section], metadata: dict[str, Any], source: str
    ) -> list[Chunk]:
        """Chunks of the sections' blocks, titled with their breadcrumbs."""
        pieces = [
            (piece, self.separator.join(section.breadcrumb) or None, metadata)
            for section in sections
            for piece in self.pack_blocks(section.blocks)
        ]
        return make_chunks(pieces, source)

    def pack_blocks(self, blocks: list[Block]) -> list[str]:
        """A section's blocks as chunk texts of at most ``max_chars``: cut between blocks, a
        code block or table whole unless it alone exceeds ``max_atomic_chars`` (then on
        lines), prose on paragraphs and sentences."""
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


@dataclass
class MarkdownChunker(SectionChunker):
    """Splits Markdown on headings (see ``SectionChunker`` for the other arguments).

    Args:
        reduce_markup: reduce HTML/JSX, template tags and MyST markup to the text a reader
            sees (an HTML block is then text like any other); False keeps each block as
            written.
    """

    reduce_markup: bool = True
    # Whether an indented block is code (MDX has no indented code: indentation is layout).
    indented_code: ClassVar[bool] = True
    # Text that ``reduce_text`` could change: without a match it is not looked at again.
    markup: ClassVar[re.Pattern[str]] = re.compile(
        r"<[A-Za-z/!>]|&[#\w]+;|\{[%{#:]|\)=|\+\+\+|:::|\}`"
    )

    def chunk(self, text: str, source: str) -> list[Chunk]:
        metadata, body = split_front_matter(text)
        root = metadata.get("title") if isinstance(metadata.get("title"), str) else None
        return self.pack_sections(self._sections(body, root), metadata, source)

    def reduce_text(self, text: str) -> str:
        """Text outside code as a reader sees it: markup, template tags and MyST targets
        reduced. Dialects (MDX) extend this."""
        text = strip_targets(strip_template_tags(strip_markup(text)))
        return _ATTRIBUTE_LIST_LINE.sub("", text) if "{:" in text else text

    def keeps_block(self, kind: str, text: str) -> bool:
        """Whether a top-level block (its text with code masked) belongs in a chunk: a
        paragraph of MyST comment lines does not. Dialects (MDX) extend this."""
        return not (kind == "Paragraph" and text[:1] == "%" and is_comment(text))

    def _sections(self, body: str, root: str | None) -> list[Section]:
        headings: list[tuple[int, str]] = []
        sections = [Section(breadcrumb(headings, root))]
        for item in self._blocks(body):
            if isinstance(item, Block):
                sections[-1].blocks.append(item)
                continue
            headings = [(level, name) for level, name in headings if level < item.level]
            headings.append((item.level, item.title))
            sections.append(Section(breadcrumb(headings, root), item.level))
        return _without_navigation([section for section in sections if section.blocks])

    def _render(self, markdown: str) -> str:
        """Markdown (a directive's content) as chunk text, headings kept as lines."""
        return "\n\n".join(
            f"{'#' * item.level} {item.title}" if isinstance(item, _Heading) else item.text
            for item in self._blocks(markdown)
        )

    def _blocks(self, body: str) -> Iterator[Block | _Heading]:
        """The document's headings and its blocks' reduced text, in order."""
        try:
            source = body.encode("utf-8")
        except UnicodeEncodeError as error:
            raise SkipFile(f"not valid UTF-8 text (at character {error.start})") from None
        # Lines as CommonMark counts them: bytes.splitlines, unlike str's, ends them at \n, \r\n
        # or \r only. Bytes: the parser gives byte offsets.
        lines = source.splitlines(keepends=True)
        line_starts = list(accumulate((len(line) for line in lines), initial=0))
        fences = ColonFences()
        covered = 0
        for block in self._top_level_blocks(body, source):
            first = bisect.bisect_right(line_starts, block.start) - 1
            end = max(first + 1, bisect.bisect_left(line_starts, block.end))
            # A line belongs to the first block that claims it: pulldown-cmark can end a block
            # inside the next one's first line (a list's span takes the indentation of the
            # paragraph after it), and that line must not be kept twice.
            start = max(first, covered)
            if start < end:
                skipped = self._uncovered(source, line_starts[covered], line_starts[start], fences)
                if skipped is not None:
                    yield skipped
                covered = end
            if block.heading_level:
                yield self._heading(block, source)
            elif start < end:
                reduced = self._reduce_block(
                    block, source, line_starts[start], line_starts[end], fences
                )
                if reduced is not None:
                    yield reduced
        tail = self._uncovered(source, line_starts[covered], len(source), fences)
        if tail is not None:
            yield tail

    def _top_level_blocks(self, body: str, source: bytes) -> Iterator[_TopLevelBlock]:
        """The parser's top-level blocks (dialects join some)."""
        return _top_level_blocks(body)

    def _uncovered(self, source: bytes, start: int, end: int, fences: ColonFences) -> Block | None:
        """Source lines the parser left out of every block (e.g. link definitions)."""
        if not source[start:end].strip():
            return None
        text = source[start:end].decode()
        if self.reduce_markup:
            text = self._reduce_span(text, source, start, end, [], fences)
        return Block(text.strip("\n"), atomic=False) if text.strip() else None

    def _reduce_block(
        self, block: _TopLevelBlock, source: bytes, start: int, end: int, fences: ColonFences
    ) -> Block | None:
        raw = source[start:end].decode()
        if not self.reduce_markup:
            return Block(raw.strip("\n"), block.kind in _SOURCE_ATOMIC) if raw.strip() else None
        codes = block.code if self.indented_code else [c for c in block.code if not c.indented]
        if block.kind == "CodeBlock" and codes and codes[0].start >= start:
            return self._code_block(codes[0], raw, fences)
        if not self.keeps_block(block.kind, raw):
            return None
        text = self._reduce_span(raw, source, start, end, codes, fences)
        atomic = block.kind in _ATOMIC_BLOCKS
        if block.kind == "HtmlBlock" and _HTML_CODE not in raw:
            # Indentation in HTML is layout, and the block is text now: it may be cut.
            text = "\n".join(line.strip() for line in text.split("\n"))
            atomic = False
        return Block(text.strip("\n"), atomic, block.kind in _LISTINGS) if text.strip() else None

    def _code_block(self, code: _Code, text: str, fences: ColonFences) -> Block | None:
        if fences.dropping:
            return None
        directive = fence_directive(code.info or "")
        if directive is None:
            return Block(text.strip("\n"), atomic=True)
        rendered, is_code = render_directive(*directive, "".join(code.content), self._render)
        return Block(rendered, atomic=is_code) if rendered.strip() else None

    def _heading(self, block: _TopLevelBlock, source: bytes) -> _Heading:
        start, end = block.inline_start, block.inline_end
        text = source[start:end].decode()
        if self.reduce_markup:
            text = self._reduce_span(text, source, start, end, block.code, None)
        text = text.strip().rstrip("#")
        return _Heading(block.heading_level, _HEADING_ID.sub("", text) if "{#" in text else text)

    def _reduce_span(
        self,
        raw: str,
        source: bytes,
        start: int,
        end: int,
        codes: list[_Code],
        fences: ColonFences | None,
    ) -> str:
        """The source text ``raw`` from ``start`` to ``end`` reduced, its code kept. Most text
        holds no markup at all: one regex search tells, and it is returned as it is."""
        dropping = fences is not None and fences.dropping
        has_directive = bool(codes) and any(code.info and code.info[0] == "{" for code in codes)
        if not (dropping or has_directive or self.markup.search(raw)):
            return raw
        codes = [code for code in codes if start <= code.start and code.end <= end]
        masked = _mask(source, start, end, codes)
        text = self.reduce_text(fences.reduce(masked) if fences is not None else masked)
        return self._unmask(text, codes, source) if codes else text

    def _unmask(self, text: str, codes: list[_Code], source: bytes) -> str:
        """Text with each code mark replaced by its code, or by a role's text when a MyST role
        name is glued to it."""
        pieces: list[str] = []
        position = 0
        for mark in _MASKED.finditer(text):
            before = text[position : mark.start()]
            code = codes[int(mark.group(1))]
            role = ROLE_NAME.search(before) if before.endswith("}") else None
            if role is not None and code.info is None:
                pieces.append(before[: role.start()])
                pieces.append(role_text(role.group(1), code.content[0]))
            else:
                pieces.append(before)
                pieces.append(self._code_text(code, source))
            position = mark.end()
        pieces.append(text[position:])
        return "".join(pieces)

    def _code_text(self, code: _Code, source: bytes) -> str:
        directive = fence_directive(code.info) if code.info else None
        if directive is None:
            return source[code.start : code.end].decode()
        return render_directive(*directive, "".join(code.content), self._render)[0]


def breadcrumb(headings: list[tuple[int, str]], root: str | None) -> list[str]:
    """The names of the open ``(level, name)`` headings, after ``root`` unless one is level 1."""
    names = [name for _, name in headings]
    return [root, *names] if root and not any(level == 1 for level, _ in headings) else names


def _without_navigation(sections: list[Section]) -> list[Section]:
    """Sections without navigation sections (``navigation``: lists and tables of little but
    links): one whose links all stay in the tree goes; one linking elsewhere moves into the
    section before it, under a line with its heading (kept with its first block: packing
    never orphans it)."""
    kept: list[Section] = []
    for section in sections:
        # Only lists and tables can be navigation: most sections are settled by that alone.
        listings = all(block.listing for block in section.blocks)
        text = "\n\n".join(block.text for block in section.blocks) if listings else ""
        if not (listings and is_navigation(text)):
            kept.append(section)
        elif links_within(text):
            continue
        elif kept:
            first, *rest = section.blocks
            heading = f"{'#' * section.level} {section.breadcrumb[-1]}"
            kept[-1].blocks.append(Block(f"{heading}\n{first.text}", atomic=False))
            kept[-1].blocks.extend(rest)
        else:
            kept.append(section)
    return kept


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


def _top_level_blocks(body: str) -> Iterator[_TopLevelBlock]:
    """The document's top-level blocks, from the parser's event stream, with the code spans
    and code blocks inside each (a MyST directive's content too) and a heading's inline span.
    Every event passes through this loop: the nested ones (most) get only membership tests."""
    depth = 0
    block = _TopLevelBlock("", 0, 0)
    code: _Code | None = None
    for event, span in pyromark.events_with_range(body, options=_OPTIONS):
        is_tagged = type(event) is dict  # {"Start": ...}, {"Text": ...}; else "SoftBreak"...
        if depth == 0:
            if is_tagged and "Start" in event:
                start = event["Start"]
                block = _TopLevelBlock(_kind(start), span["start"], span["end"])
                if block.kind == "Heading":
                    block.heading_level = int(start["Heading"]["level"][1:])
                elif block.kind == "CodeBlock":
                    code = _new_code_block(span, start["CodeBlock"])
                depth = 1
            else:  # a block without children, e.g. a thematic break
                yield _TopLevelBlock(_kind(event), span["start"], span["end"])
            continue
        if is_tagged:
            if "Text" in event:  # the commonest event: one test
                if code is not None and code.info[:1] == "{":  # a directive's content
                    code.content.append(event["Text"])
            elif "End" in event:
                depth -= 1
                if code is not None and event["End"] == "CodeBlock":
                    block.code.append(code)
                    code = None
                if depth == 0:
                    yield block
                    continue
            elif "Start" in event:
                depth += 1
                start = event["Start"]
                if type(start) is dict and "CodeBlock" in start:
                    code = _new_code_block(span, start["CodeBlock"])
            elif "Code" in event:
                block.code.append(_Code(span["start"], span["end"], None, [event["Code"]]))
        if block.heading_level:
            block.inline_start = span["start"] if block.inline_start < 0 else block.inline_start
            block.inline_end = max(block.inline_end, span["end"])


def _kind(start: str | dict[str, Any]) -> str:
    return start if isinstance(start, str) else next(iter(start))


def _new_code_block(span: dict[str, int], code_block: str | dict[str, str]) -> _Code:
    """A code block from its start event: ``{"Fenced": "python"}`` or ``"Indented"``."""
    if isinstance(code_block, dict):
        return _Code(span["start"], span["end"], code_block.get("Fenced", ""), [])
    return _Code(span["start"], span["end"], "", [], indented=True)


def _mask(source: bytes, start: int, end: int, codes: list[_Code]) -> str:
    """The source from ``start`` to ``end`` with each code span or block replaced by a mark."""
    pieces = []
    position = start
    for index, code in enumerate(codes):
        pieces.append(source[position : code.start].decode())
        pieces.append(_MASK.format(index))
        position = code.end
    pieces.append(source[position:end].decode())
    return "".join(pieces)
