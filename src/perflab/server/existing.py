"""A server perflab did not start: someone else's, measured as it is.

Such a server is read-only to perflab unless the user allows more (`Permissions`): writes only
into a schema of perflab's own, SET GLOBAL only of dynamic variables, never a restart. Every
variable perflab changes is written to the lab's journal (LAB/journal.json) before it changes,
with the value it had and the identity of the server (host name, port, socket, datadir, start
time). The journal is played back when the run ends, on Ctrl-C, SIGTERM or SIGHUP, and after a
kill by `perflab restore` or the next `run --allow-set` on the lab (`restore_pending`): only on
the server it was written for, and not at all on one restarted since (its globals are its
configuration's again). Commands that only read never play it back: they say it is there.
While perflab changes a server's variables it holds a named lock there (GET_LOCK), so that two
perflab runs never change one server at once.
"""

from __future__ import annotations

import configparser
import contextlib
import hashlib
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pymysql

from perflab.errors import PerflabError, error_text
from perflab.server.connection import (
    VARIABLE_NAME,
    Endpoint,
    query,
    set_global,
    set_globals,
    variable_name,
)
from perflab.server.tripwire import Tripwire, differences, global_variables, listed
from perflab.server.variables import check_value, read_catalog

JOURNAL = "journal.json"
LOCK_NAME = "perflab.set_global"  # GET_LOCK's name: one perflab changing a server at a time
RESTART_SLACK = 5  # seconds: a start time that moved more than this is a restart
LONGEST_VALUE = 4096  # characters of a journalled value: longer is not one perflab wrote
# Variables --allow-set never changes: what they do cannot be put back by setting a value
# (a file written, a log or monitor switched, SQL run at every connection), with the reason.
UNRESTORABLE = (
    (re.compile(r"(_file|_path|_dir|_directory)$|^(plugin_dir|secure_file_priv|tmpdir)$"),
     "names a file or directory on the database host"),
    (re.compile(r"^(general_log|slow_query_log|log_output|log_bin|sql_log_|binlog_|log_slow_|"
                r"innodb_status_output|performance_schema)"),
     "switches a log, whose files and contents stay"),
    (re.compile(r"^innodb_monitor_"), "enables or resets InnoDB monitors, which a value "
                                      "cannot put back"),
    (re.compile(r"^(init_|event_scheduler$)"), "runs SQL of its own on the server"),
    (re.compile(r"_now$|^innodb_buffer_pool_(dump|load)_|^innodb_(log_checkpoint|"
                r"fil_make_page_dirty|trx_rseg|disallow_writes)"),
     "acts at once instead of holding a value"),
    (re.compile(r"^(server_id|hostname|port|socket|datadir)$"),
     "is part of the server's identity, which the journal is bound to (changed, the journal "
     "would refuse to play back on its own server)"),
)
# Dynamic variables for which SYSTEM_VARIABLES names no command-line option and that hold a
# value, the defaults of the sessions that connect next: SET GLOBAL sets them and the same SET
# GLOBAL of the old value puts them back, so --allow-set may change them. The other dynamic
# variables without an option are refused: some act beyond a value (replication positions and
# filters, a skip counter, the checks of foreign keys for every session that connects
# meanwhile), and the character sets below share their value with a collation.
SET_BY_VALUE = ("character_set_client", "character_set_filesystem", "character_set_results",
                "collation_connection", "collation_database", "collation_server",
                "default_storage_engine", "default_tmp_storage_engine", "lc_time_names",
                "time_zone")
# Character sets held with a collation: setting one sets the collation to the character set's
# default, and putting the old character set back does not put back a collation that was not
# its default. The collation names its character set, and puts back both.
WITH_COLLATION = {"character_set_connection": "collation_connection",
                  "character_set_database": "collation_database",
                  "character_set_server": "collation_server"}
def unrestorable(name: str) -> str | None:
    """Why --allow-set may not change variable `name` (None when it may)."""
    return next((why for pattern, why in UNRESTORABLE if pattern.search(name)), None)


