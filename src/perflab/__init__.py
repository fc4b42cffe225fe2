"""perflab's Python API: what the command line does, callable from a notebook or a script.

    import perflab
    summary = perflab.run("key-cache-segments", "lab/")       # measures, resumes, decides
    study = perflab.load_study("lab/")                        # every point, with its context
    print(perflab.render(study))                              # the tables `perflab report` prints
    print(perflab.compare("lab-a/", "lab-b/").render())       # two labs, B against A
    noise = perflab.calibrate("key-cache-segments", "lab/")   # an A/A: this machine's noise
    result = perflab.tune_server("tune.toml", "lab/", budget=8)  # search server settings
    print(result.mycnf())
    found = perflab.digest_logs(["slow.log"])                 # fingerprints, costs, findings
    print(perflab.check_health(perflab.Endpoint(socket="/run/mysqld/mysqld.sock")).failing())

A plan is a built-in study's name, a plan file's path or a `Plan`; a lab is a directory or a
`Lab`. Mistakes in the input raise `PerflabError` (a message, a hint, and `option`: the
argument at fault); nothing here prints unless given `say`. The functions live in
`perflab.api`, and the types they take and return are importable from here, loaded when first
asked for, so `import perflab` stays light. (The functions are not named after the subpackages
`report`, `digest`, `health` and `tune`: importing one of those would shadow them.)
"""

from __future__ import annotations

import importlib

from perflab.api import (
    REPORT_FORMATS,
    calibrate,
    check_health,
    check_lab_health,
    compare,
    digest_logs,
    load_plan,
    load_study,
    render,
    render_suite,
    restore,
    run,
    tune_server,
    write_charts,
)
from perflab.version import __version__

# the types the API takes and returns, and where each is defined
_TYPES = {
    "Calibration": "perflab.running.calibrate",
    "Digest": "perflab.digest.digest",
    "Endpoint": "perflab.server.connection",
    "HealthReport": "perflab.health.results",
    "Lab": "perflab.lab",
    "PerflabError": "perflab.errors",
    "Permissions": "perflab.server.existing",
    "Plan": "perflab.domain",
    "ReportOptions": "perflab.report.study",
    "RunSummary": "perflab.running.runner",
    "Study": "perflab.store",
    "Table": "perflab.output.table",
    "TuneResult": "perflab.tune.result",
}

__all__ = [
    # functions, one per command, and the report formats
    "REPORT_FORMATS", "__version__", "calibrate", "check_health", "check_lab_health",
    "compare", "digest_logs", "load_plan", "load_study", "render", "render_suite", "restore", "run",
    "tune_server", "write_charts",
    # types (_TYPES)
    "Calibration", "Digest", "Endpoint", "HealthReport", "Lab", "PerflabError", "Permissions",
    "Plan", "ReportOptions", "RunSummary", "Study", "Table", "TuneResult",
]


def __getattr__(name: str):
    """The API's types, imported when first asked for (`perflab.Endpoint`, ...)."""
    if name not in _TYPES:
        raise AttributeError(f"module 'perflab' has no attribute {name!r}")
    return getattr(importlib.import_module(_TYPES[name]), name)


def __dir__() -> list[str]:
    return list(__all__)
