"""Driving sysbench through perflab's Lua hook and reading its JSON lines.

perflab never scrapes sysbench's human-readable text: lua/perflab.lua wraps the workload script
and prints one JSON object per line (intervals, the cumulative total, per-thread latency
histograms), which this module parses into a LoadResult.
"""

from __future__ import annotations

import json
import math
import os
import resource
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

from perflab.domain import Dataset
from perflab.errors import PerflabError
from perflab.load.workloads import ResolvedWorkload
from perflab.probes.busy import OtherCpu
from perflab.procs import die_with_parent
from perflab.server.connection import Endpoint
from perflab.store.records import Metrics, Sample

SYSBENCH = "sysbench"
SYSBENCH_SCRIPTS = Path("/usr/share/sysbench")
LUA_DIR = Path(__file__).parent / "lua"
DRIVER = LUA_DIR / "perflab.lua"
LUA_PATH = f"{LUA_DIR}/?.lua;{SYSBENCH_SCRIPTS}/?.lua;;"


@dataclass
class LoadResult:
    seconds: float
    events: int
    reads: int
    writes: int
    other: int
    errors: int
    reconnects: int
    latency_min_ms: float
    latency_avg_ms: float
    latency_max_ms: float
    latency_p95_ms: float
    latency_p99_ms: float
    series: list[Sample] = field(default_factory=list)
    histogram: dict[int, int] = field(default_factory=dict)
    client_cpu: float | None = None  # share of this machine's usable CPUs sysbench used
    other_cpu: float | None = None  # share of the machine's CPU time others used (probes/busy)
    steal_cpu: float | None = None  # the hypervisor's steal among it
    other_work: tuple[str, ...] = ()  # under load: the busiest other processes (not stored)
    # fleet: the share of its server's CPU time that fell in the other servers' turns
    off_turn_cpu: float | None = None
    # load from several client machines (load/clients.py): each worker's part of the point
    clients: list[dict] | None = None

    @property
    def queries(self) -> int:
        return self.reads + self.writes + self.other

    @property
    def qps(self) -> float:
        return self.queries / self.seconds

    @property
    def tps(self) -> float:
        return self.events / self.seconds

    def metrics(self, rows_per_query: float | None) -> Metrics:
        """The point's stored figures; rows per query comes from the server's counters."""
        seconds = self.seconds
        return Metrics(
            seconds=seconds, events=self.events, queries=self.queries, reads=self.reads,
            writes=self.writes, other=self.other, errors=self.errors,
            reconnects=self.reconnects, tps=self.tps, qps=self.qps,
            reads_ps=self.reads / seconds, writes_ps=self.writes / seconds,
            other_ps=self.other / seconds, latency_min_ms=self.latency_min_ms,
            latency_avg_ms=self.latency_avg_ms, latency_p95_ms=self.latency_p95_ms,
            latency_p99_ms=self.latency_p99_ms, latency_max_ms=self.latency_max_ms,
            rows_per_query=rows_per_query, client_cpu=self.client_cpu,
            off_turn_cpu=self.off_turn_cpu, other_cpu=self.other_cpu,
            steal_cpu=self.steal_cpu,
        )


class LoadFailed(PerflabError):
    """sysbench did not produce a result; the detail carries its output's tail. A failed
    point stores it; elsewhere the CLI prints it."""


class LateStart(LoadFailed):
    """A measured window began before every sysbench thread had run its first event (a machine
    slow to start them, under load): the window would hold their start."""


def sysbench_version() -> str:
    if shutil.which(SYSBENCH) is None:
        raise PerflabError(
            "sysbench is not installed", hint="install Debian's sysbench (README command 1 does)"
        )
    out = subprocess.run([SYSBENCH, "--version"], capture_output=True, text=True, check=False)
    return out.stdout.strip()


def command(
    workload: ResolvedWorkload,
    dataset: Dataset,
    endpoint: Endpoint,
    threads: int,
    seconds: int,
    report_interval: int = 1,
) -> list[str]:
    return run_command(options(workload, dataset, endpoint, report_interval), threads, seconds)


