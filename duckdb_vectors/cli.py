"""The ``duckdb-vectors`` command: a thin click layer over ``VectorStore`` and ``index_source``.

Results go to stdout (``--json`` for the stable machine-readable form); progress, warnings
and errors go to stderr. An error is one line and a non-zero exit code: 1 for a problem with
the index or model, 2 for a bad argument; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

import click

from . import libraries, remote, staging
from .citations import URL_STYLES, UrlRule, UrlStyle
from .config import (
    DEFAULT_BASE_IMAGE,
    DEFAULT_MAX_FILE_BYTES,
    DEFAULT_MCP_HOST,
    DEFAULT_MCP_PORT,
    Quantization,
    Settings,
    is_url,
    parse_duration,
)
from .embedders.fastembed import quiet_fastembed_logs
from .errors import (
    BuildError,
    DuckDBVectorsError,
    InvalidFilterError,
    InvalidRankingSQLError,
    SkillError,
    SliceError,
    require_extra,
)
from .fetching import MAX_CONTEXT
from .fetching import fetch as fetch_text
from .index import slices
from .index.schema import SCHEMA_VERSION
from .rendering import (
    MIN_MAX_TOKENS,
    SearchOutput,
    bake_summary_as_text,
    bundle_summary_as_text,
    evaluation_as_text,
    image_manifest_as_text,
    parquet_summary_as_text,
    report_as_text,
    summary_as_text,
    tuning_as_text,
)
from .search.answer import MATCH_MODES, Match
from .sources import SourceOptions
from .store import MAX_RESULTS, VectorStore

if TYPE_CHECKING:  # with the chunkers: imported by the verbs that index
    from .bundle import Bundle

EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT


class IndexLocation(click.ParamType):
    """An index file's path, or the http(s):// URL of a published index (kept as text)."""

    name = "path|url"
    _path = click.Path(dir_okay=False, path_type=Path)

    def convert(
        self, value: Any, param: click.Parameter | None, ctx: click.Context | None
    ) -> Path | str:
        return value if is_url(value) else self._path.convert(value, param, ctx)


