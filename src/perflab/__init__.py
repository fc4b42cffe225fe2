"""perflab's Python API: what the command line does, callable from a notebook or a script.

    import perflab
    summary = perflab.run("key-cache-segments", "lab/")       # measures, resumes, decides
    study = perflab.load_study("lab/")                        # every point, with its context
    print(perflab.render(study))                              # the tables `perflab report` prints
    found = perflab.digest_logs(["slow.log"])                 # fingerprints, costs, findings
    print(perflab.check_health(perflab.Endpoint(socket="/run/mysqld/mysqld.sock")).failing())

A plan is a built-in study's name, a plan file's path or a `Plan`; a lab is a directory or a
`Lab`. Mistakes in the input raise `PerflabError` (a message and a hint); nothing here prints
unless given `say`. The statistics and tuning stack is imported when a function needs it, so
`import perflab` stays light. (The functions are not named after the subpackages `report`,
`digest` and `health`: importing one of those would shadow them.)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.version import __version__

if TYPE_CHECKING:
    from perflab.digest.digest import Digest
    from perflab.lab import Lab
    from perflab.plan import Plan
    from perflab.report.study import ReportOptions
    from perflab.runner import RunSummary
    from perflab.server.connection import Endpoint
    from perflab.server.existing import Permissions
    from perflab.store import HealthReport, Study

Say = Callable[[str], None]

__all__ = ["Endpoint", "Lab", "PerflabError", "Permissions", "__version__", "check_health",
           "digest_logs", "load_plan", "load_study", "render", "run"]


def _quiet(_: str) -> None:
    return None


def load_plan(plan: str | Path | Plan) -> Plan:
    """A built-in study by name, a plan file by path, or the Plan itself."""
    from perflab.plan import Plan
    from perflab.studies import resolve_plan

    return plan if isinstance(plan, Plan) else resolve_plan(str(plan))


def _lab(lab: str | Path | Lab) -> Lab:
    from perflab.lab import Lab

    return lab if isinstance(lab, Lab) else Lab(Path(lab))


def run(plan: str | Path | Plan, lab: str | Path | Lab, server: Endpoint | None = None,
        allow: Permissions | None = None, say: Say = _quiet) -> RunSummary:
    """Measure `plan` in `lab`: on the lab's own managed servers, or on `server`, a server
    perflab did not start (read-only unless `allow` says otherwise). Points already stored are
    kept: an interrupted run resumes. Returns what was measured and why the run stopped."""
    from perflab.runner import run_study

    the_plan, the_lab = load_plan(plan), _lab(lab)
    if server is None:
        if allow is not None:
            from perflab.errors import PerflabError

            raise PerflabError("permissions are for a server perflab did not start",
                               hint="pass server=Endpoint(...) with allow=Permissions(...)")
        return run_study(the_plan, the_lab, say)
    from perflab.server.existing import ExistingServer, Journal, Permissions

    existing = ExistingServer(server, Journal(the_lab.root), allow or Permissions())
    return run_study(the_plan, the_lab, say, existing)


def load_study(lab: str | Path | Lab, name: str | None = None) -> Study:
    """A study of `lab` (default: its latest), read whole: plan, points, environment."""
    return _lab(lab).study(name)


def render(study: Study, format: str = "text", options: ReportOptions | None = None) -> str:
    """The study's tables as `perflab report` prints them: text, md, csv, json or html (one
    self-contained page with its charts)."""
    from perflab.report.html import render_html
    from perflab.report.study import (
        DEFAULT_OPTIONS,
        render_csv,
        render_json,
        render_markdown,
        render_text,
    )

    formats = dict(zip(REPORT_FORMATS, (render_text, render_markdown, render_csv, render_json,
                                        render_html), strict=True))
    if format not in formats:
        from perflab.errors import PerflabError

        raise PerflabError(f"format {format!r} is not one of {', '.join(formats)}")
    return formats[format](study, options or DEFAULT_OPTIONS)


REPORT_FORMATS = ("text", "md", "csv", "json", "html")


def digest_logs(paths: Sequence[str | Path], kind: str | None = None, jobs: int = 1,
                say: Say | None = None) -> Digest:
    """Fingerprints, costs and findings of MariaDB general or slow query logs (plain or
    gzip'd; `kind` "general" or "slow", detected when None)."""
    from perflab.digest import digest

    return digest.digest_logs([Path(p) for p in paths], kind, jobs=jobs, progress=say)


def check_health(server: Endpoint, interval: float = 10) -> HealthReport:
    """A running server's counters judged since start and over a hot window of `interval`
    seconds (0: since start only). Read-only."""
    from dataclasses import replace

    from perflab.health.check import take_health

    return take_health(replace(server, read_only=True), interval)


def __getattr__(name: str):
    """The API's types, imported when first asked for (`perflab.Endpoint`, ...)."""
    homes = {"Endpoint": "perflab.server.connection", "Lab": "perflab.lab",
             "PerflabError": "perflab.errors", "Permissions": "perflab.server.existing",
             "Plan": "perflab.plan"}
    if name not in homes:
        raise AttributeError(f"module 'perflab' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(homes[name]), name)
