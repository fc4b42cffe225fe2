"""perflab on a real MySQL 9.7 (the mysql-9.7 build, installed once per machine with `perflab
servers add`, started by the test): health, a read-only run, the safety battery, digest of its
slow log. Skipped, with the reason, where the build cannot be installed."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import existing_plan, installed_build, run_cli
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.server.connection import query
from perflab.server.datadir import initialize
from perflab.server.existing import Journal
from perflab.server.managed import ManagedServer, ServerEnvironment
from perflab.server.tripwire import global_variables

STATEMENTS = """
[[statements]]
sql = "SELECT name FROM items WHERE id = {int:1:3000}"
weight = 3
[[statements]]
sql = "SELECT COUNT(*) FROM items WHERE price BETWEEN {int:1:500} AND {pick:top}"
picks = { top = [600, 700, "'800'"] }
"""


@pytest.fixture(scope="module")
def mysql(tmp_path_factory):
    """A MySQL 9.7 server of the test's own, with an application schema of 3,000 items."""
    build = installed_build("mysql-9.7")
    root = tmp_path_factory.mktemp("mysql")
    initialize(root / "data", build)
    server = ManagedServer(root / "data", root, environment=ServerEnvironment(build=build))
    server.start()
    try:
        with server.connect() as conn:
            query(conn, "CREATE DATABASE appdb")
            query(conn, "CREATE TABLE appdb.items (id INT PRIMARY KEY, name VARCHAR(40), "
                        "price INT, KEY (price)) ENGINE=InnoDB")
            query(conn, "SET SESSION cte_max_recursion_depth = 10000")
            query(conn, "INSERT INTO appdb.items WITH RECURSIVE s (n) AS (SELECT 1 UNION ALL "
                        "SELECT n + 1 FROM s WHERE n < 3000) SELECT n, CONCAT('item', n), "
                        "n % 1000 FROM s")
        yield server, root
    finally:
        server.stop()


def snapshot(server: ManagedServer) -> dict:
    """What a read-only run must leave as it was."""
    with server.connect() as conn:
        variables = global_variables(conn)
        checksums = query(conn, "CHECKSUM TABLE appdb.items EXTENDED")
        locks = query(conn, "SELECT COUNT(*) FROM performance_schema.metadata_locks WHERE "
                            "OBJECT_TYPE = 'USER LEVEL LOCK'")
    files = sorted(str(p.relative_to(server.datadir)) for p in server.datadir.rglob("*")
                   if "#innodb_temp" not in str(p))
    return {"variables": variables, "checksums": checksums, "locks": locks, "files": files}


def plan_file(directory: Path, name: str, statements: str = STATEMENTS) -> Path:
    path = directory / f"{name}-statements.toml"
    path.write_text(statements)
    return existing_plan(directory / f"{name}.toml", name, path, threads=(1, 2))


def test_health_on_mysql_judges_what_it_has_and_names_the_server(mysql):
    import perflab

    server, _ = mysql
    out = run_cli("health", "--socket", str(server.socket), "--user", "root", "--interval", "0")
    assert out.returncode in (0, 1) and "Traceback" not in out.stderr, out.stderr
    assert out.stdout.splitlines()[0].endswith("(MySQL 9.7.4)")
    report = perflab.check_health(server.endpoint, interval=0.5)
    results = {r.id: r for r in report.views[0].rules}
    assert results["qcache_efficiency"].status == "n/a"  # no query cache in MySQL 8 and later
    assert results["qcache_efficiency"].detail == "this server has no query_cache_type"
    for rule in ("innodb_dirty", "redo_checkpoint_age", "buffer_pool_wait_free"):
        assert results[rule].status in ("ok", "fail", "few"), rule  # MySQL's own figures
    assert "of redo not checkpointed" in results["redo_checkpoint_age"].detail


# MySQLTuner's lines for the figures perflab's health also gives: "[OK] Slow queries: 0% (0/53)"
TUNER_LINE = re.compile(r"^\[(?:OK|!!)\] (?P<title>[A-Za-z ]+): (?P<pct>[\d.]+)%\s+"
                        r"\((?P<part>[\d.]+[KMB]?)[^\d/]*/\s*(?P<whole>[\d.]+)(?P<unit>[KMB]?)",
                        re.M)