def _together(*options: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Several options as one decorator, listed in the order given."""

    def apply(command: Any) -> Any:
        for option in reversed(options):
            command = option(command)
        return command

    return apply


def _as_seconds(_: click.Context, __: click.Parameter, text: str | None) -> float | None:
    try:
        return None if text is None else parse_duration(text)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None


def _as_url_rule(context: click.Context, _: click.Parameter, style: UrlStyle) -> UrlRule:
    return UrlRule(context.params.pop("base_url", None), style)


def _as_metadata(_: click.Context, __: click.Parameter, texts: tuple[str, ...]) -> dict:
    try:
        return slices.parse_assignments(texts)
    except SliceError as error:
        raise click.BadParameter(str(error)) from None


db_option = click.option(
    "--db",
    "db_path",
    type=IndexLocation(),
    help="Index file, or the http(s):// URL of a published index"
    " [env DUCKDB_VECTORS_DB_PATH; default vectors.duckdb].",
)
json_option = click.option(
    "--json", "as_json", is_flag=True, help="Machine-readable JSON on stdout."
)
# For the verbs that can read a published index (--db URL).
max_age_option = click.option(
    "--max-age",
    metavar="DURATION",
    callback=_as_seconds,
    help="--db URL: re-check the cached copy with the server when older than this"
    " (seconds, or e.g. 30m, 6h, 2d) [env DUCKDB_VECTORS_MAX_AGE; default 2d].",
)
model_options = _together(
    click.option(
        "--backend",
        help="Embedder, e.g. fastembed:<model> [env DUCKDB_VECTORS_BACKEND; default: the"
        " one the index was built with].",
    ),
    click.option(
        "--model-path",
        type=click.Path(file_okay=False, path_type=Path),
        help="Load the model from this folder [env DUCKDB_VECTORS_MODEL_PATH].",
    ),
)
store_options = _together(db_option, model_options, json_option)  # the verbs that open an index
# --base-url and --url-style, passed on as one ``urls`` rule.
url_options = _together(
    click.option(
        "--base-url",
        metavar="URL",
        is_eager=True,
        help="Where the docs are published: each hit gets its page's URL, to cite.",
    ),
    click.option(
        "--url-style",
        "urls",
        type=click.Choice(URL_STYLES),
        default="html",
        show_default=True,
        callback=_as_url_rule,
        help="How a source path becomes a page under --base-url: a.md -> a.html, a/, or a.md.",
    ),
)


def _as_source_options(
    context: click.Context, _: click.Parameter, headers: tuple[str, ...]
) -> SourceOptions:
    """The SOURCE options (taken eagerly, so all are here) as one ``SourceOptions``."""
    taken = {name: context.params.pop(name) for name in _SOURCE_OPTION_NAMES}
    taken["max_file_bytes"] = int(taken.pop("max_file_size") * 1e6)
    named = {}
    for header in headers:
        name, colon, value = header.partition(":")
        if not colon or not name.strip():
            raise click.BadParameter(
                f"{header!r} is not NAME:VALUE, e.g. 'Authorization: Bearer T'"
            )
        named[name.strip()] = value.strip()
    return SourceOptions(**taken, headers=named)


_SOURCE_OPTION_NAMES = (
    "recursive",
    "include",
    "exclude",
    "include_hidden",
    "max_file_size",
    "max_pages",
    "concurrency",
    "delay",
)
_DEFAULTS = SourceOptions()


def _eager(*names: str, **settings: Any) -> Callable[[Any], Any]:
    """A SOURCE option: taken before ``--header``, whose callback gathers them all."""
    return click.option(*names, is_eager=True, show_default=True, **settings)


# What to read of a SOURCE (``sources.SourceOptions``), for the verbs that read one.
source_options = _together(
    _eager("--recursive/--no-recursive", default=True),
    _eager(
        "--include",
        multiple=True,
        metavar="PATTERN",
        help="Only files (or URL paths) matching this gitignore pattern (repeatable;"
        " 'api/**/*.md'); overrides the ignore files and the asset rules.",
    ),
    _eager(
        "--exclude",
        multiple=True,
        metavar="PATTERN",
        help="Leave files (or URL paths) matching this gitignore pattern out (repeatable).",
    ),
    _eager("--include-hidden", is_flag=True, help="Also read dot-files and dot-folders."),
    _eager(
        "--max-file-size",
        "--max-page-size",
        "max_file_size",
        type=click.FloatRange(min=0, min_open=True),
        default=DEFAULT_MAX_FILE_BYTES / 1e6,
        help="Skip files (or pages) larger than this many MB.",
    ),
    _eager(
        "--max-pages",
        type=click.IntRange(min=1),
        default=_DEFAULTS.max_pages,
        help="A site or llms.txt: read at most this many pages.",
    ),
    _eager(
        "--concurrency",
        type=click.IntRange(min=1, max=64),
        default=_DEFAULTS.concurrency,
        help="A site: requests in flight per host.",
    ),
    _eager(
        "--delay",
        type=click.FloatRange(min=0),
        default=_DEFAULTS.delay,
        help="A site: seconds between requests to one host (robots.txt's Crawl-delay if longer).",
    ),
    click.option(
        "--header",
        "options",
        multiple=True,
        metavar="NAME:VALUE",
        callback=_as_source_options,
        help="A site: send this request header (repeatable; e.g. for a private site). Never"
        " stored or logged.",
    ),
)
slice_option = click.option(
    "--set",
    "metadata",
    multiple=True,
    metavar="KEY=VALUE",
    callback=_as_metadata,
    help="Stamp onto every chunk (repeatable): a slice, e.g. version=2.0, found by"
    " --filter. Its sources go under its values (2.0/) unless --source-prefix is given.",
)
max_tokens_option = click.option(
    "--max-tokens",
    type=click.IntRange(MIN_MAX_TOKENS),
    help="Fit the output within about this many tokens (characters/4) [default: all].",
)
# --quantize and --language: for the verbs that write an index.
quantize_option = click.option(
    "--quantize",
    type=click.Choice(get_args(Quantization)),
    help="Also store int8 codes of the vectors and search those (a quarter of the memory),"
    " rescoring the best exactly; an index without them is converted. Recorded in the"
    " index [env DUCKDB_VECTORS_QUANTIZE; default: what the index records].",
)
language_option = click.option(
    "--language",
    metavar="NAME",
    help="The Snowball language whose word forms BM25 indexes words as (english, german,"
    " french, ...); another than the recorded one re-tokenizes the index. Recorded in the"
    " index [env DUCKDB_VECTORS_LANGUAGE; default: what the index records, else english].",
)
lexical_weight_option = click.option(
    "--lexical-weight",
    type=click.FloatRange(0.0, 1.0),
    help="Record BM25's share of the hybrid score in the index (what eval --tune chose"
    " elsewhere) [default: what the index records, else 0.7 for a static model and 0.5"
    " for a transformer].",
)


def _echo(result: Any, as_json: bool, as_text: Callable[[Any], str]) -> None:
    """``result`` on stdout: its JSON with ``--json``, else ``as_text(result)``."""
    click.echo(result.model_dump_json(indent=2) if as_json else as_text(result))


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="duckdb-vectors")
@click.option("--debug", is_flag=True, help="Show tracebacks and debug logs on stderr.")
def cli(debug: bool) -> None:
    """Hybrid retrieval from one DuckDB file: index a folder, search it, serve it to agents."""
    logging.basicConfig(
        level=logging.DEBUG if debug else logging.WARNING,
        format="%(levelname)s: %(message)s" if debug else "%(message)s",
        stream=sys.stderr,
    )
    if not debug:  # fastembed logs its failures itself; ours is the one line the user needs
        quiet_fastembed_logs()


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors index ./docs --db docs.duckdb
  duckdb-vectors index 'git+https://github.com/ORG/REPO@v1.0#subdirectory=docs' --db docs.duckdb
  duckdb-vectors index ./skills --db agent.duckdb --source-prefix skills/ --include '*.md'
  duckdb-vectors index ./docs-v2 --db docs.duckdb --set version=2.0   # sources under 2.0/
  duckdb-vectors index --from-parquet 'out/part-*.parquet' --db docs.duckdb --backend hashing:256
  duckdb-vectors index ./docs --db docs.duckdb --quantize int8   # int8 vectors in memory
  duckdb-vectors index --bundle docs.yaml --db docs.duckdb   # several libraries, each a slice
"""
)
@click.argument("source", metavar="SOURCE", required=False)
@click.option(
    "--bundle",
    "bundle_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Index the libraries a bundle file (docs.yaml) lists instead of a SOURCE.",
)
@click.option(
    "--from-parquet",
    metavar="FILE_OR_GLOB",
    help="Write rows embedded elsewhere (chunk_id, text, embedding; optional title, source,"
    " position, metadata) instead of a SOURCE; a new index needs --backend.",
)
@store_options
@quantize_option
@language_option
@lexical_weight_option
@source_options
@click.option(
    "--source-prefix",
    help="Prepended to sources; pruning stays inside it [default: none, or a slice's values].",
)
@url_options
@slice_option
@click.option("--progress/--no-progress", default=None, help="Default: a bar on a terminal.")
def index(
    source: str | None,
    bundle_path: Path | None,
    from_parquet: str | None,
    db_path: Path | None,
    backend: str | None,
    model_path: Path | None,
    as_json: bool,
    quantize: Quantization | None,
    language: str | None,
    lexical_weight: float | None,
    options: SourceOptions,
    source_prefix: str | None,
    urls: UrlRule,
    metadata: dict[str, str],
    progress: bool | None,
) -> None:
    """Index SOURCE (a folder, a git+https:// URL, an llms.txt or a site's URL): chunk, embed
    and store what changed; prune what disappeared."""
    if [source, bundle_path, from_parquet].count(None) != 2:
        raise click.UsageError(
            "pass a SOURCE, --bundle FILE or --from-parquet FILE_OR_GLOB (one of them)"
        )
    if from_parquet is not None and metadata:
        raise click.UsageError("--set applies to a SOURCE; put metadata in the Parquet rows")
    if bundle_path is not None:
        if metadata or source_prefix is not None or urls.base_url is not None:
            raise click.UsageError(
                "--set, --source-prefix and --base-url apply to a SOURCE; a bundle sets them"
                " per library (name, version, base_url)"
            )
        require_extra("index", "indexing a bundle")
        from .bundle import Bundle

        bundle = Bundle.read(bundle_path)  # a bad file fails before the index is opened
    if source is not None:
        require_extra("index", "indexing a source")
        from .sources import open_source

        # A SOURCE nothing reads fails before the index is opened.
        opened = open_source(source, replace(options, progress=progress))
    store = VectorStore(
        db_path,
        backend,
        model_path=model_path,
        quantize=quantize,
        language=language,
        read_only=False,
        staged=True,
    )
    if from_parquet is not None:
        _index_parquet(
            store, from_parquet, backend, source_prefix, lexical_weight, as_json, progress
        )
        return
    if bundle_path is not None:
        crawling = replace(options, progress=progress)
        _index_bundle(store, bundle, str(bundle_path), crawling, lexical_weight, as_json, progress)
        return
    with store:
        from .indexer import index_source  # with the chunkers: only for this verb (see __init__)

        summary = index_source(
            store,
            opened,
            chunker=None,
            source_prefix=source_prefix,
            urls=urls,
            metadata=metadata,
            progress=progress,
        )
        empty = store.count() == 0
        if lexical_weight is not None and not empty:
            store.record_lexical_weight(lexical_weight)
    _echo(summary, as_json, summary_as_text)
    if empty:
        raise DuckDBVectorsError(
            f"nothing was indexed from {opened.location}: no document had indexable text"
        )


