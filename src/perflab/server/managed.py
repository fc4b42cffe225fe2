"""A private server (the host's mariadbd, or a build's) that perflab starts, watches and stops.

The server lives entirely under a directory perflab owns: its datadir, error log, pid file,
Unix socket and temporary files. It never listens on the network unless the environment asks for
TCP, and then only on 127.0.0.1 at a free port. It never touches the system service.

The tmpdir is its own because mariadbd deletes every `#sql*` file in its tmpdir at start-up:
servers sharing /tmp delete each other's on-disk temporary tables (the system service's too)
whenever one of them starts.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket as socketlib
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pymysql

from perflab.errors import PerflabError
from perflab.procs import die_with_parent, start_sentinel, tell_sentinel
from perflab.sentinel import Told
from perflab.server.builds import HOST, Build, runs_a_server
from perflab.server.connection import Endpoint, set_globals
from perflab.server.process import process_facts

SOCKET_PATH_LIMIT = 100  # sun_path holds 108 bytes; keep a margin


@dataclass(frozen=True)
class ServerEnvironment:
    """How the server process runs, apart from its variables.

    preload: shared libraries put in LD_PRELOAD (an allocator), checked in /proc/PID/maps;
    cpus: a CPU list for taskset; tcp: listen on 127.0.0.1 at a free port instead of
    socket only; build: which server binary (builds.py), the host's by default.
    """

    preload: tuple[str, ...] = ()
    cpus: str | None = None
    tcp: bool = False
    build: Build = HOST


def require_binary(build: Build = HOST) -> None:
    if not os.access(build.binary, os.X_OK):
        raise PerflabError(
            f"{build.binary} is missing",
            hint="install Debian's mariadb-server (the README's first command does it)"
            if build.is_host else f"perflab servers add {build.name}",
        )


def start_help(build: Build = HOST) -> str:
    """What the server binary lists of the options it takes at start (`--verbose --help`):
    the catalog's word on which variables a plan can give it (variables.start_options_of)."""
    require_binary(build)
    try:
        out = subprocess.run([*build.command(), "--no-defaults", *build.base_options(),
                              "--verbose", "--help"],
                             capture_output=True, text=True, check=False, timeout=60)
    except subprocess.TimeoutExpired:
        return ""  # the catalog then keeps SYSTEM_VARIABLES' word alone, and is not cached
    return out.stdout


