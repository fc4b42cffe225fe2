"""Streaming readers for MariaDB's general query log and slow query log.

Both yield Event objects one at a time, holding only the statement being assembled, so memory
does not grow with the log. A file may be gzip'd (detected by its magic bytes). Statements that
span lines are joined. Lines that belong to no event are counted as malformed, never fatal.

General log (`general_log_file`), as MariaDB 10.x writes it (-> is a tab; the time stamp is
written only when the second changes):

    261122 14:35:01->    5 Connect->root@localhost on shop using Socket
    ->->    5 Query->SELECT 1
    ->->    5 Init DB->shop

Slow log (`slow_query_log_file`):

    # Time: 261122 14:35:01
    # User@Host: root[root] @ localhost []
    # Thread_id: 5  Schema: shop  QC_hit: No
    # Query_time: 0.000123  Lock_time: 0.000045  Rows_sent: 1  Rows_examined: 1
    use shop;
    SET timestamp=1763822101;
    SELECT ...;
"""

from __future__ import annotations

import calendar
import gzip
import io
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import PerflabError

GENERAL_LINE = re.compile(
    r"(?:(\d{6}\s+\d{1,2}:\d\d:\d\d|\d{4}-\d{1,2}-\d{1,2}T\d\d:\d\d:\d\d\.\d+"
    r"(?:Z|[-+]?\d\d:\d\d)?))?\s+(\d+)\s(\w+)(?:\s+(.*))?\Z", re.S)
# Lines a server writes when it (re)opens a log file.
BANNER = re.compile(r"^(?:\S+, Version: |Tcp port: |Time\s+Id\s+Command\s+Argument)")
SLOW_ATTRIBUTE = re.compile(r"(\w+): (\S+)")


@dataclass
class Event:
    line: int  # where the event starts in its file (1-based)
    thread: int | None
    command: str  # Query, Init DB, Connect, Quit, ...
    text: str  # the statement, or the command's argument
    time: float | None = None  # seconds since the epoch, when the log says
    db: str | None = None  # the schema the connection is on (slow log: as logged)
    query_time: float | None = None
    rows_sent: float | None = None
    rows_examined: float | None = None


@dataclass
class ParseStats:
    lines: int = 0
    events: int = 0
    malformed: int = 0
    malformed_examples: list[tuple[int, str]] = field(default_factory=list)

    def bad(self, line_no: int, line: str) -> None:
        self.malformed += 1
        if len(self.malformed_examples) < 5:
            self.malformed_examples.append((line_no, line.rstrip("\n")[:200]))


def open_log(path: Path) -> io.TextIOBase:
    try:
        with open(path, "rb") as raw:
            magic = raw.read(2)
    except OSError as exc:
        raise PerflabError(f"cannot read {path}: {exc.strerror}") from None
    if magic == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace",
                                newline="\n")
    return open(path, encoding="utf-8", errors="replace", newline="\n")


def detect_format(path: Path) -> str:
    """'general' or 'slow', from the first lines that say."""
    with open_log(path) as handle:
        for count, line in enumerate(handle):
            if line.startswith(("# Time:", "# User@Host:", "# Query_time:")):
                return "slow"
            if BANNER.match(line):
                continue  # both kinds of log start with the same banner
            if GENERAL_LINE.match(line.rstrip("\n")):
                return "general"
            if count > 200:
                break
    raise PerflabError(f"{path}: neither a general query log nor a slow query log",
                       hint="give --format general or --format slow if the start of the file "
                       "is unusual")


def read_events(path: Path, kind: str, stats: ParseStats) -> Iterator[Event]:
    reader = _general if kind == "general" else _slow
    with open_log(path) as handle:
        yield from reader(handle, stats)


