"""A captured log as a benchmark: the top fingerprints written as a `sql` workload file
(load/sqlworkload.py), weighted by their calls, their literals turned into placeholders whose
ranges are what the log used.

The ranges need a second streaming pass over the logs, restricted to the chosen fingerprints:
for each literal position the smallest and largest integer, or the shortest and longest string.
A log says nothing about tables, so the file's [schema] and [[data]] come from a server that has
them (`schema_from`), read-only, or are left for the user to add.
"""

from __future__ import annotations

import re
from pathlib import Path

from perflab.digest.digest import Digest
from perflab.digest.fingerprint import fingerprint
from perflab.digest.parse import ParseStats, Part, read_events

REPLAYABLE = ("select", "insert", "update", "delete", "replace")
LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?<![\w.])\d+(?![\w.])")


def write_workload(digest: Digest, path: Path, top: int, schema: str = "") -> int:
    """Write the file; returns the number of statements in it."""
    chosen = [c for c in digest.classes if c.fingerprint.startswith(REPLAYABLE)][:top]
    ranges = _literal_ranges(digest, {c.fingerprint for c in chosen})
    lines = ["# perflab sql workload written by `perflab digest` from:",
             *[f"#   {info['path']}" for info in digest.files],
             "# Weights are the calls in the log; placeholder ranges are the literals it used."]
    lines += [schema] if schema else [
        "# The log names no tables' definitions: add [schema] sql = [...] and [[data]] sections",
        "# (see perflab's README, the `sql` workload) before running it."]
    for query_class in chosen:
        template = _template(query_class.example, ranges.get(query_class.fingerprint))
        lines += ["", "[[statements]]", f"sql = {_toml_string(template)}",
                  f"weight = {query_class.calls}"]
    path.write_text("\n".join(lines) + "\n")
    return len(chosen)


def _literal_ranges(digest: Digest, wanted: set[str]) -> dict[str, list[list]]:
    """Per fingerprint, per literal position: [kind, low, high]."""
    ranges: dict[str, list[list]] = {}
    for info in digest.files:
        for event in read_events(Part(Path(info["path"]), info["format"]), ParseStats()):
            if event.command != "Query":
                continue
            fp = fingerprint(event.text)
            if fp not in wanted:
                continue
            values = [_value(token) for token in LITERAL.findall(event.text)]
            known = ranges.setdefault(fp, [[kind, v, v] for kind, v in values])
            if len(known) != len(values):
                continue  # an IN list of another length: keep the first shape
            for slot, (kind, value) in zip(known, values, strict=True):
                if slot[0] != kind:
                    continue
                slot[1], slot[2] = min(slot[1], value), max(slot[2], value)
    return ranges


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
