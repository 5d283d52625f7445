"""How results look outside Python: the stable JSON shape and the readable text form.

The CLI's ``--json`` output and the MCP server's structured content share these shapes,
documented in docs/json-output.md; change them only in a backwards-compatible way.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, create_model

from . import libraries
from .budget import TRUNCATION_MARKER, estimate_tokens, fit
from .citations import document_uri, url_of
from .config import describe_age
from .index.manifest import Manifest
from .models import GIVEN_FIELDS, Chunk, IndexReport, SearchResult
from .search.answer import MATCH_FELL_BACK

if TYPE_CHECKING:  # the container modules import the Docker SDK, the indexer the chunkers
    from pathlib import Path

    from .bundle import BundleSummary
    from .container.bake import BakeSummary
    from .container.labels import ImageManifest
    from .evaluation import ModeReport, Tuning
    from .indexer import IndexSummary
    from .parquet_import import ParquetSummary

SNIPPET_CHARS = 240
MIN_TRUNCATED_TOKENS = 50  # a hit cut to fit max_tokens is kept only if this much of it fits
MIN_MAX_TOKENS = 200  # below this not even one hit (or page) is worth reading
REPORT_SOURCES = 50  # the text form lists at most this many sources; JSON lists all


class _Hit(BaseModel):
    @classmethod
    def of(cls, rank: int, hit: SearchResult) -> Hit:
        chunk = hit.chunk
        return cls(
            rank=rank,
            score=round(hit.score, 6),
            **{name: getattr(chunk, name) for name in GIVEN_FIELDS},
            uri=document_uri(chunk.source),
            url=url_of(chunk),
            vector_rank=hit.vector_rank,
            text_rank=hit.text_rank,
        )


def _shown(field: str) -> Any:
    """A chunk field as a hit shows it: its type and description, always present."""
    declared = Chunk.model_fields[field]
    return declared.annotation, Field(description=declared.description)


Hit = create_model(
    "Hit",
    __base__=_Hit,
    __doc__="One ranked chunk: the hit JSON of ``search --json`` and of the MCP ``search`` tool.",
    rank=(int, Field(description="1-based position in this answer.")),
    score=(float, Field(description="Fused score (cosine or BM25 for a one-signal search).")),
    **{name: _shown(name) for name in GIVEN_FIELDS},
    uri=(str | None, Field(description="The document as a resource (MCP), for fetch.")),
    url=(str | None, Field(description="The public page to cite, when the index knows it.")),
    vector_rank=(int | None, Field(description="Rank by vector similarity; None if unranked.")),
    text_rank=(int | None, Field(description="Rank by BM25; None if the words did not match.")),
)


class SearchOutput(BaseModel):
    """A search's answer: the query and its hits, best first."""

    query: str
    match: str = Field(
        "any",
        description='Which chunks the words selected: "any" query term, "all" of them, or'
        f' "{MATCH_FELL_BACK}" when match "all" was asked and fell back.',
    )
    results: list[Hit]
    truncated: str | None = Field(
        None, description="The chunk_id of the last hit, if its text was cut to fit max_tokens."
    )
    left_out: list[str] = Field(
        default_factory=list, description="chunk_ids of hits left out to fit max_tokens."
    )

    @classmethod
    def of(
        cls, query: str, hits: list[SearchResult], max_tokens: int | None = None, match: str = "any"
    ) -> SearchOutput:
        """The answer within ``max_tokens`` (measured on its JSON form, which is longer than
        its text form): cut at a hit, the last hit that fits in part cut with a marker, and
        the ids of the hits left out listed (their cost is reserved as the cut is chosen)."""
        results = [Hit.of(rank, hit) for rank, hit in enumerate(hits, 1)]
        output = cls(query=query, match=match, results=results)
        if max_tokens is None:
            return output
        ids = [hit.chunk_id for hit in output.results]
        # What listing the ids from i on costs, and the truncated field naming one of them.
        listing = [estimate_tokens(json.dumps(ids[i:])) for i in range(len(ids) + 1)]
        longest_id = max((len(chunk_id) for chunk_id in ids), default=0)
        frame = estimate_tokens(output.model_copy(update={"results": []}).model_dump_json())
        used = frame + estimate_tokens(f'"truncated":"{"x" * longest_id}",')
        for index, hit in enumerate(output.results):
            cost = estimate_tokens(hit.model_dump_json()) + 1  # and its comma
            if used + cost + listing[index + 1] > max_tokens:
                return output._cut(index, max_tokens - used - listing[index + 1])
            used += cost
        return output

    def _cut(self, index: int, room: int) -> SearchOutput:
        """Keep the hits before ``index``; the one at ``index`` too, its text cut to fit
        ``room`` tokens, if enough of it fits to be worth reading; name the rest."""
        kept, rest = self.results[:index], self.results[index:]
        hit = rest[0]
        text_room = room - estimate_tokens(hit.model_copy(update={"text": ""}).model_dump_json())
        truncated = None
        if text_room >= MIN_TRUNCATED_TOKENS:
            marker = estimate_tokens(TRUNCATION_MARKER)
            text = fit(hit.text, text_room - marker) + TRUNCATION_MARKER
            kept, rest = [*kept, hit.model_copy(update={"text": text})], rest[1:]
            truncated = hit.chunk_id
        left_out = [left.chunk_id for left in rest]
        return self.model_copy(
            update={"results": kept, "truncated": truncated, "left_out": left_out}
        )

    def as_text(self, full_text: bool, with_ids: bool = False) -> str:
        """Readable hits: rank, score, source and title, the URL (and with ``with_ids`` the
        chunk_id to fetch), then the text (or a one-line snippet); then what ``max_tokens``
        cut or left out. A fallback from match "all" is said first.

        Each hit, with its citation, is one block (its own blank lines indented): some clients
        (Docker Agent) join a result's text blocks with no separator."""
        blocks = []
        if self.match == MATCH_FELL_BACK:
            blocks.append("[No chunk has every query term; these hits match any of them.]")
        if not self.results:
            return "\n\n".join([*blocks, "No results."])
        for hit in self.results:
            parts = (libraries.label(hit.metadata), hit.source, hit.title)
            heading = " | ".join(part for part in parts if part)
            body = hit.text if full_text else _snippet(hit.text)
            cited = f"\n   {hit.url}" if hit.url else ""
            if with_ids:
                cited += f"\n   chunk_id: {hit.chunk_id}"
            blocks.append(
                f"{hit.rank}. [{hit.score:.3f}] {heading or hit.chunk_id}{cited}\n{_indent(body)}"
            )
        if self.truncated or self.left_out:
            blocks.append(self._budget_note())
        return "\n\n".join(blocks)

    def _budget_note(self) -> str:
        parts = []
        if self.truncated:
            parts.append(f"the text of {self.truncated} was cut")
        if self.left_out:
            parts.append(
                f"{len(self.left_out)} more hits were left out ({', '.join(self.left_out)})"
            )
        return (
            f"[To fit max_tokens, {' and '.join(parts)}. Fetch a chunk_id for its whole text,"
            " or search again with a larger max_tokens or a smaller top_k.]"
        )


