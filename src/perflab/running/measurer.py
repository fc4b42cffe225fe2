"""What a run measures: one point at a time on one server, switched by SET GLOBAL when every
changed variable is dynamic and restarted otherwise, each change followed by a warm-up; or
configurations side by side on a fleet of servers taking turns in time slices (_fleet.py). A
point whose server dies is stored as failed with the error-log tail. A study's Runner
(runner.py) and tune's trials (tune/search.py) both measure through a Measurer.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace

import pymysql

from perflab.domain import Dataset, Plan, Point, Schedule, ServerConfig
from perflab.errors import PerflabError, error_text
from perflab.lab import Lab
from perflab.load import sysbench
from perflab.load.clients import Clients, connect_clients
from perflab.load.workloads import ResolvedWorkload, resolve
from perflab.probes import busy
from perflab.probes.profile import Profiler
from perflab.probes.status import ProcessWatch, delta, global_status
from perflab.probes.system import host_facts
from perflab.procs import check_stop
from perflab.running import _points as points
from perflab.running._fleet import Fleet
from perflab.running._slices import Slices
from perflab.running._states import ServerStates
from perflab.running.backend import Backend, ManagedBackend
from perflab.running.existing_backend import ExistingBackend
from perflab.running.noise import lab_noise
from perflab.say import Say
from perflab.server import environment as env
from perflab.server.existing import ExistingServer
from perflab.server.managed import ManagedServer
from perflab.server.protocol import Server
from perflab.server.tripwire import Tripped
from perflab.store import PointRecord, ResultStore, RunEnd


def measure(
    server: Server, workload: ResolvedWorkload, dataset: Dataset, threads: int,
    seconds: int, client: list[str] | None = None, clients: Clients | None = None,
) -> tuple[sysbench.LoadResult, dict[str, float]]:
    """One measured point on a running server, with the status counters' delta.

    Its `seconds` are measured after a lead of their own in the same sysbench run
    (sysbench.Slicing.alone), so that sysbench starting its threads, connecting them and
    preparing their statements costs the figures nothing; the status snapshots are taken
    outside the run. `client` prefixes sysbench's command (taskset for a pinned client);
    `clients` spreads the threads over several client machines instead (load/clients.py).
    Raises LoadFailed or a connection error when the run fails.
    """
    with server.connect() as conn:
        server_pid = busy.server_pid(conn)  # a server perflab did not start: not other work
        before = global_status(conn)
    with ProcessWatch([server_pid] if server_pid else []) as usage:
        if clients is not None:
            result = clients.run_window(sysbench.options(workload, dataset, server.endpoint),
                                        sysbench.driver_variables(workload, server.endpoint),
                                        server.endpoint.sysbench_input(), threads, seconds,
                                        workload.family.client_files())
        else:
            result = sysbench.run_alone(workload, dataset, server.endpoint, threads, seconds,
                                        client, server_pid)
    with server.connect() as conn:
        after = global_status(conn)
    return result, {**delta(before, after), **usage.counters(server_pid)}


def run_load(
    server: Server, workload: ResolvedWorkload, dataset: Dataset, threads: int,
    seconds: int, client: list[str] | None = None,
) -> sysbench.LoadResult:
    """sysbench against a running server for `seconds`, from its first second: the load
    health measures with status snapshots around it, start-up included."""
    argv = sysbench.command(workload, dataset, server.endpoint, threads, seconds)
    return sysbench.run([*(client or []), *argv], sysbench.environment(workload, server.endpoint),
                        seconds, threads, server.endpoint.sysbench_input())


class Measurer:
    """Measures the points of one plan and stores them, in a lab the caller has locked: its job
    is the server side of a point (the backend, a configuration brought onto it and warmed
    up, or the fleet of servers side by side), sysbench's load with the probes around it, and
    each finished point stored. It knows nothing of rounds to come, budgets or verdicts: a
    study's Runner (runner.py) drives it round by round, and tune (tune/search.py) measures
    its trials through it.

    Making one checks the workload and every configuration of the plan against the measured
    server's variable catalog (for managed servers, read once per server version by a scratch
    server, then cached in the lab); the measured server starts when the first point needs
    it. `existing`: measure on a server perflab did not start (existing_backend.py).
    """

    def __init__(self, plan: Plan, lab: Lab, store: ResultStore, say: Say = print,
                 existing: ExistingServer | None = None):
        sysbench.sysbench_version()
        self.plan, self.lab, self.store, self.say = plan, lab, store, say
        self.existing = existing
        self.workload: ResolvedWorkload = resolve(plan.workload)
        self.workload.family.write_files(lab.root / "workload")
        self.backend: Backend = (ExistingBackend(existing, plan, self.workload, say) if existing
                                 else ManagedBackend(plan, lab, self.workload, say))
        self.catalog = self.backend.catalog
        self.states = ServerStates(store, plan, self.workload, self.backend.catalog_of, say)
        self.plan_id: int | None = None  # save_plan, or with the first session (open_session)
        self.server_state_id: int | None = None
        self.profiler = Profiler(say)
        self.clients = (connect_clients(plan.run.clients, existing, say)  # other machines' load:
                        if plan.run.clients else None)  # their scheduler reached before any run
        self.schedule: Schedule | None = None  # chosen by get_ready, or on first need (noise)

    def server_options(self, config_name: str) -> dict[str, str]:
        """A configuration's checked server options, as the command line takes them."""
        return self.backend.options[config_name]

    def add_config(self, config: ServerConfig) -> None:
        """A configuration not in the plan (a tuning trial): checked, its dataset ready."""
        self.backend.add(config)

    def get_ready(self) -> tuple[Schedule, str]:
        """Before the first point: every configuration's dataset where its server will find
        it, and the `schedule` chosen (a fleet when the servers fit side by side, else serial),
        with why."""
        for config in self.plan.configs:
            self.backend.ensure_dataset(config)
        self.schedule, why = self.backend.schedule()
        return self.schedule, why

    def own_pids(self) -> list[int]:
        """The server perflab did not start, when it runs on this machine: its work (a dataset
        loading into it, the load) is not other work (probes/busy.py)."""
        if self.existing is None:
            return []
        with self.existing.connect() as conn:
            pid = busy.server_pid(conn)
        return [pid] if pid else []

    def save_plan(self, plan: Plan) -> int:
        """`plan` (this one, its study's design frozen) saved: the sessions opened after it
        belong to it. Returns its id."""
        self.plan_id = self.store.save_plan(plan, self.workload.family.describe(plan.dataset))
        return self.plan_id

    def open_session(self) -> int:
        plan_id = self.save_plan(self.plan) if self.plan_id is None else self.plan_id
        return self.store.begin_session(self.plan.name, plan_id, host_facts(self.lab.root))

    def close_session(self, session: int, outcome: RunEnd) -> None:
        self.backend.stop()
        self.store.end_session(session, outcome)

    def close(self) -> None:
        """The client machines let go (run.clients)."""
        if self.clients is not None:
            self.clients.close()

    def noise(self, schedule: Schedule | None = None) -> tuple[float, str]:
        """The per-round sd of a log ratio this lab measured for this plan's way of measuring
        (or `schedule`'s: tune's trials of one configuration run side by side), and its source."""
        if schedule is None:
            if self.schedule is None:  # asked before a run (tune's re-measure plans its rounds)
                self.schedule = self.backend.schedule()[0]
            schedule = self.schedule
        return lab_noise(self.store, self.plan, self.workload, schedule)

    def measure_point(self, session: int, point: Point, replace: bool = False) -> PointRecord:
        """Run one point (starting or reconfiguring the server as needed) and store it,
        replacing a stored one if `replace` (ResultStore.save_point)."""
        check_stop()
        record = self._point(session, point)
        self.store.save_point(session, self.plan.name, record, replace)
        return record

    # -- side by side --------------------------------------------------------------------------

    def side_by_side_fits(self, configs: list[ServerConfig]) -> str | None:
        """None when `configs` (already added) can run side by side; else why not."""
        return self.backend.side_by_side_fits(configs)

    def fleet(self, session: int, plan: Plan | None = None, probe_every: bool = False) -> Fleet:
        """Servers side by side for `plan`'s configurations (this plan's by default), each
        round's started by `fleet_round`. `probe_every`: slices sized on every server
        (_slices.Slices), for configurations chosen for their effects."""
        plan = plan or self.plan
        slices = Slices(plan, self.workload, self.store, self.say, probe_every)
        return Fleet(plan, self.lab, self.workload, self.backend.options, self.states, slices,
                     session, self.say, self.profiler if plan.run.profile else None)

    @contextmanager
    def fleet_round(self, fleet: Fleet, round_number: int, configs: list[ServerConfig],
                    threads: list[int]) -> Iterator[float]:
        """Round `round_number` of `configs` on `fleet`: their servers started afresh (in the
        order given) and their slices at `threads` sized if the study has none yet; gives the
        seconds that sizing took (set-up, not a round's pace). The servers stop at its end."""
        try:
            yield fleet.start_round(round_number, configs, threads)
        finally:
            fleet.stop()

    def measure_turns(self, fleet: Fleet, session: int, round_number: int, threads: int,
                      configs: list[ServerConfig]) -> list[PointRecord]:
        """One sliced run of `configs` at `threads` in the round `fleet` runs, taking turns in
        the order given: their points, stored (replacing the round's earlier ones)."""
        records = fleet.measure(round_number, threads, configs)
        for record in records:
            self.store.save_point(session, self.plan.name, record, replace=True)
        return records

    def measure_side_by_side(self, session: int, configs: list[ServerConfig],
                             round_number: int) -> list[PointRecord]:
        """One round of `configs` (already added) at every thread count of the plan, each on a
        server of its own, taking turns in time slices: stored as points of round
        `round_number`. Tune judges a trial against a reference measured in the same seconds
        this way, so that the machine's drift falls on both."""
        check_stop()
        self.backend.stop()  # the serial server's memory is not needed meanwhile
        fleet = self.fleet(session, replace(self.plan, configs=tuple(configs),
                                            baseline=configs[0].name))
        order, threads = rotated(list(configs), round_number), list(self.plan.run.threads)
        with self.fleet_round(fleet, round_number, order, threads):
            return [record for count in rotated(threads, round_number)
                    for record in self.measure_turns(fleet, session, round_number, count, order)]

    # -- one point -----------------------------------------------------------------------------

    def _point(self, session: int, point: Point) -> PointRecord:
        started = time.time()
        try:
            self._activate(session, point.config)
        except Tripped:
            raise  # a promise to someone else's server failed: the run stops at once
        except (PerflabError, pymysql.MySQLError) as exc:  # LoadFailed is a PerflabError
            # the setting's own failure when its server did not start or died (not when the
            # warm-up's load failed on a live server)
            server = self.backend.server
            # someone else's server is never known to have gone (ExistingServer.died)
            gone = server is None or (isinstance(server, ManagedServer) and not server.alive())
            self.backend.stop()
            return points.failed(point, started, None, error_text(exc), server_failed=gone)
        return self._measure(point, started)

    def _measure(self, point: Point, started: float) -> PointRecord:
        config, seconds, server = point.config, self.plan.run.run_seconds, active(self.backend)
        profile_data = self.lab.root / "profile.data"
        recorder = None
        if self.plan.run.profile:  # on a managed server: ExistingBackend refuses run.profile
            assert isinstance(server, ManagedServer) and server.pid is not None
            recorder = self.profiler.start(server.pid, seconds, profile_data)
        try:
            result, status_delta = measure(
                server, self.workload, self.plan.dataset_for(config), point.threads,
                seconds, env.client_prefix(config.environment), self.clients,
            )
        except (sysbench.LoadFailed, pymysql.MySQLError) as exc:
            # sysbench failed, or the server went away under it: expected, stored as failed
            Profiler.finish(recorder, profile_data)
            death = self.backend.death_report()
            error = death or error_text(exc)
            self.say(f"point {point.label} failed: {error.splitlines()[0]}")
            return points.failed(point, started, self.server_state_id, error,
                                 server_failed=death is not None)
        profile = Profiler.finish(recorder, profile_data) if recorder else None
        if self.workload.writes:
            self.backend.after_writes()
        return points.measured(point, started, self.server_state_id, result, status_delta,
                               profile)

    def _activate(self, session: int, config: ServerConfig) -> None:
        """Make the server run `config`, then warm it up if anything changed."""
        how = self.backend.activate(config)
        if how is None:
            return
        self.server_state_id = self.states.record(session, active(self.backend), config, how)
        warm_up(self.backend, self.plan, self.workload, config, self.say)


