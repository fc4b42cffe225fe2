"""What one SQL statement of a workload does to a server: reads, locks, writes, or cannot be
told, read by sqlglot's MySQL parser rather than by its first word, over text that
load/lexer.py has proven the server reads as perflab does.

A statement that starts with SELECT can still write (`SELECT ... INTO OUTFILE`, `SELECT
NEXTVAL(s)`, a stored function that writes), lock (`FOR UPDATE`, `LOCK IN SHARE MODE`,
`GET_LOCK()`) or hide SQL where perflab's reading and the server's differ (a comment one reads
as code, a character one reads as a space): the lexer refuses the latter with the position, the
parse decides what is a plain read, and what the parse cannot read is never taken for one. On
a server perflab did not start the sessions are also read-only at the server (`SET SESSION
TRANSACTION READ ONLY`) and every statement is prepared there, one per call, its values bound:
this module is what refuses, before anything runs, what a read-only session lets through
(locks, files, SET GLOBAL, KILL) and what is not a read.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from enum import Enum
from typing import TypedDict

import sqlglot
from sqlglot import exp

from perflab.load.lexer import LexicalRefusal, TokenKind, lex

READ_ROOTS = (exp.Select, exp.SetOperation, exp.Subquery, exp.Show, exp.Describe)
NOT_READS = (exp.DML, exp.DDL, exp.Drop, exp.Alter, exp.TruncateTable, exp.LoadData,
             exp.Command, exp.Set, exp.Kill, exp.Use, exp.Transaction, exp.Commit,
             exp.Rollback)
# The writes perflab may run, with --allow-writes, on someone else's server (in perflab_*
# schemas): rows and the objects that hold them; never SET, KILL, USE, transaction control,
# administration or routines.
DATA_WRITES = (exp.Insert, exp.Update, exp.Delete, exp.TruncateTable)
OBJECT_WRITES = (exp.Create, exp.Drop, exp.Alter)
WRITABLE_OBJECTS = {"TABLE", "INDEX", "VIEW", "SEQUENCE", "DATABASE", "SCHEMA"}
SCHEMA_OBJECTS = {"DATABASE", "SCHEMA"}
LOCK_FUNCTIONS = {"GET_LOCK", "RELEASE_LOCK", "RELEASE_ALL_LOCKS"}
SEQUENCE_FUNCTIONS = {"NEXTVAL", "SETVAL"}
FILE_FUNCTIONS = {"LOAD_FILE"}  # reads a file of the database host


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
    locks: bool = False  # holds locks (a lock clause or a lock function), whatever its kind
    data_write: bool = False  # a write of rows or tables only (what --allow-writes may run)
    tables: tuple[tuple[str, str], ...] = ()  # (schema, or "" for the default one; table)
    schemas: tuple[str, ...] = ()  # schemas it creates, drops or alters
    # (schema or "", NAME) of every name written before a "(", however the parse reads it:
    # the functions it may call (load/reach.py looks each up on the server)
    calls: tuple[tuple[str, str], ...] = ()
    # (schema or "", name) of every word and quoted name: each may be a view (load/reach.py)
    names: tuple[tuple[str, str], ...] = ()

    @property
    def writes(self) -> bool:
        """Whether a managed server's data must be taken as changed after it ran."""
        return self.kind not in (Kind.READ, Kind.LOCKS)


class _Names(TypedDict):
    """What a parsed statement names, whatever its kind: Classified's fields of that name."""

    locks: bool
    tables: tuple[tuple[str, str], ...]
    schemas: tuple[str, ...]
    calls: tuple[tuple[str, str], ...]
    names: tuple[tuple[str, str], ...]


