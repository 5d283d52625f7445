"""reStructuredText, HTML and Jupyter notebooks, on excerpts of real published documentation
trees (tests/data/<tree>/SOURCE.md says where each came from): clean text, breadcrumbs, whole
code blocks, no navigation pages."""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, DOCUTILS_MESSAGE, STATIC_MODEL

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.chunkers import NotebookChunker, SkipFile, default_chunker
from duckdb_vectors.models import Chunk

DATA = Path(__file__).parent / "data"
FENCED_CODE = re.compile(r"^(`{3,})[^\n]*\n.*?^\1$", re.MULTILINE | re.DOTALL)
# Markup and assets that must not reach a chunk's text outside its code blocks.
NOISE = {
    "HTML tag": r"</?(?:html|head|body|div|span|a|p|pre|code|table|tr|td|th|li|ul|ol|h[1-6]|img"
    r"|br|section|nav|header|footer|aside|article|main|script|style|em|strong|dl|dt|dd)\b[^>]*>",
    "reST role": r":[\w:+-]+:`",
    "reST directive": r"(?m)^\s*\.\. [\w:-]+::",
    "reST comment or target": r"(?m)^\s*\.\. (?:_[\w -]+:|\w)",
    "reST hyperlink": r"`[^`\n]+`__?(?!\w)",
    "reST substitution": r"\|[A-Za-z][\w-]*\|",
    "reST field list": r"(?m)^:(?:orphan|tocdepth|nocomments|author|param \w+):",
    "docutils message": DOCUTILS_MESSAGE,
    "template": r"\{%|%\}|\{\{",
    "permalink": r"¶",
    "script": r"\bfunction\s*\w*\s*\([^)]*\)\s*\{|\bdocument\.\w+\(|\bwindow\.\w+",
    "style": r"[\w-]+\s*:\s*[^;{}\n]+;\s*[\w-]+\s*:[^;{}\n]+;",
    "base64": r"[A-Za-z0-9+/]{100,}={0,2}",
    "notebook JSON": r'"(?:cell_type|execution_count|outputs|nbformat|image/png)"\s*:',
}
# HTML inside a notebook's markdown cell is Markdown's: the Markdown chunker's rules apply.
NOTEBOOK_NOISE = {name: pattern for name, pattern in NOISE.items() if name != "HTML tag"}


@dataclass
class Tree:
    name: str
    pattern: str
    skipped: set[str]  # the navigation-only pages
    code: str  # a code block of the source, to be found whole in one chunk
    noise: dict[str, str] = field(default_factory=lambda: NOISE)


TREES = [
    Tree(
        "click-8.1.7-docs",
        "*.rst",
        set(),
        'class EnvVarType(ParamType):\n    name = "envvar"\n\n'
        "    def shell_complete(self, ctx, param, incomplete):\n        return [\n"
        "            CompletionItem(name)\n",
    ),
    Tree(
        "python-3.11-rst",
        "*.rst",
        set(),
        ">>> def as_complex(dct):\n...     if '__complex__' in dct:\n"
        "...         return complex(dct['real'], dct['imag'])\n",
    ),
    Tree(
        "python-3.11-html",
        "*.html",
        {"search.html", "genindex-J.html", "faq/index.html"},
        ">>> def as_complex(dct):\n...     if '__complex__' in dct:\n"
        "...         return complex(dct['real'], dct['imag'])\n",
    ),
    Tree(
        "mkdocs-1.4.2-html",
        "*.html",
        {"404.html", "user-guide/custom-themes.html"},
        "$ mkdocs serve\nINFO    -  Building documentation...\n"
        "INFO    -  Cleaning site directory\n",
    ),
    Tree(
        "mkdocs-literate-nav-0.6.0-html",
        "*.html",
        {"404.html"},
        "nav:\n  - Frob: index.md\n  - Baz: baz.md\n  - Borgs:\n    - borgs/index.md\n",
    ),
    Tree(
        "nbsphinx-0.9.5-notebooks",
        "*.ipynb",
        set(),
        'md = Markdown("""\n# Markdown\n\nIt *should* show up as **formatted** text\n',
        NOTEBOOK_NOISE,
    ),
    Tree(
        "nbconvert-7.16.4-notebooks",
        "*.ipynb",
        set(),
        "class PelicanSubCell(Preprocessor):\n"
        '    """A Pelican specific preprocessor to remove some of the cells of a notebook"""\n',
        NOTEBOOK_NOISE,
    ),
]


def chunk_tree(tree: Tree, max_chars: int = 2000) -> tuple[list[Chunk], set[str]]:
    """The chunks of the tree's files of its format, and the files skipped."""
    return _chunked(tree.name, tree.pattern, max_chars)


