"""The exception hierarchy, and bad input turned into the named errors."""

import os
import pickle
import sqlite3
import tempfile
import unittest

import rlstore
from rlstore import _ffi, errors

MONDAY = 1795392000000
RULES = """\
version: 1
actions:
  signup:
    key: ip
    limits:
      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }
  api:
    limits:
      - { name: rate, algorithm: gcra, limit: 10, window: 1s, burst: 20 }
"""


class TestHierarchy(unittest.TestCase):
    def test_table_is_the_librarys(self):
        # one class per code of the library's table, same names and texts
        lib = _ffi.get()
        n = 0
        while lib.rls_errname(n).decode() != "UNKNOWN":
            name, text = errors.ERRNO_TABLE[n]
            self.assertEqual(lib.rls_errname(n).decode(), name)
            self.assertEqual(lib.rls_strerror(n).decode(), text)
            n += 1
        self.assertEqual(n, len(errors.ERRNO_TABLE))
        for code in range(1, n):
            cls = errors.BY_CODE[code]
            self.assertTrue(issubclass(cls, rlstore.Error))
            self.assertIs(getattr(rlstore, cls.__name__), cls)
            self.assertEqual(cls().name, errors.ERRNO_TABLE[code][0])
        self.assertEqual(len(set(errors.BY_CODE.values())), n - 1)

    def test_groups(self):
        for cls in (rlstore.InvalidKey, rlstore.InvalidCost, rlstore.UnknownAction,
                    rlstore.TimeOutOfRange, rlstore.InvalidArgument):
            self.assertTrue(issubclass(cls, rlstore.InputError))
            self.assertTrue(issubclass(cls, ValueError))
        for cls in (rlstore.Busy, rlstore.ReadOnly, rlstore.IOFailure, rlstore.StorageFull,
                    rlstore.NoRules):
            self.assertTrue(issubclass(cls, rlstore.StorageFailure))
        self.assertTrue(issubclass(rlstore.NotFound, LookupError))

    def test_unknown_code_is_the_base_class(self):
        e = errors.error_for(200, "from a newer library")
        self.assertIs(type(e), rlstore.Error)
        self.assertEqual((e.code, e.name), (200, "UNKNOWN"))

    def test_pickle_every_class(self):
        for code, cls in errors.BY_CODE.items():
            e = errors.error_for(code, "detail %d" % code)
            back = pickle.loads(pickle.dumps(e))
            self.assertIs(type(back), cls)
            self.assertEqual((back.code, back.name, back.message, str(back)),
                             (e.code, e.name, e.message, str(e)))

    def test_pickle_keeps_the_result(self):
        with tempfile.TemporaryDirectory() as d:
            with rlstore.Limiter(os.path.join(d, "p.db")) as lim:
                lim.rules_apply(RULES)
                with self.assertRaises(rlstore.UnknownAction) as cm:
                    lim.check("nope", "k")
        back = pickle.loads(pickle.dumps(cm.exception, protocol=pickle.HIGHEST_PROTOCOL))
        self.assertIsInstance(back, rlstore.UnknownAction)
        self.assertEqual(back.result, cm.exception.result)
        self.assertEqual(back.result.reason, "degraded")


