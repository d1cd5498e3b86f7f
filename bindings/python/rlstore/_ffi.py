"""ctypes declarations of librlstore (include/rlstore.h), loaded once.

The library is found, in this order, at the path in the environment
variable RLSTORE_LIB; by its SONAME, librlstore.so.0, through the dynamic
linker (LD_LIBRARY_PATH, the ld.so cache); through ctypes.util.find_library.
A library of another major version is refused: the structures below are
those of ABI 0 (docs/ABI.md).
"""

import ctypes
import ctypes.util
import os
from typing import Any, List, Optional

ABI_MAJOR = 0
SONAME = "librlstore.so.%d" % ABI_MAJOR
NAME_MAX = 63

c_int64_p = ctypes.POINTER(ctypes.c_int64)


class Options(ctypes.Structure):
    """struct rls_options.  Always filled by rls_options_init() first."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("busy_timeout_ms", ctypes.c_int),
        ("durability", ctypes.c_int),
        ("on_error", ctypes.c_int),
        ("read_only", ctypes.c_int),
        ("create", ctypes.c_int),
        ("file_mode", ctypes.c_uint),
        ("max_key_len", ctypes.c_int),
        ("tool", ctypes.c_char_p),
        ("counters_path", ctypes.c_char_p),
        ("rules_read_only", ctypes.c_int),
        ("file_group", ctypes.c_char_p),
        # RLSTORE_0.7
        ("thread_safe", ctypes.c_int),
        ("shm_dir", ctypes.c_char_p),
        ("shm_slots", ctypes.c_uint),
        ("no_upgrade", ctypes.c_int),
        ("log_fn", ctypes.c_void_p),
        ("log_ctx", ctypes.c_void_p),
        # rls_options_init() writes the layout of the library's own header
        # (its default symbol version), which a newer library may have grown
        # past the fields above: room for that, so it never writes past the
        # struct.  .size then says how much the library filled; rls_open()
        # reads the fields it knows, at their defaults unless set here.
        ("slack_", ctypes.c_char * 1024),
    ]


class CResult(ctypes.Structure):
    """struct rls_result."""

    _fields_ = [
        ("allowed", ctypes.c_int),
        ("reason", ctypes.c_int),
        ("limit", ctypes.c_int64),
        ("remaining", ctypes.c_int64),
        ("reset_ms", ctypes.c_int64),
        ("retry_after_ms", ctypes.c_int64),
        ("delay_ms", ctypes.c_int64),
        ("window_ms", ctypes.c_int64),
        ("rule", ctypes.c_char * (NAME_MAX + 1)),
        ("reserved_", ctypes.c_int64 * 8),
    ]


class UsageQuery(ctypes.Structure):
    """struct rls_usage_query."""

    _fields_ = [
        ("size", ctypes.c_size_t),
        ("action", ctypes.c_char_p),
        ("key_substr", ctypes.c_char_p),
        ("sort", ctypes.c_int),
        ("offset", ctypes.c_int),
        ("limit", ctypes.c_int),
    ]


class CItem(ctypes.Structure):
    """struct rls_item: one request of a batch (rls_check_many)."""

    _fields_ = [
        ("action", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("cost", ctypes.c_int64),
    ]


BATCH_MAX = 64
COL_INT = 1
COL_TEXT = 2
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1


class LibraryNotFound(OSError):
    """librlstore could not be loaded."""


def _candidates() -> List[str]:
    env = os.environ.get("RLSTORE_LIB")
    if env:
        return [env]
    found = ctypes.util.find_library("rlstore")
    return [SONAME] + ([found] if found and found != SONAME else [])


def _load() -> ctypes.CDLL:
    errors = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
        except OSError as e:
            errors.append("%s: %s" % (name, e))
            continue
        _declare(lib)
        major = lib.rls_version() >> 16
        if major != ABI_MAJOR:
            raise LibraryNotFound(
                "%s is librlstore %s (ABI %d); this binding needs ABI %d"
                % (name, lib.rls_version_string().decode(), major, ABI_MAJOR))
        return lib
    raise LibraryNotFound(
        "cannot load librlstore (set RLSTORE_LIB to its path, or install it): "
        + "; ".join(errors))


def _declare(lib: ctypes.CDLL) -> None:
    db = ctypes.c_void_p
    s = ctypes.c_char_p
    i64 = ctypes.c_int64
    i = ctypes.c_int
    res = ctypes.POINTER(CResult)
    rows = ctypes.c_void_p
    rowsp = ctypes.POINTER(rows)
    i64p = c_int64_p
    sigs = {
        "rls_version": (ctypes.c_uint, []),
        "rls_version_string": (s, []),
        "rls_strerror": (s, [i]),
        "rls_errname": (s, [i]),
        "rls_reason_name": (s, [i]),
        "rls_options_init": (None, [ctypes.POINTER(Options)]),
        "rls_open": (i, [ctypes.POINTER(db), s, ctypes.POINTER(Options)]),
        "rls_close": (None, [db]),
        "rls_errmsg": (s, [db]),
        "rls_check": (i, [db, s, s, i64, res]),
        "rls_check_at": (i, [db, s, s, i64, i64, res]),
        "rls_check_many": (i, [db, ctypes.POINTER(CItem), ctypes.c_size_t, res]),
        "rls_check_many_at": (i, [db, ctypes.POINTER(CItem), ctypes.c_size_t, i64, res]),
        "rls_peek": (i, [db, s, s, i64, res]),
        "rls_peek_at": (i, [db, s, s, i64, i64, res]),
        "rls_refund_units": (i, [db, s, s, i64, i64p]),
        "rls_refund_units_at": (i, [db, s, s, i64, i64, i64p]),
        "rls_reserve": (i, [db, s, s, i64, i64, i64p, res]),
        "rls_reserve_at": (i, [db, s, s, i64, i64, i64, i64p, res]),
        "rls_commit": (i, [db, i64]),
        "rls_commit_at": (i, [db, i64, i64]),
        "rls_cancel": (i, [db, i64]),
        "rls_cancel_at": (i, [db, i64, i64]),
        "rls_format_headers": (i, [res, s, ctypes.c_char_p, ctypes.c_size_t]),
        "rls_duration_parse": (i, [s, i64p]),
        "rls_time_parse": (i, [s, i64p]),
        "rls_time_format": (i, [i64, ctypes.c_char_p, ctypes.c_size_t]),
        "rls_key_escape": (i, [s, ctypes.c_char_p, ctypes.c_size_t]),
        # rules
        "rls_rules_apply_at": (i, [db, s, ctypes.c_size_t, s, s, i64, i64p]),
        "rls_rules_apply_if_at": (i, [db, s, ctypes.c_size_t, s, s, i64, i64, i64p]),
        "rls_rules_versions": (i, [db, rowsp]),
        "rls_rules_get": (i, [db, i64, ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(ctypes.c_size_t)]),
        "rls_rules_rollback_at": (i, [db, i64, s, i64, i64p]),
        "rls_rules_describe": (i, [db, i64, rowsp, rowsp]),
        "rls_rules_dry_run_at": (i, [db, s, ctypes.c_size_t, s, i64, rowsp]),
        "rls_rules_limit_list": (i, [db, i64, rowsp]),
        "rls_rules_limit_edit": (i, [db, i64, s, s, s, s, i64, ctypes.POINTER(ctypes.c_void_p),
                                     ctypes.POINTER(ctypes.c_size_t), ctypes.POINTER(i)]),
        "rls_rules_set_limit_at": (i, [db, s, s, s, s, i64, s, s, i64, i64, i64p]),
        # per-key policy
        "rls_block_set_at": (i, [db, s, s, i64, s, i64]),
        "rls_block_unset_at": (i, [db, s, s, i64]),
        "rls_block_list_at": (i, [db, i64, rowsp]),
        "rls_tier_assign_at": (i, [db, s, s, s, i64, i64]),
        "rls_tier_unassign_at": (i, [db, s, s, i64]),
        "rls_tier_list_at": (i, [db, i64, rowsp]),
        "rls_override_set_at": (i, [db, s, s, s, i64, i64, i64]),
        "rls_override_unset_at": (i, [db, s, s, s, i64]),
        "rls_override_list_at": (i, [db, s, s, i64, rowsp]),
        "rls_reset_at": (i, [db, s, s, i64]),
        "rls_gc_at": (i, [db, i, i64, i64p]),
        # observing
        "rls_usage_at": (i, [db, ctypes.POINTER(UsageQuery), i64, rowsp]),
        "rls_usage_count_at": (i, [db, ctypes.POINTER(UsageQuery), i64, i64p]),
        "rls_explain_at": (i, [db, s, s, i64, rowsp, rowsp]),
        "rls_audit_list": (i, [db, s, i, rowsp]),
        "rls_stats_at": (i, [db, i, i64, rowsp, rowsp]),
        "rls_doctor": (i, [db, i, rowsp]),
        "rls_copy_at": (i, [db, db, ctypes.c_uint, i64, rowsp]),
        # result sets
        "rls_rows_count": (i, [rows]),
        "rls_rows_columns": (i, [rows]),
        "rls_rows_name": (s, [rows, i]),
        "rls_rows_type": (i, [rows, i]),
        "rls_rows_is_null": (i, [rows, i, i]),
        "rls_rows_int": (i64, [rows, i, i]),
        "rls_rows_text": (ctypes.c_void_p, [rows, i, i]),
        "rls_rows_free": (None, [rows]),
        "rls_free": (None, [ctypes.c_void_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes


_lib: Optional[ctypes.CDLL] = None


def get() -> Any:
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib
