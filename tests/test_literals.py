"""Strings where types belong: a status, kind, direction or verdict is an enum's member, so a
comparison names the member, never its text. Any string-valued enum of src/perflab (a StrEnum,
found from the ast) lends its values to this check: a string literal equal to one of them,
compared (==, !=, in, not in, a match case) outside a module that defines such an enum, is
the member written as text, which mypy cannot follow and a renamed value silently breaks."""

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

SOURCE = Path(__file__).resolve().parent.parent / "src" / "perflab"
ENUM_BASES = {"StrEnum"}
COMPARISONS = (ast.Eq, ast.NotEq, ast.In, ast.NotIn)


def _sources(root: Path = SOURCE) -> dict[str, str]:
    """Every module's text, by its path from the package's parent (perflab/health/render.py)."""
    return {str(path.relative_to(root.parent)): path.read_text()
            for path in sorted(root.rglob("*.py"))}


def _member_value(statement: ast.stmt) -> str | None:
    """The string value of one enum member's definition (NAME = "text", or auto())."""
    if not isinstance(statement, ast.Assign) or len(statement.targets) != 1 or \
            not isinstance(statement.targets[0], ast.Name):
        return None
    value = statement.value
    if isinstance(value, ast.Constant) and isinstance(value.value, str):
        return value.value
    if isinstance(value, ast.Call) and getattr(value.func, "id", None) == "auto":
        return statement.targets[0].id.lower()  # a StrEnum's auto(): its name, lower case
    return None


def enum_values(sources: dict[str, str]) -> dict[str, list[tuple[str, str]]]:
    """Per value, the string enums that have it: [(enum, defining module path)]."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path, text in sources.items():
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ClassDef) and any(
                    getattr(base, "id", getattr(base, "attr", None)) in ENUM_BASES
                    for base in node.bases):
                for statement in node.body:
                    value = _member_value(statement)
                    if value is not None:
                        found.setdefault(value, []).append((node.name, path))
    return found


def _strings(node: ast.expr) -> Iterator[str]:
    """A literal's strings: a string, or the strings of a tuple, list or set of literals."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for element in node.elts:
            if isinstance(element, ast.Constant) and isinstance(element.value, str):
                yield element.value


def _pattern_strings(pattern: ast.pattern) -> Iterator[str]:
    if isinstance(pattern, ast.MatchValue):
        yield from _strings(pattern.value)
    elif isinstance(pattern, ast.MatchOr | ast.MatchSequence):
        for inner in pattern.patterns:
            yield from _pattern_strings(inner)
    elif isinstance(pattern, ast.MatchAs) and pattern.pattern is not None:
        yield from _pattern_strings(pattern.pattern)


def compared_strings(text: str) -> Iterator[tuple[int, str]]:
    """(line, string) of every string literal a comparison or a match case holds."""
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for n, op in enumerate(node.ops):
                if isinstance(op, COMPARISONS):
                    for operand in operands[n:n + 2]:
                        yield from ((node.lineno, s) for s in _strings(operand))
        elif isinstance(node, ast.match_case):
            yield from ((node.pattern.lineno, s) for s in _pattern_strings(node.pattern))


def misuses(sources: dict[str, str], values: dict[str, list[tuple[str, str]]]) -> list[str]:
    """One line per enum value compared as text outside the modules defining it: where, and
    the enum to compare with instead."""
    out = []
    for path, text in sources.items():
        for line, string in sorted(set(compared_strings(text))):
            owners = values.get(string, [])
            if owners and path not in {module for _, module in owners}:
                use = " or ".join(f"{enum}.{_member_name(string)} ({module})"
                                  for enum, module in owners)
                out.append(f"{path}:{line}: {string!r} compared as a string: use {use}")
    return out


def _member_name(value: str) -> str:
    """The member a value names by perflab's habit (FLEET for "fleet", AS_IS for "as is")."""
    return "".join(c if c.isalnum() else "_" for c in value).upper()


def test_no_enum_value_is_compared_as_a_string():
    sources = _sources()
    found = misuses(sources, enum_values(sources))
    assert not found, "\n".join(found)


def test_the_check_finds_a_status_compared_as_text():
    """The check itself: a health status written as text in health/render.py is found, with
    the file, the line and the enum to use; the member, or the same text in a module of its
    own enum, is not."""
    sources = _sources()
    values = enum_values(sources)
    assert ("HealthStatus", "perflab/health/results.py") in values["ok"]
    snippet = ("def mark(result):\n"
               "    if result.status == HealthStatus.OK:\n"
               "        return ''\n"
               "    if result.status == \"ok\" or result.status in (\"n/a\", \"free text\"):\n"
               "        return 'ok'\n"
               "    match result.status:\n"
               "        case 'fail':\n"
               "            return 'FAIL'\n")
    found = misuses({"perflab/health/render.py": snippet}, values)
    assert len(found) == 3, found
    assert found[0].startswith("perflab/health/render.py:4: 'n/a' compared as a string: use "
                               "HealthStatus.N_A (perflab/health/results.py)")
    assert any(f.startswith("perflab/health/render.py:4: 'ok'") and "HealthStatus.OK" in f
               and "PointStatus.OK" in f for f in found)
    assert found[-1].startswith("perflab/health/render.py:7: 'fail'")
    assert misuses({"perflab/health/results.py": snippet}, values) == []
