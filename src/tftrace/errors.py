"""Errors the command line turns into one line and exit code 2."""


class CliError(Exception):
    """Bad input: printed as one line, exit code 2."""
