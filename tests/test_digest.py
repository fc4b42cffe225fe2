"""perflab digest on logs written by a real managed server (MariaDB, and MySQL 9.7 where the
build installs) while a scripted client does the STAR tuning notes' anti-patterns and some
honest work: findings checked against a hand count, fingerprints against pt-query-digest."""

from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from conftest import copy_datadir, installed_build, run_cli, write_plan
from perflab.digest.digest import digest_logs
from perflab.digest.fingerprint import fingerprint, query_id
from perflab.load.sqlworkload import load_sql_workload
from perflab.server.builds import HOST
from perflab.server.connection import query
from perflab.server.datadir import initialize
from perflab.server.managed import ManagedServer, ServerEnvironment

REPEATS = 14  # the STAR notes: select elementID from CorrectionIDs, fourteen times in a row
N_PLUS_ONE = 25
CONSTANT = 6


def scripted_client(srv: ManagedServer) -> None:
    """The STAR notes' API on one connection, honest work on another."""
    with srv.connect() as setup:
        for schema in ("Geometry_tpc", "Geometry_ftpc", "Geometry_tof", "Geometry_svt"):
            query(setup, f"CREATE DATABASE {schema}")
        query(setup, "CREATE TABLE Geometry_tpc.CorrectionIDs (elementID INT PRIMARY KEY)")
        query(setup, "INSERT INTO Geometry_tpc.CorrectionIDs VALUES (1), (2), (3)")
        query(setup, "CREATE TABLE Geometry_tpc.items (id INT PRIMARY KEY, name VARCHAR(20), "
                     "price INT)")
        query(setup, "INSERT INTO Geometry_tpc.items WITH RECURSIVE s (n) AS (SELECT 1 UNION "
                     "ALL SELECT n + 1 FROM s WHERE n < 200) SELECT n, CONCAT('item', n), n % 97 "
                     "FROM s")
    with srv.connect() as api, srv.connect() as honest:
        api.select_db("Geometry_tpc")
        api.select_db("Geometry_tpc")  # redundant: already there
        for _ in range(REPEATS):
            query(api, "select elementID from CorrectionIDs")
        for db in ("Geometry_ftpc", "Geometry_tof", "Geometry_svt", "Geometry_tpc"):
            api.select_db(db)  # ftpc, tof, svt unused; back to tpc
        for n in range(CONSTANT):
            query(api, f"select from_unixtime({1041811200 + n}) + 0 as requestTime")
        for n in range(1, N_PLUS_ONE + 1):
            query(api, f"SELECT name FROM items WHERE id = {n * 7}")
        query(api, "SELECT id,\n       name\nFROM items\nWHERE price IN (1, 2, 3)\n"
                   "ORDER BY id ASC LIMIT 5")
        query(honest, "USE Geometry_tpc")
        for n in range(5):
            query(honest, f"UPDATE items SET price = {n} WHERE id = {n + 1}")
            query(honest, f"INSERT INTO CorrectionIDs VALUES ({100 + n})")
            query(honest, "SELECT price, COUNT(*) FROM items GROUP BY price")
            query(honest, f"SELECT /* report */ name FROM items WHERE name = 'item{n}' "
                          "AND price > 10")


@pytest.fixture(scope="module")
def written_logs(session_root, pristine_datadir):
    """The general and slow log of each flavor's server, written once per module."""
    written: dict[str, tuple[Path, Path]] = {}

    def logs_of(build_name: str) -> tuple[Path, Path]:
        if build_name not in written:
            root = session_root / f"digest-server-{build_name}"
            shutil.rmtree(root, ignore_errors=True)
            build = HOST if build_name == "host" else installed_build(build_name)
            if build.is_host:
                copy_datadir(pristine_datadir, root / "data")
            else:
                initialize(root / "data", build)
            general, slow = root / "general.log", root / "slow.log"
            options = {"general_log": "ON", "general_log_file": str(general),
                       "slow_query_log": "ON", "slow_query_log_file": str(slow),
                       "long_query_time": "0", "log_output": "FILE"}
            with ManagedServer(root / "data", root, options,
                               environment=ServerEnvironment(build=build)) as srv:
                scripted_client(srv)
                time.sleep(0.2)
            written[build_name] = general, slow
        return written[build_name]

    return logs_of


@pytest.fixture(scope="module")
def logs(written_logs) -> tuple[Path, Path]:
    return written_logs("host")


@pytest.fixture(scope="module", params=["host", "mysql-9.7"])
def flavor_logs(request, written_logs) -> tuple[Path, Path]:
    """The logs of MariaDB (the host's) and of MySQL 9.7: the same findings and classes."""
    return written_logs(request.param)


