"""Flags on the quality of a study's measurements: noisy points, outliers, drift, warm-up.

Each flag is a typed value with the figures behind it, one kind per class; the report words it
as a sentence a reader can act on (report/flags.py). Nothing is dropped from the data because
of a flag.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass

from perflab.analysis.tables import groups
from perflab.probes.busy import BUSY_SHARE, under_load
from perflab.stats.decide import log_ratios
from perflab.stats.design import MARGIN
from perflab.stats.summary import outliers, summarize, trend
from perflab.stats.trimmed import trimmed
from perflab.store.records import StoredPoint, throughput

DRIFT_THRESHOLD = 0.05  # a fitted change of 5% or more over the measured window
# A fleet server whose share of CPU time in the other servers' turns exceeds the least such
# share in the same turns by this much (median over rounds): its background work is charged to
# the others.
OFF_TURN_LEAN = 0.03
RECURRING = 0.2  # a ratio drifting within the point in this share of a comparison's rounds
UNEVEN_WORK = 3.0  # rows read per query this many times apart between thread counts
# Workloads whose statements change with the thread count, and why (sysbench's own scripts).
PARTITIONED_KEYS = {
    "select_random_points": "draws each key from its thread's own 1/threads of the key range",
    "select_random_ranges": "draws each range from its thread's own 1/threads of the key range",
}


@dataclass(frozen=True)
class HighSpread:
    """A cell whose throughput varies over its rounds more than the threshold."""

    config: str
    threads: int
    cv: float
    rounds: int
    threshold: float


@dataclass(frozen=True)
class Outlier:
    """A round's throughput far from its cell's median (kept in the data)."""

    config: str
    threads: int
    value: float
    median: float


@dataclass(frozen=True)
class RatioOutliers:
    """A comparison's rounds whose ratio to the baseline is an outlier among its rounds, and
    what its verdict does with them."""

    config: str
    baseline: str
    threads: int
    far: tuple[tuple[int, float], ...]  # (round, change) of each outlying round
    median: float  # the change of the rounds' median ratio
    trimmed: int  # rounds the verdict's trimmed mean sets aside at each end (0: a plain mean)
    left_out: int  # outlying rounds among those set aside
    rounds: int


@dataclass(frozen=True)
class Drift:
    """A point whose per-second throughput trends within its window."""

    config: str
    threads: int
    round: int
    drift: float  # the fitted change over the window
    p_value: float
    after_warm_up: bool  # rising in the first point after a warm-up: the warm-up is too short


@dataclass(frozen=True)
class PairedDrift:
    """A comparison whose ratio drifts within the point in several of its rounds."""

    config: str
    baseline: str
    threads: int
    drifting: tuple[int, ...]  # the rounds
    rounds: int
    low: float  # the least and the most drift among them
    high: float


@dataclass(frozen=True)
class OffTurn:
    """A fleet cell whose server worked in the other servers' turns (`off_turn_workers`)."""

    config: str
    threads: int
    share: float
    excess: float


@dataclass(frozen=True)
class UnevenWork:
    """Rows read per query that change with the thread count."""

    rows: tuple[tuple[int, float], ...]  # (threads, median rows per query)
    workloads: tuple[str, ...]
    reason: str | None  # why the workload does it, where known (PARTITIONED_KEYS)


@dataclass(frozen=True)
class Loaded:
    """Points measured while other work loaded the machine (probes/busy.py)."""

    loaded: int
    measured: int  # successful points
    busy_share: float  # the share of other work above which a point is loaded
    most: float  # the largest share other work used
    rounds: tuple[int, ...]
    steal: float | None  # the hypervisor's largest share among it (None: not measured)


@dataclass(frozen=True)
class FailedPoints:
    count: int


Flag = (HighSpread | Outlier | RatioOutliers | Drift | PairedDrift | OffTurn | UnevenWork
        | Loaded | FailedPoints)


