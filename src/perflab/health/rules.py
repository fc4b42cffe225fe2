"""The health rules: each a formula over status counters and variables, an acceptable range,
the variables that govern it, where the threshold comes from, and what to change when it fails.

A rule reads a View: the counters of one window (since server start, or the difference between
two snapshots), the gauges of the window's last snapshot, the server's variables and the
window's length in seconds. Thresholds follow MySQLTuner 1.9.9 (Debian's `mysqltuner`) where
it has one, the STAR experiment's MySQL tuning notes where they gave a range, and the MariaDB manual
otherwise; `source` says which, so a reader can disagree with a number knowingly.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from perflab.health.results import HealthStatus, RuleResult
from perflab.server.memory import memory_estimate
from perflab.server.variables import parse_integer

MYSQLTUNER = "MySQLTuner 1.9.9"
STAR_NOTES = "the STAR experiment's MySQL tuning notes (BNL)"

# Commands whose rate the STAR notes report one by one.
COMMANDS = ("select", "insert", "update", "delete", "replace")
STATUS_NAME = re.compile(r"\b[A-Z][a-z]+(?:_[A-Za-z0-9]+)+\b")  # Innodb_row_lock_waits
SOME_COUNTERS = {"redo_checkpoint_age"}  # MySQL's counters, or MariaDB's: either is enough


@dataclass(frozen=True)
class View:
    """One window of a server's life, as the rules see it."""

    name: str  # "since start" or "hot"
    seconds: float
    counters: Mapping[str, float]  # counted over the window
    gauges: Mapping[str, float]  # current values at the window's end
    variables: Mapping[str, str]  # SHOW GLOBAL VARIABLES, lower-case names
    ram: int  # bytes of RAM of the machine the server runs on

    def c(self, name: str) -> float:
        return self.counters.get(name, 0.0)

    def g(self, name: str) -> float:
        return self.gauges.get(name, 0.0)

    def size(self, name: str) -> int:
        return parse_integer(self.variables.get(name, "0")) or 0


@dataclass(frozen=True)
class Figure:
    value: float
    detail: str  # the counts behind the value, e.g. "12 of 40 temporary tables"
    sample: float = float("inf")  # the events the value is a share of


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    formula: str
    unit: str  # "%", "/s", "bytes" or ""
    low: float | None  # acceptable range [low, high]; both None: reported, not judged
    high: float | None
    governs: tuple[str, ...]
    source: str
    compute: Callable[[View], Figure | None]  # None when the rule does not apply
    advice: str = ""  # the change to make when the figure is outside its range
    # A share of fewer events than this is shown but not judged: a fresh server's first table
    # opens and page reads are misses that no setting avoids.
    min_sample: int = 0

    def range_text(self) -> str:
        if self.low is not None and self.high is not None:
            if self.low == self.high:
                return f"= {_number(self.low, self.unit)}"
            return f"{_number(self.low, self.unit)} .. {_number(self.high, self.unit)}"
        if self.low is not None:
            return f">= {_number(self.low, self.unit)}"
        if self.high is not None:
            return f"<= {_number(self.high, self.unit)}"
        return "any"

    def judge(self, figure: Figure) -> HealthStatus:
        if self.low is None and self.high is None:
            return HealthStatus.INFO
        if figure.sample < self.min_sample:
            return HealthStatus.FEW
        too_low = self.low is not None and figure.value < self.low
        too_high = self.high is not None and figure.value > self.high
        return HealthStatus.FAIL if too_low or too_high else HealthStatus.OK


@dataclass(frozen=True)
class RuleJudgement:
    """One rule judged over one view (a health verdict; stats.decide.Verdict is a comparison's)."""

    rule: Rule
    status: HealthStatus
    value: float | None = None
    detail: str = ""

    @property
    def value_text(self) -> str:
        return "-" if self.value is None else _number(self.value, self.rule.unit)

    def record(self) -> RuleResult:
        """The verdict with its rule's words, as a report keeps it."""
        rule = self.rule
        return RuleResult(rule.id, rule.title, self.status, self.value, self.value_text,
                          self.detail, rule.unit, rule.range_text(), rule.low, rule.high,
                          rule.formula, rule.governs, rule.source,
                          rule.advice if self.status == HealthStatus.FAIL else "")


