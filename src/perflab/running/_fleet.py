"""Servers side by side: one managed mariadbd per configuration, taking turns in time slices.

A round starts every configuration's server afresh, each on its own copy of the dataset (a
slot). The configurations move one slot further every round, so that what belongs to a copy
(its place in the page cache, its file layout) or to one start of a server (where its caches
landed in memory) is spread over all configurations and shows up as round-to-round noise, not
as a difference. Before measuring, the caches are preloaded (load/preload.py).

At each thread count, one sysbench per server runs at once and they take turns in short slices
of time (load/lua/perflab.lua), so every configuration is measured in the same seconds as the
baseline: the machine's drift, which on a shared 2-core machine is tens of percent over tens of
seconds, falls on all of them alike.

A turn must hold many of its events: each thread count's slice is sized to the events of the
slowest configuration before the study's first round (_slices.py), and a point's window is
whole rotations, as many turns for every server, at least MIN_TURNS.
"""

from __future__ import annotations

import math
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pymysql

from perflab.domain import Plan, Point, ServerConfig
from perflab.errors import PerflabError, error_text
from perflab.lab import Lab, ServerDir
from perflab.load import sysbench
from perflab.load.preload import preload
from perflab.load.workloads import ResolvedWorkload
from perflab.probes.profile import Profiler
from perflab.probes.status import ProcessWatch, delta, global_status
from perflab.probes.system import ram_bytes
from perflab.running import _points as points
from perflab.running._slices import Slices
from perflab.running._states import ServerStates
from perflab.running.turns import TurnCpu
from perflab.say import Say
from perflab.server import environment as env
from perflab.server.managed import ManagedServer
from perflab.server.memory import configured_sizes, memory_estimate
from perflab.server.variables import Catalog
from perflab.store import Activation, PointRecord, Symbol

MEMORY_SHARE = 0.5  # the fleet's servers may take up to half the RAM, worst case
PERF_ATTACH_SECONDS = 1.0  # perf's own start, before the slices' clock starts
PROFILE_SLACK_SECONDS = 30  # a recording's upper bound past the sliced run (stopped at its end)


@dataclass
class FleetServer:
    """One configuration's server in the current round."""

    config: ServerConfig
    slot: ServerDir
    server: ManagedServer | None = None
    state_id: int | None = None
    error: str | None = None  # why it has no server this round
    start_failed: bool = False  # the error is its server's start (the setting's own failure)

    @property
    def running(self) -> ManagedServer:
        """Its server, for a member that has one this round (the only ones measured)."""
        assert self.server is not None, f"{self.config.name} has no server this round"
        return self.server

    @property
    def pid(self) -> int:
        """Its running server's process id."""
        pid = self.running.pid
        assert pid is not None, f"{self.config.name}'s server has no process"
        return pid

    def launch(self, key: str, options: dict[str, str], say: Say) -> ManagedServer | None:
        """This round's copy of dataset `key` checked out and a server launched on it, not
        yet waited for; None when either fails (the reason kept, `give_up`)."""
        server = None
        try:
            self.slot.checkout(key, say)
            server = self.slot.server(options, env.server_environment(self.config.environment))
            server.launch()
            return server
        except PerflabError as exc:
            self.give_up(exc, server is not None, say)
            return None

    def give_up(self, exc: Exception, start_failed: bool, say: Say) -> None:
        """No server this round: why, said and kept for its points (`start_failed`: its
        server's start failed, the setting's own failure)."""
        self.error = error_text(exc)
        self.start_failed = start_failed
        self.slot.set_state(dirty=True)
        say(f"configuration {self.config.name}: {self.error.splitlines()[0]}")
        if self.server is not None:
            self.server.stop()
            self.server = None

    def death_report(self) -> str:
        self.slot.set_state(dirty=True)  # tables may be marked crashed: restore
        return self.running.death_report()


def fits(plan: Plan, catalog_of: Callable[[ServerConfig], Catalog],
         options: dict[str, dict[str, str]], lab: Lab, snapshot_bytes: int) -> str | None:
    """None when one server per configuration fits in memory and disk; else why not."""
    connections = max(plan.run.threads) + 2
    memory = 0
    for config in plan.configs:
        sizes = configured_sizes(catalog_of(config), options[config.name])
        sizes["max_connections"] = min(sizes["max_connections"], connections)
        memory += memory_estimate(sizes)
    if memory > ram_bytes() * MEMORY_SHARE:
        return (f"{len(plan.configs)} servers would take up to {memory / 2**30:.1f} GiB, more "
                f"than half the RAM")
    free = shutil.disk_usage(lab.root).free
    if snapshot_bytes * len(plan.configs) > free * 0.8:
        return f"{len(plan.configs)} copies of the dataset would not fit on the lab's disk"
    return None


