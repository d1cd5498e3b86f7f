'use strict';
// The admin calls: rules (apply, dry run, rollback, versions, get,
// describe), blocks, tiers, overrides, reset, usage, explain, audit,
// stats, doctor, gc.
const test = require('node:test');
const assert = require('node:assert/strict');
const { rlstore, RULES, T0, fresh } = require('./helpers');

test('rules: apply, versions, get, describe, rollback', (t) => {
  const { lim } = fresh(t);
  const v2 = lim.rules.apply(RULES.replace('limit: 5,', 'limit: 7,'), { comment: 'more' });
  assert.equal(v2, 2);
  assert.equal(lim.check('api', 'k', 7, { now: T0 }).allowed, true);
  const versions = lim.rules.versions();
  assert.deepEqual(versions.map((v) => [v.version, v.active]), [[2, 1], [1, 0]]);
  assert.equal(versions[0].comment, 'more');
  assert.equal(versions[0].tool, 'node');
  assert.match(lim.rules.get(), /limit: 7,/);
  assert.match(lim.rules.get(1), /limit: 5,/);
  const d = lim.rules.describe();
  assert.ok(d.tiers.some((x) => x.name === 'banned' && x.blocked === 1));
  assert.ok(d.limits.some((x) => x.action === 'api' && x.tier === '' && x.limit === 7));
  assert.equal(lim.rules.rollback(1, { comment: 'back' }), 3);
  assert.match(lim.rules.get(), /limit: 5,/);
  assert.throws(() => lim.rules.get(99), rlstore.NotFoundError);
  // a Buffer of YAML works as well; the same rules as the active version 3
  // store nothing (idempotent apply) and give that version
  assert.equal(lim.rules.apply(Buffer.from(RULES)), 3);
  assert.equal(lim.rules.versions().length, 3);
});

test('rules: invalid YAML is ConfigError naming the line; nothing stored', (t) => {
  const { lim } = fresh(t);
  assert.throws(() => lim.rules.apply('version: 1\nactions:\n  x:\n    limits: [ { name: a, limit: -1 } ]\n', { name: 'bad.yaml' }),
    (e) => e instanceof rlstore.ConfigError && e.code === 'ECONFIG' && /bad\.yaml/.test(e.message));
  assert.equal(lim.rules.versions().length, 1);
  assert.throws(() => lim.rules.apply(42), rlstore.InvalidArgumentError);
});

test('rules: ifVersion refuses a change over another version (ConflictError)', (t) => {
  const { lim } = fresh(t);
  const more = RULES.replace('limit: 5,', 'limit: 6,');
  assert.equal(lim.rules.apply(more, { ifVersion: 1 }), 2);
  assert.throws(() => lim.rules.apply(more, { ifVersion: 1 }), (e) => e instanceof rlstore.ConflictError && e.code === 'ECONFLICT');
});

test('rules: dry run lists the keys over a lowered limit, stores nothing', (t) => {
  const { lim } = fresh(t);
  lim.check('api', 'heavy', 4);
  const over = lim.rules.dryRun(RULES.replace('limit: 5,', 'limit: 2,'));
  assert.equal(over.length, 1);
  assert.deepEqual([over[0].key, over[0].used, over[0].old_limit, over[0].new_limit], ['heavy', 4, 5, 2]);
  assert.equal(lim.rules.versions().length, 1);
});

test('block and unblock, for one action or all', (t) => {
  const { lim } = fresh(t);
  lim.block('mallory', { reason: 'abuse', now: T0 });
  const b = lim.check('api', 'mallory', 1, { now: T0 });
  assert.deepEqual([b.allowed, b.reason, b.retryAfterMs], [false, 'blocked', null]);
  assert.deepEqual(lim.blocks({ now: T0 }).map((x) => [x.key, x.action, x.until_ms, x.reason]), [['mallory', '', 0, 'abuse']]);
  lim.unblock('mallory', { now: T0 });
  assert.equal(lim.check('api', 'mallory', 1, { now: T0 }).allowed, true);
  lim.block('eve', { action: 'api', forMs: 10000, now: T0 });
  assert.equal(lim.check('api', 'eve', 1, { now: T0 }).retryAfterMs, 10000);
  assert.equal(lim.check('api', 'eve', 1, { now: T0 + 10000 }).allowed, true);
  assert.throws(() => lim.unblock('nobody', { now: T0 }), rlstore.NotFoundError);
});

