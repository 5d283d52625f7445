"""Libraries in two languages: BM25 over a German and an English library of one bundle.

XQuAD-R's 240 Wikipedia paragraphs in German and in English (the same paragraphs, so every
named entity is in both libraries: the hardest case for a search across them), each language
a library, and each language's 1,190 questions judged against its own paragraph. BM25 alone
(``query_text``: no model), page hit@1, hit@5 and MRR@10, each language's questions scoped to
its library and across both, for three ways of reading the German library:

- ``english``: without ``language`` (as every bundle before), its words in English forms;
- ``union``: ``language: german``, the rule shipped: a query word is looked up in its forms in
  every language of the libraries searched (``index.languages``);
- ``precise``: the alternative weighed against it, computed here in SQL over the same file: a
  form of a query word counts only in chunks of the language it is a form in (its df and N
  over those chunks), which would need the language of each posting in the index.

    python bench/languages.py

Writes bench/results/<date>/languages.json and prints a Markdown table; progress on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import sys
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

from common import HERE, SHARED, machine, write_json

from duckdb_vectors import VectorStore
from duckdb_vectors.bm25 import BM25_B, BM25_K1, bm25_idf_sql, bm25_weight_sql
from duckdb_vectors.bundle import Bundle, index_bundle
from duckdb_vectors.index.slices import library_sql
from duckdb_vectors.index.terms import parse_query, word_forms

XQUAD = SHARED / "evaldata" / "ir" / "xquad-r-paragraphs"
LANGUAGES = {"de": "german", "en": "english"}
DEPTH = 10


def write_libraries(folder: Path) -> None:
    for code in LANGUAGES:
        (folder / code).mkdir()
        with gzip.open(XQUAD / code / "corpus.jsonl.gz") as corpus:
            for line in corpus:
                paragraph = json.loads(line)
                (folder / code / f"{paragraph['_id']}.md").write_text(paragraph["text"] + "\n")


def questions(code: str) -> list[tuple[str, str]]:
    """Each question's text and the id of the paragraph that answers it."""
    lines = (XQUAD / code / "qrels" / "test.tsv").read_text().splitlines()[1:]
    answers = dict(line.split("\t")[:2] for line in lines)
    with (XQUAD / code / "queries.jsonl").open() as rows:
        return [(q["text"], answers[q["_id"]]) for q in map(json.loads, rows)]


def built(folder: Path, german: bool) -> Path:
    own = "    language: german\n" if german else ""
    bundle = folder / f"docs-{int(german)}.yaml"
    bundle.write_text(
        f"libraries:\n  - name: de\n    source: de\n{own}  - name: en\n    source: en\n"
    )
    db = folder / f"bundle-{int(german)}.duckdb"
    with VectorStore(db, "hashing:64") as store:
        index_bundle(store, Bundle.read(bundle))
    return db


def shipped(store: VectorStore, text: str, library: str | None) -> list[str]:
    hits = store.query_text(text, DEPTH, filter={"library": library} if library else None)
    return [Path(hit.chunk.source or "").stem for hit in hits]


def precise(store: VectorStore, text: str, library: str | None) -> list[str]:
    """The alternative rule, in one statement over the index's tables."""
    searched = [library] if library else list(LANGUAGES)
    words = parse_query(text).words
    pairs = [
        (LANGUAGES[code], term)
        for code in searched
        for term in dict.fromkeys(word_forms(words, LANGUAGES[code]))
    ]
    chunk_library = library_sql(["library"], "c.metadata")
    language = f"CASE {chunk_library} WHEN 'de' THEN 'german' ELSE 'english' END"
    idf = bm25_idf_sql("f.df", "n.documents")
    weight = bm25_weight_sql("p.tf", "p.token_count", "a.average", str(BM25_K1), str(BM25_B))
    rows = store.connection.execute(
        f"""
        WITH q AS (SELECT unnest($1::VARCHAR[]) AS language, unnest($2::VARCHAR[]) AS term),
        c AS (SELECT key, source, token_count, {chunk_library} AS library, {language} AS language
              FROM chunks c),
        s AS (SELECT * FROM c WHERE library IN (SELECT unnest($3::VARCHAR[]))),
        a AS (SELECT library, avg(token_count) AS average FROM c GROUP BY library),
        n AS (SELECT language, count(*)::DOUBLE AS documents FROM s GROUP BY language),
        p AS (SELECT s.key, s.source, s.language, s.library, s.token_count, q.term, p.tf
              FROM postings p JOIN terms t USING (term_id) JOIN q ON q.term = t.term
              JOIN s ON s.key = p.key AND s.language = q.language),
        f AS (SELECT language, term, count(*)::DOUBLE AS df FROM p GROUP BY language, term)
        SELECT p.source, sum({idf} * {weight}) AS score
        FROM p JOIN f USING (language, term) JOIN n USING (language) JOIN a USING (library)
        GROUP BY p.key, p.source ORDER BY score DESC, p.key LIMIT {DEPTH}
        """,
        [[language for language, _ in pairs], [term for _, term in pairs], searched],
    ).fetchall()
    return [Path(source).stem for source, _ in rows]


def measured(ranked: list[list[str]], answers: list[str]) -> dict[str, float]:
    ranks = [
        found.index(answer) + 1 if answer in found else None
        for found, answer in zip(ranked, answers, strict=True)
    ]
    count = len(ranks)
    return {
        "questions": count,
        "hit@1": sum(rank == 1 for rank in ranks) / count,
        "hit@5": sum(rank is not None and rank <= 5 for rank in ranks) / count,
        "mrr@10": sum(1 / rank for rank in ranks if rank) / count,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="languages-") as work:
        folder = Path(work)
        write_libraries(folder)
        files = {False: built(folder, german=False), True: built(folder, german=True)}
        variants = [("english", files[False], shipped), ("union", files[True], shipped)]
        variants.append(("precise", files[True], precise))
        for name, db, rank in variants:
            print(f"{name}: {db.name}", file=sys.stderr)
            with VectorStore(db, read_only=True) as store:
                for code in LANGUAGES:
                    asked = questions(code)
                    for library in (code, None):
                        ranked = [rank(store, text, library) for text, _ in asked]
                        row = measured(ranked, [answer for _, answer in asked])
                        scope = "own library" if library else "both"
                        results.append(
                            {"german": name, "questions_of": code, "scope": scope, **row}
                        )
    out = arguments.out or HERE / "results" / date.today().isoformat() / "languages.json"
    write_json(out, {"machine": machine(), "results": results})
    print("| German library read | questions | searched | n | hit@1 | hit@5 | MRR@10 |")
    print("|---|---|---|---|---|---|---|")
    for row in results:
        print(
            f"| {row['german']} | {row['questions_of']} | {row['scope']} | {row['questions']}"
            f" | {row['hit@1']:.3f} | {row['hit@5']:.3f} | {row['mrr@10']:.3f} |"
        )


if __name__ == "__main__":
    main()
