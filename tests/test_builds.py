"""Server builds (server/builds.py, server/datadir.py) as a study's dimension: what the plan
says, what a build's root holds, and studies across the host's MariaDB and other builds, each
on its own datadir, catalog and dataset."""

from __future__ import annotations

from dataclasses import replace

import pytest
from hypothesis import given
from hypothesis import strategies as st

from conftest import installed_build, write_plan
from perflab.domain import Plan
from perflab.errors import PerflabError
from perflab.lab import Lab
from perflab.load.workloads import resolve
from perflab.plan import across_builds, parse_plan, with_overrides
from perflab.running.backend import check_configs
from perflab.running.existing_backend import check_no_build
from perflab.running.runner import run_study
from perflab.server import builds
from perflab.server.builds import HOST, Build
from perflab.server.connection import query
from perflab.server.datadir import bootstrap_sql, initialize
from perflab.server.managed import ManagedServer, ServerEnvironment
from perflab.studies import resolve_plan

PLAN = """
[study]
name = "s"
[workload]
name = "oltp_point_select"
[run]
threads = [1]
[configs.a]
{extra}
"""


def fake_root(tmp_path, suite_loader: bool) -> Build:
    """A root as mmdebstrap leaves one: merged /usr (its loader under usr/lib64) or not
    (bullseye's lib64/ld-linux-x86-64.so.2, an absolute link that means the root's own)."""
    root = tmp_path / "root"
    (root / "lib" / "x86_64-linux-gnu").mkdir(parents=True)
    (root / "lib" / "x86_64-linux-gnu" / "ld-2.31.so").write_text("loader")
    (root / "lib64").mkdir()
    if suite_loader:
        (root / "lib64" / "ld-linux-x86-64.so.2").symlink_to("/lib/x86_64-linux-gnu/ld-2.31.so")
    else:
        (root / "usr" / "lib64").mkdir(parents=True)
        (root / "usr" / "lib64" / "ld-linux-x86-64.so.2").write_text("loader")
    return Build(builds.OFFERS["mariadb-10.5"], root)


@pytest.mark.fast
@pytest.mark.parametrize("old_layout", [True, False])
def test_a_roots_loader_is_its_own_even_through_an_absolute_link(tmp_path, old_layout):
    build = fake_root(tmp_path, old_layout)
    loader = build.command()[0]
    assert loader.startswith(str(build.root)), loader  # never the host's /lib
    assert build.command()[-1] == str(build.root / "usr/sbin/mariadbd")
    assert HOST.command() == ["/usr/sbin/mariadbd"] and HOST.base_options() == []


@pytest.mark.fast
def test_a_build_without_a_loader_or_system_tables_is_refused_by_name(tmp_path):
    build = Build(builds.OFFERS["mysql-9.7"], tmp_path)
    with pytest.raises(PerflabError, match="mysql-9.7 holds no dynamic loader"):
        build.command()
    with pytest.raises(PerflabError, match="holds no system_tables.sql"):
        bootstrap_sql(build)


@pytest.mark.fast
def test_the_bootstrap_sql_is_the_builds_own_in_its_installers_order(tmp_path):
    build = fake_root(tmp_path, True)
    share = build.root / "usr" / "share" / "mariadb"
    share.mkdir(parents=True)
    for name in ("mariadb_system_tables_data", "fill_help_tables", "mariadb_system_tables",
                 "mariadb_sys_schema", "mariadb_test_db"):
        (share / f"{name}.sql").write_text(f"-- {name}\n")
    sql = bootstrap_sql(build)
    order = [sql.index(f"-- {name}") for name in ("mariadb_system_tables",
                                                  "mariadb_system_tables_data",
                                                  "fill_help_tables", "mariadb_sys_schema")]
    assert order == sorted(order)
    assert "mariadb_test_db" not in sql  # --skip-test-db, as the host's install
    assert sql.startswith("create database if not exists mysql;")


