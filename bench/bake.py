"""`duckdb-vectors bake`: a cold bake against a rebake after one document changed.

Each round bakes a copy of examples/docs with ``--no-cache`` (every stage built again, the
toolkit's pip install from the package registry included), then appends a paragraph to one page
and bakes again with the cache, as a team does after an edit. Rounds alternate so both see the
same machine; medians and the ratio are reported, with the image's size, its overhead over the
base image and the cold `docker run ... search` time of the verification. Needs an engine
(DOCKER_HOST) and the model files (DUCKDB_VECTORS_MODEL_PATH or ../shared/models).

    python bench/bake.py --repeat 3
    /work/baseline/.venv/bin/python bench/bake.py --out /tmp/bake-before.json   # that version

It bakes with the ``duckdb-vectors`` beside the Python that runs it, so another checkout's
``.venv/bin/python`` measures that version. Writes bench/out/bake.json (or ``--out``) and
prints a Markdown table. The images it makes are removed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import tempfile
from pathlib import Path

from common import HERE, MODEL, OUT, SCRIPT, machine, run, write_json

DOCS = HERE.parent / "examples" / "docs"
TAG = "duckdb-vectors-bench-bake"


def bake(docs: Path, *options: str) -> dict:
    """One ``duckdb-vectors bake`` process: its ``--json`` summary, with the process's time."""
    command = [SCRIPT, "bake", str(docs), "--tag", TAG, "--model-path", str(MODEL), "--json"]
    done = run([*command, *options])
    return json.loads(done.stdout) | {"process_s": done.seconds}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT / "bake.json")
    arguments = parser.parse_args()
    runs: dict[str, list[dict]] = {"cold": [], "rebake": []}
    with tempfile.TemporaryDirectory() as work:
        try:
            for round_number in range(arguments.repeat):
                docs = Path(work) / f"docs-{round_number}"
                shutil.copytree(DOCS, docs)
                runs["cold"].append(bake(docs, "--no-cache"))
                with (docs / "guides" / "searching.md").open("a") as page:
                    page.write(f"\n## Round {round_number}\n\nOne more paragraph.\n")
                runs["rebake"].append(bake(docs))
        finally:
            subprocess.run(["docker", "rmi", "--force", TAG], capture_output=True)
    median = {kind: statistics.median(r["build_seconds"] for r in runs[kind]) for kind in runs}
    last = runs["rebake"][-1]
    summary = {
        **machine(),
        "cold_build_s": median["cold"],
        "rebake_build_s": median["rebake"],
        "cold_over_rebake": median["cold"] / median["rebake"],
        "size_mb": last["size_bytes"] / 1e6,
        "overhead_mb": last["overhead_bytes"] / 1e6,
        "model_mb": sum(p.stat().st_size for p in MODEL.iterdir() if p.is_file()) / 1e6,
        "cold_search_s": statistics.median(r["cold_search_seconds"] for r in runs["cold"]),
        "runs": runs,
    }
    write_json(arguments.out, summary)
    print("| | median s |\n|---|---|")
    print(f"| cold bake (--no-cache) | {median['cold']:.1f} |")
    print(f"| rebake after one page changed | {median['rebake']:.1f} |")
    print(f"\ncold / rebake: {summary['cold_over_rebake']:.1f}x")
    print(
        f"image {summary['size_mb']:.0f} MB, {summary['overhead_mb']:.0f} MB over the base image"
        f" (model {summary['model_mb']:.0f} MB); cold search {summary['cold_search_s']:.2f} s"
    )


if __name__ == "__main__":
    main()
