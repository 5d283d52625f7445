"""Per-query overhead at SciFact scale, side by side: duckdb-vectors against numpy's exact scan
(vector) and the bm25s + numpy reference (hybrid), in one process, alternating blocks of
queries, with ``bench/peers.py``'s data and adapters (top 10, query embedding excluded).

``--baseline`` is another checkout (say, main): its workers run with that source tree first on
``PYTHONPATH`` and this interpreter, alternating with this checkout's, and every hit of both
(top 1, 10 and 100, vector and hybrid, every query) must be identical field for field.

    python bench/query_overhead.py                            # this checkout, 3 workers
    python bench/query_overhead.py --baseline /tmp/main-tree  # and main's, alternating

The machine is shared: read the ratios, each measured within one worker, and their median.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402

TOP_K = 10
BLOCK = 100  # queries in a row per system before the next takes over
CHECKED_DEPTHS = (1, 10, 100)


def worker(data_dir: Path, root: Path, rounds: int, hits_out: Path) -> dict[str, Any]:
    """Open this checkout's index and the two peers, check and time them; the p50s."""
    from duckdb_vectors import VectorStore

    data = peers.Data(data_dir)
    store = VectorStore(root / "index.duckdb", model_path=peers.STATIC_MODEL, read_only=True)
    store.warm_up()
    exact, reference = peers.Numpy(root / "numpy", data), peers.Bm25sNumpy(root / "bm25s", data)
    exact.open()
    reference.open()
    queries, vectors = data.queries, data.query_vectors
    with hits_out.open("w") as out:  # what --baseline compares
        for i in range(len(queries)):
            for depth in CHECKED_DEPTHS:
                for hits in (
                    store.query_vectors(vectors[i], depth),
                    store.query(queries[i], depth, vector=vectors[i]),
                ):
                    out.write(json.dumps([_shown(hit) for hit in hits]) + "\n")
    systems: dict[str, Callable[[int], object]] = {
        "vector": lambda i: [h.chunk.chunk_id for h in store.query_vectors(vectors[i], TOP_K)],
        "numpy": lambda i: exact.query_vector(vectors[i], TOP_K),
        "hybrid": lambda i: [
            h.chunk.chunk_id for h in store.query(queries[i], TOP_K, vector=vectors[i])
        ],
        "reference": lambda i: reference.query_hybrid(queries[i], vectors[i], TOP_K),
    }
    load = os.getloadavg()[0]
    return _timed(systems, len(queries), rounds) | {"loadavg_1m_start": load}


def _shown(hit: Any) -> dict[str, Any]:
    """A hit's every field but the write time, which differs between two builds."""
    return hit.model_dump(mode="json", exclude={"chunk": {"stamped_at"}})


def _timed(systems: dict[str, Callable[[int], object]], count: int, rounds: int) -> dict:
    """Each system's p50 over ``rounds`` blocks of ``BLOCK`` queries, the order rotating."""
    samples: dict[str, list[float]] = {name: [] for name in systems}
    for search in systems.values():
        for i in range(20):  # warm-up
            search(i)
    names = list(systems)
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            search = systems[name]
            for j in range(BLOCK):
                started = time.perf_counter()
                search((r * BLOCK + j) % count)
                samples[name].append((time.perf_counter() - started) * 1000)
    p50 = {name: statistics.median(values) for name, values in samples.items()}
    return {
        "p50_ms": p50,
        "vector_x_numpy": p50["vector"] / p50["numpy"],
        "hybrid_x_reference": p50["hybrid"] / p50["reference"],
        "loadavg_1m_end": os.getloadavg()[0],
    }


def prepare(scratch: Path, checkouts: dict[str, Path | None]) -> Path:
    """SciFact's data, the two peers' files, and an index built by each checkout."""
    data_dir = scratch / "data"
    peers.prepare("scifact", data_dir)
    data = peers.Data(data_dir)
    for name, checkout in checkouts.items():
        root = scratch / name
        root.mkdir()
        for adapter in (peers.Numpy(root / "numpy", data), peers.Bm25sNumpy(root / "bm25s", data)):
            adapter.root.mkdir()
            adapter.build()
        build = (
            "import sys; sys.path.insert(0, sys.argv[1]); import peers; from pathlib import Path;"
        )
        build += " peers.DuckdbVectors(Path(sys.argv[2]), peers.Data(Path(sys.argv[3]))).build()"
        subprocess.run(
            [sys.executable, "-c", build, str(HERE), str(root), str(data_dir)],
            check=True,
            env=_environment(checkout),
        )
    return data_dir


def _environment(checkout: Path | None) -> dict[str, str]:
    path = [str(checkout)] if checkout else []
    return os.environ | {
        "PYTHONPATH": os.pathsep.join([*path, os.environ.get("PYTHONPATH", "")]).strip(os.pathsep),
        "OPENBLAS_NUM_THREADS": "1",  # as bench/peers.py runs its workers
        "HF_HUB_OFFLINE": "1",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, help="another checkout's source tree")
    parser.add_argument("--workers", type=int, default=3, help="workers per checkout")
    parser.add_argument("--rounds", type=int, default=40, help="blocks of 100 per system")
    parser.add_argument("--worker", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--data", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--hits", type=Path, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.worker:
        result = worker(arguments.data, arguments.worker, arguments.rounds, arguments.hits)
        print(json.dumps(result))
        return
    if arguments.baseline and not (arguments.baseline / "duckdb_vectors").is_dir():
        parser.error(f"--baseline {arguments.baseline}: no duckdb_vectors package in it")
    checkouts: dict[str, Path | None] = {"this": None}
    if arguments.baseline:
        checkouts = {"baseline": arguments.baseline.resolve(), **checkouts}
    with tempfile.TemporaryDirectory(prefix="query-overhead-") as folder:
        scratch = Path(folder)
        data_dir = prepare(scratch, checkouts)
        results: dict[str, list[dict]] = {name: [] for name in checkouts}
        for run in range(arguments.workers):
            for name, checkout in checkouts.items():
                command = [sys.executable, __file__, "--worker", str(scratch / name)]
                command += ["--data", str(data_dir), "--rounds", str(arguments.rounds)]
                command += ["--hits", str(scratch / f"{name}-hits.jsonl")]
                finished = subprocess.run(
                    command, check=True, capture_output=True, text=True, env=_environment(checkout)
                )
                result = json.loads(finished.stdout)
                results[name].append(result)
                p50 = result["p50_ms"]
                print(
                    f"{name:8s} run {run + 1}: vector {p50['vector']:.4f} ms, numpy"
                    f" {p50['numpy']:.4f} ({result['vector_x_numpy']:.3f}x); hybrid"
                    f" {p50['hybrid']:.4f} ms, reference {p50['reference']:.4f}"
                    f" ({result['hybrid_x_reference']:.3f}x); load"
                    f" {result['loadavg_1m_start']:.2f}-{result['loadavg_1m_end']:.2f}",
                    flush=True,
                )
        if arguments.baseline:
            same = (scratch / "baseline-hits.jsonl").read_text() == (
                scratch / "this-hits.jsonl"
            ).read_text()
            print(f"hits identical to the baseline's: {same}")
    for name, runs in results.items():
        vector = statistics.median(r["vector_x_numpy"] for r in runs)
        hybrid = statistics.median(r["hybrid_x_reference"] for r in runs)
        print(f"{name}: median vector {vector:.3f}x numpy, hybrid {hybrid:.3f}x the reference")


if __name__ == "__main__":
    main()
