"""Query fingerprints by pt-query-digest's rules (Percona Toolkit 3.2.1, QueryRewriter), so that
perflab's groups are pt-query-digest's groups on the same log.

The rules, in pt-query-digest's order: multi-row INSERT/REPLACE cut to the first row; comments
stripped (not /*! version */ ones); `use db` to `use ?`; quoted strings to ?; true/false to ?;
every number (and, as pt does, digits inside names: t1 -> t?) to ?; whitespace collapsed;
lower case; NULL to ?; IN (...) and VALUES (...) lists to (?+); repeated UNIONs collapsed;
LIMIT ? [, ?| OFFSET ?] to LIMIT ?; ASC dropped after ORDER BY. The query ID is pt-query-digest's
too: the last 16 hex digits of the fingerprint's MD5.

The rules run in C (`_fingerprint.c`: one scan per rule, ~1.5 us for a 100-character statement
against ~13 us for the same rules as Python regular expressions), except the special statements
read first and the repeated-UNION rule, whose back-reference stays a regular expression here.
"""

from __future__ import annotations

import hashlib
import re

from perflab.digest import _fingerprint

MYSQLDUMP = re.compile(r"\ASELECT /\*!40001 SQL_NO_CACHE \*/ \* FROM `")
TOOLKIT = re.compile(r"/\*\w+\.\w+:[0-9]/[0-9]\*/")
CALL = re.compile(r"\A\s*(call\s+\S+)\(", re.I)
UNION = re.compile(r"\b(select\s.*?)(?:(\sunion(?:\sall)?)\s\1)+")


def special(query: str) -> str | None:
    """pt's answer for the statements its rules read before all others (mysqldump's and the
    toolkit's own, administrator commands, CALL), or None for every other statement."""
    if MYSQLDUMP.match(query):
        return "mysqldump"
    if "/*" in query and TOOLKIT.search(query):
        return "percona-toolkit"
    if query.startswith("administrator command: "):
        return query
    call = CALL.match(query)
    return call.group(1).lower() if call else None


def fingerprint(query: str) -> str:
    found = special(query)
    if found is not None:
        return found
    insert = query[:6].upper() == "INSERT" or query[:7].upper() == "REPLACE"
    result = _fingerprint.fingerprint(query, insert)
    if result is None:  # the statement holds `union`
        result = _fingerprint.tail(UNION.sub(r"\1 /*repeat\2*/", _fingerprint.core(query, insert)))
    return result


def query_id(fingerprint_text: str) -> str:
    """pt-query-digest's query ID: 0x + the last 16 hex digits of MD5, upper case."""
    return "0x" + hashlib.md5(fingerprint_text.encode()).hexdigest()[-16:].upper()