def state_directory() -> Path:
    """perflab's per-user state: $PERFLAB_STATE_DIR, else $XDG_STATE_HOME/perflab, else
    ~/.local/state/perflab."""
    if os.environ.get("PERFLAB_STATE_DIR"):
        return Path(os.environ["PERFLAB_STATE_DIR"])
    base = os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state"
    return Path(base) / "perflab"


def _pointer(server: dict) -> Path:
    """The state directory's note of which lab journals `server`'s changed variables."""
    text = "|".join(str(server[k]) for k in ("hostname", "port", "socket", "datadir",
                                            "server_id"))
    return state_directory() / "servers" / f"{hashlib.sha256(text.encode()).hexdigest()[:20]}.json"


@dataclass(frozen=True)
class Permissions:
    """What the user allowed on a server perflab did not start."""

    writes: bool = False  # --allow-writes: datasets and writing workloads, in perflab_* schemas
    set_variables: bool = False  # --allow-set: SET GLOBAL of dynamic variables, put back after
    locks: bool = False  # --allow-locks: locking reads and named locks (GET_LOCK)
    read_only_account: bool = False  # --read-only-account: refuse an account that could write


def identity(conn: pymysql.Connection) -> dict:
    """Which server this is: what survives a reconnection (server_id tells apart clones that
    share a host name and paths), and when it started (a restart resets every global variable
    to the server's configuration)."""
    hostname, port, socket, datadir, server_id, now = query(
        conn, "SELECT @@hostname, @@port, @@socket, @@datadir, @@server_id, UNIX_TIMESTAMP()")[0]
    uptime = int(query(conn, "SHOW GLOBAL STATUS LIKE 'Uptime'")[0][1])
    return {"hostname": hostname, "port": int(port), "socket": socket, "datadir": datadir,
            "server_id": int(server_id), "started": int(now) - uptime}


def _same_server(recorded: dict, seen: dict) -> bool:
    return all(recorded.get(key) == seen[key]
               for key in ("hostname", "port", "socket", "datadir", "server_id"))


def _restarted(recorded: dict, seen: dict) -> bool:
    return abs(seen["started"] - recorded["started"]) > RESTART_SLACK


def _described(server: dict) -> str:
    return f"{server['hostname']}:{server['port']} (datadir {server['datadir']})"


