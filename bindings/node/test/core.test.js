'use strict';
// The checks: check, peek, refund, reserve/commit/cancel, checkMany,
// headers, their async twins, and the event loop while a check waits.
const test = require('node:test');
const assert = require('node:assert/strict');
const { rlstore, T0, fresh, holdWriteLock, hasPython } = require('./helpers');

test('check admits up to the limit, then denies with a retry time', (t) => {
  const { lim } = fresh(t);
  for (let i = 1; i <= 5; i++) {
    const r = lim.check('api', 'u1', 1, { now: T0 });
    assert.equal(r.allowed, true);
    assert.equal(r.reason, 'ok');
    assert.equal(r.remaining, 5 - i);
    assert.equal(r.limit, 5);
    assert.equal(r.rule, 'minute');
    assert.equal(r.windowMs, 60000);
  }
  const d = lim.check('api', 'u1', 1, { now: T0 });
  assert.equal(d.allowed, false);
  assert.equal(d.reason, 'limit');
  assert.equal(d.retryAfterMs, 30000);   // the minute ends at :01:00
  assert.equal(d.error, undefined);
  // the next window admits again; another key never shared the budget
  assert.equal(lim.check('api', 'u1', 1, { now: T0 + 30000 }).allowed, true);
  assert.equal(lim.check('api', 'u2', 5, { now: T0 }).allowed, true);
});

test('cost: several units at once; larger than the limit never admits', (t) => {
  const { lim } = fresh(t);
  assert.equal(lim.check('api', 'k', 4, { now: T0 }).remaining, 1);
  assert.equal(lim.check('api', 'k', 2, { now: T0 }).allowed, false);
  const never = lim.check('api', 'other', 6, { now: T0 });
  assert.equal(never.reason, 'cost_exceeds_limit');
  assert.equal(never.retryAfterMs, null);
  assert.equal(lim.check('api', 'k', 10n ** 0n, { now: BigInt(T0) }).allowed, true);   // BigInt arguments
});

test('the library clock: check without now', (t) => {
  const { lim } = fresh(t);
  const r = lim.check('api', 'clock');
  assert.equal(r.allowed, true);
  assert.ok(r.resetMs > 0 && r.resetMs <= 60000);
});

test('peek charges nothing; refund gives back what was charged', (t) => {
  const { lim } = fresh(t);
  lim.check('api', 'p', 3, { now: T0 });
  const p = lim.peek('api', 'p', 1, { now: T0 });
  assert.equal(p.allowed, true);
  assert.equal(p.remaining, 2);
  assert.equal(lim.peek('api', 'p', 1, { now: T0 }).remaining, 2);   // nothing charged
  assert.equal(lim.peek('api', 'p', 3, { now: T0 }).allowed, false);
  assert.equal(lim.refund('api', 'p', 2, { now: T0 }), 2);
  assert.equal(lim.peek('api', 'p', 1, { now: T0 }).remaining, 4);
  assert.equal(lim.refund('api', 'p', 5, { now: T0 }), 1);   // only what was in use
  assert.equal(lim.refund('api', 'p', 1, { now: T0 }), 0);
});

test('reserve: commit keeps the charge, cancel refunds it', (t) => {
  const { lim } = fresh(t);
  const a = lim.reserve('api', 'r', 2, { now: T0 });
  assert.equal(a.allowed, true);
  assert.ok(a.id > 0);
  a.commit({ now: T0 });
  const b = lim.reserve('api', 'r', 3, { now: T0 });
  assert.equal(b.result.remaining, 0);
  b.cancel({ now: T0 });
  assert.equal(lim.peek('api', 'r', 1, { now: T0 }).remaining, 3);
  // settled twice: the library's ENOTFOUND
  assert.throws(() => lim.commit(a.id, { now: T0 }), rlstore.NotFoundError);
  const denied = lim.reserve('api', 'r', 4, { now: T0 });
  assert.equal(denied.allowed, false);
  assert.equal(denied.id, 0);
  assert.throws(() => denied.commit(), rlstore.InvalidArgumentError);
});

test('an expired reservation: commit is ReservationExpiredError', (t) => {
  const { lim } = fresh(t);
  const r = lim.reserve('api', 'x', 1, { now: T0, ttlMs: 1000 });
  assert.throws(() => r.commit({ now: T0 + 5000 }), (e) => e instanceof rlstore.ReservationExpiredError && e.code === 'EEXPIRED');
});

test('withReservation commits on success and cancels on a throw', async (t) => {
  const { lim } = fresh(t);
  const ok = await lim.withReservation('api', 'w', 2, async () => 'done');
  assert.deepEqual([ok.allowed, ok.value], [true, 'done']);
  await assert.rejects(lim.withReservation('api', 'w', 3, async () => {
    throw new Error('upstream failed');
  }), /upstream failed/);
  assert.equal(lim.peek('api', 'w', 1).remaining, 3);   // the 3 came back
  const no = await lim.withReservation('api', 'w', 9, async () => assert.fail('must not run'));
  assert.equal(no.allowed, false);
});

test('checkMany: all or nothing, one result per item', (t) => {
  const { lim } = fresh(t);
  lim.check('api', 'b', 4, { now: T0 });
  const denied = lim.checkMany([{ action: 'api', key: 'a', cost: 2 }, { action: 'api', key: 'b', cost: 2 }], { now: T0 });
  assert.equal(denied.allowed, false);
  assert.deepEqual(denied.results.map((r) => r.reason), ['batch', 'limit']);
  assert.equal(lim.peek('api', 'a', 1, { now: T0 }).remaining, 5);   // a not charged
  const ok = lim.checkMany([{ action: 'api', key: 'a' }, { action: 'signup', key: '192.0.2.1' }], { now: T0 });
  assert.equal(ok.allowed, true);
  assert.equal(ok.results.length, 2);
  assert.deepEqual(lim.checkMany([]), { allowed: true, results: [] });
});

