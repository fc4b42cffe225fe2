"""bench/validity: are perflab's ratios the ones plain sysbench measures?

Known effects of server settings on InnoDB (4 tables x 25,000 rows, in memory), small and large,
read-only and read-write, with a read-write A/A, and of the MyISAM key cache on the key-buffer
contention page's join (lock contention), at a low and a high thread count (by default those
of the built-in innodb-small-effects study), each measured four ways:

- by the fleet (`schedule = "fleet"`: one server per configuration, 250-ms slices);
- by serial rounds (`schedule = "serial"`: one server, configurations back to back);
- by plain sysbench, the reference: the workload's own script with no perflab driver, long runs
  (--pair-seconds) against servers started afresh for every measurement (a start moves this
  machine's throughput by several percent, and what a server ran before moves it too), one at
  a time, alone on the machine as a user's server would run, copies of the data swapped, in
  ABBA order;
- on absolute qps: a perflab point as a serial study measures it (its driver, its counters,
  run_seconds long) against a long plain sysbench run (--pair-seconds) on the same server, at 1
  to 128 threads: what a short window costs (threads still connecting) shows here.

The three are interleaved, as every comparison on this machine must be: round k is one fleet
round, one serial round (each a study of one round of its own, `v-EFFECT-SCHEDULE-k`, run
through `perflab.run`), then the reference's pair k at every thread count, so that a drift of
the machine over tens of minutes falls on all three alike. perflab's figure is the geometric
mean of its rounds' ratios (changed/base, per thread count) with the same t interval as the
reference's pairs. Each ratio is printed as its geometric mean with a 95% interval; a fleet or
serial ratio must agree with the reference within +-1.5 percentage points (goal of issue 31).
Resumable: run again with the same --stamp and what is stored (perflab's studies, the reference
pairs in bench/out/validity-STAMP.json) is kept.

    .venv/bin/python bench/validity.py --stamp 2026-11-25b
"""

from __future__ import annotations

import argparse
import json
import time
from contextlib import ExitStack
from dataclasses import replace

from common import ROOT, change_of, plain, ratio_interval, run_main, shown_change, started
from perflab import run as perflab_run
from perflab.domain import Plan
from perflab.lab import Lab
from perflab.load.workloads import resolve
from perflab.running.measurer import measure
from perflab.studies import resolve_plan

INNODB = 'engine = "InnoDB"\ntables = 4\nrows = 25000'
# the MyISAM key-buffer contention page's join: 260,000 rows, LIMIT 1206,18
JOIN = ('engine = "MyISAM"\ntables = 1\nrows = 260000',
        'options = { offset = 1206, limit = 18, t2_rows = 4000 }')
EFFECTS = {  # name: (what, workload, the changed configuration's variables[, dataset, options])
    "ahi": ("adaptive hash index on (MariaDB 10.11: off by default)", "oltp_read_only",
            'innodb_adaptive_hash_index = "ON"'),
    "pfs": ("performance schema on", "oltp_read_only", 'performance_schema = "ON"'),
    "pool": ("buffer pool 8 MiB, smaller than the data (large)", "oltp_read_only",
             'innodb_buffer_pool_size = "8M"'),
    # read-write: each server's flushing and purge go on in the background, also in the other
    # servers' slices. An A/A, and an effect that lies mostly in that background work.
    "rw-aa": ("read-write A/A: both sides write, and flush in the background", "oltp_read_write",
              ""),
    "doublewrite": ("read-write, doublewrite buffer off: the page flushes write half as much",
                    "oltp_read_write", 'innodb_doublewrite = "OFF"'),
    # write-only with a redo log far too small: checkpoints make the page cleaner flush hard,
    # in the background, so in the fleet also in the other server's slices
    "redo": ("write-only, an 8 MiB redo log (the default is 96 MiB): checkpoints flush hard",
             "oltp_write_only", 'innodb_log_file_size = "8M"'),
    # The fleet's risk in its plainest form: the changed server also writes in the background
    # (an event of its own every second), which runs in the other server's slices too. Alone,
    # that work costs the changed server its share; in the fleet, the part that falls in the
    # base's slices would be charged to the base, pulling the ratio toward 1.
    "bg-aa": ("read-only A/A, the changed server also writing in the background (an event "
              "updating one table's 25,000 rows every second)", "oltp_read_only",
              'event_scheduler = "ON"\ninit_file = "{init_file}"'),
    # lock contention: the key cache's mutex against reading index blocks through the OS, on
    # a workload whose servers wait on each other's locks (fleet turns change how they wait)
    "kb0-join": ("the key cache off (key_buffer_size = 0) on the MyISAM join", "join-limit",
                 "key_buffer_size = 0", *JOIN),
    "seg64-join": ("the key cache in 64 segments on the MyISAM join", "join-limit",
                   "key_cache_segments = 64", *JOIN),
}
# The changed server's background writer for bg-aa, created at its start (init_file).
BACKGROUND_EVENT = """CREATE DEFINER = root@localhost EVENT IF NOT EXISTS sbtest.perflab_background
  ON SCHEDULE EVERY 1 SECOND
  DO UPDATE sbtest.sbtest1 SET k = k + 1;
"""
PLAN = """
[study]
name = "{name}"
baseline = "base"
[dataset]
{dataset}
[workload]
name = "{workload}"
{options}
[run]
threads = {threads}
warmup_seconds = 3
run_seconds = {seconds}
rounds = {rounds}
schedule = "{schedule}"
margin = 0.05
[server]
max_connections = 300
[configs.base]
[configs.changed]
{variables}
"""
ABSOLUTE_THREADS = (1, 4, 16, 64, 128)


