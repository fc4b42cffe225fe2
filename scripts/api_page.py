#!/usr/bin/env python3
"""Writes docs/api.md, the page of perflab's Python API, from the docstrings and signatures of
what `perflab.__all__` exports (functions first, then types). `--check` writes nothing and
exits 1 when the page on disk is not the one the code gives (the suite runs it: the page
cannot drift from the code).

    .venv/bin/python scripts/api_page.py [--check]
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import sys
from pathlib import Path

import perflab

PAGE = Path(__file__).resolve().parent.parent / "docs" / "api.md"


def page() -> str:
    """The page's Markdown."""
    names = sorted(perflab.__all__, key=str.lower)
    functions = [n for n in names if inspect.isfunction(getattr(perflab, n))]
    types = [n for n in names if inspect.isclass(getattr(perflab, n))]
    constants = [n for n in names if n not in functions and n not in types]
    lines = ["# perflab's Python API", "",
             "Generated from the code by `scripts/api_page.py`; do not edit by hand.", "",
             inspect.cleandoc(perflab.__doc__ or ""), "", "## Functions", ""]
    for name in functions:
        function = getattr(perflab, name)
        lines += [f"### `{name}{_signature(function)}`", "",
                  inspect.cleandoc(function.__doc__ or "(no docstring)"), ""]
    lines += ["## Types", ""]
    for name in types:
        kind = getattr(perflab, name)
        lines += [f"### `{name}`", f"*{kind.__module__}*", "",
                  inspect.cleandoc(kind.__doc__ or "(no docstring)"), ""]
        if dataclasses.is_dataclass(kind):
            shown = [f for f in dataclasses.fields(kind) if f.repr]
            lines += ["Fields: " + ", ".join(f"`{f.name}`" for f in shown) + ".", ""]
    lines += ["## Constants", ""]
    lines += [f"- `{name}` = `{getattr(perflab, name)!r}`" for name in constants]
    return "\n".join(lines).rstrip() + "\n"


def _signature(function) -> str:
    """The signature as written (annotations are strings: from __future__ import annotations),
    a function given as a default shown by its name."""
    parts, starred = [], False
    for parameter in inspect.signature(function).parameters.values():
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY and not starred:
            parts.append("*")
            starred = True
        text = parameter.name
        if parameter.annotation is not inspect.Parameter.empty:
            text += f": {parameter.annotation}"
        if parameter.default is not inspect.Parameter.empty:
            default = parameter.default
            shown = default.__name__ if callable(default) else repr(default)
            text += f" = {shown}"
        parts.append(text)
    returned = inspect.signature(function).return_annotation
    arrow = "" if returned is inspect.Signature.empty else f" -> {returned}"
    return f"({', '.join(parts)}){arrow}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    text = page()
    if args.check:
        if not PAGE.exists() or PAGE.read_text() != text:
            print(f"{PAGE} is not the page the code gives: run scripts/api_page.py",
                  file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(text)
    print(f"wrote {PAGE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
