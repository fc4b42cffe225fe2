"""What one SQL statement of a workload does to a server: reads, locks, writes, or cannot be
told, read by sqlglot's MySQL tokenizer and parser rather than by its first word.

A statement that starts with SELECT can still write (`SELECT 1; DELETE ...` when the driver
runs several statements per call, `SELECT ... INTO OUTFILE`, `SELECT NEXTVAL(s)`, a stored
function that writes), lock (`FOR UPDATE`, `LOCK IN SHARE MODE`, `GET_LOCK()`) or hide SQL in
an executable comment (`/*! ... */`, which MariaDB runs). The parse decides what is a plain
read; what the parse cannot read is never taken for one. On a server perflab did not start the
sessions are also read-only at the server (`SET SESSION TRANSACTION READ ONLY`), which stops a
write whatever its text looked like; this module is what refuses, before anything runs, what a
read-only session lets through (locks, files, several statements) and what is not a read.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from enum import Enum

import sqlglot
from sqlglot import exp
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import TokenType

READ_ROOTS = (exp.Select, exp.SetOperation, exp.Subquery, exp.Show, exp.Describe)
NOT_READS = (exp.DML, exp.DDL, exp.Drop, exp.Alter, exp.TruncateTable, exp.LoadData,
             exp.Command, exp.Set, exp.Kill, exp.Use)
LOCK_FUNCTIONS = {"GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS"}
WRITE_FUNCTIONS = {"NEXTVAL", "SETVAL"}  # sequences
FILE_FUNCTIONS = {"LOAD_FILE"}  # reads a file of the database host
# Functions sqlglot does not model that MariaDB has built in: calls to them are not routines.
BUILTIN_FUNCTIONS = LOCK_FUNCTIONS | WRITE_FUNCTIONS | FILE_FUNCTIONS | {
    "LASTVAL", "INET6_ATON", "INET6_NTOA", "INET_ATON", "INET_NTOA", "IS_FREE_LOCK",
    "IS_USED_LOCK", "SLEEP", "BENCHMARK", "FOUND_ROWS", "ROW_COUNT", "LAST_INSERT_ID",
    "CONNECTION_ID", "DATABASE", "SCHEMA", "USER", "CURRENT_USER", "SESSION_USER",
    "SYSTEM_USER", "VERSION", "UUID", "UUID_SHORT", "SYS_GUID", "FIELD", "ELT", "FIND_IN_SET",
    "MAKE_SET", "EXPORT_SET", "SUBSTRING_INDEX", "LOCATE", "INSTR", "LCASE", "UCASE",
    "OCTET_LENGTH", "CHAR_LENGTH", "BIT_LENGTH", "SOUNDEX", "SPACE", "STRCMP", "QUOTE",
    "FORMAT", "CONV", "BIN", "OCT", "HEX", "UNHEX", "CRC32", "MD5", "SHA1", "SHA2",
    "ISNULL", "IFNULL", "NULLIF", "INTERVAL", "GREATEST", "LEAST", "DATE_FORMAT",
    "STR_TO_DATE", "FROM_UNIXTIME", "UNIX_TIMESTAMP", "SEC_TO_TIME", "TIME_TO_SEC",
    "TIMESTAMPDIFF", "TIMESTAMPADD", "PERIOD_ADD", "PERIOD_DIFF", "TO_DAYS", "FROM_DAYS",
    "DAYOFWEEK", "DAYOFMONTH", "DAYOFYEAR", "WEEKDAY", "WEEKOFYEAR", "YEARWEEK", "MAKEDATE",
    "MAKETIME", "LAST_DAY", "SYSDATE", "UTC_DATE", "UTC_TIME", "UTC_TIMESTAMP", "CURDATE",
    "CURTIME", "NOW", "CONVERT_TZ", "GET_FORMAT", "ADDTIME", "SUBTIME", "MICROSECOND",
    "JSON_VALUE", "JSON_QUERY", "JSON_EXTRACT", "JSON_UNQUOTE", "JSON_CONTAINS",
    "JSON_LENGTH", "JSON_KEYS", "JSON_OBJECT", "JSON_ARRAY", "JSON_SEARCH", "JSON_VALID",
    "REGEXP_REPLACE", "REGEXP_SUBSTR", "REGEXP_INSTR", "COLUMN_GET", "COLUMN_JSON",
    "BIT_COUNT", "WEIGHT_STRING", "NAME_CONST", "ST_ASTEXT", "ST_GEOMFROMTEXT", "ST_DISTANCE",
    "MASTER_POS_WAIT", "MASTER_GTID_WAIT", "BINLOG_GTID_POS", "ANY_VALUE", "DEFAULT",
    "VALUES", "VALUE", "GROUP_CONCAT", "CHARSET", "COLLATION", "COERCIBILITY", "NVL", "NVL2",
    "DECODE_ORACLE", "TO_CHAR", "ADD_MONTHS", "MONTHS_BETWEEN", "CHR", "RANDOM_BYTES",
}


class Kind(Enum):
    READ = "a plain read"
    LOCKS = "a locking read"
    WRITES = "a write"
    UNKNOWN = "not a statement perflab can read"
    NEVER = "refused on a server perflab did not start"


@dataclass(frozen=True)
class Classified:
    """One statement's kind, why (unless a plain read), and what it names."""

    kind: Kind
    reason: str = ""
    tables: tuple[tuple[str, str], ...] = ()  # (schema, or "" for the default one; table)
    calls: tuple[tuple[str, str], ...] = ()  # functions not known as built in: routines?

    @property
    def writes(self) -> bool:
        """Whether a managed server's data must be taken as changed after it ran."""
        return self.kind not in (Kind.READ, Kind.LOCKS)


