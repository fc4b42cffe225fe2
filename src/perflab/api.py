"""The functions of perflab's Python API (`import perflab`): one per command, the command line
being a thin layer over them. Every argument is checked here, in the API's own words: a
mistake raises `PerflabError` whose `option` names the argument at fault (the command line
shows its flag beside the message). Nothing prints unless given `say`. The statistics, chart
and tuning stack is imported when a function needs it, so `import perflab` stays light."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from perflab.errors import PerflabError
from perflab.say import Say, silent

if TYPE_CHECKING:
    from perflab.digest.digest import Digest
    from perflab.domain import Plan
    from perflab.health.results import HealthReport
    from perflab.lab import Lab
    from perflab.output.table import Table
    from perflab.report.study import ReportOptions
    from perflab.running.calibrate import Calibration
    from perflab.running.runner import RunSummary
    from perflab.server.connection import Endpoint
    from perflab.server.existing import Permissions
    from perflab.store import Study
    from perflab.tune.result import TuneResult

REPORT_FORMATS = ("text", "md", "csv", "json", "html")


def load_plan(plan: str | Path | Plan) -> Plan:
    """A built-in study by name, a plan file by path, or the Plan itself."""
    from perflab.studies import resolve_plan

    return resolve_plan(plan)


def _lab(lab: str | Path | Lab) -> Lab:
    from perflab.lab import Lab

    return lab if isinstance(lab, Lab) else Lab(Path(lab))


def run(plan: str | Path | Plan, lab: str | Path | Lab, server: Endpoint | None = None,
        allow: Permissions | None = None, say: Say = silent) -> RunSummary:
    """Measure `plan` in `lab`: on the lab's own managed servers, or on `server`, a server
    perflab did not start (read-only unless `allow` says otherwise). Points already stored are
    kept: an interrupted run resumes. Returns what was measured and why the run stopped."""
    from perflab.running.runner import run_study

    the_plan, the_lab = load_plan(plan), _lab(lab)
    if server is None:
        if allow is not None:
            raise PerflabError("permissions are for a server perflab did not start",
                               hint="name that server too (server=Endpoint(...); "
                               "on the command line --socket, or --host and --port)",
                               option="allow")
        return run_study(the_plan, the_lab, say)
    from perflab.server.existing import ExistingServer, Journal, Permissions

    existing = ExistingServer(server, Journal(the_lab.root), allow or Permissions())
    return run_study(the_plan, the_lab, say, existing)


def load_study(lab: str | Path | Lab, name: str | None = None) -> Study:
    """A study of `lab` (default: its latest), read whole: plan, points, environment."""
    return _lab(lab).study(name)


def _check_margin(margin: float | None) -> None:
    from perflab.stats.design import checked_margin

    if margin is not None:
        checked_margin("margin", margin, option="margin")


def check_report_options(options: ReportOptions) -> None:
    """Refuse options no report can use (before a lab is read)."""
    _check_margin(options.margin)
    if not options.cv_threshold >= 0:
        raise PerflabError(f"cv_threshold must be 0 or more, got {options.cv_threshold}",
                           hint="e.g. 0.05 flags points whose CV exceeds 5%",
                           option="cv_threshold")


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
        raise PerflabError(f"format {format!r} is not one of {', '.join(formats)}",
                           option="format")
    options = options or DEFAULT_OPTIONS
    check_report_options(options)
    return formats[format](study, options)


def render_suite(studies: list[Study], options: ReportOptions | None = None) -> str:
    """The one table over a suite's studies (perflab run versions): per workload and thread
    count, each configuration's change and verdict, and the server's CPU and context switches
    per query."""
    from perflab.report.study import DEFAULT_OPTIONS
    from perflab.report.suite import suite_tables

    options = options or DEFAULT_OPTIONS
    check_report_options(options)
    return "\n\n".join(table.render() for table in suite_tables(studies, options))


def write_charts(study: Study, directory: str | Path,
                 options: ReportOptions | None = None) -> int:
    """Every chart of the study as NAME.png and NAME.svg in `directory` (made if missing);
    returns how many. The verdict charts use the options' margin, the per-second chart its
    `series` point (default: the baseline's first round at the largest thread count)."""
    from perflab.report import charts
    from perflab.report.study import DEFAULT_OPTIONS, judgement, series_point

    options = options or DEFAULT_OPTIONS
    check_report_options(options)
    judged = judgement(study, options) if len(study.plan.configs) > 1 else None
    return charts.write_charts(study, Path(directory), judged,
                               series_point(study, options.series))


def compare(lab_a: str | Path | Lab, lab_b: str | Path | Lab, study_a: str | None = None,
            study_b: str | None = None, margin: float | None = None) -> Table:
    """Two labs' studies (default: each lab's latest) side by side, B against A: per shared
    (configuration, workload, threads), the change with its interval and verdict (Welch, one
    error rate over the table), "equivalent" within ±`margin` (default: study A's plan's)."""
    from perflab.analysis.compare import compare_labs
    from perflab.report.compare import compare_table

    _check_margin(margin)
    return compare_table(compare_labs(load_study(lab_a, study_a), load_study(lab_b, study_b),
                                      margin))


def calibrate(plan: str | Path | Plan, lab: str | Path | Lab, rounds: int = 8,
              threads: Sequence[int] | None = None, say: Say = silent,
              again: bool = False) -> Calibration:
    """An A/A of the plan's baseline against an identical copy, `rounds` rounds at `threads`
    (default: a spread of the plan's): the noise per round, the slices' lag-1 and the effect
    the plan's budget could detect, kept in the lab for the runs that follow. The lab's latest
    calibration of the plan is resumed (or reprinted); `again` measures a new one."""
    from perflab.running.calibrate import calibrate as run_calibration

    return run_calibration(load_plan(plan), _lab(lab), rounds,
                           tuple(threads) if threads else None, say, again)


def tune_server(plan: str | Path | Plan, lab: str | Path | Lab, method: str = "bayes", *,
         budget: int | None = None, seconds: float | str | None = None,
         sampler: str | None = None, storage: str | None = None, seed: int = 0,
         knobs: Sequence[str] | None = None, exclude: Sequence[str] | None = None,
         allow_unsafe: bool = False,
         say: Say = silent) -> TuneResult:
    """Search server settings for the plan's workload (its [tune] section; `knobs` or
    `exclude`, when given, replaces both of the section's), `budget` trials and/or `seconds`
    for the whole tune, end phases included (a number, or a duration such as "10m" or
    "1h30m", as run.time takes it; tune/budget.py says how it splits), with `method`
    (bayes, random or ofat; `sampler`: bayes's, additive unless given); then re-measure the
    best, keep only the knobs with a shown effect and say why. `storage`: an
    Optuna RDB URL shared by workers on several machines."""
    from perflab.plan import duration
    from perflab.tune.search import Tuner, TuneSettings

    the_plan = load_plan(plan)
    settings = TuneSettings.from_plan(dict(the_plan.tune)).chosen(knobs, exclude)
    if seconds is not None:
        seconds = duration("seconds", seconds)
    return Tuner(the_plan, _lab(lab), settings, method, budget=budget, seconds=seconds,
                 storage=storage, sampler=sampler, seed=seed, allow_unsafe=allow_unsafe,
                 say=say).run()


def restore(lab: str | Path | Lab, server: Endpoint | None = None, say: Say = silent) -> bool:
    """Put back the variables a killed perflab left changed on a server it did not start (the
    lab's journal says which and where; `server` when the journal's own address does not
    reach it). False when there was nothing to put back."""
    from perflab.server.existing import Journal, restore_pending

    the_lab = _lab(lab)
    if Journal(the_lab.root).pending() is None:
        return False
    with the_lab.locked():
        restore_pending(the_lab.root, server, say)
    return True


def digest_logs(paths: Sequence[str | Path], kind: str | None = None, burst: int = 10,
                window: float = 1.0, jobs: int = 1, redact: bool = False,
                say: Say | None = None) -> Digest:
    """Fingerprints, costs and findings of MariaDB or MySQL general or slow query logs (plain or
    gzip'd; `kind` "general" or "slow", detected when None): `burst` identical statements
    within `window` seconds are a burst; `jobs` processes share a large file; `redact` drops
    every literal (sample statements and values) from the result."""
    from perflab.digest import digest

    files = [Path(p) for p in paths]
    for path in files:
        if not path.is_file():
            raise PerflabError(f"{path} is not a file", hint="give one or more log files",
                               option="paths")
    if burst < 2:
        raise PerflabError(f"burst must be at least 2, got {burst}",
                           hint="the identical statements that make a burst", option="burst")
    if not (math.isfinite(window) and window > 0):
        raise PerflabError(f"window must be more than 0 seconds, got {window}",
                           hint="e.g. 1.0", option="window")
    if jobs < 1:
        raise PerflabError(f"jobs must be at least 1, got {jobs}", hint="1 digests in this "
                           "process", option="jobs")
    found = digest.digest_logs(files, kind, burst, window, jobs, say)
    return found.without_literals() if redact else found


def _check_interval(interval: float) -> None:
    if not (math.isfinite(interval) and interval >= 0):
        raise PerflabError(f"interval must be 0 or more seconds, got {interval}",
                           hint="0 reports the view since start only", option="interval")


def check_health(server: Endpoint, interval: float = 10) -> HealthReport:
    """A running server's counters judged since start and over a hot window of `interval`
    seconds (0: since start only). Read-only."""
    from perflab.health.check import take_health

    _check_interval(interval)
    return take_health(replace(server, read_only=True), interval)


def check_lab_health(lab: str | Path | Lab, study: str | Path | None = None,
                     config: str | None = None, threads: int | None = None,
                     interval: float = 10, say: Say = silent) -> HealthReport:
    """The counters of a study's configuration (default: the lab's latest study, its
    baseline) on a managed server of the lab under the study's workload at `threads` (default:
    its warm-up threads): `interval` seconds of load from start, then a hot window as long."""
    from perflab.health.lab import lab_health

    _check_interval(interval)
    if threads is not None and threads < 1:
        raise PerflabError(f"threads must be at least 1, got {threads}", option="threads",
                           hint="the load's client threads")
    the_lab = _lab(lab)
    plan = _study_plan(the_lab, None if study is None else str(study))
    return lab_health(the_lab, plan, config, threads or plan.run.effective_warmup_threads,
                      max(1, round(interval)), say)


def _study_plan(lab: Lab, study: str | None) -> Plan:
    """A lab command's study: a plan file, a study the lab holds (its stored plan, with the
    overrides it ran with), or a built-in study; by default the lab's latest study."""
    if study is None:
        return lab.study().plan
    if not (study.endswith(".toml") or Path(study).exists()) and lab.exists():
        with lab.store() as store:
            if study in store.studies():
                return lab.study(study).plan
    return load_plan(study)