class Journal:
    """The variables perflab changed on one existing server and the values they had."""

    def __init__(self, lab_root: Path):
        self.path = lab_root / JOURNAL

    def pending(self) -> dict | None:
        try:
            entry = json.loads(self.path.read_text())
        except FileNotFoundError:
            return None
        except ValueError as exc:
            raise PerflabError(f"{self.path} is damaged ({exc})",
                               hint="restore the variables it names by hand, then delete it") \
                from None
        if not isinstance(entry, dict) or "identity" not in entry:
            raise PerflabError(f"{self.path} was written by an older perflab and does not say "
                               "which server it belongs to",
                               hint="restore the variables it names by hand, then delete it")
        problem = _malformed(entry)
        if problem:
            raise PerflabError(f"{self.path} is not a journal perflab wrote ({problem}); "
                               "nothing was played back",
                               hint="restore the variables it names by hand, then delete it")
        return entry

    def owner(self, server: dict) -> Path | None:
        """The lab whose journal holds variables changed on `server`, by any lab on this
        machine (the state directory's pointer), if that journal is still pending there."""
        pointer = _pointer(server)
        try:
            lab = Path(json.loads(pointer.read_text())["lab"])
        except (OSError, ValueError, KeyError, TypeError):
            return None
        try:
            entry = Journal(lab).pending()
        except PerflabError:
            return lab  # damaged, but there: its lab must sort it out
        if entry and _same_server(entry["identity"], server) and \
                not _restarted(entry["identity"], server):
            return lab
        return None

    def refuse_another(self, server: dict) -> None:
        """A PerflabError if another lab's journal holds variables changed on `server`:
        changed again from this lab, the original values would be lost."""
        other = self.owner(server)
        if other is not None and other != self.path.parent.resolve():
            raise PerflabError(
                f"the lab {other} holds variables a stopped perflab changed on this server: "
                "changed again from here, their original values would be lost",
                hint=f"perflab restore --lab {other} first")

    def _point(self, server: dict, owned: bool) -> None:
        """Say in the state directory that this lab's journal holds `server`'s variables, or
        (owned False) no longer."""
        pointer = _pointer(server)
        if owned:
            pointer.parent.mkdir(parents=True, exist_ok=True)
            partial = pointer.with_suffix(".partial")
            partial.write_text(json.dumps({"lab": str(self.path.parent.resolve())}))
            partial.rename(pointer)
            return
        try:
            if Path(json.loads(pointer.read_text())["lab"]) == self.path.parent.resolve():
                pointer.unlink()
        except (OSError, ValueError, KeyError, TypeError):
            pass

    def record(self, endpoint: Endpoint, server: dict, originals: dict[str, str | None]
               ) -> None:
        """Note the values before they change; the first value noted for a variable stays (it
        is the one the server had before perflab touched it). Durable before it returns."""
        entry = self.pending()
        if entry and _same_server(entry["identity"], server) and \
                _restarted(entry["identity"], server):
            self.retire()  # what it holds was reset by the restart: those values are gone
            entry = None
        entry = entry or {"server": endpoint.describe(), "identity": server, "variables": {}}
        if not _same_server(entry["identity"], server):
            raise PerflabError(
                f"{self.path} holds variables changed on another server, "
                f"{_described(entry['identity'])}", hint="put them back first: perflab restore "
                f"--lab {self.path.parent} with that server's connection options")
        self.refuse_another(server)
        for name, value in originals.items():
            entry["variables"].setdefault(name, value)
        self._point(server, True)
        self._write(entry)

    def _write(self, entry: dict) -> None:
        partial = self.path.with_suffix(".partial")
        with open(partial, "w") as handle:
            handle.write(json.dumps(entry, indent=1))
            handle.flush()
            os.fsync(handle.fileno())
        partial.rename(self.path)

    def play_back(self, conn: pymysql.Connection) -> dict[str, str | None]:
        """Set every journalled variable back to its original value on the server `conn`
        reaches, if it is the journal's and has not restarted since; returns what was
        restored. A variable that cannot be set back stays journalled, the others are set."""
        entry = self.pending()
        if not entry:
            return {}
        recorded, seen = entry["identity"], identity(conn)
        if not _same_server(recorded, seen):
            raise PerflabError(
                f"{self.path} belongs to server {_described(recorded)}, not to "
                f"{_described(seen)}: nothing was changed here",
                hint=f"perflab restore --lab {self.path.parent} with the connection options of "
                     f"{recorded['hostname']}:{recorded['port']}")
        if _restarted(recorded, seen):
            self.retire()
            raise Restarted(entry["variables"])
        failed = {}
        specs = read_catalog(conn).variables
        for name, value in entry["variables"].items():
            spec = specs.get(name)
            try:
                if spec is None or not spec.dynamic:
                    raise PerflabError("not a dynamic variable of this server")
                if value is not None:
                    check_value(spec, value, "journal")  # of the variable's type and range
                set_global(conn, name, value)
            except (pymysql.MySQLError, PerflabError) as exc:
                failed[name] = error_text(exc) if isinstance(exc, pymysql.MySQLError) \
                    else exc.message
        if failed:
            entry["variables"] = {k: v for k, v in entry["variables"].items() if k in failed}
            self._write(entry)
            raise PerflabError(
                "could not put back " + "; ".join(f"{k}: {why}" for k, why in failed.items()),
                hint=f"they stay in {self.path}; once fixed, perflab restore --lab "
                     f"{self.path.parent}")
        self.path.unlink()
        self._point(recorded, False)
        return {k: v for k, v in entry["variables"].items()}

    def retire(self) -> None:
        """Keep a journal that no longer applies beside the lab, for the record."""
        entry = json.loads(self.path.read_text())
        self.path.rename(self.path.with_name(f"journal-retired-{time.time_ns()}.json"))
        if isinstance(entry, dict) and isinstance(entry.get("identity"), dict) and \
                not _malformed(entry):
            self._point(entry["identity"], False)


