"""Builder step: make /opt/model a plain folder holding the model files, then check it loads.

If the folder already has model files (copied from ``MODEL_DIR``), they are used as they are.
Otherwise the model named by the backend is downloaded once, here, at build time, and its
files are copied in, so the runtime image never needs the network.
"""

from __future__ import annotations

import shutil
import sys
import tempfile
from pathlib import Path

from duckdb_vectors import get_embedder


def main(target: Path, backend: str) -> None:
    model_files = [p for p in target.iterdir() if p.name != "README.md"] if target.is_dir() else []
    if not model_files:
        with tempfile.TemporaryDirectory() as cache:
            downloaded = get_embedder(backend, cache_dir=Path(cache))
            source = downloaded.model_directory()  # downloads
            for path in source.iterdir():
                if path.is_file():
                    shutil.copy2(path.resolve(), target / path.name)
                elif path.is_dir():
                    shutil.copytree(path, target / path.name, symlinks=False, dirs_exist_ok=True)
    (target / "README.md").unlink(missing_ok=True)
    embedder = get_embedder(backend, model_path=target)
    vector = embedder.embed(["model check"])[0]
    fingerprint = (embedder.fingerprint() or "")[:16]
    print(f"model ready: {backend}, {len(vector)} dimensions, fingerprint {fingerprint}")


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2])
