"""duckdb-vectors next to its peers: LanceDB, Chroma, sqlite-vec + FTS5, raghilda, bm25s, numpy.

Every system gets the same precomputed embeddings (the static model in ../shared/models,
computed once here), so only storage and ranking differ. Each system is built into a fresh
directory and measured in its own subprocess, one after the other, so peak RSS is per system:
build time, on-disk size, warm query latency (vector-only and hybrid; query embedding
excluded), nDCG@10 and Recall@100 where there are judgments, and a cold start (a fresh
process that opens the index and answers one query).

    python bench/peers.py --quick                 # SciFact only, under 5 minutes
    python bench/peers.py                         # + XQuAD-R en and a synthetic 100k corpus
    python bench/peers.py --datasets synthetic-1m # scaling to a million chunks (about an hour)
    python bench/peers.py --systems lancedb numpy --datasets scifact
    python bench/peers.py --mode indexing        # a docs folder, against raghilda's pipeline

``--mode indexing`` indexes a folder (the DuckDB docs) next to the one peer with a folder
pipeline, raghilda (``read_as_markdown`` with MarkItDown, its ``MarkdownChunker``,
``DuckDBStore.ingest`` and ``build_index``), with the same static model through fastembed; each
run a fresh process with the model loaded before the clock starts, a first index and a re-run
over the unchanged folder, alternating ``--rounds`` times. The other peers are stores: reading,
chunking and skipping unchanged files is their user's own loop.

Run it with the peers venv (pip install -e . -r bench/requirements-peers.txt). raghilda runs
under ``--raghilda-python``: a venv with DuckDB 1.5.5 and the PyPI ``duckdb-extension-fts`` /
``-vss`` wheels, because its BM25 needs the fts extension and DuckDB's extension repository
is not reachable offline (PyPI has no fts/vss wheels for DuckDB 2.x).

Writes raw numbers to bench/out/peers[-indexing].json (or ``--out``) and prints Markdown tables.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from common import (
    BACKEND,
    DOCS,
    OUT,
    SHARED,
    Run,
    alternate,
    latencies,
    machine,
    run_function,
    summary,
    write_json,
)
from common import MODEL as STATIC_MODEL

IR = SHARED / "evaldata" / "ir"
RAGHILDA_PYTHON = Path("/work/peers-venv-duckdb15/bin/python")
TOP_K = 10
DEPTH = 100  # hits asked for when judging relevance (Recall@100)
RRF_K = 60
FUSION_DEPTH = 100  # candidates taken from each side before reciprocal-rank fusion
SYNTHETIC_SIZES = {"synthetic-100k": 100_000, "synthetic-1m": 1_000_000}
# One build or query run of one system; raghilda at 1M needs more (PEERS_WORKER_TIMEOUT_S=7200).
WORKER_TIMEOUT_S = int(os.environ.get("PEERS_WORKER_TIMEOUT_S", "3600"))
DATASETS = ("scifact", "xquad-en", "synthetic-100k", "synthetic-1m")
DEFAULT_DATASETS = ("scifact", "xquad-en", "synthetic-100k")  # 1M takes about an hour
SYSTEMS = ("duckdb-vectors", "lancedb", "chroma", "sqlite-vec", "raghilda", "bm25s", "numpy")


# -- data: prepared once in the parent, read by every worker --------------------------------


def _read_beir(folder: Path) -> tuple[list[str], list[str], dict[str, str]]:
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    ids = [str(d["_id"]) for d in documents]
    texts = [f"{d.get('title') or ''}\n{d['text']}".strip() for d in documents]
    from duckdb_vectors.evaluation import load_queries

    return ids, texts, load_queries(folder / "queries.jsonl")


def _unit(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.maximum(np.linalg.norm(matrix, axis=1, keepdims=True), 1e-12)


def prepare(name: str, folder: Path) -> dict[str, dict[str, int]]:
    """Write ids, texts, vectors and queries for ``name`` into ``folder``; return the qrels."""
    from duckdb_vectors import get_embedder
    from duckdb_vectors.evaluation import load_qrels

    embedder = get_embedder(BACKEND, model_path=STATIC_MODEL)
    qrels: dict[str, dict[str, int]] = {}
    if name in SYNTHETIC_SIZES:
        ids, texts, queries, vectors, query_vectors = _synthetic(SYNTHETIC_SIZES[name])
        query_ids = [f"q{i}" for i in range(len(queries))]
    else:
        source, split = {
            "scifact": (IR / "scifact", "train"),
            "xquad-en": (IR / "xquad-r-paragraphs" / "en", "test"),
        }[name]
        ids, texts, all_queries = _read_beir(source)
        qrels = load_qrels(source / "qrels" / f"{split}.tsv")
        # Judged queries first (they give relevance), then the rest (latency only).
        query_ids = [q for q in qrels if q in all_queries]
        query_ids += [q for q in all_queries if q not in qrels]
        queries = [all_queries[q] for q in query_ids]
        started = time.perf_counter()
        vectors = _unit(embedder.embed(texts))
        query_vectors = _unit(embedder.embed_query(queries))
        print(
            f"  embedded {len(texts):,} chunks + {len(queries):,} queries "
            f"in {time.perf_counter() - started:.1f}s",
            flush=True,
        )
    folder.mkdir(parents=True, exist_ok=True)
    np.save(folder / "vectors.npy", vectors)
    np.save(folder / "query_vectors.npy", query_vectors)
    (folder / "data.json").write_text(
        json.dumps(
            {
                "ids": ids,
                "texts": texts,
                "query_ids": query_ids,
                "queries": queries,
                "judged": sum(q in qrels for q in query_ids),
            }
        )
    )
    return qrels


def _synthetic(size: int, seed: int = 7) -> tuple[list[str], list[str], list[str], Any, Any]:
    """Random unit vectors and ~80-word texts drawn from SciFact's word counts.

    The same recipe as ``build_synthetic`` in bench/query_latency.py; there is no relevance
    here, so queries are 2-5 mid-frequency words with random query vectors.
    """
    from duckdb_vectors.tokenizer import tokenize

    _, scifact_texts, _ = _read_beir(IR / "scifact")
    counts = Counter(token for text in scifact_texts for token in tokenize(text))
    words = np.array(list(counts))
    probabilities = np.array(list(counts.values()), dtype=np.float64)
    probabilities /= probabilities.sum()
    rng = np.random.default_rng(seed)
    vectors = _unit(rng.normal(size=(size, 256)))
    picks = rng.choice(len(words), size=(size, 80), p=probabilities)
    texts = [" ".join(row) for row in words[picks]]
    middle = words[np.argsort(-probabilities)[50:5000]]
    queries = [" ".join(rng.choice(middle, size=rng.integers(2, 6))) for _ in range(300)]
    query_vectors = _unit(rng.normal(size=(len(queries), 256)))
    return [f"c{i}" for i in range(size)], texts, queries, vectors, query_vectors


class Data:
    """What a worker reads back from ``prepare``."""

    def __init__(self, folder: Path) -> None:
        raw = json.loads((folder / "data.json").read_text())
        self.folder = folder
        self.ids: list[str] = raw["ids"]
        self.texts: list[str] = raw["texts"]
        self.queries: list[str] = raw["queries"]
        self.judged: int = raw["judged"]
        self.vectors: np.ndarray = np.load(folder / "vectors.npy")
        self.query_vectors: np.ndarray = np.load(folder / "query_vectors.npy")


# -- helpers shared by the adapters -----------------------------------------------------------


def rrf(rankings: Sequence[Sequence[Any]], top_k: int, k: int = RRF_K) -> list[Any]:
    """Reciprocal-rank fusion of several ranked lists."""
    scores: dict[Any, float] = {}
    for ranking in rankings:
        for rank, key in enumerate(ranking):
            scores[key] = scores.get(key, 0.0) + 1.0 / (k + rank + 1)
    return sorted(scores, key=scores.__getitem__, reverse=True)[:top_k]


def top_rows(scores: np.ndarray, top_k: int) -> np.ndarray:
    """Row numbers of the ``top_k`` highest scores, best first."""
    top_k = min(top_k, len(scores))
    top = np.argpartition(-scores, top_k - 1)[:top_k]
    return top[np.argsort(-scores[top])]


def directory_mb(path: Path) -> float:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return sum(p.stat().st_size for p in files) / 1e6


# -- one adapter per system -------------------------------------------------------------------


class Adapter:
    """A system under test. ``query_*`` return chunk ids, best first; None = not supported."""

    name = ""
    hybrid_note = ""

    def __init__(self, root: Path, data: Data) -> None:
        self.root = root  # a fresh directory that holds this system's index
        self.data = data
        self.extra: dict[str, Any] = {}  # anything else worth reporting

    def build(self) -> None:
        raise NotImplementedError

    def open(self) -> None:
        """Open the built index for reading (read-only where the system has the option)."""
        raise NotImplementedError

    def warm_up(self) -> None:
        """Load whatever the system loads lazily, outside the timings."""

    def close(self) -> None:
        """Release the index (after ``build``, and before a worker exits)."""

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str] | None:
        return None

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str] | None:
        return None

    def size(self) -> float:
        return directory_mb(self.root)


class DuckdbVectors(Adapter):
    name = "duckdb-vectors"
    hybrid_note = "library default fusion"

    def build(self) -> None:
        from duckdb_vectors import VectorStore

        store = VectorStore(self.root / "index.duckdb", BACKEND, model_path=STATIC_MODEL)
        data, batch = self.data, 20_000
        for start in range(0, len(data.ids), batch):
            stop = start + batch
            store.put_vectors(
                [
                    {"key": key, "data": {"float32": vector}, "text": text}
                    for key, vector, text in zip(
                        data.ids[start:stop],
                        data.vectors[start:stop],
                        data.texts[start:stop],
                        strict=True,
                    )
                ]
            )
        store.close()

    def open(self) -> None:
        from duckdb_vectors import VectorStore

        self.store = VectorStore(
            self.root / "index.duckdb", model_path=STATIC_MODEL, read_only=True
        )

    def warm_up(self) -> None:
        self.store.warm_up()  # also loads the query model (~18 MB), unused here

    def close(self) -> None:
        self.store.close()

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        return [hit.chunk.chunk_id for hit in self.store.query_vectors(vector, top_k)]

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str]:
        return [hit.chunk.chunk_id for hit in self.store.query(text, top_k, vector=vector)]


class LanceDB(Adapter):
    name = "lancedb"
    hybrid_note = "native FTS index + default RRFReranker, k from each side"

    def build(self) -> None:
        import lancedb
        import pyarrow as pa

        data = self.data
        dimension = data.vectors.shape[1]
        table = pa.table(
            {
                "id": pa.array(data.ids, pa.string()),
                "text": pa.array(data.texts, pa.string()),
                "vector": pa.FixedSizeListArray.from_arrays(
                    pa.array(data.vectors.reshape(-1), pa.float32()), dimension
                ),
            }
        )
        created = lancedb.connect(self.root).create_table("chunks", data=table)
        created.create_fts_index("text")  # no vector index: flat (exact) vector search

    def open(self) -> None:
        import lancedb

        self.table = lancedb.connect(self.root).open_table("chunks")

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        query = self.table.search(vector, vector_column_name="vector").distance_type("cosine")
        return query.select(["id"]).limit(top_k).to_arrow()["id"].to_pylist()

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str]:
        query = (
            self.table.search(query_type="hybrid", vector_column_name="vector")
            .vector(vector)
            .text(text)
            .distance_type("cosine")
        )
        return query.select(["id"]).limit(top_k).to_arrow()["id"].to_pylist()


class Chroma(Adapter):
    name = "chroma"

    def _client(self) -> Any:
        import chromadb
        from chromadb.config import Settings

        return chromadb.PersistentClient(
            path=str(self.root), settings=Settings(anonymized_telemetry=False)
        )

    def build(self) -> None:
        client = self._client()
        collection = client.create_collection(
            "chunks", configuration={"hnsw": {"space": "cosine"}}, embedding_function=None
        )
        data, batch = self.data, min(5_000, client.get_max_batch_size())
        for start in range(0, len(data.ids), batch):
            stop = start + batch
            collection.add(
                ids=data.ids[start:stop],
                embeddings=data.vectors[start:stop],
                documents=data.texts[start:stop],
            )

    def open(self) -> None:
        self.collection = self._client().get_collection("chunks", embedding_function=None)

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        found = self.collection.query(query_embeddings=[vector], n_results=top_k, include=[])
        return found["ids"][0]


class SqliteVec(Adapter):
    name = "sqlite-vec"
    hybrid_note = "vec0 brute force + FTS5 BM25, RRF k=60 over top 100 each"

    def _connect(self, read_only: bool) -> Any:
        import pysqlite3 as sqlite3  # the stdlib module here cannot load extensions
        import sqlite_vec

        path = self.root / "index.sqlite"
        uri = f"file:{path}?mode=ro" if read_only else f"file:{path}"
        connection = sqlite3.connect(uri, uri=True)
        connection.enable_load_extension(True)
        sqlite_vec.load(connection)
        connection.enable_load_extension(False)
        return connection

    def build(self) -> None:
        data = self.data
        connection = self._connect(read_only=False)
        connection.executescript(
            f"""
            CREATE TABLE docs(rowid INTEGER PRIMARY KEY, key TEXT NOT NULL);
            CREATE VIRTUAL TABLE vec USING vec0(
                embedding float[{data.vectors.shape[1]}] distance_metric=cosine);
            CREATE VIRTUAL TABLE fts USING fts5(text);
            """
        )
        rowids = range(1, len(data.ids) + 1)
        with connection:
            connection.executemany(
                "INSERT INTO docs VALUES (?, ?)", zip(rowids, data.ids, strict=True)
            )
            connection.executemany(
                "INSERT INTO vec(rowid, embedding) VALUES (?, ?)",
                ((r, v.tobytes()) for r, v in zip(rowids, data.vectors, strict=True)),
            )
            connection.executemany(
                "INSERT INTO fts(rowid, text) VALUES (?, ?)", zip(rowids, data.texts, strict=True)
            )
        connection.execute("VACUUM")
        connection.close()

    def open(self) -> None:
        self.connection = self._connect(read_only=True)

    def close(self) -> None:
        self.connection.close()

    def _vector_rowids(self, vector: np.ndarray, top_k: int) -> list[int]:
        rows = self.connection.execute(
            "SELECT rowid FROM vec WHERE embedding MATCH ? AND k = ? ORDER BY distance",
            (vector.astype(np.float32).tobytes(), top_k),
        )
        return [row[0] for row in rows]

    def _text_rowids(self, text: str, top_k: int) -> list[int]:
        # Every token as a quoted FTS5 string, OR-ed: no query syntax gets through.
        tokens = dict.fromkeys(re.findall(r"\w+", text.lower()))
        if not tokens:
            return []
        match = " OR ".join('"' + token.replace('"', '""') + '"' for token in tokens)
        rows = self.connection.execute(
            "SELECT rowid FROM fts WHERE fts MATCH ? ORDER BY rank LIMIT ?", (match, top_k)
        )
        return [row[0] for row in rows]

    def _keys(self, rowids: list[int]) -> list[str]:
        marks = ",".join("?" * len(rowids))
        rows = self.connection.execute(
            f"SELECT rowid, key FROM docs WHERE rowid IN ({marks})", rowids
        )
        keys = dict(rows.fetchall())
        return [keys[rowid] for rowid in rowids]

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        return self._keys(self._vector_rowids(vector, top_k))

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str]:
        depth = max(top_k, FUSION_DEPTH)
        fused = rrf([self._vector_rowids(vector, depth), self._text_rowids(text, depth)], top_k)
        return self._keys(fused)


def _precomputed_embedding_class() -> type:
    """A raghilda EmbeddingProvider that serves the vectors computed in ``prepare``.

    Registered under a name, so ``DuckDBStore.connect`` restores it from the store's
    metadata exactly as it would a real provider.
    """
    from raghilda.embedding import (
        EmbeddingProvider,
        EmbedInputType,
        register_embedding_provider,
    )

    @register_embedding_provider("BenchPrecomputed")
    class Precomputed(EmbeddingProvider):
        def __init__(self, folder: str) -> None:
            data = Data(Path(folder))
            self.folder = folder
            self.documents = dict(zip(data.texts, data.vectors, strict=True))
            self.queries = dict(zip(data.queries, data.query_vectors, strict=True))
            self.dimension = data.vectors.shape[1]

        def embed(
            self, x: Sequence[str], input_type: EmbedInputType = EmbedInputType.DOCUMENT
        ) -> list[list[float]]:
            lookup = self.queries if input_type == EmbedInputType.QUERY else self.documents
            zero = np.zeros(self.dimension, dtype=np.float32)
            return [lookup.get(text, zero).tolist() for text in x]  # create() probes "foo"

        def get_config(self) -> dict[str, Any]:
            return {"type": "BenchPrecomputed", "folder": self.folder}

        @classmethod
        def from_config(cls, config: dict[str, Any]) -> Precomputed:
            return cls(config["folder"])

    return Precomputed


class Raghilda(Adapter):
    name = "raghilda"
    hybrid_note = "retrieve(): VSS top k then BM25 extras appended (a union, not fused)"

    def __init__(self, root: Path, data: Data) -> None:
        super().__init__(root, data)
        from duckdb_extensions import import_extension

        # The PyPI extension wheels stand in for DuckDB's (unreachable) extension repository:
        # this copies them into ~/.duckdb/extensions, so raghilda's own INSTALL finds them.
        import_extension("fts")
        import_extension("vss")
        self.provider = _precomputed_embedding_class()(str(data.folder))

    def build(self) -> None:
        """Load the rows ``upsert`` would write, in bulk, then raghilda's own ``build_index``.

        ``ingest()`` upserts one document per transaction (~20-50 docs/s here, so about an
        hour at 100k): its rate is measured on a sample and reported as ``ingest_docs_per_s``.
        """
        import pyarrow as pa
        from raghilda.store import DuckDBStore

        self.ingest_sample()
        store = DuckDBStore.create(self.root / "index.duckdb", embed=self.provider)
        data = self.data
        lengths = pa.array([len(text) for text in data.texts], pa.int32())
        documents = pa.table({"origin": data.ids, "text": data.texts})
        chunks = pa.table(
            {
                "origin": data.ids,
                "start_index": pa.array(np.zeros(len(data.ids), np.int32)),
                "end_index": lengths,
                "char_count": lengths,
                "embedding": pa.FixedSizeListArray.from_arrays(
                    pa.array(data.vectors.reshape(-1), pa.float32()), data.vectors.shape[1]
                ),
            }
        )
        store.con.register("new_documents", documents)
        store.con.register("new_chunks", chunks)
        store.con.execute("INSERT INTO documents SELECT origin, text FROM new_documents")
        store.con.execute(
            "INSERT INTO embeddings (origin, start_index, end_index, char_count, embedding) "
            "SELECT * FROM new_chunks"
        )
        store.build_index()  # the default: BM25 (fts) and HNSW (vss) indexes
        store.con.close()

    def ingest_sample(self, count: int = 300) -> None:
        """Time raghilda's public ``ingest()`` on the first ``count`` documents."""
        from raghilda.chunk import MarkdownChunk
        from raghilda.document import ChunkedMarkdownDocument
        from raghilda.store import DuckDBStore

        path = self.root / "ingest-sample.duckdb"
        store = DuckDBStore.create(path, embed=self.provider)
        count = min(count, len(self.data.ids))
        documents = (
            ChunkedMarkdownDocument(
                origin=key, content=text, chunks=[MarkdownChunk(text, 0, len(text), len(text))]
            )
            for key, text in zip(self.data.ids[:count], self.data.texts[:count], strict=True)
        )
        started = time.perf_counter()
        store.ingest(documents)
        self.extra["ingest_docs_per_s"] = count / (time.perf_counter() - started)
        store.con.close()
        path.unlink()

    def open(self) -> None:
        from raghilda.store import DuckDBStore

        self.store = DuckDBStore.connect(self.root / "index.duckdb", read_only=True)

    def close(self) -> None:
        self.store.con.close()

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        return [chunk.origin for chunk in self.store.retrieve_vss(vector.tolist(), top_k)]

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str]:
        # retrieve() embeds the text through the provider: a dictionary look-up here.
        origins = [chunk.origin for chunk in self.store.retrieve(text, top_k)]
        return list(dict.fromkeys(origins))[:top_k]


