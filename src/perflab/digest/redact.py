"""What a digest may show of a statement: never a credential, and with --redact no literal.

Logs hold passwords: CREATE/ALTER USER and GRANT ... IDENTIFIED BY 'x' (or IDENTIFIED WITH a
plugin AS/USING 'x'), SET PASSWORD ... = PASSWORD('x') or = 'hash', PASSWORD('x') and
OLD_PASSWORD('x') anywhere, CHANGE MASTER TO MASTER_PASSWORD = 'x', CREATE SERVER ... OPTIONS
(PASSWORD 'x'), and the keys given to the encryption functions. Every such literal is replaced
by '<redacted>' in every text a digest keeps (examples, findings, malformed lines, the values a
workload file takes), before it is cut to length, so that a cut literal cannot escape the
pattern. An unterminated literal (a damaged log) counts to the end of the text.
"""

from __future__ import annotations

import re

MASK = "'<redacted>'"
_LITERAL = r"""(?:'(?:[^'\\]|\\.|'')*(?:'|$)|"(?:[^"\\]|\\.|"")*(?:"|$))"""
_SECRETS = re.compile(
    rf"""(?isx)
    (?P<lead>
        \bidentified\s+(?:(?:with|via)\s+[`'"]?\w+[`'"]?\s+)?(?:by|as|using)\s+(?:password\s*\(\s*)?
      | \b(?:old_)?password\s*\(\s*
      | \bset\s+password\b[^=;]*=\s*
      | \bmaster_password\s*=\s*
      | \bpassword\s+(?=['"])
    )
    {_LITERAL}
    """)
# Functions whose arguments include a key: every literal of a statement that calls one goes.
_KEYED = re.compile(r"(?i)\b(?:aes_encrypt|aes_decrypt|des_encrypt|des_decrypt|encrypt|encode|"
                    r"decode)\s*\(")
_ANY_LITERAL = re.compile(_LITERAL)
_NUMBER = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?:e[+-]?\d+)?(?![\w.])", re.I)
_HINTS = ("identified", "password", "crypt", "code")  # cheap test before the patterns


def redact(text: str) -> str:
    """The statement without its credentials."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _HINTS):
        return text
    if _KEYED.search(text):
        return _ANY_LITERAL.sub(MASK, text)
    return _SECRETS.sub(lambda m: m.group("lead") + MASK, text)


def no_literals(text: str) -> str:
    """--redact: every string and number replaced by ? (logs that hold personal data)."""
    return _NUMBER.sub("?", _ANY_LITERAL.sub("?", text))


def shown(text: str, limit: int, literals: bool = True) -> str:
    """A statement as a digest may show it: credentials masked (and with `literals` False,
    every literal), then cut to `limit` characters."""
    text = redact(text) if literals else no_literals(text)
    return text[:limit]