def classify(sql: str, strict: bool = True) -> Classified:
    """The kind of one statement, as the server would run it. `strict`: text a user wrote
    (ASCII inside its quotes too), not text the server stored (load/lexer.py)."""
    try:
        lexed = lex(sql, strict)
    except LexicalRefusal as exc:
        return Classified(Kind.NEVER, f"cannot be read as every server reads it: {exc}")
    if not lexed.tokens:
        return Classified(Kind.UNKNOWN, "holds no statement")
    calls = {(schema, name.upper()) for schema, name in lexed.calls}
    named: dict = {"calls": tuple(sorted(calls)), "names": lexed.names}
    words = {t.text.upper() for t in lexed.tokens if t.kind == TokenKind.WORD}
    if "INTO" in words and words & {"OUTFILE", "DUMPFILE"}:
        return Classified(Kind.NEVER, "writes a file on the database host (INTO OUTFILE)",
                          **named)
    try:
        tree = _parse(sql)
    except (sqlglot.errors.ParseError, sqlglot.errors.TokenError) as exc:
        return Classified(Kind.UNKNOWN, f"cannot be parsed as one statement "
                                        f"({_first_line(exc)})", **named)
    return _kind(tree, lexed.tokens[0].text.upper(), calls, lexed.names)


def _kind(tree: exp.Expr, verb: str, calls: set[tuple[str, str]],
          names_used: tuple[tuple[str, str], ...]) -> Classified:
    """A parsed statement's kind: the rules in the order they matter (what is never run, then
    what the root says, then the functions and lock clauses inside)."""
    names = {name for schema, name in calls if not schema}
    locks = bool(names & LOCK_FUNCTIONS) or any(tree.find_all(exp.Lock))
    objects, schemas = _objects(tree)
    made: _Names = {"locks": locks, "tables": objects, "schemas": schemas,
                    "calls": tuple(sorted(calls)), "names": names_used}
    if names & FILE_FUNCTIONS:
        return Classified(Kind.NEVER, "reads a file on the database host (LOAD_FILE)", **made)
    if isinstance(tree, exp.Command) and verb == "SHOW":
        return Classified(Kind.READ, **made)  # SHOW forms sqlglot does not model
    if isinstance(tree, exp.Command):
        return Classified(Kind.UNKNOWN, f"is not a read perflab can parse ({verb} ...)", **made)
    if not isinstance(tree, READ_ROOTS) or any(tree.find_all(*NOT_READS)):
        return Classified(Kind.WRITES, f"is not a read ({verb} ...)",
                          data_write=_data_write(tree), **made)
    if any(tree.find_all(exp.Into)):
        return Classified(Kind.WRITES, "stores its result (SELECT ... INTO)", **made)
    if names & SEQUENCE_FUNCTIONS:
        return Classified(Kind.WRITES, f"moves a sequence ({min(names & SEQUENCE_FUNCTIONS)})",
                          data_write=True, **made)
    if any(tree.find_all(exp.Lock)):
        return Classified(Kind.LOCKS, "locks the rows it reads (FOR UPDATE / LOCK IN SHARE "
                                      "MODE)", **made)
    if locks:
        return Classified(Kind.LOCKS, f"takes a named lock ({min(names & LOCK_FUNCTIONS)})",
                          **made)
    return Classified(Kind.READ, **made)


def _objects(tree: exp.Expr) -> tuple[tuple[tuple[str, str], ...], tuple[str, ...]]:
    """The tables a statement names (sequences moved count as tables) and the schemas it
    creates, drops or alters, spelled as written (whether `App` is `app` is the server's
    lower_case_table_names to say: a name is compared with perflab_ as it stands)."""
    if isinstance(tree, OBJECT_WRITES) and str(tree.args.get("kind", "")).upper() in \
            SCHEMA_OBJECTS:
        return (), tuple(sorted({t.name or t.db for t in tree.find_all(exp.Table)}))
    tables = {(t.db, t.name) for t in tree.find_all(exp.Table) if t.name}
    for function in tree.find_all(exp.Anonymous):
        if function.name.upper() in SEQUENCE_FUNCTIONS and function.expressions:
            target = function.expressions[0]
            schema = target.table if isinstance(target, exp.Column) else ""
            tables.add((schema, target.name))
    return tuple(sorted(tables)), ()


def _data_write(tree: exp.Expr) -> bool:
    """Whether a write is of rows, tables or schemas only (not SET, KILL, USE, transaction
    control, administration or routines)."""
    if isinstance(tree, DATA_WRITES):
        return True
    return isinstance(tree, OBJECT_WRITES) and \
        str(tree.args.get("kind", "")).upper() in WRITABLE_OBJECTS


def _parse(sql: str) -> exp.Expr:
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


def _first_line(exc: Exception) -> str:
    return re.sub(r"\x1b\[[0-9;]*m", "", str(exc)).splitlines()[0][:80]
