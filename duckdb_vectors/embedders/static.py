"""Static (model2vec-layout) models embedded with ``tokenizers`` and numpy alone.

A static model is a tokenizer plus a table of token vectors: a text's vector is the normalised
mean of its tokens' rows. fastembed computes that too, but importing it imports onnxruntime.

This module repeats fastembed 0.9.1's arithmetic step for step (truncation to 512 tokens,
unknown tokens left out, one float32 sum for a single text, a count-matrix product per batch of
256 otherwise), so that an index built by fastembed is searched with bit-identical vectors
(tests/test_static_embedder.py). model2vec's vectors differ from fastembed's, and the
``safetensors`` package copies the table into memory, where it must stay memory-mapped.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TABLE_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.json"
STATIC_CONFIG_FILE = "config.json"  # model2vec's: {"model_type": "model2vec", ...}
_TABLE = "embeddings"
MAX_TOKENS = 512
BATCH = 256
# A batch's (texts x distinct tokens) count matrix is split in halves above this many cells:
# it bounds pooling's temporary memory whatever the texts.
POOLING_CELLS = 4_000_000
_NORM_FLOOR = 1e-12
_DTYPES = dict(
    F64="<f8", F32="<f4", F16="<f2", I64="<i8", I32="<i4", I16="<i2", I8="i1", U8="u1", BOOL="?"
)


class StaticModel:
    """A static model's tokenizer and memory-mapped vector table, loaded from ``directory``."""

    def __init__(self, directory: Path) -> None:
        from tokenizers import Tokenizer  # late: only a model that embeds needs it

        self.directory = directory
        tensors = read_safetensors(directory / TABLE_FILE)
        self.embeddings = tensors[_TABLE]
        # Vocabulary-quantised models map token ids to shared rows and scale each token's row.
        self.mapping = tensors.get("mapping")
        self.weights = tensors.get("weights")
        self.tokenizer = Tokenizer.from_file(str(directory / TOKENIZER_FILE))
        self.tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self.tokenizer.no_padding()
        self.unknown_id = _unknown_token_id(self.tokenizer, directory / TOKENIZER_FILE)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors (float32), one row per text; a text without known tokens gives zeros."""
        batches = [
            self._embed_batch(list(texts[start : start + BATCH]))
            for start in range(0, len(texts), BATCH)
        ]
        if not batches:
            return np.zeros((0, self.embeddings.shape[1]), dtype=np.float32)
        return np.ascontiguousarray(np.concatenate(batches), dtype=np.float32)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        """Queries and documents share one vector space: no prefixes, the same pooling."""
        return self.embed(texts)

    def windows(self, texts: Sequence[str]) -> list[int]:
        return windows_needed(self.tokenizer, texts, special_tokens=False)

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        ids, lengths = self._token_ids(texts)
        sums = self._sum_rows(ids, lengths)
        # The sum points where the mean points, so its unit vector is the mean's.
        norms = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), _NORM_FLOOR)
        return sums / norms

    def _token_ids(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """All texts' known token ids in one flat array, and how many belong to each text."""
        encodings = self.tokenizer.encode_batch_fast(texts, add_special_tokens=False)
        per_text = [encoding.ids for encoding in encodings]
        lengths = np.fromiter(map(len, per_text), dtype=np.int64, count=len(texts))
        ids = np.fromiter(
            itertools.chain.from_iterable(per_text), dtype=np.int64, count=int(lengths.sum())
        )
        if self.unknown_id is None:
            return ids, lengths
        known = ids != self.unknown_id
        if known.all():
            return ids, lengths
        owner = np.repeat(np.arange(len(texts)), lengths)
        return ids[known], np.bincount(owner[known], minlength=len(texts))

    def _sum_rows(self, ids: np.ndarray, lengths: np.ndarray) -> np.ndarray:
        """Each text's sum of token rows, in float32."""
        if not ids.size:
            return np.zeros((len(lengths), self.embeddings.shape[1]), dtype=np.float32)
        rows = ids if self.mapping is None else self.mapping[ids]
        if len(lengths) == 1:  # a query: adding its rows beats building a count matrix
            vectors = self.embeddings[rows]
            if self.weights is not None:
                vectors = vectors * self.weights[ids, None]
            return vectors.sum(axis=0, keepdims=True, dtype=np.float32)
        distinct, column = np.unique(rows, return_inverse=True)
        if len(lengths) * len(distinct) > POOLING_CELLS:
            half = len(lengths) // 2
            cut = int(lengths[:half].sum())
            first = self._sum_rows(ids[:cut], lengths[:half])
            return np.concatenate([first, self._sum_rows(ids[cut:], lengths[half:])])
        # counts[text, k]: how often (or how heavily) distinct row k occurs in the text; one
        # matrix product then sums every text's rows.
        cell = np.repeat(np.arange(len(lengths)), lengths) * len(distinct) + column
        counts = np.bincount(
            cell,
            weights=None if self.weights is None else self.weights[ids],
            minlength=len(lengths) * len(distinct),
        ).astype(np.float32)
        return counts.reshape(len(lengths), len(distinct)) @ self.embeddings[distinct]


