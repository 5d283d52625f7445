"""The test suite on each supported Python (container tests aside: `make test` runs those).

    nox                  # every session
    nox -s tests-3.12    # the runtime image's Python

Model files and evaluation data come from ../shared (or DUCKDB_VECTORS_SHARED), as for
`make test`.
"""

from __future__ import annotations

import os
from pathlib import Path

import nox

nox.options.default_venv_backend = "venv"
nox.options.reuse_existing_virtualenvs = True

# The declared minimum (pyproject.toml's requires-python) and the runtime image's Python.
PYTHONS = ["3.11", "3.12"]
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", Path(__file__).parent.parent / "shared"))


@nox.session(python=PYTHONS)
def tests(session: nox.Session) -> None:
    session.install("--quiet", "-e", ".[test]")
    session.run(
        "python",
        "-m",
        "pytest",
        "-m",
        "not container",
        *session.posargs,
        env={"HF_HUB_OFFLINE": "1", "DUCKDB_VECTORS_SHARED": str(SHARED.resolve())},
    )
