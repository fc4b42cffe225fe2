"""The final re-measure of `perflab tune`: before the search is believed, its best CANDIDATES
are measured again (with each knob's best reading the search left behind), interleaved with
the defaults (the searched knobs at the server's defaults, the plan's other variables kept) and
the plan's baseline when it sets searched knobs, for as many rounds as the lab's measured noise
needs to resolve the plan's margin. The winner is the best
re-measured one, and every gain is a paired interval with a verdict (one error rate across the
comparisons), instead of the lucky trial's figure.

Then the answer is made clean and explained. Every knob the winner moves is put back to its
default, one at a time (more than MAX_PUT_BACK: in as many groups first), each measured side
by side with the winner (`put_back`): only a knob
whose absence is shown slower stays in the my.cnf, so a knob that rode along with the one that
matters does not. When no absence costs anything, the knobs may stand in for each other: each
is then measured alone against the winner, and one that alone carries the gain is the my.cnf
(else those shown to gain alone over the defaults, together: the query cache's size and type).
A smaller set shown slower than the winner is given each of the others in turn, and the best
that carries the gain is the my.cnf (a pool of threads that pays only beside the query cache).
A my.cnf smaller than the winner is itself measured against the winner before it is given
(two knobs that stand in for each other cost nothing missing alone, their gain together); when
that is left undecided, the knobs with a shown effect are the my.cnf and the others follow as
comments, with the figure. The put-back's studies decide within a budget (tune.put_back_time):
after the rounds the lab's noise plans, they measure on the comparisons still open, so that
fewer answers are left undecided. And the status counters of the re-measure say
what the server did differently under the winner (tune/why.py)."""

from __future__ import annotations

import functools
import math
import statistics
import time
from collections.abc import Callable
from dataclasses import replace

from perflab.domain import Plan, Scalar, ServerConfig
from perflab.lab import Lab
from perflab.output.text import duration
from perflab.running.measurer import Measurer
from perflab.running.runner import Runner
from perflab.say import Say, silent
from perflab.stats.decide import (
    FASTER,
    SLOWER,
    Verdict,
    as_change,
    decide,
    half_width,
)
from perflab.stats.design import Design
from perflab.store import ResultStore, Session, StoredPoint, ok_metrics
from perflab.tune.budget import (
    EARLIER_CHECKS,
    REMEASURE_SHARE,
    CheckEnded,
    CheckInterrupted,
    TuneBudget,
)
from perflab.tune.inert import inert_knobs
from perflab.tune.result import CheckKind, KeptCheck, TrialOutcome, TuneResult, figure, moved
from perflab.tune.settings import Direction, Objective, TuneSettings, better
from perflab.tune.space import folded, setting_key
from perflab.tune.trial import Trials
from perflab.tune.why import explain, summed

CANDIDATES = 3  # the best trials re-measured at the end
MORE_CANDIDATES = 3  # at most this many more: knobs' best readings the search left behind
CLEAR_SDS = 2  # such a reading gains more than this many rounds' noise (and the margin)
# a candidate under the best trial's figure by more than this many rounds' noise (and a clear
# gain) cannot win the re-measure: the best of a dozen readings reads high by about two
CANNOT_WIN_SDS = 4
MAX_PUT_BACK = 8  # more moved knobs than this are not put back one by one (a server each)
# a put-back study with a budget measures at most this many times its planned rounds: 4 times
# halves its intervals; it bounds the looks of one resumed without the pace of its first rounds
MORE_ROUNDS = 5
KEPT = "kept"  # the name of the kept knobs together, measured against the winner
KEEP = 0.95  # a smaller my.cnf keeps this share of the winner's gain (log scale): keep_margin
Variables = tuple[tuple[str, str], ...]


def timed(phase: str) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """An end phase (store, result, ...) whose wall time goes to result.phases[phase]."""
    def wrap(run: Callable[..., None]) -> Callable[..., None]:
        @functools.wraps(run)
        def timed_run(store: ResultStore, result: TuneResult, *args, **kwargs) -> None:
            started = time.monotonic()
            try:
                run(store, result, *args, **kwargs)
            finally:
                result.phases[phase] = time.monotonic() - started
        return timed_run
    return wrap


def check_answer(store: ResultStore, result: TuneResult, plan: Plan, settings: TuneSettings,
                 trials: Trials, lab: Lab, say: Say, allowance: TuneBudget,
                 with_put_back: bool = True) -> None:
    """The end phases, within what the tune's budget leaves them: the re-measure, then (unless
    not `with_put_back`) the put-back; a phase the budget ended before is named in the result
    (`ended`), and the my.cnf says what was decided. Interrupted, it raises CheckInterrupted
    with the result as far as it was decided, `ended` naming the phase."""
    left = allowance.start_checking()
    say(f"checking the answer: {duration(left)} of the budget left for the re-measure and the "
        "put-back (a study stored by an earlier run is charged its time as it is read back)")
    phase = "the re-measure"
    try:
        remeasure(store, result, plan, settings, trials.variables, trials.round_sd, lab, say,
                  allowance)
        phase = "the put-back"
        if with_put_back:
            put_back(store, result, plan, settings, trials.variables, lab, say, allowance)
    except CheckEnded as ended:
        result.ended = f"the tune's budget ended before {ended} (perflab tune --time for more)"
        say(f"the budget ended before {ended}: the my.cnf says what was decided")
    except KeyboardInterrupt as stop:
        result.ended = f"the tune was interrupted in {phase} (run the same command to resume)"
        result.seconds = allowance.spent()
        raise CheckInterrupted(result) from stop
    finally:
        if allowance.earlier_checks:  # a resumed tune's, in the time line
            result.phases[EARLIER_CHECKS] = allowance.earlier_checks


def check_study(plan: Plan, result: TuneResult, kind: str, budget: float = 0.0) -> str:
    """The name of an end phase's study (`kind`): named after the trial count, so that a longer
    resumed search checks its answer afresh, and after its `budget` when it has one, since a
    study decides within the looks its first run fitted."""
    return f"{plan.name}:{result.method}:{kind}@{len(result.trials)}" + (
        f"~{budget:g}s" if budget else "")


