"""perflab run on a server it did not start (as in the STAR notes): a site's mariadbd with its
own datadir, a user with a password over TCP, data loaded by the test. Read-only unless
allowed; whatever --allow-set changes is put back, even after perflab is killed; no password in
the lab."""

import json
import os
import random
import re
import signal
import sqlite3
import subprocess
import tempfile
import time
from dataclasses import replace
from pathlib import Path

import pymysql
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import PERFLAB, copy_datadir, existing_plan, run_cli, stored_points, wait_for
from perflab.digest.digest import digest_logs
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load.clients import LocalCluster
from perflab.probes import busy
from perflab.server.connection import Endpoint, query
from perflab.server.existing import Journal, Restarted, identity
from perflab.server.managed import ManagedServer, ServerEnvironment
from perflab.server.tripwire import global_variables

PASSWORD = "Site-s3cret-pw"
SITE_KEY_BUFFER = 8 << 20
STATEMENTS = """
[[statements]]
sql = "SELECT name FROM items WHERE id = {int:1:20000}"
weight = 8
[[statements]]
sql = "SELECT COUNT(*) FROM items WHERE price BETWEEN {int:1:900} AND {int:901:1000}"
weight = 2
"""


def make_appdb(conn) -> None:
    """The application's schema: 20,000 items."""
    query(conn, "CREATE DATABASE appdb")
    query(conn, "USE appdb")
    query(conn, "CREATE TABLE appdb.items (id INT PRIMARY KEY, name VARCHAR(40), "
                "price INT, KEY (price)) ENGINE=InnoDB")
    query(conn, "INSERT INTO appdb.items SELECT seq, CONCAT('item', seq), seq % 1000 "
                "FROM seq_1_to_20000")


@pytest.fixture(scope="module")
def site(tmp_path_factory, pristine_datadir):
    """The site's server: its own datadir, the binary log on, listening on TCP and a socket,
    a password user."""
    root = tmp_path_factory.mktemp("site")
    copy_datadir(pristine_datadir, root / "data")
    server = ManagedServer(root / "data", root, {"key_buffer_size": str(SITE_KEY_BUFFER),
                                                 "max_connections": "400", "log_bin": "binlog"},
                           ServerEnvironment(tcp=True))
    server.start()
    try:
        with server.connect() as conn:
            make_appdb(conn)
            for host in ("127.0.0.1", "localhost"):
                query(conn, f"CREATE USER 'bench'@'{host}' IDENTIFIED BY '{PASSWORD}'")
                query(conn, f"GRANT SELECT ON appdb.* TO 'bench'@'{host}'")
                query(conn, f"GRANT SUPER, PROCESS ON *.* TO 'bench'@'{host}'")
        option_file = root / "bench.cnf"
        option_file.write_text(f"[client]\nuser = bench\npassword = {PASSWORD}\n")
        option_file.chmod(0o600)
        yield server, option_file, root
    finally:
        server.stop()


def app_plan(tmp_path: Path, name: str, configs: str = "[configs.asis]\n", threads=(1, 4),
             workload_extra: str = "") -> Path:
    statements = tmp_path / "app-statements.toml"
    statements.write_text(STATEMENTS)
    return existing_plan(tmp_path / f"{name}.toml", name, statements, threads=threads,
                         configs=configs, workload_extra=workload_extra)


def test_a_read_only_run_from_two_client_workers_with_a_password(site, tmp_path):
    """--host and --clients: both workers log in with the option file's password, which
    reaches them on no command line and in no file, and the server still changes nothing."""
    server, option_file, _ = site
    before = snapshot(server)
    plan = app_plan(tmp_path, "app-clients", threads=(8,))
    lab = tmp_path / "clients-lab"
    with LocalCluster(tmp_path, workers=2) as cluster:
        out = run_cli("run", str(plan), "--lab", str(lab), *tcp_args(server, option_file),
                      "--clients", cluster.address)
        logs = "".join(path.read_text() for path in tmp_path.glob("*.log"))
    assert out.returncode == 0, out.stderr
    (point,) = stored_points(Lab(lab), "app-clients")
    assert point["status"] == "ok" and point["qps"] > 100
    assert sorted(c["threads"] for c in json.loads(point["clients_json"])) == [4, 4]
    assert snapshot(server) == before
    no_password_in(lab)
    assert PASSWORD not in logs + out.stdout + out.stderr


def snapshot(server: ManagedServer) -> dict:
    """What a run that only reads must leave as it was: every global variable, the data, the
    InnoDB monitors enabled, the files in the datadir and the server's temporary directory."""
    with server.connect() as conn:
        variables = global_variables(conn)  # but the binary log's positions, which writes move
        checksums = query(conn, "CHECKSUM TABLE appdb.items EXTENDED")
        monitors = query(conn, "SELECT NAME FROM information_schema.INNODB_METRICS "
                               "WHERE ENABLED = 1 ORDER BY NAME")
        datadir, tmpdir = query(conn, "SELECT @@datadir, @@tmpdir")[0]
    files = {where: sorted(str(p.relative_to(where)) for p in Path(where).rglob("*"))
             for where in (datadir, tmpdir)}
    return {"variables": variables, "checksums": checksums, "monitors": monitors,
            "files": files}


def tcp_args(server: ManagedServer, option_file: Path) -> list[str]:
    return ["--host", "127.0.0.1", "--port", str(server.port), "--defaults-file",
            str(option_file)]


def no_password_in(lab_root: Path) -> None:
    for path in lab_root.rglob("*"):
        if path.is_file():
            assert PASSWORD.encode() not in path.read_bytes(), f"password found in {path}"