def _index_bundle(
    store: VectorStore,
    bundle: Bundle,
    name: str,
    options: SourceOptions,
    lexical_weight: float | None,
    as_json: bool,
    progress: bool | None,
) -> None:
    from .bundle import index_bundle

    with store:
        summary = index_bundle(store, bundle, name=name, options=options, progress=progress)
        if lexical_weight is not None:  # every library holds chunks (or index_bundle refused)
            store.record_lexical_weight(lexical_weight)
    _echo(summary, as_json, bundle_summary_as_text)


def _index_parquet(
    store: VectorStore,
    pattern: str,
    backend: str | None,
    source_prefix: str | None,
    lexical_weight: float | None,
    as_json: bool,
    progress: bool | None,
) -> None:
    from .parquet_import import index_parquet

    with store:
        if store.manifest is None and backend is None:
            raise click.UsageError(
                f"{store.db_path} is a new index: pass --backend naming the model that made"
                " the embeddings, so queries are embedded alike"
            )
        summary = index_parquet(store, pattern, source_prefix=source_prefix, progress=progress)
        if lexical_weight is not None:
            store.record_lexical_weight(lexical_weight)
    _echo(summary, as_json, parquet_summary_as_text)


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors report --db docs.duckdb
  duckdb-vectors report --json | jq .manifest.content_hash
