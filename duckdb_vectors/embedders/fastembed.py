"""Local embeddings: ``fastembed:<model>`` and ``hf:<repo-id>``.

Transformers run on fastembed's ONNX runtime. Static models (a folder in the model2vec layout)
are embedded by ``static.StaticModel``, which gives fastembed's vectors without importing it;
one that fastembed has just downloaded is too, so an index and its queries always share one
implementation.
"""

from __future__ import annotations

import json
import logging
import os
import re
import socket
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from importlib.util import find_spec
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import numpy as np
from threadpoolctl import ThreadpoolController

from ..errors import EmbedderError
from .base import BaseEmbedder, EmbedderSpec, as_matrix, fingerprint_directory
from .batching import length_batches, token_lengths
from .static import (
    STATIC_CONFIG_FILE,
    TABLE_FILE,
    TOKENIZER_FILE,
    StaticModel,
    is_static_model,
    windows_needed,
)

# A transformer embeds documents shortest first, in batches of similar token lengths:
# fastembed pads a batch to its longest text, so batches in document order spend about half
# their work on padding. Batches run side by side on _WORKERS threads over one ONNX session
# that computes each run on its caller's thread (one intra-op thread): onnxruntime's own thread
# pool makes every operator wait for its slowest thread, which on a shared machine is the one
# that lost its core. A batch holds at most _MOST_ROWS texts (larger ones ran no faster on a
# CPU) and, as attention memory grows with rows x tokens^2 (about 360 bytes a cell for
# MiniLM: 94 MB a 512-token row), the batches in flight hold _ATTENTION_CELLS together: eight
# 512-token rows, under 1 GB, so an index run fits a 2 GB container.
_WORKERS = max(1, len(os.sched_getaffinity(0)))
_MOST_ROWS = 16
_ATTENTION_CELLS = 8 * 512 * 512
# A static model fastembed downloads is loaded once by it too: memory-mapped, without reading
# the table (ONNX models ignore the option). An ONNX session runs on its caller's thread
# (see _WORKERS); a static model warns that it has no threads to set, which is expected here.
_MODEL_OPTIONS = {"mmap": True, "threads": 1}
_NO_THREADS_WARNING = "is a static model computed with numpy"
# Documents are embedded with one BLAS thread: more only spin against the tokenizer's threads
# and take the core that chunking and writing need. The limit is process-wide while it lasts.
_BLAS = ThreadpoolController()
logger = logging.getLogger(__name__)
# Set by quiet_fastembed_logs: fastembed's log lines go off when it is imported.
_QUIET = threading.Event()
_OFFLINE_HINT = (
    "set DUCKDB_VECTORS_MODEL_PATH (or model_path=) to a local copy of the model, "
    "or allow network access so it can be downloaded"
)


