"""A rebake from a previous image (``bake --from-image``, the ``PREVIOUS_IMAGE`` build argument):
the index stage starts from that image's index, so only chunks whose text changed are embedded.

A vector depends only on the model and the text embedded (a chunk's etag), so the previous
index's vectors serve the new one when it was made with the same model (its backend, and the
hash of its files where both are known) and the same index schema. ``refusal`` owns that rule:
``bake`` asks it on the host, from the image's labels, before building; the index stage asks it
again (``main``), where the model's files are at hand. A refusal is one line, and every chunk
is embedded.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

from pydantic import ValidationError

from ..config import DEFAULT_BACKEND, Settings
from ..embedders import canonical_backend, get_embedder
from ..index.manifest import Manifest
from ..index.schema import SCHEMA_VERSION
from ..models import IndexReport

# Every line the index stage prints about the previous index starts so (bake shows them).
NOTE = "previous index (PREVIOUS_IMAGE): "


def refusal(previous: Manifest, backend: str, fingerprint: str | None, bundle: bool) -> str | None:
    """Why the vectors of the index ``previous`` describes cannot serve an index run embedding
    with ``backend``, whose model files hash to ``fingerprint`` (None: not known), over a
    bundle or one SOURCE; None when they can."""
    if canonical_backend(previous.backend) != canonical_backend(backend):
        return f"its vectors were made with {previous.backend}, this build embeds with {backend}"
    recorded = previous.model_fingerprint
    if recorded and fingerprint and recorded != fingerprint:
        return (
            f"its vectors were made with other model files for {backend} (fingerprint"
            f" {recorded[:12]}, this build's {fingerprint[:12]})"
        )
    if previous.schema_version != SCHEMA_VERSION:
        age = "an older" if previous.schema_version < SCHEMA_VERSION else "a newer"
        return (
            f"its index has {age} schema (version {previous.schema_version}; this build"
            f" writes {SCHEMA_VERSION})"
        )
    if previous.libraries and not bundle:  # its libraries' slices would refuse the run
        return "it holds a bundle's libraries, and this build indexes one SOURCE"
    return None


def not_reused(what: str, why: str) -> str:
    """The one line that says a previous index is not reused."""
    return f"{what}not reused: {why}; embedding every chunk"


def main(previous: Path, target: Path, bundle: bool) -> None:
    """The index stage's first step: copy the previous index (``previous``, the image's /app)
    to ``target`` when its vectors can be reused, else say why; with no previous index (the
    default ``PREVIOUS_IMAGE``) do nothing. The model is the stage's (its settings)."""
    index = previous / "vectors.duckdb"
    if not index.is_file():
        return
    report = previous / "manifest.json"
    manifest = manifest_in(report.read_bytes()) if report.is_file() else None
    if manifest is None:
        print(not_reused(NOTE, "it has no readable manifest.json beside it"), file=sys.stderr)
        return
    why = refusal(manifest, *_model_in_use(), bundle)
    if why is not None:
        print(not_reused(NOTE, why), file=sys.stderr)
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(index, target)
    print(
        f"{NOTE}reused: {manifest.chunk_count} chunks; only chunks whose text changed are embedded",
        file=sys.stderr,
    )


def _model_in_use() -> tuple[str, str | None]:
    """The backend the index run will embed with, and its model files' hash (not loaded)."""
    settings = Settings.resolve()
    backend = settings.backend or DEFAULT_BACKEND
    return backend, get_embedder(backend, settings.model_path).fingerprint()


def manifest_in(report: bytes) -> Manifest | None:
    """The manifest in an image's manifest.json (``report --json``); None if it holds none."""
    try:
        found = IndexReport.model_validate_json(report).manifest
        return None if found is None else Manifest.model_validate(found)
    except ValidationError:
        return None


if __name__ == "__main__":
    main(Path(sys.argv[1]), Path(sys.argv[2]), bool(sys.argv[3:4] and sys.argv[3]))