"""
)
@db_option
@max_age_option
@json_option
def report(db_path: Path | str | None, max_age: float | None, as_json: bool) -> None:
    """Describe the index: backend, dimension, chunks, sources, manifest. Loads no model."""
    with VectorStore(db_path, read_only=True, max_age=max_age) as store:
        result = store.report()
    _echo(result, as_json, report_as_text)


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors pull https://example.com/docs.duckdb
  duckdb-vectors pull 'https://example.com/docs.duckdb#sha256=<hex>' --json
"""
)
@click.argument("url")
@max_age_option
@json_option
def pull(url: str, max_age: float | None, as_json: bool) -> None:
    """Fetch a published index (or refresh its cached copy) and print where the copy is.

    Without --max-age the server is always asked (a 304 downloads nothing)."""
    if not is_url(url):
        raise click.BadParameter(f"{url} is not an http(s):// URL", param_hint="URL")
    settings = Settings.resolve()
    pulled = remote.pull(url, settings.cache_dir, 0.0 if max_age is None else max_age)
    if as_json:
        fields = {**asdict(pulled.copy), "outcome": pulled.outcome}
        click.echo(json.dumps({**fields, "age_seconds": pulled.copy.age_seconds}, indent=2))
    else:
        click.echo(pulled.path)


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors upgrade --db docs.duckdb
  duckdb-vectors upgrade --db docs.duckdb --quantize int8   # add int8 codes
  duckdb-vectors upgrade --db docs.duckdb --language german # German word forms
"""
)
@db_option
@quantize_option
@language_option
def upgrade(db_path: Path | None, quantize: Quantization | None, language: str | None) -> None:
    """Bring an index from an older duckdb-vectors up to this one: migrate its schema and
    re-tokenize it for BM25, in one go; --quantize also codes its vectors. Loads no model and
    leaves the float32 vectors as they are."""
    with VectorStore(
        db_path, quantize=quantize, language=language, read_only=False, staged=True
    ) as store:
        manifest = store.manifest
    if manifest is None:
        raise DuckDBVectorsError(f"{store.db_path} holds no index to upgrade")
    click.echo(
        # The schema the file is at now; the manifest's is the one its last write was made at.
        f"{store.db_path}: schema {SCHEMA_VERSION}, tokenizer {manifest.tokenizer}"
        f" ({manifest.language}), quantization {manifest.quantization or 'none'}"
    )


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors search "how do retries work?" --top-k 3
  duckdb-vectors search "E1234" --filter '{"kind": {"$in": ["guide", "faq"]}}' --json
  duckdb-vectors search "install" --where "source LIKE 'guides/%'"
  duckdb-vectors search "retry backoff jitter" --match all
"""
)
@click.argument("query")
@store_options
@click.option(
    "--top-k",
    type=click.IntRange(1, MAX_RESULTS),
    default=5,
    show_default=True,
    help="How many results.",
)
@click.option("--filter", "filter_json", metavar="JSON", help="S3 Vectors metadata filter.")
@click.option("--library", help="Only this library of a bundle index (`report` lists them).")
@click.option("--version", "library_version", help="With --library: only this version of it.")
@click.option("--where", metavar="SQL", help="SQL condition over chunk columns.")
@click.option("--rescore", metavar="SQL", help="SQL expression re-weighting `score`.")
@click.option("--vector-only", is_flag=True, help="Rank by vector similarity alone.")
@click.option("--text-only", is_flag=True, help="Rank by BM25 alone (loads no model).")
@click.option("--full", is_flag=True, help="Print each chunk's whole text, not a snippet.")
@click.option("--one-per-source", is_flag=True, help="At most one hit per document.")
@click.option(
    "--match",
    type=click.Choice(MATCH_MODES),
    default="any",
    show_default=True,
    help="all: only chunks with every query word (falls back to any, and says so).",
)
@max_tokens_option
@max_age_option
def search(
    query: str,
    db_path: Path | str | None,
    backend: str | None,
    model_path: Path | None,
    as_json: bool,
    top_k: int,
    filter_json: str | None,
    library: str | None,
    library_version: str | None,
    where: str | None,
    rescore: str | None,
    vector_only: bool,
    text_only: bool,
    full: bool,
    one_per_source: bool,
    match: Match,
    max_tokens: int | None,
    max_age: float | None,
) -> None:
    """Search the index for QUERY (hybrid: vector similarity + BM25 over word forms, fused)."""
    if vector_only and text_only:
        raise click.UsageError("--vector-only and --text-only exclude each other")
    if library_version is not None and library is None:
        raise click.UsageError("--version needs --library: name the library it is a version of")
    metadata_filter = _parse_filter(filter_json)
    # One query per process: answer from SQL rather than loading the in-memory index.
    with VectorStore(
        db_path, backend, model_path=model_path, read_only=True, memory_index=False, max_age=max_age
    ) as store:
        if store.count() == 0:
            raise DuckDBVectorsError(
                f"{store.db_path} is empty: index documents into it first"
                f" (duckdb-vectors index SOURCE --db {store.db_path})"
            )
        if library is not None:
            scoped = libraries.scope(store.manifest, library, library_version)
            metadata_filter = (
                scoped if metadata_filter is None else {"$and": [metadata_filter, scoped]}
            )
        options: dict[str, Any] = {
            "filter": metadata_filter,
            "where": where,
            "rescore": rescore,
            "one_per_source": one_per_source,
        }
        if text_only:
            hits = store.query_text(query, top_k, match=match, **options)
        else:
            hits = store.query(query, top_k, hybrid=not vector_only, match=match, **options)
    output = SearchOutput.of(query, hits, max_tokens, hits.match)
    _echo(output, as_json, lambda shown: shown.as_text(full_text=full, with_ids=True))


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors fetch guides/searching.md             # the whole document
  duckdb-vectors fetch 'guides/searching.md#2' --context 1
  duckdb-vectors fetch guides/searching.md --max-tokens 2000 --offset 8000 --json