test('headers: the library formats RateLimit, RateLimit-Policy, Retry-After', (t) => {
  const { lim } = fresh(t);
  const ok = lim.check('api', 'h', 1, { now: T0 });
  const h = new Map(lim.headers(ok));
  assert.equal(h.get('RateLimit-Policy'), '"minute";q=5;w=60');
  assert.equal(h.get('RateLimit'), '"minute";r=4;t=30');
  assert.equal(h.has('Retry-After'), false);
  lim.check('api', 'h', 4, { now: T0 });
  const d = new Map(rlstore.Limiter.headers(lim.check('api', 'h', 1, { now: T0 }), 'api-policy'));
  assert.equal(d.get('Retry-After'), '30');
  assert.match(d.get('RateLimit-Policy'), /^"api-policy";q=5;w=60$/);
});

test('async twins resolve like the sync calls', async (t) => {
  const { lim } = fresh(t);
  const r = await lim.checkAsync('api', 'as', 2, { now: T0 });
  assert.equal(r.remaining, 3);
  assert.equal((await lim.peekAsync('api', 'as', 1, { now: T0 })).remaining, 3);
  assert.equal(await lim.refundAsync('api', 'as', 1, { now: T0 }), 1);
  const rsv = await lim.reserveAsync('api', 'as', 1, { now: T0 });
  await rsv.commitAsync({ now: T0 });
  const rsv2 = await lim.reserveAsync('api', 'as', 1, { now: T0 });
  await rsv2.cancelAsync({ now: T0 });
  const many = await lim.checkManyAsync([{ action: 'api', key: 'as' }, { action: 'api', key: 'bs' }], { now: T0 });
  assert.equal(many.allowed, true);
  // many checks in flight at once on one handle: serialised, all counted
  const all = await Promise.all(Array.from({ length: 20 }, () => lim.checkAsync('api', 'burst', 1, { now: T0 })));
  assert.equal(all.filter((x) => x.allowed).length, 5);
  assert.equal(all.filter((x) => !x.allowed).length, 15);
});

test('a check waiting for the write lock does not block the event loop', { skip: !hasPython() && 'python3 with sqlite3 is needed to hold the lock' }, async (t) => {
  const { lim, file } = fresh(t, { busyTimeoutMs: 60000 });
  lim.check('api', 'warm', 1);
  const lock = await holdWriteLock(file);
  let settled = false;
  const pending = lim.checkAsync('api', 'lk', 1).then((r) => {
    settled = true;
    return r;
  });
  // The loop keeps turning while the check waits: three timer ticks run
  // before the lock is released (a blocked loop would never tick).
  let ticks = 0;
  await new Promise((resolve) => {
    const iv = setInterval(() => {
      ticks++;
      if (ticks === 3) {
        clearInterval(iv);
        resolve();
      }
    }, 5);
  });
  assert.equal(settled, false);
  await lock.release();
  const r = await pending;
  assert.equal(r.allowed, true);
  assert.equal(r.error, undefined);
});

test('the database busy past busyTimeoutMs: the failure policy answers', { skip: !hasPython() && 'python3 with sqlite3 is needed to hold the lock' }, async (t) => {
  const { lim, file } = fresh(t, { busyTimeoutMs: 50 });
  lim.check('api', 'warm', 1);
  lim.check('open', 'warm', 1);
  const lock = await holdWriteLock(file);
  try {
    const deny = lim.check('api', 'busy', 1);
    assert.equal(deny.allowed, false);
    assert.equal(deny.reason, 'degraded');
    assert.ok(deny.error instanceof rlstore.BusyError);
    assert.equal(deny.error.code, 'EBUSY');
    const allow = await lim.checkAsync('open', 'busy', 1);   // on_error: allow
    assert.equal(allow.allowed, true);
    assert.equal(allow.reason, 'degraded');
    assert.ok(allow.error instanceof rlstore.RlstoreError);
  } finally {
    await lock.release();
  }
  assert.equal(lim.check('api', 'busy', 1).allowed, true);
});

test('worker_threads: a Limiter per worker, the limit holds across them', async (t) => {
  const { file, lim } = fresh(t);
  const { Worker } = require('worker_threads');
  const src = `
    const { parentPort, workerData } = require('worker_threads');
    const rl = require(workerData.pkg);
    const l = rl.Limiter.open(workerData.file);
    (async () => {
      let n = 0;
      for (let i = 0; i < 4; i++) if ((await l.checkAsync('api', 'shared', 1, { now: workerData.now })).allowed) n++;
      l.close();
      parentPort.postMessage(n);
    })();`;
  const runs = Array.from({ length: 3 }, () => new Promise((resolve, reject) => {
    const w = new Worker(src, { eval: true, workerData: { pkg: require.resolve('..'), file, now: T0 } });
    w.on('message', resolve);
    w.on('error', reject);
  }));
  const admitted = (await Promise.all(runs)).reduce((a, b) => a + b, 0);
  assert.equal(admitted, 5);   // 12 checks, a limit of 5
  assert.equal(lim.peek('api', 'shared', 1, { now: T0 }).remaining, 0);
});
