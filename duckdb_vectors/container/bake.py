"""``bake``: a SOURCE of documents in, a verified, labelled index image out.

A folder is sent in the build context. Any other SOURCE (a ``git+https://`` URL, a site) is
handed to the index stage as its ``SOURCE`` build argument and fetched there, at build time;
the runtime image runs with no network, as always.

1. check the inputs on the host, so bad input fails at once with one line, not in a build
   (a previous image, too: whether its index can be the start, see ``previous``);
2. build Dockerfile.runtime from the context ``context`` assembles (its index stage from the
   previous image's index, if there is one that can be);
3. label the image (a build ``FROM`` it, no layer changes) with its manifest
   (``io.duckdb-vectors.*``) and the server entry its own MCP server describes, started as
   the Docker MCP Gateway starts it (``io.docker.server.metadata``, see ``catalog``);
4. verify it as an agent uses it: a hardened search, and MCP with no command;
5. only then tag it (and write the catalog entry). Whatever fails, nothing is left tagged
   and the images this bake made are removed.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import NamedTuple
from urllib.parse import urlsplit

import docker
import yaml
from docker.errors import APIError, ImageNotFound
from pydantic import BaseModel, Field

from ..bundle import Bundle, BundleSummary
from ..citations import UrlRule
from ..config import DEFAULT_BACKEND, DEFAULT_BASE_IMAGE, Settings
from ..embedders import fingerprint_directory
from ..errors import BakeError, BakeInputError, BundleError, DuckDBVectorsError
from ..index.manifest import Manifest
from ..index.terms import checked_language
from ..indexer import FileProblem, IndexSummary, first_indexable_file
from ..models import Example, IndexReport
from ..progress import StatusLine
from ..sources import kind_of
from ..sources.folder import FolderSource
from . import engine, previous
from .catalog import SERVER_METADATA_LABEL, as_yaml, server_entry, write_catalog_entry
from .context import RUNTIME_DOCKERFILE, dockerfile_context, write_context
from .labels import manifest_from_labels, manifest_labels

BUNDLE_IN_CONTEXT = "docs.yaml"  # a bundle's file, beside its folders in the docs folder
MANIFEST_IN_IMAGE = "/app/manifest.json"
INDEX_SUMMARY_IN_IMAGE = "/app/index-summary.json"
INDEX_IN_IMAGE = "/app/vectors.duckdb"  # Dockerfile.runtime's DUCKDB_VECTORS_DB_PATH
_NAME_PART = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_IMAGE_REFERENCE = re.compile(
    rf"(?:[a-zA-Z0-9.-]+(?::[0-9]+)?/)?{_NAME_PART}(?:/{_NAME_PART})*(?::\w[\w.-]{{0,127}})?"
)


class BakeSummary(BaseModel):
    """What ``bake`` made (the ``bake --json`` shape)."""

    tag: str
    image_id: str
    source: str = Field(description="The SOURCE baked, without credentials.")
    commit: str | None = Field(None, description="A git SOURCE: the commit that was indexed.")
    size_bytes: int | None = Field(description="The image's size as the engine reports it.")
    base_image: str
    overhead_bytes: int | None = Field(description="Size over the base image.")
    backend: str
    dimension: int
    chunk_count: int
    source_count: int
    content_hash: str
    skipped: list[FileProblem] = Field(description="Files the index stage did not index.")
    failed: list[FileProblem]
    chunks_embedded: int = Field(0, description="Chunks whose vectors the index stage computed.")
    chunks_reused: int = Field(
        0,
        description="Chunks whose vectors it did not compute: kept from the previous image's"
        " index (--from-image), or taken from a chunk of the same text (index --json's"
        " chunks_reused).",
    )
    from_image: str | None = Field(
        None,
        description="The id of the --from-image image whose index the index stage started"
        " from; None without one, or when its vectors could not be reused (stderr said why).",
    )
    build_seconds: float
    verified: bool
    cold_search_seconds: float | None = Field(
        description="A hardened `docker run IMAGE search` from start to exit; None unverified."
    )
    labels: dict[str, str]
    catalog_entry: str | None = Field(
        None, description="The catalog file written (--catalog-entry), or None."
    )


def bake(
    source: str | Path | None,
    tag: str,
    *,
    bundle: str | Path | None = None,
    backend: str | None = None,
    model_path: str | Path | None = None,
    labels: dict[str, str] | None = None,
    verify: bool = True,
    base_image: str = DEFAULT_BASE_IMAGE,
    platform: str | None = None,
    no_cache: bool = False,
    network: str | None = None,
    urls: UrlRule | None = None,
    language: str | None = None,
    lexical_weight: float | None = None,
    catalog_entry: str | Path | None = None,
    from_image: str | None = None,
    status: StatusLine | None = None,
) -> BakeSummary:
    """Bake the documents of ``source`` into an image tagged ``tag``: a folder, or a SOURCE
    the build fetches (``git+https://HOST/ORG/REPO@REF#subdirectory=PATH``, a site's URL).

    ``backend`` and ``model_path`` are resolved as ``index`` resolves them; with no model
    folder the build downloads the model. ``network``: the build's network (``docker build
    --network``), e.g. ``host`` to fetch a SOURCE from a server on this machine. ``urls``,
    ``language`` and ``lexical_weight`` go to the index run (``index --base-url``,
    ``--language``, ``--lexical-weight``).
    ``catalog_entry``: a file to write the image's Docker MCP Gateway catalog entry to, once
    it is tagged. ``bundle`` (instead of ``source``): a bundle file (``bundle.Bundle``) whose
    libraries are baked together: its folders are sent in the context, its other sources
    fetched by the build. ``from_image``: an earlier image of these documents (the one
    ``tag`` names, too) whose index the build starts from, so only chunks whose text changed
    are embedded; one built with another model or index schema is said so, in one line, and
    every chunk is embedded.
    """
    settings = Settings.resolve(backend=backend, model_path=model_path)
    backend = settings.backend or DEFAULT_BACKEND
    _check_tag(tag)
    if language is not None:
        checked_language(language)  # before a build that would fail on it
    if (source is None) == (bundle is None):
        raise BakeInputError("pass a SOURCE or a bundle file (one of them)")
    if bundle is not None:
        docs, fetched = None, None
        folders, files, bundle_buildargs = bundle_context(Path(bundle))
    else:
        docs, fetched = _checked_source(str(source))
        folders, files, bundle_buildargs = {}, {}, {}
    model = _checked_model(settings.model_path)
    catalog_file = _checked_catalog_file(catalog_entry)
    status = status or StatusLine()
    client = engine.connect()
    start = _previous_index(client, from_image, backend, model, bundle is not None, status)
    started = time.monotonic()
    context = write_context(docs, model, folders, files)
    try:
        built = engine.build(
            client,
            context.archive,
            dockerfile=RUNTIME_DOCKERFILE,
            buildargs=context.buildargs
            | {"BACKEND": backend, "PYTHON_IMAGE": base_image}
            | _source_buildargs(fetched)
            | bundle_buildargs
            | _index_buildargs(urls or UrlRule(), language, lexical_weight)
            | ({"PREVIOUS_IMAGE": start.image_id} if start else {}),
            platform=platform,
            no_cache=no_cache,
            network=network,
            status=status,
            notes=previous.NOTE,
        )
    finally:
        context.close()
    made = [built]
    try:
        report = IndexReport.model_validate_json(engine.read_file(client, built, MANIFEST_IN_IMAGE))
        indexed = _index_runs(engine.read_file(client, built, INDEX_SUMMARY_IN_IMAGE))
        status.final("asking the image for its skill's example search")
        example = _skill_example(client, built)
        status.final("asking the image's MCP server for its tools (no command, stdin attached)")
        described = _mcp_describe(client, built, "the image's MCP server did not describe itself")
        entry = server_entry(tag, report, described, labels)
        all_labels = (
            manifest_labels(report, base_image, example)
            | {SERVER_METADATA_LABEL: as_yaml(entry)}
            | (labels or {})
        )
        status.final("adding the manifest as labels")
        labelled = engine.build(
            client, dockerfile_context(f"FROM {built}\n"), labels=all_labels, platform=platform
        )
        made.insert(0, labelled)
        build_seconds = time.monotonic() - started
        cold_search = None
        if verify:
            status.final("verifying: a hardened search, and MCP over stdin with no command")
            query = example.query if example and example.query else _probe_query(report)
            cold_search = verify_image(client, labelled, query)
        image = engine.tag_image(client, labelled, tag)
        if catalog_file is not None:
            write_catalog_entry(catalog_file, entry, tag)
    except BaseException:
        for image_id in made:
            engine.remove_image(client, image_id)
        raise
    size = engine.image_size(client, labelled)
    base_size = engine.image_size(client, base_image)
    manifest = report.manifest or {}
    recorded = (manifest.get("sources") or [{}])[0]
    return BakeSummary(
        tag=tag,
        image_id=image.id,
        source=recorded.get("location", fetched) if fetched else str(source or bundle),
        commit=recorded.get("commit") if bundle is None else None,
        size_bytes=size,
        base_image=base_image,
        overhead_bytes=size - base_size if size is not None and base_size is not None else None,
        backend=report.backend,
        dimension=report.dimension or 0,
        chunk_count=report.chunk_count,
        source_count=len(report.sources),
        content_hash=manifest.get("content_hash", ""),
        skipped=[problem for run in indexed for problem in run.skipped],
        failed=[problem for run in indexed for problem in run.failed],
        chunks_embedded=sum(run.chunks_embedded for run in indexed),
        chunks_reused=sum(run.chunks_reused for run in indexed),
        from_image=start.image_id if start and _started_from(start, report) else None,
        build_seconds=round(build_seconds, 3),
        verified=verify,
        cold_search_seconds=None if cold_search is None else round(cold_search, 3),
        labels=all_labels,
        catalog_entry=None if catalog_file is None else str(catalog_file),
    )


class _PreviousIndex(NamedTuple):
    image_id: str
    manifest: Manifest


def _previous_index(
    client: docker.DockerClient,
    reference: str | None,
    backend: str,
    model: Path | None,
    bundle: bool,
    status: StatusLine,
) -> _PreviousIndex | None:
    """The image ``--from-image`` names, when its index can start this bake's (judged on its
    manifest, with the model folder's hash if there is one; the build judges again with the
    model's own files); a refusal is one line on ``status``, and the bake embeds everything."""
    if reference is None:
        return None
    image_id, manifest = _checked_previous(client, reference)
    fingerprint = fingerprint_directory(model) if model is not None else None
    why = previous.refusal(manifest, backend, fingerprint, bundle)
    if why is not None:
        status.final(previous.not_reused(f"--from-image {reference}: ", why))
        return None
    return _PreviousIndex(image_id, manifest)


