"""bench/overhead: perflab's measurement of a point vs a plain `sysbench ... run`.

Same server, same dataset, same workload, thread count and duration, interleaved in pairs
(ABBA order) so that drift of the machine hits both sides alike. Prints queries/s of every run
and the ratio perflab / plain (goal: at least 0.97), as median [min .. max] over the pairs.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess

from common import bench_lab, dataset_server, spread
from perflab.load import sysbench
from perflab.load.workloads import resolve
from perflab.plan import parse_plan
from perflab.runner import measure


def plain_qps(argv: list[str]) -> float:
    """queries/s from an unmodified sysbench run (its own summary; this is the peer)."""
    out = subprocess.run(argv, capture_output=True, text=True, check=True).stdout
    match = re.search(r"queries:\s+\d+\s+\(([\d.]+) per sec\.\)", out)
    if not match:
        raise SystemExit(f"cannot read sysbench's summary:\n{out}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workload", default="oltp_point_select")
    parser.add_argument("--engine", default="InnoDB")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=10)
    parser.add_argument("--pairs", type=int, default=6)
    args = parser.parse_args()

    plan = parse_plan(f"""
[study]
name = "overhead"
[dataset]
engine = "{args.engine}"
rows = {args.rows}
[workload]
name = "{args.workload}"
[run]
threads = [{args.threads}]
[configs.default]
""")
    workload = resolve(plan.workload)
    with dataset_server(bench_lab("overhead"), plan.dataset) as server:
        ours = sysbench.command(workload, plan.dataset, server.endpoint, args.threads,
                                args.seconds)
        # The peer: the same command line, with sysbench's own script instead of perflab.lua.
        peer = [ours[0], workload.spec.script, *ours[2:]]

        def measured_qps() -> float:
            result, _ = measure(server, workload, plan.dataset, args.threads, args.seconds)
            return result.qps

        measured_qps()  # warm-up, not counted
        ratios, perflab_qps, peer_qps = [], [], []
        for pair in range(args.pairs):
            order = ("perflab", "plain") if pair % 2 == 0 else ("plain", "perflab")
            figures = {}
            for side in order:
                figures[side] = measured_qps() if side == "perflab" else plain_qps(peer)
            perflab_qps.append(figures["perflab"])
            peer_qps.append(figures["plain"])
            ratios.append(figures["perflab"] / figures["plain"])
            print(f"pair {pair + 1} ({order[0]} first): perflab {figures['perflab']:.0f} qps, "
                  f"plain sysbench {figures['plain']:.0f} qps, ratio {ratios[-1]:.3f}")
    print(f"\n{args.workload}, {args.engine} {args.rows} rows, {args.threads} threads, "
          f"{args.seconds} s per run, {args.pairs} interleaved pairs")
    print(f"perflab qps  median {statistics.median(perflab_qps):.0f}")
    print(f"plain qps    median {statistics.median(peer_qps):.0f}")
    print(f"ratio perflab/plain: {spread(ratios)}  (goal: >= 0.97)")


if __name__ == "__main__":
    main()
