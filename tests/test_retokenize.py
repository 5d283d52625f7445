"""An index built with the exact-v1 tokenizer: re-tokenized when opened for writing (or by
``duckdb-vectors upgrade``), refused with that command when opened read-only."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import exact_v1_tokenizer
import numpy as np
import pytest

from duckdb_vectors import IndexMismatchError, VectorStore
from duckdb_vectors.index import postings
from duckdb_vectors.index.chunk_table import retokenize
from duckdb_vectors.index.db import Transaction
from duckdb_vectors.index.manifest import read_manifest, write_manifest
from duckdb_vectors.index.terms import TOKENIZER_NAME
from duckdb_vectors.rows import titled_text

SCRIPT = shutil.which("duckdb-vectors", path=str(Path(sys.executable).parent))
# Real text (Debian translations, as in test_tokenizer) in the scripts exact-v2 splits anew,
# and English that both tokenizers read alike.
CHUNKS = {
    "aide": ("aide", "AIDE는 설정 파일에서 읽은 정규표현식 규칙을 통해 데이터베이스를 만듭니다."),
    "audiolink": ("audiolink", "정보를 저장하기 위해 MySQL 데이터베이스를 사용합니다."),
    "apt-th": (None, "ค้นหาในคำบรรยายแพกเกจ"),
    "iso-lo": (None, "ປະເທດກຳປູເຈຍ"),
    "retries": ("Retries", "Failed requests are retried three times with backoff (v2.0)."),
}


def build(path: Path) -> None:
    with VectorStore(path, "hashing") as store:
        store.add_texts(
            [text for _, text in CHUNKS.values()],
            ids=list(CHUNKS),
            titles=[title for title, _ in CHUNKS.values()],
        )


def build_as_exact_v1(path: Path) -> None:
    """A real index as exact-v1 left it: built by this code, then its token counts, postings
    and manifest made again with the exact-v1 tokenizer, which is all that tokenizer wrote."""
    build(path)
    connection = duckdb.connect(str(path))
    with Transaction(connection):
        postings.clear(connection)
        keys, tokens = [], []
        for key, title, text in connection.execute(
            "SELECT key, title, text FROM chunks"
        ).fetchall():
            chunk_tokens = exact_v1_tokenizer.tokenize(titled_text(title, text))
            connection.execute(
                "UPDATE chunks SET token_count = ? WHERE key = ?", [len(chunk_tokens), key]
            )
            keys += [key] * len(chunk_tokens)
            tokens += chunk_tokens
        distinct = sorted(set(tokens))
        ids = postings.term_ids(connection, distinct)[np.searchsorted(distinct, tokens)]
        postings.insert(connection, np.asarray(keys, dtype=np.int64), ids)
        manifest = read_manifest(connection)
        assert manifest is not None
        write_manifest(connection, manifest.model_copy(update={"tokenizer": "exact-v1"}))
    connection.close()


def lexical_index(path: Path) -> tuple[set[tuple[str, str, int]], set[tuple[str, int]]]:
    """Postings as (term, chunk id, tf) and token counts as (chunk id, count)."""
    connection = duckdb.connect(str(path), read_only=True)
    layout = postings.Layout.of(connection)
    found = connection.execute(
        f"SELECT term, chunk_id, tf FROM {layout.postings} JOIN {layout.terms} USING (term_id)"
        " JOIN chunks USING (key)"
    ).fetchall()
    counts = connection.execute("SELECT chunk_id, token_count FROM chunks").fetchall()
    connection.close()
    return set(found), set(counts)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def old_index(tmp_path: Path) -> Path:
    path = tmp_path / "old.duckdb"
    build_as_exact_v1(path)
    return path


@pytest.fixture
def fresh_lexical_index(tmp_path: Path) -> tuple[set[tuple[str, str, int]], set[tuple[str, int]]]:
    """What this tokenizer writes for the same chunks in a new index."""
    build(tmp_path / "fresh.duckdb")
    return lexical_index(tmp_path / "fresh.duckdb")


@pytest.mark.slow
def test_the_simulated_old_index_differs_where_exact_v2_splits_anew(
    old_index: Path, fresh_lexical_index: tuple
) -> None:
    old_postings, counts = lexical_index(old_index)
    assert ("데이터베이스를", "aide", 1) in old_postings
    assert not any(term == "데이터베이스" for term, _, _ in old_postings)
    assert old_postings != fresh_lexical_index[0] and counts != fresh_lexical_index[1]


def test_a_read_only_open_is_refused_with_the_command_that_re_tokenizes(old_index: Path) -> None:
    before = sha256(old_index)
    with pytest.raises(IndexMismatchError) as raised:
        VectorStore(old_index, read_only=True)
    message = str(raised.value)
    assert "\n" not in message
    assert "exact-v1" in message and TOKENIZER_NAME in message
    assert f"duckdb-vectors upgrade --db {old_index}" in message
    assert sha256(old_index) == before


@pytest.mark.slow
def test_a_read_write_open_re_tokenizes_in_place(
    old_index: Path, fresh_lexical_index: tuple
) -> None:
    VectorStore(old_index).close()  # opened for writing, with no write
    with VectorStore(old_index, read_only=True) as store:
        manifest = store.manifest
        hits = [hit.chunk.chunk_id for hit in store.query_text("데이터베이스")]
        thai = [hit.chunk.chunk_id for hit in store.query_text("แพกเกจ")]
    assert manifest is not None and manifest.tokenizer == TOKENIZER_NAME
    assert sorted(hits) == ["aide", "audiolink"]
    assert thai == ["apt-th"]
    assert lexical_index(old_index) == fresh_lexical_index


def test_re_tokenizing_keeps_the_chunks_and_their_vectors(old_index: Path) -> None:
    connection = duckdb.connect(str(old_index), read_only=True)
    chunks = "SELECT chunk_id, text, title, etag, embedding FROM chunks ORDER BY chunk_id"
    before = connection.execute(chunks).fetchall()
    manifest_before = read_manifest(connection)
    connection.close()
    VectorStore(old_index).close()
    connection = duckdb.connect(str(old_index), read_only=True)
    assert connection.execute(chunks).fetchall() == before
    manifest = read_manifest(connection)
    connection.close()
    assert manifest is not None and manifest_before is not None
    assert manifest.content_hash == manifest_before.content_hash
    assert manifest.chunk_count == manifest_before.chunk_count == len(CHUNKS)


def test_chunks_are_re_tokenized_a_batch_at_a_time(
    old_index: Path, fresh_lexical_index: tuple
) -> None:
    connection = duckdb.connect(str(old_index))
    with Transaction(connection):
        retokenize(connection, 2, "'english'")  # 5 chunks: batches of 2, 2 and 1; SQL's language
    connection.close()
    assert lexical_index(old_index) == fresh_lexical_index


@pytest.mark.slow
def test_the_upgrade_command_re_tokenizes(old_index: Path, fresh_lexical_index: tuple) -> None:
    result = subprocess.run(
        [SCRIPT, "upgrade", "--db", str(old_index)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert f"tokenizer {TOKENIZER_NAME}" in result.stdout
    assert lexical_index(old_index) == fresh_lexical_index
    again = subprocess.run(
        [SCRIPT, "upgrade", "--db", str(old_index)], capture_output=True, text=True, timeout=120
    )
    assert again.returncode == 0 and lexical_index(old_index) == fresh_lexical_index


@pytest.mark.slow
def test_the_upgrade_command_on_a_missing_file_creates_nothing(tmp_path: Path) -> None:
    missing = tmp_path / "missing.duckdb"
    result = subprocess.run(
        [SCRIPT, "upgrade", "--db", str(missing)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1
    assert result.stderr.strip().count("\n") == 0 and "holds no index" in result.stderr
    assert not missing.exists()
