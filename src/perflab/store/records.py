"""What the results database holds, as typed values: one definition per kind of record.

`Metrics` is the one list of per-point figures: the points table's columns, the insert and every
reader follow from its fields. The read side (`StoredPoint`, `Session`, `ServerState`,
`ConfigDocument`, `Study`) carries every JSON column already decoded, so no module outside the
store package parses stored JSON (health/results.py makes its reports of the documents).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, get_type_hints

from perflab.domain import Plan, Point, Schedule
from perflab.stats.design import Design


@dataclass(frozen=True)
class Metrics:
    """The figures of one measured point. Rates are per second of the measured window."""

    seconds: float
    events: int
    queries: int
    reads: int
    writes: int
    other: int
    errors: int
    reconnects: int
    tps: float
    qps: float
    reads_ps: float
    writes_ps: float
    other_ps: float
    latency_min_ms: float
    latency_avg_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    latency_max_ms: float
    rows_per_query: float | None  # None when no statement touched a table
    # Share of the client machine's usable CPUs the load generator used (None: not measured,
    # points stored before it was)
    client_cpu: float | None = None
    # A fleet point: the share of its server's CPU time that fell in the other servers' turns
    # (background work they are charged for: running/turns.py); None for a serial point, or
    # when no share could be measured
    off_turn_cpu: float | None = None
    # Share of the machine's CPU time other processes and the hypervisor used during the point
    # (probes/busy.py): above BUSY_SHARE the point was measured under load
    other_cpu: float | None = None
    # the hypervisor's steal among it (None: not measured, points stored before it was)
    steal_cpu: float | None = None

    @classmethod
    def names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def columns(cls) -> str:
        """The points table's column definitions for these fields."""
        hints = get_type_hints(cls)
        return ",\n    ".join(
            f"{name} {'INTEGER' if hints[name] is int else 'REAL'}" for name in cls.names())

    def as_dict(self) -> dict[str, float | int | None]:
        return dataclasses.asdict(self)


@dataclass(frozen=True)
class Sample:
    """One interval of a point's run (sysbench's report interval, one second by default)."""

    t: float  # seconds into the run at the interval's end
    tps: float
    qps: float
    reads_ps: float
    writes_ps: float
    other_ps: float
    errors_ps: float
    reconnects_ps: float
    latency_p95_ms: float | None  # None for a time slice of a sliced run
    threads: int


@dataclass(frozen=True)
class Symbol:
    """A share of the server's CPU samples (perf) in one function of one binary."""

    share: float
    dso: str
    symbol: str


class PointStatus(StrEnum):
    """How a point ended: measured, or failed (with the error it stores)."""

    OK = "ok"
    FAILED = "failed"


class RunEnd(StrEnum):
    """Why a run stopped: a session's outcome."""

    COMPLETE = "complete"  # every planned round measured
    ALL_DECIDED = "all decided"  # every comparison resolved (decide.resolved) before the last look
    BUDGET_SPENT = "budget spent"  # the study's time budget
    # asked one-sided, the comparisons still open unlikely to be told by the last look
    LEFT_OPEN = "left open"  # (running.rounds.beyond_reach)
    INTERRUPTED = "interrupted"  # stopped from outside, or by an error


class Activation(StrEnum):
    """How a server came to run a configuration (a server state's `how`)."""

    START = "start"  # started with it
    SET = "set"  # SET GLOBAL on the running server
    AS_IS = "as is"  # it ran it already: nothing to set (a server perflab did not start)


@dataclass(frozen=True)
class PointRecord:
    """What the runner hands the store for one finished point (the write side)."""

    point: Point
    status: PointStatus
    started_at: float
    finished_at: float
    server_state_id: int | None
    metrics: Metrics | None
    series: list[Sample] | None = None
    status_delta: dict[str, float] | None = None
    histogram: dict[int, int] | None = None
    profile: list[Symbol] | None = None
    error: str | None = None
    clients: list[dict] | None = None  # load from several client machines: each worker's part
    # a failed point's server could not start or died: the setting's own failure, which
    # measuring again would repeat (not stored: the error says it)
    server_failed: bool = False
    # measured under load: the busiest other processes (not stored: the run's progress says it)
    other_work: tuple[str, ...] = ()


def ok_metrics(point: PointRecord | StoredPoint) -> Metrics:
    """The figures of a point that ran (status OK, which a point has only with its figures)."""
    assert point.metrics is not None, "a successful point has metrics"
    return point.metrics


# The server process's CPU seconds (user + system, every thread) and context switches
# (voluntary and not, summed over its threads) over a point's window (probes/status.py), kept
# in its status delta under these names (lower case: no SHOW STATUS counter is spelt so).
CPU_SECONDS = "perflab_server_cpu_seconds"
CONTEXT_SWITCHES = "perflab_server_context_switches"
# Figures per statement the server received, from a point's counters: (counter, scale). A fleet
# point's cover its whole sliced run, the server's background work in the others' turns
# included (its own cost; its idle turns cost it next to nothing).
CPU_PER_QUERY = "server_cpu_us_per_query"  # the server's CPU microseconds per statement
PER_QUERY = {CPU_PER_QUERY: (CPU_SECONDS, 1e6),
             "context_switches_per_query": (CONTEXT_SWITCHES, 1.0)}


def per_query(status_delta: dict[str, float], counter: str, scale: float = 1.0
              ) -> float | None:
    """A counter of a point's window per statement the server received (its Questions)."""
    questions = status_delta.get("Questions", 0)
    if counter not in status_delta or questions <= 0:
        return None
    return status_delta[counter] * scale / questions


