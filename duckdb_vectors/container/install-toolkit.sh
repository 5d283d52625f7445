#!/bin/sh
# The toolkit stage of Dockerfile.builder and Dockerfile.runtime, written once: both files only
# wire their build arguments to this script.
#
#   install-toolkit.sh SRC
#
# Installs the duckdb-vectors package found in SRC (pyproject.toml + duckdb_vectors/) into
# /opt/venv, compiled, then removes SRC. A stage that starts from a prebuilt toolkit image
# (Dockerfile.runtime's BUILDER_IMAGE) already has /opt/venv and keeps it as it is.
set -eu
src=$1
if [ -x /opt/venv/bin/duckdb-vectors ]; then
    echo "toolkit: using the one already in this image ($(/opt/venv/bin/duckdb-vectors --version))"
else
    python -m venv /opt/venv
    /opt/venv/bin/pip install --no-compile "$src"
    /opt/venv/bin/python -m compileall -q /opt/venv
fi
rm -rf "$src"
