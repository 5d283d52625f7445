"""A docs bundle: several libraries (and versions) in one index, searched one at a time or all
together, rebuilt at the cost of what changed."""

from __future__ import annotations

import json
import shlex
import textwrap
from pathlib import Path

import anyio
import duckdb
import pytest
from conftest import DEFAULT_BACKEND, SCRIPT, STATIC_MODEL, run_cli
from mcp import Client, StdioServerParameters

from duckdb_vectors import VectorStore
from duckdb_vectors.bundle import Bundle, index_bundle
from duckdb_vectors.errors import BundleError, UnknownLibraryError
from duckdb_vectors.libraries import listed, scope

PAGES = {
    "pyray/2.9/data.md": "# Datasets\n\nRead a Parquet file into a Dataset with read_parquet.\n",
    "pyray/2.9/tune.md": "# Tune\n\nRay Tune runs hyperparameter sweeps across a cluster.\n",
    "pyray/2.10/data.md": "# Datasets\n\nRay Data streams Parquet files with read_parquet.\n",
    "ducks/sql.md": "# Parquet\n\nSELECT * FROM 'file.parquet' reads a Parquet file in DuckDB.\n",
    "ducks/json.md": "# JSON\n\nread_json_auto loads newline-delimited JSON into a table.\n",
}
BUNDLE = """\
libraries:
  - name: ray
    version: "2.9"
    source: pyray/2.9
    base_url: https://docs.ray.io/en/releases-2.9.0/
    description: Ray, a framework for distributed Python
  - name: ray
    version: "2.10"
    source: pyray/2.10
  - name: duckdb
    source: ducks
    description: DuckDB, an in-process SQL database
"""


@pytest.fixture
def bundle_file(tmp_path: Path) -> Path:
    for name, text in PAGES.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    path = tmp_path / "docs.yaml"
    path.write_text(BUNDLE)
    return path


def open_store(path: Path) -> VectorStore:
    return VectorStore(path, DEFAULT_BACKEND, model_path=STATIC_MODEL)


def test_a_bundle_indexes_each_library_as_its_own_slice(tmp_path: Path, bundle_file: Path) -> None:
    with open_store(tmp_path / "docs.duckdb") as store:
        summary = index_bundle(store, Bundle.read(bundle_file))
        assert [(run.name, run.version) for run in summary.libraries] == [
            ("ray", "2.9"),
            ("ray", "2.10"),
            ("duckdb", None),
        ]
        found = {info.name: info for info in listed(store.manifest)}
        assert found["ray"].description == "Ray, a framework for distributed Python"
        assert [(v.version, v.pages, v.chunks) for v in found["ray"].versions] == [
            ("2.9", 2, 2),
            ("2.10", 1, 1),
        ]
        assert (found["duckdb"].versions[0].pages, found["duckdb"].chunks) == (2, 2)

        ray = store.query("read a parquet file", top_k=5, filter=scope(store.manifest, "ray"))
        assert {hit.chunk.metadata["library"] for hit in ray} == {"ray"}
        pinned = scope(store.manifest, "ray", "2.10")
        (only,) = store.query("read a parquet file", top_k=5, filter=pinned)
        assert only.chunk.source == "ray/2.10/data.md"
        # Across all libraries, each hit says which one it is from, and cites its own site.
        everything = store.query("read a parquet file", top_k=5)
        assert {hit.chunk.metadata["library"] for hit in everything} == {"ray", "duckdb"}
        (tune,) = store.query("hyperparameter sweeps", top_k=1, filter=scope(store.manifest, "ray"))
        assert tune.chunk.metadata["url"] == "https://docs.ray.io/en/releases-2.9.0/tune.html"


def test_rebuilding_a_bundle_embeds_only_what_changed_and_drops_what_is_gone(
    tmp_path: Path, bundle_file: Path
) -> None:
    with open_store(tmp_path / "docs.duckdb") as store:
        index_bundle(store, Bundle.read(bundle_file))
        again = index_bundle(store, Bundle.read(bundle_file))
        assert sum(run.summary.chunks_embedded for run in again.libraries) == 0

        (tmp_path / "ducks/json.md").write_text("# JSON\n\nread_json reads JSON files.\n")
        changed = index_bundle(store, Bundle.read(bundle_file))
        embedded = {run.name: run.summary.chunks_embedded for run in changed.libraries}
        assert embedded == {"ray": 0, "duckdb": 1}

        bundle_file.write_text(BUNDLE.split("  - name: duckdb")[0])  # duckdb leaves the bundle
        fewer = index_bundle(store, Bundle.read(bundle_file))
        assert fewer.chunks_pruned == 2
        assert [info.name for info in listed(store.manifest)] == ["ray"]
        assert not any(source.startswith("duckdb/") for source in store.sources())
        assert {record.prefix for record in store.manifest.sources} == {"ray/2.9/", "ray/2.10/"}


