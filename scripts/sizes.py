#!/usr/bin/env python3
"""The largest classes and functions of src/perflab, by lines (from the ast: a definition's
first line, decorators included, to its last), and the command line's commands. `--check`
exits 1 when a class is over MAX_CLASS lines, a function over MAX_FUNCTION or a command
(cli.cmd_*, a few lines over an API function) over MAX_COMMAND (issue 45's limits).

    .venv/bin/python scripts/sizes.py [--top 10] [--check]
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

SOURCE = Path(__file__).resolve().parent.parent / "src" / "perflab"
MAX_CLASS, MAX_FUNCTION, MAX_COMMAND = 200, 60, 15


def sizes(root: Path = SOURCE) -> tuple[list[tuple[int, str]], list[tuple[int, str]]]:
    """(lines, "path:line name") of every class and every function (methods included),
    largest first."""
    classes, functions = [], []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
            where = f"{path.relative_to(root.parent)}:{node.lineno} {node.name}"
            kind = classes if isinstance(node, ast.ClassDef) else functions
            kind.append((node.end_lineno - first + 1, where))
    return sorted(classes, reverse=True), sorted(functions, reverse=True)


def commands(functions: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The command line's commands (cli.py's cmd_* functions) among `functions`."""
    return [(lines, where) for lines, where in functions
            if where.startswith("perflab/cli.py:") and where.split()[-1].startswith("cmd_")]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--top", type=int, default=5)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    classes, functions = sizes()
    over = 0
    for title, found, limit in (("classes", classes, MAX_CLASS),
                                ("functions", functions, MAX_FUNCTION),
                                ("commands", commands(functions), MAX_COMMAND)):
        print(f"largest {title} (limit {limit} lines):")
        for lines, where in found[:args.top]:
            print(f"  {lines:5}  {where}{'  OVER' if lines > limit else ''}")
        over += sum(lines > limit for lines, _ in found)
    if over:
        print(f"{over} definition(s) over their limit")
    return 1 if args.check and over else 0


if __name__ == "__main__":
    sys.exit(main())
