"""One self-contained HTML page per report: plan, environment, tables, charts and flags.

Charts are inlined as PNG data URIs and the style sheet is inline, so the file opens anywhere
with no network, and the page runs no script.
"""

from __future__ import annotations

import base64
import html
import json

from perflab.analysis import charts, quality
from perflab.analysis.page import page
from perflab.analysis.report import (
    DEFAULT_OPTIONS,
    ReportOptions,
    StudyResults,
    environment_lines,
    failures,
    headline,
    series_point,
    tables,
)
from perflab.health.check import report_from_json
from perflab.health.report import render_html_section


def render_html(results: StudyResults, options: ReportOptions = DEFAULT_OPTIONS,
                extra_sections: list[str] | None = None) -> str:
    plan = results.plan
    parts = [f"<h1>perflab: {html.escape(plan['name'])}</h1>"]
    parts.append("<ul>" + "".join(f"<li>{html.escape(line)}</li>" for line in
                                  headline(results) + environment_lines(results)) + "</ul>")
    parts.append("<h2>Tables</h2>")
    parts += [table.html() for table in tables(results, options)]
    parts.append("<h2>Charts</h2>")
    figures = charts.study_charts(plan, results.points, options.min_effect,
                                  series_point(results, options.series))
    for name, fig in figures.items():
        png, _ = charts.render(fig)
        data = base64.b64encode(png).decode()
        parts.append(f"<figure><img alt='{name} chart' src='data:image/png;base64,{data}'>"
                     f"<figcaption>{name}</figcaption></figure>")
    found = quality.flags(plan, results.points, options.cv_threshold)
    parts.append("<h2>Flags</h2>")
    parts.append("<ul>" + "".join(f"<li class='flag'>{html.escape(f)}</li>" for f in found)
                 + "</ul>" if found else "<p>No flags: every point is within the thresholds.</p>")
    failed = failures(results)
    if failed:
        parts.append("<h2>Failed points</h2><ul>"
                     + "".join(f"<li>{html.escape(line)}</li>" for line in failed) + "</ul>")
    for stored in results.health:
        parts.append(render_html_section(report_from_json(stored),
                                         f"Server health: configuration {stored['config']}"))
    parts += extra_sections or []
    parts.append("<h2>Plan</h2><pre>" + html.escape(json.dumps(plan, indent=2)) + "</pre>")
    parts.append(_environment(results))
    return page(f"perflab: {plan['name']}", "\n".join(parts))


def _environment(results: StudyResults) -> str:
    parts = ["<h2>Environment</h2>"]
    if results.sessions:
        host = json.loads(results.sessions[-1]["host_json"])
        parts.append("<h3>Host</h3><pre>" + html.escape(json.dumps(host, indent=2)) + "</pre>")
    for state in results.server_states[-len(results.plan["configs"]):]:
        variables = json.loads(state["variables_json"])
        process = json.loads(state["process_json"])
        parts.append(
            f"<details><summary>Server of configuration {html.escape(state['config'])} "
            f"({html.escape(state['how'])}, MariaDB {html.escape(state['version'])}, "
            f"{len(variables)} variables)</summary><pre>"
            + html.escape(json.dumps({"process": process, "variables": variables}, indent=1))
            + "</pre></details>"
        )
    return "\n".join(parts)
