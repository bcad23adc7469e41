"""The one error hierarchy of kairos, with stable codes.

Every error a user can see is a :class:`KairosError`. Its ``code`` is stable
(scripts and the API match on it); its message is one line that says what is
wrong and, where possible, what to do. Each class carries the HTTP status the server answers
it with (``http_status``; the wire's table, :data:`kairosd.core.protocol.ERROR_STATUS`, agrees
and a test keeps it so) and the CLI maps codes to exit codes; nothing else should invent error
strings.

    KairosError
    ├── UsageError            bad input from a person or a client   (exit 2)
    │   ├── CronSyntaxError   a cron expression is malformed or never fires
    │   └── InvalidTimeError  a time, zone, duration or interval is unusable
    ├── NotFoundError         no such task/run/item                  (exit 1)
    ├── ConflictError         not now: the task's state forbids it   (exit 1)
    ├── LimitError            a configured limit refuses it (depth)  (exit 1)
    ├── UnavailableError      kairosd is shutting down               (exit 1)
    ├── StoreError            the durable store cannot be used       (exit 1)
    │   ├── StoreCorruptError     unreadable or invalid; left untouched
    │   └── StoreVersionError     written by a newer kairos
    ├── LockHeldError         another kairosd owns the store         (exit 1)
    └── ConfigError           config.toml is unreadable, invalid or unsafe (exit 1)

Must not import anything from kairos or kairosd: it is the leaf every module uses.
"""

from __future__ import annotations

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2
EXIT_NO_DAEMON = 3


class KairosError(Exception):
    """Base class: a failure with a stable ``code`` and a one-line message."""

    code = "internal"
    exit_code = EXIT_FAILURE
    http_status = 500

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class UsageError(KairosError, ValueError):
    code = "usage"
    http_status = 400
    exit_code = EXIT_USAGE


class CronSyntaxError(UsageError):
    """A cron expression is malformed, out of range, or can never fire.

    ``field`` names the cron field at fault ("hour", "day-of-month", ...) or is
    ``None`` when the fault is the expression as a whole.
    """

    code = "cron_syntax"

    def __init__(self, message: str, field: str | None = None) -> None:
        super().__init__(f"{field}: {message}" if field else message)
        self.field = field


class InvalidTimeError(UsageError):
    code = "invalid_time"


class NotFoundError(KairosError, LookupError):
    code = "not_found"
    http_status = 404


class ConflictError(KairosError):
    """The request does not fit the current state (cancel a finished task, send to a running one)."""

    code = "conflict"
    http_status = 409


class LimitError(KairosError):
    """A configured limit refuses the request, e.g. a task started past KAIROS_MAX_DEPTH."""

    code = "limit"
    http_status = 409


class UnavailableError(KairosError):
    code = "unavailable"
    http_status = 503


class StoreError(KairosError):
    code = "store"


class StoreCorruptError(StoreError):
    code = "store_corrupt"


class StoreVersionError(StoreError):
    code = "store_version"


class LockHeldError(KairosError):
    code = "lock_held"
    http_status = 409


class ConfigError(KairosError):
    """The user config file cannot be used; the message names the file and the key.

    kairosd refuses to start on it and never rewrites the file.
    """

    code = "config"