def options(workload: ResolvedWorkload, dataset: Dataset, endpoint: Endpoint,
            report_interval: int = 1) -> list[str]:
    """sysbench's options for `workload` on `endpoint`, all but the threads and the run's
    length (a client worker of load/clients.py runs them with its own share of the threads)."""
    return [
        "--db-driver=mysql",
        *endpoint.sysbench_args(),
        f"--mysql-db={dataset.existing or workload.family.schema}",
        *workload.family.sysbench_args(dataset, workload.writes),
        "--events=0",
        f"--report-interval={report_interval}",
        "--percentile=95",
        *(f"--{key.replace('_', '-')}={_option(value)}"
          for key, value in workload.sysbench_options().items()),
    ]


def run_command(options: list[str], threads: int, seconds: int) -> list[str]:
    """The command that runs perflab's driver with `options` at `threads` for `seconds`."""
    return [SYSBENCH, str(DRIVER), *options, f"--threads={threads}", f"--time={seconds}", "run"]


def environment(workload: ResolvedWorkload, endpoint: Endpoint | None = None
                ) -> dict[str, str]:
    """sysbench's environment for `workload`; with an `endpoint` whose sessions have settings
    (read-only, a statement time limit), lua/perflab.lua gives them to every connection of the
    workload's script."""
    return {**os.environ, "LUA_PATH": LUA_PATH, **driver_variables(workload, endpoint)}


def driver_variables(workload: ResolvedWorkload, endpoint: Endpoint | None = None
                     ) -> dict[str, str]:
    """What lua/perflab.lua and the workload's script read from the environment (no path of
    this machine: a client worker of load/clients.py runs them with its own)."""
    variables = {"PERFLAB_WORKLOAD": workload.spec.script,
                 **workload.family.sysbench_environment()}
    if endpoint is not None:
        variables.update(endpoint.sysbench_environment())
    return variables


START_ALLOWANCE_MS = 200  # sysbench's start, before a sliced run's clock begins ...
PER_THREAD_MS = 3  # ... plus this per client thread of all its processes
POINT_LEAD_MS = 1000  # a point's own warm-up: its threads connected, statements prepared
LATE_LEAD_MS = 5000  # the lead of a point measured again because its threads started late
POINT_SLICE_MS = 250  # a point's series: events counted per quarter second


def monotonic_ms() -> float:
    """Now on the clock the Lua driver's slices are counted on (CLOCK_MONOTONIC)."""
    return time.clock_gettime(time.CLOCK_MONOTONIC) * 1000


@dataclass(frozen=True)
class Slicing:
    """Several sysbench processes, one per server, taking turns on one clock: slice s (of
    slice_ms, counted from epoch_ms on CLOCK_MONOTONIC) belongs to process s mod count. The
    first lead_ms warm up, the next measure_ms are measured (see lua/perflab.lua).

    With count 1 (`Slicing.alone`) one process has every slice: a point measured on its own,
    whose window leaves out sysbench starting its threads and their first events, and whose
    slices only count its series."""

    epoch_ms: float
    slice_ms: float
    count: int
    lead_ms: float
    measure_ms: float

    @staticmethod
    def epoch(now_ms: float, threads: int) -> float:
        """When the slices' clock may begin for processes started at now_ms with `threads`
        client threads in all."""
        return now_ms + START_ALLOWANCE_MS + PER_THREAD_MS * threads

    @classmethod
    def alone(cls, now_ms: float, threads: int, seconds: float,
              lead_ms: float = POINT_LEAD_MS) -> Slicing:
        """One process measured for `seconds` after a lead of its own."""
        return cls.starting(cls.epoch(now_ms, threads), seconds, lead_ms)

    @classmethod
    def starting(cls, epoch_ms: float, seconds: float,
                 lead_ms: float = POINT_LEAD_MS) -> Slicing:
        """One process measured for `seconds` after a lead of its own, its clock beginning at
        `epoch_ms` (several client workers given one start: load/clients.py)."""
        return cls(epoch_ms, POINT_SLICE_MS, 1, lead_ms, seconds * 1000)

    def timeout(self, threads: int) -> float:
        """How long a process of this slicing with `threads` threads may take to end."""
        return (self.lead_ms + self.measure_ms) / 1000 + 60 + threads // 4

    def variable(self, index: int) -> str:
        return (f"{self.epoch_ms:.3f} {self.slice_ms:.3f} {self.count} {index} "
                f"{self.lead_ms:.3f} {self.measure_ms:.3f}")

    @property
    def seconds(self) -> float:
        """Each process's measured time: its share of the measured window."""
        return self.measure_ms / self.count / 1000

    def run_seconds(self, now_ms: float) -> int:
        """sysbench's --time for a process started at now_ms: past the measured window."""
        return math.ceil((self.epoch_ms - now_ms + self.lead_ms + self.measure_ms) / 1000) + 1


