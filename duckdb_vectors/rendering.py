"""How results look outside Python: the stable JSON shape and the readable text form.

The CLI's ``--json`` output and the MCP server's structured content share these shapes,
documented in docs/json-output.md; change them only in a backwards-compatible way.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field

from .citations import url_of
from .evaluation import ModeReport
from .indexer import IndexSummary
from .models import IndexReport, SearchResult

if TYPE_CHECKING:  # the container modules import the Docker SDK: not needed to search
    from .container.bake import BakeSummary
    from .container.labels import ImageManifest

SNIPPET_CHARS = 240
REPORT_SOURCES = 50  # the text form lists at most this many sources; JSON lists all


class Hit(BaseModel):
    """One ranked chunk: the hit JSON of ``search --json`` and of the MCP ``search`` tool."""

    rank: int = Field(description="1-based position in this answer.")
    score: float = Field(description="Fused score (cosine or BM25 for a one-signal search).")
    chunk_id: str
    source: str | None
    title: str | None = Field(description="Heading breadcrumb, or None.")
    position: int | None
    url: str | None = Field(description="The public page to cite, when the index knows it.")
    text: str = Field(description="The whole chunk text.")
    metadata: dict[str, Any]
    vector_rank: int | None = Field(description="Rank by vector similarity; None if unranked.")
    text_rank: int | None = Field(description="Rank by BM25; None if the words did not match.")

    @classmethod
    def of(cls, rank: int, hit: SearchResult) -> Hit:
        chunk = hit.chunk
        return cls(
            rank=rank,
            score=round(hit.score, 6),
            chunk_id=chunk.chunk_id,
            source=chunk.source,
            title=chunk.title,
            position=chunk.position,
            url=url_of(chunk),
            text=chunk.text,
            metadata=chunk.metadata,
            vector_rank=hit.vector_rank,
            text_rank=hit.text_rank,
        )


class SearchOutput(BaseModel):
    """A search's answer: the query and its hits, best first."""

    query: str
    results: list[Hit]


def search_record(query: str, hits: list[SearchResult]) -> dict[str, Any]:
    """The hit JSON of a search, as a plain dict."""
    results = [Hit.of(rank, hit) for rank, hit in enumerate(hits, 1)]
    return SearchOutput(query=query, results=results).model_dump(mode="json")


def hits_as_text(hits: list[SearchResult], full_text: bool) -> str:
    """Readable hits: rank, score, source and title, then the text (or a one-line snippet)."""
    if not hits:
        return "No results."
    blocks = []
    for rank, hit in enumerate(hits, 1):
        chunk = hit.chunk
        heading = " | ".join(part for part in (chunk.source, chunk.title) if part)
        body = chunk.text if full_text else _snippet(chunk.text)
        url = url_of(chunk)
        cited = f"\n   {url}" if url else ""
        blocks.append(
            f"{rank}. [{hit.score:.3f}] {heading or chunk.chunk_id}{cited}\n{_indent(body)}"
        )
    return "\n\n".join(blocks)


def report_as_text(report: IndexReport) -> str:
    manifest = report.manifest or {}
    size = f"{report.file_size_bytes / 1e6:.1f} MB" if report.file_size_bytes else "in memory"
    lines = [
        f"index       {report.db_path} ({size})",
        f"backend     {report.backend}",
        f"dimension   {report.dimension}",
        f"chunks      {report.chunk_count}",
        f"content     {manifest.get('content_hash', '')[:16] or '-'}",
        f"model       {(manifest.get('model_fingerprint') or '-')[:16]}",
        f"built       {manifest.get('built_at', '-')}",
        f"versions    duckdb {manifest.get('duckdb_version', '-')},"
        f" duckdb-vectors {manifest.get('package_version', '-')}",
        f"sources     {len(report.sources)}",
    ]
    listed = list(report.sources.items())[:REPORT_SOURCES]
    lines += [f"  {count:6d}  {source or '(none)'}" for source, count in listed]
    if len(report.sources) > REPORT_SOURCES:
        lines.append(f"  ... and {len(report.sources) - REPORT_SOURCES} more (see --json)")
    return "\n".join(lines)


