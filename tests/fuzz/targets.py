"""The fuzz targets: each one feeds the fuzzer's bytes to one parser or boundary of the package,
as a user's file or an agent's argument would reach it. ``harness`` judges the outcome."""

from __future__ import annotations

import atexit
import json
import shutil
import tempfile
from functools import cache
from pathlib import Path
from typing import Any

import anyio
import duckdb
from mcp import Client
from mcp.shared.exceptions import MCPError

from duckdb_vectors import VectorStore, get_embedder
from duckdb_vectors.bundle import Bundle
from duckdb_vectors.chunkers import (
    BinaryChunker,
    Chunker,
    HtmlChunker,
    MarkdownChunker,
    MdxChunker,
    NotebookChunker,
    PdfChunker,
    RstChunker,
    decode_text,
    default_chunker,
)
from duckdb_vectors.fetching import fetch
from duckdb_vectors.filters import compile_filter
from duckdb_vectors.index.terms import LANGUAGES
from duckdb_vectors.inputs import parsed_query
from duckdb_vectors.models import Chunk
from duckdb_vectors.search.user_sql import validate_fragment
from duckdb_vectors.serve.mcp_server import IndexServer, build_server

from .harness import (
    Finding,
    Registry,
    both,
    check_message,
    files,
    given,
    json_or_text,
    lines,
    text_of,
)

FUZZ = Registry()
TARGETS = FUZZ.targets
MAX_CHARS = 300  # small chunks: more of the splitting code runs per input
BACKEND = "hashing:16"  # a real backend with no model files: fuzzing spends its time parsing

# -- the chunkers: a file's bytes, decoded as the indexer decodes them -------------------------


def chunked(chunker: Chunker | BinaryChunker, data: bytes, source: str) -> None:
    """Chunk ``data`` as the indexer would, and check what came back is indexable."""
    if isinstance(chunker, BinaryChunker):
        chunks = chunker.chunk_bytes(data, source)
    else:
        chunks = chunker.chunk(decode_text(data), source)
    check_chunks(chunks)


def check_chunks(chunks: list[Chunk]) -> None:
    ids = [chunk.chunk_id for chunk in chunks]
    if len(set(ids)) != len(ids):
        raise Finding(f"chunk ids repeat: {ids}")
    for chunk in chunks:
        if not isinstance(chunk.text, str) or not chunk.text.strip():
            raise Finding(f"chunk {chunk.chunk_id} has no text")
        for value in (chunk.text, chunk.title or ""):
            value.encode("utf-8")  # a lone surrogate here would fail the index's write


@FUZZ.target(files("docs/duckdb/**/*.md", "*/*.md"))
def markdown(data: bytes) -> None:
    """Markdown (CommonMark and GitHub's), as the DuckDB docs are written."""
    chunked(MarkdownChunker(MAX_CHARS), data, "page.md")


@FUZZ.target(files("docsqa/ray/docs/**/*.md", "myst-*/**/*.md"))
def myst(data: bytes) -> None:
    """MyST Markdown (directives, roles, colon fences), as the Ray docs are written."""
    chunked(MarkdownChunker(MAX_CHARS), data, "page.md")


@FUZZ.target(files("docsqa/ray/docs/**/*.rst", "*/*.rst"), libraries=("docutils",))
def rst(data: bytes) -> None:
    """reStructuredText with Sphinx's directives and roles."""
    chunked(RstChunker(MAX_CHARS), data, "page.rst")


@FUZZ.target(files("**/*.html"))
def html(data: bytes) -> None:
    """HTML pages (a site's, or a built docs tree)."""
    chunked(HtmlChunker(MAX_CHARS), data, "page.html")


@FUZZ.target(files("mdx-*/**/*.mdx"))
def mdx(data: bytes) -> None:
    """MDX (Markdown with JSX components and ESM)."""
    chunked(MdxChunker(MAX_CHARS), data, "page.mdx")


@FUZZ.target(files("**/*.ipynb"))
def notebook(data: bytes) -> None:
    """Jupyter notebooks (JSON)."""
    chunked(NotebookChunker(MAX_CHARS, include_outputs=True), data, "page.ipynb")


@FUZZ.target(files("pdfs/**/*.pdf"), max_len=256 * 1024, libraries=("pypdf",))
def pdf(data: bytes) -> None:
    """PDF files, read by pypdf within the chunker's bounds."""
    chunked(PdfChunker(MAX_CHARS), data, "page.pdf")


EXTENSIONS = (".md", ".mdx", ".rst", ".html", ".ipynb", ".pdf", ".txt", ".json", ".png", "")


