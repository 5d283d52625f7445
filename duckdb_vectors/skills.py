"""An Agent Skill for an index: a ``SKILL.md`` that tells an agent with a shell how to search a
published index (``--db URL``), an index file on the same machine (``--db FILE``) or a baked
image, and what to do when it cannot be reached.

The skill follows the Agent Skills format (agentskills.io): a folder named like the skill,
holding ``SKILL.md``: YAML front matter (``name``, ``description``, optional ``compatibility``
and ``metadata``), then Markdown. What it says about the index comes from the index itself (its
report, or an image's manifest labels); its commands are built once (``SkillTarget``), as they
are to be run, and a test runs every one of them.
"""

from __future__ import annotations

import json
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from string import Template
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, Field

from .config import DEFAULT_MAX_AGE, describe_age, is_url
from .errors import SkillError
from .index.manifest import Manifest, package_version
from .index.slices import SliceCount
from .index.terms import QUESTION_WORDS
from .libraries import listed
from .models import Example

if TYPE_CHECKING:
    from .store import VectorStore

# The Agent Skills format's limits on the front matter.
MAX_NAME_CHARS = 64  # and the name is lowercase letters, digits and single hyphens
MAX_DESCRIPTION_CHARS = 1024
MAX_COMPATIBILITY_CHARS = 500
SKILL_FILE = "SKILL.md"
NAME_PATTERN = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
TOPICS_SHOWN = 8  # groups of documents named in the description and the text
SEARCH_MAX_TOKENS = 6000  # bounds one search answer in the agent's context
FETCH_MAX_TOKENS = 4000
# Fetch ids the skill cannot know (an image's labels name no document), to take from a hit.
PLACEHOLDER_SOURCE = "SOURCE"
PLACEHOLDER_CHUNK = "CHUNK_ID"

# The example query: a title of 2 to 6 words, of one of this many documents (see ``_example``).
EXAMPLE_DOCUMENTS = 40
EXAMPLE_WORDS = range(2, 7)

Kind = Literal["url", "file", "image"]


def check_name(name: str) -> str:
    """``name`` if the Agent Skills format accepts it as a skill's name, else a SkillError."""
    if len(name) > MAX_NAME_CHARS or not NAME_PATTERN.fullmatch(name):
        raise SkillError(
            f"skill name {name!r} is not 1-{MAX_NAME_CHARS} lowercase letters, digits and"
            " single hyphens (e.g. duckdb-docs)"
        )
    return name


def slug(text: str) -> str:
    """A valid skill name made from ``text`` (a file or image name); "docs-search" if none."""
    name = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")[:MAX_NAME_CHARS].strip("-")
    return name or "docs-search"


@dataclass(frozen=True)
class SkillTarget:
    """Where the index is and how a shell runs a verb on it: ``duckdb-vectors VERB ... --db
    URL`` (or the file's absolute path), or ``docker run --rm --network none IMAGE VERB ...``
    (the image needs no network)."""

    kind: Kind
    location: str  # the index's URL, the file's absolute path, or the image reference

    def command(self, verb: str, argument: str, *options: str) -> str:
        """The shell line running ``verb argument options`` on the index."""
        rest = " ".join(shlex.quote(option) for option in options)
        if self.kind != "image":
            where = f"--db {shlex.quote(self.location)} "
            return f"duckdb-vectors {verb} {shlex.quote(argument)} {where}{rest}"
        image = shlex.quote(self.location)
        return f"docker run --rm --network none {image} {verb} {shlex.quote(argument)} {rest}"

    def default_name(self) -> str:
        if self.kind == "file":
            return slug(PurePosixPath(self.location).stem)
        if self.kind == "url":
            stem = PurePosixPath(urlsplit(self.location).path).stem
            return slug(stem or urlsplit(self.location).hostname or "")
        from .container.catalog import server_name  # the name the image's catalog entry has

        return server_name(self.location)


