"""A captured log as a benchmark: the top fingerprints written as a `sql` workload file
(load/sqlworkload.py), weighted by their calls, each literal replaced by what the log used.

The values need a second streaming pass over the logs, restricted to the chosen fingerprints.
A literal position whose distinct values number MAX_PICKS or fewer becomes {pick:pN} with all
of them; past that, an integer position becomes {int:LO:HI} over the range the log used (a
sample of a million ids would shrink the replay's working set to the sample), a string
position {pick:pN} with a uniform sample of MAX_PICKS of its values (random letters would match
no row). The same pass collects the schemas the log's connections used: the replay runs in one
schema, so qualifiers naming them (`Geometry_tpc.items`) are dropped. A log says nothing about
the tables themselves; the file's header names the ones the statements use, for the user's
[schema] and [[data]] (or a plan's `dataset.existing` on the server the log came from).
"""

from __future__ import annotations

import json
import math
import random
import re
from dataclasses import dataclass, field
from pathlib import Path

from perflab.digest.digest import Digest
from perflab.digest.findings import switched_schema
from perflab.digest.fingerprint import fingerprint
from perflab.digest.parse import ParseStats, Part, read_events
from perflab.digest.redact import redact
from perflab.errors import PerflabError

REPLAYABLE = ("select", "insert", "update", "delete", "replace")
LITERAL = re.compile(r"'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|(?<![\w.])\d+(?![\w.])")
TABLE = re.compile(r"\b(?:from|join|into|update)\s+((?:`?\w+`?\.)?`?\w+`?)", re.I)
SEQUENCE = re.compile(r"^seq_\d+_to_\d+(?:_step_\d+)?$", re.I)  # MariaDB's, in every schema


MAX_PICKS = 1000


class _Position:
    """One literal position of a statement: the values the log used there."""

    def __init__(self, rng: random.Random, unfit: re.Pattern):
        self.rng = rng
        self.unfit = unfit  # what a sql workload refuses in a value
        self.seen = 0
        self.refused = 0  # values left out: they hold a control character (a NUL, ...)
        self.distinct: dict[str, None] | None = {}  # in order of first use; None past MAX_PICKS
        self.sample: list[str] = []  # reservoir over every use, once distinct overflows
        self.numbers = True  # every value an integer
        self.low, self.high = math.inf, -math.inf  # of the integers
        self.shortest, self.longest = math.inf, 0  # of the strings, in characters

    def add(self, token: str) -> None:
        token = doubled_quotes(token)
        if self.unfit.search(token):  # a control character: only ever in a quoted string
            self.refused += 1  # one value the workload would refuse; the statement stays
            self.numbers = False
            return
        self.seen += 1
        if token[0] in "'\"":
            self.numbers = False
            self.shortest = min(self.shortest, len(token) - 2)
            self.longest = max(self.longest, len(token) - 2)
        else:
            self.low, self.high = min(self.low, int(token)), max(self.high, int(token))
        if len(self.sample) < MAX_PICKS:
            self.sample.append(token)
        else:
            slot = self.rng.randrange(self.seen)
            if slot < MAX_PICKS:
                self.sample[slot] = token
        if self.distinct is not None:
            self.distinct[token] = None
            if len(self.distinct) > MAX_PICKS:
                self.distinct = None

    def placeholder(self, name: str, literals: bool) -> tuple[str, list[str] | None]:
        """The template's placeholder and, for {pick:}, its values."""
        if not literals:
            if self.numbers:
                return f"{{int:{self.low}:{self.high}}}", None
            return f"{{str:{max(1, self.shortest)}:{min(max(1, self.longest), 64)}}}", None
        if self.distinct is not None:
            return f"{{pick:{name}}}", list(self.distinct)
        if self.numbers:
            return f"{{int:{self.low}:{self.high}}}", None
        return f"{{pick:{name}}}", self.sample


@dataclass
class _Scan:
    positions: dict[str, list[_Position]] = field(default_factory=dict)  # per fingerprint
    schemas: set[str] = field(default_factory=set)


