"""Chunkers turn a document into chunks; the composite chunker picks one by MIME type.

Add a format without touching the core::

    from duckdb_vectors.chunkers import register_chunker
    register_chunker(MyRstChunker(), mime_types=["text/x-rst"], extensions=[".rst"])

A chunker is any object with ``chunk(text, source)`` (text formats) or
``chunk_bytes(data, source)`` (binary formats such as PDF), returning ``Chunk`` objects.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import PurePath

from ..errors import SkipFile
from ..models import Chunk
from .base import (
    CHUNKING_VERSION,
    DEFAULT_MAX_CHARS,
    BinaryChunker,
    Chunker,
    make_chunks,
    split_text,
)
from .html import HtmlChunker
from .markdown import MarkdownChunker
from .mdx import MdxChunker
from .notebook import NotebookChunker
from .pdf import PdfChunker
from .rst import RstChunker
from .text import TextChunker

TEXT_FALLBACK = "text/plain"
SNIFF_BYTES = 8192  # how much of a file its type is judged by
_MAGIC = {b"%PDF-": "application/pdf"}
_BINARY_MAGIC = (b"\x89PNG", b"\xff\xd8\xff", b"GIF8", b"PK\x03\x04", b"\x7fELF", b"\x1f\x8b")


@dataclass
class CompositeChunker:
    """Dispatches each file to the chunker registered for its MIME type.

    The type comes from the file's extension, corrected by a look at its first bytes (a PDF
    named ``.txt`` is read as a PDF; an image named ``.md`` is skipped as binary). Text that no
    chunker claims goes to ``fallback``.

    Args:
        chunkers: MIME type -> chunker.
        extensions: extension (``.md``) -> MIME type, consulted before ``mimetypes``.
        fallback: the chunker for text-like files of any other type.
    """

    chunkers: dict[str, Chunker | BinaryChunker] = field(default_factory=dict)
    extensions: dict[str, str] = field(default_factory=dict)
    fallback: Chunker = field(default_factory=TextChunker)

    def register(
        self,
        chunker: Chunker | BinaryChunker,
        mime_types: Iterable[str],
        extensions: Iterable[str] = (),
    ) -> None:
        for mime_type in mime_types:
            self.chunkers[mime_type] = chunker
        for extension in extensions:
            self.extensions[extension.lower()] = next(iter(mime_types))

    def mime_type(self, source: str, head: bytes = b"") -> str:
        """The MIME type a file is treated as: its magic bytes win over its extension, but for
        an extension registered to a binary chunker (a ``.docx`` is a zip: its magic alone
        says nothing of what it holds)."""
        for magic, mime_type in _MAGIC.items():
            if head.startswith(magic):
                return mime_type
        suffix = PurePath(source).suffix.lower()
        registered = self.extensions.get(suffix)
        if registered is not None and isinstance(self.chunkers.get(registered), BinaryChunker):
            return registered
        if head.startswith(_BINARY_MAGIC) or b"\x00" in head[:SNIFF_BYTES]:
            return "application/octet-stream"
        return registered or mimetypes.guess_type(f"x{suffix}")[0] or TEXT_FALLBACK

    def can_index(self, source: str, head: bytes) -> bool:
        """Whether a file starting with ``head`` is of a type this chunker indexes."""
        mime_type = self.mime_type(source, head)
        return bool(head.strip()) and (mime_type in self.chunkers or _is_text_like(mime_type))

    def chunk(self, text: str, source: str) -> list[Chunk]:
        """Chunk text, choosing the chunker by the source's extension."""
        chunker = self.chunkers.get(self.mime_type(source))
        if not isinstance(chunker, Chunker):
            chunker = self.fallback
        return chunker.chunk(text, source)

    def chunk_bytes(self, data: bytes, source: str) -> list[Chunk]:
        """Chunk a file's bytes; raises ``SkipFile`` with a reason for what it cannot index."""
        mime_type = self.mime_type(source, data[:SNIFF_BYTES])
        chunker = self.chunkers.get(mime_type)
        if isinstance(chunker, BinaryChunker):
            return chunker.chunk_bytes(data, source)
        if chunker is None and not _is_text_like(mime_type):
            raise SkipFile(f"binary file ({mime_type})")
        text = decode_text(data)
        return (chunker if isinstance(chunker, Chunker) else self.fallback).chunk(text, source)


def decode_text(data: bytes) -> str:
    """UTF-8 (a BOM is honoured, UTF-16 too); anything else is skipped with the byte offset."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as error:
            raise SkipFile(f"invalid UTF-16 at byte {error.start}") from error
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise SkipFile(f"not valid UTF-8 (at byte {error.start}); convert it to UTF-8") from error


def _is_text_like(mime_type: str) -> bool:
    if mime_type.startswith("text/"):
        return True
    suffixes = ("+xml", "+json", "/json", "/xml", "/x-yaml", "/yaml", "/x-sh", "/javascript")
    return mime_type.endswith(suffixes) or mime_type == "application/x-python-code"


def default_chunker(max_chars: int = DEFAULT_MAX_CHARS) -> CompositeChunker:
    """Markdown (MyST too), MDX, reStructuredText, HTML, Jupyter notebooks, PDF and plain
    text, plus every chunker added with ``register_chunker``."""
    composite = CompositeChunker(fallback=TextChunker(max_chars))
    composite.register(
        MarkdownChunker(max_chars), ["text/markdown"], [".md", ".markdown", ".mdown"]
    )
    composite.register(MdxChunker(max_chars), ["text/mdx"], [".mdx"])
    composite.register(PdfChunker(max_chars), ["application/pdf"], [".pdf"])
    composite.register(RstChunker(max_chars), ["text/x-rst"], [".rst", ".rest"])
    composite.register(HtmlChunker(max_chars), ["text/html"], [".html", ".htm"])
    composite.register(NotebookChunker(max_chars), ["application/x-ipynb+json"], [".ipynb"])
    composite.register(TextChunker(max_chars), ["text/plain"], [".txt", ".text", ".log"])
    for chunker, mime_types, extensions in _REGISTERED:
        composite.register(chunker, mime_types, extensions)
    return composite


_REGISTERED: list[tuple[Chunker | BinaryChunker, list[str], list[str]]] = []


def register_chunker(
    chunker: Chunker | BinaryChunker, mime_types: Iterable[str], extensions: Iterable[str] = ()
) -> None:
    """Make ``default_chunker()`` (and so ``index_folder``) use ``chunker`` for these types."""
    _REGISTERED.append((chunker, list(mime_types), list(extensions)))


__all__ = [
    "CHUNKING_VERSION",
    "DEFAULT_MAX_CHARS",
    "SNIFF_BYTES",
    "BinaryChunker",
    "Chunker",
    "CompositeChunker",
    "HtmlChunker",
    "MarkdownChunker",
    "MdxChunker",
    "NotebookChunker",
    "PdfChunker",
    "RstChunker",
    "SkipFile",
    "TextChunker",
    "decode_text",
    "default_chunker",
    "make_chunks",
    "register_chunker",
    "split_text",
]
