"""Python binding of librlstore, the durable SQLite-backed rate limiter.

    import rlstore

    with rlstore.Limiter.open("/var/lib/myapp/limits.db") as limiter:
        r = limiter.check("signup", client_ip)
        if not r.allowed:
            return 429, r.headers()          # RateLimit, Retry-After, ...

A pure ctypes binding over the shared library librlstore.so.0: no compiler
needed.  The library is found through the environment variable RLSTORE_LIB
(a path), else by its SONAME through the dynamic linker, else through
ctypes.util.find_library("rlstore").

Failures raise rlstore.Error, whose .name is the library's code name
("EKEY", "EBUSY", ...) and .message the detail, with one exception that
is the C library's contract: when check(), peek() or reserve() cannot ask
the database (busy, I/O error, disk full, read-only, no rules...), the
failure policy decides (the action's on_error, else the rule file's
defaults.on_error, else the on_error of Limiter.open) and the call returns
that decision: a Result with reason "degraded" whose .error is the
rlstore.Error that happened.  An application that does not look at .error
behaves as configured; one that does can log it.  Invalid input (EKEY,
ECOST, ETIME, ENOACTION, EINVAL) and a closed Limiter (EMISUSE) raise:
those are the caller's bugs, and Error.result holds the denying Result.

A Limiter may be shared by threads: calls on one Limiter are serialised
(the C handle is used by one thread at a time).  For parallel checks open
one Limiter per thread; opening is cheap.  See librlstore(3) and
docs/GUIDE.md for the semantics.
"""

import ctypes
import dataclasses
import threading
import time
from typing import List, Optional, Union

from . import _ffi
from ._ffi import LibraryNotFound

__all__ = ["Limiter", "Result", "Reservation", "Error", "LibraryNotFound",
           "library_version", "now_ms", "RESERVE_TTL_DEFAULT_MS"]
__version__ = "0.2.0"

RESERVE_TTL_DEFAULT_MS = 60000
DURABILITY = {"normal": 0, "full": 1}
ON_ERROR = {"deny": 0, "allow": 1}
# Errors of the caller's input (or a closed Limiter): raised by check(),
# peek() and reserve().  Every other error is a failure of the database or
# its rules, which the failure policy answers (see the module's docstring).
_INPUT_ERRORS = frozenset(("EINVAL", "EKEY", "ECOST", "ETIME", "ENOACTION", "EMISUSE"))

Key = Union[str, bytes]


def library_version() -> str:
    """The version of the loaded librlstore, such as "0.1.0"."""
    return _ffi.get().rls_version_string().decode()


class Error(Exception):
    """A librlstore error.

    code     the numeric code (stable, see rlstore.h)
    name     its symbolic name without prefix: "EKEY", "ENOACTION", ...
    message  the detail: rls_errmsg() of the call, else rls_strerror()
    result   for check/peek/reserve refused for their input: the denying
             Result the library filled (reason "degraded"); otherwise None.
             (A database failure in those calls is not raised: the call
             returns the failure policy's Result, with this Error in
             Result.error.)
    """

    def __init__(self, code: int, message: str = "", result: "Optional[Result]" = None):
        lib = _ffi.get()
        self.code = code
        self.name = lib.rls_errname(code).decode()
        self.message = message or lib.rls_strerror(code).decode()
        self.result = result
        super().__init__("%s: %s" % (self.name, self.message))


