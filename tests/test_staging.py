"""An index is rewritten beside itself and swapped in whole (duckdb_vectors.staging)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import pytest

from duckdb_vectors.errors import DuckDBVectorsError
from duckdb_vectors.index.db import connect
from duckdb_vectors.staging import Staging


def a_database(path: Path, value: str) -> Path:
    with duckdb.connect(str(path)) as connection:
        connection.execute("CREATE OR REPLACE TABLE t AS SELECT ? AS v", [value])
    return path


def value_of(path: Path) -> str:
    with connect(path, read_only=True) as connection:
        return connection.execute("SELECT v FROM t").fetchone()[0]


def test_a_published_copy_replaces_the_index_and_open_readers_keep_the_old_one(
    tmp_path: Path,
) -> None:
    index = a_database(tmp_path / "docs.duckdb", "old")
    reader = connect(index, read_only=True)  # a server holding the index open
    staging = Staging(index)
    assert staging.path.parent == index.parent and value_of(staging.path) == "old"
    a_database(staging.path, "new")
    assert value_of(index) == "old"  # readers are not locked out while the copy is written
    staging.publish()
    assert reader.execute("SELECT v FROM t").fetchone()[0] == "old"  # whole, not torn
    reader.close()
    assert value_of(index) == "new"  # what the next reader opens
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]
    assert not staging.active


def test_a_discarded_copy_leaves_the_index_as_it_was(tmp_path: Path) -> None:
    index = a_database(tmp_path / "docs.duckdb", "old")
    before = index.read_bytes()
    staging = Staging(index)
    a_database(staging.path, "half-made")
    staging.discard()
    assert index.read_bytes() == before
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def test_a_new_index_appears_only_when_published(tmp_path: Path) -> None:
    index = tmp_path / "new.duckdb"
    staging = Staging(index)
    assert not staging.path.exists()
    a_database(staging.path, "first")
    assert not index.exists()
    staging.publish()
    assert value_of(index) == "first"


def test_a_new_index_in_a_new_folder(tmp_path: Path) -> None:
    staging = Staging(tmp_path / "index" / "docs.duckdb")
    a_database(staging.path, "first")
    staging.publish()
    assert value_of(tmp_path / "index" / "docs.duckdb") == "first"


def test_an_unpublished_new_index_leaves_nothing(tmp_path: Path) -> None:
    staging = Staging(tmp_path / "new.duckdb")
    a_database(staging.path, "half-made")
    staging.discard()
    assert list(tmp_path.iterdir()) == []


def test_copies_of_a_killed_run_are_removed_by_the_next(tmp_path: Path) -> None:
    index = a_database(tmp_path / "docs.duckdb", "old")
    for leftover in ("docs.duckdb.staging-99999", "docs.duckdb.staging-99999.wal"):
        (tmp_path / leftover).write_bytes(b"left by kill -9")
    Staging(index).discard()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def test_a_copy_that_was_not_checkpointed_is_not_published(tmp_path: Path) -> None:
    index = a_database(tmp_path / "docs.duckdb", "old")
    staging = Staging(index)
    (tmp_path / f"{staging.path.name}.wal").write_bytes(b"a log nobody folded in")
    with pytest.raises(DuckDBVectorsError, match="not checkpointed"):
        staging.publish()
    assert value_of(index) == "old"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def test_an_index_another_process_writes_is_not_copied(tmp_path: Path) -> None:
    index = a_database(tmp_path / "docs.duckdb", "old")
    writer = subprocess.Popen(
        [sys.executable, "-c", _HOLD.format(path=str(index), read_only=False)],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert writer.stdout is not None and writer.stdout.readline().strip() == "open"
        with pytest.raises(DuckDBVectorsError, match="is locked: another process"):
            Staging(index)
    finally:
        writer.kill()
        writer.wait()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["docs.duckdb"]


def test_writers_take_turns(tmp_path: Path) -> None:
    index = a_database(tmp_path / "docs.duckdb", "0")
    first = Staging(index)
    second = subprocess.Popen(
        [sys.executable, "-c", _STAGE_AND_PUBLISH.format(path=str(index))],
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert second.stderr is not None
        assert "waiting for another run writing an index" in second.stderr.readline()
        a_database(first.path, "first")
        first.publish()
        assert second.wait(timeout=60) == 0
    finally:
        second.kill()
    assert value_of(index) == "first+second"  # the second started from the first's result


_HOLD = textwrap.dedent(
    """
    import duckdb, time
    connection = duckdb.connect({path!r}, read_only={read_only})
    print("open", flush=True)
    time.sleep(60)
    """
)
_STAGE_AND_PUBLISH = textwrap.dedent(
    """
    import duckdb
    from duckdb_vectors.staging import Staging
    staging = Staging({path!r})
    with duckdb.connect(str(staging.path)) as connection:
        connection.execute("UPDATE t SET v = v || '+second'")
    staging.publish()
    """
)
