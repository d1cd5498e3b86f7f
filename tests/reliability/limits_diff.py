"""Differential test of rlstore against Python's `limits` (issue #17,
defect 15), driven by tests/reliability/test_limits_diff.sh.

Random sequences of checks of one key under several actions (sliding_log
and first-hit fixed_window, limits 1 and 3 per 1000 ms; each action's run
starting again at the same early time, steps of 0..400 ms) are decided by
rlstore through its Python binding and by `limits` 2.8 (MemoryStorage with
its clock fixed to the check's time, MovingWindow and FixedWindow
strategies, which admit exactly as sliding_log and first-hit fixed_window
do).  Every decision must agree: with a fresh database per action, and
with all actions in one database (where one action's history used to leak
into the others' clocks).  Prints one line per test and cmocka's summary.

The fake clock counts milliseconds as `limits`' seconds, so that every
comparison is exact integer arithmetic (a window of 1000 "seconds").
Expired entries are collected before each hit, synchronously (the timer
thread of MemoryStorage is not started): an entry exactly one window old
no longer counts, as in rlstore's (now - W, now].
"""
import os
import random
import sys
import tempfile
import time

import limits
import limits.storage.memory as memory
import rlstore

T0 = 1767225600000  # 2026-01-01T00:00:00Z
ACTIONS = {"sl1": ("moving", 1), "sl3": ("moving", 3),
           "fh1": ("fixed", 1), "fh3": ("fixed", 3)}
RULES = """version: 1
actions:
  sl1: { limits: [ { name: l, algorithm: sliding_log, limit: 1, window: 1000ms } ] }
  sl3: { limits: [ { name: l, algorithm: sliding_log, limit: 3, window: 1000ms } ] }
  fh1: { limits: [ { name: l, algorithm: fixed_window, limit: 1, window: 1000ms, anchor: first_hit } ] }
  fh3: { limits: [ { name: l, algorithm: fixed_window, limit: 3, window: 1000ms, anchor: first_hit } ] }
"""

clock = [0.0]
time.time = lambda: clock[0]  # limits reads the clock through time.time()
memory.MemoryStorage._MemoryStorage__schedule_expiry = lambda self: None


def reference(action, times):
    """limits' decisions for one action's run, in a storage of its own."""
    kind, amount = ACTIONS[action]
    storage = memory.MemoryStorage()
    strategy = (limits.strategies.MovingWindowRateLimiter if kind == "moving"
                else limits.strategies.FixedWindowRateLimiter)(storage)
    item = limits.RateLimitItemPerSecond(amount, 1000)
    out = []
    for t in times:
        clock[0] = float(t)
        storage._MemoryStorage__expire_events()
        out.append(bool(strategy.hit(item, "key")))
    return out


def open_db(path):
    db = rlstore.Limiter.open(path)
    db.rules_apply(RULES, name="diff.yaml", now_ms=T0)
    return db


def rlstore_run(db, action, times):
    return [db.check(action, "key", now_ms=T0 + t).allowed for t in times]


def sequences(seed, n):
    rng = random.Random(seed)
    out = {}
    for action in ACTIONS:
        t, times = 0, []
        for _ in range(n):
            t += rng.randint(0, 400)
            times.append(t)
        out[action] = times
    return out


def agree(got, want):
    return sum(1 for g, w in zip(got, want) if g == w)


def main():
    n = int(os.environ.get("RLS_DIFF_CHECKS", "750"))
    seed = int(os.environ.get("RLS_DIFF_SEED", "17"))
    seqs = sequences(seed, n)
    want = {a: reference(a, seqs[a]) for a in ACTIONS}
    total = n * len(ACTIONS)
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        results = {}
        # a database per action
        same = 0
        for a in ACTIONS:
            with open_db(os.path.join(tmp, a + ".db")) as db:
                same += agree(rlstore_run(db, a, seqs[a]), want[a])
        results["separate databases"] = same
        # one database for all actions, each run starting again at T0
        same = 0
        with open_db(os.path.join(tmp, "one.db")) as db:
            for a in ACTIONS:
                same += agree(rlstore_run(db, a, seqs[a]), want[a])
        results["one database"] = same
    for name, same in results.items():
        if same == total:
            passed += 1
            print("ok   %s: %d of %d decisions agree with limits %s"
                  % (name, same, total, limits.__version__))
        else:
            failed += 1
            print("FAIL %s: %d of %d decisions agree with limits %s"
                  % (name, same, total, limits.__version__))
    print("[  PASSED  ] %d test(s)." % passed)
    if failed:
        print("[  FAILED  ] %d test(s), listed above" % failed)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
