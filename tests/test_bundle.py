"""A docs bundle: several libraries (and versions) in one index, searched one at a time or all
together, rebuilt at the cost of what changed."""

from __future__ import annotations

import json
import shlex
import shutil
import textwrap
import time
from pathlib import Path

import anyio
import duckdb
import httpx2
import pytest
from conftest import DEFAULT_BACKEND, SCRIPT, STATIC_MODEL, http_server, run_cli
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

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


def stdio_client(db: Path) -> Client:
    """An MCP client of the server over stdio, spawned as an agent's client spawns it."""
    parameters = StdioServerParameters(
        command=SCRIPT,
        args=["mcp", "--db", str(db)],
        env={"DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL), "HF_HUB_OFFLINE": "1"},
    )
    return Client(parameters, mode="legacy", read_timeout_seconds=60)


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
        counts = [(r.summary.chunks_embedded, r.summary.chunks_reused) for r in changed.libraries]
        assert counts == [(0, 2), (0, 1), (1, 1)]  # (embedded, reused): ray 2.9, 2.10, duckdb

        # A library whose texts another one holds takes their vectors: nothing is embedded.
        bundle_file.write_text(
            BUNDLE + '  - name: ray\n    version: "2.11"\n    source: pyray/2.10\n'
        )
        (*_, copied) = index_bundle(store, Bundle.read(bundle_file)).libraries
        assert (copied.summary.chunks_added, copied.summary.chunks_embedded) == (1, 0)
        assert copied.summary.chunks_reused == 1

        bundle_file.write_text(BUNDLE.split("  - name: duckdb")[0])  # duckdb and 2.11 leave
        fewer = index_bundle(store, Bundle.read(bundle_file))
        assert fewer.chunks_pruned == 3
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
        (
            "libraries:\n  - {name: ray, version: '2.9', source: a}\n"
            "  - {name: ray, version: '2.9', source: b}\n",
            "ray@2.9 is listed twice; list each version once",
        ),
        ("libraries: [\n", "docs.yaml is not valid yaml"),
        ("libraries:\n  - {name: ray, source: a, colour: red}\n", "colour: Extra inputs"),
        (
            "libraries:\n  - {name: ray, source: a, language: klingon}\n",
            "library ray: language: Value error, language 'klingon' has no stemmer; use one of:"
            " arabic, armenian,",
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


@pytest.mark.parametrize(
    ("entry", "error"),
    [
        (
            "{name: pandas, source: missing-folder}",
            "Error: library pandas: {tmp}/missing-folder is not a folder; pass the folder to index",
        ),
        (  # a folder holding no document with text
            "{name: images, source: images}",
            "Error: library images: no document of {tmp}/images has text to index (1 seen, 1"
            " skipped or failed); point it at its docs (or change its include/exclude), or"
            " remove it from the bundle",
        ),
    ],
)
def test_a_library_that_fails_or_is_empty_refuses_the_bundle_and_leaves_the_index(
    tmp_path: Path, bundle_file: Path, entry: str, error: str
) -> None:
    db = str(tmp_path / "docs.duckdb")
    assert run_cli("index", "--bundle", str(bundle_file), "--db", db).exit_code == 0
    before = run_cli("report", "--db", db, "--json").stdout
    (tmp_path / "images").mkdir()
    (tmp_path / "images/logo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(64))
    bundle_file.write_text(BUNDLE + f"  - {entry}\n")
    refused = run_cli("index", "--bundle", str(bundle_file), "--db", db)
    assert refused.exit_code == 1
    *notes, last = refused.stderr.splitlines()  # a skipped file's note, then the one error
    assert last == error.format(tmp=tmp_path) and not any("Error" in note for note in notes)
    assert run_cli("report", "--db", db, "--json").stdout == before


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

    async def scenario() -> None:
        async with stdio_client(db) as client:
            tools = [tool.name for tool in (await client.list_tools()).tools]
            assert tools == ["search", "fetch", "report"]
            assert "several libraries" not in (client.instructions or "")

    anyio.run(scenario)


# -- three real docs trees ----------------------------------------------------------------------

DATA = Path(__file__).resolve().parent / "data"
TREES = {  # name: (version, folder), each a real project's docs (tests/data/*/SOURCE.md)
    "click": ("8.1", DATA / "click-8.1.7-docs"),
    "python": ("3.11", DATA / "python-3.11-rst"),
    "duckdb": ("1.5", DATA / "jekyll-duckdb" / "site"),
}
# A question for each library, and the page of it that answers.
ASKED = {
    "click": ("prompt for a password option", "options.rst"),
    "python": ("sort a list by a key function", "howto/sorting.rst"),
    "duckdb": ("read a parquet file", "docs/current/data/parquet/overview.md"),
}


def write_trees_bundle(path: Path, trees: dict[str, tuple[str, Path]]) -> Path:
    path.write_text(
        "libraries:\n"
        + "".join(
            f"  - {{name: {name}, version: '{version}', source: '{folder}',"
            f" description: The {name} docs}}\n"
            for name, (version, folder) in trees.items()
        )
    )
    return path


@pytest.fixture(scope="module")
def trees_index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The three trees indexed as a bundle, and click's and python's on their own beside it
    (``click.duckdb``, ``python.duckdb``)."""
    folder = tmp_path_factory.mktemp("trees")
    bundle = write_trees_bundle(folder / "docs.yaml", TREES)
    db = folder / "docs.duckdb"
    built = run_cli("index", "--bundle", str(bundle), "--db", str(db))
    assert built.exit_code == 0, built.stderr
    for name in ("click", "python"):
        alone = run_cli("index", str(TREES[name][1]), "--db", str(folder / f"{name}.duckdb"))
        assert alone.exit_code == 0, alone.stderr
    return db


@pytest.mark.slow
def test_three_real_trees_are_searched_one_library_at_a_time_and_across(
    trees_index: Path,
) -> None:
    with VectorStore(trees_index, read_only=True, model_path=STATIC_MODEL) as store:
        assert [(info.name, info.versions[0].pages) for info in listed(store.manifest)] == [
            ("click", 8),
            ("duckdb", 9),
            ("python", 5),
        ]
        for name, (question, page) in ASKED.items():
            prefix = f"{name}/{TREES[name][0]}/"
            within = store.query(question, top_k=5, filter=scope(store.manifest, name))
            assert within[0].chunk.source == prefix + page
            assert all(hit.chunk.source.startswith(prefix) for hit in within)
            across = store.query(question, top_k=10)
            assert across[0].chunk.source == prefix + page, question
            assert {hit.chunk.metadata["library"] for hit in across} <= set(TREES)
    text = run_cli("search", ASKED["python"][0], "--db", str(trees_index), "--top-k", "1")
    assert "python 3.11" in text.stdout and "howto/sorting.rst" in text.stdout


@pytest.mark.slow
def test_a_library_ranks_in_the_bundle_as_in_an_index_of_its_own(trees_index: Path) -> None:
    """BM25 counts its statistics over the libraries searched, each chunk's length against its
    own library's average: scoped to a library, the other two change nothing."""
    questions = [question for question, _ in ASKED.values()] + ["option", "sorted key"]
    for memory_index in (True, False):  # the in-memory index and SQL
        for name in ("click", "python"):
            prefix = f"{name}/{TREES[name][0]}/"
            alone_path = trees_index.with_name(f"{name}.duckdb")
            options = {"read_only": True, "memory_index": memory_index, "model_path": STATIC_MODEL}
            with (
                VectorStore(trees_index, **options) as bundle,
                VectorStore(alone_path, **options) as alone,
            ):
                for question in questions:
                    for search in ("query", "query_text"):
                        scoped = getattr(bundle, search)(question, 10, filter={"library": name})
                        own = getattr(alone, search)(question, 10)
                        assert [h.chunk.source.removeprefix(prefix) for h in scoped] == [
                            h.chunk.source for h in own
                        ], (name, question, search)
                        assert [h.score for h in scoped] == pytest.approx(
                            [h.score for h in own], rel=1e-6
                        )


@pytest.mark.slow
def test_memory_sql_and_the_macro_rank_a_bundle_alike(trees_index: Path) -> None:
    questions = ["option", "parquet file", "json decoder", "sort the list", "python decorators"]
    scopes = [None, {"library": "click"}, {"library": "python", "version": "3.11"}]
    with (
        VectorStore(trees_index, read_only=True, model_path=STATIC_MODEL) as memory,
        VectorStore(trees_index, read_only=True, memory_index=False) as sql,
    ):
        stores = (memory, sql)
        for question in questions:
            for wanted in scopes:
                by_memory = memory.query_text(question, 10, filter=wanted)
                by_sql = sql.query_text(question, 10, filter=wanted)
                assert [hit.chunk.chunk_id for hit in by_memory] == [
                    hit.chunk.chunk_id for hit in by_sql
                ], (question, wanted)
                assert [h.score for h in by_memory] == pytest.approx([h.score for h in by_sql])
                slice_sql = "NULL" if wanted is None else json.dumps(wanted).replace('"', "'")
                rows = sql.connection.execute(
                    f"SELECT chunk_id, score FROM search_text($1, k := 10, slice := {slice_sql})",
                    [question],
                ).fetchall()
                assert [chunk_id for chunk_id, _ in rows] == [h.chunk.chunk_id for h in by_sql]
                assert [score for _, score in rows] == pytest.approx([h.score for h in by_sql])
                # Only the chunks with every word, scored as with any (the same statistics).
                every = [one.query_text(question, 10, filter=wanted, match="all") for one in stores]
                assert [h.chunk.chunk_id for h in every[0]] == [h.chunk.chunk_id for h in every[1]]
                scores = {
                    h.chunk.chunk_id: h.score for h in sql.query_text(question, 200, filter=wanted)
                }
                for found in every:
                    assert [h.score for h in found] == pytest.approx(
                        [scores[h.chunk.chunk_id] for h in found]
                    )


@pytest.mark.slow
@pytest.mark.parametrize("transport", ["stdio", "http"])
def test_the_libraries_tool_lists_and_resolves_three_real_trees(
    trees_index: Path, transport: str
) -> None:
    async def scenario(client: Client) -> None:
        listing = (await client.call_tool("libraries", {})).structured_content
        assert [(info["name"], info["description"]) for info in listing["libraries"]] == [
            ("click", "The click docs"),
            ("duckdb", "The duckdb docs"),
            ("python", "The python docs"),
        ]
        for request, expected in [
            ("click 8.1", ("click", "8.1")),
            ("how do I read a parquet file in duckdb", ("duckdb", "1.5")),
            *[(question, (name, TREES[name][0])) for name, (question, _) in ASKED.items()],
        ]:
            answer = await client.call_tool("libraries", {"request": request})
            assert answer.is_error is False, answer.content[0].text
            best = answer.structured_content["resolved"][0]
            assert (best["name"], best["version"]) == expected, request
        found = await client.call_tool("search", {"query": "option", "library": "python"})
        sources = {hit["source"] for hit in found.structured_content["results"]}
        assert sources and all(source.startswith("python/3.11/") for source in sources)

    if transport == "stdio":

        async def over_stdio() -> None:
            async with stdio_client(trees_index) as client:
                await scenario(client)

        anyio.run(over_stdio)
        return
    with http_server(trees_index) as (base, _):

        async def over_http() -> None:
            http = httpx2.AsyncClient(timeout=60)
            transport = streamable_http_client(f"{base}/mcp", http_client=http)
            async with Client(transport, mode="legacy") as client:
                await scenario(client)

        anyio.run(over_http)


@pytest.mark.slow
def test_rebuilding_three_real_trees_after_one_changed_reads_and_embeds_only_it(
    tmp_path: Path,
) -> None:
    trees = {
        name: (version, Path(shutil.copytree(folder, tmp_path / name)))
        for name, (version, folder) in TREES.items()
    }
    bundle = write_trees_bundle(tmp_path / "docs.yaml", trees)
    db = str(tmp_path / "docs.duckdb")
    time.sleep(1.1)  # a file changed in the second before a run is read again by the next
    assert run_cli("index", "--bundle", str(bundle), "--db", db).exit_code == 0
    page = trees["python"][1] / "howto" / "sorting.rst"
    page.write_text(page.read_text() + "\nSorting is stable: equal keys keep their order.\n")
    again = run_cli("index", "--bundle", str(bundle), "--db", db, "--json")
    runs = {run["name"]: run["summary"] for run in json.loads(again.stdout)["libraries"]}
    assert {name: run["files_read"] for name, run in runs.items()} == {
        "click": 0,
        "python": 1,
        "duckdb": 0,
    }
    assert {name: run["chunks_embedded"] for name, run in runs.items()} == {
        "click": 0,
        "python": 1,
        "duckdb": 0,
    }
