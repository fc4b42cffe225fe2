"""One self-contained HTML page per report: plan, environment, tables, charts and flags.

Charts are inlined as PNG data URIs and the style sheet is inline, so the file opens anywhere
with no network, and the page runs no script.
"""

from __future__ import annotations

import html
import json

from perflab.health.render import render_html_section
from perflab.health.results import stored_health
from perflab.output.figure import png_data_uri
from perflab.output.page import page
from perflab.report import charts
from perflab.report.study import (
    DEFAULT_OPTIONS,
    ReportOptions,
    environment_lines,
    failures,
    findings,
    headline,
    judgement,
    series_point,
    study_flags,
    tables,
)
from perflab.server.flavor import server_label
from perflab.store.records import Study


def render_html(study: Study, options: ReportOptions = DEFAULT_OPTIONS) -> str:
    plan = study.plan
    parts = [f"<h1>perflab: {html.escape(plan.name)}</h1>"]
    found = findings(study, options)
    if found:
        parts.append("<div class='findings'>" + "".join(
            f"<p><strong>{html.escape(line)}</strong></p>" for line in found) + "</div>")
    parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in
                                  headline(study) + environment_lines(study)) + "</ul>")
    parts.append("<h2>Tables</h2>")
    parts += [table.html() for table in tables(study, options)]
    parts.append("<h2>Charts</h2>")
    judged = judgement(study, options) if len(plan.configs) > 1 else None
    figures = charts.study_charts(plan, study.points, judged, series_point(study, options.series))
    for name, fig in figures.items():
        parts.append(f"<figure><img alt='{name} chart' src='{png_data_uri(fig)}'>"
                     f"<figcaption>{name}</figcaption></figure>")
    found = study_flags(study, options)
    parts.append("<h2>Flags</h2>")
    parts.append("<ul>" + "".join(f"<li class='flag'>{html.escape(f)}</li>" for f in found)
                 + "</ul>" if found else "<p>No flags: every point is within the thresholds.</p>")
    failed = failures(study)
    if failed:
        parts.append("<h2>Failed points</h2><ul>"
                     + "".join(f"<li>{html.escape(line)}</li>" for line in failed) + "</ul>")
    for stored in stored_health(study):
        parts.append(render_html_section(stored.report,
                                         f"Server health: configuration {stored.config}"))
    parts.append("<h2>Plan</h2><pre>" + html.escape(json.dumps(plan.to_json(), indent=2))
                 + "</pre>")
    parts.append(_environment(study))
    return page(f"perflab: {plan.name}", "\n".join(parts))


def _environment(study: Study) -> str:
    parts = ["<h2>Environment</h2>"]
    if study.host is not None:
        parts.append("<h3>Host</h3><pre>" + html.escape(json.dumps(study.host, indent=2))
                     + "</pre>")
    for state in study.server_states[-len(study.plan.configs):]:
        parts.append(
            f"<details><summary>Server of configuration {html.escape(state.config)} "
            f"({html.escape(state.how)}, {html.escape(server_label(state.version))}, "
            f"{len(state.variables)} variables)</summary><pre>"
            + html.escape(json.dumps({"process": state.process, "variables": state.variables},
                                     indent=1))
            + "</pre></details>"
        )
    return "\n".join(parts)
