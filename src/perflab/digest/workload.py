"""A captured log as a benchmark: the top fingerprints written as a `sql` workload file
(load/sqlworkload.py), weighted by their calls, their literals turned into placeholders whose
ranges are what the log used.

The ranges need a second streaming pass over the logs, restricted to the chosen fingerprints:
for each literal position the smallest and largest integer, or the shortest and longest string.
The same pass collects the schemas the log's connections used: the replay runs in one schema,
so qualifiers naming them (`Geometry_tpc.items`) are dropped. A log says nothing about the
tables themselves; the file's header names the ones the statements use, for the user's [schema]
and [[data]].
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from perflab.digest.digest import Digest
from perflab.digest.findings import switched_schema
from perflab.digest.fingerprint import Fingerprinter
from perflab.digest.parse import ParseStats, Part, read_events

REPLAYABLE = ("select", "insert", "update", "delete", "replace")
LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?<![\w.])\d+(?![\w.])")
TABLE = re.compile(r"\b(?:from|join|into|update)\s+((?:`?\w+`?\.)?`?\w+`?)", re.I)
SEQUENCE = re.compile(r"^seq_\d+_to_\d+(?:_step_\d+)?$", re.I)  # MariaDB's, in every schema


@dataclass
class _Scan:
    ranges: dict[str, list[list]] = field(default_factory=dict)  # per literal: [kind, low, high]
    schemas: set[str] = field(default_factory=set)


def write_workload(digest: Digest, path: Path, top: int) -> int:
    """Write the file; returns the number of statements in it."""
    chosen = [c for c in digest.classes if c.fingerprint.startswith(REPLAYABLE)][:top]
    scan = _scan(digest, {c.fingerprint for c in chosen})
    templates = [(_unqualified(_template(c.example, scan.ranges.get(c.fingerprint)),
                               scan.schemas), c.calls) for c in chosen]
    tables = sorted({name for template, _ in templates for name in _tables(template)},
                    key=str.lower)
    lines = ["# perflab sql workload written by `perflab digest` from:",
             *[f"#   {info['path']}" for info in digest.files],
             "# Weights are the calls in the log; placeholder ranges are the literals it used.",
             "# Before running it, define the tables in [schema] sql = [...] and fill them in",
             "# [[data]] (README: the `sql` workload). Tables the statements name: "
             + (", ".join(tables) or "none")]
    if scan.schemas:
        lines += ["# The replay runs in one schema: qualifiers naming these are dropped:",
                  "#   " + ", ".join(sorted(scan.schemas))]
    if any(template.lower().startswith("insert") for template, _ in templates):
        lines += ["# The INSERTs reuse the log's values, so keys collide: in the plan,",
                  '#   options = { file = "...", mysql_ignore_errors = "1062" }',
                  "# counts duplicate keys as errors instead of stopping the run."]
    for template, calls in templates:
        lines += ["", "[[statements]]", f"sql = {_toml_string(template)}", f"weight = {calls}"]
    path.write_text("\n".join(lines) + "\n")
    return len(chosen)


def _scan(digest: Digest, wanted: set[str]) -> _Scan:
    scan = _Scan()
    fingerprint = Fingerprinter()
    for info in digest.files:
        for event in read_events(Part(Path(info["path"]), info["format"]), ParseStats()):
            if event.db:
                scan.schemas.add(event.db)
            if event.command == "Init DB":
                scan.schemas.add(switched_schema(event.text))
            if event.command != "Query":
                continue
            fp = fingerprint(event.text)
            if fp == "use ?":  # a USE statement switches schema like Init DB (findings.py)
                scan.schemas.add(switched_schema(event.text))
            elif fp in wanted:
                _widen(scan.ranges, fp, [_value(t) for t in LITERAL.findall(event.text)])
    return scan


def _widen(ranges: dict[str, list[list]], fp: str, values: list[tuple[str, int]]) -> None:
    known = ranges.setdefault(fp, [[kind, v, v] for kind, v in values])
    if len(known) != len(values):
        return  # an IN list of another length: keep the first shape
    for slot, (kind, value) in zip(known, values, strict=True):
        if slot[0] == kind:
            slot[1], slot[2] = min(slot[1], value), max(slot[2], value)


def _unqualified(template: str, schemas: set[str]) -> str:
    for schema in schemas:
        template = re.sub(rf"(?<![\w.`])`?{re.escape(schema)}`?\.(?=`?\w)", "", template)
    return template


def _tables(template: str) -> set[str]:
    names = {match.replace("`", "") for match in TABLE.findall(template)}
    return {name for name in names if not SEQUENCE.match(name.rsplit(".", 1)[-1])}


def _value(token: str) -> tuple[str, int]:
    if token[0] in "'\"":
        return "str", len(token) - 2
    return "int", int(token)


def _template(example: str, ranges: list[list] | None) -> str:
    slots = iter(ranges or [])

    def replace(match: re.Match) -> str:
        slot = next(slots, None)
        if slot is None:
            return match.group(0)
        kind, low, high = slot
        if kind == "str":
            return f"{{str:{max(low, 1)}:{min(max(high, 1), 64)}}}"
        return f"{{int:{low}:{high}}}"

    return " ".join(LITERAL.sub(replace, example).split())


def _toml_string(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'
