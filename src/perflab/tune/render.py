"""What `perflab tune` prints and writes: trials, the honest re-measure, a my.cnf fragment,
knob importance and the convergence chart (best so far against trials)."""

from __future__ import annotations

import html
import math

from perflab.output.figure import new_figure, png_data_uri
from perflab.output.page import page
from perflab.output.table import Table
from perflab.output.text import duration
from perflab.probes.busy import under_load
from perflab.stats.decide import Decision, Verdict
from perflab.stats.summary import summarize
from perflab.tune.final import KEEP, MAX_PUT_BACK
from perflab.tune.result import CheckKind, Outcome, Ranking, TuneResult, best_so_far
from perflab.tune.space import folded


def tables(result: TuneResult) -> list[Table]:
    out = [_trials_table(result)]
    if result.final:
        out += _final_tables(result)
    if result.group_effects:
        out.append(_group_table(result))
    if result.knob_effects:
        out.append(_knob_table(
            result, result.knob_effects, "Change without it",
            "Each moved knob put back alone (the winner without it, against the winner; a knob "
            "stays in the my.cnf when the winner without it is shown slower, and not shown "
            "within the margin; when none is, one knob shown to carry the gain alone, else "
            "those shown to gain alone, checked together, else every knob: the winner's gain "
            "is shown, some knob carries it)",
            note="The my.cnf below leaves out the knobs marked so; the gains above are the "
                 "whole winner's, measured with them."
            if len(result.kept or ()) < (sum(map(len, result.group_effects))
                                         or len(result.knob_effects)) else ""))
    if result.alone_effects:
        out.append(_knob_table(
            result, result.alone_effects, "Change alone",
            "Each knob alone (its winning value, the other knobs at the server's defaults, "
            "against the winner): no knob's absence cost anything, so they may stand in for "
            "each other; one alone shown to carry the gain (no slower than the winner beyond "
            "the margin, and faster than the defaults) is the my.cnf; else those shown "
            "faster than the defaults alone are checked together against the winner"))
    if result.plus_one_effects:
        out.append(_knob_table(
            result, result.plus_one_effects, "Change with it",
            "Each other knob added to a kept set shown slower than the winner (the kept knobs "
            "and it, against the winner): the best shown to carry the gain joins the my.cnf"))
    if result.kept_checks:
        out.append(_kept_table(result))
    loaded = [t for t in result.trials if under_load(t.loaded)]
    if loaded:
        out.append(Table(
            f"Trials measured while other work loaded the machine ({len(loaded)} of "
            f"{len(result.trials)}): their readings rank the load as much as the settings and "
            "are not evidence; stop the other work and tune again",
            ["Trial", "Others' share of the CPU time"],
            [[str(t.number), f"{t.loaded:.0%}"] for t in loaded if t.loaded is not None]))
    if result.final_by is not None:
        out.append(Table("Re-measure", ["Done by", "Lab"],
                         [[f"the worker on {result.final_by['host']} (pid "
                           f"{result.final_by['pid']})", result.final_by["lab"]]]))
    if result.importance:
        ok = sum(t.state is Outcome.OK for t in result.trials)
        each = ("one round side by side with the reference" if result.relative
                else "one measurement")
        out.append(Table(f"Knob importance (Optuna's PED-ANOVA over {ok} trials of {each} "
                         "each: the knobs whose values set the best trials apart from the "
                         "rest, noise included)",
                         ["Knob", "Importance"],
                         [[k, f"{v:.2f}"] for k, v in result.importance.items()]))
    return out


def _trials_table(result: TuneResult) -> Table:
    objective = result.objective
    relative = result.relative
    return Table(
        f"Trials of {result.study} ({result.method}), objective {objective}"
        + (", each measured side by side with the reference" if relative else ""),
        ["Trial", "State", f"{objective.capitalize()}{' ÷ reference' if relative else ''}",
         "Knobs"],
        [[str(t.number), t.state,
          "-" if t.value is None else f"{t.value:.3f}" if relative else f"{t.value:.2f}",
          " ".join(f"{k}={v}" for k, v in sorted(t.params.items())) if t.state is Outcome.OK
          else (t.error or "").splitlines()[0][:90] if t.error else "-"]
         for t in result.trials],
    )