@timed("re-measure")
def remeasure(store: ResultStore, result: TuneResult, plan: Plan, settings: TuneSettings,
              variables: Callable[[dict], Variables], round_sd: float, lab: Lab,
              say: Say, allowance: TuneBudget) -> None:
    """Re-measure `result`'s candidates and record what was found in it: the re-measured
    figures, each candidate's verdict against the defaults, and the winner with its gains.
    `variables`: a trial's server variables, from its params; `round_sd`: the round's noise
    the search judged its readings by (a knob's reading is clear beyond CLEAR_SDS of it);
    `allowance`: the tune's budget, which stops it once it has tune.final_rounds rounds."""
    clear = max(plan.run.margin, math.expm1(CLEAR_SDS * round_sd))
    candidates = _contenders(result, settings.direction, clear, round_sd, say)
    baseline = plan.config(plan.baseline)
    default = replace(baseline, name="default", variables=unsearched(baseline, result))
    with_baseline = baseline.variables != default.variables  # it sets a searched knob
    configs = [default] + ([replace(baseline, name="baseline")] if with_baseline else []) + [
        replace(baseline, name=f"trial-{t.number}", variables=variables(t.params))
        for t in candidates]
    cells = len(candidates) * (len(configs) - len(candidates))
    study = check_study(plan, result, "final")
    on = _looks_on(store, study, plan, settings) and not with_baseline
    by_round = _side_by_side(
        store, plan, study, configs, "default", cells, settings, lab, say,
        lambda rounds, why: f"re-measuring the {len(candidates)} best trial(s) with the defaults"
        f"{' and the baseline' if with_baseline else ''}, side by side: "
        f"{rounds} rounds ({why})" + (
            f", then on for the comparisons still open, up to {settings.final_max_rounds}"
            if on else ""), allowance, "the re-measure",
        at_least=settings.final_rounds, share=REMEASURE_SHARE, budget=math.inf if on else 0.0,
        rounds=(settings.final_rounds, settings.final_max_rounds) if on else None)
    result.final = _scores(by_round, plan, settings)
    comparisons = {
        (trial.number, base): _gains(settings.direction, result.final.get(base, {}),
                                     result.final.get(f"trial-{trial.number}", {}))
        for trial in candidates for base in ("default", "baseline") if base in result.final}
    design = store.design(study)  # as the run froze it
    verdicts = decide(comparisons, design)
    result.candidates = {trial.number: verdicts.get((trial.number, "default"))
                         for trial in candidates}
    result.under_floor = _under_floor(by_round, candidates, settings.min_qps,
                                      len(plan.run.threads), design.first_look)
    if result.under_floor:
        say(f"not given, under the throughput floor (tune.min_qps = {settings.min_qps:g}) in "
            "the re-measure: " + ", ".join(f"trial {n} ({qps:,.0f} qps)"
                                           for n, qps in result.under_floor.items()))
    winner = re_measured_winner(result.candidates, result.under_floor)
    if winner is None and result.under_floor:
        result.kept = []  # every candidate measured fell under the floor: nothing to give
    if winner is not None:
        assert result.best is not None, "re-measured after a search with a best trial"
        result.searched_best = result.best.number
        result.best = next(t for t in candidates if t.number == winner)
        result.gain_vs_default = verdicts.get((winner, "default"))
        result.gain_vs_baseline = verdicts.get((winner, "baseline"))
        if result.gain_vs_default is not None and result.gain_vs_default.verdict == FASTER:

            def counters(config: str) -> dict[str, float]:
                return summed(p.status_delta for points in by_round.get(config, {}).values()
                              for p in points)

            result.why = explain(counters("default"), counters(f"trial-{winner}")).lines()


def re_measured_winner(verdicts: dict[int, Verdict | None], under_floor: dict[int, float]
                       ) -> int | None:
    """The re-measured candidate to give: the largest gain among those shown faster than the
    defaults, else the largest gain (whose verdict then gives nothing); None when no candidate
    has a figure above the floor. Shown faster first: a larger estimate left inconclusive by its
    rounds would otherwise hide a candidate shown faster, and the tune would give nothing."""
    figures = {n: v for n, v in verdicts.items()
               if v is not None and math.isfinite(v.change) and n not in under_floor}
    among = {n: v for n, v in figures.items() if v.verdict == FASTER} or figures
    return max(among, key=lambda n: among[n].change) if among else None


def _under_floor(by_round: dict[str, dict[int, list[StoredPoint]]],
                 candidates: list[TrialOutcome], floor: float, threads: int,
                 planned: int) -> dict[int, float]:
    """The candidates whose throughput in the re-measure (each round's lowest over the
    `threads` thread counts, the median over the rounds it was measured in) fell under
    `floor` (tune.min_qps), with that figure: a trial is held to the floor on its one reading,
    and its recommendation on the re-measure's rounds, so that a latency won by serving less
    is not given. A thread count with no point in a round it was asked for (failed, or no
    query finished: not in `by_round`) counts as 0 there; it was asked for every `planned`
    round, and for a later one where it has a point (past them, the rounds measure only the
    comparisons still open: a x500 winner decided at round 3 is not in round 12)."""
    if not floor:
        return {}
    rounds = sorted({r for measured in by_round.values() for r in measured})
    under = {}
    for trial in candidates:
        own = by_round.get(f"trial-{trial.number}", {})
        lowest = [min(ok_metrics(p).qps for p in own[r]) if len(own.get(r, ())) == threads
                  else 0.0 for r in rounds if r <= planned or r in own]
        median = statistics.median(lowest) if lowest else math.inf
        if median < floor:
            under[trial.number] = median
    return under


def unsearched(baseline: ServerConfig, result: TuneResult) -> tuple[tuple[str, Scalar], ...]:
    """The baseline's server variables that are not searched (nor a knob's follower): what
    "the defaults" keep, since the plan sets them for its workload to run as it should
    (max_connections for its thread counts) and every trial ran with them."""
    return tuple((name, value) for name, value in baseline.variables
                 if name not in result.defaults)


