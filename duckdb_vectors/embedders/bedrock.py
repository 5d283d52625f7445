"""Amazon Titan text embeddings through Bedrock: ``bedrock:titan`` (needs ``boto3``)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import numpy as np

from ..errors import EmbedderError
from .base import BaseEmbedder, EmbedderSpec, as_matrix

MODEL_ALIASES = {"titan": "amazon.titan-embed-text-v2:0"}
TITAN_V2_DIMENSIONS = (256, 512, 1024)


class BedrockEmbedder(BaseEmbedder):
    """Embeds each text with one ``InvokeModel`` call to a Titan embedding model.

    Args:
        model_id: the Bedrock model id, e.g. ``amazon.titan-embed-text-v2:0``.
        dimensions: output width (Titan v2 accepts 256, 512 or 1024).
        region: AWS region; default from the usual AWS configuration.
        client: a ready ``bedrock-runtime`` client (tests pass a stubbed one).
        spec: the backend string recorded in the manifest.
    """

    def __init__(
        self,
        model_id: str,
        dimensions: int = 1024,
        region: str | None = None,
        client: Any = None,
        spec: str | None = None,
    ) -> None:
        super().__init__()
        if dimensions not in TITAN_V2_DIMENSIONS:
            raise ValueError(f"bedrock dimensions must be one of {TITAN_V2_DIMENSIONS}")
        self.model_id = model_id
        self._dimension = dimensions
        self.region = region
        self._client = client
        self.spec = spec or f"bedrock:{model_id}"

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return as_matrix([self._embed_one(text) for text in texts])

    def fingerprint(self) -> str | None:
        return f"{self.model_id}@{self.dimension}"

    def _embed_one(self, text: str) -> list[float]:
        body = json.dumps({"inputText": text, "dimensions": self.dimension, "normalize": True})
        try:
            response = self.client.invoke_model(
                modelId=self.model_id,
                body=body,
                contentType="application/json",
                accept="application/json",
            )
            return json.loads(response["body"].read())["embedding"]
        except EmbedderError:
            raise
        except Exception as error:  # botocore's errors carry the service's own message
            raise EmbedderError(f"bedrock {self.model_id}: {error}") from error

    @property
    def client(self) -> Any:
        if self._client is None:
            with self._load_lock:
                if self._client is None:
                    self._client = _bedrock_client(self.region)
        return self._client


def _bedrock_client(region: str | None) -> Any:
    try:
        import boto3
    except ImportError as error:
        raise EmbedderError("bedrock needs boto3: pip install 'duckdb-vectors[bedrock]'") from error
    return boto3.client("bedrock-runtime", region_name=region)


def create_bedrock(spec: EmbedderSpec) -> BedrockEmbedder:
    model_id = MODEL_ALIASES.get(spec.argument or "titan", spec.argument)
    dimensions = int(spec.options.get("dimensions", "1024"))
    return BedrockEmbedder(model_id, dimensions, spec.options.get("region"), spec=str(spec))
