"""A tuning trial's end, as the study records it and as perflab reports it, and the search's
result.

A trial's end is recorded in Optuna's study (COMPLETE with its value, or FAIL) and in its user
attributes: `state` (an `Outcome`), `error`, and `cause` (REFERENCE when the trial's reference,
not its setting, failed, or when the pair of the two was refused). `tell` writes them;
`refused`, `failed_by_setting` and `uninformative` read them back for the methods, which learn
differently from each.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from enum import StrEnum

import optuna
from optuna.trial import FrozenTrial, TrialState

from perflab.stats.decide import Verdict
from perflab.tune.settings import Direction, better
from perflab.tune.space import Knob

# a failed trial's cause when its reference, not its setting, failed; a refused one's when the
# trial alone would fit but not beside its reference
REFERENCE = "reference"


class Outcome(StrEnum):
    """How a trial ended (its value is the `state` user attribute the study stores)."""

    OK = "ok"
    FAILED = "failed"  # its server would not start or crashed, or it fell under min_qps
    REFUSED = "refused"  # before start: it would not fit in the memory budget


class Measured(StrEnum):
    """How a study's trials are measured (stored with the study)."""

    SIDE_BY_SIDE = "side by side"  # with the reference on a second server: values are ratios
    ALONE = "alone"


class Ranking(StrEnum):
    """What ranks the trials for the answer and the re-measure's candidates."""

    FIGURE = "figure"  # each trial's own figure
    MODEL = "model"  # the additive search's belief, not single figures


def tell(study: optuna.Study, trial: optuna.Trial, outcome: Outcome, value: float | None,
         error: str | None, cause: str | None = None, loaded: float | None = None) -> bool:
    """Record a trial's end; `cause` REFERENCE when the reference, not the trial's setting,
    failed, or the pair of the two was refused; `loaded`, the largest share of the machine's
    CPU time other processes used while it was measured (probes/busy.py). False when the result
    was dropped: another worker failed the trial while it ran."""
    told = TrialState.COMPLETE if outcome is Outcome.OK else TrialState.FAIL
    try:
        trial.set_user_attr("state", str(outcome))
        if loaded is not None:
            trial.set_user_attr("loaded", loaded)
        if error:
            trial.set_user_attr("error", error[:2000])
        if cause:
            trial.set_user_attr("cause", cause)
        frozen = study.tell(trial, value if outcome is Outcome.OK else None,
                            state=told, skip_if_finished=True)
    except optuna.exceptions.UpdateFinishedTrialError:
        return False
    return frozen.state == told and (outcome is not Outcome.OK or frozen.value == value)


def refused(trial: FrozenTrial) -> bool:
    """Whether a trial was refused before start (its setting would not fit in memory)."""
    return trial.state == TrialState.FAIL and trial.user_attrs.get("state") == Outcome.REFUSED


def failed_by_setting(trial: FrozenTrial) -> bool:
    """Whether a failed trial says its setting fails (not: interrupted, its reference failed,
    refused before start)."""
    return trial.user_attrs.get("state") == Outcome.FAILED and \
        trial.user_attrs.get("cause") != REFERENCE


def interrupted(trial: FrozenTrial) -> bool:
    """Whether a failed trial was cut short: its worker died, or the run was stopped, before it
    told its outcome (its state, if it recorded one, says it measured, or no error came)."""
    return trial.state == TrialState.FAIL and (
        trial.user_attrs.get("state", Outcome.OK) == Outcome.OK
        or trial.user_attrs.get("error") is None)


def uninformative(trial: FrozenTrial) -> bool:
    """Whether a trial failed without saying anything of its setting: interrupted (its worker
    died), or its reference failed."""
    return trial.state == TrialState.FAIL and not (failed_by_setting(trial) or refused(trial))


def spends_budget(trial: FrozenTrial) -> bool:
    """Whether a trial counts in `--budget`: measured, running, or failed by its setting. A
    refusal measured nothing, and an uninformative trial said nothing of its setting (the
    additive search runs such a screening trial again), so that a run interrupted and resumed
    still measures the trials it was given."""
    return not (refused(trial) or uninformative(trial))


@dataclass
class TrialOutcome:
    number: int
    params: dict[str, str]
    state: Outcome
    value: float | None
    error: str | None = None
    loaded: float | None = None  # others' largest share of the CPU time while it was measured