def test_a_read_only_sweep_to_300_connections_over_tcp_and_socket_changes_nothing(site,
                                                                                  tmp_path):
    server, option_file, _ = site
    before = snapshot(server)
    plan = app_plan(tmp_path, "app-tcp", threads=(4, 300))
    tcp_lab = tmp_path / "tcp-lab"
    out = run_cli("run", str(plan), "--lab", str(tcp_lab), *tcp_args(server, option_file))
    assert out.returncode == 0, out.stderr
    points = stored_points(Lab(tcp_lab), "app-tcp")
    assert [(p["threads"], p["status"]) for p in points] == [(4, "ok"), (300, "ok")]
    assert all(p["qps"] > 100 for p in points)
    assert "Response time vs connections" in out.stdout
    slow, fast = sorted(points, key=lambda p: -p["threads"])
    assert slow["latency_avg_ms"] > fast["latency_avg_ms"]  # 300 connections queue on 2 cores
    assert all(0 < p["client_cpu"] <= 1 for p in points)

    socket_lab = tmp_path / "socket-lab"
    out = run_cli("run", str(plan), "--lab", str(socket_lab), "--socket", str(server.socket),
                  "--defaults-file", str(option_file))
    assert out.returncode == 0, out.stderr
    via_socket = stored_points(Lab(socket_lab), "app-tcp")
    assert len(via_socket) == 2
    # the server measured is perflab's work, not other work loading the machine: named by
    # its socket (SO_PEERCRED), or over loopback TCP by its pid file
    assert all(p["other_cpu"] is not None for p in points + via_socket)
    with pymysql.connect(host="127.0.0.1", port=server.port, user="bench",
                         password=PASSWORD) as tcp, server.connect() as local:
        assert busy.server_pid(tcp) == busy.server_pid(local) == server.pid

    assert snapshot(server) == before  # every global variable, the table's checksum
    for lab in (tcp_lab, socket_lab):
        no_password_in(lab)
    states = [json.loads(row[0]) for row in sqlite3.connect(Lab(tcp_lab).db_path).execute(
        "SELECT process_json FROM server_states")]
    assert states and all(s["started_by"] == "someone else" for s in states)
    assert states[0]["connection"] == f"tcp 127.0.0.1:{server.port}"

    compared = run_cli("compare", str(tcp_lab), str(socket_lab))
    assert compared.returncode == 0, compared.stderr
    rows = [line.split() for line in compared.stdout.splitlines() if line.startswith("asis")]
    assert [row[2] for row in rows] == ["4", "300"]  # a verdict per connection count


def test_writes_loads_set_and_restarts_are_refused_without_the_flags(site, tmp_path):
    server, option_file, _ = site
    target = tcp_args(server, option_file)
    lab = str(tmp_path / "lab")

    writing = app_plan(tmp_path, "app-w")
    writing.write_text(writing.read_text())
    (tmp_path / "app-statements.toml").write_text(
        STATEMENTS + '[[statements]]\nsql = "UPDATE items SET price = 1 WHERE id = 1"\n')
    out = run_cli("run", str(writing), "--lab", lab, *target)
    assert out.returncode == 2 and "--allow-writes" in out.stderr, out.stderr
    out = run_cli("run", str(writing), "--lab", lab, *target, "--allow-writes")
    assert out.returncode == 2 and "perflab_*" in out.stderr, out.stderr  # appdb is theirs

    setting = app_plan(tmp_path, "app-s", configs='[configs.asis]\n[configs.big]\n'
                       'key_buffer_size = "64M"\n')
    out = run_cli("run", str(setting), "--lab", lab, *target)
    assert out.returncode == 2 and "--allow-set" in out.stderr, out.stderr

    restart = app_plan(tmp_path, "app-r", configs='[configs.asis]\n[configs.pfs]\n'
                       'performance_schema = "ON"\n')
    out = run_cli("run", str(restart), "--lab", lab, *target, "--allow-set")
    assert out.returncode == 2 and "restart" in out.stderr, out.stderr

    generated = tmp_path / "gen.toml"
    generated.write_text('[study]\nname = "gen"\n[workload]\nname = "oltp_point_select"\n'
                         '[run]\nthreads = [1]\n[configs.asis]\n')
    out = run_cli("run", str(generated), "--lab", lab, *target)
    assert out.returncode == 2 and "dataset" in out.stderr and "existing" in out.stderr
    assert "Traceback" not in out.stderr
    assert stored_points(Lab(tmp_path / "lab"), "app-w") == []
    with server.connect() as conn:
        assert query(conn, "SELECT price FROM appdb.items WHERE id = 1")[0][0] == 1


def key_buffer(server: ManagedServer) -> int:
    with server.connect() as conn:
        return int(query(conn, "SELECT @@GLOBAL.key_buffer_size")[0][0])


@pytest.fixture(scope="module")
def other(tmp_path_factory, pristine_datadir):
    """A second server on the same machine (server B), with a schema like the site's."""
    root = tmp_path_factory.mktemp("other")
    copy_datadir(pristine_datadir, root / "data")
    server = ManagedServer(root / "data", root, {"key_buffer_size": str(16 << 20)})
    server.start()
    try:
        with server.connect() as conn:
            make_appdb(conn)
        yield server
    finally:
        server.stop()


