"""bench/overhead: what perflab's measurement does to the figure, against plain sysbench.

For the workload and dataset of every built-in study (deduplicated), on one server with the
study's baseline settings: pairs of runs back to back, perflab's measurement of a point (its Lua
driver around the workload script, its own counting) and the same command line with the
workload script alone (sysbench's own summary: the peer), in alternating order. Prints every
pair and the ratio perflab / plain as the geometric mean of the pairs with its 95% interval
(goal: within [0.99, 1.01]).

Back-to-back runs on a machine whose speed wanders by tens of percent cannot resolve 1%, so
the cost of perflab's instrumentation (timing every event, histograms, counters) is also
measured within single runs: perflab's driver times the events of every other 100-ms window
only (PERFLAB_TIMING="alternate 100"), on the same threads, connections and server, and each
timed window is paired with the untimed one after it. Its ratio, over --timing-runs runs, is
the instrumentation's share of throughput to a fraction of a percent; the untimed windows still
read the clock once per event (tens of nanoseconds) to know their window.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess

from common import bench_lab, dataset_server, plain_command, plain_qps, ratio_interval, run_main
from perflab.load import sysbench
from perflab.load.workloads import resolve
from perflab.plan import with_overrides
from perflab.running.backend import check_configs
from perflab.running.measurer import measure
from perflab.studies import builtin_names, resolve_plan


def studies_workloads() -> list[tuple[str, object, object, object]]:
    """(study names, plan, baseline config, dataset) per distinct workload and dataset."""
    seen: dict[tuple, list] = {}
    for name in builtin_names():
        plan = resolve_plan(name)
        base = plan.config(plan.baseline)
        key = (plan.workload, plan.dataset_for(base))
        seen.setdefault(key, [[], plan, base, plan.dataset_for(base)])[0].append(name)
    return [(", ".join(names), plan, base, dataset)
            for names, plan, base, dataset in seen.values()]


def instrumentation_ratio(server, workload, dataset, threads: int, seconds: int,
                          window_ms: int = 100) -> float:
    """One run of perflab's driver timing the events of every other window only: the
    geometric mean of (events in a timed window) / (events in the untimed window after it)."""
    argv = sysbench.command(workload, dataset, server.endpoint, threads, seconds)
    env = {**sysbench.environment(workload), "PERFLAB_TIMING": f"alternate {window_ms}"}
    out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env).stdout
    per_window: dict[int, int] = {}
    for line in out.splitlines():
        if line.startswith('{"type":"window"'):
            for w, n in json.loads(line)["slices"].items():
                per_window[int(w)] = per_window.get(int(w), 0) + n
    windows = sorted(per_window)[2:-2]  # the first and last are cut by the run's edges
    logs = [math.log(per_window[w] / per_window[w + 1]) for w in windows
            if w % 2 == 0 and per_window.get(w + 1)]
    return math.exp(statistics.fmean(logs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2)
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--timing-runs", type=int, default=10, metavar="RUNS",
                        help="runs that time every other 100-ms window only (0: none)")
    parser.add_argument("--timing-seconds", type=int, default=20)
    parser.add_argument("--scale", type=float, default=1.0, help="dataset rows x this")
    args = parser.parse_args()

    lab = bench_lab("overhead")
    catalog = lab.catalog()
    summary = []
    for names, plan, base, dataset in studies_workloads():
        plan = with_overrides(plan, scale=args.scale)
        dataset = plan.dataset_for(base)
        workload = resolve(plan.workload)
        options = check_configs(plan, catalog, workload)[base.name]
        print(f"\n== {plan.workload.label} on {dataset.engine} {dataset.tables} x {dataset.rows} "
              f"({names}), {args.threads} threads, {args.seconds:g} s runs")
        with dataset_server(lab, dataset, options, workload) as server:
            seconds = max(1, round(args.seconds))
            peer = plain_command(workload, dataset, server, args.threads, seconds)
            env = sysbench.environment(workload)
            measure(server, workload, dataset, args.threads, seconds)  # warm-up, not counted
            ratios = []
            for pair in range(args.pairs):
                order = ("perflab", "plain") if pair % 2 == 0 else ("plain", "perflab")
                figures = {}
                for side in order:
                    if side == "perflab":
                        figures[side] = measure(server, workload, dataset, args.threads,
                                                seconds)[0].qps
                    else:
                        figures[side] = plain_qps(peer, env)
                ratios.append(figures["perflab"] / figures["plain"])
                print(f"pair {pair + 1:3} ({order[0]} first): perflab {figures['perflab']:9.0f}"
                      f"  plain {figures['plain']:9.0f}  ratio {ratios[-1]:.3f}", flush=True)
            line = f"{plan.workload.label:45} perflab/plain {ratio_interval(ratios)}"
            if args.timing_runs:
                timed = []
                for run in range(args.timing_runs):
                    timed.append(instrumentation_ratio(server, workload, dataset, args.threads,
                                                       args.timing_seconds))
                    print(f"timing run {run + 1}: timed/untimed windows {timed[-1]:.4f}",
                          flush=True)
                line += f"; timed/untimed windows {ratio_interval(timed, digits=4)}"
            summary.append(line)
            print(line)
    print(f"\n{args.pairs} interleaved pairs per workload, {args.seconds:g} s runs, "
          f"{args.threads} threads; geometric mean [95% interval]; goal [0.99, 1.01]")
    for line in summary:
        print(line)


if __name__ == "__main__":
    run_main(main)