def outcome(trial: FrozenTrial, setting: Callable[[dict], dict]) -> TrialOutcome:
    """A finished trial as perflab reports it, its params the `setting` they stand for
    (Space.within). Only a COMPLETE trial is OK: one whose worker died after recording its
    state but before telling Optuna is failed, whatever it said."""
    params = {k: str(v) for k, v in setting(trial.params).items()}
    loaded = trial.user_attrs.get("loaded")
    if trial.state == TrialState.COMPLETE:
        return TrialOutcome(trial.number, params, Outcome.OK, trial.value, loaded=loaded)
    if interrupted(trial):
        return TrialOutcome(trial.number, params, Outcome.FAILED, None,
                            "interrupted before the trial finished", loaded)
    return TrialOutcome(trial.number, params, Outcome(trial.user_attrs["state"]), None,
                        trial.user_attrs["error"], loaded)


def figure(trial: FrozenTrial | TrialOutcome) -> float:
    """A completed trial's value (a trial that did not complete has none)."""
    assert trial.value is not None, f"trial {trial.number} has no value"
    return trial.value


class CheckKind(StrEnum):
    """A study of settings side by side with the winner (tune/final.py), by what it measures;
    its value names the study."""

    SMALLEST = "smallest"  # the search's most important knobs, before any put-back
    SMALLEST_BOTH = "smallest-both"  # the two together, once each alone was shown slower
    PUT_BACK = "put-back"  # each moved knob put back alone
    GROUPS = "groups"  # groups of them put back first, when too many for one at a time
    ALONE = "alone"  # each knob alone, when no absence cost
    TOGETHER = "together"  # the knobs whose absence cost, without the others
    TOGETHER_ALONE = "together-alone"  # the knobs shown to gain alone, without the others
    TOGETHER_GROUPS = "together-groups"  # the knobs of the groups that cost
    PLUS_ONE = "plus-one"  # a set shown slower, with each other knob added


@dataclass(frozen=True)
class KeptCheck:
    """A set of the winner's knobs smaller than the winner, measured together without the
    others, side by side with the winner: `kind` "together" (the knobs whose absence cost),
    "together-alone" (when no absence cost, the knobs shown to gain alone over the defaults;
    "alone" when that is one knob, its figure from the study of each alone) or
    "together-groups" (the knobs of the groups that cost, when the first was not enough), or
    "plus-one" (a set shown slower, with the one other knob that then carries the gain)."""

    kind: CheckKind
    knobs: tuple[str, ...]
    effect: Verdict


