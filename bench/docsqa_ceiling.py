"""How far fusion could go on a docs-QA set: what the two signals find, question by question.

For an index built by bench/docsqa.py (``<workdir>/<model>.duckdb``), over all questions:

- the share whose answer page is in the index at all;
- the share whose answer page is among the first 100 chunks of either signal (what fusion
  has to work with);
- the share for which the better signal alone, chosen per question with hindsight, puts the
  answer page among its first 13 pages (each page once, at its best chunk).

    python bench/docsqa_ceiling.py --index bench/out/docsqa/<tree>/static.duckdb --model static
"""

from __future__ import annotations

import argparse
from pathlib import Path

from docsqa import MODELS, RAY, document_rank, load_questions

from duckdb_vectors import VectorStore

DEPTH = 100
PAGES = 13


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--model", choices=sorted(MODELS), default="static")
    parser.add_argument("--questions", type=Path, default=RAY / "questions.jsonl")
    parser.add_argument("--strip-prefix", default="doc/source/")
    arguments = parser.parse_args()
    questions = load_questions(arguments.questions, arguments.strip_prefix, keep_duplicates=False)
    with VectorStore(
        arguments.index, read_only=True, model_path=MODELS[arguments.model].path
    ) as store:
        indexed = set(store.sources())
        vectors = store.embedder.embed_query([question.text for question in questions])
        counts = {"in the index": 0, f"either signal, {DEPTH} chunks": 0}
        counts[f"better signal in hindsight, {PAGES} pages"] = 0
        for question, vector in zip(questions, vectors, strict=True):
            ranks = [
                document_rank(store.query_vectors(vector, DEPTH), question.answers),
                document_rank(store.query_text(question.text, DEPTH), question.answers),
            ]
            found = [rank for rank in ranks if rank is not None]
            counts["in the index"] += bool(question.answers & indexed)
            counts[f"either signal, {DEPTH} chunks"] += bool(found)
            counts[f"better signal in hindsight, {PAGES} pages"] += any(r <= PAGES for r in found)
    print("| ceiling | share of questions |\n|---|---|")
    for name, count in counts.items():
        print(f"| {name} | {count / len(questions):.3f} |")


if __name__ == "__main__":
    main()
