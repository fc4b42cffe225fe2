"""What a run prints as it goes: one line per round and per point, with the time left."""

from __future__ import annotations

import time

from perflab.domain import Plan, ServerConfig
from perflab.output.text import duration
from perflab.probes.busy import under_load
from perflab.say import Say
from perflab.store import PointRecord


class Progress:
    """One line per point: its round, figures, and the time left (ETA, or the budget)."""

    def __init__(self, plan: Plan, say: Say, deadline: float | None):
        self.plan, self.say, self.deadline = plan, say, deadline
        self.started = time.monotonic()
        self.count = 0
        self.planned = 0  # points of the rounds announced so far
        self.round_number = 0

    def round(self, round_number: int, needed: dict[int, list[ServerConfig]]) -> None:
        self.round_number = round_number
        self.planned += sum(len(cs) for cs in needed.values())
        cells = sum(len(cs) for cs in needed.values())
        self.say(f"round {round_number}: {cells} point(s) at {len(needed)} thread count(s)")

    def done(self, record: PointRecord) -> None:
        self.count += 1
        point = record.point
        elapsed = time.monotonic() - self.started
        if record.metrics is not None:
            m = record.metrics
            rows = m.rows_per_query
            figures = (f"qps {m.qps:10.1f}  p95 {m.latency_p95_ms:8.2f} ms  "
                       f"rows/q {rows:7.1f}" if rows is not None else f"qps {m.qps:10.1f}")
        else:
            figures = "FAILED"
        if self.deadline is not None:
            left = f"budget left {duration(max(0.0, self.deadline - time.monotonic()))}"
        elif self.round_number <= self.plan.run.rounds:
            total = len(self.plan.configs) * len(self.plan.run.threads) * self.plan.run.rounds
            eta = max(0, total - self.count) * elapsed / self.count
            left = f"ETA {duration(eta)}"
        else:
            left = f"{duration(elapsed)} so far"
        self.say(f"[round {point.round}] {point.config.name:>10}  threads={point.threads:<4} "
                 f"{figures}  {left}{beside_other_work(record)}")


def beside_other_work(record: PointRecord) -> str:
    """What loaded the machine while a point was measured under load (probes/busy.py): the
    others' share, the hypervisor's steal among it and the busiest other processes; else ""."""
    m = record.metrics
    if m is None or not under_load(m.other_cpu):
        return ""
    steal = f", steal {m.steal_cpu:.0%}" if m.steal_cpu else ""
    named = f"; {', '.join(record.other_work)} of one CPU" if record.other_work else ""
    return f"  UNDER LOAD: others {m.other_cpu:.0%} of the CPU time{steal}{named}"


def pairs(options: dict[str, str]) -> str:
    """Server options as NAME=VALUE words, for a line that says what is set."""
    return " ".join(f"{k}={v}" for k, v in options.items()) or "(defaults)"