@dataclass(frozen=True)
class IndexFacts:
    """What the skill says about the index: from its report, or from an image's labels."""

    chunk_count: int
    source_count: int | None
    sources: list[str] = field(default_factory=list)  # empty when only labels are known
    manifest: Manifest | None = None
    example: Example | None = None

    @classmethod
    def from_store(cls, store: VectorStore) -> IndexFacts:
        """From an open index: its report, and a representative document and chunk of it."""
        report = store.report()
        manifest = Manifest.model_validate(report.manifest) if report.manifest else None
        sources = sorted(source for source in report.sources if source)
        if not sources:
            raise SkillError(f"{store.db_path} holds no documents to describe: index some first")
        by_depth = sorted(sources, key=lambda source: (len(PurePosixPath(source).parts), source))
        return cls(report.chunk_count, len(sources), sources, manifest, _example(store, by_depth))

    @classmethod
    def from_image(
        cls, manifest: Manifest, source_count: int | None, example: Example | None
    ) -> IndexFacts:
        return cls(manifest.chunk_count, source_count, [], manifest, example)

    def topics(self, limit: int = TOPICS_SHOWN) -> list[str]:
        """The largest groups of documents: folders (with their document counts) below the
        folder all sources share, and single documents by name."""
        parts = [PurePosixPath(source).parts for source in self.sources]
        while parts and all(len(p) > 1 for p in parts) and len({p[0] for p in parts}) == 1:
            parts = [p[1:] for p in parts]
        groups = Counter(p[0] + "/" if len(p) > 1 else PurePosixPath(p[0]).stem for p in parts)
        return [
            f"{group} ({count} documents)" if group.endswith("/") else group
            for group, count in groups.most_common(limit)
        ]

    def slices(self) -> list[SliceCount]:
        return list(self.manifest.slices) if self.manifest else []


@dataclass(frozen=True)
class SkillOptions:
    """What the caller may say beyond what the index says."""

    name: str | None = None
    about: str | None = None  # e.g. "the DuckDB manual"; else what the sources say
    example_query: str | None = None


class Skill(BaseModel):
    """A skill (``skill --json`` prints it)."""

    name: str
    text: str = Field(description="SKILL.md.")
    example: Example | None = Field(
        None, description="What its examples show; None for an image baked without one."
    )


def url_skill(url: str, options: SkillOptions, *, max_age: float | None = None) -> Skill:
    """The skill for the index published at ``url``, described by its report (the index is
    downloaded into the cache, or its cached copy used, as a search would)."""
    if not is_url(url):
        raise SkillError(
            f"{url} is not the http(s):// URL of a published index: publish the file first"
            " (docs/publishing.md)"
        )
    return _store_skill(SkillTarget("url", url), options, max_age)


def file_skill(path: str | Path, options: SkillOptions) -> Skill:
    """The skill for an index file on this machine, named by its absolute path (an agent's
    shell may start in any folder)."""
    return _store_skill(SkillTarget("file", str(Path(path).resolve())), options, None)


def _store_skill(target: SkillTarget, options: SkillOptions, max_age: float | None) -> Skill:
    from .store import VectorStore

    with VectorStore(target.location, read_only=True, memory_index=False, max_age=max_age) as store:
        facts = IndexFacts.from_store(store)
    return render_skill(target, facts, options)


def image_skill(image: str, options: SkillOptions) -> Skill:
    """The skill for a baked image, described by its manifest labels (runs nothing)."""
    from .container.labels import inspect_image

    found = inspect_image(image)
    facts = IndexFacts.from_image(found.manifest, found.source_count, found.example)
    return render_skill(SkillTarget("image", image), facts, options)


def render_skill(target: SkillTarget, facts: IndexFacts, options: SkillOptions) -> Skill:
    """The skill (its name and SKILL.md text) for the index at ``target``."""
    name = check_name(options.name or target.default_name())
    topics = facts.topics()
    subject = options.about or f"the {name} index"
    example = facts.example
    query = options.example_query or (example and example.query) or _name_words(example)
    source = example.source if example else PLACEHOLDER_SOURCE
    chunk = example.chunk_id if example else PLACEHOLDER_CHUNK
    front = {
        "name": name,
        "description": _description(subject, facts, topics),
        "compatibility": _compatibility(target),
        "metadata": {
            "index": target.location,
            "content-hash": facts.manifest.content_hash if facts.manifest else "",
            "generated-by": f"duckdb-vectors {package_version()} skill",
        },
    }
    search = target.command(
        "search", query, "--json", "--one-per-source", "--max-tokens", str(SEARCH_MAX_TOKENS)
    )
    fields = {
        "front_matter": yaml.safe_dump(front, sort_keys=False, allow_unicode=True, width=10**6),
        "name": name,
        "subject": subject,
        "holds": _holds(facts, topics),
        "language": _languages(facts.manifest),
        "search": search,
        "search_all": target.command("search", query, "--json", "--match", "all"),
        "slices": _slice_advice(target, facts, query),
        "fetch": target.command("fetch", source, "--json", "--max-tokens", str(FETCH_MAX_TOKENS)),
        "fetch_chunk": target.command("fetch", chunk, "--json", "--context", "1"),
        "placeholders": _placeholders(facts),
        "fallback": _fallback(target, facts, options, query),
    }
    return Skill(name=name, text=Template(_TEMPLATE).substitute(fields), example=example)


