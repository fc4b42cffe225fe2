"""A health report as the STAR notes printed it: the variables, then each measured value beside its
acceptable range, for both views, then what to change."""

from __future__ import annotations

import html
import json

from perflab.health.results import HealthReport, HealthStatus, RuleResult
from perflab.output.table import Table
from perflab.server.flavor import server_label

MARK = {HealthStatus.OK: "ok", HealthStatus.FAIL: "FAIL", HealthStatus.INFO: "",
        HealthStatus.FEW: "(few)", HealthStatus.N_A: "n/a"}


def tables(report: HealthReport, explain: bool = False) -> list[Table]:
    variables = Table(
        "Server global variables",
        ["Variable name", "Config value", "Human-readable value", "Default"],
        [[row.name, row.value, row.human, row.default] for row in report.variables],
    )
    names = [f"{view.name} ({_seconds(view.seconds)})" for view in report.views]
    rows = []
    for index, rule in enumerate(report.views[0].rules):
        per_view = [view.rules[index] for view in report.views]
        rows.append([rule.title, *[_cell(r) for r in per_view], rule.range])
    parameters = Table(
        "Performance parameters",
        ["Parameter", *names, "Acceptable range"],
        rows,
        note="FAIL: outside the acceptable range; (few): too few events in the window to "
        "judge; n/a: nothing to measure in that window",
    )
    out = [variables, parameters]
    if explain:
        out.append(Table("Rules", ["Rule", "Formula", "Governed by", "Threshold source"],
                         [[r.title, r.formula, ", ".join(r.governs) or "-", r.source]
                          for r in report.views[0].rules]))
    return out


def explanations(report: HealthReport) -> list[str]:
    """The rules as text lines: too wide for a terminal table."""
    lines = []
    for rule in report.views[0].rules:
        lines.append(f"- {rule.title} = {rule.formula}; acceptable {rule.range}")
        lines.append(f"    governed by {', '.join(rule.governs) or '-'}; threshold: {rule.source}")
        if rule.status == HealthStatus.N_A and rule.detail:
            lines.append(f"    not applicable since start: {rule.detail}")
    return lines


def recommendations(report: HealthReport) -> list[str]:
    """One line per failing rule: the figure, its range, the views it failed in, the change."""
    lines = []
    for index, rule in enumerate(report.views[0].rules):
        failed = [(view.name, view.rules[index]) for view in report.views
                  if view.rules[index].status == HealthStatus.FAIL]
        if not failed:
            continue
        figures = "; ".join(f"{name} {r.value_text} ({r.detail})" for name, r in failed)
        lines.append(f"{rule.title}: {figures}; acceptable {rule.range} -> {failed[0][1].advice}")
    return lines


def render_text(report: HealthReport, explain: bool = False) -> str:
    head = f"perflab health: {report.server} ({server_label(report.version)})"
    parts = [head, ""] + [t.render() + "\n" for t in tables(report)]
    if explain:
        parts += ["Rules", *explanations(report), ""]
    advice = recommendations(report)
    parts.append("Recommendations")
    parts += [f"- {line}" for line in advice] or ["- none: every judged figure is in range"]
    return "\n".join(parts)


def render_json(report: HealthReport) -> str:
    return json.dumps(report.to_json(), indent=2)


def render_html_section(report: HealthReport, title: str = "Server health") -> str:
    parts = [f"<h2>{html.escape(title)}</h2>",
             f"<p>{html.escape(report.server)}, {html.escape(server_label(report.version))}</p>"]
    parts += [t.html() for t in tables(report, explain=True)]
    advice = recommendations(report)
    parts.append("<h3>Recommendations</h3>")
    parts.append("<ul>" + "".join(f"<li class='flag'>{html.escape(a)}</li>" for a in advice)
                 + "</ul>" if advice else "<p>None: every judged figure is in range.</p>")
    return "\n".join(parts)


def _cell(result: RuleResult) -> str:
    if result.status == HealthStatus.N_A:
        return MARK[HealthStatus.N_A]
    return f"{result.value_text} {MARK[result.status]}".rstrip()


def _seconds(seconds: float) -> str:
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds:.0f} s"
