"""How fast can vectors come out of a DuckDB file? The floor under ``warm_up()`` at 1M chunks.

Issue 17 asks for ``warm_up()`` within 2x of ``np.load`` of the same float32 matrix. This
measures the part no snapshot code can avoid, the vectors leaving DuckDB, for the physical
layouts a file could hold, side by side with ``np.load`` (a ``.npy`` in the page cache),
rounds alternating, each in a fresh process (a fresh DuckDB buffer pool):

- ``float_array``: a ``FLOAT[d]`` column as the index stores it (DuckDB picks ALPRD), read as
  ``MemoryIndex`` reads it (``db.numpy_batches``, 16 MB buffer pool) into one matrix;
- ``float_array_uncompressed``: the same column written with ``force_compression``;
- ``float_array_2_cursors``: the default column, two halves read on two cursors in threads;
- ``blob_blocks``: raw float32 bytes, ``--block-rows`` rows per BLOB (DuckDB picks ZSTD for
  them), streamed as Arrow batches of about 16 MB and copied into the matrix;
- ``blob_blocks_uncompressed``: the same BLOBs written with ZSTD, FSST and dictionary
  compression disabled (``disabled_compression_methods``).

    python bench/load_floor.py                     # 1M x 256, 3 rounds
    python bench/load_floor.py --rows 100000 --repeat 5

Prints a Markdown table of medians and ratios to np.load; writes bench/out/load_floor.json.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
from common import OUT, write_json

from duckdb_vectors.index.db import SCAN_MEMORY_LIMIT, numpy_batches

DIMENSION = 256
# What DuckDB would otherwise compress a BLOB column with (it picks ZSTD for these).
BLOB_COMPRESSION = "zstd,fsst,dictionary,dict_fsst"


def write_files(folder: Path, rows: int, block_rows: int) -> None:
    matrix = np.random.default_rng(7).standard_normal((rows, DIMENSION), dtype=np.float32)
    np.save(folder / "matrix.npy", matrix)
    keys = pa.array(np.arange(rows, dtype=np.int64))
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1)), DIMENSION)
    for name, compression in (("float_array", None), ("float_array_uncompressed", "uncompressed")):
        with duckdb.connect(str(folder / f"{name}.duckdb")) as connection:
            if compression:
                connection.execute(f"SET force_compression = '{compression}'")
            connection.register("source", pa.table({"key": keys, "embedding": vectors}))
            connection.execute("CREATE TABLE chunks AS SELECT * FROM source")
    blobs = [matrix[start : start + block_rows].tobytes() for start in range(0, rows, block_rows)]
    blocks = pa.table({"block": np.arange(len(blobs)), "data": pa.array(blobs, pa.binary())})
    for name, disabled in (("blob_blocks", None), ("blob_blocks_uncompressed", BLOB_COMPRESSION)):
        with duckdb.connect(str(folder / f"{name}.duckdb")) as connection:
            if disabled:
                connection.execute(f"SET disabled_compression_methods = '{disabled}'")
            connection.register("source", blocks)
            connection.execute("CREATE TABLE blocks AS SELECT * FROM source")


def read_array(path: Path, cursors: int) -> np.ndarray:
    with duckdb.connect(str(path), read_only=True) as connection:
        # Each cursor's scan needs its own buffers: 16 MB for two ran out of memory.
        connection.execute(f"SET memory_limit = '{SCAN_MEMORY_LIMIT * 2 ** (cursors - 1)}B'")
        rows = connection.sql("SELECT count(*) FROM chunks").fetchall()[0][0]
        matrix = np.empty((rows, DIMENSION), dtype=np.float32)
        bounds = np.linspace(0, rows, cursors + 1).astype(int)

        def read_part(part: int) -> None:
            start, end = int(bounds[part]), int(bounds[part + 1])
            with connection.cursor() as cursor:
                query = f"SELECT embedding FROM chunks WHERE key >= {start} AND key < {end}"
                for batch in numpy_batches(cursor.sql(query)):
                    block = batch["embedding"]
                    matrix[start : start + len(block)] = block
                    start += len(block)

        with ThreadPoolExecutor(cursors) as pool:
            list(pool.map(read_part, range(cursors)))
    return matrix


def read_blobs(path: Path) -> np.ndarray:
    """The BLOBs in storage order (written in block order), each Arrow batch's data buffer
    copied into the matrix as it comes."""
    with duckdb.connect(str(path), read_only=True) as connection:
        connection.execute(f"SET memory_limit = '{SCAN_MEMORY_LIMIT * 16}B'")
        sizes = connection.sql("SELECT count(*), sum(octet_length(data)) FROM blocks").fetchall()
        blob_count, total = sizes[0]
        matrix = np.empty((total // (4 * DIMENSION), DIMENSION), np.float32)
        flat, offset = matrix.reshape(-1).view(np.uint8), 0
        rows_per_batch = max(1, blob_count * SCAN_MEMORY_LIMIT // total)
        for batch in connection.sql("SELECT data FROM blocks").to_arrow_reader(rows_per_batch):
            data = batch.column(0)
            offsets = np.frombuffer(data.buffers()[1], np.int32)[data.offset :]
            start, end = int(offsets[0]), int(offsets[len(data)])
            flat[offset : offset + end - start] = np.frombuffer(data.buffers()[2], np.uint8)[
                start:end
            ]
            offset += end - start
    return matrix


READERS = {
    "np.load": lambda folder: np.load(folder / "matrix.npy"),
    "float_array": lambda folder: read_array(folder / "float_array.duckdb", 1),
    "float_array_uncompressed": lambda folder: read_array(
        folder / "float_array_uncompressed.duckdb", 1
    ),
    "float_array_2_cursors": lambda folder: read_array(folder / "float_array.duckdb", 2),
    "blob_blocks": lambda folder: read_blobs(folder / "blob_blocks.duckdb"),
    "blob_blocks_uncompressed": lambda folder: read_blobs(
        folder / "blob_blocks_uncompressed.duckdb"
    ),
}


def timed_in_fresh_process(reader: str, folder: Path) -> float:
    """Seconds one reader takes, in a new process; the result is checked against the .npy."""
    done = subprocess.run(
        [sys.executable, __file__, "--read", reader, "--workdir", str(folder)],
        check=True,
        capture_output=True,
        text=True,
    )
    return float(done.stdout)


def read_once(reader: str, folder: Path) -> None:
    started = time.perf_counter()
    matrix = READERS[reader](folder)
    seconds = time.perf_counter() - started
    expected = np.load(folder / "matrix.npy", mmap_mode="r")
    if not np.array_equal(matrix, expected):
        sys.exit(f"{reader}: the matrix read back differs from the one written")
    print(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--block-rows", type=int, default=64, help="rows per BLOB")
    parser.add_argument("--workdir", type=Path, help="for the files (default: a temp dir)")
    parser.add_argument("--read", choices=READERS, help=argparse.SUPPRESS)
    arguments = parser.parse_args()
    if arguments.read:
        read_once(arguments.read, arguments.workdir)
        return
    with tempfile.TemporaryDirectory() as temporary:
        folder = arguments.workdir or Path(temporary)
        folder.mkdir(parents=True, exist_ok=True)
        if not (folder / "matrix.npy").exists():
            write_files(folder, arguments.rows, arguments.block_rows)
        runs: dict[str, list[float]] = {reader: [] for reader in READERS}
        for _ in range(arguments.repeat):
            for reader in READERS:
                runs[reader].append(timed_in_fresh_process(reader, folder))
    baseline = statistics.median(runs["np.load"])
    print(f"| layout ({arguments.rows:,} x {DIMENSION}) | median s | x np.load |")
    print("|---|---:|---:|")
    for reader, seconds in runs.items():
        median = statistics.median(seconds)
        print(f"| {reader} | {median:.3f} | {median / baseline:.2f} |")
    write_json(OUT / "load_floor.json", {"rows": arguments.rows, "seconds": runs})


if __name__ == "__main__":
    main()
