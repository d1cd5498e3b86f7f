"""The exceptions of the rlstore binding: one class per RLS_E* code of the
library's error table (include/rlstore.h, rls_strerror(3)), all under
rlstore.Error.

    Error                      every library error: .code, .name, .message
      InputError(ValueError)   the caller's input; raised by check() too
        InvalidArgument        EINVAL
        InvalidKey             EKEY      (also: a key that is not str/bytes)
        InvalidCost            ECOST
        TimeOutOfRange         ETIME
        UnknownAction          ENOACTION
      StorageFailure           the database could not answer; check(),
        OutOfMemory            ENOMEM     peek() and reserve() do not raise
        ReadOnly               EREADONLY  these: the failure policy decides
        Busy                   EBUSY      and the Result carries the error
        IOFailure              EIO
        StorageFull            EFULL
        Corrupt                ECORRUPT
        StorageError           ESTORAGE
        NoRules                ENORULES
      NotFound(LookupError)    ENOTFOUND
      CannotOpen               ECANTOPEN
      IsADirectory             EISDIR
      NotADatabase             ENOTDB
      NewerDatabase            ENEWER
      ConfigError              ECONFIG
      ReservationExpired       EEXPIRED
      Misuse                   EMISUSE   (a closed Limiter)
      UnsafeDatabase           EUNSAFE
      Conflict                 ECONFLICT
      WrongRole                EROLE
      OldSchema                EOLDSCHEMA (no_upgrade: run rls_migrate / rlctl migrate)

The table below is the library's, by number: codes are only ever appended
(rlstore.h), so it needs no library to build or to unpickle an exception.
A code this binding does not know yet (a newer library) raises Error itself.
Every exception pickles and unpickles to the same class, code, message and
result (for multiprocessing and task queues).
"""

from typing import Any, Dict, Optional, Tuple, Type

# (name, text) by code, as RLS_ERRNO_MAP in include/rlstore.h.
ERRNO_TABLE: Tuple[Tuple[str, str], ...] = (
    ("OK", "success"),
    ("EINVAL", "invalid argument"),
    ("ENOMEM", "out of memory"),
    ("EKEY", "invalid key: empty, too long or not valid for the action"),
    ("ECOST", "invalid cost: must be between 1 and RLS_COST_MAX"),
    ("ETIME", "time out of range"),
    ("ENOACTION", "unknown action"),
    ("ENOTFOUND", "not found"),
    ("ECANTOPEN", "cannot open database file"),
    ("EISDIR", "database path is a directory"),
    ("ENOTDB", "file is not an rlstore database"),
    ("ENEWER", "database schema is newer than this library"),
    ("EREADONLY", "database is read-only"),
    ("EBUSY", "database is busy: lock wait timed out"),
    ("EIO", "storage I/O error"),
    ("EFULL", "disk or database full"),
    ("ECORRUPT", "database is corrupt"),
    ("ESTORAGE", "storage error"),
    ("ECONFIG", "invalid configuration"),
    ("ENORULES", "no rules have been applied to this database"),
    ("EEXPIRED", "reservation expired and was refunded"),
    ("EMISUSE", "library misused: handle not usable"),
    ("EUNSAFE", "database contains objects rlstore did not create"),
    ("ECONFLICT", "the rules changed since the version the change was based on"),
    ("EROLE", "database file has another role (one file, rules or counters) or pair"),
    ("EOLDSCHEMA", "database schema is older than this library and no_upgrade is set"),
)
CODES: Dict[str, int] = {name: i for i, (name, _) in enumerate(ERRNO_TABLE)}


class Error(Exception):
    """A librlstore error.

    code     the numeric code (stable: RLS_E* of rlstore.h)
    name     its symbolic name without prefix: "EKEY", "ENOACTION", ...
    message  the detail: rls_errmsg() of the call, else the code's text
    result   for check/peek/reserve refused for their input: the denying
             Result the library filled (reason "degraded"); else None
    """

    code: int = -1

    def __init__(self, message: str = "", *, code: Optional[int] = None,
                 result: Any = None) -> None:
        if code is None:
            code = type(self).code
        self.code = code
        self.name = ERRNO_TABLE[code][0] if 0 <= code < len(ERRNO_TABLE) else "UNKNOWN"
        if not message:
            message = ERRNO_TABLE[code][1] if 0 <= code < len(ERRNO_TABLE) else \
                "unknown error %d" % code
        self.message = message
        self.result = result
        super().__init__("%s: %s" % (self.name, message))

    def __reduce__(self) -> Tuple[Any, Tuple[int, str, Any]]:
        return (error_for, (self.code, self.message, self.result))


