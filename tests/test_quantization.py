"""int8 vectors: exact top-k after rescoring, a quarter of the memory, codes that survive a
round trip through a DuckDB TINYINT[d] column, and one clear error for bad input."""

from __future__ import annotations

import json
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pytest
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, EVALDATA, STATIC_MODEL, XQUAD_QUESTIONS

from duckdb_vectors import get_embedder
from duckdb_vectors.chunkers import MarkdownChunker
from duckdb_vectors.index.vector_codes import int8_codes
from duckdb_vectors.search.quantization import KERNELS, RESCORE_FACTOR, Int8Vectors, rescore

SCIFACT = EVALDATA / "ir" / "scifact" / "queries.jsonl"
FOLDERS = ("sql", "guides", "data")  # ~2,600 chunks: enough neighbours, a second to embed
TOP_K = 10


def _unit_rows(matrix: np.ndarray) -> np.ndarray:
    matrix = np.asarray(matrix, dtype=np.float32)
    return matrix / np.linalg.norm(matrix, axis=1, keepdims=True)


@pytest.fixture(scope="module")
def embedded() -> tuple[np.ndarray, np.ndarray]:
    """Chunks of the DuckDB docs and real questions, embedded with the static model."""
    chunker = MarkdownChunker()
    texts = [
        chunk.text
        for folder in FOLDERS
        for path in sorted((DUCKDB_DOCS / folder).rglob("*.md"))
        for chunk in chunker.chunk(path.read_text(encoding="utf-8"), str(path))
    ]
    questions = [json.loads(line)["text"] for line in XQUAD_QUESTIONS.open(encoding="utf-8")][:150]
    claims = [json.loads(line)["text"] for line in SCIFACT.open(encoding="utf-8")][:150]
    in_domain = [" ".join(text.split()[:8]) for text in texts[::25]]
    embedder = get_embedder(DEFAULT_BACKEND, model_path=STATIC_MODEL)
    chunks = _unit_rows(embedder.embed(texts))
    queries = _unit_rows(embedder.embed_query(questions + claims + in_domain))
    return chunks, queries


