"""`duckdb-vectors bake`: a cold bake against a rebake after one document changed.

Each round bakes a copy of the docs tree, then appends a paragraph to one page and bakes again,
as a team does after an edit. Rounds alternate so both see the same machine; medians and the
ratio are reported, with the image's size, its overhead over the base image and the cold
`docker run ... search` time of the verification. Needs an engine (DOCKER_HOST) and the model
files (--model-path, DUCKDB_VECTORS_MODEL_PATH or ../shared/models).

- By default the cold bake is ``--no-cache`` (every stage built again, the toolkit's pip install
  from the package registry included) and the rebake uses the layer cache: its index stage
  embeds every chunk again.
- ``--from-image``: the cold bake keeps the layer cache (a warm-up bake of examples/docs fills
  it first), so it is the index stage embedding every chunk, plus the container build; the
  rebake starts from the cold image's index (``bake --from-image``), so it embeds only the
  changed page's chunks. Each rebake's floor is its build less the index run inside it (the
  ``seconds`` of the image's /app/index-summary.json): the container build itself.

    python bench/bake.py --repeat 3
    /work/baseline/.venv/bin/python bench/bake.py --out /tmp/bake-before.json   # that version
    python bench/bake.py --from-image --tree ../shared/evaldata/docs/duckdb/docs/current \\
        --page sql/functions/regular_expressions.md \\
        --backend fastembed:sentence-transformers/all-MiniLM-L6-v2 \\
        --model-path ../shared/models/onnx-minilm-l6-v2-int8 --repeat 3

It bakes with the ``duckdb-vectors`` beside the Python that runs it, so another checkout's
``.venv/bin/python`` measures that version. Writes bench/out/bake.json (or ``--out``) and
prints a Markdown table. The images it tags are removed (the build's stage images stay, as the
layer cache).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from common import BACKEND, HERE, MODEL, OUT, SCRIPT, machine, run, write_json

EXAMPLES = HERE.parent / "examples" / "docs"
TAG = "duckdb-vectors-bench-bake"


def bake(docs: Path, tag: str, options: argparse.Namespace, *more: str) -> dict:
    """One ``duckdb-vectors bake`` process: its ``--json`` summary, with the process's time."""
    command = [SCRIPT, "bake", str(docs), "--tag", tag, "--json"]
    command += ["--backend", options.backend, "--model-path", str(options.model_path), *more]
    done = run(command)
    return json.loads(done.stdout) | {"process_s": done.seconds, "loadavg_1m": os.getloadavg()[0]}


def in_image(tag: str, path: str) -> dict:
    """A JSON file of a baked image."""
    command = ["docker", "run", "--rm", "--entrypoint", "cat", tag, path]
    return json.loads(subprocess.run(command, capture_output=True, check=True).stdout)


def edit(docs: Path, page: str, heading: str) -> None:
    with (docs / page).open("a") as file:
        file.write(f"\n## {heading}\n\nOne more paragraph about {heading.lower()}.\n")


