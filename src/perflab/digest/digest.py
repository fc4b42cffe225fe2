"""perflab digest: logs in, a profile of fingerprints and the findings out, in one streaming pass
per part of a log (big plain logs are cut into one part per process, then merged).

Memory is bounded by the number of distinct fingerprints and of open connections, not by the
log: each event is parsed, fingerprinted, added to its class and to the findings, and dropped.
Query times go into pt-query-digest's kind of histogram (buckets 5% wide), so the p95 is as
precise as pt-query-digest's own.
"""

from __future__ import annotations

import dataclasses
import math
import os
import resource
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from perflab.digest.findings import Findings
from perflab.digest.fingerprint import fingerprint, query_id
from perflab.digest.parse import (
    LogFormat,
    ParseStats,
    Part,
    detect_format,
    read_events,
    split_log,
)
from perflab.digest.redact import no_literals, shown

BUCKET_BASE = 1.05
BUCKET_FLOOR = 1e-6  # seconds: the first bucket holds everything at or below a microsecond
SPLIT_MIN = 32 << 20  # bytes: smaller files are read by one process


EXAMPLE_CHARS = 2000  # of a class's example statement

@dataclass
class QueryClass:
    fingerprint: str
    calls: int = 0
    example: str = ""
    example_line: int = 0
    timed: int = 0  # calls with a Query_time (slow log)
    total_time: float = 0.0
    max_time: float = 0.0
    rows_sent: float = 0.0
    rows_examined: float = 0.0
    buckets: dict[int, int] = field(default_factory=dict)

    def add_time(self, seconds: float) -> None:
        self.timed += 1
        self.total_time += seconds
        self.max_time = max(self.max_time, seconds)
        bucket = 0 if seconds <= BUCKET_FLOOR else \
            1 + int(math.log(seconds / BUCKET_FLOOR, BUCKET_BASE))
        self.buckets[bucket] = self.buckets.get(bucket, 0) + 1

    def merge(self, other: QueryClass) -> None:
        self.calls += other.calls
        self.timed += other.timed
        self.total_time += other.total_time
        self.max_time = max(self.max_time, other.max_time)
        self.rows_sent += other.rows_sent
        self.rows_examined += other.rows_examined
        for bucket, count in other.buckets.items():
            self.buckets[bucket] = self.buckets.get(bucket, 0) + count

    def p95(self) -> float | None:
        if not self.timed:
            return None
        rank = math.ceil(0.95 * self.timed)
        seen = 0
        for bucket in sorted(self.buckets):
            seen += self.buckets[bucket]
            if seen >= rank:
                top = BUCKET_FLOOR * BUCKET_BASE ** bucket
                return min(top, self.max_time)
        return self.max_time


@dataclass(frozen=True)
class MalformedLine:
    line: int  # counted from 1 in its file
    text: str


@dataclass
class LogFile:
    """One log as the digest read it: its format and what its lines held."""

    path: str
    format: LogFormat
    lines: int = 0
    events: int = 0
    malformed: int = 0
    long_lines: int = 0  # longer than 1 MiB: their first MiB read, the rest skipped
    malformed_examples: list[MalformedLine] = field(default_factory=list)
    damaged: str = ""  # why reading stopped early (a damaged compressed file), "" if it did not

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        if not self.damaged:
            del data["damaged"]
        return data


@dataclass
class Digest:
    files: list[LogFile]
    kind: str
    classes: list[QueryClass]  # ranked
    events: int
    findings: Findings
    seconds: float
    first_time: float | None
    last_time: float | None
    peak_rss_mib: float  # the processes that did the work, together
    literals: bool = True  # False once without_literals() ran (--redact)

    def without_literals(self) -> Digest:
        """--redact: the digest with every literal of every example (and fingerprint) shown
        as ?."""
        classes = [dataclasses.replace(c, example=no_literals(c.example)) for c in self.classes]
        files = [dataclasses.replace(info, malformed_examples=[
                     MalformedLine(m.line, no_literals(m.text)) for m in info.malformed_examples])
                 for info in self.files]
        return dataclasses.replace(self, classes=classes, files=files,
                                   findings=self.findings.without_literals(), literals=False)

    def shown_fingerprint(self, query_class: QueryClass) -> str:
        """A class's fingerprint as outputs show it. A quote the log left open keeps its
        literal, lower-cased, and what pt's rules leave of a hex literal (?abcd) is there
        too: credentials are masked, and with --redact every literal. The fingerprint itself
        stays pt's: the grouping and the query ID are computed on it."""
        return shown(query_class.fingerprint, literals=self.literals)

    def to_json(self, top: int | None = None) -> dict:
        total = sum(c.calls for c in self.classes) or 1
        return {
            "files": [info.to_json() for info in self.files],
            "format": self.kind,
            "events": self.events,
            "classes": len(self.classes),
            "seconds": self.seconds,
            "peak_rss_mib": self.peak_rss_mib,
            "span_seconds": (self.last_time - self.first_time)
            if self.first_time is not None and self.last_time is not None else None,
            "profile": [
                {"rank": rank, "query_id": query_id(c.fingerprint),
                 "fingerprint": self.shown_fingerprint(c),
                 "calls": c.calls, "share": c.calls / total,
                 "total_time": c.total_time if c.timed else None,
                 "mean_time": c.total_time / c.timed if c.timed else None,
                 "p95_time": c.p95(), "max_time": c.max_time if c.timed else None,
                 "rows_sent": c.rows_sent if c.timed else None,
                 "rows_examined": c.rows_examined if c.timed else None,
                 "example": c.example, "example_line": c.example_line}
                for rank, c in enumerate(self.classes[:top] if top else self.classes, 1)
            ],
            "findings": self.findings.to_json(),
        }


