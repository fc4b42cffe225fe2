"""Waste that pt-query-digest does not flag, found per connection while the log streams by
(the STAR notes' findings, made automatic):

- repeats: the same read, text for text, again on the same connection with nothing in between
  (the STAR notes' `select elementID from CorrectionIDs` fourteen times in a row);
- schema switches: `Init DB` / `USE` to the schema the connection is already on, to a schema
  it leaves again before running anything (Geometry_ftpc, _tof, _svt, _ssd), and switches back
  to the schema its last statement ran in (Geometry_tpc again);
- constant-only: SELECTs that read no table (`select from_unixtime(1041811200) + 0`), which the
  client can compute itself;
- N+1: one read fingerprint with different literals run at least `burst` times by one
  connection within `window` seconds (a loop that should be one query with an IN list).

Each finding keeps counts, the connections involved and a few example lines. An event counts as
removable at most once, whatever findings it is part of, so the removable share is honest.
"""

from __future__ import annotations

import copy as copy_module
import dataclasses
import re
from dataclasses import dataclass, field
from enum import StrEnum

from perflab.digest.parse import Event
from perflab.digest.redact import no_literals, redact, shown

READS = ("select", "show", "desc", "describe", "explain")
# SELECTs without a table that still need the server: session state, locks, sequences.
STATEFUL = re.compile(
    r"@|\b(?:last_insert_id|found_rows|row_count|connection_id|database|schema|user|"
    r"current_user|session_user|system_user|sleep|get_lock|release_lock|is_free_lock|"
    r"is_used_lock|master_pos_wait|nextval|lastval|setval|benchmark|rand|uuid|uuid_short|"
    r"version)\s*\(|\bfor update\b|\binto\b")
FROM = re.compile(r"\bfrom\b(?!\s+dual\b)")
EXAMPLES = 3
CONNECTIONS = 10


class FindingKind(StrEnum):
    """What a finding found (its value names it in the JSON output)."""

    REPEATS = "repeats"
    SCHEMA_REDUNDANT = "schema_redundant"
    SCHEMA_UNUSED = "schema_unused"
    SCHEMA_BACK_AND_FORTH = "schema_back_and_forth"
    CONSTANT_ONLY = "constant_only"
    N_PLUS_ONE = "n_plus_one"


RUNS_OF = (FindingKind.REPEATS, FindingKind.N_PLUS_ONE)  # the kinds that count runs


@dataclass
class Item:
    """One finding about one statement (or schema): counts, connections, example lines."""

    key: str
    calls: int = 0  # events that are part of the finding
    removable: int = 0  # of which the finding could remove
    runs: int = 0  # runs/bursts/switches
    longest: int = 0
    connections: set[int] = field(default_factory=set)
    examples: list[tuple[int, str]] = field(default_factory=list)

    def add(self, event: Event, removable: bool) -> None:
        self.calls += 1
        self.removable += removable
        if event.thread is not None and len(self.connections) < CONNECTIONS:
            self.connections.add(event.thread)
        if len(self.examples) < EXAMPLES:
            self.examples.append((event.line, shown(event.text, 200)))

    def merge(self, other: Item) -> None:
        self.calls += other.calls
        self.removable += other.removable
        self.runs += other.runs
        self.longest = max(self.longest, other.longest)
        self.connections |= set(sorted(other.connections)[:CONNECTIONS - len(self.connections)])
        self.examples = sorted(self.examples + other.examples)[:EXAMPLES]

    def without_literals(self) -> Item:
        return dataclasses.replace(self, key=no_literals(self.key),
                                   examples=[(line, no_literals(text))
                                             for line, text in self.examples])

    def to_json(self) -> dict:
        """The key is a fingerprint or a schema: a fingerprint may hold a secret literal (see
        Digest.shown_fingerprint), so it is shown redacted."""
        return {"key": redact(self.key), "calls": self.calls, "removable": self.removable,
                "runs": self.runs, "longest": self.longest,
                "connections": sorted(self.connections),
                "examples": [{"line": line, "text": text} for line, text in self.examples]}


@dataclass
class _Connection:
    db: str | None = None
    worked_in: str | None = None  # the schema the connection's last statement ran in
    last_text: str | None = None  # the previous statement, if it was a read
    run: int = 0  # length of the current run of identical reads
    pending_switch: str | None = None  # the schema of an Init DB no statement followed yet
    pending_event: Event | None = None
    bursts: dict[str, list] = field(default_factory=dict)  # fingerprint -> [start, n, open]


