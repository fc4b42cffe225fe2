"""Flags on the quality of a study's measurements: noisy points, outliers, drift, warm-up.

Each flag is a sentence a reader can act on; nothing is dropped from the data because of it.
"""

from __future__ import annotations

import math
import statistics

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


def flags(points: list[StoredPoint], cv_threshold: float, baseline: str | None = None,
          margin: float = MARGIN) -> list[str]:
    """Every flag of a study's points. With a `baseline`, flags are looked for where the
    verdicts are made, in each comparison's per-round ratios, and only where they could move
    a verdict: a round the machine's drift slowed for every configuration alike is no outlier
    of theirs, its spread is in the interval already, and a round's ratio off its median by
    less than the `margin` changes no answer."""
    out = (ratio_outlier_flags(points, baseline, margin) if baseline is not None
           else spread_flags(points, cv_threshold))
    out += drift_flags(points, baseline)
    out += off_turn_flags(points)
    out += uneven_work_flags(points)
    out += load_flags(points)
    failed = [p for p in points if not p.ok]
    if failed:
        out.append(f"{len(failed)} failed point(s); see the failed points list")
    return out


def spread_flags(points: list[StoredPoint], cv_threshold: float) -> list[str]:
    """Each cell's own spread over its rounds: a high CV, outlier values."""
    out = []
    for (config, threads), values in groups(points, "qps").items():
        s = summarize(values)
        if s.n >= 2 and s.cv > cv_threshold:
            out.append(f"{config} at {threads} threads: CV {s.cv:.1%} over {s.n} rounds exceeds "
                       f"{cv_threshold:.0%}; more rounds or a quieter machine would help")
        for i in s.outliers:
            out.append(f"{config} at {threads} threads: a round's value {values[i]:.0f} is an "
                       f"outlier (median {s.median:.0f}); kept in the data")
    return out


def ratio_outlier_flags(points: list[StoredPoint], baseline: str, margin: float
                        ) -> list[str]:
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
        listed = ", ".join(f"{numbers[i]} ({math.expm1(ratios[i]):+.0%})" for i in far)
        if not cut:
            fate = "the verdict's mean includes them"
        else:
            which = "them out" if left_out == len(far) else f"out {left_out} of them"
            fate = (f"the verdict's trimmed mean leaves {which} (it sets aside the {cut} "
                    f"highest and {cut} lowest of its {len(ratios)} rounds)")
        out.append(f"{config} vs {baseline} at {threads} threads: round(s) {listed} are "
                   f"outliers among its rounds (median {math.expm1(median):+.0%}); {fate}")
    return out


def drift_flags(points: list[StoredPoint], baseline: str | None = None) -> list[str]:
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
        where = f"{p.config} at {p.threads} threads, round {p.round}"
        if first_after_warmup and found.drift > 0:
            out.append(f"{where}: throughput still rising {found.drift:+.0%} over the window "
                       "right after the warm-up: the warm-up is too short")
        else:
            out.append(f"{where}: throughput drifts {found.drift:+.0%} over the window "
                       f"(p={found.p_value:.3f}); not a steady state")
    return out


def _paired_drift_flags(points: list[StoredPoint], baseline: str, fitted: dict) -> list[str]:
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
        low, high = min(d for _, d in found), max(d for _, d in found)
        out.append(f"{config} vs {baseline} at {threads} threads: in {len(found)} of {total} "
                   f"rounds ({', '.join(str(r) for r, _ in found)}) its throughput drifted "
                   f"{low:+.0%} to {high:+.0%} within the point while the baseline's held: the "
                   "ratio depends on where in the window it is taken")
    return out


def load_flags(points: list[StoredPoint]) -> list[str]:
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
    rounds = sorted({r for _, r in loaded})
    # which of the two it was: the hypervisor's steal no one on the machine can stop
    stolen = f"the hypervisor's steal was up to {max(steals):.0%} of it" \
        if steals and max(steals) >= 0.005 else "none of it was the hypervisor's steal"
    whose = f"; {stolen}, the run's progress names the busiest processes" if steals else ""
    shown = ", ".join(str(r) for r in rounds[:8]) + (" ..." if len(rounds) > 8 else "")
    return [f"{len(loaded)} of {sum(p.ok for p in points)} points were measured while other "
            f"processes or the hypervisor used more than {BUSY_SHARE:.0%} of the machine's CPU "
            f"time (up to {max(share for share, _ in loaded):.0%}; rounds {shown}){whose}: "
            "figures taken beside other work are not evidence; measure again on an idle "
            "machine"]


def uneven_work_flags(points: list[StoredPoint]) -> list[str]:
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
    shown = ", ".join(f"{rows:.3g} at {t}" for t, rows in medians.items())
    flag = (f"rows read per query change with the thread count ({shown} threads): the "
            "statements do different work at different thread counts, so throughput compares "
            "configurations at one thread count, not one thread count with another")
    workloads = {p.workload.split("(")[0].strip() for p in points}  # its label: name(options)
    reasons = [PARTITIONED_KEYS[w] for w in sorted(workloads) if w in PARTITIONED_KEYS]
    if reasons:
        flag += (f". Why: {' and '.join(sorted(workloads))} {reasons[0]}, with sysbench's "
                 "default --rand-type=special, which puts most draws in a narrow band at the "
                 "centre of the range drawn from; the prepared k column was drawn the same "
                 "way over the whole range, so most rows sit at its centre. At one thread the "
                 "draws' band is the rows', at more each thread's band is the centre of its "
                 "own share, where few rows are")
    return [flag]


def off_turn_flags(points: list[StoredPoint]) -> list[str]:
    """A flag for each cell that `off_turn_workers` finds."""
    return [f"{config} at {threads} threads: {share:.0%} of its server's CPU time fell in the "
            f"other servers' turns, {excess * 100:.0f} points more than the least in the same "
            f"turns: background work the others are charged for, so the fleet's ratios lean "
            f"toward {config}; schedule = \"serial\" measures each server alone"
            for config, threads, share, excess in off_turn_workers(points)]


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
