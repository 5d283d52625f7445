#!/bin/sh
# Copy an index image's manifest into image labels, so `docker inspect` shows what it holds
# without running it: the manifest file is read from a created (never started) container,
# and a one-line build adds the labels on top (no layer changes).
#   docker/stamp-labels.sh my-docs-search
set -eu
image="$1"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
container=$(docker create "$image")
docker cp "$container:/app/manifest.json" "$work/manifest.json" >/dev/null
docker rm "$container" >/dev/null
labels=$(python3 - "$work/manifest.json" <<'PY'
import json, shlex, sys
report = json.load(open(sys.argv[1]))
manifest = report["manifest"]
labels = {
    "backend": report["backend"],
    "dimension": report["dimension"],
    "chunk-count": report["chunk_count"],
    "content-hash": manifest["content_hash"],
    "model-fingerprint": manifest["model_fingerprint"] or "",
    "built-at": manifest["built_at"],
    "duckdb-version": manifest["duckdb_version"],
}
print(" ".join(f"--label {shlex.quote(f'io.duckdb-vectors.{k}={v}')}" for k, v in labels.items()))
PY
)
echo "FROM $image" > "$work/Dockerfile"
eval "docker build --quiet $labels -t \"$image\" \"$work\"" >/dev/null
echo "labelled $image: $labels" >&2
