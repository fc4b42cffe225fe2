"""A new datadir for a build, as that build's own installer makes one: system tables, and a root
account without a password on the socket.

- the host's MariaDB: Debian's mariadb-install-db;
- a MariaDB build: its own bootstrap SQL fed to its own `mariadbd --bootstrap`, what its
  mariadb-install-db does, which cannot run here itself (a shell script that starts the root's
  programs by path, not through the root's loader);
- a MySQL build: `mysqld --initialize-insecure`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from perflab.errors import PerflabError
from perflab.server.builds import HOST, Build

INSTALL_DB = "/usr/bin/mariadb-install-db"
BUILD_TIMEOUT = 900  # seconds a build's installer may take
# mariadb-install-db's bootstrap SQL, in its order; the files are named mysql_* before 11.x and
# mariadb_* since (the test schema left out, as --skip-test-db does).
BOOTSTRAP_FILES = ("system_tables", "performance_tables", "system_tables_data",
                   "fill_help_tables", "maria_add_gis_sp_bootstrap", "sys_schema")


def initialize(datadir: Path, build: Build = HOST) -> None:
    """A fresh datadir for `build`; a PerflabError with the installer's output when it fails."""
    if build.is_host:
        install_datadir(datadir)
        return
    argv = [*build.command(), "--no-defaults", *build.base_options(), f"--datadir={datadir}"]
    if build.flavor == "MySQL":
        out = _bootstrap([*argv, "--initialize-insecure"], datadir, timeout=BUILD_TIMEOUT)
    else:
        out = _bootstrap([*argv, "--bootstrap", "--log-warnings=0", "--enforce-storage-engine=",
                          "--max_allowed_packet=8M", "--net_buffer_length=16K"], datadir,
                         bootstrap_sql(build), timeout=BUILD_TIMEOUT)
    if out.returncode != 0:
        raise PerflabError(f"{build.name} could not initialize {datadir} "
                           f"(exit code {out.returncode})", detail=_tail(out),
                           hint="the lab directory must be writable, with free space")


def bootstrap_sql(build: Build) -> str:
    """What a MariaDB build's mariadb-install-db feeds its bootstrap server."""
    share = build.share()
    parts = ["create database if not exists mysql;", "use mysql;", "SET @auth_root_socket=NULL;"]
    for name in BOOTSTRAP_FILES:
        candidates = [share / f"{prefix}{name}.sql" for prefix in ("", "mysql_", "mariadb_")]
        found = next((path for path in candidates if path.is_file()), None)
        if found is None and name in ("system_tables", "system_tables_data"):
            raise PerflabError(f"the build {build.name} holds no {name}.sql in {share}",
                               hint=f"perflab servers remove {build.name}, then add it again")
        if found is not None:
            parts.append(found.read_text(errors="replace"))
    return "\n".join(parts)


def install_datadir(datadir: Path) -> None:
    """The host's datadir, by Debian's mariadb-install-db.

    The bootstrap server has crashed (signal 11) about once in several hundred installs on a
    loaded machine, with nothing wrong in the directory. An install that dies by a signal is
    started again once on an empty directory; the crash report is kept beside the datadir.
    """
    if not os.access(INSTALL_DB, os.X_OK):
        raise PerflabError(f"{INSTALL_DB} is missing",
                           hint="install Debian's mariadb-server (the README's first command "
                           "does it)")
    for attempt in (1, 2):
        out = _run_install(datadir)
        crashed = "got signal" in out.stdout + out.stderr or "Segmentation fault" in out.stderr
        if out.returncode == 0 or not crashed or attempt == 2:
            break
        datadir.with_name(datadir.name + ".install-crash.log").write_text(out.stdout + out.stderr)
        shutil.rmtree(datadir, ignore_errors=True)
    if out.returncode != 0:
        raise PerflabError(f"mariadb-install-db failed for {datadir}",
                           hint="the lab directory must be writable, on a local disk with free "
                           "space; its output follows", detail=_tail(out))


def _run_install(datadir: Path) -> subprocess.CompletedProcess:
    """One mariadb-install-db (its --tmpdir is passed on to the bootstrap mariadbd)."""
    return _bootstrap([INSTALL_DB, "--no-defaults", f"--datadir={datadir}",
                       "--auth-root-authentication-method=normal", "--skip-test-db"], datadir)


def _bootstrap(argv: list[str], datadir: Path, sql: str | None = None,
               timeout: float | None = None) -> subprocess.CompletedProcess:
    """An installer's run on a new datadir. Its bootstrap server gets a tmpdir of its own, as
    every server perflab starts does (managed.py): with /tmp it deleted the on-disk temporary
    tables of every other server using /tmp (CI: a test's file there vanished)."""
    datadir.mkdir(parents=True, exist_ok=True)
    tmpdir = datadir.with_name(datadir.name + ".install-tmp")
    tmpdir.mkdir(exist_ok=True)
    argv = [*argv, f"--tmpdir={tmpdir}", *(["--user=root"] if os.geteuid() == 0 else [])]
    try:
        return subprocess.run(argv, input=sql, capture_output=True, text=True, check=False,
                              timeout=timeout)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def _tail(out: subprocess.CompletedProcess) -> str:
    """The installer's last words: what an error about it shows."""
    return "\n".join((out.stdout + out.stderr).strip().splitlines()[-15:])
