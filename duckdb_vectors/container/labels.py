"""The manifest as image labels, and back, so ``docker inspect`` tells what an image holds.

Every manifest field becomes ``io.duckdb-vectors.<field>`` (underscores as dashes), so
``inspect`` rebuilds the manifest exactly; ``org.opencontainers.image.*`` say it for registries.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple, get_origin

from docker.errors import ImageNotFound

from ..errors import ImageError
from ..index.manifest import Manifest
from ..models import Example, IndexReport
from . import engine

PREFIX = "io.duckdb-vectors."
SOURCE_COUNT = PREFIX + "source-count"
# What an image's skill shows (``skill --json``'s ``example``, as JSON), set by ``bake``.
EXAMPLE = PREFIX + "example"


def _label(field: str) -> str:
    return PREFIX + field.replace("_", "-")


def manifest_labels(
    report: IndexReport, base_image: str, example: Example | None = None
) -> dict[str, str]:
    """Labels for an image holding the index ``report`` describes (and its skill's
    ``example``)."""
    if report.manifest is None:
        raise ValueError("the index has no manifest")
    manifest = Manifest.model_validate(report.manifest)
    labels = {
        _label(field): value if isinstance(value, str) else json.dumps(value)
        for field, value in manifest.model_dump(mode="json").items()
        if value is not None
    }
    labels[SOURCE_COUNT] = str(len(report.sources))
    if example is not None:
        labels[EXAMPLE] = example.model_dump_json()
    labels |= {
        "org.opencontainers.image.title": "duckdb-vectors index",
        "org.opencontainers.image.description": (
            f"A frozen duckdb-vectors index: {manifest.chunk_count} chunks from"
            f" {len(report.sources)} sources, embedded with {manifest.backend}"
        ),
        "org.opencontainers.image.created": labels[_label("built_at")],
        "org.opencontainers.image.base.name": base_image,
    }
    return labels


def manifest_from_labels(labels: dict[str, str]) -> Manifest | None:
    """The manifest an image's labels carry; None for an image that carries none."""
    present = {name: _label(name) for name in Manifest.model_fields}
    values = {name: _value(name, labels[key]) for name, key in present.items() if key in labels}
    return Manifest.model_validate(values) if values else None


def _value(field: str, label: str) -> Any:
    """A label as its manifest field takes it: lists and mappings (the slices) are JSON."""
    container = get_origin(Manifest.model_fields[field].annotation) in (list, dict)
    return json.loads(label) if container else label


def user_labels(pairs: tuple[str, ...] | list[str]) -> dict[str, str]:
    """``KEY=VALUE`` strings as a dict; a pair without ``=`` is a usage error."""
    labels = {}
    for pair in pairs:
        key, equals, value = pair.partition("=")
        if not equals or not key.strip():
            raise ValueError(f"--label {pair!r} is not KEY=VALUE")
        labels[key.strip()] = value
    return labels


class ImageManifest(NamedTuple):
    """What an image's labels say about the index inside it."""

    image_id: str
    manifest: Manifest
    source_count: int | None
    example: Example | None


def inspect_image(reference: str) -> ImageManifest:
    """The manifest of a baked image, from its labels alone: no container is created."""
    client = engine.connect()
    try:
        image = client.images.get(reference)
    except ImageNotFound:
        raise ImageError(
            f"no image {reference!r} in this engine: bake it, or docker pull it first"
        ) from None
    labels = image.labels or {}
    manifest = manifest_from_labels(labels)
    if manifest is None:
        raise ImageError(
            f"{reference} carries no duckdb-vectors manifest labels: bake it with"
            " `duckdb-vectors bake`, or read /app/manifest.json inside it"
        )
    count = labels.get(SOURCE_COUNT, "")
    example = Example.model_validate_json(labels[EXAMPLE]) if EXAMPLE in labels else None
    return ImageManifest(image.id, manifest, int(count) if count.isdigit() else None, example)
