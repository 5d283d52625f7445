"""Write throughput: indexing a folder, and bulk writes of precomputed vectors.

``--mode folder`` (the default): a docs tree (the DuckDB docs, or ``--tree``: the Ray docs with
``--tree ray``) indexed by ``duckdb-vectors index`` as a user runs it, one fresh process a run:
embedding alone (the same chunks through the same embedder, no storage), the index run and a
re-run over the unchanged folder take turns for ``--rounds`` rounds. Reported: each process's
wall time (start to exit, imports and model included), the index run's own ``seconds`` (its
``--json`` summary) against embedding alone, CPU seconds and peak RSS. ``--copies N`` then
indexes N distinct copies of the tree once.

``--mode bulk``: the rows of ``--parquet`` (the ``index --from-parquet`` layout; else
``--rows`` synthetic ones from common.write_rows) written by ``put_vectors`` (in ``--calls``
calls) and by ``duckdb-vectors index --from-parquet``, beside a plain DuckDB table of the same
rows and, with ``--peers-python``, sqlite-vec + FTS5 and LanceDB bulk inserts (bench/peers.py's
adapters). Every write is a fresh process; rounds alternate the writers.

``--mode transformer``: a transformer's ``index`` against fastembed's own embedding of the same
texts (issue 43), for ``--every N`` (every Nth file of the tree; 1: all of it): the index run
(the product path), and fastembed's ``TextEmbedding.embed`` of the index's chunk texts sorted by
token length at each of ``--fastembed-batches`` and (unless ``--no-document-order``) in
document order at batch 32, model loaded first; fresh processes in turns. Reported: each index
run's own ``seconds`` against the fastest sorted embedding (the floor; the bar: 1.15x), each
process's peak RSS.

``--baseline TREE`` runs the same duckdb-vectors runs with another checkout (its ``.venv``),
alternating with this one (in transformer mode: its index run beside this one's, against the
same floor).

    python bench/index_throughput.py                                  # DuckDB docs, 3 rounds
    python bench/index_throughput.py --tree ray --baseline /work/baseline --rounds 5
    python bench/index_throughput.py --tree ../shared/evaldata/docs/duckdb/docs/current/data \\
        --backend fastembed:sentence-transformers/all-MiniLM-L6-v2 \\
        --model-path ../shared/models/onnx-minilm-l6-v2-int8            # a transformer
    python bench/index_throughput.py --mode transformer --tree ray --every 5 \\
        --backend fastembed:sentence-transformers/all-MiniLM-L6-v2 \\
        --model-path ../shared/models/onnx-minilm-l6-v2-int8            # issue 43's bar
    python bench/index_throughput.py --mode transformer --tree ray --baseline /work/before \
        --no-document-order --backend hf:sentence-transformers/all-mpnet-base-v2 \
        --model-path ../models/all-mpnet-base-v2                        # before and after
    python bench/index_throughput.py --mode bulk --rows 100000 --calls 10 \\
        --peers-python ../peers-venv/bin/python

Writes bench/out/index_throughput-<mode>.json (or ``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    BACKEND,
    DIMENSION,
    DOCS,
    MODEL,
    OUT,
    RAY,
    Run,
    alternate,
    machine,
    median,
    run,
    run_function,
    summary,
    tree_python,
    write_json,
    write_rows,
)

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
HERE_TREE = Path(__file__).resolve().parent.parent


def embed_alone(db: str, backend: str, model_path: str) -> dict[str, Any]:
    """The chunks an index holds, embedded again through the same embedder with no storage;
    the model is loaded and the texts read before the clock starts."""
    import time

    import duckdb

    from duckdb_vectors import get_embedder
    from duckdb_vectors.rows import titled_text

    with duckdb.connect(db, read_only=True) as connection:
        rows = connection.execute("SELECT title, text FROM chunk_view ORDER BY chunk_id")
        texts = [titled_text(title, text) for title, text in rows.fetchall()]
    embedder = get_embedder(backend, model_path=Path(model_path))
    embedder.embed(["load the model"])
    started = time.perf_counter()
    for start in range(0, len(texts), 1024):
        embedder.embed(texts[start : start + 1024])
    return {"seconds": time.perf_counter() - started, "chunks": len(texts)}


def cli(tree: Path) -> str:
    """The ``duckdb-vectors`` of a checkout (this one: the one beside this Python)."""
    if tree == HERE_TREE:
        return str(Path(sys.executable).parent / "duckdb-vectors")
    return str(tree / ".venv" / "bin" / "duckdb-vectors")


def index_run(tree: Path, folder: Path, db: Path, arguments: argparse.Namespace) -> Run:
    command = [cli(tree), "index", str(folder), "--db", str(db), "--json", "--no-progress"]
    command += ["--backend", arguments.backend, "--model-path", str(arguments.model_path)]
    done = run(command, env=ENV)
    done.result = json.loads(done.stdout)
    return done


def folder_mode(arguments: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    folder = arguments.tree
    chunks = scratch / "chunks.duckdb"  # what embedding alone embeds: the index's own chunks
    index_run(HERE_TREE, folder, chunks, arguments)
    model = (arguments.backend, str(arguments.model_path))
    contenders: dict[str, Callable[[], Run]] = {
        "embedding alone": lambda: run_function(embed_alone, str(chunks), *model, env=ENV)
    }
    again: dict[str, list[Run]] = {label: [] for label in trees(arguments)}
    for label, tree in trees(arguments).items():
        db = scratch / f"{label}.duckdb"

        def first_and_again(tree: Path = tree, db: Path = db, label: str = label) -> Run:
            db.unlink(missing_ok=True)
            first = index_run(tree, folder, db, arguments)
            again[label].append(index_run(tree, folder, db, arguments))
            return first

        contenders[f"{label}: index"] = first_and_again
    runs = alternate(contenders, arguments.rounds, log=print)
    alone = runs.pop("embedding alone")
    embedding_s = float(np.median([r.result["seconds"] for r in alone]))
    results: dict[str, Any] = {
        "tree": str(folder),
        "embedding alone": summary(alone) | {"embedding_s": embedding_s},
    }
    for name, done in runs.items():
        label = name.removesuffix(": index")
        own = float(np.median([r.result["seconds"] for r in done]))
        last = done[-1].result
        results[name] = summary(done) | {
            "index_seconds": own,
            "x_embedding_alone": own / embedding_s,
            "files": last["files_seen"],
            "chunks": last["chunks_added"] + last["chunks_updated"] + last["chunks_unchanged"],
        }
        results[f"{label}: re-run, nothing changed"] = summary(again[label])
    if arguments.copies:
        copies = scratch / "copies"
        for n in range(arguments.copies):
            shutil.copytree(folder, copies / f"copy{n:02d}")
        for n, path in enumerate(sorted(copies.rglob("*.md"))):  # nothing reused by content
            path.write_text(path.read_text() + f"\n\nCopy marker {n}.\n")
        db = scratch / "copies.duckdb"
        name = f"this: index {arguments.copies}x copies"
        results[name] = summary([index_run(HERE_TREE, copies, db, arguments)])
        results[f"this: re-run {arguments.copies}x"] = summary(
            [index_run(HERE_TREE, copies, db, arguments)]
        )
    return results


def fastembed_alone(
    texts_file: str, backend: str, model_path: str, batch: int, by_length: bool
) -> dict[str, Any]:
    """fastembed's own ``TextEmbedding.embed`` (its default session) of the texts (a JSON list)
    at ``batch``, sorted by token length or as given; the model is loaded and the texts sorted
    before the clock. An ``hf:`` model is registered with fastembed as the backend does."""
    import time

    from fastembed import TextEmbedding

    from duckdb_vectors import get_embedder

    texts = json.loads(Path(texts_file).read_text())
    name = get_embedder(backend, model_path=Path(model_path)).fastembed_name()
    embedding = TextEmbedding(name, specific_model_path=model_path)
    list(embedding.embed(["load the model"]))
    if by_length:
        lengths = [sum(e.attention_mask) for e in embedding.model.tokenizer.encode_batch(texts)]
        texts = [texts[i] for i in sorted(range(len(texts)), key=lengths.__getitem__)]
    started = time.perf_counter()
    vectors = list(embedding.embed(texts, batch_size=batch))
    return {"seconds": time.perf_counter() - started, "chunks": len(vectors)}


def sample_folder(tree: Path, every: int, folder: Path) -> Path:
    """Every ``every``-th file of ``tree`` (sorted paths), copied to ``folder``: a fixed sample
    that ``index`` reads as it reads the tree."""
    files = sorted(path for path in tree.rglob("*") if path.is_file())
    for path in files[::every]:
        target = folder / path.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    return folder


def chunk_texts(folder: Path, scratch: Path) -> Path:
    """The texts ``index`` embeds for ``folder`` (chunks do not depend on the model: indexed
    with the static one), in document order, as a JSON file."""
    import duckdb

    from duckdb_vectors.rows import titled_text

    db = scratch / "texts.duckdb"
    command = [cli(HERE_TREE), "index", str(folder), "--db", str(db), "--no-progress"]
    run([*command, "--backend", BACKEND, "--model-path", str(MODEL)], env=ENV)
    with duckdb.connect(str(db), read_only=True) as connection:
        rows = connection.execute("SELECT title, text FROM chunk_view ORDER BY source, position")
        texts = [titled_text(title, text) for title, text in rows.fetchall()]
    out = scratch / "texts.json"
    out.write_text(json.dumps(texts))
    return out


def transformer_mode(arguments: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    folder = arguments.tree
    if arguments.every > 1:
        folder = sample_folder(folder, arguments.every, scratch / "sample")
    texts = chunk_texts(folder, scratch)
    model = (arguments.backend, str(arguments.model_path))

    def index(tree: Path, db: Path) -> Callable[[], Run]:
        def fresh() -> Run:
            db.unlink(missing_ok=True)
            return index_run(tree, folder, db, arguments)

        return fresh

    def alone(batch: int, by_length: bool) -> Callable[[], Run]:
        return lambda: run_function(fastembed_alone, str(texts), *model, batch, by_length, env=ENV)

    contenders: dict[str, Callable[[], Run]] = {
        f"{label}: index": index(tree, scratch / f"{label}.duckdb")
        for label, tree in trees(arguments).items()
    }
    for batch in arguments.fastembed_batches:
        contenders[f"fastembed, sorted by length, batch {batch}"] = alone(batch, True)
    if arguments.document_order:
        contenders["fastembed, document order, batch 32"] = alone(32, False)
    runs = alternate(contenders, arguments.rounds, log=print)
    results: dict[str, Any] = {"tree": str(arguments.tree), "every": arguments.every}
    for name, done in runs.items():
        if name.startswith("fastembed"):
            embedding_s = float(np.median([r.result["seconds"] for r in done]))
            results[name] = summary(done) | {"embedding_s": embedding_s}
    best = min(value["embedding_s"] for name, value in results.items() if "sorted" in name)
    for name, done in runs.items():
        if not name.startswith("fastembed"):
            results[name] = index_summary(done, best)
    if results["this: index"]["chunks"] != len(json.loads(texts.read_text())):
        raise SystemExit("the index run holds other chunks than the texts embedded alone")
    return results


def index_summary(runs: list[Run], embedding_s: float) -> dict[str, Any]:
    """An index contender's medians, its own ``seconds`` against ``embedding_s`` (the floor)."""
    own = float(np.median([r.result["seconds"] for r in runs]))
    last = runs[-1].result
    return summary(runs) | {
        "index_seconds": own,
        "x_embedding_alone": own / embedding_s,
        "x_embedding_alone_process": median(r.seconds for r in runs) / embedding_s,
        "files": last["files_seen"],
        "chunks": last["chunks_added"] + last["chunks_updated"] + last["chunks_unchanged"],
    }


