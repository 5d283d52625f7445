"""Which packages a runtime image holds, decided on this host.

The image's venv is duckdb-vectors installed with the extras serving needs, ``index`` and
``mcp`` (install-toolkit.sh), and ``onnx`` for a transformer model (prepare_model.py); pip adds
what they require, and nothing else. So the image holds what those extras require, as this
environment's installed packages declare it (environment markers and extras evaluated). The
images themselves are listed in test_container.py.
"""

from __future__ import annotations

from importlib import metadata

from conftest import (
    CHUNKER_PACKAGES,
    NEVER_SERVING,
    ONNX_PACKAGES,
    REPOSITORY,
    SERVING_PACKAGES,
)
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

# hf-xet, which huggingface_hub requires, is uninstalled by name (Dockerfile.runtime).
NOT_NEEDED = NEVER_SERVING - {"hf-xet"} | {"pytest", "ruff"}
CONTAINER = REPOSITORY / "duckdb_vectors" / "container"


def required(requirement: str) -> set[str]:
    """The installed packages ``requirement`` names and all that they require in turn,
    canonically named."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = [Requirement(requirement)]
    while pending:
        wanted = pending.pop()
        name = canonicalize_name(wanted.name)
        if (name, frozenset(wanted.extras)) in seen:
            continue
        seen.add((name, frozenset(wanted.extras)))
        found.add(name)
        for text in metadata.requires(name) or []:
            needed = Requirement(text)
            extras = wanted.extras or {""}
            if needed.marker is None or any(needed.marker.evaluate({"extra": e}) for e in extras):
                pending.append(needed)
    return found


def test_the_runtime_venv_installs_the_extras_checked_here() -> None:
    assert (
        'pip --python /opt/venv/bin/python install "$src[index,mcp]"'
        in (CONTAINER / "install-toolkit.sh").read_text()
    )
    assert 'extra == "onnx"' in (CONTAINER / "prepare_model.py").read_text()


def test_a_static_model_image_needs_no_onnx_runtime_and_keeps_the_chunkers() -> None:
    kept = required("duckdb-vectors[index,mcp]")
    assert kept >= SERVING_PACKAGES | CHUNKER_PACKAGES
    assert not kept & (ONNX_PACKAGES | NOT_NEEDED)


def test_a_transformer_model_image_keeps_fastembed_and_onnxruntime() -> None:
    kept = required("duckdb-vectors[index,mcp,onnx]")
    assert kept >= SERVING_PACKAGES | CHUNKER_PACKAGES | ONNX_PACKAGES
    assert not kept & NOT_NEEDED


def test_the_core_holds_no_extra() -> None:
    """Opening and searching an index needs none of the stages' packages."""
    core = required("duckdb-vectors")
    assert {"duckdb", "numpy", "tokenizers", "pystemmer"} <= core
    assert not core & (CHUNKER_PACKAGES - {"pystemmer"} | ONNX_PACKAGES | {"mcp", "docker"})
