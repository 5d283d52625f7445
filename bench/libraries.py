"""Libraries: one index file with a slice per library, or one file per library; and 20 of them.

Three real docs trees: the Ray docs (with their 211 judged questions), the DuckDB docs (425
pages) and the Sphinx docs (``doc/`` of Sphinx's sdist, fetched from PyPI with ``pip download``
the first time; nobody on this project wrote them). The DuckDB and Sphinx pages are the
distractors. Each tree is indexed on its own and the three as a bundle (``index --bundle``),
each as a user would (``duckdb-vectors index``, a fresh process). Then, in fresh processes
taking turns:

- relevance: the Ray questions on the Ray file, on the bundle scoped to ``library=ray``, and on
  the bundle across all libraries (page hit@k and MRR@10, hybrid and one per page, as
  ``docsqa.py`` counts them); across all libraries, the share of questions whose first hit is
  a Ray page, and the share the resolver (the MCP ``libraries`` tool's ``request``) answers
  with Ray first;
- serving cost: opening and warming the bundle (``warm_up()``: model and in-memory index)
  against opening and warming the three files in one process, its seconds and peak RSS;
- rebuild cost: after one DuckDB page changed, ``index --bundle`` against ``index`` of the
  DuckDB file alone;
- scale: 20 libraries of about 5,000 chunks each (100k chunks), made of the three trees' real
  pages replicated (each library a different draw of whole pages), as a bundle and as one
  folder without libraries: ``warm_up()``, the reader's RSS, warm search p50 (the Ray
  questions, vectors given) with and without a library given, a library's first search (its
  filter read from the file), and the same searches from SQL (no in-memory index: a one-shot
  ``search``, or an index past its memory budget);
- languages: a German and an English library in one bundle, BM25 alone (``query_text``, no
  model) on XQuAD-R's 240 Wikipedia paragraphs in both languages (the same paragraphs, so every
  named entity is in both libraries: the hardest case for a search across them), each
  language's 1,190 questions judged against its own paragraph: hit@1, hit@5 and MRR@10 scoped
  to its library and across both, for three ways of reading the German library: ``english``
  (no ``language``, as every bundle before), ``union`` (``language: german``, the rule shipped:
  a query word is looked up in its forms in every language of the libraries searched,
  ``index.languages``) and ``precise`` (the alternative weighed against it, computed here in
  SQL over the same file: a form counts only in chunks of its own language, which would need
  the language of each posting in the index).

    python bench/libraries.py                     # static model, 3 rounds, all parts
    python bench/libraries.py --rounds 5 --parts relevance,serving,rebuild
    python bench/libraries.py --parts scale --workdir /tmp/libraries   # builds 2 x 100k chunks
    python bench/libraries.py --parts languages                        # about a minute

Writes bench/results/<date>/libraries.json and prints Markdown tables; progress on stderr.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import shutil
import subprocess
import sys
import tarfile
import tempfile
from datetime import date
from pathlib import Path
from typing import Any

import duckdb
from common import (
    HERE,
    MODEL,
    RAY,
    SCRIPT,
    SHARED,
    alternate,
    latencies,
    machine,
    percentiles,
    rss_mb,
    run,
    run_function,
    timed,
)
from common import summary as medians
from docsqa import MODES, Question, Search, by_row_set, load_questions, log, run_mode

from duckdb_vectors import VectorStore
from duckdb_vectors.bm25 import BM25_B, BM25_K1, bm25_idf_sql, bm25_weight_sql
from duckdb_vectors.bundle import Bundle, index_bundle
from duckdb_vectors.index.slices import library_sql
from duckdb_vectors.index.terms import parse_query, word_forms
from duckdb_vectors.libraries import resolve_request

RAY_TREE = RAY / "docs" / "doc" / "source"
DUCKDB_TREE = SHARED / "evaldata" / "docs" / "duckdb" / "docs" / "current"
SPHINX = "sphinx==8.1.3"  # its sdist ships the docs (doc/, reStructuredText)
BACKEND = "fastembed:minishlab/potion-multilingual-128M"
SEARCHES = ("hybrid", "hybrid-one-per-source")
CHANGED_PAGE = "sql/functions/aggregates.md"
# Each library's name and version in the bundle.
LIBRARIES = {"ray": "2.9", "duckdb": "1.5", "sphinx": "8.1"}
SCALE_LIBRARIES = 20
SCALE_CHUNKS = 5_000  # about this many per library
SCALE_QUERIES = 200
SQL_QUERIES = 20  # of them from SQL, which answers each in about half a second at this size
XQUAD = SHARED / "evaldata" / "ir" / "xquad-r-paragraphs"
LANGUAGES = {"de": "german", "en": "english"}
LANGUAGES_DEPTH = 10


def cli(*arguments: str) -> Any:
    environment = {**os.environ, "DUCKDB_VECTORS_MODEL_PATH": str(MODEL), "HF_HUB_OFFLINE": "1"}
    return run([SCRIPT, *arguments], env=environment)


def sphinx_docs(workdir: Path) -> Path:
    """Sphinx's own docs, from its sdist on PyPI (downloaded once into ``workdir``)."""
    tree = workdir / "sphinx-doc"
    if tree.is_dir():
        return tree
    download = workdir / "pypi"
    log(f"downloading the {SPHINX} sdist (its doc/ folder)")
    pip = [sys.executable, "-m", "pip", "download", "--quiet", "--no-binary", ":all:"]
    subprocess.run([*pip, "--no-deps", SPHINX, "-d", str(download)], check=True)
    archive = next(download.glob("sphinx-*.tar.gz"))
    unpacked = workdir / "sphinx-unpacked"
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and "/doc/" in m.name]
        tar.extractall(unpacked, members=members, filter="data")
    shutil.move(next(unpacked.glob("*/doc")), tree)
    shutil.rmtree(unpacked)
    return tree


