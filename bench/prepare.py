"""bench/prepare: perflab's dataset load vs `sysbench prepare` for the same table.

Both load the same sbtest table (engine, tables, rows) into the same running server, in
alternating order, each into a freshly created schema. Prints the seconds of every round and the
speed-up sysbench / perflab (goal: at least 2x), as median [min .. max].
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import time

from common import bench_lab, run_main, spread
from perflab.domain import Dataset
from perflab.load.family import LOADER_OPTIONS
from perflab.load.sbtest import load_sbtest
from perflab.server.connection import query
from perflab.server.datadir import install_datadir
from perflab.server.managed import ManagedServer


def sysbench_prepare(server: ManagedServer, dataset: Dataset) -> float:
    with server.connect() as conn:
        query(conn, "DROP DATABASE IF EXISTS sbtest")
        query(conn, "CREATE DATABASE sbtest")
    started = time.monotonic()
    subprocess.run(
        ["sysbench", "oltp_common", "--db-driver=mysql", *server.endpoint.sysbench_args(),
         "--mysql-db=sbtest", f"--mysql-storage-engine={dataset.engine}",
         f"--tables={dataset.tables}", f"--table-size={dataset.rows}",
         f"--threads={dataset.tables}", "prepare"],
        check=True, capture_output=True,
    )
    return time.monotonic() - started


def perflab_load(server: ManagedServer, dataset: Dataset) -> float:
    started = time.monotonic()  # includes perflab's own DROP/CREATE DATABASE
    load_sbtest(server.endpoint, dataset)
    return time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--engine", default="MyISAM")
    parser.add_argument("--tables", type=int, default=1)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    dataset = Dataset(args.engine, args.tables, args.rows)

    lab = bench_lab("prepare")
    datadir = lab.root / "data"
    if not datadir.exists():
        install_datadir(datadir)
    speedups, ours, theirs = [], [], []
    with ManagedServer(datadir, lab.root, LOADER_OPTIONS) as server:
        for n in range(args.rounds):
            order = ("perflab", "sysbench") if n % 2 == 0 else ("sysbench", "perflab")
            seconds = {}
            for side in order:
                load = perflab_load if side == "perflab" else sysbench_prepare
                seconds[side] = load(server, dataset)
            ours.append(seconds["perflab"])
            theirs.append(seconds["sysbench"])
            speedups.append(seconds["sysbench"] / seconds["perflab"])
            print(f"round {n + 1} ({order[0]} first): perflab {seconds['perflab']:.2f} s, "
                  f"sysbench prepare {seconds['sysbench']:.2f} s, "
                  f"speed-up {speedups[-1]:.2f}x")
    print(f"\n{args.engine}, {args.tables} table(s) x {args.rows} rows, {args.rounds} rounds")
    print(f"perflab load       median {statistics.median(ours):.2f} s")
    print(f"sysbench prepare   median {statistics.median(theirs):.2f} s")
    print(f"speed-up sysbench/perflab: {spread(speedups)}x  (goal: >= 2x)")


if __name__ == "__main__":
    run_main(main)