def _exact_top(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    return np.argsort(-(matrix @ query), kind="stable")[:k]


@pytest.mark.slow
def test_rescored_top_10_matches_exact_search_on_real_embeddings(embedded) -> None:
    chunks, queries = embedded
    vectors = Int8Vectors.quantize(chunks)
    recalls, approximate_only = [], []
    exact_tops = np.argsort(-(queries @ chunks.T), axis=1, kind="stable")[:, :TOP_K]
    for query, exact_top in zip(queries, exact_tops, strict=True):
        exact = set(exact_top.tolist())
        rows, scores = vectors.top(query, TOP_K, lambda rows: chunks[rows])
        recalls.append(len(exact & set(rows.tolist())) / TOP_K)
        np.testing.assert_allclose(scores, chunks[rows] @ query, rtol=1e-5)
        approximate = np.argsort(-vectors.scores(query))[:TOP_K]
        approximate_only.append(len(exact & set(approximate.tolist())) / TOP_K)
    assert np.mean(recalls) >= 0.99
    assert min(approximate_only) < 1.0  # without rescoring int8 alone does miss neighbours


def test_codes_take_a_quarter_of_float32s_memory(embedded) -> None:
    chunks, _ = embedded
    vectors = Int8Vectors.quantize(chunks)
    assert vectors.codes.dtype == np.int8 and vectors.codes.flags.c_contiguous
    assert vectors.codes.nbytes == chunks.size
    # the codes plus one float32 scale per row: (256 + 4) / (4 * 256) of the float32 matrix
    assert vectors.nbytes / chunks.nbytes == pytest.approx(0.254, abs=0.001)


def test_codes_read_back_from_a_duckdb_tinyint_column_score_identically(
    embedded, tmp_path: Path
) -> None:
    chunks, queries = embedded
    codes = int8_codes(chunks)
    dimension = codes.shape[1]
    rows_table = pa.table(
        {
            "key": np.arange(len(codes)),
            "codes": pa.FixedSizeListArray.from_arrays(pa.array(codes.ravel()), dimension),
        }
    )
    path = tmp_path / "codes.duckdb"
    with duckdb.connect(str(path)) as connection:
        connection.execute(f"CREATE TABLE chunks (key BIGINT, codes TINYINT[{dimension}])")
        connection.register("rows_table", rows_table)
        connection.execute("INSERT INTO chunks SELECT * FROM rows_table")
    with duckdb.connect(str(path), read_only=True) as connection:
        stored = connection.sql("SELECT codes FROM chunks ORDER BY key").fetchnumpy()["codes"]
    read_back = Int8Vectors(np.stack(stored).astype(np.int8))
    original = Int8Vectors(codes)
    np.testing.assert_array_equal(read_back.codes, codes)
    for query in queries[:20]:
        np.testing.assert_array_equal(read_back.scores(query), original.scores(query))


@pytest.mark.parametrize("kernel", list(KERNELS))
def test_every_kernel_gives_the_numpy_kernels_scores(embedded, kernel: str) -> None:
    chunks, queries = embedded
    codes = int8_codes(chunks)
    reference, tested = Int8Vectors(codes, "numpy"), Int8Vectors(codes, kernel)
    for query in queries[:20]:
        np.testing.assert_array_equal(tested.scores(query), reference.scores(query))


def test_approximate_scores_are_close_to_cosines(embedded) -> None:
    chunks, queries = embedded
    vectors = Int8Vectors.quantize(chunks)
    errors = np.abs(vectors.scores(queries[0]) - chunks @ queries[0])
    assert errors.max() < 0.02


def test_a_subset_of_rows_ranks_only_those_rows(embedded) -> None:
    chunks, queries = embedded
    vectors = Int8Vectors.quantize(chunks)
    subset = np.arange(3, len(chunks), 7)
    query = queries[1]
    np.testing.assert_array_equal(vectors.scores(query, subset), vectors.scores(query)[subset])
    rows, _ = vectors.top(query, TOP_K, lambda rows: chunks[rows], rows=subset)
    expected = subset[_exact_top(chunks[subset], query, TOP_K)]
    assert set(rows.tolist()) == set(expected.tolist())


def test_rescore_reads_only_factor_times_k_exact_vectors(embedded) -> None:
    chunks, queries = embedded
    vectors = Int8Vectors.quantize(chunks)
    asked: list[np.ndarray] = []

    def exact_vectors(rows: np.ndarray) -> np.ndarray:
        asked.append(rows)
        return chunks[rows]

    rows, scores = vectors.top(queries[2], 5, exact_vectors)
    assert len(asked) == 1 and len(asked[0]) == RESCORE_FACTOR * 5
    assert len(rows) == 5 and np.all(np.diff(scores) <= 0)


def test_equal_vectors_are_ordered_by_row() -> None:
    base = _unit_rows(np.random.default_rng(3).standard_normal((50, 16)))
    matrix = np.concatenate([base, base[:1], base[:1]])  # rows 0, 50 and 51 are equal
    vectors = Int8Vectors.quantize(matrix)
    rows, _ = vectors.top(base[0], 3, lambda rows: matrix[rows])
    assert rows.tolist() == [0, 50, 51]


def test_zero_rows_and_queries_score_zero() -> None:
    matrix = np.zeros((4, 8), dtype=np.float32)
    matrix[1, 2] = 1.0
    vectors = Int8Vectors.quantize(matrix)
    assert vectors.scores(np.eye(8, dtype=np.float32)[2]).tolist() == [0.0, 1.0, 0.0, 0.0]
    assert vectors.scores(np.zeros(8, dtype=np.float32)).tolist() == [0.0] * 4


def test_an_empty_set_ranks_nothing() -> None:
    vectors = Int8Vectors(np.zeros((0, 8), dtype=np.int8))
    rows, scores = vectors.top(np.ones(8, dtype=np.float32), 3, lambda rows: np.zeros((0, 8)))
    assert len(rows) == 0 and len(scores) == 0


BAD_INPUT = [
    (lambda: int8_codes(np.ones(8)), "vectors must be a 2-D numeric array"),
    (lambda: int8_codes(np.array([[1.0, 0.0], [np.nan, 1.0]])), r"NaN or infinity \(row 1"),
    (lambda: int8_codes(np.array([[np.inf, 0.0]])), r"NaN or infinity \(row 0"),
    (lambda: Int8Vectors(np.ones((2, 8), dtype=np.float32)), "codes must be a 2-D int8"),
    (lambda: Int8Vectors(np.ones((2, 8), dtype=np.int8), "blas"), "kernel must be one of"),
    (lambda: Int8Vectors(np.ones((2, 8), np.int8)).scores(np.ones(5)), "has 5 dimensions"),
    (lambda: Int8Vectors(np.ones((2, 2), np.int8)).scores([np.nan, 1.0]), "NaN or infinity"),
    (
        lambda: rescore(np.ones(2), np.ones(3), 1, lambda rows: np.ones((len(rows), 3))),
        "exact_vectors returned shape",
    ),
    (lambda: rescore(np.ones(2), np.ones(3), 0, lambda rows: rows), "k must be at least 1"),
]


@pytest.mark.parametrize(("call", "message"), BAD_INPUT)
def test_bad_input_is_one_clear_error(call, message: str) -> None:
    with pytest.raises(ValueError, match=message) as raised:
        call()
    assert "\n" not in str(raised.value)