def test_allow_set_puts_variables_back_at_the_end_and_a_killed_run_only_on_its_own_server(
        site, other, tmp_path):
    server, option_file, _ = site
    target = tcp_args(server, option_file)
    with server.connect() as conn:
        before = query(conn, "SELECT @@GLOBAL.collation_server")[0][0]
    # a collation, which SYSTEM_VARIABLES gives no option and the server lists no values for,
    # is set and put back too
    plan = app_plan(tmp_path, "app-set", configs='[configs.asis]\n[configs.big]\n'
                    'key_buffer_size = "64M"\n[configs.bin]\ncollation_server = "latin1_bin"\n',
                    threads=(1,))
    lab = tmp_path / "lab"
    out = run_cli("run", str(plan), "--lab", str(lab), *target, "--allow-set")
    assert out.returncode == 0, out.stderr
    assert "SET GLOBAL key_buffer_size=67108864" in out.stderr
    assert "SET GLOBAL collation_server=latin1_bin" in out.stderr
    assert key_buffer(server) == SITE_KEY_BUFFER
    with server.connect() as conn:
        assert query(conn, "SELECT @@GLOBAL.collation_server")[0][0] == before != "latin1_bin"
    assert not (lab / "journal.json").exists()

    killed_plan = app_plan(tmp_path, "app-kill", configs='[configs.big]\n'
                           'key_buffer_size = "64M"\n[configs.asis]\n', threads=(1, 2, 4, 8))
    killed_plan.write_text(killed_plan.read_text().replace("run_seconds = 1", "run_seconds = 5"))
    proc = subprocess.Popen([*PERFLAB, "run", str(killed_plan), "--lab", str(lab), *target,
                             "--allow-set"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: key_buffer(server) == 64 << 20, 60, "the SET GLOBAL")
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert key_buffer(server) == 64 << 20  # a killed perflab cannot put it back itself
    assert (lab / "journal.json").exists()
    no_password_in(lab)

    b_before = snapshot(other)
    out = run_cli("report", str(lab))  # a command that only reads says so, changes nothing
    assert out.returncode == 0, out.stderr
    assert f"perflab restore --lab {lab}" in out.stderr
    assert key_buffer(server) == 64 << 20 and (lab / "journal.json").exists()

    on_b = ["--socket", str(other.socket)]
    out = run_cli("run", str(app_plan(tmp_path, "on-b", threads=(1,))), "--lab", str(lab), *on_b)
    assert out.returncode == 0, out.stderr  # a read-only run on B leaves A's journal alone
    assert "perflab restore" in out.stderr
    out = run_cli("run", str(plan), "--lab", str(lab), *on_b, "--allow-set")
    assert out.returncode == 2 and "belongs to server" in out.stderr, out.stderr
    out = run_cli("restore", "--lab", str(lab), *on_b)
    assert out.returncode == 2 and "belongs to server" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
    assert snapshot(other) == b_before  # nothing changed on B, by any of them
    assert key_buffer(server) == 64 << 20 and (lab / "journal.json").exists()

    out = run_cli("restore", "--lab", str(lab))  # the journal's own connection: A
    assert out.returncode == 0, out.stderr
    assert "restored on the server" in out.stderr
    assert key_buffer(server) == SITE_KEY_BUFFER
    assert not (lab / "journal.json").exists()


def test_a_journal_names_what_it_could_not_put_back_and_retires_after_a_restart(site,
                                                                                tmp_path):
    server, _, _ = site
    journal = Journal(tmp_path)
    with server.connect() as conn:
        journal.record(server.endpoint, identity(conn),
                       {"key_buffer_size": str(SITE_KEY_BUFFER), "no_such_variable": "1",
                        "sort_buffer_size": "lots"})
        query(conn, "SET GLOBAL key_buffer_size = 16777216")
        with pytest.raises(PerflabError) as failed:
            journal.play_back(conn)
    assert "no_such_variable" in failed.value.message
    assert "sort_buffer_size" in failed.value.message  # not a value of its type
    assert key_buffer(server) == SITE_KEY_BUFFER  # the others were put back
    left = json.loads((tmp_path / "journal.json").read_text())["variables"]
    assert sorted(left) == ["no_such_variable", "sort_buffer_size"]

    # a journal edited by hand is data, never instructions: refused whole, in one line
    entry = json.loads((tmp_path / "journal.json").read_text())
    for edit, value in [("variables", {"x = 1; DROP DATABASE appdb; SET @y": "1"}),
                        ("variables", {"general_log_file": "/tmp/perflab-planted.log"}),
                        ("variables", {"key_buffer_size": ["1"]}),
                        ("identity", {"hostname": 1})]:
        (tmp_path / "journal.json").write_text(json.dumps({**entry, edit: value}))
        with server.connect() as conn, pytest.raises(PerflabError) as failed:
            journal.play_back(conn)
        assert "is not a journal perflab wrote" in failed.value.message
    with server.connect() as conn:
        assert query(conn, "SHOW DATABASES LIKE 'appdb'")  # the name was never SQL
    (tmp_path / "journal.json").write_text(json.dumps(
        {**entry, "server": {**entry["server"], "socket": None, "option_file": "/etc/passwd"}}))
    out = run_cli("restore", "--lab", str(tmp_path))
    assert out.returncode == 2 and "cannot be read as one" in out.stderr, out.stderr
    assert "Traceback" not in out.stderr and "root:" not in out.stderr  # no line of the file

    entry["identity"]["started"] -= 3600  # as if the server had restarted since
    entry["variables"] = {"key_buffer_size": str(1 << 20)}
    (tmp_path / "journal.json").write_text(json.dumps(entry))
    with server.connect() as conn, pytest.raises(Restarted):
        journal.play_back(conn)
    assert key_buffer(server) == SITE_KEY_BUFFER
    assert not (tmp_path / "journal.json").exists()
    assert len(list(tmp_path.glob("journal-retired-*.json"))) == 1

    (tmp_path / "journal.json").write_text(json.dumps(entry))  # a restart under a run:
    with server.connect() as conn:  # the values noted before it are gone, the new ones kept
        journal.record(server.endpoint, identity(conn), {"key_buffer_size": "123"})
    kept = json.loads((tmp_path / "journal.json").read_text())
    assert kept["variables"] == {"key_buffer_size": "123"}
    assert kept["identity"]["started"] == entry["identity"]["started"] + 3600
    assert len(list(tmp_path.glob("journal-retired-*.json"))) == 2
    journal.retire()  # pending on the site: every other lab would refuse to change it
    assert len(list(tmp_path.glob("journal-retired-*.json"))) == 3


def test_two_runs_never_change_one_server_at_once(site, tmp_path):
    server, option_file, _ = site
    plan = app_plan(tmp_path, "app-locked", configs='[configs.big]\nkey_buffer_size = "64M"\n',
                    threads=(1,))
    with server.connect() as holder:  # another perflab, changing this server
        assert query(holder, "SELECT GET_LOCK('perflab.set_global', 0)")[0][0] == 1
        out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"),
                      *tcp_args(server, option_file), "--allow-set")
    assert out.returncode == 2 and "another perflab" in out.stderr, out.stderr
    assert key_buffer(server) == SITE_KEY_BUFFER


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_sigterm_and_sighup_put_variables_back(site, tmp_path, signum):
    server, option_file, _ = site
    plan = app_plan(tmp_path, "app-term", configs='[configs.big]\nkey_buffer_size = "64M"\n'
                    '[configs.asis]\n', threads=(1, 2, 4, 8))
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(tmp_path / "lab"),
                             *tcp_args(server, option_file), "--allow-set"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: key_buffer(server) == 64 << 20, 60, "the SET GLOBAL")
        os.kill(proc.pid, signum)
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, proc.stderr.read().decode()[-3000:]
    assert key_buffer(server) == SITE_KEY_BUFFER


def general_log(server: ManagedServer, path: Path, on: bool) -> None:
    """The site's administrator switches its general log (the test is the site here)."""
    with server.connect() as conn:
        if on:
            query(conn, "SET GLOBAL general_log_file = %s", (str(path),))
        query(conn, f"SET GLOBAL general_log = {'ON' if on else 'OFF'}")


def app_shares(log: Path) -> dict[str, float]:
    """The share of calls of each of the application's fingerprints (those on appdb.items)."""
    classes = {c.fingerprint: c.calls for c in digest_logs([log]).classes
               if "from items" in c.fingerprint}
    total = sum(classes.values())
    return {fp: calls / total for fp, calls in classes.items()}