class Bm25sNumpy(Adapter):
    name = "bm25s"
    hybrid_note = "in memory: bm25s (lucene) + numpy, RRF k=60 over top 100 each"

    def build(self) -> None:
        import bm25s

        tokens = bm25s.tokenize(self.data.texts, stopwords="en", show_progress=False)
        retriever = bm25s.BM25(method="lucene")
        retriever.index(tokens, show_progress=False)
        retriever.save(str(self.root / "bm25"))
        np.save(self.root / "vectors.npy", self.data.vectors)
        (self.root / "ids.json").write_text(json.dumps(self.data.ids))

    def open(self) -> None:
        import bm25s

        self.retriever = bm25s.BM25.load(str(self.root / "bm25"))
        self.matrix = np.load(self.root / "vectors.npy")
        self.ids = json.loads((self.root / "ids.json").read_text())

    def query_hybrid(self, text: str, vector: np.ndarray, top_k: int) -> list[str]:
        import bm25s

        depth = max(top_k, FUSION_DEPTH)
        tokens = bm25s.tokenize(text, stopwords="en", return_ids=False, show_progress=False)[0]
        known = self.retriever.get_tokens_ids(tokens)
        text_rows: list[int] = []
        if known:
            scores = self.retriever.get_scores_from_ids(known)
            text_rows = [int(r) for r in top_rows(scores, depth) if scores[r] > 0]
        fused = rrf([top_rows(self.matrix @ vector, depth).tolist(), text_rows], top_k)
        return [self.ids[row] for row in fused]


