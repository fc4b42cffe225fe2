"""How a family of comparisons is judged (standard library only: plans carry one, and the
commands that read plans must not load numpy and scipy to do so)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perflab.errors import PerflabError

POCOCK_SHAPE = 0.5  # the Wang-Tsiatis shape of a constant level at every look
FITTED_SHAPE = 0.25  # between Pocock (1/2) and O'Brien-Fleming (0): see docs/STATISTICS.md §5


MARGIN = 0.05  # the default equivalence margin: "equivalent" means within ±5%


def checked_margin(where: str, value: Any, option: str | None = None) -> float:
    """`value` as an equivalence margin, a fraction between 0 and 0.5 (both excluded), for
    every reader of one (a plan's run.margin, an override, a report's or compare's); else a
    PerflabError naming `where`, and the API's argument `option` when one is at fault."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 0.5:
        raise PerflabError(f"{where} must be a fraction from 0 to 0.5, got {value!r}",
                           hint=f"e.g. {MARGIN}: within ±{MARGIN:.0%} two configurations are "
                           "equivalent", option=option)
    return float(value)


@dataclass(frozen=True)
class Design:
    """How a family is judged: error rate, equivalence margin, and the looks.

    With first_look == last_look there is one look (a fixed number of rounds); otherwise a look
    after every round from first_look to last_look, as in a run with a time budget, on a
    Wang-Tsiatis boundary of `shape` (stats/sequential.py): Pocock's constant level (1/2) when
    the last look is only a cap, FITTED_SHAPE when the looks were fitted to what the budget
    holds, so that the last ones are judged nearly at the fixed-sample level.
    """

    alpha: float = 0.05
    margin: float = MARGIN  # equivalence: the true ratio lies within 1 ± margin
    first_look: int = 3
    last_look: int = 3
    # the least lag-1 autocorrelation of rounds an interval allows for (stats/dependence.py),
    # since a study's own first rounds cannot tell it: what this kind of machine showed, or
    # more where the lab measured more (noise.frozen_dependence)
    lag1: float = 0.2
    shape: float = POCOCK_SHAPE  # Wang-Tsiatis shape of the looks' boundary
    # the question each comparison asks: its size against ±margin (False), or only whether it
    # is slower than the baseline by more than the margin (True: tune's checks against its
    # winner, where a setting no slower is as good whatever it gains; decide.resolved)
    one_sided: bool = False

    @property
    def sequential(self) -> bool:
        """A look after every round (a run with a time budget), not one look at the end."""
        return self.first_look < self.last_look

    @property
    def fitted(self) -> bool:
        """Looks fitted to what the budget holds (FITTED_SHAPE), not Pocock's constant level."""
        return self.shape != POCOCK_SHAPE

    @property
    def bounds(self) -> tuple[float, float]:
        """The equivalence margin on the log-ratio scale."""
        return math.log(1 - self.margin), math.log(1 + self.margin)

    def nominal(self, level: float, rounds: int | None = None) -> float:
        """The level of the look at `rounds` rounds (default: the last look) that keeps
        `level` over all the design's looks."""
        from perflab.stats.sequential import nominal_level  # numpy and scipy: only to decide

        return nominal_level(level, self.first_look, self.last_look, rounds, self.shape)


def study_design(designs: list[Design]) -> Design:
    """One design for a study run several times: the first run's error rate, margin and question
    (frozen: changed later, they would be chosen after seeing data), over every look any run
    took or allowed. A study once run with a budget, or given more rounds later, is judged with
    all those looks, so a later run or report never spends its error rate again by looking
    afresh; once its looks were fitted to a budget, the fitted last look stays the last (a
    longer study is a new study)."""
    first = designs[0]
    shape = next((d.shape for d in designs if d.sequential), first.shape)  # the budget's
    fitted = [d.last_look for d in designs if d.sequential and d.fitted]
    # looks fitted to what a budget held are frozen: the boundary was drawn for them, and a
    # later run with more rounds would look past its end at levels drawn for fewer looks
    last = min(fitted) if fitted else max(d.last_look for d in designs)
    first_look = min(min(d.first_look for d in designs), last)
    return Design(first.alpha, first.margin, first_look, last, first.lag1, shape,
                  first.one_sided)