def summary_as_text(summary: IndexSummary) -> str:
    lines = [
        f"indexed {summary.folder} in {summary.seconds:.2f} s",
        f"files   {summary.files_seen} seen: {summary.files_new} new, {summary.files_changed}"
        f" changed, {summary.files_unchanged} unchanged, {len(summary.skipped)} skipped,"
        f" {len(summary.failed)} failed",
        f"chunks  {summary.chunks_added} added, {summary.chunks_updated} updated,"
        f" {summary.chunks_unchanged} unchanged, {summary.chunks_embedded} embedded,"
        f" {summary.chunks_pruned} pruned",
    ]
    # Each skipped or failed file was already reported on stderr as it happened (--json
    # lists them too); the summary counts them rather than list them twice.
    return "\n".join(lines)


def bake_summary_as_text(summary: BakeSummary) -> str:
    verified = (
        f"verified: a hardened search answered in {summary.cold_search_seconds:.2f} s from a"
        " cold start, MCP initialize completed"
        if summary.verified
        else "not verified (--no-verify)"
    )
    overhead = (
        f" ({_megabytes(summary.overhead_bytes)} over {summary.base_image})"
        if summary.overhead_bytes is not None
        else ""
    )
    lines = [
        f"baked {summary.tag} ({summary.image_id[:19]}) in {summary.build_seconds:.1f} s",
        f"size      {_megabytes(summary.size_bytes)}{overhead}",
        f"index     {summary.chunk_count} chunks from {summary.source_count} sources,"
        f" {len(summary.skipped)} files skipped, {len(summary.failed)} failed",
        f"model     {summary.backend}, {summary.dimension} dimensions",
        f"content   {summary.content_hash[:16]}",
        verified,
    ]
    for label, problems in (("skipped", summary.skipped), ("failed", summary.failed)):
        lines += [f"  {label}: {problem.source}: {problem.reason}" for problem in problems]
    return "\n".join(lines)


def image_manifest_as_text(reference: str, image: ImageManifest) -> str:
    manifest = image.manifest
    sources = "-" if image.source_count is None else str(image.source_count)
    return "\n".join(
        [
            f"image       {reference} ({image.image_id[:19]})",
            f"backend     {manifest.backend}",
            f"dimension   {manifest.dimension}",
            f"tokenizer   {manifest.tokenizer}",
            f"chunks      {manifest.chunk_count}",
            f"sources     {sources}",
            f"content     {manifest.content_hash[:16] or '-'}",
            f"model       {(manifest.model_fingerprint or '-')[:16]}",
            f"built       {manifest.built_at.isoformat()}",
            f"versions    duckdb {manifest.duckdb_version},"
            f" duckdb-vectors {manifest.package_version}",
        ]
    )


def evaluation_as_text(reports: dict[str, ModeReport]) -> str:
    judged = next(iter(reports.values())).queries if reports else 0
    lines = [
        f"{judged} judged queries",
        f"{'mode':8} {'nDCG@10':>8} {'R@10':>7} {'R@100':>7} {'MRR@10':>7}"
        f" {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}",
    ]
    for mode, report in reports.items():
        latency = report.latency_ms
        lines.append(
            f"{mode:8} {report.ndcg_at_10:8.4f} {report.recall_at_10:7.4f}"
            f" {report.recall_at_100:7.4f} {report.mrr_at_10:7.4f} {latency.get('p50', 0):8.2f}"
            f" {latency.get('p95', 0):8.2f} {latency.get('p99', 0):8.2f}"
        )
    return "\n".join(lines)


def _megabytes(size: int | None) -> str:
    return "-" if size is None else f"{size / 1e6:.1f} MB"


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= SNIPPET_CHARS else flat[: SNIPPET_CHARS - 1] + "…"


def _indent(text: str) -> str:
    return "\n".join(f"   {line}" for line in text.splitlines())
