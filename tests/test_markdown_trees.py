"""The Markdown family on real published documentation trees (tests/data/*/SOURCE.md says where
each comes from): MyST (attrs, sphinx-copybutton), MDX (Vercel AI SDK, the Docusaurus site
template) and Jekyll with Liquid (DuckDB). Chunks hold what a reader sees: no markup noise
outside code, code intact, a title on every chunk, navigation lists out of the way."""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath

import pyromark
import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.chunkers import default_chunker
from duckdb_vectors.models import Chunk

DATA = Path(__file__).parent / "data"
TREES = {
    "myst-attrs": DATA / "myst-attrs" / "docs",
    "myst-sphinx-copybutton": DATA / "myst-sphinx-copybutton" / "docs",
    "mdx-ai-sdk": DATA / "mdx-ai-sdk" / "docs",
    "mdx-docusaurus": DATA / "mdx-docusaurus" / "site",
    "jekyll-duckdb": DATA / "jekyll-duckdb" / "site",
}
MARKDOWN = {".md", ".mdx"}
ASSETS = {".png", ".jpeg", ".jpg", ".svg", ".css"}
# Markup that must not survive outside code, each with the pattern that finds it.
NOISE = {
    "Liquid/Jinja tag": re.compile(r"\{%|%\}"),
    "template expression": re.compile(r"\{\{|\}\}"),
    "MyST directive fence": re.compile(r"^[ \t]*(?:`{3,}|~{3,}|:{3,})[ \t]*\{", re.MULTILINE),
    "colon fence": re.compile(r"^[ \t]*:{3,}", re.MULTILINE),
    "MyST role": re.compile(r"\{[\w:.+-]+\}`"),
    "MyST target": re.compile(r"^\([^\s()]+\)=[ \t]*$", re.MULTILINE),
    "JSX component": re.compile(r"^[ \t]*</?[A-Z][\w.]*(?:[\s/>]|$)|</[A-Z][\w.]*>|/>", re.M),
    "HTML tag": re.compile(r"</?(?:div|span|p|a|pre|code|details|summary|br|em|dl|dt|dd)\b[^<>]*>"),
    "comment": re.compile(r"<!--|-->|\{/\*"),
    "ES module block": re.compile(
        r"^import\s.+\sfrom\s+['\"][^'\"]+['\"];[ \t]*$|^export\s+(?:const|default|function)\s",
        re.MULTILINE,
    ),
}


def tree_chunks(name: str) -> list[Chunk]:
    """The chunks of a tree's Markdown and MDX files, as the default chunker cuts them."""
    root = TREES[name]
    chunker = default_chunker()
    return [
        chunk
        for path in sorted(root.rglob("*"))
        if path.suffix in MARKDOWN
        for chunk in chunker.chunk_bytes(path.read_bytes(), path.relative_to(root).as_posix())
    ]


def prose(text: str) -> str:
    """A chunk's text without its code (as the Markdown parser finds it): code blocks go, a
    code span leaves ```` `` ```` (so a role glued to it still shows)."""
    source = text.encode()
    pieces, position, depth_in_code = [], 0, 0
    for event, span in pyromark.events_with_range(text, options=pyromark.Options.ENABLE_TABLES):
        if not isinstance(event, dict):
            continue
        start = event.get("Start")
        if isinstance(start, dict) and "CodeBlock" in start and depth_in_code == 0:
            pieces.append(source[position : span["start"]])
            position = span["end"]
        elif "Code" in event:
            pieces.append(source[position : span["start"]] + b"``")
            position = span["end"]
    pieces.append(source[position:])
    return b"".join(pieces).decode()


def one_chunk_with(chunks: list[Chunk], text: str) -> Chunk:
    found = [chunk for chunk in chunks if text in chunk.text]
    assert len(found) == 1, f"{len(found)} chunks hold {text!r}"
    return found[0]


@pytest.mark.parametrize("name", TREES)
def test_no_markup_noise_outside_code(name: str) -> None:
    chunks = tree_chunks(name)
    noise = {
        (kind, chunk.chunk_id): match.group(0)
        for chunk in chunks
        for kind, pattern in NOISE.items()
        if (match := pattern.search(prose(chunk.text)))
    }
    assert not noise


