#!/bin/sh
# Container entry point: the duckdb-vectors CLI, with an optional runtime append.
#
# No command (the image's default): with stdin a pipe or a socket, as `docker run -i IMAGE`
# gives it (what the Docker MCP Gateway and MCP client configurations run), the image serves
# MCP over stdio, as `mcp` does. With stdin a terminal (`docker run -it IMAGE`) or /dev/null
# (`docker run IMAGE`, no -i), nothing can speak MCP to it: it prints the help. This script
# is the one place that decides it; the CLI itself has no default command.
#
# Runtime append (the second lifecycle): with DUCKDB_VECTORS_APPEND_DIR set to a mounted
# folder (say, a set of skills as Markdown), the frozen index is copied to a writable place
# (DUCKDB_VECTORS_WRITABLE_DB, default /tmp/vectors.duckdb; mount a tmpfs there when the root
# file system is read-only), the folder is indexed into it under DUCKDB_VECTORS_APPEND_PREFIX
# (default "registry/"), and the command then serves that copy. This process is its only
# writer. Progress goes to stderr, so `mcp` keeps stdout for JSON-RPC.
set -eu

if [ "$#" -eq 0 ]; then
    if [ -c /dev/stdin ]; then  # a terminal, or /dev/null: a person, not an MCP client
        duckdb-vectors --help
        echo
        echo "With no command and stdin attached (docker run -i IMAGE), this image serves MCP over stdio."
        exit 0
    fi
    set -- mcp
fi

if [ -n "${DUCKDB_VECTORS_APPEND_DIR:-}" ]; then
    writable="${DUCKDB_VECTORS_WRITABLE_DB:-/tmp/vectors.duckdb}"
    cp "${DUCKDB_VECTORS_DB_PATH}" "${writable}"
    export DUCKDB_VECTORS_DB_PATH="${writable}"
    duckdb-vectors index "${DUCKDB_VECTORS_APPEND_DIR}" \
        --source-prefix "${DUCKDB_VECTORS_APPEND_PREFIX:-registry/}" --no-progress >&2
fi

exec duckdb-vectors "$@"