@FUZZ.target(both(given(b"\x00# Title\n\ntext", b"\x03<p>text</p>"), files("*/*.*")))
def any_file(data: bytes) -> None:
    """Any file of a folder: the first byte picks its extension; its type is sniffed."""
    extension = EXTENSIONS[data[0] % len(EXTENSIONS)] if data else ""
    chunker = default_chunker(MAX_CHARS)
    if chunker.can_index(f"file{extension}", data[1:8193]):
        check_chunks(chunker.chunk_bytes(data[1:], f"file{extension}"))


# -- queries, filters, ranking SQL ----------------------------------------------------------


@FUZZ.target(
    both(
        lines("ir/*/queries.jsonl", "text"),
        lines("docsqa/ray/questions.jsonl", "question"),
        given("E1234 array_cosine_distance", "C++ v2.0 — Москва 北京", "\udcff"),
    )
)
def query(data: bytes) -> None:
    """A query's text in each language: its checks, then the tokenizer (``parsed_query``)."""
    text = text_of(data[1:])
    parsed_query(text, LANGUAGES[data[0] % len(LANGUAGES)] if data else "english")


FILTERS: list[Any] = [
    {"kind": "guide"},
    {"year": {"$gte": 2020}},
    {"$and": [{"kind": {"$in": ["guide", "ref"]}}, {"year": {"$lt": 2030}}]},
    {"$or": [{"tags": "retry"}, {"score": {"$ne": 1.5}}]},
    {"tags": {"$nin": ["a"]}, "draft": {"$exists": False}},
    {"nested.key": True, "year": {"$eq": 2024, "$lte": 1e308}},
]


