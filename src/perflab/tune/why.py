"""Why the winner wins: what the server's own counters did differently under the defaults and
under the winning setting, from the status deltas perflab stores with every point of the final
re-measure (SHOW GLOBAL STATUS before and after each point).

Each indicator is a ratio of counters summed over a configuration's points (per statement, per
SELECT, per key read request...), so the two configurations compare whatever their throughput.
Those that moved by a factor of two or more, and by more than a floor that keeps noise on
near-zero counters out, are named, the largest moves first. A query cache that answers most
SELECTs is said plainly, with how few statements it had to take in: that gain belongs to a
workload repeating identical statements, and traffic with varied literals will not see it.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

MOVED = 2.0  # an indicator named when it moved by this factor or more ...
NOTHING_COUNTED = ("no counter perflab reads moved by a factor of two: the difference lies in "
                   "what the server does not count, such as CPU spent waiting on a lock (a "
                   "segmented key cache's gain is one); profile = true in [run] shows where "
                   "the server's CPU goes")
QUERY_CACHE_ANSWERS = 0.5  # the query cache "answers" when it serves this share of SELECTs


@dataclass(frozen=True)
class Indicator:
    name: str  # what a reader is told, e.g. "key cache misses per key read request"
    numerator: tuple[str, ...]
    denominator: tuple[str, ...]
    floor: float  # ... and by more than this absolute difference

    def value(self, counters: Mapping[str, float]) -> float | None:
        below = sum(counters.get(n, 0.0) for n in self.denominator)
        if below <= 0 or not any(n in counters for n in self.numerator):
            return None
        return sum(counters.get(n, 0.0) for n in self.numerator) / below


STATEMENTS = ("Questions",)
# MariaDB counts a SELECT the query cache answers in Com_select too (MySQL did not)
QUERY_CACHE_SHARE = Indicator("query cache hits per SELECT", ("Qcache_hits",), ("Com_select",),
                              0.05)
INDICATORS = (
    QUERY_CACHE_SHARE,
    Indicator("key read requests per statement (the MyISAM key cache's work)",
              ("Key_read_requests",), STATEMENTS, 0.5),
    Indicator("key cache misses per key read request", ("Key_reads",), ("Key_read_requests",),
              0.01),
    Indicator("InnoDB buffer pool reads from disk per statement", ("Innodb_buffer_pool_reads",),
              STATEMENTS, 0.01),
    Indicator("InnoDB pages flushed per statement", ("Innodb_buffer_pool_pages_flushed",),
              STATEMENTS, 0.01),
    Indicator("InnoDB redo log waits per statement", ("Innodb_log_waits",), STATEMENTS, 0.001),
    Indicator("InnoDB row lock waits per statement", ("Innodb_row_lock_waits",), STATEMENTS,
              0.001),
    Indicator("table lock waits per statement", ("Table_locks_waited",), STATEMENTS, 0.001),
    Indicator("temporary tables on disk per statement", ("Created_tmp_disk_tables",),
              STATEMENTS, 0.001),
    Indicator("sort merge passes per statement", ("Sort_merge_passes",), STATEMENTS, 0.001),
    Indicator("tables opened per statement", ("Opened_tables", "Opened_table_definitions"),
              STATEMENTS, 0.001),
    Indicator("threads created per connection", ("Threads_created",), ("Connections",), 0.05),
    Indicator("rows read per statement", ("Rows_read", "Innodb_rows_read"), STATEMENTS, 1.0),
)


@dataclass(frozen=True)
class Change:
    indicator: str
    default: float
    winner: float

    def text(self) -> str:
        return f"{self.indicator}: {_figure(self.default)} → {_figure(self.winner)}"


@dataclass(frozen=True)
class Explanation:
    changes: list[Change]
    query_cache: str | None  # said when the query cache answers the winner's SELECTs
    counted: bool = True  # False: the points hold no status counters (an older lab's)

    def lines(self) -> list[str]:
        if not self.counted:
            return ["the re-measure's points hold no status counters: nothing to explain from"]
        out = [change.text() for change in self.changes]
        if self.query_cache:
            out.append(self.query_cache)
        return out or [NOTHING_COUNTED]


def summed(deltas: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """A configuration's counters over all its points."""
    total: dict[str, float] = {}
    for one in deltas:
        for name, value in one.items():
            total[name] = total.get(name, 0.0) + value
    return total


def explain(default: Mapping[str, float], winner: Mapping[str, float]) -> Explanation:
    """What moved between the defaults' counters and the winner's (each summed over its
    points), the largest moves first."""
    if not default or not winner:
        return Explanation([], None, counted=False)
    changes = []
    for indicator in INDICATORS:
        before, after = indicator.value(default), indicator.value(winner)
        if before is None or after is None or abs(after - before) <= indicator.floor:
            continue
        low, high = sorted((before, after))
        if low <= 0 or high / low >= MOVED:
            factor = math.inf if low <= 0 else high / low
            changes.append((factor, Change(indicator.name, before, after)))
    changes.sort(key=lambda c: -c[0])
    return Explanation([c for _, c in changes], _query_cache(default, winner))


def _query_cache(default: Mapping[str, float], winner: Mapping[str, float]) -> str | None:
    share = QUERY_CACHE_SHARE.value(winner)
    before = QUERY_CACHE_SHARE.value(default) or 0.0
    if share is None or share < QUERY_CACHE_ANSWERS or before >= QUERY_CACHE_ANSWERS:
        return None
    hits = winner.get("Qcache_hits", 0.0)
    taken = winner.get("Qcache_inserts", 0.0)
    return (f"The gain is the query cache: it answered {share:.1%} of the SELECTs "
            f"({hits:,.0f} hits) while taking in only {taken:,.0f} new statement(s) during the "
            f"measured runs, so the workload repeats a few identical statements. Traffic with "
            f"varied literals, or with writes to these tables, will not see this gain.")


def _figure(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}"