@timed("put-back")
def put_back(store: ResultStore, result: TuneResult, plan: Plan, settings: TuneSettings,
             variables: Callable[[dict], Variables], lab: Lab, say: Say,
             allowance: TuneBudget) -> None:
    """Keep in the winner only the knobs whose own effect is shown: first the knobs that cannot
    act beside its other settings are left out (tune/inert.py); then the smallest my.cnf the
    search points at is measured against the winner (`_smallest_first`); when it does not
    carry the gain, the knobs are put back one at a time beside the winner and, when that
    cannot split them, measured alone (`choose_kept`); more than MAX_PUT_BACK are first put
    back in MAX_PUT_BACK groups (`_groups_that_cost`). A lone moved knob's effect is the
    winner's own gain. When the tune's budget (`allowance`) ends before a study, or the tune
    is interrupted, the winner's knobs stay, less the inert ones (the exception goes on to
    the caller)."""
    if result.best is None or result.gain_vs_default is None:
        return
    if result.gain_vs_default.verdict != FASTER:
        result.kept = []  # not shown better than the defaults: nothing to recommend
        return
    baseline = plan.config(plan.baseline)
    changed = moved(result.best.params, result.defaults)
    inert = inert_knobs(changed, result.defaults, dict(baseline.variables))
    if inert:
        say("left out of the my.cnf before measuring, they cannot act beside the winner's other "
            "settings: " + "; ".join(f"{name} ({why})" for name, why in sorted(inert.items())))
    # a knob's followers go and come back with it (`whole` sets them): the put-back's units.
    # With max_heap_table_size put back apart, a winner's raised tmp_table_size kept 16 MiB as
    # its limit, and the kept set lost the whole gain (bench/tune tmp-table, seed 2, 2026-11-28)
    followers = folded(result.defaults)
    knobs = sorted(name for name in changed if name not in inert and name not in followers)
    if len(knobs) < 2:
        result.kept = with_followers(knobs, changed, followers)
        return
    params = {name: value for name, value in result.best.params.items()
              if name not in inert and name not in followers}
    if settings.put_back_time and not put_back_budget(plan, settings):
        say("the put-back measures the rounds the noise plans, no more: rounds added within "
            "tune.put_back_time decide each thread count's throughput on its own, and this "
            f"tune judges {settings.objective} over {len(plan.run.threads)} thread count(s)")

    gain_low = result.gain_vs_default.low
    result.keep_margin = keep_margin(plan.run.margin, gain_low)

    def measure(kind: CheckKind, others: dict[str, dict], saying: str) -> tuple[dict[str, Verdict],
                                                                         float]:
        effects, design = _against_winner(store, result, plan, settings, variables, lab, say,
                                          params, kind, others, saying, allowance)
        return effects, keep_margin(design.margin, gain_low)

    try:
        if not _smallest_first(result, params, knobs, measure, say):
            choose_kept(result, params, knobs, measure, say)
    except (CheckEnded, KeyboardInterrupt):  # not reduced: the winner's, less the inert knobs
        result.kept, result.unproven = with_followers(knobs, changed, followers), []
        raise
    dropped = [name for name in knobs
               if name not in (result.kept or ()) and name not in result.unproven]
    result.kept = with_followers(result.kept or [], changed, followers)
    result.unproven = with_followers(result.unproven, changed, followers)
    if dropped:
        say(f"left out of the my.cnf, no effect of their own shown: {', '.join(dropped)}")


# a study of settings side by side with the winner: (its kind, {name: setting}, what to say) ->
# each name's verdict against the winner, and the study's margin
Measure = Callable[[CheckKind, dict[str, dict], str], tuple[dict[str, Verdict], float]]


def _smallest_first(result: TuneResult, params: dict, knobs: list[str], measure: Measure,
                    say: Say) -> bool:
    """The smallest my.cnf the search points at, before any knob is put back: the two knobs
    whose winning values the trials most set apart (`by_the_trials`), each alone, side by side
    with the winner in one study; of three or more moved, the two together in a second one,
    only once each alone is shown slower (measured in the first, its rounds went on for a
    question already answered: 10 of 16 rounds on the held-out MyISAM join, where the query
    cache alone carried the gain at round 6). When the gain is carried by one or two knobs
    (the query cache's, among 19 a screening group moved), the rest is settled here instead of
    one comparison a knob. The smallest set carrying the gain (`sufficient`: a non-inferiority
    test against the winner; the first-ranked first) is the my.cnf:
    True, result.kept set. False, nothing decided, without trials to rank by or when no
    set carries it."""
    assert result.gain_vs_default is not None and result.best is not None
    ranked = by_the_trials(result, knobs)[:2]
    if not ranked:
        return False
    alone = {"first": ranked[:1], "second": ranked[1:]} if len(ranked) > 1 else {"first": ranked}
    effects, margin = measure(
        CheckKind.SMALLEST, {name: {k: params[k] for k in members}
                             for name, members in alone.items()},
        f"the smallest my.cnf first: the search's {len(ranked)} most important knob(s) "
        f"({', '.join(ranked)}) alone, side by side with the winner")
    if _carried(result, alone, effects, margin, CheckKind.SMALLEST, knobs, say):
        return True
    # the two together only once each alone is shown slower: a knob alone left undecided
    # is the put-back's to decide (its check gives the others as comments then)
    if len(alone) > 1 and len(knobs) > 2 and all(v.verdict == SLOWER for v in effects.values()):
        both = {"both": ranked}
        effects, margin = measure(
            CheckKind.SMALLEST_BOTH, {"both": {k: params[k] for k in ranked}},
            f"each alone shown slower than the winner: {' and '.join(ranked)} together, side "
            "by side with the winner")
        if _carried(result, both, effects, margin, CheckKind.SMALLEST_BOTH, knobs, say):
            return True
    say("the search's most important knob(s) do not carry the winner's gain alone: the "
        "knobs are put back")
    return False


def _carried(result: TuneResult, sets: dict[str, list[str]], effects: dict[str, Verdict],
             margin: float, kind: CheckKind, knobs: list[str], say: Say) -> bool:
    """Whether one of `sets` (in order) carries the winner's gain (`sufficient`): then it is
    the my.cnf (result.kept), checked by that study (`kind`)."""
    assert result.gain_vs_default is not None
    for name, members in sets.items():
        if sufficient({name: effects[name]}, margin, result.gain_vs_default.low):
            result.kept = sorted(members)
            result.kept_checks.append(KeptCheck(kind, tuple(result.kept), effects[name]))
            say(f"{', '.join(result.kept)} carry the winner's gain without its other "
                f"{len(knobs) - len(members)} knob(s) ({_against(effects[name], margin)})")
            return True
    return False


