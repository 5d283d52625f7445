#!/bin/sh
# Container entry point: the duckdb-vectors CLI, with an optional runtime append.
#
# No command: with stdin a pipe or socket (`docker run -i IMAGE`, as MCP clients and the
# Docker MCP Gateway run it) it serves MCP over stdio; with stdin a terminal or /dev/null it
# prints the help. The CLI itself has no default command.
#
# Runtime append: with DUCKDB_VECTORS_APPEND_DIR set to a mounted folder, the frozen index is
# copied to DUCKDB_VECTORS_WRITABLE_DB (default /tmp/vectors.duckdb; a tmpfs on a read-only
# root), the folder is indexed into it under DUCKDB_VECTORS_APPEND_PREFIX (default
# "registry/"), and the command serves that copy. Progress goes to stderr: stdout is JSON-RPC.
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
