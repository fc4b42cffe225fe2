"""bench/tune: does the default search method find a known large gain sooner than random search
and the MySQL 5.5 sysbench tuning study's one-factor-at-a-time, at equal budgets?

The known answers (--answer):
- pool: a read-only workload with uniformly drawn rows over an InnoDB dataset larger than the
  default 128 MiB buffer pool, so that a larger innodb_buffer_pool_size gives a large gain;
- myisam-join: the MyISAM key-buffer contention page's join (260,000 rows, LIMIT 1206,18) at 8
  threads, the query cache left out of the space (one repeated statement: it would answer
  everything); the page's answer is the key cache off (key_buffer_size = 0, +54% to +69%) or
  segmented (key_cache_segments);
- innodb-write: sysbench's oltp_write_only on InnoDB, where the redo log's size and the
  flushing settings are what a tuner can move (durability knobs stay out);
- tmp-table: a GROUP BY over 3,000 wide rows of as many groups whose temporary table is rebuilt
  on disk at every statement under the defaults; the answer is tmp_table_size and
  max_heap_table_size both raised (the smaller of the two is the in-memory limit), two knobs
  that act only together;
- query-cache: a report's ten aggregate statements, each repeated word for word over read-only
  data; the answer is the query cache on (query_cache_type = ON, or a query_cache_size given
  at start), two knobs that stand in for each other.
The knobs searched are those `perflab tune` searches when a plan names none (--space
curated: the curated knobs of the answer's engine, as this server has them), whose other
effects are not known in advance; --space six (pool only)
searches the pool size and five knobs of little effect, where half the pool's range is a
plateau that random search finds as easily as any model. Every method gets the same budget (by
default one-factor's first round over the space: the budget it needs), proposals refused before
start (they would not fit in memory) not counted; each (seed, method) run is a fresh study, the
methods run interleaved (their order rotates with the seed), and the knobs are listed in an
order shuffled by the seed (one-factor tries them in list order).

Trials are measured as `perflab tune` measures them: side by side with the defaults on a
second server, scored as the ratio (`--serial`: alone, one server switched by SET GLOBAL).

Per method: the gain of its winner over the defaults as its own final re-measure found it
(paired rounds, interval, verdict), and how soon it had a good answer. After each trial the
method has an answer, the setting it would recommend if stopped there (its best figure so far;
for the additive search the setting its model believes best). Every distinct answer of every run
is re-measured at the end in one regime (two at a time side by side with the defaults, paired
rounds); the best of them is the reference R. "Trials to 90%" is the first trial after which the
answer reached 90% of R's gain (on a log scale by default, --line), median over seeds; whether
an answer reached it is decided by measuring it side by side with R (first_reached): a single
trial's own figure would count noise spikes, and two gains measured apart differ by both
measurements' noise, tens of points at a gain of x2-x4. Each method's final re-measure is a
run of its own, so two methods' final gains differ by the runs' noise as well; the
head-to-head settles "which winner is faster": per seed, the winners measured together (one
server each, taking turns in time slices, paired by round) and the default method's winner
compared with the others as one family of verdicts. Only the
default method's winner is put back knob by knob into its my.cnf (the issue's "only knobs with a
shown effect" is asked of it); the others' winners are compared whole.

An interrupted bench resumes with its --stamp: finished trials and rounds are kept.

    .venv/bin/python bench/tune.py --seeds 3
    .venv/bin/python bench/tune.py --seeds 3 --methods bayes,random --budget 30
    .venv/bin/python bench/tune.py --answer pool --seeds 1 --methods bayes --budget 20
"""

from __future__ import annotations

import argparse
import collections
import hashlib
import math
import random
import statistics
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import optuna

from common import ROOT, bench_lab, run_main
from perflab.analysis.verdicts import Judgement, judge
from perflab.lab import Lab
from perflab.plan import parse_plan
from perflab.running.runner import Runner
from perflab.stats.decide import Verdict
from perflab.store.study import read_study
from perflab.tune.additive import believed_order, measured
from perflab.tune.render import time_line
from perflab.tune.result import spends_budget
from perflab.tune.search import (
    Tuner,
    TuneResult,
    TuneSettings,
    moved,
    ofat_first_round,
    startup_values,
)
from perflab.tune.space import Space, knob_space, variable_names