def evaluate(view: View, rules: tuple[Rule, ...] | None = None) -> list[RuleJudgement]:
    verdicts = []
    for rule in rules or RULES:
        figure = rule.compute(view)
        if figure is None:
            verdicts.append(RuleJudgement(rule, HealthStatus.N_A,
                                          detail=not_applicable(rule, view)))
        else:
            verdicts.append(RuleJudgement(rule, rule.judge(figure), figure.value, figure.detail))
    return verdicts


def not_applicable(rule: Rule, view: View) -> str:
    """Why a rule has no figure: a variable or counter this server (its flavor, version or
    engines) lacks, or nothing to measure in the window."""
    missing = [name for name in rule.governs if name not in view.variables]
    if missing:
        return f"this server has no {missing[0]}"
    if rule.id.startswith("qcache") and not _query_cache_enabled(view):
        return "the query cache is off (query_cache_type, query_cache_size)"
    uncounted = [name for name in STATUS_NAME.findall(rule.formula)
                 if name not in view.counters and name not in view.gauges]
    if uncounted and rule.id not in SOME_COUNTERS:
        return f"this server does not count {uncounted[0]}"
    return "nothing to measure in this window"


# -- formulas ----------------------------------------------------------------------------------

def _share(part: float, whole: float, what: str) -> Figure | None:
    """part / whole in percent, None when there is nothing to divide."""
    if whole <= 0:
        return None
    return Figure(100.0 * part / whole, f"{part:,.0f} of {whole:,.0f} {what}", whole)


def _rate(count: float, view: View, what: str) -> Figure | None:
    if view.seconds <= 0:
        return None
    return Figure(count / view.seconds, f"{count:,.0f} {what} in {view.seconds:,.0f} s")


def _query_cache_enabled(view: View) -> bool:
    return view.size("query_cache_size") > 0 and view.variables.get(
        "query_cache_type", "OFF").upper() not in ("OFF", "0")


def _qcache(compute: Callable[[View], Figure | None]) -> Callable[[View], Figure | None]:
    return lambda view: compute(view) if _query_cache_enabled(view) else None


def _key_usage(view: View) -> Figure | None:
    size = view.size("key_buffer_size")
    if size <= 0 or view.c("Key_read_requests") <= 0:
        return None  # no key cache, or no MyISAM index read in the window
    unused = view.g("Key_blocks_unused") * view.size("key_cache_block_size")
    return Figure(100.0 * (1 - unused / size),
                  f"{human_bytes(max(size - unused, 0))} of {human_bytes(size)} in use")


def _table_cache_hits(view: View) -> Figure | None:
    hits, misses = view.c("Table_open_cache_hits"), view.c("Table_open_cache_misses")
    return _share(hits, hits + misses, "table opens served by the cache")


def _dirty_pages(view: View) -> Figure | None:
    return _share(view.g("Innodb_buffer_pool_pages_dirty"),
                  view.g("Innodb_buffer_pool_pages_data"), "buffer pool data pages dirty")


def _log_waits(view: View) -> Figure | None:
    writes = view.c("Innodb_log_write_requests")
    if writes <= 0:
        return None
    waits = view.c("Innodb_log_waits")
    return Figure(waits, f"{waits:,.0f} waits for {writes:,.0f} log write requests", writes)


def _checkpoint_age(view: View) -> Figure | None:
    """The redo log's checkpoint age against its capacity: MySQL 8.0.30 and later count the
    LSNs and the capacity in force, MariaDB the age and its limit."""
    if "Innodb_redo_log_current_lsn" in view.gauges:
        age = view.g("Innodb_redo_log_current_lsn") - view.g("Innodb_redo_log_checkpoint_lsn")
        capacity = view.g("Innodb_redo_log_capacity_resized")
    elif "Innodb_checkpoint_age" in view.gauges:
        age, capacity = view.g("Innodb_checkpoint_age"), view.g("Innodb_checkpoint_max_age")
    else:
        return None
    if capacity <= 0:
        return None
    return Figure(100.0 * age / capacity,
                  f"{human_bytes(age)} of redo not checkpointed, of {human_bytes(capacity)}")


