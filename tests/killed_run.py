"""An index run that signals when it is midway, then slows down to be killed there.

    python killed_run.py DB FOLDER MARKER MODEL MIDWAY BACKEND

Used by the kill -9 tests (tests/conftest.py: start_killed_run). After MIDWAY files it writes
MARKER and takes a second per file, so the test's SIGKILL lands midway even on a loaded machine.
"""

import sys
import time
from pathlib import Path

from duckdb_vectors import VectorStore, index_folder
from duckdb_vectors.chunkers import default_chunker

db, folder, marker, model, midway, backend = sys.argv[1:7]
composite, seen = default_chunker(), []


class Slow:
    def chunk_bytes(self, data: bytes, source: str):
        seen.append(source)
        if len(seen) == int(midway):
            Path(marker).write_text("midway")
        if len(seen) > int(midway):
            time.sleep(1.0)
        return composite.chunk_bytes(data, source)


store = VectorStore(db, backend, model_path=model)
index_folder(store, folder, chunker=Slow())