@cache
def small_store() -> VectorStore:
    """A real index of a few documents (built once per process), read as a server reads it."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz-index-"))
    atexit.register(shutil.rmtree, folder, True)
    path = folder / "index.duckdb"
    texts = [
        "Failed requests are retried three times with exponential backoff.",
        "Error E1234 means the API key is missing.",
        "Москва — столица России.",
        "北京是中华人民共和国的首都。",
    ] * 3
    metadatas = [
        {"kind": "guide", "year": 2020 + i, "tags": ["retry", str(i)], "score": i / 2}
        if i % 2
        else {"kind": "ref", "draft": True, "nested.key": True}
        for i in range(len(texts))
    ]
    with VectorStore(path, BACKEND) as store:
        store.add_texts(
            texts,
            ids=[f"doc:{i}" for i in range(len(texts))],
            metadatas=metadatas,
            titles=[f"Title {i % 4}" for i in range(len(texts))],
            sources=[f"docs/{i % 4}.md" for i in range(len(texts))],
            positions=[i // 4 for i in range(len(texts))],
        )
    store = VectorStore(path, read_only=True)
    atexit.register(store.close)
    return store


@FUZZ.target(given(*FILTERS, *(str(f) for f in FILTERS)))
def metadata_filter(data: bytes) -> None:
    """A metadata filter as the CLI (JSON text) and MCP (a JSON value) pass it; the compiled
    condition then runs in a real search."""
    text = text_of(data)
    compile_filter(text)  # the CLI's --filter
    value = json_or_text(text)
    if isinstance(value, dict):
        small_store().query("retries", 3, filter=value)


SQL = [
    "year >= 2020",
    "source LIKE 'docs/%' AND length(text) > 10",
    "score * (1 + 0.1 * (vector_rank < 3)::INT)",
    "CASE WHEN title ILIKE '%1%' THEN score ELSE score / 2 END",
    "regexp_matches(text, '[0-9]+') OR json_extract_string(metadata, '$.kind') = 'guide'",
]


@FUZZ.target(given(*(f"w{fragment}" for fragment in SQL), *(f"r{f}" for f in SQL)))
def ranking_sql(data: bytes) -> None:
    """``--where`` and ``--rescore`` (the first byte picks which): checked, then run."""
    argument = "where" if data[:1] == b"w" else "rescore"
    fragment = text_of(data[1:])
    validate_fragment(fragment, f"--{argument}")
    small_store().query("retries", 3, **{argument: fragment})


# -- what the index and bundle files hold ---------------------------------------------------


@cache
def manifest_file() -> tuple[Path, str]:
    """A real index's file to damage, and its manifest as written. Its column takes any text
    (the index's own takes JSON only): a damaged or forged file may hold anything."""
    source = small_store().db_path
    path = source.with_name("manifest.duckdb")
    shutil.copyfile(source, path)
    with duckdb.connect(str(path)) as connection:
        connection.execute("ALTER TABLE manifest ALTER COLUMN document TYPE VARCHAR")
        row = connection.execute("SELECT document FROM manifest WHERE id = 1").fetchone()
    assert row is not None
    return path, row[0]


def manifest_seeds() -> list[bytes]:
    return [manifest_file()[1].encode()]


@FUZZ.target(manifest_seeds)
def manifest(data: bytes) -> None:
    """An index file whose manifest holds anything: opened and searched as a server would."""
    path, _ = manifest_file()
    with duckdb.connect(str(path)) as connection:
        document = data.decode("utf-8", "replace")  # what a file holds is UTF-8
        connection.execute("UPDATE manifest SET document = ? WHERE id = 1", [document])
    # The embedder given, as the SDK takes it: a manifest naming another model is refused
    # without loading that model.
    with VectorStore(path, read_only=True, embedder=get_embedder(BACKEND)) as store:
        store.report()
        store.query("retries", 2)


BUNDLES = [
    "libraries:\n  - name: ray\n    source: docs/ray\n    version: '2.9'\n",
    "libraries:\n  - {name: duckdb, source: 'https://duckdb.org/docs/', description: SQL}\n",
    '[[libraries]]\nname = "click"\nsource = "docs/click"\nexclude = ["*.txt"]\n',
]


@FUZZ.target(
    given(*(f"y{bundle}" for bundle in BUNDLES[:2]), f"t{BUNDLES[2]}"), libraries=("yaml",)
)
def bundle(data: bytes) -> None:
    """A bundle file (docs.yaml, or TOML: the first byte picks which)."""
    folder = Path(tempfile.mkdtemp(prefix="fuzz-bundle-"))
    try:
        path = folder / ("docs.toml" if data[:1] == b"t" else "docs.yaml")
        path.write_bytes(data[1:])
        Bundle.read(path)
    finally:
        shutil.rmtree(folder)


# -- fetch ids, resource URIs and the MCP tools' arguments -----------------------------------


@FUZZ.target(given(b"\x00\x00\x00docs/0.md", b"\x01\x00\x05doc:3", b"\x02\x09\x00../etc/passwd"))
def fetch_id(data: bytes) -> None:
    """``fetch``: an id (after three bytes: context, offset and token budget) of anything."""
    context, offset, tokens = (data + b"\0\0\0")[:3]
    fetch(
        small_store(),
        text_of(data[3:]),
        context=context - 8,
        offset=offset * 7 - 3,
        max_tokens=tokens * 40 or None,
    )


TOOLS = ("search", "fetch", "report", "resource")
MCP_SEEDS = [
    b'\x00{"query": "how are retries done?", "top_k": 3, "filter": {"year": {"$gte": 2021}}}',
    b'\x00{"query": "E1234", "match": "all", "one_per_source": false, "max_tokens": 200}',
    b'\x00{"query": "x", "library": "ray", "version": "2"}',
    b'\x01{"id": "doc:2", "context": 2, "offset": 10, "max_tokens": 100}',
    b"\x01docs/1.md",
    b"\x02{}",
    b"\x03duckdb-vectors://doc/docs/1.md",
    b"\x03duckdb-vectors://doc/..%2F..%2Fetc%2Fpasswd",
]


async def mcp_call(tool: str, arguments: Any) -> None:
    """One call through a real client session with the server (over memory streams)."""
    async with Client(mcp_server()) as client:
        if tool == "resource":
            try:
                await client.read_resource(str(arguments))
            except MCPError as error:  # the server's error reply: it must say what is wrong
                check_message(error)
        else:
            if not isinstance(arguments, dict):
                arguments = {"query" if tool == "search" else "id": arguments}
            result = await client.call_tool(tool, arguments)
            if result.is_error:  # the reason, in one line, after the SDK's prefix
                message = result.content[0].text
                check_message(Exception(message.removeprefix(f"Error executing tool {tool}:")))
        await client.list_tools()  # the session still answers


@cache
def mcp_server() -> IndexServer:
    return build_server(small_store())


@FUZZ.target(given(*MCP_SEEDS))
def mcp(data: bytes) -> None:
    """An MCP client's call (the first byte picks the tool, or a resource read), its arguments
    JSON or plain text, through a real client session with the server."""
    tool = TOOLS[data[0] % len(TOOLS)] if data else "search"
    anyio.run(mcp_call, tool, sendable(json_or_text(text_of(data[1:]))))


def sendable(arguments: Any) -> Any:
    """``arguments`` with lone surrogates replaced: the SDK's client refuses to send them (its
    JSON is UTF-8), so a server never sees them from it."""
    text = json.dumps(arguments, ensure_ascii=False)
    return json.loads(text.encode("utf-8", "replace").decode())
