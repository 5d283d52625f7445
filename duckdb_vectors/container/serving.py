"""The serving path of a runtime image, loaded as the trim steps see it.

A baked image runs ``search``, ``mcp`` (stdio or HTTP) and, with a folder mounted, a runtime
append (``index`` of any format the chunkers read). ``load()`` imports what those need and
embeds one text with the image's own model, so the modules left in ``sys.modules`` are what
serving imports: ``prune_packages`` keeps their distributions, ``prune_bytecode`` their
bytecode. A static model is embedded without fastembed, so its image imports no onnxruntime.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import ModuleType

# Loading an index imports numpy.ma when DuckDB hands back a column with NULLs (an index
# without URLs): imported here whatever the baked index holds, so the pruned runtime (one
# layer of the image) is the same for every index, and a rebake reuses it.
import numpy.ma  # noqa: F401
import pypdf  # noqa: F401  the PDF chunker imports it on its first PDF

import duckdb_vectors.cli

# A runtime append: the indexer, its file selection and every chunker (any format).
import duckdb_vectors.indexer
import duckdb_vectors.serve.mcp_server  # noqa: F401
from duckdb_vectors import get_embedder


def load() -> list[ModuleType]:
    """Load the image's model as serving does and embed a text; every module imported."""
    get_embedder(
        os.environ["DUCKDB_VECTORS_BACKEND"], Path(os.environ["DUCKDB_VECTORS_MODEL_PATH"])
    ).embed(["warm"])
    return list(sys.modules.values())
