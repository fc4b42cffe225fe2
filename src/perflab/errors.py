"""The one error type for user mistakes: bad plans, unknown variables, servers that won't start.

Every failure a user can cause (a bad plan, an unknown variable, an out-of-range value, a server
that will not start, a bad command-line value, an unreadable or unwritable file) is raised as a
`PerflabError` where the value is parsed or first used, before any server starts when it can
be; it is never made by catching every exception late.

- `message`: one line saying what is wrong, naming the plan key, option or file;
- `hint`: one line saying how to fix it (the values allowed, the option or file to change, the
  package to install), given whenever the message does not already say it ("(allowed: 0 to
  64)", "e.g. [1, 2, 4]"): a hint that repeats the message is noise;
- `detail`: more lines the user needs to see, e.g. the tail of a server's error log;
- `option`: the argument of perflab's Python API the message is about ("budget", "server"),
  named as the API names it; the CLI shows its own flag for it beside the message, so that the
  core never words its errors in command-line flags.
"""


class PerflabError(Exception):
    """A problem the user can fix. The CLI prints it in one or two lines, never a traceback."""

    def __init__(self, message: str, hint: str | None = None, detail: str | None = None,
                 option: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail  # e.g. the tail of a server error log
        self.option = option  # the API argument at fault, for the CLI to name its flag

    def __str__(self) -> str:
        return self.message


def error_text(exc: Exception) -> str:
    """What a failed point stores: the message, and the detail (a log tail) under it."""
    detail = getattr(exc, "detail", None)
    return f"{exc}\n{detail}" if detail else str(exc)