@pytest.mark.parametrize("name", TREES)
def test_titles_on_almost_every_chunk(name: str) -> None:
    chunks = tree_chunks(name)
    assert len(chunks) >= 10
    assert sum(1 for chunk in chunks if chunk.title) >= 0.95 * len(chunks)


@pytest.mark.parametrize(
    ("name", "source", "code"),
    [
        (
            "myst-attrs",
            "examples.md",  # a {doctest} directive: a code block, no "{doctest}" line
            "```\n>>> from attrs import define, field\n>>> @define\n... class Empty:\n"
            "...     pass\n>>> Empty()\nEmpty()\n",
        ),
        (
            "myst-sphinx-copybutton",
            "use.md",  # braces and backslashes that no reduction may touch
            '```python\ncopybutton_prompt_text = r">>> |\\.\\.\\. |\\$ |In \\[\\d*\\]: '
            '| {2,5}\\.\\.\\.: | {5,8}: "\ncopybutton_prompt_is_regexp = True\n```',
        ),
        (
            "myst-sphinx-copybutton",
            "use.md",  # {code-block} python: its language kept, the fence line gone
            "```python\ncopybutton_exclude = '.linenos, .gp'\n```",
        ),
        (
            "mdx-ai-sdk",
            "07-reference/02-ai-sdk-ui/03-use-object.mdx",  # import lines inside code stay
            "```tsx\n'use client';\n\nimport { experimental_useObject as useObject } from "
            "'@ai-sdk/react';\n",
        ),
        (
            "mdx-ai-sdk",
            "04-ai-sdk-ui/25-message-metadata.mdx",  # a JSX comment inside code stays
            "{/* Render message content */}",
        ),
        (
            "mdx-docusaurus",
            "docs/tutorial-basics/markdown-features.mdx",  # the export block, as code
            "```jsx\nexport const Highlight = ({children, color}) => (\n  <span\n",
        ),
        (
            "jekyll-duckdb",
            "docs/current/clients/adbc.md",  # Go code between {% raw %} tags: {{ stays
            '[]arrow.Field{{Name: "column1", Type: arrow.PrimitiveTypes.Float64}}, nil)',
        ),
        (
            "jekyll-duckdb",
            "docs/current/data/parquet/overview.md",
            "```sql\nSELECT *\nFROM read_parquet('test.parq');\n```",
        ),
    ],
)
def test_a_known_code_block_is_whole_in_one_chunk(name: str, source: str, code: str) -> None:
    lines = "\n".join(line for line in code.split("\n") if not line.startswith("```"))
    assert lines in (TREES[name] / source).read_text()  # the code is the source's
    assert one_chunk_with(tree_chunks(name), code).source == source


def test_myst_roles_directives_and_targets_become_their_text() -> None:
    chunks = tree_chunks("myst-attrs") + tree_chunks("myst-sphinx-copybutton")
    texts = "\n".join(chunk.text for chunk in chunks)
    assert "*attrs* is useful even without actual fields!" in texts  # {term}`fields <field>`
    assert "define sets ``" not in texts and "define sets `auto_detect=True`" in texts  # ~
    assert "via `typing.dataclass_transform` / PEP 681." in texts  # {pep}
    signature = "your_hook(cls: type, fields: list[attrs.Attribute]) -> list[attrs.Attribute]"
    assert signature in texts and ":noindex:" not in texts  # eval-rst: .. function::
    assert "Python Repl + continuation" in texts  # eval-rst: .. list-table::
    admonition = one_chunk_with(chunks, "example: button visibility")  # its title stays
    assert "button.copybtn {\n   opacity: 1;\n}" in admonition.text
    assert "This is a placeholder sidebar text to display!" in texts
    for gone in ("img.shields.io", "maxdepth", "This is stored in this issue", "literal.py"):
        assert gone not in texts  # image, toctree, % comment, literalinclude
    assert "(configure-copy-text)=" not in texts


