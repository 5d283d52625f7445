"""Run the fuzz targets: ``PYTHONPATH=tests python -m fuzz [--seconds N] [TARGET ...]``.

Each target runs for N seconds in a process of its own under atheris (libFuzzer), starting from
its seeds; a crash, an undeclared exception, an input slower than ``TIMEOUT_SECONDS`` or a
process past ``RSS_LIMIT_MB`` stops it, and the input is saved in ``--out`` (its path and a
preview are printed). ``--replay TARGET FILE...`` runs saved inputs again without atheris.
The exit status is 1 when any target found something.
"""

from __future__ import annotations

import argparse
import importlib
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .harness import Target

# What the child process instruments for coverage, with the targets' module and each target's
# own ``libraries``.
INSTRUMENTED = ["duckdb_vectors", "fuzz"]
TARGETS_MODULE = "fuzz.targets"
OUTPUT_TAIL = 40  # lines of a failed target's output shown
# libFuzzer's exit codes for a crash (an uncaught exception), a slow input, too much memory.
VERDICTS = {77: "uncaught exception", 70: "slower than the limit", 71: "past the memory cap"}


@dataclass
class Outcome:
    name: str
    returncode: int
    runs: int
    seconds: float
    coverage: int
    artifacts: list[Path]
    output: str

    @property
    def verdict(self) -> str:
        if self.returncode == 0:
            return "ok"
        if self.returncode < 0:
            return f"killed by signal {-self.returncode}"
        return VERDICTS.get(self.returncode, f"exit status {self.returncode}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m fuzz", description=__doc__)
    parser.add_argument("targets", nargs="*", help="the targets to run (default: all)")
    parser.add_argument("--seconds", type=int, default=30, help="per target (default 30)")
    parser.add_argument("--out", type=Path, default=Path("fuzz-findings"), help="saved inputs")
    parser.add_argument("--timeout", type=int, help="seconds an input may take (default 5)")
    parser.add_argument("--rss-limit-mb", type=int, help="the memory cap (default 2048)")
    parser.add_argument(
        "--targets-from",
        default=TARGETS_MODULE,
        metavar="MODULE",
        help="a module with a TARGETS registry (your own chunkers'; default: the package's)",
    )
    parser.add_argument("--replay", metavar="TARGET", help="run the FILEs through TARGET")
    parser.add_argument("--list", action="store_true", help="list the targets and exit")
    parser.add_argument("--child", metavar="TARGET", help=argparse.SUPPRESS)
    parser.add_argument("--instrument", action="append", default=[], help=argparse.SUPPRESS)
    arguments, libfuzzer = parser.parse_known_args(argv)
    if arguments.child:
        corpus = arguments.targets  # the child's positional arguments are libFuzzer's folders
        return child(
            arguments.targets_from, arguments.child, arguments.instrument, libfuzzer + corpus
        )
    targets = _targets(arguments.targets_from)

    if arguments.list:
        for target in targets.values():
            print(f"{target.name:16} {target.about}")
        return 0
    if arguments.replay:
        return replay(targets[arguments.replay], [Path(name) for name in arguments.targets])
    unknown = sorted(set(arguments.targets) - set(targets))
    if unknown:
        parser.error(f"no target {', '.join(unknown)}; --list lists them")
    limits = Limits(arguments.seconds, arguments.timeout, arguments.rss_limit_mb)
    outcomes = [
        fuzz(targets[name], arguments.targets_from, limits, arguments.out)
        for name in arguments.targets or targets
    ]
    print(table(outcomes))
    return 0 if all(outcome.returncode == 0 for outcome in outcomes) else 1


@dataclass(frozen=True)
class Limits:
    seconds: int  # per target
    timeout: int | None  # per input (default: the harness's)
    rss_limit_mb: int | None


def _targets(module: str) -> dict[str, Target]:
    return importlib.import_module(module).TARGETS