TUNER_RULES = {"Slow queries": "slow_queries",
               "Highest usage of available connections": "connections_used",
               "Aborted connections": "aborted_connects",
               "Temporary tables created on disk": "tmp_disk",
               "Thread cache hit rate": "thread_cache",
               "Table cache hit rate": "table_cache_hit_rate",
               "Sorts requiring temporary tables": "sort_merge",
               "Table locks acquired immediately": "table_locks",
               "InnoDB Read buffer efficiency": "innodb_hit_rate"}


def test_health_on_mysql_agrees_with_mysqltuner(mysql, tmp_path):
    """Each figure MySQLTuner 1.9.9 and perflab's health both give, read from the same server
    one after the other, agrees: within MySQLTuner's truncation to a whole percent and what
    the tools' own statements add between their readings (a few events over `whole`)."""
    import perflab

    if shutil.which("mysqltuner") is None:
        pytest.skip("needs mysqltuner (Debian package mysqltuner): run scripts/test")
    server, _ = mysql
    with server.connect() as conn:  # some temporary tables and sorts to judge
        for n in range(20):
            query(conn, f"SELECT name, COUNT(*) FROM appdb.items WHERE id < {100 * n + 100} "
                        "GROUP BY name ORDER BY 2 DESC LIMIT 3")
    # its clients take the socket from a defaults file: with --socket it also passes a port,
    # and MariaDB's mysqladmin then goes over TCP
    client = tmp_path / "client.cnf"
    client.write_text(f"[client]\nuser=root\nsocket={server.socket}\nprotocol=socket\n")
    tuner = subprocess.run(["mysqltuner", "--defaults-file", str(client), "--nocolor",
                            "--forcemem", "24576", "--forceswap", "0", "--skipsize",
                            "--skippassword", "--nodbstat", "--notbstat", "--noidxstat",
                            "--nosysstat", "--nopfstat"],
                           capture_output=True, text=True, timeout=300)
    report = perflab.check_health(server.endpoint, interval=0)
    figures = {r.id: r for r in report.views[0].rules}
    compared = []
    for match in TUNER_LINE.finditer(tuner.stdout):
        rule = TUNER_RULES.get(match["title"])
        if rule is None:
            continue
        whole = float(match["whole"]) * {"": 1, "K": 1e3, "M": 1e6, "B": 1e9}[match["unit"]]
        ours = figures[rule]
        assert ours.status != "n/a" and ours.value is not None, (rule, ours.detail)
        slack = 1 + 100 * 4 / max(whole, 1)
        assert abs(ours.value - float(match["pct"])) <= slack, (rule, ours.value, match[0])
        compared.append(rule)
    assert len(compared) >= 6, tuner.stdout + tuner.stderr


def test_a_read_only_run_on_mysql_changes_nothing_and_its_slow_log_digests(mysql, tmp_path):
    """The run measures and leaves the server as it was; in the slow log the test switched on
    for it (long_query_time 0) every statement event has its connection, the classes and
    counts are pt-query-digest's, and the workload digest makes of it replays read-only."""
    from perflab.digest.digest import digest_logs
    from perflab.digest.parse import ParseStats, Part, read_events
    from perflab.digest.workload import write_workload

    server, root = mysql
    log = root / "slow.log"
    with server.connect() as conn:
        query(conn, "SET GLOBAL slow_query_log_file = %s", (str(log),))
        query(conn, "SET GLOBAL long_query_time = 0, slow_query_log = ON")
    before = snapshot(server)
    try:
        out = run_cli("run", str(plan_file(tmp_path, "my-read")), "--lab",
                      str(tmp_path / "lab"), "--socket", str(server.socket), "--user", "root")
        after = snapshot(server)
    finally:
        with server.connect() as conn:
            query(conn, "SET GLOBAL slow_query_log = OFF, long_query_time = 10")
    assert out.returncode == 0, out.stderr
    assert "Server MySQL 9.7" in out.stdout
    with Lab(tmp_path / "lab").store() as store:
        points = [p for study in store.studies() for p in store.points(study)]
    assert len(points) == 2 and all(p.ok and p.metrics and p.metrics.qps > 100 for p in points)
    assert after == before
    events = [e for e in read_events(Part(log, "slow"), ParseStats()) if "items" in e.text]
    assert len(events) > 100 and all(e.thread is not None for e in events)
    assert len({e.thread for e in events}) >= 2  # the sessions of 1 and of 2 threads
    ours = {c.fingerprint: c.calls for c in digest_logs([log]).classes}
    pt = subprocess.run(["pt-query-digest", "--limit", "100%", "--output", "json", str(log)],
                        capture_output=True, text=True, check=True, timeout=300)
    theirs = {c["fingerprint"]: c["query_count"] for c in json.loads(pt.stdout)["classes"]}
    assert {fp: n for fp, n in ours.items() if "items" in fp} == \
        {fp: n for fp, n in theirs.items() if "items" in fp}
    # the log made a workload again, replayed read-only on the same server
    captured = tmp_path / "captured.toml"
    assert write_workload(digest_logs([log]), captured, top=5) >= 2
    plan = plan_file(tmp_path, "my-replay", captured.read_text())
    plan.write_text(plan.read_text().replace("threads = [1, 2]", "threads = [2]"))
    before = snapshot(server)
    out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"), "--socket",
                  str(server.socket), "--user", "root")
    assert out.returncode == 0 and "0 failed" in out.stdout, out.stdout + out.stderr
    assert snapshot(server) == before


