"""What a statement does to a server, read by a parser and not by its first word, over text
the lexer reads as every server does (no server needed; tests/test_existing.py runs the same
kinds of statements through perflab against one)."""

import unicodedata

import pytest
import sqlglot
from hypothesis import given
from hypothesis import strategies as st
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import TokenType

from perflab.load.classify import Kind, classify
from perflab.load.lexer import LexicalRefusal, lex

CASES = [
    ("SELECT 1; DELETE FROM t", Kind.NEVER),
    ("SELECT 1 /*!; DELETE FROM t */", Kind.NEVER),
    ("SELECT 'a\\' ; KILL 5; -- '", Kind.NEVER),  # two statements under NO_BACKSLASH_ESCAPES
    ("SELECT 1 --x\n", Kind.NEVER),  # code to MariaDB, a comment to others' readers
    ("SELECT 1 -- ; DELETE FROM t", Kind.NEVER),  # comments: read differently by servers
    ("SELECT 1 --1", Kind.NEVER),
    ("SELECT 1 # x", Kind.NEVER),
    ("SELECT\u00a01", Kind.NEVER),  # a no-break space: code or space, by server
    ("SELECT \"a\"", Kind.NEVER),  # a string, or a name under ANSI_QUOTES
    ("SELECT 'é'", Kind.NEVER),  # a value outside ASCII is bound, never sent as text
    ("SELECT {fn NOW()}", Kind.NEVER),  # an ODBC escape
    ("SELECT a$b FROM t", Kind.NEVER),
    ("SELECT * FROM t INTO OUTFILE '/tmp/x'", Kind.NEVER),
    ("SELECT LOAD_FILE('/etc/passwd')", Kind.NEVER),
    ("SELECT 'INTO OUTFILE' FROM t", Kind.READ),  # words inside a string are not SQL
    ("SELECT 1 - -1", Kind.READ),
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
    ("/* leading */ TABLE t", Kind.NEVER),
    ("TABLE t", Kind.READ),
    ("SHOW EXPLAIN FOR 5", Kind.READ),
    ("SELECT 1;", Kind.READ),
    ("SELECT 1; -- a comment after the end", Kind.NEVER),
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
    # a CTE's column list too: only the server's list of loadable functions rules out one
    assert classify("WITH c (a) AS (SELECT 1) SELECT a FROM c").calls == (("", "AS"), ("", "C"))
    assert found.tables == (("", "u"), ("perflab_x", "t"))
    # a CTE named like a function hides nothing: the server calls the function
    assert ("", "F") in classify("WITH f AS (SELECT 1 AS a) SELECT f() FROM f").calls
    # schemas keep their letter case: whether App is app is the server's to say
    assert ("App", "v") in classify("SELECT * FROM `App`.v").names


@pytest.mark.fast
def test_what_a_write_touches_and_whether_it_locks_is_kept():
    assert classify("INSERT INTO t VALUES (GET_LOCK('a', 1))").locks
    dropped = classify("DROP DATABASE App")
    assert dropped.schemas == ("App",) and dropped.tables == () and dropped.data_write
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


# what sqlglot's tokenizer must agree on with perflab's lexer: where strings and names are
PIECES = ["SELECT", " ", "a", "`b c`", "`x``y`", "'s'", "'it''s'", "'a;b'", "(", ")", ",", ".",
          "=", "-", "+", "*", "/", "1", "0x1f", "1e5", "@", "@@", ":=", "?", "\n", "\t", "_utf8",
          "x", "N", "FROM", "t", "WHERE", "IN", "LIMIT"]


QUOTED = (TokenType.STRING, TokenType.NATIONAL_STRING, TokenType.HEX_STRING, TokenType.BIT_STRING,
          TokenType.IDENTIFIER)


@pytest.mark.fast
@given(st.lists(st.sampled_from(PIECES) | st.text(max_size=3), min_size=1, max_size=14))
def test_what_the_lexer_accepts_sqlglot_reads_with_the_same_strings_and_names(pieces):
    text = "".join(pieces)
    try:
        lexed = lex(text)
    except LexicalRefusal as refused:
        assert 0 <= refused.position < len(text)
        return
    mine = [(t.kind, t.text if t.kind != "string" else t.text[1:-1].replace("''", "'"))
            for t in lexed.tokens if t.kind in ("string", "name")]
    try:
        theirs = [t for t in MySQL().tokenize(text) if text[t.end] in "'`" and t.token_type in
                  QUOTED]
    except sqlglot.errors.TokenError:
        return  # sqlglot cannot read it: classify() takes it for no read
    assert [text for _, text in mine] == [t.text for t in theirs]
    assert [kind for kind, _ in mine] == \
        ["name" if t.token_type == TokenType.IDENTIFIER else "string" for t in theirs]


@pytest.mark.fast
@given(st.characters(min_codepoint=0x80), st.integers(0, 3))
def test_any_character_outside_ascii_outside_quotes_is_refused_with_its_position(char, at):
    text = ["SELECT a", " FROM t", " WHERE b", " = 1"]
    text.insert(at, char)
    sql = "".join(text)
    with pytest.raises(LexicalRefusal) as refused:
        lex(sql)
    assert refused.value.position == sql.index(char), unicodedata.category(char)
    assert classify(sql).kind is Kind.NEVER


NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True) | st.sampled_from(
    ["status", "value", "user", "database", "char", "format", "left", "if", "select", "f"])


@pytest.mark.fast
@given(NAMES, NAMES, st.booleans(), st.booleans(), st.sampled_from(["", " ", "\n  "]))
def test_every_call_is_seen_however_the_name_is_spelt(function, cte, quoted, qualified, space):
    """Case, quotes, keywords as names, a CTE of the same name, space before the "(": the
    call is among those load/reach.py looks up."""
    spelt = f"`{function.replace('`', '``')}`" if quoted else function
    called = f"app.{spelt}" if qualified else spelt
    sql = f"WITH {cte} AS (SELECT 1 AS a) SELECT {called}{space}(a) FROM {cte}"
    assert (("app" if qualified else ""), function.upper()) in classify(sql).calls
