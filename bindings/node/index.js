'use strict';
// rlstore for Node.js: a durable rate limiter on SQLite or PostgreSQL.
//
//   const { Limiter } = require('rlstore');
//   const limiter = Limiter.open('/var/lib/myapp/limits.db');
//   const r = await limiter.checkAsync('signup', req.ip);
//   if (!r.allowed) res.status(429).set(limiter.headers(r)).end();
//
// A thin layer over the C library librlstore (the N-API addon in src/):
// each method is one library call.  The synchronous methods run on the
// calling thread (a check takes tens of microseconds on a local SQLite
// file, see GUIDE.md); the ...Async ones run on libuv's thread pool and
// never block the event loop, also when the database is busy.  Calls on
// one Limiter are serialised (the C handle serves one thread at a time).
//
// Checks answer also when the database fails: the failure policy decides
// and the Result has reason 'degraded' and the error in result.error.
// Invalid input throws (or rejects with) the error class of its code.
const errors = require('./errors');
const native = require('./loader').load();

errors.install(native.errors());
native.setErrorFactory(errors.create);

const DURABILITY = { normal: 0, full: 1 };
const ON_ERROR = { deny: 0, allow: 1 };
const SORT = { used: 0, key: 1, reset: 2, denied: 3 };

function invalid(detail) {
  return errors.make('EINVAL', detail);
}

function word(table, value, what) {
  if (value === undefined || value === null) return undefined;
  if (Object.prototype.hasOwnProperty.call(table, value)) return table[value];
  throw invalid(`${what} must be one of ${Object.keys(table).join(', ')}, not '${value}'`);
}

function nowOf(opts) {
  return opts && opts.now !== undefined ? opts.now : Date.now();
}

// The ms a relative duration option adds to now, for until-style options:
// {untilMs} absolute, {forMs} relative to now, neither: 0 (forever).
function untilOf(opts, now) {
  if (!opts) return 0;
  if (opts.untilMs !== undefined) return opts.untilMs;
  if (opts.forMs !== undefined) {
    if (typeof opts.forMs !== 'number' || !(opts.forMs > 0)) throw invalid('forMs must be > 0');
    return now + opts.forMs;
  }
  return 0;
}

// Splits the CRLF lines of rls_format_headers into [name, value] pairs.
function parseHeaders(text) {
  const out = [];
  for (const line of text.split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) out.push([line.slice(0, i), line.slice(i + 1).trim()]);
  }
  return out;
}

class Reservation {
  constructor(limiter, result) {
    this.limiter = limiter;
    this.result = result;
    this.id = result.id || 0;
    this.settled = this.id === 0;
  }

  get allowed() {
    return this.result.allowed;
  }

  commit(opts) {
    this._settle();
    this.limiter.commit(this.id, opts);
  }

  cancel(opts) {
    this._settle();
    this.limiter.cancel(this.id, opts);
  }

  async commitAsync(opts) {
    this._settle();
    return this.limiter.commitAsync(this.id, opts);
  }

  async cancelAsync(opts) {
    this._settle();
    return this.limiter.cancelAsync(this.id, opts);
  }

  _settle() {
    if (this.id === 0) throw invalid('this reservation has no id (denied or degraded)');
    this.settled = true;
  }
}

class Rules {
  constructor(limiter) {
    this._l = limiter;
  }

  // Applies a YAML rule set as a new version; returns its number.
  // opts: name, comment, ifVersion (only over that version: ConflictError).
  apply(yaml, opts = {}) {
    return native.rulesApply(this._l._h(), yaml, opts.name, opts.comment, nowOf(opts),
      opts.ifVersion);
  }

  // Validates yaml and lists the keys over a new or changed limit.
  dryRun(yaml, opts = {}) {
    return native.rulesDryRun(this._l._h(), yaml, opts.name, nowOf(opts));
  }

  rollback(version, opts = {}) {
    return native.rulesRollback(this._l._h(), version, opts.comment, nowOf(opts));
  }

  versions() {
    return native.rulesVersions(this._l._h());
  }

  get(version = 0) {
    return native.rulesGet(this._l._h(), version);
  }

  describe(version = 0) {
    return native.rulesDescribe(this._l._h(), version);
  }
}

