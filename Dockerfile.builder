# The duckdb-vectors toolkit image: the package, its dependencies and one embedding model.
#
#   docker build -f Dockerfile.builder -t duckdb-vectors-builder .
#   docker build -f Dockerfile.builder --build-arg MODEL_DIR=models/potion -t duckdb-vectors-builder .
#
# Dockerfile.runtime indexes a docs folder with it; your own Dockerfile can too:
#   FROM duckdb-vectors-builder AS index
#   COPY docs /docs
#   RUN duckdb-vectors index /docs --db /index/vectors.duckdb
ARG PYTHON_IMAGE=python:3.12-slim
FROM ${PYTHON_IMAGE}

# The embedder spec, and an optional folder (in the build context) holding its model files.
# Without model files the model is downloaded here, at build time.
ARG BACKEND=fastembed:minishlab/potion-multilingual-128M
ARG MODEL_DIR=docker/no-model

ENV PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    DUCKDB_VECTORS_BACKEND=${BACKEND} \
    DUCKDB_VECTORS_MODEL_PATH=/opt/model

WORKDIR /src
COPY pyproject.toml README.md ./
COPY duckdb_vectors ./duckdb_vectors
RUN python -m venv /opt/venv \
 && pip install --no-compile . \
 && python -m compileall -q /opt/venv \
 && rm -rf /src/*

COPY ${MODEL_DIR} /opt/model
COPY docker/prepare_model.py /usr/local/lib/duckdb-vectors/prepare_model.py
RUN python /usr/local/lib/duckdb-vectors/prepare_model.py /opt/model "${BACKEND}"

ENV HF_HUB_OFFLINE=1
WORKDIR /
ENTRYPOINT ["duckdb-vectors"]
CMD ["--help"]
