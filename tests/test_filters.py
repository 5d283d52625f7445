"""The S3 Vectors filter language, compiled to SQL and run by DuckDB on real JSON metadata."""

from __future__ import annotations

import json

import duckdb
import pytest

from duckdb_vectors import InvalidFilterError
from duckdb_vectors.filters import compile_filter

ROWS = [
    {"genre": "drama", "year": 2020, "tags": ["a", "b"], "ok": True, "score": 4.5},
    {"genre": "comedy", "year": 2018, "tags": ["c"], "ok": False},
    {"year": "2021", "genre": ["drama", "romance"]},
    {"weird'key\"": "x", "year": 2019.0},
    {},
]


@pytest.fixture(scope="module")
def table() -> duckdb.DuckDBPyConnection:
    connection = duckdb.connect()
    connection.execute("CREATE TABLE t (id INTEGER, metadata JSON)")
    for index, row in enumerate(ROWS):
        connection.execute("INSERT INTO t VALUES (?, ?)", [index, json.dumps(row)])
    return connection


def matching(table: duckdb.DuckDBPyConnection, filter: object) -> list[int]:
    sql, parameters = compile_filter(filter)  # type: ignore[arg-type]
    return [
        r[0]
        for r in table.execute(f"SELECT id FROM t WHERE {sql} ORDER BY id", parameters).fetchall()
    ]


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({"genre": "drama"}, [0, 2]),  # a bare value is $eq; a list field matches any element
        ({"genre": {"$eq": "drama"}}, [0, 2]),
        ({"genre": {"$ne": "drama"}}, [1, 3, 4]),  # missing fields match $ne
        ({"year": {"$gt": 2019}}, [0]),  # "2021" is a string, not a number
        ({"year": {"$gte": 2019}}, [0, 3]),
        ({"year": {"$lt": 2019}}, [1]),
        ({"year": {"$lte": 2019}}, [1, 3]),
        ({"year": 2020}, [0]),
        ({"year": "2021"}, [2]),
        ({"score": {"$gt": 4}}, [0]),
        ({"tags": {"$in": ["c", "z"]}}, [1]),
        ({"tags": {"$nin": ["a"]}}, [1, 2, 3, 4]),
        ({"ok": True}, [0]),
        ({"ok": False}, [1]),
        ({"genre": {"$exists": True}}, [0, 1, 2]),
        ({"genre": {"$exists": False}}, [3, 4]),
        ({"$and": [{"genre": "drama"}, {"year": 2020}]}, [0]),
        ({"$or": [{"ok": True}, {"year": {"$lt": 2019}}]}, [0, 1]),
        ({"genre": "drama", "ok": True}, [0]),  # several keys: all must match
        ({"year": {"$gte": 2018, "$lt": 2020}}, [1, 3]),
        ({"weird'key\"": "x"}, [3]),
    ],
)
def test_operators(table, filter, expected) -> None:
    assert matching(table, filter) == expected


def test_filter_as_json_text(table) -> None:
    assert matching(table, '{"genre": "comedy"}') == [1]


@pytest.mark.parametrize(
    "value",
    ["x' OR 1=1 --", "'; DROP TABLE t; --", "drama\\' OR '1'='1", "$1", "?"],
)
def test_values_that_look_like_sql_are_only_values(table, value) -> None:
    assert matching(table, {"genre": value}) == []
    if not value.startswith("$"):  # a key starting with $ is an operator
        assert matching(table, {value: "drama"}) == []
    assert table.execute("SELECT count(*) FROM t").fetchall() == [(len(ROWS),)]


@pytest.mark.parametrize(
    ("filter", "message"),
    [
        ({}, "non-empty JSON object"),
        ([], "non-empty JSON object"),
        ({"year": {"$gt": "2020"}}, "needs a number"),
        ({"year": {"$gt": True}}, "needs a number"),
        ({"tags": {"$in": []}}, "non-empty list"),
        ({"tags": {"$in": "a"}}, "non-empty list"),
        ({"genre": {"$regex": "d.*"}}, "unknown operator"),
        ({"$not": {"genre": "x"}}, "unknown operator"),
        ({"$and": []}, "non-empty list"),
        ({"genre": {"$exists": "yes"}}, "true or false"),
        ({"genre": {"nested": 1}}, "unknown operator"),
        ({"genre": [1, 2]}, "strings, numbers or booleans"),
        ({"genre": None}, "strings, numbers or booleans"),
        ("{not json", "not valid JSON"),
        ({"genre": {}}, "empty operator object"),
        ({"year": {"$gt": float("inf")}}, "numbers must be finite"),
        ({"year": {"$lt": float("nan")}}, "numbers must be finite"),
        ({"year": 10**400}, "too large a number"),
    ],
)
def test_invalid_filters_are_clear_errors(filter, message) -> None:
    with pytest.raises(InvalidFilterError, match=message):
        compile_filter(filter)


def test_placeholders_can_follow_other_parameters(table) -> None:
    sql, parameters = compile_filter({"genre": "drama"}, parameter_offset=1)
    rows = table.execute(f"SELECT id FROM t WHERE id >= $1 AND {sql}", [1, *parameters]).fetchall()
    assert rows == [(2,)]
