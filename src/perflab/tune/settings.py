"""The [tune] section of a plan: what `perflab tune` optimizes, and how it scores a trial."""

from __future__ import annotations

import difflib
import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from perflab.errors import PerflabError
from perflab.store import Metrics


class Objective(StrEnum):
    """What `perflab tune` optimizes (the plan's tune.objective)."""

    THROUGHPUT = "throughput"  # queries per second
    P95 = "p95"  # the 95th percentile latency
    P99 = "p99"


class Direction(StrEnum):
    """Which way an objective improves (Optuna's study direction, by its name)."""

    MAXIMIZE = "maximize"  # throughput
    MINIMIZE = "minimize"  # a latency


OBJECTIVES = tuple(Objective)
# a search's own settings, not the study's: options of `perflab tune`, not [tune] keys
COMMAND_LINE_ONLY = {"budget", "time", "method", "sampler", "seed", "storage", "allow_unsafe"}


@dataclass(frozen=True)
class TuneSettings:
    """The [tune] section of a plan."""

    objective: Objective = Objective.THROUGHPUT
    min_qps: float = 0.0  # trials below this throughput fail (a floor for latency objectives)
    knobs: tuple[str, ...] = ()  # empty: the curated set
    exclude: tuple[str, ...] = ()  # curated knobs left out (e.g. the query cache's)
    memory_share: float = 0.5  # of this machine's RAM
    final_rounds: int = 3  # the re-measure's rounds: at least these, more if the noise
    final_max_rounds: int = 12  # needs them to resolve run.margin, up to these
    # seconds each put-back study may take: after its planned rounds, it measures on the
    # comparisons still open until each is decided or this is spent (0: planned rounds only)
    put_back_time: float = 600.0

    def chosen(self, knobs: Sequence[str] | None, exclude: Sequence[str] | None
               ) -> TuneSettings:
        """These settings with the knobs chosen on the command line: `knobs` (exactly these)
        or `exclude` (the curated set less these), when given, replaces both of the plan's."""
        if knobs is None and exclude is None:
            return self
        return replace(self, knobs=tuple(knobs or ()), exclude=tuple(exclude or ()))

    @classmethod
    def from_plan(cls, raw: dict) -> TuneSettings:
        allowed = {"objective", "min_qps", "knobs", "exclude", "memory_share", "final_rounds",
                   "final_max_rounds", "put_back_time"}
        unknown = sorted(set(raw) - allowed)
        if unknown:
            key = unknown[0]
            close = difflib.get_close_matches(key, allowed, n=1)
            hint = (f"the search's {key} is given on the command line: perflab tune "
                    f"--{key.replace('_', '-')}" if key in COMMAND_LINE_ONLY
                    else f"did you mean tune.{close[0]}?" if close else None)
            raise PerflabError(f"tune: unknown key tune.{key} "
                               f"(allowed: {', '.join(sorted(allowed))})", hint=hint)
        names = {}
        for key in ("knobs", "exclude"):
            value = raw.get(key, ())
            if not isinstance(value, list | tuple) or not all(isinstance(k, str) for k in value):
                raise PerflabError(f"tune.{key} must be a list of server variable names, got "
                                   f"{value!r}",
                                   hint=f'e.g. {key} = ["key_buffer_size", "table_open_cache"]')
            names[key] = tuple(value)
        for key, kinds in (("min_qps", int | float), ("memory_share", int | float),
                           ("final_rounds", int), ("final_max_rounds", int),
                           ("put_back_time", int | float)):
            value = raw.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, kinds):
                kind = "an integer" if kinds is int else "a number"
                raise PerflabError(f"tune.{key} must be {kind}, got {value!r}")
        objective = raw.get("objective", Objective.THROUGHPUT)
        if objective not in OBJECTIVES:
            raise PerflabError(f"tune.objective = {objective!r} is not allowed "
                               f"(allowed: {', '.join(OBJECTIVES)})")
        settings = cls(**{**raw, **names, "objective": Objective(objective)})
        if not 0 < settings.memory_share <= 1:
            raise PerflabError("tune.memory_share must be a fraction of RAM, e.g. 0.5")
        if settings.final_rounds < 2:
            raise PerflabError("tune.final_rounds must be at least 2 (an interval needs two)")
        if settings.final_max_rounds < settings.final_rounds:
            raise PerflabError("tune.final_max_rounds must be at least tune.final_rounds")
        if not 0 <= settings.put_back_time < math.inf:
            raise PerflabError(f"tune.put_back_time must be seconds, 0 or more, got "
                               f"{settings.put_back_time!r}",
                               hint="e.g. put_back_time = 600 (0: the planned rounds only)")
        return settings

    @property
    def direction(self) -> Direction:
        return Direction.MAXIMIZE if self.objective == Objective.THROUGHPUT else Direction.MINIMIZE

    def score(self, metrics: list[Metrics]) -> float:
        """The objective of a configuration's points: the geometric mean over the thread counts
        of qps, or of the p95 or p99 latency, so that each thread count weighs alike (an
        arithmetic mean of latencies would be the highest thread count's)."""
        key = "qps" if self.objective == Objective.THROUGHPUT else f"latency_{self.objective}_ms"
        # a latency below sysbench's resolution reads 0: a microsecond
        return math.exp(statistics.fmean(math.log(max(getattr(m, key), 1e-3)) for m in metrics))


def better(direction: Direction, a: float, b: float, by: float = 0.0) -> bool:
    """The one "is this better" test of the search: a beats b by more than the fraction `by`
    (throughput higher, latency lower)."""
    return a > b * (1 + by) if direction == Direction.MAXIMIZE else a < b * (1 - by)