def by_the_trials(result: TuneResult, knobs: list[str]) -> list[str]:
    """The winner's `knobs` ranked by what the trials say of each: the mean log figure of the
    ok trials that ran the knob as the winner did (`_as_won`), less that of those that did not
    (a gain for the direction); the largest contrast first, knobs without trials on both sides
    left out. Optuna's importance answers another question, which values spread the figures,
    and with a dozen trials it ranked an inert thread_pool_size first and the query cache,
    which carried a x440 gain, 16th of 19 (bench/heldout/tune_myisam_join.toml, 2026-12-02)."""
    assert result.best is not None
    sign = 1.0 if result.direction == Direction.MAXIMIZE else -1.0
    ok = [(t.params, math.log(t.value)) for t in result.trials
          if t.value is not None and t.value > 0]
    contrasts = {}
    for knob in knobs:
        won, default = result.best.params.get(knob), result.defaults.get(knob)
        sides = [(_as_won(params.get(knob), won, default), value) for params, value in ok]
        at = [value for as_won, value in sides if as_won]
        off = [value for as_won, value in sides if not as_won]
        if at and off:
            contrasts[knob] = sign * (statistics.fmean(at) - statistics.fmean(off))
    return sorted(contrasts, key=lambda k: -contrasts[k])


def _as_won(value: Scalar | None, won: Scalar | None, default: str | None) -> bool:
    """Whether a trial ran a knob as the winner did: at its value, or, a number, on the same
    side of the server's default. Once the search finds a size's side it refines it, and exact
    values credit the gain to the knobs that stayed put beside it: tmp_table_size at 34 and
    59 MB both lift a 24 MB table into memory, and ranked by the winner's 59 MB alone it came
    after two knobs its screening group had moved with it (bench/tune tmp-table, seed 3)."""
    if str(value) == str(won):
        return True
    try:
        here, there, start = float(str(value)), float(str(won)), float(str(default))
    except ValueError:  # a choice, or a knob without a numeric default
        return False
    return here != start != there and (here > start) == (there > start)


def choose_kept(result: TuneResult, params: dict, knobs: list[str], measure: Measure,
                say: Say) -> None:
    """The put-back's decisions over the winner's `knobs` (two or more), measured by `measure`:
    each put back alone (more than MAX_PUT_BACK: only those of the groups whose absence costs,
    `_groups_that_cost`; when none costs, every knob stays); a knob stays when the winner
    without it is slower by more than the margin. None stays: each of those alone against the
    winner (`_none_needed`). Fewer than every knob stay: those
    together are checked against the winner (`_check_kept`). Where neither gives a smaller
    my.cnf, the knobs of the groups that cost, together, are checked the same way, then every
    knob stays (`_groups_or_all`). Sets result.kept and the effects measured on the way."""
    assert result.gain_vs_default is not None
    candidates = knobs
    if len(knobs) > MAX_PUT_BACK:
        candidates = _groups_that_cost(result, params, knobs, measure)
        if not candidates:
            say(f"no group's absence cost the winner anything: the my.cnf keeps all "
                f"{len(knobs)} knobs (more than the {MAX_PUT_BACK} measured one at a time, a "
                "server each)")
            result.kept = list(knobs)
            return
    effects, margin = measure(
        CheckKind.PUT_BACK, {name: {k: v for k, v in params.items() if k != name}
                     for name in candidates},
        f"putting back each of the winner's {len(candidates)} moved knobs alone, side by side "
        "with the winner" + ("" if candidates == knobs else
                             f" (of its {len(knobs)}: those of the groups that cost)"))
    result.knob_effects = effects
    result.kept = [name for name in candidates if _costs(effects[name], margin)]
    if not result.kept:  # no knob is needed: knobs that stand in for each other, or no effect
        _none_needed(result, params, knobs, candidates, measure, say)
    elif len(result.kept) < len(knobs) and \
            not _check_kept(result, params, knobs, measure, say, CheckKind.TOGETHER) and \
            not _one_more(result, params, knobs, measure, say):
        _groups_or_all(result, params, knobs, candidates, measure, say,
                       "the kept knob(s) without the others do not carry the winner's gain")


def _none_needed(result: TuneResult, params: dict, knobs: list[str], candidates: list[str],
                 measure: Measure, say: Say) -> None:
    """No knob's absence costs the winner anything (stand-ins for each other, or no effect):
    each alone against the winner, and one that carries the gain alone is the my.cnf. Else
    the knobs shown to gain alone over the defaults (`_gaining_alone`), together, are checked
    against the winner like the kept ones (one such knob: by its figure alone); else
    `_groups_or_all`."""
    assert result.gain_vs_default is not None
    result.alone_effects, margin = measure(
        CheckKind.ALONE, {name: {name: params[name]} for name in candidates},
        f"no knob's absence cost the winner anything: each of its {len(candidates)} knobs "
        "alone, side by side with the winner")
    alone = sufficient(result.alone_effects, margin, result.gain_vs_default.low)
    if alone is not None:
        say(f"{alone} alone carries the winner's gain (its setting alone against the "
            f"winner: {_against(result.alone_effects[alone], margin)})")
        result.kept = [alone]
    else:  # stand-ins that each fall short, small effects that add up, wide intervals
        why = "no knob alone was shown to carry the winner's gain, and none missing alone " \
              "cost it anything"
        gaining = _gaining_alone(result.alone_effects, result.gain_vs_default.low)
        if gaining and len(gaining) < len(knobs):
            say(f"{why}: the knob(s) shown to gain alone over the defaults, "
                + (f"{gaining[0]}, by its figure alone" if len(gaining) == 1 else
                   f"{', '.join(gaining)}, together"))
            result.kept = gaining
            if len(gaining) == 1:  # measured already: its verdict alone
                kept_enough = _judge_kept(result, knobs, CheckKind.ALONE,
                                          result.alone_effects[gaining[0]], margin, say)
            else:
                kept_enough = _check_kept(result, params, knobs, measure, say,
                                          CheckKind.TOGETHER_ALONE)
            if kept_enough or _one_more(result, params, knobs, measure, say):
                return
            why = "nor do the knobs shown to gain alone"
        _groups_or_all(result, params, knobs, candidates, measure, say, why)