def _malformed(entry: dict) -> str | None:
    """What makes a journal's content one perflab did not write, or None: only names of
    variables --allow-set may change, values as text (or null) of a sane length, and the
    server's identity with the types it is recorded with."""
    server, found, variables = entry.get("server"), entry.get("identity"), \
        entry.get("variables")
    types: dict[str, type | tuple[type, ...]] = {
        "hostname": str, "port": int, "socket": (str, type(None)), "datadir": str,
        "server_id": int, "started": int}
    if not isinstance(found, dict) or any(not isinstance(found.get(k), t)
                                          for k, t in types.items()):
        return "its server identity is not one perflab records"
    if not isinstance(server, dict) or not all(
            isinstance(server.get(k), (str, type(None))) for k in ("socket", "option_file")):
        return "its connection is not one perflab records"
    if not isinstance(variables, dict):
        return "it names no variables"
    for name, value in variables.items():
        if not VARIABLE_NAME.match(name) or unrestorable(name):
            return "it names a variable perflab never changes"
        if value is not None and (not isinstance(value, str) or len(value) > LONGEST_VALUE or
                                  any(ord(c) < 32 for c in value)):
            return f"the value of {name} is not one perflab records"
    return None


class Restarted(Exception):
    """The journal's server restarted since: its globals are its configuration's again."""

    def __init__(self, variables: dict):
        super().__init__("restarted")
        self.variables = variables


def restore_pending(lab_root: Path, endpoint: Endpoint | None, say, claimed: bool = False
                    ) -> None:
    """Put back what a killed perflab left changed on an existing server, under the server's
    named lock (`claimed`: the caller holds it already). With no endpoint given, the journal's
    own (socket or host, user, option file; never a password) is tried; a server that cannot
    be reached that way, or another server, is a PerflabError telling how to restore."""
    journal = Journal(lab_root)
    entry = journal.pending()
    if not entry:
        return
    target = endpoint or Endpoint.from_description(entry["server"])
    try:
        with target.connect() as conn:
            if not claimed:
                _take_lock(conn)  # released when this session ends
            restored = journal.play_back(conn)
    except Restarted as restarted:
        say(f"the server {_described(entry['identity'])} restarted since perflab changed "
            f"{', '.join(restarted.variables)}: they are its configuration's again; nothing to "
            f"put back (the journal is kept as {journal.path.parent}/journal-retired-*.json)")
        return
    except (configparser.Error, UnicodeDecodeError, OSError):
        raise PerflabError(
            f"{lab_root}: the journal's option file {target.option_file} cannot be read as "
            "one", hint=f"perflab restore --lab {lab_root} with the server's connection "
                        "options") from None
    except pymysql.MySQLError as exc:
        raise PerflabError(
            f"{lab_root} holds variables changed on {entry['server'].get('where', 'a server')} "
            f"by a perflab that was stopped ({', '.join(entry['variables'])}), and they cannot "
            f"be put back: {error_text(exc)}",
            hint=f"perflab restore --lab {lab_root} with the server's connection options "
                 "(--defaults-file, --password)") from None
    say("restored on the server what an interrupted perflab had changed: "
        + ", ".join(f"{k}={v}" for k, v in restored.items()))


def _take_lock(conn: pymysql.Connection) -> None:
    if query(conn, "SELECT GET_LOCK(%s, 0)", (LOCK_NAME,))[0][0] != 1:
        raise PerflabError("another perflab is changing this server's variables (it holds the "
                           f"server's named lock {LOCK_NAME})",
                           hint="wait until it ends, then run again")


def pending_note(lab_root: Path) -> str | None:
    """What a command that only reads says of a journal it leaves alone."""
    entry = Journal(lab_root).pending()
    if not entry:
        return None
    return (f"{lab_root} holds variables a stopped perflab changed on "
            f"{_described(entry['identity'])} ({', '.join(entry['variables'])}); "
            f"perflab restore --lab {lab_root} puts them back")


