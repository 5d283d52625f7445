"""Injectable ranking SQL: user fragments that scope candidates or re-weight the fused score.

A fragment must be one SQL *expression* over a chunk's columns (and, for re-scoring, the
fused ``score``, ``vector_rank`` and ``text_rank``). It is checked with DuckDB's own parser
before it is used: no statement separators, no comments, no subqueries (so no table
functions such as ``read_csv``), parentheses balanced so it cannot close the clause it is
placed in. The connection also runs with external access disabled, so a fragment can read
neither files nor the network, and an expression cannot write.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from functools import cache
from typing import Any

import duckdb

from ..errors import InvalidRankingSQLError
from ..index import chunk_table
from ..index.db import first_line, scalar

# The columns a fragment may name, as one typed row: binding against it checks the fragment
# without touching an index.
_PROBE_COLUMNS = "SELECT " + ", ".join(
    [f"NULL::{c.sql_type} AS {c.name}" for c in chunk_table.SCOPE_COLUMNS]
    + ["0.0::DOUBLE AS score", "0::INTEGER AS vector_rank", "0::INTEGER AS text_rank"]
)
# Scalar functions that read configuration or the environment, or change session state.
FORBIDDEN_FUNCTIONS = frozenset(
    {"current_setting", "getenv", "getvariable", "setseed", "nextval", "currval"}
)
_parser_lock = threading.Lock()


@cache
def _parser() -> duckdb.DuckDBPyConnection:
    """Parsing only: a private in-memory database, so no user fragment ever meets the index
    file. Opened on first use: most searches carry no fragment."""
    return duckdb.connect(":memory:", config={"enable_external_access": False})


def execute_user_sql(
    connection: duckdb.DuckDBPyConnection, sql: str, parameters: list[Any]
) -> duckdb.DuckDBPyConnection:
    """Run a statement holding a caller's fragment: DuckDB's error becomes one clear line."""
    try:
        return connection.execute(sql, parameters)
    except duckdb.Error as error:
        raise InvalidRankingSQLError(f"ranking SQL failed: {first_line(error)}") from error


def validate_fragment(fragment: str, argument: str) -> str:
    """Return ``fragment`` if it is a single read-only expression, else raise a clear error."""
    if not isinstance(fragment, str) or not fragment.strip():
        raise InvalidRankingSQLError(f"{argument}: expected a non-empty SQL expression")
    _check_tokens(fragment, argument)
    _check_tree(fragment, argument)
    return fragment


def _check_tokens(fragment: str, argument: str) -> None:
    try:
        fragment.encode("utf-8")
        tokens = duckdb.tokenize(fragment)
    except UnicodeEncodeError as error:
        raise InvalidRankingSQLError(
            f"{argument}: not valid UTF-8 (at character {error.start})"
        ) from None
    except Exception as error:
        raise InvalidRankingSQLError(f"{argument}: cannot parse: {first_line(error)}") from None
    depth = 0
    for index, (start, kind) in enumerate(tokens):
        end = tokens[index + 1][0] if index + 1 < len(tokens) else len(fragment)
        text = fragment[start:end].strip()
        if kind == duckdb.token_type.comment:
            raise InvalidRankingSQLError(f"{argument}: comments are not allowed")
        if kind != duckdb.token_type.operator:
            continue
        if ";" in text:
            raise InvalidRankingSQLError(f"{argument}: only one expression is allowed (found ';')")
        depth += text.count("(") - text.count(")")
        if depth < 0:
            raise InvalidRankingSQLError(f"{argument}: unbalanced parentheses")
    if depth != 0:
        raise InvalidRankingSQLError(f"{argument}: unbalanced parentheses")


def _check_tree(fragment: str, argument: str) -> None:
    statement = f"SELECT ({fragment}) FROM ({_PROBE_COLUMNS}) AS chunk"
    with _parser_lock:
        serialised = scalar(_parser(), "SELECT json_serialize_sql(?)", [statement])
    tree = json.loads(serialised) if serialised else {"error": True}
    if tree.get("error"):
        message = str(tree.get("error_message", "not a valid SQL expression")).splitlines()[0]
        raise InvalidRankingSQLError(f"{argument}: {message}")
    statements = tree.get("statements", [])
    if len(statements) != 1 or len(statements[0]["node"].get("select_list", [])) != 1:
        raise InvalidRankingSQLError(f"{argument}: must be a single expression")
    nodes = list(_nodes(statements[0]["node"]["select_list"]))
    if any(node.get("class") == "SUBQUERY" for node in nodes):
        raise InvalidRankingSQLError(f"{argument}: subqueries are not allowed")
    used = FORBIDDEN_FUNCTIONS.intersection(
        str(node["function_name"]).lower() for node in nodes if node.get("class") == "FUNCTION"
    )
    if used:
        raise InvalidRankingSQLError(f"{argument}: {sorted(used)[0]}() is not allowed")


def _nodes(node: Any) -> Iterator[dict[str, Any]]:
    """Every object (dict) of a serialised tree, ``node`` first."""
    if isinstance(node, dict):
        yield node
        for value in node.values():
            yield from _nodes(value)
    elif isinstance(node, list):
        for item in node:
            yield from _nodes(item)