def test_a_logged_application_replays_with_its_fingerprints_and_shares(site, tmp_path):
    """log -> digest --workload -> run on the server -> the replay's own log digests to the
    same fingerprints in the same proportions."""
    server, option_file, root = site
    logged, replayed = root / "app.log", root / "replay.log"
    rng = random.Random(7)
    general_log(server, logged, True)
    try:
        with Endpoint(host="127.0.0.1", port=server.port, user="bench",
                      password=PASSWORD).connect("appdb") as conn:
            for n in range(600):
                if n % 6 < 3:
                    query(conn, f"SELECT name FROM items WHERE id = {rng.randint(1, 20000)}")
                elif n % 6 < 5:
                    low = rng.randint(1, 900)
                    query(conn, f"SELECT COUNT(*) FROM items WHERE price BETWEEN {low} AND "
                                f"{low + 50}")
                else:
                    query(conn, f"SELECT id FROM items WHERE name = 'item{rng.randint(1, 999)}'")
    finally:
        general_log(server, logged, False)
    expected = app_shares(logged)
    assert sorted(expected.values()) == pytest.approx([1 / 6, 1 / 3, 1 / 2])

    captured = tmp_path / "captured.toml"
    out = run_cli("digest", str(logged), "--workload", str(captured), "--top", "10")
    assert out.returncode == 0, out.stderr
    plan = app_plan(tmp_path, "replay", threads=(2,))
    plan.write_text(plan.read_text().replace(str(tmp_path / "app-statements.toml"),
                                             str(captured))
                    .replace("run_seconds = 1", "run_seconds = 2"))  # shares within 0.03
    general_log(server, replayed, True)
    try:
        out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"),
                      *tcp_args(server, option_file))
    finally:
        general_log(server, replayed, False)
    assert out.returncode == 0, out.stderr
    # the replay's statements are prepared: the general log writes each execution as Execute
    # (with its values), which pt-query-digest and perflab's digest take for administrator
    # commands; here they are read as the queries they are
    replayed.write_text(re.sub(r"(\t\s*\d+ )Execute\t", r"\1Query\t", replayed.read_text()))
    shares = app_shares(replayed)
    assert set(shares) == set(expected)
    for fingerprint, share in expected.items():
        assert shares[fingerprint] == pytest.approx(share, abs=0.03), fingerprint


# Objects a read may reach: stored functions that set, lock, write or branch, views of them
# (each DETERMINISTIC: with the binary log on, the server creates no other function unless a
# global trusts function creators).
HIDDEN = [
    "CREATE FUNCTION IF NOT EXISTS appdb.writes_a_row() RETURNS INT DETERMINISTIC "
    "MODIFIES SQL DATA BEGIN UPDATE appdb.items SET price = price + 1 WHERE id = 1; RETURN 1; "
    "END",
    "CREATE FUNCTION IF NOT EXISTS appdb.setg() RETURNS INT DETERMINISTIC BEGIN SET GLOBAL "
    "max_connections = 123; RETURN 1; END",
    "CREATE FUNCTION IF NOT EXISTS appdb.takes_lock() RETURNS INT DETERMINISTIC "
    "RETURN GET_LOCK('battery', 0)",
    "CREATE FUNCTION IF NOT EXISTS appdb.double_it(x INT) RETURNS INT DETERMINISTIC BEGIN "
    "DECLARE y INT DEFAULT 2; SET y = y * x; RETURN y; END",
    "CREATE FUNCTION IF NOT EXISTS appdb.branches(x INT) RETURNS INT DETERMINISTIC BEGIN "
    "IF x > 0 THEN SET GLOBAL max_connections = 124; END IF; RETURN x; END",
    "CREATE OR REPLACE VIEW appdb.v_setg AS SELECT appdb.setg() AS x",
    "CREATE OR REPLACE VIEW appdb.v_of_v AS SELECT x FROM appdb.v_setg",
    "CREATE OR REPLACE VIEW appdb.v_lock AS SELECT appdb.takes_lock() AS l",
    "CREATE OR REPLACE VIEW appdb.v_writes AS SELECT appdb.writes_a_row() AS w",
    "CREATE OR REPLACE VIEW appdb.v_double AS SELECT appdb.double_it(id) AS d FROM appdb.items",
    # names the server resolves otherwise than a reading of perflab's own would (issue 64)
    "CREATE FUNCTION IF NOT EXISTS appdb.status() RETURNS INT DETERMINISTIC BEGIN SET GLOBAL "
    "max_connections = 126; RETURN 1; END",
    "CREATE FUNCTION IF NOT EXISTS appdb.`set-g`() RETURNS INT DETERMINISTIC BEGIN SET GLOBAL "
    "max_connections = 127; RETURN 1; END",
    "CREATE DATABASE IF NOT EXISTS AppCase",
    "CREATE OR REPLACE VIEW AppCase.v AS SELECT appdb.setg() AS x",
    # a body statement whose first target is local and a later one global
    "CREATE FUNCTION IF NOT EXISTS appdb.local_then_global() RETURNS INT DETERMINISTIC BEGIN "
    "DECLARE x INT; SET x = 1, GLOBAL max_connections = 128; RETURN x; END",
    "CREATE FUNCTION IF NOT EXISTS appdb.sets_init() RETURNS INT DETERMINISTIC BEGIN "
    "DECLARE x INT; SET x = 0, @@GLOBAL.init_connect = 'DELETE FROM appdb.items'; RETURN x; END",
]