def warm_up(backend: Backend, plan: Plan, workload: ResolvedWorkload, config: ServerConfig,
            say: Say) -> None:
    """After `config` became active on `backend`: caches preloaded, then the workload until its
    throughput stops rising (at most run.warmup_seconds)."""
    run = plan.run
    preloaded = backend.preload()
    if run.warmup_seconds <= 0:
        return
    threads = run.effective_warmup_threads
    endpoint = active(backend).endpoint
    argv = sysbench.command(workload, plan.dataset_for(config), endpoint, threads,
                            run.warmup_seconds)
    took = sysbench.run_until_steady([*env.client_prefix(config.environment), *argv],
                                     sysbench.environment(workload, endpoint),
                                     run.warmup_seconds, endpoint.sysbench_input())
    if workload.writes:
        backend.after_writes()
    say(f"warmed up {config.name}: {preloaded}steady after {took:.1f} s at {threads} threads")


def active(backend: Backend) -> Server:
    """The backend's server, once a configuration is active on it."""
    server = backend.server
    assert server is not None, "no configuration is active"
    return server


def rotated(items: list, round_number: int) -> list:
    """The order of a round: rotated by one each round, so that over as many rounds as there
    are items each one takes every place once (which one runs first, or right after a start,
    is spread over all of them)."""
    shift = (round_number - 1) % len(items) if items else 0
    return items[shift:] + items[:shift]
