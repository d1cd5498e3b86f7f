"""Limiter (an open database: the checks, reservations and, through
_admin.AdminMixin, the admin calls) and Reservation.

Threads: the C handle is used by one thread at a time (rlstore.h), so each
Limiter holds a lock around every call into the library; threads may share
one Limiter, and their calls take turns.  For checks in parallel open one
Limiter per thread (opening is cheap).

fork(): the library notices a handle inherited by a child and reopens its
connection there by itself.  What it cannot see is a call of another
thread of the parent still running on the handle at the moment of the
fork: the child would copy a handle in the middle of a call.  So, as
pthread_atfork() prescribes, os.fork() (and multiprocessing's fork) first
takes the lock of every open Limiter, in one order, waits for the calls in
progress to end, and releases the locks in parent and child afterwards.
"""

import ctypes
import logging
import os
import threading
import time
import weakref
from typing import Any, Dict, Iterable, List, Optional, Sequence, Union

from . import _ffi
from . import errors
from ._admin import AdminMixin
from ._types import Key, Result, action_in, cost_in, int_in, key_in, text_in, time_in

log = logging.getLogger("rlstore")

RESERVE_TTL_DEFAULT_MS = 60000
DURABILITY = {"normal": 0, "full": 1}
ON_ERROR = {"deny": 0, "allow": 1}
C_INT_MAX = (1 << 31) - 1

PathLike = Union[str, bytes, "os.PathLike[str]"]


def now_ms() -> int:
    """The current time as the library counts it: ms since the Unix epoch."""
    return time.time_ns() // 1000000


# ---- fork safety -------------------------------------------------------------
_live: "weakref.WeakSet[Limiter]" = weakref.WeakSet()
_held: List[threading.Lock] = []


def _before_fork() -> None:
    for lim in sorted(list(_live), key=id):
        lim._lock.acquire()
        _held.append(lim._lock)


def _after_fork() -> None:
    while _held:
        _held.pop().release()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(before=_before_fork, after_in_parent=_after_fork,
                        after_in_child=_after_fork)


class Reservation:
    """What reserve() returns: the decision and, if admitted, the id of the
    pending charge.  A context manager: the block's normal end commits the
    charge, an exception cancels it (refunds) and goes on:

        with limiter.reserve("signup", ip) as res:
            if not res.allowed:
                return 429
            create_account()          # raises: the sign-up is not counted

    commit() or cancel() inside the block settle it early; the end of the
    block then does nothing.  id is None when denied, or admitted only by
    the failure policy: nothing is pending, and commit/cancel do nothing.
    A reservation made with an explicit now_ms (a test, a replay) is
    settled at that time too unless commit/cancel are given another.
    """

    __slots__ = ("id", "result", "state", "_limiter", "_now_ms", "__weakref__")

    def __init__(self, limiter: "Limiter", rid: Optional[int], result: Result,
                 now_ms: Optional[int] = None):
        self.id = rid
        self.result = result
        # "pending", "committed", "cancelled", "expired", or "none" (no id)
        self.state = "pending" if rid else "none"
        self._limiter = limiter
        self._now_ms = now_ms

    @property
    def allowed(self) -> bool:
        return self.result.allowed

    def commit(self, *, now_ms: Optional[int] = None) -> None:
        self._limiter.commit(self, now_ms=self._now_ms if now_ms is None else now_ms)

    def cancel(self, *, now_ms: Optional[int] = None) -> None:
        self._limiter.cancel(self, now_ms=self._now_ms if now_ms is None else now_ms)

    def __enter__(self) -> "Reservation":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if self.state != "pending":
            return
        if exc_type is None:
            self.commit()
            return
        try:
            self.cancel()
        except errors.Error as e:
            # The block's own exception matters more; the charge comes
            # back by itself when the reservation's TTL ends.
            log.warning("rlstore: cannot cancel reservation %d: %s", self.id, e)

    def __repr__(self) -> str:
        return "Reservation(id=%r, state=%r, result=%r)" % (self.id, self.state, self.result)


