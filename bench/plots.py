"""Plots for docs/performance.md, drawn from the raw JSON the benchmark scripts wrote.

    pip install matplotlib
    python bench/plots.py                          # reads bench/results/2026-11-30
    python bench/plots.py --results bench/out      # or the latest runs

Writes docs/img/latency-by-size.png and docs/img/relevance.png (and docs/img/peers.png when
a peers.json is present).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt

HERE = Path(__file__).resolve().parent
IMAGES = HERE.parent / "docs" / "img"
PATHS = {
    "numpy_brute_force": "numpy brute force",
    "memory_vector": "store, vector-only",
    "memory_hybrid": "store, hybrid",
    "sql_vector": "SQL path, vector-only",
    "sql_hybrid": "SQL path, hybrid",
}


def latency_by_size(results: Path) -> None:
    runs = []
    for name in ("query_latency.json", "query_latency_1m.json"):
        if (results / name).exists():
            runs += json.loads((results / name).read_text())["runs"]
    runs.sort(key=lambda run: run["chunks"])
    figure, axes = plt.subplots(figsize=(7, 4.5))
    sizes = [run["chunks"] for run in runs]
    for key, label in PATHS.items():
        axes.plot(sizes, [run[key]["p50_ms"] for run in runs], marker="o", label=label)
    axes.axhline(100, color="grey", linestyle=":", linewidth=1)
    axes.text(sizes[0], 110, "100 ms", color="grey")
    axes.set(
        xscale="log",
        yscale="log",
        xlabel="chunks (256 dimensions)",
        ylabel="warm query p50, ms (excl. embedding)",
        title="Query latency by index size, top-10",
    )
    axes.legend(fontsize=8)
    axes.grid(True, which="both", alpha=0.3)
    figure.tight_layout()
    figure.savefig(IMAGES / "latency-by-size.png", dpi=120)


def relevance(results: Path) -> None:
    data = json.loads((results / "relevance.json").read_text())["results"]
    names = list(data)
    modes = [("vector", "vector"), ("text", "BM25"), ("hybrid", "hybrid")]
    figure, axes = plt.subplots(figsize=(8, 4))
    width = 0.27
    for offset, (mode, label) in enumerate(modes):
        positions = [i + (offset - 1) * width for i in range(len(names))]
        axes.bar(positions, [data[n][mode]["ndcg_at_10"] for n in names], width, label=label)
    axes.set_xticks(range(len(names)), names)
    axes.set(ylim=(0.4, 1.0), ylabel="nDCG@10", title="Relevance by signal (static 256-dim model)")
    axes.legend(fontsize=8)
    axes.grid(True, axis="y", alpha=0.3)
    figure.tight_layout()
    figure.savefig(IMAGES / "relevance.png", dpi=120)


def peers(results: Path) -> None:
    path = results / "peers.json"
    if not path.exists():
        return
    systems = json.loads(path.read_text())["datasets"]["scifact"]["systems"]
    rows = [(name, s["hybrid"]) for name, s in systems.items() if s.get("hybrid", {}).get("p50_ms")]
    figure, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    names = [name for name, _ in rows]
    left.barh(names, [hybrid["p50_ms"] for _, hybrid in rows])
    left.set(xscale="log", xlabel="hybrid query p50, ms (log)", title="SciFact, same embeddings")
    right.barh(names, [hybrid.get("ndcg_at_10", 0) for _, hybrid in rows])
    right.set(xlim=(0.5, 0.72), xlabel="hybrid nDCG@10")
    for axes in (left, right):
        axes.grid(True, axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(IMAGES / "peers.png", dpi=120)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=HERE / "results" / "2026-11-30")
    arguments = parser.parse_args()
    IMAGES.mkdir(parents=True, exist_ok=True)
    latency_by_size(arguments.results)
    relevance(arguments.results)
    peers(arguments.results)
    print(f"wrote {sorted(p.name for p in IMAGES.glob('*.png'))}")


if __name__ == "__main__":
    main()