class Numpy(Adapter):
    name = "numpy"

    def build(self) -> None:
        np.save(self.root / "vectors.npy", self.data.vectors)
        (self.root / "ids.json").write_text(json.dumps(self.data.ids))

    def open(self) -> None:
        self.matrix = np.load(self.root / "vectors.npy")
        self.ids = json.loads((self.root / "ids.json").read_text())

    def query_vector(self, vector: np.ndarray, top_k: int) -> list[str]:
        return [self.ids[row] for row in top_rows(self.matrix @ vector, top_k)]


ADAPTERS: dict[str, type[Adapter]] = {
    adapter.name: adapter
    for adapter in (DuckdbVectors, LanceDB, Chroma, SqliteVec, Raghilda, Bm25sNumpy, Numpy)
}


# -- the worker: one system, one dataset, in its own process ----------------------------------


def modes(adapter: Adapter) -> dict[str, Callable[[int, int], list[str] | None]]:
    data = adapter.data
    return {
        "vector": lambda i, k: adapter.query_vector(data.query_vectors[i], k),
        "hybrid": lambda i, k: adapter.query_hybrid(data.queries[i], data.query_vectors[i], k),
    }


def work(system: str, data_dir: str, root: str, task: str, repeat: int) -> dict[str, Any]:
    """``build``: build, open, time the queries, rank the judged ones; ``cold``: open the built
    index and answer one query."""
    data = Data(Path(data_dir))
    adapter = ADAPTERS[system](Path(root), data)
    count = len(data.queries)
    if task == "cold":
        started = time.perf_counter()
        adapter.open()
        search = modes(adapter)
        _ = search["hybrid"](0, TOP_K) or search["vector"](0, TOP_K)
        return {"cold_s": time.perf_counter() - started}

    result: dict[str, Any] = {}
    started = time.perf_counter()
    adapter.build()
    result["build_s"] = time.perf_counter() - started
    result["disk_mb"] = adapter.size()
    adapter.open()
    adapter.warm_up()
    for mode, search in modes(adapter).items():
        if search(0, TOP_K) is None:
            continue
        entry: dict[str, Any] = latencies(lambda i, search=search: search(i % count, TOP_K), repeat)
        if data.judged:
            entry["ranked"] = [search(i, DEPTH) for i in range(data.judged)]
        result[mode] = entry
    adapter.close()
    return result | adapter.extra