class Limiter {
  // path: a SQLite file or a postgresql:// URI.  options: busyTimeoutMs,
  // durability ('normal'|'full'), onError ('deny'|'allow'), readOnly,
  // create, fileMode, maxKeyLen, tool, countersPath, rulesReadOnly,
  // fileGroup (rls_options).
  constructor(path, options = {}) {
    if (typeof path !== 'string') throw invalid('path must be a string');
    if (options === null || typeof options !== 'object') throw invalid('options must be an object');
    const o = Object.assign({}, options, {
      durability: word(DURABILITY, options.durability, 'durability'),
      onError: word(ON_ERROR, options.onError, 'onError'),
    });
    this.path = path;
    this._handle = native.open(path, o);
    this.rules = new Rules(this);
  }

  static open(path, options) {
    return new Limiter(path, options);
  }

  close() {
    if (this._handle) native.close(this._handle);
    this._handle = null;
  }

  get closed() {
    return this._handle === null;
  }

  _h() {
    if (!this._handle) throw errors.make('EMISUSE', 'the limiter is closed');
    return this._handle;
  }

  // ---- checks ----
  check(action, key, cost = 1, opts) {
    return opts && opts.now !== undefined
      ? native.checkAt(this._h(), action, key, cost, opts.now)
      : native.check(this._h(), action, key, cost);
  }

  async checkAsync(action, key, cost = 1, opts) {
    return native.checkAsync(this._h(), action, key, cost, opts && opts.now);
  }

  peek(action, key, cost = 1, opts) {
    return opts && opts.now !== undefined
      ? native.peekAt(this._h(), action, key, cost, opts.now)
      : native.peek(this._h(), action, key, cost);
  }

  async peekAsync(action, key, cost = 1, opts) {
    return native.peekAsync(this._h(), action, key, cost, opts && opts.now);
  }

  // Gives cost units back; returns the units actually given back.
  refund(action, key, cost = 1, opts) {
    return opts && opts.now !== undefined
      ? native.refundAt(this._h(), action, key, cost, opts.now)
      : native.refund(this._h(), action, key, cost);
  }

  async refundAsync(action, key, cost = 1, opts) {
    return native.refundAsync(this._h(), action, key, cost, opts && opts.now);
  }

  // Items: [{action, key, cost}], at most 64: all admitted or none charged.
  checkMany(items, opts) {
    return opts && opts.now !== undefined
      ? native.checkManyAt(this._h(), items, opts.now)
      : native.checkMany(this._h(), items);
  }

  async checkManyAsync(items, opts) {
    return native.checkManyAsync(this._h(), items, opts && opts.now);
  }

  // ---- reservations ----
  reserve(action, key, cost = 1, opts = {}) {
    const r = opts.now !== undefined
      ? native.reserveAt(this._h(), action, key, cost, opts.ttlMs, opts.now)
      : native.reserve(this._h(), action, key, cost, opts.ttlMs);
    return new Reservation(this, r);
  }

  async reserveAsync(action, key, cost = 1, opts = {}) {
    const r = await native.reserveAsync(this._h(), action, key, cost, opts.ttlMs, opts.now);
    return new Reservation(this, r);
  }

  commit(id, opts) {
    if (opts && opts.now !== undefined) native.commitAt(this._h(), id, opts.now);
    else native.commit(this._h(), id);
  }

  cancel(id, opts) {
    if (opts && opts.now !== undefined) native.cancelAt(this._h(), id, opts.now);
    else native.cancel(this._h(), id);
  }

  async commitAsync(id, opts) {
    return native.commitAsync(this._h(), id, opts && opts.now);
  }

  async cancelAsync(id, opts) {
    return native.cancelAsync(this._h(), id, opts && opts.now);
  }

  // Reserves, runs fn(reservation) and commits when it succeeds, cancels
  // when it throws (or rejects).  Denied: returns {allowed: false, result}
  // without running fn; admitted: {allowed: true, result, value}.
  async withReservation(action, key, cost, fn, opts = {}) {
    const rsv = await this.reserveAsync(action, key, cost, opts);
    if (!rsv.allowed) return { allowed: false, result: rsv.result };
    let value;
    try {
      value = await fn(rsv);
    } catch (err) {
      if (rsv.id) await this.cancelAsync(rsv.id);
      throw err;
    }
    if (rsv.id) await this.commitAsync(rsv.id);
    return { allowed: true, result: rsv.result, value };
  }

