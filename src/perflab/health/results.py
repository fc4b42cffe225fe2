"""What a health check finds, as typed values, and how a lab keeps it.

`HealthReport` (views of `RuleResult`s, and the server's `VariableRow`s) is what `take_health`
returns, `perflab health` prints and a lab stores per configuration of a study (`StoredHealth`).

Why the persistence is here and not in store/: the results database is a layer below health
(health runs a lab's server and keeps its report there; store must not know what a report is,
or it would import upwards). So the store keeps a study's health reports as JSON documents,
one per configuration (`ConfigDocument`, the health_reports table: `save_health_json`,
`health_json`, and `Study.health` as read whole), and this module turns a report into that JSON
and back: `save_health` and `stored_health`. The store owns where the rows go; health owns
what they mean.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # the store is a layer below; a report needs it only to be kept
    from perflab.store.db import ResultStore
    from perflab.store.records import Study


class HealthStatus(StrEnum):
    """A health rule's judgement over one view (health/rules.py)."""

    OK = "ok"
    FAIL = "fail"
    INFO = "info"  # reported, not judged: the rule has no range
    FEW = "few"  # too few events in the window to judge
    N_A = "n/a"  # no figure: the server lacks what it reads, or the window holds nothing


@dataclass(frozen=True)
class RuleResult:
    """One health rule judged over one view, self-contained: a stored report reads the same
    later even if perflab's rules change."""

    id: str
    title: str
    status: HealthStatus
    value: float | None
    value_text: str
    detail: str
    unit: str
    range: str
    low: float | None
    high: float | None
    formula: str
    governs: tuple[str, ...]
    source: str
    advice: str  # only for a failing rule


@dataclass(frozen=True)
class HealthView:
    name: str  # "since start" or "hot"
    seconds: float
    rules: tuple[RuleResult, ...]


@dataclass(frozen=True)
class VariableRow:
    group: str
    name: str
    value: str
    human: str
    default: str


@dataclass(frozen=True)
class HealthReport:
    """A server's health: every rule judged over each view (since start, hot), and the
    variables the rules read."""

    server: str  # where: socket path or host:port, or a lab's configuration
    version: str
    taken_at: float
    views: tuple[HealthView, ...]
    variables: tuple[VariableRow, ...]

    def failing(self) -> dict[str, list[str]]:
        """Failing rule ids per view name."""
        return {v.name: [r.id for r in v.rules if r.status == HealthStatus.FAIL]
                for v in self.views}

    def to_json(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> HealthReport:
        views = tuple(
            HealthView(view["name"], view["seconds"], tuple(
                RuleResult(**{**rule, "status": HealthStatus(rule["status"]),
                              "governs": tuple(rule["governs"])})
                for rule in view["rules"]))
            for view in data["views"])
        return cls(data["server"], data["version"], data["taken_at"], views,
                   tuple(VariableRow(**row) for row in data["variables"]))


@dataclass(frozen=True)
class StoredHealth:
    """The latest health report of one configuration of a study (perflab health --lab)."""

    config: str
    report: HealthReport


def save_health(store: ResultStore, study: str, config: str, report: HealthReport) -> None:
    """Keep `report` as the latest health report of `config` in `study`."""
    store.save_health_json(study, config, report.to_json())


def stored_health(study: Study) -> list[StoredHealth]:
    """The latest health report of each configuration of `study`, as the lab keeps them."""
    return [StoredHealth(document.config, HealthReport.from_json(document.data))
            for document in study.health]
