'use strict';
// Bad input becomes the library's named errors, never a crash: keys that
// are not strings, too long or hold NUL; unknown actions; bad costs and
// times; a missing database, a directory, a file that is not a database,
// a database of a newer schema; a closed limiter.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('fs');
const path = require('path');
const { rlstore, RULES, T0, scratch, fresh } = require('./helpers');

function throwsCode(fn, cls, code, re) {
  assert.throws(fn, (e) => {
    assert.ok(e instanceof cls, `expected ${cls.name}, got ${e && e.name}: ${e && e.message}`);
    assert.ok(e instanceof rlstore.RlstoreError);
    assert.ok(e instanceof Error);
    assert.equal(e.code, code);
    assert.equal(e.name, cls.name);
    if (re) assert.match(e.message, re);
    return true;
  });
}

test('one class per code of the library, with its code and number', () => {
  const expected = ['EINVAL', 'ENOMEM', 'EKEY', 'ECOST', 'ETIME', 'ENOACTION', 'ENOTFOUND', 'ECANTOPEN',
    'EISDIR', 'ENOTDB', 'ENEWER', 'EREADONLY', 'EBUSY', 'EIO', 'EFULL', 'ECORRUPT', 'ESTORAGE', 'ECONFIG',
    'ENORULES', 'EEXPIRED', 'EMISUSE', 'EUNSAFE', 'ECONFLICT', 'EROLE'];
  for (const code of expected) {
    const cls = rlstore.errors[code];
    assert.ok(cls, `no class for ${code}`);
    assert.equal(cls.code, code);
    assert.ok(cls.prototype instanceof rlstore.RlstoreError);
    assert.equal(rlstore[cls.name], cls, `${cls.name} is not exported`);
    assert.notEqual(cls.name, 'RlstoreError');
  }
  assert.equal(rlstore.errors.EINVAL.errno, 1);
  assert.equal(rlstore.errors.EROLE.errno, 24);
  // every class the declarations name exists (index.d.ts kept in step)
  const dts = fs.readFileSync(path.join(__dirname, '..', 'index.d.ts'), 'utf8');
  for (const m of dts.matchAll(/^export (?:class|function|const) (\w+)/gm)) {
    assert.notEqual(rlstore[m[1]], undefined, `index.d.ts declares ${m[1]}, index.js lacks it`);
  }
  for (const code of expected) {
    assert.match(dts, new RegExp(`export class ${rlstore.errors[code].name} extends RlstoreError`));
  }
});

test('keys that are not strings or Buffers: InvalidKeyError', (t) => {
  const { lim } = fresh(t);
  for (const bad of [42, 4.2, null, undefined, {}, [], true, Symbol('k'), 10n, () => 'k']) {
    throwsCode(() => lim.check('api', bad), rlstore.InvalidKeyError, 'EKEY', /key must be a string or a Buffer/);
  }
  throwsCode(() => lim.peek('api', 7), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.reserve('api', {}), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.refund('api', []), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.checkMany([{ action: 'api', key: 1 }]), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.block(5), rlstore.InvalidKeyError, 'EKEY');
  // a Buffer is a key of raw bytes
  assert.equal(lim.check('api', Buffer.from([0xff, 0x01]), 1, { now: T0 }).allowed, true);
});

test('keys too long, empty or holding NUL: InvalidKeyError', (t) => {
  const { lim } = fresh(t);
  assert.equal(lim.check('api', 'k'.repeat(256)).allowed, true);   // the default max_key_len
  throwsCode(() => lim.check('api', 'k'.repeat(257)), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.check('api', 'k'.repeat(4097)), rlstore.InvalidKeyError, 'EKEY', /at most 4096/);
  throwsCode(() => lim.check('api', 'k'.repeat(50 * 1024 * 1024)), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.check('api', ''), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => lim.check('api', 'a\0b'), rlstore.InvalidKeyError, 'EKEY', /NUL/);
  throwsCode(() => lim.check('api', Buffer.from('a\0b')), rlstore.InvalidKeyError, 'EKEY', /NUL/);
  // multi-byte characters count in bytes: 86 x 3 = 258 bytes
  throwsCode(() => lim.check('api', '€'.repeat(86)), rlstore.InvalidKeyError, 'EKEY');
});

