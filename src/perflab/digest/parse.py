"""Streaming readers for MariaDB's and MySQL's general query log and slow query log.

Both yield Event objects one at a time, holding only the statement being assembled, so memory
does not grow with the log. A file may be gzip'd (detected by its magic bytes). Statements that
span lines are joined. Lines that belong to no event are counted as malformed, never fatal.
Memory stays bounded on damaged input: a line keeps its first LINE_CAP characters, an entry is
held for the next block up to HOLD, and a gzip'd log that ends early yields what was readable.

General log (`general_log_file`), as MariaDB 10.x writes it (-> is a tab; the time stamp is
written only when the second changes):

    261122 14:35:01->    5 Connect->root@localhost on shop using Socket
    ->->    5 Query->SELECT 1
    ->->    5 Init DB->shop

Slow log (`slow_query_log_file`), MariaDB's:

    # Time: 261122 14:35:01
    # User@Host: root[root] @ localhost []
    # Thread_id: 5  Schema: shop  QC_hit: No
    # Query_time: 0.000123  Lock_time: 0.000045  Rows_sent: 1  Rows_examined: 1
    use shop;
    SET timestamp=1763822101;
    SELECT ...;

and MySQL's (5.7 to 9.x: an ISO time stamp, the connection as `Id:` on the User@Host line,
`log_slow_extra`'s fields after Rows_examined); each entry is read by its own header lines, so
a file that holds both kinds, or a log restarted with a new banner, is read entry by entry:

    # Time: 2026-12-01T14:35:01.123456Z
    # User@Host: root[root] @ localhost []  Id:     8
    # Query_time: 0.000123  Lock_time: 0.000002 Rows_sent: 1  Rows_examined: 1
    SET timestamp=1764599701;
    SELECT ...;
"""

from __future__ import annotations

import calendar
import codecs
import gzip
import io
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from perflab.digest.redact import redact
from perflab.errors import PerflabError

STAMP = (r"(?:\d{6}[ \t]+\d{1,2}:\d\d:\d\d|\d{4}-\d{1,2}-\d{1,2}T\d\d:\d\d:\d\d\.\d+"
         r"(?:Z|[-+]?\d\d:\d\d)?)")
# pt-query-digest's general-log event line: [time stamp] whitespace, thread id, one whitespace,
# command, argument. Each event takes the lines that follow it up to the next event line.
GENERAL_START = rf"{STAMP}?[ \t]+\d+[ \t]\w+"
GENERAL_EVENT = re.compile(
    rf"^({STAMP})?[ \t]+(\d+)[ \t](\w+)(?:[ \t]+([^\n]*))?\n((?:(?!{GENERAL_START})[^\n]*\n)*)",
    re.M)
GENERAL_LINE = re.compile(rf"{GENERAL_START}")
# A slow-log entry: a run of `#` header lines, then the statement lines. MySQL writes a
# command that is no statement (Init DB, Quit) as its entry's last line, a comment:
# `# administrator command: Init DB;`, after the entry's `use` and `SET timestamp` lines.
ADMIN = "# administrator command: "
SLOW_ENTRY = re.compile(rf"^((?:(?!{ADMIN})#[^\n]*\n)+)((?:(?!#)[^\n]*\n|{ADMIN}[^\n]*\n)*)",
                        re.M)
MARIADB_HEADER = re.compile(
    r"(?:# Time: ([^\n]*)\n)?# User@Host: [^\n]*\n# Thread_id: (\d+)[ \t]+Schema: (\S*)[^\n]*\n"
    r"# Query_time: ([\d.]+)[ \t]+Lock_time: [\d.]+[ \t]+Rows_sent: (\d+)[ \t]+"
    r"Rows_examined: (\d+)")
# `Name: value` in a header line; MySQL pads a value to a column (`@ localhost []  Id:     8`)
SLOW_ATTRIBUTE = re.compile(r"(\w+):[ \t]+(\S+)")
# Lines a server writes when it (re)opens a log file.
BANNER = re.compile(r"^(?:\S+, Version: |Tcp port: |Time\s+Id\s+Command\s+Argument)", re.M)
BLOCK = 1 << 20  # characters read at a time
HOLD = 1 << 21  # the longest entry held back for the next block (characters)
LINE_CAP = 1 << 20  # a line's characters kept; the rest of a longer line is dropped
MALFORMED_EXAMPLES = 5  # malformed lines kept to show, per part of a log