class ManagedServer:
    """One server (the host's mariadbd, or a build's: environment.build) on one datadir; a
    context manager."""

    def __init__(self, datadir: Path, rundir: Path, options: dict[str, str] | None = None,
                 environment: ServerEnvironment = ServerEnvironment()):
        self.datadir, self.build = datadir.resolve(), environment.build
        self.rundir = rundir.resolve()
        self.options = dict(options or {})
        self.environment = environment
        self.error_log = self.rundir / "error.log"
        self.out_file = self.rundir / "mariadbd.out"  # what it prints before its log is open
        self.pid_file = self.rundir / "mysqld.pid"
        self.tmpdir = self.rundir / "tmp"
        self.socket = _socket_path(self.rundir)
        self.port: int | None = None
        self.process: subprocess.Popen | None = None
        self._log_offset = self._out_offset = 0

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self, timeout: float = 300) -> None:
        self.launch()
        self.wait_started(timeout)

    def launch(self) -> None:
        """Start the process without waiting for it to answer (wait_started does), so that a
        fleet's servers start together: each start waits mostly on its own files."""
        require_binary(self.build)
        self.tmpdir.mkdir(parents=True, exist_ok=True)
        stop_stale(self.pid_file, self.datadir)
        self._log_offset = self.error_log.stat().st_size if self.error_log.exists() else 0
        self._out_offset = self.out_file.stat().st_size if self.out_file.exists() else 0
        if self.environment.tcp:
            self.port = free_port()
        env = _process_env(self.environment)
        start_sentinel()
        try:  # from here on, an interrupt (Ctrl-C, SIGTERM) kills the server it started
            with open(self.out_file, "ab") as out:
                self.process = subprocess.Popen(
                    self.argv(),
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    env=env,
                    preexec_fn=die_with_parent(signal.SIGTERM),
                    start_new_session=True,  # a Ctrl-C in the terminal is perflab's to handle
                )
            tell_sentinel(Told.START, self.process.pid)
        except BaseException:
            self.kill()
            raise

    def wait_started(self, timeout: float = 300) -> None:
        """Wait until the launched server answers (its preloaded allocator checked)."""
        assert self.process is not None, "called after launch()"
        try:  # a start that fails or is interrupted kills the server
            deadline = time.monotonic() + timeout
            while True:
                code = self.process.poll()
                if code is not None:
                    tail = "\n".join(filter(None, (_since(self.out_file, self._out_offset, 20),
                                                    self.error_log_tail())))
                    raise PerflabError(
                        f"{self.build.binary.name} exited during start-up (exit code {code})"
                        + first_error(tail, self.build),
                        hint=f"see {self.error_log}",
                        detail=tail,
                    )
                if os.path.exists(self.socket):
                    try:
                        self.endpoint.connect(timeout=2).close()
                        break
                    except pymysql.err.OperationalError:
                        pass
                if time.monotonic() > deadline:
                    raise PerflabError(
                        f"{self.build.binary.name} did not answer within {timeout:.0f} s",
                        hint=f"see {self.error_log}",
                        detail=self.error_log_tail(),
                    )
                time.sleep(0.05)
            _check_preload(self.environment, self.process.pid)
        except BaseException:
            self.kill()
            raise
        tell_sentinel(Told.READY, self.process.pid)

    def argv(self) -> list[str]:
        argv = [
            *self.build.command(),
            "--no-defaults",
            *self.build.base_options(),
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.tmpdir}",
        ]
        if self.environment.tcp:
            argv += ["--bind-address=127.0.0.1", f"--port={self.port}"]
        else:
            argv.append("--skip-networking")
        if os.geteuid() == 0:
            argv.append("--user=root")
        argv += [f"--{name}={value}" for name, value in self.options.items()]
        if self.environment.cpus:
            argv = ["taskset", "-c", self.environment.cpus, *argv]
        return argv

    def facts(self) -> dict:
        """What the lab records of this server's process and how it is reached."""
        facts = process_facts(self.pid) if self.pid else {}
        facts["argv"] = self.argv()
        facts["connection"] = (f"tcp 127.0.0.1:{self.port}" if self.port
                               else f"socket {self.socket}")
        facts["datadir"] = str(self.datadir)
        facts["build"] = self.build.describe()
        return facts

    def stop(self, timeout: float = 600) -> None:
        """Clean shutdown (SIGTERM), escalating to SIGKILL only if it hangs."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                pass  # hung: kill() below
        self.kill()

    def kill(self) -> None:
        if self.process is not None:
            if self.process.poll() is None:
                self.process.kill()
                self.process.wait()
            tell_sentinel(Told.GONE, self.process.pid)
        self.process = None

    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def died(self, grace: float = 10.0) -> bool:
        """After a failed run: has the server gone? A killed mariadbd drops its connections
        before its process has finished exiting, so one that no longer answers is given
        `grace` seconds to exit before it counts as alive."""
        if not self.alive():
            return True
        try:
            with self.endpoint.connect(timeout=2) as conn:
                conn.ping(reconnect=False)
            return False
        except pymysql.MySQLError:
            pass
        assert self.process is not None, "alive() says there is one"
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            return False
        return True

    @property
    def pid(self) -> int | None:
        return self.process.pid if self.process else None

    def __enter__(self) -> ManagedServer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    # -- talking to it -----------------------------------------------------------------------

    @property
    def endpoint(self) -> Endpoint:
        if self.environment.tcp:
            return Endpoint(host="127.0.0.1", port=self.port)
        return Endpoint(socket=str(self.socket))

    def connect(self, database: str | None = None) -> pymysql.Connection:
        return self.endpoint.connect(database)

    def set_global(self, variables: dict[str, str]) -> None:
        with self.connect() as conn:
            set_globals(conn, variables)
        self.options.update(variables)

    def death_report(self) -> str:
        """What a point stores when this server died under it: the exit code and the tail of
        its error log."""
        code = self.process.returncode if self.process else None
        return (f"{self.build.binary.name} died during the point (exit code {code})\n"
                f"{self.error_log_tail()}")

    def error_log_tail(self, lines: int = 20) -> str:
        """The last lines this server wrote to its error log since perflab started it."""
        return _since(self.error_log, self._log_offset, lines)


def _process_env(environment: ServerEnvironment) -> dict[str, str]:
    """The server process's environment: perflab's own, with its allocator preloaded."""
    env = dict(os.environ)
    for lib in environment.preload:
        if not Path(lib).exists():
            raise PerflabError(f"library {lib} to preload does not exist",
                               hint='install the allocator again, or use allocator = "glibc"')
    if environment.preload:
        env["LD_PRELOAD"] = ":".join(environment.preload)
    return env


def _since(path: Path, offset: int, lines: int) -> str:
    """The last `lines` lines of a file written after `offset`, or "" when it cannot be read."""
    try:
        with open(path, "rb") as file:
            file.seek(offset)
            text = file.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def first_error(log: str, build: Build = HOST) -> str:
    """Why a server would not start, from what it printed and logged: its first error other
    than "Aborting", as ": what it said" (time stamps and the binary's path left out), or "".
    The reason then travels with the point that failed, not only in a log that the next
    start of the same slot writes over. An option it refuses is printed before its log is
    open, as "/usr/sbin/mariadbd: Character set 'x' is not a compiled character set"."""
    binary = f"{build.binary}: "
    for line in log.splitlines():
        line = "".join(c for c in line if c.isprintable())  # it rings a bell (\a) before some
        _, marker, said = line.partition("[ERROR] ")
        if not marker and line.startswith(binary):
            said = line
        said = said.strip().removeprefix(binary)
        if said and said != "Aborting":
            return f": {said}"
    return ""


def _check_preload(environment: ServerEnvironment, pid: int) -> None:
    """Refuse a server whose preloaded libraries (an allocator) are not mapped into it."""
    if not environment.preload:
        return
    maps = Path(f"/proc/{pid}/maps").read_text()
    for lib in environment.preload:
        if os.path.realpath(lib) not in maps and lib not in maps:
            raise PerflabError(f"{lib} was preloaded but is not mapped into "
                               f"{environment.build.binary.name}",
                               hint='check the library with ldd, or use allocator = "glibc"')


def stop_stale(pid_file: Path, datadir: Path, timeout: float = 600) -> None:
    """Stop a server left running on this datadir by an earlier perflab that was killed."""
    try:
        pid = int(pid_file.read_text().strip())
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
    except (OSError, ValueError):
        return
    argv = cmdline.split("\0")
    if not runs_a_server(argv) or f"--datadir={datadir}" not in argv:
        return
    os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    if Path(f"/proc/{pid}").exists():
        os.kill(pid, signal.SIGKILL)


def free_port() -> int:
    with socketlib.socket(socketlib.AF_INET, socketlib.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _socket_path(rundir: Path) -> str:
    path = str(rundir / "mysqld.sock")
    if len(path) <= SOCKET_PATH_LIMIT:
        return path
    digest = hashlib.sha256(path.encode()).hexdigest()[:12]
    return f"/tmp/perflab-{digest}.sock"
