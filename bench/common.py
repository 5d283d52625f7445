"""What the benchmark scripts share: where the data and model are, and the query set."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", HERE.parent.parent / "shared"))
DOCS = SHARED / "evaldata" / "docs" / "duckdb" / "docs" / "current"
MODEL = Path(
    os.environ.get("DUCKDB_VECTORS_MODEL_PATH", SHARED / "models" / "static-256-wordllama")
)
SCRIPT = shutil.which("duckdb-vectors", path=str(Path(sys.executable).parent))

# Questions about the DuckDB documentation (DOCS), as a user would type them.
QUERIES = [
    "how do I read a parquet file?",
    "window functions",
    "ATTACH a database",
    "COPY TO csv with header",
    "list_transform lambda",
    "create a table from a CSV file",
    "export to JSON",
    "install an extension",
    "string similarity functions",
    "date_trunc and date_part",
    "S3 credentials with httpfs",
    "PRAGMA database_size",
    "EXPLAIN ANALYZE profiling",
    "struct and map types",
    "pivot and unpivot",
    "sampling rows with TABLESAMPLE",
    "Python relational API",
    "regular expressions regexp_matches",
    "how much memory does DuckDB use?",
    "recursive CTE",
]


def write_json(path: Path, result: Any) -> None:
    """Write a benchmark's raw result, creating bench/out/ if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2) + "\n")