@pytest.mark.fast
def test_a_package_version_is_read_from_the_roots_dpkg_status(tmp_path):
    build = fake_root(tmp_path, True)
    status = build.root / "var" / "lib" / "dpkg" / "status"
    status.parent.mkdir(parents=True)
    status.write_text("Package: libc6\nVersion: 2.31-13\n\nPackage: mariadb-server-core-10.5\n"
                      "Status: install ok installed\nDescription: server\n Version: 9 (not)\n"
                      "Version: 1:10.5.29-0+deb11u1\n")
    assert build.package_version() == "1:10.5.29-0+deb11u1"
    assert build.describe()["flavor"] == "MariaDB"


@pytest.mark.fast
def test_a_plan_names_builds_per_configuration_by_axis_and_by_override():
    plan = parse_plan(PLAN.format(extra='server = "mysql-9.7"'))
    assert plan.config("a").environment.server == "mysql-9.7"
    crossed = parse_plan(PLAN.format(extra="") + '[axes]\nserver = ["host", "mariadb-11.8"]\n')
    assert [c.environment.server for c in crossed.configs] == ["host", "mariadb-11.8"]
    across = across_builds(parse_plan(PLAN.format(extra="")), ["host", "mysql-9.7"])
    assert across.baseline == "a host" and across.config_names == ["a host", "a mysql-9.7"]
    moved = with_overrides(plan, build="host")
    assert moved.config("a").environment.server == "host"
    assert moved.config_hash(moved.config("a")) != plan.config_hash(plan.config("a"))


@pytest.mark.fast
def test_variables_only_where_present_are_named_shared_and_checked():
    shared = PLAN.replace("[configs.a]", '[server]\nonly_where_present = ["Query-Cache-Type"]\n'
                          "query_cache_type = 0\n[configs.a]")
    plan = parse_plan(shared.format(extra='only_where_present = ["key_cache_segments"]\n'
                                          "key_cache_segments = 4"))
    config = plan.config("a")
    assert config.only_where_present == {"query_cache_type", "key_cache_segments"}
    assert Plan.from_json(plan.to_json()).config("a") == config
    plain = parse_plan(shared.replace('only_where_present = ["Query-Cache-Type"]\n', "")
                       .format(extra="key_cache_segments = 4"))
    assert plan.config_hash(config) != plain.config_hash(plain.config("a"))
    with pytest.raises(PerflabError, match="names innodb_log_file_size, which this"):
        parse_plan(PLAN.format(extra='only_where_present = ["innodb_log_file_size"]'))
    with pytest.raises(PerflabError, match="must be a list of server variable names"):
        parse_plan(PLAN.format(extra='only_where_present = "query_cache_type"'))


@pytest.mark.fast
@given(st.text(min_size=1, max_size=20))
def test_a_builds_name_is_a_name_or_an_error_naming_the_key(name):
    try:
        plan = parse_plan(PLAN.format(extra=f"server = {name!r}".replace("\\", "")))
    except PerflabError as exc:
        assert "server" in exc.message or "plan" in exc.message
    else:
        assert plan.config("a").environment.server.replace("-", "").replace(".", "").isalnum()


@pytest.mark.fast
def test_an_unknown_or_missing_build_and_a_build_on_someone_elses_server_are_refused():
    with pytest.raises(PerflabError, match="no server build named 'mysql-5.0'") as caught:
        builds.find("mysql-5.0")
    assert "mysql-9.7" in (caught.value.hint or "")
    assert builds.find("host") is HOST
    plan = parse_plan(PLAN.format(extra='server = "mysql-9.7"'))
    with pytest.raises(PerflabError, match="names a server build"):
        check_no_build(plan)


