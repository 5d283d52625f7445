"""Static models without fastembed: bit for bit the vectors of fastembed's StaticTextEmbedding,
from the model folder, from fastembed's cache, and one-line errors for broken files."""

from __future__ import annotations

import gzip
import json
import random
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from conftest import DEFAULT_BACKEND, DUCKDB_DOCS, EVALDATA, STATIC_MODEL
from fastembed import TextEmbedding
from threadpoolctl import threadpool_limits

from duckdb_vectors import EmbedderError, get_embedder
from duckdb_vectors.embedders import fingerprint_directory
from duckdb_vectors.embedders.static import BATCH, POOLING_CELLS, StaticModel

MODEL_NAME = DEFAULT_BACKEND.partition(":")[2]
ODD_TEXTS = [
    *("", " ", "\n\t ", ".", "\x00", "\u200b", "\ufeff", "\u0301\u0301"),
    *("<unk>", "<unk> <unk>", "a <unk> b", "<s></s>", "🦆" * 40, "👨‍👩‍👧‍👦", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
    *("Z̷̡̛a̸l̶g̵o̴", "ẞtraße Ünïcödé", "مرحبا بالعالم", "é" * 3000, "\U0010fffd\ue000"),
    *("x" * 100_000, "word " * 5_000, "SELECT * FROM t;" * 400),  # far past 512 tokens
]


@pytest.fixture(scope="module")
def texts() -> list[str]:
    """Real documents (whole DuckDB pages, most past 512 tokens, and their paragraphs), questions
    and paragraphs in five scripts, odd texts (empty, unknown tokens, byte fallback), and
    batches of vocabulary soup with so many distinct tokens that pooling splits them."""
    pages = [path.read_text(encoding="utf-8") for path in sorted(DUCKDB_DOCS.rglob("*.md"))[::10]]
    paragraphs = [part for page in pages[:30] for part in page.split("\n\n") if part.strip()]
    xquad = []
    for language in ("en", "de", "ru", "zh", "es"):
        folder = EVALDATA / "ir" / "xquad-r-paragraphs" / language
        with gzip.open(folder / "corpus.jsonl.gz", "rt", encoding="utf-8") as corpus:
            xquad += [json.loads(line)["text"] for line in corpus][:40]
        with (folder / "queries.jsonl").open(encoding="utf-8") as queries:
            xquad += [json.loads(line)["text"] for line in queries][:60]
    vocabulary = sorted(json.loads((STATIC_MODEL / "tokenizer.json").read_text())["model"]["vocab"])
    draw = random.Random(17)
    soup = [" ".join(draw.choices(vocabulary, k=250)) for _ in range(BATCH)]
    return pages + paragraphs + xquad + ODD_TEXTS + soup


@pytest.fixture(scope="module")
def fastembed_model() -> TextEmbedding:
    return TextEmbedding(MODEL_NAME, specific_model_path=str(STATIC_MODEL), mmap=True)


@pytest.mark.slow
def test_documents_get_fastembeds_vectors_bit_for_bit(
    texts: list[str], fastembed_model: TextEmbedding
) -> None:
    embedder = get_embedder(DEFAULT_BACKEND, model_path=STATIC_MODEL)
    ours = embedder.embed(texts)  # batches of 256 with one BLAS thread, as fastembed's below
    with threadpool_limits(limits=1, user_api="blas"):
        theirs = np.asarray(list(fastembed_model.embed(texts, batch_size=BATCH)))
    assert isinstance(embedder._loaded(), StaticModel)
    assert len(texts) > 3 * BATCH and ours.dtype == np.float32
    assert np.array_equal(ours, theirs)
    # The cases compared above really occurred: a batch pooled in halves, unknown tokens.
    soup = embedder._loaded()._token_ids(texts[-BATCH:])[0]
    assert BATCH * len(np.unique(soup)) > POOLING_CELLS
    assert not embedder.embed(["<unk>", ""]).any()


@pytest.mark.slow
def test_queries_get_fastembeds_vectors_bit_for_bit(
    texts: list[str], fastembed_model: TextEmbedding
) -> None:
    embedder = get_embedder(DEFAULT_BACKEND, model_path=STATIC_MODEL)
    queries = texts[::7] + ODD_TEXTS
    ours = np.concatenate([embedder.embed_query([query]) for query in queries])
    theirs = np.asarray([next(iter(fastembed_model.query_embed([query]))) for query in queries])
    assert np.array_equal(ours, theirs)
    # Several queries at once pool like documents; only BLAS's thread count (one for
    # documents) may change the last bit of the matrix product.
    assert np.allclose(embedder.embed_query(queries[:50]), embedder.embed(queries[:50]), atol=1e-6)


def hub_cache(root: Path) -> Path:
    """A fastembed cache holding the model as a download leaves it; its snapshot folder."""
    revision = "0123456789abcdef0123456789abcdef01234567"
    entry = root / f"models--{MODEL_NAME.replace('/', '--')}"
    shutil.copytree(STATIC_MODEL, entry / "snapshots" / revision)
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(revision)
    return entry / "snapshots" / revision


LOAD_FROM_CACHE = """
import json, sys
from pathlib import Path
from typing import Any
from duckdb_vectors import get_embedder
embedder = get_embedder(sys.argv[1], cache_dir=Path(sys.argv[2]))
vector = embedder.embed_query(["a cached model"])[0]
fastembed = sorted(m for m in sys.modules if m.startswith(("fastembed", "onnxruntime")))
print(json.dumps({"folder": str(embedder.model_directory()), "norm": float(vector @ vector),
                  "fingerprint": embedder.fingerprint(), "fastembed": fastembed}))
"""


@pytest.mark.slow
def test_a_model_in_fastembeds_cache_loads_without_fastembed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After the first download, a search reads the static model from fastembed's cache: the
    folder fastembed itself loads (so the manifest's fingerprint is unchanged), without it."""
    snapshot = hub_cache(tmp_path)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    completed = subprocess.run(
        [sys.executable, "-c", LOAD_FROM_CACHE, DEFAULT_BACKEND, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    loaded = json.loads(completed.stdout)
    by_fastembed = TextEmbedding(MODEL_NAME, cache_dir=str(tmp_path), local_files_only=True)
    assert Path(loaded["folder"]) == snapshot == Path(by_fastembed.model._model_dir)
    assert loaded["fingerprint"] == fingerprint_directory(snapshot)
    assert loaded["fastembed"] == [] and loaded["norm"] == pytest.approx(1.0)


@pytest.mark.parametrize(
    ("broken", "reason"),
    [("model.safetensors", "model.safetensors is truncated"), ("tokenizer.json", "")],
)
def test_a_broken_static_model_is_a_one_line_error(
    tmp_path: Path, broken: str, reason: str
) -> None:
    folder = tmp_path / "model"
    shutil.copytree(STATIC_MODEL, folder)
    damaged = folder / broken
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    with pytest.raises(EmbedderError) as raised:
        get_embedder(DEFAULT_BACKEND, model_path=folder).embed(["x"])
    message = str(raised.value)
    assert message.startswith(f"cannot load model {MODEL_NAME} from {folder}: {reason}")
    assert "\n" not in message


def tiny_static_model(
    folder: Path, model: Any, tensors: dict[str, tuple[str, np.ndarray]] | None = None
) -> Path:
    """A static model folder: ``model``'s tokenizer and a safetensors file of ``tensors``
    (name: (safetensors dtype, array)); by default a random F32 row per token."""
    from tokenizers import Tokenizer, pre_tokenizers

    folder.mkdir()
    tokenizer = Tokenizer(model)
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.save(str(folder / "tokenizer.json"))
    if tensors is None:
        rows = np.random.default_rng(3).standard_normal((tokenizer.get_vocab_size(), 8))
        tensors = {"embeddings": ("F32", rows.astype(np.float32))}
    header, data = {}, b""
    for name, (dtype, array) in tensors.items():
        header[name] = {
            "dtype": dtype,
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + array.nbytes],
        }
        data += array.tobytes()
    encoded = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(len(encoded).to_bytes(8, "little") + encoded + data)
    return folder


@pytest.mark.parametrize("kind", ["Unigram", "WordPiece", "BPE"])
def test_the_unknown_token_is_left_out_of_the_mean_whatever_the_tokenizer(
    tmp_path: Path, kind: str
) -> None:
    """The unknown token's id is found whether the tokenizer names it (BPE, WordPiece) or
    only the file has it (Unigram); it is not at id 0 here, so it is truly looked up."""
    from tokenizers import models

    vocabulary = ["h", "w", "<unk>", "d"]  # single letters: BPE needs no merges
    ids = {token: i for i, token in enumerate(vocabulary)}
    model = {
        "Unigram": lambda: models.Unigram([(t, -1.0) for t in vocabulary], 2, False),
        "WordPiece": lambda: models.WordPiece(ids, unk_token="<unk>"),
        "BPE": lambda: models.BPE(ids, [], unk_token="<unk>"),
    }[kind]()
    static = StaticModel(tiny_static_model(tmp_path / kind, model))
    assert static.unknown_id == 2
    assert static.tokenizer.encode("h z", add_special_tokens=False).ids == [0, 2]
    np.testing.assert_array_equal(static.embed(["h z"]), static.embed(["h"]))
    assert static.embed(["h"]).any()
    assert not static.embed(["z"]).any()


def test_a_bf16_table_with_a_token_mapping_and_weights_embeds_the_weighted_mean(
    tmp_path: Path,
) -> None:
    """A distilled model2vec layout: token ids map to shared rows of a BF16 table, each token
    weighted. A text's vector is the normalised weighted sum of its tokens' rows, one text
    alone or in a batch."""
    from tokenizers import models

    vocabulary = {"h": 0, "w": 1, "<unk>": 2, "d": 3, "e": 4}
    rows = np.random.default_rng(11).standard_normal((3, 8)).astype(np.float32)
    bf16 = (rows.view(np.uint32) >> 16).astype(np.uint16)  # the top half of each float32
    table = (bf16.astype(np.uint32) << 16).view(np.float32)  # what the model holds
    mapping = np.array([2, 0, 0, 1, 2], dtype=np.int32)  # "w" and "<unk>" share row 0
    weights = np.array([0.5, 2.0, 1.0, 1.5, 3.0], dtype=np.float32)
    folder = tiny_static_model(
        tmp_path / "model",
        models.WordLevel(vocabulary, unk_token="<unk>"),
        {"embeddings": ("BF16", bf16), "mapping": ("I32", mapping), "weights": ("F32", weights)},
    )
    static = StaticModel(folder)

    def expected(tokens: list[str]) -> np.ndarray:
        ids = [vocabulary[t] for t in tokens]
        total = (table[mapping[ids]] * weights[ids, None]).sum(axis=0)
        return total / np.linalg.norm(total)

    texts = ["h w d", "e e h zebra"]  # "zebra" is unknown: left out
    wanted = np.stack([expected(["h", "w", "d"]), expected(["e", "e", "h"])])
    np.testing.assert_allclose(static.embed(texts), wanted, rtol=1e-6)
    np.testing.assert_allclose(static.embed(texts[1:]), wanted[1:], rtol=1e-6)
