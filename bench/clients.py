"""bench/clients: what spreading a point over several client machines costs, against one client.

One managed server listening on TCP, a Dask scheduler and two workers on this machine (each its
own process, load/clients.LocalCluster). Pairs of points at the same total threads, back to
back in alternating order: perflab's point from this machine alone (the peer), and the same
point spread over the two workers (load/clients.py: the barrier, the common window, the merge).
Prints every pair and the ratio two clients / one as the geometric mean of the pairs with its
95% interval. On one machine both ways share the same CPUs, so the ratio is the distribution's
own overhead (Dask's tasks, the barrier, two sysbench processes instead of one), not a network's.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from common import bench_lab, dataset_server, ratio_interval, run_main
from perflab.domain import Dataset, Environment, Workload
from perflab.load.clients import Clients, LocalCluster
from perflab.load.workloads import resolve
from perflab.running.measurer import measure
from perflab.server.environment import server_environment


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=64, help="total threads of a point")
    parser.add_argument("--seconds", type=int, default=2, help="measured seconds per point")
    parser.add_argument("--pairs", type=int, default=30)
    parser.add_argument("--workers", type=int, default=2, help="client workers of the spread")
    parser.add_argument("--rows", type=int, default=100_000, help="rows of the sbtest table")
    args = parser.parse_args()

    lab = bench_lab("clients")
    workload = resolve(Workload("oltp_point_select"))
    dataset = Dataset(engine="InnoDB", tables=1, rows=args.rows)
    print(f"{workload.spec.name} on {dataset.engine} {dataset.tables} x {dataset.rows}, "
          f"{args.threads} threads, {args.seconds} s points, {args.workers} workers")
    with tempfile.TemporaryDirectory(prefix="perflab-bench-clients-") as directory, \
            LocalCluster(Path(directory), args.workers) as cluster, \
            dataset_server(lab, dataset, {}, workload,
                           server_environment(Environment(connection="tcp"))) as server:
        clients = Clients(cluster.address)
        try:
            measure(server, workload, dataset, args.threads, args.seconds)  # warm-up
            ratios, skews = [], []
            for pair in range(args.pairs):
                order = ("one", "spread") if pair % 2 == 0 else ("spread", "one")
                qps = {}
                for side in order:
                    result, _ = measure(server, workload, dataset, args.threads, args.seconds,
                                        clients=clients if side == "spread" else None)
                    qps[side] = result.qps
                    if side == "spread":
                        skews.append(max(c["start_offset_ms"] for c in result.clients))
                ratios.append(qps["spread"] / qps["one"])
                print(f"pair {pair + 1:3} ({order[0]} first): one client {qps['one']:9.0f}  "
                      f"{args.workers} clients {qps['spread']:9.0f}  ratio {ratios[-1]:.3f}  "
                      f"start skew {skews[-1]:.1f} ms", flush=True)
        finally:
            clients.close()
    skews.sort()
    print(f"\n{args.pairs} interleaved pairs, {args.threads} threads in all, {args.seconds} s "
          f"points: {args.workers} clients / one client {ratio_interval(ratios)} (geometric "
          f"mean [95% interval]); start skew median {skews[len(skews) // 2]:.1f} ms, "
          f"largest {skews[-1]:.1f} ms")


if __name__ == "__main__":
    run_main(main)