# --space six: the pool size and five knobs of little effect here (the runs before 2026-11-24)
SIX = ["innodb_buffer_pool_size", "innodb_adaptive_hash_index", "table_open_cache",
       "thread_cache_size", "innodb_io_capacity", "innodb_read_ahead_threshold"]
METHODS = ("bayes", "random", "ofat")
TMP_TABLE_FILE = ROOT / "answers" / "tmp_table.toml"  # bayes is `perflab tune`'s default
QUERY_CACHE_FILE = ROOT / "answers" / "query_cache.toml"


@dataclass(frozen=True)
class Answer:
    """A known answer: the dataset and workload whose best settings are known in advance."""

    described: str
    engine: str
    tables: int
    rows: int
    threads: int
    workload: str  # the plan's [workload] lines
    exclude: tuple[str, ...] = ()  # curated knobs left out of the space


ANSWERS = {
    "pool": Answer("oltp_read_only (uniform rows), InnoDB, data twice the default pool",
                   "InnoDB", 4, 250_000, 4,
                   'name = "oltp_read_only"\noptions = { rand_type = "uniform" }'),
    "myisam-join": Answer("the key-buffer contention page's join (LIMIT 1206,18), MyISAM, "
                          "query cache out of the space", "MyISAM", 1, 260_000, 8,
                          'name = "join-limit"\n'
                          'options = { offset = 1206, limit = 18, t2_rows = 4000 }',
                          ("query_cache_type", "query_cache_size")),
    "innodb-write": Answer("oltp_write_only, InnoDB, in memory", "InnoDB", 4, 100_000, 8,
                           'name = "oltp_write_only"'),
    "tmp-table": Answer("a GROUP BY whose temporary table (24 MB) outgrows the default 16 MiB "
                        "in-memory limit, InnoDB 30,000 rows (bench/answers/tmp_table.toml)",
                        "InnoDB", 1, 30_000, 2,
                        f'name = "sql"\noptions = {{ file = "{TMP_TABLE_FILE}" }}'),
    "query-cache": Answer("ten aggregate statements repeated word for word, each scanning "
                          "20,000 rows, InnoDB 200,000 rows (bench/answers/query_cache.toml)",
                          "InnoDB", 1, 200_000, 4,
                          f'name = "sql"\noptions = {{ file = "{QUERY_CACHE_FILE}" }}'),
}


def search_space(lab: Lab, space: str, answer: Answer) -> tuple[list[str], int]:
    """The variables searched, named as a plan names them (--space curated: what `perflab tune`
    searches when the plan names none, as this server has them, for the answer's engine; a
    knob's followers with it, so that the plan's Space folds them again) and the trials of
    one-factor's first round over them."""
    catalog = lab.catalog()
    knobs = knob_space(catalog, SIX if space == "six" else None, engines={answer.engine},
                       exclude=list(answer.exclude))
    # a knob's followers are named with it: named alone, tmp_table_size is searched alone
    return variable_names(knobs), ofat_first_round(knobs, startup_values(knobs, catalog))


def plan_for(name: str, args: argparse.Namespace, body: str, rounds: int = 3,
             baseline: str = "default"):
    answer = ANSWERS[args.answer]
    return parse_plan(f"""
[study]
name = "{name}"
baseline = "{baseline}"
[dataset]
engine = "{answer.engine}"
tables = {args.tables}
rows = {args.rows}
[workload]
{answer.workload}
[run]
threads = [{args.threads}]
schedule = "{'serial' if args.serial else 'auto'}"
warmup_seconds = {args.seconds}
run_seconds = {args.seconds}
rounds = {rounds}
{body}
""")


def tune_body(knobs: list[str], args: argparse.Namespace) -> str:
    return f"""[configs.default]
[tune]
knobs = {knobs}
final_rounds = 3
final_max_rounds = {args.final_max_rounds}
put_back_time = {args.put_back_time}"""


def settings_key(params: dict, startup: dict) -> tuple:
    """A setting as its server runs it: the knobs moved from their startup values."""
    return tuple(sorted(moved(params, startup).items()))


