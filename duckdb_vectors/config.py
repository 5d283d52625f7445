"""Configuration: constructor argument > ``DUCKDB_VECTORS_*`` environment variable > default.

A leaf module: the values settings take (durations, index URLs, quantizations) are defined here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Literal

from pydantic import ByteSize, Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from .errors import InvalidSettingError

DEFAULT_BACKEND = "fastembed:minishlab/potion-multilingual-128M"
DEFAULT_BASE_IMAGE = "python:3.12-slim"  # what `bake` builds the runtime image on
DEFAULT_MCP_HOST = "127.0.0.1"  # `mcp --transport http` binds to localhost unless told
DEFAULT_MCP_PORT = 8000
DEFAULT_MAX_FILE_BYTES = 20_000_000  # decimal MB, as `index --max-file-size` counts them
DEFAULT_MAX_AGE = 2 * 86400.0  # seconds: a published index is re-checked every two days
# A query longer than either is refused in a millisecond: a question, or a pasted error message,
# fits in far less, and each character and term costs search time (about 2.5 CPU seconds for a
# mixed-script megabyte).
DEFAULT_MAX_QUERY_CHARS = 10_000
DEFAULT_MAX_QUERY_TERMS = 1_000

# How an index may store its vectors besides float32 (see ``quantization``).
Quantization = Literal["int8"]

URL_SCHEMES = ("http://", "https://")
DURATION_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}
_DURATION = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", re.IGNORECASE)


def is_url(value: object) -> bool:
    """Whether ``value`` names a published index (http:// or https://), not a local file."""
    return isinstance(value, str) and value.lower().startswith(URL_SCHEMES)


def parse_duration(text: str) -> float:
    """Seconds from ``90``, ``90s``, ``15m``, ``6h`` or ``2d``."""
    found = _DURATION.fullmatch(text)
    if not found:
        raise ValueError(f"{text!r} is not a duration: give seconds, or a number with s/m/h/d")
    return float(found.group(1)) * DURATION_UNITS[(found.group(2) or "s").lower()]


def describe_age(seconds: float | None) -> str:
    """``parse_duration`` backwards: ``2.0d``, ``1.5h``, ``12.0m`` or ``40s``."""
    if seconds is None:
        return "an unknown time"
    for unit in "dhm":
        if seconds >= DURATION_UNITS[unit]:
            return f"{seconds / DURATION_UNITS[unit]:.1f}{unit}"
    return f"{seconds:.0f}s"


# The BM25 share of the fused score by the kind of model (see docs/relevance.md): a static
# model's vectors lean on BM25; a transformer's stand on their own.
STATIC_LEXICAL_WEIGHT = 0.7
TRANSFORMER_LEXICAL_WEIGHT = 0.5


class FusionSettings(BaseSettings):
    """How the vector and lexical rankings are fused into one list (see ``ranking.fuse``)."""

    model_config = SettingsConfigDict(env_prefix="DUCKDB_VECTORS_FUSION_", extra="ignore")

    method: Literal["relative", "rrf"] = Field(
        "relative", description="Relative score fusion, or Reciprocal Rank Fusion."
    )
    lexical_weight: float = Field(
        STATIC_LEXICAL_WEIGHT,
        ge=0.0,
        le=1.0,
        description="Share of the BM25 signal; the vector gets the rest. Unset: what the index"
        " records (eval --tune), else the default of its model's kind.",
    )
    rrf_k: int = Field(60, ge=1, description="RRF rank constant.")
    candidates: int = Field(
        100, ge=1, description="How deep each signal's ranking is read before fusing."
    )


class HttpLimits(BaseSettings):
    """What one client may ask of the MCP server over HTTP (``serve.mcp_http``), so that clients
    nobody vetted cannot hold its workers or its memory; ``/health`` is never limited."""

    model_config = SettingsConfigDict(env_prefix="DUCKDB_VECTORS_HTTP_", extra="ignore")

    max_body: ByteSize = Field(
        ByteSize(1_000_000),
        gt=0,
        description="The largest request body (bytes, or e.g. 1MB); a larger one is answered 413"
        " as soon as its Content-Length (or its chunks so far) says so.",
    )
    read_timeout: float = Field(
        10.0,
        gt=0,
        description="Seconds a client has to send a request's headers (from the connection or its"
        " first byte), and again its body; then 408 and the connection is closed.",
    )
    request_timeout: float = Field(
        60.0,
        gt=0,
        description="Seconds a request may wait and be worked on before it is answered 504"
        " (503 if it was still queued).",
    )
    max_concurrency: int = Field(
        16, ge=1, description="Requests to /mcp worked on at once; others queue."
    )
    queue: int = Field(
        64,
        ge=0,
        description="Requests to /mcp that may wait for a turn; past them, 503 with Retry-After.",
    )
    max_connections: int = Field(
        1000,
        ge=1,
        description="Open connections (fewer if the file limit leaves no room); a new one past"
        " them closes the oldest idle one (503 with Retry-After if it had sent nothing).",
    )

    @field_validator("read_timeout", "request_timeout", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        return parse_duration(value) if isinstance(value, str) else value


class Settings(BaseSettings):
    """Everything a ``VectorStore`` (and the CLI and MCP server) can be configured with.

    Each field can be set by argument or by ``DUCKDB_VECTORS_<FIELD>`` in the environment.
    """

    model_config = SettingsConfigDict(env_prefix="DUCKDB_VECTORS_", extra="ignore")

    db_path: Path | str = Field(
        Path("vectors.duckdb"),
        description="The index file, or the http(s):// URL of a published (frozen) index.",
    )
    backend: str | None = Field(
        None,
        description=(
            "Embedder spec such as 'fastembed:<model>'. Unset: the backend recorded in the "
            f"index, or {DEFAULT_BACKEND} for a new index."
        ),
    )
    model_path: Path | None = Field(
        None, description="Load the model from this local directory instead of the hub."
    )
    cache_dir: Path | None = Field(
        None,
        description="Where downloaded models are cached, and published indexes (in indexes/;"
        " default ~/.cache/duckdb-vectors).",
    )
    max_age: float = Field(
        DEFAULT_MAX_AGE,
        ge=0,
        description="A published index's cached copy older than this is re-checked with its"
        " server (seconds, or a number with s/m/h/d; default 2d).",
    )
    read_only: bool = Field(False, description="Open a frozen index; every write is refused.")
    memory_index: bool = Field(
        True,
        description=(
            "Answer queries from an in-memory copy of vectors and postings, loaded on first "
            "query or warm_up(). Off: every query is answered by SQL in DuckDB (one-shot use)."
        ),
    )
    memory_budget: ByteSize | None = Field(
        None,
        description=(
            "The most memory the in-memory index may take (bytes, or e.g. 512MB, 2GiB); one"
            " that would need more is not loaded, and queries are answered by SQL. Default:"
            " what the container (cgroup) or the machine has available when it loads."
        ),
    )
    quantize: Quantization | None = Field(
        None,
        description=(
            "Also store int8 codes of the vectors and search them (a quarter of the memory),"
            " rescoring the best candidates exactly. Unset: what the index records; set on an"
            " index without it, the index is converted when opened read-write."
        ),
    )
    language: str | None = Field(
        None,
        description=(
            "The Snowball language whose word forms BM25 indexes Latin-script words as"
            " (english, german, french, spanish, ...; Cyrillic, Greek, Arabic and Armenian words"
            " use their own). Unset: what the index records (english for a new one); set to"
            " another, the index is re-tokenized when opened read-write."
        ),
    )
    fusion: FusionSettings = Field(default_factory=FusionSettings)
    max_query_chars: int = Field(
        DEFAULT_MAX_QUERY_CHARS, ge=1, description="The longest query text, in characters."
    )
    max_query_terms: int = Field(
        DEFAULT_MAX_QUERY_TERMS,
        ge=1,
        description="The most distinct terms (words and codes) a query may have.",
    )
    auth_token: str | None = Field(
        None,
        description="Bearer token the MCP server over HTTP requires (mcp --transport http).",
    )
    http: HttpLimits = Field(default_factory=HttpLimits)

    @field_validator("db_path", mode="before")
    @classmethod
    def _path_unless_url(cls, value: object) -> object:
        # A URL stays a string: as a Path, "https://h/x" would lose a slash.
        return value if is_url(value) or isinstance(value, Path) else Path(str(value))

    @field_validator("max_age", mode="before")
    @classmethod
    def _duration(cls, value: object) -> object:
        # Text such as "6h" (the environment, an SDK argument); a number is seconds already.
        return parse_duration(value) if isinstance(value, str) else value

    @classmethod
    def resolve(cls, **given: Any) -> Settings:
        """Settings from arguments, where an argument left at None falls back to the
        environment, then to the default (the rule every entry point follows)."""
        arguments = {name: value for name, value in given.items() if value is not None}
        try:
            return cls(**arguments)
        except ValidationError as error:
            raise InvalidSettingError(_first_problem(error, arguments)) from None


def _first_problem(error: ValidationError, arguments: dict[str, Any]) -> str:
    """pydantic's report as one line naming where the bad value came from: the argument, or
    its ``DUCKDB_VECTORS_*`` variable."""
    problem = error.errors()[0]
    path = [str(part) for part in problem["loc"]]
    if error.title == Settings.__name__ and path and path[0] in arguments:
        where = path[0]
    else:  # from the environment (FusionSettings reads its own prefix)
        prefixes = {model.__name__: model.model_config["env_prefix"] for model in _SETTINGS}
        where = prefixes.get(error.title, "DUCKDB_VECTORS_") + "_".join(path).upper()
    message = problem["msg"].removeprefix("Value error, ")
    return f"{where}={problem['input']!r} is not valid: {message}"


_SETTINGS = (Settings, FusionSettings, HttpLimits)
