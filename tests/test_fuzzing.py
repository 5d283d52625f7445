"""The fuzzing harness (tests/fuzz, ``make fuzz``) and every input it found, run again.

``FINDINGS`` holds each input a fuzz target failed on, as found; each must now pass its target
(the target feeds it to the same code the fuzzer did). The runner's verdicts are checked on
targets that fail on purpose (``fuzz/selfcheck.py``), through the real runner and libFuzzer.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib.util import find_spec
from pathlib import Path

import pytest
from conftest import REPOSITORY
from fuzz import targets as package
from fuzz.harness import Finding, Registry, declared, given, run_one
from test_chunkers import OTHER_HANDLER_PDF, encrypt_in_an_object_stream

from duckdb_vectors.errors import InvalidFilterError, SkipFile

# (target, input): what each one did is in the test of its fix, named beside it.
FINDINGS = [
    # A resource URI with a newline came back in a two-line error, quoted as sent
    # (test_hostile.py::test_fetch_ids_and_resource_uris_cannot_reach_files).
    ("mcp", b"\x03duckdb-ve\x00\x00\x00\x00\x00\n\x00\x00ctors://doc/..%2F..%3Fetc%1Fpasswd"),
    # A PDF encrypted by a security handler pypdf lacks: its NotImplementedError escaped the
    # chunker (found on a mutated seed of 60 KB; this is the same file cut down)
    # (test_chunkers.py::test_a_pdf_encrypted_by_a_handler_pypdf_lacks_is_skipped_saying_why).
    ("pdf", OTHER_HANDLER_PDF),
    # A PDF whose /Encrypt is held in an object stream: pypdf's AttributeError escaped the
    # chunker (found on a mutated seed of 73 KB; this is the same, made by the test)
    # (test_chunkers.py::test_a_pdf_that_breaks_pypdfs_reader_is_skipped_saying_why).
    ("pdf", encrypt_in_an_object_stream()),
    # A bundle whose library name holds a newline (YAML folds "du\n\nrb" to "du\nrb"): the
    # error named it as it was, on two lines
    # (test_bundle.py::test_a_bad_bundle_file_is_one_line_naming_it).
    (
        "bundle",
        b"ylibraries:\n  - {name: du\n\nrb, source: 'https://duckdbAorg/docs/',"
        b" descrrg/do\n\niSQL}\n",
    ),
    # A manifest naming a language Snowball has no stemmer for: every search raised its KeyError
    # (test_hostile.py::test_a_manifest_naming_a_language_without_a_stemmer).
    (
        "manifest",
        b'{"backend":"hashing:16","model_fingerprint":"hashzng-blake2b-16","dimension":16,"tokenizer":"words-v3","language":"lnigseh","schema_version":10,"chunk_count":12,"content_hash":"51ee81c00f7e79c60bd7aaca2aff9b0b4763ba67e37328b6f0cefab0efc0259a","slice_keys":[],"slices":[],"quantization":null,"lexical_weight":0.7,"sources":[],"libraries":[],"duckdb_version":"2.0.1","package_version":"0.1.0","created_at":"2026-12-06T05:51:36.522708Z","built_at":"2026-12-06T05:51:36.522713Z"}',
    ),
]


@pytest.mark.parametrize(("target", "data"), FINDINGS, ids=[f[0] for f in FINDINGS])
def test_each_finding_now_passes_its_target(target: str, data: bytes) -> None:
    run_one(package.TARGETS[target], data)


@pytest.mark.slow
def test_every_target_passes_its_first_seeds() -> None:
    """The targets run as `make fuzz` starts them (without the fuzzer): seeds that fail would
    stop the run before it fuzzes anything."""
    for target in package.TARGETS.values():
        for seed in list(target.seeds())[:2]:
            if len(seed) <= target.max_len:
                run_one(target, seed)


def _raises(error: Exception):
    def target(data: bytes) -> None:
        raise error

    return target


@pytest.mark.parametrize(
    ("error", "passes"),
    [
        (InvalidFilterError("filter field names must be non-empty strings"), True),
        (SkipFile("binary file"), True),
        (InvalidFilterError("two\nlines"), False),  # the package's own, but not one line
        (KeyError("inside"), False),
        (UnicodeEncodeError("utf-8", "\udcff", 0, 1, "surrogates"), False),  # a ValueError
        (ValueError("raised by a test, not the package"), False),
    ],
)
def test_an_input_passes_on_the_packages_own_one_line_errors_only(
    error: Exception, passes: bool
) -> None:
    registry = Registry()
    registry.target(given())(_raises(error))
    if passes:
        run_one(registry.targets["target"], b"")
    else:
        with pytest.raises((Finding, type(error))):
            run_one(registry.targets["target"], b"")


def test_a_plain_value_error_counts_as_declared_only_from_the_package() -> None:
    from duckdb_vectors.inputs import parsed_query

    with pytest.raises(ValueError) as raised:
        parsed_query(" ", "english")
    assert declared(raised.value)
    assert not declared(ValueError("from elsewhere"))


@pytest.mark.slow
@pytest.mark.skipif(
    find_spec("atheris") is None and not os.environ.get("CI"),
    reason="atheris is not installed: make fuzz-tools",
)
def test_the_runner_reports_each_kind_of_finding_and_saves_its_input(tmp_path: Path) -> None:
    out = tmp_path / "findings"
    limits = ["--seconds", "2", "--timeout", "2", "--rss-limit-mb", "400"]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "fuzz",
            "--targets-from",
            "fuzz.selfcheck",
            *limits,
            "--out",
            str(out),
        ],
        cwd=REPOSITORY,
        env={**os.environ, "PYTHONPATH": f"{REPOSITORY / 'tests'}"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 1, done.stderr
    rows = [line.split("|") for line in done.stdout.splitlines()[2:]]  # the table's body
    assert {row[1].strip(): row[2].strip() for row in rows} == {
        "crashes": "uncaught exception",
        "hangs": "slower than the limit",
        "grows": "past the memory cap",
    }, done.stdout
    assert "KeyError: b'" in done.stderr  # the traceback, shown
    saved = sorted(path.name.split("-")[1] for path in out.iterdir())
    assert saved == ["crash", "oom", "timeout"]  # each input, to replay
