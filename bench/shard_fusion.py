"""Shards searched as one: examples/search_shards.py against one index of the same chunks.

Two splits of real data, static 256-dim model, top 10:

- BEIR SciFact (5,183 abstracts, the 809 judged train queries) dealt into N shards by a hash
  of the document id: shards alike, so their BM25 statistics nearly agree. nDCG@10.
- The DuckDB docs split by top-level folder (``sql/``, ``guides/``, the rest): topical shards,
  whose idf and average chunk lengths differ most. Agreement with the one index on the
  questions of bench/common.py.

Each is measured four ways: the one index; the shards fused by ``search_shards`` (each signal's
candidates of all shards, fused once); the shards' own hybrid answers merged by their fused
score (the mistake to avoid); and the vector signal alone, merged by cosine (exact, a check).

    python bench/shard_fusion.py [--shards 2 4]
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
import zlib
from collections.abc import Callable, Mapping
from pathlib import Path

from common import DOCS, MODEL, OUT, QUERIES, SHARED, write_json

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.evaluation import load_qrels, load_queries, ndcg_at

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
from search_shards import search_shards  # the example itself is what is measured

BACKEND = "fastembed:minishlab/potion-multilingual-128M"
SCIFACT = SHARED / "evaldata" / "ir" / "scifact"
TOPICS = ("sql", "guides")  # one shard each; every other folder goes to a last shard
TOP_K = 10

Answer = Callable[[str], list[str]]  # a query -> the ids of its top 10


def open_store(path: Path) -> VectorStore:
    return VectorStore(path, BACKEND, model_path=MODEL)


def close(*stores: VectorStore) -> None:
    for store in stores:
        store.close()


def one_index(store: VectorStore, vector_only: bool = False) -> Answer:
    def answer(text: str) -> list[str]:
        return [hit.chunk.chunk_id for hit in store.query(text, TOP_K, hybrid=not vector_only)]

    return answer


def fused_over_shards(shards: Mapping[str, VectorStore]) -> Answer:
    def answer(text: str) -> list[str]:
        return [found.hit.chunk.chunk_id for found in search_shards(shards, text, TOP_K)]

    return answer


def merged_by_score(shards: Mapping[str, VectorStore], vector_only: bool = False) -> Answer:
    """Each shard's own top 10, merged by the score it reports."""

    def answer(text: str) -> list[str]:
        hits = [
            hit
            for store in shards.values()
            for hit in store.query(text, TOP_K, hybrid=not vector_only)
        ]
        hits.sort(key=lambda hit: hit.score, reverse=True)
        return [hit.chunk.chunk_id for hit in hits[:TOP_K]]

    return answer


def compare(
    reference: dict[str, Answer],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]] | None = None,
) -> dict[str, dict]:
    """Per way of answering: mean top-10 overlap with the one index, the share of queries
    whose top 10 is identical in order, and nDCG@10 where there are judgments."""
    answers = {
        name: {q: answer(text) for q, text in queries.items()} for name, answer in reference.items()
    }
    results = {}
    for name, answered in answers.items():
        baseline = answers["vector, one index" if name.startswith("vector") else "one index"]
        overlap = [len(set(answered[q]) & set(baseline[q])) / TOP_K for q in queries]
        same = [answered[q] == baseline[q] for q in queries]
        results[name] = {
            "overlap_at_10": sum(overlap) / len(overlap),
            "identical": sum(same) / len(same),
        }
        if qrels is not None:
            ndcg = [ndcg_at(answered[q], qrels[q]) for q in queries]
            results[name]["ndcg_at_10"] = sum(ndcg) / len(ndcg)
    return results


def ways(store: VectorStore, shards: Mapping[str, VectorStore]) -> dict[str, Answer]:
    return {
        "one index": one_index(store),
        "shards, search_shards": fused_over_shards(shards),
        "shards, merged by fused score": merged_by_score(shards),
        "vector, one index": one_index(store, vector_only=True),
        "vector, shards merged by cosine": merged_by_score(shards, vector_only=True),
    }


def scifact(scratch: Path, count: int) -> dict[str, dict]:
    with gzip.open(SCIFACT / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    queries, qrels = (
        load_queries(SCIFACT / "queries.jsonl"),
        load_qrels(SCIFACT / "qrels/train.tsv"),
    )
    judged = {q: text for q, text in queries.items() if q in qrels}

    def build(path: Path, subset: list[dict]) -> VectorStore:
        store = open_store(path)
        store.add_texts(
            [f"{d.get('title') or ''}\n{d['text']}".strip() for d in subset],
            ids=[str(d["_id"]) for d in subset],
        )
        return store

    store = build(scratch / "scifact.duckdb", documents)
    shards = {
        f"shard-{n}": build(
            scratch / f"scifact-{count}-{n}.duckdb",
            [d for d in documents if zlib.crc32(str(d["_id"]).encode()) % count == n],
        )
        for n in range(count)
    }
    results = compare(ways(store, shards), judged, qrels)
    close(store, *shards.values())
    return results


def duckdb_docs(scratch: Path) -> dict[str, dict]:
    store = open_store(scratch / "docs.duckdb")
    index_folder(store, DOCS, progress=False)
    shards = {}
    for topic in TOPICS:
        shards[topic] = open_store(scratch / f"docs-{topic}.duckdb")
        index_folder(shards[topic], DOCS / topic, source_prefix=f"{topic}/", progress=False)
    shards["rest"] = open_store(scratch / "docs-rest.duckdb")
    index_folder(shards["rest"], DOCS, exclude=[f"{t}/*" for t in TOPICS], progress=False)
    counts = {name: shard.count() for name, shard in shards.items()}
    print(f"docs: {store.count()} chunks; shards {counts}", flush=True)
    results = compare(ways(store, shards), {str(n): text for n, text in enumerate(QUERIES)})
    close(store, *shards.values())
    return results


def table(title: str, results: dict[str, dict]) -> str:
    judged = "ndcg_at_10" in next(iter(results.values()))
    lines = [
        f"{title}\n",
        "| answer | top-10 overlap | identical top 10 |" + (" nDCG@10 |" if judged else ""),
        "|---|---:|---:|" + ("---:|" if judged else ""),
    ]
    for name, result in results.items():
        cells = [f"{result['overlap_at_10']:.3f}", f"{result['identical']:.2f}"]
        if judged:
            cells.append(f"{result['ndcg_at_10']:.4f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=int, nargs="*", default=[2, 4])
    parser.add_argument("--out", type=Path, default=OUT / "shard_fusion.json")
    arguments = parser.parse_args()
    output = {}
    with tempfile.TemporaryDirectory() as scratch:
        for count in arguments.shards:
            output[f"scifact-{count}"] = scifact(Path(scratch), count)
            print(table(f"SciFact, {count} shards by id hash", output[f"scifact-{count}"]))
        output["docs-by-folder"] = duckdb_docs(Path(scratch))
        print(table("DuckDB docs, 3 shards by folder", output["docs-by-folder"]))
    write_json(arguments.out, output)


if __name__ == "__main__":
    main()
