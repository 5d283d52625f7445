"""Shared fixtures: real DuckDB files in tmp_path, real model files from ../shared/models."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from duckdb_vectors import VectorStore

REPOSITORY = Path(__file__).resolve().parent.parent
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", REPOSITORY.parent / "shared"))
MODELS = SHARED / "models"
STATIC_MODEL = MODELS / "static-256-wordllama"
ONNX_MODEL = MODELS / "onnx-minilm-l6-v2-int8"
EVALDATA = SHARED / "evaldata"
DEFAULT_BACKEND = "fastembed:minishlab/potion-multilingual-128M"

# The hub is unreachable here: never let a test wait ~40 s on download retries.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
for variable in [name for name in os.environ if name.startswith("DUCKDB_VECTORS_")]:
    if variable != "DUCKDB_VECTORS_SHARED":
        del os.environ[variable]


def pytest_configure(config: pytest.Config) -> None:
    if not STATIC_MODEL.is_dir():
        raise pytest.UsageError(
            f"model files not found at {STATIC_MODEL}; set DUCKDB_VECTORS_SHARED"
        )


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "vectors.duckdb"


@pytest.fixture
def store(db_path: Path):
    """A read-write store on a new file with the real static model (the default backend)."""
    with VectorStore(db_path, DEFAULT_BACKEND, model_path=STATIC_MODEL) as opened:
        yield opened


INTRO_TEXTS = [
    "DuckDB is an in-process analytical database management system.",
    "Vectors capture semantic similarity between pieces of text.",
    "Set AWS credentials before calling the S3 API; error E1234 means access denied.",
    "Upgrade to v2.0 for the array_cosine_distance function.",
    "Москва — столица России, крупнейший город страны.",
    "Η Αθήνα είναι η πρωτεύουσα της Ελλάδας.",
    "北京是中华人民共和国的首都，也是政治中心。",
    "東京は日本の首都で、データベースの会社が多い。",
]


@pytest.fixture
def filled_store(store: VectorStore) -> VectorStore:
    """The store holding a few texts in several scripts, with metadata to filter on."""
    store.add_texts(
        ids=[f"doc:{i}" for i in range(len(INTRO_TEXTS))],
        texts=INTRO_TEXTS,
        metadatas=[
            {"kind": "intro" if i < 2 else "detail", "year": 2018 + i, "tags": ["t", f"n{i}"]}
            for i in range(len(INTRO_TEXTS))
        ],
        sources=[f"docs/{i // 2}.md" for i in range(len(INTRO_TEXTS))],
    )
    return store