def test_the_cli_indexes_a_bundle_and_searches_one_library(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = str(tmp_path / "docs.duckdb")
    built = run_cli("index", "--bundle", str(bundle_file), "--db", db, "--json")
    assert built.exit_code == 0, built.stderr
    names = [run["name"] for run in json.loads(built.stdout)["libraries"]]
    assert names == ["ray", "ray", "duckdb"]

    scoped = run_cli("search", "parquet file", "--db", db, "--library", "duckdb", "--json")
    assert {hit["source"].split("/")[0] for hit in json.loads(scoped.stdout)["results"]} == {
        "duckdb"
    }
    text = run_cli("search", "parquet file", "--db", db, "--top-k", "3")
    assert "1. [" in text.stdout and ("ray 2." in text.stdout or "duckdb | " in text.stdout)

    unknown = run_cli("search", "parquet", "--db", db, "--library", "pandas")
    assert unknown.exit_code == 2
    assert unknown.stderr == "Error: no library 'pandas' in this index; it holds duckdb, ray\n"
    no_version = run_cli("search", "parquet", "--db", db, "--library", "ray", "--version", "3.0")
    assert no_version.stderr == "Error: ray has no version '3.0' here; it has 2.9, 2.10\n"

    report = run_cli("report", "--db", db)
    assert "libraries   2" in report.stdout and "ray 2.10 (1 pages)" in report.stdout

    # Plain DuckDB scopes the same way, by the slice.
    with duckdb.connect(db, read_only=True) as connection:
        rows = connection.execute(
            "SELECT source FROM search_text('parquet', k := 5, slice := {'library': 'duckdb'})"
        ).fetchall()
    assert rows and all(source.startswith("duckdb/") for (source,) in rows)


def test_an_index_without_libraries_says_so_when_a_library_is_asked(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs/a.md").write_text("# A\n\nSome text about parquet.\n")
    db = str(tmp_path / "plain.duckdb")
    assert run_cli("index", str(tmp_path / "docs"), "--db", db).exit_code == 0
    with (
        pytest.raises(UnknownLibraryError, match="holds no libraries"),
        VectorStore(db, read_only=True) as store,
    ):
        scope(store.manifest, "ray")


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("libraries: []\n", "docs.yaml: libraries: List should have at least 1 item"),
        ("libraries:\n  - name: Ray\n    source: x\n", "library Ray: name: Value error, must be"),
        ("libraries:\n  - name: ray\n", "library ray: source: Field required"),
        # Found by fuzzing (tests/fuzz, target bundle): the name's newline broke the line.
        ("libraries:\n  - {name: du\n\n rb, source: x}\n", "library 'du\\nrb': name: Value"),
        (
            "libraries:\n  - {name: ray, source: a}\n  - {name: ray, source: b}\n",
            "ray is listed twice",
        ),
        (
            "libraries:\n  - {name: ray, version: '1', source: a}\n  - {name: ray, source: b}\n",
            "ray is listed with and without a version",
        ),
        ("libraries: [\n", "docs.yaml is not valid yaml"),
        ("libraries:\n  - {name: ray, source: a, colour: red}\n", "colour: Extra inputs"),
        (
            "libraries:\n  - {name: ray, source: a, language: german}\n",
            "library ray: language is the whole index's (index --bundle ... --language NAME)",
        ),
    ],
)
def test_a_bad_bundle_file_is_one_line_naming_it(tmp_path: Path, text: str, error: str) -> None:
    path = tmp_path / "docs.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(BundleError) as raised:
        Bundle.read(path)
    assert error in str(raised.value) and "\n" not in str(raised.value)
    result = run_cli("index", "--bundle", str(path), "--db", str(tmp_path / "x.duckdb"))
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert not (tmp_path / "x.duckdb").exists()


