"""bench/tune: does the default search method find a known large gain sooner than random search
and seed 002's one-factor-at-a-time, at equal budgets?

The known answer: a read-only workload with uniformly drawn rows over an InnoDB dataset larger
than the default 128 MiB buffer pool, so that a larger innodb_buffer_pool_size gives a large
gain and the other knobs little. Every method gets the same budget (enough for one-factor's
first round over all knobs and part of its second), each (seed, method) run is a fresh study,
the methods run interleaved (their order rotates with the seed), and the knobs are listed in an
order shuffled by the seed (one-factor tries them in list order).

Trials are measured as `perflab tune` measures them: side by side with the defaults on a
second server, scored as the ratio (`--serial`: alone, one server switched by SET GLOBAL).

Per method: the gain of its winner over the defaults as its own final re-measure found it
(paired rounds, interval, verdict), and the trials it needed before one of its trials reached
90% of the best re-measured gain of the whole benchmark, median over seeds.

    .venv/bin/python bench/tune.py --seeds 3 --budget 24
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

from common import bench_lab
from perflab.plan import parse_plan
from perflab.tune.search import Tuner, TuneResult, TuneSettings

KNOBS = ["innodb_buffer_pool_size", "innodb_adaptive_hash_index", "table_open_cache",
         "thread_cache_size", "innodb_io_capacity", "innodb_read_ahead_threshold"]
METHODS = ("bayes", "random", "ofat")  # bayes is `perflab tune`'s default


def plan_for(name: str, knobs: list[str], args: argparse.Namespace):
    return parse_plan(f"""
[study]
name = "{name}"
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
[configs.default]
[tune]
knobs = {knobs}
final_repeats = 3
final_max_repeats = {args.final_max_repeats}
""")


def trial_gains(result: TuneResult) -> list[float | None]:
    """Each trial's gain as the search saw it: over the reference measured side by side, or
    (trials measured alone) over the run's first trial, the defaults in every method."""
    if result.relative:
        return [None if t.value is None else t.value - 1 for t in result.trials]
    default = result.trials[0].value if result.trials else None
    return [None if t.value is None or not default else t.value / default - 1
            for t in result.trials]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--budget", type=int, default=24)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=250_000)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--seconds", type=int, default=4)
    parser.add_argument("--final-max-repeats", type=int, default=6)
    parser.add_argument("--serial", action="store_true",
                        help="measure each trial alone (the way before side-by-side trials)")
    args = parser.parse_args()
    stamp = time.strftime("%Y%m%d%H%M%S")
    lab = bench_lab("tune")  # one dataset for every run; each run is its own study
    runs: dict[str, list[TuneResult]] = {method: [] for method in METHODS}
    for seed in range(1, args.seeds + 1):
        knobs = random.Random(seed).sample(KNOBS, len(KNOBS))
        order = METHODS[seed % 3:] + METHODS[:seed % 3]
        for method in order:
            plan = plan_for(f"bench-tune-{stamp}-s{seed}-{method}", knobs, args)
            settings = TuneSettings.from_plan(dict(plan.tune))
            result = Tuner(plan, lab, settings, method, budget=args.budget, seed=seed,
                           say=lambda m, tag=f"{method} s{seed}": print(f"[{tag}] {m}",
                                                                        flush=True)).run()
            runs[method].append(result)

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
          f"budget {args.budget} trials, "
          f"{len(KNOBS)} knobs, {args.seeds} seeds; best re-measured gain {best:+.1%}, "
          f"so 90% of it is {0.9 * best:+.1%}")
    print(f"{'method':8} {'re-measured gain per seed (verdict)':58} {'median':>8} "
          f"{'trials to 90%':>16} {'median':>7} {'failed':>7}")
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
              f"{sum(t.state != 'ok' for r in results for t in r.trials):>7}")
    print("(trials to 90%: the trial, counted from 1, whose own figure first reached 90% of the "
          f"best re-measured gain; 'never' counts as {args.budget + 1} in the median)")
    for method, results in runs.items():
        for seed, r in enumerate(results, 1):
            print(f"{method} seed {seed} winner: {r.mycnf().replace(chr(10), '; ')}")


if __name__ == "__main__":
    main()