class Fleet:
    """The servers of one plan's configurations, side by side (see above): each round started
    afresh in its slots, then sliced runs of them taking turns."""

    def __init__(self, plan: Plan, lab: Lab, workload: ResolvedWorkload,
                 options: dict[str, dict[str, str]], states: ServerStates, slices: Slices,
                 session: int, say: Say, profiler: Profiler | None = None):
        """`options`: each configuration's checked server options; `states` stores what each
        server runs when it starts, in `session`; `slices`: the turns' lengths. `profiler`
        (run.profile): each server recorded by perf during the sliced run; perf samples a
        server only while it runs, so its profile is of its own slices."""
        self.plan, self.lab, self.workload, self.say = plan, lab, workload, say
        self.profiler = profiler
        self.options, self.states, self.slices, self.session = options, states, slices, session
        self.members: dict[str, FleetServer] = {}
        self.lead_seconds = 0.0  # the next sliced run's lead: the warm-up, after a start
        # Slots, one per configuration, grouped by dataset: rotation stays within a group.
        self.groups: dict[str, list[ServerConfig]] = {}
        for config in plan.configs:
            self.groups.setdefault(self.dataset_key(config), []).append(config)
        self.first_slot: dict[str, int] = {}
        number = 0
        for key, configs in self.groups.items():
            self.first_slot[key] = number
            number += len(configs)

    def dataset_key(self, config: ServerConfig) -> str:
        return self.workload.config_dataset_key(self.plan, config)

    def slot_of(self, config: ServerConfig, round_number: int) -> ServerDir:
        key = self.dataset_key(config)
        group = self.groups[key]
        offset = (group.index(config) + round_number) % len(group)
        return self.lab.slot(self.first_slot[key] + offset)

    def start_round(self, round_number: int, configs: list[ServerConfig], threads: list[int]
                    ) -> float:
        """Every configuration of the round on a freshly started server, in its slot for this
        round, with its caches preloaded, then the slices at `threads` ready (Slices.ready: the
        seconds that took are returned). The servers are launched together, in the order
        given, then waited for in that order. A server that will not start is noted, and its
        configuration's points of the round fail with the reason."""
        self.stop()
        self.lead_seconds = float(self.plan.run.warmup_seconds)
        launched: list[tuple[FleetServer, ManagedServer]] = []
        for config in configs:
            member = FleetServer(config, self.slot_of(config, round_number))
            self.members[config.name] = member
            if self.workload.writes:
                member.slot.set_state(dirty=True)  # equal footing: every round from the snapshot
            server = member.launch(self.dataset_key(config), self.options[config.name],
                                   self.say)
            if server is not None:
                launched.append((member, server))
        try:
            for member, server in launched:
                try:
                    server.wait_started()
                    member.server = server
                    member.state_id = self.states.record(self.session, server, member.config,
                                                         Activation.START)
                    preload(server.endpoint, self.workload.family.schema, member.slot.datadir)
                except (PerflabError, pymysql.MySQLError) as exc:
                    member.give_up(exc, member.server is None, self.say)
        except BaseException:  # interrupted: the servers not yet waited for stop too
            for member, server in launched:
                if member.server is None:
                    server.kill()
            raise
        return self.slices.ready([(m.config, m.running) for m in self.members.values()
                                  if m.server is not None], threads)

    def measure(self, round_number: int, threads: int, configs: list[ServerConfig]
                ) -> list[PointRecord]:
        """One sliced run of `configs` at `threads`, taking turns in the order given; the
        first after the servers started leads with run.warmup_seconds."""
        started = time.time()
        records: list[PointRecord] = []
        live = []
        for config in configs:
            member = self.members[config.name]
            point = self.plan.point(config, threads, round_number)
            if member.server is None or not member.server.alive():
                error = member.error or member.death_report()
                records.append(points.failed(point, started, member.state_id, error,
                                             server_failed=member.error is None
                                             or member.start_failed))
            else:
                live.append((member, point))
        if not live:
            return records
        slice_ms = self.slices.ms(threads)
        rotation = slice_ms * len(live)
        lead_ms = max(self.lead_seconds * 1000, 2 * rotation)
        self.lead_seconds = 0.0
        # a window begun before every thread had started (LateStart: a machine slow to start
        # them) is measured once more after a longer lead, as a point measured alone is
        for lead in (lead_ms, max(lead_ms, sysbench.LATE_LEAD_MS)):
            results, before, turns, profiles, usage = self._sliced(live, threads, slice_ms,
                                                                    lead)
            if not any(isinstance(r, sysbench.LateStart) for r in results):
                break
        for index, ((member, point), result) in enumerate(zip(live, results, strict=True)):
            if isinstance(result, sysbench.LoadResult):
                result.off_turn_cpu = turns.off_turn(index)
            records.append(self._record(member, point, result, before[member.config.name],
                                        usage.counters(member.pid),
                                        started, profiles[member.config.name]))
        return records

    def _sliced(self, live: list[tuple[FleetServer, Point]], threads: int, slice_ms: float,
                lead_ms: float) -> tuple[list[sysbench.LoadResult | sysbench.LoadFailed],
                                         dict[str, dict], TurnCpu, dict[str, list[Symbol]],
                                         ProcessWatch]:
        """One sliced run of the live servers after a lead of `lead_ms` (whole rotations):
        each job's result, the status before it, the CPU taken in and out of turns, each
        server's profile, and its process's counters over the run."""
        run, count = self.plan.run, len(live)
        rotation = slice_ms * count
        lead_ms = rotation * -(-lead_ms // rotation)  # whole rotations
        measure_ms = sysbench.turns_window_ms(run.run_seconds, slice_ms, count)
        # perf attaches before the clock starts, so that its start costs the slices nothing;
        # it is stopped when sysbench ends
        recorders = {member.config.name: self._recorder(
            member, math.ceil((lead_ms + measure_ms) / 1000) + PROFILE_SLACK_SECONDS)
            for member, _ in live}
        if self.profiler is not None:
            time.sleep(PERF_ATTACH_SECONDS)
        now = sysbench.monotonic_ms()
        slicing = sysbench.Slicing(sysbench.Slicing.epoch(now, threads * count), slice_ms, count,
                                   lead_ms, measure_ms)
        before = {}
        jobs = []
        for member, _ in live:
            with member.running.connect() as conn:
                before[member.config.name] = global_status(conn)
            argv = sysbench.command(self.workload, self.plan.dataset_for(member.config),
                                    member.running.endpoint, threads, slicing.run_seconds(now))
            jobs.append(([*env.client_prefix(member.config.environment), *argv],
                         sysbench.environment(self.workload)))
        pids = [member.pid for member, _ in live]
        with TurnCpu(pids, slicing) as turns, ProcessWatch(pids) as usage:
            results = sysbench.run_sliced(jobs, slicing, threads)
        profiles = {name: Profiler.finish(recorder, data, early=True)
                    for name, (recorder, data) in recorders.items()}
        return results, before, turns, profiles, usage

    def _record(self, member: FleetServer, point: Point, result, before: dict,
                process: dict[str, float], started: float, profile: list[Symbol]
                ) -> PointRecord:
        if isinstance(result, sysbench.LoadFailed) or not member.running.alive():
            died = member.running.died()
            error = member.death_report() if died else error_text(result)
            self.say(f"point {point.label} failed: {error.splitlines()[0]}")
            return points.failed(point, started, member.state_id, error, server_failed=died)
        try:
            with member.running.connect() as conn:
                moved = {**delta(before, global_status(conn)), **process}
        except pymysql.MySQLError as exc:
            return points.failed(point, started, member.state_id, error_text(exc))
        if self.workload.writes:
            member.slot.set_state(dirty=True)
        return points.measured(point, started, member.state_id, result, moved, profile)

    def _recorder(self, member: FleetServer, seconds: int
                  ) -> tuple[subprocess.Popen | None, Path]:
        """perf recording `member`'s server for `seconds`, when the fleet profiles, and where."""
        data = self.lab.root / f"profile-{member.config.name}.data"
        if self.profiler is None:
            return None, data
        return self.profiler.start(member.pid, seconds, data), data

    def stop(self) -> None:
        for member in self.members.values():
            if member.server is not None:
                member.server.stop()
        self.members = {}