def answers(result: TuneResult, trials: list, space: Space) -> list[tuple | None]:
    """After each trial that counts in the budget (`spends_budget`: not a refusal, which cost
    nothing, nor an interrupted one), the setting the method would recommend if stopped there:
    its best figure so far, or for the additive search the setting its model believes best; as
    its trial ran it (`Space.within`: the followers set with their knob, a zero-off knob's draw
    below its range 0), not the sampler's draw. None before any trial succeeded."""
    out, seen = [], []
    for trial in sorted(trials, key=lambda t: t.number):
        seen.append(trial)
        if not spends_budget(trial):
            continue
        done = measured(seen)
        if not done:
            out.append(None)
            continue
        pick = believed_order(space, seen, "maximize")[0] if result.ranked_by == "model" \
            else max(done, key=lambda t: t.value)
        out.append(settings_key(space.within(pick.params), result.defaults))
    return out


def answer_gain(gains: dict[tuple, Verdict], key: tuple | None) -> float:
    """An answer's first re-measured gain over the defaults (0 for the defaults themselves)."""
    if key is None:
        return math.nan
    return gains[key].change if key in gains else 0.0 if key == () else math.nan


def median_of_known(values: list[float]) -> float:
    known = [v for v in values if not math.isnan(v)]
    return statistics.median(known) if known else math.nan


def measure_together(lab: Lab, name: str, configs: dict[str, tuple], baseline: str,
                     rounds: int, args: argparse.Namespace) -> tuple[Judgement, str]:
    """`configs` (name -> moved variables) measured side by side for `rounds` paired rounds,
    each judged against `baseline` as one family; and the schedule the runner chose."""
    body = "\n".join(f"[configs.{config}]\n" + "\n".join(f'{k} = "{v}"' for k, v in key)
                     for config, key in configs.items())
    plan = plan_for(name, args, body, rounds, baseline=baseline)
    with lab.locked(), lab.store() as store:
        # winners chosen for their effects: their drift is not the lab's noise
        summary = Runner(plan, lab, store, lambda m: print(f"[{name}] {m}", flush=True),
                         noise_source=None).run()
        study = read_study(store, plan.name, str(lab.root))
    return judge(study.plan, study.points, study.design), summary.schedule


def in_pairs(lab: Lab, name: str, keys: list[tuple], baseline: tuple[str, tuple], rounds: int,
             args: argparse.Namespace) -> Iterator[tuple[tuple, Verdict | None, str]]:
    """`keys` measured two at a time side by side with `baseline` (its config name, its moved
    variables): each key with its verdict against the baseline (None when its points failed)
    and the schedule the runner chose for its pair. A pair's study is named by what it
    measures, so that a bench resumed with more seeds keeps every pair it measured before and
    never mixes a pair's stored rounds with another pair's."""
    label, moved = baseline
    for start in range(0, len(keys), 2):
        group = {f"a{i}": key for i, key in enumerate(sorted(keys[start:start + 2]))}
        digest = hashlib.sha1(repr((moved, group)).encode()).hexdigest()[:10]
        judgement, schedule = measure_together(lab, f"{name}-{digest}",
                                               {label: moved, **group}, label, rounds, args)
        for config, key in group.items():
            verdict = judgement.verdicts.get((config, args.threads))
            finite = verdict is not None and math.isfinite(verdict.change)
            yield key, verdict if finite else None, schedule


def answer_gains(lab: Lab, stamp: str, order: list[tuple], args: argparse.Namespace
                 ) -> tuple[dict[tuple, Verdict], set[str]]:
    """Every distinct answer of every run re-measured in one regime: two at a time side by side
    with the defaults (three servers; a group whose servers would not fit in half the RAM is
    measured one server at a time, and the schedules used are returned), in `order` (seed by
    seed, shuffled within a seed: see `distinct_answers`); the gain over the defaults of each
    answer (the defaults themselves are left out: they gain 0 by definition)."""
    gains: dict[tuple, Verdict] = {}
    schedules = set()
    for key, verdict, schedule in in_pairs(lab, f"bench-tune-{stamp}-answers", order,
                                           ("default", ()), args.answer_rounds, args):
        schedules.add(schedule)
        if verdict is not None:
            gains[key] = verdict
    return gains, schedules