# Each statement: what a read-only run does with it, as (the flags given, the words of the
# refusal), or None when it runs. Statements that write or lock are all refused before the run;
# the read-only session is the second wall (test below).
BATTERY = [
    ("SELECT 1; DELETE FROM items", (), "more than one statement"),
    ("SHOW PROCESSLIST; KILL 5", (), "more than one statement"),
    ("SELECT name FROM items WHERE id = 1; UPDATE items SET price = 0", (),
     "more than one statement"),
    ("SELECT name FROM items INTO OUTFILE '/tmp/perflab-battery.txt'", (), "INTO OUTFILE"),
    ("SELECT name INTO DUMPFILE '/tmp/perflab-battery.bin' FROM items LIMIT 1", (),
     "INTO OUTFILE"),
    ("SELECT LOAD_FILE('/etc/passwd')", (), "LOAD_FILE"),
    ("SELECT 1 /*!; DELETE FROM items */", (), "'/*' starts a comment"),
    ("SELECT 1 /*M!100000 ; DELETE FROM items */", (), "'/*' starts a comment"),
    ("SELECT 'a\\' ; DELETE FROM items; -- '", (), "a backslash in a string"),
    ("SELECT 1 --x; DELETE FROM items", (), "more than one statement"),
    ("SELECT writes_a_row()", (), "reaches function appdb.writes_a_row, which is declared "
     "MODIFIES SQL DATA"),
    ("SELECT appdb.writes_a_row() FROM items LIMIT 1", (), "function appdb.writes_a_row"),
    # what a read reaches: a view's definition, a stored function's body (issue 42)
    ("SELECT x FROM v_setg", (), "reaches view appdb.v_setg -> function appdb.setg, which "
     "sets GLOBAL max_connections =, which is not a variable the function declared"),
    ("SELECT x FROM v_setg", ("--allow-writes",), "view appdb.v_setg -> function appdb.setg"),
    ("SELECT x FROM v_of_v", (), "view appdb.v_of_v -> view appdb.v_setg -> function"),
    ("SELECT `setg`() FROM items LIMIT 1", (), "function appdb.setg"),
    ("SELECT l FROM v_lock", (), "--allow-locks"),
    ("SELECT w FROM v_writes", (), "view appdb.v_writes -> function appdb.writes_a_row"),
    ("SELECT no_such_function(1)", (), "refused by the server when prepared"),
    # held-out forms of issue 64's classes: names, lexing, bodies
    ("WITH setg AS (SELECT 1 AS x) SELECT setg() FROM setg", (), "function appdb.setg"),
    ("SELECT `set-g`()", (), "function appdb.set-g"),
    ("SELECT `setg` ()", (), "function appdb.setg"),
    ("SELECT status()", (), "function appdb.status"),
    ("SELECT APPDB.SETG()", (), "function appdb.setg"),
    ("SELECT x FROM AppCase.v", (), "view AppCase.v -> function appdb.setg"),
    ("SELECT local_then_global()", (), "sets GLOBAL max_connections"),
    ("SELECT sets_init()", (), "sets @@GLOBAL"),
    ("SELECT\u00a0setg()", (), "U+00A0"),
    ("SELECT 1 -- x\n, setg()", (), "'--' starts a comment"),
    ("SELECT 1 #\n, setg()", (), "'#' starts a comment"),
    ("SELECT \"a\"", (), "ANSI_QUOTES"),
    ("SELECT 'é', setg()", (), "U+00E9"),
    ("SELECT {fn setg()}", (), "'{' starts an ODBC escape"),
    ("SELECT branches(1)", (), "flow control"),
    ("SELECT NEXTVAL(seq)", (), "--allow-writes"),
    ("SELECT SETVAL(seq, 1)", (), "--allow-writes"),
    ("SELECT NEXT VALUE FOR seq", (), "cannot be parsed"),
    ("SELECT name FROM items WHERE id = 1 FOR UPDATE", (), "--allow-locks"),
    ("SELECT name FROM items WHERE id = 1 LOCK IN SHARE MODE", (), "--allow-locks"),
    ("SELECT GET_LOCK('battery', 100)", (), "--allow-locks"),
    ("SELECT RELEASE_ALL_LOCKS()", (), "--allow-locks"),
    ("SELECT * FROM (SELECT id FROM items FOR UPDATE) x", (), "--allow-locks"),
    ("SELECT 1 INTO @x", (), "with any flag"),
    ("DELETE FROM items", (), "--allow-writes"),
    ("UPDATE items SET price = 0", (), "--allow-writes"),
    ("INSERT INTO items VALUES (99999, 'x', 1)", (), "--allow-writes"),
    ("REPLACE INTO items VALUES (1, 'x', 1)", (), "is not a read perflab can parse"),
    ("KILL 5", (), "with any flag"),
    ("SET SESSION TRANSACTION READ WRITE", (), "with any flag"),
    ("TRUNCATE items", (), "--allow-writes"),
    ("DROP TABLE items", (), "--allow-writes"),
    ("CALL p()", (), "is not a read perflab can parse"),
    ("DO SLEEP(1)", (), "cannot be parsed"),
    ("LOCK TABLES items WRITE", (), "is not a read perflab can parse"),
    ("ANALYZE DELETE FROM items", (), "cannot be parsed"),
    ("FLUSH TABLES", (), "with any flag"),
    ("DELETE FROM appdb.items", ("--allow-writes",), "perflab_*"),
    ("DELETE FROM perflab_sql.t", ("--allow-writes",), "perflab_*"),  # default schema appdb
    ("UPDATE perflab_x.t JOIN appdb.items USING (id) SET t.a = 1", ("--allow-writes",),
     "appdb.items is not in a perflab_* schema"),
    ("SET GLOBAL max_connections = 1", ("--allow-writes",), "only rows and tables"),
    ("KILL 5", ("--allow-writes",), "only rows and tables"),
    ("USE appdb", ("--allow-writes",), "only rows and tables"),
    ("START TRANSACTION READ WRITE", ("--allow-writes",), "only rows and tables"),
    ("DROP DATABASE appdb", ("--allow-writes",), "appdb is not in a perflab_* schema"),
    ("SELECT NEXTVAL(appdb.seq)", ("--allow-writes",), "appdb.seq is not in a perflab_*"),
    ("SELECT writes_a_row()", ("--allow-writes",), "function appdb.writes_a_row, which is "
     "declared MODIFIES SQL DATA: perflab writes only rows and tables"),
    ("INSERT INTO perflab_x.t SELECT LOAD_FILE('/etc/passwd')", ("--allow-writes",),
     "LOAD_FILE"),
    ("INSERT INTO perflab_x.t VALUES (GET_LOCK('a', 100))", ("--allow-writes",),
     "--allow-locks"),
    ("SELECT 1 /* '{str:1:3}' */", (), "placeholder stands inside"),
    ("SELECT 'a\\{str:1:1} ; DELETE FROM items ; -- '", (), "placeholder stands inside"),
    ("SELECT 'a\\{x:1:1} ; DELETE FROM items ; -- '", (), "placeholder {x:1:1} is malformed"),
    # reads, whatever their first word
    ("WITH c AS (SELECT id FROM items WHERE id < 10) SELECT COUNT(*) FROM c", (), None),
    ("/* app: list */ SELECT name FROM items WHERE id = {int:1:20000}", (),
     "'/*' starts a comment"),
    ("(SELECT name FROM items WHERE id = {int:1:20000})", (), None),
    ("SELECT name FROM items WHERE name = 'O''Brien'", (), None),
    ("SHOW GLOBAL STATUS LIKE 'Questions'", (), None),
    ("SELECT d FROM v_double WHERE d = {int:1:100}", (), None),  # a view of a pure function
    ("SELECT double_it({int:1:100}), COUNT(*) FROM items", (), None),
    ("SELECT name FROM items WHERE id = 1 LOCK IN SHARE MODE", ("--allow-locks",), None),
]


def battery_plan(tmp_path: Path, n: int, sqls: list[str]) -> Path:
    statements = tmp_path / f"battery-{n}-statements.toml"
    statements.write_text("".join(f"[[statements]]\nsql = {json.dumps(sql)}\n" for sql in sqls))
    plan = tmp_path / f"battery-{n}-plan.toml"
    plan.write_text(app_plan(tmp_path, f"battery-{n}", threads=(2,)).read_text()
                    .replace(str(tmp_path / "app-statements.toml"), str(statements)))
    return plan