def flags(points: list[StoredPoint], cv_threshold: float, baseline: str | None = None,
          margin: float = MARGIN) -> list[Flag]:
    """Every flag of a study's points. With a `baseline`, flags are looked for where the
    verdicts are made, in each comparison's per-round ratios, and only where they could move
    a verdict: a round the machine's drift slowed for every configuration alike is no outlier
    of theirs, its spread is in the interval already, and a round's ratio off its median by
    less than the `margin` changes no answer."""
    out: list[Flag] = []
    out += (ratio_outlier_flags(points, baseline, margin) if baseline is not None
            else spread_flags(points, cv_threshold))
    out += drift_flags(points, baseline)
    out += off_turn_flags(points)
    out += uneven_work_flags(points)
    out += load_flags(points)
    failed = [p for p in points if not p.ok]
    if failed:
        out.append(FailedPoints(len(failed)))
    return out


def spread_flags(points: list[StoredPoint], cv_threshold: float) -> list[HighSpread | Outlier]:
    """Each cell's own spread over its rounds: a high CV, outlier values."""
    out: list[HighSpread | Outlier] = []
    for (config, threads), values in groups(points, "qps").items():
        s = summarize(values)
        if s.n >= 2 and s.cv > cv_threshold:
            out.append(HighSpread(config, threads, s.cv, s.n, cv_threshold))
        out += [Outlier(config, threads, values[i], s.median) for i in s.outliers]
    return out


def ratio_outlier_flags(points: list[StoredPoint], baseline: str, margin: float
                        ) -> list[RatioOutliers]:
    """Per comparison, one flag naming its rounds whose ratio to the baseline is an outlier
    among its rounds (the modified z-score, as summary.outliers) and off their median by more
    than the margin, and what its verdict does with them: a mean includes them; a trimmed
    centre (from trimmed.TRIM_FROM rounds) leaves out those among the rounds it trims."""
    cells = log_ratios(throughput(points), baseline, sorted({p.config for p in points}),
                       sorted({p.threads for p in points}))
    out = []
    for (config, threads), rounds in sorted(cells.items(), key=lambda kv: (kv[0][1],
                                                                          kv[0][0])):
        if not rounds:
            continue
        numbers = sorted(rounds)
        ratios = [rounds[r] for r in numbers]
        median = statistics.median(ratios)
        far = [i for i in outliers(ratios) if abs(math.expm1(ratios[i] - median)) > margin]
        if not far:
            continue
        cut = trimmed(len(ratios))
        rank = {i: position for position, i in enumerate(sorted(range(len(ratios)),
                                                                key=ratios.__getitem__))}
        left_out = sum(rank[i] < cut or rank[i] >= len(ratios) - cut for i in far)
        out.append(RatioOutliers(config, baseline, threads,
                                 tuple((numbers[i], math.expm1(ratios[i])) for i in far),
                                 math.expm1(median), cut, left_out, len(ratios)))
    return out


def drift_flags(points: list[StoredPoint], baseline: str | None = None
                ) -> list[Drift] | list[PairedDrift]:
    """Points whose per-second throughput trends within the window.

    A rising trend in the first point of a server state (after a server start or a
    configuration change, which a warm-up follows) means the warm-up was too short. Side by
    side, points of several servers interleave: each server's first one is its own. With a
    `baseline`, a point's drift matters only as far as it differs from the baseline's in the
    same round and thread count: a machine's drift, or servers started together still warming,
    move both, and their ratio is what is judged.
    """
    fitted = {id(p): trend([s.qps for s in p.series]) for p in points if p.ok and p.series}
    if baseline is not None:
        return _paired_drift_flags(points, baseline, fitted)
    out, seen = [], set()
    for p in sorted(points, key=lambda p: p.started_at):
        first_after_warmup = p.server_state_id not in seen
        seen.add(p.server_state_id)
        found = fitted.get(id(p))
        if found is None or not found.significant(DRIFT_THRESHOLD):
            continue
        out.append(Drift(p.config, p.threads, p.round, found.drift, found.p_value,
                         first_after_warmup and found.drift > 0))
    return out


