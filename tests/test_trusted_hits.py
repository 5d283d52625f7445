"""Hits are built from the rows the index wrote without validating them again
(``models.trusted``): each must be exactly what the validating constructors made of the same
row, field by field and type by type, on both searchers (in memory and SQL), and in the JSON a
search prints."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL

from duckdb_vectors import UrlRule, VectorStore, index_folder
from duckdb_vectors.index.chunk_table import CHUNK_FIELDS, CHUNK_SELECT
from duckdb_vectors.models import Chunk, SearchResult
from duckdb_vectors.rendering import SearchOutput

QUERIES = ["release notes", "Москва столица", "数据库", "café naïve", "nothing like it at all"]


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real index whose rows hold what a hit can carry: sources and NULL sources, titles and
    NULL titles, positions, URLs, a slice key, rich and empty metadata, text in several
    scripts, and two write times."""
    root = tmp_path_factory.mktemp("trusted")
    docs = root / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "install.md").write_text(
        "# Install\n\nRelease notes: pip install duckdb-vectors, then index the docs.\n\n"
        "## Москва\n\nМосква — столица России; café naïve résumé 😀.\n",
        encoding="utf-8",
    )
    (docs / "数据库.md").write_text("# 数据库\n\n北京是首都，数据库的会社。\n", encoding="utf-8")
    db = root / "index.duckdb"
    with VectorStore(db, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, docs, urls=UrlRule("https://docs.example.com/"), metadata={"v": "2"})
        store.add_texts(
            ["Release notes without a source or title.", "Москва: no metadata at all."],
            ids=["loose:1", "loose:2"],
            metadatas=[
                {"year": 2024, "score": 0.5, "ok": True, "none": None, "tags": ["a", "ß"]},
                None,
            ],
        )
    return db


def validated(row: tuple[Any, ...], embedding: Any = None) -> Chunk:
    """The chunk of a ``CHUNK_SELECT`` row as the validating decoder made it."""
    values = dict(zip(CHUNK_FIELDS, row, strict=True))
    values["metadata"] = json.loads(values["metadata"]) if values["metadata"] else {}
    values["stamped_at"] = datetime.fromtimestamp(values["stamped_at"] / 1e6, UTC)
    if embedding is not None:
        values["embedding"] = [float(x) for x in embedding]
    return Chunk.model_validate(values)


def rows_by_id(store: VectorStore, with_embedding: bool = False) -> dict[str, Chunk]:
    """Every chunk of the index, read back by SQL and validated."""
    embedding = "embedding" if with_embedding else "NULL"
    rows = store._connection.execute(f"SELECT {CHUNK_SELECT}, {embedding} FROM chunks").fetchall()
    return {row[0]: validated(row[:-1], row[-1]) for row in rows}


def assert_same_model(built: Any, expected: Any) -> None:
    """Equal, and equal in every way a caller can see: fields in order, exact types (nested
    too), the fields counted as set, the dump and the repr."""
    assert type(built) is type(expected)
    assert list(built.__dict__) == list(expected.__dict__)
    for name, value in expected.__dict__.items():
        assert_same_value(built.__dict__[name], value)
    assert built.model_fields_set == expected.model_fields_set
    assert built.__pydantic_extra__ == expected.__pydantic_extra__
    assert built.__pydantic_private__ == expected.__pydantic_private__
    assert built == expected and repr(built) == repr(expected)
    assert built.model_dump_json() == expected.model_dump_json()


def assert_same_value(value: Any, expected: Any) -> None:
    if isinstance(expected, Chunk):
        assert_same_model(value, expected)
        return
    assert type(value) is type(expected) and value == expected
    if isinstance(expected, dict):
        for key, item in expected.items():
            assert_same_value(value[key], item)
    elif isinstance(expected, list):
        for item, expected_item in zip(value, expected, strict=True):
            assert_same_value(item, expected_item)


@pytest.mark.parametrize("memory_index", [True, False], ids=["in-memory", "sql"])
def test_every_hit_is_what_validation_made_of_its_row(index: Path, memory_index: bool) -> None:
    with VectorStore(
        index, model_path=STATIC_MODEL, read_only=True, memory_index=memory_index
    ) as store:
        expected = rows_by_id(store)
        seen: set[str] = set()
        for text in QUERIES:
            vector = store.embedder.embed_query([text])[0]
            for hits in (
                store.query(text, 10),
                store.query_vectors(vector, 10),
                store.query_text(text, 10),
                store.query(text, 10, one_per_source=True),
            ):
                again = [
                    SearchResult(
                        chunk=expected[hit.chunk.chunk_id],
                        score=hit.score,
                        vector_rank=hit.vector_rank,
                        text_rank=hit.text_rank,
                    )
                    for hit in hits
                ]
                for hit, validated_hit in zip(hits, again, strict=True):
                    assert_same_model(hit, validated_hit)
                    assert_same_value(hit.chunk, validated_hit.chunk)
                shown = SearchOutput.of(text, hits, match=hits.match).model_dump_json()
                assert shown == SearchOutput.of(text, again, match=hits.match).model_dump_json()
                seen.update(hit.chunk.chunk_id for hit in hits)
    assert seen == set(expected), "every kind of row was returned at least once"
    chunks = expected.values()
    assert {c.source is None for c in chunks} == {True, False}
    assert {c.title is None for c in chunks} == {True, False}
    assert any(str(c.metadata.get("url", "")).startswith("https://") for c in chunks)
    assert any(c.metadata == {} for c in chunks) and any(c.metadata.get("v") for c in chunks)
    assert any(c.position is not None for c in chunks) and any(not c.text.isascii() for c in chunks)


def test_a_chunk_read_with_its_embedding_is_what_validation_made(index: Path) -> None:
    with VectorStore(index, model_path=STATIC_MODEL, read_only=True) as store:
        expected = rows_by_id(store, with_embedding=True)
        chunks = store.get_vectors(list(expected), return_data=True)
        assert [chunk.chunk_id for chunk in chunks] == list(expected)
        for chunk in chunks:
            assert_same_model(chunk, expected[chunk.chunk_id])


def test_copying_a_hit_leaves_the_others_as_they_were(index: Path) -> None:
    """Trusted hits share one fields set, as ``model_construct`` lets them: a copy with
    changes must not change what the others say was set."""
    with VectorStore(index, model_path=STATIC_MODEL, read_only=True) as store:
        first, second = store.query("release notes", 2)
        chunk = first.chunk.model_copy(update={"embedding": [1.0]})
        hit = first.model_copy(update={"chunk": chunk})
        assert "embedding" in chunk.model_fields_set and hit.chunk is chunk
        assert "embedding" not in second.chunk.model_fields_set
        assert second.chunk.model_fields_set == set(CHUNK_FIELDS)
        assert first.model_fields_set == second.model_fields_set == set(SearchResult.model_fields)