class TransformerModel:
    """A fastembed ``TextEmbedding`` of an ONNX transformer."""

    def __init__(self, model: Any) -> None:
        self.model = model
        self.directory = Path(model.model._model_dir)
        self.english_only = _described_as_english_only(model)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors in the order of ``texts``, computed shortest first in batches of similar
        token lengths, ``_WORKERS`` batches at a time."""
        lengths = token_lengths(self.model.model.tokenizer, texts)
        order = np.argsort(lengths, kind="stable")
        workers = min(_WORKERS, len(texts))
        batches = length_batches(lengths[order], _MOST_ROWS, _ATTENTION_CELLS // workers)
        with ThreadPoolExecutor(workers, thread_name_prefix="duckdb-vectors-onnx") as pool:
            parts = pool.map(self._embed_batch, ([texts[i] for i in order[b]] for b in batches))
            by_length = np.concatenate(list(parts))
        vectors = np.empty_like(by_length)
        vectors[order] = by_length
        return vectors

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        return as_matrix(list(self.model.embed(texts, batch_size=len(texts))))

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return as_matrix(list(self.model.query_embed(list(texts))))

    def windows(self, texts: Sequence[str]) -> list[int]:
        return windows_needed(self.model.model.tokenizer, texts)


LoadedModel = StaticModel | TransformerModel


class FastEmbedEmbedder(BaseEmbedder):
    """A fastembed ``TextEmbedding`` model, loaded on first use.

    Args:
        model_name: a model fastembed knows, e.g. ``minishlab/potion-multilingual-128M``.
        model_path: load the model files from this directory instead of the hub.
        cache_dir: where fastembed keeps downloaded models.
        spec: the backend string recorded in the manifest.
    """

    def __init__(
        self,
        model_name: str,
        model_path: Path | None = None,
        cache_dir: Path | None = None,
        spec: str | None = None,
    ) -> None:
        super().__init__()
        self.model_name = model_name
        self.model_path = model_path
        self.cache_dir = cache_dir
        self.spec = spec or f"fastembed:{model_name}"
        self._model: LoadedModel | None = None
        self._fingerprint: str | None = None

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        model = self._loaded()
        with _BLAS.limit(limits=1, user_api="blas"):
            return model.embed(texts)

    def embed_query(self, texts: Sequence[str]) -> np.ndarray:
        return self._loaded().embed_query(texts)

    def windows(self, texts: Sequence[str]) -> list[int]:
        return self._loaded().windows(texts)

    def is_static(self) -> bool:
        return isinstance(self._loaded(), StaticModel)

    def fastembed_name(self) -> str:
        """The name fastembed's ``TextEmbedding`` knows the model by (loads nothing)."""
        return self.model_name

    def english_only(self) -> bool:
        model = self._loaded()
        return isinstance(model, TransformerModel) and model.english_only

    def fingerprint(self) -> str | None:
        if self._fingerprint is None:
            # A model folder given is the one loaded from: hashed without loading the model.
            given = Path(self.model_path) if self.model_path else None
            folder = given if given and given.is_dir() else self.model_directory()
            self._fingerprint = fingerprint_directory(folder)
        return self._fingerprint

    def model_directory(self) -> Path:
        """Where the model files were loaded from (loads the model if needed)."""
        return self._loaded().directory

    def _loaded(self) -> LoadedModel:
        if self._model is None:
            with self._load_lock:
                if self._model is None:
                    self._model = self._load()
        return self._model

    def _load(self) -> LoadedModel:
        if self.model_path is not None and not Path(self.model_path).is_dir():
            raise EmbedderError(f"model path {self.model_path} is not a directory")
        folder = Path(self.model_path) if self.model_path else self._cached_folder()
        if folder is None and find_spec("fastembed") is None:
            folder = self._download_static()
        if folder is not None and is_static_model(folder):
            return self._load_static(folder)
        model = self._load_with_fastembed()
        directory = Path(model.model._model_dir)
        if _is_static(model):  # downloaded just now: embedded by StaticModel like later runs
            return self._load_static(directory)
        return TransformerModel(model)

    def _load_static(self, folder: Path) -> StaticModel:
        try:
            return StaticModel(folder)
        except Exception as error:  # tokenizers raises a bare Exception for a bad tokenizer.json
            raise self._unloadable(folder, error) from error

    def _download_static(self) -> Path:
        """Without fastembed (the core install), a static model is downloaded by the hub client
        alone into fastembed's cache layout: its three files, never a transformer's weights (its
        ``config.json`` says which it is first). Anything else needs fastembed."""
        from huggingface_hub import hf_hub_download

        if hub_unreachable():
            raise EmbedderError(
                f"cannot load model {self.model_name} for {self.spec}: it is not cached and the"
                f" Hugging Face hub cannot be reached; {_OFFLINE_HINT}"
            )
        cache = str(_fastembed_cache(self.cache_dir))
        try:
            config = Path(hf_hub_download(self.model_name, STATIC_CONFIG_FILE, cache_dir=cache))
            if json.loads(config.read_text(encoding="utf-8")).get("model_type") != "model2vec":
                _import_fastembed(self.spec)  # a transformer: says to install the onnx extra
            logger.warning(
                "downloading model %s from the Hugging Face hub (once; set"
                " DUCKDB_VECTORS_MODEL_PATH to use a local copy instead)",
                self.model_name,
            )
            for name in (TOKENIZER_FILE, TABLE_FILE):
                hf_hub_download(self.model_name, name, cache_dir=cache)
        except (OSError, ValueError) as error:  # the hub client's errors derive from these
            raise EmbedderError(
                f"cannot download {self.model_name} for {self.spec}: {_reason(error)};"
                f" {_OFFLINE_HINT}"
            ) from error
        return config.parent

    def _cached_folder(self) -> Path | None:
        """The snapshot folder of ``model_name`` in fastembed's cache (hub layout: refs/main
        names the snapshot), if there is one. A model whose hub repository is named otherwise
        (fastembed's own ONNX exports) is not found here, and fastembed finds it."""
        entry = _fastembed_cache(self.cache_dir) / f"models--{self.model_name.replace('/', '--')}"
        try:
            revision = (entry / "refs" / "main").read_text(encoding="utf-8").strip()
        except OSError:
            return None
        snapshot = entry / "snapshots" / revision
        return snapshot if revision and snapshot.is_dir() else None

    def _load_with_fastembed(self) -> Any:
        TextEmbedding = _import_fastembed(self.spec)  # late: onnxruntime is slow to import
        if self.model_path is not None:
            return self._load_local(TextEmbedding, Path(self.model_path))
        # Offline, fastembed retries the hub for long before it gives up: when the hub cannot be
        # reached, only the local cache is tried, and a miss fails at once.
        offline = hub_unreachable()
        if not offline and not self._cached():
            logger.warning(
                "downloading model %s from the Hugging Face hub (once; set"
                " DUCKDB_VECTORS_MODEL_PATH to use a local copy instead)",
                self.model_name,
            )
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", f".*{_NO_THREADS_WARNING}")
                return TextEmbedding(
                    self.model_name,
                    cache_dir=str(self.cache_dir) if self.cache_dir else None,
                    local_files_only=offline,
                    **_MODEL_OPTIONS,
                )
        except Exception as error:  # fastembed raises bare ValueError/OSError/HF errors
            where = (
                "it is not cached and the Hugging Face hub cannot be reached"
                if offline
                else _reason(error)
            )
            raise EmbedderError(
                f"cannot load model {self.model_name} for {self.spec}: {where}; {_OFFLINE_HINT}"
            ) from error

    def _cached(self) -> bool:
        """Whether fastembed's cache seems to hold the model (a folder named after it)."""
        name = self.model_name.rsplit("/", 1)[-1].lower()
        cache = _fastembed_cache(self.cache_dir)
        return cache.is_dir() and any(name in entry.name.lower() for entry in cache.iterdir())

    def _load_local(self, text_embedding: Any, folder: Path) -> Any:
        try:
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", f".*{_NO_THREADS_WARNING}")
                return text_embedding(
                    self.model_name, specific_model_path=str(folder), **_MODEL_OPTIONS
                )
        except FileNotFoundError as error:
            missing = Path(error.filename or "?").name
            raise EmbedderError(
                f"{folder} does not hold the model files of {self.spec}: {missing} is missing;"
                " point --model-path (DUCKDB_VECTORS_MODEL_PATH) at a folder of that model"
            ) from error
        except Exception as error:
            raise self._unloadable(folder, error) from error

    def _unloadable(self, folder: Path, error: Exception) -> EmbedderError:
        return EmbedderError(f"cannot load model {self.model_name} from {folder}: {_reason(error)}")