@functools.cache  # each tree is read by several tests
def _chunked(name: str, pattern: str, max_chars: int) -> tuple[list[Chunk], set[str]]:
    chunker = default_chunker(max_chars)
    chunks: list[Chunk] = []
    skipped = set()
    root = DATA / name
    for path in sorted(root.rglob(pattern)):
        source = path.relative_to(root).as_posix()
        try:
            chunks += chunker.chunk_bytes(path.read_bytes(), source)
        except SkipFile:
            skipped.add(source)
    return chunks, skipped


@pytest.mark.parametrize("tree", TREES, ids=lambda tree: tree.name)
def test_chunks_hold_no_markup_noise(tree: Tree) -> None:
    chunks, _ = chunk_tree(tree)
    assert len(chunks) > 10
    found = [
        (chunk.chunk_id, name, match.group(0))
        for chunk in chunks
        for name, pattern in tree.noise.items()
        for match in [re.search(pattern, FENCED_CODE.sub("", chunk.text))]
        if match
    ]
    assert found == []


# What a site's pages carry around their content, on these trees' pages (Sphinx's sidebars,
# MkDocs' themes): it must not reach a chunk.
SITE_CHROME = (
    "Previous topic",
    "Next topic",
    "Show Source",
    "Quick search",
    "Edit on GitHub",
    "Skip to content",
)


@pytest.mark.parametrize(
    "tree", [tree for tree in TREES if tree.pattern == "*.html"], ids=lambda tree: tree.name
)
def test_a_built_site_loses_its_chrome(tree: Tree) -> None:
    pages = [path.read_text() for path in (DATA / tree.name).rglob("*.html")]
    around = [phrase for phrase in SITE_CHROME if any(phrase in page for page in pages)]
    assert around  # the pages do carry some of it
    chunks, _ = chunk_tree(tree)
    assert [(c.chunk_id, p) for c in chunks for p in around if p in c.text] == []


def test_docutils_prints_nothing_on_a_sphinx_tree(capfd: pytest.CaptureFixture[str]) -> None:
    _chunked.__wrapped__("click-8.1.7-docs", "*.rst", 2000)  # full of unknown directives
    assert capfd.readouterr() == ("", "")


@pytest.mark.parametrize("tree", TREES, ids=lambda tree: tree.name)
def test_chunks_have_breadcrumb_titles(tree: Tree) -> None:
    chunks, _ = chunk_tree(tree)
    titled = [chunk for chunk in chunks if chunk.title]
    assert len(titled) >= 0.95 * len(chunks)
    assert any(" > " in (chunk.title or "") for chunk in chunks)


@pytest.mark.parametrize("tree", TREES, ids=lambda tree: tree.name)
def test_code_blocks_stay_whole(tree: Tree) -> None:
    chunks, _ = chunk_tree(tree, max_chars=200)  # smaller than the block
    assert len([chunk for chunk in chunks if tree.code in chunk.text]) == 1
    for chunk in chunks:  # every fence that opens in a chunk closes in it
        assert len(re.findall(r"(?m)^```", FENCED_CODE.sub("", chunk.text))) == 0


@pytest.mark.parametrize("tree", TREES, ids=lambda tree: tree.name)
def test_navigation_pages_are_skipped(tree: Tree) -> None:
    _, skipped = chunk_tree(tree)
    assert skipped == tree.skipped


def test_a_sphinx_page_and_its_source_give_the_same_sections() -> None:
    html, _ = chunk_tree(TREES[2])
    rst, _ = chunk_tree(TREES[1])
    # Sphinx turns the source's "---" into an em dash in the built page.
    rst_titles = {c.title.replace(" --- ", " — ") for c in rst if c.source == "library/json.rst"}
    assert rst_titles == {c.title for c in html if c.source == "library/json.html"}


def test_notebook_outputs_are_text_only_and_on_request() -> None:
    chunks, _ = chunk_tree(TREES[6])
    assert not any("x^{2}" in chunk.text or "2.0⋅y" in chunk.text for chunk in chunks)
    data = (DATA / TREES[6].name / "notebook1.ipynb").read_bytes()
    with_outputs = NotebookChunker(include_outputs=True).chunk(data.decode(), "notebook1.ipynb")
    text = "\n".join(chunk.text for chunk in with_outputs)
    notebook = json.loads(data)
    plain = [
        "".join(output["data"]["text/plain"])
        for cell in notebook["cells"]
        for output in cell.get("outputs", [])
    ]
    assert plain and all(output in text for output in plain)
    assert "x^{2}" not in text  # the text/latex form of the same output
    assert re.search(NOISE["base64"], text) is None


def test_index_a_built_sphinx_site(tmp_path: Path) -> None:
    with VectorStore(tmp_path / "docs.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        summary = index_folder(store, DATA / "python-3.11-html", include=["*.html"])
        assert {problem.source for problem in summary.skipped} == TREES[2].skipped
        assert all("navigation" in problem.reason for problem in summary.skipped)
        hit = store.query("decode a JSON document with object_hook", top_k=1)[0].chunk
        assert hit.source == "library/json.html"
        assert hit.title is not None and hit.title.startswith("json — JSON encoder and decoder")