def fuzz(target: Target, module: str, limits: Limits, out: Path) -> Outcome:
    """Run one target in a child process, from its seeds, for ``limits.seconds``."""
    from .harness import RSS_LIMIT_MB, TIMEOUT_SECONDS, write_seeds

    name, seconds = target.name, limits.seconds
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.iterdir())
    with tempfile.TemporaryDirectory(prefix=f"fuzz-{name}-") as folder:
        corpus, seeds = Path(folder, "corpus"), Path(folder, "seeds")
        corpus.mkdir()
        count = write_seeds(target, seeds)
        print(f"fuzz {name}: {seconds} s from {count} seeds", file=sys.stderr, flush=True)
        command = [
            sys.executable,
            "-m",
            "fuzz",
            f"--targets-from={module}",
            "--child",
            name,
            *(f"--instrument={library}" for library in target.libraries),
            f"-max_total_time={seconds}",
            f"-timeout={limits.timeout or TIMEOUT_SECONDS}",
            f"-rss_limit_mb={limits.rss_limit_mb or RSS_LIMIT_MB}",
            f"-max_len={target.max_len}",
            f"-artifact_prefix={out.resolve()}/{name}-",
            "-print_final_stats=1",
            str(corpus),
            str(seeds),
        ]
        started = time.monotonic()
        # Bounded even if libFuzzer's own limits failed: the seeds' first pass comes on top.
        done = subprocess.run(
            command,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # the traceback in its place, before libFuzzer's verdict
            env={**os.environ, "PYTHONUNBUFFERED": "1"},
            text=True,
            errors="replace",
            timeout=seconds * 3 + 300,
        )
    output = done.stdout
    outcome = Outcome(
        name,
        done.returncode,
        _last_number(r"stat::number_of_executed_units:\s*(\d+)", output),
        time.monotonic() - started,
        _last_number(r"cov: (\d+)", output),
        sorted(set(out.iterdir()) - before),
        output,
    )
    if done.returncode:
        report(outcome)
    return outcome


def report(outcome: Outcome) -> None:
    """A failed target's verdict, the end of its output (the traceback) and each saved input."""
    progress = ("INFO: Instrumenting", "#", '"')  # what libFuzzer logs while it is fine
    lines = [line for line in outcome.output.splitlines() if not line.startswith(progress)]
    tail = "\n".join(lines[-OUTPUT_TAIL:])
    print(f"\n=== {outcome.name}: {outcome.verdict}\n{tail}", file=sys.stderr)
    for artifact in outcome.artifacts:
        preview = artifact.read_bytes()[:300]
        print(f"input saved in {artifact}: {preview!r}", file=sys.stderr)


def table(outcomes: list[Outcome]) -> str:
    rows = ["| target | verdict | runs | coverage | seconds |", "|---|---|---:|---:|---:|"]
    rows += [
        f"| {o.name} | {o.verdict} | {o.runs:,} | {o.coverage:,} | {o.seconds:.0f} |"
        for o in outcomes
    ]
    return "\n".join(rows)


def _last_number(pattern: str, text: str) -> int:
    found = re.findall(pattern, text)
    return int(found[-1]) if found else 0


def child(module: str, name: str, libraries: list[str], libfuzzer: list[str]) -> int:
    """Fuzz one target in this process (atheris takes over and exits)."""
    import atheris

    with atheris.instrument_imports(include=[*INSTRUMENTED, module, *libraries]):
        from .harness import run_one

        target = _targets(module)[name]

    atheris.Setup([sys.argv[0], *libfuzzer], lambda data: run_one(target, data))
    atheris.Fuzz()
    return 0


def replay(target: Target, paths: list[Path]) -> int:
    """Run saved inputs through a target, without atheris: 1 if any still fails."""
    from .harness import run_one

    failed = 0
    for path in paths:
        try:
            run_one(target, path.read_bytes())
        except Exception:
            failed += 1
            print(f"{path}: fails", file=sys.stderr)
            traceback.print_exc()
        else:
            print(f"{path}: ok", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
