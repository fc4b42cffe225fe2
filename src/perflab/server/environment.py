"""From a plan's Environment to what the processes need: library paths and CPU sets.

Everything is checked before the first point: a missing allocator library or a CPU that does
not exist is one line of error, not a failed sweep.
"""

from __future__ import annotations

import glob
import os

from perflab.domain import Environment
from perflab.errors import PerflabError
from perflab.server import builds
from perflab.server.managed import ServerEnvironment

# Debian's libjemalloc2 and libgoogle-perftools4.
LIBRARIES = {"jemalloc": "libjemalloc.so.2", "tcmalloc": "libtcmalloc.so.4"}
PACKAGES = {"jemalloc": "libjemalloc2", "tcmalloc": "libgoogle-perftools4"}
LIBRARY_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib",
                "/usr/lib64", "/usr/local/lib")


PLUGIN_DIR = "/usr/lib/mysql/plugin"
# Engines that are plugins outside the server binary: the plugin file and the Debian package.
ENGINE_PLUGINS = {"RocksDB": ("ha_rocksdb", "mariadb-plugin-rocksdb")}


def engine_options(engine: str, where: str = "engine",
                   build: str = builds.HOST.name) -> dict[str, str]:
    """Server options an engine needs at start (a plugin to load), checked to exist."""
    if engine not in ENGINE_PLUGINS:
        return {}
    plugin, package = ENGINE_PLUGINS[engine]
    if build != builds.HOST.name:
        raise PerflabError(f"{where}: {engine} is a plugin ({plugin}) that perflab loads only "
                           f"on the host's server, not on the build {build}",
                           hint=f'measure {engine} with server = "host"')
    if not os.path.exists(os.path.join(PLUGIN_DIR, f"{plugin}.so")):
        raise PerflabError(
            f"{where}: {engine} needs the {plugin} plugin, which is not installed",
            hint=f"apt-get install {package}",
        )
    return {"plugin_load_add": plugin}


def allocator_library(allocator: str, where: str = "allocator") -> str | None:
    """The shared library to preload for an allocator; None for glibc's own malloc."""
    if allocator == "glibc":
        return None
    name = LIBRARIES[allocator]
    for directory in LIBRARY_DIRS:
        path = os.path.join(directory, name)
        if os.path.exists(path):
            return path
    found = glob.glob(f"/usr/lib/*/{name}")
    if found:
        return found[0]
    raise PerflabError(
        f"{where}: {allocator} needs {name}, which is not installed",
        hint=f"apt-get install {PACKAGES[allocator]}",
    )


def parse_cpus(text: str, where: str) -> set[int]:
    """A taskset-style CPU list ("0", "0-2,5") as a set, checked against this machine."""
    cpus: set[int] = set()
    try:
        for part in text.split(","):
            if "-" in part:
                low, high = (int(x) for x in part.split("-", 1))
                if low > high:
                    raise ValueError
                cpus.update(range(low, high + 1))
            else:
                cpus.add(int(part))
    except ValueError:
        raise PerflabError(f"{where} = {text!r} is not a CPU list (e.g. 0, 0-2 or 0,3)") from None
    usable = os.sched_getaffinity(0)
    missing = sorted(cpus - usable)
    if missing:
        raise PerflabError(
            f"{where} = {text!r}: CPU {', '.join(map(str, missing))} is not available here",
            hint=f"usable CPUs: {_ranges(sorted(usable))}",
        )
    return cpus


def check(environment: Environment, where: str) -> None:
    try:
        builds.find(environment.server)
    except PerflabError as exc:
        raise PerflabError(f"{where}.server: {exc.message}", hint=exc.hint) from None
    allocator_library(environment.allocator, f"{where}.allocator")
    for side in ("server_cpus", "client_cpus"):
        value = getattr(environment, side)
        if value is not None:
            parse_cpus(value, f"{where}.{side}")


def server_environment(environment: Environment) -> ServerEnvironment:
    library = allocator_library(environment.allocator)
    return ServerEnvironment(
        preload=(library,) if library else (),
        cpus=environment.server_cpus,
        tcp=environment.connection == "tcp",
        build=builds.find(environment.server),
    )


def client_prefix(environment: Environment) -> list[str]:
    """What goes before sysbench's argv: taskset when the client is pinned."""
    return ["taskset", "-c", environment.client_cpus] if environment.client_cpus else []


def _ranges(cpus: list[int]) -> str:
    parts, start = [], None
    for i, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if i + 1 == len(cpus) or cpus[i + 1] != cpu + 1:
            parts.append(str(start) if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(parts)