def start(argv: list[str], env: dict[str, str], stdin: str | None = None) -> subprocess.Popen:
    """sysbench started; `stdin` (Endpoint.sysbench_input: a password) is written to its
    standard input, which it reads as a config file, and closed."""
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                               text=True, preexec_fn=die_with_parent(signal.SIGKILL))
    if stdin:
        assert process.stdin is not None, "opened with stdin=PIPE"
        process.stdin.write(stdin)
        process.stdin.close()
        process.stdin = None  # written and closed: communicate() must leave it alone
    return process


def finish(process: subprocess.Popen, timeout: float,
           slicing: tuple[Slicing, int] | None = None) -> LoadResult:
    """Wait for a started sysbench and parse its JSON lines. Raises LoadFailed."""
    try:
        stdout, stderr = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise LoadFailed(f"sysbench did not finish within {timeout:.0f} s") from None
    result = parse(stdout, slicing)
    if process.returncode != 0 or result is None:
        tail = "\n".join((stderr or stdout).strip().splitlines()[-12:])
        lines = tail.splitlines()
        reason = next((line for line in lines if "FATAL" in line), lines[-1] if lines else
                      "no output")
        raise LoadFailed(f"sysbench exited with code {process.returncode}: {reason.strip()}",
                         detail=tail)
    return result