def test_a_battery_of_writes_and_locks_is_refused_and_reads_run(site, tmp_path):
    """Run through perflab on the site's server as root (every privilege): the refusal comes
    from perflab, before anything runs; the reads run; nothing changes on the server."""
    server, _, _ = site
    with server.connect() as conn:
        query(conn, "CREATE SEQUENCE IF NOT EXISTS appdb.seq")
        for statement in HIDDEN:
            query(conn, statement)
        sequence = query(conn, "SELECT NEXTVAL(appdb.seq)")[0][0]
    before = snapshot(server)
    lab = Lab(tmp_path / "lab")
    assert len(BATTERY) >= 40
    reads: dict[tuple[str, ...], list[str]] = {}
    for n, (sql, flags, refusal) in enumerate(BATTERY):
        if refusal is None:
            reads.setdefault(flags, []).append(sql)
            continue
        out = run_in_process(battery_plan(tmp_path, n, [sql]), lab, server, flags)
        assert refusal in out, (sql, out)
    # the reads of one permission set run as one study: a refusal of any one refuses it all
    for n, (flags, sqls) in enumerate(reads.items(), start=len(BATTERY)):
        out = run_in_process(battery_plan(tmp_path, n, sqls), lab, server, flags)
        assert out == "ran", (sqls, out)
    assert snapshot(server) == before
    with server.connect() as conn:
        assert query(conn, "SELECT NEXTVAL(appdb.seq)")[0][0] == sequence + 1
        assert query(conn, "SELECT IS_USED_LOCK('battery')")[0][0] is None
    assert not Path("/tmp/perflab-battery.txt").exists()


def run_in_process(plan: Path, lab: Lab, server: ManagedServer, flags) -> str:
    """perflab run PLAN --socket ... FLAGS, as the CLI calls it: "ran" or the error's words."""
    from perflab.running.runner import run_study
    from perflab.server.existing import ExistingServer, Permissions
    from perflab.studies import resolve_plan

    permissions = Permissions(writes="--allow-writes" in flags, locks="--allow-locks" in flags,
                              set_variables="--allow-set" in flags)
    try:
        summary = run_study(resolve_plan(str(plan)), lab, lambda _: None, ExistingServer(
            server.endpoint, Journal(lab.root), permissions))
    except PerflabError as exc:
        return f"{exc.message} (hint: {exc.hint})"
    if summary.failed == 0:
        return "ran"
    with lab.store() as store:  # the failed points' own words, for a reader of the failure
        errors = {p.error for study in store.studies() for p in store.points(study)
                  if not p.ok}
    return "failed: " + "; ".join(sorted(e.splitlines()[0] for e in errors if e))


def test_a_write_that_reaches_a_read_only_run_fails_at_the_server(site, tmp_path):
    """The second wall: were a write to pass perflab's checks, the read-only session of every
    sysbench connection and of perflab's own stops it at the server."""
    from perflab.domain import Dataset, Workload
    from perflab.load.workloads import resolve
    from perflab.running.measurer import run_load
    from perflab.server.existing import ExistingServer, Permissions

    server, _, _ = site
    before = snapshot(server)
    statements = tmp_path / "writes.toml"
    statements.write_text('[[statements]]\nsql = "UPDATE items SET price = 0 WHERE id = '
                          '{int:1:20000}"\n[[statements]]\nsql = "SELECT appdb.writes_a_row()"\n')
    workload = resolve(Workload("sql", (("file", str(statements)),)))
    assert workload.writes
    workload.family.write_files(tmp_path / "files")
    assert (next((tmp_path / "files").iterdir()).stat().st_mode & 0o777) == 0o600
    read_only = ExistingServer(replace(server.endpoint, read_only=True), Journal(tmp_path),
                               Permissions())
    with pytest.raises(PerflabError) as failed:
        run_load(read_only, workload, Dataset(existing="appdb"), 2, 1)
    assert "READ ONLY" in (failed.value.detail or "") + failed.value.message
    with read_only.connect() as conn, pytest.raises(Exception, match="READ ONLY"):
        query(conn, "DELETE FROM appdb.items")
    assert snapshot(server) == before


def test_no_statement_of_a_run_outlives_it_on_someone_elses_server(site, tmp_path):
    """max_statement_time on every session: a statement that would hold the server past the
    run is aborted there, through sysbench's sessions and perflab's own."""
    from perflab.domain import Dataset, Workload
    from perflab.load.workloads import resolve
    from perflab.running.measurer import run_load
    from perflab.server.existing import ExistingServer, Permissions

    server, _, _ = site
    statements = tmp_path / "slow.toml"
    statements.write_text('[[statements]]\nsql = "SELECT SLEEP(30)"\n')
    workload = resolve(Workload("sql", (("file", str(statements)),)))
    workload.family.write_files(tmp_path / "files")
    limited = replace(server.endpoint, read_only=True, max_statement_seconds=1)
    started = time.monotonic()
    with pytest.raises(PerflabError) as failed:
        run_load(ExistingServer(limited, Journal(tmp_path), Permissions()), workload,
                 Dataset(existing="appdb"), 1, 1)
    assert time.monotonic() - started < 15
    assert "max_statement_time" in (failed.value.detail or "") + failed.value.message
    with limited.connect() as conn:
        assert query(conn, "SELECT @@SESSION.max_statement_time")[0][0] == 1


def test_a_killed_perflab_leaves_no_statement_running_on_the_server(site, tmp_path):
    """sysbench dies with perflab, but its running statement would run on for up to
    max_statement_time: the sentinel ends perflab's sessions there (KILL by id)."""
    server, option_file, _ = site
    statements = tmp_path / "sleep.toml"
    statements.write_text('[[statements]]\nsql = "SELECT SLEEP(100)"\n')
    plan = app_plan(tmp_path, "app-sleep", threads=(2,))
    plan.write_text(plan.read_text().replace(str(tmp_path / "app-statements.toml"),
                                             str(statements)))

    def sleeping() -> int:
        with server.connect() as conn:
            return query(conn, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                               "WHERE INFO = 'SELECT SLEEP(100)'")[0][0]

    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(tmp_path / "lab"),
                             *tcp_args(server, option_file)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: sleeping() == 2, 60, "the run's two sessions sleeping")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_for(lambda: sleeping() == 0, 10, "the sentinel to end the sessions")  # not 30+ s


