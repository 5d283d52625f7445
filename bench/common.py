"""What the benchmark scripts share: the data, the model, the queries, and one way to time.

- ``run(command)`` runs a command in a fresh process and measures it from outside: wall
  seconds, CPU seconds (user + system, every thread) and peak RSS.
- ``run_function(f, *arguments)`` does the same for a module-level function of a bench script,
  run by any Python (``python=`` another checkout's venv, to compare two versions); its JSON
  return value comes back as ``Run.result``.
- ``alternate(contenders, rounds)`` runs the things compared in turn, round after round, so a
  shared machine's load falls on all of them alike; ``summary`` and ``median`` reduce them.
- ``latencies(call, repeat)`` times a call repeated inside one warm process: p50 and p95.
"""

from __future__ import annotations

import inspect
import json
import os
import platform
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
OUT = HERE / "out"
SHARED = Path(os.environ.get("DUCKDB_VECTORS_SHARED", HERE.parent.parent / "shared"))
DOCS = SHARED / "evaldata" / "docs" / "duckdb" / "docs" / "current"
RAY = SHARED / "evaldata" / "docsqa" / "ray"
MODEL = Path(
    os.environ.get("DUCKDB_VECTORS_MODEL_PATH", SHARED / "models" / "static-256-wordllama")
)
BACKEND = "fastembed:minishlab/potion-multilingual-128M"
SCRIPT = shutil.which("duckdb-vectors", path=str(Path(sys.executable).parent))
DIMENSION = 256

# Questions about the DuckDB documentation (DOCS), as a user would type them.
QUERIES = [
    "how do I read a parquet file?",
    "window functions",
    "ATTACH a database",
    "COPY TO csv with header",
    "list_transform lambda",
    "create a table from a CSV file",
    "export to JSON",
    "install an extension",
    "string similarity functions",
    "date_trunc and date_part",
    "S3 credentials with httpfs",
    "PRAGMA database_size",
    "EXPLAIN ANALYZE profiling",
    "struct and map types",
    "pivot and unpivot",
    "sampling rows with TABLESAMPLE",
    "Python relational API",
    "regular expressions regexp_matches",
    "how much memory does DuckDB use?",
    "recursive CTE",
]


@dataclass
class Run:
    """One measured process."""

    seconds: float
    cpu_s: float
    peak_rss_mb: float
    stdout: str
    stderr: str
    result: Any = None  # what the function returned, for run_function


# The meter: a small Python that runs the command and reports its child's usage. It is a fresh
# parent on purpose: Linux starts a child's peak RSS at its parent's, so a command started by a
# big benchmark process would report at least that process's size.
METER = """
import json, resource, subprocess, sys, time
out, *command = sys.argv[1:]
started = time.perf_counter()
code = subprocess.call(command)
seconds = time.perf_counter() - started
usage = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as handle:
    json.dump({"code": code, "seconds": seconds, "cpu_s": usage.ru_utime + usage.ru_stime,
               "peak_rss_mb": usage.ru_maxrss / 1024}, handle)
sys.exit(code)
"""


