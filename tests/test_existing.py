"""perflab run on a server it did not start (seed 004): a site's mariadbd with its own datadir,
a user with a password over TCP, data loaded by the test. Read-only unless allowed; whatever
--allow-set changes is put back, even after perflab is killed; no password in the lab."""

import json
import os
import random
import signal
import sqlite3
import subprocess
import time
from pathlib import Path

import pytest

from conftest import PERFLAB, run_cli, stored_points, wait_for
from perflab.digest.digest import digest_logs
from perflab.lab import Lab
from perflab.server.connection import Endpoint, query
from perflab.server.managed import ManagedServer, ServerEnvironment, install_datadir

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


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """The site's server: its own datadir, listening on TCP and a socket, a password user."""
    root = tmp_path_factory.mktemp("site")
    install_datadir(root / "data")
    server = ManagedServer(root / "data", root, {"key_buffer_size": str(SITE_KEY_BUFFER),
                                                 "max_connections": "400"},
                           ServerEnvironment(tcp=True))
    server.start()
    try:
        with server.connect() as conn:
            query(conn, "CREATE DATABASE appdb")
            query(conn, "USE appdb")
            query(conn, "CREATE TABLE appdb.items (id INT PRIMARY KEY, name VARCHAR(40), "
                        "price INT, KEY (price)) ENGINE=InnoDB")
            query(conn, "INSERT INTO appdb.items SELECT seq, CONCAT('item', seq), seq % 1000 "
                        "FROM seq_1_to_20000")
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
    plan = tmp_path / f"{name}.toml"
    plan.write_text(f"""
[study]
name = "{name}"
[dataset]
existing = "appdb"
[workload]
name = "sql"
options = {{ file = "{statements}" {workload_extra}}}
[run]
threads = {list(threads)}
warmup_seconds = 1
run_seconds = 2
repeats = 1
{configs}
""")
    return plan


def snapshot(server: ManagedServer) -> tuple[dict, list]:
    with server.connect() as conn:
        variables = dict(query(conn, "SHOW GLOBAL VARIABLES"))
        checksums = query(conn, "CHECKSUM TABLE appdb.items EXTENDED")
    return variables, checksums


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
    assert len(stored_points(Lab(socket_lab), "app-tcp")) == 2

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


def test_allow_set_puts_variables_back_at_the_end_and_after_a_kill(site, tmp_path):
    server, option_file, _ = site
    target = tcp_args(server, option_file)
    plan = app_plan(tmp_path, "app-set", configs='[configs.asis]\n[configs.big]\n'
                    'key_buffer_size = "64M"\n', threads=(1,))
    lab = tmp_path / "lab"
    out = run_cli("run", str(plan), "--lab", str(lab), *target, "--allow-set")
    assert out.returncode == 0, out.stderr
    assert "SET GLOBAL key_buffer_size=67108864" in out.stderr
    assert key_buffer(server) == SITE_KEY_BUFFER
    assert not (lab / "journal.json").exists()

    killed_plan = app_plan(tmp_path, "app-kill", configs='[configs.big]\n'
                           'key_buffer_size = "64M"\n[configs.asis]\n', threads=(1, 2, 4, 8))
    killed_plan.write_text(killed_plan.read_text().replace("run_seconds = 2", "run_seconds = 5"))
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

    out = run_cli("report", str(lab))  # the next command on the lab puts it back
    assert out.returncode == 0, out.stderr
    assert "restored on the server" in out.stderr
    assert key_buffer(server) == SITE_KEY_BUFFER
    assert not (lab / "journal.json").exists()


def test_sigterm_puts_variables_back(site, tmp_path):
    server, option_file, _ = site
    plan = app_plan(tmp_path, "app-term", configs='[configs.big]\nkey_buffer_size = "64M"\n'
                    '[configs.asis]\n', threads=(1, 2, 4, 8))
    proc = subprocess.Popen([*PERFLAB, "run", str(plan), "--lab", str(tmp_path / "lab"),
                             *tcp_args(server, option_file), "--allow-set"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for(lambda: key_buffer(server) == 64 << 20, 60, "the SET GLOBAL")
        os.kill(proc.pid, signal.SIGTERM)
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
                                             str(captured)))
    general_log(server, replayed, True)
    try:
        out = run_cli("run", str(plan), "--lab", str(tmp_path / "lab"),
                      *tcp_args(server, option_file))
    finally:
        general_log(server, replayed, False)
    assert out.returncode == 0, out.stderr
    shares = app_shares(replayed)
    assert set(shares) == set(expected)
    for fingerprint, share in expected.items():
        assert shares[fingerprint] == pytest.approx(share, abs=0.03), fingerprint