def distinct_answers(seeds: list[int], picks: dict[str, list[list[tuple | None]]],
                     runs: dict[str, list[TuneResult]]) -> list[tuple]:
    """Every distinct answer of every run (each trial's, and each run's winner), the defaults
    left out, seed by seed: a seed's new answers in an order shuffled by the seed, so that no
    method's answers share a group more than another's, and a bench resumed with more seeds
    keeps the groups it measured (all but a last one that held a single answer)."""
    order: list[tuple] = []
    for i, seed in enumerate(seeds):
        fresh = [k for method in picks for k in picks[method][i]]
        fresh += [settings_key(rs[i].best.params, rs[i].defaults)
                  for rs in runs.values() if rs[i].best is not None]
        fresh = [k for k in dict.fromkeys(fresh) if k and k not in order]  # not None, not ()
        random.Random(seed).shuffle(fresh)
        order += fresh
    return order


@dataclass
class Reach:
    """Whether an answer reached 90% of the reference's gain, and how that was decided:
    "interval" (its paired interval against the reference lies on one side of the line),
    "estimate" (the interval straddles the line after --reach-rounds: the estimate decides),
    "first pass" (its interval against the defaults lies far below), "reference", "failed"
    (its servers failed against the reference: not reached), "first-pass estimate" (no wave
    reached it: its first re-measure's estimate against 90% of R's decides)."""

    reached: bool
    how: str
    verdict: Verdict | None = None


TRAIL_LEGEND = ("a letter per trial for its answer, upper case reached, lower case not: "
                "r the reference, i its interval against R, e its estimate against R, p its "
                "first pass far below, f its first-pass estimate, x failed against R; "
                "'-' no answer yet or the defaults, '?' not decided")
TRAIL_LETTERS = {"reference": "r", "interval": "i", "estimate": "e", "first pass": "p",
                 "first-pass estimate": "f", "failed": "x"}


def trail(pick: list[tuple | None], decided: dict[tuple, Reach]) -> str:
    """A run's answers trial by trial, one letter each (TRAIL_LEGEND): why it reached 90% of R
    where it did, or why it never did."""
    def letter(key: tuple | None) -> str:
        if not key:
            return "-"
        if key not in decided:
            return "?"
        reach = decided[key]
        return TRAIL_LETTERS[reach.how].upper() if reach.reached else TRAIL_LETTERS[reach.how]
    return "".join(letter(key) for key in pick)


@dataclass(frozen=True)
class Line:
    """90% of the reference R's gain g, on a scale: "linear", where an answer keeps it at
    1 + 0.9 g over the defaults, or "log", at (1 + g)^0.9, the scale on which the put-back
    judges a kept gain (final.keep_margin, 2026-12-02). On a x200 gain the linear line asks for
    the last 10% of R's throughput, decided by what runs beside the query cache, not by finding
    it; on gains of x2-x3 the two lie within 3 points of each other. The log line is the
    bench's since 2026-12-04, chosen after the query-cache data was seen: both are reported."""

    scale: str

    def kept(self, gain: float) -> float:
        """The ratio over the defaults that keeps 90% of `gain`."""
        return (1 + gain) ** 0.9 if self.scale == "log" else 1 + 0.9 * gain

    def against(self, gain: float) -> float:
        """The line as a change of an answer against R, whose gain is `gain`."""
        return self.kept(gain) / (1 + gain) - 1

    def waves(self, stamp: str, wave: int) -> str:
        """A wave's study: the linear line's keep their names of before the log line."""
        return f"bench-tune-{stamp}-reach-{'' if self.scale == 'linear' else 'log-'}{wave}"


LINES = {scale: Line(scale) for scale in ("log", "linear")}


