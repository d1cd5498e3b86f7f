"""The values of the binding: Result, Reservation, the admin listings, and
the conversions of arguments to what the C functions take.

Arguments are checked here before they reach ctypes, so that bad input is
one of the library's named errors (rlstore.errors), never a ctypes
ArgumentError or an OverflowError: a key that is not str or bytes is
InvalidKey, a cost that is not an integer in int64 is InvalidCost, a time
TimeOutOfRange, anything else InvalidArgument.
"""

import ctypes
import dataclasses
import operator
from typing import Any, Dict, List, Optional, Tuple, Union

from . import _ffi
from . import errors

Key = Union[str, bytes]
Row = Dict[str, Any]

# Text crosses the boundary as UTF-8.  Keys are bytes in the library (any
# byte but NUL): one that is not UTF-8 comes back from the listings as a
# str with surrogate escapes (PEP 383), which encodes back to the same
# bytes when passed in again.
ENCODING = "utf-8"
ERRORS = "surrogateescape"


def text_in(value: Any, what: str, exc: type = errors.InvalidArgument,
            allow_none: bool = False) -> Optional[bytes]:
    """value (str or bytes) as the C string of argument `what`."""
    if value is None and allow_none:
        return None
    if isinstance(value, str):
        b = value.encode(ENCODING, ERRORS)
    elif isinstance(value, (bytes, bytearray, memoryview)):
        b = bytes(value)
    else:
        raise exc("%s must be str or bytes, not %s" % (what, type(value).__name__))
    if b"\0" in b:
        raise exc("%s contains a NUL byte" % what)
    return b


def key_in(key: Any) -> bytes:
    b = text_in(key, "key", errors.InvalidKey)
    assert b is not None
    return b


def action_in(action: Any) -> bytes:
    """An action name: str (or bytes); anything else is UnknownAction's
    sibling InvalidArgument, an unknown name the library's UnknownAction."""
    b = text_in(action, "action")
    assert b is not None
    return b


def int_in(value: Any, what: str, exc: type = errors.InvalidArgument,
           lo: int = _ffi.INT64_MIN, hi: int = _ffi.INT64_MAX) -> int:
    """value as an integer in lo..hi (bool refused: True is not a cost)."""
    if isinstance(value, bool):
        raise exc("%s must be an integer, not bool" % what)
    try:
        n = operator.index(value)
    except TypeError:
        raise exc("%s must be an integer, not %s" % (what, type(value).__name__)) from None
    if not lo <= n <= hi:
        raise exc("%s %d is out of range %d..%d" % (what, n, lo, hi))
    return n


def cost_in(cost: Any) -> int:
    # The library's range check (1..RLS_COST_MAX) answers the values that
    # fit an int64; those that do not are refused here with the same class.
    return int_in(cost, "cost", errors.InvalidCost)


def time_in(ms: Any, what: str = "now_ms") -> int:
    return int_in(ms, what, errors.TimeOutOfRange)


def text_out(b: Optional[bytes]) -> Optional[str]:
    return None if b is None else b.decode(ENCODING, ERRORS)


_reason_names: Dict[int, str] = {}
_reason_codes: Dict[str, int] = {}


def reason_name(code: int) -> str:
    if code not in _reason_names:
        _reason_names[code] = _ffi.get().rls_reason_name(code).decode()
        _reason_codes.setdefault(_reason_names[code], code)
    return _reason_names[code]


def reason_code(name: str) -> int:
    if not _reason_codes:
        for i in range(16):
            reason_name(i)
    return _reason_codes.get(name, 0)