"""
)
@click.argument("id")
@db_option
@json_option
@click.option(
    "--context",
    type=click.IntRange(0, MAX_CONTEXT),
    default=0,
    show_default=True,
    help="For a chunk id: how many chunks of its document to add on each side.",
)
@max_tokens_option
@click.option(
    "--offset", type=click.IntRange(0), default=0, help="Start here (a previous next_offset)."
)
@max_age_option
def fetch(
    id: str,
    db_path: Path | str | None,
    as_json: bool,
    context: int,
    max_tokens: int | None,
    offset: int,
    max_age: float | None,
) -> None:
    """Print a document (ID is a source) or a chunk and its neighbours (ID is a chunk_id)."""
    with VectorStore(db_path, read_only=True, memory_index=False, max_age=max_age) as store:
        fetched = fetch_text(store, id, context=context, max_tokens=max_tokens, offset=offset)
    _echo(fetched, as_json, lambda shown: shown.as_text(cite=True, next_page=False))
    if not as_json and fetched.next_offset is not None:
        left = fetched.total_chars - fetched.next_offset
        click.echo(f"{left} more characters: add --offset {fetched.next_offset}", err=True)


@cli.command(
    "eval",
    epilog="""\b
Examples:
  duckdb-vectors eval --queries queries.jsonl --qrels qrels/test.tsv --db corpus.duckdb
  duckdb-vectors eval --queries q.jsonl --qrels q.tsv --by source --modes hybrid,text --json
  duckdb-vectors eval --queries q.jsonl --qrels q.tsv --by source --tune   # record the best mix
