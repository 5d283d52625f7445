"""Chunkers: Markdown, reStructuredText and HTML by headings, notebooks by cells, PDF by pages,
text by paragraphs, dispatched by MIME type."""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path

import docutils.core
import pytest
from conftest import DOCUTILS_MESSAGE, EVALDATA

from duckdb_vectors.chunkers import (
    CompositeChunker,
    HtmlChunker,
    MarkdownChunker,
    PdfChunker,
    RstChunker,
    SkipFile,
    TextChunker,
    default_chunker,
    make_chunks,
    register_chunker,
    split_text,
)
from duckdb_vectors.chunkers.pdf import NO_TEXT_LAYER
from duckdb_vectors.chunkers.roles import role_text
from duckdb_vectors.models import Chunk

DATA = Path(__file__).parent / "data"

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


# A PDF encrypted by another security handler than Standard, the one pypdf reads: found by
# fuzzing (tests/fuzz, target pdf), where pypdf's NotImplementedError escaped the chunker.
OTHER_HANDLER_PDF = (
    b"%PDF-1.4\n1 0 obj << /Type /Catalog /Pages 2 0 R >> endobj\n"
    b"2 0 obj << /Type /Pages /Kids [] /Count 0 >> endobj\n"
    b"xref\n0 3\n0000000000 65535 f \n0000000009 00000 n \n0000000058 00000 n \n"
    b"trailer << /Size 3 /Root 1 0 R /Encrypt << /Filter /FOPN_foweb /V 1 >> /ID [<00> <00>] >>"
    b"\nstartxref\n110\n%%EOF\n"
)


def test_a_pdf_encrypted_by_a_handler_pypdf_lacks_is_skipped_saying_why() -> None:
    with pytest.raises(SkipFile, match="not a readable PDF: only Standard PDF encryption"):
        PdfChunker().chunk_bytes(OTHER_HANDLER_PDF, "locked.pdf")


def encrypt_in_an_object_stream() -> bytes:
    """A PDF whose /Encrypt dictionary is object 3, held in the object stream 4 (which its
    cross-reference stream says): pypdf 7.1 raises AttributeError from inside its reader.
    Found by fuzzing (tests/fuzz, target pdf) on a mutated seed; this is the same, made here."""
    out, offsets = b"%PDF-1.5\n", {}

    def add(number: int, body: bytes) -> None:
        nonlocal out
        offsets[number] = len(out)
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)

    def stream(dictionary: bytes, data: bytes) -> bytes:
        return b"<< %s /Length %d >>\nstream\n%s\nendstream" % (dictionary, len(data), data)

    add(1, b"<< /Type /Catalog /Pages 2 0 R >>")
    add(2, b"<< /Type /Pages /Kids [] /Count 0 >>")
    inner = b"3 0 << /Filter /Standard /V 1 /R 2 /O <00> /U <00> /P -1 >>"
    add(4, stream(b"/Type /ObjStm /N 1 /First 4", inner))
    rows = [(0, 0, 65535), (1, offsets[1], 0), (1, offsets[2], 0), (2, 4, 0), (1, offsets[4], 0)]
    rows.append((1, len(out), 0))  # the cross-reference stream itself, object 5, next
    table = b"".join(
        bytes([kind]) + a.to_bytes(4, "big") + b.to_bytes(2, "big") for kind, a, b in rows
    )
    xref = len(out)
    trailer = b"/Type /XRef /Size 6 /W [1 4 2] /Root 1 0 R /Encrypt 3 0 R /ID [<00> <00>]"
    add(5, stream(trailer, table))
    return out + b"startxref\n%d\n%%%%EOF\n" % xref


def test_a_pdf_that_breaks_pypdfs_reader_is_skipped_saying_why() -> None:
    with pytest.raises(SkipFile, match="not a readable PDF: 'PdfReader' object has no"):
        PdfChunker().chunk_bytes(encrypt_in_an_object_stream(), "broken.pdf")


@pytest.mark.parametrize(
    ("source", "head", "expected"),
    [
        ("a.md", b"# x", "text/markdown"),
        ("a.pdf", b"%PDF-1.7", "application/pdf"),
        ("lies.txt", b"%PDF-1.4", "application/pdf"),  # content wins over the extension
        ("image.md", b"\x89PNG\r\n", "application/octet-stream"),
        ("notes", b"plain", "text/plain"),
        ("script.py", b"print()", "text/x-python"),
        ("guide.rst", b"Guide\n=====", "text/x-rst"),
        ("page.html", b"<!doctype html>", "text/html"),
        ("page.htm", b"<html>", "text/html"),
        ("example.ipynb", b'{"cells": []}', "application/x-ipynb+json"),
    ],
)
def test_mime_type_from_extension_corrected_by_content(source, head, expected) -> None:
    assert default_chunker().mime_type(source, head) == expected


