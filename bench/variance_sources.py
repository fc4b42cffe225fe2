"""bench/variance_sources: where a study's round-to-round noise comes from, per thread count.

Reads a lab's stored points (no measuring) and prints, per thread count, the SD of a round's log
ratio, the share of it the points' own slices explain (within-point, their lag-1 autocorrelation
allowed for), the seconds of a round that measure nothing (warm-up, connections) and those one
more slice of every configuration costs, and the slices per point that would buy the most
precision per second (Kalibera & Jones 2013), with the time that split needs for today's
precision as a share of today's; and the round SD of the log ratio of the server's CPU time per
query, a second response, where the points recorded it. perflab.analysis.variance holds the
arithmetic.

    .venv/bin/python bench/variance_sources.py lab/ [--study key-cache-segments]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from perflab.analysis.variance import split
from perflab.lab import Lab


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("lab", type=Path)
    parser.add_argument("--study", help="one study of the lab (default: every study)")
    args = parser.parse_args()
    with Lab(args.lab).store() as store:
        for study in [args.study] if args.study else store.studies():
            latest = store.latest_plan(study)
            if latest is None:
                print(f"{study}: no plan stored")
                continue
            plan = latest[0]
            print(f"\n{study} (baseline {plan.baseline})")
            print("threads  rounds  round SD  within  lag-1  slices  fixed s  s/slice  "
                  "best slices  time at best  CPU/query SD")
            for s in split(store.points(study), plan.baseline):
                cpu = "-" if s.cpu_round_variance is None else f"{s.cpu_round_variance ** 0.5:.1%}"
                print(f"{s.threads:7d}  {s.rounds:6d}  {s.round_variance ** 0.5:7.1%}  "
                      f"{s.within_share:6.0%}  {s.lag1:5.2f}  {s.slices:6.0f}  "
                      f"{s.fixed_seconds:7.1f}  {s.slice_seconds:7.2f}  "
                      f"{s.best_slices:11.0f}  {s.time_at_best:12.0%}  {cpu:>12}")


if __name__ == "__main__":
    main()
