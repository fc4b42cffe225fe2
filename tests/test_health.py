"""perflab health against real managed servers, each put under a load built to break one rule.

Each case runs the same load on a well-sized server and on one with the rule's variable set too
small; the hot view of the small one must fail exactly the rule(s) under test beyond what the
well-sized one fails, with the figure the load implies, and the well-sized one must pass them.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from conftest import run_cli, write_plan
from perflab.health.check import take_health
from perflab.health.rules import RULES_BY_ID, View, evaluate
from perflab.server.connection import query
from perflab.server.managed import ManagedServer


@pytest.fixture(scope="module")
def template(pristine_datadir) -> Path:
    return pristine_datadir


def server(template: Path, where: Path, options: dict[str, str]) -> ManagedServer:
    shutil.copytree(template, where / "data")
    return ManagedServer(where / "data", where, options)


def hot(srv: ManagedServer, load) -> dict:
    """The hot view's verdicts by rule id, for `load` run between the snapshots."""
    report = take_health(srv.endpoint, 0, during_interval=load)
    return {r.id: r for r in report.views[1].rules}


def failing(verdicts: dict) -> set[str]:
    return {rule for rule, v in verdicts.items() if v.status == "fail"}


def run_case(template, tmp_path, small: dict[str, str], setup, load):
    results = {}
    for name, options in (("sized", {}), ("small", small)):
        with server(template, tmp_path / name, options) as srv, srv.connect() as conn:
            setup(conn)
            results[name] = hot(srv, lambda: load(srv))
    return results["sized"], results["small"]


def test_tiny_tmp_table_size_fails_only_the_temporary_tables_rule(template, tmp_path):
    def setup(conn):
        query(conn, "CREATE DATABASE h")
        query(conn, "CREATE TABLE h.t (id INT PRIMARY KEY, c VARCHAR(60)) ENGINE=MyISAM")
        query(conn, "INSERT INTO h.t SELECT seq, MD5(seq) FROM h.seq_1_to_5000")

    def load(srv):
        with srv.connect() as conn:
            for _ in range(30):
                query(conn, "SELECT c, COUNT(*) FROM h.t GROUP BY c ORDER BY NULL")

    sized, small = run_case(template, tmp_path,
                            {"tmp_table_size": "1024", "max_heap_table_size": "16384"},
                            setup, load)
    assert sized["tmp_disk"].status == "ok" and sized["tmp_disk"].value == 0
    assert failing(small) - failing(sized) == {"tmp_disk"}
    assert small["tmp_disk"].value == 100
    assert small["tmp_disk"].detail.startswith("30 of 30 ")  # perflab's own snapshot excluded


def test_tiny_table_open_cache_fails_only_the_table_cache_rules(template, tmp_path):
    tables = 40

    def setup(conn):
        query(conn, "CREATE DATABASE h")
        for i in range(tables):
            query(conn, f"CREATE TABLE h.t{i} (id INT PRIMARY KEY) ENGINE=MyISAM")
            query(conn, f"INSERT INTO h.t{i} VALUES (1)")

    def load(srv):
        with srv.connect() as conn:
            for i in range(1500):
                query(conn, f"SELECT id FROM h.t{i % tables} WHERE id = 1")

    sized, small = run_case(template, tmp_path, {"table_open_cache": "10"}, setup, load)
    for rule in ("table_cache_hit_rate", "table_cache_overflows"):
        assert sized[rule].status == "ok"
    assert failing(small) - failing(sized) == {"table_cache_hit_rate", "table_cache_overflows"}
    hit = small["table_cache_hit_rate"]
    assert hit.value < 10 and " of 1,500 " in hit.detail  # one open per statement
    assert sized["table_cache_hit_rate"].value == 100


def test_tiny_key_buffer_fails_only_the_key_cache_miss_rule(template, tmp_path):
    rows = 50_000

    def setup(conn):
        query(conn, "CREATE DATABASE h")
        query(conn, "CREATE TABLE h.t (id INT PRIMARY KEY, v INT) ENGINE=MyISAM")
        query(conn, f"INSERT INTO h.t SELECT seq, seq FROM h.seq_1_to_{rows}")
        query(conn, "SELECT COUNT(*) FROM h.t FORCE INDEX (PRIMARY) WHERE id > 0")  # warm

    def load(srv):
        ids = random.Random(1)
        with srv.connect() as conn:
            for _ in range(3000):
                query(conn, "SELECT v FROM h.t WHERE id = %s", [ids.randint(1, rows)])

    sized, small = run_case(template, tmp_path, {"key_buffer_size": "65536"}, setup, load)
    assert sized["key_miss_ratio"].status == "ok" and sized["key_miss_ratio"].value == 0
    assert failing(small) - failing(sized) == {"key_miss_ratio"}
    assert small["key_miss_ratio"].value > 20  # 64 blocks for ~500 index blocks