@dataclasses.dataclass(frozen=True)
class Result:
    """The outcome of a check, for its deciding limit (see rls_check(3)).

    Times are milliseconds; retry_after_ms is -1 when the request can never
    be admitted (cost above capacity, a block forever).  error is None,
    or, when the database could not decide and the failure policy did
    (reason "degraded"), the rlstore.Error that happened.
    """

    allowed: bool
    reason: str          # "ok", "limit", "blocked", "cost_exceeds_limit", "shadow", "degraded",
    #                      "batch" (check_many: admissible, not charged: another item denied)
    limit: int
    remaining: int
    reset_ms: int
    retry_after_ms: int
    delay_ms: int
    window_ms: int
    rule: str
    error: "Optional[Error]" = dataclasses.field(default=None, compare=False)

    @property
    def degraded(self) -> bool:
        """True when the failure policy decided, not the limits."""
        return self.reason == "degraded"

    @classmethod
    def _from_c(cls, r: _ffi.CResult) -> "Result":
        lib = _ffi.get()
        return cls(bool(r.allowed), lib.rls_reason_name(r.reason).decode(), r.limit,
                   r.remaining, r.reset_ms, r.retry_after_ms, r.delay_ms, r.window_ms,
                   r.rule.decode("utf-8", "replace"))

    def _to_c(self) -> _ffi.CResult:
        return _ffi.CResult(int(self.allowed), _reason_codes().get(self.reason, 0), self.limit,
                            self.remaining, self.reset_ms, self.retry_after_ms,
                            self.delay_ms, self.window_ms,
                            self.rule.encode()[:_ffi.NAME_MAX])

    def headers(self, policy: Optional[str] = None) -> dict:
        """The HTTP response headers for this result, as rls_format_headers()
        writes them: RateLimit-Policy, RateLimit and, when denied with a
        known wait, Retry-After.  policy names the policy (default: the
        deciding rule)."""
        c = self._to_c()
        pol = policy.encode() if policy is not None else None
        lib = _ffi.get()
        n = lib.rls_format_headers(ctypes.byref(c), pol, None, 0)
        if n < 0:
            raise ValueError("cannot format headers for %r" % (self,))
        buf = ctypes.create_string_buffer(n + 1)
        lib.rls_format_headers(ctypes.byref(c), pol, buf, n + 1)
        out = {}
        for line in buf.value.decode().split("\r\n"):
            if line:
                k, v = line.split(": ", 1)
                out[k] = v
        return out


@dataclasses.dataclass(frozen=True)
class Reservation:
    """What reserve() returns: the decision and, if admitted, the id to
    commit or cancel (None when denied, or admitted only by the failure
    policy, which needs neither)."""

    id: Optional[int]
    result: Result

    @property
    def allowed(self) -> bool:
        return self.result.allowed


_reasons: dict = {}


def _reason_codes() -> dict:
    """{"ok": 0, "limit": 1, ...} from the library's own names."""
    if not _reasons:
        lib = _ffi.get()
        for i in range(16):
            _reasons.setdefault(lib.rls_reason_name(i).decode(), i)
    return _reasons


def _key(k: Key, what: str = "key") -> bytes:
    b = k.encode() if isinstance(k, str) else bytes(k)
    if b"\0" in b:
        raise Error(_code("EKEY") if what == "key" else _code("EINVAL"),
                    "%s contains a NUL byte" % what)
    return b


def _code(name: str) -> int:
    lib = _ffi.get()
    for i in range(64):
        if lib.rls_errname(i).decode() == name:
            return i
    raise KeyError(name)


