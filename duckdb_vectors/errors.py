"""Exceptions raised by duckdb-vectors. Every message is one line that says what to do."""

from __future__ import annotations

from importlib.util import find_spec


class DuckDBVectorsError(Exception):
    """Base class: catch this to handle any error the library raises on purpose."""


class ReadOnlyError(DuckDBVectorsError):
    """A write was attempted on a store opened with ``read_only=True``."""


class IndexMismatchError(DuckDBVectorsError):
    """The index was built with another model, dimension or tokenizer than the one in use."""


class NotAnIndexError(DuckDBVectorsError):
    """The file is not a duckdb-vectors index (or is damaged), or does not exist when read-only."""


class InvalidFilterError(DuckDBVectorsError, ValueError):
    """A metadata filter is not valid S3 Vectors filter syntax."""


class InvalidRankingSQLError(DuckDBVectorsError, ValueError):
    """An injected ranking SQL fragment is not a single read-only expression."""


class InvalidSettingError(DuckDBVectorsError, ValueError):
    """A setting (an argument or a ``DUCKDB_VECTORS_*`` variable) has a value it cannot take."""


class InvalidUrlError(DuckDBVectorsError, ValueError):
    """A base URL (or URL style) that cannot make citation URLs."""


class SliceError(DuckDBVectorsError, ValueError):
    """Slice metadata (``index --set``) that is malformed, or a run that would prune another
    slice's chunks."""


class InvalidSourceError(DuckDBVectorsError):
    """A SOURCE that names nothing this version can read, or that cannot be read at all."""


class BundleError(DuckDBVectorsError):
    """A bundle file (docs.yaml) that cannot be read, or one of its libraries that fails."""


class UnknownLibraryError(DuckDBVectorsError, ValueError):
    """A search scoped to a library or version the index does not hold."""


class EmbedderError(DuckDBVectorsError):
    """The embedding backend is unknown, misconfigured, or its model cannot be loaded."""


class RemoteIndexError(DuckDBVectorsError):
    """A published index that cannot be fetched (and has no cached copy), or is refused."""


class UnknownIdError(DuckDBVectorsError, LookupError):
    """``fetch`` was given an id that is neither a chunk id nor a source of the index."""


class EvaluationInputError(DuckDBVectorsError, ValueError):
    """The queries, judgments and index have nothing in common to measure."""


class SkillError(DuckDBVectorsError, ValueError):
    """A skill that cannot be written as asked: a bad name, or nothing to describe."""


class MissingExtraError(DuckDBVectorsError):
    """A verb needs a part of the package that is installed as an extra, and it is not."""


# The modules each extra of pyproject.toml installs, as a verb imports them.
EXTRA_MODULES = {
    "index": ("pyromark", "docutils", "selectolax", "pypdf", "pathspec", "protego", "defusedxml"),
    "mcp": ("mcp",),
    "bake": ("docker", "mcp", "pyromark", "docutils", "selectolax", "pypdf", "pathspec"),
}


def require_extra(extra: str, what: str, modules: tuple[str, ...] | None = None) -> None:
    """Raise MissingExtraError, naming the install command, unless ``extra`` (or those of its
    ``modules`` that ``what`` imports) is installed."""
    wanted = EXTRA_MODULES[extra] if modules is None else modules
    missing = [module for module in wanted if find_spec(module) is None]
    if missing:
        raise MissingExtraError(
            f"{what} needs {', '.join(missing)}: pip install 'duckdb-vectors[{extra}]'"
        )


# The container toolkit's (bake, inspect).
class EngineError(DuckDBVectorsError):
    """No engine answers, or it refused a request."""


class BuildError(DuckDBVectorsError):
    """A build step failed; ``log_tail`` holds the build's last lines of output."""

    def __init__(self, message: str, log_tail: list[str]) -> None:
        super().__init__(message)
        self.log_tail = log_tail


class BakeError(DuckDBVectorsError):
    """The bake could not make a working image; nothing was tagged."""


class BakeInputError(BakeError, ValueError):
    """The documents folder, model folder or tag given to ``bake`` cannot be used."""


class ImageError(DuckDBVectorsError):
    """The image is not there, or carries no manifest."""


# Not a DuckDBVectorsError: a chunker's word to the indexer, not an error.
class SkipFile(Exception):
    """Raised by a chunker for a file it cannot index; the message is the reason shown."""


# Not a DuckDBVectorsError either: the HTTP fetcher's word to a web source (sources/http.py),
# which makes it a page's problem, or, for the start page, an InvalidSourceError.
class FetchError(Exception):
    """A URL that gave no document; the message is one line, without credentials.

    ``gone``: the server says it is not there (404, 410): a listed page is dropped.
    ``skipped``: refused by a rule (too large, robots.txt, a redirect off the site).
    """

    def __init__(
        self, reason: str, *, status: int | None = None, gone: bool = False, skipped: bool = False
    ) -> None:
        super().__init__(reason)
        self.status = status
        self.gone = gone
        self.skipped = skipped
