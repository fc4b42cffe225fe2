"""The one error type for user mistakes: bad plans, unknown variables, servers that won't start."""


class PerflabError(Exception):
    """A problem the user can fix. The CLI prints it in one or two lines, never a traceback."""

    def __init__(self, message: str, hint: str | None = None, detail: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint
        self.detail = detail  # e.g. the tail of a server error log

    def __str__(self) -> str:
        return self.message
