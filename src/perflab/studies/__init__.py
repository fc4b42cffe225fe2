"""Built-in studies: plan files that reproduce the source documents, found by name; and
suites, directories of plans run one after another (`versions`: every installed server
build, over the classic sysbench microbenchmarks)."""

from __future__ import annotations

from pathlib import Path

from perflab.domain import HOST_BUILD, Plan
from perflab.errors import PerflabError
from perflab.plan import across_builds, load_plan
from perflab.server import builds

STUDIES_DIR = Path(__file__).parent


def builtin_names() -> list[str]:
    return sorted({path.stem.replace("_", "-") for path in STUDIES_DIR.glob("*.toml")}
                  | {path.parent.name for path in STUDIES_DIR.glob("*/*.toml")})


def suite_paths(name: str) -> list[Path] | None:
    """A suite's plan files in the order they run (by their number), or None when `name` is
    no suite."""
    suite = STUDIES_DIR / name
    if name.startswith((".", "_")) or not suite.is_dir():
        return None
    return sorted(suite.glob("*.toml"), key=lambda path: int(path.stem.split("-")[0]))


def builtin_description(name: str) -> str:
    """What a built-in study measures (a suite: how many studies, over what)."""
    paths = suite_paths(name)
    if paths is not None:
        plans = [load_plan(path) for path in paths]
        return (f"{len(plans)} studies, every installed server build: "
                + ", ".join(plan.workload.name for plan in plans))
    return load_plan(builtin_path(name)).description


def resolve_plans(name_or_path: str) -> list[Plan]:
    """The plans a name stands for: a suite's, in order, across every installed server build;
    else the one plan of resolve_plan."""
    paths = suite_paths(name_or_path)
    if paths is None:
        return [resolve_plan(name_or_path)]
    names = [HOST_BUILD, *(build.name for build in builds.installed())]
    if len(names) < 2:
        raise PerflabError(f"the {name_or_path} study compares server builds, and only the "
                           "host's is installed", hint="perflab servers add mysql-9.7 "
                           "mariadb-11.8 mariadb-10.5 (once per machine)")
    return [across_builds(load_plan(path), names) for path in paths]


def builtin_path(name: str) -> Path:
    return STUDIES_DIR / f"{name.replace('-', '_')}.toml"


def resolve_plan(plan: str | Path | Plan) -> Plan:
    """The one way to a plan: a built-in study by name, a plan file by path, or the Plan
    itself (perflab.load_plan is this, for the API)."""
    if isinstance(plan, Plan):
        return plan
    name_or_path, path = str(plan), Path(plan)
    if path.suffix == ".toml" or path.exists():
        if not path.exists():
            raise PerflabError(f"plan file {path} does not exist",
                               hint="check the path, or give a built-in study name "
                               "(see: perflab studies)")
        return load_plan(path)
    builtin = builtin_path(name_or_path)
    if builtin.exists():
        return load_plan(builtin)
    if suite_paths(name_or_path) is not None:
        raise PerflabError(f"{name_or_path!r} is a suite of several studies, which only "
                           "perflab run takes whole",
                           hint=f"perflab run {name_or_path}; for one of them, give its plan "
                           f"file ({STUDIES_DIR / name_or_path})")
    raise PerflabError(
        f"{name_or_path!r} is neither a plan file nor a built-in study",
        hint=f"built-in studies: {', '.join(builtin_names())} (see: perflab studies)",
    )
