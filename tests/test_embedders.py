"""The embedder registry and its backends, on real model files (and a stubbed Bedrock API)."""

from __future__ import annotations

import io
import json
import subprocess
import sys
import time
from pathlib import Path

import boto3
import numpy as np
import pytest
from botocore.response import StreamingBody
from botocore.stub import Stubber
from conftest import DEFAULT_BACKEND, ONNX_MODEL, STATIC_MODEL

from duckdb_vectors import EmbedderError, VectorStore, get_embedder, register_embedder
from duckdb_vectors.embedders import BaseEmbedder, BedrockEmbedder, fingerprint_directory
from duckdb_vectors.embedders.batching import length_batches


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b / np.linalg.norm(a) / np.linalg.norm(b))


def test_default_static_model_from_a_local_directory() -> None:
    embedder = get_embedder(DEFAULT_BACKEND, model_path=STATIC_MODEL)
    vectors = embedder.embed(["a database", "a database", "a penguin"])
    assert vectors.shape == (3, 256) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert np.array_equal(vectors[0], vectors[1])
    assert embedder.dimension == 256
    assert embedder.fingerprint() == fingerprint_directory(STATIC_MODEL)


def test_a_static_models_table_is_memory_mapped_not_read() -> None:
    """A reader holds only the rows its queries touch (potion-multilingual's table: ~0.5 GB)."""
    embedder = get_embedder(DEFAULT_BACKEND, model_path=STATIC_MODEL)
    query = embedder.embed_query(["memory mapped"])
    assert isinstance(embedder._loaded().embeddings, np.memmap)
    assert query.shape == (1, 256) and np.isclose(np.linalg.norm(query), 1.0)


@pytest.mark.slow
def test_onnx_transformer_through_fastembed_and_hf_backends_agree() -> None:
    texts = ["how do I reset my password", "steps to recover a forgotten password", "banana bread"]
    by_fastembed = get_embedder(
        "fastembed:sentence-transformers/all-MiniLM-L6-v2", model_path=ONNX_MODEL
    ).embed(texts)
    by_hf = get_embedder("hf:sentence-transformers/all-MiniLM-L6-v2", model_path=ONNX_MODEL)
    vectors = by_hf.embed(texts)
    assert vectors.shape == (3, 384)
    assert np.allclose(vectors, by_fastembed, atol=1e-4)
    assert cosine(vectors[0], vectors[1]) > cosine(vectors[0], vectors[2]) + 0.2
    # fastembed itself loads the model by the name the hf backend registered it under
    from fastembed import TextEmbedding

    own = TextEmbedding(by_hf.fastembed_name(), specific_model_path=str(ONNX_MODEL))
    assert np.allclose(np.array(list(own.embed(texts))), vectors, atol=1e-4)


@pytest.mark.slow
def test_a_transformer_returns_vectors_in_the_order_of_the_texts() -> None:
    """Texts of 1 to 700 words are embedded shortest first, in batches of similar lengths; each
    vector comes back at its text's place, as if the texts had been embedded one by one."""
    words = [
        "the",
        "cluster",
        "schedules",
        "tasks",
        "across",
        "nodes",
        "while",
        "actors",
        "keep",
        "state",
    ]
    sizes = [1, 700, 3, 40, 250, 2, 90, 600, 12, 5, 160, 1, 30, 520, 8, 3]
    texts = [
        " ".join(words[(i + n) % len(words)] for n in range(size)) for i, size in enumerate(sizes)
    ]
    embedder = get_embedder(
        "fastembed:sentence-transformers/all-MiniLM-L6-v2", model_path=ONNX_MODEL
    )
    together = embedder.embed(texts)
    one_by_one = np.concatenate([embedder.embed([text]) for text in texts])
    np.testing.assert_allclose(together, one_by_one, rtol=0, atol=1e-6)