def write_skill(folder: Path, skill: Skill) -> Path:
    """Write ``skill`` as ``folder/NAME/SKILL.md`` (the format wants the folder named like the
    skill), replacing an earlier one; returns the file's path."""
    path = folder / check_name(skill.name) / SKILL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(skill.text, encoding="utf-8")
    return path


def front_matter(text: str) -> dict:
    """The YAML front matter of a SKILL.md, parsed."""
    if not text.startswith("---\n"):
        raise SkillError("SKILL.md does not start with YAML front matter (---)")
    block, _, _ = text[4:].partition("\n---\n")
    parsed = yaml.safe_load(block)
    if not isinstance(parsed, dict):
        raise SkillError("SKILL.md front matter is not a YAML mapping")
    return parsed


def _name_words(example: Example | None) -> str:
    """The words of a document's name (``guides/getting-started.md``: "getting started"), for
    an index whose headings say nothing (or an image baked before images carried an example)."""
    stem = PurePosixPath(example.source).stem if example else ""
    words = re.sub(r"[\W_]+", " ", stem).strip()
    return words if words and not words.isdigit() else "overview"


def _example(store: VectorStore, sources: list[str]) -> Example:
    """The document the examples show, its first chunk, and the example query: the first of
    ``sources`` whose title finds it first by keywords, and that title ("Reading Parquet Files",
    not "Overview", which any page has); else the first document, and no query."""
    for source in sources[:EXAMPLE_DOCUMENTS]:
        first = store.document(source)[0]
        title = (first.title or "").split(" > ")[0].strip()
        if _queryable(title):
            hits = store.query_text(title, top_k=1, one_per_source=True)
            if hits and hits[0].chunk.source == source:
                return Example(source=source, chunk_id=first.chunk_id, query=title)
    return Example(source=sources[0], chunk_id=store.document(sources[0])[0].chunk_id)


def _queryable(title: str) -> bool:
    """Whether a title makes a query: 2 to 6 words, not all of them conversational."""
    words = re.findall(r"\w+", title.lower())
    content = [word for word in words if word not in QUESTION_WORDS and len(word) > 2]
    return len(words) in EXAMPLE_WORDS and bool(content)


def _placeholders(facts: IndexFacts) -> str:
    if facts.example is not None:
        return ""
    return (
        f"\nReplace `{PLACEHOLDER_SOURCE}` with a hit's `source` and `{PLACEHOLDER_CHUNK}` with a"
        " hit's `chunk_id`.\n"
    )


def _description(subject: str, facts: IndexFacts, topics: list[str]) -> str:
    """What the skill does and when to use it, within the format's 1024 characters."""
    for shown in range(len(topics), -1, -1):
        listed = f" Covers {', '.join(topics[:shown])}." if shown else ""
        text = (
            f"Search {subject}: {facts.chunk_count} passages from"
            f" {_documents(facts)}, with hybrid keyword and meaning search, and read whole"
            f" pages to cite.{listed} Use it before answering any question about {subject},"
            " to answer from the documents and cite their pages instead of from memory."
        )
        if len(text) <= MAX_DESCRIPTION_CHARS:
            return text
    return text[: MAX_DESCRIPTION_CHARS - 1] + "…"


def _documents(facts: IndexFacts) -> str:
    return "its documents" if facts.source_count is None else f"{facts.source_count} documents"


def _compatibility(target: SkillTarget) -> str:
    if target.kind == "url":
        text = (
            "Needs a shell with the duckdb-vectors command (the Python package duckdb-vectors),"
            f" and HTTP access to {target.location} for the first download and refreshes."
        )
    elif target.kind == "file":
        text = (
            "Needs a shell with the duckdb-vectors command (the Python package duckdb-vectors)"
            f" and read access to {target.location}; without it, the duckdb command (DuckDB 1.4"
            " or later) searches the file by keywords."
        )
    else:
        text = (
            f"Needs a shell and a Docker-compatible engine with the image {target.location}"
            " (docker pull it, or bake it with duckdb-vectors bake); it runs with no network."
        )
    return text[:MAX_COMPATIBILITY_CHARS]