def test_a_binary_chunker_registered_for_a_zip_format_gets_its_files() -> None:
    """A .docx is a zip: the extension registered to a binary chunker decides, not the magic."""
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        archive.writestr("word/document.xml", "<w:t>retries are configured per client</w:t>")

    class DocxChunker:
        def chunk_bytes(self, data: bytes, source: str) -> list[Chunk]:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                xml = archive.read("word/document.xml").decode()
            return make_chunks([(re.sub(r"<[^>]+>", "", xml), None, {})], source)

    docx = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
    chunker = default_chunker()
    chunker.register(DocxChunker(), [docx], [".docx"])
    assert chunker.mime_type("a.docx", data.getvalue()) == docx
    assert chunker.chunk_bytes(data.getvalue(), "a.docx")[0].text == (
        "retries are configured per client"
    )
    # A zip under a text extension, or no registered one, is still skipped as binary.
    for name in ("a.md", "a.zip"):
        with pytest.raises(SkipFile, match="binary"):
            chunker.chunk_bytes(data.getvalue(), name)


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


SPHINX_PAGE = """\
:orphan:

.. _options:

Options
=======

.. currentmodule:: click

.. toctree::
   :maxdepth: 2

   quickstart

Adding options is done with the :func:`option` decorator; see
:ref:`positional arguments <arguments>`, :class:`~click.core.Context` and :doc:`/api`.
|project| follows :pep:`PEP 594 <594#aifc>` and :pep:`8`.

.. |project| replace:: Click

.. versionchanged:: 8.0
   Options take ``type=`` too.

.. note::

   Mind the *dashes*.

.. frobnicate:: Some Title
   :unknown-option: 1

   Text of a directive nobody knows, with :term:`glossary` roles.

.. autoclass:: Option
   :members:

.. code-block:: python
   :emphasize-lines: 2
   :caption: example.py

   @click.option("--n")

   def dots(n):
       pass

.. seealso::

   :func:`click.argument`
      The other kind of parameter.

.. this is a comment

An undefined |version| substitution, an _`inline target` and a `link <https://x.org>`_.
"""


def test_rst_reads_sphinx_directives_and_roles_as_text(capfd: pytest.CaptureFixture[str]) -> None:
    chunks = RstChunker().chunk(SPHINX_PAGE, "options.rst")
    assert {c.title for c in chunks} == {"Options"}
    assert chunks[0].metadata == {"orphan": ""}
    text = "\n\n".join(c.text for c in chunks)
    assert text.split("\n\n") == [
        "Adding options is done with the option decorator; see positional arguments, Context"
        " and api. Click follows PEP 594 and PEP 8.",
        "Changed in version 8.0: Options take type= too.",
        "Note: Mind the dashes.",
        "Some Title",
        "Text of a directive nobody knows, with glossary roles.",
        "- click.Option",  # autodoc: the API's name, in full (the docstring is in the code)
        '```python\n@click.option("--n")',  # one block: the blank line inside is the code's
        "def dots(n):\n    pass\n```",
        "See also",
        "click.argument: The other kind of parameter.",
        "An undefined version substitution, an inline target and a link.",
    ]
    assert capfd.readouterr() == ("", "")  # docutils' complaints are not printed


def test_rst_code_blocks_stay_whole_and_sections_nest() -> None:
    source = "Guide\n=====\n\nIntro.\n\nInstall\n-------\n\n.. code-block:: bash\n\n"
    source += "".join(f"   step {i}\n" for i in range(40))
    chunks = RstChunker(max_chars=100).chunk(source, "guide.rst")
    assert [c.title for c in chunks] == ["Guide", "Guide > Install"]
    assert chunks[1].text == "```bash\n" + "".join(f"step {i}\n" for i in range(40)) + "```"


def test_rst_leaves_docutils_as_it_was() -> None:
    RstChunker().chunk(SPHINX_PAGE, "options.rst")
    settings = {"report_level": 5, "_disable_config": True}
    tree = docutils.core.publish_doctree(".. frobnicate::\n", settings_overrides=settings)
    assert "Unknown directive type" in tree.astext()  # for others, still an unknown directive


def test_rst_that_docutils_cannot_parse_is_indexed_as_text(
    capfd: pytest.CaptureFixture[str],
) -> None:
    nested = "".join("  " * depth + f"- level {depth}\n\n" for depth in range(400))
    chunks = RstChunker().chunk(nested, "deep.rst")
    assert "- level 399" in chunks[-1].text
    assert capfd.readouterr() == ("", "")


RAY_DOCS = EVALDATA / "docsqa" / "ray" / "docs" / "doc" / "source"


@pytest.mark.parametrize(
    ("page", "row"),
    [  # a Sphinx role in a table cell; a cell docutils took for a title overline
        (
            "data/api/from_other_data_libs.rst",
            "df.head() | ds.show(), ds.take(), or ds.take_batch()",
        ),
        (
            "tune/tutorials/tune-scalability.rst",
            "XGBoost parameter sweep | 16 | ? | 16 | 64 | ? | 3903",
        ),
    ],
)
def test_rst_tables_hold_their_cells_text_and_no_docutils_messages(page: str, row: str) -> None:
    text = "\n\n".join(c.text for c in RstChunker().chunk((RAY_DOCS / page).read_text(), page))
    assert re.search(DOCUTILS_MESSAGE, text) is None
    assert row in text.split("\n")