def _row_lock_waits(view: View) -> Figure | None:
    if "Innodb_row_lock_waits" not in view.counters:
        return None
    waits = view.c("Innodb_row_lock_waits")
    figure = _rate(waits, view, "row lock waits")
    if figure is None or waits <= 0:
        return figure
    average = view.c("Innodb_row_lock_time") / waits
    return Figure(figure.value, f"{figure.detail}, {average:,.1f} ms each on average")


def _wait_free(view: View) -> Figure | None:
    if "Innodb_buffer_pool_wait_free" not in view.counters:
        return None
    waits = view.c("Innodb_buffer_pool_wait_free")
    return Figure(waits, f"{waits:,.0f} waits for a free page in the buffer pool")


def _memory(view: View) -> Figure | None:
    if view.ram <= 0:
        return None
    worst = memory_estimate({name: view.size(name) for name in view.variables})
    return Figure(100.0 * worst / view.ram,
                  f"{human_bytes(worst)} worst case of {human_bytes(view.ram)} RAM")


def _command_rule(command: str) -> Rule:
    counter = f"Com_{command}"
    return Rule(
        f"qps_{command}", f"Queries/second - {command.upper()}", f"{counter} / seconds", "/s",
        None, None, (), STAR_NOTES,
        lambda view: _rate(view.c(counter), view, f"{command.upper()} statements"),
    )