def _languages(manifest: Manifest | None) -> str:
    """The languages of the index's word forms: its own and its libraries'."""
    return " and ".join(manifest.languages().all) if manifest else "english"


def _holds(facts: IndexFacts, topics: list[str]) -> str:
    lines = [f"- {facts.chunk_count} passages (chunks) from {_documents(facts)}."]
    if topics:
        lines.append(f"- Documents: {', '.join(topics)}.")
    manifest = facts.manifest
    if manifest is not None:
        lines.append(
            f"- Built {manifest.built_at:%Y-%m-%d %H:%M} UTC with {manifest.backend}; word forms"
            f" in {_languages(manifest)}."
        )
    held = listed(manifest)
    for info in held:
        versions = ", ".join(v.version for v in info.versions if v.version)
        about = f": {info.description}" if info.description else ""
        versioned = f" (versions {versions})" if versions else ""
        own = manifest is not None and info.languages != [manifest.language]
        language = f" in {'/'.join(info.languages)}" if own else ""
        lines.append(f"- Library `{info.name}`{versioned}, {info.chunks} chunks{language}{about}.")
    for piece in [] if held else facts.slices():
        values = ", ".join(f"{key}={value}" for key, value in piece.metadata.items())
        lines.append(f"- Slice {values}: {piece.chunk_count} chunks.")
    return "\n".join(lines)


def _slice_advice(target: SkillTarget, facts: IndexFacts, query: str) -> str:
    held = listed(facts.manifest)
    if held:
        first = held[0]
        command = target.command("search", query, "--json", "--library", first.name)
        return (
            "\nThe index holds the docs of several libraries (listed above): search the one the"
            " question is about with `--library NAME` (and `--version V` for one version);"
            " without it, each hit names its library:\n\n"
            f"```bash\n{command}\n```\n"
        )
    slices = facts.slices()
    if not slices:
        return ""
    first = slices[0].metadata
    command = target.command("search", query, "--json", "--filter", json.dumps(first))
    keys = ", ".join(f"`{key}`" for key in first)
    return (
        f"\nThe index holds several slices ({keys}): search the one the question is about,"
        " with a filter on its values (the slices are listed above):\n\n"
        f"```bash\n{command}\n```\n"
    )


def _fallback(target: SkillTarget, facts: IndexFacts, options: SkillOptions, query: str) -> str:
    if target.kind == "image":
        built = f" (built {facts.manifest.built_at:%Y-%m-%d})" if facts.manifest else ""
        pull = f"docker pull {shlex.quote(target.location)}"
        return Template(_IMAGE_FALLBACK).substitute(image=target.location, built=built, pull=pull)
    if target.kind == "file":
        source = facts.example.source if facts.example else PLACEHOLDER_SOURCE
        return Template(_FILE_FALLBACK).substitute(
            path=target.location,
            sql_search=_sql(
                target.location,
                "SELECT title, url, source, chunk_id, score, text"
                f" FROM search_text({_sql_string(query)}, k := 5)",
            ),
            sql_fetch=_sql(
                target.location,
                f"SELECT text FROM chunk_view WHERE source = {_sql_string(source)}"
                " ORDER BY position",
            ),
        )
    return Template(_URL_FALLBACK).substitute(
        url=target.location,
        max_age=describe_age(DEFAULT_MAX_AGE),
        pull=f"duckdb-vectors pull {shlex.quote(target.location)} --json",
        text_only=target.command("search", query, "--json", "--one-per-source", "--text-only"),
    )


def _sql(path: str, statement: str) -> str:
    """The ``duckdb`` command line running ``statement`` on the file, read-only: in double
    quotes where the shell reads them as written (SQL strings are in single quotes)."""
    quoted = f'"{statement}"' if not re.search(r'["$`\\!]', statement) else shlex.quote(statement)
    return f"duckdb -readonly -json {shlex.quote(path)} -c {quoted}"


def _sql_string(value: str) -> str:
    return "'" + value.replace("'", "''") + "'"