@dataclass(slots=True)
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
    damaged: str | None = None  # why the file ended early (a cut gzip): the rest is unread
    long_lines: int = 0  # lines longer than LINE_CAP, cut to it (memory stays bounded)

    def bad(self, line_no: int, shown: str) -> None:
        """A malformed line, `shown` already redacted (with its neighbours: _malformed)."""
        self.malformed += 1
        if len(self.malformed_examples) < MALFORMED_EXAMPLES:
            self.malformed_examples.append((line_no, escaped(shown)))


def _is_gzip(path: Path) -> bool:
    try:
        with open(path, "rb") as raw:
            return raw.read(2) == b"\x1f\x8b"
    except OSError as exc:
        raise PerflabError(f"cannot read {path}: {exc.strerror}",
                           hint="a server's logs belong to its user (mysql): read a copy, or "
                           "run perflab as a user allowed to read them") from None


def _damaged(path: Path, exc: Exception) -> PerflabError:
    """A gzip'd log that ends early or is corrupt, or a read error, as the user's to fix."""
    return PerflabError(f"cannot read {path}: {exc}",
                        hint=f"check the file (gzip -t {path} for a gzip'd log); a log still "
                        "being copied or compressed ends early")


def open_log(path: Path) -> io.TextIOBase:
    if _is_gzip(path):
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace",
                                newline="\n")
    return open(path, encoding="utf-8", errors="replace", newline="\n")


class LogFormat(StrEnum):
    """The kind of a query log (as `perflab digest --log-format` names it)."""

    GENERAL = "general"
    SLOW = "slow"


def detect_format(path: Path) -> LogFormat:
    """GENERAL or SLOW, from the first lines that say."""
    try:
        with open_log(path) as handle:
            for count, line in enumerate(handle):
                if line.startswith(("# Time:", "# User@Host:", "# Query_time:")):
                    return LogFormat.SLOW
                if BANNER.match(line):
                    continue  # both kinds of log start with the same banner
                if GENERAL_LINE.match(line.rstrip("\n")):
                    return LogFormat.GENERAL
                if count > 200:
                    break
    except (OSError, EOFError, zlib.error) as exc:
        raise _damaged(path, exc) from None
    raise PerflabError(f"{path}: neither a general query log nor a slow query log",
                       hint="give the log format, general or slow, if the start of the file "
                       "is unusual", option="log_format")


@dataclass(frozen=True)
class Part:
    """A byte range of a log that starts at an event: what one worker process reads."""

    path: Path
    kind: LogFormat
    start: int = 0
    end: int | None = None  # None: to the end of the file
    first_line: int = 1