RULES: tuple[Rule, ...] = (
    Rule("qps", "Queries/second (QPS)", "Questions / seconds", "/s", None, None, (), STAR_NOTES,
         lambda view: _rate(view.c("Questions"), view, "client statements")),
    *(_command_rule(command) for command in COMMANDS),
    Rule("qcache_efficiency", "Query cache efficiency",
         "Qcache_hits / (Qcache_hits + Com_select)", "%", 20, None,
         ("query_cache_type", "query_cache_size"), f"{STAR_NOTES}; {MYSQLTUNER}",
         _qcache(lambda view: _share(view.c("Qcache_hits"),
                                     view.c("Qcache_hits") + view.c("Com_select"),
                                     "SELECTs answered from the cache")),
         "lower query_cache_type to OFF and query_cache_size to 0: the cache costs more "
         "than it saves", min_sample=100),
    Rule("qcache_overhead", "Query cache overhead",
         "Qcache_lowmem_prunes / Qcache_inserts", "%", None, 5,
         ("query_cache_size",),
         f"range from {STAR_NOTES}, which gives no formula; this one counts cached results "
         "evicted for lack of memory, whose insertion was wasted work",
         _qcache(lambda view: _share(view.c("Qcache_lowmem_prunes"), view.c("Qcache_inserts"),
                                     "inserted results pruned for memory")),
         "raise query_cache_size, or lower query_cache_limit so that big results stay out",
         min_sample=100),
    Rule("qcache_fragmentation", "Query cache fragmentation",
         "Qcache_free_blocks / Qcache_total_blocks", "%", None, 20,
         ("query_cache_min_res_unit", "query_cache_size"),
         "tuning-primer and MySQLTuner 1.x (20%)",
         _qcache(lambda view: _share(view.g("Qcache_free_blocks"), view.g("Qcache_total_blocks"),
                                     "query cache blocks free")),
         "lower query_cache_min_res_unit (small results waste the rest of each block)",
         min_sample=100),
    Rule("key_miss_ratio", "Key cache miss ratio", "Key_reads / Key_read_requests", "%",
         None, 1, ("key_buffer_size", "key_cache_segments"),
         "MariaDB manual (Key_reads/Key_read_requests below 0.01); MySQLTuner warns above 5%",
         lambda view: _share(view.c("Key_reads"), view.c("Key_read_requests"),
                             "index block reads missed the key cache"),
         "raise key_buffer_size towards the size of the MyISAM indexes in use",
         min_sample=1000),
    Rule("key_usage", "Key cache usage",
         "1 - Key_blocks_unused x key_cache_block_size / key_buffer_size", "%", 90, None,
         ("key_buffer_size",), MYSQLTUNER,
         _key_usage,
         "lower key_buffer_size towards the part in use: the rest is memory MyISAM never "
         "touches (MyISAM indexes in use, so the used part is the working set)"),
    Rule("tmp_disk", "Temporary tables created on disk",
         "Created_tmp_disk_tables / Created_tmp_tables", "%", None, 25,
         ("tmp_table_size", "max_heap_table_size"), f"{MYSQLTUNER} (25%); {STAR_NOTES} measured "
         "44% old node, 22% new node",
         lambda view: _share(view.c("Created_tmp_disk_tables"), view.c("Created_tmp_tables"),
                             "temporary tables went to disk"),
         "raise tmp_table_size and max_heap_table_size together (the smaller one is the "
         "limit), or keep BLOB/TEXT columns out of GROUP BY/DISTINCT results", min_sample=20),
    Rule("sort_merge", "Sorts requiring merge passes",
         "Sort_merge_passes / (Sort_scan + Sort_range)", "%", None, 10,
         ("sort_buffer_size",), MYSQLTUNER,
         lambda view: _share(view.c("Sort_merge_passes"),
                             view.c("Sort_scan") + view.c("Sort_range"),
                             "sorts needed a merge pass"),
         "raise sort_buffer_size (per sort: set it per session for the queries that need it)",
         min_sample=20),
    Rule("table_locks", "Table locks acquired immediately",
         "Table_locks_immediate / (Table_locks_immediate + Table_locks_waited)", "%", 95, None,
         ("concurrent_insert",), f"{MYSQLTUNER} (95%); {STAR_NOTES} measured 99-100%",
         lambda view: _share(view.c("Table_locks_immediate"),
                             view.c("Table_locks_immediate") + view.c("Table_locks_waited"),
                             "table locks without a wait"),
         "raise concurrent_insert to ALWAYS, or move the contended MyISAM/Aria tables to "
         "InnoDB (row locks)", min_sample=100),
    Rule("thread_cache", "Thread cache hit rate", "1 - Threads_created / Connections", "%",
         50, None, ("thread_cache_size",), MYSQLTUNER,
         lambda view: _share(view.c("Connections") - view.c("Threads_created"),
                             view.c("Connections"), "connections reused a cached thread"),
         "raise thread_cache_size", min_sample=20),
    Rule("table_cache_hit_rate", "Table open cache hit rate",
         "Table_open_cache_hits / (Table_open_cache_hits + Table_open_cache_misses)", "%",
         90, None, ("table_open_cache",),
         "perflab: a warm server opens tables rarely (MySQLTuner only warns below 20%)",
         _table_cache_hits,
         "raise table_open_cache (and open_files_limit with it)", min_sample=1000),
    Rule("table_cache_overflows", "table_open_cache overflows",
         "Table_open_cache_overflows / seconds", "/s", None, 1, ("table_open_cache",),
         "perflab: MariaDB manual, Table_open_cache_overflows counts tables closed because "
         "the cache was full; more than one a second means table_open_cache is too small",
         lambda view: _rate(view.c("Table_open_cache_overflows"), view,
                            "tables evicted from a full cache"),
         "raise table_open_cache"),
    Rule("connections_used", "Highest connection usage",
         "Max_used_connections / max_connections", "%", None, 85, ("max_connections",),
         MYSQLTUNER,
         lambda view: _share(view.g("Max_used_connections"), view.size("max_connections"),
                             "connections at the peak"),
         "raise max_connections (mind the memory rule), or pool connections in the client"),
    Rule("aborted_connects", "Aborted connection attempts",
         "Aborted_connects / Connections", "%", None, 3,
         ("connect_timeout", "max_connect_errors"), MYSQLTUNER,
         lambda view: _share(view.c("Aborted_connects"), view.c("Connections"),
                             "connection attempts failed"),
         "fix the clients' credentials or network first; raise connect_timeout if slow "
         "clients time out during the handshake", min_sample=20),
    Rule("innodb_hit_rate", "InnoDB buffer pool hit rate",
         "1 - Innodb_buffer_pool_reads / Innodb_buffer_pool_read_requests", "%", 99, None,
         ("innodb_buffer_pool_size",),
         "common InnoDB guidance (99%); MySQLTuner warns below 90%",
         lambda view: _share(view.c("Innodb_buffer_pool_read_requests")
                             - view.c("Innodb_buffer_pool_reads"),
                             view.c("Innodb_buffer_pool_read_requests"),
                             "page requests served from the buffer pool"),
         "raise innodb_buffer_pool_size towards the size of the data in use",
         min_sample=100_000),
    Rule("innodb_dirty", "InnoDB dirty pages",
         "Innodb_buffer_pool_pages_dirty / Innodb_buffer_pool_pages_data", "%", None, 75,
         ("innodb_max_dirty_pages_pct", "innodb_io_capacity"),
         "perflab: well below innodb_max_dirty_pages_pct (90 by default), where flushing "
         "turns aggressive",
         _dirty_pages,
         "raise innodb_io_capacity so that page cleaners keep up"),
    Rule("innodb_log_waits", "InnoDB log waits", "Innodb_log_waits", "", 0, 0,
         ("innodb_log_buffer_size",), f"{MYSQLTUNER} (any wait is a warning)",
         _log_waits, "raise innodb_log_buffer_size"),
    Rule("redo_checkpoint_age", "InnoDB redo checkpoint age",
         "(Innodb_redo_log_current_lsn - Innodb_redo_log_checkpoint_lsn) / "
         "Innodb_redo_log_capacity_resized (MariaDB: Innodb_checkpoint_age / "
         "Innodb_checkpoint_max_age)", "%", None, 75,
         ("innodb_redo_log_capacity", "innodb_log_file_size"),
         "perflab: below the part of the redo capacity (about 7/8) where InnoDB flushes "
         "ahead of its checkpoint, as the MySQL and MariaDB manuals describe it",
         _checkpoint_age,
         "raise innodb_redo_log_capacity (MySQL 8.0.30 and later) or innodb_log_file_size "
         "(MariaDB), or innodb_io_capacity so that flushing keeps up"),
    Rule("row_lock_waits", "InnoDB row lock waits", "Innodb_row_lock_waits / seconds", "/s",
         None, None, (), "reported, not judged: MySQL's and MariaDB's Innodb_row_lock_* "
         "counters (how much of the load waits on rows other sessions hold)",
         _row_lock_waits),
    Rule("buffer_pool_wait_free", "InnoDB waits for a free page",
         "Innodb_buffer_pool_wait_free", "", 0, 0,
         ("innodb_buffer_pool_size", "innodb_lru_scan_depth"),
         "MySQL manual (Innodb_buffer_pool_wait_free: nonzero when a page read found no "
         "clean page to reuse)", _wait_free,
         "raise innodb_buffer_pool_size, or innodb_lru_scan_depth so that cleaners free pages "
         "ahead"),
    Rule("slow_queries", "Slow queries", "Slow_queries / Questions", "%", None, 5,
         ("long_query_time",), MYSQLTUNER,
         lambda view: _share(view.c("Slow_queries"), view.c("Questions"),
                             f"statements slower than long_query_time "
                             f"({view.variables.get('long_query_time', '?')} s)"),
         "the queries, not a variable: turn slow_query_log on and run perflab digest on it; "
         "long_query_time sets the bar", min_sample=100),
    Rule("memory", "Worst-case memory vs RAM",
         "(global buffers + max_connections x per-connection buffers) / RAM", "%", None, 85,
         ("max_connections", "sort_buffer_size", "join_buffer_size", "read_buffer_size",
          "read_rnd_buffer_size", "tmp_table_size", "innodb_buffer_pool_size",
          "key_buffer_size"), f"{MYSQLTUNER} (85%)", _memory,
         "lower max_connections or the per-connection buffers (sort, join, read, read_rnd, "
         "tmp_table_size), or innodb_buffer_pool_size"),
)

RULES_BY_ID = {rule.id: rule for rule in RULES}


# -- number formats ----------------------------------------------------------------------------

def _number(value: float, unit: str) -> str:
    if unit == "%":
        return f"{value:.1f}%" if abs(value) < 10 else f"{value:.0f}%"
    if unit == "/s":
        return f"{value:,.2f}/s" if abs(value) < 100 else f"{value:,.0f}/s"
    if unit == "bytes":
        return human_bytes(value)
    return f"{value:,.0f}" if value == int(value) else f"{value:,.2f}"


def human_bytes(value: float) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(value) >= size:
            scaled = value / size
            return f"{scaled:.0f} {unit}" if scaled == int(scaled) else f"{scaled:.1f} {unit}"
    return f"{value:.0f} B"