def plan_for(effect: str, schedule: str, args, block: int) -> Plan:
    """The plan of round `block` of `effect` on `schedule`: a study of one round."""
    name = f"v-{effect}-{schedule}-{block}"
    path = ROOT / "out" / f"validity-{args.stamp}" / f"{name}.toml"
    path.parent.mkdir(parents=True, exist_ok=True)
    what, workload, variables, *rest = EFFECTS[effect]
    dataset, options = rest if rest else (INNODB, "")
    if "{init_file}" in variables:  # bg-aa's background writer
        init_file = path.parent / "background.sql"
        init_file.write_text(BACKGROUND_EVENT)
        variables = variables.format(init_file=init_file)
    path.write_text(PLAN.format(name=name, threads=list(args.threads), seconds=args.seconds,
                                rounds=1, schedule=schedule, workload=workload,
                                variables=variables, dataset=dataset, options=options))
    return resolve_plan(str(path))


def perflab_round(lab: Lab, plan: Plan) -> dict[int, float]:
    """Per thread count, the changed/base ratio of the plan's one round (the run resumes; a
    thread count with a failed point has no ratio)."""
    perflab_run(plan, lab, say=lambda line: print(f"  [{plan.name}] {line}", flush=True))
    qps: dict[tuple[str, int], float] = {}
    for point in lab.study(plan.name).points:
        if point.ok:
            qps[(point.config, point.threads)] = point.metrics.qps
    return {threads: qps[("changed", threads)] / qps[("base", threads)]
            for threads in plan.run.threads
            if ("changed", threads) in qps and ("base", threads) in qps}


def reference(lab: Lab, plan: Plan, args, stored: dict, save, pairs_wanted: int) -> None:
    """Per thread count, ratios changed/base of plain sysbench runs (up to `pairs_wanted`
    pairs), each server alone on the machine as a user's would be: for every measurement one
    server is started afresh on its copy of the data (copies swapped from one pair to the next,
    the order alternating, ABBA), warmed up at that thread count, measured and stopped before
    the other starts, so that no measurement inherits another's server."""
    workload = resolve(plan.workload)
    for threads in args.threads:
        pairs = stored.setdefault(str(threads), [])
        while len(pairs) < pairs_wanted:
            number = len(pairs)
            order = ("base", "changed") if number % 2 == 0 else ("changed", "base")
            qps = {}
            for name in order:
                with ExitStack() as stack:
                    (server,) = started(stack, lab, plan, shift=number, only=name).values()
                    plain(workload, plan, server, threads, args.seconds * 3, retakes=0)  # warm-up
                    qps[name] = plain(workload, plan, server, threads, args.pair_seconds)
            pairs.append(qps["changed"] / qps["base"])
            save()
            print(f"  reference {plan.name} {threads} threads pair {len(pairs)}: "
                  f"{pairs[-1]:.3f}", flush=True)


