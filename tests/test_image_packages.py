"""Which packages a runtime image keeps (container/prune_packages.py), decided on this host.

The rule runs here on this environment's installed packages and real models, each in a fresh
process as the image's trim step runs it (what a process has imported decides it). The images
themselves are checked in test_container.py.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import (
    CHUNKER_PACKAGES,
    DEFAULT_BACKEND,
    NEVER_SERVING,
    ONNX_MODEL,
    ONNX_PACKAGES,
    SERVING_PACKAGES,
    STATIC_MODEL,
)
from packaging.requirements import Requirement

from duckdb_vectors.container.prune_packages import required_closure

MINILM = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
# hf-xet is required by huggingface_hub: the trim step removes it by name, not by this rule.
NOT_NEEDED = NEVER_SERVING - {"hf-xet"} | {"pytest", "ruff"}


def needed(backend: str, model: Path) -> set[str]:
    script = (
        "import json; from duckdb_vectors.container import prune_packages, serving;"
        " print(json.dumps(sorted(prune_packages.needed_packages(serving.load()))))"
    )
    environment = {
        **os.environ,
        "DUCKDB_VECTORS_BACKEND": backend,
        "DUCKDB_VECTORS_MODEL_PATH": str(model),
    }
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=environment, check=True
    )
    return set(json.loads(result.stdout))


@pytest.mark.slow
def test_a_static_model_needs_no_onnx_runtime_and_keeps_the_chunkers() -> None:
    kept = needed(DEFAULT_BACKEND, STATIC_MODEL)
    assert kept >= SERVING_PACKAGES | CHUNKER_PACKAGES
    assert not kept & (ONNX_PACKAGES | NOT_NEEDED)


@pytest.mark.slow
def test_a_transformer_model_keeps_fastembed_and_onnxruntime() -> None:
    kept = needed(MINILM, ONNX_MODEL)
    assert kept >= SERVING_PACKAGES | CHUNKER_PACKAGES | ONNX_PACKAGES
    assert not kept & NOT_NEEDED


def test_only_declared_requirements_are_followed() -> None:
    """Extras a requirement asks for count (mcp needs PyJWT with its crypto extra); an optional
    package a library imports only when present does not (pypdf and Pillow)."""
    assert {"pyjwt", "cryptography"} <= required_closure([Requirement("mcp")])
    assert "pillow" not in required_closure([Requirement("pypdf")])
    assert "pillow" in required_closure([Requirement("pypdf[image]")])
    assert required_closure([Requirement("not-installed-anywhere")]) == set()
