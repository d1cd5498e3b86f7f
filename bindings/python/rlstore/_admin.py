"""The admin calls of a Limiter: rules (apply, dry run, versions,
rollback, describe, edit one limit), per-key policy (blocks, tiers,
overrides, reset), and what observes a database (usage, explain, audit,
stats, doctor, gc, copy).  A mixin of Limiter (see _limiter.py for _call,
_now and the lock).

Listings are lists of dicts, column name -> int, str or None, the columns
of the C function (rls_admin(3)); a newer library may add columns.  Keys
come back as the library stores them (normalised); one that is not UTF-8
has surrogate escapes and can be passed back as it is.  "until_ms" None
means forever.  Every change is audited under the Limiter's tool name.
"""

import ctypes
from typing import Any, List, Optional, Sequence, Tuple, Union

from . import _ffi
from . import errors
from ._types import (Explanation, Key, Row, RulesDescription, Stats, action_in, int_in,
                     key_in, rows_out, text_in)

USAGE_SORT = {"used": 0, "key": 1, "reset": 2, "denied": 3}
COPY_KINDS = {"rules": 1, "policy": 2, "counters": 4}
COPY_DRY_RUN = 0x100
C_INT_MAX = (1 << 31) - 1


def _yaml_in(yaml: Union[str, bytes]) -> bytes:
    if isinstance(yaml, str):
        return yaml.encode("utf-8")
    if isinstance(yaml, (bytes, bytearray, memoryview)):
        return bytes(yaml)
    raise errors.InvalidArgument("rules must be str or bytes, not %s" % type(yaml).__name__)


def _until(until_ms: Optional[int]) -> int:
    # 0 is "forever" in C; a caller's 0 would be the epoch, long past.
    if until_ms is None:
        return 0
    t = int_in(until_ms, "until_ms", errors.TimeOutOfRange)
    if t == 0:
        raise errors.TimeOutOfRange("until_ms 0 is 1970; None means forever")
    return t


def _scope(action: Optional[str]) -> Optional[bytes]:
    """An action, or None / "" for every action."""
    return None if action is None else action_in(action)