def absolute(lab: Lab, plan: Plan, args, stored: dict, save) -> dict[int, list[float]]:
    """Per thread count, perflab point qps / long plain sysbench run's qps, same server."""
    workload = resolve(plan.workload)
    single = replace(plan, configs=plan.configs[:1])
    with ExitStack() as stack:
        (server,) = started(stack, lab, single).values()
        for threads in ABSOLUTE_THREADS:
            pairs = stored.setdefault(str(threads), [])
            if len(pairs) >= args.absolute_pairs:
                continue
            plain(workload, plan, server, threads, args.seconds, retakes=0)
            while len(pairs) < args.absolute_pairs:
                ours = measure(server, workload, plan.dataset, threads, args.seconds)[0].qps
                theirs = plain(workload, plan, server, threads, args.pair_seconds)
                pairs.append(ours / theirs)
                save()
                print(f"  absolute {threads} threads: perflab/plain {pairs[-1]:.3f}", flush=True)
    return {int(t): ratios for t, ratios in stored.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--effects", nargs="*", default=list(EFFECTS), choices=list(EFFECTS))
    parser.add_argument("--threads", type=int, nargs="*", default=[8, 32])
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--schedules", nargs="*", default=["fleet", "serial"],
                        choices=["fleet", "serial"])
    parser.add_argument("--pair-seconds", type=int, default=10)
    parser.add_argument("--absolute-pairs", type=int, default=3)
    args = parser.parse_args()
    lab = Lab(ROOT / "out" / f"validity-{args.stamp}" / "lab")
    store_path = ROOT / "out" / f"validity-{args.stamp}.json"
    stored = json.loads(store_path.read_text()) if store_path.exists() else {}

    def save() -> None:
        store_path.write_text(json.dumps(stored, indent=1))

    rows = []
    for effect in args.effects:
        print(f"== {effect}: {EFFECTS[effect][0]} ({EFFECTS[effect][1]})", flush=True)
        ours: dict[str, dict[int, list[float]]] = {s: {} for s in args.schedules}
        theirs = stored.setdefault("interleaved", {}).setdefault(effect, {})
        for block in range(1, args.rounds + 1):
            for schedule in args.schedules:
                found = perflab_round(lab, plan_for(effect, schedule, args, block))
                for threads, ratio in found.items():
                    ours[schedule].setdefault(threads, []).append(ratio)
            reference(lab, plan_for(effect, "fleet", args, block), args, theirs, save, block)
            print(f"  round {block} at {time.strftime('%H:%M:%S')}: " + ", ".join(
                f"{threads} threads " + " ".join(
                    f"{s} {ours[s][threads][-1]:.3f}" for s in args.schedules
                    if len(ours[s].get(threads, [])) == block)
                + f" reference {theirs[str(threads)][block - 1]:.3f}"
                for threads in args.threads), flush=True)
        for threads in args.threads:
            rows.append((effect, threads, [change_of(ours[s].get(threads, [])) for s in
                                           args.schedules], change_of(theirs[str(threads)])))
    abs_ratios = (absolute(lab, plan_for(args.effects[0], "serial", args, 0), args,
                           stored.setdefault("absolute", {}), save)
                  if args.absolute_pairs else {})

    print(f"\n| effect | threads | {' | '.join(args.schedules)} | plain sysbench (reference) "
          f"| {' | '.join(f'{s} - reference' for s in args.schedules)} |")
    print("|---|---|" + "---|" * (2 * len(args.schedules) + 1))
    for effect, threads, found, ref in rows:
        gaps = [f"{(f[0] - ref[0]) * 100:+.1f} pp" if f else "-" for f in found]
        print(f"| {effect} | {threads} | {' | '.join(shown_change(f) for f in found)} | "
              f"{shown_change(ref)} | {' | '.join(gaps)} |")
    if not args.absolute_pairs:
        return
    print(f"\n| threads | perflab point ({args.seconds} s) / plain sysbench "
          f"({args.pair_seconds} s), same server |")
    print("|---|---|")
    for threads, ratios in sorted(abs_ratios.items()):
        shown = ratio_interval(ratios) if len(ratios) > 1 else f"{ratios[0]:.3f} (one pair)"
        print(f"| {threads} | {shown} |")


if __name__ == "__main__":
    run_main(main)
