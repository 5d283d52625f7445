"""The embedder registry: a backend string such as ``fastembed:<model>`` becomes an embedder.

Add a backend without touching the core::

    from duckdb_vectors import register_embedder
    register_embedder("mine", lambda spec: MyEmbedder(spec.argument))
    VectorStore("x.duckdb", backend="mine:some-model")
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..errors import EmbedderError
from .base import BaseEmbedder, Embedder, EmbedderSpec, fingerprint_directory
from .bedrock import BedrockEmbedder, create_bedrock
from .fastembed import FastEmbedEmbedder, HuggingFaceEmbedder, create_fastembed, create_huggingface
from .hashing import HashingEmbedder, create_hashing

EmbedderFactory = Callable[[EmbedderSpec], Embedder]

_FACTORIES: dict[str, EmbedderFactory] = {}


def register_embedder(name: str, factory: EmbedderFactory) -> None:
    """Make ``name:<argument>`` backend strings build embedders with ``factory(spec)``."""
    _FACTORIES[name.lower()] = factory


def available_embedders() -> list[str]:
    """The registered backend names."""
    return sorted(_FACTORIES)


def get_embedder(
    backend: str, model_path: Path | None = None, cache_dir: Path | None = None
) -> Embedder:
    """Build the embedder a backend string names (the model itself loads on first use)."""
    spec = EmbedderSpec.parse(backend, model_path=model_path, cache_dir=cache_dir)
    factory = _FACTORIES.get(spec.name)
    if factory is None:
        known = ", ".join(available_embedders())
        raise EmbedderError(f"unknown backend '{backend}': use one of {known} (name:argument)")
    try:
        return factory(spec)
    except ValueError as error:
        raise EmbedderError(str(error)) from error


def canonical_backend(backend: str) -> str:
    """The one written form of a backend string: the spec its embedder reports (defaults
    spelled out, e.g. ``hashing`` is ``hashing:256``). Builds no model. A backend whose
    factory is not registered here keeps its parsed form."""
    spec = EmbedderSpec.parse(backend)
    factory = _FACTORIES.get(spec.name)
    if factory is None:
        return str(spec)
    try:
        return factory(spec).spec
    except (ValueError, EmbedderError):
        return str(spec)


register_embedder("fastembed", create_fastembed)
register_embedder("hf", create_huggingface)
register_embedder("bedrock", create_bedrock)
register_embedder("hashing", create_hashing)

__all__ = [
    "BaseEmbedder",
    "BedrockEmbedder",
    "Embedder",
    "EmbedderFactory",
    "EmbedderSpec",
    "FastEmbedEmbedder",
    "HashingEmbedder",
    "HuggingFaceEmbedder",
    "available_embedders",
    "canonical_backend",
    "fingerprint_directory",
    "get_embedder",
    "register_embedder",
]
