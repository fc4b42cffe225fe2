"""pt-query-digest's fingerprint rules as its regular expressions (Percona Toolkit 3.2.1,
QueryRewriter::fingerprint), translated to Python's `re`: the reference the native scanner in
src/perflab/digest/_fingerprint.c must equal, statement for statement (tests/test_fingerprint.py).
The special statements (mysqldump, percona-toolkit, administrator commands, CALL) are read by
perflab.digest.fingerprint before either is asked, so they are not repeated here."""

from __future__ import annotations

import re

from perflab.digest.fingerprint import UNION

MULTI_INSERT = re.compile(r"\A((?:INSERT|REPLACE)(?: IGNORE)?\s+INTO.+?VALUES\s*\(.*?\))\s*,\s*\(",
                          re.I | re.S)
MULTI_LINE_COMMENT = re.compile(r"/\*[^!].*?\*/", re.S | re.M)
ONE_LINE_COMMENT = re.compile(r"(?:--|#)[^'\"\r\n]*(?=[\r\n]|\Z)")
USE = re.compile(r"\Ause \S+\Z", re.I)
ESCAPED_QUOTE = re.compile(r"\\[\"']")
DOUBLE_QUOTED = re.compile(r'".*?"', re.S)
SINGLE_QUOTED = re.compile(r"'.*?'", re.S)
BOOLEAN = re.compile(r"\bfalse\b|\btrue\b", re.I)
NUMBER = re.compile(r"[0-9+-][0-9a-f.xb+-]*")
NUMBER_TAIL = re.compile(r"[xb.+-]\?")
WHITESPACE = re.compile(r"[ \n\t\r\f]+")
NULL = re.compile(r"\bnull\b")
IN_LIST = re.compile(r"\b(in|values?)(?:[\s,]*\([\s?,]*\))+")
LIMIT = re.compile(r"\blimit \?(?:, ?\?| offset \?)?")
ORDER_BY = re.compile(r"\border by ", re.I)
ASC = re.compile(r"\s+asc", re.I)


def reference(query: str) -> str:
    """pt's rules after the special statements, regular expression by regular expression."""
    if query[:6].upper() == "INSERT" or query[:7].upper() == "REPLACE":
        multi = MULTI_INSERT.match(query)
        if multi:
            query = multi.group(1)
    query = MULTI_LINE_COMMENT.sub("", query)
    query = ONE_LINE_COMMENT.sub("", query)
    if USE.match(query):
        return "use ?"
    query = ESCAPED_QUOTE.sub("", query)
    query = DOUBLE_QUOTED.sub("?", query)
    query = SINGLE_QUOTED.sub("?", query)
    query = BOOLEAN.sub("?", query)
    query = NUMBER.sub("?", query)
    query = NUMBER_TAIL.sub("?", query)
    query = query.lstrip()
    if query.endswith("\n"):
        query = query[:-1]  # Perl's chomp: one newline only
    query = WHITESPACE.sub(" ", query).lower()
    query = NULL.sub("?", query)
    query = IN_LIST.sub(r"\1(?+)", query)
    query = UNION.sub(r"\1 /*repeat\2*/", query)
    query = LIMIT.sub("limit ?", query, count=1)
    anchor = ORDER_BY.search(query)
    if anchor:
        query = query[:anchor.end()] + _drop_asc(query[anchor.end():])
    return query


def _drop_asc(tail: str) -> str:
    """pt's `1 while s/\\G(.+?)\\s+ASC/$1/gi`: each ASC needs one character before it."""
    out = []
    position = 0
    while True:
        found = ASC.search(tail, position + 1)
        if found is None or found.start() <= position:
            break
        out.append(tail[position:found.start()])
        position = found.end()
    out.append(tail[position:])
    return "".join(out)
