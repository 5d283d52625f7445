"""The SDK in thirty lines: build a small index, search it, filter it, re-weight it.

Run with ``make demo`` (or ``python examples/quickstart.py [DB_PATH]``). Without network, set
DUCKDB_VECTORS_MODEL_PATH to a local copy of the model (the Makefile does when it finds one).
"""

from __future__ import annotations

import sys

from duckdb_vectors import VectorStore

NOTES = {
    "retries": ("Failed requests are retried three times with exponential backoff.", 2024),
    "timeouts": ("A request that takes longer than 30 seconds is cancelled (error E408).", 2022),
    "auth": ("Every call needs an API key in the X-Api-Key header.", 2025),
    "limits": ("Clients may send at most 100 requests per minute.", 2023),
    "db": ("Results are cached in an embedded analytical database.", 2021),
}

db_path = sys.argv[1] if len(sys.argv) > 1 else "quickstart.duckdb"
with VectorStore(db_path) as store:
    store.add_texts(
        ids=list(NOTES),
        texts=[text for text, _ in NOTES.values()],
        metadatas=[{"year": year} for _, year in NOTES.values()],
    )
    print(f"{store.count()} chunks in {db_path} ({store.backend})\n")

    for query, options in [
        ("how do retries work?", {}),
        ("E408", {}),
        ("embedded database", {"hybrid": False}),
        ("requests", {"filter": {"year": {"$gte": 2024}}}),
        ("requests", {"rescore": "score * (CAST(metadata->>'$.year' AS INT) - 2020)"}),
    ]:
        print(f"query {query!r} {options or ''}")
        for hit in store.query(query, top_k=2, **options):
            print(f"  {hit.score:.3f}  {hit.chunk.chunk_id:9} {hit.chunk.text}")