def test_cli_reports_text_and_json_reads_an_option_file_and_changes_nothing(template,
                                                                           tmp_path):
    with server(template, tmp_path / "srv", {}) as srv, srv.connect() as conn:
        query(conn, "CREATE USER 'watcher'@'localhost' IDENTIFIED BY 's3cret'")
        query(conn, "GRANT PROCESS ON *.* TO 'watcher'@'localhost'")
        before = dict(query(conn, "SHOW GLOBAL VARIABLES"))
        options = tmp_path / "my.cnf"
        options.write_text("[client]\nuser = watcher\npassword = s3cret\n")

        out = run_cli("health", "--socket", srv.socket, "--defaults-file", str(options),
                      "--interval", "1", "--format", "json")
        assert out.returncode in (0, 1), out.stderr
        data = json.loads(out.stdout)
        assert [v["name"] for v in data["views"]] == ["since start", "hot"]
        rules = {r["id"]: r for r in data["views"][0]["rules"]}
        assert set(rules) == set(RULES_BY_ID)
        assert rules["tmp_disk"]["formula"] == "Created_tmp_disk_tables / Created_tmp_tables"
        assert rules["tmp_disk"]["governs"] == ["tmp_table_size", "max_heap_table_size"]
        names = {row["name"]: row for row in data["variables"]}
        assert names["key_buffer_size"]["human"] == "128 MB"
        assert names["key_buffer_size"]["default"] == "134217728"

        text = run_cli("health", "--socket", srv.socket, "--defaults-file", str(options),
                       "--interval", "0", "--explain")
        assert "Performance parameters" in text.stdout and "Acceptable range" in text.stdout
        assert "Created_tmp_disk_tables / Created_tmp_tables" in text.stdout

        denied = run_cli("health", "--socket", srv.socket, "--user", "watcher",
                         "--interval", "0")
        assert denied.returncode == 2
        assert "cannot connect" in denied.stderr and "Traceback" not in denied.stderr
        assert dict(query(conn, "SHOW GLOBAL VARIABLES")) == before


def test_lab_health_is_stored_and_shown_in_the_html_report(shared_lab, tmp_path):
    plan = write_plan(tmp_path / "plan.toml", "health-lab", threads=(2,), rounds=1,
                      warmup_seconds=0, configs='[configs.base]\nkey_buffer_size = "8M"')
    out = run_cli("run", str(plan), "--lab", str(shared_lab.root), "--quiet")
    assert out.returncode == 0, out.stderr
    out = run_cli("health", "--lab", str(shared_lab.root), "--study", str(plan), "--interval", "1")
    assert out.returncode in (0, 1), out.stderr
    assert "since start" in out.stdout and "hot (1 s)" in out.stdout
    assert "Queries/second (QPS)" in out.stdout
    page = tmp_path / "report.html"
    out = run_cli("report", str(shared_lab.root), "--study", "health-lab", "--html", str(page))
    assert out.returncode == 0, out.stderr
    html = page.read_text()
    assert "Server health: configuration base" in html
    assert "Temporary tables created on disk" in html


def test_memory_rule_counts_every_connection_and_small_samples_are_not_judged():
    variables = {"max_connections": "1000", "sort_buffer_size": str(8 << 20),
                 "innodb_buffer_pool_size": str(1 << 30)}
    counters = {"Created_tmp_tables": 5, "Created_tmp_disk_tables": 5}
    view = View("since start", 10, counters, {}, variables, ram=4 << 30)
    verdicts = {v.rule.id: v for v in evaluate(view)}
    assert verdicts["memory"].status == "fail"
    assert verdicts["memory"].value == pytest.approx(100 * ((1 << 30) + 1000 * (8 << 20))
                                                     / (4 << 30))
    assert verdicts["tmp_disk"].status == "few" and verdicts["tmp_disk"].value == 100