def _paired_drift_flags(points: list[StoredPoint], baseline: str, fitted: dict
                        ) -> list[PairedDrift]:
    """One flag per comparison whose ratio drifts within the point in several of its rounds
    (at least RECURRING of them, and two): the configuration's throughput trends, the
    baseline's in the same seconds does not, so the point's ratio depends on where in the
    window it is taken. A drift in one round of many is that round's noise."""
    base = {(p.round, p.threads): fitted.get(id(p)) for p in points if p.config == baseline}
    drifting: dict[tuple[str, int], list[tuple[int, float]]] = {}
    rounds: dict[tuple[str, int], int] = {}
    for p in points:
        if p.config == baseline or not p.ok:
            continue
        rounds[(p.config, p.threads)] = rounds.get((p.config, p.threads), 0) + 1
        found, paired = fitted.get(id(p)), base.get((p.round, p.threads))
        if found is None or paired is None or not found.significant(DRIFT_THRESHOLD) or \
                abs(found.drift - paired.drift) < DRIFT_THRESHOLD:
            continue
        drifting.setdefault((p.config, p.threads), []).append((p.round, found.drift))
    out = []
    for (config, threads), found in sorted(drifting.items(), key=lambda kv: (kv[0][1],
                                                                            kv[0][0])):
        total = rounds[(config, threads)]
        if len(found) < 2 or len(found) < RECURRING * total:
            continue
        out.append(PairedDrift(config, baseline, threads, tuple(r for r, _ in found), total,
                               min(d for _, d in found), max(d for _, d in found)))
    return out


def load_flags(points: list[StoredPoint]) -> list[Loaded]:
    """A flag when points were measured while other work loaded the machine (probes/busy.py):
    they are not evidence, and nothing else in the report can tell."""
    loaded: list[tuple[float, int]] = []  # (share of the CPU time other work used, round)
    steals: list[float] = []  # the hypervisor's share among it, where measured
    for p in points:
        share = p.value("other_cpu")
        if share is not None and under_load(share):
            loaded.append((share, p.round))
            if (steal := p.value("steal_cpu")) is not None:
                steals.append(steal)
    if not loaded:
        return []
    return [Loaded(len(loaded), sum(p.ok for p in points), BUSY_SHARE,
                   max(share for share, _ in loaded), tuple(sorted({r for _, r in loaded})),
                   max(steals) if steals else None)]


def uneven_work_flags(points: list[StoredPoint]) -> list[UnevenWork]:
    """A flag when the rows the server read per query (median over configurations and rounds)
    differ between thread counts by UNEVEN_WORK times or more: the statements do different
    work at different thread counts, so throughput compares across configurations at one
    thread count, not across thread counts; explained where the workload is known to do it."""
    by_threads: dict[int, list[float]] = {}
    for p in points:
        rows = p.value("rows_per_query")
        if rows is not None:
            by_threads.setdefault(p.threads, []).append(rows)
    medians = {t: statistics.median(v) for t, v in sorted(by_threads.items())}
    if len(medians) < 2:
        return []
    low, high = min(medians.values()), max(medians.values())
    if high < 1 or high < UNEVEN_WORK * low:
        return []
    workloads = sorted({p.workload.split("(")[0].strip() for p in points})  # name(options)
    reasons = [PARTITIONED_KEYS[w] for w in workloads if w in PARTITIONED_KEYS]
    return [UnevenWork(tuple(medians.items()), tuple(workloads), reasons[0] if reasons else None)]


def off_turn_flags(points: list[StoredPoint]) -> list[OffTurn]:
    """A flag for each cell that `off_turn_workers` finds."""
    return [OffTurn(*cell) for cell in off_turn_workers(points)]


def off_turn_workers(points: list[StoredPoint]) -> list[tuple[str, int, float, float]]:
    """(config, threads, share, excess) of the fleet cells whose server worked in the other
    servers' turns more than the others in the same turns (running/turns.py), by thread count:
    that work slows the server whose turn it is, so the fleet's ratios lean toward the server
    that does it. Each point is compared with the least share of its own run (round and
    thread count), because a share grows with the number of servers taking turns, which falls
    as comparisons are decided; share and excess are medians over rounds."""
    least: dict[tuple[int, int], float] = {}
    for p in points:
        share = p.value("off_turn_cpu")
        if share is not None:
            key = (p.round, p.threads)
            least[key] = min(share, least.get(key, share))
    cells: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p in points:
        share = p.value("off_turn_cpu")
        if share is not None:
            cells.setdefault((p.config, p.threads), []).append(
                (share, share - least[(p.round, p.threads)]))
    out = []
    for (config, threads), pairs in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        excess = statistics.median(e for _, e in pairs)
        if excess >= OFF_TURN_LEAN:
            out.append((config, threads, statistics.median(s for s, _ in pairs), excess))
    return out