class Findings:
    KINDS = tuple(FindingKind)

    def __init__(self, burst: int = 10, window: float = 1.0):
        self.burst = burst
        self.window = window
        self.items: dict[FindingKind, dict[str, Item]] = {kind: {} for kind in self.KINDS}
        self.connections: dict[int, _Connection] = {}
        self.kinds: dict[str, tuple[bool, bool]] = {}  # fingerprint -> (read, constant-only)
        self.statements = 0  # Query and Init DB events: the round trips findings could save
        self.removable = 0

    def without_literals(self) -> Findings:
        """A copy whose examples show no literal (--redact)."""
        copy = copy_module.copy(self)
        copy.items = {kind: {key: item.without_literals() for key, item in items.items()}
                      for kind, items in self.items.items()}
        return copy

    def observe(self, event: Event, fingerprint: str) -> None:
        conn = self.connections.get(event.thread or 0)
        if conn is None:
            conn = self.connections[event.thread or 0] = _Connection()
        command = event.command
        if command == "Query" and fingerprint == "use ?":
            command = "Init DB"  # a USE statement is a schema switch like Init DB
        if command == "Init DB":
            self.statements += 1
            self._switch(conn, event, switched_schema(event.text))
        elif command == "Query":
            self.statements += 1
            self._statement(conn, event, fingerprint)
        elif command in ("Quit", "Connect"):
            self._close_switch(conn)
            self.connections.pop(event.thread or 0, None)
            if command == "Connect":
                db = _connect_db(event.text)
                self.connections[event.thread or 0] = _Connection(db=db)

    def finish(self) -> None:
        """Close what the end of the log leaves open; the connections' state is dropped."""
        for conn in self.connections.values():
            self._close_switch(conn)
        self.connections.clear()

    def merge(self, other: Findings) -> None:
        """Add the findings of a later part of a log (or of another log)."""
        self.statements += other.statements
        self.removable += other.removable
        for kind in self.KINDS:
            mine = self.items[kind]
            for key, item in other.items[kind].items():
                if key in mine:
                    mine[key].merge(item)
                else:
                    mine[key] = item

    # -- schema switches -----------------------------------------------------------------------

    def _switch(self, conn: _Connection, event: Event, schema: str) -> None:
        conn.last_text, conn.run = None, 0
        if schema == conn.db:  # leaves a pending switch pending: that one was needed
            self._item(FindingKind.SCHEMA_REDUNDANT, schema).add(event, True)
            self.removable += 1
            return
        self._close_switch(conn)
        if schema == conn.worked_in:
            self._item(FindingKind.SCHEMA_BACK_AND_FORTH, schema).add(event, False)
        conn.db = schema
        conn.pending_switch, conn.pending_event = schema, event

    def _close_switch(self, conn: _Connection) -> None:
        """The pending Init DB was followed by another switch or the end: it served nothing."""
        if conn.pending_switch is not None:
            assert conn.pending_event is not None, "set with pending_switch"
            self._item(FindingKind.SCHEMA_UNUSED, conn.pending_switch).add(conn.pending_event, True)
            self.removable += 1
            conn.pending_switch = conn.pending_event = None

    # -- statements ------------------------------------------------------------------------------

    def _statement(self, conn: _Connection, event: Event, fingerprint: str) -> None:
        conn.pending_switch = conn.pending_event = None
        conn.worked_in = conn.db
        removable = False
        kind = self.kinds.get(fingerprint)
        if kind is None:
            kind = self.kinds[fingerprint] = _classify(fingerprint)
        read, constant = kind
        if read and event.text == conn.last_text:
            conn.run += 1
            item = self._item(FindingKind.REPEATS, fingerprint)
            if conn.run == 2:
                item.runs += 1
            item.longest = max(item.longest, conn.run)
            item.add(event, True)
            removable = True
        else:
            conn.run = 1
        conn.last_text = event.text if read else None
        if constant:
            self._item(FindingKind.CONSTANT_ONLY, fingerprint).add(event, not removable)
            removable = True
        repeat = removable
        if read and not repeat and self._in_burst(conn, event, fingerprint, removable):
            removable = True
        self.removable += removable

    def _in_burst(self, conn: _Connection, event: Event, fingerprint: str,
                  already: bool) -> bool:
        """Whether this read is part of an N+1 burst; the burst's earlier events that no other
        finding removed become removable when the burst reaches its size."""
        now = event.time if event.time is not None else 0.0
        state = conn.bursts.get(fingerprint)
        if state is None or now - state[0] > self.window:
            conn.bursts[fingerprint] = [now, 1, 0]  # start, events, not yet removable
            return False
        state[1] += 1
        if state[1] < self.burst:
            state[2] += not already
            return False
        item = self._item(FindingKind.N_PLUS_ONE, fingerprint)
        if state[1] == self.burst:
            item.runs += 1
            item.calls += self.burst - 1  # the earlier events join the burst
            item.removable += state[2]
            self.removable += state[2]
        item.longest = max(item.longest, state[1])
        item.add(event, not already)
        return True

    def _item(self, kind: FindingKind, key: str) -> Item:
        items = self.items[kind]
        item = items.get(key)
        if item is None:
            item = items[key] = Item(key)
        return item

    def to_json(self) -> dict:
        return {
            "statements": self.statements,
            "removable": self.removable,
            "removable_share": self.removable / self.statements if self.statements else 0.0,
            **{kind: [item.to_json() for item in sorted(
                self.items[kind].values(), key=lambda i: -i.calls)] for kind in self.KINDS},
        }


def _classify(fingerprint: str) -> tuple[bool, bool]:
    constant = (fingerprint.startswith("select") and not FROM.search(fingerprint)
                and not STATEFUL.search(fingerprint))
    return fingerprint.startswith(READS), constant


def switched_schema(argument: str) -> str:
    """The schema an `Init DB` argument or a `USE` statement switches to."""
    text = argument.strip().rstrip(";").strip()
    if text.lower().startswith("use "):
        text = text[4:].strip()
    return text.strip("`")


def _connect_db(argument: str) -> str | None:
    """`root@localhost on shop using Socket` -> shop."""
    match = re.search(r"\bon (\S+)", argument)
    return match.group(1) if match and match.group(1) != "using" else None
