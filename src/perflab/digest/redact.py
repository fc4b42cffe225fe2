"""What a digest may show of a statement: never a credential, and with --redact no literal.

Logs hold passwords in more forms than IDENTIFIED BY 'x':
- CREATE/ALTER USER and GRANT ... IDENTIFIED BY [PASSWORD] 'x', IDENTIFIED WITH|VIA plugin
  AS|USING 'x' or USING PASSWORD('x'), and each further method of MariaDB's chain
  (... OR ed25519 AS 'x');
- SET PASSWORD ... = 'hash', the old password of ... REPLACE 'old', PASSWORD('x') and every
  function named for passwords (OLD_PASSWORD, VALIDATE_PASSWORD_STRENGTH);
- NAME = 'x' for every name that ends in password or passwd (MASTER_PASSWORD, SOURCE_PASSWORD,
  START REPLICA ... PASSWORD, a column) and for authentication_string; CREATE SERVER ...
  OPTIONS (PASSWORD 'x');
- the keys given to the encryption functions, and whatever a statement naming mysql.user or
  mysql.global_priv holds (a hash, a JSON of auth strings): every literal of such a statement
  goes, numbers and hex included (a key need not be a string; a SELECT of those tables by
  authentication_string leaks as much as an UPDATE).
A secret may be any literal: quoted, N'', X'', B'', after a character set introducer
(_utf8mb4'x'), hex 0x.., or a number; comments may stand between the keywords. What a
fingerprint keeps of a hex literal (0xABCD becomes ?abcd) counts as a literal too.

Each such literal becomes '<redacted>' in every text a digest shows (examples, findings,
fingerprints, malformed lines, the values of a workload file), before it is cut to length, so
that a cut literal cannot escape the pattern. An unterminated literal (a damaged log, a
statement cut by the end of the log) counts to the end of the text. A masked literal keeps its
line breaks, so that lines redacted together (a run of malformed lines) keep their count.
"""

from __future__ import annotations

import re

MASK = "'<redacted>'"
# Comments: a quote in `/* user's */` must not open a literal that runs on into the statement
# (and leave its literals outside one). /*! and /*M! hold statements that run: read as code.
# An unterminated comment, like a literal, runs to the end of the text.
_COMMENT = r"/\*(?!M?!).*?(?:\*/|\Z)|--(?=\s|\Z)[^\n]*|\#[^\n]*"
# What may stand between two keywords: whitespace, and comments closed within 256 characters
# (each keyword would otherwise scan a comment that runs to the end: quadratic time on a
# crafted line). Possessive, since comments could split a gap many ways.
_GAP = r"(?:\s|/\*.{0,256}?\*/|(?:--(?=\s)|\#)[^\n]{0,256}\n)*+"
_STRING = r"""(?:\b[nxb])?(?:'(?:[^'\\]|\\.|'')*\\?(?:'|\Z)|"(?:[^"\\]|\\.|"")*\\?(?:"|\Z))"""
_INTRODUCER = r"(?:(?<![\w$])_[a-z0-9]+\s*)?"
_HEX = r"(?<![\w$.?])(?:0x[0-9a-f]*|0b[01]*|\?[0-9a-f][0-9a-f?]*)(?![\w$.])"  # ?.. fingerprint's
_NUMBER = r"(?<![\w$.])-?\d+(?:\.\d+)?(?:e[-+]?\d+)?(?![\w$.])"
_VALUE = rf"(?:{_INTRODUCER}(?:{_STRING}|{_HEX})|{_NUMBER})"
_LITERAL = re.compile(rf"(?is)(?P<comment>{_COMMENT})|{_VALUE}")
_COMMENT_LITERAL = re.compile(rf"(?is){_VALUE}")

_AUTH_LEAD = rf"\b(?:by|as|using)\b{_GAP}(?:password\b{_GAP}(?:\({_GAP})?)?"
_AUTH = re.compile(rf"(?is)(?P<lead>{_AUTH_LEAD})(?P<value>{_VALUE})")
_PLUGIN = r"[`'\"]?\w++[`'\"]?"
_METHOD = rf"{_PLUGIN}(?:{_GAP}{_AUTH_LEAD}{_VALUE}(?:{_GAP}\))?)?"
_AUTH_CHAIN = re.compile(
    rf"(?is)\bidentified\b{_GAP}(?:{_AUTH_LEAD}{_VALUE}"
    rf"|(?:via|with)\b{_GAP}{_METHOD}(?:{_GAP}or\b{_GAP}{_METHOD})*)")
_SECRETS = re.compile(
    rf"""(?isx)
    (?P<lead>
        \b\w*password\w*{_GAP}\({_GAP}                            # PASSWORD('x'), OLD_PASSWORD(
      | \bset{_GAP}password\b[^=;]{{0,600}}={_GAP}                # SET PASSWORD FOR u@h = 'x'
      | \b(?:\w*pass(?:word|wd)|authentication_string)\b[`"]?{_GAP}:?={_GAP}  # SOURCE_PASSWORD=
      | \b(?:password|replace)\b{_GAP}                            # PASSWORD 'x', REPLACE 'old'
    )
    (?P<value>{_VALUE})
    """)
# Statements whose every literal goes: a keyed function's call, the privilege tables.
_WHOLE = re.compile(
    rf"(?is)\b(?:aes_encrypt|aes_decrypt|des_encrypt|des_decrypt|encrypt|encode|decode){_GAP}\("
    r"|(?<![\w$])`?mysql`?\s*\.\s*`?(?:user|global_priv)\b")
_HINTS = ("identified", "pass", "crypt", "code", "mysql", "authentication_string")


def redact(text: str) -> str:
    """The statement (a fingerprint, a run of log lines) without its credentials."""
    lowered = text.lower()
    if not any(hint in lowered for hint in _HINTS):  # cheap test before the patterns
        return text
    if _WHOLE.search(text):
        return _every_literal(text, MASK)
    text = _AUTH_CHAIN.sub(lambda chain: _AUTH.sub(_masked_value, chain.group()), text)
    return _SECRETS.sub(_masked_value, text)


def no_literals(text: str) -> str:
    """--redact: every literal replaced by ? (logs that hold personal data)."""
    return _every_literal(text, "?")


def shown(text: str, limit: int | None = None, literals: bool = True) -> str:
    """A statement as a digest may show it: credentials masked (and with `literals` False,
    every literal), then cut to `limit` characters."""
    text = redact(text) if literals else no_literals(text)
    return text[:limit]


def _every_literal(text: str, mask: str) -> str:
    def masked(match: re.Match) -> str:
        if match.group("comment"):  # its literals count within the comment alone
            return _COMMENT_LITERAL.sub(lambda inner: _mask(inner.group(), mask), match.group())
        return _mask(match.group(), mask)

    return _LITERAL.sub(masked, text)


def _masked_value(match: re.Match) -> str:
    return match.group("lead") + _mask(match.group("value"), MASK)


def _mask(literal: str, mask: str) -> str:
    """`mask` for `literal`, then the line breaks the literal held."""
    return mask + "\n" * literal.count("\n")
