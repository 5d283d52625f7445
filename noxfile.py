"""The test suite on each supported Python (container tests aside: `make test` runs those).

    nox                  # the whole suite on every supported Python
    nox -s tests-3.12    # the whole suite on the runtime image's Python
    nox -s smoke         # what CI runs on 3.12 (`make test` ran everything on 3.11): the fast
                         # set (`make test-fast`), then the demo end to end, as a user runs it

Model files and evaluation data come from ../shared (or DUCKDB_VECTORS_SHARED), as for
`make test`.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True
nox.options.sessions = ["tests"]

# The declared minimum (pyproject.toml's requires-python) and the runtime image's Python.
PYTHONS = ["3.11", "3.12"]
RUNTIME_PYTHON = "3.12"
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", Path(__file__).parent.parent / "shared"))
ENV = {"HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_SHARED": str(SHARED.resolve())}


def _pytest(session: nox.Session, markers: str) -> None:
    session.install("--quiet", "-e", ".[test]")
    session.run("python", "-m", "pytest", "-m", markers, *session.posargs, env=ENV)


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    # The conformance suite's Node (its node_modules are `make conformance`'s, in the checkout).
    session.install("--quiet", "-r", "tests/conformance/requirements.txt")
    _pytest(session, "not container")


@nox.session(python=RUNTIME_PYTHON)
def smoke(session: nox.Session) -> None:
    _pytest(session, "not slow and not container")
    # The console script and the SDK example on this Python, as `make demo` runs them.
    folder = Path(session.create_tmp())
    demo, quickstart = folder / "demo.duckdb", folder / "quickstart.duckdb"
    demo.unlink(missing_ok=True)
    quickstart.unlink(missing_ok=True)
    model = {"DUCKDB_VECTORS_MODEL_PATH": str(SHARED.resolve() / "models/static-256-wordllama")}
    env = {**ENV, **model}
    session.run("duckdb-vectors", "index", "examples/docs", "--db", str(demo), env=env)
    session.run("duckdb-vectors", "search", "E408", "--db", str(demo), "--top-k", "1", env=env)
    session.run("python", "examples/quickstart.py", str(quickstart), env=env)
