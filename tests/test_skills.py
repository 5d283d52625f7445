"""`duckdb-vectors skill`: an Agent Skill for a published index, and every command it names run
as an agent would run it, against an index served over HTTP from 127.0.0.1."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import yaml
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, REPOSITORY, SCRIPT, STATIC_MODEL, run_cli
from test_plain_sql import oldest  # noqa: F401  the fixture: the duckdb CLI
from test_remote import IndexServer

from duckdb_vectors import Manifest, UrlRule, VectorStore, index_folder
from duckdb_vectors.container.labels import ImageManifest
from duckdb_vectors.index.slices import SliceCount
from duckdb_vectors.models import Example
from duckdb_vectors.skills import (
    MAX_COMPATIBILITY_CHARS,
    MAX_DESCRIPTION_CHARS,
    MAX_NAME_CHARS,
    PLACEHOLDER_CHUNK,
    PLACEHOLDER_SOURCE,
    IndexFacts,
    SkillOptions,
    SkillTarget,
    front_matter,
    render_skill,
)

BASE_URL = "https://docs.example.com/"
FENCED = re.compile(r"^```bash\n(.*?)^```", re.MULTILINE | re.DOTALL)


def commands(text: str) -> list[str]:
    """Every command line in the SKILL.md's ```bash blocks."""
    return [
        line.strip()
        for block in FENCED.findall(text)
        for line in block.splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]