def _checked_previous(client: docker.DockerClient, reference: str) -> tuple[str, Manifest]:
    """The id of the image ``reference`` names and the manifest of its index, from its labels
    (a baked image) or else its /app/manifest.json (a plain ``docker build``)."""
    try:
        image = client.images.get(reference)
    except ImageNotFound:
        raise BakeInputError(
            f"--from-image {reference}: no such image in this engine; name an image baked"
            " earlier (docker images lists them), or docker pull it first"
        ) from None
    except APIError as error:
        raise BakeInputError(f"--from-image {reference}: {error.explanation}") from None
    manifest = manifest_from_labels(image.labels or {})
    if manifest is None:
        try:
            manifest = previous.manifest_in(engine.read_file(client, image.id, MANIFEST_IN_IMAGE))
        except (APIError, DuckDBVectorsError):
            manifest = None
    if manifest is None:
        raise BakeInputError(
            f"--from-image {reference} holds no duckdb-vectors index (no manifest in its labels"
            f" or at {MANIFEST_IN_IMAGE}): name an image made by bake or Dockerfile.runtime"
        )
    return image.id, manifest


def _started_from(start: _PreviousIndex, report: IndexReport) -> bool:
    """Whether the built index grew from the previous one: an index keeps the creation time
    of its first build (``manifest.refreshed``), so only then are the two equal. Read from the
    image, it holds also when the build's index stage came from the layer cache."""
    built = Manifest.model_validate(report.manifest) if report.manifest else None
    return built is not None and built.created_at == start.manifest.created_at