def _groups_or_all(result: TuneResult, params: dict, knobs: list[str], candidates: list[str],
                   measure: Measure, say: Say, why: str) -> None:
    """No smaller set was shown to carry the winner's gain: when its knobs were put back in
    groups first, the knobs of the groups that cost (`candidates`), together, are the next
    suspects (a group's cost may be its knobs' together), checked against the winner like the
    kept ones; else, or when they do not carry it either, every knob stays."""
    if len(candidates) < len(knobs) and set(candidates) != set(result.kept or ()):
        say(f"{why}: the {len(candidates)} knob(s) of the groups that cost, together")
        result.kept = list(candidates)
        if _check_kept(result, params, knobs, measure, say, CheckKind.TOGETHER_GROUPS):
            return
        why = "nor do the knobs of the groups that cost"
    say(f"{why}: the my.cnf keeps all {len(knobs)}")
    result.kept = list(knobs)


def _groups_that_cost(result: TuneResult, params: dict, knobs: list[str],
                      measure: Measure) -> list[str]:
    """More moved knobs than MAX_PUT_BACK servers side by side: put back in MAX_PUT_BACK groups
    of neighbours in name order (a feature's knobs share a prefix, so knobs that stand in for
    each other, query_cache_type and query_cache_size, mostly share a group), each group's
    absence measured against the winner for the rounds the noise plans (a screen: no
    tune.put_back_time). The knobs of the groups whose absence is shown to cost, to be put
    back one at a time; a group not shown to cost has no effect shown, and its knobs leave the
    my.cnf unless the check of the kept ones together says otherwise."""
    n = len(knobs)
    groups = {f"group{i + 1}": knobs[i * n // MAX_PUT_BACK:(i + 1) * n // MAX_PUT_BACK]
              for i in range(MAX_PUT_BACK)}  # of sizes within one of each other
    effects, margin = measure(
        CheckKind.GROUPS, {name: {k: v for k, v in params.items() if k not in members}
                   for name, members in groups.items()},
        f"the winner moves {len(knobs)} knobs, more than the {MAX_PUT_BACK} put back one at a "
        f"time (a server each): putting back {len(groups)} groups of "
        f"{' or '.join(str(k) for k in sorted({len(m) for m in groups.values()}))} first, side "
        "by side with the winner")
    result.group_effects = {tuple(groups[name]): effect for name, effect in effects.items()}
    return [knob for name, members in groups.items() if _costs(effects[name], margin)
            for knob in members]


def _check_kept(result: TuneResult, params: dict, knobs: list[str], measure: Measure,
                say: Say, kind: CheckKind) -> bool:
    """The kept knobs together, without the ones left out, side by side with the winner (a
    study of `kind`): each left-out knob was measured missing alone, and two that stand in for
    each other each cost nothing alone but their gain together. The my.cnf keeps the smaller
    set when it carries the winner's gain (`sufficient`); when neither that nor its loss is
    shown (inconclusive, or equivalent to a winner whose own gain is too small to show the set
    keeps one), the smaller set, the others given as comments with the figure (`unproven`):
    no effect of theirs is shown, and a my.cnf's lines in force are those shown to matter.
    False, result.kept left to the caller, when the set is shown slower than the winner (the
    others' effect together is then shown) or was not measured (its points failed)."""
    assert result.kept is not None and result.gain_vs_default is not None
    kept = result.kept
    effects, margin = measure(
        kind, {KEPT: {name: params[name] for name in kept}},
        f"the {len(kept)} knob(s) kept ({', '.join(kept)}) without the "
        f"{len(knobs) - len(kept)} left out, side by side with the winner")
    return _judge_kept(result, knobs, kind, effects[KEPT], margin, say)


def _one_more(result: TuneResult, params: dict, knobs: list[str], measure: Measure,
              say: Say) -> bool:
    """The kept knobs were shown slower than the winner: the others' effect together is shown,
    not which of them has it. Each of the others added to the kept ones, side by side with the
    winner (a study of kind "plus-one"): the best that carries the gain (`sufficient`) is the
    my.cnf. A pool of threads gains nothing alone, and about 7% once the query cache serves
    50,000 statements a second (bench/tune query-cache, seed 4). False,
    result.kept left to the caller, when none carries it, when the last check was not shown
    slower, or when the others are fewer than two (the winner itself) or more than
    MAX_PUT_BACK."""
    assert result.kept is not None and result.gain_vs_default is not None
    kept = list(result.kept)
    rest = [name for name in knobs if name not in kept]
    if not 2 <= len(rest) <= MAX_PUT_BACK or result.kept_checks[-1].effect.verdict != SLOWER:
        return False
    effects, margin = measure(
        CheckKind.PLUS_ONE, {name: {k: params[k] for k in (*kept, name)} for name in rest},
        f"the {len(kept)} kept knob(s) ({', '.join(kept)}) were shown slower than the winner: "
        f"each of the {len(rest)} others added to them, side by side with the winner")
    result.plus_one_effects = effects
    best = sufficient(effects, margin, result.gain_vs_default.low)
    if best is None:
        say("no one knob added to the kept ones was shown to carry the winner's gain")
        return False
    result.kept = sorted((*kept, best))
    result.kept_checks.append(KeptCheck(CheckKind.PLUS_ONE, tuple(result.kept), effects[best]))
    say(f"the kept knob(s) with {best} carry the winner's gain without the others "
        f"({_against(effects[best], margin)})")
    return True


def _judge_kept(result: TuneResult, knobs: list[str], kind: CheckKind, effect: Verdict,
                margin: float, say: Say) -> bool:
    """_check_kept's decision on the kept knobs' verdict against the winner (`effect`)."""
    assert result.kept is not None and result.gain_vs_default is not None
    kept = result.kept
    result.kept_checks.append(KeptCheck(kind, tuple(kept), effect))
    against = _said(effect)
    if sufficient({KEPT: effect}, margin, result.gain_vs_default.low) is not None:
        say(f"the kept knob(s) carry the winner's gain without the others "
            f"({_against(effect, margin)})")
        return True
    if effect.verdict == SLOWER or math.isnan(effect.low):
        why = "were shown slower than the winner" if effect.verdict == SLOWER else \
            "could not be measured against the winner (their points failed)"
        say(f"the kept knob(s) without the others {why} ({against})")
        return False
    result.unproven = [name for name in knobs if name not in kept]
    say(f"the kept knob(s) without the others were not shown to carry the winner's gain, nor "
        f"to lose it ({against}; more rounds may decide it: tune.put_back_time): the my.cnf "
        f"gives the {len(kept)} with a shown effect, and the {len(result.unproven)} others as "
        "comments")
    return True


def _gaining_alone(alone: dict[str, Verdict], gain_low: float) -> list[str]:
    """The knobs whose setting alone, against the winner, is shown to keep a gain over the
    defaults (`sufficient`'s test without its margin): the knobs with an effect of their own
    shown when none alone carries the whole gain. Two stand-ins for one feature each keep
    most of it alone (the query cache's size and type, each about -6% against the winner, which
    gained x200, in bench/tune query-cache seed 4, 2026-11-28), the winner's other knobs
    alone none of it."""
    return sorted(name for name, v in alone.items() if _keeps_a_gain(v, gain_low))


def _keeps_a_gain(effect: Verdict, gain_low: float) -> bool:
    """Whether a setting's interval against the winner stays above what the winner's own gain
    over the defaults (`gain_low` at the least) would lose: it keeps a gain of its own."""
    return effect.low > 1 / (1 + gain_low) - 1


def _costs(effect: Verdict, margin: float) -> bool:
    """Whether a setting measured against the winner is shown to lose more than the margin
    could call negligible: what keeps a knob whose absence it is in the my.cnf."""
    return effect.verdict == SLOWER and not effect.within(margin)


def _said(effect: Verdict) -> str:
    """A setting's verdict against the winner, in words."""
    return f"{effect.verdict}, {effect.change:+.1%} {effect.interval_text()} against the winner"


def _against(effect: Verdict, margin: float) -> str:
    """A setting's verdict against the winner, in words, with why it carries the gain."""
    said = _said(effect)
    if effect.verdict == SLOWER:
        return f"{said}: within the ±{margin:.0%} margin"
    if not effect.decided:
        return f"{said}: it rules out losing more than {margin:.0%}"
    return said


def _looks_on(store: ResultStore, study: str, plan: Plan, settings: TuneSettings) -> bool:
    """Whether the re-measure (`study`) looks after each round past tune.final_rounds and
    stops once every candidate's gain is known against the margin: where its rounds'
    comparisons are the tune's own (`decides_by_rounds`). A x500 query cache was decided in
    three rounds, and the nine more its noise planned took a third of the checks' budget
    (bench/heldout/tune_myisam_join.toml, 2026-12-07). A re-measure an earlier run began
    with fixed rounds keeps them, its design frozen at its first run: one begun with looks
    has its first at tune.final_rounds (the rounds of two fixed runs merge into looks too)."""
    stored = store.design_of(study)
    return decides_by_rounds(plan, settings) and (
        stored is None or (stored.sequential and stored.first_look == settings.final_rounds))


def put_back_budget(plan: Plan, settings: TuneSettings) -> float:
    """The seconds a put-back study measures on after its planned rounds: tune.put_back_time
    when its rounds' comparisons are its own (`decides_by_rounds`); else none."""
    return settings.put_back_time if decides_by_rounds(plan, settings) else 0.0


def decides_by_rounds(plan: Plan, settings: TuneSettings) -> bool:
    """Whether an end phase's comparisons are the round policy's, one per setting: the
    throughput objective at one thread count. The round policy decides each thread count's
    throughput on its own, where the end phases judge one score over every thread count, and
    rounds added for some of them would be left out of it."""
    return settings.objective == Objective.THROUGHPUT and len(plan.run.threads) == 1


def _against_winner(store: ResultStore, result: TuneResult, plan: Plan, settings: TuneSettings,
                    variables: Callable[[dict], Variables], lab: Lab, say: Say, params: dict,
                    kind: CheckKind, others: dict[str, dict], saying: str,
                    allowance: TuneBudget
                    ) -> tuple[dict[str, Verdict], Design]:
    """The winner (`params`) and, per knob, another setting (`others`), side by side in a study
    of their own (`kind`): each knob's verdict against the winner, and the study's design."""
    baseline = plan.config(plan.baseline)

    def config(name: str, setting: dict) -> ServerConfig:
        return replace(baseline, name=name, variables=variables(whole(result.defaults, setting)))

    prefix = {CheckKind.PUT_BACK: "without", CheckKind.GROUPS: "without",
              CheckKind.PLUS_ONE: "kept-and"}.get(kind, "only")  # their names
    configs = [config("winner", params)] + [config(f"{prefix}-{name}", setting)
                                            for name, setting in others.items()]
    # the groups are a screen: a group whose cost the planned rounds leave unclear leaves the
    # one-at-a-time put-back, and the kept knobs' check, which has the budget, guards its knobs
    budget = put_back_budget(plan, settings) if kind != CheckKind.GROUPS else 0.0
    study = check_study(plan, result, kind, budget)
    # judged at the put-back's margin (keep_margin), one-sided: every decision on a setting
    # against the winner (`sufficient`, `_costs`) asks only whether it loses more than that
    # margin, so its rounds go on until that is known, not until its gain's size is
    judged = replace(plan, run=replace(plan.run, margin=result.keep_margin or plan.run.margin,
                                       one_sided=True))
    by_round = _side_by_side(store, judged, study, configs, "winner", len(others), settings, lab,
                             say, lambda rounds, why: f"{saying}: {rounds} rounds ({why})"
                             + (f", then on for the comparisons still open, for {budget:g} s "
                                "at most" if budget else ""), allowance, f"the {kind} study",
                             budget=budget)
    scores = _scores(by_round, plan, settings)
    comparisons = {name: _gains(settings.direction, scores.get("winner", {}),
                                scores.get(f"{prefix}-{name}", {})) for name in others}
    design = store.design(study)  # as the run froze it
    return decide(comparisons, design), design


def whole(defaults: dict[str, str | None], setting: dict) -> dict:
    """A put-back's `setting` over every searched knob: the knobs it names at its values, every
    other at the server's startup value (`defaults`), as the trials and the re-measure run
    them, a knob's followers at its value (Space.within). A knob the plan's baseline sets and
    the setting leaves out so runs unset, at the server's default, not at the baseline's value
    (trial.server_variables), and the my.cnf says so (TuneResult.mycnf); so does a knob
    without a startup value (a choice whose default is NULL), which is left out here."""
    out = {**{name: value for name, value in defaults.items() if value is not None}, **setting}
    for follower, leader in folded(defaults).items():
        if leader in out:
            out[follower] = out[leader]
    return out


def with_followers(knobs: list[str], changed: dict[str, str],
                   followers: dict[str, str]) -> list[str]:
    """`knobs` and the moved followers of each, in name order: the my.cnf's lines for them."""
    return sorted({*knobs, *(f for f, leader in followers.items()
                             if leader in knobs and f in changed)})


def keep_margin(margin: float, gain_low: float) -> float:
    """The put-back's margin against the winner: a smaller my.cnf may lose what keeps KEEP of
    the winner's gain over the defaults on a log scale (from the gain's low end), or the
    plan's `margin` when that is wider. "Does the smaller my.cnf keep the gain?" is another
    question for a x400 gain than for a 20% one: with the plan's ±5%, the query cache alone
    against a x420 winner read -1.5% [-10.5%, +8.3%] after 30 rounds and was not given
    (bench/heldout/tune_myisam_join.toml, 2026-12-02); keeping 95% of x300 allows -25%."""
    if not gain_low > 0:
        return margin
    return max(margin, 1 - (1 + gain_low) ** -(1 - KEEP))


def sufficient(effects: dict[str, Verdict], margin: float, gain_low: float) -> str | None:
    """The setting (a knob alone, or the kept knobs together) that carries the winner's gain:
    shown no slower than the winner by more than the margin, and keeping a gain over the
    defaults (its interval against the winner above what the winner's gain, `gain_low` at the
    least, would lose: a knob that does nothing is no slower than a winner that barely
    gained); the best estimate of those, None when none is shown to carry it.

    "No slower by more than the margin" is one-sided: equivalent, faster, slower by less than
    the margin, or an interval whose low end is above -margin whatever its high end (an
    interval of [-4%, +7%] rules out losing 5%; that it does not rule out gaining 7% is no
    reason to keep the winner's other knobs). The low end of the family's two-sided interval
    keeps the error rate at half the family's. Inconclusive otherwise is not enough: a setting
    that may lose a real part of the gain is not given in place of the winner."""
    enough = [name for name, v in effects.items() if _keeps_a_gain(v, gain_low) and (
        v.low > -margin or (v.decided and not _costs(v, margin)))]
    return max(enough, key=lambda name: effects[name].change) if enough else None


def _side_by_side(store: ResultStore, plan: Plan, name: str, configs: list[ServerConfig],
                  baseline: str, cells: int, settings: TuneSettings, lab: Lab, say: Say,
                  saying: Callable[[int, str], str], allowance: TuneBudget, what: str, *,
                  budget: float = 0.0, at_least: int = 2, share: float = 1.0,
                  rounds: tuple[int, int] | None = None
                  ) -> dict[str, dict[int, list[StoredPoint]]]:
    """`configs` measured in a study of their own, `name`, on the plan's workload, for the
    rounds the lab's noise needs for `cells` comparisons with `baseline` (or `rounds`: the
    planned and the most), announced by `saying` (from the rounds and why), then with a
    `budget` (seconds; math.inf: what the allowance leaves it) on for the comparisons those
    left open, as `perflab run` decides within run.time; its successful points (where
    queries finished): config -> round -> points. The tune's `allowance` (`share` of what is
    left of it) stops it once it has `at_least` rounds (an interval needs two), and
    CheckEnded names `what` when none of it is left before the study starts."""
    allowance.before_study(what, at_least * len(configs) * len(plan.run.threads))
    measured = replace(plan, name=name, configs=tuple(configs), baseline=baseline)
    definitions = [measured.config_hash(c) for c in measured.configs]
    # what earlier runs spent on it: a resumed study ends where its share of the budget did
    # in the first run (its own budget, run.time, takes off its own spend: runner.Budget)
    began, began_at = time.monotonic(), time.time()
    before = spent_before(store.sessions(name), store.points(name, definitions), began_at)
    deadline, stop_at = allowance.until(share), allowance.until(share, before)
    left = math.inf if deadline is None else max(0.0, deadline - began)
    on_for = min(budget, left)
    if not (math.isfinite(on_for) and on_for > 0):  # nothing to go on with: planned rounds
        on_for, rounds = 0.0, None
    measured = replace(measured, run=replace(measured.run, time=on_for))
    sd, noise = Measurer(measured, lab, store, silent).noise()
    if rounds is None:
        planned, why = _rounds(sd, cells, plan, settings)
        most = MORE_ROUNDS * planned
    else:
        (planned, most), why = rounds, ""
    why = f"noise {sd:.1%} per round, {noise}{why}"
    measured = replace(measured, run=replace(measured.run, rounds=planned, max_rounds=most))
    say(saying(planned, why) + (f"; {duration(max(0.0, stop_at - time.monotonic()))} of the "
                               "tune's budget for it" if stop_at is not None else ""))
    # its comparisons were chosen for their effects (a knob whose absence turns the query
    # cache off drifts x200 over its rounds): their spread is not the lab's noise, and stored,
    # it set a lag-1 allowance of 0.98 for every later study in the lab
    Runner(measured, lab, store, say, budget_after_planned=True, noise_source=None,
           stop_at=stop_at, at_least=at_least).run()
    points = store.points(name, definitions)
    if before:
        allowance.replayed(before)
        say(f"{what}: {duration(before)} of the tune's budget spent on it by earlier runs, "
            f"{duration(allowance.left())} left")
    allowance.paced(time.monotonic() - began + before, len(points))
    by_round: dict[str, dict[int, list[StoredPoint]]] = {}
    stalled: dict[str, int] = {}  # points where no query finished: no score
    for point in points:
        if point.ok and ok_metrics(point).qps > 0:
            by_round.setdefault(point.config, {}).setdefault(point.round, []).append(point)
        elif point.ok:
            stalled[point.config] = stalled.get(point.config, 0) + 1
    if stalled:
        say("left out of the rounds, no query finished in them: " + ", ".join(
            f"{count} point(s) of {config}" for config, count in stalled.items()))
    return by_round


def spent_before(sessions: list[Session], points: list[StoredPoint], since: float) -> float:
    """The wall time a study's runs begun before `since` (a wall-clock time) spent on it: each
    one's session from its start to its end, its servers' starts included (up to 26 s before
    a study's first point, bench/tune's pool answer), or to its last point when it was
    killed. A run that measured none of its points (one that read them all back) spent
    nothing, or each resume would charge the one before's reading back."""
    last: dict[int, float] = {}
    for point in points:
        last[point.session_id] = max(last.get(point.session_id, 0.0), point.finished_at)
    return sum(max(0.0, (s.finished_at or last[s.id]) - s.started_at)
               for s in sessions if s.started_at < since and s.id in last)


def _scores(by_round: dict[str, dict[int, list[StoredPoint]]], plan: Plan,
            settings: TuneSettings) -> dict[str, dict[int, float]]:
    """Each config's objective per round, from rounds with every thread count measured."""
    threads = len(plan.run.threads)
    return {config: {r: settings.score([ok_metrics(p) for p in points])
                     for r, points in measured.items() if len(points) == threads}
            for config, measured in by_round.items()}


def _contenders(result: TuneResult, direction: Direction, clear: float, round_sd: float,
                say: Say) -> list[TrialOutcome]:
    """The re-measure's candidates (`best_candidates`) less those that `cannot_win` it."""
    candidates = best_candidates(result, direction, clear)
    if lost := cannot_win(candidates, direction, clear, round_sd):
        say("left out of the re-measure, their trials' figures so far under the best one's "
            "that they cannot win it: " + ", ".join(
                f"trial {t.number} ({t.value:.3g})" for t in lost))
    return [t for t in candidates if t not in lost]


def cannot_win(candidates: list[TrialOutcome], direction: Direction, clear: float,
               round_sd: float) -> list[TrialOutcome]:
    """The candidates whose trial figures lie so far from the best one's that the re-measure
    cannot make them its winner: beyond `clear` (a gain that counts) and CANNOT_WIN_SDS
    rounds' noise (`round_sd`) on the difference of two readings, on a log scale. Re-measuring
    them decides nothing the answer needs: on the held-out MyISAM join, five key-cache
    settings at x1.6 to x1.9 beside a x572 query cache made the re-measure's seven servers
    take a third of the checks' time."""
    sign = 1.0 if direction == Direction.MAXIMIZE else -1.0
    logs = {t.number: sign * math.log(t.value) for t in candidates
            if t.value is not None and t.value > 0}
    if not logs:
        return []
    reach = math.log1p(clear) + CANNOT_WIN_SDS * math.sqrt(2) * round_sd
    best = max(logs.values())
    return [t for t in candidates if t.number in logs and best - logs[t.number] > reach]


def best_candidates(result: TuneResult, direction: Direction, clear: float
                    ) -> list[TrialOutcome]:
    """The search's best ok trials with distinct settings, its best first (the defaults only
    when nothing else succeeded: they are re-measured anyway), then each knob's best reading:
    for every knob some trial that gained more than `clear` over the defaults moved (a gain
    beyond the margin and beyond a round's noise, not a lucky round), the best such trial, up
    to MORE_CANDIDATES of them, best first. So a knob whose one clear reading the search did
    not follow up (its model or its figures later said otherwise) is measured again before it
    is given up."""
    others = [t for t in result.ranked if moved(t.params, result.defaults)]
    chosen: dict[tuple, TrialOutcome] = {}
    for trial in others or result.ranked:
        chosen.setdefault(setting_key(moved(trial.params, result.defaults)), trial)
        if len(chosen) == CANDIDATES:
            break
    extra: dict[tuple, TrialOutcome] = {}
    for trial in _best_per_knob(result, direction, clear):
        key = setting_key(moved(trial.params, result.defaults))
        if key not in chosen and len(extra) < MORE_CANDIDATES:
            extra.setdefault(key, trial)
    return [*chosen.values(), *extra.values()]


def _best_per_knob(result: TuneResult, direction: Direction, margin: float
                   ) -> list[TrialOutcome]:
    """For each knob, the best ok trial that moves it and gains more than `margin` over the
    defaults' figure (1 for trials measured side by side with the defaults, else a trial that
    moves nothing), best first; nothing when there is no such figure."""
    ok = [t for t in result.trials if t.value is not None]
    if result.relative:
        neutral: float | None = 1.0
    else:
        unmoved = [t.value for t in ok if not moved(t.params, result.defaults)]
        neutral = unmoved[0] if unmoved else None
    if neutral is None:
        return []
    helped = sorted((t for t in ok if better(direction, figure(t), neutral, margin)),
                    key=figure, reverse=direction == Direction.MAXIMIZE)
    best: dict[str, TrialOutcome] = {}
    for trial in helped:
        for knob in moved(trial.params, result.defaults):
            best.setdefault(knob, trial)
    return sorted({t.number: t for t in best.values()}.values(), key=helped.index)


def _rounds(sd: float, cells: int, plan: Plan, settings: TuneSettings) -> tuple[int, str]:
    """Rounds for intervals of about ±margin at the family's level, at the noise `sd` this lab
    measured for the workload measured the way the study will be (side by side, or one after
    another), or the assumed one, from final_rounds to final_max_rounds, and what they give."""
    level = plan.run.alpha / max(1, cells)
    low, high = settings.final_rounds, settings.final_max_rounds
    for rounds in range(low, high + 1):
        if as_change(half_width(sd, rounds, level)) <= plan.run.margin:
            return rounds, f": intervals about ±{plan.run.margin:.0%}"
    return high, f": intervals wider than ±{plan.run.margin:.0%} at the cap"


def _gains(direction: Direction, base: dict[int, float], best: dict[int, float]
           ) -> dict[int, float]:
    """Per round, the log of the best configuration's gain over `base` (for latency, a
    gain is a drop)."""
    gains = {}
    for round_number, value in best.items():
        other = base.get(round_number)
        if other and value:
            ratio = value / other if direction == Direction.MAXIMIZE else other / value
            gains[round_number] = math.log(ratio)
    return gains