test('maxKeyLen raises the bound up to 4096 bytes, and no further', (t) => {
  const dir = scratch(t);
  const lim = rlstore.Limiter.open(path.join(dir, 'k.db'), { maxKeyLen: 4096 });
  t.after(() => lim.close());
  lim.rules.apply(RULES);
  assert.equal(lim.check('api', 'k'.repeat(4096)).allowed, true);
  throwsCode(() => lim.check('api', 'k'.repeat(4097)), rlstore.InvalidKeyError, 'EKEY');
  throwsCode(() => rlstore.Limiter.open(path.join(dir, 'k2.db'), { maxKeyLen: 4097 }), rlstore.InvalidArgumentError, 'EINVAL');
});

test('the failing check carries the denying result', (t) => {
  const { lim } = fresh(t);
  assert.throws(() => lim.check('api', ''), (e) => e.result && e.result.allowed === false);
});

test('unknown actions: UnknownActionError, sync and async', async (t) => {
  const { lim } = fresh(t);
  throwsCode(() => lim.check('nope', 'k'), rlstore.UnknownActionError, 'ENOACTION', /nope/);
  throwsCode(() => lim.peek('nope', 'k'), rlstore.UnknownActionError, 'ENOACTION');
  throwsCode(() => lim.checkMany([{ action: 'api', key: 'a' }, { action: 'nope', key: 'b' }]),
    rlstore.UnknownActionError, 'ENOACTION', /item 1/);
  await assert.rejects(lim.checkAsync('nope', 'k'), rlstore.UnknownActionError);
  await assert.rejects(lim.reserveAsync('nope', 'k'), rlstore.UnknownActionError);
  await assert.rejects(lim.checkManyAsync([{ action: 'nope', key: 'k' }]), rlstore.UnknownActionError);
  throwsCode(() => lim.check(42, 'k'), rlstore.InvalidArgumentError, 'EINVAL', /action must be a string/);
  throwsCode(() => lim.check('', 'k'), rlstore.UnknownActionError, 'ENOACTION');
});

test('costs: not an integer, zero, negative, too large: InvalidCostError', (t) => {
  const { lim } = fresh(t);
  for (const bad of [0, -1, 1.5, NaN, Infinity, '1', null, 1000000001, 2n ** 63n, 2 ** 64]) {
    throwsCode(() => lim.check('api', 'k', bad), rlstore.InvalidCostError, 'ECOST');
  }
  throwsCode(() => lim.checkMany([{ action: 'api', key: 'k', cost: -3 }]), rlstore.InvalidCostError, 'ECOST');
});

test('times out of range: InvalidTimeError', (t) => {
  const { lim } = fresh(t);
  for (const bad of [-1, 253402300800000, 1.5, 'now']) {
    throwsCode(() => lim.check('api', 'k', 1, { now: bad }), rlstore.InvalidTimeError, 'ETIME');
  }
  throwsCode(() => lim.block('k', { untilMs: -5 }), rlstore.InvalidTimeError, 'ETIME');
});

test('batches: more than 64 items or a repeated key: InvalidArgumentError', (t) => {
  const { lim } = fresh(t);
  const items = Array.from({ length: 65 }, (_, i) => ({ action: 'api', key: `k${i}` }));
  throwsCode(() => lim.checkMany(items), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => lim.checkMany([{ action: 'api', key: 'a' }, { action: 'api', key: 'a' }]), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => lim.checkMany('api'), rlstore.InvalidArgumentError, 'EINVAL');
});

test('a missing database with create: false: CannotOpenError', (t) => {
  const dir = scratch(t);
  throwsCode(() => rlstore.Limiter.open(path.join(dir, 'missing.db'), { create: false }), rlstore.CannotOpenError, 'ECANTOPEN');
  throwsCode(() => rlstore.Limiter.open(path.join(dir, 'no', 'such', 'dir.db')), rlstore.CannotOpenError, 'ECANTOPEN');
  assert.equal(fs.existsSync(path.join(dir, 'missing.db')), false);
});