class InputError(Error, ValueError):
    """The caller's input is invalid: raised by every call, check() too."""


class StorageFailure(Error):
    """The database could not answer.  check(), peek() and reserve() do not
    raise these: the failure policy decides and Result.error holds it."""


class InvalidArgument(InputError):
    """EINVAL: invalid argument."""

    code = 1


class InvalidKey(InputError):
    """EKEY: empty, too long, not str/bytes, or not valid for the action's key kind."""

    code = 3


class InvalidCost(InputError):
    """ECOST: cost outside 1..RLS_COST_MAX."""

    code = 4


class TimeOutOfRange(InputError):
    """ETIME: time out of range."""

    code = 5


class UnknownAction(InputError):
    """ENOACTION: the action is not in the active rules."""

    code = 6


class OutOfMemory(StorageFailure):
    """ENOMEM: out of memory."""

    code = 2


class ReadOnly(StorageFailure):
    """EREADONLY: the database is read-only."""

    code = 12


class Busy(StorageFailure):
    """EBUSY: the lock wait timed out."""

    code = 13


class IOFailure(StorageFailure):
    """EIO: storage I/O error."""

    code = 14


class StorageFull(StorageFailure):
    """EFULL: disk or database full."""

    code = 15


class Corrupt(StorageFailure):
    """ECORRUPT: the database is corrupt."""

    code = 16


class StorageError(StorageFailure):
    """ESTORAGE: storage error."""

    code = 17


class NoRules(StorageFailure):
    """ENORULES: no rules applied yet."""

    code = 19


class NotFound(Error, LookupError):
    """ENOTFOUND: no such row, version or id."""

    code = 7


class CannotOpen(Error):
    """ECANTOPEN: cannot open the database."""

    code = 8


class IsADirectory(Error):
    """EISDIR: the path is a directory."""

    code = 9


class NotADatabase(Error):
    """ENOTDB: not an rlstore database."""

    code = 10


class NewerDatabase(Error):
    """ENEWER: the database's schema is newer than this library."""

    code = 11


class ConfigError(Error):
    """ECONFIG: invalid rules; the message names line and column."""

    code = 18


class ReservationExpired(Error):
    """EEXPIRED: the reservation expired and was refunded."""

    code = 20


class Misuse(Error):
    """EMISUSE: the handle is not usable (closed)."""

    code = 21


class UnsafeDatabase(Error):
    """EUNSAFE: the database holds objects rlstore did not create."""

    code = 22


class Conflict(Error):
    """ECONFLICT: the rules changed since the version the change was based on."""

    code = 23


class WrongRole(Error):
    """EROLE: the file has another role (one file, rules or counters) or pair."""

    code = 24


class OldSchema(Error):
    """EOLDSCHEMA: the schema is older than this library and no_upgrade is set:
    upgrade it once with rlctl migrate."""

    code = 25


BY_CODE: Dict[int, Type[Error]] = {c.code: c for c in (
    InvalidArgument, InvalidKey, InvalidCost, TimeOutOfRange, UnknownAction, OutOfMemory,
    ReadOnly, Busy, IOFailure, StorageFull, Corrupt, StorageError, NoRules, NotFound,
    CannotOpen, IsADirectory, NotADatabase, NewerDatabase, ConfigError, ReservationExpired,
    Misuse, UnsafeDatabase, Conflict, WrongRole, OldSchema)}


def error_for(code: int, message: str = "", result: Any = None) -> Error:
    """The exception of a library code: its class, else Error (a code newer
    than this binding)."""
    cls = BY_CODE.get(code, Error)
    return cls(message, code=code, result=result)


__all__ = ["Error", "InputError", "StorageFailure", "error_for", "ERRNO_TABLE", "CODES",
           "Busy", "CannotOpen", "ConfigError", "Conflict", "Corrupt", "IOFailure",
           "InvalidArgument", "InvalidCost", "InvalidKey", "IsADirectory", "Misuse",
           "NewerDatabase", "NoRules", "NotADatabase", "NotFound", "OldSchema", "OutOfMemory",
           "ReadOnly", "ReservationExpired", "StorageError", "StorageFull",
           "TimeOutOfRange", "UnknownAction", "UnsafeDatabase", "WrongRole"]