def put_vectors(parquet: str, db: str, calls: int) -> dict[str, Any]:
    """``put_vectors`` of every row (held in memory first, as an SDK caller would) in ``calls``
    calls of equal size, closed."""
    import time

    import duckdb

    from duckdb_vectors import VectorStore

    rows = duckdb.sql(f"SELECT chunk_id, text, source, embedding FROM read_parquet('{parquet}')")
    items = [
        {"key": key, "text": text, "source": source, "data": {"float32": vector}}
        for key, text, source, vector in rows.fetchall()
    ]
    started = time.perf_counter()
    with VectorStore(db, BACKEND, model_path=MODEL, read_only=False) as store:
        for part in np.array_split(np.arange(len(items)), calls):
            store.put_vectors(items[part[0] : part[-1] + 1])
    return {"seconds": time.perf_counter() - started}


def plain_duckdb(parquet: str, db: str, calls: int) -> dict[str, Any]:
    """The same rows into a plain DuckDB table (key, text, source, FLOAT[] embedding), in
    ``calls`` transactions: what DuckDB itself takes to store them, with no text index."""
    import time

    import duckdb

    table = duckdb.sql(f"SELECT chunk_id, text, source, embedding FROM read_parquet('{parquet}')")
    rows = table.to_arrow_table()
    started = time.perf_counter()
    with duckdb.connect(db) as connection:
        connection.execute(
            "CREATE TABLE chunks (key VARCHAR PRIMARY KEY, text VARCHAR, source VARCHAR,"
            f" embedding FLOAT[{DIMENSION}])"
        )
        for part in np.array_split(np.arange(len(rows)), calls):
            batch = rows.slice(int(part[0]), len(part))  # noqa: F841 - read by the INSERT
            connection.execute("BEGIN")
            connection.execute(
                f"INSERT INTO chunks SELECT chunk_id, text, source, embedding::FLOAT[{DIMENSION}]"
                " FROM batch"
            )
            connection.execute("COMMIT")
    return {"seconds": time.perf_counter() - started}


