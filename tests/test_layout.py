"""The package's layout rules, read from its source (nothing is imported): no import circles,
``config`` a leaf, and every exception class declared in ``errors.py``."""

from __future__ import annotations

import ast
import builtins
import re
from functools import cache
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "duckdb_vectors"


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


@cache
def _trees() -> dict[str, tuple[Path, ast.Module]]:
    return {
        _module_name(path): (path, ast.parse(path.read_text(), str(path)))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def _imported(module: str, path: Path, tree: ast.Module, known: set[str]) -> set[str]:
    """The package's modules that ``module`` imports anywhere in it (in functions too):
    ``from . import x`` imports the module ``x``, not the package's ``__init__``."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = package
            for _ in range(node.level - 1):
                base = base.rpartition(".")[0]
            stem = node.module or ""
            origin = f"{base}.{stem}".strip(".") if node.level else stem
            for alias in node.names:
                submodule = f"{origin}.{alias.name}"
                found.add(submodule if submodule in known else origin)
    return {name for name in found if name in known} - {module}


@cache
def _imports() -> dict[str, set[str]]:
    trees = _trees()
    return {name: _imported(name, *trees[name], set(trees)) for name in trees}


def _circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected parts of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            part = {stack.pop()}
            while node not in part:
                part.add(stack.pop())
            if len(part) > 1:
                circles.append(frozenset(part))

    for node in graph:
        if node not in index:
            visit(node)
    return circles


def test_the_package_has_no_import_circles() -> None:
    assert [sorted(circle) for circle in _circles(_imports())] == []


def test_config_is_a_leaf() -> None:
    assert _imports()["duckdb_vectors.config"] <= {"duckdb_vectors.errors"}


def test_every_exception_class_is_declared_in_errors() -> None:
    trees = _trees()
    errors = {
        node.name
        for node in ast.walk(trees["duckdb_vectors.errors"][1])
        if isinstance(node, ast.ClassDef)
    }
    exceptions = errors | {
        name
        for name, value in vars(builtins).items()
        if isinstance(value, type) and issubclass(value, BaseException)
    }
    elsewhere = [
        f"{path.relative_to(PACKAGE.parent)}: {node.name}"
        for module, (path, tree) in trees.items()
        if module != "duckdb_vectors.errors"
        for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef)
        and any(ast.unparse(base).rpartition(".")[2] in exceptions for base in node.bases)
    ]
    assert elsewhere == []


# Each table's owner: the one module that holds the statements naming it.
TABLE_OWNERS = {
    "chunks": "duckdb_vectors.index.chunk_table",
    "documents": "duckdb_vectors.index.documents",
    "manifest": "duckdb_vectors.index.manifest",
    "postings": "duckdb_vectors.index.postings",
    "terms": "duckdb_vectors.index.postings",
    "word_forms": "duckdb_vectors.index.postings",
    "vector_codes": "duckdb_vectors.index.vector_codes",
    "schema_migrations": "duckdb_vectors.index.schema",
}

# Statements that name a table outside its owner, each for a reason.
TABLE_EXCEPTIONS = {
    # Ranking in SQL is one statement over the postings and the chunks (their lengths, the
    # caller's filter): split, DuckDB could not join them.
    ("duckdb_vectors.search.answer", "chunks"): "the SQL searcher's ranking statements",
    # The view and the search macro are SQL objects over the tables, for plain DuckDB users.
    ("duckdb_vectors.index.plain_sql", "chunks"): "chunk_view and the search_text macro",
    ("duckdb_vectors.index.plain_sql", "postings"): "the search_text macro",
    ("duckdb_vectors.index.plain_sql", "terms"): "the search_text macro",
    ("duckdb_vectors.index.plain_sql", "word_forms"): "the search_text macro",
    # Migration 7 reads the language and slice keys; manifest.py imports the schema version.
    ("duckdb_vectors.index.plain_sql", "manifest"): "migration 7, below manifest.py",
    ("duckdb_vectors.index.schema", "manifest"): "migration 1, below manifest.py",
    # The chunks that have no codes yet: one anti join, not every key read into Python.
    ("duckdb_vectors.index.vector_codes", "chunks"): "the chunks to code",
    # Whether a file's chunks are all still there: one join, not a read of every source.
    ("duckdb_vectors.index.documents", "chunks"): "files whose chunks are whole, orphans",
}

_STATEMENT = re.compile(r"\b(?:FROM|JOIN|INTO|UPDATE|TABLE(?: IF (?:NOT )?EXISTS)?)\s+(\w+)\b")


def _tables_named() -> set[tuple[str, str, int]]:
    """(module, table, line) for each SQL text in the package that names an owned table."""
    return {
        (module, match.group(1), node.lineno)
        for module, (_, tree) in _trees().items()
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for match in _STATEMENT.finditer(node.value)
        if match.group(1) in TABLE_OWNERS
    }


def test_statements_on_a_table_sit_in_its_owner() -> None:
    elsewhere = sorted(
        f"{module}:{line}: {table} (owner {TABLE_OWNERS[table]})"
        for module, table, line in _tables_named()
        if module != TABLE_OWNERS[table] and (module, table) not in TABLE_EXCEPTIONS
    )
    assert elsewhere == []


def test_every_table_exception_is_still_needed() -> None:
    named = {(module, table) for module, table, _ in _tables_named()}
    assert set(TABLE_EXCEPTIONS) <= named