def test_batches_of_sorted_lengths_stay_within_their_rows_and_attention_cells() -> None:
    lengths = np.array([2] * 150 + [100] * 30 + [512] * 20)
    batches = length_batches(lengths, most_rows=64, most_cells=8 * 512 * 512)
    assert [b.stop - b.start for b in batches] == [64, 64, 52, 8, 8, 4]
    assert np.array_equal(np.concatenate([lengths[b] for b in batches]), lengths)
    assert length_batches(np.array([9000]), most_rows=64, most_cells=100) == [slice(0, 1)]
    assert length_batches(np.array([], dtype=np.int64), most_rows=64, most_cells=100) == []


@pytest.mark.slow
def test_a_transformer_embeds_long_chunks_in_bounded_memory() -> None:
    """Chunks of 512 tokens: 96 in one batch took 7.1 GB (and twice the time), so these 48 in
    one would take 3.5 GB; the batches in flight hold eight of them together, 0.7 GB, which
    leaves an index run room in a 2 GB container. At fastembed's default batch of 256 a folder
    of long chunks ran out of 24 GB."""
    script = (
        "import resource, sys\n"
        "from duckdb_vectors import get_embedder\n"
        "embedder = get_embedder(sys.argv[1], model_path=sys.argv[2])\n"
        "embedder.embed(['warm'])\n"
        "before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "vectors = embedder.embed(['word ' * 600 + str(i) for i in range(48)])\n"
        "assert vectors.shape == (48, 384)\n"
        "print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)\n"
    )
    backend = "fastembed:sentence-transformers/all-MiniLM-L6-v2"
    completed = subprocess.run(
        [sys.executable, "-c", script, backend, str(ONNX_MODEL)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert int(completed.stdout.split()[-1]) < 1000  # MB the embedding added to peak RSS


@pytest.mark.slow
def test_hf_options_are_part_of_the_spec() -> None:
    embedder = get_embedder(
        "hf:sentence-transformers/all-MiniLM-L6-v2?pooling=cls", model_path=ONNX_MODEL
    )
    assert embedder.spec == "hf:sentence-transformers/all-MiniLM-L6-v2?pooling=cls"
    assert embedder.embed(["x"]).shape == (1, 384)


def test_a_missing_model_offline_fails_fast_with_a_hint(tmp_path: Path) -> None:
    embedder = get_embedder(DEFAULT_BACKEND, cache_dir=tmp_path / "empty-cache")
    started = time.monotonic()
    with pytest.raises(EmbedderError, match="DUCKDB_VECTORS_MODEL_PATH"):
        embedder.embed(["x"])
    assert time.monotonic() - started < 10


def test_an_unreachable_hub_fails_at_once_without_hf_hub_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No HF_HUB_OFFLINE, and the hub's host refuses (a closed port on this machine): the
    load fails at once, saying why, instead of retrying the network for ~40 s."""
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    embedder = get_embedder(DEFAULT_BACKEND, cache_dir=tmp_path / "empty-cache")
    with pytest.raises(EmbedderError) as raised:
        embedder.embed(["x"])
    assert "it is not cached and the Hugging Face hub cannot be reached" in str(raised.value)
    assert ".;" not in str(raised.value)


def test_a_model_folder_of_another_model_names_the_missing_file() -> None:
    embedder = get_embedder(DEFAULT_BACKEND, model_path=ONNX_MODEL)  # a transformer's files
    with pytest.raises(EmbedderError) as raised:
        embedder.embed(["x"])
    message = str(raised.value)
    assert f"{ONNX_MODEL} does not hold the model files of {DEFAULT_BACKEND}" in message
    assert "model.safetensors is missing" in message
    assert "set DUCKDB_VECTORS_MODEL_PATH" not in message


def test_a_model_path_that_is_not_a_directory(tmp_path: Path) -> None:
    with pytest.raises(EmbedderError, match="not a directory"):
        get_embedder(DEFAULT_BACKEND, model_path=tmp_path / "nowhere").embed(["x"])


def test_unknown_backend_names_the_known_ones() -> None:
    with pytest.raises(EmbedderError, match=r"unknown backend 'word2vec:x'.*fastembed"):
        get_embedder("word2vec:x")


def test_hashing_is_deterministic_and_sized() -> None:
    first = get_embedder("hashing:64").embed(["same text", "other text"])
    second = get_embedder("hashing:64").embed(["same text", "other text"])
    assert first.shape == (2, 64) and np.array_equal(first, second)
    with pytest.raises(EmbedderError, match="dimension"):
        get_embedder("hashing:wide")


class Letters(BaseEmbedder):
    """A tiny custom backend: counts of the letters a-h."""

    def __init__(self, spec: str) -> None:
        super().__init__()
        self.spec = spec

    def embed(self, texts):
        return np.array([[t.count(c) + 0.01 for c in "abcdefgh"] for t in texts], dtype=np.float32)


def test_register_embedder_adds_a_backend_without_touching_the_core(db_path: Path) -> None:
    register_embedder("letters", lambda spec: Letters(str(spec)))
    with VectorStore(db_path, backend="letters") as store:
        store.add_texts(["aaaa", "hhhh"], ids=["a", "h"])
        assert store.query("aaa", top_k=1, hybrid=False)[0].chunk.chunk_id == "a"
        assert store.manifest.backend == "letters" and store.manifest.dimension == 8


def stubbed_bedrock(
    vectors: list[list[float]], dimensions: int = 256
) -> tuple[BedrockEmbedder, Stubber]:
    client = boto3.client(
        "bedrock-runtime",
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    stubber = Stubber(client)
    for vector in vectors:
        body = json.dumps({"embedding": vector, "inputTextTokenCount": 3}).encode()
        stubber.add_response(
            "invoke_model",
            {"body": StreamingBody(io.BytesIO(body), len(body)), "contentType": "application/json"},
            {
                "modelId": "amazon.titan-embed-text-v2:0",
                "body": StubAnyJson(dimensions),
                "contentType": "application/json",
                "accept": "application/json",
            },
        )
    stubber.activate()
    return BedrockEmbedder("amazon.titan-embed-text-v2:0", dimensions, client=client), stubber


class StubAnyJson:
    """Matches a request body that asks Titan for ``dimensions`` normalised floats."""

    def __init__(self, dimensions: int) -> None:
        self.dimensions = dimensions

    def __eq__(self, body: object) -> bool:
        request = json.loads(body)  # type: ignore[arg-type]
        return request["dimensions"] == self.dimensions and request["normalize"] is True

    def __repr__(self) -> str:
        return f"<titan request for {self.dimensions} dimensions>"


@pytest.mark.slow
def test_bedrock_titan_request_and_response_through_botocore() -> None:
    embedder, stubber = stubbed_bedrock([[0.1] * 256, [0.2] * 256])
    vectors = embedder.embed(["first", "second"])
    assert vectors.shape == (2, 256)
    assert vectors[1][0] == pytest.approx(0.2)
    stubber.assert_no_pending_responses()


def test_bedrock_service_errors_become_one_line_errors() -> None:
    client = boto3.client(
        "bedrock-runtime", region_name="us-east-1", aws_access_key_id="t", aws_secret_access_key="t"
    )
    stubber = Stubber(client)
    stubber.add_client_error("invoke_model", "AccessDeniedException", "not allowed to invoke")
    stubber.activate()
    with pytest.raises(EmbedderError, match=r"AccessDeniedException.*not allowed"):
        BedrockEmbedder("amazon.titan-embed-text-v2:0", 256, client=client).embed(["x"])


def test_bedrock_spec_parsing() -> None:
    embedder = get_embedder("bedrock:titan?dimensions=512&region=eu-west-1")
    assert embedder.model_id == "amazon.titan-embed-text-v2:0"
    assert embedder.dimension == 512
    assert embedder.spec == "bedrock:titan?dimensions=512&region=eu-west-1"


def test_a_store_embeds_through_bedrock(db_path: Path) -> None:
    rng = np.random.default_rng(1)
    vectors = rng.normal(size=(3, 256)).tolist()
    embedder, _ = stubbed_bedrock([vectors[0], vectors[1], vectors[0]])
    with VectorStore(db_path, embedder=embedder) as store:
        store.add_texts(["alpha", "beta"], ids=["a", "b"])
        assert store.query("alpha", top_k=1, hybrid=False)[0].chunk.chunk_id == "a"
        assert store.manifest.backend == "bedrock:amazon.titan-embed-text-v2:0"
