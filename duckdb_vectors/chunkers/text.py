"""Plain text (and any text-like file no other chunker claims): paragraphs under a size limit."""

from __future__ import annotations

from dataclasses import dataclass

from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, make_chunks, split_text


@dataclass
class TextChunker:
    """Splits on blank lines, packing paragraphs into chunks of at most ``max_chars``."""

    max_chars: int = DEFAULT_MAX_CHARS

    def chunk(self, text: str, source: str) -> list[Chunk]:
        return make_chunks(
            [(piece, None, {}) for piece in split_text(text, self.max_chars)], source
        )
