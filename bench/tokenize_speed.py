"""tokenize() throughput of this checkout against the tokenizer of another git revision.

Texts: the DuckDB docs cut into chunks by the library's Markdown chunker (mostly the ASCII fast
path), SciFact's abstracts (200-word scientific English, a fifth with a Greek letter or an
accent: the escaped path) and the XQuAD-R paragraphs in German, Russian and Chinese (the
general path), from ../shared. The two tokenizers run in alternating rounds over the same
texts in one process; the median round of each (CPU time) is reported.

    python bench/tokenize_speed.py --baseline edbfda0 --rounds 15

Writes bench/out/tokenize_speed.json and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import gzip
import importlib.util
import json
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from common import DOCS, HERE, OUT, SHARED, write_json

from duckdb_vectors.chunkers import default_chunker
from duckdb_vectors.rows import embedding_text
from duckdb_vectors.tokenizer import tokenize

Tokenize = Callable[[str], list[str]]


def texts() -> dict[str, list[str]]:
    chunker = default_chunker()
    docs = [
        embedding_text(chunk)
        for path in sorted(DOCS.rglob("*.md"))
        for chunk in chunker.chunk(path.read_text(encoding="utf-8"), str(path.relative_to(DOCS)))
    ]
    sets = {"duckdb-docs": docs, "scifact": _corpus_texts("scifact")}
    for language in ("de", "ru", "zh"):
        sets[f"xquad-{language}"] = _corpus_texts(f"xquad-r-paragraphs/{language}")
    return sets


def _corpus_texts(name: str) -> list[str]:
    with gzip.open(SHARED / "evaldata/ir" / name / "corpus.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(line)["text"] for line in f]


def baseline(revision: str, scratch: Path) -> Tokenize:
    source = subprocess.run(
        ["git", "show", f"{revision}:duckdb_vectors/tokenizer.py"],
        cwd=HERE,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = scratch / "baseline_tokenizer.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_tokenizer", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.tokenize


def seconds(function: Tokenize, items: list[str]) -> float:
    """CPU seconds, which other processes on a shared machine disturb less than wall time."""
    started = time.process_time()
    for text in items:
        function(text)
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default="HEAD", help="git revision to compare with")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--out", type=Path, default=OUT / "tokenize_speed.json")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        contenders = {"baseline": baseline(arguments.baseline, Path(scratch)), "this": tokenize}
        results = {}
        for name, items in texts().items():
            rounds: dict[str, list[float]] = {contender: [] for contender in contenders}
            for _ in range(arguments.rounds):
                for contender, function in contenders.items():
                    rounds[contender].append(seconds(function, items))
            characters = sum(map(len, items))
            results[name] = {
                "texts": len(items),
                "characters": characters,
                **{
                    f"{contender}_mchars_per_s": characters / statistics.median(times) / 1e6
                    for contender, times in rounds.items()
                },
            }
    write_json(arguments.out, {"baseline": arguments.baseline, "sets": results})
    print(f"\n| texts | chunks | {arguments.baseline} Mchar/s | this Mchar/s | ratio |")
    print("|---|---|---|---|---|")
    for name, r in results.items():
        ratio = r["this_mchars_per_s"] / r["baseline_mchars_per_s"]
        print(
            f"| {name} | {r['texts']:,} | {r['baseline_mchars_per_s']:.2f}"
            f" | {r['this_mchars_per_s']:.2f} | {ratio:.3f} |"
        )


if __name__ == "__main__":
    main()
