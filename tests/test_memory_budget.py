"""The in-memory index is loaded only if it fits the memory there is: a process killed for
memory while loading would be restarted, load again and be killed again."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, INTRO_TEXTS, STATIC_MODEL

from duckdb_vectors import VectorStore, resources

QUERIES = ["what is an embedded database", "install the python package", "zzz no such words"]


@pytest.fixture
def index(db_path: Path) -> Path:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(INTRO_TEXTS)
    return db_path


def answers(store: VectorStore) -> list[list[tuple[str, float]]]:
    return [[(hit.chunk.chunk_id, hit.score) for hit in store.query(q)] for q in QUERIES]


def test_an_index_over_the_budget_is_answered_from_sql_and_says_why(
    index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_index=False) as sql:
        expected = answers(sql)
    with (
        caplog.at_level(logging.WARNING, logger="duckdb_vectors.store"),
        VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_budget="1KB") as store,
    ):
        store.warm_up()
        assert answers(store) == expected
        assert answers(store) == expected  # said once, not per query
    warnings = [r.getMessage() for r in caplog.records if r.name == "duckdb_vectors.store"]
    assert len(warnings) == 1
    assert str(index) in warnings[0] and "answering from SQL" in warnings[0]
    assert "\n" not in warnings[0]


def test_an_index_within_the_budget_is_loaded(
    index: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_index=False) as sql:
        expected = answers(sql)
    with (
        caplog.at_level(logging.WARNING, logger="duckdb_vectors.store"),
        VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_budget="1GB") as store,
    ):
        store.warm_up()
        assert len(store._memory or []) == len(INTRO_TEXTS)  # the snapshot answers
        got = answers(store)
    assert [[key for key, _ in hits] for hits in got] == [[k for k, _ in e] for e in expected]
    assert not [r for r in caplog.records if r.name == "duckdb_vectors.store"]


def test_the_memory_available_is_what_linux_reports() -> None:
    available = resources.available_memory()
    total = next(
        int(line.split()[1]) * 1024
        for line in Path("/proc/meminfo").read_text().splitlines()
        if line.startswith("MemTotal:")
    )
    assert available is not None and 0 < available <= total


def test_a_container_limit_is_its_room_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cgroup v2 limit less what the container uses; "max" (no limit) leaves the machine's."""
    (tmp_path / "memory.max").write_text(f"{300 << 20}\n")
    (tmp_path / "memory.current").write_text(f"{100 << 20}\n")
    monkeypatch.setattr(resources, "_CGROUP_ROOT", tmp_path)
    assert resources.available_memory() == 200 << 20
    (tmp_path / "memory.max").write_text("max\n")
    assert resources.available_memory() == resources._machine_available()