def verify_image(client: docker.DockerClient, image: str, query: str) -> float:
    """Check a frozen index image answers, hardened: a search returns hits, and the image
    run with no command and stdin attached serves MCP. The search's seconds, start to exit."""
    try:
        result = engine.run(client, image, ["search", query, "--top-k", "1", "--json"])
    except DuckDBVectorsError as error:
        raise BakeError(f"verification failed: {error}") from None
    if result.exit_code != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise BakeError(f"verification failed: `search` exited {result.exit_code}: {last}")
    try:
        hits = json.loads(result.stdout)["results"]
    except (ValueError, KeyError, TypeError):
        raise BakeError("verification failed: `search --json` printed no JSON") from None
    if not hits:
        raise BakeError(f"verification failed: a search for {query!r} found nothing")
    if not _mcp_describe(client, image, "verification failed").tools:
        raise BakeError("verification failed: the MCP server listed no tools")
    return result.seconds


def _mcp_describe(client: docker.DockerClient, image: str, failure: str) -> engine.McpServerAnswer:
    try:
        return engine.mcp_describe(client, image)
    except DuckDBVectorsError as error:
        raise BakeError(f"{failure}: {error}") from None


def _skill_example(client: docker.DockerClient, image: str) -> Example | None:
    """What ``skill --image`` will show: the image's own ``skill --json`` for its index (a
    title that finds its page), run in it, hardened."""
    try:
        result = engine.run(client, image, ["skill", "--db", INDEX_IN_IMAGE, "--json"])
    except DuckDBVectorsError as error:
        raise BakeError(f"the image did not describe its skill: {error}") from None
    if result.exit_code != 0:
        last = (result.stderr.strip().splitlines() or ["no output"])[-1]
        raise BakeError(f"`skill` in the image exited {result.exit_code}: {last}")
    try:
        # ``skill --json``'s documented shape (docs/json-output.md): its ``example``.
        example = json.loads(result.stdout).get("example")
        return None if example is None else Example.model_validate(example)
    except (ValueError, AttributeError):
        raise BakeError("`skill --json` in the image printed no skill") from None