def test_findings_on_a_general_log_have_the_right_counts(flavor_logs):
    general, _ = flavor_logs
    digest = digest_logs([general])
    found = digest.findings.to_json()
    assert digest.files[0].format == "general" and digest.files[0].malformed == 0

    repeats = {i["key"]: i for i in found["repeats"]}
    item = repeats["select elementid from correctionids"]
    assert (item["calls"], item["removable"], item["runs"], item["longest"]) == \
        (REPEATS - 1, REPEATS - 1, 1, REPEATS)
    assert len(item["connections"]) == 1 and item["examples"]
    assert 0 not in item["connections"]  # the connection read, not "-"

    assert [(i["key"], i["calls"]) for i in found["schema_redundant"]] == [("Geometry_tpc", 1)]
    assert sorted((i["key"], i["calls"]) for i in found["schema_unused"]) == [
        ("Geometry_ftpc", 1), ("Geometry_svt", 1), ("Geometry_tof", 1)]
    assert [(i["key"], i["calls"]) for i in found["schema_back_and_forth"]] == \
        [("Geometry_tpc", 1)]

    constant = {i["key"]: i for i in found["constant_only"]}
    key = fingerprint("select from_unixtime(1041811200) + 0 as requestTime")
    assert key == "select from_unixtime(?) ? ? as requesttime"  # pt's rules take "+ 0" whole
    assert constant[key]["calls"] == CONSTANT

    burst = {i["key"]: i for i in found["n_plus_one"]}
    item = burst["select name from items where id = ?"]
    assert item["calls"] == N_PLUS_ONE and item["removable"] == N_PLUS_ONE - 1
    assert item["runs"] == 1

    removable = (REPEATS - 1) + 1 + 3 + CONSTANT + (N_PLUS_ONE - 1)
    assert found["removable"] == removable
    assert found["removable_share"] == pytest.approx(removable / found["statements"])
    # honest work is flagged nowhere
    flagged = {i["key"] for kind in ("repeats", "constant_only", "n_plus_one")
               for i in found[kind]}
    assert not any(key.startswith(("update", "insert")) or "group by" in key
                   for key in flagged)


def test_slow_log_gives_times_rows_and_the_same_classes(flavor_logs):
    general, slow = flavor_logs
    digest = digest_logs([slow])
    assert digest.files[0].format == "slow" and digest.files[0].malformed == 0
    classes = {c.fingerprint: c for c in digest.classes}
    items = classes["select name from items where id = ?"]
    assert items.calls == N_PLUS_ONE and items.timed == N_PLUS_ONE
    assert items.rows_sent == N_PLUS_ONE and items.rows_examined == N_PLUS_ONE
    assert 0 < items.p95() <= items.max_time and items.total_time > 0
    group_by = classes["select price, count(*) from items group by price"]
    assert group_by.rows_examined >= 5 * 200  # a full scan each time
    # ranked by total time, as pt-query-digest; sums that differ only in their last bits
    # (0.000115 and 0.00011499999999999999) are a tie, broken by calls
    times = [round(c.total_time, 9) for c in digest.classes]
    assert times == sorted(times, reverse=True)
    multi = classes["select id, name from items where price in(?+) order by id limit ?"]
    assert multi.calls == 1 and "\n" in multi.example
    # every event's connection is read (MariaDB's Thread_id line, MySQL's Id on User@Host):
    # the per-connection findings of the slow log are the general log's
    repeats = {i["key"]: i for i in digest.findings.to_json()["repeats"]}
    item = repeats["select elementid from correctionids"]
    assert (item["calls"], item["longest"]) == (REPEATS - 1, REPEATS)
    assert len(item["connections"]) == 1 and 0 not in item["connections"]


def pt_classes(log: Path, kind: str) -> dict[str, int]:
    out = subprocess.run(
        ["pt-query-digest", "--type", kind, "--limit", "100%", "--output", "json",
         "--no-version-check", str(log)],
        capture_output=True, text=True, timeout=300, check=True)
    data = json.loads(out.stdout[out.stdout.index("{"):])
    return {c["fingerprint"]: int(c["query_count"]) for c in data["classes"]}


@pytest.mark.parametrize("kind", ["genlog", "slowlog"])
def test_fingerprints_and_calls_match_pt_query_digest(flavor_logs, kind):
    log = flavor_logs[0] if kind == "genlog" else flavor_logs[1]
    ours = {c.fingerprint: c.calls for c in digest_logs([log]).classes}
    theirs = pt_classes(log, kind)
    assert ours == theirs


