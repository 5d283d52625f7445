"""The words of a bulk write's batch, tokenized and numbered (``chunk_table.token_columns``: what
a write does with the text before it counts the postings), this checkout against another source
tree, each round a fresh process, the two alternating.

Texts: SciFact's abstracts, repeated up to ``--chunks`` (a fifth of them non-ASCII, most on the
escaped path), as ``bench/bulk_writes.py`` writes them.

    python bench/word_numbering.py --baseline /tmp/main-tree --chunks 20000 --rounds 5

Prints each round's CPU seconds and the ratio of the medians.
"""

from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
from pathlib import Path

from common import HERE, SHARED

CORPUS = SHARED / "evaldata" / "ir" / "scifact" / "corpus.jsonl.gz"

TIMED = """
import json, sys, time
sys.path.insert(0, sys.argv[1])
from duckdb_vectors.index.chunk_table import token_columns
texts = json.load(open(sys.argv[2]))
titles = [None] * len(texts)
token_columns(titles[:500], texts[:500], "english")  # imports and caches warmed
started = time.process_time()
token_columns(titles, texts, "english")
print(time.process_time() - started)
"""


def seconds(tree: Path, texts: Path) -> float:
    done = subprocess.run(
        [sys.executable, "-c", TIMED, str(tree), str(texts)],
        capture_output=True,
        text=True,
        check=False,
        cwd="/",  # neither tree's package on the path but the one asked for
    )
    if done.returncode:
        sys.exit(done.stderr[-2000:])
    return float(done.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", type=Path, required=True, help="another source tree")
    parser.add_argument("--chunks", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    arguments = parser.parse_args()
    with gzip.open(CORPUS, "rt") as lines:
        abstracts = [json.loads(line)["text"] for line in lines]
    texts = HERE / "out" / "word_numbering_texts.json"
    texts.parent.mkdir(exist_ok=True)
    texts.write_text(json.dumps([abstracts[i % len(abstracts)] for i in range(arguments.chunks)]))
    trees = {"baseline": arguments.baseline.resolve(), "this": HERE.parent}
    runs: dict[str, list[float]] = {name: [] for name in trees}
    for _ in range(arguments.rounds):
        for name, tree in trees.items():
            runs[name].append(seconds(tree, texts))
    for name, values in runs.items():
        print(f"{name}: {', '.join(f'{v:.2f}' for v in values)} s")
    before, after = (statistics.median(runs[name]) for name in trees)
    ratio = before / after
    print(f"{arguments.chunks:,} chunks: median {before:.2f} s -> {after:.2f} s, {ratio:.2f}x")


if __name__ == "__main__":
    main()
