"""Built-in studies: plan files that reproduce the source documents, found by name."""

from __future__ import annotations

from pathlib import Path

from perflab.errors import PerflabError
from perflab.plan import Plan, load_plan

STUDIES_DIR = Path(__file__).parent


def builtin_names() -> list[str]:
    return sorted(path.stem.replace("_", "-") for path in STUDIES_DIR.glob("*.toml"))


def builtin_path(name: str) -> Path:
    return STUDIES_DIR / f"{name.replace('-', '_')}.toml"


def resolve_plan(name_or_path: str) -> Plan:
    """A built-in study by name, or a plan file by path."""
    path = Path(name_or_path)
    if path.suffix == ".toml" or path.exists():
        if not path.exists():
            raise PerflabError(f"plan file {path} does not exist",
                               hint="check the path, or give a built-in study name "
                               "(see: perflab studies)")
        return load_plan(path)
    builtin = builtin_path(name_or_path)
    if builtin.exists():
        return load_plan(builtin)
    raise PerflabError(
        f"{name_or_path!r} is neither a plan file nor a built-in study",
        hint=f"built-in studies: {', '.join(builtin_names())} (see: perflab studies)",
    )