def bulk_mode(arguments: argparse.Namespace, scratch: Path) -> dict[str, Any]:
    import peers

    parquet = arguments.parquet
    if parquet is None:
        parquet = scratch / "rows.parquet"
        write_rows(parquet, arguments.rows)
    calls = arguments.calls
    contenders: dict[str, Callable[[], Run]] = {}
    for label, tree in trees(arguments).items():
        db = scratch / f"{label}.duckdb"
        python = Path(sys.executable) if tree == HERE_TREE else tree_python(tree)

        def put(python: Path = python, db: Path = db) -> Run:
            db.unlink(missing_ok=True)
            return run_function(put_vectors, str(parquet), str(db), calls, python=python, env=ENV)

        def from_parquet(tree: Path = tree, db: Path = db) -> Run:
            db.unlink(missing_ok=True)
            command = [cli(tree), "index", "--from-parquet", str(parquet), "--db", str(db)]
            command += ["--backend", BACKEND, "--model-path", str(MODEL), "--no-progress"]
            return run(command, env=ENV)

        contenders[f"{label}: put_vectors"] = put
        contenders[f"{label}: index --from-parquet"] = from_parquet
    contenders["plain DuckDB"] = lambda: run_function(
        plain_duckdb, str(parquet), str(scratch / "plain.duckdb"), calls
    )
    if arguments.peers_python:
        data = scratch / "peer-data"
        peers.write_peer_data(parquet, data)
        for system in ("sqlite-vec", "lancedb"):
            contenders[system] = lambda system=system: peers.timed_build(
                arguments.peers_python, system, data, scratch / system
            )
    runs = alternate(contenders, arguments.rounds, log=print)
    for done in (one for runs_of_one in runs.values() for one in runs_of_one):
        if isinstance(done.result, dict):  # timed inside: the write alone, not reading the rows
            done.seconds = done.result["seconds"]
    results = {name: summary(done) for name, done in runs.items()}
    fastest = min(
        (results[s]["seconds"] for s in ("sqlite-vec", "lancedb") if s in results), default=None
    )
    for result in results.values():
        result["x_fastest_peer"] = result["seconds"] / fastest if fastest else None
    return {"parquet": str(parquet), "calls": calls, "writes": results}


