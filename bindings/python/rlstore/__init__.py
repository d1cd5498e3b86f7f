"""Python binding of librlstore, the durable SQLite- or PostgreSQL-backed
rate limiter.

    import rlstore

    limiter = rlstore.Limiter("/var/lib/myapp/limits.db")
    r = limiter.check("signup", client_ip)
    if not r.allowed:
        return 429, r.headers()          # RateLimit, Retry-After, ...

A pure ctypes binding over the shared library librlstore.so.0: no
compiler needed.  The library is found through the environment variable
RLSTORE_LIB (a path), else by its SONAME through the dynamic linker, else
through ctypes.util.find_library("rlstore").

Errors are the library's, one exception class per code under
rlstore.Error (see rlstore.errors), with one exception that is the C
library's contract: when check(), peek() or reserve() cannot ask the
database (busy, I/O error, disk full, read-only, no rules...), the failure
policy decides (the action's on_error, else the rule file's
defaults.on_error, else the Limiter's on_error) and the call returns that
decision: a Result with reason "degraded" whose .error is the exception
that happened.  Invalid input (InvalidKey, InvalidCost, UnknownAction,
TimeOutOfRange, InvalidArgument) and a closed Limiter (Misuse) raise.

Also here: rlstore.aio (AsyncLimiter, for asyncio), rlstore.wsgi and
rlstore.asgi (middlewares), rlstore.flask and rlstore.django (decorators,
a Django middleware), rlstore.shorthand ("20/day" to rules YAML).
See bindings/python/README.md, librlstore(3) and docs/GUIDE.md.
"""

import ctypes

from . import _ffi
from ._ffi import LibraryNotFound
from ._limiter import RESERVE_TTL_DEFAULT_MS, Limiter, Reservation, now_ms
from ._types import Explanation, Key, Result, Row, RulesDescription, Stats, text_in
from .errors import (CODES, ERRNO_TABLE, Error, InputError, StorageFailure, error_for,
                     Busy, CannotOpen, ConfigError, Conflict, Corrupt, IOFailure,
                     InvalidArgument, InvalidCost, InvalidKey, IsADirectory, Misuse,
                     NewerDatabase, NoRules, NotADatabase, NotFound, OutOfMemory, ReadOnly,
                     ReservationExpired, StorageError, StorageFull, TimeOutOfRange,
                     UnknownAction, UnsafeDatabase, WrongRole, OldSchema)

__version__ = "0.2.0"

__all__ = ["Limiter", "Result", "Reservation", "Explanation", "Stats", "RulesDescription",
           "LibraryNotFound", "library_version", "now_ms", "parse_duration",
           "parse_time", "format_time", "escape_key", "RESERVE_TTL_DEFAULT_MS", "Key",
           "Row", "Error", "InputError", "StorageFailure", "error_for", "ERRNO_TABLE",
           "CODES", "Busy", "CannotOpen", "ConfigError", "Conflict", "Corrupt",
           "IOFailure", "InvalidArgument", "InvalidCost", "InvalidKey", "IsADirectory",
           "Misuse", "NewerDatabase", "NoRules", "NotADatabase", "NotFound",
           "OutOfMemory", "ReadOnly", "ReservationExpired", "StorageError",
           "StorageFull", "TimeOutOfRange", "UnknownAction", "UnsafeDatabase",
           "WrongRole", "OldSchema"]


def library_version() -> str:
    """The version of the loaded librlstore, such as "0.1.0"."""
    return str(_ffi.get().rls_version_string().decode())


def parse_duration(text: str) -> int:
    """"250ms", "10s", "1h30m", "1d", "1w", "1mo" (30 days) as ms."""
    ms = ctypes.c_int64(0)
    if _ffi.get().rls_duration_parse(text_in(text, "duration"), ctypes.byref(ms)) != 0:
        raise InvalidArgument("invalid duration %r" % (text,))
    return ms.value


def parse_time(text: str) -> int:
    """Epoch ms ("1767225600000") or ISO-8601 UTC ("2026-11-21T10:00:00Z",
    "2026-11-21") as ms since the epoch."""
    ms = ctypes.c_int64(0)
    if _ffi.get().rls_time_parse(text_in(text, "time"), ctypes.byref(ms)) != 0:
        raise InvalidArgument("invalid time %r" % (text,))
    return ms.value


def format_time(ms: int) -> str:
    """ms since the epoch as "2026-11-21T10:00:00.250Z"."""
    from ._types import time_in
    buf = ctypes.create_string_buffer(64)
    if _ffi.get().rls_time_format(time_in(ms, "ms"), buf, len(buf)) < 0:
        raise InvalidArgument("cannot format time %r" % (ms,))
    return buf.value.decode()


def escape_key(key: Key) -> str:
    """key escaped for display (control bytes, invalid UTF-8 and the
    characters that hide or reorder text as \\xHH), as rlctl shows it."""
    from ._types import key_in
    k = key_in(key)
    lib = _ffi.get()
    n = lib.rls_key_escape(k, None, 0)
    buf = ctypes.create_string_buffer(n + 1)
    lib.rls_key_escape(k, buf, n + 1)
    return buf.value.decode("utf-8", "replace")
