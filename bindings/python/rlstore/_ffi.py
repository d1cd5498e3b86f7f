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

ABI_MAJOR = 0
SONAME = "librlstore.so.%d" % ABI_MAJOR
NAME_MAX = 63

c_int64_p = ctypes.POINTER(ctypes.c_int64)


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int, ctypes.c_char_p)


class Options(ctypes.Structure):
    """struct rls_options.  Always filled by rls_options_init() first.

    ctypes binds the default version of rls_options_init, which fills the
    layout of the library it finds (include/rlstore.h of that build): the
    fields below are this header's, and _room absorbs what a newer library
    appends, so that its init never writes past the struct."""

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
        ("log_fn", LOG_FN),
        ("log_ctx", ctypes.c_void_p),
        ("_room", ctypes.c_char * 512),
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


class CItem(ctypes.Structure):
    """struct rls_item: one request of a batch (rls_check_many)."""

    _fields_ = [
        ("action", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("cost", ctypes.c_int64),
    ]


BATCH_MAX = 64


class LibraryNotFound(OSError):
    """librlstore could not be loaded."""


def _candidates():
    env = os.environ.get("RLSTORE_LIB")
    if env:
        return [env]
    found = ctypes.util.find_library("rlstore")
    return [SONAME] + ([found] if found and found != SONAME else [])


def _load():
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


def _declare(lib):
    db = ctypes.c_void_p
    s = ctypes.c_char_p
    i64 = ctypes.c_int64
    res = ctypes.POINTER(CResult)
    sigs = {
        "rls_version": (ctypes.c_uint, []),
        "rls_version_string": (s, []),
        "rls_strerror": (s, [ctypes.c_int]),
        "rls_errname": (s, [ctypes.c_int]),
        "rls_reason_name": (s, [ctypes.c_int]),
        "rls_options_init": (None, [ctypes.POINTER(Options)]),
        "rls_open": (ctypes.c_int, [ctypes.POINTER(db), s, ctypes.POINTER(Options)]),
        "rls_close": (None, [db]),
        "rls_errmsg": (s, [db]),
        "rls_check": (ctypes.c_int, [db, s, s, i64, res]),
        "rls_check_at": (ctypes.c_int, [db, s, s, i64, i64, res]),
        "rls_check_many": (ctypes.c_int, [db, ctypes.POINTER(CItem), ctypes.c_size_t, res]),
        "rls_check_many_at": (ctypes.c_int, [db, ctypes.POINTER(CItem), ctypes.c_size_t, i64,
                                             res]),
        "rls_peek": (ctypes.c_int, [db, s, s, i64, res]),
        "rls_peek_at": (ctypes.c_int, [db, s, s, i64, i64, res]),
        "rls_refund": (ctypes.c_int, [db, s, s, i64]),
        "rls_refund_at": (ctypes.c_int, [db, s, s, i64, i64]),
        "rls_reserve": (ctypes.c_int, [db, s, s, i64, i64, c_int64_p, res]),
        "rls_reserve_at": (ctypes.c_int, [db, s, s, i64, i64, i64, c_int64_p, res]),
        "rls_commit": (ctypes.c_int, [db, i64]),
        "rls_commit_at": (ctypes.c_int, [db, i64, i64]),
        "rls_cancel": (ctypes.c_int, [db, i64]),
        "rls_cancel_at": (ctypes.c_int, [db, i64, i64]),
        "rls_format_headers": (ctypes.c_int, [res, s, ctypes.c_char_p, ctypes.c_size_t]),
        "rls_rules_apply": (ctypes.c_int, [db, s, ctypes.c_size_t, s, s, c_int64_p]),
        "rls_rules_apply_at": (ctypes.c_int, [db, s, ctypes.c_size_t, s, s, i64, c_int64_p]),
    }
    for name, (restype, argtypes) in sigs.items():
        f = getattr(lib, name)
        f.restype = restype
        f.argtypes = argtypes


_lib = None


def get():
    """The loaded library (loaded on first use)."""
    global _lib
    if _lib is None:
        _lib = _load()
    return _lib