def windows_needed(
    tokenizer: Tokenizer, texts: Sequence[str], special_tokens: bool = True
) -> list[int]:
    """How many windows of a truncating tokenizer each text fills (tokenized as its model
    tokenizes it): the first, and one per piece it overflows into. Only the first is embedded."""
    encodings = tokenizer.encode_batch_fast(list(texts), add_special_tokens=special_tokens)
    return [1 + len(encoding.overflowing) for encoding in encodings]


def is_static_model(directory: Path) -> bool:
    """Whether ``directory`` holds a static model: a tokenizer and a safetensors file whose
    ``embeddings`` tensor is a table (a transformer's safetensors has no such tensor)."""
    if not (directory / TOKENIZER_FILE).is_file():
        return False
    try:
        header, _ = _safetensors_header(directory / TABLE_FILE)
    except (OSError, ValueError):
        return False
    table = header.get(_TABLE)
    return isinstance(table, dict) and len(table.get("shape", ())) == 2


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Every tensor of a safetensors file, memory-mapped read-only: loading is instant and a
    process holds only the pages (token rows) it touches. BF16 has no numpy type and is
    widened to a float32 copy."""
    header, data_start = _safetensors_header(path)
    size = path.stat().st_size
    tensors: dict[str, np.ndarray] = {}
    for name, info in header.items():
        start, end = (int(offset) for offset in info["data_offsets"])
        shape = tuple(int(n) for n in info["shape"])
        if data_start + end > size:
            raise ValueError(f"{path.name} is truncated ({size} bytes; {name} ends past them)")
        kind = info["dtype"]
        if kind != "BF16" and kind not in _DTYPES:
            raise ValueError(f"{path.name}: tensor {name} has the unsupported type {kind}")
        dtype = np.dtype("<u2" if kind == "BF16" else _DTYPES[kind])
        if start == end:
            tensors[name] = np.empty(shape, dtype=np.float32 if kind == "BF16" else dtype)
            continue
        mapped = np.memmap(path, dtype=dtype, mode="r", offset=data_start + start, shape=shape)
        if kind == "BF16":  # the top half of a float32
            mapped = (mapped.astype(np.uint32) << 16).view(np.float32)
        tensors[name] = mapped
    return tensors


def _safetensors_header(path: Path) -> tuple[dict[str, dict], int]:
    """The tensor descriptions of a safetensors file (an 8-byte little-endian length, then
    that much JSON) and the offset where the tensor data starts."""
    with path.open("rb") as handle:
        length = int.from_bytes(handle.read(8), "little")
        if not 0 < length < 100 * 1024 * 1024:
            raise ValueError(f"{path.name} is not a safetensors file")
        header = json.loads(handle.read(length))
    if not isinstance(header, dict):
        raise ValueError(f"{path.name} is not a safetensors file")
    header.pop("__metadata__", None)
    return header, 8 + length


def _unknown_token_id(tokenizer: Tokenizer, tokenizer_file: Path) -> int | None:
    """The id of the tokenizer's unknown token, if it has one: it means nothing in a static
    model, so it is left out of the mean. Only a Unigram model keeps it as an id the bindings
    do not show: it is read from the file."""
    from tokenizers.models import Unigram

    model = tokenizer.model
    unknown = getattr(model, "unk_token", None)
    if unknown:
        return tokenizer.token_to_id(unknown)
    if not isinstance(model, Unigram):
        return None
    return json.loads(tokenizer_file.read_text(encoding="utf-8"))["model"].get("unk_id")
