"""Relevance evaluation in the BEIR layout: nDCG@10, Recall@10/100, MRR@10 and latency.

Queries are ``queries.jsonl`` lines ``{"_id", "text"}``; judgments are ``qrels/<split>.tsv``
with a ``query-id  corpus-id  score`` header. A corpus id is matched against each hit's
``chunk_id`` (one chunk per document) or its ``source`` (documents split into chunks: a
document is found when any of its chunks is, at the rank of its best chunk).
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from .errors import EvaluationInputError
from .models import SearchResult
from .store import VectorStore

Mode = Literal["hybrid", "vector", "text"]
MODES: tuple[Mode, ...] = ("hybrid", "vector", "text")
DEPTH = 100


def load_queries(path: Path) -> dict[str, str]:
    with path.open(encoding="utf-8") as handle:
        rows = (json.loads(line) for line in handle if line.strip())
        return {str(row["_id"]): row["text"] for row in rows}


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """``{query_id: {corpus_id: relevance}}``, keeping only positive judgments."""
    qrels: dict[str, dict[str, int]] = {}
    with path.open(encoding="utf-8", newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            relevance = int(row["score"])
            if relevance > 0:
                qrels.setdefault(row["query-id"], {})[row["corpus-id"]] = relevance
    return qrels


def ndcg_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    """Normalised discounted cumulative gain with linear gains, as trec_eval computes it."""
    gains = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    best = sum(gain / math.log2(i + 2) for i, gain in enumerate(ideal))
    return gains / best if best else 0.0


def recall_at(ranked: Sequence[str], relevant: dict[str, int], k: int) -> float:
    return len(set(ranked[:k]) & set(relevant)) / len(relevant) if relevant else 0.0


def mrr_at(ranked: Sequence[str], relevant: dict[str, int], k: int = 10) -> float:
    return next((1.0 / (i + 1) for i, doc in enumerate(ranked[:k]) if doc in relevant), 0.0)


@dataclass
class ModeReport:
    """Mean metrics over the judged queries for one ranking mode, and its latencies."""

    ndcg_at_10: float = 0.0
    recall_at_10: float = 0.0
    recall_at_100: float = 0.0
    mrr_at_10: float = 0.0
    latency_ms: dict[str, float] = field(default_factory=dict)
    queries: int = 0  # judged queries: in both files, with a positive judgment


def judged_queries(queries: dict[str, str], qrels: dict[str, dict[str, int]]) -> list[str]:
    """The query ids both files name; none is an error that shows what each file holds."""
    judged = [query_id for query_id in qrels if query_id in queries]
    if not judged:
        raise EvaluationInputError(
            f"no query id is in both files: --qrels judges {_examples(qrels)},"
            f" --queries holds {_examples(queries)}; use queries and judgments of one data set"
        )
    return judged


def check_corpus_ids(
    store: VectorStore, qrels: dict[str, dict[str, int]], by: Literal["chunk_id", "source"]
) -> None:
    """Refuse judgments that name nothing in the index: every score would be 0."""
    judged = {corpus_id for relevant in qrels.values() for corpus_id in relevant}
    known = (
        set(store.sources())
        if by == "source"
        else {chunk.chunk_id for chunk in store.get_vectors(sorted(judged))}
    )
    if not judged & known:
        raise EvaluationInputError(
            f"no corpus id in --qrels ({_examples(judged)}) is a {by} in the index: index the"
            " corpus with its ids as chunk ids (see docs/relevance.md), or try --by"
            f" {'chunk_id' if by == 'source' else 'source'}"
        )


def _examples(ids: Iterable[str]) -> str:
    shown = sorted(ids)[:3]
    return ", ".join(repr(i) for i in shown) + (" ..." if len(shown) == 3 else "")


def document_ids(hits: Iterable[SearchResult], by: Literal["chunk_id", "source"]) -> list[str]:
    """Hit ids in rank order; in ``source`` mode each document once, at its best chunk."""
    ranked = (hit.chunk.chunk_id if by == "chunk_id" else (hit.chunk.source or "") for hit in hits)
    return list(dict.fromkeys(ranked))


def evaluate(
    store: VectorStore,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    modes: Sequence[Mode] = MODES,
    by: Literal["chunk_id", "source"] = "chunk_id",
    depth: int = DEPTH,
) -> dict[str, ModeReport]:
    """Run every judged query in every mode, timing the ranking alone (query vectors are
    embedded once, up front). ``depth`` is how many hits a query asks for (Recall@100 needs
    100)."""
    judged = judged_queries(queries, qrels)
    check_corpus_ids(store, qrels, by)
    texts = [queries[query_id] for query_id in judged]
    vectors = store.embedder.embed_query(texts) if set(modes) & {"hybrid", "vector"} else None
    depth = depth * 3 if by == "source" else depth
    searches: dict[Mode, Callable[[int], list[SearchResult]]] = {
        "hybrid": lambda i: store.query(texts[i], depth, vector=vectors[i]),
        "vector": lambda i: store.query_vectors(vectors[i], depth),
        "text": lambda i: store.query_text(texts[i], depth),
    }
    reports = {}
    for mode in modes:
        search = searches[mode]
        search(0)  # warm: builds the in-memory index outside the timings
        scores: list[tuple[float, ...]] = []
        timings: list[float] = []
        for index, query_id in enumerate(judged):
            started = time.perf_counter()
            hits = search(index)
            timings.append((time.perf_counter() - started) * 1000)
            ranked, relevant = document_ids(hits, by), qrels[query_id]
            scores.append(
                (
                    ndcg_at(ranked, relevant),
                    recall_at(ranked, relevant, 10),
                    recall_at(ranked, relevant, 100),
                    mrr_at(ranked, relevant),
                )
            )
        means = (sum(column) / len(judged) for column in zip(*scores, strict=True))
        reports[mode] = ModeReport(*means, _percentiles(timings), queries=len(judged))
    return reports


# The BM25 shares ``tune_lexical_weight`` tries: 0 is the vector alone, 1 BM25 alone, so the
# one it picks ranks at least as well as the better single signal on the judged queries.
TUNING_WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))


@dataclass
class Tuning:
    """What ``tune_lexical_weight`` tried: hybrid nDCG@10 at each BM25 share."""

    before: float
    after: float
    ndcg_at_10: dict[float, float]


def tune_lexical_weight(
    store: VectorStore,
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    by: Literal["chunk_id", "source"] = "chunk_id",
) -> Tuning:
    """The BM25 share of the fused score that ranks the judged queries best (hybrid
    nDCG@10; a tie keeps the share nearest the one in use). Nothing is recorded here."""
    before = store.fusion.lexical_weight
    given = store.settings.fusion
    scores: dict[float, float] = {}
    try:
        for weight in sorted({*TUNING_WEIGHTS, before}):
            store.settings.fusion = given.model_copy(update={"lexical_weight": weight})
            report = evaluate(store, queries, qrels, ["hybrid"], by=by)["hybrid"]
            scores[weight] = report.ndcg_at_10
    finally:
        store.settings.fusion = given
    after = max(scores, key=lambda weight: (round(scores[weight], 6), -abs(weight - before)))
    return Tuning(before, after, scores)


def _percentiles(timings: list[float]) -> dict[str, float]:
    ordered = sorted(timings)
    return {
        "p50": statistics.median(ordered),
        "p95": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "p99": ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))],
    }