def test_rst_markup_errors_leave_their_text_and_no_message() -> None:
    page = ":author: Ada *Lovelace\n\nA |version|_ note and `unclosed interpreted text.\n"
    (chunk,) = RstChunker().chunk(page, "notes.rst")
    assert chunk.metadata == {"author": "Ada *Lovelace"}
    assert chunk.text == "A version note and `unclosed interpreted text."


PLAIN_PAGE = """<!doctype html>
<html><head><title>Retry policy</title><style>body { color: red; }</style></head>
<body>
<header><a href="/">Home</a> <a href="/docs">Docs</a></header>
<aside class="sidebar"><ul><li><a href="/a">A page</a></li></ul></aside>
<main>
<p>Failed requests are retried three times, with a pause that doubles each time.</p>
<h2 id="limits">Limits<a class="headerlink" href="#limits">¶</a></h2>
<div class="admonition note"><p class="admonition-title">Note</p>
<p>At most 100 requests per minute are accepted from one client.</p></div>
<pre><code class="language-python">for attempt in range(3):

    send(request)</code></pre>
<table><tr><th>Code</th><th>Meaning</th></tr><tr><td>429</td><td>Too many</td></tr></table>
<ul><li>first <a href="#x">link</a></li><li>second<ul><li>nested</li></ul></li></ul>
<script>window.track();</script>
</main>
<footer>Copyright the authors</footer>
</body></html>
"""


@pytest.mark.parametrize("main", ["main", "article", "body"])
def test_html_keeps_the_main_content_with_its_breadcrumbs(main: str) -> None:
    page = PLAIN_PAGE if main == "main" else PLAIN_PAGE.replace("<main>", f"<{main}>")
    if main != "main":
        page = page.replace("</main>", f"</{main}>" if main == "article" else "")
    chunks = HtmlChunker().chunk(page, "retry.html")
    assert [c.title for c in chunks] == ["Retry policy", "Retry policy > Limits"]
    assert chunks[0].text == (
        "Failed requests are retried three times, with a pause that doubles each time."
    )
    assert chunks[1].text.split("\n\n") == [
        "Note: At most 100 requests per minute are accepted from one client.",
        "```python\nfor attempt in range(3):",  # one block: the blank line inside is the code's
        "    send(request)\n```",
        "Code | Meaning\n429 | Too many",
        "- first link\n- second\n  - nested",
    ]


def test_html_pages_of_links_only_are_skipped() -> None:
    links = "".join(f'<li><a href="p{i}.html">Page number {i}</a></li>' for i in range(50))
    page = f"<html><body><main><h1>Index</h1><ul>{links}</ul></main></body></html>"
    with pytest.raises(SkipFile, match="navigation"):
        HtmlChunker().chunk(page, "index.html")


def test_notebooks_that_are_not_valid_json_are_skipped_saying_why() -> None:
    data = (DATA / "nbsphinx-0.9.5-notebooks" / "pre-executed.ipynb").read_bytes()
    for broken, reason in [
        (data[: len(data) // 2], "not a valid notebook: invalid JSON"),
        (b"[1, 2]", "not a valid notebook: no list of cells"),
        (b'{"nbformat": 3, "worksheets": []}', "nbformat 3 notebook; upgrade it"),
    ]:
        with pytest.raises(SkipFile, match=re.escape(reason)) as skipped:
            default_chunker().chunk_bytes(broken, "broken.ipynb")
        assert "\n" not in str(skipped.value)


@pytest.mark.parametrize(
    ("name", "content", "shown"),
    [
        ("ref", "Installing <install-guide>", "Installing"),
        ("py:class", "~duckdb_vectors.store.VectorStore", "VectorStore"),
        ("func", "~a.b.run()", "run()"),
        ("pep", "8#naming", "PEP 8"),
        ("doc", "/guides/install", "guides/install"),
        ("octicon", "mark-github", ""),
        ("term", "!literal", "literal"),
    ],
)
def test_a_role_shows_what_sphinx_shows_in_rst_and_myst(name: str, content: str, shown: str):
    assert role_text(name, content) == shown


API_LISTING = """\
Dataset API
===========

.. currentmodule:: ray.data

Basic Transformations
---------------------

.. autosummary::
   :toctree: doc/

   Dataset.map_batches
   ray.data.Dataset.filter

.. autofunction:: ray.init
"""


def test_an_api_listing_page_is_indexed_by_the_full_names_it_lists() -> None:
    """Sphinx makes a page of each listed API: a question naming one should land here."""
    chunks = RstChunker().chunk(API_LISTING, "data/api/dataset.rst")
    assert [(c.title, c.text) for c in chunks] == [
        (
            "Dataset API > Basic Transformations",
            "- ray.data.Dataset.map_batches\n- ray.data.Dataset.filter\n\n- ray.init",
        )
    ]