def report_as_text(report: IndexReport, more: str = "see --json") -> str:
    """The report; ``more`` says where the sources beyond the first ``REPORT_SOURCES`` are."""
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
        *_slice_lines(manifest),
        *libraries_lines(Manifest.model_validate(manifest) if manifest else None),
        *_origin_lines(manifest.get("sources") or []),
        f"sources     {len(report.sources)}",
    ]
    if report.published is not None:
        age = describe_age(report.published.age_seconds)
        lines[1:1] = [f"published   {report.published.url} (checked {age} ago)"]
    listed = list(report.sources.items())[:REPORT_SOURCES]
    lines += [f"  {count:6d}  {source or '(none)'}" for source, count in listed]
    if len(report.sources) > REPORT_SOURCES:
        lines.append(f"  ... and {len(report.sources) - REPORT_SOURCES} more ({more})")
    return "\n".join(lines)


def _slice_lines(manifest: dict[str, Any]) -> list[str]:
    """The slices (``index --set``) and their chunk counts, if the index has any."""
    keys, counts = manifest.get("slice_keys") or [], manifest.get("slices") or []
    if not keys:
        return []
    lines = [f"slices      {len(counts)} by {', '.join(keys)}"]
    for count in counts:
        values = " ".join(f"{key}={value}" for key, value in count["metadata"].items())
        lines.append(f"  {count['chunk_count']:6d}  {values}")
    return lines


def _origin_lines(records: list[dict[str, Any]]) -> list[str]:
    """Where the documents came from (the manifest's ``sources``), one line each."""
    lines = []
    for record in records:
        prefix = f"{record['prefix']} <- " if record.get("prefix") else ""
        commit = f", commit {record['commit'][:12]}" if record.get("commit") else ""
        lines.append(
            f"origin      {prefix}{record['location']} ({record['kind']}{commit}, fetched"
            f" {record.get('fetched_at') or '-'}): {record.get('documents', 0)} documents,"
            f" {record.get('read', 0)} read, {record.get('unchanged', 0)} unchanged,"
            f" {record.get('skipped', 0)} skipped, {record.get('failed', 0)} failed"
        )
    return lines


def summary_as_text(summary: IndexSummary) -> str:
    lines = [
        f"indexed {summary.folder} in {summary.seconds:.2f} s",
        f"files   {summary.files_seen} seen: {summary.files_new} new, {summary.files_changed}"
        f" changed, {summary.files_unchanged} unchanged, {len(summary.skipped)} skipped,"
        f" {len(summary.failed)} failed",
        f"chunks  {summary.chunks_added} added, {summary.chunks_updated} updated,"
        f" {summary.chunks_unchanged} unchanged, {summary.chunks_embedded} embedded,"
        f" {summary.chunks_reused} reused, {summary.chunks_pruned} pruned",
    ]
    if summary.chunks_retokenized:
        lines.append(
            f"tokens  {summary.chunks_retokenized} chunks re-tokenized for BM25"
            f" ({summary.retokenized}): their vectors are kept"
        )
    if summary.chunks_past_window:
        lines.append(
            f"window  {summary.chunks_past_window} chunks are longer than the model embeds:"
            " BM25 reads all of their text, their vectors only its start"
        )
    return "\n".join(lines)  # skipped and failed files were reported on stderr as they happened