def trees(workdir: Path) -> dict[str, Path]:
    """Each library's docs folder (DuckDB's a copy: the rebuild changes a page of it)."""
    duckdb_copy = workdir / "duckdb-docs"
    if not duckdb_copy.is_dir():
        shutil.copytree(DUCKDB_TREE, duckdb_copy)
    return {"ray": RAY_TREE, "duckdb": duckdb_copy, "sphinx": sphinx_docs(workdir)}


def write_bundle(path: Path, folders: dict[str, tuple[str, Path]]) -> Path:
    """A bundle file of ``name: (version, folder)``."""
    entries = "".join(
        f"  - {{name: {name}, version: '{version}', source: {folder}}}\n"
        for name, (version, folder) in folders.items()
    )
    path.write_text("libraries:\n" + entries)
    return path


def build(workdir: Path) -> dict[str, float]:
    """Each library's file and the bundle, built from nothing; each one's seconds."""
    folders = trees(workdir)
    bundle = write_bundle(
        workdir / "docs.yaml", {name: (LIBRARIES[name], path) for name, path in folders.items()}
    )
    runs = {name: [str(path)] for name, path in folders.items()}
    runs["bundle"] = ["--bundle", str(bundle)]
    seconds = {}
    for name, arguments in runs.items():
        db = workdir / f"{name}.duckdb"
        db.unlink(missing_ok=True)
        log(f"indexing {name}")
        done = cli("index", *arguments, "--db", str(db), "--backend", BACKEND)
        seconds[name] = round(done.seconds, 2)
    return seconds


def relevance(workdir: Path) -> dict[str, Any]:
    """The Ray questions on the Ray file, and on the bundle scoped and not; across all, whose
    page the first hit is, and whom the resolver names."""
    questions = load_questions(RAY / "questions.jsonl", "doc/source/", keep_duplicates=False)
    prefix = f"ray/{LIBRARIES['ray']}/"
    prefixed = [
        Question(q.id, q.text, frozenset(prefix + answer for answer in q.answers), q.kind)
        for q in questions
    ]
    cases = {  # name: (file, questions, filter, whether it is the bundle across libraries)
        "the Ray file alone": (workdir / "ray.duckdb", questions, None, False),
        "the bundle, `library=ray`": (
            workdir / "bundle.duckdb",
            prefixed,
            {"library": "ray"},
            False,
        ),
        "the bundle, all libraries": (workdir / "bundle.duckdb", prefixed, None, True),
    }
    results: dict[str, Any] = {"searches": {}}
    for name, (db, asked, scope, across) in cases.items():
        with VectorStore(db, read_only=True, model_path=MODEL) as store:
            vectors = store.embedder.embed_query([question.text for question in asked])
            results["searches"][name] = {}
            for mode in SEARCHES:
                log(f"{name}: {mode}")
                records = run_mode(store, scoped(mode, scope), asked, vectors)
                results["searches"][name][mode] = by_row_set(records, asked)
                if across:
                    first = [record["first_source"] or "" for record in records]
                    results[f"first hit is ray ({mode})"] = share(
                        first, lambda source: source.startswith(prefix)
                    )
            if across:
                named = [resolve_request(store, q.text) for q in asked]
                results["resolver names ray first"] = share(
                    [answer[0].name if answer else "" for answer in named], "ray".__eq__
                )
    return results