def run_worker(
    python: Path, system: str, data_dir: Path, root: Path, task: str, repeat: int, blas: int
) -> dict[str, Any]:
    # numpy's OpenBLAS threads (duckdb-vectors, bm25s, numpy). With 2 threads on a small
    # shared machine a matrix-vector product waits for a descheduled peer thread: ~8 ms
    # spikes at 5k chunks. 1 thread avoids them, but is ~2x slower at 100k on an idle box.
    env = os.environ | {"OPENBLAS_NUM_THREADS": str(blas), "HF_HUB_OFFLINE": "1"}
    done = run_function(
        work,
        system,
        str(data_dir),
        str(root),
        task,
        repeat,
        python=python,
        env=env,
        timeout=WORKER_TIMEOUT_S,
    )
    peak = "peak_rss_mb" if task == "build" else "cold_rss_mb"
    return done.result | {f"{task}_process_s": done.seconds, peak: done.peak_rss_mb}


def build_only(system: str, data_dir: str, root: str) -> dict[str, Any]:
    """Build ``system``'s index of the rows in ``data_dir`` alone: the seconds it took."""
    adapter = ADAPTERS[system](Path(root), Data(Path(data_dir)))
    started = time.perf_counter()
    adapter.build()
    return {"seconds": time.perf_counter() - started}


