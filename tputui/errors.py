"""The one error type users see: its message is a single line that says what is wrong.

The CLI prints it as `tputui: error: <message>` with exit code 2; the app shows it as a
notification and keeps running. Every module's user-facing error subclasses it, so callers
catch one type without importing the modules (and their dependencies, e.g. grpc) that raise it.
"""


class UserError(ValueError):
    """Bad input or an unreachable resource, described in one line."""