def _final_tables(result: TuneResult) -> list[Table]:
    """The re-measure: each configuration's rounds, the candidates against the defaults, and
    the winner's gains."""
    rows = []
    for config, by_round in result.final.items():
        if not by_round:  # failed, or no query finished, at some thread count in every round
            rows.append([config, "0", "-", "-"])
            continue
        s = summarize(list(by_round.values()))
        interval = "-" if s.n < 2 else f"[{s.ci_low:.1f}, {s.ci_high:.1f}]"
        rows.append([config, str(s.n), f"{s.median:.1f}", interval])
    out = [Table("Re-measured side by side (the gain below comes from these rounds)",
                 ["Config", "Rounds", "Median", "95% interval"], rows)]
    if result.candidates:
        knobs = {t.number: t.params for t in result.trials}
        out.append(Table(
            "The search's best trials (and each knob's best reading) re-measured against the "
            "defaults",
            ["Trial", "Knobs", "Rounds", "Gain", "Interval", "Verdict"],
            [[f"{n}{' (winner)' if result.best and n == result.best.number else ''}",
              " ".join(f"{k}={v}" for k, v in sorted(knobs.get(n, {}).items())),
              *(_gain_cells(v) if v is not None else ["-"] * 4)]
             for n, v in result.candidates.items()]))
    gains = [[name, *_gain_cells(v)] for name, v in (
        ("best vs default", result.gain_vs_default),
        ("best vs baseline", result.gain_vs_baseline)) if v is not None]
    out.append(Table("Gain of the best configuration (paired by round; every gain of the "
                     "re-measure keeps one 5% error rate together)",
                     ["Comparison", "Rounds", "Gain", "Interval", "Verdict"], gains))
    return out


def render_text(result: TuneResult) -> str:
    return "\n\n".join([*(t.render() for t in tables(result)), *notes(result),
                        *my_cnf(result), *time_line(result)])


def notes(result: TuneResult) -> list[str]:
    """What the tables do not say: durability knobs, the winner's counters, trials under the
    throughput floor, a re-measure that showed no gain, the margin a smaller my.cnf kept."""
    parts = []
    unsafe = [k.name for k in result.knobs if k.durability]
    if unsafe:
        parts.append("Durability knobs were searched (--allow-unsafe): " + ", ".join(unsafe))
    if result.why:
        parts.append("Why the winner wins (the server's counters over the re-measure, the "
                     "defaults → the winner):\n" + "\n".join(f"  {line}" for line in result.why))
    if result.under_floor:
        parts.append("Not given, under the throughput floor (tune.min_qps) in the re-measure "
                     "(median over rounds of the lowest qps over the thread counts): " + ", ".join(
                         f"trial {n} ({qps:,.0f} qps)" for n, qps in result.under_floor.items()))
    verdict = result.gain_vs_default
    if result.best is not None and verdict is not None and verdict.verdict != Decision.FASTER:
        parts.append(f"No re-measured trial was shown better than the defaults ({verdict.verdict}"
                     f"): keep them, or re-measure with more rounds (tune.final_max_rounds).")
    if result.keep_margin is not None and result.gain_vs_default is not None:
        parts.append(
            f"A smaller my.cnf is given when it is shown no slower than the winner by more than "
            f"{result.keep_margin:.1%}: what keeps {KEEP:.0%} of its gain over the defaults on a "
            f"log scale (from the gain's low end, {result.gain_vs_default.low:+.1%}), or the "
            "plan's margin when that is wider.")
    return parts


def my_cnf(result: TuneResult) -> list[str]:
    """The my.cnf fragment under a heading that says which trial it is and how it was chosen,
    or why there is none."""
    if result.best is None:
        return ["No trial succeeded: nothing to recommend."]
    searched = "the search's best figure" if result.ranked_by is Ranking.FIGURE else \
        "the setting the search's model believes best"
    if result.best.number in result.under_floor:
        how = f"{searched}, under the throughput floor when re-measured: not given"
    elif result.searched_best is None:
        how = f"{searched}, not re-measured here"
    elif result.searched_best == result.best.number:
        how = f"best re-measured, and {searched}"
    else:
        how = f"best re-measured; {searched} was trial {result.searched_best}'s"
    return [f"Best my.cnf fragment (trial {result.best.number}, {how}):\n{result.mycnf()}"]


def time_line(result: TuneResult) -> list[str]:
    """Where this run's time went: the trials, and each end phase that checked the answer."""
    if not result.seconds:
        return []
    checking = sum(result.phases.values())
    trials = max(0.0, result.seconds - checking)
    parts = [f"trials {duration(trials)}"] + [f"{phase} {duration(seconds)}"
                                             for phase, seconds in result.phases.items()]
    share = f" (checking the answer: {checking / trials:.1f} times the trials' time)" \
        if checking and trials else ""
    return [f"Time: {'; '.join(parts)}{share}"]


