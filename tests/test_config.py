"""Configuration precedence: constructor argument > DUCKDB_VECTORS_* environment > default."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import DEFAULT_BACKEND, STATIC_MODEL

from duckdb_vectors import InvalidSettingError, ReadOnlyError, Settings, VectorStore
from duckdb_vectors.config import describe_age, parse_duration


def test_defaults() -> None:
    settings = Settings()
    assert settings.db_path == Path("vectors.duckdb")
    assert settings.backend is None and settings.read_only is False
    assert settings.memory_index is True


def test_environment_configures_the_store(monkeypatch, tmp_path: Path) -> None:
    path = tmp_path / "env.duckdb"
    monkeypatch.setenv("DUCKDB_VECTORS_DB_PATH", str(path))
    monkeypatch.setenv("DUCKDB_VECTORS_BACKEND", DEFAULT_BACKEND)
    monkeypatch.setenv("DUCKDB_VECTORS_MODEL_PATH", str(STATIC_MODEL))
    with VectorStore() as store:
        store.add_texts(["configured by the environment"])
    assert path.is_file()
    monkeypatch.setenv("DUCKDB_VECTORS_READ_ONLY", "true")
    with VectorStore() as store, pytest.raises(ReadOnlyError):
        store.add_texts(["nope"])


def test_arguments_override_the_environment(monkeypatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DUCKDB_VECTORS_DB_PATH", str(tmp_path / "from-env.duckdb"))
    monkeypatch.setenv("DUCKDB_VECTORS_READ_ONLY", "true")
    with VectorStore(
        tmp_path / "from-arg.duckdb", DEFAULT_BACKEND, model_path=STATIC_MODEL, read_only=False
    ) as store:
        store.add_texts(["x"])
    assert (tmp_path / "from-arg.duckdb").is_file()
    assert not (tmp_path / "from-env.duckdb").exists()


def test_fusion_knobs_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("DUCKDB_VECTORS_FUSION_METHOD", "rrf")
    monkeypatch.setenv("DUCKDB_VECTORS_FUSION_RRF_K", "20")
    fusion = Settings().fusion
    assert (fusion.method, fusion.rrf_k) == ("rrf", 20)


def test_http_limits_from_the_environment(monkeypatch) -> None:
    monkeypatch.setenv("DUCKDB_VECTORS_HTTP_MAX_BODY", "2MB")
    monkeypatch.setenv("DUCKDB_VECTORS_HTTP_READ_TIMEOUT", "2m")
    monkeypatch.setenv("DUCKDB_VECTORS_MAX_QUERY_TERMS", "50")
    settings = Settings.resolve()
    assert (settings.http.max_body, settings.http.read_timeout) == (2_000_000, 120.0)
    assert (settings.http.max_concurrency, settings.http.queue) == (16, 64)
    assert (settings.max_query_chars, settings.max_query_terms) == (10_000, 50)


@pytest.mark.parametrize(
    ("variable", "value", "message"),
    [
        ("DUCKDB_VECTORS_MAX_AGE", "soon", "DUCKDB_VECTORS_MAX_AGE='soon' is not valid: 'soon'"),
        ("DUCKDB_VECTORS_READ_ONLY", "maybe", "DUCKDB_VECTORS_READ_ONLY='maybe' is not valid"),
        (
            "DUCKDB_VECTORS_MEMORY_BUDGET",
            "lots",
            "DUCKDB_VECTORS_MEMORY_BUDGET='lots' is not valid: could not parse",
        ),
        (
            "DUCKDB_VECTORS_FUSION_LEXICAL_WEIGHT",
            "3",
            "DUCKDB_VECTORS_FUSION_LEXICAL_WEIGHT='3' is not valid: Input should be less than",
        ),
        ("DUCKDB_VECTORS_HTTP_QUEUE", "-1", "DUCKDB_VECTORS_HTTP_QUEUE='-1' is not valid"),
        ("DUCKDB_VECTORS_HTTP_READ_TIMEOUT", "slow", "DUCKDB_VECTORS_HTTP_READ_TIMEOUT='slow'"),
        ("DUCKDB_VECTORS_MAX_QUERY_CHARS", "0", "DUCKDB_VECTORS_MAX_QUERY_CHARS='0' is not valid"),
    ],
)
def test_a_bad_setting_in_the_environment_is_one_line_naming_the_variable(
    monkeypatch, variable: str, value: str, message: str
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(InvalidSettingError) as raised:
        Settings.resolve()
    assert str(raised.value).startswith(message) and "\n" not in str(raised.value)


def test_a_bad_argument_names_the_argument(tmp_path: Path) -> None:
    with pytest.raises(InvalidSettingError, match=r"^max_age='soon' is not valid"):
        VectorStore(tmp_path / "x.duckdb", max_age="soon")


@pytest.mark.parametrize(
    ("text", "seconds"), [("90", 90), ("90s", 90), ("15m", 900), ("6h", 21600), ("2d", 172800)]
)
def test_durations(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(None, "an unknown time"), (40, "40s"), (720, "12.0m"), (5400, "1.5h"), (172800, "2.0d")],
)
def test_ages_are_described_in_the_units_durations_take(seconds: float | None, text: str) -> None:
    assert describe_age(seconds) == text


def test_a_store_opens_on_settings_resolved_once(monkeypatch, tmp_path: Path) -> None:
    """What an entry point resolved itself (the MCP server) opens the store as given."""
    monkeypatch.setenv("DUCKDB_VECTORS_MODEL_PATH", str(STATIC_MODEL))
    path = tmp_path / "resolved.duckdb"
    settings = Settings.resolve(db_path=path, backend=DEFAULT_BACKEND, memory_index=False)
    with VectorStore.from_settings(settings) as store:
        store.add_texts(["opened from settings"])
        assert store.settings is settings and store.read_only is False
    read_only = settings.model_copy(update={"read_only": True})
    with VectorStore.from_settings(read_only) as store, pytest.raises(ReadOnlyError):
        store.add_texts(["refused"])