def test_mdx_components_keep_their_text_and_props_that_carry_content() -> None:
    chunks = tree_chunks("mdx-ai-sdk") + tree_chunks("mdx-docusaurus")
    texts = "\n".join(chunk.text for chunk in chunks)
    # <PropertiesTable content={[{name: 'api', ..., description: '...'}]} />
    api = one_chunk_with(chunks, "The API endpoint that is called to generate objects.")
    assert api.title == "`experimental_useObject()` > API Signature > Parameters"
    assert "`useObject` is an experimental feature and only available in React" in texts  # <Note>
    assert "import { UIPreviewCard, Card }" not in texts  # an ES module block
    # <InlinePrompt initialInput={`...`} />: a prop past blank lines, still one component
    assert "Business: Gym with rock climbing" in texts and "initialInput" not in texts
    tip = one_chunk_with(chunks, "Use this awesome feature option")  # :::tip[My tip]
    assert "My tip" in tip.text and ":::" not in prose(tip.text)
    assert "This is Docusaurus green !" in texts  # <Highlight color="...">...</Highlight>
    assert "Markdown Features > Headings > Heading Ids" in {c.title for c in chunks}
    assert "{/* truncate */}" not in texts  # (written in inline code, it stays)
    assert "a `{/*` `truncate` `*/}` comment" in texts


def test_jekyll_liquid_is_reduced_to_what_the_site_would_link_and_show() -> None:
    chunks = tree_chunks("jekyll-duckdb")
    texts = "\n".join(chunk.text for chunk in chunks)
    # {% link x %} becomes the linked page's path: the source it has in an index of the site.
    assert "[Java installation page](install/index.html?environment=java)" in texts
    assert "client is {% if" not in texts and "site.current_duckdb_java_short_version" not in texts
    assert "tooltip.html" not in texts  # {% include tooltip.html ... %} in a table cell
    c_api = "duckdb_state duckdb_query(duckdb_connection connection, const char *query, "
    assert c_api in texts  # an HTML-rendered listing (<pre><code><span>...) as its text
    faq = one_chunk_with(chunks, "DuckDB was created by [Dr. Mark Raasveldt]")
    assert faq.title == "Frequently Asked Questions > Overview > Who makes DuckDB?"


def test_navigation_lists_within_the_tree_are_left_out_and_others_folded() -> None:
    chunks = tree_chunks("jekyll-duckdb")
    guides = [chunk for chunk in chunks if chunk.source == "docs/current/guides/overview.md"]
    assert [chunk.title for chunk in guides] == ["Guides"]  # the intro, not 20 link lists
    assert "How to load a Parquet file into a table" not in guides[0].text
    # A "Further Reading" list with an outside link joins the section before it.
    reading = one_chunk_with(chunks, "[DuckPGQ Documentation](https://duckpgq.org)")
    assert reading.title == "Graph Queries > Cleanup"
    assert "## Further Reading\n* [DuckPGQ Documentation]" in reading.text


@pytest.mark.slow
@pytest.mark.parametrize("name", TREES)
def test_indexing_a_tree_keeps_its_documents_and_no_assets(name: str, tmp_path: Path) -> None:
    root = TREES[name]
    with VectorStore(tmp_path / "tree.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        summary = index_folder(store, root)
        sources = set(store.sources())
    documents = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.suffix in MARKDOWN}
    empty = {problem.source for problem in summary.skipped if problem.reason == "no text to index"}
    assert documents <= sources | empty and not summary.failed
    assert empty <= {"changelog.md"}  # sphinx-copybutton's: one {include} of another file
    assert not {source for source in sources if PurePosixPath(source).suffix in ASSETS}


def test_the_page_outranks_the_index_that_links_to_it(tmp_path: Path) -> None:
    """The guides index lists "How to load a Parquet file into a table": as a chunk of its own,
    that list came first for the question, above the Parquet page."""
    with VectorStore(tmp_path / "duckdb.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, TREES["jekyll-duckdb"])
        hits = store.query("how do I load a Parquet file into a table", top_k=3)
    assert hits[0].chunk.source == "docs/current/data/parquet/overview.md"
    assert all(hit.chunk.source != "docs/current/guides/overview.md" for hit in hits)
