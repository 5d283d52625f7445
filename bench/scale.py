"""Big indexes at 100k and 1M chunks: load time against numpy, memory, latency, ingest rate.

For each size the rows (random float32 vectors of 256 dimensions, ~40-word texts; see
``write_rows`` in parquet_import.py) are written to Parquet and indexed with ``duckdb-vectors
index --from-parquet``, the static 256-dimension model as the backend, so a one-shot CLI search
embeds its query with a real model. Whatever has a peak RSS worth knowing runs in a fresh
process (``measured`` in parquet_import.py); repeats alternate and medians are reported:

- writes: the index run (wall time, rows/s, peak RSS); up to ``--bulk-max`` rows also
  ``put_vectors`` of the same rows and, with ``--peers-python``, sqlite-vec + FTS5 and LanceDB
  (with its FTS index) bulk inserts, as bench/peers.py builds them;
- loading: ``np.load`` of the same normalised matrix from a ``.npy`` in the page cache against
  ``VectorStore(read_only=True).warm_up()``; MCP readiness: spawn to the first answer of a stdio
  ``search`` call, and spawn to ``GET /health`` answering ready over HTTP;
- warm p50/p95 of vector-only and hybrid queries (query vectors given, so embedding is
  excluded), and a reader's RSS after ``warm_up`` against the vector and text bytes it holds;
- one-shot ``duckdb-vectors search``, process start to exit, model included;
- int8 (the index converted with ``quantize="int8"`` last): recall@10 against the float32
  top 10, warm latency with int8 and float32 snapshots taking turns query by query, the vector
  bytes held and the reader's RSS, and the conversion's time and peak RSS.

    python bench/scale.py --sizes 100000 1000000 --label before \\
        --parquet /work/bench-data/1m.parquet --peers-python /tmp/scale-peers-venv/bin/python

The peers venv needs only ``lancedb sqlite-vec pysqlite3-binary``. Writes
bench/results/<date>/scale-<label>.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import inspect
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
from common import HERE, MODEL, SCRIPT
from parquet_import import DIMENSION, measured, write_rows

# Workers are measured for peak RSS, so each imports only what it needs (duckdb_vectors, mcp
# and the query helpers are imported inside functions).

BACKEND = "fastembed:minishlab/potion-multilingual-128M"
VOCABULARY = 5000  # write_rows draws its words from word0 .. word5000
TOP_K = 10
READ_BATCH = 65_536
NO_QUANTIZE = "not supported: VectorStore has no quantize option"
# The rows as write_rows lays them out; a --parquet file must have exactly these columns.
LAYOUT = [
    ("chunk_id", "VARCHAR"),
    ("source", "VARCHAR"),
    ("text", "VARCHAR"),
    ("embedding", "FLOAT[]"),
]

# -- workers: each runs in its own process and returns a JSON-able dict ------------------------

WORKERS: dict[str, Callable[..., dict[str, Any]]] = {}


def worker(function: Callable[..., dict[str, Any]]) -> Callable[..., dict[str, Any]]:
    WORKERS[function.__name__] = function
    return function


def run_worker(name: str, *arguments: object) -> dict[str, Any]:
    """A worker's result, with its process's wall time and peak RSS."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "result.json"
        command = [sys.executable, __file__, "--worker", name, str(out), *map(str, arguments)]
        seconds, peak = measured(command)
        return json.loads(out.read_text()) | {"process_s": seconds, "peak_rss_mb": peak}