def test_a_library_that_fails_names_itself_and_leaves_the_index_as_it_was(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = str(tmp_path / "docs.duckdb")
    assert run_cli("index", "--bundle", str(bundle_file), "--db", db).exit_code == 0
    before = run_cli("report", "--db", db, "--json").stdout
    bundle_file.write_text(BUNDLE + "  - name: pandas\n    source: missing-folder\n")
    failed = run_cli("index", "--bundle", str(bundle_file), "--db", db)
    assert failed.exit_code == 1
    assert failed.stderr.startswith("Error: library pandas: ") and "missing-folder" in failed.stderr
    assert (
        json.loads(run_cli("report", "--db", db, "--json").stdout)["manifest"]
        == json.loads(before)["manifest"]
    )


def test_a_bundle_may_be_toml(tmp_path: Path, bundle_file: Path) -> None:
    toml = tmp_path / "docs.toml"
    toml.write_text('[[libraries]]\nname = "duckdb"\nsource = "ducks"\n')
    (entry,) = Bundle.read(toml).libraries
    assert (entry.name, entry.source) == ("duckdb", str(tmp_path / "ducks"))


def test_an_agent_picks_a_library_then_searches_and_fetches_in_it(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = tmp_path / "docs.duckdb"
    with open_store(db) as store:
        index_bundle(store, Bundle.read(bundle_file))
    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp"],
        env={
            "DUCKDB_VECTORS_DB_PATH": str(db),
            "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
            "HF_HUB_OFFLINE": "1",
        },
    )

    async def call(client: Client, tool: str, **arguments: object) -> dict:
        result = await client.call_tool(tool, arguments)
        assert result.is_error is False, result.content[0].text
        return result.structured_content

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            assert "several libraries (duckdb, ray)" in (client.instructions or "")
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["libraries", "search", "fetch", "report"]

            listing = await call(client, "libraries")
            assert [info["name"] for info in listing["libraries"]] == ["duckdb", "ray"]
            for request, expected in [
                ("how do I read a parquet file in duckdb", ("duckdb", None)),
                ("ray v2.10", ("ray", "2.10")),
                ("hyperparameter sweeps", ("ray", "2.9")),  # by its docs alone
            ]:
                resolved = (await call(client, "libraries", request=request))["resolved"]
                assert (resolved[0]["name"], resolved[0]["version"]) == expected, request

            found = await call(
                client, "search", query="read parquet", library="ray", version="2.10"
            )
            assert [hit["source"] for hit in found["results"]] == ["ray/2.10/data.md"]
            page = await call(client, "fetch", id="data.md", library="ray", version="2.9")
            assert "Read a Parquet file into a Dataset" in page["text"]

            wrong = await client.call_tool("search", {"query": "x", "library": "pandas"})
            assert wrong.is_error is True
            assert wrong.content[0].text.endswith(
                ": no library 'pandas' in this index; it holds duckdb, ray"
            )
            ambiguous = await client.call_tool("fetch", {"id": "data.md", "library": "ray"})
            assert "ray has versions 2.9, 2.10: pass version too" in ambiguous.content[0].text

    anyio.run(scenario)


def test_the_skill_of_a_bundle_index_lists_its_libraries_and_how_to_search_one(
    tmp_path: Path, bundle_file: Path
) -> None:
    db = tmp_path / "docs.duckdb"
    assert run_cli("index", "--bundle", str(bundle_file), "--db", str(db)).exit_code == 0
    skill = run_cli("skill", "--db", str(db), "--stdout")
    assert skill.exit_code == 0, skill.stderr
    text = skill.stdout
    assert "- Library `ray` (versions 2.9, 2.10), 3 chunks: Ray, a framework" in text
    assert "- Library `duckdb`, 2 chunks: DuckDB, an in-process SQL database." in text
    assert "Slice " not in text  # the libraries say it, not their slices
    (command,) = [line for line in text.splitlines() if "--library duckdb" in line]
    arguments = shlex.split(command)[1:]
    found = run_cli(*arguments)
    assert found.exit_code == 0, found.stderr
    assert {hit["source"].split("/")[0] for hit in json.loads(found.stdout)["results"]} == {
        "duckdb"
    }


def test_a_bundle_image_describes_its_libraries_to_the_gateway(
    tmp_path: Path, bundle_file: Path
) -> None:
    # The catalog entry is made from the index's report and the image's MCP answer; here the
    # server's answer is what the image's own server sends (its tools are not the point).
    from duckdb_vectors.container.catalog import server_entry
    from duckdb_vectors.container.engine import McpServerAnswer

    with open_store(tmp_path / "docs.duckdb") as store:
        index_bundle(store, Bundle.read(bundle_file))
        report = store.report()
    entry = server_entry("team-docs:1.0", report, McpServerAnswer({"serverInfo": {}}, []))
    assert "the docs of 2 libraries (duckdb, ray 2.9/2.10)" in entry["description"]
    assert "Pick a library (libraries)" in entry["description"]


def test_a_bundle_bake_refuses_what_a_build_cannot_read_before_building(
    tmp_path: Path, bundle_file: Path
) -> None:
    repository = tmp_path / "repo"
    repository.mkdir()
    bundle_file.write_text(BUNDLE + f"  - name: local\n    source: git+file://{repository}\n")
    result = run_cli("bake", "--bundle", str(bundle_file), "--tag", "never-built")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"Error: git+file://{repository}: the build cannot read")
    missing = run_cli("bake", "--bundle", str(tmp_path / "none.yaml"), "--tag", "never-built")
    assert missing.exit_code == 2 and "none.yaml does not exist" in missing.stderr


def test_a_bundle_of_one_library_keeps_the_three_tools(tmp_path: Path, bundle_file: Path) -> None:
    bundle_file.write_text("libraries:\n  - {name: duckdb, source: ducks}\n")
    db = tmp_path / "docs.duckdb"
    with open_store(db) as store:
        index_bundle(store, Bundle.read(bundle_file))
    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp", "--db", str(db)],
        env={"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"},
    )

    async def scenario() -> None:
        async with Client(parameters, mode="legacy", read_timeout_seconds=60) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["search", "fetch", "report"]
            assert "several libraries" not in (client.instructions or "")

    anyio.run(scenario)
