"""Driving sysbench through perflab's Lua hook and reading its JSON lines.

perflab never scrapes sysbench's human-readable text: lua/perflab.lua wraps the workload script
and prints one JSON object per line (intervals, the cumulative total, per-thread latency
histograms), which this module parses into a LoadResult.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from perflab.errors import PerflabError
from perflab.load.workloads import ResolvedWorkload
from perflab.plan import Dataset
from perflab.procs import die_with_parent
from perflab.server.connection import Endpoint
from perflab.store.records import Metrics, Sample

SYSBENCH = "sysbench"
SYSBENCH_SCRIPTS = Path("/usr/share/sysbench")
LUA_DIR = Path(__file__).parent / "lua"
DRIVER = LUA_DIR / "perflab.lua"


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
            rows_per_query=rows_per_query,
        )


class LoadFailed(PerflabError):
    """sysbench did not produce a result; the detail carries its output's tail. A failed
    point stores it; elsewhere the CLI prints it."""


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
    argv = [
        SYSBENCH,
        str(DRIVER),
        "--db-driver=mysql",
        *endpoint.sysbench_args(),
        f"--mysql-db={workload.family.schema}",
        *workload.family.sysbench_args(dataset, workload.writes),
        f"--threads={threads}",
        f"--time={seconds}",
        "--events=0",
        f"--report-interval={report_interval}",
        "--percentile=95",
    ]
    argv += [f"--{key.replace('_', '-')}={_option(value)}"
             for key, value in workload.sysbench_options().items()]
    return [*argv, "run"]


def environment(workload: ResolvedWorkload) -> dict[str, str]:
    env = dict(os.environ)
    env["PERFLAB_WORKLOAD"] = workload.spec.script
    env["LUA_PATH"] = f"{LUA_DIR}/?.lua;{SYSBENCH_SCRIPTS}/?.lua;;"
    env.update(workload.family.sysbench_environment())
    return env


def run(argv: list[str], env: dict[str, str], seconds: int, threads: int) -> LoadResult:
    """Run sysbench to completion and parse its JSON lines. Raises LoadFailed."""
    timeout = seconds + 60 + threads // 4
    try:
        out = subprocess.run(
            argv,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
            preexec_fn=die_with_parent(signal.SIGKILL),
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise LoadFailed(f"sysbench did not finish within {timeout} s") from None
    result = parse(out.stdout)
    if out.returncode != 0 or result is None:
        tail = "\n".join((out.stderr or out.stdout).strip().splitlines()[-12:])
        lines = tail.splitlines()
        reason = next((line for line in lines if "FATAL" in line), lines[-1] if lines else
                      "no output")
        raise LoadFailed(f"sysbench exited with code {out.returncode}: {reason.strip()}",
                         detail=tail)
    return result


def parse(stdout: str) -> LoadResult | None:
    series, histogram, total = [], {}, None
    for line in stdout.splitlines():
        if not line.startswith('{"type":'):
            continue
        record = json.loads(line)
        kind = record.pop("type")
        if kind == "interval":
            series.append(_interval(record))
        elif kind == "histogram":
            for bucket, count in record["buckets"].items():
                histogram[int(bucket)] = histogram.get(int(bucket), 0) + count
        elif kind == "total":
            total = record
    if total is None or total["seconds"] <= 0:
        return None
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


# Bucket geometry of lua/perflab.lua (and of sysbench's own histogram).
BUCKETS = 1024
LOG_MIN = math.log(0.001)
MULT = (BUCKETS - 1) / (math.log(100000) - LOG_MIN)


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
