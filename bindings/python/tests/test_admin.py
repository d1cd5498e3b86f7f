"""The admin calls of the binding, against the real library."""

import os
import tempfile
import unittest

import rlstore

MONDAY = 1795392000000  # 2026-11-23T00:00:00Z
HOUR = 3600000
RULES = """\
version: 1
tiers:
  free: {}
  pro: {}
  staff: { unlimited: true }
actions:
  api:
    limits:
      - { name: rate, algorithm: fixed_window, limit: 5, window: 1h }
    tiers:
      pro: [ { name: rate, limit: 50 } ]
  signup:
    key: ip
    limits:
      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }
"""


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "limits.db")
        self.lim = rlstore.Limiter(self.path, tool="pytest-admin")
        self.v1 = self.lim.rules_apply(RULES, name="rules.yaml", comment="first", now_ms=MONDAY)

    def tearDown(self):
        self.lim.close()
        self.dir.cleanup()

    def use(self, n, action="api", key="u1", t=MONDAY):
        return [self.lim.check(action, key, now_ms=t) for _ in range(n)]


class TestRules(Base):
    def test_versions_get_rollback(self):
        v2 = self.lim.rules_apply(RULES.replace("limit: 5,", "limit: 7,"), name="b.yaml",
                                  now_ms=MONDAY)
        self.assertEqual((self.v1, v2), (1, 2))
        vs = self.lim.rules_versions()
        self.assertEqual([(v["version"], v["active"], v["source"]) for v in vs],
                         [(2, 1, "b.yaml"), (1, 0, "rules.yaml")])
        self.assertEqual(vs[1]["tool"], "pytest-admin")
        self.assertEqual(vs[1]["comment"], "first")
        self.assertEqual(self.lim.rules_get(1), RULES)
        self.assertIn("limit: 7,", self.lim.rules_get())
        v3 = self.lim.rules_rollback(1, comment="back", now_ms=MONDAY)
        self.assertEqual(v3, 3)
        self.assertEqual(self.lim.rules_get(), RULES)
        self.assertEqual(self.use(1)[0].limit, 5)
        with self.assertRaises(rlstore.NotFound):
            self.lim.rules_get(99)

    def test_if_version(self):
        with self.assertRaises(rlstore.Conflict):
            self.lim.rules_apply(RULES, if_version=0)
        # the same rules store nothing (idempotent apply): a changed limit
        self.assertEqual(self.lim.rules_apply(RULES, if_version=1), 1)
        self.assertEqual(self.lim.rules_apply(RULES.replace("limit: 5,", "limit: 6,"),
                                              if_version=1), 2)

    def test_dry_run(self):
        self.use(4)
        over = self.lim.rules_dry_run(RULES.replace("limit: 5,", "limit: 2,"), now_ms=MONDAY)
        self.assertEqual([(r["action"], r["key"], r["limit"], r["used"], r["old_limit"],
                           r["new_limit"]) for r in over], [("api", "u1", "rate", 4, 5, 2)])
        self.assertEqual(len(self.lim.rules_versions()), 1)   # nothing stored
        with self.assertRaises(rlstore.ConfigError):
            self.lim.rules_dry_run("version: 1\nactions: {}\n", name="empty.yaml")

    def test_describe_and_set_limit(self):
        d = self.lim.rules_describe()
        self.assertEqual(sorted(t["name"] for t in d.tiers), ["free", "pro", "staff"])
        rate = [l for l in d.limits if l["action"] == "api" and l["tier"] == ""][0]
        self.assertEqual((rate["algorithm"], rate["limit"], rate["window_ms"]),
                         ("fixed_window", 5, HOUR))
        vals = self.lim.rules_limits()
        self.assertIn(("api", "pro", "rate", "limit", 50),
                      [(v["action"], v["tier"], v["name"], v["field"], v["value"]) for v in vals])
        text, line = self.lim.rules_edit_limit("api", "rate", 9)
        self.assertIn("limit: 9,", text.splitlines()[line - 1])
        self.assertEqual(len(self.lim.rules_versions()), 1)
        v = self.lim.rules_set_limit("api", "rate", 9, now_ms=MONDAY)
        self.assertEqual(v, 2)
        self.assertEqual(self.use(1)[0].limit, 9)
        with self.assertRaises(rlstore.Conflict):
            self.lim.rules_set_limit("api", "rate", 10, if_version=1, now_ms=MONDAY)
        with self.assertRaises(rlstore.NotFound):
            self.lim.rules_set_limit("api", "nosuch", 10, now_ms=MONDAY)