""",
)
@store_options
@click.option(
    "--queries",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help='BEIR queries.jsonl: one {"_id", "text"} per line.',
)
@click.option(
    "--qrels",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="BEIR qrels TSV with a query-id, corpus-id, score header.",
)
@click.option(
    "--by",
    type=click.Choice(["chunk_id", "source"]),
    default="chunk_id",
    show_default=True,
    help="What corpus ids name: chunks, or documents (found when any of their chunks is).",
)
@click.option(
    "--modes",
    default="hybrid,vector,text",
    show_default=True,
    help="Comma-separated ranking modes to compare.",
)
@click.option(
    "--tune",
    is_flag=True,
    help="First find the BM25 share of the hybrid score that ranks these queries best"
    " (nDCG@10, shares 0 to 1), and record it in the index (opens it read-write).",
)
def evaluate_command(
    db_path: Path | None,
    backend: str | None,
    model_path: Path | None,
    as_json: bool,
    queries: Path,
    qrels: Path,
    by: str,
    modes: str,
    tune: bool,
) -> None:
    """Measure the index on judged queries: nDCG@10, Recall@10/100, MRR@10, latency."""
    from .evaluation import MODES, evaluate, load_qrels, load_queries, tune_lexical_weight

    chosen = [mode.strip() for mode in modes.split(",") if mode.strip()]
    unknown = sorted(set(chosen) - set(MODES))
    if unknown or not chosen:
        raise click.BadParameter(
            f"unknown mode {unknown}; use {', '.join(MODES)}", param_hint="--modes"
        )
    judgments = load_qrels(qrels)
    if not judgments:
        raise click.BadParameter(f"{qrels} has no positive judgments", param_hint="--qrels")
    asked = load_queries(queries)
    with VectorStore(db_path, backend, model_path=model_path, read_only=not tune) as store:
        tuning = tune_lexical_weight(store, asked, judgments, by) if tune else None  # type: ignore[arg-type]
        if tuning is not None:
            store.record_lexical_weight(tuning.after)
        reports = evaluate(store, asked, judgments, chosen, by=by)  # type: ignore[arg-type]
    modes_json = {m: asdict(r) for m, r in reports.items()}
    if as_json:
        shown = modes_json if tuning is None else {"tuning": asdict(tuning), "modes": modes_json}
        click.echo(json.dumps(shown, indent=2))
        return
    if tuning is not None:
        click.echo(tuning_as_text(tuning, store.db_path))
    click.echo(evaluation_as_text(reports))


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors mcp --db /app/vectors.duckdb
  docker run -i --rm my-docs-search mcp
  duckdb-vectors mcp --transport http --port 8000       # http://127.0.0.1:8000/mcp
  docker run -p 8000:8000 my-docs-search mcp --transport http --host 0.0.0.0
"""
)
@db_option
@model_options
@click.option(
    "--read-only/--read-write",
    default=None,
    help="Open the index read-only [env DUCKDB_VECTORS_READ_ONLY; default read-only].",
)
@click.option(
    "--transport",
    type=click.Choice(["stdio", "http"]),
    default="stdio",
    show_default=True,
    help="stdio for a spawned server; http for streamable HTTP at /mcp (and GET /health).",
)
@click.option("--host", default=DEFAULT_MCP_HOST, show_default=True, help="HTTP: address to bind.")
@click.option("--port", type=click.IntRange(1, 65535), default=DEFAULT_MCP_PORT, show_default=True)
@click.option(
    "--auth-token",
    help="HTTP: require 'Authorization: Bearer TOKEN' [env DUCKDB_VECTORS_AUTH_TOKEN].",
)
@click.option(
    "--allowed-origin",
    "allowed_origins",
    multiple=True,
    metavar="ORIGIN",
    help="HTTP: a browser origin to accept besides localhost ones (repeatable).",
)
@max_age_option
def mcp(
    db_path: Path | str | None,
    backend: str | None,
    model_path: Path | None,
    read_only: bool | None,
    transport: str,
    host: str,
    port: int,
    auth_token: str | None,
    allowed_origins: tuple[str, ...],
    max_age: float | None,
) -> None:
    """Serve search, fetch and report to agents (Model Context Protocol)."""
    require_extra("mcp", "serving MCP")
    from .serve.warming import BackgroundWarmUp

    settings = Settings.resolve(
        db_path=db_path,
        backend=backend,
        model_path=model_path,
        read_only=read_only,
        max_age=max_age,
        auth_token=auth_token,
    )
    # A server is read-only unless told otherwise, by the flag or DUCKDB_VECTORS_READ_ONLY.
    if "read_only" not in settings.model_fields_set:
        settings = settings.model_copy(update={"read_only": True})
    # Opened first: a bad path fails at once; with a CPU to spare, its load overlaps the SDK import.
    with VectorStore.from_settings(settings) as store:
        warm_up = BackgroundWarmUp(store).start_early()
        from .serve.mcp_server import build_server, serve_stdio

        if transport == "stdio":
            serve_stdio(build_server(store, warm_up))
            return
        from .serve.mcp_http import HttpOptions, serve_http  # uvicorn and starlette: only for HTTP

        options = HttpOptions(host, port, settings.auth_token, allowed_origins, settings.http)
        serve_http(build_server(store, warm_up, guarded=options.auth_token is not None), options)


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors bake ./docs --tag my-docs
  duckdb-vectors bake 'git+https://github.com/ORG/REPO@v1.0#subdirectory=docs' --tag my-docs:1.0
  duckdb-vectors bake ./docs --tag my-docs:1.0 --model-path ./models/potion --label team=search
  duckdb-vectors bake ./handbook --tag registry.example.com/handbook --json
  duckdb-vectors bake ./docs --tag my-docs --catalog-entry my-docs.catalog.yaml
  duckdb-vectors bake --bundle docs.yaml --tag team-docs   # several libraries in one image
  duckdb-vectors bake ./docs --tag my-docs --from-image my-docs   # embeds only what changed