def _probe_query(report: IndexReport) -> str:
    """A query that must find something: the name of the source with the most chunks."""
    source = max(report.sources, key=lambda name: report.sources[name], default="") or "index"
    words = re.split(r"[\W_]+", Path(source).stem)
    return " ".join(word for word in words if word) or source


def _check_tag(tag: str) -> None:
    if not _IMAGE_REFERENCE.fullmatch(tag):
        raise BakeInputError(
            f"--tag {tag!r} is not an image name: use lowercase letters, digits and . _ -,"
            " optionally a registry/ prefix and a :tag, e.g. my-docs or my-docs:1.0"
        )


def _checked_source(source: str) -> tuple[Path | None, str | None]:
    """The folder to send in the context, or the SOURCE the build fetches: one of a kind
    ``index`` reads, that a build can reach, and that holds no credentials (build arguments
    stay in the image's history)."""
    if kind_of(source) is FolderSource:  # a SOURCE nothing reads is one line, not a build
        return _checked_docs(Path(source)), None
    parts = urlsplit(source.removeprefix("git+"))
    if parts.scheme == "file":
        raise BakeInputError(
            f"{source}: the build cannot read this machine's files; bake a folder (a clone:"
            " git clone, then bake its folder)"
        )
    if parts.scheme in ("http", "https") and "@" in parts.netloc:
        shown = source.replace(parts.netloc, parts.netloc.rpartition("@")[2], 1)
        raise BakeInputError(
            f"{shown}: a bake takes no credentials, since build arguments stay in the image's"
            " history; bake a folder instead (a clone: git clone, then bake its folder)"
        )
    return None, source