def digest_logs(paths: list[Path], kind: str | None = None, burst: int = 10,
                window: float = 1.0, jobs: int = 1,
                progress: Callable[[str], None] | None = None) -> Digest:
    """Digest the logs. With jobs > 1, each plain file of SPLIT_MIN bytes or more is cut at
    event boundaries into `jobs` parts digested in parallel and merged; a run of repeats or a
    burst that spans a cut then counts as two."""
    started = time.monotonic()
    parts: list[Part] = []
    for path in paths:
        file_kind = LogFormat(kind) if kind else detect_format(path)
        big = path.stat().st_size >= SPLIT_MIN
        parts += split_log(path, file_kind, jobs if big else 1)
    if progress:
        size = sum(path.stat().st_size for path in paths) / 2**20
        progress(f"digesting {len(paths)} log(s), {size:,.0f} MiB, in {len(parts)} part(s) "
                 f"on {min(jobs, len(parts))} process(es)")
    if jobs > 1 and len(parts) > 1:
        # This process digests the first part itself while the workers take the others: one
        # process fewer to start and one part's classes fewer to send back.
        rest = parts[1:]
        with ProcessPoolExecutor(min(jobs, len(parts)) - 1) as pool:
            later = pool.map(_digest_part, rest, [burst] * len(rest), [window] * len(rest),
                             [progress] * len(rest))
            results = [_digest_part(parts[0], burst, window, progress), *later]
    else:
        results = [_digest_part(part, burst, window, progress) for part in parts]
    return _merge(parts, results, burst, window, time.monotonic() - started)


@dataclass
class _PartResult:
    classes: dict[str, QueryClass]
    findings: Findings
    stats: ParseStats
    first: float | None
    last: float | None
    pid: int
    peak_rss: int  # KiB, of the process that digested the part


def _digest_part(part: Part, burst: int, window: float,
                 progress: Callable[[str], None] | None = None) -> _PartResult:
    """One part, in this process or a worker (`progress` must then be a module function)."""
    classes: dict[str, QueryClass] = {}
    findings = Findings(burst, window)
    stats = ParseStats()
    first = last = None
    next_report = time.monotonic() + 10
    for event in read_events(part, stats):
        if progress and stats.events % 65536 == 0 and time.monotonic() > next_report:
            next_report = time.monotonic() + 10
            progress(f"{part.path.name} from byte {part.start:,}: {stats.events:,} events, "
                     f"{len(classes):,} fingerprints")
        if event.command == "Query":
            fp = fingerprint(event.text)
        else:
            fp = f"administrator command: {event.command}"
        query_class = classes.get(fp)
        if query_class is None:
            query_class = classes[fp] = QueryClass(fp, example=shown(event.text, EXAMPLE_CHARS),
                                                   example_line=event.line)
        query_class.calls += 1
        if event.query_time is not None:
            query_class.add_time(event.query_time)
            query_class.rows_sent += event.rows_sent or 0
            query_class.rows_examined += event.rows_examined or 0
        if event.time is not None:
            if first is None:
                first = event.time
            last = event.time
        findings.observe(event, fp)
    findings.finish()
    return _PartResult(classes, findings, stats, first, last, os.getpid(),
                       resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def _merge(parts: list[Part], results: list[_PartResult], burst: int, window: float,
           seconds: float) -> Digest:
    classes: dict[str, QueryClass] = {}
    findings = Findings(burst, window)
    files: dict[Path, LogFile] = {}
    for part, result in zip(parts, results, strict=True):
        for fp, query_class in result.classes.items():
            if fp in classes:
                classes[fp].merge(query_class)
            else:
                classes[fp] = query_class
        findings.merge(result.findings)
        info = files.setdefault(part.path, LogFile(str(part.path), part.kind))
        info.lines += result.stats.lines
        info.events += result.stats.events
        info.malformed += result.stats.malformed
        info.long_lines += result.stats.long_lines
        info.damaged = result.stats.damaged or info.damaged
        info.malformed_examples += [MalformedLine(n, t)
                                    for n, t in result.stats.malformed_examples]
    times = [t for r in results for t in (r.first, r.last) if t is not None]
    peaks: dict[int, int] = {}
    for result in results:
        peaks[result.pid] = max(peaks.get(result.pid, 0), result.peak_rss)
    peaks[os.getpid()] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # total times rounded to the nanosecond: parts summed in another order must rank alike
    ranked = sorted(classes.values(),
                    key=lambda c: (-round(c.total_time, 9), -c.calls, c.fingerprint))
    return Digest(list(files.values()), "+".join(sorted({p.kind for p in parts})), ranked,
                  sum(r.stats.events for r in results), findings, seconds,
                  min(times, default=None), max(times, default=None),
                  sum(peaks.values()) / 1024)
