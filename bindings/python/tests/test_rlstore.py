"""Tests of the rlstore Python binding (unittest, system python3).

Run from the top of the source tree after `make`, against the source tree:
    RLSTORE_LIB=build/librlstore.so.0 PYTHONPATH=bindings/python \
        python3 -m unittest discover -s bindings/python/tests
or, without PYTHONPATH, against an installed package.
"""

import os
import stat
import tempfile
import threading
import unittest

import rlstore
from rlstore import _ffi

MONDAY = 1795392000000  # 2026-11-23T00:00:00Z
HOUR = 3600000
DAY = 24 * HOUR

RULES = """\
version: 1
actions:
  signup:
    key: ip
    limits:
      - { name: daily,  algorithm: fixed_window, limit: 3, window: 1d }
      - { name: weekly, algorithm: fixed_window, limit: 5, window: 1w }
  api:
    limits:
      - { name: rate, algorithm: gcra, limit: 10, window: 1s, burst: 20 }
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "limits.db")
        self.lim = rlstore.Limiter.open(self.path)
        self.lim.rules_apply(RULES, name="test.yaml", now_ms=MONDAY)

    def tearDown(self):
        self.lim.close()
        self.dir.cleanup()


class TestLibrary(unittest.TestCase):
    def test_version(self):
        self.assertEqual(rlstore.library_version(), rlstore.__version__)

    def test_struct_size_matches_library(self):
        # rls_options_init() records sizeof(rls_options) as the library sees it.
        opt = _ffi.Options()
        _ffi.get().rls_options_init(opt)
        # (the struct has slack after the fields this binding knows: a
        # newer library may fill more)
        self.assertEqual(opt.size, _ffi.Options.slack_.offset)
        self.assertEqual(opt.file_mode, 0o600)


class TestOpen(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()

    def tearDown(self):
        self.dir.cleanup()

    def test_creates_private_file(self):
        path = os.path.join(self.dir.name, "a.db")
        with rlstore.Limiter.open(path) as lim:
            self.assertEqual(lim.path, path)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o600)

    def test_file_mode(self):
        path = os.path.join(self.dir.name, "g.db")
        old = os.umask(0o077)
        try:
            rlstore.Limiter.open(path, file_mode=0o640).close()
        finally:
            os.umask(old)
        self.assertEqual(stat.S_IMODE(os.stat(path).st_mode), 0o640)

    def test_directory(self):
        with self.assertRaises(rlstore.Error) as cm:
            rlstore.Limiter.open(self.dir.name)
        self.assertEqual(cm.exception.name, "EISDIR")
        self.assertIn(self.dir.name, cm.exception.message)

    def test_not_a_database(self):
        path = os.path.join(self.dir.name, "junk")
        with open(path, "wb") as f:
            f.write(b"this is not a database, not at all" * 100)
        with self.assertRaises(rlstore.Error) as cm:
            rlstore.Limiter.open(path)
        self.assertEqual(cm.exception.name, "ENOTDB")

    def test_missing_without_create(self):
        path = os.path.join(self.dir.name, "missing.db")
        with self.assertRaises(rlstore.Error) as cm:
            rlstore.Limiter.open(path, create=False)
        self.assertEqual(cm.exception.name, "ECANTOPEN")
        self.assertFalse(os.path.exists(path))

    def test_bad_option(self):
        with self.assertRaises(rlstore.InvalidArgument):
            rlstore.Limiter.open(os.path.join(self.dir.name, "x.db"), durability="sometimes")

    def test_closed(self):
        lim = rlstore.Limiter.open(os.path.join(self.dir.name, "c.db"))
        lim.close()
        lim.close()  # idempotent
        with self.assertRaises(rlstore.Error) as cm:
            lim.check("signup", "192.0.2.1")
        self.assertEqual(cm.exception.name, "EMISUSE")


class TestRules(Base):
    def test_versions_grow(self):
        # the same rules again store nothing and give the active version
        self.assertEqual(self.lim.rules_apply(RULES, comment="again"), 1)
        changed = RULES.replace("limit: 3,", "limit: 4,")
        self.assertEqual(self.lim.rules_apply(changed, comment="four"), 2)

    def test_config_error_names_line_and_column(self):
        bad = RULES.replace("limit: 3,", "limit: three,")
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.rules_apply(bad, name="bad.yaml")
        e = cm.exception
        self.assertEqual(e.name, "ECONFIG")
        self.assertIn("bad.yaml:6:", e.message)
        self.assertEqual(str(e), "ECONFIG: " + e.message)
        # nothing was stored: the old rules still apply
        self.assertEqual(self.lim.check("signup", "192.0.2.1", now_ms=MONDAY).limit, 3)

    def test_no_rules(self):
        # no rules: the handle's failure policy decides, the error rides along
        for policy, allowed in (("deny", False), ("allow", True)):
            path = os.path.join(self.dir.name, "empty-%s.db" % policy)
            with rlstore.Limiter.open(path, on_error=policy) as lim:
                r = lim.check("signup", "192.0.2.1")
                self.assertEqual((r.allowed, r.reason, r.degraded), (allowed, "degraded", True))
                self.assertEqual(r.error.name, "ENORULES")


class TestCheck(Base):
    def test_daily_limit(self):
        t = MONDAY + 9 * HOUR
        got = [self.lim.check("signup", "203.0.113.7", now_ms=t) for _ in range(4)]
        self.assertEqual([r.allowed for r in got], [True, True, True, False])
        self.assertEqual([r.remaining for r in got[:3]], [2, 1, 0])
        d = got[3]
        self.assertEqual((d.reason, d.rule, d.limit, d.remaining), ("limit", "daily", 3, 0))
        self.assertEqual(d.retry_after_ms, 15 * HOUR)   # until midnight UTC
        self.assertEqual(d.window_ms, DAY)
        self.assertIsInstance(d, rlstore.Result)
        with self.assertRaises(Exception):
            d.allowed = True  # frozen

    def test_keys_are_separate_and_bytes_work(self):
        t = MONDAY
        for _ in range(3):
            self.lim.check("signup", "203.0.113.7", now_ms=t)
        self.assertTrue(self.lim.check("signup", b"198.51.100.1", now_ms=t).allowed)

    def test_check_many_all_or_nothing(self):
        t = MONDAY + 9 * HOUR
        got = self.lim.check_many([("signup", "203.0.113.7"), ("api", "u1", 2)], now_ms=t)
        self.assertEqual([(r.allowed, r.reason) for r in got], [(True, "ok"), (True, "ok")])
        self.assertEqual((got[0].remaining, got[1].rule), (2, "rate"))
        # the second item cannot be admitted: the first is not charged
        got = self.lim.check_many([("signup", "203.0.113.7"), ("api", "u1", 21)], now_ms=t)
        self.assertEqual([(r.allowed, r.reason) for r in got],
                         [(False, "batch"), (False, "cost_exceeds_limit")])
        self.assertEqual(got[0].retry_after_ms, -1)
        self.assertEqual(self.lim.peek("signup", "203.0.113.7", now_ms=t).remaining, 2)
        self.assertEqual(self.lim.check_many([], now_ms=t), [])

    def test_check_many_errors(self):
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.check_many([("api", "k"), ("nope", "k")], now_ms=MONDAY)
        self.assertEqual(cm.exception.name, "ENOACTION")
        self.assertIn("item 1: ", cm.exception.message)
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.check_many([("api", "k"), ("api", "k")], now_ms=MONDAY)
        self.assertEqual(cm.exception.name, "EINVAL")
        with self.assertRaises(rlstore.Error):
            self.lim.check_many([("api", "k%d" % i) for i in range(65)], now_ms=MONDAY)
        with self.assertRaises(rlstore.InvalidArgument):
            self.lim.check_many([("api",)], now_ms=MONDAY)
        self.assertEqual(self.lim.peek("api", "k", now_ms=MONDAY).remaining, 20)

    def test_peek_charges_nothing(self):
        for _ in range(5):
            r = self.lim.peek("signup", "192.0.2.1", now_ms=MONDAY)
            self.assertTrue(r.allowed)
            self.assertEqual(r.remaining, 3)  # nothing charged

    def test_refund(self):
        for _ in range(3):
            self.lim.check("signup", "192.0.2.1", now_ms=MONDAY)
        self.assertFalse(self.lim.peek("signup", "192.0.2.1", now_ms=MONDAY).allowed)
        self.lim.refund("signup", "192.0.2.1", now_ms=MONDAY)
        self.assertTrue(self.lim.check("signup", "192.0.2.1", now_ms=MONDAY).allowed)

    def test_cost(self):
        r = self.lim.check("signup", "192.0.2.1", cost=4, now_ms=MONDAY)
        self.assertFalse(r.allowed)
        self.assertEqual(r.reason, "cost_exceeds_limit")
        self.assertEqual(r.retry_after_ms, -1)
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.check("signup", "192.0.2.1", cost=0)
        self.assertEqual(cm.exception.name, "ECOST")

    def test_invalid_input_is_an_error_with_a_denying_result(self):
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.check("nosuchaction", "k", now_ms=MONDAY)
        e = cm.exception
        self.assertEqual(e.name, "ENOACTION")
        self.assertIn("nosuchaction", e.message)
        self.assertIsNotNone(e.result)
        self.assertFalse(e.result.allowed)
        self.assertEqual(e.result.reason, "degraded")
        for key, name in (("", "EKEY"), ("a\0b", "EKEY"), ("x" * 300, "EKEY"),
                          ("not-an-ip", "EKEY")):
            with self.assertRaises(rlstore.Error) as cm:
                self.lim.check("signup", key)
            self.assertEqual(cm.exception.name, name, key)

    def test_storage_failure_follows_the_failure_policy(self):
        # A read-only handle cannot charge: EREADONLY.  As in C, the call
        # returns the decision of the handle's on_error policy, and the
        # error with it; nothing is raised.
        for policy, allowed in (("deny", False), ("allow", True)):
            with rlstore.Limiter.open(self.path, read_only=True, on_error=policy) as ro:
                r = ro.check("signup", "192.0.2.1")
                self.assertEqual((r.allowed, r.reason, r.degraded), (allowed, "degraded", True))
                self.assertIsInstance(r.error, rlstore.Error)
                self.assertEqual(r.error.name, "EREADONLY")
                self.assertTrue(r.error.message)
                res = ro.reserve("signup", "192.0.2.1")
                self.assertEqual((res.allowed, res.id, res.result.error.name),
                                 (allowed, None, "EREADONLY"))
                ro.commit(res)   # nothing pending: a no-op
                # peeking needs no write
                p = ro.peek("signup", "192.0.2.1")
                self.assertTrue(p.allowed)
                self.assertIsNone(p.error)
                self.assertFalse(p.degraded)

    def test_action_on_error_allow_admits_on_a_storage_error(self):
        # The action's own on_error wins over the handle's (deny): an
        # application that never looks at the error admits, as configured.
        self.lim.rules_apply(RULES.replace("  api:\n", "  api:\n    on_error: allow\n"),
                             now_ms=MONDAY)
        with rlstore.Limiter.open(self.path, read_only=True, on_error="deny") as ro:
            r = ro.check("api", "user:1")
            self.assertEqual((r.allowed, r.reason, r.error.name), (True, "degraded", "EREADONLY"))
            r = ro.check("signup", "192.0.2.1")
            self.assertEqual((r.allowed, r.reason, r.error.name), (False, "degraded", "EREADONLY"))

    def test_busy_database_follows_the_failure_policy(self):
        # Another connection holds the write lock for the whole test: every
        # check waits out its busy timeout, then the policy decides (EBUSY).
        import sqlite3
        self.lim.rules_apply(RULES.replace("  api:\n", "  api:\n    on_error: allow\n"),
                             now_ms=MONDAY)
        holder = sqlite3.connect(self.path, isolation_level=None, timeout=60)
        try:
            holder.execute("BEGIN IMMEDIATE")
            with rlstore.Limiter.open(self.path, busy_timeout_ms=50) as lim:
                r = lim.check("api", "user:1", now_ms=MONDAY)
                self.assertEqual((r.allowed, r.degraded, r.error.name), (True, True, "EBUSY"))
                r = lim.check("signup", "192.0.2.1", now_ms=MONDAY)
                self.assertEqual((r.allowed, r.degraded, r.error.name), (False, True, "EBUSY"))
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        r = self.lim.check("api", "user:1", now_ms=MONDAY)
        self.assertEqual((r.allowed, r.degraded, r.error), (True, False, None))

    def test_results_compare_without_their_error(self):
        a = self.lim.peek("signup", "192.0.2.1", now_ms=MONDAY)
        self.assertIsNone(a.error)
        self.assertEqual(a, self.lim.peek("signup", "192.0.2.1", now_ms=MONDAY))

    def test_headers(self):
        for _ in range(3):
            self.lim.check("signup", "192.0.2.1", now_ms=MONDAY + 9 * HOUR)
        ok = self.lim.peek("signup", "192.0.2.2", now_ms=MONDAY + 9 * HOUR)
        h = ok.headers()
        self.assertEqual(h["RateLimit-Policy"], '"daily";q=3;w=86400')
        self.assertNotIn("Retry-After", h)
        denied = self.lim.check("signup", "192.0.2.1", now_ms=MONDAY + 9 * HOUR)
        h = denied.headers(policy="signups")
        self.assertEqual(h["Retry-After"], str(15 * 3600))
        self.assertEqual(h["RateLimit"], '"signups";r=0;t=%d' % (15 * 3600))
        self.assertEqual(h["RateLimit-Policy"], '"signups";q=3;w=86400')

    def test_threads_share_a_limiter(self):
        admitted = []
        lock = threading.Lock()

        def worker():
            n = 0
            for _ in range(25):
                n += self.lim.check("api", "user:42", now_ms=MONDAY).allowed
            with lock:
                admitted.append(n)

        threads = [threading.Thread(target=worker) for _ in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        self.assertEqual(sum(admitted), 20)  # the burst, exactly


class TestReservations(Base):
    def test_commit_counts_cancel_does_not(self):
        t = MONDAY + 9 * HOUR
        ok = self.lim.reserve("signup", "192.0.2.1", now_ms=t)
        self.assertTrue(ok.allowed)
        self.assertIsInstance(ok.id, int)
        self.lim.commit(ok, now_ms=t)
        failed = self.lim.reserve("signup", "192.0.2.1", now_ms=t)
        self.lim.cancel(failed.id, now_ms=t)
        self.assertEqual(self.lim.peek("signup", "192.0.2.1", now_ms=t).remaining, 2)

    def test_resolved_twice(self):
        r = self.lim.reserve("signup", "192.0.2.1", now_ms=MONDAY)
        self.lim.commit(r, now_ms=MONDAY)
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.cancel(r, now_ms=MONDAY)
        self.assertEqual(cm.exception.name, "ENOTFOUND")

    def test_expiry_refunds(self):
        t = MONDAY + 9 * HOUR
        r = self.lim.reserve("signup", "192.0.2.1", ttl_ms=60000, now_ms=t)
        self.assertEqual(r.result.remaining, 2)
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.commit(r, now_ms=t + 60001)
        self.assertEqual(cm.exception.name, "EEXPIRED")
        self.assertEqual(self.lim.peek("signup", "192.0.2.1", now_ms=t + 60002).remaining, 3)

    def test_denied_has_no_id(self):
        for _ in range(3):
            self.lim.check("signup", "192.0.2.1", now_ms=MONDAY)
        r = self.lim.reserve("signup", "192.0.2.1", now_ms=MONDAY)
        self.assertFalse(r.allowed)
        self.assertIsNone(r.id)
        self.lim.commit(r)  # nothing pending: a no-op
        self.lim.cancel(r)

    def test_bad_ttl(self):
        with self.assertRaises(rlstore.Error) as cm:
            self.lim.reserve("signup", "192.0.2.1", ttl_ms=0)
        self.assertEqual(cm.exception.name, "EINVAL")


class TestClock(Base):
    def test_real_clock(self):
        before = rlstore.now_ms()
        r = self.lim.check("api", "user:1")
        self.assertTrue(r.allowed)
        self.assertGreater(before, MONDAY - 365 * DAY)


if __name__ == "__main__":
    unittest.main()