test('tiers: assign a key or a prefix, unassign', (t) => {
  const { lim } = fresh(t);
  lim.assignTier('user:*', 'pro', { now: T0 });
  assert.equal(lim.check('api', 'user:1', 1, { now: T0 }).limit, 50);
  lim.assignTier('user:2', 'banned', { action: 'api', now: T0 });
  assert.equal(lim.check('api', 'user:2', 1, { now: T0 }).reason, 'blocked');
  assert.ok(lim.tiers({ now: T0 }).some((x) => x.pattern === 'user:*' && x.kind === 'prefix' && x.tier === 'pro'));
  lim.unassignTier('user:*', { now: T0 });
  assert.equal(lim.check('api', 'user:1', 1, { now: T0 }).limit, 5);
  assert.throws(() => lim.assignTier('k', 'gold', { now: T0 }), rlstore.RlstoreError);
});

test('overrides: one limit for one key', (t) => {
  const { lim } = fresh(t);
  lim.setOverride('api', 'vip', 'minute', 100, { now: T0 });
  assert.equal(lim.check('api', 'vip', 1, { now: T0 }).limit, 100);
  assert.deepEqual(lim.overrides({ now: T0 }).map((x) => [x.key, x.limit_name, x.limit]), [['vip', 'minute', 100]]);
  lim.unsetOverride('api', 'vip', 'minute', { now: T0 });
  assert.equal(lim.check('api', 'vip', 1, { now: T0 }).limit, 5);
  assert.throws(() => lim.setOverride('api', 'vip', 'hourly', 3, { now: T0 }), rlstore.NotFoundError);
});

test('usage, usage count, explain, reset', (t) => {
  const { lim } = fresh(t);
  lim.check('api', 'a', 5, { now: T0 });
  lim.check('api', 'b', 1, { now: T0 });
  const rows = lim.usage({ action: 'api', now: T0 });
  assert.deepEqual(rows.map((r) => [r.key, r.used, r.state]), [['a', 5, 'limited'], ['b', 1, 'ok']]);
  assert.equal(lim.usageCount({ action: 'api', now: T0 }), 2);
  assert.deepEqual(lim.usage({ sort: 'key', keySubstr: 'b', now: T0 }).map((r) => r.key), ['b']);
  assert.throws(() => lim.usage({ sort: 'size' }), rlstore.InvalidArgumentError);
  assert.throws(() => lim.usage({ limit: 0 }), rlstore.InvalidArgumentError);
  const ex = lim.explain('api', 'a', { now: T0 });
  assert.equal(ex.info.tier_source, 'default');
  assert.equal(ex.info.allowed, 0);
  assert.deepEqual([ex.limits[0].name, ex.limits[0].used, ex.limits[0].remaining], ['minute', 5, 0]);
  lim.reset('api', 'a', { now: T0 });
  assert.equal(lim.check('api', 'a', 1, { now: T0 }).remaining, 4);
  assert.throws(() => lim.reset('api', 'never', { now: T0 }), rlstore.NotFoundError);
});

test('audit, stats, doctor, gc', (t) => {
  const { lim } = fresh(t);
  lim.block('k', { reason: 'why', now: T0 });
  const audit = lim.audit({ limit: 10 });
  assert.deepEqual(audit.map((a) => a.op), ['block', 'rules.apply']);
  assert.equal(audit[0].tool, 'node');
  assert.deepEqual(lim.audit({ key: 'k' }).map((a) => a.op), ['block']);
  assert.throws(() => lim.audit({ limit: 0 }), rlstore.InvalidArgumentError);
  lim.check('api', 's1');
  lim.check('api', 's1', 9);
  const st = lim.stats({ seconds: 60 });
  assert.ok(Array.isArray(st.recent) && Array.isArray(st.totals));
  assert.throws(() => lim.stats({ seconds: 0 }), rlstore.InvalidArgumentError);
  const doc = lim.doctor();
  assert.ok(doc.some((r) => r.check === 'schema_version' && r.status === 'ok'));
  assert.equal(typeof lim.gc({ maxRows: 100 }), 'number');
});
