"""perflab digest: logs in, a profile of fingerprints and the findings out, in one streaming pass.

Memory is bounded by the number of distinct fingerprints and of open connections, not by the
log: each event is parsed, fingerprinted, added to its class and to the findings, and dropped.
Query times go into pt-query-digest's kind of histogram (buckets 5% wide), so the p95 is as
precise as pt-query-digest's own.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from perflab.digest.findings import Findings
from perflab.digest.fingerprint import fingerprint, query_id
from perflab.digest.parse import ParseStats, detect_format, read_events

BUCKET_BASE = 1.05
BUCKET_FLOOR = 1e-6  # seconds: the first bucket holds everything at or below a microsecond
FINGERPRINT_CACHE = 50_000  # identical statements are common; their fingerprint is reused


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


@dataclass
class Digest:
    files: list[dict]
    kind: str
    classes: list[QueryClass]  # ranked
    events: int
    findings: Findings
    seconds: float
    first_time: float | None
    last_time: float | None

    def to_json(self, top: int | None = None) -> dict:
        total = sum(c.calls for c in self.classes) or 1
        return {
            "files": self.files,
            "format": self.kind,
            "events": self.events,
            "classes": len(self.classes),
            "seconds": self.seconds,
            "span_seconds": (self.last_time - self.first_time)
            if self.first_time is not None and self.last_time is not None else None,
            "profile": [
                {"rank": rank, "query_id": query_id(c.fingerprint), "fingerprint": c.fingerprint,
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
                window: float = 1.0,
                progress: Callable[[str], None] | None = None) -> Digest:
    started = time.monotonic()
    classes: dict[str, QueryClass] = {}
    findings = Findings(burst, window)
    cache: dict[str, str] = {}
    files = []
    events = 0
    first = last = None
    kinds = set()
    for path in paths:
        file_kind = kind or detect_format(path)
        kinds.add(file_kind)
        stats = ParseStats()
        size = path.stat().st_size
        next_report = time.monotonic() + 5
        for event in read_events(path, file_kind, stats):
            events += 1
            if event.command == "Query":
                text = event.text
                fp = cache.get(text)
                if fp is None:
                    if len(cache) >= FINGERPRINT_CACHE:
                        cache.clear()
                    fp = cache[text] = fingerprint(text)
            else:
                fp = f"administrator command: {event.command}"
            query_class = classes.get(fp)
            if query_class is None:
                query_class = classes[fp] = QueryClass(fp, example=event.text[:2000],
                                                       example_line=event.line)
            query_class.calls += 1
            if event.query_time is not None:
                query_class.add_time(event.query_time)
                query_class.rows_sent += event.rows_sent or 0
                query_class.rows_examined += event.rows_examined or 0
            if event.time is not None:
                first = event.time if first is None else first
                last = event.time
            findings.observe(event, fp)
            if progress and events % 65536 == 0 and time.monotonic() > next_report:
                next_report = time.monotonic() + 5
                progress(f"{path.name}: {events:,} events, {len(classes):,} fingerprints "
                         f"(file of {size / 2**20:,.0f} MiB)")
        findings.finish()
        files.append({"path": str(path), "format": file_kind, "lines": stats.lines,
                      "events": stats.events, "malformed": stats.malformed,
                      "malformed_examples": [{"line": n, "text": t}
                                             for n, t in stats.malformed_examples]})
    ranked = sorted(classes.values(), key=lambda c: (-c.total_time, -c.calls, c.fingerprint))
    return Digest(files, "+".join(sorted(kinds)), ranked, events, findings,
                  time.monotonic() - started, first, last)