@dataclass
class TuneResult:
    study: str
    method: str
    knobs: list[Knob]
    trials: list[TrialOutcome]
    best: TrialOutcome | None
    # config -> round -> the objective, re-measured in rounds with default (the searched knobs
    # at the server's defaults), baseline (when it sets searched knobs) and the candidates
    final: dict[str, dict[int, float]] = field(default_factory=dict)
    gain_vs_default: Verdict | None = None  # paired by round; for latency a gain is a drop
    gain_vs_baseline: Verdict | None = None
    importance: dict[str, float] = field(default_factory=dict)
    defaults: dict[str, str | None] = field(default_factory=dict)  # the knobs at startup
    # the searched variables (knobs and followers) the plan's baseline sets, with its values
    # (the defaults are the server's: `mycnf` says so when it gives nothing)
    baseline: dict[str, str] = field(default_factory=dict)
    final_by: dict | None = None  # the worker that re-measured, when it was another one
    candidates: dict[int, Verdict | None] = field(default_factory=dict)  # trial -> vs default
    # candidates whose re-measured throughput fell under tune.min_qps: trial -> median qps
    under_floor: dict[int, float] = field(default_factory=dict)
    searched_best: int | None = None  # the search's best trial, when re-measured
    seconds: float = 0.0  # this run's, end phases included
    # this run's seconds in each end phase ("re-measure", "put-back"): what checking the
    # answer cost beside finding it
    phases: dict[str, float] = field(default_factory=dict)
    # what ended the checks before they decided, and what to do: the tune's budget before a
    # study (tune/budget.py), or an interruption in a phase (final.check_answer)
    ended: str | None = None
    # the put-back's margin against the winner (final.keep_margin); None: no put-back measured
    keep_margin: float | None = None
    measured: Measured = Measured.ALONE  # or SIDE_BY_SIDE: values are ratios to the reference
    ranked: list[TrialOutcome] = field(default_factory=list)  # ok trials, the search's best first
    ranked_by: Ranking = Ranking.FIGURE
    why: list[str] = field(default_factory=list)  # what the counters did under the winner
    option_group: str = "mariadbd"  # the my.cnf section of the server tuned (server/flavor.py)
    # each moved knob put back alone: the winner without it, against the winner
    knob_effects: dict[str, Verdict] = field(default_factory=dict)
    # more moved knobs than are put back one at a time: each group of them put back first
    # (the winner without them, against the winner)
    group_effects: dict[tuple[str, ...], Verdict] = field(default_factory=dict)
    kept: list[str] | None = None  # the moved knobs with a shown effect (None: not checked)
    # when no knob's absence cost anything: each knob's value alone, against the winner
    alone_effects: dict[str, Verdict] = field(default_factory=dict)
    # each other knob added to a kept set shown slower, against the winner (final._one_more)
    plus_one_effects: dict[str, Verdict] = field(default_factory=dict)
    # smaller sets than the winner measured together against it, in the order measured: the
    # last one decided the my.cnf
    kept_checks: list[KeptCheck] = field(default_factory=list)
    # the winner's other knobs when that check was left undecided: no effect of theirs shown,
    # nor their absence shown harmless; the my.cnf gives them as comments, with the figure
    unproven: list[str] = field(default_factory=list)
    objective: str = "qps"  # what the trials measured (the plan's [tune] objective)
    direction: Direction = Direction.MAXIMIZE  # MINIMIZE for a latency

    @property
    def relative(self) -> bool:
        """Trial values are ratios to the reference measured side by side."""
        return self.measured is Measured.SIDE_BY_SIDE

    def left_out(self, in_force: list[str]) -> dict[str, str]:
        """The searched knobs the plan's baseline sets and the my.cnf's `in_force` lines do not
        give: the trials, the re-measure and the put-back ran them unset (tune/trial.py
        server_variables), so a my.cnf read over the baseline's settings must drop them. Not
        given at the server's value instead: some variables change the server by being set
        at all (query_cache_size)."""
        return {name: value for name, value in self.baseline.items() if name not in in_force}

    def mycnf(self) -> str:
        """The best trial's knobs that differ from the server's startup values, then a note
        naming the baseline's searched knobs they were measured without (`left_out`); when
        nothing is given and the baseline sets searched knobs, a note names the baseline's
        values, which "the defaults" are not. Once the knobs were put back one
        at a time (tune/final.put_back): only those with a shown effect, or nothing when the
        winner was not shown better than the defaults; knobs whose share was left undecided
        (`unproven`) follow as comments, with the figure that left them so, so that the lines
        in force are only those shown to matter."""
        if self.best is None:
            return ""
        durability = {k.name for k in self.knobs if k.durability}
        changed = moved(self.best.params, self.defaults)

        def setting(name: str) -> str:
            unsafe = "  # trades durability for speed" if name in durability else ""
            return f"{name} = {changed[name]}{unsafe}"

        in_force = [name for name in sorted(changed) if self.kept is None or name in self.kept]
        lines = [f"[{self.option_group}]"] + [setting(name) for name in in_force]
        left_out = self.left_out(in_force)
        if in_force and left_out:
            lines.append("# measured without these settings of the plan's baseline (the "
                         "server's defaults instead): remove them where the lines above go: "
                         + ", ".join(f"{name} = {value}" for name, value in
                                     sorted(left_out.items())))
        if not in_force:
            lines.append("# no change was shown better than the defaults: nothing to change")
            if self.baseline:  # the defaults are the server's, which the baseline is not
                lines.append("# (the server's defaults: the baseline sets " + ", ".join(
                    f"{name} = {value}" for name, value in sorted(self.baseline.items()))
                    + "; the report's 'best vs baseline' compares the winner with those)")
        if self.ended:
            lines.append(f"# {self.ended}: "
                         + ("the lines above are the winner's, not reduced to those shown to "
                            "matter" if self.gain_vs_default is not None else
                            "the best trial's figure was not measured again, so this is not "
                            "yet evidence"))
        if self.unproven and self.kept_checks:
            effect = self.kept_checks[-1].effect
            lines.append(f"# The winner also set these. Without them, the lines above measured "
                         f"{effect.change:+.1%} {effect.interval_text()} against the winner: "
                         "not shown to lose its gain, nor shown to keep it (more rounds may "
                         "decide: tune.put_back_time):")
            lines += [f"# {setting(name)}" for name in sorted(self.unproven) if name in changed]
        return "\n".join(lines)


def moved(params: dict, startup: dict[str, str | None]) -> dict[str, str]:
    """The params whose values differ from the knobs' startup values, as strings."""
    return {name: str(value) for name, value in params.items()
            if (at_startup := startup.get(name)) is None or not _same(value, at_startup)}


def _same(value, at_startup: str) -> bool:
    """Whether a knob's value is its startup value as the server printed it: a choice in any
    case, a number at any precision (a DOUBLE's 90 is "90.000000")."""
    if str(value).upper() == at_startup.upper():
        return True
    try:
        return Decimal(str(value)) == Decimal(at_startup)
    except InvalidOperation:
        return False


def best_so_far(trials: list[TrialOutcome], direction: Direction) -> list[float | None]:
    """The best value after each trial (the convergence chart)."""
    out, best = [], None
    for t in trials:
        if t.value is not None and (best is None or better(direction, t.value, best)):
            best = t.value
        out.append(best)
    return out