def run(argv: list[str], env: dict[str, str], seconds: int, threads: int,
        stdin: str | None = None) -> LoadResult:
    """Run sysbench to completion and parse its JSON lines. Raises LoadFailed."""
    with ClientCpu() as cpu:
        result = finish(start(argv, env, stdin), seconds + 60 + threads // 4)
    result.client_cpu = cpu.share
    return result


class ClientCpu:
    """The CPU the load generator used while the block ran, as a share of the CPUs this
    process may use (sysbench's user and system time, from the children's rusage; the block
    must wait for every child it starts). Near 1, the client, not the server, may be the limit
    (the STAR notes doubled their client machines to rule this out)."""

    def __enter__(self) -> ClientCpu:
        self.share: float | None = None
        self._cpu = _children_cpu()
        self._wall = time.monotonic()
        return self

    def __exit__(self, *exc) -> None:
        wall = time.monotonic() - self._wall
        if wall > 0:
            used = _children_cpu() - self._cpu
            self.share = used / (wall * len(os.sched_getaffinity(0)))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


STEADY_RISE = 0.03  # a warm-up is over when the last 2 s run no more than 3% above the 2 s before


def run_until_steady(argv: list[str], env: dict[str, str], seconds: int,
                     stdin: str | None = None) -> float:
    """A warm-up: sysbench for at most `seconds`, stopped as soon as its throughput stops
    rising (at least 4 one-second intervals). Returns the seconds it ran. Raises LoadFailed."""
    started = time.monotonic()
    process = start(argv, env, stdin)
    assert process.stdout is not None and process.stderr is not None, "start() pipes them"
    rates: list[float] = []
    try:
        for line in process.stdout:
            if line.startswith('{"type":"interval"'):
                rates.append(_interval(json.loads(line)).qps)
                if steady(rates):
                    process.terminate()
                    break
        process.wait(timeout=seconds + 60)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        raise LoadFailed(f"the warm-up did not finish within {seconds + 60} s") from None
    if process.returncode not in (0, -signal.SIGTERM) and not steady(rates):
        tail = "\n".join(process.stderr.read().strip().splitlines()[-12:])
        raise LoadFailed(f"sysbench's warm-up exited with code {process.returncode}",
                         detail=tail)
    return time.monotonic() - started


def steady(rates: list[float]) -> bool:
    """No rise left: the mean of the last two intervals is within STEADY_RISE of (or below)
    the mean of the two before them."""
    if len(rates) < 4:
        return False
    before, last = sum(rates[-4:-2]) / 2, sum(rates[-2:]) / 2
    return last <= before * (1 + STEADY_RISE)


def run_alone(workload: ResolvedWorkload, dataset: Dataset, endpoint: Endpoint, threads: int,
              seconds: float, client: list[str] | None = None,
              server_pid: int | None = None, lead_ms: float = POINT_LEAD_MS) -> LoadResult:
    """One sysbench on `endpoint` measured for `seconds` after a lead of its own in the same
    run (Slicing.alone); `client` prefixes its command (taskset); `server_pid`: a server this
    process did not start, whose CPU time is not other work. A window that began before every
    thread had started (LateStart: a machine slow to start them) is measured once more after a
    lead of LATE_LEAD_MS, a window as long, so the figures mean the same. Raises LoadFailed."""
    for lead in (lead_ms, max(lead_ms, LATE_LEAD_MS)):
        now = monotonic_ms()
        window = Slicing.alone(now, threads, seconds, lead)
        argv = command(workload, dataset, endpoint, threads, window.run_seconds(now))
        (result,) = run_sliced([([*(client or []), *argv], environment(workload, endpoint))],
                               window, threads, endpoint.sysbench_input(),
                               [server_pid] if server_pid else [])
        if not isinstance(result, LateStart):
            break
    if isinstance(result, LoadFailed):
        raise result
    return result


def run_sliced(jobs: list[tuple[list[str], dict[str, str]]], slicing: Slicing,
               threads: int, stdin: str | None = None, servers: Sequence[int] = ()
               ) -> list[LoadResult | LoadFailed]:
    """Start one sysbench per job (each with its place in the slicing), wait for all, and give
    each job's result or its failure: one server failing does not fail the others. `stdin`:
    as for `start`, to every job; `servers`: pids of servers this process did not start,
    whose CPU time is not other work (probes/busy.py)."""
    processes = []
    results: list[LoadResult | LoadFailed] = []
    # the jobs together: they share the client machine
    with ClientCpu() as cpu, OtherCpu(servers) as others:
        for index, (argv, env) in enumerate(jobs):
            processes.append(start(argv, {**env, "PERFLAB_SLICES": slicing.variable(index)},
                                   stdin))
        timeout = slicing.timeout(threads)
        for index, process in enumerate(processes):
            try:
                results.append(finish(process, timeout, (slicing, index)))
            except LoadFailed as exc:
                results.append(exc)
    for result in results:
        if isinstance(result, LoadResult):
            result.client_cpu = cpu.share
            result.other_cpu, result.steal_cpu = others.share, others.steal
            result.other_work = tuple(others.busiest)
    return results


class Record(StrEnum):
    """The lines perflab's Lua hook writes (lua/perflab.lua), by their "type"."""

    INTERVAL = "interval"  # every report interval
    TOTAL = "total"  # once, cumulative over the run
    HISTOGRAM = "histogram"  # once per worker thread: its measured event latencies
    WINDOW = "window"  # once per worker thread: its events, counted per time slice


def parse(stdout: str, slicing: tuple[Slicing, int] | None = None) -> LoadResult | None:
    histogram: dict[int, int] = {}
    series, total, windows = [], None, []
    for line in stdout.splitlines():
        if not line.startswith('{"type":'):
            continue
        record = json.loads(line)
        kind = record.pop("type")
        if kind == Record.INTERVAL:
            series.append(_interval(record))
        elif kind == Record.HISTOGRAM:
            add_counts(histogram, record["buckets"])
        elif kind == Record.WINDOW:
            windows.append(record)
        elif kind == Record.TOTAL:
            total = record
    if total is None or total["seconds"] <= 0:
        return None
    if slicing is not None:
        return _sliced_result(total, windows, histogram, *slicing)
    return LoadResult(
        seconds=total["seconds"],
        events=total["events"],
        reads=total["reads"],
        writes=total["writes"],
        other=total["other"],
        errors=total["errors"],
        reconnects=total["reconnects"],
        latency_min_ms=total["latency_min_ms"],
        latency_avg_ms=total["latency_avg_ms"],
        latency_max_ms=total["latency_max_ms"],
        latency_p95_ms=percentile(histogram, 95),
        latency_p99_ms=percentile(histogram, 99),
        series=series,
        histogram=histogram,
    )


MAX_LATENCY_SHARE_OF_SLICE = 0.1  # a slice holds ten events of a thread's mean length or more
# a slice sized on the slowest configuration's events measured alone holds them in the fleet,
# where they ran up to 2.1x longer (myisam-scalability at 16 threads: 51 ms, 24 ms alone), with
# room to spare
SLICE_SAFETY = 4.0
SLICE_STEP_MS = 50  # sized slices are whole multiples of this
MIN_TURNS = 4  # a point's measured window holds at least this many turns of each server


def turns_window_ms(run_seconds: float, slice_ms: float, count: int) -> float:
    """The measured window of `count` processes taking turns of `slice_ms`: whole rotations,
    at least `run_seconds` and MIN_TURNS turns of each. Every process then has as many turns as
    the others, and `Slicing.seconds` is exactly its time in them. (A 6-s window in 0.3-s
    slices of three processes gave them 7, 7 and 6 turns, each credited 2 s: a 1.17x
    difference read as anything from 1.02x to 1.59x from round to round.)"""
    turns = max(MIN_TURNS, math.ceil(round(run_seconds * 1000 / slice_ms, 6)))
    return turns * slice_ms * count


def sized_slice(latency_ms: float, base_ms: float) -> float:
    """The turn length for events of mean `latency_ms` (measured alone): `base_ms`, or longer
    so that a slice holds 1 / MAX_LATENCY_SHARE_OF_SLICE events SLICE_SAFETY times longer."""
    needed = latency_ms * SLICE_SAFETY / MAX_LATENCY_SHARE_OF_SLICE
    return max(base_ms, SLICE_STEP_MS * math.ceil(needed / SLICE_STEP_MS))


def _sliced_result(total: dict, windows: list[dict], histogram: dict[int, int],
                   slicing: Slicing, index: int) -> LoadResult:
    """The measured window of one process of a sliced run.

    sysbench counts queries per process, not per event, so the window's queries are its events
    times the run's queries per executed event (constant for every built-in workload). Events
    are counted for their share inside this process's slices (lua/perflab.lua); when events
    take a tenth of a slice or more, turns would overlap, and the point fails with why.
    """
    late = [w["first_ms"] for w in windows if w["first_ms"] > slicing.lead_ms]
    if late or not windows:
        started, lead = max(late or [0]) / 1000, slicing.lead_ms / 1000
        raise LateStart(
            "sysbench threads were still starting when the measured window began "
            f"(a first event at {started:.1f} s, the window began at {lead:.1f} s)",
            hint="this machine is slow to start this many threads; lower the thread count or "
                 "raise run.warmup_seconds")
    executed = sum(w["executed"] for w in windows)
    measured = sum(w["measured"] for w in windows)
    timed = sum(histogram.values())
    latency_avg = sum(w["latency_sum_ms"] for w in windows) / timed if timed else 0.0
    if slicing.count > 1 and latency_avg > slicing.slice_ms * MAX_LATENCY_SHARE_OF_SLICE:
        raise LoadFailed(
            f"events took {latency_avg:.1f} ms on average, too long for "
            f"{slicing.slice_ms:g} ms slices: the servers' turns would overlap",
            hint=f"raise run.slice_seconds to at least "
                 f"{latency_avg / MAX_LATENCY_SHARE_OF_SLICE / 1000:.2g}, or set "
                 'schedule = "serial"')
    share = measured / executed if executed else 0.0
    return LoadResult(
        seconds=slicing.seconds,
        events=round(measured),
        reads=round(total["reads"] * share),
        writes=round(total["writes"] * share),
        other=round(total["other"] * share),
        errors=round(total["errors"] * share),
        reconnects=round(total["reconnects"] * share),
        latency_min_ms=min((w["latency_min_ms"] for w in windows if w["measured"]),
                           default=0.0),
        latency_avg_ms=latency_avg,
        latency_max_ms=max((w["latency_max_ms"] for w in windows), default=0.0),
        latency_p95_ms=percentile(histogram, 95),
        latency_p99_ms=percentile(histogram, 99),
        series=_slice_series(total, windows, slicing, index, executed),
        histogram=histogram,
    )


def _slice_series(total: dict, windows: list[dict], slicing: Slicing, index: int,
                  executed: float) -> list[Sample]:
    """One sample per slice of this process (every `slicing.count`-th from `index`), its
    events counted in the slice and its queries at the run's queries per event."""
    per_slice: dict[int, int] = {}
    for w in windows:
        for s, n in w["slices"].items():
            per_slice[int(s)] = per_slice.get(int(s), 0) + n
    per_event = (total["reads"] + total["writes"] + total["other"]) / executed if executed else 0
    slice_seconds = slicing.slice_ms / 1000
    series = []
    for s in range(index, round(slicing.measure_ms / slicing.slice_ms), slicing.count):
        n = per_slice.get(s, 0)
        series.append(Sample(
            t=round((s + 1) * slice_seconds, 3), tps=n / slice_seconds,
            qps=n * per_event / slice_seconds,
            reads_ps=n * per_event * _part(total, "reads") / slice_seconds,
            writes_ps=n * per_event * _part(total, "writes") / slice_seconds,
            other_ps=n * per_event * _part(total, "other") / slice_seconds,
            errors_ps=0.0, reconnects_ps=0.0, latency_p95_ms=None,
            threads=len(windows)))
    return series


def _part(total: dict, kind: str) -> float:
    queries = total["reads"] + total["writes"] + total["other"]
    return total[kind] / queries if queries else 0.0


# Bucket geometry of lua/perflab.lua (and of sysbench's own histogram).
BUCKETS = 1024
LOG_MIN = math.log(0.001)
MULT = (BUCKETS - 1) / (math.log(100000) - LOG_MIN)


def add_counts(histogram: dict[int, int], more: dict) -> None:
    """Add the latency bucket counts `more` (bucket numbers as ints or JSON's strings) into
    `histogram`: merged histograms are summed, never their percentiles averaged."""
    for bucket, count in more.items():
        histogram[int(bucket)] = histogram.get(int(bucket), 0) + count


def percentile(histogram: dict[int, int], pct: float) -> float:
    """The pct-th percentile in ms, computed the way sysbench computes its own."""
    total = sum(histogram.values())
    if total == 0:
        return float("nan")
    wanted = math.floor(total * pct / 100 + 0.5)
    seen = 0
    bucket = 0
    for bucket in sorted(histogram):
        seen += histogram[bucket]
        if seen >= wanted:
            break
    return math.exp(bucket / MULT + LOG_MIN)


def _interval(record: dict) -> Sample:
    seconds = record["seconds"] or 1.0
    queries = record["reads"] + record["writes"] + record["other"]
    return Sample(
        t=round(record["time"], 3),
        tps=record["events"] / seconds,
        qps=queries / seconds,
        reads_ps=record["reads"] / seconds,
        writes_ps=record["writes"] / seconds,
        other_ps=record["other"] / seconds,
        errors_ps=record["errors"] / seconds,
        reconnects_ps=record["reconnects"] / seconds,
        latency_p95_ms=record["latency_pct_ms"],
        threads=record["threads"],
    )


def _option(value) -> str:
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)
