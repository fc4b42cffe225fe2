"""A study's quality flags (analysis/quality.py) in words: one sentence each, which says what
was seen and what a reader can do about it."""

from __future__ import annotations

from perflab.analysis.quality import (
    Drift,
    FailedPoints,
    Flag,
    HighSpread,
    Loaded,
    OffTurn,
    Outlier,
    PairedDrift,
    RatioOutliers,
    UnevenWork,
)

SHOWN_ROUNDS = 8  # of a loaded study's rounds, the first named


def flag_text(flag: Flag) -> str:
    match flag:
        case HighSpread():
            return (f"{flag.config} at {flag.threads} threads: CV {flag.cv:.1%} over "
                    f"{flag.rounds} rounds exceeds {flag.threshold:.0%}; more rounds or a "
                    "quieter machine would help")
        case Outlier():
            return (f"{flag.config} at {flag.threads} threads: a round's value "
                    f"{flag.value:.0f} is an outlier (median {flag.median:.0f}); kept in the "
                    "data")
        case RatioOutliers():
            return _ratio_outliers(flag)
        case Drift():
            where = f"{flag.config} at {flag.threads} threads, round {flag.round}"
            if flag.after_warm_up:
                return (f"{where}: throughput still rising {flag.drift:+.0%} over the window "
                        "right after the warm-up: the warm-up is too short")
            return (f"{where}: throughput drifts {flag.drift:+.0%} over the window "
                    f"(p={flag.p_value:.3f}); not a steady state")
        case PairedDrift():
            return (f"{flag.config} vs {flag.baseline} at {flag.threads} threads: in "
                    f"{len(flag.drifting)} of {flag.rounds} rounds "
                    f"({', '.join(map(str, flag.drifting))}) its throughput drifted "
                    f"{flag.low:+.0%} to {flag.high:+.0%} within the point while the "
                    "baseline's held: the ratio depends on where in the window it is taken")
        case OffTurn():
            return (f"{flag.config} at {flag.threads} threads: {flag.share:.0%} of its "
                    "server's CPU time fell in the other servers' turns, "
                    f"{flag.excess * 100:.0f} points more than the least in the same turns: "
                    "background work the others are charged for, so the fleet's ratios lean "
                    f"toward {flag.config}; schedule = \"serial\" measures each server alone")
        case UnevenWork():
            return _uneven_work(flag)
        case Loaded():
            return _loaded(flag)
        case FailedPoints():
            return f"{flag.count} failed point(s); see the failed points list"


def _ratio_outliers(flag: RatioOutliers) -> str:
    listed = ", ".join(f"{number} ({change:+.0%})" for number, change in flag.far)
    cut = flag.trimmed
    if not cut:
        fate = "the verdict's mean includes them"
    else:
        which = "them out" if flag.left_out == len(flag.far) else f"out {flag.left_out} of them"
        fate = (f"the verdict's trimmed mean leaves {which} (it sets aside the {cut} highest "
                f"and {cut} lowest of its {flag.rounds} rounds)")
    return (f"{flag.config} vs {flag.baseline} at {flag.threads} threads: round(s) {listed} "
            f"are outliers among its rounds (median {flag.median:+.0%}); {fate}")


def _uneven_work(flag: UnevenWork) -> str:
    shown = ", ".join(f"{rows:.3g} at {threads}" for threads, rows in flag.rows)
    text = (f"rows read per query change with the thread count ({shown} threads): the "
            "statements do different work at different thread counts, so throughput compares "
            "configurations at one thread count, not one thread count with another")
    if flag.reason is None:
        return text
    return (f"{text}. Why: {' and '.join(flag.workloads)} {flag.reason}, with sysbench's "
            "default --rand-type=special, which puts most draws in a narrow band at the "
            "centre of the range drawn from; the prepared k column was drawn the same way "
            "over the whole range, so most rows sit at its centre. At one thread the draws' "
            "band is the rows', at more each thread's band is the centre of its own share, "
            "where few rows are")


def _loaded(flag: Loaded) -> str:
    whose = ""
    if flag.steal is not None:  # which of the two: the steal no one on the machine can stop
        stolen = (f"the hypervisor's steal was up to {flag.steal:.0%} of it"
                  if flag.steal >= 0.005 else "none of it was the hypervisor's steal")
        whose = f"; {stolen}, the run's progress names the busiest processes"
    rounds = flag.rounds
    shown = ", ".join(map(str, rounds[:SHOWN_ROUNDS])) + (
        " ..." if len(rounds) > SHOWN_ROUNDS else "")
    return (f"{flag.loaded} of {flag.measured} points were measured while other processes or "
            f"the hypervisor used more than {flag.busy_share:.0%} of the machine's CPU time "
            f"(up to {flag.most:.0%}; rounds {shown}){whose}: figures taken beside other work "
            "are not evidence; measure again on an idle machine")