  // ---- HTTP headers (rls_format_headers) ----
  // [[name, value], ...]: RateLimit-Policy, RateLimit, and Retry-After when
  // denied with a known wait.  policy: the policy's name (default: the rule).
  static headers(result, policy) {
    return parseHeaders(native.formatHeaders(result, policy));
  }

  headers(result, policy) {
    return Limiter.headers(result, policy);
  }

  // ---- per-key policy ----
  // opts: action (default every action), untilMs or forMs (default
  // forever), reason.
  block(key, opts = {}) {
    const now = nowOf(opts);
    native.blockSet(this._h(), opts.action, key, untilOf(opts, now), opts.reason, now);
  }

  unblock(key, opts = {}) {
    native.blockUnset(this._h(), opts.action, key, nowOf(opts));
  }

  blocks(opts = {}) {
    return native.blockList(this._h(), nowOf(opts));
  }

  // key: exact, CIDR ("10.0.0.0/8") or prefix ("user:*").
  assignTier(key, tier, opts = {}) {
    const now = nowOf(opts);
    native.tierAssign(this._h(), opts.action, key, tier, untilOf(opts, now), now);
  }

  unassignTier(key, opts = {}) {
    native.tierUnassign(this._h(), opts.action, key, nowOf(opts));
  }

  tiers(opts = {}) {
    return native.tierList(this._h(), nowOf(opts));
  }

  setOverride(action, key, limitName, limit, opts = {}) {
    const now = nowOf(opts);
    native.overrideSet(this._h(), action, key, limitName, limit, untilOf(opts, now), now);
  }

  unsetOverride(action, key, limitName, opts = {}) {
    native.overrideUnset(this._h(), action, key, limitName, nowOf(opts));
  }

  overrides(opts = {}) {
    return native.overrideList(this._h(), opts.action, opts.key, nowOf(opts));
  }

  // Forgets the counters of action for key; NotFoundError if it had none.
  reset(action, key, opts = {}) {
    native.reset(this._h(), action, key, nowOf(opts));
  }

  // ---- reading ----
  // opts: action, keySubstr, sort ('used'|'key'|'reset'|'denied'),
  // offset, limit (1..100000, default 100).
  usage(opts = {}) {
    return native.usage(this._h(), this._query(opts), nowOf(opts));
  }

  usageCount(opts = {}) {
    return native.usageCount(this._h(), this._query(opts), nowOf(opts));
  }

  _query(opts) {
    return {
      action: opts.action,
      keySubstr: opts.keySubstr,
      sort: word(SORT, opts.sort, 'sort'),
      offset: opts.offset,
      limit: opts.limit,
    };
  }

  // {info: {...}, limits: [...]}: everything that decides (action, key).
  explain(action, key, opts = {}) {
    return native.explain(this._h(), action, key, nowOf(opts));
  }

  audit(opts = {}) {
    return native.audit(this._h(), opts.key, opts.limit);
  }

  stats(opts = {}) {
    return native.stats(this._h(), opts.seconds, nowOf(opts));
  }

  doctor(opts = {}) {
    return native.doctor(this._h(), !!opts.full);
  }

  gc(opts = {}) {
    return native.gc(this._h(), opts.maxRows, nowOf(opts));
  }
}

function libraryVersion() {
  return native.version();
}

module.exports = Object.assign(
  {
    Limiter,
    Reservation,
    Rules,
    RlstoreError: errors.RlstoreError,
    errors: errors.byCode,
    libraryVersion,
    RESERVE_TTL_DEFAULT_MS: 60000,
    BATCH_MAX: 64,
  },
  errors.classes,
);

// The framework glue and the rate-limiter-flexible facade load on demand
// (they need nothing but this file).
Object.defineProperty(module.exports, 'middleware', {
  enumerable: true,
  get: () => require('./middleware').middleware,
});
Object.defineProperty(module.exports, 'clientAddress', {
  enumerable: true,
  get: () => require('./middleware').clientAddress,
});
Object.defineProperty(module.exports, 'RateLimiterRlstore', {
  enumerable: true,
  get: () => require('./flexible').RateLimiterRlstore,
});
Object.defineProperty(module.exports, 'RateLimiterRes', {
  enumerable: true,
  get: () => require('./flexible').RateLimiterRes,
});