def test_two_labs_one_server_a_second_change_waits_for_the_first_put_back(site, other,
                                                                           tmp_path):
    """Lab A killed with max_connections changed; lab B, on the same server, refuses to change
    it again (its journal would take A's value for the original); restores in either order
    leave the server as it began."""
    server, option_file, _ = site
    target = tcp_args(server, option_file)
    before = snapshot(server)
    plans = {name: app_plan(tmp_path, f"two-{name}", threads=threads,
                            configs=f"[configs.more]\nmax_connections = {value}\n")
             for name, value, threads in (("a", 200, (1, 2, 4, 8)), ("b", 300, (1,)))}
    proc = subprocess.Popen([*PERFLAB, "run", str(plans["a"]), "--lab", str(tmp_path / "a"),
                             *target, "--allow-set"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        wait_for(lambda: max_connections(server) == 200, 60, "lab A's SET GLOBAL")
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    out = run_cli("run", str(plans["b"]), "--lab", str(tmp_path / "b"), *target, "--allow-set")
    assert out.returncode == 2 and f"the lab {tmp_path / 'a'} holds variables" in out.stderr, \
        out.stderr
    assert max_connections(server) == 200
    out = run_cli("restore", "--lab", str(tmp_path / "b"))
    assert out.returncode == 0 and "nothing to put back" in out.stderr
    out = run_cli("restore", "--lab", str(tmp_path / "a"))
    assert out.returncode == 0, out.stderr
    assert snapshot(server) == before
    out = run_cli("run", str(plans["b"]), "--lab", str(tmp_path / "b"), *target, "--allow-set")
    assert out.returncode == 0, out.stderr  # A's journal is gone: B may change it now
    assert snapshot(server) == before


def max_connections(server: ManagedServer) -> int:
    with server.connect() as conn:
        return int(query(conn, "SELECT @@GLOBAL.max_connections")[0][0])


def test_allow_set_puts_back_what_a_variable_moved_and_refuses_the_identity(site, tmp_path):
    """innodb_io_capacity_max below innodb_io_capacity moves innodb_io_capacity, which putting
    io_capacity_max back does not restore: perflab puts back both. server_id is part of the
    server's identity; log_queries_not_using_indexes moves log_slow_filter, a log switch: both
    are refused, and the server ends as it began."""
    server, _, _ = site
    before = snapshot(server)
    assert int(before["variables"]["innodb_io_capacity"]) > 100
    plan = app_plan(tmp_path, "app-coupled", threads=(1,),
                    configs="[configs.low]\ninnodb_io_capacity_max = 100\n")
    assert run_in_process(plan, Lab(tmp_path / "lab"), server, ("--allow-set",)) == "ran"
    assert snapshot(server) == before
    from perflab.running.existing_backend import not_settable
    from perflab.server.existing import ExistingServer, Permissions
    from perflab.server.variables import read_catalog

    with server.connect() as conn:  # what a plan's configuration is checked with, before a run
        assert "part of the server's identity" in not_settable(
            read_catalog(conn).variables["server_id"])
    existing = ExistingServer(server.endpoint, Journal(tmp_path), Permissions(set_variables=True))
    try:
        with pytest.raises(PerflabError, match="part of the server's identity"):
            existing.set_global({"server_id": "7"})
        with pytest.raises(PerflabError, match="also moved log_slow_filter"):
            existing.set_global({"log_queries_not_using_indexes": "ON"})
    finally:
        existing.stop()
    assert snapshot(server) == before


def test_the_tripwire_names_a_change_perflab_did_not_make_and_sets_it_back(site, tmp_path):
    from perflab.server.existing import ExistingServer, Permissions
    from perflab.server.tripwire import Tripped

    server, _, _ = site
    before = snapshot(server)
    existing = ExistingServer(server.endpoint, Journal(tmp_path), Permissions())
    existing.check_unchanged()  # no reference yet: nothing to compare
    existing.watch()
    existing.check_unchanged()
    with server.connect() as conn:
        query(conn, "SET GLOBAL max_connections = 321")
    with pytest.raises(Tripped) as tripped:
        existing.check_unchanged()
    assert "max_connections was '400', is '321'" in tripped.value.message
    assert "set back: max_connections" in (tripped.value.hint or "")
    assert snapshot(server) == before


def test_allow_set_changes_only_what_it_can_put_back_and_proves_the_put_back(site, tmp_path):
    server, option_file, _ = site
    target = tcp_args(server, option_file)
    before = snapshot(server)
    for setting, why in [('general_log_file = "/tmp/perflab-planted.log"', "names a file"),
                         ('innodb_monitor_enable = "all"', "InnoDB monitors"),
                         ("sql_slave_skip_counter = 1", "has no command-line option"),
                         ('foreign_key_checks = "OFF"', "has no command-line option"),
                         ('character_set_server = "latin2"', "set collation_server")]:
        plan = app_plan(tmp_path, "app-unrestorable", configs=f"[configs.c]\n{setting}\n")
        out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"), *target, "--allow-set")
        assert out.returncode == 2 and why in out.stderr, (setting, out.stderr)
    assert snapshot(server) == before

    plan = app_plan(tmp_path, "app-proof", threads=(1, 2),
                    configs='[configs.big]\nkey_buffer_size = "64M"\n')
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(tmp_path / "lab"),
                             *target, "--allow-set"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        wait_for(lambda: key_buffer(server) == 64 << 20, 60, "the SET GLOBAL")
        with server.connect() as conn:  # someone else changes another variable meanwhile
            query(conn, "SET GLOBAL read_buffer_size = 262144")
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        with server.connect() as conn:
            query(conn, f"SET GLOBAL read_buffer_size = "
                        f"{before['variables']['read_buffer_size']}")
    # the tripwire: the run stops at the change, names it and sets it back
    assert proc.returncode != 0 and "changed during the run" in err, err
    assert "read_buffer_size was '131072', is '262144'" in err and "set back: read_buffer" in err
    assert key_buffer(server) == SITE_KEY_BUFFER  # what perflab changed is back


# A value other than the site's for each variable SET GLOBAL sets by value
OTHER_VALUE = {"character_set": "latin2", "collation": "latin2_bin", "default": "Aria",
               "lc_time_names": "de_DE", "time_zone": "+01:00"}


def test_what_allow_set_sets_without_an_option_it_puts_back_and_nothing_else(site, tmp_path):
    """Walks this server's catalog: of the dynamic variables SYSTEM_VARIABLES names no option
    for, --allow-set sets only those a value puts back (each set to another value, then put
    back to the site's, every global variable as before); the others are refused with why."""
    from perflab.running.existing_backend import not_settable
    from perflab.server.existing import SET_BY_VALUE, ExistingServer, Permissions
    from perflab.server.variables import read_catalog

    server, _, _ = site
    with server.connect() as conn:
        raw = read_catalog(conn).variables
        given = read_catalog(conn, dict.fromkeys(SET_BY_VALUE, "REQUIRED")).variables
    optionless = {name for name, spec in raw.items() if spec.dynamic and spec.command_line is None}
    assert set(SET_BY_VALUE) <= optionless  # no stale name: each exists here, without option
    refused = {name for name in optionless if not_settable(given[name])}
    assert refused == optionless - set(SET_BY_VALUE)
    assert {"gtid_slave_pos", "sql_slave_skip_counter", "foreign_key_checks",
            "character_set_server"} <= refused
    before = snapshot(server)
    existing = ExistingServer(server.endpoint, Journal(tmp_path), Permissions(set_variables=True))
    try:
        for name in SET_BY_VALUE:
            value = next(v for prefix, v in OTHER_VALUE.items() if name.startswith(prefix))
            existing.set_global({name: value})
            with server.connect() as conn:
                assert query(conn, f"SELECT @@GLOBAL.{name}")[0][0].lower() == value.lower()
            existing.put_back([name])
    finally:
        existing.stop()
    assert snapshot(server) == before


def test_the_nul_that_joined_two_statements_never_reaches_the_server(site, tmp_path):
    server, option_file, _ = site
    before = snapshot(server)
    statements = tmp_path / "nul.toml"
    statements.write_text('[[statements]]\nsql = "SELECT 1 /*\\u0000*/"\n[[statements]]\n'
                          'sql = "SELECT \'*/; SET GLOBAL max_connections=77; #\'"\n')
    plan = app_plan(tmp_path, "app-nul", threads=(1,))
    plan.write_text(plan.read_text().replace(str(tmp_path / "app-statements.toml"),
                                             str(statements)))
    out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"), "--socket",
                  str(server.socket), "--user", "root")
    assert out.returncode == 2 and "holds a control character (U+0000)" in out.stderr
    assert snapshot(server) == before


# Pieces of valid statements on appdb.items: values, quotes, comments, unicode, placeholders.
ITEMS = ["1", "'a'", "'it''s'", "'a;b'", "'/*'", "/* c */ 1", "-- c\n 1", "# c\n 1", "'é\u2028'",
         "`id`", "{int:1:5}", "{int:-3:3}", "{str:0:4}", "{pick:p}", "'x\ty'", "'a\nb'",
         "'*/; SET GLOBAL max_connections=77; #'"]
PICKED = ["1", "-7", "'a'", "'it''s'", "'*/; SET GLOBAL max_connections=77; #'", "'x\ny'",
          "'é\u2028'", "NULL"]


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(st.lists(st.tuples(st.lists(st.sampled_from(ITEMS), min_size=1, max_size=5),
                          st.lists(st.sampled_from(PICKED), min_size=1, max_size=3)),
                min_size=1, max_size=3))
def test_what_reaches_the_server_is_exactly_one_classified_statement_per_call(site, tmp_path,
                                                                             drawn):
    """Read in the server's general log: sysbench's sessions send no statement as text but
    their session settings; each prepares exactly the texts perflab classified, and executes
    them with the values bound (whatever a value holds: quotes, comment signs, a `;`)."""
    from perflab.domain import Dataset, Workload
    from perflab.load.sqlworkload import load_sql_workload
    from perflab.load.workloads import resolve
    from perflab.running.measurer import run_load
    from perflab.server.existing import ExistingServer, Permissions

    server, _, _ = site
    directory = Path(tempfile.mkdtemp(dir=tmp_path))
    lines = []
    for items, values in drawn:
        sql = "SELECT " + ", ".join(items) + " FROM items WHERE id = {int:1:20000}"
        lines += ["[[statements]]", f"sql = {json.dumps(sql)}"]
        if "{pick:p}" in sql:
            lines.append(f"picks = {{ p = [{', '.join(json.dumps(v) for v in values)}] }}")
    path = directory / "w.toml"
    path.write_text("\n".join(lines) + "\n")
    workload = resolve(Workload("sql", (("file", str(path)),)))
    workload.family.write_files(directory)
    entries = load_sql_workload(path).entries

    sessions = directory / "sessions"
    endpoint = replace(server.endpoint, read_only=True, sessions_file=str(sessions))
    with server.connect() as conn:
        query(conn, "TRUNCATE mysql.general_log")
        query(conn, "SET GLOBAL log_output = 'TABLE', general_log = ON")
    try:
        run_load(ExistingServer(endpoint, Journal(directory), Permissions()), workload,
                 Dataset(existing="appdb"), 1, 1)
    finally:
        with server.connect() as conn:
            query(conn, "SET GLOBAL general_log = OFF, log_output = 'FILE'")
            ids = [int(n) for n in sessions.read_text().split()]
            logged = [(kind, text if isinstance(text, str) else text.decode()) for kind, text in
                      query(conn, "SELECT command_type, argument FROM mysql.general_log WHERE "
                                  f"thread_id IN ({', '.join(map(str, ids))}) ORDER BY "
                                  "event_time")]
            query(conn, "TRUNCATE mysql.general_log")
    setup = {"SET SESSION TRANSACTION READ ONLY", "SELECT CONNECTION_ID()"}
    assert [text for kind, text in logged if kind == "Query" and text not in setup] == []
    prepared = {text for kind, text in logged if kind == "Prepare"}
    assert prepared == {entry.text for entry in entries}, logged  # each text, whole
    executed = [text for kind, text in logged if kind == "Execute"]
    assert executed, logged
    assert {kind for kind, _ in logged} <= {"Connect", "Query", "Prepare", "Execute",
                                           "Close stmt", "Quit"}


def test_the_server_refuses_a_second_statement_in_a_prepared_text(site, tmp_path):
    """The wall perflab leans on, tried past perflab's own checks: a statements file written
    by hand with two statements in one text fails at the server's prepare, through the driver
    and through perflab's check, and changes nothing."""
    from perflab.domain import Dataset, Workload
    from perflab.load.reach import prepare_refusal
    from perflab.load.workloads import resolve
    from perflab.running.measurer import run_load
    from perflab.server.existing import ExistingServer, Permissions

    server, _, _ = site
    before = snapshot(server)
    joined = "SELECT 1; SET GLOBAL max_connections = 77"
    with server.connect("appdb") as conn:
        assert "refused by the server when prepared" in prepare_refusal(conn, joined)
        assert prepare_refusal(conn, "SELECT name FROM items WHERE id = ?") is None
    statements = tmp_path / "one.toml"
    statements.write_text('[[statements]]\nsql = "SELECT 1"\n')
    workload = resolve(Workload("sql", (("file", str(statements)),)))
    workload.family.write_files(tmp_path / "files")
    path = workload.family.statements_path
    path.write_text(path.read_text().replace("8:SELECT 1,", f"{len(joined)}:{joined},"))
    with pytest.raises(PerflabError) as failed:
        run_load(ExistingServer(replace(server.endpoint, read_only=True), Journal(tmp_path),
                                Permissions()), workload, Dataset(existing="appdb"), 1, 1)
    assert "1064" in (failed.value.detail or "") + failed.value.message  # a syntax error
    assert snapshot(server) == before