class Limiter:
    """An open rlstore database (an rls_db handle)."""

    def __init__(self, handle: int, path: str):
        self._db = ctypes.c_void_p(handle)
        self._lock = threading.Lock()
        self.path = path

    @classmethod
    def open(cls, path: str, *, busy_timeout_ms: Optional[int] = None,
             durability: Optional[str] = None, on_error: Optional[str] = None,
             read_only: bool = False, create: bool = True,
             file_mode: Optional[int] = None, max_key_len: Optional[int] = None,
             tool: str = "python") -> "Limiter":
        """Opens (creating and migrating it if needed) the database at path.

        durability: "normal" or "full"; on_error: "deny" or "allow" (the
        failure policy when the rules do not set one); file_mode of a new
        file (default 0o600); tool: the name in the audit log."""
        lib = _ffi.get()
        opt = _ffi.Options()
        lib.rls_options_init(ctypes.byref(opt))
        if busy_timeout_ms is not None:
            opt.busy_timeout_ms = busy_timeout_ms
        if durability is not None:
            opt.durability = DURABILITY[durability]
        if on_error is not None:
            opt.on_error = ON_ERROR[on_error]
        opt.read_only = int(read_only)
        opt.create = int(create)
        if file_mode is not None:
            opt.file_mode = file_mode
        if max_key_len is not None:
            opt.max_key_len = max_key_len
        tool_b = tool.encode()
        opt.tool = tool_b
        db = ctypes.c_void_p()
        rc = lib.rls_open(ctypes.byref(db), _key(str(path), "path"), ctypes.byref(opt))
        if rc != 0:
            raise Error(rc, lib.rls_errmsg(None).decode("utf-8", "replace"))
        return cls(db.value, str(path))

    # -- lifetime -----------------------------------------------------------
    def close(self) -> None:
        """Closes the handle; further calls raise Error EMISUSE.  Idempotent."""
        with self._lock:
            if self._db:
                _ffi.get().rls_close(self._db)
                self._db = None

    def __enter__(self) -> "Limiter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def _handle(self):
        if not self._db:
            raise Error(_code("EMISUSE"), "the Limiter is closed")
        return self._db

    def _fail(self, rc: int, result: Optional[Result] = None) -> Error:
        msg = _ffi.get().rls_errmsg(self._db).decode("utf-8", "replace")
        return Error(rc, msg, result)

    # -- checks ---------------------------------------------------------------
    def _decide(self, fn: str, action: str, key: Key, cost: int,
                now_ms: Optional[int]) -> Result:
        lib = _ffi.get()
        r = _ffi.CResult()
        a, k = _key(action, "action"), _key(key)
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = getattr(lib, fn)(db, a, k, cost, ctypes.byref(r))
            else:
                rc = getattr(lib, fn + "_at")(db, a, k, cost, now_ms, ctypes.byref(r))
            res = self._policy(rc, Result._from_c(r))
        return res

    def _policy(self, rc: int, res: Result) -> Result:
        """res as the library filled it; on an error, raises it if it is
        the caller's, else returns res carrying it (the failure policy's
        decision)."""
        if rc == 0:
            return res
        err = self._fail(rc, res)
        if err.name in _INPUT_ERRORS:
            raise err
        return dataclasses.replace(res, error=err)

    def check(self, action: str, key: Key, cost: int = 1, *,
              now_ms: Optional[int] = None) -> Result:
        """Checks a request and, if every limit of the action admits it,
        charges it.  A denial is not an error: look at Result.allowed.
        When the database cannot decide, the failure policy does: the
        Result has reason "degraded" and .error set (nothing is raised)."""
        return self._decide("rls_check", action, key, cost, now_ms)

    def check_many(self, items, *, now_ms: Optional[int] = None) -> "List[Result]":
        """Checks several requests, each (action, key) or (action, key,
        cost), in one transaction: all are charged if every one is
        admitted, none otherwise (rls_check_many(3)).  Returns one Result
        per item; an item admissible itself but not charged because
        another was denied has allowed False and reason "batch".  Errors
        as check(); an invalid item's message names its index."""
        lib = _ffi.get()
        reqs = [tuple(it) for it in items]
        if len(reqs) > _ffi.BATCH_MAX:
            raise Error(_code("EINVAL"), "a batch of %d items is more than %d"
                        % (len(reqs), _ffi.BATCH_MAX))
        if not reqs:
            return []
        citems = (_ffi.CItem * len(reqs))()
        for i, it in enumerate(reqs):
            if len(it) not in (2, 3):
                raise TypeError("item %d: (action, key) or (action, key, cost)" % i)
            citems[i] = _ffi.CItem(_key(it[0], "action"), _key(it[1]),
                                   it[2] if len(it) == 3 else 1)
        res = (_ffi.CResult * len(reqs))()
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = lib.rls_check_many(db, citems, len(reqs), res)
            else:
                rc = lib.rls_check_many_at(db, citems, len(reqs), now_ms, res)
            got = [Result._from_c(r) for r in res]
            if rc == 0:
                return got
            err = self._fail(rc, got[0])
            if err.name in _INPUT_ERRORS:
                raise err
            return [dataclasses.replace(r, error=err) for r in got]

    def peek(self, action: str, key: Key, cost: int = 1, *,
             now_ms: Optional[int] = None) -> Result:
        """As check(), charging nothing: would the request pass?"""
        return self._decide("rls_peek", action, key, cost, now_ms)

    def refund(self, action: str, key: Key, cost: int = 1, *,
               now_ms: Optional[int] = None) -> None:
        """Gives cost units back to every limit of the action for key."""
        lib = _ffi.get()
        a, k = _key(action, "action"), _key(key)
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = lib.rls_refund(db, a, k, cost)
            else:
                rc = lib.rls_refund_at(db, a, k, cost, now_ms)
            if rc != 0:
                raise self._fail(rc)

    # -- reservations ---------------------------------------------------------
    def reserve(self, action: str, key: Key, cost: int = 1, *,
                ttl_ms: int = RESERVE_TTL_DEFAULT_MS,
                now_ms: Optional[int] = None) -> Reservation:
        """Decides and charges like check(); if admitted, the charge stays
        pending until commit() or cancel(), and is refunded by itself after
        ttl_ms.  Returns a Reservation (id None when denied)."""
        lib = _ffi.get()
        r = _ffi.CResult()
        rid = ctypes.c_int64(0)
        a, k = _key(action, "action"), _key(key)
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = lib.rls_reserve(db, a, k, cost, ttl_ms, ctypes.byref(rid), ctypes.byref(r))
            else:
                rc = lib.rls_reserve_at(db, a, k, cost, ttl_ms, now_ms, ctypes.byref(rid),
                                        ctypes.byref(r))
            res = self._policy(rc, Result._from_c(r))
        return Reservation(rid.value or None, res)

    def _resolve(self, fn: str, reservation: Union[int, Reservation],
                 now_ms: Optional[int]) -> None:
        rid = reservation.id if isinstance(reservation, Reservation) else reservation
        if rid is None:
            return  # denied, or admitted by the failure policy: nothing pending
        lib = _ffi.get()
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = getattr(lib, fn)(db, rid)
            else:
                rc = getattr(lib, fn + "_at")(db, rid, now_ms)
            if rc != 0:
                raise self._fail(rc)

    def commit(self, reservation: Union[int, Reservation], *,
               now_ms: Optional[int] = None) -> None:
        """Makes a reservation's charge final.  Error ENOTFOUND for an
        unknown or resolved one, EEXPIRED for one past its TTL (refunded)."""
        self._resolve("rls_commit", reservation, now_ms)

    def cancel(self, reservation: Union[int, Reservation], *,
               now_ms: Optional[int] = None) -> None:
        """Cancels a reservation and refunds its charge."""
        self._resolve("rls_cancel", reservation, now_ms)

    # -- rules ----------------------------------------------------------------
    def rules_apply(self, yaml: Union[str, bytes], *, name: Optional[str] = None,
                    comment: Optional[str] = None,
                    now_ms: Optional[int] = None) -> int:
        """Applies a YAML rule set (rlstore.yaml(5)) as a new version and
        returns its number.  Error ECONFIG names line and column."""
        lib = _ffi.get()
        y = yaml.encode() if isinstance(yaml, str) else bytes(yaml)
        n = name.encode() if name is not None else None
        c = comment.encode() if comment is not None else None
        ver = ctypes.c_int64(0)
        with self._lock:
            db = self._handle()
            if now_ms is None:
                rc = lib.rls_rules_apply(db, y, len(y), n, c, ctypes.byref(ver))
            else:
                rc = lib.rls_rules_apply_at(db, y, len(y), n, c, now_ms, ctypes.byref(ver))
            if rc != 0:
                raise self._fail(rc)
        return ver.value


def now_ms() -> int:
    """The current time as the library counts it: ms since the Unix epoch."""
    return time.time_ns() // 1000000