def first_reached(lab: Lab, stamp: str, picks: dict[str, list[list[tuple | None]]],
                  gains: dict[tuple, Verdict], line: Line, args: argparse.Namespace
                  ) -> tuple[tuple, dict[tuple, Reach]]:
    """Which answers reached 90% of the best gain on the `line`'s scale, decided where it
    matters: the best re-measured answer is the reference R, and an answer A reaches when
    1 + gain A >= line.kept(gain R), that is when A / R >= line.kept(g) / (1 + g): a paired
    comparison of A with R measured side by side, not two gains measured apart (each answer's
    first re-measure has an interval of tens of points at a gain of x2-x4, and the best of
    dozens of such estimates reads high: in the bench of 2026-11-25 the line sat inside that
    noise, so reaching it was luck). The line hardly depends on g (on the linear scale its
    slope is 0.1 / (1 + g)^2, on the log one -0.1 / (1 + g)^1.1), so g from the first pass
    serves. Answers are decided in waves: each run's earliest answer not yet decided, since
    "trials to 90%" needs a run's answers only up to its first that reached. Returns R and the
    decisions, `by_estimate` deciding what no wave measured."""
    reference = max(gains, key=lambda key: gains[key].change)
    decided = first_pass(gains, reference, line)
    against = line.against(gains[reference].change)
    for wave in range(1, args.reach_waves + 1):
        wanted: list[tuple] = []  # seed by seed, as `distinct_answers` orders them
        for i in range(len(next(iter(picks.values())))):
            for pick in (runs[i] for runs in picks.values()):
                for key in dict.fromkeys(k for k in pick if k):
                    if key not in decided:
                        wanted.append(key)
                    if key not in decided or decided[key].reached:
                        break
        wanted = list(dict.fromkeys(wanted))
        if not wanted:
            break
        print(f"\nwave {wave} ({line.scale} line): {len(wanted)} answer(s) against the "
              f"reference, side by side, {args.reach_rounds} rounds", flush=True)
        for key, verdict, _ in in_pairs(lab, line.waves(stamp, wave), wanted,
                                        ("reference", reference), args.reach_rounds, args):
            decided[key] = Reach(False, "failed") if verdict is None else \
                against_reference(verdict, against)
    return reference, by_estimate(decided, gains, reference, line)


def against_reference(verdict: Verdict, against: float) -> Reach:
    """An answer's paired verdict against R read against the line (`against`, a change
    against R): its interval when it lies on one side, else its estimate."""
    if verdict.low >= against or verdict.high < against:
        return Reach(verdict.low >= against, "interval", verdict)
    return Reach(verdict.change >= against, "estimate", verdict)


def first_pass(gains: dict[tuple, Verdict], reference: tuple, line: Line) -> dict[tuple, Reach]:
    """R, and the answers whose first re-measure against the defaults lies wholly under the
    `line` at R's lower bound: not reached, without more rounds ("first pass")."""
    best = gains[reference]
    return {reference: Reach(True, "reference"), **{
        key: Reach(False, "first pass", verdict) for key, verdict in gains.items()
        if key != reference and 1 + verdict.high < line.kept(best.low)}}


def by_estimate(decided: dict[tuple, Reach], gains: dict[tuple, Verdict], reference: tuple,
                line: Line) -> dict[tuple, Reach]:
    """`decided`, and the answers no wave measured decided by their first re-measure's
    estimate against the `line` ("first-pass estimate")."""
    kept = line.kept(gains[reference].change)
    return {**{key: Reach(1 + verdict.change >= kept, "first-pass estimate", verdict)
               for key, verdict in gains.items()}, **decided}


def read_against(decided: dict[tuple, Reach], gains: dict[tuple, Verdict], reference: tuple,
                 line: Line) -> dict[tuple, Reach]:
    """The same rounds read against another `line`, no rounds added: an answer's verdict
    against R where a wave measured one (its estimate when its interval straddles this line),
    its first pass where none did."""
    against = line.against(gains[reference].change)
    read = first_pass(gains, reference, line)
    for key, reach in decided.items():
        if reach.how in ("interval", "estimate") and reach.verdict is not None:
            read[key] = against_reference(reach.verdict, against)
        elif reach.how == "failed":
            read[key] = reach
    return by_estimate(read, gains, reference, line)


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
        key = settings_key(result.best.params, result.defaults)
        if key in distinct:
            same[method] = distinct[key]
        else:
            distinct[key] = method
    if len(distinct) < 2:
        return Duel(None, same=same)
    judgement, schedule = measure_together(lab, name, {m: k for k, m in distinct.items()},
                                           METHODS[0], args.h2h_rounds, args)
    return Duel(judgement, schedule, same)