def _general(handle, stats: ParseStats) -> Iterator[Event]:
    pending: Event | None = None  # a Query event that may continue on the next lines
    extra: list[str] = []
    clock = _Clock()
    now = None
    match = GENERAL_LINE.match
    line_no = 0
    for line_no, line in enumerate(handle, 1):
        found = match(line, 0, len(line) - (line[-1:] == "\n"))
        if found is None:
            if pending is not None and not BANNER.match(line):
                extra.append(line)
            elif not BANNER.match(line) and line.strip():
                stats.bad(line_no, line)
            continue
        if pending is not None:
            yield _finish(pending, extra, stats)
            pending, extra = None, []
        stamp, thread, command, argument = found.groups()
        if stamp:
            now = clock.seconds(stamp)
        argument = argument or ""
        if command == "Init" and argument.startswith("DB"):
            command, argument = "Init DB", argument[2:].lstrip()
        event = Event(line_no, int(thread), command, argument, now)
        if command == "Query":
            pending = event
        else:
            stats.events += 1
            event.text = argument.rstrip()
            yield event
    if pending is not None:
        yield _finish(pending, extra, stats)
    stats.lines += line_no


def _finish(event: Event, extra: list[str], stats: ParseStats) -> Event:
    if extra:
        event.text = event.text + "\n" + "".join(extra)
    event.text = event.text.rstrip("\n")
    stats.events += 1
    return event


def _slow(handle, stats: ParseStats) -> Iterator[Event]:
    header: dict[str, str] = {}
    body: list[str] = []
    start = 0
    db = None
    stamp = None
    clock = _Clock()
    line_no = 0

    def flush() -> Iterator[Event]:
        nonlocal db, stamp
        statements = []
        for index, text in enumerate(body):
            lowered = text[:20].lower()
            if statements:
                statements.append(text)
            elif lowered.startswith("set timestamp="):
                try:
                    stamp = float(text.strip()[14:].rstrip(";"))
                except ValueError:
                    pass
            elif lowered.startswith("use ") and _more_follows(body, index):
                db = text.strip()[4:].rstrip(";").strip().strip("`")  # the entry's schema
            else:
                statements.append(text)
        if not statements:
            return
        text = "".join(statements).rstrip()
        if text.endswith(";"):
            text = text[:-1]
        thread = header.get("Thread_id") or header.get("Id")
        event = Event(start, int(thread) if thread and thread.isdigit() else None, "Query",
                      text, stamp, header.get("Schema") or db,
                      _float(header.get("Query_time")), _float(header.get("Rows_sent")),
                      _float(header.get("Rows_examined")))
        stats.events += 1
        yield event

    for line_no, line in enumerate(handle, 1):
        if line.startswith("#"):
            if body:
                yield from flush()
                header, body = {}, []
            if not header:
                start = line_no
            if line.startswith("# Time:"):
                stamp = clock.seconds(line[7:].strip())
            else:
                header.update(SLOW_ATTRIBUTE.findall(line))
        elif BANNER.match(line):
            continue
        elif header:
            body.append(line)
        elif line.strip():
            stats.bad(line_no, line)
    if body:
        yield from flush()
    stats.lines += line_no


def _more_follows(body: list[str], index: int) -> bool:
    """Whether a statement other than SET timestamp comes after body[index]."""
    return any(line.strip() and not line[:14].lower().startswith("set timestamp=")
               for line in body[index + 1:])


def _float(value: str | None) -> float | None:
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


class _Clock:
    """Log time stamps (`YYMMDD H:MM:SS` or ISO 8601) to seconds, one parse per distinct stamp."""

    def __init__(self):
        self.last_text = None
        self.last_value = None

    def seconds(self, text: str) -> float | None:
        if text != self.last_text:
            self.last_text, self.last_value = text, _parse_stamp(text)
        return self.last_value


def _parse_stamp(text: str) -> float | None:
    short = re.match(r"(\d\d)(\d\d)(\d\d)\s+(\d{1,2}):(\d\d):(\d\d)$", text)
    if short:
        yy, mo, dd, hh, mi, ss = (int(x) for x in short.groups())
        return float(calendar.timegm((2000 + yy, mo, dd, hh, mi, ss)))
    iso = re.match(r"(\d{4})-(\d{1,2})-(\d{1,2})T(\d\d):(\d\d):(\d\d(?:\.\d+)?)", text)
    if iso:
        y, mo, d, h, mi = (int(x) for x in iso.groups()[:5])
        return calendar.timegm((y, mo, d, h, mi, 0)) + float(iso.group(6))
    return None
