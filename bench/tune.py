"""bench/tune: ofat, bayes and random with the same trial budget, on oltp_read_write over an
InnoDB dataset several times larger than the default 128 MiB buffer pool.

For each method: the gain over the default configuration as re-measured at the end (interleaved
repeats, with its interval and verdict), and how many trials it needed to reach 90% of the best
gain any method saw in its trials. Each method has its own lab under bench/out/tune-METHOD (the
dataset is prepared once per lab), so the three searches do not share a server.
"""

from __future__ import annotations

import argparse

from common import bench_lab
from perflab.plan import parse_plan
from perflab.tune.search import Tuner, TuneSettings

KNOBS = ["innodb_buffer_pool_size", "innodb_log_file_size", "innodb_flush_method",
         "innodb_io_capacity", "innodb_adaptive_hash_index", "innodb_change_buffering",
         "table_open_cache", "thread_cache_size"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--budget", type=int, default=12)
    parser.add_argument("--tables", type=int, default=4)
    parser.add_argument("--rows", type=int, default=500_000)
    parser.add_argument("--threads", type=int, default=8)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--final-repeats", type=int, default=3)
    args = parser.parse_args()
    plan = parse_plan(f"""
[study]
name = "bench-tune"
[dataset]
engine = "InnoDB"
tables = {args.tables}
rows = {args.rows}
[workload]
name = "oltp_read_write"
[run]
threads = [{args.threads}]
warmup_seconds = {args.seconds}
run_seconds = {args.seconds}
[configs.default]
[tune]
knobs = {KNOBS}
final_repeats = {args.final_repeats}
""")
    settings = TuneSettings.from_plan(dict(plan.tune))
    results = {}
    for seed, method in enumerate(("ofat", "bayes", "random"), 1):
        lab = bench_lab(f"tune-{method}")
        results[method] = Tuner(plan, lab, settings, method, budget=args.budget, seed=seed,
                                say=lambda m, method=method: print(f"[{method}] {m}")).run()

    def trial_gains(result) -> list[float | None]:
        default = result.trials[0].value  # every method's first trial is the defaults
        return [None if t.value is None or not default else t.value / default - 1
                for t in result.trials]

    best_gain = max(g for r in results.values() for g in trial_gains(r) if g is not None)
    print(f"\noltp_read_write, InnoDB {args.tables} x {args.rows} rows, {args.threads} threads, "
          f"{args.seconds} s per trial, budget {args.budget} trials, "
          f"{len(KNOBS)} knobs; best gain seen in any trial: {best_gain:+.1%}")
    print(f"{'method':8} {'re-measured gain vs default':>30} {'verdict':>8} "
          f"{'trials to 90% of best':>22} {'failed':>7}")
    for method, result in results.items():
        c = result.gain_vs_default
        gain = "-" if c is None else f"{c.change:+.1%} {c.interval_text()}"
        gains = trial_gains(result)
        reach = next((i for i, g in enumerate(gains, 1)
                      if g is not None and g >= 0.9 * best_gain), None)
        failed = sum(t.state != "ok" for t in result.trials)
        print(f"{method:8} {gain:>30} {c.verdict if c else '-':>8} "
              f"{reach if reach else 'never':>22} {failed:>7}")
        print(f"         best my.cnf: {result.mycnf().replace(chr(10), '; ')}")


if __name__ == "__main__":
    main()
