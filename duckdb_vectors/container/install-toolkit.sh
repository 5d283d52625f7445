#!/bin/sh
# install-toolkit.sh SRC: the toolkit stage of Dockerfile.builder and Dockerfile.runtime.
#
# Installs the package in SRC into /opt/venv with the extras index and mcp (the venv has no
# pip: the base image's installs into it), then removes SRC. A stage built on a prebuilt
# toolkit image (BUILDER_IMAGE) keeps its /opt/venv.
set -eu
src=$1
if [ -x /opt/venv/bin/duckdb-vectors ]; then
    echo "toolkit: using the one already in this image ($(/opt/venv/bin/duckdb-vectors --version))"
else
    python -m venv --without-pip /opt/venv
    pip --python /opt/venv/bin/python install "$src[index,mcp]"
fi
rm -rf "$src"
