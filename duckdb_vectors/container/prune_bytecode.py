"""Trim step: keep compiled bytecode only for the modules serving imports.

The runtime image runs with a read-only root file system, so Python cannot cache bytecode
there: modules it imports need their .pyc built in advance (a faster cold start), and the
.pyc of every other module is dead weight. This loads the serving path (``serving.load``:
what ``search``, ``mcp`` and a runtime append import, and the model) and deletes the bytecode
of everything else.
"""

from __future__ import annotations

import sys
from importlib.util import cache_from_source
from pathlib import Path

from duckdb_vectors.container import serving

modules = serving.load()
keep = {
    Path(cache_from_source(module.__file__)).resolve()
    for module in modules
    if getattr(module, "__file__", None) and module.__file__.endswith(".py")
}
for root in {Path(p) for p in sys.path if p.endswith("site-packages")}:
    for compiled in root.rglob("*.pyc"):
        if compiled.resolve() not in keep:
            compiled.unlink()
print(f"kept the bytecode of the {len(keep)} modules serving imports")