def share(values: list[str], wanted: Any) -> float:
    return round(sum(1 for value in values if wanted(value)) / len(values), 3)


def scoped(mode: str, scope: dict[str, str] | None) -> Search:
    """``docsqa``'s search ``mode``, within the metadata filter ``scope`` if one is given."""
    if scope is None:
        return MODES[mode]
    one = mode == "hybrid-one-per-source"
    return lambda store, text, vector, k: store.query(
        text, k, vector=vector, filter=scope, one_per_source=one
    )


def warm(paths: list[str]) -> dict[str, float]:
    """Open and warm the indexes at ``paths`` in this process (run in a fresh one)."""
    stores, open_ms = timed(
        lambda: [VectorStore(path, read_only=True, model_path=str(MODEL)) for path in paths]
    )
    warm_ms = sum(timed(store.warm_up)[1] for store in stores)
    for store in stores:
        store.close()
    return {"seconds": (open_ms + warm_ms) / 1000}


def serving(workdir: Path, rounds: int) -> dict[str, Any]:
    files = {
        "bundle (one file)": [str(workdir / "bundle.duckdb")],
        "three files": [str(workdir / f"{name}.duckdb") for name in LIBRARIES],
    }
    runs = alternate(
        {name: (lambda paths=paths: run_function(warm, paths)) for name, paths in files.items()},
        rounds,
        log=log,
    )
    return {
        name: {
            "warm_up_s": round(
                sorted(r.result["seconds"] for r in measured)[len(measured) // 2], 3
            ),
            "peak_rss_mb": round(medians(measured)["peak_rss_mb"], 1),
        }
        for name, measured in runs.items()
    }


def rebuild(workdir: Path, rounds: int) -> dict[str, Any]:
    """After one DuckDB page changed: the bundle's rebuild against the DuckDB file's."""
    page = workdir / "duckdb-docs" / CHANGED_PAGE
    original = page.read_text()
    counter = iter(range(10**6))

    def changed_then(arguments: list[str]) -> Any:
        page.write_text(original + f"\n\nChanged {next(counter)}.\n")
        return cli("index", *arguments, "--json")

    contenders = {
        "index --bundle (three libraries)": lambda: changed_then(
            ["--bundle", str(workdir / "docs.yaml"), "--db", str(workdir / "bundle.duckdb")]
        ),
        "index duckdb alone": lambda: changed_then(
            [str(workdir / "duckdb-docs"), "--db", str(workdir / "duckdb.duckdb")]
        ),
    }
    runs = alternate(contenders, rounds, log=log)
    page.write_text(original)
    result = {}
    for name, measured in runs.items():
        summary = json.loads(measured[-1].stdout)
        runs_of = summary.get("libraries", [{"summary": summary}])
        embedded = sum(one["summary"]["chunks_embedded"] for one in runs_of)
        result[name] = {**medians(measured), "chunks_embedded": embedded}
    return result


# -- scale: 20 libraries ----------------------------------------------------------------------


def scale_tree(workdir: Path) -> tuple[Path, Path]:
    """``scale/libNN/`` folders, each whole pages of the three trees drawn (seeded by NN)
    until about ``SCALE_CHUNKS`` chunks, and a bundle file of them."""
    root = workdir / "scale"
    bundle = workdir / "scale.yaml"
    if bundle.exists():
        return root, bundle
    folders = trees(workdir)
    pages = []  # (tree name, page, chunks), counted in each tree's own index
    for name in folders:
        with duckdb.connect(str(workdir / f"{name}.duckdb"), read_only=True) as connection:
            counts = connection.sql("SELECT source, count(*) FROM chunks GROUP BY source")
            pages += [(name, source, chunks) for source, chunks in counts.fetchall()]
    libraries = {}
    for number in range(SCALE_LIBRARIES):
        library = root / f"lib{number:02}"
        drawn = random.Random(number).sample(pages, len(pages))
        held = 0
        for name, source, chunks in drawn:
            if held >= SCALE_CHUNKS:
                break
            target = library / name / source
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(folders[name] / source, target)
            held += chunks
        libraries[library.name] = ("1.0", library)
    write_bundle(bundle, libraries)
    return root, bundle


def build_scale(workdir: Path) -> dict[str, float]:
    """The 20 libraries as a bundle, and the same pages as one folder (no libraries)."""
    root, bundle = scale_tree(workdir)
    seconds = {}
    for name, arguments in {
        "scale-bundle": ["--bundle", str(bundle)],
        "scale-folder": [str(root)],
    }.items():
        db = workdir / f"{name}.duckdb"
        if db.exists():
            continue
        log(f"indexing {name}")
        done = cli("index", *arguments, "--db", str(db), "--backend", BACKEND)
        seconds[name] = round(done.seconds, 2)
    return seconds


def scale_reader(db: str, texts: list[str], libraries: list[str]) -> dict[str, Any]:
    """Open and warm a read-only store; warm search p50 across all and within a library (the
    i-th query's), query vectors given; then the same from SQL, without the in-memory index,
    on ``SQL_QUERIES`` of them (run in a fresh process)."""
    baseline = rss_mb()
    store, open_ms = timed(VectorStore, db, read_only=True, model_path=str(MODEL))
    _, warm_ms = timed(store.warm_up)
    result: dict[str, Any] = {
        "warm_up_s": (open_ms + warm_ms) / 1000,
        "rss_mb": rss_mb(),
        "rss_added_mb": rss_mb() - baseline,
        "chunks": store.count(),
    }
    vectors = store.embedder.embed_query(texts)
    if libraries:  # each library's first search, whose filter is read from the file
        first = {name: i for i, name in reversed(list(enumerate(libraries)))}
        result["hybrid, a library's first search"] = percentiles(
            [
                timed(store.query, texts[i], 10, vector=vectors[i], filter={"library": name})[1]
                for name, i in first.items()
            ]
        )
    result |= search_latencies(store, texts, vectors, libraries, (False, True), "")
    store.close()
    with VectorStore(db, read_only=True, model_path=str(MODEL), memory_index=False) as sql:
        few = slice(0, SQL_QUERIES)
        result |= search_latencies(sql, texts[few], vectors[few], libraries[few], (False,), "SQL ")
    return result


def search_latencies(
    store: VectorStore,
    texts: list[str],
    vectors: Any,
    libraries: list[str],
    pages: tuple[bool, ...],
    label: str,
) -> dict[str, Any]:
    """p50 and p95 of the hybrid search of each text (and one per page if ``pages`` has
    True), across all libraries and, if ``libraries`` names one per text, within it."""
    result = {}
    for one in pages:
        mode = label + ("one per page" if one else "hybrid")
        scopes = {"all": lambda i: None, "library": lambda i: {"library": libraries[i]}}
        for name, scope_of in scopes.items():
            if name == "library" and not libraries:
                continue
            result[f"{mode}, {name}"] = latencies(
                lambda i, one=one, scope_of=scope_of: store.query(
                    texts[i], 10, vector=vectors[i], filter=scope_of(i), one_per_source=one
                ),
                len(texts),
            )
    return result


def scale(workdir: Path, rounds: int) -> dict[str, Any]:
    seconds = build_scale(workdir)
    questions = load_questions(RAY / "questions.jsonl", "doc/source/", keep_duplicates=False)
    texts = [question.text for question in questions][:SCALE_QUERIES]
    names = [f"lib{i % SCALE_LIBRARIES:02}" for i in range(len(texts))]
    contenders = {
        "20 libraries (bundle)": (workdir / "scale-bundle.duckdb", names),
        "the same pages, no libraries": (workdir / "scale-folder.duckdb", []),
    }
    runs = alternate(
        {
            name: (lambda db=db, wanted=wanted: run_function(scale_reader, str(db), texts, wanted))
            for name, (db, wanted) in contenders.items()
        },
        rounds,
        log=log,
    )
    result: dict[str, Any] = {"index_seconds": seconds}
    for name, measured in runs.items():
        ordered = sorted(measured, key=lambda r: r.result["warm_up_s"])
        middle = ordered[len(ordered) // 2].result
        result[name] = {
            **middle,
            "peak_rss_mb": round(medians(measured)["peak_rss_mb"], 1),
            "warm_up_rounds_s": [round(r.result["warm_up_s"], 3) for r in measured],
        }
    return result


# -- report -----------------------------------------------------------------------------------


def write_language_libraries(folder: Path) -> None:
    for code in LANGUAGES:
        (folder / code).mkdir()
        with gzip.open(XQUAD / code / "corpus.jsonl.gz") as corpus:
            for line in corpus:
                paragraph = json.loads(line)
                (folder / code / f"{paragraph['_id']}.md").write_text(paragraph["text"] + "\n")


def language_questions(code: str) -> list[tuple[str, str]]:
    """Each question's text and the id of the paragraph that answers it."""
    lines = (XQUAD / code / "qrels" / "test.tsv").read_text().splitlines()[1:]
    answers = dict(line.split("\t")[:2] for line in lines)
    with (XQUAD / code / "queries.jsonl").open() as rows:
        return [(q["text"], answers[q["_id"]]) for q in map(json.loads, rows)]


def language_bundle(folder: Path, german: bool) -> Path:
    own = "    language: german\n" if german else ""
    bundle = folder / f"docs-{int(german)}.yaml"
    bundle.write_text(
        f"libraries:\n  - name: de\n    source: de\n{own}  - name: en\n    source: en\n"
    )
    db = folder / f"bundle-{int(german)}.duckdb"
    with VectorStore(db, "hashing:64") as store:
        index_bundle(store, Bundle.read(bundle))
    return db


def union_ranking(store: VectorStore, text: str, library: str | None) -> list[str]:
    hits = store.query_text(text, LANGUAGES_DEPTH, filter={"library": library} if library else None)
    return [Path(hit.chunk.source or "").stem for hit in hits]


def precise_ranking(store: VectorStore, text: str, library: str | None) -> list[str]:
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
        GROUP BY p.key, p.source ORDER BY score DESC, p.key LIMIT {LANGUAGES_DEPTH}
        """,
        [[language for language, _ in pairs], [term for _, term in pairs], searched],
    ).fetchall()
    return [Path(source).stem for source, _ in rows]


def language_measures(ranked: list[list[str]], answers: list[str]) -> dict[str, float]:
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


def languages() -> list[dict[str, Any]]:
    """Each reading of the German library, each language's questions, scoped and across."""
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="languages-") as work:
        folder = Path(work)
        write_language_libraries(folder)
        files = {german: language_bundle(folder, german) for german in (False, True)}
        variants = [
            ("english", files[False], union_ranking),
            ("union", files[True], union_ranking),
            ("precise", files[True], precise_ranking),
        ]
        for name, db, rank in variants:
            log(f"languages: {name}")
            with VectorStore(db, read_only=True) as store:
                for code in LANGUAGES:
                    asked = language_questions(code)
                    for library in (code, None):
                        ranked = [rank(store, text, library) for text, _ in asked]
                        row = language_measures(ranked, [answer for _, answer in asked])
                        scope = "own library" if library else "both"
                        results.append(
                            {"german": name, "questions_of": code, "scope": scope, **row}
                        )
    return results


def table(result: dict[str, Any]) -> str:
    lines = []
    if "relevance" in result:
        lines += [
            "| searched | mode | hit@1 | hit@5 | hit@13 | MRR@10 |",
            "|---|---|---:|---:|---:|---:|",
        ]
        for name, modes in result["relevance"]["searches"].items():
            for mode, rows in modes.items():
                row = rows["all"]
                lines.append(
                    f"| {name} | {mode} | {row['hit@1']:.3f} | {row['hit@5']:.3f} |"
                    f" {row['hit@13']:.3f} | {row['mrr@10']:.3f} |"
                )
        lines += ["", "| across all libraries | share of questions |", "|---|---:|"]
        for name, value in result["relevance"].items():
            if name != "searches":
                lines.append(f"| {name} | {value:.3f} |")
    if "serving" in result:
        lines += ["", "| served | warm_up (s) | peak RSS (MB) |", "|---|---:|---:|"]
        for name, row in result["serving"].items():
            lines.append(f"| {name} | {row['warm_up_s']:.2f} | {row['peak_rss_mb']:.0f} |")
    if "rebuild" in result:
        lines += ["", "| rebuild after one page changed | s | chunks embedded |", "|---|---:|---:|"]
        for name, row in result["rebuild"].items():
            lines.append(f"| {name} | {row['seconds']:.2f} | {row['chunks_embedded']} |")
    if "scale" in result:
        lines += [
            "",
            "| 100k chunks | warm_up (s) | reader RSS (MB) | hybrid p50 all / library (ms)"
            " | one per page p50 all / library (ms) | a library's first search p50 (ms)"
            " | from SQL: hybrid p50 all / library (ms) |",
            "|---|---:|---:|---:|---:|---:|---:|",
        ]
        for name, row in result["scale"].items():
            if name == "index_seconds":
                continue
            hybrid = f"{row['hybrid, all']['p50_ms']:.1f}"
            pages = f"{row['one per page, all']['p50_ms']:.1f}"
            if "hybrid, library" in row:
                hybrid += f" / {row['hybrid, library']['p50_ms']:.1f}"
                pages += f" / {row['one per page, library']['p50_ms']:.1f}"
            first = row.get("hybrid, a library's first search", {}).get("p50_ms")
            sql = f"{row['SQL hybrid, all']['p50_ms']:.0f}"
            if "SQL hybrid, library" in row:
                sql += f" / {row['SQL hybrid, library']['p50_ms']:.0f}"
            lines.append(
                f"| {name} ({row['chunks']:,} chunks) | {row['warm_up_s']:.2f} |"
                f" {row['rss_mb']:.0f} | {hybrid} | {pages} |"
                f" {'-' if first is None else f'{first:.0f}'} | {sql} |"
            )
    if "languages" in result:
        lines += [
            "",
            "| German library read | questions | searched | n | hit@1 | hit@5 | MRR@10 |",
            "|---|---|---|---:|---:|---:|---:|",
        ]
        lines += [
            f"| {row['german']} | {row['questions_of']} | {row['scope']} | {row['questions']}"
            f" | {row['hit@1']:.3f} | {row['hit@5']:.3f} | {row['mrr@10']:.3f} |"
            for row in result["languages"]
        ]
    return "\n".join(lines)


PARTS = ("relevance", "serving", "rebuild", "scale", "languages")
THREE_TREE_PARTS = {"relevance", "serving", "rebuild"}  # the parts that read the three files


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--parts", default=",".join(PARTS), help=f"of {', '.join(PARTS)}")
    parser.add_argument("--workdir", type=Path, default=HERE / "out" / "libraries")
    parser.add_argument("--reindex", action="store_true", help="build the three-tree files again")
    parser.add_argument("--out", type=Path)
    arguments = parser.parse_args()
    if SCRIPT is None:
        raise SystemExit("duckdb-vectors is not installed beside this python: make install")
    parts = arguments.parts.split(",")
    if unknown := set(parts) - set(PARTS):
        raise SystemExit(f"--parts: no part {', '.join(sorted(unknown))}; of {', '.join(PARTS)}")
    workdir = arguments.workdir
    workdir.mkdir(parents=True, exist_ok=True)
    result: dict[str, Any] = {"machine": machine()}
    built_already = (workdir / "bundle.duckdb").exists()
    if THREE_TREE_PARTS & set(parts) and (arguments.reindex or not built_already):
        result["index_seconds"] = build(workdir)
    if "relevance" in parts:
        result["relevance"] = relevance(workdir)
    if "serving" in parts:
        result["serving"] = serving(workdir, arguments.rounds)
    if "rebuild" in parts:
        result["rebuild"] = rebuild(workdir, arguments.rounds)
    if "scale" in parts:
        result["scale"] = scale(workdir, arguments.rounds)
    if "languages" in parts:
        result["languages"] = languages()
    out = arguments.out or HERE / "results" / str(date.today()) / "libraries.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2))
    print(table(result))
    print(f"wrote {out}", file=sys.stderr)


if __name__ == "__main__":
    main()