def _fastembed_cache(cache_dir: Path | None) -> Path:
    """The folder fastembed keeps downloads in, found as fastembed 0.9 finds it, without
    importing it: ``cache_dir``, else ``FASTEMBED_CACHE_PATH``, else the temp folder's
    ``fastembed_cache``."""
    if cache_dir is not None:
        return Path(cache_dir)
    default = Path(tempfile.gettempdir()) / "fastembed_cache"
    return Path(os.environ.get("FASTEMBED_CACHE_PATH", default))


def hub_unreachable(timeout: float = 3.0) -> bool:
    """Whether downloads cannot work: HF_HUB_OFFLINE is set, or the hub's host does not answer."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in {"1", "true", "yes", "on"}:
        return True
    endpoint = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    port = endpoint.port or (443 if endpoint.scheme == "https" else 80)
    try:
        with socket.create_connection((endpoint.hostname or "", port), timeout=timeout):
            return False
    except OSError:
        return True


def _reason(error: BaseException) -> str:
    text = str(error).strip()
    return text.splitlines()[0].rstrip(".") if text else type(error).__name__


class HuggingFaceEmbedder(FastEmbedEmbedder):
    """Any Hugging Face repository with an ONNX export, run through fastembed.

    Options in the backend string tune how the ONNX output becomes a vector:
    ``hf:<repo>?pooling=mean|cls|last_token&normalize=true&file=onnx/model.onnx``.
    """

    _registered: ClassVar[set[str]] = set()
    _register_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, spec: EmbedderSpec) -> None:
        super().__init__(spec.argument, spec.model_path, spec.cache_dir, spec=str(spec))
        self.repo_id = spec.argument
        self.pooling = spec.options.get("pooling", "mean").upper()
        self.normalize = spec.options.get("normalize", "true").lower() != "false"
        self.model_file = spec.options.get("file")

    def fastembed_name(self) -> str:
        """The name the model is registered under in fastembed, registering it first (from the
        model folder, downloaded if there is none): fastembed knows a model only once it is
        registered under a unique name."""
        TextEmbedding = _import_fastembed(self.spec)
        from fastembed.common.model_description import ModelSource, PoolingType

        directory = self.model_path or self._download()
        self.model_path = directory
        model_file = self.model_file or _find_onnx_file(directory)
        if self.pooling not in PoolingType.__members__:
            raise EmbedderError(f"{self.spec}: pooling must be one of mean, cls, last_token")
        self.model_name = f"duckdb-vectors/{self.spec}"
        with self._register_lock:
            if self.model_name not in self._registered:
                TextEmbedding.add_custom_model(
                    model=self.model_name,
                    pooling=PoolingType[self.pooling],
                    normalization=self.normalize,
                    sources=ModelSource(hf=self.repo_id),
                    dim=_hidden_size(directory, self.spec),
                    model_file=model_file,
                )
                self._registered.add(self.model_name)
        return self.model_name

    def _load(self) -> LoadedModel:
        self.fastembed_name()
        return super()._load()

    def _download(self) -> Path:
        from huggingface_hub import snapshot_download

        patterns = ["*.json", "*.txt", "*.model", "onnx/*", "*.onnx", "*.onnx_data"]
        try:
            return Path(
                snapshot_download(self.repo_id, cache_dir=self.cache_dir, allow_patterns=patterns)
            )
        except Exception as error:
            raise EmbedderError(
                f"cannot download {self.repo_id}: {error}; {_OFFLINE_HINT}"
            ) from error


# How fastembed's model list describes a model trained on English alone ("..., English, 512
# input tokens truncation, ..." or "supports English only input text").
_ENGLISH_ONLY = re.compile(r"(?:^|, )(?:English|supports English only input text)(?:,|$)")


def _described_as_english_only(model: Any) -> bool:
    """Whether fastembed's description of ``model`` (a ``TextEmbedding``) says English alone;
    a model it does not describe (a custom one) is taken to read any language."""
    for entry in type(model).list_supported_models():
        if entry.get("model", "").lower() == model.model_name.lower():
            return bool(_ENGLISH_ONLY.search(entry.get("description", "")))
    return False


def _is_static(model: Any) -> bool:
    """A static (model2vec) model: a table lookup, no attention."""
    from fastembed.text.static_embedding import StaticTextEmbedding

    return isinstance(model.model, StaticTextEmbedding)


def _import_fastembed(spec: str) -> Any:
    if find_spec("fastembed") is None:
        raise EmbedderError(
            f"{spec} needs fastembed (to download the model, or to run a transformer):"
            " pip install 'duckdb-vectors[onnx]'"
        )
    if "onnxruntime" not in sys.modules:
        with _native_stderr_silenced():
            # On a read-only file system (a hardened container) onnxruntime cannot save its
            # telemetry device id and says so on fd 2 at import; the message is noise there.
            import onnxruntime  # noqa: F401
    from fastembed import TextEmbedding

    if _QUIET.is_set():
        _disable_fastembed_logs()
    return TextEmbedding


def quiet_fastembed_logs() -> None:
    """Switch fastembed's own log lines off (the CLI's one-line errors say what they would):
    now if it is loaded, else once it is imported, so a process that never uses it does not
    import its logger (loguru) either."""
    _QUIET.set()
    if "fastembed" in sys.modules:
        _disable_fastembed_logs()


def _disable_fastembed_logs() -> None:
    from loguru import logger as fastembed_logger

    fastembed_logger.disable("fastembed")


@contextmanager
def _native_stderr_silenced() -> Iterator[None]:
    """Point file descriptor 2 at /dev/null; Python exceptions still propagate normally."""
    sys.stderr.flush()
    saved = os.dup(2)
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)
        os.close(devnull)


def _find_onnx_file(directory: Path) -> str:
    for candidate in ("onnx/model.onnx", "model.onnx"):
        if (directory / candidate).is_file():
            return candidate
    found = sorted(directory.rglob("*.onnx"))
    if not found:
        raise EmbedderError(f"no .onnx file in {directory}; pass ?file=<path> in the backend")
    return str(found[0].relative_to(directory))


def _hidden_size(directory: Path, spec: str) -> int:
    try:
        config = json.loads((directory / "config.json").read_text())
        return int(config.get("hidden_size") or config["d_model"])
    except (OSError, ValueError, KeyError) as error:
        raise EmbedderError(f"{spec}: cannot read the width from config.json: {error}") from error


def create_fastembed(spec: EmbedderSpec) -> FastEmbedEmbedder:
    if not spec.argument:
        raise ValueError("fastembed needs a model name, e.g. fastembed:BAAI/bge-small-en-v1.5")
    return FastEmbedEmbedder(spec.argument, spec.model_path, spec.cache_dir, spec=str(spec))


def create_huggingface(spec: EmbedderSpec) -> HuggingFaceEmbedder:
    if not spec.argument:
        raise ValueError("hf needs a repository id, e.g. hf:sentence-transformers/all-MiniLM-L6-v2")
    return HuggingFaceEmbedder(spec)
