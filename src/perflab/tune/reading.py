"""One trial's reading, and when the search must not believe it before measuring it again.

A trial is one round: its points (at every thread count of the plan) and, side by side, its
reference's in the same seconds. One round on a 2-core machine can be off by tens of percent
(a scheduler regime, a failed slice), and a model that believes it spends the rest of the
budget around a fluke. So a reading is measured again, with the
placement rotated (the other slot, the other turn), before the search sees it, when:

- a point failed, unless the trial's own server could not start or died (the setting's own
  failure, which measuring again would repeat);
- measured side by side, its ratio to the reference lies more than SURPRISE rounds' noise
  from 1: a reading that would move the search a lot, either way.

Load alone is no reason to measure again (on a machine that stays busy a second reading is as
loaded): a reading taken while other processes loaded the machine is warned about.

Two readings are pooled (their points scored together: for throughput, the geometric mean of
the two ratios); a retake that fails fails the trial (the setting did not hold a reading
twice).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from perflab.store.records import Metrics, PointRecord, PointStatus, ok_metrics
from perflab.tune.result import REFERENCE

SURPRISE = 2.0  # rounds' noise (SD of a round's log ratio) from the reference


@dataclass(frozen=True)
class Reading:
    """A trial's measurement: its own points' metrics and its reference's (side by side), or
    why it failed."""

    own: tuple[Metrics, ...]
    reference: tuple[Metrics, ...]
    error: str | None = None  # the first failed point's error
    cause: str | None = None  # REFERENCE when only the reference failed
    repeatable: bool = True  # a failure that measuring again could avoid
    loaded: float | None = None  # the largest share of CPU other processes used meanwhile
    retaken: bool = False  # measured twice (believed as it stands)
    pooled: bool = False  # and both readings are in it

    @property
    def failed(self) -> bool:
        return self.error is not None

    def value(self, score: Callable[[list[Metrics]], float]) -> float:
        """The trial's figure: its score, or its ratio to the reference's side by side."""
        own = score(list(self.own))
        return own / score(list(self.reference)) if self.reference else own


def reading(records: Sequence[PointRecord], config_name: str,
            reference_name: str | None) -> Reading:
    """The reading a round's records give for the trial `config_name`."""
    bad = [r for r in records if r.status != PointStatus.OK or not ok_metrics(r).qps > 0]
    loaded = max((r.metrics.other_cpu for r in records
                  if r.metrics is not None and r.metrics.other_cpu is not None), default=None)
    if bad:
        own = [r for r in bad if r.point.config.name == config_name]
        first = (own or bad)[0]
        error = first.error or ("failed" if first.status != PointStatus.OK
                                else "no query completed")
        return Reading((), (), error if own else f"its reference {error}",
                       None if own else REFERENCE,
                       repeatable=not any(r.server_failed for r in own), loaded=loaded)
    mine = tuple(ok_metrics(r) for r in records if r.point.config.name == config_name)
    theirs = tuple(ok_metrics(r) for r in records if r.point.config.name == reference_name)
    return Reading(mine, theirs, loaded=loaded)


def retake_reason(first: Reading, value: float | None, round_sd: float) -> str | None:
    """Why the search must not believe `first` before measuring it again (None: believe it).
    `value`: its figure (None when it failed); `round_sd`: the lab's SD of a round's log ratio
    for this way of measuring."""
    if first.retaken:
        return None
    if first.error is not None:
        return f"a point failed ({first.error.splitlines()[0]})" if first.repeatable else None
    if first.reference and value is not None and value > 0 and \
            abs(math.log(value)) > SURPRISE * round_sd:
        return (f"its ratio ×{value:.2f} to the reference is more than {SURPRISE:g} rounds' "
                f"noise ({round_sd:.1%} each) from 1")
    return None


def combined(first: Reading, second: Reading) -> Reading:
    """Both readings of a trial, as one: the retake's failure fails it; a first reading that
    failed is replaced; two good readings are pooled (their points scored together)."""
    if second.failed or first.failed:
        return Reading(second.own, second.reference, second.error, second.cause,
                       second.repeatable, _most(first.loaded, second.loaded), retaken=True)
    return Reading(first.own + second.own, first.reference + second.reference,
                   loaded=_most(first.loaded, second.loaded), retaken=True, pooled=True)


def _most(a: float | None, b: float | None) -> float | None:
    return max((v for v in (a, b) if v is not None), default=None)