@dataclass(frozen=True)
class StoredPoint:
    """One point as stored (the read side), its JSON columns decoded."""

    id: int
    study: str
    config_hash: str
    config: str
    workload: str
    threads: int
    round: int
    status: PointStatus
    session_id: int
    server_state_id: int | None
    started_at: float
    finished_at: float
    metrics: Metrics | None  # None for a failed point
    series: list[Sample] = field(default_factory=list)
    status_delta: dict[str, float] = field(default_factory=dict)
    histogram: dict[int, int] = field(default_factory=dict)  # latency bucket -> events
    profile: list[Symbol] = field(default_factory=list)  # perf's top symbols, when recorded
    error: str | None = None
    # load from several client machines (load/clients.py): per worker its host, threads,
    # events, CPU share, start offset, facts and series; empty for a point from this machine
    clients: list[dict] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.status == PointStatus.OK and self.metrics is not None

    def value(self, metric: str) -> float | None:
        """A metric of a successful point (None for a failed one or a missing figure): one of
        Metrics, or one of PER_QUERY, from the point's counters."""
        if not self.ok:
            return None
        if metric in PER_QUERY:
            return per_query(self.status_delta, *PER_QUERY[metric])
        return getattr(self.metrics, metric)

    @property
    def client_start_skew_ms(self) -> float | None:
        """How far apart the client workers launched sysbench (None: one client machine)."""
        return max(c["start_offset_ms"] for c in self.clients) if self.clients else None

    @property
    def label(self) -> str:
        return f"{self.config} threads={self.threads} round={self.round}"


@dataclass(frozen=True)
class Session:
    """One perflab process's work on a study, with the facts of the host it ran on (a dict:
    the facts recorded grow with perflab's versions, see probes/system.py)."""

    id: int
    study: str
    plan_id: int
    started_at: float
    finished_at: float | None
    outcome: RunEnd | None  # None while running (or killed)
    host: dict[str, Any]


@dataclass(frozen=True)
class ServerState:
    """A server as a configuration ran on it: version, every variable, process facts."""

    id: int
    session_id: int
    config: str
    how: Activation
    version: str
    variables: dict[str, str]
    process: dict[str, Any]
    created_at: float


@dataclass(frozen=True)
class ConfigDocument:
    """A JSON document kept for one configuration of a study, the latest of its kind, decoded
    as far as JSON goes: what it means is its writer's (a health report: health/results.py,
    which the store, a layer below health, does not import)."""

    config: str
    data: dict[str, Any]


@dataclass(frozen=True)
class WayOfMeasuring:
    """How the configurations of a round were measured, as noise figures belong to it: one
    server after another, or a fleet taking turns in slices of `slice_seconds`. Stored as its
    text ("serial", "fleet 0.25 s")."""

    schedule: Schedule  # FLEET or SERIAL
    slice_seconds: float = 0.0  # a fleet's

    def __str__(self) -> str:
        if self.schedule == Schedule.FLEET:
            return f"{self.schedule} {self.slice_seconds:g} s"
        return str(self.schedule)

    @classmethod
    def parse(cls, text: str) -> WayOfMeasuring:
        schedule, _, slice_text = text.partition(" ")
        return cls(Schedule(schedule), float(slice_text.removesuffix(" s") or 0))


@dataclass(frozen=True)
class Noise:
    """How much one round's log throughput ratio varies, for one way of measuring: the
    standard deviation over `rounds` rounds, from an A/A calibration or a run's own cells."""

    workload: str  # the workload's label
    dataset: str  # the dataset's key
    schedule: WayOfMeasuring
    run_seconds: float
    threads: int
    rounds: int
    sd: float
    source: str  # "calibrate" or "run"
    study: str
    created_at: float = 0.0
    lag1: float = math.nan  # autocorrelation of consecutive rounds (pooled over comparisons)
    skew: float = math.nan  # skewness of a round's log ratio about its comparison's mean
    # share of the rounds' points measured while other work loaded the machine (probes/busy.py)
    loaded: float = math.nan


@dataclass(frozen=True)
class Study:
    """Everything stored about one study of a lab: the latest plan and what it measured."""

    lab: str
    plan: Plan
    points: list[StoredPoint]
    sessions: list[Session]
    server_states: list[ServerState]
    health: list[ConfigDocument]  # its health reports (health/results.stored_health)
    design: Design  # how its verdicts are judged: over the looks of all its runs
    # its data as the workload's family described it when measured (load/family.describe; the
    # engine aside); empty in a lab of a perflab before it was stored
    dataset: str = ""
    # its verdicts per margin, and its CPU-per-query verdicts under "cpu", judged once for
    # every table, chart and headline that shows them (report/study.judgement and
    # per_query_judgement); a Study is read whole and never changes. Not an __init__ field, so
    # that a copy made by dataclasses.replace judges its own points afresh.
    judged: dict[float | str | None, Any] = field(default_factory=dict, init=False,
                                                  repr=False, compare=False)

    @property
    def ok_points(self) -> list[StoredPoint]:
        return [p for p in self.points if p.ok]

    @property
    def host(self) -> dict[str, Any] | None:
        """The host facts of the latest session."""
        return self.sessions[-1].host if self.sessions else None


def throughput(points: list[StoredPoint]) -> dict[tuple[str, int, int], float]:
    """{(config, threads, round): queries/s} of the successful points: what verdicts pair."""
    return {(p.config, p.threads, p.round): p.metrics.qps
            for p in points if p.ok and p.metrics is not None}  # ok implies metrics


def covered(spans: list[tuple[float, float]]) -> float:
    """The seconds the union of `spans` (start, end) covers, each second once: points whose
    spans overlap (a round's, side by side), or trials of several workers."""
    total, reach = 0.0, -math.inf
    for start, end in sorted(spans):
        if end > reach:
            total += end - max(start, reach)
            reach = end
    return total
