"""The ``duckdb-vectors`` console script.

SIGINT and SIGTERM stop the command quietly from its first moment, during its imports too;
``cli.main`` handles them from there on.
"""

from __future__ import annotations

import signal
import sys


def main() -> None:
    def stop(signal_number: int, _frame: object) -> None:
        print("Interrupted.", file=sys.stderr)
        sys.exit(128 + signal_number)

    for number in (signal.SIGINT, signal.SIGTERM):
        signal.signal(number, stop)
    from .cli import main as run_command  # the imports the handlers above stand guard over

    run_command()
