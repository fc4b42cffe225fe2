"""The native fingerprint scanner against pt-query-digest's rules as regular expressions
(tests/pt_rules.py), on statements built to hit every rule's edges. pt-query-digest itself is
compared on real logs in test_digest.py and on a 39k-class log in bench/digest."""

from __future__ import annotations

import random

import pytest

from perflab.digest.fingerprint import fingerprint, special
from pt_rules import reference

pytestmark = pytest.mark.fast  # needs no server: scripts/test -m fast

# Fragments that meet the rules' edges: quotes and escapes, both comment kinds, IN and VALUES
# lists, pt's number rule eating letters a-f, Unicode spaces and the letters re.IGNORECASE folds
# (U+0130, U+0131 for i, U+017F for s, U+212A for k), words next to the keywords.
FRAGMENTS = [
    "SELECT", "select", "SeLeCt", "FROM", "t1", "tbl_2b", "WHERE", "a", "=", "<>", "AND", "OR",
    "'x'", "'O\\'Brien'", "'it''s'", '"dq"', '"a\\"b"', "'", '"', "\\", "\\\\", "'/*'", "'*/'",
    "/* c */", "/*! 40001 */", "/**/", "/*", "*/", "-- note", "--", "#", "# tag\n", "\n", "\r\n",
    "\t", "\f", "\v", "\x85", "\xa0", "\u2003", "\x1c", "\x1f", "  ", "IN", "in", "In", "NOT IN",
    "(",
    ")", "(1, 2, 3)", "( 'a' , 'b' )", "()", "(?)", ",", "VALUES", "values", "VALUE", "value",
    "(1,'a'),(2,'b')", "( 3 ) , ( 4 )", "INSERT", "INSERT IGNORE", "REPLACE", "INTO", "ınsert",
    "İN", "LIMIT", "limit", "LIMIT 10", "LIMIT 5, 10", "LIMIT 5,10", "LIMIT 5 OFFSET 10",
    "ORDER BY", "order by", "ASC", "asc", "aſc", "ascending", "DESC", "UNION", "UNION ALL",
    "union", "NULL", "null", "nullable", "isnull", "TRUE", "false", "FalSe", "falſe", "truex",
    "_true", "0", "42", "-7", "+3", "3.14", "-2.5e-3", "0x1F", "0b101", "1e5", "abc123", "x-y",
    "a-b", "b?", "x?", ".?", "?", "café", "Zürich", "日本", "K", "ǅ", "ß", "USE", "use", "db",
    "SET", "@a", ":=", "call", "CALL p(1)", "JOIN", "join", "id", "*", ";", "`t`", "`a b`",
]


def expected(query: str) -> str:
    found = special(query)
    return reference(query) if found is None else found


def statements(rng: random.Random, count: int):
    starts = ["", "", "SELECT ", "INSERT INTO t VALUES ", "REPLACE INTO t (a) VALUES ",
              "INSERT IGNORE INTO t VALUES (1), ", "use ", "USE ", "  select ", "\nSELECT ",
              "SELECT a FROM t UNION SELECT a FROM t", "SELECT a FROM t WHERE b IN ("]
    for _ in range(count):
        parts = [rng.choice(starts)]
        for _ in range(rng.randint(0, 14)):
            parts.append(rng.choice(FRAGMENTS))
            parts.append(rng.choice([" ", " ", "", ",", "\n", "  "]))
        yield "".join(parts)


def test_the_native_rules_equal_pt_rules_as_regular_expressions():
    rng = random.Random(20261123)
    checked = 0
    for query in statements(rng, 60_000):
        assert fingerprint(query) == expected(query), repr(query)
        checked += 1
    assert checked == 60_000


def test_shapes_of_real_statements_and_their_known_fingerprints():
    known = {
        "SELECT * FROM t1 WHERE a = 'x' AND b IN (1, 2, 3) LIMIT 10":
            "select * from t? where a = ? and b in(?+) limit ?",
        "INSERT INTO t (a, b) VALUES (1, 'a'), (2, 'b')": "insert into t (a, b) values(?+)",
        "select a from t order by a ASC, b asc": "select a from t order by a, b",
        "SELECT a FROM t WHERE b = 1 UNION SELECT a FROM t WHERE b = 2":
            "select a from t where b = ? /*repeat union*/",
        "use Shop": "use ?",
        "select x from t where y is NULL -- trailing\n": "select x from t where y is ? ",
        "SELECT 0x1F, -2.5e-3, TRUE": "select ?f, ?, ?",  # pt: [0-9a-f] before lower case
        "select * from t limit 5 offset 10": "select * from t limit ?",
    }
    for query, fingerprint_text in known.items():
        assert fingerprint(query) == fingerprint_text == expected(query), query


def test_pathological_statements_give_pt_answer():
    """Sizes the regular expressions answer in a second (some of them are quadratic); the
    scanner is linear, and the last case is one the regular expressions would take minutes on."""
    cases = [
        "SELECT '" + "a" * 300_000,  # unterminated string
        "# " * 5_000 + "'",  # every comment start stopped by the same quote
        "INSERT INTO t VALUES (" + ")" * 5_000 + " , x",  # closing marks without a next row
        "SELECT /* " + "x" * 200_000,  # unterminated comment
        "select a from t order by " + " asc" * 5_000,
        "select * from t where a in " + "(?)," * 50_000,
    ]
    for query in cases:
        assert fingerprint(query) == expected(query)
    assert fingerprint("# " * 500_000 + "'") == "# " * 500_000 + "'"
