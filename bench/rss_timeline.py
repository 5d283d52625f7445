"""Run a command and sample its resident memory: the peak, and whether it grows with the run.

    python bench/rss_timeline.py [--every SECONDS] [--points N] COMMAND [ARGS...]

Prints the exit code, wall time and peak RSS (sampled from /proc, Linux only), then N evenly
spaced samples with the command's stderr lines in between, so a phase (the reading, the commit,
the compaction) can be matched to the memory it takes. ``/usr/bin/time -v`` gives the peak
alone; this shows where it is. Example, the index-run measurement in docs/performance.md:

    python bench/rss_timeline.py duckdb-vectors index --from-parquet rows.parquet \\
        --db big.duckdb --backend hashing:256 --no-progress
"""

from __future__ import annotations

import argparse
import subprocess
import threading
import time
from pathlib import Path


def rss_mb(pid: int) -> int | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    except (FileNotFoundError, ProcessLookupError):
        pass
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--every", type=float, default=0.2, help="seconds between samples")
    parser.add_argument("--points", type=int, default=40, help="samples printed")
    parser.add_argument("command", nargs=argparse.REMAINDER)
    arguments = parser.parse_args()
    started = time.monotonic()
    process = subprocess.Popen(arguments.command, stderr=subprocess.PIPE, text=True)
    lines: list[tuple[float, str]] = []

    def collect_stderr() -> None:
        assert process.stderr is not None
        for line in process.stderr:
            lines.append((time.monotonic() - started, line.rstrip()[:160]))

    reader = threading.Thread(target=collect_stderr, daemon=True)
    reader.start()
    samples: list[tuple[float, int]] = []
    while process.poll() is None:
        if (mb := rss_mb(process.pid)) is not None:
            samples.append((time.monotonic() - started, mb))
        time.sleep(arguments.every)
    reader.join(timeout=1)
    at, peak = max(samples, key=lambda sample: sample[1], default=(0.0, 0))
    wall = time.monotonic() - started
    print(f"exit {process.returncode}, {wall:.1f} s, peak RSS {peak} MB at {at:.1f} s")
    step = max(1, len(samples) // arguments.points)
    shown = [(t, f"rss {mb} MB") for t, mb in samples[::step]] + lines
    for t, text in sorted(shown):
        print(f"{t:8.1f}  {text}")


if __name__ == "__main__":
    main()
