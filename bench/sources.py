"""Reading a site over HTTP: the DuckDB docs served from loopback, indexed by URL.

The DuckDB documentation (425 Markdown pages) is served by a static file server on 127.0.0.1
(Python's, which answers ``If-Modified-Since`` with 304s, over HTTP/1.1) in two forms:

- ``llms``: the Markdown files as they are, listed by an ``llms.txt`` made here;
- ``site``: each page rendered to HTML (pyromark) with its links pointing at the HTML pages,
  and no sitemap, so the site source crawls it from its index page.

For each form, a first ``duckdb-vectors index URL`` into a new index and a refresh of that
index with nothing changed take turns for ``--rounds`` rounds, each a fresh process as a user
runs it. Reported: pages per second of the first run (by its ``--json`` summary's own
``seconds``, and by the process's wall time), and the refresh's time as a share of the first
run's (the goal: at most 10%).

    python bench/sources.py --rounds 3
    python bench/sources.py --forms site --rounds 5

Writes bench/out/sources.json (or ``--out``) and prints a Markdown table.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import tempfile
import threading
from collections.abc import Callable
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyromark
from common import (
    BACKEND,
    DOCS,
    MODEL,
    OUT,
    SCRIPT,
    Run,
    alternate,
    machine,
    median,
    run,
    write_json,
)
from common import summary as medians

ENV = {**os.environ, "HF_HUB_OFFLINE": "1"}
FORMS = ("llms", "site")
_MD_LINK = re.compile(r'href="([^":#?]+)\.md([#?][^"]*)?"')


class _Quiet(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as a real server does
    # Headers and body are two writes: without this, each 200 waits for a delayed ACK.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:
        pass


def serve(folder: Path) -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), partial(_Quiet, directory=str(folder)))
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def llms_tree(docs: Path, into: Path) -> list[str]:
    """The Markdown pages and an llms.txt listing them; the pages' paths."""
    shutil.copytree(docs, into)
    pages = sorted(path.relative_to(into).as_posix() for path in into.rglob("*.md"))
    listing = "\n".join(f"- [{page}]({page})" for page in pages)
    (into / "llms.txt").write_text(
        f"# DuckDB\n\n> The DuckDB documentation.\n\n## Docs\n\n{listing}\n"
    )
    return pages


def html_tree(docs: Path, into: Path) -> list[str]:
    """Each page as HTML, linking the others' HTML (``index.html`` the start page)."""
    pages = []
    for source in sorted(docs.rglob("*.md")):
        relative = source.relative_to(docs).with_suffix(".html")
        body = pyromark.html(source.read_text(encoding="utf-8", errors="replace"))
        body = _MD_LINK.sub(lambda link: f'href="{link.group(1)}.html{link.group(2) or ""}"', body)
        target = into / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        title = source.stem.replace("_", " ")
        target.write_text(
            f"<html><head><title>{title}</title></head><body><main>{body}</main></body></html>"
        )
        pages.append(relative.as_posix())
    # The start page links every page, as a docs site's navigation does.
    links = "".join(f'<li><a href="{page}">{page}</a></li>' for page in pages)
    start = into / "index.html"
    start.write_text(start.read_text().replace("<main>", f"<nav><ul>{links}</ul></nav><main>", 1))
    return pages


def index_run(url: str, db: Path, model_path: Path) -> Run:
    command = [SCRIPT, "index", url, "--db", str(db), "--json", "--no-progress"]
    command += ["--backend", BACKEND, "--model-path", str(model_path)]
    done = run(command, env=ENV, timeout=900)
    done.result = json.loads(done.stdout)
    return done


def measure(
    form: str, url: str, served: Path, scratch: Path, arguments: argparse.Namespace
) -> dict[str, Any]:
    first_db, again_db = scratch / f"{form}-first.duckdb", scratch / f"{form}-again.duckdb"
    folder_db = scratch / f"{form}-folder.duckdb"
    index_run(url, again_db, arguments.model_path)  # what each refresh refreshes

    def first() -> Run:
        first_db.unlink(missing_ok=True)
        return index_run(url, first_db, arguments.model_path)

    def folder() -> Run:
        folder_db.unlink(missing_ok=True)
        return index_run(str(served), folder_db, arguments.model_path)

    contenders: dict[str, Callable[[], Run]] = {
        "first": first,
        "refresh": lambda: index_run(url, again_db, arguments.model_path),
        "folder": folder,
    }
    runs = alternate(contenders, arguments.rounds, log=print)
    pages = runs["first"][0].result["files_seen"]
    own = {name: median(r.result["seconds"] for r in done) for name, done in runs.items()}
    wall = {name: median(r.seconds for r in done) for name, done in runs.items()}
    embedded = [r.result["chunks_embedded"] for r in runs["refresh"]]
    return {
        "url": url,
        "pages": pages,
        "chunks": runs["first"][0].result["chunks_added"],
        "first": medians(runs["first"]) | {"run_s": own["first"]},
        "refresh": medians(runs["refresh"]) | {"run_s": own["refresh"], "embedded": embedded},
        "folder": medians(runs["folder"]) | {"run_s": own["folder"]},
        "x_folder": own["first"] / own["folder"],
        "pages_per_s": pages / own["first"],
        "pages_per_s_process": pages / wall["first"],
        "refresh_share": own["refresh"] / own["first"],
        "refresh_share_process": wall["refresh"] / wall["first"],
    }


def print_table(results: dict[str, Any]) -> None:
    print(
        "| form | pages | chunks | first run s (process) | pages/s | x the same files as a"
        " folder | refresh s (process) | refresh / first (process) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for form, r in results["forms"].items():
        print(
            f"| {form} | {r['pages']} | {r['chunks']} | {r['first']['run_s']:.2f}"
            f" ({r['first']['seconds']:.2f}) | {r['pages_per_s']:.0f} | {r['x_folder']:.2f}x"
            f" | {r['refresh']['run_s']:.2f} ({r['refresh']['seconds']:.2f})"
            f" | {r['refresh_share']:.1%} ({r['refresh_share_process']:.1%}) |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds")
    parser.add_argument("--forms", nargs="+", choices=FORMS, default=list(FORMS))
    parser.add_argument("--docs", type=Path, default=DOCS, help="a Markdown docs tree")
    parser.add_argument("--model-path", type=Path, default=MODEL)
    parser.add_argument("--out", type=Path, default=OUT / "sources.json")
    arguments = parser.parse_args()
    results: dict[str, Any] = {"docs": str(arguments.docs), "forms": {}}
    with tempfile.TemporaryDirectory(prefix="bench-sources-") as folder:
        scratch = Path(folder)
        for form in arguments.forms:
            served = scratch / form
            if form == "llms":
                llms_tree(arguments.docs, served)
            else:
                html_tree(arguments.docs, served)
            server, base = serve(served)
            try:
                url = f"{base}/llms.txt" if form == "llms" else f"{base}/"
                print(f"{form}: {url}")
                results["forms"][form] = measure(form, url, served, scratch, arguments)
            finally:
                server.shutdown()
                server.server_close()
    write_json(arguments.out, {**machine(), "rounds": arguments.rounds, **results})
    print_table(results)


if __name__ == "__main__":
    main()
