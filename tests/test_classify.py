"""What a statement does to a server, read by a parser and not by its first word (no server
needed; tests/test_existing.py runs the same kinds of statements through perflab against one)."""

import pytest

from perflab.load.classify import Kind, classify

CASES = [
    ("SELECT 1; DELETE FROM t", Kind.NEVER),
    ("SELECT 1 /*!; DELETE FROM t */", Kind.NEVER),
    ("SELECT 'a\\' ; KILL 5; -- '", Kind.NEVER),  # two statements under NO_BACKSLASH_ESCAPES
    ("SELECT * FROM t INTO OUTFILE '/tmp/x'", Kind.NEVER),
    ("SELECT LOAD_FILE('/etc/passwd')", Kind.NEVER),
    ("SELECT 'INTO OUTFILE' FROM t", Kind.READ),  # words inside a string are not SQL
    ("SELECT 1 -- ; DELETE FROM t", Kind.READ),  # a comment
    ("SELECT 1 --1", Kind.READ),  # not a comment in MariaDB: 1 minus minus 1
    ("SELECT a FROM t FOR UPDATE", Kind.LOCKS),
    ("SELECT a FROM t LOCK IN SHARE MODE", Kind.LOCKS),
    ("SELECT GET_LOCK('x', 1)", Kind.LOCKS),
    ("SELECT NEXTVAL(s)", Kind.WRITES),
    ("SELECT 1 INTO @x", Kind.WRITES),
    ("UPDATE t SET a = 1", Kind.WRITES),
    ("SET SESSION TRANSACTION READ WRITE", Kind.WRITES),
    ("NOT SQL AT ALL (", Kind.UNKNOWN),
    ("WITH c AS (SELECT 1 AS a) SELECT a FROM c", Kind.READ),
    ("(SELECT a FROM t) UNION (SELECT a FROM u)", Kind.READ),
    ("/* leading */ TABLE t", Kind.READ),
    ("SHOW EXPLAIN FOR 5", Kind.READ),
    ("SELECT 1; -- a comment after the end", Kind.READ),
    ("INSERT INTO t SELECT LOAD_FILE('/etc/shadow')", Kind.NEVER),  # a write reads files too
    ("SHUTDOWN", Kind.WRITES),
]


@pytest.mark.fast
@pytest.mark.parametrize(("sql", "kind"), CASES)
def test_a_statement_is_what_the_server_would_run(sql, kind):
    assert classify(sql).kind is kind, classify(sql)


@pytest.mark.fast
def test_the_names_a_statement_uses_are_kept_for_the_checks_of_a_run():
    found = classify("SELECT f(a), d.g(b), `q`.`h` (1) FROM perflab_x.t JOIN u USING (id)")
    # every name before a "(": the server says which are its built-ins (load/reach.py)
    assert found.calls == (("", "F"), ("", "USING"), ("d", "G"), ("q", "H"))
    assert classify("WITH c (a) AS (SELECT 1) SELECT a FROM c").calls == (("", "AS"),)
    assert found.tables == (("", "u"), ("perflab_x", "t"))


@pytest.mark.fast
def test_what_a_write_touches_and_whether_it_locks_is_kept():
    assert classify("INSERT INTO t VALUES (GET_LOCK('a', 1))").locks
    dropped = classify("DROP DATABASE app")
    assert dropped.schemas == ("app",) and dropped.tables == () and dropped.data_write
    assert not classify("SET GLOBAL max_connections = 1").data_write
    assert not classify("KILL 5").data_write
    assert classify("SELECT NEXTVAL(app.s)").tables == (("app", "s"),)


@pytest.mark.fast
@pytest.mark.parametrize(("name", "refused"), [
    ("general_log", True), ("general_log_file", True), ("slow_query_log", True),
    ("log_output", True), ("innodb_monitor_enable", True), ("innodb_monitor_reset_all", True),
    ("init_connect", True), ("event_scheduler", True), ("innodb_buffer_pool_dump_now", True),
    ("tmpdir", True), ("secure_file_priv", True), ("sql_log_bin", True),
    ("max_connections", False), ("key_buffer_size", False), ("sort_buffer_size", False),
    ("innodb_io_capacity", False), ("query_cache_type", False),
])
def test_allow_set_changes_only_variables_a_value_puts_back(name, refused):
    from perflab.server.existing import unrestorable

    assert (unrestorable(name) is not None) is refused
