"""Reservation as a context manager, Result's retry_after, the shorthand."""

import os
import tempfile
import unittest

import rlstore
from rlstore import shorthand

MONDAY = 1795392000000
RULES = """\
version: 1
actions:
  signup:
    limits:
      - { name: daily, algorithm: fixed_window, limit: 2, window: 1d }
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.lim = rlstore.Limiter(os.path.join(self.dir.name, "r.db"))
        self.lim.rules_apply(RULES)

    def tearDown(self):
        self.lim.close()
        self.dir.cleanup()

    def remaining(self):
        return self.lim.peek("signup", "ann").remaining


class TestContextManager(Base):
    def test_success_commits(self):
        with self.lim.reserve("signup", "ann") as res:
            self.assertTrue(res.allowed)
            self.assertEqual(res.state, "pending")
        self.assertEqual(res.state, "committed")
        self.assertEqual(self.remaining(), 1)
        with self.assertRaises(rlstore.NotFound):
            self.lim.commit(res)        # settled: the library knows it no more

    def test_exception_cancels_and_propagates(self):
        class Boom(Exception):
            pass
        with self.assertRaises(Boom):
            with self.lim.reserve("signup", "ann") as res:
                self.assertEqual(self.remaining(), 1)   # charged while pending
                raise Boom()
        self.assertEqual(res.state, "cancelled")
        self.assertEqual(self.remaining(), 2)

    def test_settled_inside_the_block(self):
        with self.lim.reserve("signup", "ann") as res:
            res.cancel()
        self.assertEqual((res.state, self.remaining()), ("cancelled", 2))
        with self.lim.reserve("signup", "ann") as res:
            res.commit()
        self.assertEqual((res.state, self.remaining()), ("committed", 1))

    def test_denied_needs_nothing(self):
        self.lim.check("signup", "ann", 2)
        with self.lim.reserve("signup", "ann") as res:
            self.assertFalse(res.allowed)
            self.assertIsNone(res.id)
        self.assertEqual(res.state, "none")

    def test_expired_at_the_end_of_the_block(self):
        t = MONDAY
        with self.assertRaises(rlstore.ReservationExpired):
            with self.lim.reserve("signup", "ann", ttl_ms=1000, now_ms=t) as res:
                # the block outlives the TTL: the commit at its end is refused
                self.lim.check("signup", "bob", now_ms=t + 5000)
                res.commit(now_ms=t + 5000)
        self.assertEqual(res.state, "expired")
        self.assertEqual(self.lim.peek("signup", "ann", now_ms=t + 5000).remaining, 2)

    def test_cancel_failure_does_not_hide_the_exception(self):
        with self.assertRaises(KeyError), self.assertLogs("rlstore", "WARNING") as logs:
            with self.lim.reserve("signup", "ann") as res:
                self.lim.close()        # the cancel will fail (Misuse)
                raise KeyError("the block's own")
        self.assertIn("cannot cancel reservation %d: EMISUSE" % res.id, logs.output[0])
        self.assertEqual(res.state, "pending")


class TestResult(Base):
    def test_frozen_and_retry_after(self):
        r = self.lim.check("signup", "ann", now_ms=MONDAY)
        self.assertEqual((r.retry_after_ms, r.retry_after), (0, 0.0))
        with self.assertRaises(AttributeError):
            r.allowed = False
        r = self.lim.check("signup", "ann", 3, now_ms=MONDAY)
        self.assertEqual((r.reason, r.retry_after_ms, r.retry_after),
                         ("cost_exceeds_limit", -1, None))
        self.lim.check("signup", "ann", now_ms=MONDAY)
        r = self.lim.check("signup", "ann", now_ms=MONDAY + 1500)
        self.assertEqual(r.retry_after, (86400000 - 1500) / 1000)
        self.assertEqual(r.headers()["Retry-After"], "86399")   # whole seconds, up


class TestShorthand(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(shorthand.parse("20/day"), [(20, "1d")])
        self.assertEqual(shorthand.parse("5 per 10 minutes; 100/hour,1000/month"),
                         [(5, "10m"), (100, "1h"), (1000, "1mo")])
        for bad in ("", "20", "20/fortnight", "0/day", "x/day", "5/year", None):
            with self.assertRaises(rlstore.InvalidArgument, msg=repr(bad)):
                shorthand.parse(bad)

    def test_rules_apply_and_decide(self):
        yaml = shorthand.rules_yaml({"login": "2/minute;3/day", "api": "1/second"}, key="string",
                                    strategy="fixed-window")
        with tempfile.TemporaryDirectory() as d, rlstore.Limiter(os.path.join(d, "s.db")) as lim:
            lim.rules_apply(yaml)
            lim_rows = {(l["action"], l["name"], l["limit"], l["window_ms"], l["anchor"])
                        for l in lim.rules_describe().limits}
            self.assertEqual(lim_rows, {("login", "2_per_1m", 2, 60000, "first_hit"),
                                        ("login", "3_per_1d", 3, 86400000, "first_hit"),
                                        ("api", "1_per_1s", 1, 1000, "first_hit")})
            # first_hit: the minute starts at the first request, as limits' FixedWindow
            t = MONDAY + 59000
            got = [lim.check("login", "k", now_ms=t + dt).allowed for dt in (0, 1, 2, 60000)]
            self.assertEqual(got, [True, True, False, True])
            self.assertFalse(lim.check("login", "k", now_ms=t + 60001).allowed)  # 3/day
        moving = shorthand.rules_yaml({"a": "1/second"}, strategy="moving-window")
        self.assertIn("algorithm: sliding_log", moving)
        with self.assertRaises(rlstore.InvalidArgument):
            shorthand.rules_yaml({"a": "1/second"}, strategy="token-bucket")
        with self.assertRaises(rlstore.InvalidArgument):
            shorthand.rules_yaml({"bad name": "1/second"})


if __name__ == "__main__":
    unittest.main()