def check_front_matter(text: str, folder: str) -> dict:
    """The front matter as the Agent Skills format wants it."""
    front = front_matter(text)
    assert yaml.safe_load(text.split("---\n")[1]) == front  # plain YAML between the fences
    name, description = front["name"], front["description"]
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", name) and len(name) <= MAX_NAME_CHARS
    assert name == folder  # the format: the skill's folder is named like it
    assert isinstance(description, str) and 0 < len(description) <= MAX_DESCRIPTION_CHARS
    assert len(front["compatibility"]) <= MAX_COMPATIBILITY_CHARS
    assert all(isinstance(value, str) for value in front["metadata"].values())
    return front


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Iterator[IndexServer]:
    """examples/docs indexed with their public URLs, served as site/docs.duckdb."""
    site = tmp_path_factory.mktemp("site")
    with VectorStore(site / "docs.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, REPOSITORY / "examples" / "docs", urls=UrlRule(BASE_URL))
    server = IndexServer(site)
    yield server
    server.stop()


@pytest.fixture
def agent_env(tmp_path: Path) -> dict[str, str]:
    """An agent's shell: duckdb-vectors on the PATH, its own cache, the local model."""
    assert SCRIPT is not None
    return {
        **os.environ,
        "PATH": f"{Path(SCRIPT).parent}{os.pathsep}{os.environ['PATH']}",
        "DUCKDB_VECTORS_CACHE_DIR": str(tmp_path / "agent-cache"),
        "DUCKDB_VECTORS_MODEL_PATH": str(STATIC_MODEL),
        "HF_HUB_OFFLINE": "1",
    }


@pytest.mark.slow
def test_every_command_of_a_published_index_skill_answers(
    published: IndexServer, tmp_path: Path, agent_env: dict[str, str]
) -> None:
    url = published.url("docs.duckdb")
    result = run_cli(
        "skill",
        "--db",
        url,
        "--out",
        str(tmp_path / "skills"),
        "--about",
        "the Example project's documentation",
        env={"DUCKDB_VECTORS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.stderr
    path = Path(result.stdout.strip())
    assert path == tmp_path / "skills" / "docs" / "SKILL.md"
    text = path.read_text()
    front = check_front_matter(text, path.parent.name)
    assert "the Example project's documentation" in front["description"]
    assert "9 passages from 4 documents" in front["description"]
    assert front["metadata"]["index"] == url

    lines = commands(text)
    verbs = [shlex.split(line)[1] for line in lines]
    assert sorted(set(verbs)) == ["fetch", "pull", "search"]
    assert all(line.startswith("duckdb-vectors ") for line in lines)
    for line in lines:
        ran = subprocess.run(
            line, shell=True, env=agent_env, capture_output=True, text=True, timeout=120
        )
        assert ran.returncode == 0, f"{line}\n{ran.stderr}"
        answer = json.loads(ran.stdout)
        verb = shlex.split(line)[1]
        if verb == "search":  # the example query names a page: that page answers first
            top = answer["results"][0]
            assert top["source"] == "overview.md", line
            assert top["url"] == f"{BASE_URL}overview.html" and top["title"]
        elif verb == "fetch":
            assert answer["source"] == "overview.md" and answer["url"] == f"{BASE_URL}overview.html"
            assert answer["text"].strip()
        else:
            assert answer["outcome"] in {"downloaded", "unchanged", "cached"}
    assert "--one-per-source" in lines[0] and f"--db {url}" in lines[0]


@pytest.mark.slow
def test_the_fallbacks_the_skill_describes_are_what_the_commands_say(
    published: IndexServer, tmp_path: Path
) -> None:
    """The skill quotes the stale-copy warning and the nothing-reachable error: they are the
    commands' own words, when the server is down with and without a cached copy."""
    url = published.url("docs.duckdb")
    cache = {"DUCKDB_VECTORS_CACHE_DIR": str(tmp_path / "cache")}
    text = run_cli("skill", "--db", url, "--stdout", env=cache).stdout
    search = shlex.split(commands(text)[0])[1:]
    assert run_cli(*search, env=cache).exit_code == 0  # downloads the copy
    published.mode = "fail"
    try:
        stale = run_cli(*search, env=cache | {"DUCKDB_VECTORS_MAX_AGE": "0"})
        assert stale.exit_code == 0 and json.loads(stale.stdout)["results"]
        assert re.search(r"using the cached copy checked .* ago", stale.stderr)
        assert "`using the cached copy checked ... ago`" in text
        nothing = run_cli(*search, env={"DUCKDB_VECTORS_CACHE_DIR": str(tmp_path / "empty")})
        assert nothing.exit_code == 1
        assert re.search(r"^Error: .*, and there is no cached copy", nothing.stderr)
        assert "`Error: ..., and there is no cached copy`" in text
    finally:
        published.mode = "ok"


def test_name_about_and_example_query_are_the_callers(
    published: IndexServer, tmp_path: Path
) -> None:
    url = published.url("docs.duckdb")
    result = run_cli(
        "skill",
        "--db",
        url,
        "--name",
        "example-docs",
        "--example-query",
        "retries timeouts",
        "--out",
        str(tmp_path),
        env={"DUCKDB_VECTORS_CACHE_DIR": str(tmp_path / "cache")},
    )
    assert result.exit_code == 0, result.stderr
    text = (tmp_path / "example-docs" / "SKILL.md").read_text()
    assert check_front_matter(text, "example-docs")["name"] == "example-docs"
    assert commands(text)[0].startswith(f"duckdb-vectors search 'retries timeouts' --db {url} ")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ([], "pass --db URL|FILE or --image IMAGE"),
        (["--db", "https://x.example/a.duckdb", "--image", "x"], "pass --db URL|FILE or --image"),
        (["--db", "https://x.example/a.duckdb", "--name", "Bad_Name"], "is not 1-64 lowercase"),
        (["--image", "x", "--name", "a--b"], "is not 1-64 lowercase"),
    ],
)
def test_bad_arguments_are_one_line_and_exit_2(arguments: list[str], message: str) -> None:
    result = run_cli("skill", *arguments)
    assert result.exit_code == 2
    assert message in result.stderr


def test_no_server_and_no_copy_is_one_line(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/docs.duckdb"  # the discard port: nothing listens
    result = run_cli("skill", "--db", url, env={"DUCKDB_VECTORS_CACHE_DIR": str(tmp_path)})
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "no cached copy" in result.stderr


def test_a_missing_file_is_one_line(tmp_path: Path) -> None:
    result = run_cli("skill", "--db", str(tmp_path / "nope.duckdb"))
    assert result.exit_code == 1
    assert result.stderr == (
        f"Error: {tmp_path / 'nope.duckdb'} does not exist; build an index first"
        " (duckdb-vectors index)\n"
    )


@pytest.mark.slow
def test_every_command_of_a_local_file_skill_answers_from_any_folder(
    tmp_path: Path,
    agent_env: dict[str, str],
    oldest: Path,  # noqa: F811
) -> None:
    """An index file on the agent's machine: its absolute path in every command, the example
    query a page title that finds its page (not "Documentation" or "overview"), and the plain
    duckdb CLI as the fallback."""
    index = tmp_path / "indexes" / "duckdb-docs.duckdb"
    with VectorStore(index, DEFAULT_BACKEND, model_path=STATIC_MODEL) as store:
        index_folder(store, DUCKDB_DOCS / "data", urls=UrlRule("https://duckdb.org/docs/data/"))
    result = run_cli("skill", "--db", str(index), "--stdout")
    assert result.exit_code == 0, result.stderr
    text = result.stdout
    front = check_front_matter(text, "duckdb-docs")
    assert front["metadata"]["index"] == str(index.resolve())
    lines = commands(text)
    assert {shlex.split(line)[0] for line in lines} == {"duckdb-vectors", "duckdb"}
    query, example = shlex.split(lines[0])[2], shlex.split(lines[2])[2]
    assert len(query.split()) >= 2, query
    as_json = json.loads(run_cli("skill", "--db", str(index), "--json").stdout)
    assert as_json["text"] == text and as_json["example"]["source"] == example
    assert as_json["example"]["query"] == query  # what `bake` puts in an image's labels
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = agent_env | {"PATH": f"{oldest}{os.pathsep}{agent_env['PATH']}"}
    for line in lines:
        ran = subprocess.run(
            line, shell=True, cwd=elsewhere, env=env, capture_output=True, text=True, timeout=120
        )
        assert ran.returncode == 0, f"{line}\n{ran.stderr}"
        answer = json.loads(ran.stdout)
        if line.startswith("duckdb -readonly") and "search_text" in line:
            assert example in [row["source"] for row in answer], line
        elif line.startswith("duckdb -readonly"):
            assert answer and all(row["text"] for row in answer)
        elif shlex.split(line)[1] == "search":  # the page the query names is among the first
            assert example in [hit["source"] for hit in answer["results"][:3]], line
        else:
            assert answer["source"] == example and answer["text"].strip()


OPTIONS = SkillOptions(about="the Acme manual")


def image_manifest(example: Example | None = None) -> ImageManifest:
    manifest = Manifest(
        backend=DEFAULT_BACKEND,
        dimension=256,
        tokenizer="unicode-words-v2",
        schema_version=1,
        chunk_count=120,
        content_hash="abc123",
        slice_keys=["version"],
        slices=[
            SliceCount(metadata={"version": "2.0"}, chunk_count=80),
            SliceCount(metadata={"version": "1.5"}, chunk_count=40),
        ],
        built_at=datetime(2026, 5, 4, 12, 0, tzinfo=UTC),
    )
    return ImageManifest("sha256:0123", manifest, 30, example)


def test_a_baked_image_skill_from_its_labels() -> None:
    found = image_manifest(Example(source="guide/install.md", chunk_id="c1", query="Install Acme"))
    target = SkillTarget("image", "registry.example.com/team/acme-docs:1.0")
    skill = render_skill(
        target, IndexFacts.from_image(found.manifest, found.source_count, found.example), OPTIONS
    )
    lines = commands(skill.text)
    run = "docker run --rm --network none registry.example.com/team/acme-docs:1.0"
    assert f"{run} search 'Install Acme' --json --one-per-source --max-tokens 6000" in lines
    assert f"{run} fetch guide/install.md --json --max-tokens 4000" in lines
    assert f"{run} fetch c1 --json --context 1" in lines
    assert PLACEHOLDER_SOURCE not in skill.text and PLACEHOLDER_CHUNK not in skill.text


def test_an_image_baked_without_an_example_gets_placeholders() -> None:
    found = image_manifest()
    target = SkillTarget("image", "registry.example.com/team/acme-docs:1.0")
    skill = render_skill(
        target,
        IndexFacts.from_image(found.manifest, found.source_count, found.example),
        OPTIONS,
    )
    assert skill.name == "acme-docs"  # as the image's catalog entry names it
    front = check_front_matter(skill.text, skill.name)
    assert front["description"].startswith("Search the Acme manual: 120 passages from 30 documents")
    assert "Docker-compatible engine" in front["compatibility"]
    lines = commands(skill.text)
    run = "docker run --rm --network none registry.example.com/team/acme-docs:1.0"
    assert all(line.startswith(run) or line.startswith("docker pull") for line in lines)
    assert f"{run} search overview --json --one-per-source --max-tokens 6000" in lines
    assert f"{run} fetch {PLACEHOLDER_SOURCE} --json --max-tokens 4000" in lines
    assert f"{run} fetch {PLACEHOLDER_CHUNK} --json --context 1" in lines
    assert f'{run} search overview --json --filter \'{{"version": "2.0"}}\'' in lines
    assert "Slice version=1.5: 40 chunks." in skill.text
    assert "built 2026-05-04" in skill.text and "may be outdated" in skill.text


def test_the_description_stays_within_the_format_limit() -> None:
    sources = [f"{'section-' * 20}{i}/page-{j}.md" for i in range(40) for j in range(3)]
    facts = IndexFacts(chunk_count=999, source_count=len(sources), sources=sources)
    skill = render_skill(
        SkillTarget("url", "https://example.com/x.duckdb"),
        facts,
        SkillOptions(about="a " + "very " * 40 + "long subject"),
    )
    assert len(front_matter(skill.text)["description"]) <= MAX_DESCRIPTION_CHARS
