"""Trim step: uninstall every package the image's serving path does not need.

The toolkit carries all of duckdb-vectors' dependencies: fastembed, and with it onnxruntime
and Pillow, for transformer models; the Docker SDK for ``bake``. A runtime image serves one
index with one model. What it needs is the package's own dependencies that serving imports
(``serving.load``: search, MCP, a runtime append, the model embedding a text), with all that
those declare they require. A static model is embedded without fastembed, so its image keeps
neither fastembed, onnxruntime nor Pillow; a transformer model imports fastembed and keeps
them. Everything else is uninstalled, pip included.

Beyond the package's own dependencies only declared requirements count: a library that
imports an optional package because it happens to be installed (pypdf imports Pillow to read
a PDF's images) does not keep it.

    python -m duckdb_vectors.container.prune_packages [ALSO ...]

ALSO names packages to remove even though a kept one requires them (hf-xet: downloads, which
a frozen image never makes).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from types import ModuleType

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from . import serving

PACKAGE = "duckdb-vectors"


def needed_packages(modules: Iterable[ModuleType]) -> set[str]:
    """The installed packages serving needs, canonically named: this package, those of its
    dependencies that own one of ``modules``, and everything they require."""
    owners = imported_packages(modules)
    dependencies = _applicable(metadata.requires(PACKAGE) or [], set())
    roots = [
        requirement for requirement in dependencies if canonicalize_name(requirement.name) in owners
    ]
    return {canonicalize_name(PACKAGE)} | required_closure(roots)


def imported_packages(modules: Iterable[ModuleType]) -> set[str]:
    """The installed packages (canonical names) that own the top-level module of one of
    ``modules``."""
    owners = metadata.packages_distributions()
    tops = {module.__name__.partition(".")[0] for module in modules}
    return {canonicalize_name(name) for top in tops for name in owners.get(top, [])}


def required_closure(requirements: Iterable[Requirement]) -> set[str]:
    """The installed packages ``requirements`` name, and all that they require in turn
    (environment markers and extras evaluated), canonically named."""
    found: set[str] = set()
    seen: set[tuple[str, frozenset[str]]] = set()
    pending = list(requirements)
    while pending:
        requirement = pending.pop()
        name = canonicalize_name(requirement.name)
        if (name, frozenset(requirement.extras)) in seen:
            continue
        seen.add((name, frozenset(requirement.extras)))
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue  # an optional requirement nobody installed
        found.add(name)
        pending.extend(_applicable(requires, requirement.extras))
    return found


def installed_packages() -> dict[str, str]:
    """Canonical name -> name as installed, of every package in this environment."""
    names = (dist.metadata["Name"] for dist in metadata.distributions())
    return {canonicalize_name(name): name for name in names}


def main(also: list[str]) -> None:
    needed = needed_packages(serving.load())
    installed = installed_packages()
    removed = sorted(
        installed[name]
        for name in installed
        if name not in needed or name in {canonicalize_name(other) for other in also}
    )
    print(f"keeping the {len(installed) - len(removed)} packages serving needs;", end=" ")
    print(f"removing {len(removed)}: {', '.join(removed)}", flush=True)
    subprocess.run(
        [sys.executable, "-m", "pip", "uninstall", "--yes", "--quiet", *removed], check=True
    )


def _applicable(requires: list[str], extras: set[str]) -> list[Requirement]:
    parsed = (Requirement(text) for text in requires)
    return [requirement for requirement in parsed if _applies(requirement, extras)]


def _applies(requirement: Requirement, extras: set[str]) -> bool:
    """Whether a requirement holds here, for a package installed with ``extras``."""
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({"extra": extra}) for extra in extras or {""})


if __name__ == "__main__":
    main(sys.argv[1:])
