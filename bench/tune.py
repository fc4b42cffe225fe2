"""bench/tune: does the default search method find a known large gain sooner than random search
and seed 002's one-factor-at-a-time, at equal budgets?

The known answer: a read-only workload with uniformly drawn rows over an InnoDB dataset larger
than the default 128 MiB buffer pool, so that a larger innodb_buffer_pool_size gives a large
gain. The knobs searched are those `perflab tune` searches when a plan names none (--space
curated, 24 on MariaDB 10.11), whose other effects are not known in advance; --space six
searches the pool size and five knobs of little effect, where half the pool's range is a
plateau that random search finds as easily as any model. Every method gets the same budget (by
default one-factor's first round over the space: the budget it needs), proposals refused before
start (they would not fit in memory) not counted; each (seed, method) run is a fresh study, the
methods run interleaved (their order rotates with the seed), and the knobs are listed in an
order shuffled by the seed (one-factor tries them in list order).

Trials are measured as `perflab tune` measures them: side by side with the defaults on a
second server, scored as the ratio (`--serial`: alone, one server switched by SET GLOBAL).

Per method: the gain of its winner over the defaults as its own final re-measure found it
(paired rounds, interval, verdict), and the trials it needed before one of its trials reached
90% of the best re-measured gain of the whole benchmark, median over seeds. Each method's
re-measure is a run of its own, so two methods' gains differ by the runs' noise as well; the
head-to-head settles "which winner is faster": per seed, the three winners measured together
(one server each, taking turns in time slices, paired by round) and the default method's winner
compared with the two others as one family of verdicts.

    .venv/bin/python bench/tune.py --seeds 3
    .venv/bin/python bench/tune.py --seeds 3 --methods bayes,random --budget 30
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from dataclasses import dataclass, field

from common import bench_lab
from perflab.analysis.verdicts import Judgement, judge
from perflab.lab import Lab
from perflab.plan import parse_plan
from perflab.runner import Runner
from perflab.store.study import load_study
from perflab.tune.search import Tuner, TuneResult, TuneSettings, ofat_first_round, startup_values
from perflab.tune.space import knob_space

# --space six: the pool size and five knobs of little effect here (the runs before 2026-11-24)
SIX = ["innodb_buffer_pool_size", "innodb_adaptive_hash_index", "table_open_cache",
       "thread_cache_size", "innodb_io_capacity", "innodb_read_ahead_threshold"]
METHODS = ("bayes", "random", "ofat")  # bayes is `perflab tune`'s default


def search_space(lab: Lab, space: str) -> tuple[list[str], int]:
    """The knobs searched (--space curated: what `perflab tune` searches when the plan names
    none, as this server has them) and the trials of one-factor's first round over them."""
    catalog = lab.catalog()
    knobs = knob_space(catalog, SIX if space == "six" else None)
    return [k.name for k in knobs], ofat_first_round(knobs, startup_values(knobs, catalog))


def plan_for(name: str, args: argparse.Namespace, body: str, repeats: int = 3,
             baseline: str = "default"):
    return parse_plan(f"""
[study]
name = "{name}"
baseline = "{baseline}"
[dataset]
engine = "InnoDB"
tables = {args.tables}
rows = {args.rows}
[workload]
name = "oltp_read_only"
options = {{ rand_type = "uniform" }}
[run]
threads = [{args.threads}]
schedule = "{'serial' if args.serial else 'auto'}"
warmup_seconds = {args.seconds}
run_seconds = {args.seconds}
repeats = {repeats}
{body}
""")


def tune_body(knobs: list[str], args: argparse.Namespace) -> str:
    return f"""[configs.default]
[tune]
knobs = {knobs}
final_repeats = 3
final_max_repeats = {args.final_max_repeats}"""