HIDDEN = [
    "CREATE FUNCTION appdb.setg() RETURNS INT DETERMINISTIC BEGIN SET GLOBAL "
    "max_connections = 123; RETURN 1; END",
    "CREATE VIEW appdb.v_setg AS SELECT appdb.setg() AS x",
    "CREATE FUNCTION appdb.local_then_global() RETURNS INT DETERMINISTIC BEGIN DECLARE x INT; "
    "SET x = 1, GLOBAL max_connections = 124; RETURN x; END",
]
BATTERY = [
    ("SELECT 1; SET GLOBAL max_connections = 7", "more than one statement"),
    ("SELECT 1 /*!80000 , GET_LOCK('b', 0) */", "'/*' starts a comment"),
    ("SELECT name FROM items WHERE id = 1 FOR UPDATE", "--allow-locks"),
    ("SELECT GET_LOCK('battery', 0)", "--allow-locks"),
    ("SELECT x FROM v_setg", "view appdb.v_setg -> function appdb.setg"),
    ("WITH setg AS (SELECT 1 AS a) SELECT setg() FROM setg", "function appdb.setg"),
    ("SELECT local_then_global()", "sets GLOBAL max_connections"),
    ("SELECT name FROM items INTO OUTFILE '/tmp/perflab-mysql.txt'", "INTO OUTFILE"),
    ("SET PERSIST max_connections = 9", "with any flag"),
    ("SELECT\u00a0name FROM items", "U+00A0"),
]


def test_the_safety_battery_on_mysql_is_refused_and_changes_nothing(mysql, tmp_path):
    """As root (every privilege, the binary log on, MySQL's default): each form is refused
    before anything runs, and the server ends as it began."""
    from perflab.running.runner import run_study
    from perflab.server.existing import ExistingServer, Permissions
    from perflab.studies import resolve_plan

    server, _ = mysql
    with server.connect() as conn:
        assert query(conn, "SELECT @@log_bin")[0][0] == 1
        for statement in HIDDEN:
            query(conn, statement)
    before = snapshot(server)
    lab = Lab(tmp_path / "lab")
    for n, (sql, refusal) in enumerate(BATTERY):
        plan = plan_file(tmp_path, f"battery-{n}", f"[[statements]]\nsql = {json.dumps(sql)}\n")
        try:
            run_study(resolve_plan(str(plan)), lab, lambda _: None, ExistingServer(
                server.endpoint, Journal(lab.root), Permissions()))
        except PerflabError as exc:
            assert refusal in f"{exc.message} {exc.hint}", (sql, exc.message)
        else:
            pytest.fail(f"{sql!r} ran")
    assert snapshot(server) == before
    assert not Path("/tmp/perflab-mysql.txt").exists()


def test_allow_set_on_mysql_sets_with_set_global_and_puts_back(mysql, tmp_path):
    """MySQL's variables through the journal (in-process: a run's SET GLOBAL is the same call,
    tested through runs on MariaDB): set, put back, proven, never persisted (no
    mysqld-auto.cnf appears in the datadir); its identity variables are refused."""
    from perflab.server.existing import ExistingServer, Permissions

    server, _ = mysql
    before = snapshot(server)
    existing = ExistingServer(server.endpoint, Journal(tmp_path), Permissions(set_variables=True))
    try:
        existing.set_global({"max_connections": "321", "innodb_io_capacity_max": "3000"})
        with server.connect() as conn:
            assert query(conn, "SELECT @@GLOBAL.max_connections")[0][0] == 321
        with pytest.raises(PerflabError, match="part of the server's identity"):
            existing.set_global({"server_id": "7"})
    finally:
        existing.stop()
    assert snapshot(server) == before
    assert not (server.datadir / "mysqld-auto.cnf").exists()
