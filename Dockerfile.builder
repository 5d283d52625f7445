# The duckdb-vectors toolkit image: the package in /opt/venv with what indexing and serving
# need (the extras index and mcp; onnx too for a transformer model) and one embedding model in
# /opt/model, for indexing in your own Dockerfiles.
#
#   docker build -f Dockerfile.builder -t duckdb-vectors-builder .
#   docker build -f Dockerfile.builder --build-arg MODEL_DIR=models/potion -t duckdb-vectors-builder .
#
#   FROM duckdb-vectors-builder AS index
#   COPY docs /docs
#   RUN duckdb-vectors index /docs --db /index/vectors.duckdb
#
# Dockerfile.runtime builds the same toolkit as its first stage; both run
# duckdb_vectors/container/install-toolkit.sh and prepare_model.py, so this file only wires
# build arguments.
ARG PYTHON_IMAGE=python:3.12-slim
FROM ${PYTHON_IMAGE}

ENV PATH=/opt/venv/bin:$PATH PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
COPY pyproject.toml README.md /src/
COPY duckdb_vectors /src/duckdb_vectors
RUN sh /src/duckdb_vectors/container/install-toolkit.sh /src

# The embedder spec, and an optional folder (in the build context) holding its model files.
# Without model files the model is downloaded here, at build time. Declared after the install,
# so toolkits for different models share its cached layers.
ARG BACKEND=fastembed:minishlab/potion-multilingual-128M
ARG MODEL_DIR=duckdb_vectors/container/no-model
ENV DUCKDB_VECTORS_BACKEND=${BACKEND} DUCKDB_VECTORS_MODEL_PATH=/opt/model
COPY ${MODEL_DIR} /opt/model
RUN python -m duckdb_vectors.container.prepare_model /opt/model "${BACKEND}"
ENV HF_HUB_OFFLINE=1

ENTRYPOINT ["duckdb-vectors"]
CMD ["--help"]
