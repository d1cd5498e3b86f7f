"""Threads, fork() and asyncio: what the binding promises about them."""

import asyncio
import multiprocessing
import os
import select
import signal
import sqlite3
import tempfile
import threading
import unittest

import rlstore
import rlstore.aio

MONDAY = 1795392000000
RULES = """\
version: 1
actions:
  api:
    limits:
      - { name: rate, algorithm: fixed_window, limit: 100, window: 1d }
"""
HANG_GUARD_S = 120   # only against a hang: a passing run never waits on it


def wait_child(pid, rfd):
    """The child's exit status and what it wrote to rfd; kills it if it
    neither exits nor writes in HANG_GUARD_S (a deadlock)."""
    ready, _, _ = select.select([rfd], [], [], HANG_GUARD_S)
    if not ready:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise AssertionError("the child hung")
    out = os.read(rfd, 1000)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) if hasattr(os, "waitstatus_to_exitcode") \
        else status >> 8, out


def _raise_in_worker(path):
    with rlstore.Limiter(path) as lim:
        lim.check("nosuchaction", "k")


class Base(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "c.db")
        self.lim = rlstore.Limiter(self.path)
        self.lim.rules_apply(RULES)

    def tearDown(self):
        self.lim.close()
        self.dir.cleanup()


class TestFork(Base):
    def fork_and_check(self):
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:   # the child: the inherited Limiter, its lock free
            try:
                r = self.lim.check("api", "shared", now_ms=MONDAY)
                os.write(wfd, b"%d" % r.remaining)
                os._exit(0)
            except BaseException as e:   # noqa: B902 - report anything
                os.write(wfd, repr(e).encode()[:900])
                os._exit(1)
        os.close(wfd)
        try:
            return wait_child(pid, rfd)
        finally:
            os.close(rfd)

    def test_child_uses_the_inherited_limiter(self):
        self.lim.check("api", "shared", now_ms=MONDAY)
        code, out = self.fork_and_check()
        self.assertEqual((code, out), (0, b"98"))
        # the child's charge is in the database; the parent's handle still works
        self.assertEqual(self.lim.peek("api", "shared", now_ms=MONDAY).remaining, 98)

    def test_fork_waits_for_a_call_in_progress(self):
        # Another thread is inside a call (it holds the Limiter's lock) when
        # this thread forks: fork first waits for the call to end, so the
        # child never inherits a handle in the middle of a call, nor a held
        # lock (which would deadlock its first check).
        in_call, release = threading.Event(), threading.Event()

        def busy_thread():
            with self.lim._lock:
                in_call.set()
                release.wait()
        t = threading.Thread(target=busy_thread)
        t.start()
        in_call.wait()
        # This hook runs before rlstore's (hooks run newest first): it lets
        # the other thread finish while rlstore's hook waits for it.
        os.register_at_fork(before=release.set)
        code, out = self.fork_and_check()
        t.join()
        self.assertEqual((code, out), (0, b"99"))

    def test_async_limiter_in_a_child(self):
        # its executor's worker thread does not survive fork(): the child
        # makes its own instead of waiting forever on the parent's
        alim = rlstore.aio.AsyncLimiter(limiter=self.lim)
        self.assertTrue(asyncio.run(alim.check("api", "a", now_ms=MONDAY)).allowed)
        rfd, wfd = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                r = asyncio.run(alim.check("api", "a", now_ms=MONDAY))
                os.write(wfd, b"%d" % r.remaining)
                os._exit(0)
            except BaseException as e:   # noqa: B902
                os.write(wfd, repr(e).encode()[:900])
                os._exit(1)
        os.close(wfd)
        try:
            code, out = wait_child(pid, rfd)
        finally:
            os.close(rfd)
        self.assertEqual((code, out), (0, b"98"))

    def test_exceptions_cross_processes(self):
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(1) as pool:
            with self.assertRaises(rlstore.UnknownAction) as cm:
                pool.apply(_raise_in_worker, (self.path,))
        self.assertEqual(cm.exception.name, "ENOACTION")
        self.assertFalse(cm.exception.result.allowed)


class TestThreads(Base):
    def test_threads_share_one_limiter_exactly(self):
        admitted, lock = [], threading.Lock()

        def worker():
            n = sum(self.lim.check("api", "k", now_ms=MONDAY).allowed for _ in range(40))
            with lock:
                admitted.append(n)
        ts = [threading.Thread(target=worker) for _ in range(5)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        self.assertEqual(sum(admitted), 100)


class TestAsyncio(Base):
    def test_loop_keeps_running_during_a_blocked_check(self):
        holder = sqlite3.connect(self.path, isolation_level=None, timeout=60)

        async def main():
            alim = await rlstore.aio.open(self.path, busy_timeout_ms=HANG_GUARD_S * 1000)
            try:
                holder.execute("BEGIN IMMEDIATE")       # the write lock, held
                task = asyncio.ensure_future(alim.check("api", "k", now_ms=MONDAY))
                # wait (turning the loop) until the check is inside the library
                while not alim.limiter._lock.locked() and not task.done():
                    await asyncio.sleep(0)
                ticks = 0
                for _ in range(500):
                    await asyncio.sleep(0)
                    ticks += 1
                # 500 turns of the loop while the check waits for the lock
                self.assertFalse(task.done())
                holder.execute("ROLLBACK")              # done from the loop itself
                r = await task
                return ticks, r
            finally:
                await alim.close()
        try:
            ticks, r = asyncio.run(main())
        finally:
            holder.close()
        self.assertEqual(ticks, 500)
        self.assertEqual((r.allowed, r.degraded, r.error), (True, False, None))

    def test_async_api(self):
        async def main():
            async with rlstore.aio.AsyncLimiter(self.path) as alim:
                r = await alim.check("api", "a", 10, now_ms=MONDAY)
                p = await alim.peek("api", "a", now_ms=MONDAY)
                many = await alim.check_many([("api", "b"), ("api", "c", 2)], now_ms=MONDAY)
                async with alim.reserve("api", "a", 5, now_ms=MONDAY) as res:
                    self.assertTrue(res.allowed)
                try:
                    async with alim.reserve("api", "a", 7, now_ms=MONDAY) as res2:
                        raise RuntimeError("no")
                except RuntimeError:
                    pass
                res3 = await alim.reserve("api", "a", now_ms=MONDAY)
                await alim.cancel(res3, now_ms=MONDAY)
                refunded = await alim.refund("api", "a", 3, now_ms=MONDAY)
                ex = await alim.explain("api", "a", now_ms=MONDAY)
                versions = await alim.rules_versions()
                with self.assertRaises(rlstore.UnknownAction):
                    await alim.check("nope", "a")
                return r, p, many, res, res2, refunded, ex, versions
        r, p, many, res, res2, refunded, ex, versions = asyncio.run(main())
        self.assertEqual((r.remaining, p.remaining), (90, 90))
        self.assertEqual([m.allowed for m in many], [True, True])
        self.assertEqual((res.state, res2.state), ("committed", "cancelled"))
        self.assertEqual(refunded, 3)
        self.assertEqual(ex.limits[0]["used"], 12)
        self.assertEqual(len(versions), 1)


if __name__ == "__main__":
    unittest.main()