class TestBadInput(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "limits.db")
        self.lim = rlstore.Limiter(self.path)
        self.lim.rules_apply(RULES, now_ms=MONDAY)

    def tearDown(self):
        self.lim.close()
        self.dir.cleanup()

    def test_keys_that_are_not_strings(self):
        for key in (42, None, 1.5, ["a"], {"k": 1}, object()):
            for call in (self.lim.check, self.lim.peek, self.lim.reserve, self.lim.refund):
                with self.assertRaises(rlstore.InvalidKey, msg=repr(key)) as cm:
                    call("api", key)
                self.assertIn("key must be str or bytes", cm.exception.message)
        with self.assertRaises(rlstore.InvalidKey):
            self.lim.check_many([("api", 7)])
        with self.assertRaises(rlstore.InvalidKey):
            self.lim.block(7)

    def test_oversized_and_empty_keys(self):
        self.assertTrue(self.lim.check("api", "k" * 256).allowed)
        for key in ("k" * 257, b"k" * (10 << 20), "", b"a\0b", "\u00e9" * 129):
            with self.assertRaises(rlstore.InvalidKey, msg=repr(key)[:40]):
                self.lim.check("api", key)
        with rlstore.Limiter(self.path, max_key_len=4096) as big:
            self.assertTrue(big.check("api", "k" * 4096).allowed)
            with self.assertRaises(rlstore.InvalidKey):
                big.check("api", "k" * 4097)

    def test_key_not_valid_for_its_kind(self):
        with self.assertRaises(rlstore.InvalidKey) as cm:
            self.lim.check("signup", "not-an-ip")
        self.assertFalse(cm.exception.result.allowed)

    def test_unknown_actions(self):
        for action in ("nope", "", "x" * 300, "sign\u00fcp"):
            with self.assertRaises(rlstore.UnknownAction, msg=action[:20]):
                self.lim.check(action, "k")
        for action in (None, 3, b"a\0b"):
            with self.assertRaises(rlstore.InvalidArgument):
                self.lim.check(action, "k")

    def test_costs(self):
        for cost in (0, -1, rlstore._types._ffi.INT64_MAX, 1 << 70, -(1 << 70), True, 1.0, "1"):
            with self.assertRaises(rlstore.InvalidCost, msg=repr(cost)):
                self.lim.check("api", "k", cost)
        self.assertTrue(self.lim.check("api", "k", 20).allowed)

    def test_times(self):
        for t in (-1, 253402300800000, 1 << 64, "now", 1.5):
            with self.assertRaises(rlstore.TimeOutOfRange, msg=repr(t)):
                self.lim.check("api", "k", now_ms=t)
        with self.assertRaises(rlstore.TimeOutOfRange):
            self.lim.block("k", until_ms=0)

    def test_missing_database(self):
        missing = os.path.join(self.dir.name, "no", "such", "dir.db")
        with self.assertRaises(rlstore.CannotOpen):
            rlstore.Limiter(missing)
        with self.assertRaises(rlstore.CannotOpen):
            rlstore.Limiter(os.path.join(self.dir.name, "new.db"), create=False)
        self.assertFalse(os.path.exists(os.path.join(self.dir.name, "new.db")))

    def test_newer_database(self):
        self.lim.close()
        con = sqlite3.connect(self.path)
        con.execute("PRAGMA journal_mode = DELETE")
        (ver,) = con.execute("PRAGMA user_version").fetchone()
        con.execute("PRAGMA user_version = %d" % (ver + 1))
        con.close()
        with self.assertRaises(rlstore.NewerDatabase) as cm:
            rlstore.Limiter(self.path)
        self.assertIn("schema version %d" % (ver + 1), cm.exception.message)

    def test_path_types(self):
        import pathlib
        with rlstore.Limiter(pathlib.Path(self.path)) as lim:
            self.assertEqual(lim.path, self.path)
            self.assertTrue(lim.check("api", "k").allowed)
        with self.assertRaises(rlstore.InvalidArgument):
            rlstore.Limiter(self.path + "\0x")
        with self.assertRaises(TypeError):
            rlstore.Limiter(42)

    def test_options(self):
        for kw in ({"on_error": "maybe"}, {"durability": 1}, {"busy_timeout_ms": -1},
                   {"file_mode": "0600"}, {"max_key_len": 1 << 40}):
            with self.assertRaises(rlstore.InvalidArgument, msg=repr(kw)):
                rlstore.Limiter(self.path, **kw)
        with self.assertRaises(rlstore.InvalidArgument):
            rlstore.Limiter(self.path, max_key_len=5000)   # the library's range

    def test_closed(self):
        self.lim.close()
        for call in (lambda: self.lim.check("api", "k"), lambda: self.lim.rules_versions(),
                     lambda: self.lim.block("k")):
            with self.assertRaises(rlstore.Misuse):
                call()

    def test_rules_errors(self):
        with self.assertRaises(rlstore.ConfigError) as cm:
            self.lim.rules_apply("version: 2\n", name="v2.yaml")
        self.assertIn("v2.yaml:1:", cm.exception.message)
        with self.assertRaises(rlstore.InvalidArgument):
            self.lim.rules_apply(None)
        with self.assertRaises(rlstore.ConfigError):
            self.lim.rules_apply(b"\xff\xfe not yaml: [")

    def test_ctypes_never_sees_bad_input(self):
        # every public call's bad arguments are named errors, never ctypes'
        calls = [lambda: self.lim.override_set("api", "k", "rate", "ten"),
                 lambda: self.lim.usage(limit=None), lambda: self.lim.usage(sort="size"),
                 lambda: self.lim.stats(1 << 40), lambda: self.lim.gc(-5.0),
                 lambda: self.lim.rules_get("1"), lambda: self.lim.commit("1"),
                 lambda: self.lim.reserve("api", "k", ttl_ms=1 << 64),
                 lambda: self.lim.copy_from(self.lim)]
        for call in calls:
            with self.assertRaises(rlstore.Error):
                call()


if __name__ == "__main__":
    unittest.main()
