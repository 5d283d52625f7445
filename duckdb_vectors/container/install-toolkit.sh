#!/bin/sh
# The toolkit stage of Dockerfile.builder and Dockerfile.runtime, written once: both files only
# wire their build arguments to this script.
#
#   install-toolkit.sh SRC
#
# Installs the duckdb-vectors package found in SRC (pyproject.toml + duckdb_vectors/) into
# /opt/venv, compiled, with what indexing and serving need (the extras index and mcp), then
# removes SRC. The venv has no pip: the base image's installs into it. A transformer model adds
# fastembed when the model is prepared (prepare_model.py). A stage that starts from a prebuilt
# toolkit image (Dockerfile.runtime's BUILDER_IMAGE) already has /opt/venv and keeps it.
set -eu
src=$1
if [ -x /opt/venv/bin/duckdb-vectors ]; then
    echo "toolkit: using the one already in this image ($(/opt/venv/bin/duckdb-vectors --version))"
else
    python -m venv --without-pip /opt/venv
    pip --python /opt/venv/bin/python install "$src[index,mcp]"
fi
rm -rf "$src"