"""
)
@click.argument("source", metavar="SOURCE", required=False)
@click.option(
    "--bundle",
    "bundle_path",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Bake the libraries a bundle file (docs.yaml) lists instead of a SOURCE.",
)
@click.option("--tag", "-t", required=True, help="Name the image, e.g. my-docs or my-docs:1.0.")
@model_options
@click.option(
    "--label", "labels", multiple=True, metavar="KEY=VALUE", help="Add a label (repeatable)."
)
@click.option(
    "--verify/--no-verify",
    default=True,
    show_default=True,
    help="Run the image hardened (a search, an MCP initialize) before tagging it.",
)
@click.option("--base-image", default=DEFAULT_BASE_IMAGE, show_default=True)
@click.option("--platform", help="Target platform, e.g. linux/arm64, where the engine can.")
@click.option("--no-cache", is_flag=True, help="Build every stage again, the toolkit too.")
@click.option(
    "--network",
    metavar="MODE",
    help="The build's network (docker build --network), e.g. host to fetch SOURCE from a"
    " server on this machine; the image always runs with none.",
)
@click.option(
    "--catalog-entry",
    type=click.Path(dir_okay=False, path_type=Path),
    metavar="FILE",
    help="Also write the image's Docker MCP Gateway catalog entry (YAML) to FILE.",
)
@click.option(
    "--from-image",
    metavar="IMAGE",
    help="Start from the index of IMAGE, an earlier bake (--tag's own image too): only chunks"
    " whose text changed are embedded. Built with another model or index schema: said in one"
    " line, and everything is embedded.",
)
@url_options
@language_option
@lexical_weight_option
@json_option
def bake(
    source: str | None,
    bundle_path: Path | None,
    tag: str,
    backend: str | None,
    model_path: Path | None,
    labels: tuple[str, ...],
    verify: bool,
    base_image: str,
    platform: str | None,
    no_cache: bool,
    network: str | None,
    catalog_entry: Path | None,
    from_image: str | None,
    urls: UrlRule,
    language: str | None,
    lexical_weight: float | None,
    as_json: bool,
) -> None:
    """Bake SOURCE (a folder, or a git+https:// URL or a site's URL, fetched at build time)
    into a verified index image: build, label, check, tag."""
    if (source is None) == (bundle_path is None):
        raise click.UsageError("pass a SOURCE or --bundle FILE (one of them)")
    if bundle_path is not None and urls.base_url is not None:
        raise click.UsageError("--base-url applies to a SOURCE; a bundle sets it per library")
    require_extra("bake", "bake")
    from .container.bake import bake as bake_image
    from .container.labels import user_labels

    try:
        summary = bake_image(
            source,
            tag,
            bundle=bundle_path,
            backend=backend,
            model_path=model_path,
            labels=user_labels(labels),
            verify=verify,
            base_image=base_image,
            platform=platform,
            no_cache=no_cache,
            network=network,
            urls=urls,
            language=language,
            lexical_weight=lexical_weight,
            catalog_entry=catalog_entry,
            from_image=from_image,
        )
    except BuildError as error:  # the step's last lines, then the one-line error
        click.echo("\n".join(f"  | {line}" for line in error.log_tail), err=True)
        raise
    _echo(summary, as_json, bake_summary_as_text)


@cli.command(
    "inspect",
    epilog="""\b
Examples:
  duckdb-vectors inspect my-docs
  duckdb-vectors inspect my-docs --json | jq .content_hash
""",
)
@click.argument("image")
@json_option
def inspect_command(image: str, as_json: bool) -> None:
    """Show the manifest of a baked IMAGE, read from its labels (runs nothing)."""
    require_extra("bake", "inspect", ("docker",))
    from .container.labels import inspect_image

    found = inspect_image(image)
    if as_json:
        click.echo(found.manifest.model_dump_json(indent=2))
    else:
        click.echo(image_manifest_as_text(image, found))


@cli.command(
    epilog="""\b
Examples:
  duckdb-vectors skill --db https://example.com/duckdb-docs.duckdb --out ~/.claude/skills
  duckdb-vectors skill --image my-docs-search --about "the Acme handbook" --out .agents/skills
  duckdb-vectors skill --db https://example.com/docs.duckdb --name acme-docs --stdout
  duckdb-vectors skill --db ./docs.duckdb --out .claude/skills   # a file on this machine
"""
)
@click.option(
    "--db",
    "url",
    metavar="URL|FILE",
    help="The http(s):// URL of a published index (see docs/publishing.md), or an index file"
    " on this machine.",
)
@click.option("--image", metavar="IMAGE", help="A baked image (duckdb-vectors bake), by its tag.")
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("."),
    show_default=True,
    help="The skills folder: NAME/SKILL.md is written in it.",
)
@click.option(
    "--name",
    help="The skill's name: lowercase letters, digits, hyphens [default: from the URL's file"
    " or the image's name].",
)
@click.option(
    "--about",
    metavar="TEXT",
    help='What the index holds, in a few words (e.g. "the DuckDB manual") [default: its'
    " documents' names].",
)
@click.option(
    "--example-query",
    metavar="TEXT",
    help="The query in the skill's example search [default: a document's title].",
)
@click.option("--stdout", "to_stdout", is_flag=True, help="Print SKILL.md instead of writing it.")
@click.option(
    "--json", "as_json", is_flag=True, help="Print the skill as JSON instead of writing it."
)
@max_age_option
def skill(
    url: str | None,
    image: str | None,
    out: Path,
    name: str | None,
    about: str | None,
    example_query: str | None,
    to_stdout: bool,
    as_json: bool,
    max_age: float | None,
) -> None:
    """Write an Agent Skill (NAME/SKILL.md) that tells an agent with a shell how to search a
    published index, an index file on this machine or a baked image: when to use it, the
    commands, how to cite, what to do offline. Loads no model."""
    from .skills import SkillOptions, check_name, file_skill, image_skill, url_skill, write_skill

    if (url is None) == (image is None):
        raise click.UsageError("pass --db URL|FILE or --image IMAGE (one of them)")
    if name is not None:
        try:
            check_name(name)
        except SkillError as error:
            raise click.BadParameter(str(error), param_hint="--name") from None
    options = SkillOptions(name=name, about=about, example_query=example_query)
    if url is not None and is_url(url):
        made = url_skill(url, options, max_age=max_age)
    elif url is not None:
        made = file_skill(url, options)
    else:
        require_extra("bake", "a skill for an image", ("docker",))
        made = image_skill(image or "", options)
    if as_json:
        click.echo(made.model_dump_json(indent=2))
    elif to_stdout:
        click.echo(made.text, nl=False)
    else:
        click.echo(write_skill(out, made))


def _parse_filter(filter_json: str | None) -> dict[str, Any] | None:
    if filter_json is None:
        return None
    try:
        parsed = json.loads(filter_json)
    except json.JSONDecodeError as error:
        raise InvalidFilterError(f"--filter is not valid JSON: {error}") from None
    if not isinstance(parsed, dict):
        raise InvalidFilterError('--filter must be a JSON object, e.g. {"kind": "guide"}')
    return parsed


# The signal (SIGINT or SIGTERM) that stopped the process: raised as Ctrl-C, so what a run was
# writing is rolled back (see ``staging``); the exit code is 128 + its number, as in a shell.
_stopped_by: list[int] = []


def _stop(signal_number: int, _frame: object) -> None:
    if staging.published():  # the new index is in place: the run has done its work
        return
    _stopped_by.append(signal_number)
    raise KeyboardInterrupt


@contextmanager
def _stopped_by_signals() -> Iterator[None]:
    """SIGINT and SIGTERM stop the command (``_stop``) while it runs in the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stopped_by.clear()
    signals = (signal.SIGINT, signal.SIGTERM)
    previous = [signal.signal(number, _stop) for number in signals]
    try:
        yield
    finally:
        # Once the new index is in place the run has done its work: a signal from now until
        # the process ends must not report it as interrupted (the startup handler would).
        done = staging.published()
        for number, handler in zip(signals, previous, strict=True):
            signal.signal(number, signal.SIG_IGN if done else handler)


def main() -> None:
    """Console-script entry point: one-line errors and exit codes instead of tracebacks."""
    debug = "--debug" in sys.argv[1:] or bool(os.environ.get("DUCKDB_VECTORS_DEBUG"))
    try:
        with _stopped_by_signals():
            cli.main(standalone_mode=False)
    except click.exceptions.Exit as done:
        sys.exit(done.exit_code)
    except click.ClickException as error:
        error.show()
        sys.exit(error.exit_code)
    except (click.Abort, KeyboardInterrupt, Exception) as error:
        # A signal that arrives inside DuckDB comes back as its own error ("Query interrupted").
        if _stopped_by or isinstance(error, (click.Abort, KeyboardInterrupt)):
            click.echo("Interrupted.", err=True)
            sys.exit(128 + _stopped_by[0] if _stopped_by else EXIT_INTERRUPTED)
        if debug:
            raise
        usage = isinstance(error, (InvalidFilterError, InvalidRankingSQLError, ValueError))
        known = isinstance(error, DuckDBVectorsError) or usage
        message = str(error).strip().splitlines()[0] if str(error).strip() else ""
        if not known:
            message = f"unexpected {type(error).__name__}: {message} (rerun with --debug)"
        click.echo(f"Error: {message}", err=True)
        sys.exit(EXIT_USAGE if usage else EXIT_ERROR)


if __name__ == "__main__":
    main()
