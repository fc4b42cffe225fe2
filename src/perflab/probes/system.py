"""Facts about the machine and the processes a result was measured on."""

from __future__ import annotations

import os
import platform
import resource
import socket
from pathlib import Path

from perflab.version import __version__


def host_facts(datadir: Path | None = None) -> dict:
    """Everything about this host that a number needs beside it to be a result."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    facts = {
        "hostname": socket.gethostname(),
        "os": _os_release(),
        "kernel": platform.release(),
        "kernel_version": platform.version(),
        "machine": platform.machine(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "cpus_usable": len(os.sched_getaffinity(0)),
        "memory_bytes": ram_bytes(),
        "open_files_limit": {"soft": soft, "hard": hard},
        "python": platform.python_version(),
        "perflab": __version__,
    }
    if datadir is not None:
        facts["datadir"] = str(datadir)
        facts["datadir_filesystem"] = filesystem(datadir)
        facts["io_scheduler"] = io_scheduler(datadir)
    return facts


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def ram_bytes() -> int:
    """This machine's RAM: the one place perflab reads it."""
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def io_scheduler(path: Path) -> str:
    """The active I/O scheduler of the block device holding path, e.g. 'mq-deadline'."""
    dev = os.stat(path).st_dev
    sysdir = Path(f"/sys/dev/block/{os.major(dev)}:{os.minor(dev)}")
    if not sysdir.exists():
        return f"unknown (no block device behind {filesystem(path)})"
    sysdir = sysdir.resolve()
    if (sysdir / "partition").exists():
        sysdir = sysdir.parent
    try:
        text = (sysdir / "queue" / "scheduler").read_text().strip()
    except OSError:
        return "unknown"
    if "[" in text:
        return text.split("[", 1)[1].split("]", 1)[0]
    return text


def filesystem(path: Path) -> str:
    """The type of the filesystem mounted at the longest prefix of path."""
    best, kind = "", "unknown"
    target = str(Path(path).resolve())
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return kind
    for line in mounts:
        fields = line.split()
        mountpoint = fields[1]
        inside = target == mountpoint or target.startswith(mountpoint.rstrip("/") + "/")
        if inside and len(mountpoint) >= len(best):
            best, kind = mountpoint, fields[2]
    return kind


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.system()