def bundle_summary_as_text(summary: BundleSummary) -> str:
    blocks = [
        f"{run.name}{' ' + run.version if run.version else ''}:\n"
        + _indent(summary_as_text(run.summary))
        for run in summary.libraries
    ]
    blocks.append(
        f"indexed {summary.bundle}: {len(summary.libraries)} libraries in {summary.seconds:.2f} s,"
        f" {summary.chunks_pruned} chunks of libraries no longer listed pruned"
    )
    return "\n".join(blocks)


def libraries_lines(manifest: Manifest | None) -> list[str]:
    """The libraries of a bundle index, a line per version, for ``report`` and ``inspect``."""
    found = libraries.listed(manifest)
    if not found:
        return []
    lines = [f"libraries   {len(found)}"]
    for info in found:
        for version in info.versions:
            name = f"{info.name} {version.version}" if version.version else info.name
            lines.append(
                f"  {version.chunks:6d}  {name} ({version.pages} pages) in {version.language}"
            )
    return lines


def parquet_summary_as_text(summary: ParquetSummary) -> str:
    return "\n".join(
        [
            f"indexed {summary.parquet} in {summary.seconds:.2f} s",
            f"files   {summary.files} read, {summary.rows} rows",
            f"chunks  {summary.chunks_added} added, {summary.chunks_updated} updated,"
            f" {summary.chunks_unchanged} unchanged, {summary.chunks_pruned} pruned",
        ]
    )


def bake_summary_as_text(summary: BakeSummary) -> str:
    verified = (
        f"verified: a hardened search answered in {summary.cold_search_seconds:.2f} s from a"
        " cold start; with no command it served MCP (initialize, tools/list)"
        if summary.verified
        else "not verified (--no-verify)"
    )
    overhead = (
        f" ({_megabytes(summary.overhead_bytes)} over {summary.base_image})"
        if summary.overhead_bytes is not None
        else ""
    )
    commit = f" at {summary.commit[:12]}" if summary.commit else ""
    lines = [
        f"baked {summary.tag} ({summary.image_id[:19]}) in {summary.build_seconds:.1f} s",
        f"source    {summary.source}{commit}",
        f"size      {_megabytes(summary.size_bytes)}{overhead}",
        f"index     {summary.chunk_count} chunks from {summary.source_count} sources,"
        f" {len(summary.skipped)} files skipped, {len(summary.failed)} failed",
        f"model     {summary.backend}, {summary.dimension} dimensions",
        f"vectors   {summary.chunks_embedded} embedded, {summary.chunks_reused} reused"
        + (f" (the index grew from {summary.from_image[:19]})" if summary.from_image else ""),
        f"content   {summary.content_hash[:16]}",
        verified,
    ]
    if summary.catalog_entry:
        lines.append(f"catalog   {summary.catalog_entry} (Docker MCP Gateway catalog entry)")
    for label, problems in (("skipped", summary.skipped), ("failed", summary.failed)):
        lines += [f"  {label}: {problem.source}: {problem.reason}" for problem in problems]
    return "\n".join(lines)


def image_manifest_as_text(reference: str, image: ImageManifest) -> str:
    manifest = image.manifest
    sources = "-" if image.source_count is None else str(image.source_count)
    origins = [record.model_dump(mode="json") for record in manifest.sources]
    return "\n".join(
        [
            f"image       {reference} ({image.image_id[:19]})",
            f"backend     {manifest.backend}",
            f"dimension   {manifest.dimension}",
            f"tokenizer   {manifest.tokenizer}",
            f"chunks      {manifest.chunk_count}",
            *_origin_lines(origins),
            f"sources     {sources}",
            f"content     {manifest.content_hash[:16] or '-'}",
            f"model       {(manifest.model_fingerprint or '-')[:16]}",
            f"built       {manifest.built_at.isoformat()}",
            f"versions    duckdb {manifest.duckdb_version},"
            f" duckdb-vectors {manifest.package_version}",
            *libraries_lines(manifest),
        ]
    )


def tuning_as_text(tuning: Tuning, db_path: Path) -> str:
    scores = tuning.ndcg_at_10
    tried = "  ".join(f"{weight:.1f}: {score:.4f}" for weight, score in scores.items())
    return (
        f"BM25 share {tuning.before:.2f} -> {tuning.after:.2f}: hybrid nDCG@10"
        f" {scores[tuning.before]:.4f} -> {scores[tuning.after]:.4f}, recorded in {db_path}\n"
        f"tried  {tried}\n"
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
