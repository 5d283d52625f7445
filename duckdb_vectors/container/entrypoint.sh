#!/bin/sh
# Container entry point: the duckdb-vectors CLI, with an optional runtime append.
#
# Runtime append (the second lifecycle): with DUCKDB_VECTORS_APPEND_DIR set to a mounted
# folder (say, a set of skills as Markdown), the frozen index is copied to a writable place
# (DUCKDB_VECTORS_WRITABLE_DB, default /tmp/vectors.duckdb; mount a tmpfs there when the root
# file system is read-only), the folder is indexed into it under DUCKDB_VECTORS_APPEND_PREFIX
# (default "registry/"), and the command then serves that copy. This process is its only
# writer. Progress goes to stderr, so `mcp` keeps stdout for JSON-RPC.
set -eu

if [ -n "${DUCKDB_VECTORS_APPEND_DIR:-}" ]; then
    writable="${DUCKDB_VECTORS_WRITABLE_DB:-/tmp/vectors.duckdb}"
    cp "${DUCKDB_VECTORS_DB_PATH}" "${writable}"
    export DUCKDB_VECTORS_DB_PATH="${writable}"
    duckdb-vectors index "${DUCKDB_VECTORS_APPEND_DIR}" \
        --source-prefix "${DUCKDB_VECTORS_APPEND_PREFIX:-registry/}" --no-progress >&2
fi

exec duckdb-vectors "$@"