def timed_build(python: str, system: str, data: Path, root: Path) -> Run:
    """A bulk insert of the rows by ``system`` in a fresh ``python`` process (the peers'
    venv), for index_throughput.py's bulk mode; ``Run.result`` holds the build's own time."""
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    done = run_function(build_only, system, str(data), str(root), python=python)
    shutil.rmtree(root)
    return done


def write_peer_data(parquet: Path, folder: Path) -> None:
    """The rows of a Parquet file in ``Data``'s layout (no queries: only builds are run)."""
    import duckdb

    with duckdb.connect() as connection:
        table = connection.sql(
            f"SELECT chunk_id, text, embedding FROM read_parquet('{parquet}')"
        ).to_arrow_table()
    embeddings = table.column("embedding").combine_chunks()
    values = embeddings.flatten().to_numpy(zero_copy_only=False).astype(np.float32)
    folder.mkdir(parents=True, exist_ok=True)
    data = {"ids": table.column("chunk_id").to_pylist(), "texts": table.column("text").to_pylist()}
    (folder / "data.json").write_text(json.dumps(data | {"queries": [], "judged": 0}))
    np.save(folder / "vectors.npy", values.reshape(len(embeddings), -1))
    np.save(folder / "query_vectors.npy", np.zeros((0, values.size // max(len(embeddings), 1))))


# -- the parent: prepare, run every system in turn, score, report -----------------------------


def score(ranked: list[list[str]], query_ids: list[str], qrels: dict[str, dict[str, int]]) -> dict:
    from duckdb_vectors.evaluation import ndcg_at, recall_at

    pairs = [(hits, qrels[query_id]) for hits, query_id in zip(ranked, query_ids, strict=True)]
    return {
        "ndcg_at_10": statistics.fmean(ndcg_at(hits, rel, 10) for hits, rel in pairs),
        "recall_at_100": statistics.fmean(recall_at(hits, rel, 100) for hits, rel in pairs),
        "judged_queries": len(pairs),
    }


def run_dataset(
    name: str, systems: list[str], scratch: Path, repeat: int, raghilda_python: Path, blas: int
) -> dict[str, Any]:
    data_dir = scratch / name / "data"
    print(f"== {name}: preparing data", flush=True)
    qrels = prepare(name, data_dir)
    data = json.loads((data_dir / "data.json").read_text())
    query_ids = data["query_ids"][: data["judged"]]
    report: dict[str, Any] = {
        "chunks": len(data["ids"]),
        "queries": len(data["queries"]),
        "judged_queries": data["judged"],
        "systems": {},
    }
    for system in systems:
        python = raghilda_python if system == "raghilda" else Path(sys.executable)
        root = scratch / name / system
        root.mkdir(parents=True)
        print(f"-- {name} / {system}", flush=True)
        try:
            result = run_worker(python, system, data_dir, root, "build", repeat, blas)
            result.update(run_worker(python, system, data_dir, root, "cold", repeat, blas))
        except RuntimeError as error:
            print(f"   FAILED: {error}", flush=True)
            report["systems"][system] = {"error": str(error)}
            continue
        finally:
            shutil.rmtree(root, ignore_errors=True)
        result["python"] = str(python)
        result["hybrid_note"] = ADAPTERS[system].hybrid_note
        for mode in ("vector", "hybrid"):
            if mode in result and "ranked" in result[mode]:
                result[mode].update(score(result[mode].pop("ranked"), query_ids, qrels))
        report["systems"][system] = result
        print("   " + one_line(result), flush=True)
    return report


def one_line(result: dict[str, Any]) -> str:
    parts = [f"build {result['build_s']:.1f}s", f"{result['disk_mb']:.1f} MB"]
    for mode in ("vector", "hybrid"):
        if mode in result:
            entry = result[mode]
            quality = f" nDCG@10 {entry['ndcg_at_10']:.3f}" if "ndcg_at_10" in entry else ""
            parts.append(f"{mode} p50 {entry['p50_ms']:.2f} ms{quality}")
    parts.append(f"RSS {result['peak_rss_mb']:.0f} MB, cold {result['cold_s']:.2f}s")
    return ", ".join(parts)


def table(name: str, report: dict[str, Any]) -> str:
    systems = report["systems"]
    reference = systems.get("duckdb-vectors", {}).get("hybrid", {}).get("p50_ms")
    numpy_p50 = systems.get("numpy", {}).get("vector", {}).get("p50_ms")
    ratio = lambda value, base: f"{value / base:.2f}x" if base else "-"  # noqa: E731
    lines = [
        f"### {name}: {report['chunks']:,} chunks, {report['queries']:,} queries "
        f"({report['judged_queries']:,} judged)",
        "",
        "| system | mode | build s | disk MB | p50 ms | p95 ms | x dv hybrid | x numpy "
        "| nDCG@10 | R@100 | peak RSS MB | cold s |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for system, result in systems.items():
        if "error" in result:
            error = result["error"].splitlines()[0]
            lines.append(f"| {system} | failed: {error} |" + " |" * 10)
            continue
        for mode in ("hybrid", "vector"):
            if mode not in result:
                continue
            entry = result[mode]
            quality = (
                f"{entry['ndcg_at_10']:.3f} | {entry['recall_at_100']:.3f}"
                if "ndcg_at_10" in entry
                else "- | -"
            )
            lines.append(
                f"| {system} | {mode} | {result['build_s']:.2f} | {result['disk_mb']:.1f} "
                f"| {entry['p50_ms']:.3f} | {entry['p95_ms']:.3f} "
                f"| {ratio(entry['p50_ms'], reference)} | {ratio(entry['p50_ms'], numpy_p50)} "
                f"| {quality} | {result['peak_rss_mb']:.0f} | {result['cold_s']:.3f} |"
            )
    return "\n".join(lines)


def versions(raghilda_python: Path) -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in (
        "duckdb-vectors",
        "duckdb",
        "lancedb",
        "pylance",
        "chromadb",
        "sqlite-vec",
        "pysqlite3-binary",
        "bm25s",
        "numpy",
    ):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            found[package] = "missing"
    if raghilda_python.exists():
        probe = "from importlib.metadata import version as v; print(v('raghilda'), v('duckdb'))"
        output = subprocess.run(
            [str(raghilda_python), "-c", probe], capture_output=True, text=True
        ).stdout.split()
        if len(output) == 2:
            found["raghilda"], found["duckdb (raghilda venv)"] = output
    return found


# -- indexing a folder, against raghilda's pipeline --------------------------------------


def index_with_duckdb_vectors(db: str, folder: str) -> dict[str, Any]:
    """``index_folder`` of ``folder`` into ``db``, the model loaded before the clock starts."""
    from duckdb_vectors import VectorStore, index_folder

    store = VectorStore(db, BACKEND, model_path=STATIC_MODEL)
    store.embedder.embed(["load the model"])
    started = time.perf_counter()
    done = index_folder(store, folder)
    store.close()
    return {
        "seconds": time.perf_counter() - started,
        "files": done.files_seen,
        "unchanged": done.files_unchanged,
        "chunks": done.chunks_added + done.chunks_updated + done.chunks_unchanged,
    }


def index_with_raghilda(db: str, folder: str) -> dict[str, Any]:
    """raghilda's pipeline as its documentation shows it, with the same static model."""
    from fastembed import TextEmbedding
    from markitdown import StreamInfo
    from raghilda.chunker import MarkdownChunker
    from raghilda.embedding import EmbeddingProvider, EmbedInputType, register_embedding_provider
    from raghilda.read import read_as_markdown
    from raghilda.store import DuckDBStore

    @register_embedding_provider("BenchFastembed")
    class Fastembed(EmbeddingProvider):
        def __init__(self, name: str, path: str) -> None:
            self.name, self.path = name, path
            self.model = TextEmbedding(name, specific_model_path=path)

        def embed(self, x, input_type=EmbedInputType.DOCUMENT):
            if input_type == EmbedInputType.QUERY:
                return [v.tolist() for v in self.model.query_embed(list(x))]
            return [v.tolist() for v in self.model.embed(list(x))]

        def get_config(self) -> dict[str, str]:
            return {"type": "BenchFastembed", "name": self.name, "path": self.path}

        @classmethod
        def from_config(cls, config: dict[str, str]) -> Fastembed:
            return cls(config["name"], config["path"])

    provider = Fastembed(BACKEND.removeprefix("fastembed:"), str(STATIC_MODEL))
    provider.embed(["load the model"])
    existed = Path(db).exists()
    started = time.perf_counter()
    store = DuckDBStore.connect(db) if existed else DuckDBStore.create(db, embed=provider)
    chunker, counted, retried = MarkdownChunker(), [0], []

    def read(path: Path) -> Any:
        try:
            return read_as_markdown(str(path))
        except Exception:  # MarkItDown guesses the charset from the file's start: say it,
            retried.append(path.name)  # as its error message suggests
            return read_as_markdown(str(path), stream_info=StreamInfo(charset="utf-8"))

    def documents() -> Any:
        for path in sorted(Path(folder).rglob("*.md")):
            document = chunker.chunk(read(path))
            counted[0] += len(document.chunks)
            yield document

    done = store.ingest(documents())
    ingested = time.perf_counter()
    store.build_index()
    store.con.close()
    seconds = time.perf_counter() - started
    return {
        "seconds": seconds,
        "ingest_s": ingested - started,
        "build_index_s": seconds - (ingested - started),
        "files": done.inserted + done.replaced + done.skipped,
        "unchanged": done.skipped,
        "chunks": counted[0],
        "charset_retries": retried,
    }


def indexing(arguments: argparse.Namespace) -> dict[str, Any]:
    """Both pipelines over one folder, each a first index then a re-run, in turns."""
    folder = str(arguments.folder)
    env = os.environ | {"HF_HUB_OFFLINE": "1"}
    pipelines = {"duckdb-vectors": (index_with_duckdb_vectors, Path(sys.executable))}
    if arguments.raghilda_python.exists():
        pipelines["raghilda"] = (index_with_raghilda, arguments.raghilda_python)
    else:
        print(f"no {arguments.raghilda_python}: duckdb-vectors alone", file=sys.stderr)
    reruns: dict[str, list[Run]] = {name: [] for name in pipelines}
    with tempfile.TemporaryDirectory(prefix="peer-indexing-") as scratch:
        contenders: dict[str, Callable[[], Run]] = {}
        for name, (function, python) in pipelines.items():

            def first_and_again(
                name: str = name, function: Any = function, python: Path = python
            ) -> Run:
                db = Path(scratch) / f"{name}.duckdb"
                db.unlink(missing_ok=True)
                first = run_function(function, str(db), folder, python=python, env=env)
                reruns[name].append(run_function(function, str(db), folder, python=python, env=env))
                return first

            contenders[name] = first_and_again
        runs = alternate(contenders, arguments.rounds, log=print)
    results = {}
    for name, done in [*runs.items(), *((f"{n}, re-run", r) for n, r in reruns.items())]:
        own = [r.result["seconds"] for r in done]
        results[name] = summary(done) | done[-1].result | {"seconds": statistics.median(own)}
    return {"folder": folder, "rounds": arguments.rounds, "results": results}


def indexing_table(report: dict[str, Any]) -> str:
    lines = [
        "| run | files | unchanged | chunks | median s | files/s | process CPU s | peak RSS MB |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in report["results"].items():
        lines.append(
            f"| {name} | {r['files']} | {r['unchanged']} | {r['chunks']:,} | {r['seconds']:.2f}"
            f" | {r['files'] / r['seconds']:.0f} | {r['cpu_s']:.2f} | {r['peak_rss_mb']:.0f} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["query", "indexing"], default="query")
    parser.add_argument("--quick", action="store_true", help="SciFact only, fewer repeats")
    parser.add_argument("--datasets", nargs="*", choices=DATASETS)
    parser.add_argument("--systems", nargs="*", choices=SYSTEMS, default=list(SYSTEMS))
    parser.add_argument("--repeat", type=int, help="timed queries per mode (5k-scale sets)")
    parser.add_argument(
        "--raghilda-python",
        type=Path,
        default=RAGHILDA_PYTHON,
        help="interpreter of a venv with raghilda, DuckDB 1.5.5 and the "
        "duckdb-extension-fts/-vss wheels",
    )
    parser.add_argument(
        "--blas-threads", type=int, default=1, help="OPENBLAS_NUM_THREADS for the workers"
    )
    parser.add_argument("--folder", type=Path, default=DOCS, help="indexing mode: the docs")
    parser.add_argument("--rounds", type=int, default=3, help="indexing mode: rounds")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    os.environ["HF_HUB_OFFLINE"] = "1"

    if arguments.mode == "indexing":
        report = indexing(arguments)
        write_json(arguments.out or OUT / "peers-indexing.json", {**machine(), **report})
        print(indexing_table(report))
        return

    datasets = arguments.datasets or (["scifact"] if arguments.quick else list(DEFAULT_DATASETS))
    systems = [s for s in SYSTEMS if s in arguments.systems]
    if "raghilda" in systems and not arguments.raghilda_python.exists():
        print(f"no {arguments.raghilda_python}: skipping raghilda", file=sys.stderr)
        systems.remove("raghilda")
    reports = {}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="peers-") as scratch:
        for name in datasets:
            repeat = arguments.repeat or (200 if arguments.quick else 300)
            if name in SYNTHETIC_SIZES:
                repeat = max(50, repeat // 3) if name == "synthetic-100k" else 30
            reports[name] = run_dataset(
                name,
                systems,
                Path(scratch),
                repeat,
                arguments.raghilda_python,
                arguments.blas_threads,
            )
    report = {
        **machine(),
        "versions": versions(arguments.raghilda_python),
        "top_k": TOP_K,
        "openblas_threads": arguments.blas_threads,
        "elapsed_s": time.perf_counter() - started,
        "datasets": reports,
    }
    out = arguments.out or OUT / "peers.json"
    write_json(out, report)
    print()
    for name, dataset in reports.items():
        print(table(name, dataset) + "\n")
    notes = {s: ADAPTERS[s].hybrid_note for s in systems if ADAPTERS[s].hybrid_note}
    print("hybrid = " + "; ".join(f"{s}: {note}" for s, note in notes.items()))
    print(f"raw numbers: {out} ({report['elapsed_s']:.0f}s)")


if __name__ == "__main__":
    main()