def test_gzip_malformed_lines_and_cli_outputs(logs, tmp_path):
    general, _ = logs
    packed = tmp_path / "general.log.gz"
    text = general.read_text()
    broken = "this line belongs to nothing\n" + text
    with gzip.open(packed, "wt") as out:
        out.write(broken)
    result = run_cli("digest", str(packed), "--format", "json")
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["files"][0]["malformed"] == 1
    assert data["files"][0]["malformed_examples"][0]["line"] == 1
    plain = digest_logs([general]).to_json()
    assert data["events"] == plain["events"]
    first = data["profile"][0]
    assert first["query_id"] == query_id(first["fingerprint"])

    text_report = run_cli("digest", str(general), "--top", "5")
    assert "Identical reads repeated back to back" in text_report.stdout
    assert "Removable:" in text_report.stdout

    page = run_cli("digest", str(general), "--format", "html")
    assert page.stdout.startswith("<!DOCTYPE html>") and "<script" not in page.stdout

    missing = run_cli("digest", str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "Traceback" not in missing.stderr
    garbage = tmp_path / "garbage.log"
    garbage.write_text("hello\nworld\n")
    unknown = run_cli("digest", str(garbage))
    assert unknown.returncode == 2 and "neither a general query log" in unknown.stderr


REPLAY_TABLES = """
[schema]
sql = ["CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(20), price INT)",
       "CREATE TABLE CorrectionIDs (elementID INT PRIMARY KEY)"]
[[data]]
table = "items"
rows = 200
columns = { id = "seq", name = "str:4:8", price = "int:0:96" }
"""


def test_workload_file_replays_the_top_fingerprints(logs, shared_lab, tmp_path):
    general, slow = logs
    top_three = tmp_path / "top-three.toml"
    result = run_cli("digest", str(slow), "--workload", str(top_three), "--top", "3")
    assert result.returncode == 0, result.stderr
    assert len(load_sql_workload(top_three).statements) == 3  # the DDL at the top is not replayed
    # every replayable fingerprint: which ones lead by time depends on the machine (on a cold
    # one the N+1 burst's 25 point reads, 0.01 ms each, fall out of the top five)
    by_time = tmp_path / "by-time.toml"
    result = run_cli("digest", str(slow), "--workload", str(by_time), "--top", "50")
    assert result.returncode == 0, result.stderr
    workload = load_sql_workload(by_time)
    weights = {sql: weight for weight, sql in workload.statements}
    assert weights["SELECT name FROM items WHERE id = {pick:p1}"] == N_PLUS_ONE
    n = [sql for _, sql in workload.statements].index("SELECT name FROM items WHERE id = {pick:p1}")
    (name, ids), = workload.entries[n].picks  # the ids the log used, every one of them
    assert name == "p1" and min(map(int, ids)) == 7 and max(map(int, ids)) == 175
    assert len(ids) == len(set(ids)) == N_PLUS_ONE

    captured = tmp_path / "captured.toml"
    result = run_cli("digest", str(general), "--workload", str(captured), "--top", "50")
    assert result.returncode == 0, result.stderr
    header, statements = captured.read_text().split("[[statements]]", 1)
    assert "Tables the statements name: CorrectionIDs, items" in header
    assert "Geometry_tpc" in header and "Geometry_tpc" not in statements  # one replay schema
    assert 'mysql_ignore_errors = "1062"' in header  # the log's INSERT keys collide on replay
    captured.write_text(REPLAY_TABLES + header + "[[statements]]" + statements)
    plan = write_plan(tmp_path / "replay.toml", "replayed-log", threads=(2,), rounds=1,
                      engine="InnoDB", configs='[configs.base]\nkey_buffer_size = "8M"',
                      workload=f'name = "sql"\noptions = {{ file = "{captured}", '
                               'mysql_ignore_errors = "1062" }')
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root), "--quiet")
    assert out.returncode == 0, out.stderr
    document = json.loads(run_cli("report", str(shared_lab.root), "--study", "replayed-log",
                                  "--format", "json").stdout)
    (point,) = document["points"]
    assert point["status"] == "ok" and point["events"] > 1000
    assert point["errors"] > 0  # duplicate keys, counted instead of stopping the run
    moved = point["status_delta"]
    # the log's weights: SELECTs 25 + 14 + 6 + 5 + 5 + 1, the UPDATE 5
    assert 56 / 5 * 0.75 < moved["Com_select"] / moved["Com_update"] < 56 / 5 * 1.25


def test_a_log_cut_into_parts_gives_the_same_profile(logs, monkeypatch):
    general, slow = logs
    whole = digest_logs([general, slow])
    monkeypatch.setattr("perflab.digest.digest.SPLIT_MIN", 0)
    cut = digest_logs([general, slow], jobs=3)
    assert [(c.fingerprint, c.calls, round(c.total_time, 9)) for c in cut.classes] == \
        [(c.fingerprint, c.calls, round(c.total_time, 9)) for c in whole.classes]
    assert cut.files == whole.files  # lines, events, malformed counted once each
    assert cut.findings.statements == whole.findings.statements
    assert cut.peak_rss_mib > 0


def test_fingerprint_rules_follow_pt_query_digest():
    assert fingerprint("SELECT * FROM t1 WHERE a = 'x' AND b = 42") == \
        "select * from t? where a = ? and b = ?"
    assert fingerprint("INSERT INTO t VALUES (1, 'a'), (2, 'b')") == "insert into t values(?+)"
    assert fingerprint("select a from t where id in (1, 2, 3) limit 10, 20") == \
        "select a from t where id in(?+) limit ?"
    assert fingerprint("select a from t -- comment\norder by a asc, b ASC") == \
        "select a from t order by a, b"
    assert fingerprint("USE shop") == "use ?"
    assert fingerprint("call proc(1, 2)") == "call proc"
    assert fingerprint("select null, TRUE") == "select ?, ?"