def trees(arguments: argparse.Namespace) -> dict[str, Path]:
    found = {"this": HERE_TREE}
    if arguments.baseline:
        tree_python(arguments.baseline)  # fails early if it has no venv
        found["baseline"] = arguments.baseline.resolve()
    return found


def print_table(results: dict[str, Any]) -> None:
    rows = results.get("writes", results)
    print("| run | median s | CPU s | peak RSS MB | rounds (s) | notes |")
    print("|---|---:|---:|---:|---|---|")
    for name, entry in rows.items():
        if not isinstance(entry, dict):
            continue
        notes = []
        if "index_seconds" in entry:
            notes.append(
                f"{entry['chunks']:,} chunks; its own {entry['index_seconds']:.2f} s ="
                f" {entry['x_embedding_alone']:.2f}x embedding alone"
            )
        if "embedding_s" in entry:
            notes.append(f"embedding {entry['embedding_s']:.2f} s")
        if entry.get("x_fastest_peer"):
            notes.append(f"{entry['x_fastest_peer']:.2f}x the fastest peer")
        rounds = ", ".join(f"{s:.2f}" for s in entry["rounds_s"])
        print(
            f"| {name} | {entry['seconds']:.2f} | {entry['cpu_s']:.2f} |"
            f" {entry['peak_rss_mb']:,.0f} | {rounds} | {'; '.join(notes)} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["folder", "bulk", "transformer"], default="folder")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--baseline", type=Path, help="another checkout, with its .venv")
    parser.add_argument("--tree", default=str(DOCS), help="folder mode: a docs tree, or `ray`")
    parser.add_argument("--copies", type=int, default=0, help="folder mode: N distinct copies")
    parser.add_argument("--every", type=int, default=1, help="transformer mode: every Nth file")
    parser.add_argument(
        "--fastembed-batches",
        type=lambda text: [int(n) for n in text.split(",")],
        default=[16, 32],
        help="transformer mode: fastembed's batch sizes for the sorted texts",
    )
    parser.add_argument(
        "--document-order",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="transformer mode: also fastembed in document order at batch 32 (slow, big)",
    )
    parser.add_argument("--backend", default=BACKEND)
    parser.add_argument("--model-path", type=Path, default=MODEL)
    parser.add_argument("--parquet", type=Path, help="bulk mode: rows in write_rows' layout")
    parser.add_argument("--rows", type=int, default=100_000, help="bulk mode: synthetic rows")
    parser.add_argument("--calls", type=int, default=1, help="bulk mode: put_vectors calls")
    parser.add_argument("--peers-python", help="bulk mode: a python with lancedb, sqlite-vec")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    tree = RAY / "docs" / "doc" / "source" if arguments.tree == "ray" else Path(arguments.tree)
    arguments.tree = tree
    with tempfile.TemporaryDirectory(prefix="index-throughput-") as scratch:
        mode = {"folder": folder_mode, "bulk": bulk_mode, "transformer": transformer_mode}[
            arguments.mode
        ]
        results = mode(arguments, Path(scratch))
    out = arguments.out or OUT / f"index_throughput-{arguments.mode}.json"
    write_json(out, {**machine(), "rounds": arguments.rounds, **results})
    print_table(results)


if __name__ == "__main__":
    main()