def test_a_mariadb_build_initializes_its_own_datadir_and_runs(tmp_path):
    build = installed_build("mariadb-11.8")
    initialize(tmp_path / "data", build)
    with ManagedServer(tmp_path / "data", tmp_path, {"key_buffer_size": str(8 << 20)},
                       ServerEnvironment(build=build)) as server, server.connect() as conn:
        version, buffer = query(conn, "SELECT @@version, @@key_buffer_size")[0]
        assert version.startswith("11.8.") and int(buffer) == 8 << 20
        assert query(conn, "SELECT COUNT(*) FROM mysql.global_priv WHERE User = 'root'")[0][0]
        facts = server.facts()
    assert facts["build"]["name"] == "mariadb-11.8" and facts["build"]["package_version"]


def test_a_study_across_builds_measures_each_on_its_own_datadir(tmp_path, mysql_build):
    plan = resolve_plan(str(write_plan(
        tmp_path / "plan.toml", "across", configs="[configs.default]\n", threads=(2,),
        engine="InnoDB", rows=2000, warmup_seconds=0, rounds=1)))
    plan = across_builds(plan, ["host", mysql_build.name])
    lab = Lab(tmp_path / "lab")
    summary = run_study(plan, lab, lambda _: None)
    assert summary.failed == 0
    study = lab.study("across")
    assert {p.config for p in study.points if p.ok} == {"host", "mysql-9.7"}
    flavors = {s.config: s.process["build"]["flavor"] for s in study.server_states}
    assert flavors == {"host": "MariaDB", "mysql-9.7": "MySQL"}
    datasets = sorted(p.name for p in (lab.root / "datasets").iterdir())
    assert datasets == ["sbtest-innodb-1x2000", "sbtest-innodb-1x2000-mysql-9.7"]
    for point in study.points:  # the server's own CPU and context switches, per query
        assert point.value("server_cpu_us_per_query") > 0
        assert point.value("context_switches_per_query") > 0
    # a configuration the build's catalog lacks is refused before anything starts
    key_cache = with_overrides(resolve_plan("key-cache-segments"), build=mysql_build.name)
    key_cache = replace(key_cache, name="key-cache-on-mysql")
    with pytest.raises(PerflabError, match="'key_cache_segments'.*MySQL 9.7"):
        run_study(key_cache, lab, lambda _: None)
    assert sorted(p.name for p in (lab.root / "datasets").iterdir()) == datasets
    # ... unless the plan sets it only where it exists: there, the server starts without it
    catalog = lab.catalog(mysql_build)
    absent = frozenset(name for c in key_cache.configs for name, _ in c.variables
                       if name not in catalog.variables)  # the key cache's, the query cache's
    assert {"key_cache_segments", "query_cache_size"} <= absent
    marked = replace(key_cache, configs=tuple(replace(c, only_where_present=absent)
                                              for c in key_cache.configs))
    said: list[str] = []
    options = check_configs(marked, lambda _: catalog, resolve(marked.workload), said.append)
    assert all(not absent & own.keys() for own in options.values())
    assert all(own["key_buffer_size"] for own in options.values())
    assert len(said) == len(marked.configs)
    assert f"{', '.join(sorted(absent))} left out" in said[0] and "MySQL 9.7" in said[0]


@pytest.mark.fast
@pytest.mark.parametrize(("argv", "server"), [
    (["/usr/sbin/mariadbd", "--no-defaults"], True),
    (["taskset", "-c", "0", "/usr/sbin/mariadbd"], True),
    (["/c/mysql-9.7/usr/lib64/ld-linux-x86-64.so.2", "--library-path", "/c/lib",
      "/c/mysql-9.7/usr/sbin/mysqld", "--datadir=/d"], True),
    (["/usr/bin/sysbench", "--mysql-socket=/run/mysqld"], False),
    (["/usr/sbin/mysqld-helper", "/srv/data"], False),  # a name that only starts like one
    (["python3", "-m", "perflab"], False),
])
def test_a_server_process_is_told_by_its_binary_whatever_runs_it(argv, server):
    assert builds.runs_a_server(argv) is server