test('a directory, a file that is not a database: IsDirectoryError, NotADatabaseError', (t) => {
  const dir = scratch(t);
  throwsCode(() => rlstore.Limiter.open(dir), rlstore.IsDirectoryError, 'EISDIR');
  const junk = path.join(dir, 'junk.db');
  fs.writeFileSync(junk, 'this is not a database\n'.repeat(200));
  throwsCode(() => rlstore.Limiter.open(junk), rlstore.NotADatabaseError, 'ENOTDB');
  assert.equal(fs.readFileSync(junk, 'utf8'), 'this is not a database\n'.repeat(200));
});

test('a database of a newer schema: NewerDatabaseError, file unchanged', (t) => {
  const dir = scratch(t);
  const file = path.join(dir, 'newer.db');
  rlstore.Limiter.open(file).close();
  assert.equal(fs.existsSync(file + '-wal'), false);
  // SQLite keeps user_version (rlstore's schema version) at byte 60 of the file
  const fd = fs.openSync(file, 'r+');
  const b = Buffer.alloc(4);
  b.writeUInt32BE(99);
  fs.writeSync(fd, b, 0, 4, 60);
  fs.closeSync(fd);
  const before = fs.readFileSync(file);
  throwsCode(() => rlstore.Limiter.open(file), rlstore.NewerDatabaseError, 'ENEWER', /99/);
  assert.deepEqual(fs.readFileSync(file), before);
});

test('bad options: InvalidArgumentError', (t) => {
  const dir = scratch(t);
  const f = path.join(dir, 'o.db');
  throwsCode(() => rlstore.Limiter.open(f, { durability: 'sometimes' }), rlstore.InvalidArgumentError, 'EINVAL', /durability/);
  throwsCode(() => rlstore.Limiter.open(f, { onError: 'maybe' }), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => rlstore.Limiter.open(f, { busyTimeoutMs: -1 }), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => rlstore.Limiter.open(f, { tool: 5 }), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => rlstore.Limiter.open(42), rlstore.InvalidArgumentError, 'EINVAL');
  throwsCode(() => rlstore.Limiter.open(f, 'x'), rlstore.InvalidArgumentError, 'EINVAL');
});

test('no rules yet: a check is answered by the failure policy', (t) => {
  const dir = scratch(t);
  const lim = rlstore.Limiter.open(path.join(dir, 'empty.db'));
  t.after(() => lim.close());
  const r = lim.check('api', 'k');
  assert.equal(r.allowed, false);
  assert.equal(r.reason, 'degraded');
  assert.ok(r.error instanceof rlstore.NoRulesError);
  const allow = rlstore.Limiter.open(path.join(dir, 'empty.db'), { onError: 'allow' });
  t.after(() => allow.close());
  assert.equal(allow.check('api', 'k').allowed, true);
});

test('a read-only limiter: admin changes fail with ReadOnlyError', (t) => {
  const { file } = fresh(t);
  const ro = rlstore.Limiter.open(file, { readOnly: true });
  t.after(() => ro.close());
  throwsCode(() => ro.rules.apply(RULES), rlstore.ReadOnlyError, 'EREADONLY');
  throwsCode(() => ro.block('k'), rlstore.ReadOnlyError, 'EREADONLY');
  assert.equal(ro.peek('api', 'k').allowed, true);
});

test('a closed limiter: MisuseError, also for calls in flight', async (t) => {
  const { lim } = fresh(t);
  const inflight = Array.from({ length: 20 }, () => lim.checkAsync('api', 'c', 1).then(
    (r) => (r.allowed ? 'allowed' : 'denied'), (e) => e.code));
  lim.close();
  lim.close();   // twice is fine
  assert.equal(lim.closed, true);
  throwsCode(() => lim.check('api', 'k'), rlstore.MisuseError, 'EMISUSE', /closed/);
  await assert.rejects(() => lim.checkAsync('api', 'k'), rlstore.MisuseError);
  const outcomes = await Promise.all(inflight);
  for (const o of outcomes) assert.ok(['allowed', 'denied', 'EMISUSE'].includes(o), o);
});