def write_workload(digest: Digest, path: Path, top: int, literals: bool = True) -> int:
    """Write the file; returns the number of statements in it. With `literals` False
    (--redact), no value of the log is written: integers become their range, strings random
    letters of the lengths the log used."""
    from perflab.load.sqlworkload import checked_statement  # sqlglot: only when writing one

    chosen = [c for c in digest.classes if c.fingerprint.startswith(REPLAYABLE)][:top]
    scan = _scan(digest, {c.fingerprint for c in chosen})
    templates, left_out = [], []
    refused = sum(p.refused for positions in scan.positions.values() for p in positions)
    for c in chosen:
        template, picks = _template(c.example, scan.positions.get(c.fingerprint), literals)
        template = _unqualified(template, scan.schemas)
        try:
            checked_statement({"sql": template, "weight": c.calls, "picks": picks}, 1, path)
        except PerflabError as exc:  # e.g. several statements in one log entry
            left_out.append((c.calls, exc.message.split(": ", 2)[-1]))
            continue
        templates.append((template, c.calls, picks))
    tables = sorted({name for template, _, _ in templates for name in _tables(template)},
                    key=str.lower)
    lines = ["# perflab sql workload written by `perflab digest` from:",
             *[f"#   {info.path}" for info in digest.files],
             "# Weights are the calls in the log; placeholders take the literals it used (picks)",
             "# or their range.",
             "# Before running it, define the tables in [schema] sql = [...] and fill them in",
             "# [[data]] (docs/run.md: the `sql` workload). Tables the statements name: "
             + (", ".join(tables) or "none")]
    if scan.schemas:
        lines += ["# The replay runs in one schema: qualifiers naming these are dropped:",
                  "#   " + ", ".join(sorted(scan.schemas))]
    if refused:
        lines += [f"# Left out: {refused} logged value(s) holding a control character (NUL or "
                  "another but tab and newline), which a sql workload refuses"]
    if left_out:
        lines += [f"# Left out: {len(left_out)} statement(s) of the top {top} that perflab "
                  "would not replay as they are:",
                  *[f"#   {calls} calls: {why}" for calls, why in left_out]]
    if any(template.lower().startswith("insert") for template, _, _ in templates):
        lines += ["# The INSERTs reuse the log's values, so keys collide: in the plan,",
                  '#   options = { file = "...", mysql_ignore_errors = "1062" }',
                  "# counts duplicate keys as errors instead of stopping the run."]
    for template, calls, picks in templates:
        lines += ["", "[[statements]]", f"sql = {_toml_string(template)}", f"weight = {calls}"]
        if picks:
            lines.append("[statements.picks]")
            lines += [f"{name} = [{', '.join(_toml_pick(v) for v in values)}]"
                      for name, values in picks.items()]
    path.write_text("\n".join(lines) + "\n")
    return len(templates)


def _scan(digest: Digest, wanted: set[str]) -> _Scan:
    from perflab.load.sqlworkload import CONTROL_CHARACTER  # sqlglot: only when writing one

    scan = _Scan()
    rng = random.Random(0)  # the same log gives the same file
    for info in digest.files:
        for event in read_events(Part(Path(info.path), info.format), ParseStats()):
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
                tokens = LITERAL.findall(redact(event.text))
                known = scan.positions.setdefault(
                    fp, [_Position(rng, CONTROL_CHARACTER) for _ in tokens])
                if len(known) == len(tokens):  # an IN list of another length: first shape
                    for position, token in zip(known, tokens, strict=True):
                        position.add(token)
    return scan


def _unqualified(template: str, schemas: set[str]) -> str:
    for schema in schemas:
        template = re.sub(rf"(?<![\w.`])`?{re.escape(schema)}`?\.(?=`?\w)", "", template)
    return template


def _tables(template: str) -> set[str]:
    names = {match.replace("`", "") for match in TABLE.findall(template)}
    return {name for name in names if not SEQUENCE.match(name.rsplit(".", 1)[-1])}


def _template(example: str, positions: list[_Position] | None, literals: bool
              ) -> tuple[str, dict[str, list[str]]]:
    """The example with each literal replaced by its placeholder, and the pick lists."""
    slots = iter(positions or [])
    picks: dict[str, list[str]] = {}

    def replace(match: re.Match) -> str:
        position = next(slots, None)
        if position is None:
            return match.group(0)
        name = f"p{len(picks) + 1}"
        placeholder, values = position.placeholder(name, literals)
        if values is not None:
            picks[name] = values
        return placeholder

    return " ".join(LITERAL.sub(replace, example).split()), picks


def doubled_quotes(literal: str) -> str:
    """A quoted literal with its backslash-escaped quotes written doubled (`'it\\'s'` as
    `'it''s'`): the same value on any server, and one literal under NO_BACKSLASH_ESCAPES too."""
    if literal[0] not in "'\"":
        return literal
    quote, out, chars = literal[0], [], iter(literal[1:-1])
    for char in chars:
        if char == "\\":
            escaped = next(chars, "")
            out.append(quote * 2 if escaped == quote else char + escaped)
        else:
            out.append(char)
    return quote + "".join(out) + quote


def _toml_pick(literal: str) -> str:
    return literal if literal[0] not in "'\"" else _toml_string(literal)


def _toml_string(text: str) -> str:
    """A TOML basic string: JSON's escapes are TOML's (quotes, backslashes, line breaks and
    other control characters)."""
    return json.dumps(text, ensure_ascii=False)