class TestPolicy(Base):
    def test_block_unblock(self):
        self.lim.block("u1", "api", until_ms=MONDAY + HOUR, reason="abuse", now_ms=MONDAY)
        r = self.use(1)[0]
        self.assertEqual((r.allowed, r.reason), (False, "blocked"))
        self.assertEqual(r.retry_after_ms, HOUR)
        self.assertEqual(r.retry_after, 3600.0)
        b = self.lim.blocks(now_ms=MONDAY)
        self.assertEqual([(x["key"], x["action"], x["until_ms"], x["reason"], x["kind"])
                          for x in b], [("u1", "api", MONDAY + HOUR, "abuse", "manual")])
        self.lim.unblock("u1", "api", now_ms=MONDAY)
        self.assertTrue(self.use(1)[0].allowed)
        with self.assertRaises(rlstore.NotFound):
            self.lim.unblock("u1", "api", now_ms=MONDAY)

    def test_block_forever_every_action(self):
        self.lim.block("203.0.113.9", now_ms=MONDAY)
        r = self.lim.check("signup", "203.0.113.9", now_ms=MONDAY)
        self.assertEqual((r.allowed, r.retry_after_ms, r.retry_after), (False, -1, None))
        self.assertEqual(self.lim.blocks(now_ms=MONDAY)[0]["until_ms"], 0)

    def test_tiers(self):
        self.lim.tier_set("user:*", "pro", action="api", now_ms=MONDAY)
        self.lim.tier_set("boss", "staff", until_ms=MONDAY + HOUR, now_ms=MONDAY)
        self.assertEqual(self.lim.check("api", "user:1", now_ms=MONDAY).limit, 50)
        self.assertTrue(all(r.allowed for r in self.use(10, key="boss")))
        rows = {(t["pattern"], t["tier"], t["kind"], t["action"]) for t in
                self.lim.tiers(now_ms=MONDAY)}
        self.assertEqual(rows, {("user:*", "pro", "prefix", "api"), ("boss", "staff", "exact", "")})
        self.assertEqual(self.lim.explain("api", "user:1", now_ms=MONDAY).info["tier"], "pro")
        self.lim.tier_unset("user:*", action="api", now_ms=MONDAY)
        self.assertEqual(self.lim.check("api", "user:1", now_ms=MONDAY).limit, 5)
        with self.assertRaises(rlstore.Error):
            self.lim.tier_set("x", "gold", now_ms=MONDAY)

    def test_overrides_and_reset(self):
        self.lim.override_set("api", "u1", "rate", 1, now_ms=MONDAY)
        self.assertEqual([r.allowed for r in self.use(2)], [True, False])
        o = self.lim.overrides(action="api", now_ms=MONDAY)
        self.assertEqual([(x["key"], x["limit_name"], x["limit"]) for x in o], [("u1", "rate", 1)])
        self.assertEqual(self.lim.overrides(key="u2", now_ms=MONDAY), [])
        self.lim.override_unset("api", "u1", "rate", now_ms=MONDAY)
        self.assertTrue(self.use(1)[0].allowed)
        self.lim.reset("api", "u1", now_ms=MONDAY)
        self.assertEqual(self.lim.peek("api", "u1", now_ms=MONDAY).remaining, 5)
        with self.assertRaises(rlstore.NotFound):
            self.lim.override_set("api", "u1", "nosuch", 3, now_ms=MONDAY)

    def test_refund_units(self):
        self.use(2)
        self.assertEqual(self.lim.refund("api", "u1", 5, now_ms=MONDAY), 2)
        self.assertEqual(self.lim.refund("api", "u1", now_ms=MONDAY), 0)


