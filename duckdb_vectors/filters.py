"""Compile S3 Vectors metadata filters into parameterised DuckDB SQL.

The language (as in Amazon S3 Vectors): ``{"genre": "drama"}`` (a bare value means ``$eq``),
``{"year": {"$gte": 2020}}``, ``$eq $ne $gt $gte $lt $lte $in $nin $exists $and $or``.
Several keys in one object must all match. ``$eq``/``$in`` on a list-valued field match when
any element matches; ``$ne``/``$nin`` match when no element does, and when the field is missing.

Values never become SQL text: they are bound as parameters, and keys become escaped JSON-path
literals, so a filter cannot change the statement it is part of.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from .errors import InvalidFilterError

MAX_DEPTH = 100
_COMPARISONS = {"$gt": ">", "$gte": ">=", "$lt": "<", "$lte": "<="}
_NUMERIC_TYPES = "('BIGINT', 'UBIGINT', 'DOUBLE')"


class _Compiler:
    def __init__(self, column: str, parameter_offset: int) -> None:
        self.column = column
        self.parameter_offset = parameter_offset
        self.parameters: list[Any] = []

    def compile(self, node: Any, depth: int = 0) -> str:
        if not isinstance(node, dict) or not node:
            raise InvalidFilterError(f"a filter must be a non-empty JSON object, got {node!r:.80}")
        if depth > MAX_DEPTH:
            raise InvalidFilterError(f"filter nested deeper than {MAX_DEPTH} levels")
        clauses = [self._clause(_checked_key(key), value, depth) for key, value in node.items()]
        return clauses[0] if len(clauses) == 1 else "(" + " AND ".join(clauses) + ")"

    def _clause(self, key: str, value: Any, depth: int) -> str:
        if key in ("$and", "$or"):
            if not isinstance(value, list) or not value:
                raise InvalidFilterError(f"{key} needs a non-empty list of filters")
            joiner = " AND " if key == "$and" else " OR "
            return "(" + joiner.join(self.compile(item, depth + 1) for item in value) + ")"
        if key.startswith("$"):
            raise InvalidFilterError(f"unknown operator {key!r} at the top level; use a field name")
        if isinstance(value, dict):
            if not value:
                raise InvalidFilterError(f"field {key!r}: empty operator object")
            return (
                "(" + " AND ".join(self._operator(key, op, arg) for op, arg in value.items()) + ")"
            )
        return self._operator(key, "$eq", value)

    def _operator(self, key: str, operator: str, argument: Any) -> str:
        field = f"json_extract({self.column}, {json_path_literal(key)})"
        if operator == "$eq":
            return self._any_element(field, self._equals(key, argument))
        if operator == "$ne":
            return f"NOT coalesce({self._any_element(field, self._equals(key, argument))}, false)"
        if operator in _COMPARISONS:
            return self._any_element(field, self._compare(key, operator, argument))
        if operator in ("$in", "$nin"):
            if not isinstance(argument, list) or not argument:
                raise InvalidFilterError(f"field {key!r}: {operator} needs a non-empty list")
            tests = [self._equals(key, item) for item in argument]
            matches = self._any_element(
                field, lambda e: "(" + " OR ".join(t(e) for t in tests) + ")"
            )
            return matches if operator == "$in" else f"NOT coalesce({matches}, false)"
        if operator == "$exists":
            if not isinstance(argument, bool):
                raise InvalidFilterError(f"field {key!r}: $exists needs true or false")
            return f"({field} IS {'NOT ' if argument else ''}NULL)"
        raise InvalidFilterError(
            f"field {key!r}: unknown operator {operator!r}; "
            "use $eq $ne $gt $gte $lt $lte $in $nin $exists"
        )

    def _equals(self, key: str, value: Any) -> Callable[[str], str]:
        placeholder = self._bind(key, value)
        if isinstance(value, bool):
            return lambda e: (
                f"(json_type({e}) = 'BOOLEAN' AND TRY_CAST({e} AS BOOLEAN) = {placeholder})"
            )
        if isinstance(value, (int, float)):
            return lambda e: (
                f"(json_type({e}) IN {_NUMERIC_TYPES} AND TRY_CAST({e} AS DOUBLE) = {placeholder})"
            )
        return lambda e: f"(json_type({e}) = 'VARCHAR' AND ({e} ->> '$') = {placeholder})"

    def _compare(self, key: str, operator: str, value: Any) -> Callable[[str], str]:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise InvalidFilterError(f"field {key!r}: {operator} needs a number, got {value!r}")
        placeholder = self._bind(key, value)
        sql_operator = _COMPARISONS[operator]
        return lambda e: (
            f"(json_type({e}) IN {_NUMERIC_TYPES}"
            f" AND TRY_CAST({e} AS DOUBLE) {sql_operator} {placeholder})"
        )

    def _bind(self, key: str, value: Any) -> str:
        # Numbered ($n) so the one value can be used in both the list and the scalar branch.
        if isinstance(value, bool):
            sql_type = "BOOLEAN"
        elif isinstance(value, (int, float)):
            sql_type, value = "DOUBLE", _finite(key, value)
        elif isinstance(value, str):
            sql_type = "VARCHAR"
            _check_utf8(value, f"field {key!r}: the value")
        else:
            raise InvalidFilterError(
                f"field {key!r}: values must be strings, numbers or booleans, got {value!r}"
            )
        self.parameters.append(value)
        return f"CAST(${self.parameter_offset + len(self.parameters)} AS {sql_type})"

    @staticmethod
    def _any_element(field: str, test: Callable[[str], str]) -> str:
        return (
            f"(CASE WHEN json_type({field}) = 'ARRAY' "
            f"THEN coalesce(list_bool_or(list_transform(CAST({field} AS JSON[]), "
            f"lambda e: {test('e')})), false) "
            f"ELSE coalesce({test(field)}, false) END)"
        )


def compile_filter(
    filter: dict[str, Any] | str, column: str = "metadata", parameter_offset: int = 0
) -> tuple[str, list[Any]]:
    """Turn a filter (a dict, or its JSON text) into a SQL condition and its parameters.

    Placeholders are numbered ``$n`` from ``parameter_offset + 1``, so the condition can be
    embedded in a statement that binds ``parameter_offset`` parameters of its own first.
    """
    if isinstance(filter, str):
        try:
            filter = json.loads(filter)
        except json.JSONDecodeError as error:
            raise InvalidFilterError(f"filter is not valid JSON: {error}") from error
        except RecursionError:
            raise InvalidFilterError(f"filter nested deeper than {MAX_DEPTH} levels") from None
    compiler = _Compiler(column, parameter_offset)
    return compiler.compile(filter), compiler.parameters


def json_path_literal(key: str) -> str:
    """A SQL literal of the JSON path to the member ``key`` (any string, safely escaped)."""
    # DuckDB's JSON path takes a quoted member name with only \\ and \" escaped (json.dumps
    # would also write \uXXXX escapes, which the path does not decode).
    member = '"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return "'$." + member.replace("'", "''") + "'"


def _checked_key(key: Any) -> str:
    if not isinstance(key, str) or not key:
        raise InvalidFilterError("filter field names must be non-empty strings")
    _check_utf8(key, "a filter field name")
    return key


def _finite(key: str, value: float) -> float:
    try:
        number = float(value)
    except OverflowError:
        raise InvalidFilterError(f"field {key!r}: {value!r:.40} is too large a number") from None
    if not math.isfinite(number):
        raise InvalidFilterError(f"field {key!r}: numbers must be finite, got {value!r}")
    return number


def _check_utf8(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as error:
        raise InvalidFilterError(
            f"{what} is not valid UTF-8 (at character {error.start})"
        ) from None