@dataclasses.dataclass(frozen=True)
class Result:
    """The outcome of a check, for its deciding limit (see rls_check(3)).

    allowed         admitted or not
    reason          "ok", "limit", "blocked", "cost_exceeds_limit",
                    "shadow", "degraded", "batch" (check_many: admissible,
                    not charged because another item was denied)
    limit           the deciding limit's capacity
    remaining       units still admissible now
    reset_ms        ms until fully replenished if idle
    retry_after_ms  0 if admitted; ms until the same request would pass;
                    -1: never (as in C).  retry_after: the same in seconds,
                    None for never
    delay_ms        the shaping delay (leaky_bucket), else 0
    window_ms       the deciding limit's window
    rule            the deciding limit's name ("" if none)
    error           None, or when the failure policy decided (reason
                    "degraded") the rlstore.Error that happened
    """

    allowed: bool
    reason: str
    limit: int
    remaining: int
    reset_ms: int
    retry_after_ms: int
    delay_ms: int
    window_ms: int
    rule: str
    error: Optional[errors.Error] = dataclasses.field(default=None, compare=False)

    @property
    def degraded(self) -> bool:
        """True when the failure policy decided, not the limits."""
        return self.reason == "degraded"

    @property
    def retry_after(self) -> Optional[float]:
        """Seconds until the same request would be admitted: 0.0 when
        admitted, None when it never will be (cost above the capacity, a
        block forever)."""
        return None if self.retry_after_ms < 0 else self.retry_after_ms / 1000.0

    @classmethod
    def _from_c(cls, r: _ffi.CResult, error: Optional[errors.Error] = None) -> "Result":
        return cls(bool(r.allowed), reason_name(r.reason), r.limit, r.remaining, r.reset_ms,
                   r.retry_after_ms, r.delay_ms, r.window_ms,
                   r.rule.decode(ENCODING, "replace"), error)

    def _to_c(self) -> _ffi.CResult:
        return _ffi.CResult(int(self.allowed), reason_code(self.reason), self.limit,
                            self.remaining, self.reset_ms, self.retry_after_ms,
                            self.delay_ms, self.window_ms,
                            self.rule.encode(ENCODING)[:_ffi.NAME_MAX])

    def header_list(self, policy: Optional[str] = None) -> List[Tuple[str, str]]:
        """The HTTP response headers for this result, in order, as
        rls_format_headers() writes them: RateLimit-Policy, RateLimit and,
        when denied with a known wait, Retry-After (whole seconds, rounded
        up).  policy names the policy (default: the deciding rule)."""
        c = self._to_c()
        pol = text_in(policy, "policy", allow_none=True)
        lib = _ffi.get()
        n = lib.rls_format_headers(ctypes.byref(c), pol, None, 0)
        if n < 0:
            raise errors.InvalidArgument("cannot format headers for %r" % (self,))
        buf = ctypes.create_string_buffer(n + 1)
        lib.rls_format_headers(ctypes.byref(c), pol, buf, n + 1)
        out = []
        for line in buf.value.decode().split("\r\n"):
            if line:
                k, v = line.split(": ", 1)
                out.append((k, v))
        return out

    def headers(self, policy: Optional[str] = None) -> Dict[str, str]:
        """header_list() as a dict."""
        return dict(self.header_list(policy))


@dataclasses.dataclass(frozen=True)
class Explanation:
    """What explain() returns: `info`, one row (action, key, tier,
    behaviour, blocked, block_until_ms, allowed, reason, ...) and `limits`,
    one row per limit (name, algorithm, limit, used, remaining, ...)."""

    info: Row
    limits: List[Row]


@dataclasses.dataclass(frozen=True)
class Stats:
    """What stats() returns: `recent`, per action and second (action, sec,
    allowed, denied), and `totals`, per action since the database began."""

    recent: List[Row]
    totals: List[Row]


@dataclasses.dataclass(frozen=True)
class RulesDescription:
    """What rules_describe() returns: the `tiers` and `limits` of a rule
    set as the library understood them."""

    tiers: List[Row]
    limits: List[Row]


def rows_out(ptr: ctypes.c_void_p) -> List[Row]:
    """An rls_rows as a list of dicts (column name -> int, str or None),
    then freed.  Columns are by name: a newer library may add some."""
    lib = _ffi.get()
    if not ptr:
        return []
    try:
        ncol = lib.rls_rows_columns(ptr)
        cols = [(lib.rls_rows_name(ptr, c).decode(), lib.rls_rows_type(ptr, c))
                for c in range(ncol)]
        out = []
        for r in range(lib.rls_rows_count(ptr)):
            row: Row = {}
            for c, (name, typ) in enumerate(cols):
                if lib.rls_rows_is_null(ptr, r, c):
                    row[name] = None
                elif typ == _ffi.COL_INT:
                    row[name] = lib.rls_rows_int(ptr, r, c)
                else:
                    p = lib.rls_rows_text(ptr, r, c)
                    row[name] = text_out(ctypes.string_at(p)) if p else None
            out.append(row)
        return out
    finally:
        lib.rls_rows_free(ptr)
