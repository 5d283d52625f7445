"""What a chunker is, and the size-bounded splitting and code fences every chunker shares."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Protocol, runtime_checkable

import regex

from ..models import Chunk

DEFAULT_MAX_CHARS = 2000
# Part of every indexed file's chunker key: bump it when a built-in chunker cuts the same input
# differently, so the next index run re-chunks every file (vectors of unchanged text are reused)
# and an updated index equals a fresh one.
CHUNKING_VERSION = 7

_PARAGRAPH_BREAK = regex.compile(r"\n[ \t]*\n+")
# A sentence ends at . ! ? (or their CJK forms) followed by whitespace, or at a CJK full stop.
_SENTENCE_END = regex.compile(r"(?<=[.!?])\s+|(?<=[\u3002\uff01\uff1f])")
_BACKTICK_RUN = regex.compile(r"`{3,}")


@runtime_checkable
class Chunker(Protocol):
    """Anything that turns a document's text into chunks."""

    def chunk(self, text: str, source: str) -> list[Chunk]: ...


@runtime_checkable
class BinaryChunker(Protocol):
    """A chunker for formats that are not plain text (PDF): it gets the file's bytes."""

    def chunk_bytes(self, data: bytes, source: str) -> list[Chunk]: ...


def make_chunks(pieces: list[tuple[str, str | None, dict[str, Any]]], source: str) -> list[Chunk]:
    """Chunks from ``(text, title, metadata)`` pieces, with ids ``<source>#<position>``."""
    kept = [piece for piece in pieces if piece[0].strip()]
    return [
        Chunk(
            chunk_id=f"{source}#{position}",
            text=text,
            title=title,
            metadata=metadata,
            source=source,
            position=position,
        )
        for position, (text, title, metadata) in enumerate(kept)
    ]


def split_text(text: str, max_chars: int = DEFAULT_MAX_CHARS) -> list[str]:
    """Split text into pieces of at most ``max_chars``: on paragraphs, then sentences, then
    whitespace, and only as a last resort inside a word. Nothing is dropped but the
    whitespace at the cut points."""
    pieces: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(text):
        if paragraph.strip():
            pieces.extend(_bounded(paragraph.strip(), max_chars))
    return list(pack(pieces, max_chars, "\n\n"))


def pack(pieces: list[str], max_chars: int, separator: str) -> Iterator[str]:
    """Greedily join consecutive pieces while the result stays within ``max_chars``."""
    current = ""
    for piece in pieces:
        candidate = f"{current}{separator}{piece}" if current else piece
        if len(candidate) <= max_chars or not current:
            current = candidate
        else:
            yield current
            current = piece
    if current:
        yield current


def _bounded(paragraph: str, max_chars: int) -> list[str]:
    if len(paragraph) <= max_chars:
        return [paragraph]
    sentences = [s for s in _SENTENCE_END.split(paragraph) if s]
    if len(sentences) > 1:
        pieces = [piece for s in sentences for piece in _bounded(s.strip(), max_chars) if piece]
        return list(pack(pieces, max_chars, " "))
    return hard_split(paragraph, max_chars)


def hard_split(text: str, max_chars: int) -> list[str]:
    """Cut text into pieces of at most ``max_chars``, at a space where there is one."""
    pieces = []
    while len(text) > max_chars:
        cut = text.rfind(" ", max_chars // 2, max_chars + 1)
        cut = cut if cut > 0 else max_chars
        pieces.append(text[:cut].strip())
        text = text[cut:].strip()
    if text:
        pieces.append(text)
    return pieces


def fenced(code: str, language: str = "") -> str:
    """A code block as a Markdown fence, the form code takes in every chunk of the index;
    the fence is longer than any run of backticks inside the code."""
    longest = max((len(run) for run in _BACKTICK_RUN.findall(code)), default=2)
    fence = "`" * (longest + 1)
    return f"{fence}{language}\n{code.strip(chr(10))}\n{fence}"