def split_log(path: Path, kind: LogFormat, parts: int) -> list[Part]:
    """The log cut into `parts` ranges at event boundaries (a gzip'd file is not cut)."""
    size = path.stat().st_size
    if parts < 2 or _is_gzip(path):
        return [Part(path, kind)]
    cuts = sorted({_next_event(path, kind, size * i // parts) for i in range(1, parts)} - {size})
    bounds = [0, *cuts, size]
    lines = _lines_before(path, cuts)
    return [Part(path, kind, bounds[i], bounds[i + 1], 1 + ([0, *lines][i]))
            for i in range(len(bounds) - 1) if bounds[i] < bounds[i + 1]]


def _next_event(path: Path, kind: LogFormat, offset: int) -> int:
    """The byte offset of the first event that starts at or after `offset`."""
    start_line = re.compile(GENERAL_START.encode()) if kind == LogFormat.GENERAL else None
    with open(path, "rb") as handle:
        handle.seek(offset)
        if offset:
            handle.readline()  # the rest of a line cut in the middle
        previous = b""
        while True:
            here = handle.tell()
            line = handle.readline()
            if not line:
                return here
            if start_line is not None:  # a general log
                if start_line.match(line):
                    return here
            elif line.startswith(b"# Time:") or (line.startswith(b"# User@Host:")
                                                  and not previous.startswith(b"# Time:")):
                return here
            previous = line


def _lines_before(path: Path, offsets: list[int]) -> list[int]:
    counts, seen, position = [], 0, 0
    with open(path, "rb") as handle:
        for offset in offsets:
            while position < offset:
                chunk = handle.read(min(1 << 24, offset - position))
                seen += chunk.count(b"\n")
                position += len(chunk)
            counts.append(seen)
    return counts


class _Gzip:
    """read(n) of decoded text from a gzip'd log that may end early: a log cut while it was
    rotated or copied gives everything up to the cut, and `damaged` says where it stopped.
    (gzip.GzipFile would drop the data of the read that meets the cut.)"""

    def __init__(self, path: Path):
        self.raw = open(path, "rb")
        self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self.damaged: str | None = None
        self.done = False

    def read(self, size: int) -> str:
        out: list[str] = []
        have = 0
        while have < size and not self.done:
            text = self.decoder.decode(self._inflated(size - have), final=self.done)
            out.append(text)
            have += len(text)
        return "".join(out)

    def _inflated(self, size: int) -> bytes:
        data = self.inflate.decompress(self.inflate.unconsumed_tail, size) \
            if self.inflate.unconsumed_tail else b""
        while not data and not self.done:
            if self.inflate.eof:  # a member ended: another may follow (concatenated gzip)
                rest = self.inflate.unused_data
                self.inflate = zlib.decompressobj(16 + zlib.MAX_WBITS)
                if not rest and not (rest := self.raw.read(1 << 16)):
                    self.done = True
                    break
            else:
                rest = self.raw.read(1 << 16)
                if not rest:
                    self.damaged = (f"the gzip data ends at compressed byte "
                                    f"{self.raw.tell():,} in the middle of a member (truncated)")
                    self.done = True
                    break
            try:
                data = self.inflate.decompress(rest, size)
            except zlib.error as exc:
                self.damaged = (f"the gzip data breaks near compressed byte "
                                f"{self.raw.tell():,} ({exc})")
                self.done = True
        return data

    def close(self) -> None:
        self.raw.close()


class _Range:
    """read(n) of decoded text from a byte range of a file."""

    def __init__(self, path: Path, start: int, end: int):
        self.handle = open(path, "rb")
        self.handle.seek(start)
        self.left = end - start
        self.decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def read(self, size: int) -> str:
        data = self.handle.read(min(size, self.left))
        self.left -= len(data)
        return self.decoder.decode(data, final=not data)

    def close(self) -> None:
        self.handle.close()


def read_events(part: Part, stats: ParseStats) -> Iterator[Event]:
    reader = _general if part.kind == LogFormat.GENERAL else _slow
    pattern = GENERAL_EVENT if part.kind == LogFormat.GENERAL else SLOW_ENTRY
    handle: _Range | _Gzip | io.TextIOBase
    if part.end is not None:
        handle = _Range(part.path, part.start, part.end)
    elif _is_gzip(part.path):
        handle = _Gzip(part.path)
    else:
        handle = open_log(part.path)
    try:
        yield from reader(_entries(handle, pattern, stats, part.first_line), stats)
        stats.damaged = getattr(handle, "damaged", None)
    except OSError as exc:
        raise _damaged(part.path, exc) from None
    finally:
        handle.close()


def _entries(handle, pattern: re.Pattern, stats: ParseStats,
             line_no: int = 1) -> Iterator[tuple[re.Match, int]]:
    """Every match of `pattern` in the file with the line number it starts on, block by block
    (the regex engine does the line work); text between matches is counted as malformed.

    The last match of a block may go on in the next one, so it is read again with it, up to
    HOLD characters: a longer statement, or that much text with no entry, is taken as it is.
    """
    cursor = _Cursor(line_no, stats)
    carry = ""
    dropping = False  # in the rest of a line longer than LINE_CAP
    while True:
        chunk = handle.read(BLOCK)
        last = not chunk
        if dropping and not last:
            end = chunk.find("\n")
            if end < 0:
                continue
            chunk, dropping = chunk[end:], False
        block, carry = carry + chunk, ""
        if not last:
            cut = block.rfind("\n") + 1
            block, carry = block[:cut], block[cut:]
            if len(carry) > LINE_CAP:  # a line still going on: keep its head only
                carry, dropping = carry[:LINE_CAP], True
                stats.long_lines += 1
        elif block and not block.endswith("\n"):
            block += "\n"
        cursor.block, cursor.position = block, 0
        pending = None  # the block's last match: it may go on in the next block
        for match in pattern.finditer(block):
            if pending is not None:
                yield pending, cursor.take(pending)
            pending = match
        if pending is not None and (last or len(block) - pending.start() >= HOLD):
            yield pending, cursor.take(pending)
            pending = None
        if not last:
            hold = pending.start() if pending is not None else cursor.position
            if len(block) - hold < HOLD:
                carry = block[hold:] + carry
                cursor.block = block[:hold]
        cursor.rest_malformed()
        if last:
            stats.lines += cursor.line_no - line_no
            return


class _Cursor:
    """How far the scan of a block has got: its position and line number."""

    def __init__(self, line_no: int, stats: ParseStats):
        self.line_no = line_no
        self.stats = stats
        self.block = ""
        self.position = 0

    def take(self, match: re.Match) -> int:
        """Account for the text up to the end of `match`; returns the line it starts on."""
        start, end = match.span()
        if start > self.position:
            self._gap(start)
        here = self.line_no
        self.line_no += self.block.count("\n", start, end)
        self.position = end
        return here

    def rest_malformed(self) -> None:
        if len(self.block) > self.position:
            self._gap(len(self.block))

    def _gap(self, end: int) -> None:
        _malformed(self.block[self.position:end], self.line_no, self.stats)
        self.line_no += self.block.count("\n", self.position, end)
        self.position = end


def escaped(line: str, limit: int = 200) -> str:
    """A line as a terminal may show it: control characters, invalid bytes and non-ASCII as
    Python escapes, cut to `limit` characters."""
    return line[:limit].encode("ascii", "backslashreplace").decode("ascii").translate(_CONTROLS)


_CONTROLS = {c: f"\\x{c:02x}" for c in (*range(32), 127)}


def _malformed(text: str, line_no: int, stats: ParseStats) -> None:
    """Count a run of lines that belong to no event. The lines to show are redacted together:
    a secret's keyword may end one line and its literal start the next (redact keeps the
    lines). Once enough are kept, the others are only counted."""
    lines = text.split("\n")
    shown = redact(text).split("\n") \
        if len(stats.malformed_examples) < MALFORMED_EXAMPLES else lines
    for offset, (line, sample) in enumerate(zip(lines, shown, strict=True)):
        if line.strip() and not BANNER.match(line):
            stats.bad(line_no + offset, sample)


def _general(entries, stats: ParseStats) -> Iterator[Event]:
    """Connection 0 is the server itself (MySQL logs the DDL of its own start-up so): no
    client's work, left out as pt-query-digest leaves it. A prepared statement's text
    (Execute, Prepare) may span lines, as a Query's does."""
    clock = _Clock()
    now = None
    for match, line_no in entries:
        stamp, thread, command, argument, more = match.groups()
        if stamp:
            now = clock.seconds(stamp)
        if int(thread) == 0:
            continue
        argument = argument or ""
        if command in ("Query", "Execute", "Prepare"):
            if more:
                if "Version: " in more or "Tcp port: " in more or "Argument" in more:
                    more = "".join(line for line in more.splitlines(True)
                                   if not BANNER.match(line))
                argument = argument + "\n" + more
            text = argument.rstrip("\n")
        else:
            if more:
                _malformed(more, line_no + 1, stats)
            if command == "Init" and argument.startswith("DB"):
                command, argument = "Init DB", argument[2:].lstrip()
            text = argument.rstrip()
        stats.events += 1
        yield Event(line_no, int(thread), command, text, now)


def _slow(entries, stats: ParseStats) -> Iterator[Event]:
    clock = _Clock()
    stamp = None
    db = None
    for match, line_no in entries:
        header, body = match.groups()
        fast = MARIADB_HEADER.match(header)
        if fast:
            time_text, thread, schema, query_time, sent, examined = fast.groups()
            if time_text:
                stamp = clock.seconds(time_text.strip())
        else:
            for line in header.splitlines():
                if line.startswith("# Time:"):
                    stamp = clock.seconds(line[7:].strip())
            attributes = dict(SLOW_ATTRIBUTE.findall(header))
            thread = attributes.get("Thread_id") or attributes.get("Id")
            schema = attributes.get("Schema")
            query_time = attributes.get("Query_time")
            sent, examined = attributes.get("Rows_sent"), attributes.get("Rows_examined")
        text = body
        while True:  # the entry's own lines before its statement
            if text[:14].lower() == "set timestamp=":
                end = text.find("\n")
                try:
                    stamp = float(text[14:end].strip().rstrip(";"))
                except ValueError:
                    pass
                text = text[end + 1:]
            elif text[:4].lower() == "use " and _more_follows(text):
                end = text.find("\n")
                db = text[4:end].strip().rstrip(";").strip().strip("`")
                text = text[end + 1:]
            else:
                break
        if "Version: " in text or "Tcp port: " in text:
            text = "".join(line for line in text.splitlines(True) if not BANNER.match(line))
        text = text.rstrip()
        if text.endswith(";"):
            text = text[:-1]
        if not text:
            continue  # a header with no statement, e.g. the log's last, cut entry
        command = "Query"
        if text.startswith(ADMIN):  # as the general log has it: Init DB's text is the schema
            command = text[len(ADMIN):].strip()
            text = (db or "") if command == "Init DB" else ""
        stats.events += 1
        yield Event(line_no, int(thread) if thread and thread.isdigit() else None, command,
                    text, stamp, schema or db, _float(query_time), _float(sent),
                    _float(examined))


def _more_follows(text: str) -> bool:
    """Whether a statement other than SET timestamp follows the first line of text."""
    return any(line.strip() and line[:14].lower() != "set timestamp="
               for line in text.split("\n")[1:])


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