def rss_mb() -> float:
    """This process's resident set size now (Linux)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status: this benchmark needs Linux")


@worker
def numpy_load(npy: str) -> dict[str, Any]:
    started = time.perf_counter()
    matrix = np.load(npy)
    return {"seconds": time.perf_counter() - started, "bytes": matrix.nbytes}


@worker
def reader(db: str, queries: str) -> dict[str, Any]:
    """Open and warm up a read-only store; with ``queries`` > 0, time that many of each kind."""
    from duckdb_vectors import VectorStore

    baseline = rss_mb()
    started = time.perf_counter()
    store = VectorStore(db, read_only=True, model_path=MODEL)
    opened = time.perf_counter()
    store.warm_up()
    result: dict[str, Any] = {
        "open_s": opened - started,
        "warm_up_s": time.perf_counter() - opened,
        "baseline_rss_mb": baseline,
        "rss_after_warm_up_mb": rss_mb(),
    }
    if int(queries):
        result |= query_timings(store, int(queries))
    store.close()
    return result


def query_timings(store: Any, count: int) -> dict[str, Any]:
    from query_latency import timed

    texts, vectors = query_set(count)
    vector = timed(lambda i: store.query_vectors(vectors[i], TOP_K), count)
    hybrid = timed(lambda i: store.query(texts[i], TOP_K, vector=vectors[i]), count)
    exact = [[hit.chunk.chunk_id for hit in store.query_vectors(v, TOP_K)] for v in vectors]
    return {"vector": vector, "hybrid": hybrid, "vector_top_ids": exact}


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


def quantize_supported() -> bool:
    from duckdb_vectors import VectorStore

    return "quantize" in inspect.signature(VectorStore).parameters


@worker
def int8_convert(db: str) -> dict[str, Any]:
    """Quantize an existing index in place (``VectorStore(db, quantize="int8")``), closed."""
    from duckdb_vectors import VectorStore

    started = time.perf_counter()
    VectorStore(db, quantize="int8", read_only=False).close()
    return {"seconds": time.perf_counter() - started}


@worker
def int8_reader(db: str, truth: str) -> dict[str, Any]:
    """A quantized index read-only (int8, as its manifest says): warm-up, RSS, the vector bytes
    held, recall@10 against the float32 top 10 (``truth``), and latency side by side with a
    float32 snapshot of the same file, the two taking turns query by query."""
    from duckdb_vectors import VectorStore
    from duckdb_vectors.search.memory_index import MemoryIndex

    exact = json.loads(Path(truth).read_text())
    texts, vectors = query_set(len(exact))
    store = VectorStore(db, read_only=True, model_path=MODEL)
    started = time.perf_counter()
    store.warm_up()
    quantized = store._memory
    result: dict[str, Any] = {
        "quantization": store.quantization,
        "warm_up_s": time.perf_counter() - started,
        "rss_after_warm_up_mb": rss_mb(),
        "vector_bytes": quantized.vectors.nbytes,
    }
    found = [[hit.chunk.chunk_id for hit in store.query_vectors(v, TOP_K)] for v in vectors]
    result["recall_at_10"] = statistics.fmean(
        len(set(a) & set(b)) / TOP_K for a, b in zip(found, exact, strict=True)
    )
    float32 = MemoryIndex.load(store.connection)  # the same rows, vectors as float32
    result["float32_vector_bytes"] = float32.vectors.nbytes
    snapshots = {"int8": quantized, "float32": float32}
    for kind, query in (
        ("vector", lambda i: store.query_vectors(vectors[i], TOP_K)),
        ("hybrid", lambda i: store.query(texts[i], TOP_K, vector=vectors[i])),
    ):
        result[kind] = taking_turns(store, snapshots, query, len(vectors))
    store.close()
    return result


def taking_turns(
    store: Any, snapshots: dict[str, Any], query: Callable[[int], object], count: int
) -> dict[str, Any]:
    """p50 and p95 of ``query`` answered from each snapshot, the snapshots alternating query
    by query (a shared machine's load falls on both alike), and the ratio of the medians."""
    samples: dict[str, list[float]] = {name: [] for name in snapshots}
    for i in range(count + 5):
        for name, snapshot in snapshots.items():
            store._memory = snapshot
            started = time.perf_counter()
            query(i % count)
            if i >= 5:  # the first rounds warm caches
                samples[name].append((time.perf_counter() - started) * 1000)
    result: dict[str, Any] = {}
    for name, times in samples.items():
        times.sort()
        result[name] = {
            "p50_ms": statistics.median(times),
            "p95_ms": times[min(len(times) - 1, int(len(times) * 0.95))],
            "n": len(times),
        }
    first, second = samples
    result["p50_ratio"] = result[first]["p50_ms"] / result[second]["p50_ms"]
    return result


@worker
def put_vectors(parquet: str, db: str, calls: str = "1") -> dict[str, Any]:
    """``put_vectors`` of every row (held in memory first, as an SDK caller would) in ``calls``
    calls of equal size, closed."""
    from duckdb_vectors import VectorStore

    table = duckdb.sql(f"SELECT * FROM read_parquet('{parquet}')").to_arrow_table()
    matrix = flat_matrix(table.column("embedding").combine_chunks())
    items = [
        {"key": key, "text": text, "source": source, "data": {"float32": vector}}
        for key, text, source, vector in zip(
            table.column("chunk_id").to_pylist(),
            table.column("text").to_pylist(),
            table.column("source").to_pylist(),
            matrix,
            strict=True,
        )
    ]
    started = time.perf_counter()
    with VectorStore(db, BACKEND, model_path=MODEL, read_only=False) as store:
        for batch in np.array_split(np.arange(len(items)), int(calls)):
            store.put_vectors(items[batch[0] : batch[-1] + 1])
    return {"seconds": time.perf_counter() - started}


@worker
def plain_duckdb(parquet: str, db: str, calls: str = "1") -> dict[str, Any]:
    """The same rows into a plain DuckDB table (key, text, source, FLOAT[] embedding), in
    ``calls`` transactions of equal size, closed: what DuckDB itself takes to store them."""
    table = duckdb.sql(f"SELECT * FROM read_parquet('{parquet}')").to_arrow_table()
    rows = table.select(["chunk_id", "text", "source", "embedding"])
    started = time.perf_counter()
    with duckdb.connect(db) as connection:
        connection.execute(
            "CREATE TABLE chunks (key VARCHAR PRIMARY KEY, text VARCHAR, source VARCHAR,"
            f" embedding FLOAT[{DIMENSION}])"
        )
        for batch in np.array_split(np.arange(len(rows)), int(calls)):
            part = rows.slice(int(batch[0]), len(batch))  # noqa: F841 - read by the INSERT
            connection.execute("BEGIN")
            connection.execute(
                f"INSERT INTO chunks SELECT chunk_id, text, source, embedding::FLOAT[{DIMENSION}]"
                " FROM part"
            )
            connection.execute("COMMIT")
    return {"seconds": time.perf_counter() - started}


# Runs in the peers venv, which has no duckdb_vectors: bench/peers.py's own adapter builds.
PEER_BUILD = """
import json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from peers import ADAPTERS, Data
adapter = ADAPTERS[sys.argv[2]](Path(sys.argv[4]), Data(Path(sys.argv[3])))
started = time.perf_counter()
adapter.build()
Path(sys.argv[5]).write_text(json.dumps({"seconds": time.perf_counter() - started}))
"""


def peer_build(python: str, system: str, data: Path, root: Path) -> dict[str, Any]:
    root.mkdir(parents=True)
    out = root.parent / f"{root.name}.json"
    # The process's time includes reading the rows; the build is timed inside.
    _, peak = measured(
        [python, "-c", PEER_BUILD, str(HERE), system, str(data), str(root), str(out)]
    )
    result = json.loads(out.read_text()) | {"peak_rss_mb": peak}
    shutil.rmtree(root)
    out.unlink()
    return result


# -- data -------------------------------------------------------------------------------------


def flat_matrix(embeddings: Any) -> np.ndarray:
    """An Arrow list column of DIMENSION floats as one float32 matrix."""
    values = embeddings.flatten().to_numpy(zero_copy_only=False)
    return values.astype(np.float32, copy=False).reshape(len(embeddings), DIMENSION)


def row_batches(parquet: Path, columns: str) -> Iterator[Any]:
    with duckdb.connect() as connection:
        relation = connection.sql(f"SELECT {columns} FROM read_parquet('{parquet}')")
        yield from relation.to_arrow_reader(READ_BATCH)


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
            sys.exit(f"{path}: columns {layout}, expected write_rows' layout {LAYOUT}")
        return path
    path = workdir / f"rows-{size}.parquet"
    if not path.exists():
        print(f"  writing {size:,} rows to {path}", flush=True)
        write_rows(path, size)
    return path


def write_normalised_npy(parquet: Path, npy: Path, size: int) -> None:
    """The rows' vectors, L2-normalised as the store holds them, as one .npy matrix."""
    matrix = np.lib.format.open_memmap(npy, mode="w+", dtype=np.float32, shape=(size, DIMENSION))
    start = 0
    for batch in row_batches(parquet, "embedding"):
        block = flat_matrix(batch.column("embedding"))
        matrix[start : start + len(block)] = block / np.linalg.norm(block, axis=1, keepdims=True)
        start += len(block)
    matrix.flush()
    del matrix


def write_peer_data(parquet: Path, folder: Path) -> None:
    """The rows in bench/peers.py's ``Data`` layout (no queries: only builds are run)."""
    folder.mkdir(parents=True, exist_ok=True)
    ids: list[str] = []
    texts: list[str] = []
    blocks = []
    for batch in row_batches(parquet, "chunk_id, text, embedding"):
        ids += batch.column("chunk_id").to_pylist()
        texts += batch.column("text").to_pylist()
        blocks.append(flat_matrix(batch.column("embedding")))
    data = {"ids": ids, "texts": texts, "queries": [], "judged": 0}
    (folder / "data.json").write_text(json.dumps(data))
    np.save(folder / "vectors.npy", np.concatenate(blocks))
    np.save(folder / "query_vectors.npy", np.zeros((0, DIMENSION), dtype=np.float32))


def read_through(path: Path) -> None:
    """Read a file once, so later loads find it in the page cache."""
    with path.open("rb") as handle:
        while handle.read(1 << 24):
            pass


def held_bytes(db: Path) -> dict[str, int]:
    """The vector bytes and the text bytes (ids, texts, sources, titles) a reader holds."""
    with duckdb.connect(str(db), read_only=True) as connection:
        count, text = connection.execute(
            "SELECT count(*), sum(strlen(chunk_id) + strlen(text)"
            " + strlen(coalesce(source, '')) + strlen(coalesce(title, '')))"
            " FROM chunks"
        ).fetchone()
    return {"vector_bytes": count * DIMENSION * 4, "text_bytes": int(text)}


# -- measurements in the parent ---------------------------------------------------------------


def median_of(runs: list[dict[str, Any]], key: str) -> float:
    return statistics.median(run[key] for run in runs)


def writes(
    size: int, parquet: Path, db: Path, repeats: int, bulk: bool, peers_python: str | None
) -> dict[str, Any]:
    """Each writer of the same rows in turn, ``repeats`` rounds; the last index run is kept."""
    scratch = db.parent / f"writes-{size}"
    scratch.mkdir(exist_ok=True)
    writers: dict[str, Callable[[], dict[str, Any]]] = {
        "index --from-parquet": lambda: index(parquet, db)
    }
    if bulk:
        writers["put_vectors"] = lambda: fresh(scratch / "put.duckdb", "put_vectors", parquet)
        if peers_python:
            write_peer_data(parquet, scratch / "peer-data")
            for system in ("sqlite-vec", "lancedb"):
                writers[system] = lambda system=system: peer_build(
                    peers_python, system, scratch / "peer-data", scratch / system
                )
    runs: dict[str, list[dict[str, Any]]] = {name: [] for name in writers}
    for round_number in range(repeats):
        for name, write in writers.items():
            runs[name].append(write())
            print(f"  {name} #{round_number + 1}: {runs[name][-1]['seconds']:.1f} s", flush=True)
    shutil.rmtree(scratch)
    return {
        name: {
            "seconds": median_of(done, "seconds"),
            "rows_per_s": size / median_of(done, "seconds"),
            "peak_rss_mb": median_of(done, "peak_rss_mb"),
            "runs": done,
        }
        for name, done in runs.items()
    }


def index(parquet: Path, db: Path) -> dict[str, Any]:
    db.unlink(missing_ok=True)
    command = [SCRIPT, "index", "--from-parquet", str(parquet), "--db", str(db)]
    command += ["--backend", BACKEND, "--model-path", str(MODEL), "--no-progress"]
    seconds, peak = measured(command)
    return {"seconds": seconds, "peak_rss_mb": peak}


def fresh(db: Path, name: str, parquet: Path) -> dict[str, Any]:
    db.unlink(missing_ok=True)
    result = run_worker(name, parquet, db)
    db.unlink()
    return result


def loading(npy: Path, db: Path, repeats: int) -> dict[str, Any]:
    """``np.load`` against open + ``warm_up``, alternating, both files in the page cache.

    ``np.load`` runs at least three times, before and after each load of the store: it is the
    reference every ratio divides by, and one run of it took 1.5 s where others took 0.3.
    """
    read_through(npy)
    read_through(db)
    numpy_runs, store_runs = [run_worker("numpy_load", npy)], []
    for round_number in range(max(repeats, 2)):
        if round_number < repeats:
            store_runs.append(run_worker("reader", db, 0))
        numpy_runs.append(run_worker("numpy_load", npy))
    numpy_s = median_of(numpy_runs, "seconds")
    warm_up_s = median_of(store_runs, "warm_up_s")
    opened_s = statistics.median(run["open_s"] + run["warm_up_s"] for run in store_runs)
    return {
        "numpy_load_s": numpy_s,
        "numpy_peak_rss_mb": median_of(numpy_runs, "peak_rss_mb"),
        "warm_up_s": warm_up_s,
        "open_and_warm_up_s": opened_s,
        "warm_up_vs_numpy": warm_up_s / numpy_s,
        "open_and_warm_up_vs_numpy": opened_s / numpy_s,
        "warm_up_peak_rss_mb": median_of(store_runs, "peak_rss_mb"),
        "numpy_runs": numpy_runs,
        "store_runs": store_runs,
    }


def mcp_readiness(db: Path, repeats: int) -> dict[str, Any]:
    """Seconds from spawning a server to its first stdio search answer / HTTP health ready."""
    stdio, http = [], []
    for _ in range(repeats):
        stdio.append(stdio_first_search(db))
        http.append(http_ready(db))
    return {
        "stdio_first_search_s": statistics.median(stdio),
        "http_health_ready_s": statistics.median(http),
        "stdio_runs": stdio,
        "http_runs": http,
    }


def stdio_first_search(db: Path) -> float:
    import anyio
    from mcp import Client, StdioServerParameters

    environment = {"HF_HUB_OFFLINE": "1", "PATH": os.environ.get("PATH", "")}
    arguments = ["mcp", "--db", str(db), "--model-path", str(MODEL)]
    parameters = StdioServerParameters(command=SCRIPT, args=arguments, env=environment)

    async def first_search() -> float:
        started = time.perf_counter()
        async with Client(parameters, mode="legacy", read_timeout_seconds=600) as client:
            await client.call_tool("search", {"query": query_set(1)[0][0]})
            return time.perf_counter() - started

    return anyio.run(first_search)


def http_ready(db: Path) -> float:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [SCRIPT, "mcp", "--transport", "http", "--port", str(port), "--db", str(db)]
    command += ["--model-path", str(MODEL)]
    started = time.perf_counter()
    server = subprocess.Popen(
        command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ
    )
    try:
        while server.poll() is None:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as page:
                    if json.load(page)["status"] == "ready":
                        return time.perf_counter() - started
            except (urllib.error.URLError, ConnectionError):
                pass  # not listening yet, or 503 while loading
            time.sleep(0.05)
        raise RuntimeError(f"{' '.join(command)} exited with {server.returncode}")
    finally:
        server.terminate()
        server.wait(30)


def one_shot_search(db: Path, runs: int) -> dict[str, Any]:
    """``duckdb-vectors search`` (hybrid), process start to exit, a different query each run."""
    texts, _ = query_set(runs, seed=11)
    done = [
        measured([SCRIPT, "search", text, "--db", str(db), "--model-path", str(MODEL)])
        for text in texts
    ]
    return {
        "seconds": statistics.median(seconds for seconds, _ in done),
        "peak_rss_mb": statistics.median(peak for _, peak in done),
        "runs": [{"seconds": seconds, "peak_rss_mb": peak} for seconds, peak in done],
    }


def int8(db: Path, exact: list[list[str]], workdir: Path) -> dict[str, Any]:
    """The int8 hook: recall and latency where the store can quantize, else why not."""
    if not quantize_supported():
        return {"supported": False, "note": NO_QUANTIZE}
    truth = workdir / "vector-top-ids.json"
    truth.write_text(json.dumps(exact))
    converted = run_worker("int8_convert", db)
    return {"supported": True, "convert": converted} | run_worker("int8_reader", db, truth)


def measure_size(size: int, workdir: Path, arguments: argparse.Namespace) -> dict[str, Any]:
    big = size > arguments.bulk_max
    parquet = rows_file(size, workdir, arguments.parquet)
    db = workdir / f"scale-{size}.duckdb"
    repeats = 1 if big else arguments.repeat
    print(f"{size:,} rows: writes ({repeats} rounds)", flush=True)
    result: dict[str, Any] = {"rows": size, "parquet": str(parquet)}
    result["loadavg_1m_start"] = os.getloadavg()[0]
    result["writes"] = writes(size, parquet, db, repeats, not big, arguments.peers_python)
    result["file_mb"] = db.stat().st_size / 1e6
    result["held"] = held_bytes(db)
    print(f"{size:,} rows: loading", flush=True)
    npy = workdir / f"scale-{size}.npy"
    write_normalised_npy(parquet, npy, size)
    result["loading"] = loading(npy, db, arguments.repeat)
    npy.unlink()
    print(f"{size:,} rows: MCP readiness, queries, one-shot CLI", flush=True)
    result["mcp"] = mcp_readiness(db, arguments.repeat)
    queries = arguments.queries if not big else max(20, arguments.queries // 4)
    result["reader"] = run_worker("reader", db, queries)
    held = result["held"]["vector_bytes"] + result["held"]["text_bytes"]
    result["reader"]["rss_vs_held"] = result["reader"]["rss_after_warm_up_mb"] * 2**20 / held
    result["cli_search"] = one_shot_search(db, arguments.cli_runs)
    result["int8"] = int8(db, result["reader"].pop("vector_top_ids"), workdir)
    db.unlink()
    return result


# -- report -----------------------------------------------------------------------------------


def table(runs: list[dict[str, Any]]) -> str:
    lines = [
        "| measure | " + " | ".join(f"{run['rows']:,} rows" for run in runs) + " |",
        "|---|" + "---:|" * len(runs),
    ]

    def row(name: str, cell: Callable[[dict[str, Any]], str]) -> None:
        cells = []
        for run in runs:
            try:
                cells.append(cell(run))
            except KeyError:
                cells.append("—")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")

    for writer in ("index --from-parquet", "put_vectors", "sqlite-vec", "lancedb"):
        row(
            f"write: {writer} s (rows/s; peak RSS MB)",
            lambda r, w=writer: (
                f"{r['writes'][w]['seconds']:.1f} ({r['writes'][w]['rows_per_s']:,.0f};"
                f" {r['writes'][w]['peak_rss_mb']:,.0f})"
            ),
        )
    row("np.load of the .npy s", lambda r: f"{r['loading']['numpy_load_s']:.3f}")
    row(
        "warm_up() s (x np.load)",
        lambda r: f"{r['loading']['warm_up_s']:.2f} ({r['loading']['warm_up_vs_numpy']:.1f}x)",
    )
    row(
        "open + warm_up() s (x np.load)",
        lambda r: (
            f"{r['loading']['open_and_warm_up_s']:.2f}"
            f" ({r['loading']['open_and_warm_up_vs_numpy']:.1f}x)"
        ),
    )
    row(
        "warm-up process peak RSS MB (bound 1.5x vectors + 300)",
        lambda r: (
            f"{r['loading']['warm_up_peak_rss_mb']:,.0f}"
            f" ({1.5 * r['held']['vector_bytes'] / 2**20 + 300:,.0f})"
        ),
    )
    for name, key in (
        ("stdio first search", "stdio_first_search_s"),
        ("HTTP /health", "http_health_ready_s"),
    ):
        row(
            f"MCP {name} s (x np.load)",
            lambda r, k=key: (
                f"{r['mcp'][k]:.2f} ({r['mcp'][k] / r['loading']['numpy_load_s']:.1f}x)"
            ),
        )
    for kind in ("vector", "hybrid"):
        row(
            f"warm {kind} p50 / p95 ms",
            lambda r, k=kind: f"{r['reader'][k]['p50_ms']:.1f} / {r['reader'][k]['p95_ms']:.1f}",
        )
    row(
        "one-shot CLI search s (peak RSS MB)",
        lambda r: f"{r['cli_search']['seconds']:.2f} ({r['cli_search']['peak_rss_mb']:,.0f})",
    )
    row(
        "reader RSS after warm_up MB / vectors + texts MB",
        lambda r: (
            f"{r['reader']['rss_after_warm_up_mb']:,.0f} /"
            f" {(r['held']['vector_bytes'] + r['held']['text_bytes']) / 2**20:,.0f}"
            f" ({r['reader']['rss_vs_held']:.2f}x)"
        ),
    )
    row(
        "int8: recall@10 vs float32 (random vectors)",
        lambda r: f"{r['int8']['recall_at_10']:.3f}" if r["int8"]["supported"] else "—",
    )
    for kind in ("vector", "hybrid"):
        row(
            f"int8 / float32 warm {kind} p50 ms (ratio), taking turns",
            lambda r, k=kind: (
                f"{r['int8'][k]['int8']['p50_ms']:.1f} / {r['int8'][k]['float32']['p50_ms']:.1f}"
                f" ({r['int8'][k]['p50_ratio']:.2f}x)"
            ),
        )
    row(
        "int8 / float32 vectors held MB; reader RSS after warm_up MB",
        lambda r: (
            f"{r['int8']['vector_bytes'] / 2**20:,.0f} /"
            f" {r['int8']['float32_vector_bytes'] / 2**20:,.0f};"
            f" {r['int8']['rss_after_warm_up_mb']:,.0f}"
            f" (float32: {r['reader']['rss_after_warm_up_mb']:,.0f})"
        ),
    )
    row(
        "quantize an existing index s (peak RSS MB)",
        lambda r: (
            f"{r['int8']['convert']['seconds']:.1f} ({r['int8']['convert']['peak_rss_mb']:,.0f})"
        ),
    )
    row("index file MB", lambda r: f"{r['file_mb']:,.0f}")
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        name, out, *rest = sys.argv[2:]
        Path(out).write_text(json.dumps(WORKERS[name](*rest)))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--label", default="run", help="names the JSON: scale-<label>.json")
    parser.add_argument("--workdir", type=Path, help="for data and indexes (default: a temp dir)")
    parser.add_argument(
        "--parquet", type=Path, nargs="*", default=[], help="write_rows files to reuse, read-only"
    )
    parser.add_argument("--repeat", type=int, default=3, help="alternating rounds of each")
    parser.add_argument("--queries", type=int, default=200, help="warm queries of each kind")
    parser.add_argument("--cli-runs", type=int, default=5)
    parser.add_argument(
        "--bulk-max", type=int, default=100_000, help="largest size for put_vectors and peers"
    )
    parser.add_argument("--peers-python", help="a python with lancedb, sqlite-vec, pysqlite3")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    out = arguments.out or HERE / "results" / date.today().isoformat() / (
        f"scale-{arguments.label}.json"
    )
    with tempfile.TemporaryDirectory(dir=arguments.workdir) as scratch:
        runs = [measure_size(size, Path(scratch), arguments) for size in arguments.sizes]
    report = {
        "label": arguments.label,
        "machine": f"{platform.machine()} {os.cpu_count()} cores, {platform.python_version()}",
        "loadavg_1m_end": os.getloadavg()[0],
        "duckdb": duckdb.__version__,
        "numpy": np.__version__,
        "runs": runs,
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(table(runs))


if __name__ == "__main__":
    main()
