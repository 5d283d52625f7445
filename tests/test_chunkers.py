"""Chunkers: Markdown by headings, PDF by pages, text by paragraphs, dispatched by MIME type."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import EVALDATA

from duckdb_vectors.chunkers import (
    CompositeChunker,
    MarkdownChunker,
    PdfChunker,
    SkipFile,
    TextChunker,
    default_chunker,
    register_chunker,
    split_text,
)
from duckdb_vectors.chunkers.pdf import NO_TEXT_LAYER
from duckdb_vectors.models import Chunk

GUIDE = """---
title: Guide
tags: [setup, linux]
date: 2024-05-01
---

Intro paragraph.

## Install

General words.

### Linux

Use the package manager.

```bash
apt-get install thing


apt-get install other
```

| a | b |
|---|---|
| 1 | 2 |

## Configure

[ref]: https://example.com
"""


def test_markdown_breadcrumbs_front_matter_and_positions() -> None:
    chunks = MarkdownChunker().chunk(GUIDE, "guide.md")
    assert [c.title for c in chunks] == [
        "Guide",
        "Guide > Install",
        "Guide > Install > Linux",
        "Guide > Configure",
    ]
    assert [c.chunk_id for c in chunks] == [f"guide.md#{i}" for i in range(4)]
    assert chunks[0].metadata == {
        "title": "Guide",
        "tags": ["setup", "linux"],
        "date": "2024-05-01",
    }
    assert "title: Guide" not in chunks[0].text
    assert "[ref]: https://example.com" in chunks[3].text  # lines the parser drops are kept


def test_markdown_never_cuts_code_blocks_or_tables() -> None:
    chunks = MarkdownChunker(max_chars=30).chunk(GUIDE, "guide.md")
    code = [c.text for c in chunks if c.text.startswith("```bash")]
    assert code == ["```bash\napt-get install thing\n\n\napt-get install other\n```"]
    assert "| a | b |\n|---|---|\n| 1 | 2 |" in [c.text for c in chunks]


def test_markdown_long_sections_split_on_paragraphs_then_sentences() -> None:
    sentence = "This sentence is about databases and vectors. "
    text = "# Big\n\n" + (sentence * 40) + "\n\n" + (sentence * 3)
    chunks = MarkdownChunker(max_chars=500).chunk(text, "big.md")
    assert len(chunks) > 3
    assert all(len(c.text) <= 500 for c in chunks)
    assert all(c.title == "Big" for c in chunks)
    words = " ".join(c.text for c in chunks).split()
    assert words == (sentence * 43).split()  # nothing lost, nothing repeated


def test_markdown_h1_replaces_the_front_matter_title() -> None:
    chunks = MarkdownChunker().chunk("---\ntitle: Meta\n---\n# Real\n\ntext\n", "a.md")
    assert chunks[0].title == "Real"


def test_markdown_front_matter_that_is_not_yaml_stays_text() -> None:
    chunks = MarkdownChunker().chunk("---\n: : [\n---\nbody\n", "a.md")
    assert chunks[0].metadata == {}
    assert "body" in chunks[-1].text


def test_text_chunker_packs_paragraphs_under_the_limit() -> None:
    paragraphs = [f"Paragraph {i} " + "word " * 30 for i in range(10)]
    chunks = TextChunker(max_chars=400).chunk("\n\n".join(paragraphs), "notes.txt")
    assert all(len(c.text) <= 400 for c in chunks)
    assert "".join(c.text for c in chunks).replace("\n", "").replace(" ", "") == "".join(
        paragraphs
    ).replace(" ", "")


def test_split_text_cuts_a_word_only_when_it_must() -> None:
    assert split_text("x" * 25, 10) == ["x" * 10, "x" * 10, "x" * 5]
    assert split_text("short", 10) == ["short"]


def test_pdf_pages_become_chunks_with_page_numbers() -> None:
    data = (EVALDATA / "pdfs" / "text" / "pdflatex-4-pages.pdf").read_bytes()
    chunks = PdfChunker().chunk_bytes(data, "paper.pdf")
    assert {c.metadata["page"] for c in chunks} == {1, 2, 3, 4}
    assert all(c.source == "paper.pdf" for c in chunks)


@pytest.mark.parametrize(
    ("name", "reason"),
    [
        ("scanned/ccitt.pdf", NO_TEXT_LAYER),
        ("edge/vector.pdf", NO_TEXT_LAYER),
        ("edge/libreoffice-writer-password.pdf", "encrypted"),
        ("edge/invalid.pdf", "not a readable PDF"),
        ("edge/truetype_font_nomapping.pdf", "unreadable"),
    ],
)
def test_pdfs_that_cannot_be_indexed_say_why(name: str, reason: str) -> None:
    with pytest.raises(SkipFile, match=re.escape(reason)):
        PdfChunker().chunk_bytes((EVALDATA / "pdfs" / name).read_bytes(), name)


@pytest.mark.parametrize(
    ("source", "head", "expected"),
    [
        ("a.md", b"# x", "text/markdown"),
        ("a.pdf", b"%PDF-1.7", "application/pdf"),
        ("lies.txt", b"%PDF-1.4", "application/pdf"),  # content wins over the extension
        ("image.md", b"\x89PNG\r\n", "application/octet-stream"),
        ("notes", b"plain", "text/plain"),
        ("script.py", b"print()", "text/x-python"),
    ],
)
def test_mime_type_from_extension_corrected_by_content(source, head, expected) -> None:
    assert default_chunker().mime_type(source, head) == expected


def test_composite_dispatches_and_skips_binary() -> None:
    chunker = default_chunker()
    assert chunker.chunk_bytes(b"# T\n\nbody", "a.md")[0].title == "T"
    assert chunker.chunk_bytes(b"line one\n\nline two", "a.py")[0].text.startswith("line one")
    with pytest.raises(SkipFile, match="binary"):
        chunker.chunk_bytes(b"\x00\x01\x02binary", "data.md")
    with pytest.raises(SkipFile, match="not valid UTF-8"):
        chunker.chunk_bytes(b"caf\xe9 au lait", "latin1.txt")


class ShoutingChunker:
    def chunk(self, text: str, source: str) -> list[Chunk]:
        return [Chunk(chunk_id=f"{source}#0", text=text.upper(), source=source, position=0)]


def test_register_chunker_adds_a_format() -> None:
    register_chunker(ShoutingChunker(), ["text/x-shout"], [".shout"])
    chunks = default_chunker().chunk_bytes(b"hello", "a.shout")
    assert chunks[0].text == "HELLO"


def test_any_object_with_chunk_can_replace_the_composite(tmp_path: Path) -> None:
    composite = CompositeChunker(fallback=ShoutingChunker())
    assert composite.chunk_bytes(b"quiet", "x.unknownext")[0].text == "QUIET"
