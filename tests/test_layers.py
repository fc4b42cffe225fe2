"""The import graph of src/perflab keeps the layers of docs/ARCHITECTURE.md: a module imports
only from its own layer or below (imports inside functions count too), and no two packages of
one layer import each other both ways."""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

SOURCE = Path(__file__).resolve().parent.parent / "src" / "perflab"
LAYERS = [  # bottom up, as docs/ARCHITECTURE.md draws them
    ["version", "errors", "procs", "sentinel", "say", "stats", "output"],
    ["domain"],
    ["plan"],
    ["server", "store", "studies"],
    ["load", "probes", "lab", "digest"],
    ["analysis"],
    ["running"],
    ["health", "tune", "report"],
    ["api", "__init__", "cli"],
]
LAYER_OF = {name: number for number, names in enumerate(LAYERS) for name in names}


def _unit(module: str) -> str:
    """The top-level part of perflab a dotted module belongs to ('running', 'plan', ...)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _imports() -> dict[str, set[str]]:
    """Per module file (dotted), the perflab modules it imports, anywhere in it."""
    found = {}
    for path in SOURCE.rglob("*.py"):
        relative = path.relative_to(SOURCE.parent).with_suffix("")
        module = ".".join(relative.parts)
        names = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
            elif isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
        found[module] = {n for n in names if n == "perflab" or n.startswith("perflab.")}
    return found


def test_every_part_of_perflab_has_a_layer():
    units = {_unit(module) for module in _imports()}
    assert units - set(LAYER_OF) == set(), "a new part: give it a layer here and in the docs"


def test_no_import_goes_up_a_layer_and_no_two_packages_import_each_other():
    upward, edges = [], set()
    for module, imported in _imports().items():
        unit = _unit(module)
        for target in imported:
            other = _unit(target)
            if other == unit:
                continue
            edges.add((unit, other))
            if LAYER_OF[other] > LAYER_OF[unit]:
                upward.append(f"{module} imports {target}")
    assert not upward, upward
    both_ways = sorted({tuple(sorted(e)) for e in edges if (e[1], e[0]) in edges})
    assert not both_ways, both_ways


def test_the_plan_parser_defines_no_type_and_is_imported_only_to_parse():
    """The study's types are domain.py's: plan.py only turns TOML into them, so no module
    (src, tests or bench) imports plan.py to get a type."""
    parser = ast.parse((SOURCE / "plan.py").read_text())
    assert not [n.name for n in parser.body if isinstance(n, ast.ClassDef)]
    functions = {n.name for n in parser.body if isinstance(n, ast.FunctionDef)}
    wrong = []
    for path in [*SOURCE.rglob("*.py"), *(SOURCE.parents[1] / "tests").glob("*.py"),
                 *(SOURCE.parents[1] / "bench").glob("*.py")]:
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and node.module == "perflab.plan":
                wrong += [f"{path.name}: {a.name}" for a in node.names if a.name not in functions]
    assert not wrong, f"import these from perflab.domain: {wrong}"
