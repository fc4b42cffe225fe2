"""One tuning trial: its setting checked against the memory budget and the server's catalog,
measured (side by side with the reference, or alone), measured again with the placement
rotated when its reading is not to be believed (tune/reading.py), and told to Optuna."""

from __future__ import annotations

from dataclasses import replace

import optuna

from perflab.domain import Plan, ServerConfig
from perflab.errors import PerflabError
from perflab.probes import busy
from perflab.running.measurer import Measurer
from perflab.say import Say
from perflab.server.memory import configured_sizes, memory_estimate
from perflab.server.variables import Catalog
from perflab.tune import workers
from perflab.tune.reading import Reading, combined, reading, retake_reason
from perflab.tune.result import REFERENCE, Measured, Outcome, moved, tell
from perflab.tune.settings import TuneSettings
from perflab.tune.space import Knob, Space, variable_names

# A trial's second reading is stored as this round plus the trial's number: apart from every
# first reading's (trial n is round n + 1), one more place along, so the trial and its reference
# swap slots and turns and the thread counts' order moves by one
RETAKE_ROUND = 997_922  # 1 + 36 x 27,720 (lcm of 2..12): 2 to 12 thread counts rotate by one


class Trials:
    """Measures a search's trials: each on the measurer, against `reference` (the plan's
    baseline under a name of the method's) when they are measured side by side. `space` is set
    once the search's space is built (its memory check is `memory`); `measured` and `round_sd`
    once the study says how it measures and the lab's noise is known."""

    def __init__(self, plan: Plan, settings: TuneSettings, measurer: Measurer, method: str,
                 catalog: Catalog, knobs: list[Knob], say: Say):
        self.plan, self.settings, self.measurer, self.method = plan, settings, measurer, method
        self.catalog, self.knobs, self.say = catalog, knobs, say
        self.baseline = plan.config(plan.baseline)
        self.reference = replace(self.baseline, name=f"{method}-reference")
        self.space: Space | None = None
        self.measured = Measured.SIDE_BY_SIDE
        self.round_sd = 0.10  # how far from the reference a reading may land before a retake

    def sizes(self, params: dict) -> dict[str, int]:
        """A trial's server's memory variables: the baseline's, then its knobs."""
        values = {name: str(value) for name, value in params.items()}
        return configured_sizes(
            self.catalog, {**self.measurer.server_options(self.baseline.name), **values})

    def memory(self, params: dict) -> int:
        """Worst-case bytes of a trial's server."""
        return memory_estimate(self.sizes(params))

    def first_fits(self) -> None:
        """A PerflabError, before any server starts, when the first trial (the baseline, its
        searched knobs at their defaults) breaks the memory budget every trial keeps: the
        search would be steered by the budget, not by the readings (a baseline with
        max_connections = 1000 leaves room only for settings that shrink every
        per-connection buffer)."""
        assert self.space is not None, "the search's space is built before its first trial"
        first = self.space.within(self.space.defaults)  # as it runs: the followers set too
        worst = self.space.memory(first)
        if worst <= self.space.limit:
            return
        raise PerflabError(
            f"the baseline's own settings may take up to {worst / 2**30:.1f} GiB (global buffers "
            f"+ max_connections = {self.sizes(first)['max_connections']} x per-connection "
            f"buffers), more than the tune's memory budget of {self.space.limit / 2**30:.1f} GiB "
            f"({self.settings.memory_share:.0%} of RAM), which every trial must keep",
            hint="set max_connections in the baseline to the connections the study opens (its "
                 "threads and a few more), lower its per-connection buffers, or raise "
                 "tune.memory_share")

    def variables(self, params: dict) -> tuple[tuple[str, str], ...]:
        return server_variables(self.baseline.as_dict(), params, self.startup())

    def startup(self) -> dict[str, str | None]:
        """The searched variables' startup values, the knobs' followers included."""
        return {name: self.catalog.variables[name].startup_value
                for name in variable_names(self.knobs)}

    def baseline_values(self) -> dict[str, str]:
        """The searched variables (the knobs' followers included) the baseline sets."""
        startup = self.startup()
        return {name: str(value) for name, value in self.baseline.variables if name in startup}

    def run(self, study: optuna.Study, session: int, trial: optuna.Trial) -> None:
        """Measure `trial` and tell Optuna what it read (refused, failed, or its figure)."""
        assert self.space is not None, "the search's space is built before its trials"
        # the setting the draw stands for (a zero-off knob's draw below its range is 0)
        values = {name: str(value) for name, value in self.space.within(trial.params).items()}
        number = trial.number
        label = " ".join(f"{k}={v}" for k, v in values.items())
        estimate, limit = self.memory(values), self.space.limit
        if estimate > limit:
            reason = (f"worst-case memory {estimate / 2**30:.1f} GiB exceeds the budget of "
                      f"{limit / 2**30:.1f} GiB")
            self.say(f"trial {number}: refused before start (not counted in the budget): "
                     f"{reason}")
            self._tell(study, trial, Outcome.REFUSED, error=reason)
            return
        config = replace(self.baseline, name=f"{self.method}-trial-{number}",
                         variables=self.variables(values))
        try:
            self.measurer.add_config(config)
        except PerflabError as exc:
            self._tell(study, trial, Outcome.FAILED, error=exc.message)
            return
        if self.measured is Measured.SIDE_BY_SIDE:
            why_not = self.measurer.side_by_side_fits([self.reference, config])
            if why_not is not None:
                self.say(f"trial {number}: refused before start (not counted in the budget): "
                         f"{why_not}")
                self._tell(study, trial, Outcome.REFUSED, error=f"with its reference: {why_not}",
                           cause=REFERENCE)
                return
        taken = self._reading(session, config, number + 1)
        why = retake_reason(taken, None if taken.failed else taken.value(self.settings.score),
                            self.round_sd)
        if why is not None:
            rotated = ", the placement rotated," if self.measured is Measured.SIDE_BY_SIDE else ""
            self.say(f"trial {number}: measured again{rotated} before the search believes it: "
                     f"{why}")
            taken = combined(taken, self._reading(session, config, RETAKE_ROUND + number))
        self._judge(study, trial, taken, label)

    def _reading(self, session: int, config: ServerConfig, round_number: int) -> Reading:
        """One reading of a trial: a round side by side with the reference (the placement
        follows the round number), or the trial alone at every thread count."""
        if self.measured is Measured.SIDE_BY_SIDE:
            records = self.measurer.measure_side_by_side(session, [self.reference, config],
                                                       round_number)
            return reading(records, config.name, self.reference.name)
        records = [self.measurer.measure_point(session,
                                             self.plan.point(config, threads, round_number))
                   for threads in self.plan.run.threads]
        return reading(records, config.name, None)

    def _judge(self, study: optuna.Study, trial: optuna.Trial, taken: Reading,
               label: str) -> None:
        """Tell Optuna what the trial's reading says: failed, or its figure."""
        number = trial.number
        if taken.error is not None:
            spent = " (its reference failed: not counted in the budget)" \
                if taken.cause == REFERENCE else ""
            self.say(f"trial {number}: failed ({taken.error.splitlines()[0]}){spent} with "
                     f"{label}")
            self._tell(study, trial, Outcome.FAILED, error=taken.error, cause=taken.cause,
                       loaded=taken.loaded)
            return
        if busy.under_load(taken.loaded):
            self.say(f"trial {number}: WARNING: measured while other processes used "
                     f"{taken.loaded:.0%} of the machine's CPU time: its reading is not "
                     "evidence")
        if self.settings.min_qps and min(m.qps for m in taken.own) < self.settings.min_qps:
            error = f"throughput under the floor of {self.settings.min_qps} qps"
            self.say(f"trial {number}: failed ({error}) with {label}")
            self._tell(study, trial, Outcome.FAILED, error=error, loaded=taken.loaded)
            return
        value = taken.value(self.settings.score)
        figures = f"{value:.2f}"
        if taken.reference:
            figures = (f"{self.settings.score(list(taken.own)):.2f} against the reference's "
                       f"{self.settings.score(list(taken.reference)):.2f}: ×{value:.3f}")
        twice = " (two readings)" if taken.pooled else " (the retake)" if taken.retaken else ""
        self.say(f"trial {number}: {self.settings.objective} {figures}{twice} with {label}")
        self._tell(study, trial, Outcome.OK, value, loaded=taken.loaded)

    def _tell(self, study: optuna.Study, trial: optuna.Trial, ended: Outcome,
              value: float | None = None, error: str | None = None,
              cause: str | None = None, loaded: float | None = None) -> None:
        if not tell(study, trial, ended, value, error, cause, loaded):
            self.say(f"trial {trial.number}: another worker failed it while it ran (no "
                     f"heartbeat reached the storage for {workers.GRACE_SECONDS} s); its "
                     "result is dropped")


def server_variables(base: dict, params: dict,
                     startup: dict[str, str | None]) -> tuple[tuple[str, str], ...]:
    """A trial's server variables: the baseline's (`base`) that are not searched (`startup`
    names the searched ones), then the knobs the trial moves from their startup values. A knob
    at its startup value is left unset, not set to that value, even where the baseline sets
    it: some variables change the server by being set at all (query_cache_size set to its
    default 1 MiB switches the query cache on, and cost 8-10% of oltp_read_only here), and the
    defaults must be measured as the re-measure's "default" runs them (tune/final.py
    `unsearched`), a winner as the my.cnf printed for it."""
    unsearched = {name: value for name, value in base.items() if name not in startup}
    return tuple(sorted({**unsearched, **moved(params, startup)}.items()))