class TestObserve(Base):
    def test_usage_explain_audit_stats(self):
        self.use(5, key="heavy")
        self.use(1, key="light")
        rows = self.lim.usage(action="api", now_ms=MONDAY)
        self.assertEqual([(r["key"], r["used"], r["state"]) for r in rows][:2],
                         [("heavy", 5, "limited"), ("light", 1, "ok")])
        self.assertEqual(self.lim.usage_count(action="api", now_ms=MONDAY), 2)
        self.assertEqual([r["key"] for r in self.lim.usage(sort="key", key_substr="ligh",
                                                          now_ms=MONDAY)], ["light"])
        ex = self.lim.explain("api", "heavy", now_ms=MONDAY)
        self.assertEqual((ex.info["allowed"], ex.info["reason"]), (0, "limit"))
        self.assertEqual([(l["name"], l["used"], l["remaining"]) for l in ex.limits],
                         [("rate", 5, 0)])
        self.lim.block("heavy", "api", reason="spam", now_ms=MONDAY)
        audit = self.lim.audit("heavy")
        self.assertEqual((audit[0]["op"], audit[0]["reason"], audit[0]["tool"]),
                         ("block", "spam", "pytest-admin"))
        self.assertGreaterEqual(len(self.lim.audit(limit=10)), 2)
        # stats are written at most once a second per process, and on close
        self.lim.close()
        self.lim = rlstore.Limiter(self.path)
        st = self.lim.stats(60, now_ms=MONDAY + 1000)
        tot = {r["action"]: (r["allowed"], r["denied"]) for r in st.totals}
        self.assertEqual(tot.get("api"), (6, 0))
        self.assertTrue(all(r["action"] == "api" for r in st.recent))

    def test_doctor_and_gc(self):
        checks = {r["check"]: r["status"] for r in self.lim.doctor()}
        self.assertEqual(checks["quick_check"], "ok")
        self.assertEqual(checks["rules"], "ok")
        self.use(1)
        self.assertEqual(self.lim.gc(1000, now_ms=MONDAY + 2 * HOUR), 1)

    def test_copy_from(self):
        self.use(2)
        self.lim.block("bad", "api", now_ms=MONDAY)
        with rlstore.Limiter(os.path.join(self.dir.name, "copy.db")) as dst:
            rep = dst.copy_from(self.lim, dry_run=True, now_ms=MONDAY)
            self.assertEqual({r["what"] for r in rep} >= {"rules", "blocks", "states"}, True)
            with self.assertRaises(rlstore.NoRules):
                dst.rules_get()
            rep = {r["what"]: r["copied"] for r in dst.copy_from(self.lim, now_ms=MONDAY)}
            self.assertEqual((rep["rules"], rep["blocks"], rep["states"]), (1, 1, 1))
            self.assertEqual(dst.peek("api", "u1", now_ms=MONDAY).remaining, 3)
            with self.assertRaises(rlstore.InvalidArgument):
                dst.copy_from(self.lim, what=("everything",))

    def test_helpers(self):
        self.assertEqual(rlstore.parse_duration("1h30m"), 90 * 60000)
        self.assertEqual(rlstore.parse_time("2026-11-23"), MONDAY)
        self.assertEqual(rlstore.format_time(MONDAY + 250), "2026-11-23T00:00:00.250Z")
        self.assertEqual(rlstore.escape_key(b"a\x01\xff"), "a\\x01\\xff")
        for bad in ("soon", "1x"):
            with self.assertRaises(rlstore.InvalidArgument):
                rlstore.parse_duration(bad)

    def test_undecodable_keys_round_trip(self):
        key = b"user:\xff\xfe"
        self.use(1, key=key)
        row = self.lim.usage(action="api", now_ms=MONDAY)[0]
        self.assertEqual(row["key"].encode("utf-8", "surrogateescape"), key)
        self.lim.block(row["key"], "api", now_ms=MONDAY)      # as listed: the same key
        self.assertEqual(self.lim.check("api", key, now_ms=MONDAY).reason, "blocked")


if __name__ == "__main__":
    unittest.main()
