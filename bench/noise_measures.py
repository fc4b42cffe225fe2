"""bench/noise_measures: which measures narrow a study's paired round noise on this machine.

One fleet study holds every measure, so that each round measures them all in the same seconds
(interleaved by construction, one server each, started afresh every round): the performance
schema on against neither it nor the adaptive hash index (InnoDB read-only, 4 tables x 100,000
rows, a 1 GiB buffer pool, 2-s points, at 4 and 64 threads), once free and once pinned (the
server on CPU 1, its sysbench on CPU 0). Per thread count it prints the SD of one round's
paired log ratio for

- throughput, free (what a study measures today);
- throughput, pinned;
- the server's CPU time per query, free and pinned (a second response);

each as a ratio to free throughput's SD, with a 95% interval from resampling whole rounds (the
measures share their rounds, so their SDs are not independent); the pinned servers' throughput
against the free ones' (what pinning costs a 2-core machine); and where each pair's variance
lies (perflab.analysis.variance: within its points' slices, or between rounds, and the point
length that would buy the most precision per second).

Resumable: the same --stamp runs the study on, its stored rounds kept.

    .venv/bin/python -u bench/noise_measures.py --stamp 2026-12-02 --rounds 30
"""

from __future__ import annotations

import argparse
import math
import random
import statistics

from common import ROOT, run_main
from perflab import run as perflab_run
from perflab.analysis.variance import split
from perflab.lab import Lab
from perflab.stats.decide import log_ratios as paired_log_ratios
from perflab.store import StoredPoint, ok_metrics
from perflab.store.records import CPU_PER_QUERY
from perflab.studies import resolve_plan

PLAN = """
[study]
name = "noise-measures"
baseline = "base"
[dataset]
engine = "InnoDB"
tables = 4
rows = 100000
[workload]
name = "oltp_read_only"
[run]
threads = {threads}
warmup_seconds = 2
run_seconds = {seconds}
rounds = {rounds}
schedule = "fleet"
margin = 0.05
[server]
innodb_buffer_pool_size = "1G"
innodb_adaptive_hash_index = "OFF"
max_connections = 200
[configs.base]
[configs.pfs]
performance_schema = "ON"
[configs.base-pinned]
server_cpus = "1"
client_cpus = "0"
[configs.pfs-pinned]
performance_schema = "ON"
server_cpus = "1"
client_cpus = "0"
"""
PAIRS = {"free": ("pfs", "base"), "pinned": ("pfs-pinned", "base-pinned")}
RESAMPLES = 4000


def log_ratios(points: list[StoredPoint], changed: str, base: str, threads: int,
               value) -> dict[int, float]:
    """Per round, log(value(changed) / value(base)) at `threads`, where both points are ok
    (stats.decide.log_ratios, the pairing the verdicts use)."""
    values = {(p.config, p.threads, p.round): figure for p in points
              if p.ok and (figure := value(p)) is not None}
    return paired_log_ratios(values, base, [changed], [threads])[(changed, threads)]


def sd_ratio_interval(series: list[float], reference: list[float], seed: int = 1
                      ) -> tuple[float, float, float]:
    """SD(series) / SD(reference), the two paired by round, with a 95% percentile interval
    from resampling whole rounds."""
    rng = random.Random(seed)
    n = len(series)
    ratios = []
    for _ in range(RESAMPLES):
        picks = [rng.randrange(n) for _ in range(n)]
        a = statistics.stdev([series[i] for i in picks]) if len(set(picks)) > 1 else 0.0
        b = statistics.stdev([reference[i] for i in picks]) if len(set(picks)) > 1 else 0.0
        if b > 0:
            ratios.append(a / b)
    ratios.sort()
    return (statistics.stdev(series) / statistics.stdev(reference),
            ratios[int(0.025 * len(ratios))], ratios[int(0.975 * len(ratios)) - 1])


def qps(point: StoredPoint) -> float:
    return ok_metrics(point).qps


def cpu_per_query(point: StoredPoint) -> float | None:
    return point.value(CPU_PER_QUERY)


def report(points: list[StoredPoint], threads: tuple[int, ...]) -> None:
    for count in threads:
        series = {
            "throughput, free": log_ratios(points, *PAIRS["free"], count, qps),
            "throughput, pinned": log_ratios(points, *PAIRS["pinned"], count, qps),
            "CPU/query, free": log_ratios(points, *PAIRS["free"], count, cpu_per_query),
            "CPU/query, pinned": log_ratios(points, *PAIRS["pinned"], count, cpu_per_query),
        }
        rounds = sorted(set.intersection(*(set(s) for s in series.values())))
        print(f"\n{count} threads, {len(rounds)} rounds with every measure")
        if len(rounds) < 4:
            print("  too few rounds for an SD")
            continue
        reference = [series["throughput, free"][r] for r in rounds]
        print("  measure               round SD   mean change   SD / free throughput's [95%]")
        for name, found in series.items():
            values = [found[r] for r in rounds]
            ratio, low, high = sd_ratio_interval(values, reference)
            print(f"  {name:20s}  {statistics.stdev(values):8.2%}  "
                  f"{math.expm1(statistics.fmean(values)):+11.2%}   "
                  f"{ratio:.2f} [{low:.2f} .. {high:.2f}]")
        level = log_ratios(points, "base-pinned", "base", count, qps)
        shown = [level[r] for r in rounds if r in level]
        print(f"  pinned base / free base throughput: {math.exp(statistics.fmean(shown)):.3f} "
              f"(geometric mean over {len(shown)} rounds)")
    for name, (changed, base) in PAIRS.items():
        own = [p for p in points if p.config in (changed, base)]
        print(f"\nwhere the {name} pair's round variance lies (analysis.variance)")
        print("threads  rounds  round SD  within  lag-1  slices  best slices  time at best")
        for s in split(own, base):
            print(f"{s.threads:7d}  {s.rounds:6d}  {s.round_variance ** 0.5:7.1%}  "
                  f"{s.within_share:6.0%}  {s.lag1:5.2f}  {s.slices:6.0f}  "
                  f"{s.best_slices:11.0f}  {s.time_at_best:12.0%}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--stamp", required=True, help="names the lab; the same stamp resumes")
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--seconds", type=int, default=2, help="a point's run_seconds")
    parser.add_argument("--threads", type=int, nargs="+", default=[4, 64])
    parser.add_argument("--report-only", action="store_true", help="measure nothing")
    args = parser.parse_args()
    out = ROOT / "out" / f"noise-measures-{args.stamp}"
    out.mkdir(parents=True, exist_ok=True)
    path = out / "plan.toml"
    path.write_text(PLAN.format(threads=list(args.threads), seconds=args.seconds,
                                rounds=args.rounds))
    lab = Lab(out / "lab")
    if not args.report_only:
        perflab_run(resolve_plan(str(path)), lab, say=lambda line: print(line, flush=True))
    with lab.store() as store:
        report(store.points("noise-measures"), tuple(args.threads))


if __name__ == "__main__":
    run_main(main)