def several_statements(sql: str) -> bool:
    """Whether `sql` holds more than one statement (a `;` with anything but comments after)."""
    try:
        return _several(MySQL().tokenize(sql))
    except sqlglot.errors.TokenError:
        return False  # classify() says what is wrong with it


def _several(tokens) -> bool:
    ends = [n for n, token in enumerate(tokens) if token.token_type == TokenType.SEMICOLON]
    return any(n < len(tokens) - 1 for n in ends)


def classify(sql: str) -> Classified:
    """The kind of one statement, as the server would run it."""
    try:
        tokens = MySQL().tokenize(sql)
    except sqlglot.errors.TokenError as exc:
        return Classified(Kind.UNKNOWN, f"cannot be read as SQL ({_first_line(exc)})")
    if _several(tokens):
        return Classified(Kind.NEVER, "holds more than one statement")
    if any(c.lstrip().startswith(("!", "M!")) for t in tokens for c in t.comments):
        return Classified(Kind.NEVER, "holds an executable comment (/*! ... */), which the "
                                      "server runs as SQL")
    if _ambiguous_escapes(sql, tokens):
        return Classified(Kind.NEVER, "has a backslash in a quoted string, read otherwise by a "
                                      "server with sql_mode NO_BACKSLASH_ESCAPES")
    words = {t.text.upper() for t in tokens if t.token_type != TokenType.STRING}
    if "INTO" in words and words & {"OUTFILE", "DUMPFILE"}:
        return Classified(Kind.NEVER, "writes a file on the database host (INTO OUTFILE)")
    try:
        parsed = _parse(sql)
    except sqlglot.errors.ParseError as exc:
        return Classified(Kind.UNKNOWN, f"cannot be parsed as one statement "
                                        f"({_first_line(exc)})")
    return _kind(parsed, tokens)


def _kind(tree: exp.Expression, tokens) -> Classified:
    tables = tuple(sorted({(t.db, t.name) for t in tree.find_all(exp.Table) if t.name}))
    calls, special = set(), set()
    for node in tree.find_all(exp.Anonymous):
        name = node.name.upper()
        schema = node.parent.this.name if isinstance(node.parent, exp.Dot) else ""
        if not schema and name in BUILTIN_FUNCTIONS:
            special.add(name)
        else:
            calls.add((schema, name))
    made = {"tables": tables, "calls": tuple(sorted(calls))}
    if isinstance(tree, exp.Command):
        if tokens[0].text.upper() == "SHOW":
            return Classified(Kind.READ, **made)
        return Classified(Kind.UNKNOWN, f"is not a read perflab can parse "
                                        f"({tokens[0].text.upper()} ...)", **made)
    if not isinstance(tree, READ_ROOTS) or any(tree.find_all(*NOT_READS)):
        return Classified(Kind.WRITES, f"is not a read ({tokens[0].text.upper()} ...)", **made)
    if any(tree.find_all(exp.Into)):
        return Classified(Kind.WRITES, "stores its result (SELECT ... INTO)", **made)
    if special & FILE_FUNCTIONS:
        return Classified(Kind.NEVER, "reads a file on the database host (LOAD_FILE)", **made)
    if special & WRITE_FUNCTIONS:
        return Classified(Kind.WRITES, f"moves a sequence ({min(special & WRITE_FUNCTIONS)})",
                          **made)
    if any(tree.find_all(exp.Lock)):
        return Classified(Kind.LOCKS, "locks the rows it reads (FOR UPDATE / LOCK IN SHARE "
                                      "MODE)", **made)
    if special & LOCK_FUNCTIONS:
        return Classified(Kind.LOCKS, f"takes a named lock ({min(special & LOCK_FUNCTIONS)})",
                          **made)
    return Classified(Kind.READ, **made)


def _parse(sql: str) -> exp.Expression:
    """One statement's tree; sqlglot's notes on syntax it falls back on are not shown."""
    logger = logging.getLogger("sqlglot")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        trees = [t for t in sqlglot.parse(sql, read="mysql") if t is not None]
    finally:
        logger.setLevel(level)
    if len(trees) != 1:
        raise sqlglot.errors.ParseError("no statement" if not trees else "several statements")
    return trees[0]


class _NoBackslashTokenizer(MySQL.Tokenizer):
    STRING_ESCAPES = ["'", '"']


def _ambiguous_escapes(sql: str, tokens) -> bool:
    """Whether a backslash in a string would split the statement otherwise under
    NO_BACKSLASH_ESCAPES (`'a\\' ; DELETE ...'` is one string, or a string and a DELETE)."""
    if "\\" not in sql:
        return False
    try:
        plain = _NoBackslashTokenizer().tokenize(sql)
    except sqlglot.errors.TokenError:
        return True
    return [t.token_type for t in plain] != [t.token_type for t in tokens]


def _first_line(exc: Exception) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines()[0][:80]
