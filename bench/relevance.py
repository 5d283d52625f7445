"""Relevance of vector-only, BM25-only and hybrid search on real evaluation sets.

BEIR SciFact (train judgments; chunk = title + text) and the XQuAD-R paragraphs in five
languages (same-language queries), embedded with the static model in ../shared/models (or
all-MiniLM-L6-v2, int8: ``--model minilm``).

    python bench/relevance.py                              # the library defaults
    python bench/relevance.py --method rrf --weight 0.5    # another fusion
    python bench/relevance.py --model minilm --weight 0.5  # the transformer, at its default

Writes bench/out/relevance.json (or ``--out``) and prints a table of nDCG@10 and Recall@100.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
from dataclasses import asdict
from pathlib import Path

from common import OUT, SHARED, machine, write_json

from duckdb_vectors import FusionSettings, VectorStore
from duckdb_vectors.evaluation import evaluate, load_qrels, load_queries

IR = SHARED / "evaldata" / "ir"
# name -> (backend, local model files)
MODELS = {
    "static": ("fastembed:minishlab/potion-multilingual-128M", "static-256-wordllama"),
    "minilm": ("fastembed:sentence-transformers/all-MiniLM-L6-v2", "onnx-minilm-l6-v2-int8"),
}
DATASETS = {
    "scifact": (IR / "scifact", "train"),
    **{
        f"xquad-{lang}": (IR / "xquad-r-paragraphs" / lang, "test")
        for lang in ("en", "de", "es", "ru", "zh")
    },
}


def build(folder: Path, path: Path, fusion: FusionSettings, model: str) -> VectorStore:
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    backend, files = MODELS[model]
    store = VectorStore(path, backend, model_path=SHARED / "models" / files, fusion=fusion)
    store.add_texts(
        [f"{d.get('title') or ''}\n{d['text']}".strip() for d in documents],
        ids=[str(d["_id"]) for d in documents],
    )
    return store


def run(names: list[str], fusion: FusionSettings, model: str) -> dict[str, dict[str, dict]]:
    results = {}
    with tempfile.TemporaryDirectory() as scratch:
        for name in names:
            folder, split = DATASETS[name]
            store = build(folder, Path(scratch) / f"{name}.duckdb", fusion, model)
            reports = evaluate(
                store,
                load_queries(folder / "queries.jsonl"),
                load_qrels(folder / "qrels" / f"{split}.tsv"),
            )
            store.close()
            results[name] = {mode: asdict(report) for mode, report in reports.items()}
            print(
                name, {m: round(r["ndcg_at_10"], 4) for m, r in results[name].items()}, flush=True
            )
    return results


def table(results: dict[str, dict[str, dict]]) -> str:
    lines = [
        "| dataset | vector nDCG@10 | BM25 nDCG@10 | hybrid nDCG@10 | vector R@100 | BM25 R@100"
        " | hybrid R@100 | hybrid p50 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, modes in results.items():
        ndcg = [modes[m]["ndcg_at_10"] for m in ("vector", "text", "hybrid")]
        recall = [modes[m]["recall_at_100"] for m in ("vector", "text", "hybrid")]
        cells = [f"{value:.3f}" for value in ndcg + recall]
        mark = " ✓" if ndcg[2] >= max(ndcg[:2]) else " ✗"
        cells[2] += mark
        cells.append(f"{modes['hybrid']['latency_ms']['p50']:.2f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    defaults = FusionSettings()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS), choices=list(DATASETS))
    parser.add_argument("--model", default="static", choices=list(MODELS))
    parser.add_argument("--method", default=defaults.method, choices=["rrf", "convex"])
    parser.add_argument("--weight", type=float, default=defaults.lexical_weight)
    parser.add_argument("--rrf-k", type=int, default=defaults.rrf_k)
    parser.add_argument("--candidates", type=int, default=defaults.candidates)
    parser.add_argument("--out", type=Path, default=OUT / "relevance.json")
    arguments = parser.parse_args()
    fusion = FusionSettings(
        method=arguments.method,
        lexical_weight=arguments.weight,
        rrf_k=arguments.rrf_k,
        candidates=arguments.candidates,
    )
    results = run(arguments.datasets, fusion, arguments.model)
    report = {"model": arguments.model, "fusion": fusion.model_dump(), "results": results}
    write_json(arguments.out, {**machine(), **report})
    print(f"fusion: {fusion.model_dump()}")
    print(table(results))


if __name__ == "__main__":
    main()
