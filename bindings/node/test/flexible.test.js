'use strict';
// The rate-limiter-flexible-style facade: consume / penalty / reward /
// block / get / delete with its resolve and reject shapes.
const test = require('node:test');
const assert = require('node:assert/strict');
const { rlstore, fresh, holdWriteLock, hasPython } = require('./helpers');
const { rulesFromFlexible } = require('../flexible');

function flex(t, opts) {
  const { lim, file } = fresh(t, opts);
  return { rl: new rlstore.RateLimiterRlstore({ limiter: lim, action: 'login' }), lim, file };
}

test('consume resolves a RateLimiterRes, rejects one when denied', async (t) => {
  const { rl } = flex(t);
  const first = await rl.consume('u1');
  assert.ok(first instanceof rlstore.RateLimiterRes);
  assert.deepEqual([first.remainingPoints, first.consumedPoints, first.isFirstInDuration], [4, 1, true]);
  assert.ok(first.msBeforeNext > 0 && first.msBeforeNext <= 60000);
  const second = await rl.consume('u1', 2);
  assert.deepEqual([second.remainingPoints, second.consumedPoints, second.isFirstInDuration], [2, 3, false]);
  await rl.consume('u1', 2);
  const rej = await rl.consume('u1').then(() => assert.fail('admitted past the limit'), (r) => r);
  assert.ok(rej instanceof rlstore.RateLimiterRes, 'a denial rejects with a RateLimiterRes, not an Error');
  assert.ok(!(rej instanceof Error));
  assert.equal(rej.remainingPoints, 0);
  assert.equal(rej.consumedPoints, 6);
  assert.ok(rej.msBeforeNext > 0);
  assert.deepEqual(Object.keys(JSON.parse(String(rej))).sort(), ['consumedPoints', 'isFirstInDuration', 'msBeforeNext', 'remainingPoints']);
  // the rules' block_for (rate-limiter-flexible's blockDuration) now holds
  const blocked = await rl.consume('u1').catch((r) => r);
  assert.equal(blocked.msBeforeNext > 60000, true);
});

test('numbers are keys as rate-limiter-flexible takes them; other types are InvalidKeyError', async (t) => {
  const { rl } = flex(t);
  await rl.consume(42);
  assert.equal((await rl.get('42')).consumedPoints, 1);
  await assert.rejects(rl.consume({ id: 1 }), rlstore.InvalidKeyError);
  await assert.rejects(rl.consume(NaN), rlstore.InvalidKeyError);
  await assert.rejects(rl.consume('k', 0), rlstore.InvalidCostError);
});

test('keyPrefix prefixes keys', async (t) => {
  const { lim } = fresh(t);
  const rl = new rlstore.RateLimiterRlstore({ limiter: lim, action: 'login', keyPrefix: 'app' });
  await rl.consume('u');
  assert.equal(rl.getKey('u'), 'app:u');
  assert.equal(lim.usage({ action: 'login' })[0].key, 'app:u');
});

test('penalty charges up to the limit; reward gives back', async (t) => {
  const { rl } = flex(t);
  assert.equal((await rl.penalty('p', 3)).consumedPoints, 3);
  const full = await rl.penalty('p', 10);
  assert.deepEqual([full.consumedPoints, full.remainingPoints], [5, 0]);
  const back = await rl.reward('p', 2);
  assert.deepEqual([back.consumedPoints, back.remainingPoints], [3, 2]);
  assert.equal((await rl.consume('p')).remainingPoints, 1);
});

test('block, get, delete', async (t) => {
  const { rl } = flex(t);
  assert.equal(await rl.get('b'), null);
  const b = await rl.block('b', 10);
  assert.equal(b.msBeforeNext, 10000);
  const g = await rl.get('b');
  assert.ok(g.msBeforeNext > 0 && g.msBeforeNext <= 10000);
  assert.equal(g.remainingPoints, 0);
  const rej = await rl.consume('b').catch((r) => r);
  assert.ok(rej instanceof rlstore.RateLimiterRes);
  assert.equal(await rl.delete('b'), true);
  assert.equal(await rl.get('b'), null);
  assert.equal(await rl.delete('b'), false);
  assert.equal((await rl.block('f', 0)).msBeforeNext, -1);   // forever
  await assert.rejects(rl.block('f', -1), rlstore.InvalidArgumentError);
});

test('the database failing: consume rejects with the RlstoreError', { skip: !hasPython() && 'python3 with sqlite3 is needed to hold the lock' }, async (t) => {
  const { rl, lim, file } = flex(t, { busyTimeoutMs: 30 });
  lim.check('login', 'warm');
  const lock = await holdWriteLock(file);
  try {
    await assert.rejects(rl.consume('x'), (e) => e instanceof rlstore.BusyError && e.code === 'EBUSY');
  } finally {
    await lock.release();
  }
});

test('rulesFromFlexible writes the rules of the options', (t) => {
  const { lim } = fresh(t);
  const yaml = rulesFromFlexible([{ action: 'otp', points: 3, duration: 30, blockDuration: 60 }, { action: 'per_ip', points: 100, duration: 1, keyKind: 'ip' }]);
  lim.rules.apply(yaml);
  const limits = lim.rules.describe().limits;
  const otp = limits.find((l) => l.action === 'otp');
  assert.deepEqual([otp.limit, otp.window_ms, otp.block_for, otp.algorithm], [3, 30000, '1m', 'fixed_window']);
  assert.equal(limits.find((l) => l.action === 'per_ip').key_kind, 'ip');
  assert.throws(() => rulesFromFlexible({ action: 'x', points: 0, duration: 1 }), rlstore.InvalidArgumentError);
  assert.throws(() => rulesFromFlexible({ action: 'bad name', points: 1, duration: 1 }), rlstore.InvalidArgumentError);
  assert.throws(() => new rlstore.RateLimiterRlstore({ action: 'x' }), rlstore.InvalidArgumentError);
});
