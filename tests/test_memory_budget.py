"""The in-memory index is loaded only if it fits the memory there is: a process killed for
memory while loading would be restarted, load again and be killed again."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, INTRO_TEXTS, STATIC_MODEL
from threadpoolctl import threadpool_info, threadpool_limits

from duckdb_vectors import VectorStore, resources
from duckdb_vectors.index.chunk_table import CHUNK_FIELDS
from duckdb_vectors.serve.warming import BackgroundWarmUp

QUERIES = ["what is an embedded database", "install the python package", "zzz no such words"]


@pytest.fixture
def index(db_path: Path) -> Path:
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(INTRO_TEXTS)
    return db_path


def answers(store: VectorStore) -> list[list[tuple[str, float]]]:
    return [[(hit.chunk.chunk_id, hit.score) for hit in store.query(q)] for q in QUERIES]


def keys(found: list[list[tuple[str, float]]]) -> list[list[str]]:
    return [[chunk_id for chunk_id, _ in hits] for hits in found]


@pytest.mark.slow
@pytest.mark.parametrize(("budget", "fits"), [("1KB", False), ("1GB", True)])
def test_the_in_memory_index_is_loaded_only_if_it_fits_the_budget(
    index: Path, caplog: pytest.LogCaptureFixture, budget: str, fits: bool
) -> None:
    """Over the budget, queries are answered from SQL, as a one-shot process does, and one
    warning (not one per query) names the file and what to do."""
    with VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_index=False) as sql:
        from_sql = answers(sql)
    with (
        caplog.at_level(logging.WARNING, logger="duckdb_vectors.store"),
        VectorStore(index, read_only=True, model_path=STATIC_MODEL, memory_budget=budget) as store,
    ):
        store.warm_up()
        found, found_again = answers(store), answers(store)
        held = len(store._memory or [])
    assert held == (len(INTRO_TEXTS) if fits else 0)
    assert keys(found) == keys(found_again) == keys(from_sql)
    warnings = [r.getMessage() for r in caplog.records if r.name == "duckdb_vectors.store"]
    if fits:
        assert warnings == []
    else:
        assert found == from_sql  # the very same SQL ranking
        assert len(warnings) == 1 and "\n" not in warnings[0]
        assert str(index) in warnings[0] and "answering from SQL" in warnings[0]


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
    assert resources.available_memory() > 300 << 20  # the machine's (it moves between reads)


def test_a_server_under_a_cpu_quota_runs_one_blas_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--cpus 1`: the warm-up caps numpy's BLAS at one thread, however many cores it sees."""
    with VectorStore(tmp_path / "x.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(INTRO_TEXTS)
    monkeypatch.setattr(resources, "_CGROUP_ROOT", tmp_path)
    (tmp_path / "cpu.max").write_text("100000 100000\n")
    before = threadpool_info()
    try:
        with VectorStore(tmp_path / "x.duckdb", read_only=True, model_path=STATIC_MODEL) as store:
            assert BackgroundWarmUp(store).wait() is None
        blas = {pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"}
        assert blas == {1}
    finally:
        threadpool_limits(limits=before)


def test_a_cpu_quota_caps_the_cpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`docker run --cpus` is a quota: cgroup v2's cpu.max or v1's two files; no quota (or
    "max") leaves the CPUs the process may run on."""
    monkeypatch.setattr(resources, "_CGROUP_ROOT", tmp_path)
    cpus = len(os.sched_getaffinity(0))
    assert resources.available_cpus() == cpus
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert resources.available_cpus() == cpus
    (tmp_path / "cpu.max").write_text("50000 100000\n")
    assert resources.available_cpus() == 0.5
    (tmp_path / "cpu.max").unlink()
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("-1\n")
    assert resources.available_cpus() == cpus
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("100000\n")
    assert resources.available_cpus() == min(cpus, 1.0)


def test_a_warmed_up_reader_leaves_no_blocks_cached_in_duckdb(index: Path) -> None:
    """The snapshot holds what it read: DuckDB's buffer pool gives its blocks back."""
    with VectorStore(index, read_only=True, model_path=STATIC_MODEL) as store:
        store.warm_up()
        cached = store.connection.sql(
            "SELECT sum(memory_usage_bytes) FROM duckdb_memory() WHERE tag = 'BASE_TABLE'"
        ).fetchall()[0][0]
        assert not cached
        assert keys(answers(store))[0]  # and it still answers


def test_repeating_values_of_resident_rows_are_held_once(db_path: Path) -> None:
    """A document's chunks share one held source and write time in memory."""
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        store.add_texts(INTRO_TEXTS, sources=["guide.md"] * len(INTRO_TEXTS))
    with VectorStore(db_path, read_only=True, model_path=STATIC_MODEL) as store:
        store.warm_up()
        rows = store._memory.rows  # the resident rows the hits are built from
        assert rows is not None and len(rows[0]) == len(INTRO_TEXTS) > 1
        for name in ("source", "stamped_at"):
            held = rows[CHUNK_FIELDS.index(name)]
            assert len({id(value) for value in held}) == 1, name
        assert [hit.chunk.source for hit in store.query(QUERIES[0])] == ["guide.md"] * 5
