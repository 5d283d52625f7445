"""BM25 over scripts written without spaces (Thai, Lao, Khmer, Burmese) and over Korean.

Each variant changes how a run of one script becomes tokens (``SCRIPT_RUNS`` in
``duckdb_vectors.tokenizer``); everything else is the library's own lexical mode: each set is
indexed into a real index file and every query is answered by ``VectorStore.query_text``.
Reported per set and variant: Recall@1, MRR@10, Recall@10, mean tokens per chunk, postings
rows, index file size, and tokenize() throughput over the corpus (best of three, CPU time).

Sets are folders in the BEIR layout with ``qrels/test.tsv``: the Korean and Khmer sets that
``bench/l10n_sets.py`` builds, and the Chinese XQuAD-R paragraphs from ../shared (the default;
a guard, since CJK handling must not change). The ``icu`` variants need ``pip install icu4py``.

    python bench/l10n_sets.py /tmp/l10n-sets
    python bench/tokenizer_scripts.py --sets /tmp/l10n-sets/km-libreoffice-help \
        --variants current whole-runs bigrams trigrams bi+trigrams icu icu+bigrams
    python bench/tokenizer_scripts.py --sets /tmp/l10n-sets/ko-debian-descriptions \
        --variants current whole-runs hangul-word+bigrams hangul-uni+bigrams \
        hangul-particles-only hangul-stem-of-2

Writes bench/out/tokenizer_scripts.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import json
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from common import OUT, SHARED, write_json

from duckdb_vectors import VectorStore, tokenizer
from duckdb_vectors.evaluation import load_qrels, load_queries, mrr_at
from duckdb_vectors.tokenizer import tokenize

RunTokens = Callable[[str], list[str]]


def ngrams(*sizes: int) -> RunTokens:
    """Code-point n-grams of each size (the run itself if shorter)."""
    return lambda run: [
        gram for n in sizes for gram in [run[i : i + n] for i in range(len(run) - n + 1)] or [run]
    ]


def icu_words(run: str) -> list[str]:
    from icu4py.breakers import WordBreaker  # ICU's dictionary segmentation

    return list(WordBreaker(run, "und"))


def icu_words_and_bigrams(run: str) -> list[str]:
    return icu_words(run) + ngrams(2)(run)


def whole(run: str) -> list[str]:
    return [run]


def word_and_bigrams(run: str) -> list[str]:
    return [run, *ngrams(2)(run)] if len(run) > 1 else [run]


def stem(endings: frozenset[str], shortest: int) -> RunTokens:
    """The run, and the run without the longest of ``endings`` if ``shortest`` chars remain."""

    longest_first = sorted(endings, key=len, reverse=True)

    def split(run: str) -> list[str]:
        for ending in longest_first:
            if run.endswith(ending) and len(run) - len(ending) >= shortest:
                return [run, run[: -len(ending)]]
        return [run]

    return split


ENDINGS = tokenizer._KOREAN_ENDINGS
PARTICLES = frozenset(e for e in ENDINGS if e[0] not in "하합해했한할되된됩")

# name: replacements for SCRIPT_RUNS entries ({} = the library as it is). "current" splits
# Thai/Lao/Khmer/Burmese runs into grapheme-cluster bigrams and adds Korean stems.
VARIANTS: dict[str, dict[str, RunTokens]] = {
    "current": {},
    "whole-runs": {"no_space": whole, "hangul": whole},
    "bigrams": {"no_space": ngrams(2)},
    "trigrams": {"no_space": ngrams(3)},
    "bi+trigrams": {"no_space": ngrams(2, 3)},
    "icu": {"no_space": icu_words},
    "icu+bigrams": {"no_space": icu_words_and_bigrams},
    "hangul-word+bigrams": {"hangul": word_and_bigrams},
    "hangul-uni+bigrams": {"hangul": ngrams(1, 2)},
    "hangul-particles-only": {"hangul": stem(PARTICLES, 1)},
    "hangul-stem-of-2": {"hangul": stem(ENDINGS, 2)},
}


@contextmanager
def variant(name: str) -> Iterator[None]:
    if not VARIANTS[name]:
        yield
        return
    saved = dict(tokenizer.SCRIPT_RUNS)
    tokenizer.SCRIPT_RUNS.update(VARIANTS[name])
    try:
        yield
    finally:
        tokenizer.SCRIPT_RUNS.update(saved)


def load(folder: Path) -> tuple[dict[str, str], dict[str, str], dict[str, dict[str, int]]]:
    with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as handle:
        documents = [json.loads(line) for line in handle]
    corpus = {str(d["_id"]): f"{d.get('title') or ''}\n{d['text']}".strip() for d in documents}
    return corpus, load_queries(folder / "queries.jsonl"), load_qrels(folder / "qrels/test.tsv")


def measure(folder: Path, scratch: Path) -> dict:
    corpus, queries, qrels = load(folder)
    texts = list(corpus.values())
    seconds = min(_tokenize_seconds(texts) for _ in range(3))
    path = scratch / f"{folder.name}.duckdb"
    path.unlink(missing_ok=True)
    with VectorStore(path, "hashing:16", memory_index=True) as store:
        store.add_texts(texts, ids=list(corpus))
        tokens, postings = store.connection.execute(
            "SELECT (SELECT avg(token_count) FROM chunks), (SELECT count(*) FROM postings)"
        ).fetchone()
        judged = [query_id for query_id in qrels if query_id in queries]
        ranks = []
        for query_id in judged:
            hits = [hit.chunk.chunk_id for hit in store.query_text(queries[query_id], 10)]
            ranks.append((hits, qrels[query_id]))
    return {
        "queries": len(judged),
        "recall_at_1": sum(bool(hits) and hits[0] in rel for hits, rel in ranks) / len(ranks),
        "mrr_at_10": sum(mrr_at(hits, rel) for hits, rel in ranks) / len(ranks),
        "recall_at_10": sum(bool(set(hits) & set(rel)) for hits, rel in ranks) / len(ranks),
        "tokens_per_chunk": float(tokens),
        "postings": int(postings),
        "file_mb": path.stat().st_size / 1e6,
        "tokenize_mchars_per_s": sum(map(len, texts)) / seconds / 1e6,
    }


def _tokenize_seconds(texts: list[str]) -> float:
    started = time.process_time()
    for text in texts:
        tokenize(text)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_sets = [SHARED / "evaldata/ir/xquad-r-paragraphs/zh"]
    parser.add_argument("--sets", type=Path, nargs="+", default=default_sets)
    parser.add_argument("--variants", nargs="+", default=["current"], choices=list(VARIANTS))
    parser.add_argument("--out", type=Path, default=OUT / "tokenizer_scripts.json")
    arguments = parser.parse_args()
    results: dict[str, dict[str, dict]] = {}
    with tempfile.TemporaryDirectory() as scratch:
        for folder in arguments.sets:
            for name in arguments.variants:
                with variant(name):
                    result = measure(folder, Path(scratch))
                results.setdefault(folder.name, {})[name] = result
                print(f"{folder.name} {name}: {json.dumps(result)}", flush=True)
    write_json(arguments.out, results)
    print("\n| set | variant | R@1 | MRR@10 | R@10 | tokens/chunk | postings | MB | Mchar/s |")
    print("|---|---|---|---|---|---|---|---|---|")
    for set_name, by_variant in results.items():
        for name, r in by_variant.items():
            print(
                f"| {set_name} | {name} | {r['recall_at_1']:.3f} | {r['mrr_at_10']:.3f}"
                f" | {r['recall_at_10']:.3f} | {r['tokens_per_chunk']:.0f} | {r['postings']:,}"
                f" | {r['file_mb']:.1f} | {r['tokenize_mchars_per_s']:.2f} |"
            )


if __name__ == "__main__":
    main()
