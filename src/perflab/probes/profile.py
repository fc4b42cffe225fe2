"""Where the server's CPU goes (the MyISAM key-buffer benchmark used oprofile): `perf record`
on mariadbd per point.

Optional and best effort: when perf is missing or not permitted on this machine, the profiler
says so once and every point runs without a profile.
"""

from __future__ import annotations

import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Callable
from pathlib import Path

from perflab.procs import die_with_parent
from perflab.store.records import Symbol

FREQUENCY = 499  # samples per second; odd, so as not to beat with periodic work
LINE = re.compile(r"^\s*([\d.]+)%\s+(\S+)\s+\[[.k]\]\s+(.+?)\s*$")


class Profiler:
    def __init__(self, say: Callable[[str], None]):
        self.say = say
        self._works: bool | None = None

    def works(self) -> bool:
        """Checked once: perf exists and may record here."""
        if self._works is None:
            self._works, why = _probe()
            if not self._works:
                self.say(f"profiles skipped: {why}")
        return self._works

    def start(self, pid: int, seconds: int, output: Path) -> subprocess.Popen | None:
        if not self.works():
            return None
        return subprocess.Popen(
            ["perf", "record", "-F", str(FREQUENCY), "-g", "-p", str(pid), "-o", str(output),
             "--", "sleep", str(seconds)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=die_with_parent(signal.SIGTERM),
        )

    @staticmethod
    def finish(recorder: subprocess.Popen | None, output: Path, top: int = 15,
               early: bool = False) -> list[Symbol]:
        """Wait for the recording (`early`: stop it now, as perf stops on SIGINT, writing what
        it has) and summarise it: the top symbols by share of samples."""
        if recorder is None:
            return []
        if early and recorder.poll() is None:
            recorder.send_signal(signal.SIGINT)
        try:
            recorder.wait(timeout=60)
        except subprocess.TimeoutExpired:
            recorder.kill()
            recorder.wait()
        if not output.exists():
            return []
        return top_symbols(output, top)


def top_symbols(data: Path, top: int = 15) -> list[Symbol]:
    out = subprocess.run(
        ["perf", "report", "-i", str(data), "--stdio", "--no-children", "--sort", "dso,sym",
         "--percent-limit", "0.5", "-g", "none"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    symbols = []
    for line in out.stdout.splitlines():
        match = LINE.match(line)
        if match:
            share, dso, symbol = match.groups()
            symbols.append(Symbol(float(share) / 100, dso, symbol))
        if len(symbols) >= top:
            break
    return symbols


def _probe() -> tuple[bool, str]:
    if shutil.which("perf") is None:
        return False, "perf is not installed (Debian's linux-perf)"
    with tempfile.TemporaryDirectory() as tmp:
        out = subprocess.run(
            ["perf", "record", "-o", f"{tmp}/probe.data", "--", "true"],
            capture_output=True, text=True, timeout=30, check=False,
        )
    if out.returncode != 0:
        first = (out.stderr.strip().splitlines() or ["no reason given"])[0]
        return False, f"perf record does not work here: {first}"
    return True, ""
