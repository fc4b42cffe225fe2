"""Facts of a running mariadbd process, read from /proc: what a managed server records of
itself beside its variables."""

from __future__ import annotations

import os
from pathlib import Path


def process_facts(pid: int) -> dict:
    """Facts of a running server process: its open-file limit, affinity and preloaded libs."""
    facts: dict = {"pid": pid}
    try:
        for line in Path(f"/proc/{pid}/limits").read_text().splitlines():
            if line.startswith("Max open files"):
                parts = line.split()
                facts["open_files_limit"] = {"soft": parts[3], "hard": parts[4]}
        facts["cpus_allowed"] = sorted(os.sched_getaffinity(pid))
        maps = Path(f"/proc/{pid}/maps").read_text()
        facts["allocator"] = allocator_in(maps)
    except OSError:
        pass
    return facts


def allocator_in(maps: str) -> str:
    if "libjemalloc" in maps:
        return "jemalloc"
    if "libtcmalloc" in maps:
        return "tcmalloc"
    return "glibc"
