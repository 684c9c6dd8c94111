"""The one error type loading raises for bad input: its message is the line the user sees."""


class TraceError(ValueError):
    """A file or directory that cannot be loaded; the message names it and says why."""