class Limiter(AdminMixin):
    """An open rlstore database (an rls_db handle).

        limiter = rlstore.Limiter("limits.db")
        r = limiter.check("signup", "203.0.113.7")

    Opens (creating and migrating it if needed) the SQLite file at path, or
    with a "postgresql://" URI a PostgreSQL database.  Options as
    rls_open(3): busy_timeout_ms (default 5000), durability "normal" or
    "full", on_error "deny" or "allow" (the failure policy when the rules
    set none), read_only, create (default True; False: a missing database
    is CannotOpen), file_mode of a new file (default 0o600), max_key_len
    (1..4096, default 256), tool (the name in the audit log), counters_path
    and rules_read_only (a split deployment), file_group, no_upgrade (never
    migrate: an older schema fails instead).  A database of a newer schema
    is NewerDatabase; a directory IsADirectory; another file NotADatabase.
    """

    def __init__(self, path: PathLike, *, busy_timeout_ms: Optional[int] = None,
                 durability: Optional[str] = None, on_error: Optional[str] = None,
                 read_only: bool = False, create: bool = True,
                 file_mode: Optional[int] = None, max_key_len: Optional[int] = None,
                 tool: str = "python", counters_path: Optional[PathLike] = None,
                 rules_read_only: bool = False, file_group: Optional[str] = None,
                 no_upgrade: bool = False) -> None:
        self._db: Optional[ctypes.c_void_p] = None
        self._lock = threading.Lock()
        self.path = os.fsdecode(path) if isinstance(path, (bytes, os.PathLike)) else path
        lib = _ffi.get()
        opt = _ffi.Options()
        lib.rls_options_init(ctypes.byref(opt))
        if busy_timeout_ms is not None:
            opt.busy_timeout_ms = int_in(busy_timeout_ms, "busy_timeout_ms", lo=0, hi=C_INT_MAX)
        opt.durability = _choice(DURABILITY, durability, "durability", opt.durability)
        opt.on_error = _choice(ON_ERROR, on_error, "on_error", opt.on_error)
        opt.read_only = int(bool(read_only))
        opt.create = int(bool(create))
        if file_mode is not None:
            opt.file_mode = int_in(file_mode, "file_mode", lo=0, hi=0o7777)
        if max_key_len is not None:
            opt.max_key_len = int_in(max_key_len, "max_key_len", lo=0, hi=C_INT_MAX)
        keep = [text_in(tool, "tool")]
        opt.tool = keep[0]
        if counters_path is not None:
            keep.append(text_in(os.fsencode(counters_path), "counters_path"))
            opt.counters_path = keep[-1]
        opt.rules_read_only = int(bool(rules_read_only))
        if file_group is not None:
            keep.append(text_in(str(file_group), "file_group"))
            opt.file_group = keep[-1]
        opt.no_upgrade = int(bool(no_upgrade))
        p = text_in(os.fsencode(path) if not isinstance(path, str) else path, "path")
        db = ctypes.c_void_p()
        rc = lib.rls_open(ctypes.byref(db), p, ctypes.byref(opt))
        if rc != 0:
            raise errors.error_for(rc, lib.rls_errmsg(None).decode("utf-8", "replace"))
        self._db = db
        _live.add(self)

    @classmethod
    def open(cls, path: PathLike, **options: Any) -> "Limiter":
        """The same as Limiter(path, **options)."""
        return cls(path, **options)

    # -- lifetime -------------------------------------------------------------
    def close(self) -> None:
        """Closes the handle; further calls raise Misuse.  Idempotent."""
        with self._lock:
            if self._db:
                _ffi.get().rls_close(self._db)
                self._db = None
        _live.discard(self)

    @property
    def closed(self) -> bool:
        return not self._db

    def __enter__(self) -> "Limiter":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:
            pass

    def __repr__(self) -> str:
        return "<rlstore.Limiter %r%s>" % (self.path, " closed" if self.closed else "")

    # -- calls ----------------------------------------------------------------
    def _handle(self) -> ctypes.c_void_p:
        if not self._db:
            raise errors.Misuse("the Limiter is closed")
        return self._db

    def _fail(self, rc: int, result: Optional[Result] = None) -> errors.Error:
        msg = _ffi.get().rls_errmsg(self._db).decode("utf-8", "replace")
        return errors.error_for(rc, msg, result)

    def _call(self, name: str, *args: Any) -> None:
        """lib.name(db, *args) under the lock; an error raised by name."""
        fn = getattr(_ffi.get(), name)
        with self._lock:
            rc = fn(self._handle(), *args)
            if rc != 0:
                raise self._fail(rc)

    @staticmethod
    def _now(t: Optional[int]) -> int:
        return now_ms() if t is None else time_in(t)

    def _policy(self, rc: int, res: Result) -> Result:
        """res as the library filled it; on an error, raises it when it is
        the caller's (or a closed handle), else returns res carrying it:
        the failure policy's decision."""
        if rc == 0:
            return res
        err = self._fail(rc, res)
        if isinstance(err, (errors.InputError, errors.Misuse)):
            raise err
        return Result(res.allowed, res.reason, res.limit, res.remaining, res.reset_ms,
                      res.retry_after_ms, res.delay_ms, res.window_ms, res.rule, err)

    # -- checks ---------------------------------------------------------------
    def _decide(self, fn: str, action: str, key: Key, cost: int,
                now_ms: Optional[int]) -> Result:
        lib = _ffi.get()
        r = _ffi.CResult()
        a, k, c = action_in(action), key_in(key), cost_in(cost)
        t = None if now_ms is None else time_in(now_ms)
        with self._lock:
            db = self._handle()
            if t is None:
                rc = getattr(lib, fn)(db, a, k, c, ctypes.byref(r))
            else:
                rc = getattr(lib, fn + "_at")(db, a, k, c, t, ctypes.byref(r))
            return self._policy(rc, Result._from_c(r))

    def check(self, action: str, key: Key, cost: int = 1, *,
              now_ms: Optional[int] = None) -> Result:
        """Checks a request and, if every limit of the action admits it,
        charges it.  A denial is not an error: look at Result.allowed.
        When the database cannot decide, the failure policy does: the
        Result has reason "degraded" and .error set (nothing is raised).
        Raises InvalidKey, InvalidCost, UnknownAction, TimeOutOfRange,
        InvalidArgument (bad input) and Misuse (closed)."""
        return self._decide("rls_check", action, key, cost, now_ms)

    def peek(self, action: str, key: Key, cost: int = 1, *,
             now_ms: Optional[int] = None) -> Result:
        """As check(), charging nothing: would the request pass?"""
        return self._decide("rls_peek", action, key, cost, now_ms)

    def check_many(self, items: Iterable[Sequence[Any]], *,
                   now_ms: Optional[int] = None) -> List[Result]:
        """Checks several requests, each (action, key) or (action, key,
        cost), in one transaction: all are charged if every one is
        admitted, none otherwise (rls_check_many(3)).  Returns one Result
        per item; an item admissible itself but not charged because
        another was denied has allowed False and reason "batch".  At most
        64 items.  Errors as check(); an invalid item's message names its
        index."""
        lib = _ffi.get()
        reqs = [tuple(it) for it in items]
        if len(reqs) > _ffi.BATCH_MAX:
            raise errors.InvalidArgument("a batch of %d items is more than %d"
                                         % (len(reqs), _ffi.BATCH_MAX))
        if not reqs:
            return []
        citems = (_ffi.CItem * len(reqs))()
        keep = []
        for i, it in enumerate(reqs):
            if len(it) not in (2, 3):
                raise errors.InvalidArgument("item %d: (action, key) or (action, key, cost)" % i)
            a, k = action_in(it[0]), key_in(it[1])
            keep.append((a, k))
            citems[i] = _ffi.CItem(a, k, cost_in(it[2]) if len(it) == 3 else 1)
        res = (_ffi.CResult * len(reqs))()
        t = None if now_ms is None else time_in(now_ms)
        with self._lock:
            db = self._handle()
            if t is None:
                rc = lib.rls_check_many(db, citems, len(reqs), res)
            else:
                rc = lib.rls_check_many_at(db, citems, len(reqs), t, res)
            got = [Result._from_c(r) for r in res]
            if rc == 0:
                return got
            err = self._fail(rc, got[0])
        if isinstance(err, (errors.InputError, errors.Misuse)):
            raise err
        return [Result._from_c(r, err) for r in res]

    def refund(self, action: str, key: Key, cost: int = 1, *,
               now_ms: Optional[int] = None) -> int:
        """Gives cost units back to every limit of the action for key, as
        charged in the current window; returns the units given back (the
        most any limit got back: less than cost when fewer were in use)."""
        a, k, c = action_in(action), key_in(key), cost_in(cost)
        got = ctypes.c_int64(0)
        if now_ms is None:
            self._call("rls_refund_units", a, k, c, ctypes.byref(got))
        else:
            self._call("rls_refund_units_at", a, k, c, time_in(now_ms), ctypes.byref(got))
        return got.value

    # -- reservations ---------------------------------------------------------
    def reserve(self, action: str, key: Key, cost: int = 1, *,
                ttl_ms: int = RESERVE_TTL_DEFAULT_MS,
                now_ms: Optional[int] = None) -> Reservation:
        """Decides and charges like check(); if admitted, the charge stays
        pending until commit() or cancel(), and is refunded by itself after
        ttl_ms.  Returns a Reservation (a context manager: commit on
        success, cancel on an exception)."""
        lib = _ffi.get()
        r = _ffi.CResult()
        rid = ctypes.c_int64(0)
        a, k, c = action_in(action), key_in(key), cost_in(cost)
        ttl = int_in(ttl_ms, "ttl_ms")
        t = None if now_ms is None else time_in(now_ms)
        with self._lock:
            db = self._handle()
            if t is None:
                rc = lib.rls_reserve(db, a, k, c, ttl, ctypes.byref(rid), ctypes.byref(r))
            else:
                rc = lib.rls_reserve_at(db, a, k, c, ttl, t, ctypes.byref(rid), ctypes.byref(r))
            res = self._policy(rc, Result._from_c(r))
        return Reservation(self, rid.value or None, res, t)

    def _resolve(self, fn: str, reservation: Union[int, Reservation],
                 now_ms: Optional[int], state: str) -> None:
        if isinstance(reservation, Reservation):
            rid = reservation.id
        else:
            rid = int_in(reservation, "reservation id")
        if rid is None:
            return  # denied, or admitted by the failure policy: nothing pending
        try:
            if now_ms is None:
                self._call(fn, rid)
            else:
                self._call(fn + "_at", rid, time_in(now_ms))
        except errors.ReservationExpired:
            if isinstance(reservation, Reservation):
                reservation.state = "expired"
            raise
        if isinstance(reservation, Reservation):
            reservation.state = state

    def commit(self, reservation: Union[int, Reservation], *,
               now_ms: Optional[int] = None) -> None:
        """Makes a reservation's charge final.  NotFound for an unknown or
        settled one, ReservationExpired for one past its TTL (refunded)."""
        self._resolve("rls_commit", reservation, now_ms, "committed")

    def cancel(self, reservation: Union[int, Reservation], *,
               now_ms: Optional[int] = None) -> None:
        """Cancels a reservation and refunds its charge (an expired one:
        refunded either way)."""
        self._resolve("rls_cancel", reservation, now_ms, "cancelled")


def _choice(table: Dict[str, int], value: Optional[str], what: str, default: int) -> int:
    if value is None:
        return default
    if value not in table:
        raise errors.InvalidArgument("%s must be one of %s, not %r"
                                     % (what, ", ".join(sorted(table)), value))
    return table[value]
