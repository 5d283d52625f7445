"""Big indexes at 100k and 1M chunks: import, load against numpy, memory, latency, int8.

For each size the rows (random float32 vectors of 256 dimensions, ~40-word texts;
common.write_rows) are written to Parquet, or taken from ``--parquet``, and indexed with
``duckdb-vectors index --from-parquet``, the static model as the backend, so a one-shot CLI
search embeds its query with a real model. Everything runs in fresh processes (common.run and
run_function), the things compared taking turns for ``--rounds`` rounds:

- the import: wall time and peak RSS (a bound of 2 GB at 1M);
- loading: ``np.load`` of the same normalised matrix from a ``.npy`` in the page cache against
  ``VectorStore(read_only=True).warm_up()``, and the peak RSS of each;
- a reader: RSS after ``warm_up()`` against the vector and text bytes it holds, and warm p50 /
  p95 of vector-only and hybrid queries (query vectors given: no embedding);
- MCP readiness: spawn to the first answer of a stdio ``search``, and spawn to ``GET /health``
  answering ready over HTTP;
- one-shot ``duckdb-vectors search``, process start to exit, model included;
- int8: a copy of the index converted with ``quantize="int8"`` (time, peak RSS), then readers
  of the int8 and the float32 file taking turns: recall@10 against float32, warm p50, RSS.

    python bench/scale.py --sizes 100000                        # about 5 minutes
    python bench/scale.py --sizes 100000 1000000 --parquet /work/bench-data/1m.parquet

Writes bench/out/scale.json (or ``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from common import (
    BACKEND,
    DIMENSION,
    MODEL,
    OUT,
    SCRIPT,
    alternate,
    latencies,
    machine,
    median,
    rss_mb,
    run,
    run_function,
    summary,
    timed,
    write_json,
    write_rows,
)

VOCABULARY = 5000  # write_rows draws its words from word0 .. word5000
TOP_K = 10
ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
LAYOUT = [  # write_rows' columns: a --parquet file must have exactly these
    ("chunk_id", "VARCHAR"),
    ("source", "VARCHAR"),
    ("text", "VARCHAR"),
    ("embedding", "FLOAT[]"),
]


# -- run in fresh processes -------------------------------------------------------------------


def numpy_load(npy: str) -> dict[str, Any]:
    matrix, ms = timed(np.load, npy)
    return {"seconds": ms / 1000, "bytes": matrix.nbytes}


def reader(db: str, queries: int) -> dict[str, Any]:
    """Open and warm up a read-only store; with ``queries``, time that many of each kind."""
    from duckdb_vectors import VectorStore

    result: dict[str, Any] = {"baseline_rss_mb": rss_mb()}
    store, open_ms = timed(VectorStore, db, read_only=True, model_path=MODEL)
    _, warm_ms = timed(store.warm_up)
    result |= {"open_s": open_ms / 1000, "warm_up_s": warm_ms / 1000, "rss_mb": rss_mb()}
    if queries:
        texts, vectors = query_set(queries)
        result["vector"] = latencies(lambda i: store.query_vectors(vectors[i], TOP_K), queries)
        result["hybrid"] = latencies(
            lambda i: store.query(texts[i], TOP_K, vector=vectors[i]), queries
        )
        result["quantization"] = store.manifest.quantization
        result["vector_top_ids"] = [
            [hit.chunk.chunk_id for hit in store.query_vectors(vector, TOP_K)] for vector in vectors
        ]
    store.close()
    return result


def int8_convert(db: str) -> dict[str, Any]:
    """Quantize an existing index in place (``VectorStore(db, quantize="int8")``), closed."""
    from duckdb_vectors import VectorStore

    VectorStore(db, quantize="int8", read_only=False).close()
    return {}


def query_set(count: int, seed: int = 3) -> tuple[list[str], np.ndarray]:
    """2-4 words of the rows' vocabulary, and random unit query vectors."""
    rng = np.random.default_rng(seed)
    texts = [
        " ".join(f"word{n}" for n in rng.integers(0, VOCABULARY, size=rng.integers(2, 5)))
        for _ in range(count)
    ]
    vectors = rng.normal(size=(count, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return texts, vectors


# -- data -------------------------------------------------------------------------------------


def rows_file(size: int, workdir: Path, given: list[Path]) -> Path:
    """A Parquet file of ``size`` rows: one of ``given`` with that many, else a new one."""
    for path in given:
        with duckdb.connect() as connection:
            layout = connection.execute(
                "SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_parquet(?))",
                [str(path)],
            ).fetchall()
            rows = connection.execute("SELECT count(*) FROM read_parquet(?)", [str(path)])
            if rows.fetchone()[0] != size:
                continue
        if layout != LAYOUT:
            raise SystemExit(f"{path}: columns {layout}, expected write_rows' layout {LAYOUT}")
        return path
    path = workdir / f"rows-{size}.parquet"
    print(f"  writing {size:,} rows to {path}", flush=True)
    write_rows(path, size)
    return path


def write_normalised_npy(db: Path, npy: Path) -> None:
    """The index's vectors, L2-normalised as the store holds them, as one .npy matrix."""
    with duckdb.connect(str(db), read_only=True) as connection:
        matrix = np.stack(
            connection.execute("SELECT embedding FROM chunks").fetchnumpy()["embedding"]
        )
    np.save(npy, matrix / np.linalg.norm(matrix, axis=1, keepdims=True))


def held_bytes(db: Path) -> dict[str, int]:
    """The vector bytes and the text bytes (ids, texts, sources, titles) a reader holds."""
    with duckdb.connect(str(db), read_only=True) as connection:
        count, text = connection.execute(
            "SELECT count(*), sum(strlen(chunk_id) + strlen(text)"
            " + strlen(coalesce(source, '')) + strlen(coalesce(title, '')))"
            " FROM chunks"
        ).fetchone()
    return {"rows": count, "vector_bytes": count * DIMENSION * 4, "text_bytes": int(text)}


def read_through(path: Path) -> None:
    """Read a file once, so later loads find it in the page cache."""
    with path.open("rb") as handle:
        while handle.read(1 << 24):
            pass


# -- measurements -----------------------------------------------------------------------------


def stdio_first_search(db: Path) -> float:
    """Seconds from spawning ``duckdb-vectors mcp`` to its first search answer over stdio."""
    import anyio
    from mcp import Client, StdioServerParameters

    arguments = ["mcp", "--db", str(db), "--model-path", str(MODEL)]
    parameters = StdioServerParameters(command=SCRIPT, args=arguments, env=ENV)

    async def first_search() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=600) as client:
            await client.call_tool("search", {"query": query_set(1)[0][0]})

    return timed(anyio.run, first_search)[1] / 1000


def http_ready(db: Path) -> float:
    """Seconds from spawning ``mcp --transport http`` to ``/health`` answering ready."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [SCRIPT, "mcp", "--transport", "http", "--port", str(port), "--db", str(db)]
    command += ["--model-path", str(MODEL)]

    def until_ready(server: subprocess.Popen) -> None:
        while server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as page:
                    if json.load(page)["status"] == "ready":
                        return
            except (urllib.error.URLError, ConnectionError):
                pass  # not listening yet, or 503 while loading
            time.sleep(0.05)
        raise RuntimeError(f"{' '.join(command)} exited with {server.returncode}")

    def spawned() -> None:
        server = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            until_ready(server)
        finally:
            server.terminate()
            server.wait(30)

    return timed(spawned)[1] / 1000


def import_parquet(parquet: Path, db: Path) -> Any:
    db.unlink(missing_ok=True)
    command = [SCRIPT, "index", "--from-parquet", parquet, "--db", db, "--backend", BACKEND]
    return run([*command, "--model-path", MODEL, "--no-progress"], env=ENV)


def measure_size(size: int, workdir: Path, arguments: argparse.Namespace) -> dict[str, Any]:
    parquet = rows_file(size, workdir, arguments.parquet)
    db = workdir / f"scale-{size}.duckdb"
    rounds = arguments.rounds if size <= 100_000 else 1
    queries = arguments.queries if size <= 100_000 else max(20, arguments.queries // 4)
    result: dict[str, Any] = {"rows": size, "parquet": str(parquet), **machine()}
    print(f"{size:,} rows: import", flush=True)
    imports = alternate({"import": lambda: import_parquet(parquet, db)}, rounds, log=print)
    result["import"] = summary(imports["import"])
    result["file_mb"] = db.stat().st_size / 1e6
    result["held"] = held_bytes(db)

    print(f"{size:,} rows: loading against np.load", flush=True)
    npy = workdir / f"scale-{size}.npy"
    write_normalised_npy(db, npy)
    read_through(npy)
    read_through(db)
    loads = alternate(
        {
            "np.load": lambda: run_function(numpy_load, str(npy)),
            "warm_up": lambda: run_function(reader, str(db), 0, env=ENV),
        },
        max(arguments.rounds, 2),
        log=print,
    )
    npy.unlink()
    numpy_s = median(r.result["seconds"] for r in loads["np.load"])
    warm_up_s = median(r.result["warm_up_s"] for r in loads["warm_up"])
    result["loading"] = {
        "numpy_load_s": numpy_s,
        "warm_up_s": warm_up_s,
        "warm_up_x_numpy": warm_up_s / numpy_s,
        "warm_up_peak_rss_mb": median(r.peak_rss_mb for r in loads["warm_up"]),
        "numpy_peak_rss_mb": median(r.peak_rss_mb for r in loads["np.load"]),
    }

    print(f"{size:,} rows: queries, MCP readiness, one-shot CLI", flush=True)
    readers = [run_function(reader, str(db), queries, env=ENV) for _ in range(rounds)]
    result["reader"] = {
        "rss_mb": median(r.result["rss_mb"] for r in readers),
        "vector": {q: median(r.result["vector"][q] for r in readers) for q in ("p50_ms", "p95_ms")},
        "hybrid": {q: median(r.result["hybrid"][q] for r in readers) for q in ("p50_ms", "p95_ms")},
    }
    held = result["held"]["vector_bytes"] + result["held"]["text_bytes"]
    result["reader"]["rss_x_held"] = result["reader"]["rss_mb"] * 2**20 / held
    result["mcp"] = {
        "stdio_first_search_s": median(stdio_first_search(db) for _ in range(rounds)),
        "http_health_ready_s": median(http_ready(db) for _ in range(rounds)),
    }
    texts, _ = query_set(arguments.cli_runs, seed=11)
    searches = [
        run([SCRIPT, "search", t, "--db", db, "--model-path", MODEL], env=ENV) for t in texts
    ]
    result["cli_search"] = summary(searches)
    if arguments.int8:
        result["int8"] = int8(db, readers[0].result["vector_top_ids"], queries, rounds)
    db.unlink()
    return result


def int8(db: Path, exact: list[list[str]], queries: int, rounds: int) -> dict[str, Any]:
    """A copy of the index quantized, then int8 and float32 readers in turns."""
    quantized = db.with_name(db.stem + "-int8.duckdb")
    shutil.copyfile(db, quantized)
    converted = run_function(int8_convert, str(quantized), env=ENV)
    runs = alternate(
        {
            "int8": lambda: run_function(reader, str(quantized), queries, env=ENV),
            "float32": lambda: run_function(reader, str(db), queries, env=ENV),
        },
        rounds,
        log=print,
    )
    found = runs["int8"][0].result["vector_top_ids"]
    recall = statistics.fmean(
        len(set(a) & set(b)) / TOP_K for a, b in zip(found, exact, strict=True)
    )
    result: dict[str, Any] = {
        "convert_s": converted.seconds,
        "convert_peak_rss_mb": converted.peak_rss_mb,
        "recall_at_10": recall,
        "quantization": runs["int8"][0].result["quantization"],
    }
    for kind in ("vector", "hybrid"):
        p50 = {name: median(r.result[kind]["p50_ms"] for r in done) for name, done in runs.items()}
        result[kind] = p50 | {"x_float32": p50["int8"] / p50["float32"]}
    result["rss_mb"] = {
        name: median(r.result["rss_mb"] for r in done) for name, done in runs.items()
    }
    quantized.unlink()
    return result


# -- report -----------------------------------------------------------------------------------


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| measure | " + " | ".join(f"{r['rows']:,} rows" for r in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]
    rows = {
        "`index --from-parquet` s (peak RSS MB)": lambda r: (
            f"{r['import']['seconds']:.1f} ({r['import']['peak_rss_mb']:,.0f})"
        ),
        "`np.load` of the .npy s": lambda r: f"{r['loading']['numpy_load_s']:.3f}",
        "`warm_up()` s (x `np.load`)": lambda r: (
            f"{r['loading']['warm_up_s']:.2f} ({r['loading']['warm_up_x_numpy']:.1f}x)"
        ),
        "warm-up process peak RSS MB": lambda r: f"{r['loading']['warm_up_peak_rss_mb']:,.0f}",
        "reader RSS after `warm_up()` MB (x vectors + texts)": lambda r: (
            f"{r['reader']['rss_mb']:,.0f} ({r['reader']['rss_x_held']:.2f}x)"
        ),
        "warm vector p50 / p95 ms": lambda r: (
            f"{r['reader']['vector']['p50_ms']:.1f} / {r['reader']['vector']['p95_ms']:.1f}"
        ),
        "warm hybrid p50 / p95 ms": lambda r: (
            f"{r['reader']['hybrid']['p50_ms']:.1f} / {r['reader']['hybrid']['p95_ms']:.1f}"
        ),
        "MCP stdio, spawn to first search s": lambda r: f"{r['mcp']['stdio_first_search_s']:.2f}",
        "MCP HTTP, spawn to `/health` ready s": lambda r: f"{r['mcp']['http_health_ready_s']:.2f}",
        "one-shot CLI search s (peak RSS MB)": lambda r: (
            f"{r['cli_search']['seconds']:.2f} ({r['cli_search']['peak_rss_mb']:,.0f})"
        ),
        "int8: recall@10 against float32": lambda r: f"{r['int8']['recall_at_10']:.3f}",
        "int8 / float32 warm hybrid p50": lambda r: f"{r['int8']['hybrid']['x_float32']:.2f}x",
        "int8 / float32 reader RSS MB": lambda r: (
            f"{r['int8']['rss_mb']['int8']:,.0f} / {r['int8']['rss_mb']['float32']:,.0f}"
        ),
        "quantizing an index s (peak RSS MB)": lambda r: (
            f"{r['int8']['convert_s']:.1f} ({r['int8']['convert_peak_rss_mb']:,.0f})"
        ),
        "index file MB": lambda r: f"{r['file_mb']:,.0f}",
    }
    for name, cell in rows.items():
        cells = []
        for r in runs:
            try:
                cells.append(cell(r))
            except KeyError:
                cells.append("—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--workdir", type=Path, help="for data and indexes (default: a temp dir)")
    parser.add_argument(
        "--parquet", type=Path, nargs="*", default=[], help="write_rows files to reuse, read-only"
    )
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (1 at 1M)")
    parser.add_argument("--queries", type=int, default=200, help="warm queries of each kind")
    parser.add_argument("--cli-runs", type=int, default=3)
    parser.add_argument("--no-int8", dest="int8", action="store_false", help="skip int8")
    parser.add_argument("--out", type=Path, default=OUT / "scale.json")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(dir=arguments.workdir, prefix="scale-") as scratch:
        runs = [measure_size(size, Path(scratch), arguments) for size in arguments.sizes]
    write_json(arguments.out, {"duckdb": duckdb.__version__, "runs": runs})
    print(table(runs))


if __name__ == "__main__":
    main()