def convergence(result: TuneResult):
    fig, ax = new_figure(f"{result.study}: convergence ({result.method})", "trial",
                         "objective ÷ reference" if result.relative else "objective")
    ys = best_so_far(result.trials, result.direction)
    xs = [i for i, y in enumerate(ys, 1) if y is not None]
    ax.step(xs, [y for y in ys if y is not None], where="post", label="best so far")
    ok = [(i, t.value) for i, t in enumerate(result.trials, 1) if t.value is not None]
    ax.scatter([i for i, _ in ok], [v for _, v in ok], s=12, alpha=0.6, label="trial")
    failed = [i for i, t in enumerate(result.trials, 1) if t.value is None]
    if failed and ok:
        ax.scatter(failed, [min(v for _, v in ok)] * len(failed), marker="x", color="red",
                   label="failed / refused")
    ax.legend()
    return fig


def render_html(result: TuneResult) -> str:
    image = png_data_uri(convergence(result))
    body = [f"<h1>perflab tune: {html.escape(result.study)} ({html.escape(result.method)})</h1>",
            f"<figure><img alt='convergence chart' src='{image}'>"
            "<figcaption>best so far against trials</figcaption></figure>"]
    body += [t.html() for t in tables(result)]
    body += [f"<p class='lines'>{html.escape(part)}</p>" for part in notes(result)]
    body.append("<h2>my.cnf</h2>")
    body += [f"<pre class='wrap'>{html.escape(part)}</pre>" for part in my_cnf(result)]
    body += [f"<p>{html.escape(line)}</p>" for line in time_line(result)]
    return page(f"perflab tune: {result.study}", "\n".join(body))


def _knob_table(result: TuneResult, effects: dict, change: str, title: str,
                note: str = "") -> Table:
    """One row per knob: the winner's value, its verdict against the winner, kept or not."""
    return Table(title, ["Knob", "Winner's value", "Rounds", change, "Interval", "Verdict",
                         "my.cnf"],
                 [[name, str(result.best.params.get(name, "-")) if result.best else "-",
                   *_gain_cells(v), _in_mycnf(result, name)]
                  for name, v in effects.items()], note=note)


def _kept_table(result: TuneResult) -> Table:
    """Each smaller set checked together against the winner, in the order measured: a set
    shown slower is first given each other knob (plus-one), then, or when not measured, the
    put-back goes to the next (the knobs of the groups that cost), then to every knob."""
    which = {CheckKind.SMALLEST: "the search's most important (before any put-back)",
             CheckKind.SMALLEST_BOTH: "the search's two most important together",
             CheckKind.TOGETHER: "those whose absence cost",
             CheckKind.TOGETHER_ALONE: "those shown to gain alone",
             CheckKind.ALONE: "the one shown to gain alone (its figure alone)",
             CheckKind.TOGETHER_GROUPS: "those of the groups that cost",
             CheckKind.PLUS_ONE: "the row above's, with the one other knob that carries the gain"}
    followers = folded(result.defaults)  # the my.cnf's kept lines hold them, a check not
    rows = []
    for i, check in enumerate(result.kept_checks):
        if i < len(result.kept_checks) - 1:
            given = "not these: the next row"
        elif [k for k in result.kept or () if k not in followers] != list(check.knobs):
            given = "every knob"
        else:
            given = "these, the others as comments" if result.unproven else "these"
        rows.append([", ".join(check.knobs), which.get(check.kind, check.kind),
                     *_gain_cells(check.effect), given])
    return Table(
        "The kept knobs together, without those left out, against the winner (the my.cnf "
        "keeps them when shown to carry the gain; when shown slower, each other knob added "
        "to them, then the knobs of the groups that cost, then every knob stays; when neither "
        "is shown, these in force and the others as comments)",
        ["Knobs", "Which", "Rounds", "Change", "Interval", "Verdict", "my.cnf"], rows)


def _group_table(result: TuneResult) -> Table:
    """One row per group of moved knobs put back together, before they were one at a time."""
    return Table(
        f"The moved knobs put back in groups first (more than {MAX_PUT_BACK}, a server each): "
        "the winner without each group, against the winner; only the knobs of a group shown "
        "to cost are put back one at a time",
        ["Knobs", "Rounds", "Change without them", "Interval", "Verdict", "my.cnf"],
        [[", ".join(knobs), *_gain_cells(v),
          ", ".join(dict.fromkeys(_in_mycnf(result, name) for name in knobs))]
         for knobs, v in result.group_effects.items()])


def _in_mycnf(result: TuneResult, name: str) -> str:
    """Where a moved knob is in the my.cnf: kept, a comment (its share left open), left out."""
    return "kept" if name in (result.kept or ()) else \
        "a comment" if name in result.unproven else "left out"


def _gain_cells(v: Verdict) -> list[str]:
    gain = "-" if math.isnan(v.change) else f"{v.change:+.1%}"
    return [str(v.n), gain, v.interval_text(), v.verdict]