@dataclass
class ExistingServer:
    """The face of an existing server that a run needs: connect, check it answers, change
    dynamic variables through the journal. It is never started, stopped or restarted."""

    endpoint: Endpoint
    journal: Journal
    permissions: Permissions
    options: dict[str, str] = field(default_factory=dict)  # what perflab has SET on it
    # every global variable before perflab's first change, to compare after the put-back
    before: dict[str, str] | None = field(default=None, repr=False)
    tripwire: Tripwire = field(default_factory=Tripwire)
    touched: set[str] = field(default_factory=set)  # set by perflab, or moved by its changes
    moved_by: dict[str, list[str]] = field(default_factory=dict)  # variable -> others it moved
    _lock: pymysql.Connection | None = field(default=None, repr=False)  # holds LOCK_NAME

    def connect(self, database: str | None = None) -> pymysql.Connection:
        return self.endpoint.connect(database)

    def died(self, grace: float = 0.0) -> bool:
        """Never: perflab cannot tell what became of someone else's server, so a failed
        point keeps its own error (and the next points fail the same way if it is gone)."""
        return False

    def set_global(self, variables: dict[str, str]) -> None:
        """SET GLOBAL, each variable's current value journalled first, under the server's
        named lock (taken at the first change, held until stop())."""
        if not variables:
            return
        if not self.permissions.set_variables:
            raise PerflabError(
                f"this server was not started by perflab: SET GLOBAL {', '.join(variables)} "
                "is refused", hint="add --allow-set to let perflab change dynamic variables "
                                   "(they are put back at the end)")
        for name in variables:
            why = unrestorable(name)
            if why:
                raise PerflabError(f"--allow-set does not change {name}: it {why}",
                                   hint="perflab changes only variables it can put back and "
                                        "prove")
        self.claim()
        with self.connect() as conn:
            now = global_variables(conn)
            if self.before is None:
                self.before = now
            originals = {name: _global_value(conn, name) for name in variables}
            server = identity(conn)
            self.journal.record(self.endpoint, server, originals)
            self.tripwire.disarm()  # perflab's own change, until the reference is taken again
            set_globals(conn, variables)
            after = global_variables(conn)
            moved: dict[str, str | None] = {
                name: now[name] for name in sorted(now)
                if name not in variables and after.get(name) != now[name]}
            self._refuse_unrestorable(conn, variables, moved, now)
            if moved:  # journalled after the ones set, so put back after them
                self.journal.record(self.endpoint, server, moved)
            self.touched.update(variables, moved)
            for name in variables:
                self.moved_by.setdefault(name, []).extend(moved)
            self.tripwire.reset(after)  # the server as this change left it
        self.options.update(variables)

    def _refuse_unrestorable(self, conn: pymysql.Connection, variables: dict[str, str],
                             moved: dict[str, str | None], before: dict[str, str]) -> None:
        """A variable the server moved with `variables` that perflab may not set back (not
        dynamic, or one --allow-set refuses) refuses them: they are put back at once, and
        what they moved where that did not restore it; the run stops naming it."""
        specs = read_catalog(conn).variables
        stuck = [name for name in moved if name not in specs or not specs[name].dynamic or
                 unrestorable(name)]
        if not stuck:
            return
        self.journal.play_back(conn)  # the variables set: their originals only
        for name in differences(before, global_variables(conn)):
            if name in moved and name in before:
                with contextlib.suppress(pymysql.MySQLError):
                    set_global(conn, name, before[name])
        now = global_variables(conn)
        still = [name for name in differences(before, now) if name in moved]
        self.tripwire.reset(now)
        raise PerflabError(
            f"--allow-set of {', '.join(variables)} also moved {', '.join(stuck)}, which "
            "perflab may not set back: refused, and put back"
            + (f" but for {', '.join(still)}" if still else ""),
            hint="remove it from the plan, or measure it on a managed server")

    def watch(self) -> None:
        """The tripwire's reference: every global variable as the server has it now."""
        with self.connect() as conn:
            self.tripwire.reset(global_variables(conn))

    def check_unchanged(self) -> None:
        """The tripwire, between points (server/tripwire.py)."""
        with self.connect() as conn:
            self.tripwire.check(conn)

    def put_back(self, names: list[str]) -> None:
        """Return `names` to the values they had before perflab (a configuration that does not
        set them follows one that did)."""
        entry = self.journal.pending() or {"variables": {}}
        if names:
            self.tripwire.disarm()
        with self.connect() as conn:
            followers = [moved for name in names for moved in self.moved_by.get(name, [])]
            for name in [*names, *followers]:  # what a variable moved, after it
                if name in entry["variables"]:
                    set_global(conn, name, entry["variables"][name])
            if names:
                self.tripwire.reset(global_variables(conn))
        for name in names:
            self.options.pop(name, None)

    def stop(self) -> None:
        """Never stops the server: puts back whatever this run changed on it, then lets go of
        its named lock. A run that changed nothing leaves the journal alone (it may hold
        another server's variables, which only `restore` puts back)."""
        try:
            if self._lock is not None:  # held by a run that may change variables
                with self.connect() as conn:
                    self.journal.play_back(conn)
                    if self.before is not None:
                        self._set_back_what_moved(conn)
                        _prove_put_back(self.before, global_variables(conn))
        except Restarted:
            pass  # restarted under the run: its globals are its configuration's already
        except pymysql.MySQLError as exc:
            raise PerflabError(f"the variables changed on the server could not be put back "
                               f"({error_text(exc)}); they stay in {self.journal.path}",
                               hint=f"once the server answers: perflab restore --lab "
                                    f"{self.journal.path.parent}") from None
        finally:
            self.release()
            self.tripwire.disarm()  # what follows the put-back is the server's own again
        self.options = {}

    def _set_back_what_moved(self, conn: pymysql.Connection) -> None:
        """After the journal's put-back: each global perflab set or moved that still differs
        from before the run (one put back before another that moves it) set to that value."""
        assert self.before is not None
        for name in differences(self.before, global_variables(conn)):
            if name in self.touched and name in self.before:
                set_global(conn, name, self.before[name])
        self.touched = set()

    def refuse_another_journal(self) -> None:
        """Before a run may change this server: no other lab's journal pending on it."""
        with self.connect() as conn:
            self.journal.refuse_another(identity(conn))

    def claim(self) -> None:
        """The server's named lock, on a session of its own held until stop() (the server
        lets go of it when that session ends, even when perflab is killed); checked before
        each change, and taken again if that session was closed under it."""
        if self._lock is not None:
            try:
                if query(self._lock, "SELECT IS_USED_LOCK(%s) = CONNECTION_ID()",
                         (LOCK_NAME,))[0][0] == 1:
                    return
            except pymysql.MySQLError:
                pass  # the session is gone (a server's wait_timeout, a restart)
            self.release()
        conn = self.connect()
        try:
            query(conn, "SET SESSION wait_timeout = 31536000")  # idle for the whole run
            _take_lock(conn)
        except BaseException:
            conn.close()
            raise
        self._lock = conn

    def release(self) -> None:
        """Let go of the server's named lock (stop() does, after putting variables back)."""
        if self._lock is not None:
            try:
                self._lock.close()
            except pymysql.MySQLError:
                pass  # already gone, and the lock with it
            self._lock = None

    def facts(self) -> dict:
        """What the server says about itself and its host, for the lab beside the client's."""
        with self.connect() as conn:
            row = query(conn, "SELECT @@hostname, @@version, @@version_comment, "
                              "@@version_compile_machine, @@version_compile_os, @@datadir, "
                              "@@read_only")[0]
            uptime = query(conn, "SHOW GLOBAL STATUS LIKE 'Uptime'")
        names = ("hostname", "version", "version_comment", "machine", "os", "datadir",
                 "read_only")
        return {**dict(zip(names, row, strict=True)),
                "uptime_seconds": int(uptime[0][1]) if uptime else None,
                "connection": self.endpoint.describe()["where"], "started_by": "someone else"}


def _prove_put_back(before: dict[str, str], after: dict[str, str]) -> None:
    """A PerflabError naming every global variable that differs from before the run."""
    changed = differences(before, after)
    if changed:
        raise PerflabError(
            "after the put-back, global variables differ from before the run: "
            + listed(changed, before, after),
            hint="set them back by hand; perflab put back every variable it changed, so "
                 "something else changed these during the run")


def _global_value(conn: pymysql.Connection, name: str) -> str | None:
    """A global variable's value as the server's command line spells it, None for NULL."""
    value = query(conn, f"SELECT @@GLOBAL.{variable_name(name)}")[0][0]
    return None if value is None else str(value)
