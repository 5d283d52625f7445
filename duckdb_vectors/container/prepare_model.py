"""Toolkit step: make /opt/model a plain folder of model files, give /opt/venv what the
model needs, then check it loads.

Model files already there (from ``MODEL_DIR``) are used as they are; otherwise the backend's
model is downloaded at build time (fastembed installed for it in a throwaway folder), so the
runtime image needs no network. Only a transformer needs fastembed (the extra ``onnx``) in
/opt/venv; a static model runs on tokenizers and numpy.
"""

from __future__ import annotations

import importlib.util
import shutil
import site
import subprocess
import sys
import tempfile
from importlib.metadata import requires
from pathlib import Path

from duckdb_vectors import get_embedder
from duckdb_vectors.embedders import EmbedderSpec
from duckdb_vectors.embedders.static import is_static_model

# The backends fastembed runs (embedders/fastembed.py).
FASTEMBED_BACKENDS = {"fastembed", "hf"}


def main(target: Path, backend: str) -> None:
    model_files = [p for p in target.iterdir() if p.name != "README.md"] if target.is_dir() else []
    runs_on_fastembed = EmbedderSpec.parse(backend).name in FASTEMBED_BACKENDS
    with tempfile.TemporaryDirectory() as work:
        if not model_files:
            if runs_on_fastembed and importlib.util.find_spec("fastembed") is None:
                _install_fastembed("--prefix", work, "--no-compile")
                site.addsitedir(str(next(Path(work).glob("lib/python*/site-packages"))))
            _download(backend, Path(work) / "cache", target)
        (target / "README.md").unlink(missing_ok=True)
        if runs_on_fastembed and not is_static_model(target):
            _install_fastembed()
        embedder = get_embedder(backend, model_path=target)
        vector = embedder.embed(["model check"])[0]
        fingerprint = (embedder.fingerprint() or "")[:16]
    print(f"model ready: {backend}, {len(vector)} dimensions, fingerprint {fingerprint}")


def _download(backend: str, cache: Path, target: Path) -> None:
    source = get_embedder(backend, cache_dir=cache).model_directory()  # downloads
    for path in source.iterdir():
        if path.is_file():
            shutil.copy2(path.resolve(), target / path.name)
        elif path.is_dir():
            shutil.copytree(path, target / path.name, symlinks=False, dirs_exist_ok=True)


def _install_fastembed(*options: str) -> None:
    """Install the extra ``onnx`` (fastembed, as pinned) with the base image's pip."""
    pinned = [
        requirement.partition(";")[0].strip()
        for requirement in requires("duckdb-vectors") or []
        if 'extra == "onnx"' in requirement
    ]
    subprocess.run(["pip", "--python", sys.executable, "install", *options, *pinned], check=True)


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