# The SKILL.md text. $-fields are filled in by render_skill; $$ is a literal dollar.
_TEMPLATE = """\
---
${front_matter}---

# ${name}: search ${subject}

Look things up in ${subject} before answering, and answer from what you find. The index:

${holds}

## Search

```bash
${search}
```

Replace the example query with your own. Write **two to five keywords**, not a question:
leave out words like "how", "do", "the"; keep exact identifiers (function and setting names,
commands, error codes) as they are written. The index answers with hybrid search: BM25 over
the words (word forms match, in ${language}: `index` finds `indexing`) fused with vector
similarity (meaning), so short keyword queries, exact identifiers and paraphrases all work.

- `--one-per-source` lists each page once (as its best passage); leave it out to see several
  passages of one page. `--top-k 10` asks for more hits (default 5).
- When every word must appear, add `--match all` (it falls back to any word, and says so in
  `match`, when no passage has all of them):

```bash
${search_all}
```
${slices}
- No relevant hit: drop the least specific word, or try a synonym or the exact term the
  documents would use. Two or three searches are cheap (milliseconds each).

The JSON answer has `results`, best first. Each hit has `title` (the page title and heading
breadcrumb), `url` (the public page, when the index knows it), `source` (the document),
`chunk_id` and `text` (the whole passage).

## Read a page

Fetch a hit's whole document by its `source`, or a passage with its neighbours by its
`chunk_id` (`--context N` adds N passages on each side):

```bash
${fetch}
${fetch_chunk}
```
${placeholders}
A long document comes a page at a time: the JSON's `next_offset` (not null) is the
`--offset` of the next page.

## Answer

1. Lead with the direct answer in one or two sentences.
2. Quote only the lines that carry it (a signature, a setting, a constraint).
3. Cite every page you used by its title and URL: the hit's `title` and `url` (the `source`
   when `url` is null).
4. If the index does not answer the question, say so. Do not present an answer from memory
   as if it came from the documents.

${fallback}"""

_URL_FALLBACK = """\
## Cache, staleness and fallback

The index is one file published at ${url}. The first command downloads it into the cache
(`~/.cache/duckdb-vectors/indexes/`, or `$$DUCKDB_VECTORS_CACHE_DIR/indexes/`); later commands
use that copy without asking the server until it is older than ${max_age} (`--max-age`, or
`DUCKDB_VECTORS_MAX_AGE`), then ask the server again (an unchanged index is not downloaded
again). To refresh the copy now and see how old it is (`outcome`, `age_seconds`):

```bash
${pull}
```

When a command does not answer as above:

- **Stderr says `using the cached copy checked ... ago`**: the server could not be reached and
  the command answered from the cached copy. Use the answer, but tell the user it comes from a
  copy of the index last checked that long ago, which may be outdated.
- **`Error: ..., and there is no cached copy`** (the server cannot be reached, or answers
  with an error, and no copy was ever downloaded here): nothing holding the index is
  reachable. Tell the user that the documentation index at ${url} cannot be reached, and
  why (the error line); do not answer from memory as if from the documents.
- **An error loading the embedding model** (offline, with the model never downloaded): search
  by keywords alone, which needs no model:

```bash
${text_only}
```
"""

_FILE_FALLBACK = """\
## Without duckdb-vectors, and when the file cannot be read

The index is one DuckDB file, ${path}, read in place: it is as fresh as its last index run.
It is an ordinary DuckDB database, so where the duckdb-vectors command is missing, the `duckdb`
command searches it by keywords (BM25, no model) and reads its pages:

```bash
${sql_search}
${sql_fetch}
```

If a command says the file does not exist or cannot be opened, tell the user that the
documentation index at ${path} cannot be read (with the error line); do not answer from
memory as if from the documents.
"""

_IMAGE_FALLBACK = """\
## Freshness and fallback

The image ${image} holds the index${built} and the embedding model; it runs with no network
and answers from that frozen copy. A newer edition of the index is a newer image: fetch it,
when a registry is reachable, with:

```bash
${pull}
```

When a command does not answer as above:

- **`docker pull` fails but the image is on this machine**: use it, and tell the user the
  answer comes from the image built on the date above, which may be outdated.
- **`Unable to find image` and the pull fails, or no Docker engine answers**: the index cannot
  be reached. Tell the user so (with the error line); do not answer from memory as if from
  the documents.
"""