def trial_gains(result: TuneResult) -> list[float | None]:
    """Each trial's gain as the search saw it: over the reference measured side by side, or
    (trials measured alone) over the run's first trial, the defaults in every method. Proposals
    refused before start cost nothing and are left out; a failed trial is None."""
    trials = [t for t in result.trials if t.state != "refused"]
    if result.relative:
        return [None if t.value is None else t.value - 1 for t in trials]
    default = trials[0].value if trials else None
    return [None if t.value is None or not default else t.value / default - 1 for t in trials]


@dataclass
class Duel:
    """One seed's head-to-head: verdicts against the default method's winner, how the winners
    were measured, and the methods whose winner had the same settings as another's."""

    judgement: Judgement | None
    schedule: str = ""
    same: dict[str, str] = field(default_factory=dict)


def head_to_head(lab: Lab, name: str, winners: dict[str, TuneResult],
                 args: argparse.Namespace) -> Duel:
    """One seed's winners measured together for --h2h-rounds paired rounds, the default
    method's winner the baseline, so that "slower" means it beat that method's winner. A
    winner with the same settings as an earlier one is not measured twice."""
    distinct: dict[tuple, str] = {}
    same = {}
    for method, result in winners.items():
        key = tuple(sorted(result.best.params.items()))
        if key in distinct:
            same[method] = distinct[key]
        else:
            distinct[key] = method
    if len(distinct) < 2:
        return Duel(None, same=same)
    body = "\n".join(f"[configs.{method}]\n" + "\n".join(f'{k} = "{v}"' for k, v in key)
                     for key, method in distinct.items())
    plan = plan_for(name, args, body, args.h2h_rounds, baseline=METHODS[0])
    with lab.locked(), lab.store() as store:
        summary = Runner(plan, lab, store, lambda m: print(f"[{name}] {m}", flush=True)).run()
        study = load_study(store, plan.name, str(lab.root))
    return Duel(judge(study.plan, study.points, study.design), summary.schedule, same)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--space", choices=("curated", "six"), default="curated",
                        help="the knobs searched: perflab's curated set (the default of "
                             "`perflab tune`) or six of them, the pool size the only large one")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated, among {', '.join(METHODS)}; {METHODS[0]} (the "
                             "default method, the head-to-head's baseline) must be one")
    parser.add_argument("--budget", type=int,
                        help="trials per run (default: one-factor's first round over the space)")
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--final-max-repeats", type=int, default=6)
    parser.add_argument("--h2h-rounds", type=int, default=8,
                        help="paired rounds of each seed's head-to-head of the winners")
    parser.add_argument("--serial", action="store_true",
                        help="measure each trial alone (the way before side-by-side trials)")
    args = parser.parse_args()
    methods = tuple(m for m in METHODS if m in args.methods.split(","))
    if METHODS[0] not in methods or len(methods) < 2 or \
            set(args.methods.split(",")) - set(methods):
        parser.error(f"--methods {args.methods}: two or more of {', '.join(METHODS)}, "
                     f"{METHODS[0]} among them")
    stamp = time.strftime("%Y%m%d%H%M%S")
    lab = bench_lab("tune")  # one dataset for every run; each run is its own study
    space, first_round = search_space(lab, args.space)
    args.budget = args.budget or first_round
    print(f"{len(space)} knobs ({args.space}); one-factor's first round takes {first_round} "
          f"trials; budget {args.budget} trials per run", flush=True)
    runs: dict[str, list[TuneResult]] = {method: [] for method in methods}
    duels: list[Duel] = []
    for seed in range(1, args.seeds + 1):
        knobs = random.Random(seed).sample(space, len(space))
        turn = seed % len(methods)
        for method in methods[turn:] + methods[:turn]:
            plan = plan_for(f"bench-tune-{stamp}-s{seed}-{method}", args,
                            tune_body(knobs, args))
            settings = TuneSettings.from_plan(dict(plan.tune))
            result = Tuner(plan, lab, settings, method, budget=args.budget, seed=seed,
                           say=lambda m, tag=f"{method} s{seed}": print(f"[{tag}] {m}",
                                                                        flush=True)).run()
            runs[method].append(result)
        winners = {m: runs[m][-1] for m in methods if runs[m][-1].best is not None}
        duels.append(head_to_head(lab, f"bench-tune-{stamp}-s{seed}-head-to-head", winners,
                                  args) if METHODS[0] in winners else Duel(None))

    def remeasured(result: TuneResult) -> float | None:
        v = result.gain_vs_default
        return None if v is None else v.change

    best = max((g for results in runs.values() for r in results
                if (g := remeasured(r)) is not None), default=None)
    if best is None:
        raise SystemExit("no run re-measured a winner: every trial failed (see above)")
    print(f"\noltp_read_only (uniform rows), InnoDB {args.tables} x {args.rows:,} rows, "
          f"{args.threads} threads, {args.seconds} s per trial "
          f"({'alone' if args.serial else 'side by side with the defaults'}), "
          f"budget {args.budget} trials, {len(space)} knobs ({args.space}), {args.seeds} seeds; "
          f"best re-measured gain {best:+.1%}, "
          f"so 90% of it is {0.9 * best:+.1%}")
    print(f"{'method':8} {'re-measured gain per seed (verdict)':58} {'median':>8} "
          f"{'trials to 90%':>16} {'median':>7} {'failed':>7} {'refused':>8}")
    for method, results in runs.items():
        cells, reach = [], []
        for r in results:
            v = r.gain_vs_default
            cells.append("-" if v is None else f"{v.change:+.0%} {v.interval_text()} {v.verdict}")
            gains = trial_gains(r)
            reach.append(next((i for i, g in enumerate(gains, 1)
                               if g is not None and g >= 0.9 * best), None))
        gains = [g for r in results if (g := remeasured(r)) is not None]
        reached = [n if n is not None else args.budget + 1 for n in reach]
        print(f"{method:8} {' | '.join(cells):58} "
              f"{statistics.median(gains) if gains else float('nan'):>+8.1%} "
              f"{','.join(str(n) if n else 'never' for n in reach):>16} "
              f"{statistics.median(reached):>7g} "
              f"{sum(t.state == 'failed' for r in results for t in r.trials):>7} "
              f"{sum(t.state == 'refused' for r in results for t in r.trials):>8}")
    print("(trials to 90%: the trial, counted from 1, whose own figure first reached 90% of the "
          f"best re-measured gain; 'never' counts as {args.budget + 1} in the median; proposals "
          "refused before start, which would not fit in memory, are not counted)")
    default = METHODS[0]
    judged = [d for d in duels if d.judgement]
    if judged:
        print(f"\nhead-to-head, per seed: each other method's winner against {default}'s, "
              f"measured together for {args.h2h_rounds} paired rounds "
              f"({', '.join(sorted({d.schedule for d in judged}))}; 'slower' = {default}'s "
              f"winner is faster; a {judged[0].judgement.design.alpha:.0%} error rate over "
              "each seed's comparisons)")
    for method in methods[1:] if judged else ():
        cells, changes = [], []
        for duel in duels:
            twin = duel.same.get(method)  # measured once, under the earlier method's name
            if twin == default:
                cells.append(f"same settings as {default}")
                changes.append(0.0)
                continue
            verdict = duel.judgement and duel.judgement.verdicts.get((twin or method,
                                                                      args.threads))
            if not verdict:
                cells.append("-")
                continue
            cells.append(f"{verdict.change:+.1%} {verdict.interval_text()} {verdict.verdict}"
                         + (f" (same settings as {twin})" if twin else ""))
            changes.append(verdict.change)
        median = f"{statistics.median(changes):+.1%}" if changes else "-"
        print(f"{method:8} vs {default}: {' | '.join(cells)}  median {median}")
    for method, results in runs.items():
        for seed, r in enumerate(results, 1):
            print(f"{method} seed {seed} winner: {r.mycnf().replace(chr(10), '; ')}")


if __name__ == "__main__":
    main()
