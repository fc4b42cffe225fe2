"""perflab health on a lab's managed server: start it fresh with one configuration of a study,
drive the study's workload through a cold phase and a hot window, judge both, keep the report.

The STAR experiment's MySQL tuning notes measured the same way: "cold" counters over a sample
run just after a restart, "hot" deltas once the caches are full.
"""

from __future__ import annotations

from collections.abc import Callable

from perflab.domain import Plan
from perflab.errors import PerflabError
from perflab.health.check import take_health
from perflab.health.results import HealthReport, save_health
from perflab.lab import Lab
from perflab.load.workloads import resolve
from perflab.running.backend import ManagedBackend
from perflab.running.measurer import run_load
from perflab.server import environment as env


def lab_health(lab: Lab, plan: Plan, config_name: str | None, threads: int, seconds: int,
               say: Callable[[str], None]) -> HealthReport:
    """The health report of `plan`'s configuration (default: its baseline) under its workload
    at `threads` threads: `seconds` of load from start, then a hot window of `seconds`."""
    name = config_name or plan.baseline
    try:
        config = plan.config(name)
    except KeyError:
        raise PerflabError(f"study {plan.name} has no configuration {name!r}",
                           hint="one of: " + ", ".join(c.name for c in plan.configs)) from None
    with lab.locked(), lab.store() as store:
        workload = resolve(plan.workload)
        workload.family.write_files(lab.root / "workload")
        backend = ManagedBackend(plan, lab, workload, say)
        backend.ensure_dataset(config)

        def load() -> None:  # the plan's workload, unmeasured
            run_load(server, workload, plan.dataset_for(config), threads, seconds,
                     env.client_prefix(config.environment))
            if workload.writes:
                backend.after_writes()

        try:
            server = backend.start_fresh(config)
            say(f"cold phase: {seconds} s of {plan.workload.label} at {threads} threads "
                "from server start")
            load()
            say(f"hot window: {seconds} s more, between two status snapshots")
            report = take_health(server.endpoint, seconds,
                                 f"lab {lab.root}, study {plan.name}, configuration "
                                 f"{config.name}, {threads} threads", load)
            save_health(store, plan.name, config.name, report)
            return report
        finally:
            backend.stop()