def print_alone(args: argparse.Namespace, results: list[TuneResult]) -> None:
    """The default method run alone (--methods bayes): each run's time, trials and checks, its
    final gain and its my.cnf. Trials to 90% need the reference R, the best answer of two
    methods or more, so they are not computed."""
    print(f"\n{ANSWERS[args.answer].described}: budget {args.budget} trials, {METHODS[0]} alone "
          "(no reference R: trials to 90% need two methods or more)")
    for seed, result in zip(args.seeds, results, strict=True):
        gain = result.gain_vs_default
        said = "-" if gain is None else f"{gain.change:+.0%} {gain.interval_text()} {gain.verdict}"
        print(f"  seed {seed}: final {said}; {(time_line(result) or ['-'])[0]}")
        print(f"  seed {seed} my.cnf: {result.mycnf().replace(chr(10), '; ')}")


def seed_list(text: str) -> list[int]:
    """--seeds: "N" is seeds 1 to N; otherwise comma-separated seeds and ranges ("4-5,7")."""
    try:
        if text.isdigit():
            seeds = list(range(1, int(text) + 1))
        else:
            seeds = []
            for part in text.split(","):
                low, _, high = part.partition("-")
                seeds += list(range(int(low), int(high or low) + 1))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: N, or seeds and ranges like 4-5,7") from None
    if not seeds or min(seeds) < 1 or len(set(seeds)) < len(seeds):
        raise argparse.ArgumentTypeError(f"{text!r}: one seed or more, each 1 or above, once")
    return seeds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=seed_list, default=seed_list("3"),
                        help="N (seeds 1 to N), or a list and ranges of seeds (4-5, or 1,3): "
                             "a bench of some seeds now and others later, each its own run")
    parser.add_argument("--space", choices=("curated", "six"), default="curated",
                        help="the knobs searched: perflab's curated set (the default of "
                             "`perflab tune`) or six of them, the pool size the only large one")
    parser.add_argument("--methods", default=",".join(METHODS),
                        help=f"comma-separated, among {', '.join(METHODS)}; {METHODS[0]} (the "
                             "default method, the head-to-head's baseline) must be one")
    parser.add_argument("--budget", type=int,
                        help="trials per run (default: one-factor's first round over the space)")
    parser.add_argument("--answer", choices=tuple(ANSWERS), default="pool",
                        help="the known answer searched for (see above)")
    parser.add_argument("--tables", type=int, help="default: the answer's")
    parser.add_argument("--rows", type=int, help="default: the answer's")
    parser.add_argument("--threads", type=int, help="default: the answer's")
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--final-max-rounds", type=int, default=6)
    parser.add_argument("--put-back-time", type=int, default=600,
                        help="seconds each put-back study may measure on after its planned "
                             "rounds, for the comparisons they left open (tune.put_back_time)")
    parser.add_argument("--h2h-rounds", type=int, default=8,
                        help="paired rounds of each seed's head-to-head of the winners")
    parser.add_argument("--answer-rounds", type=int, default=4,
                        help="paired rounds of each distinct answer's re-measure")
    parser.add_argument("--reach-rounds", type=int, default=16,
                        help="paired rounds of an answer against the reference R when deciding "
                             "whether it reached 90%% of R's gain")
    parser.add_argument("--reach-waves", type=int, default=4,
                        help="at most this many waves of those decisions")
    parser.add_argument("--line", choices=tuple(LINES), default="log",
                        help="the scale 90%% of R's gain is read on, which the waves decide "
                             "against (the other is read from the same rounds): log, the "
                             "put-back's, or linear, the bench's before 2026-12-04")
    parser.add_argument("--stamp", default=time.strftime("%Y%m%d%H%M%S"),
                        help="names the studies; the stamp of an interrupted bench resumes it "
                             "(finished trials and rounds are not measured again)")
    parser.add_argument("--at", type=int, default=15,
                        help="also report each method's answer after this many trials")
    parser.add_argument("--serial", action="store_true",
                        help="measure each trial alone (the way before side-by-side trials)")
    args = parser.parse_args()
    answer = ANSWERS[args.answer]
    args.tables = args.tables or answer.tables
    args.rows = args.rows or answer.rows
    args.threads = args.threads or answer.threads
    if args.space == "six" and args.answer != "pool":
        parser.error("--space six is the pool answer's (its knobs are InnoDB's)")
    methods = tuple(m for m in METHODS if m in args.methods.split(","))
    if METHODS[0] not in methods or set(args.methods.split(",")) - set(methods):
        parser.error(f"--methods {args.methods}: {METHODS[0]} alone, or with others of "
                     f"{', '.join(METHODS)}")
    stamp = args.stamp
    lab = bench_lab("tune")  # one dataset for every run; each run is its own study
    space, first_round = search_space(lab, args.space, answer)
    args.budget = args.budget or first_round
    print(f"{len(space)} variables ({args.space}, a knob's followers with it); one-factor's "
          f"first round takes {first_round} trials; budget {args.budget} trials per run; "
          f"stamp {stamp}", flush=True)
    runs: dict[str, list[TuneResult]] = {method: [] for method in methods}
    picks: dict[str, list[list[tuple | None]]] = {method: [] for method in methods}
    duels: list[Duel] = []
    for seed in args.seeds:
        knobs = random.Random(seed).sample(space, len(space))
        turn = seed % len(methods)
        for method in methods[turn:] + methods[:turn]:
            plan = plan_for(f"bench-tune-{stamp}-s{seed}-{method}", args,
                            tune_body(knobs, args))
            settings = TuneSettings.from_plan(dict(plan.tune))
            # only the default method's my.cnf is judged: the others' winners are compared
            # whole, so their knobs are not put back (a put-back takes up to 3 studies of
            # --put-back-time each)
            tuner = Tuner(plan, lab, settings, method, budget=args.budget, seed=seed,
                          put_back=method == METHODS[0],
                          say=lambda m, tag=f"{method} s{seed}": print(f"[{tag}] {m}",
                                                                       flush=True))
            result = tuner.run()
            runs[method].append(result)
            trials = optuna.load_study(study_name=f"{plan.name}:{method}",
                                       storage=f"sqlite:///{lab.db_path}").trials
            picks[method].append(answers(result, trials, tuner.space))
        winners = {m: runs[m][-1] for m in methods if runs[m][-1].best is not None}
        duels.append(head_to_head(lab, f"bench-tune-{stamp}-s{seed}-head-to-head", winners,
                                  args) if METHODS[0] in winners else Duel(None))
    if len(methods) == 1:
        print_alone(args, runs[METHODS[0]])
        return

    keys = distinct_answers(args.seeds, picks, runs)
    print(f"\nre-measuring the {len(keys)} distinct answers of every run, two at a time side "
          f"by side with the defaults, {args.answer_rounds} rounds each", flush=True)
    gains, schedules = answer_gains(lab, stamp, keys, args)
    if not gains or max(v.change for v in gains.values()) <= 0:
        raise SystemExit("no answer of any run re-measured faster than the defaults: there is "
                         "no gain to reach 90% of (see the runs above)")
    line = LINES[args.line]
    reference, decided = first_reached(lab, stamp, picks, gains, line, args)
    best = gains[reference]

    def reached(pick: list[tuple | None], decisions: dict[tuple, Reach] = decided) -> int | None:
        return next((n for n, key in enumerate(pick, 1)
                     if key in decisions and decisions[key].reached), None)

    hows = collections.Counter(r.how for r in decided.values())
    print(f"\n{answer.described}: {args.tables} x {args.rows:,} rows, "
          f"{args.threads} threads, {args.seconds} s per trial "
          f"({'alone' if args.serial else 'side by side with the defaults'}), "
          f"budget {args.budget} trials, {len(space)} variables ({args.space}), seeds "
          f"{', '.join(map(str, args.seeds))}")
    print(f"answers: {len(keys)} distinct, each re-measured with the defaults "
          f"({', '.join(sorted(schedules))}, {args.answer_rounds} rounds); the best, the "
          f"reference R, {best.change:+.1%} {best.interval_text()}: "
          f"{'; '.join(f'{k}={v}' for k, v in reference)}")
    print(f"90% of R's gain on a {line.scale} scale is x{line.kept(best.change):.3g} the "
          f"defaults' throughput: an answer reaches it when it runs at "
          f"{line.against(best.change):+.1%} of R or better, judged paired against R "
          f"({args.reach_rounds} rounds side by side); decided: "
          + ", ".join(f"{n} by {how}" for how, n in hows.items()))
    print(f"{'method':8} {'final: re-measured gain per seed (verdict)':58} {'median':>8} "
          f"{'trials to 90%':>16} {'median':>7} {f'at {args.at}':>8} {'failed':>7} "
          f"{'refused':>8}")
    for method, results in runs.items():
        cells = []
        for r in results:
            v = r.gain_vs_default
            cells.append("-" if v is None else f"{v.change:+.0%} {v.interval_text()} {v.verdict}")
        finals = [r.gain_vs_default.change for r in results if r.gain_vs_default is not None]
        reach = [reached(p) for p in picks[method]]
        at = [answer_gain(gains, p[args.at - 1]) if len(p) >= args.at else math.nan
              for p in picks[method]]
        print(f"{method:8} {' | '.join(cells):58} "
              f"{statistics.median(finals) if finals else math.nan:>+8.1%} "
              f"{','.join(str(n) if n else 'never' for n in reach):>16} "
              f"{statistics.median([n or args.budget + 1 for n in reach]):>7g} "
              f"{median_of_known(at):>+8.1%} "
              f"{sum(t.state == 'failed' for r in results for t in r.trials):>7} "
              f"{sum(t.state == 'refused' for r in results for t in r.trials):>8}")
    print(f"(trials to 90%: the trial, counted from 1, after which the method's answer - its "
          "best figure so far, or the additive search's best-believed setting - reached 90% of "
          f"R's gain, as decided above; 'never' counts as {args.budget + 1} in the median. "
          f"'at {args.at}': the gain over the defaults of the answer after {args.at} trials as "
          "first re-measured, median over seeds. Refusals, which would not fit in memory, cost "
          "nothing and are not counted)")
    print(f"each run's answers, trial by trial ({TRAIL_LEGEND}):")
    for method in methods:
        for seed, pick in zip(args.seeds, picks[method], strict=True):
            n = reached(pick)
            said = "never reached"
            if n:
                reach = decided[pick[n - 1]]
                how = reach.how + (f", {reach.verdict.change:+.1%} "
                                   f"{reach.verdict.interval_text()} against R"
                                   if reach.verdict and reach.how != "first-pass estimate" else "")
                said = f"reached at trial {n} ({how})"
            print(f"  {method:6} seed {seed}: {trail(pick, decided)}  {said}")
    other = next(o for o in LINES.values() if o != line)
    read = read_against(decided, gains, reference, other)
    print(f"on a {other.scale} scale: 90% of R's gain is x{other.kept(best.change):.3g}, an "
          f"answer at {other.against(best.change):+.1%} of R or better; trials to 90%, the same "
          "rounds read against it:")
    for method in methods:
        other_reach = [reached(pick, read) for pick in picks[method]]
        print(f"  {method:6} {','.join(str(n) if n else 'never' for n in other_reach):>16} "
              f"median {statistics.median([n or args.budget + 1 for n in other_reach]):g}; "
              + " | ".join(trail(pick, read) for pick in picks[method]))
    print("each run's time (a resumed run's counts its earlier sessions' trials and checks "
          "as they ran):")
    for method in methods:
        for seed, result in zip(args.seeds, runs[method], strict=True):
            print(f"  {method:6} seed {seed}: {(time_line(result) or ['-'])[0]}")
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
        what = "my.cnf" if method == METHODS[0] else "winner (its knobs not put back)"
        for seed, r in zip(args.seeds, results, strict=True):
            print(f"{method} seed {seed} {what}: {r.mycnf().replace(chr(10), '; ')}")


if __name__ == "__main__":
    run_main(main)