def run(
    command: Sequence[str | Path],
    *,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
    input: str | None = None,
    timeout: float | None = None,
) -> Run:
    """Run ``command`` in a fresh process: its wall time, CPU time, peak RSS and output.

    Raises RuntimeError (with the end of its stderr) if it fails or outlives ``timeout``.
    """
    arguments = [str(part) for part in command]
    with tempfile.TemporaryDirectory(prefix="bench-run-") as folder:
        usage_file = Path(folder) / "usage.json"
        meter = subprocess.Popen(
            [sys.executable, "-c", METER, str(usage_file), *arguments],
            env=None if env is None else dict(env),
            cwd=cwd,
            stdin=subprocess.PIPE if input is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # so that a timeout ends the command too
        )
        try:
            stdout, stderr = meter.communicate(input, timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(meter.pid, signal.SIGKILL)
            meter.communicate()
            raise RuntimeError(f"{shlex.join(arguments)} took over {timeout} s") from None
        if meter.returncode or not usage_file.exists():
            tail = "\n".join(stderr.strip().splitlines()[-15:])
            raise RuntimeError(f"{shlex.join(arguments)} failed ({meter.returncode}):\n{tail}")
        usage = json.loads(usage_file.read_text())
    return Run(usage["seconds"], usage["cpu_s"], usage["peak_rss_mb"], stdout, stderr)


# How run_function calls a function: bench/ on the path, the module imported by name.
CALL = """
import json, sys
folder, module, name, out, arguments = sys.argv[1:]
sys.path.insert(0, folder)
result = getattr(__import__(module), name)(*json.loads(arguments))
with open(out, "w") as handle:
    json.dump(result, handle)
"""


def run_function(
    function: Callable[..., Any],
    *arguments: Any,
    python: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    timeout: float | None = None,
) -> Run:
    """``function(*arguments)`` in a fresh ``python`` process (default: this one's), measured
    as ``run`` measures a command. ``function`` is a module-level function of a bench script;
    its arguments and return value go through JSON. ``-P`` keeps the working directory off the
    path, so ``python`` imports the duckdb_vectors its own venv installs."""
    source = Path(inspect.getsourcefile(function) or "")
    with tempfile.TemporaryDirectory(prefix="bench-call-") as folder:
        out = Path(folder) / "result.json"
        command = [python or sys.executable, "-P", "-c", CALL, source.parent, source.stem]
        command += [function.__name__, out, json.dumps(arguments)]
        measured = run(command, env=env, timeout=timeout)
        measured.result = json.loads(out.read_text())
    return measured


def alternate(
    contenders: Mapping[str, Callable[[], Run]],
    rounds: int,
    *,
    rotate: bool = True,
    log: Callable[[str], None] | None = None,
) -> dict[str, list[Run]]:
    """Each contender once a round, for ``rounds`` rounds. With ``rotate``, each round starts
    one contender later, so none always runs right after the same other: a process that starts
    just after a big one has freed its memory runs faster."""
    names = list(contenders)
    runs: dict[str, list[Run]] = {name: [] for name in names}
    for number in range(rounds):
        shift = number % len(names) if rotate else 0
        for name in names[shift:] + names[:shift]:
            runs[name].append(contenders[name]())
            if log:
                log(f"  {name} #{number + 1}: {runs[name][-1].seconds:.2f} s")
    return runs


def median(values: Iterable[float]) -> float:
    return statistics.median(list(values))


def summary(runs: Sequence[Run]) -> dict[str, Any]:
    """The medians of a contender's runs, and each run's seconds."""
    return {
        "seconds": median(run.seconds for run in runs),
        "cpu_s": median(run.cpu_s for run in runs),
        "peak_rss_mb": median(run.peak_rss_mb for run in runs),
        "rounds_s": [round(run.seconds, 3) for run in runs],
    }


def timed(function: Callable[..., Any], *arguments: Any, **keywords: Any) -> tuple[Any, float]:
    """``function(*arguments, **keywords)`` and the milliseconds it took."""
    started = time.perf_counter()
    result = function(*arguments, **keywords)
    return result, (time.perf_counter() - started) * 1000


def percentiles(samples_ms: Sequence[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {
        "p50_ms": statistics.median(ordered),
        "p95_ms": ordered[min(len(ordered) - 1, int(len(ordered) * 0.95))],
        "n": len(ordered),
    }


def latencies(call: Callable[[int], object], repeat: int, warm: int = 5) -> dict[str, float]:
    """p50 and p95 of ``call(i)`` for i in range(repeat), after ``warm`` untimed calls."""
    for i in range(min(warm, repeat)):
        call(i)
    return percentiles([timed(call, i)[1] for i in range(repeat)])


def rss_mb() -> float:
    """This process's resident set size now (Linux)."""
    kib = rss_kib(os.getpid())
    if kib is None:
        raise RuntimeError("no VmRSS in /proc/self/status: this benchmark needs Linux")
    return kib / 1024


def rss_kib(pid: int) -> int | None:
    """A process's resident set size now, read from outside it (VmRSS); None once it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


def machine() -> dict[str, Any]:
    """What a result was measured on, and with which checkout of these scripts."""
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    return {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, {cpu}",
        "python": platform.python_version(),
        "commit": commit or None,
        "loadavg_1m": os.getloadavg()[0],
    }


def tree_python(tree: Path) -> Path:
    """The Python of another checkout (its ``.venv``, made by ``make install`` there)."""
    python = tree / ".venv" / "bin" / "python"
    if not python.exists():
        raise SystemExit(f"no {python}: run `make install` in {tree} first")
    return python


def write_rows(path: Path, rows: int) -> None:
    """``rows`` synthetic chunks as Parquet (the ``index --from-parquet`` layout): random float32
    vectors of DIMENSION, ~40-word texts drawn from word0 .. word5000, 20 chunks a source."""
    import duckdb

    with duckdb.connect() as connection:
        connection.execute("SELECT setseed(0.17)")
        connection.execute(
            f"""COPY (
                SELECT 'row-' || i AS chunk_id,
                       'doc-' || (i // 20) || '.md' AS source,
                       array_to_string(list_transform(range(40),
                           lambda w: 'word' || (random() * 5000)::INT), ' ') AS text,
                       list_transform(range({DIMENSION}), lambda d: (random() - 0.5)::FLOAT)
                           AS embedding
                FROM range({rows}) t(i)
            ) TO '{path}' (FORMAT parquet)"""
        )


def write_json(path: Path, result: Any) -> None:
    """Write a benchmark's raw result, creating its folder if needed."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n")
