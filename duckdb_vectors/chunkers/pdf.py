"""PDF: one chunk per page (split further when a page is long), the page number in metadata."""

from __future__ import annotations

import io
import logging
from dataclasses import dataclass

import regex

from ..errors import SkipFile
from ..models import Chunk
from .base import DEFAULT_MAX_CHARS, make_chunks, split_text

NO_TEXT_LAYER = "no text layer (OCR not supported)"
UNREADABLE_TEXT = "text layer is unreadable (a font without a Unicode map?)"
# Below this share of letters among visible characters, extracted text is glyph-code noise.
_MIN_LETTER_SHARE = 0.2
_LETTER = regex.compile(r"\p{L}")
logger = logging.getLogger(__name__)


@dataclass
class PdfChunker:
    """Extracts each page's text with pypdf.

    Args:
        max_chars: a page longer than this is split on paragraphs and sentences.
        max_pages: pages beyond this are not read (bounds time on huge documents).
    """

    max_chars: int = DEFAULT_MAX_CHARS
    max_pages: int = 5000

    def chunk_bytes(self, data: bytes, source: str) -> list[Chunk]:
        from pypdf import PdfReader  # imported late: only needed when PDFs are indexed

        logging.getLogger("pypdf").setLevel(logging.ERROR)  # it warns per malformed object
        try:
            reader = PdfReader(io.BytesIO(data))
            if reader.is_encrypted and not _opens_without_password(reader):
                raise SkipFile("encrypted PDF that needs a password")
            title = _title(reader)
            pages = [(page.extract_text() or "").strip() for page in reader.pages[: self.max_pages]]
            total_pages = len(reader.pages)
        except SkipFile:
            raise
        # Everything tried above is pypdf reading the file, and on a malformed one it raises
        # more than its own errors: NotImplementedError for an encryption handler it lacks, and
        # AttributeError from inside its reader (7.1: an /Encrypt held in an object stream).
        except Exception as error:
            raise SkipFile(f"not a readable PDF: {_first_line(error)}") from error
        readable = [(number, text) for number, text in enumerate(pages, 1) if _is_readable(text)]
        if not readable:
            raise SkipFile(UNREADABLE_TEXT if any(pages) else NO_TEXT_LAYER)
        if len(readable) < len(pages):
            missing = len(pages) - len(readable)
            logger.warning("%s: %d of %d pages have no readable text", source, missing, len(pages))
        if total_pages > self.max_pages:
            logger.warning(
                "%s: only the first %d of %d pages were read", source, self.max_pages, total_pages
            )
        pieces = [
            (piece, title, {"page": number})
            for number, text in readable
            for piece in split_text(text, self.max_chars)
        ]
        return make_chunks(pieces, source)


def _is_readable(text: str) -> bool:
    visible = [character for character in text if not character.isspace()]
    if not visible:
        return False
    return len(_LETTER.findall(text)) >= _MIN_LETTER_SHARE * len(visible)


def _opens_without_password(reader: object) -> bool:
    try:
        return bool(reader.decrypt(""))  # type: ignore[attr-defined]
    except Exception:  # missing crypto backend, unsupported algorithm: same answer
        return False


def _title(reader: object) -> str | None:
    try:
        title = reader.metadata.title if reader.metadata else None  # type: ignore[attr-defined]
    except Exception:
        return None
    return str(title).strip() or None if title else None


def _first_line(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__
