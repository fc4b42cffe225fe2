"""What a statement reaches on a server, not only what it names.

`SELECT x FROM v` names a view; the view may call a stored function, and the function may run
`SET GLOBAL`, take a named lock or write, and a read-only session stops none of that but the
write. So every table a statement names is looked up on the server: a view is classified
through its definition (information_schema.VIEWS), recursively; every function it calls that is
not one of the server's built-ins (information_schema.SQL_FUNCTIONS and KEYWORDS) is looked up
among its stored functions (information_schema.ROUTINES) and classified through its body, by
the same classifier (load/classify.py) statement by statement. What cannot be read (a view or
function this account cannot see into, a loadable function, a body with flow control) is never
taken for a read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import pymysql
import sqlglot
from sqlglot.dialects.mysql import MySQL
from sqlglot.tokens import TokenType

from perflab.load.classify import Classified, Kind, classify
from perflab.server.connection import query

# Spatial functions: built into MariaDB but not listed in SQL_FUNCTIONS (10.11). Each also
# exists with the ST_ prefix.
SPATIAL = {
    "AREA", "ASBINARY", "ASTEXT", "ASWKB", "ASWKT", "BOUNDARY", "BUFFER", "CENTROID",
    "CONTAINS", "CONVEXHULL", "CROSSES", "DIMENSION", "DISJOINT", "DISTANCE",
    "DISTANCE_SPHERE", "ENDPOINT", "ENVELOPE", "EQUALS", "EXTERIORRING", "GEOMCOLLFROMTEXT",
    "GEOMCOLLFROMWKB", "GEOMETRYCOLLECTION", "GEOMETRYCOLLECTIONFROMTEXT",
    "GEOMETRYCOLLECTIONFROMWKB", "GEOMETRYFROMTEXT", "GEOMETRYFROMWKB", "GEOMETRYN",
    "GEOMETRYTYPE", "GEOMFROMTEXT", "GEOMFROMWKB", "GEOMFROMGEOJSON", "ASGEOJSON", "GLENGTH",
    "INTERIORRINGN", "INTERSECTION", "INTERSECTS", "ISCLOSED", "ISEMPTY", "ISRING",
    "ISSIMPLE", "ISVALID", "LENGTH", "LINEFROMTEXT", "LINEFROMWKB", "LINESTRING",
    "LINESTRINGFROMTEXT", "LINESTRINGFROMWKB", "MBRCONTAINS", "MBRCOVEREDBY", "MBRDISJOINT",
    "MBREQUAL", "MBREQUALS", "MBRINTERSECTS", "MBROVERLAPS", "MBRTOUCHES", "MBRWITHIN",
    "MLINEFROMTEXT", "MLINEFROMWKB", "MPOINTFROMTEXT", "MPOINTFROMWKB", "MPOLYFROMTEXT",
    "MPOLYFROMWKB", "MULTILINESTRING", "MULTILINESTRINGFROMTEXT", "MULTILINESTRINGFROMWKB",
    "MULTIPOINT", "MULTIPOINTFROMTEXT", "MULTIPOINTFROMWKB", "MULTIPOLYGON",
    "MULTIPOLYGONFROMTEXT", "MULTIPOLYGONFROMWKB", "NUMGEOMETRIES", "NUMINTERIORRINGS",
    "NUMPOINTS", "OVERLAPS", "POINT", "POINTFROMTEXT", "POINTFROMWKB", "POINTN",
    "POINTONSURFACE", "POLYFROMTEXT", "POLYFROMWKB", "POLYGON", "POLYGONFROMTEXT",
    "POLYGONFROMWKB", "RELATE", "SIMPLIFY", "SRID", "STARTPOINT", "SYMDIFFERENCE", "TOUCHES",
    "UNION", "VALIDATE", "WITHIN", "X", "Y", "GEOHASH", "LATFROMGEOHASH", "LONGFROMGEOHASH",
    "POINTFROMGEOHASH",
}
# How much worse one kind is than another, when a statement reaches several objects.
SEVERITY = {Kind.READ: 0, Kind.LOCKS: 1, Kind.WRITES: 2, Kind.UNKNOWN: 3, Kind.NEVER: 4}
FLOW = {"BEGIN", "IF", "ELSEIF", "ELSE", "END", "WHILE", "LOOP", "REPEAT", "UNTIL", "CASE",
        "WHEN", "LEAVE", "ITERATE", "OPEN", "FETCH", "CLOSE", "RESIGNAL", "SIGNAL", "GOTO"}
DEEPEST = 32  # views over views over functions: past this, not followed (never a read)


@dataclass(frozen=True)
class Reached:
    """An object a statement reaches (a view, a stored function), how it is reached (`path`:
    "view app.v -> function app.F"), its schema and what it does."""

    path: str
    schema: str
    kind: Classified


class ServerObjects:
    """The views, stored functions and built-in names of one server, read as they are asked
    for, through one session."""

    def __init__(self, conn: pymysql.Connection):
        self.conn = conn
        try:
            names = query(conn, "SELECT FUNCTION FROM information_schema.SQL_FUNCTIONS UNION "
                                "SELECT WORD FROM information_schema.KEYWORDS")
        except pymysql.MySQLError:  # before MariaDB 10.6, and MySQL: no list of built-ins
            names, self.listed = [], False
        else:
            self.listed = True
        self.builtins = {name.upper() for (name,) in names} | SPATIAL | \
            {f"ST_{name}" for name in SPATIAL} if self.listed else set()

    def view(self, schema: str, name: str) -> str | None:
        """A view's definition, "" when this account cannot read it, None when `name` is not
        a view."""
        rows = query(self.conn, "SELECT t.TABLE_TYPE, v.VIEW_DEFINITION FROM "
                                "information_schema.TABLES t LEFT JOIN information_schema.VIEWS "
                                "v USING (TABLE_SCHEMA, TABLE_NAME) WHERE t.TABLE_SCHEMA = %s "
                                "AND t.TABLE_NAME = %s", (schema, name))
        if not rows or rows[0][0] != "VIEW":
            return None
        return rows[0][1] or ""

    def function(self, schema: str, name: str) -> tuple[str, str] | None:
        """A stored function's declared data access and body ("" when this account cannot
        read it), or None when this account sees no such function."""
        rows = query(self.conn, "SELECT SQL_DATA_ACCESS, ROUTINE_DEFINITION FROM "
                                "information_schema.ROUTINES WHERE ROUTINE_TYPE = 'FUNCTION' AND "
                                "ROUTINE_SCHEMA = %s AND ROUTINE_NAME = %s", (schema, name))
        return (rows[0][0], rows[0][1] or "") if rows else None


def reached(statement: Classified, schema: str, objects: ServerObjects) -> list[Reached]:
    """Every view and stored function `statement` reaches, run in default schema `schema`,
    each with what it does; nothing is run."""
    out: list[Reached] = []
    seen: set[tuple[str, str, str]] = set()
    todo = [(statement, schema, "")]
    while todo:
        current, default, via = todo.pop(0)
        for table_schema, table in current.tables:
            key = ("view", table_schema or default, table)
            if key in seen:
                continue
            seen.add(key)
            definition = objects.view(key[1], table)
            if definition is None:
                continue
            path = f"{via}view {key[1]}.{table}"
            kind = classify(definition) if definition else Classified(
                Kind.NEVER, "is a view whose definition this account cannot read (it needs "
                            "SHOW VIEW)")
            out.append(Reached(path, key[1], kind))
            todo.append((kind, key[1], path + " -> "))
        for call_schema, name in current.calls:
            if not call_schema and name in objects.builtins:
                continue  # a built-in: a stored function of that name is called qualified
            key = ("function", call_schema or default, name)
            if key in seen:
                continue
            seen.add(key)
            path = f"{via}function {key[1]}.{name}"
            found = objects.function(key[1], name)
            if found is None and not objects.listed:
                kind = Classified(Kind.NEVER, "may be a loadable function: this server does "
                                              "not list its built-in ones (information_schema."
                                              "SQL_FUNCTIONS, MariaDB 10.6 and later)")
            elif found is None:
                kind = Classified(Kind.NEVER, "is neither a built-in function of this server "
                                              "nor a stored function this account can read (a "
                                              "loadable function?)")
            else:
                kind = function_kind(*found)
            out.append(Reached(path, key[1], kind))
            todo.append((kind, key[1], path + " -> "))
        if len(seen) > DEEPEST:
            out.append(Reached(via.rstrip(" ->") or "the statement", default, Classified(
                Kind.UNKNOWN, f"reaches more than {DEEPEST} views and functions")))
            break
    return out


def function_kind(data_access: str, body: str) -> Classified:
    """What a stored function does, from its body: each statement classified (RETURN, a
    DECLARE's DEFAULT and a SET of a declared variable as the SELECT of their expression),
    the worst one's kind, with every table and call of them all (to follow further)."""
    if not body:
        return Classified(Kind.NEVER, "is a function whose body this account cannot read")
    if data_access == "MODIFIES SQL DATA":
        return Classified(Kind.WRITES, "is declared MODIFIES SQL DATA")
    statements = _body_statements(body)
    if statements is None:
        return Classified(Kind.UNKNOWN, "has flow control, handlers or cursors, which perflab "
                                        "does not follow")
    declared: set[str] = set()
    kinds = [_body_statement_kind(text, declared) for text in statements]
    worst = max(kinds, key=lambda k: SEVERITY[k.kind])
    return replace(worst, locks=any(k.locks for k in kinds),
                   tables=tuple(sorted({t for k in kinds for t in k.tables})),
                   calls=tuple(sorted({c for k in kinds for c in k.calls})))


def _body_statements(body: str) -> list[str] | None:
    """A function body's statements (the one statement of a body without BEGIN), or None when
    it has flow control, labels or nested blocks."""
    text = body.strip()
    try:
        tokens = MySQL().tokenize(text)
    except sqlglot.errors.TokenError:
        return None
    if tokens and tokens[0].text.upper() == "BEGIN":
        if len(tokens) < 2 or tokens[-1].text.upper() != "END":
            return None
        tokens = tokens[1:-1]
    statements, start = [], 0
    for n in range(len(tokens) + 1):
        if n < len(tokens) and tokens[n].token_type != TokenType.SEMICOLON:
            continue
        piece, start = tokens[start:n], n + 1
        if not piece:
            continue
        if piece[0].text.upper() in FLOW or (len(piece) > 1 and
                                            piece[1].token_type == TokenType.COLON):
            return None
        statements.append(text[piece[0].start:piece[-1].end + 1])
    return statements


def _body_statement_kind(statement: str, declared: set[str]) -> Classified:
    words = statement.split(None, 1)
    verb, rest = words[0].upper(), (words[1] if len(words) > 1 else "")
    if verb == "RETURN":
        return classify(f"SELECT {rest}")
    if verb == "DECLARE":
        match = re.match(r"^((?:`?\w+`?\s*,\s*)*`?\w+`?)\s+(.*?)(?:\s+DEFAULT\s+(.*))?$", rest,
                         re.S | re.I)
        if not match or re.match(r"^(CURSOR|CONDITION)\b", match.group(2), re.I) or \
                re.match(r"^(CONTINUE|EXIT|UNDO)\b", rest, re.I):  # a handler
            return Classified(Kind.UNKNOWN, "declares a handler, cursor or condition, which "
                                            "perflab does not follow")
        declared.update(n.strip(" `").lower() for n in match.group(1).split(","))
        return classify(f"SELECT {match.group(3)}") if match.group(3) else Classified(Kind.READ)
    if verb == "SET":
        local = re.match(r"^`?(\w+)`?\s*:?=\s*(.*)$", rest, re.S)
        if local and local.group(1).lower() in declared:
            return classify(f"SELECT {local.group(2)}")
    return classify(statement)
