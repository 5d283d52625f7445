"""Hybrid search over several index files (shards) as if they were one.

duckdb-vectors has no multi-index call; this is the recipe a caller runs. Each shard returns
its own candidates for each signal — cosine similarity (``query_vectors``) and BM25
(``query_text``) — and the candidates of all shards are fused here the way one index fuses its
own (relative score fusion, ``ranking.fuse``): each signal divided by its best score over all
shards, a chunk missing from a signal given that signal's lowest value, then weighted.

Cosine scores compare across shards (one model, one query vector), so the vector side is exact.
BM25 scores do not, quite: each shard computes idf and the average chunk length over its own
chunks, so the lexical side matches one big index only as far as the shards' statistics agree.
Never merge the shards' fused ``score``: each shard divides by its own best candidate, so every
shard's top hit scores near 1 whatever its quality.

    python examples/search_shards.py "read parquet files" sql.duckdb guides.duckdb
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass

from duckdb_vectors import FusionSettings, SearchResult, VectorStore


@dataclass(frozen=True)
class ShardHit:
    shard: str
    hit: SearchResult
    score: float  # the fused score over all shards (the hit's own ``score`` is one signal's)


def search_shards(
    shards: Mapping[str, VectorStore],
    text: str,
    top_k: int = 10,
    fusion: FusionSettings | None = None,
) -> list[ShardHit]:
    """The ``top_k`` best chunks of all ``shards`` (name -> store, one embedding model)."""
    fusion = fusion or FusionSettings()
    depth = max(fusion.candidates, top_k)
    vector = next(iter(shards.values())).embedder.embed_query([text])[0]  # embedded once
    by_vector: dict[tuple[str, str], SearchResult] = {}
    by_text: dict[tuple[str, str], SearchResult] = {}
    for name, store in shards.items():
        for hit in store.query_vectors(vector, top_k=depth):
            by_vector[name, hit.chunk.chunk_id] = hit
        for hit in store.query_text(text, top_k=depth):
            by_text[name, hit.chunk.chunk_id] = hit
    vector_part = _relative(_best(by_vector, depth))
    text_part = _relative(_best(by_text, depth))
    weight = fusion.lexical_weight
    fused = {
        key: (1 - weight) * vector_part.get(key, min(vector_part.values(), default=0.0))
        + weight * text_part.get(key, min(text_part.values(), default=0.0))
        for key in vector_part.keys() | text_part.keys()
    }
    ranked = sorted(fused, key=fused.__getitem__, reverse=True)[:top_k]
    return [ShardHit(key[0], by_vector.get(key) or by_text[key], fused[key]) for key in ranked]


def _best(hits: dict[tuple[str, str], SearchResult], depth: int) -> dict[tuple[str, str], float]:
    """The ``depth`` best scores over all shards: one index's candidate list for a signal."""
    ranked = sorted(hits.items(), key=lambda item: item[1].score, reverse=True)[:depth]
    return {key: hit.score for key, hit in ranked}


def _relative(scores: dict[tuple[str, str], float]) -> dict[tuple[str, str], float]:
    """Each score over the best one (on a 0..1 scale when none is positive), as one index does."""
    if not scores:
        return {}
    best, worst = max(scores.values()), min(scores.values())
    if best > 0:
        return {key: score / best for key, score in scores.items()}
    if best > worst:
        return {key: (score - worst) / (best - worst) for key, score in scores.items()}
    return dict.fromkeys(scores, 1.0)


def main() -> None:
    if len(sys.argv) < 3:
        raise SystemExit("usage: search_shards.py QUERY SHARD.duckdb [SHARD.duckdb ...]")
    shards = {path: VectorStore(path, read_only=True) for path in sys.argv[2:]}
    for rank, found in enumerate(search_shards(shards, sys.argv[1]), start=1):
        chunk = found.hit.chunk
        print(f"{rank:2}. [{found.score:.3f}] {found.shard}: {chunk.source or chunk.chunk_id}")


if __name__ == "__main__":
    main()
