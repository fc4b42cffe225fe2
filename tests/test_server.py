"""The managed server and the variable catalog, against a real mariadbd."""

import os
import signal
import subprocess
import sys
import time

import pytest

from conftest import copy_datadir, mariadbd_under
from perflab.errors import PerflabError
from perflab.server.connection import query
from perflab.server.datadir import install_datadir
from perflab.server.managed import ManagedServer, ServerEnvironment
from perflab.server.variables import overridden


@pytest.fixture(scope="module")
def catalog(shared_lab):
    return shared_lab.catalog()


def test_catalog_reads_types_ranges_and_dynamism(catalog):
    segments = catalog.variables["key_cache_segments"]
    assert segments.type == "BIGINT UNSIGNED"
    assert (segments.minimum, segments.maximum) == ("0", "64")
    assert segments.dynamic
    assert catalog.variables["skip_name_resolve"].read_only
    assert "OFF" in catalog.variables["query_cache_type"].values
    assert {"MyISAM", "InnoDB", "Aria", "MEMORY"} <= set(catalog.engines)
    assert catalog.version.startswith("10.")


def test_catalog_is_cached_in_the_lab(shared_lab, catalog):
    assert (shared_lab.root / "catalog.json").exists()
    assert shared_lab.catalog() == catalog


@pytest.mark.parametrize(
    ("name", "value", "expected"),
    [
        ("key_buffer_size", "64M", "67108864"),
        ("key_buffer_size", 1024, "1024"),
        ("query_cache_type", "off", "OFF"),
        ("skip_name_resolve", True, "ON"),
        ("long_query_time", 0.5, "0.5"),
        ("sql_mode", "strict_all_tables,ansi_quotes", "STRICT_ALL_TABLES,ANSI_QUOTES"),
    ],
)
def test_values_are_normalised_for_the_command_line(catalog, name, value, expected):
    assert catalog.check(name, value, "configs.x") == expected


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("key_cache_segmentz", 4, "unknown server variable 'key_cache_segmentz'"),
        ("key_cache_segments", 65, "key_cache_segments = 65 is out of range (allowed: 0 to 64)"),
        ("key_cache_segments", "lots", "is not an integer"),
        ("query_cache_type", "sometimes", "is not allowed (allowed: OFF, ON, DEMAND)"),
        ("skip_name_resolve", "maybe", "is not a boolean"),
        ("long_query_time", -1, "is out of range"),
        ("version", "1.0", "cannot be set at server start"),
    ],
)
def test_bad_values_give_one_line_naming_the_key(catalog, name, value, message):
    with pytest.raises(PerflabError) as err:
        catalog.check(name, value, "configs.x")
    assert message in err.value.message
    assert err.value.message.startswith("configs.x")
    assert "\n" not in err.value.message


def test_unknown_variable_suggests_the_close_name(catalog):
    with pytest.raises(PerflabError) as err:
        catalog.check("key_cache_segmentz", 4, "configs.x")
    assert "key_cache_segments" in err.value.hint


def test_failed_start_reports_the_error_log_tail(tmp_path, pristine_datadir):
    datadir = copy_datadir(pristine_datadir, tmp_path / "data")
    server = ManagedServer(datadir, tmp_path, {"no_such_option": "1"})
    with pytest.raises(PerflabError) as err:
        server.start(timeout=60)
    assert "exited during start-up" in err.value.message
    assert "no_such_option" in err.value.detail
    assert "no_such_option" in err.value.message  # the server's reason, with the point
    assert not server.alive()


def test_server_starts_applies_variables_and_stops(tmp_path, pristine_datadir):
    datadir = copy_datadir(pristine_datadir, tmp_path / "data")
    with ManagedServer(datadir, tmp_path, {"key_buffer_size": "33554432"}) as server:
        pid = server.pid
        with server.connect() as conn:
            assert query(conn, "SELECT @@key_buffer_size")[0][0] == 33554432
            assert query(conn, "SELECT @@skip_networking")[0][0] == 1
        server.set_global({"key_cache_segments": "4"})
        with server.connect() as conn:
            assert query(conn, "SELECT @@key_cache_segments")[0][0] == 4
    assert not os.path.exists(f"/proc/{pid}")


def test_a_choice_the_server_overrides_is_found(catalog, tmp_path, pristine_datadir):
    """MariaDB switches the query cache on when query_cache_size is given at start-up, even
    with query_cache_type=OFF given beside it: the lab must say what the server runs."""
    copy_datadir(pristine_datadir, tmp_path / "data")
    asked = {"query_cache_size": "8388608", "query_cache_type": "OFF",
             "innodb_adaptive_hash_index": "1"}
    with ManagedServer(tmp_path / "data", tmp_path, asked) as server, server.connect() as conn:
        running = dict(query(conn, "SHOW GLOBAL VARIABLES"))
    assert overridden(catalog, asked, running) == {"query_cache_type": ("OFF", "ON")}


