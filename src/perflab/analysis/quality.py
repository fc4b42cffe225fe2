"""Flags on the quality of a study's measurements: noisy points, outliers, drift, warm-up.

Each flag is a sentence a reader can act on; nothing is dropped from the data because of it.
"""

from __future__ import annotations

import statistics

from perflab.analysis.tables import groups
from perflab.stats.summary import summarize, trend
from perflab.store.records import StoredPoint

DRIFT_THRESHOLD = 0.05  # a fitted change of 5% or more over the measured window
# A fleet server whose share of CPU time in the other servers' turns exceeds the least such
# share in the same turns by this much (median over rounds): its background work is charged to
# the others.
OFF_TURN_LEAN = 0.03


def flags(points: list[StoredPoint], cv_threshold: float) -> list[str]:
    out = []
    for (config, threads), values in groups(points, "qps").items():
        s = summarize(values)
        if s.n >= 2 and s.cv > cv_threshold:
            out.append(f"{config} at {threads} threads: CV {s.cv:.1%} over {s.n} repeats exceeds "
                       f"{cv_threshold:.0%}; more repeats or a quieter machine would help")
        for i in s.outliers:
            out.append(f"{config} at {threads} threads: repeat value {values[i]:.0f} is an "
                       f"outlier (median {s.median:.0f}); kept in the data")
    out += drift_flags(points)
    out += off_turn_flags(points)
    failed = [p for p in points if not p.ok]
    if failed:
        out.append(f"{len(failed)} failed point(s); see the failed points list")
    return out


def drift_flags(points: list[StoredPoint]) -> list[str]:
    """Points whose per-second throughput trends within the window.

    A rising trend in the first point after a server start or configuration change (the
    points right after a warm-up) means the warm-up was too short.
    """
    out, previous_state = [], None
    for p in sorted(points, key=lambda p: p.started_at):
        first_after_warmup = p.server_state_id != previous_state
        previous_state = p.server_state_id
        if not p.ok or not p.series:
            continue
        fitted = trend([s.qps for s in p.series])
        if fitted is None or not fitted.significant(DRIFT_THRESHOLD):
            continue
        where = f"{p.config} at {p.threads} threads, repeat {p.repeat}"
        if first_after_warmup and fitted.drift > 0:
            out.append(f"{where}: throughput still rising {fitted.drift:+.0%} over the window "
                       "right after the warm-up: the warm-up is too short")
        else:
            out.append(f"{where}: throughput drifts {fitted.drift:+.0%} over the window "
                       f"(p={fitted.p_value:.3f}); not a steady state")
    return out


def off_turn_flags(points: list[StoredPoint]) -> list[str]:
    """A flag for each cell that `leaning` finds."""
    return [f"{config} at {threads} threads: {share:.0%} of its server's CPU time fell in the "
            f"other servers' turns, {excess * 100:.0f} points more than the least in the same "
            f"turns: background work the others are charged for, so the fleet's ratios lean "
            f"toward {config}; schedule = \"serial\" measures each server alone"
            for config, threads, share, excess in leaning(points)]


def leaning(points: list[StoredPoint]) -> list[tuple[str, int, float, float]]:
    """(config, threads, share, excess) of the fleet cells whose server worked in the other
    servers' turns more than the others in the same turns (probes/turns.py), by thread count:
    that work slows the server whose turn it is, so the fleet's ratios lean toward the server
    that does it. Each point is compared with the least share of its own run (round and
    thread count), because a share grows with the number of servers taking turns, which falls
    as comparisons are decided; share and excess are medians over rounds."""
    least: dict[tuple[int, int], float] = {}
    for p in points:
        share = p.value("off_turn_cpu")
        if share is not None:
            key = (p.repeat, p.threads)
            least[key] = min(share, least.get(key, share))
    cells: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for p in points:
        share = p.value("off_turn_cpu")
        if share is not None:
            cells.setdefault((p.config, p.threads), []).append(
                (share, share - least[(p.repeat, p.threads)]))
    out = []
    for (config, threads), pairs in sorted(cells.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        excess = statistics.median(e for _, e in pairs)
        if excess >= OFF_TURN_LEAN:
            out.append((config, threads, statistics.median(s for s, _ in pairs), excess))
    return out
