'use strict';
// The binding on PostgreSQL: run by tests/node/test_node.sh in make test's
// PostgreSQL pass, with RLSTORE_TEST_NODE_PG the URI of a fresh schema.
const test = require('node:test');
const assert = require('node:assert/strict');
const { rlstore, RULES, T0 } = require('./helpers');

const URI = process.env.RLSTORE_TEST_NODE_PG;
const skip = !URI && 'RLSTORE_TEST_NODE_PG is not set (tests/node/test_node.sh sets it in the PostgreSQL pass)';

let lim;
test.before(() => {
  if (!URI) return;
  lim = rlstore.Limiter.open(URI);
  lim.rules.apply(RULES);
});
test.after(() => lim && lim.close());

test('PostgreSQL: checks, sync and async, hold the limit', { skip }, async () => {
  for (let i = 0; i < 5; i++) assert.equal(lim.check('api', 'pg1', 1, { now: T0 }).allowed, true);
  assert.equal(lim.check('api', 'pg1', 1, { now: T0 }).reason, 'limit');
  const all = await Promise.all(Array.from({ length: 12 }, () => lim.checkAsync('api', 'pg2', 1, { now: T0 })));
  assert.equal(all.filter((r) => r.allowed).length, 5);
});

test('PostgreSQL: reservations, batches, blocks, usage, explain', { skip }, async () => {
  const r = await lim.reserveAsync('api', 'pg3', 2, { now: T0 });
  await r.cancelAsync({ now: T0 });
  assert.equal(lim.peek('api', 'pg3', 1, { now: T0 }).remaining, 5);
  const b = lim.checkMany([{ action: 'api', key: 'pg3', cost: 5 }, { action: 'api', key: 'pg4', cost: 6 }], { now: T0 });
  assert.equal(b.allowed, false);
  lim.block('pg5', { action: 'api', now: T0 });
  assert.equal(lim.check('api', 'pg5', 1, { now: T0 }).reason, 'blocked');
  assert.ok(lim.usage({ action: 'api', now: T0 }).some((u) => u.key === 'pg1' && u.used === 5));
  assert.equal(lim.explain('api', 'pg1', { now: T0 }).limits[0].used, 5);
});

test('PostgreSQL: errors are the library\'s', { skip }, async () => {
  assert.throws(() => lim.check('nope', 'k'), rlstore.UnknownActionError);
  await assert.rejects(lim.checkAsync('api', 42), rlstore.InvalidKeyError);
  assert.throws(() => rlstore.Limiter.open('postgresql://127.0.0.1:1/none?connect_timeout=2'), rlstore.RlstoreError);
});