def rounds(options: argparse.Namespace, work: Path, made: list[str]) -> dict[str, list[dict]]:
    """Each round: a cold bake of a copy of the tree, then a rebake after one page changed."""
    runs: dict[str, list[dict]] = {"cold": [], "rebake": []}
    cold_tag, rebake_tag = f"{TAG}-cold", TAG
    if options.from_image:  # the toolkit (and the model's layer) cached, as for every bake
        made.append(bake(EXAMPLES, f"{TAG}-warm-up", options, "--no-verify")["image_id"])
    for number in range(options.repeat):
        docs = work / f"docs-{number}"
        shutil.copytree(options.tree, docs)
        if options.from_image:  # else the index stage would come from the last round's cache
            edit(docs, options.page, f"Cold round {number}")
            cold = bake(docs, cold_tag, options)
        else:
            cold = bake(docs, cold_tag, options, "--no-cache")
        made.append(cold["image_id"])
        edit(docs, options.page, f"Round {number}")
        previous = ["--from-image", cold_tag] if options.from_image else []
        rebake = bake(docs, rebake_tag, options, *previous)
        made.append(rebake["image_id"])
        index_run = in_image(rebake_tag, "/app/index-summary.json")
        page_chunks = in_image(rebake_tag, "/app/manifest.json")["sources"][options.page]
        rebake |= {"index_run_s": index_run["seconds"], "page_chunks": page_chunks}
        rebake["floor_s"] = rebake["build_seconds"] - index_run["seconds"]
        runs["cold"].append(cold)
        runs["rebake"].append(rebake)
        print(
            f"round {number + 1}: cold {cold['build_seconds']:.1f} s"
            f" ({cold['chunks_embedded']} embedded), rebake {rebake['build_seconds']:.1f} s"
            f" ({rebake['chunks_embedded']} embedded of the page's {page_chunks},"
            f" {rebake['chunks_reused']} reused; floor {rebake['floor_s']:.1f} s),"
            f" load {rebake['loadavg_1m']:.1f}",
            flush=True,
        )
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--tree", type=Path, default=EXAMPLES, help="the docs tree baked")
    parser.add_argument("--page", default="guides/searching.md", help="the page changed")
    parser.add_argument("--backend", default=os.environ.get("DUCKDB_VECTORS_BACKEND", BACKEND))
    parser.add_argument("--model-path", type=Path, default=MODEL)
    parser.add_argument(
        "--from-image", action="store_true", help="rebake from the cold bake's image"
    )
    parser.add_argument("--out", type=Path, default=OUT / "bake.json")
    options = parser.parse_args()
    made: list[str] = []
    with tempfile.TemporaryDirectory() as work:
        try:
            runs = rounds(options, Path(work), made)
        finally:
            subprocess.run(["docker", "rmi", "--force", *made], capture_output=True)
    median = {kind: statistics.median(r["build_seconds"] for r in runs[kind]) for kind in runs}
    rebakes = runs["rebake"]
    last = rebakes[-1]
    summary = {
        **machine(),
        "tree": str(options.tree),
        "page": options.page,
        "backend": options.backend,
        "from_image": options.from_image,
        "cold_build_s": median["cold"],
        "rebake_build_s": median["rebake"],
        "rebake_over_cold": median["rebake"] / median["cold"],
        "cold_over_rebake": median["cold"] / median["rebake"],
        "rebake_floor_s": statistics.median(r["floor_s"] for r in rebakes),
        "rebake_index_run_s": statistics.median(r["index_run_s"] for r in rebakes),
        "cold_chunks_embedded": statistics.median(r["chunks_embedded"] for r in runs["cold"]),
        "rebake_chunks_embedded": [r["chunks_embedded"] for r in rebakes],
        "rebake_chunks_reused": [r["chunks_reused"] for r in rebakes],
        "rebake_page_chunks": [r["page_chunks"] for r in rebakes],
        "loadavg_1m_during": [r["loadavg_1m"] for kind in runs for r in runs[kind]],
        "size_mb": last["size_bytes"] / 1e6,
        "overhead_mb": last["overhead_bytes"] / 1e6,
        "model_mb": sum(p.stat().st_size for p in options.model_path.iterdir() if p.is_file())
        / 1e6,
        "cold_search_s": statistics.median(r["cold_search_seconds"] for r in runs["cold"]),
        "runs": runs,
    }
    write_json(options.out, summary)
    cold_kind = "layer cache, no previous image" if options.from_image else "--no-cache"
    rebake_kind = "--from-image the cold image" if options.from_image else "layer cache"
    print("| | median s |\n|---|---|")
    print(f"| cold bake ({cold_kind}) | {median['cold']:.1f} |")
    print(f"| rebake after one page changed ({rebake_kind}) | {median['rebake']:.1f} |")
    floor = summary["rebake_floor_s"]
    print(f"| of which the container build (the rebake less its index run) | {floor:.1f} |")
    print(f"\nrebake / cold: {summary['rebake_over_cold']:.2f}")
    print(
        f"chunks embedded: cold {summary['cold_chunks_embedded']:.0f}, rebakes"
        f" {summary['rebake_chunks_embedded']} (the page has {summary['rebake_page_chunks']}),"
        f" reused {summary['rebake_chunks_reused']}"
    )
    print(
        f"image {summary['size_mb']:.0f} MB, {summary['overhead_mb']:.0f} MB over the base image"
        f" (model {summary['model_mb']:.0f} MB); cold search {summary['cold_search_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