class AdminMixin:
    _lock: Any

    def _call(self, name: str, *args: Any) -> None:  # pragma: no cover - Limiter's
        raise NotImplementedError

    def _now(self, t: Optional[int]) -> int:  # pragma: no cover - Limiter's
        raise NotImplementedError

    def _handle(self) -> ctypes.c_void_p:  # pragma: no cover - Limiter's
        raise NotImplementedError

    def _fail(self, rc: int, result: Any = None) -> errors.Error:  # pragma: no cover
        raise NotImplementedError

    def _rows(self, name: str, *args: Any) -> List[Row]:
        out = ctypes.c_void_p()
        self._call(name, *args, ctypes.byref(out))
        return rows_out(out)

    def _rows2(self, name: str, *args: Any) -> Tuple[List[Row], List[Row]]:
        a, b = ctypes.c_void_p(), ctypes.c_void_p()
        self._call(name, *args, ctypes.byref(a), ctypes.byref(b))
        return rows_out(a), rows_out(b)

    # -- rules ----------------------------------------------------------------
    def rules_apply(self, yaml: Union[str, bytes], *, name: Optional[str] = None,
                    comment: Optional[str] = None, if_version: Optional[int] = None,
                    now_ms: Optional[int] = None) -> int:
        """Applies a YAML rule set (rlstore.yaml(5)) as a new version and
        returns its number.  ConfigError names line and column, nothing is
        stored.  if_version: only if that version (0: none yet) is still
        the active one, else Conflict."""
        y = _yaml_in(yaml)
        n = text_in(name, "name", allow_none=True)
        c = text_in(comment, "comment", allow_none=True)
        ver = ctypes.c_int64(0)
        t = self._now(now_ms)
        if if_version is None:
            self._call("rls_rules_apply_at", y, len(y), n, c, t, ctypes.byref(ver))
        else:
            self._call("rls_rules_apply_if_at", y, len(y), n, c,
                       int_in(if_version, "if_version"), t, ctypes.byref(ver))
        return ver.value

    def rules_dry_run(self, yaml: Union[str, bytes], *, name: Optional[str] = None,
                      now_ms: Optional[int] = None) -> List[Row]:
        """Validates yaml (ConfigError as rules_apply) without storing it,
        and lists the keys that would be over a new or changed limit now:
        action, tier, key, limit, used, old_limit, new_limit."""
        y = _yaml_in(yaml)
        return self._rows("rls_rules_dry_run_at", y, len(y),
                          text_in(name, "name", allow_none=True), self._now(now_ms))

    def rules_versions(self) -> List[Row]:
        """Every stored version, newest first: version, created_ms,
        os_user, tool, source, comment, bytes, active."""
        return self._rows("rls_rules_versions")

    def rules_get(self, version: int = 0) -> str:
        """The YAML of a version (0: the active one), as applied.
        NotFound, or NoRules when none is active."""
        p, n = ctypes.c_void_p(), ctypes.c_size_t(0)
        self._call("rls_rules_get", int_in(version, "version"), ctypes.byref(p), ctypes.byref(n))
        try:
            return ctypes.string_at(p, n.value).decode("utf-8", "replace")
        finally:
            _ffi.get().rls_free(p)

    def rules_rollback(self, version: int, *, comment: Optional[str] = None,
                       now_ms: Optional[int] = None) -> int:
        """Makes an older version active again, as a new version (history
        only grows); returns its number."""
        ver = ctypes.c_int64(0)
        self._call("rls_rules_rollback_at", int_in(version, "version"),
                   text_in(comment, "comment", allow_none=True), self._now(now_ms),
                   ctypes.byref(ver))
        return ver.value

    def rules_describe(self, version: int = 0) -> RulesDescription:
        """The tiers and limits of a version (0: the active one) as the
        library understood them (burst as used, window_ms, ...)."""
        tiers, limits = self._rows2("rls_rules_describe", int_in(version, "version"))
        return RulesDescription(tiers, limits)

    def rules_limits(self, version: int = 0) -> List[Row]:
        """The values a version writes for its limits, which
        rules_set_limit() can change: action, tier, name, field, value,
        line."""
        return self._rows("rls_rules_limit_list", int_in(version, "version"))

    def rules_edit_limit(self, action: str, limit_name: str, value: int, *,
                         tier: Optional[str] = None, field: str = "limit",
                         version: int = 0) -> Tuple[str, int]:
        """The YAML of a version with one value changed, validated but not
        stored (a preview), and the line changed."""
        p, n, line = ctypes.c_void_p(), ctypes.c_size_t(0), ctypes.c_int(0)
        self._call("rls_rules_limit_edit", int_in(version, "version"), action_in(action),
                   text_in(tier, "tier", allow_none=True), text_in(limit_name, "limit_name"),
                   text_in(field, "field"), int_in(value, "value"), ctypes.byref(p),
                   ctypes.byref(n), ctypes.byref(line))
        try:
            return ctypes.string_at(p, n.value).decode("utf-8", "replace"), line.value
        finally:
            _ffi.get().rls_free(p)

    def rules_set_limit(self, action: str, limit_name: str, value: int, *,
                        tier: Optional[str] = None, field: str = "limit",
                        name: Optional[str] = None, comment: Optional[str] = None,
                        if_version: int = 0, now_ms: Optional[int] = None) -> int:
        """Applies the active rules with one `limit:` (or `burst:`) value
        changed, as a new version (comments and layout kept); returns it."""
        ver = ctypes.c_int64(0)
        self._call("rls_rules_set_limit_at", action_in(action),
                   text_in(tier, "tier", allow_none=True), text_in(limit_name, "limit_name"),
                   text_in(field, "field"), int_in(value, "value"),
                   text_in(name, "name", allow_none=True),
                   text_in(comment, "comment", allow_none=True),
                   int_in(if_version, "if_version"), self._now(now_ms), ctypes.byref(ver))
        return ver.value

    # -- per-key policy -------------------------------------------------------
    def block(self, key: Key, action: Optional[str] = None, *,
              until_ms: Optional[int] = None, reason: Optional[str] = None,
              now_ms: Optional[int] = None) -> None:
        """Blocks key for action (None: every action) until until_ms (None:
        forever): its checks are denied with reason "blocked"."""
        self._call("rls_block_set_at", _scope(action), key_in(key), _until(until_ms),
                   text_in(reason, "reason", allow_none=True), self._now(now_ms))

    def unblock(self, key: Key, action: Optional[str] = None, *,
                now_ms: Optional[int] = None) -> None:
        """Lifts a block (manual or penalty).  NotFound if there was none."""
        self._call("rls_block_unset_at", _scope(action), key_in(key), self._now(now_ms))

    def blocks(self, *, now_ms: Optional[int] = None) -> List[Row]:
        """Active blocks: key, action, until_ms (0: forever), kind, level,
        rule, reason, os_user, created_ms."""
        return self._rows("rls_block_list_at", self._now(now_ms))

    def tier_set(self, key: Key, tier: str, *, action: Optional[str] = None,
                 until_ms: Optional[int] = None, now_ms: Optional[int] = None) -> None:
        """Puts key (exact, a CIDR such as "10.0.0.0/8" or a prefix glob
        such as "user:*") on a tier, for action (None: every action)."""
        self._call("rls_tier_assign_at", _scope(action), key_in(key), text_in(tier, "tier"),
                   _until(until_ms), self._now(now_ms))

    def tier_unset(self, key: Key, *, action: Optional[str] = None,
                   now_ms: Optional[int] = None) -> None:
        self._call("rls_tier_unassign_at", _scope(action), key_in(key), self._now(now_ms))

    def tiers(self, *, now_ms: Optional[int] = None) -> List[Row]:
        """Tier assignments: pattern, kind, action, tier, expires_ms,
        created_ms, source ("operator" or "file")."""
        return self._rows("rls_tier_list_at", self._now(now_ms))

    def override_set(self, action: str, key: Key, limit_name: str, limit: int, *,
                     until_ms: Optional[int] = None, now_ms: Optional[int] = None) -> None:
        """Replaces the capacity of one limit of action for one key."""
        self._call("rls_override_set_at", action_in(action), key_in(key),
                   text_in(limit_name, "limit_name"), int_in(limit, "limit"),
                   _until(until_ms), self._now(now_ms))

    def override_unset(self, action: str, key: Key, limit_name: str, *,
                       now_ms: Optional[int] = None) -> None:
        self._call("rls_override_unset_at", action_in(action), key_in(key),
                   text_in(limit_name, "limit_name"), self._now(now_ms))

    def overrides(self, *, action: Optional[str] = None, key: Optional[Key] = None,
                  now_ms: Optional[int] = None) -> List[Row]:
        """Overrides: key, action, limit_name, limit, expires_ms,
        created_ms; filtered by action and key if given."""
        return self._rows("rls_override_list_at", _scope(action),
                          None if key is None else key_in(key), self._now(now_ms))

    def reset(self, action: str, key: Key, *, now_ms: Optional[int] = None) -> None:
        """Forgets the counters of every limit of action for key.
        NotFound if it had none."""
        self._call("rls_reset_at", action_in(action), key_in(key), self._now(now_ms))

    # -- observing ------------------------------------------------------------
    def _usage_query(self, action: Optional[str], key_substr: Optional[Key], sort: str,
                     offset: int, limit: int) -> _ffi.UsageQuery:
        if sort not in USAGE_SORT:
            raise errors.InvalidArgument("sort must be one of %s, not %r"
                                         % (", ".join(USAGE_SORT), sort))
        q = _ffi.UsageQuery()
        q.size = ctypes.sizeof(q)
        q.action = _scope(action)
        q.key_substr = None if key_substr is None else key_in(key_substr)
        q.sort = USAGE_SORT[sort]
        q.offset = int_in(offset, "offset", lo=0, hi=C_INT_MAX)
        q.limit = int_in(limit, "limit", lo=0, hi=C_INT_MAX)
        return q

    def usage(self, *, action: Optional[str] = None, key_substr: Optional[Key] = None,
              sort: str = "used", offset: int = 0, limit: int = 100,
              now_ms: Optional[int] = None) -> List[Row]:
        """One row per (action, key) with its most pressing limit, as a
        check would see it (nothing charged): action, key, tier, rule,
        used, limit, remaining, fraction_ppm, reset_ms, blocked,
        block_until_ms, state, denied.  sort: "used", "key", "reset",
        "denied" (rls_usage_at(3)); limit 1..100000 rows."""
        q = self._usage_query(action, key_substr, sort, offset, limit)
        return self._rows("rls_usage_at", ctypes.byref(q), self._now(now_ms))

    def usage_count(self, *, action: Optional[str] = None, key_substr: Optional[Key] = None,
                    now_ms: Optional[int] = None) -> int:
        """The length of the list usage() would page through."""
        q = self._usage_query(action, key_substr, "used", 0, 1)
        n = ctypes.c_int64(0)
        self._call("rls_usage_count_at", ctypes.byref(q), self._now(now_ms), ctypes.byref(n))
        return n.value

    def explain(self, action: str, key: Key, *, now_ms: Optional[int] = None) -> Explanation:
        """Everything that decides checks of (action, key) now, charging
        nothing: the key's tier and block, and each limit's state."""
        info, limits = self._rows2("rls_explain_at", action_in(action), key_in(key),
                                   self._now(now_ms))
        return Explanation(info[0] if info else {}, limits)

    def audit(self, key: Optional[Key] = None, *, limit: int = 100) -> List[Row]:
        """The audit log, newest first (limit 1..100000 rows); key: the
        rows of that key in any spelling.  Columns: id, ts_ms, os_user,
        tool, op, action, key, before, after, reason."""
        return self._rows("rls_audit_list", None if key is None else key_in(key),
                          int_in(limit, "limit", lo=0, hi=C_INT_MAX))

    def stats(self, seconds: int = 60, *, now_ms: Optional[int] = None) -> Stats:
        """Admitted and denied checks per action: per second for the last
        `seconds` (1..3600), and in total."""
        recent, totals = self._rows2("rls_stats_at", int_in(seconds, "seconds", lo=0,
                                                            hi=C_INT_MAX), self._now(now_ms))
        return Stats(recent, totals)

    def doctor(self, full: bool = False) -> List[Row]:
        """The health report: check, status ("ok", "warn", "fail"), detail."""
        return self._rows("rls_doctor", int(bool(full)))

    def gc(self, max_rows: int = 1000, *, now_ms: Optional[int] = None) -> int:
        """One bounded garbage collection step; returns the rows removed."""
        n = ctypes.c_int64(0)
        self._call("rls_gc_at", int_in(max_rows, "max_rows", lo=0, hi=C_INT_MAX),
                   self._now(now_ms), ctypes.byref(n))
        return n.value

    def copy_from(self, src: Any, what: Sequence[str] = ("rules", "policy", "counters"), *,
                  dry_run: bool = False, now_ms: Optional[int] = None) -> List[Row]:
        """Copies what decides checks from the Limiter src into this one
        (rls_copy_at(3)): "rules", "policy", "counters".  Returns the
        report: what, copied, kept, dropped, expired, detail.  dry_run:
        everything is done and reported, then rolled back."""
        bits = 0
        for w in what:
            if w not in COPY_KINDS:
                raise errors.InvalidArgument("cannot copy %r: one of %s" % (w, ", ".join(COPY_KINDS)))
            bits |= COPY_KINDS[w]
        if dry_run:
            bits |= COPY_DRY_RUN
        if src is self:
            raise errors.InvalidArgument("cannot copy a database into itself")
        t = self._now(now_ms)
        out = ctypes.c_void_p()
        lib = _ffi.get()
        first, second = sorted((self, src), key=id)   # one lock order: no deadlock
        with first._lock, second._lock:
            rc = lib.rls_copy_at(self._handle(), src._handle(), bits, t, ctypes.byref(out))
            if rc != 0:
                raise self._fail(rc)
        return rows_out(out)
