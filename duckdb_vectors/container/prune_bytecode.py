"""Trim step: keep compiled bytecode only for the modules serving imports.

The runtime image runs with a read-only root file system, so Python cannot cache bytecode
there: modules it imports need their .pyc built in advance (a faster cold start), and the
.pyc of every other module is dead weight. This imports what ``search``, ``mcp`` and a
runtime append use, loads the model once, and deletes the bytecode of everything else.
"""

from __future__ import annotations

import os
import sys
from importlib.util import cache_from_source
from pathlib import Path

import pypdf  # noqa: F401

import duckdb_vectors.chunkers.pdf
import duckdb_vectors.cli
import duckdb_vectors.mcp_server  # noqa: F401
from duckdb_vectors import get_embedder

get_embedder(
    os.environ["DUCKDB_VECTORS_BACKEND"], Path(os.environ["DUCKDB_VECTORS_MODEL_PATH"])
).embed(["warm"])
keep = {
    Path(cache_from_source(module.__file__)).resolve()
    for module in list(sys.modules.values())
    if getattr(module, "__file__", None) and module.__file__.endswith(".py")
}
for root in {Path(p) for p in sys.path if p.endswith("site-packages")}:
    for compiled in root.rglob("*.pyc"):
        if compiled.resolve() not in keep:
            compiled.unlink()
print(f"kept the bytecode of the {len(keep)} modules serving imports")