def test_a_character_set_and_collation_the_server_does_not_list_are_given_as_written(
        catalog, tmp_path, pristine_datadir):
    """character_set_server and collation_server are ENUMs whose values the server does not
    list: a plan comparing them is checked by the server at start, not refused by perflab as
    "not allowed (allowed: )"; an empty name is refused in one line."""
    asked = {name: catalog.check(name, value, "configs.utf8") for name, value in
             (("character_set_server", "utf8mb4"), ("collation_server", "utf8mb4_unicode_ci"))}
    assert asked == {"character_set_server": "utf8mb4", "collation_server": "utf8mb4_unicode_ci"}
    with pytest.raises(PerflabError, match="is empty"):
        catalog.check("collation_server", " ", "configs.utf8")
    copy_datadir(pristine_datadir, tmp_path / "data")
    with ManagedServer(tmp_path / "data", tmp_path, asked) as server, server.connect() as conn:
        running = query(conn, "SELECT @@global.character_set_server, @@global.collation_server")
    assert running[0] == ("utf8mb4", "utf8mb4_unicode_ci")
    unknown = ManagedServer(tmp_path / "data", tmp_path, {"character_set_server": "klingon"})
    with pytest.raises(PerflabError) as err:
        unknown.start(timeout=60)
    # the server's own reason is in the message a failed point stores (the log is overwritten)
    assert "Character set 'klingon' is not a compiled character set" in err.value.message


def test_tcp_environment_listens_on_loopback_only(tmp_path, pristine_datadir):
    datadir = copy_datadir(pristine_datadir, tmp_path / "data")
    with ManagedServer(datadir, tmp_path, environment=ServerEnvironment(tcp=True)) as server:
        assert server.port and server.port != 3306
        with server.endpoint.connect() as conn:
            bind, port = query(conn, "SELECT @@bind_address, @@port")[0]
    assert (bind, port) == ("127.0.0.1", server.port)


def test_a_starting_server_leaves_other_servers_temporary_tables_alone(tmp_path,
                                                                      pristine_datadir):
    """mariadbd deletes every #sql* file in its tmpdir at start-up: with /tmp shared, starting
    one server removed the on-disk temporary tables of the others (CI: an Optuna storage
    server's query failed with 'Error on delete of /tmp/#sql-temptable-...'). The bootstrap
    server of mariadb-install-db does it too (CI: this test's file in /tmp vanished while
    another test prepared a datadir)."""
    first, second = tmp_path / "first", tmp_path / "second"
    copy_datadir(pristine_datadir, first / "data")
    system_file = f"/tmp/#sql-perflab-test-{os.getpid()}.MAI"  # as the system service's
    with ManagedServer(first / "data", first) as server:
        with server.connect() as conn:
            assert query(conn, "SELECT @@tmpdir")[0][0] == str(server.tmpdir)
        held = server.tmpdir / "#sql-temptable-held-1.MAI"  # as a query's on-disk table
        held.touch()
        open(system_file, "w").close()
        try:
            install_datadir(second / "data")
            with ManagedServer(second / "data", second):
                pass
            assert held.exists() and os.path.exists(system_file)
        finally:
            if os.path.exists(system_file):
                os.unlink(system_file)


STARTER = """
import sys
from pathlib import Path
from perflab.server.managed import ManagedServer
ManagedServer(Path(sys.argv[1]) / "data", Path(sys.argv[1])).start()
"""


def test_a_perflab_killed_while_its_server_starts_leaves_no_server(tmp_path, pristine_datadir):
    """MariaDB 10.11 hangs for ever when the SIGTERM that perflab's death sends it arrives about
    0.1 s into its start-up; the sentinel kills what is left. The kill lands at several
    moments of the start-up, across that window."""
    copy_datadir(pristine_datadir, tmp_path / "data")
    try:
        for delay in (0.0, 0.04, 0.07, 0.09, 0.11, 0.13, 0.2, 0.4):
            starter = subprocess.Popen([sys.executable, "-c", STARTER, str(tmp_path)])
            try:
                deadline = time.monotonic() + 30
                while not (servers := mariadbd_under(tmp_path)):
                    assert time.monotonic() < deadline and starter.poll() is None
                    time.sleep(0.005)
                time.sleep(delay)
            finally:
                starter.kill()
                starter.wait()
            deadline = time.monotonic() + 20
            while mariadbd_under(tmp_path) and time.monotonic() < deadline:
                time.sleep(0.1)
            assert not mariadbd_under(tmp_path), f"left running after a kill {delay} s in: " \
                                                 f"{servers}"
    finally:
        for pid in mariadbd_under(tmp_path):  # the servers this test started, when it fails
            os.kill(pid, signal.SIGKILL)