def _index_runs(summary: str) -> list[IndexSummary]:
    """The index stage's runs: one for a SOURCE (``index --json``), one a library for a bundle
    (``index --bundle --json``)."""
    written = json.loads(summary)
    if "libraries" in written:
        return [run.summary for run in BundleSummary.model_validate(written).libraries]
    return [IndexSummary.model_validate(written)]


def bundle_context(path: Path) -> tuple[dict[str, Path], dict[str, bytes], dict[str, str]]:
    """A bundle as the index stage reads it: each folder library sent under its prefix, the
    bundle file rewritten to name them there, and the build arguments that point at it (git in
    the index stage if a library is a git repository; a new ``REFRESH`` if any is fetched)."""
    try:
        bundle = Bundle.read(path)
    except BundleError as error:
        raise BakeInputError(str(error)) from None
    folders: dict[str, Path] = {}
    fetches: list[str] = []
    libraries = []
    for entry in bundle.libraries:
        folder, fetched = _checked_source(entry.source)
        if folder is not None:
            name = entry.prefix.rstrip("/")
            folders[name] = folder
            entry = entry.model_copy(update={"source": name})
        if fetched is not None:
            fetches.append(fetched)
        libraries.append(entry.model_dump(mode="json", exclude_defaults=True))
    text = yaml.safe_dump({"libraries": libraries}, sort_keys=False, allow_unicode=True)
    buildargs = {"BUNDLE": BUNDLE_IN_CONTEXT}
    if any(source.startswith("git+") for source in fetches):
        buildargs["NEEDS_GIT"] = "1"
    if fetches:
        buildargs["REFRESH"] = str(time.time_ns())
    return folders, {BUNDLE_IN_CONTEXT: text.encode()}, buildargs


def _checked_docs(docs: Path) -> Path:
    if not docs.exists():
        raise BakeInputError(f"{docs} does not exist: pass the folder of documents to bake")
    if not docs.is_dir():
        raise BakeInputError(f"{docs} is not a folder: pass the folder of documents to bake")
    if first_indexable_file(docs) is None:
        raise BakeInputError(
            f"{docs} has nothing to index: no Markdown, PDF or text file (hidden files are"
            " left out)"
        )
    return docs


def _checked_model(model_path: Path | None) -> Path | None:
    if model_path is not None and not model_path.is_dir():
        raise BakeInputError(
            f"model folder {model_path} does not exist: fix --model-path or"
            " DUCKDB_VECTORS_MODEL_PATH, or leave both unset to download the model"
        )
    return model_path


def _checked_catalog_file(path: str | Path | None) -> Path | None:
    if path is None:
        return None
    path = Path(path)
    if path.is_dir():
        raise BakeInputError(f"--catalog-entry {path} is a folder: name the YAML file to write")
    if not path.parent.is_dir():
        raise BakeInputError(
            f"--catalog-entry {path}: folder {path.parent} does not exist; create it first"
        )
    return path


def _source_buildargs(fetched: str | None) -> dict[str, str]:
    """A SOURCE the index stage fetches, and a new ``REFRESH`` each bake: a branch moves
    without the build's cache knowing, so its index layer is never reused."""
    if fetched is None:
        return {}
    return {"SOURCE": fetched, "REFRESH": str(time.time_ns())}


def _index_buildargs(
    urls: UrlRule, language: str | None, lexical_weight: float | None
) -> dict[str, str]:
    """The index run's options (an empty value leaves its option out)."""
    return {
        "BASE_URL": urls.base_url or "",
        "URL_STYLE": urls.style,
        "LANGUAGE": language or "",
        "LEXICAL_WEIGHT": "" if lexical_weight is None else repr(lexical_weight),
    }
