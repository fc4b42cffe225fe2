"""bench/reference: plain sysbench's reading of any plan's comparisons, beside perflab's.

The independent reference for a held-out study (or a comparison of server builds): for every
round, each configuration of the plan gets a server started afresh on its own copy of the data
(the copies rotated from round to round), alone on the machine as a user's server would run, in
its configuration's environment (build, allocator, the plan's pinned CPUs, the load generator
pinned the same way), warmed up and then measured by the workload's own sysbench script, with
no perflab driver, at each of the plan's thread counts, and stopped before the next starts. The
configurations' order rotates from round to round, so that a drift of the machine falls on each
alike.

Per configuration and thread count against the plan's baseline, it prints the geometric mean
of the rounds' ratios with a 95% t interval (and the number of rounds). With --lab, it sets
perflab's stored verdict of the same study beside each (its change and interval) and says
whether the two intervals overlap: perflab's figure must agree with the reference's, on every build.

Resumable: the rounds are kept in bench/out/reference-STAMP.json; the same command (the same
--stamp) measures only the rounds still missing.

    .venv/bin/python -u bench/reference.py bench/heldout/small_effects_pinned.toml \\
        --stamp 2026-12-02 --lab /tmp/heldout/lab
"""

from __future__ import annotations

import argparse
import json
import math
import time
from contextlib import ExitStack

from common import ROOT, change_of, plain, run_main, shown_change, started
from perflab.api import load_study
from perflab.domain import Plan
from perflab.lab import Lab
from perflab.load.workloads import resolve
from perflab.report.study import DEFAULT_OPTIONS, judgement
from perflab.server import environment as env
from perflab.studies import resolve_plan


def measure_round(lab: Lab, plan: Plan, number: int, args) -> dict[str, dict[str, float]]:
    """Round `number`: per configuration (in rotated order), qps per thread count."""
    workload = resolve(plan.workload)
    shift = number % len(plan.configs)
    found: dict[str, dict[str, float]] = {}
    for config in plan.configs[shift:] + plan.configs[:shift]:
        client = env.client_prefix(config.environment)
        with ExitStack() as stack:
            (server,) = started(stack, lab, plan, shift=number, only=config.name).values()
            found[config.name] = {}
            for threads in plan.run.threads:
                plain(workload, plan, server, threads, args.warmup, client, retakes=0)
                found[config.name][str(threads)] = plain(workload, plan, server, threads,
                                                         args.seconds, client)
    return found


def perflab_verdicts(lab: str, study: str):
    """perflab's stored verdicts of `study` in `lab`, per (configuration, threads)."""
    stored = load_study(lab, study)
    return judgement(stored, DEFAULT_OPTIONS).verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("plan", help="a plan file or built-in study")
    parser.add_argument("--stamp", default=time.strftime("%Y-%m-%d"))
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=12, help="each measured run")
    parser.add_argument("--warmup", type=int, default=4, help="a run before each measured one")
    parser.add_argument("--lab", help="a perflab lab holding the study to set beside")
    parser.add_argument("--study", help="its name there (default: the plan's)")
    args = parser.parse_args()
    plan = resolve_plan(args.plan)
    lab = Lab(ROOT / "out" / f"reference-{args.stamp}" / "lab")
    store_path = ROOT / "out" / f"reference-{args.stamp}.json"
    stored = json.loads(store_path.read_text()) if store_path.exists() else {}
    rounds = stored.setdefault(plan.name, [])
    while len(rounds) < args.rounds:
        rounds.append(measure_round(lab, plan, len(rounds), args))
        store_path.write_text(json.dumps(stored, indent=1))
        print(f"round {len(rounds)} of {args.rounds} at {time.strftime('%H:%M:%S')}: " + "; ".join(
            f"{name} " + " ".join(f"{qps:.0f}" for qps in by_threads.values())
            for name, by_threads in rounds[-1].items()), flush=True)
    ours = perflab_verdicts(args.lab, args.study or plan.name) if args.lab else {}
    print(f"\n{plan.name}: plain sysbench, {len(rounds)} rounds of {args.seconds}-s runs, "
          f"a fresh server per configuration and round\n")
    print("| configuration | threads | plain sysbench [95%] | perflab [its interval] | overlap |")
    print("|---|---|---|---|---|")
    baseline = plan.baseline
    for config in plan.configs:
        if config.name == baseline:
            continue
        for threads in plan.run.threads:
            reference = change_of([r[config.name][str(threads)] / r[baseline][str(threads)]
                                   for r in rounds])
            verdict = ours.get((config.name, threads))
            theirs = (f"{verdict.change:+.1%} [{verdict.low:+.1%}, {verdict.high:+.1%}] "
                      f"{verdict.verdict}" if verdict else "-")
            print(f"| {config.name} | {threads} | {shown_change(reference)} | {theirs} | "
                  f"{_overlap(reference, verdict)} |")


def _overlap(reference: tuple[float, float, float, int] | None, verdict) -> str:
    """yes/NO: whether the reference's interval and perflab's meet; '-' where either has none
    (fewer than 2 rounds, no stored verdict, or a verdict without an interval)."""
    if reference is None or verdict is None or math.isnan(verdict.low + verdict.high):
        return "-"
    _, low, high, _ = reference
    return "yes" if verdict.low <= high and low <= verdict.high else "NO"


if __name__ == "__main__":
    run_main(main)
