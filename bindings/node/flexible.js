'use strict';
// flexible.js - a rate-limiter-flexible-style facade, so that code written
// for RateLimiterMemory / RateLimiterRedis moves over by changing the
// constructor:
//
//   const limiter = new RateLimiterRlstore({ limiter: lim, action: 'login' });
//   limiter.consume(key, 2)
//     .then((res) => ...)              // admitted: a RateLimiterRes
//     .catch((rej) => {
//       if (rej instanceof Error) ...  // the database failed (RlstoreError)
//       else ...                       // denied: a RateLimiterRes,
//     });                              //   rej.msBeforeNext
//
// The limits themselves (points per duration, blockDuration) live in the
// rule file, not in the constructor: rulesFromFlexible() writes the YAML of
// rate-limiter-flexible's options once.  Keys: strings, Buffers, or
// numbers (turned into strings as rate-limiter-flexible does).
const errors = require('./errors');

class RateLimiterRes {
  constructor(remainingPoints = 0, msBeforeNext = 0, consumedPoints = 0, isFirstInDuration = false) {
    this.remainingPoints = remainingPoints;
    this.msBeforeNext = msBeforeNext;
    this.consumedPoints = consumedPoints;
    this.isFirstInDuration = isFirstInDuration;
  }

  toJSON() {
    return {
      remainingPoints: this.remainingPoints,
      msBeforeNext: this.msBeforeNext,
      consumedPoints: this.consumedPoints,
      isFirstInDuration: this.isFirstInDuration,
    };
  }

  toString() {
    return JSON.stringify(this.toJSON());
  }
}

// A RateLimiterRes of an rlstore Result; asked: the points of this request
// (added to consumedPoints of a denial, as rate-limiter-flexible counts
// them, though rlstore charged nothing).
function resOf(r, asked) {
  const used = Math.max(0, Number(r.limit) - Number(r.remaining));
  if (r.allowed) return new RateLimiterRes(Number(r.remaining), Number(r.resetMs), used, used === asked && asked > 0);
  const ms = r.retryAfterMs === null ? -1 : Number(r.retryAfterMs);
  return new RateLimiterRes(0, ms, used + asked, false);
}

class RateLimiterRlstore {
  // opts: limiter (a Limiter, required), action (an action of the rules,
  // required), keyPrefix (prepended as "prefix:key"; default none: the
  // action already separates keys).
  constructor(opts) {
    if (!opts || !opts.limiter || typeof opts.limiter.checkAsync !== 'function') {
      throw errors.make('EINVAL', 'RateLimiterRlstore: `limiter` (an rlstore Limiter) is required');
    }
    if (typeof opts.action !== 'string' || !opts.action) {
      throw errors.make('EINVAL', 'RateLimiterRlstore: `action` (an action of the rules) is required');
    }
    this.limiter = opts.limiter;
    this.action = opts.action;
    this.keyPrefix = opts.keyPrefix || '';
  }

  getKey(key) {
    const k = typeof key === 'number' && Number.isFinite(key) ? String(key) : key;
    if (!this.keyPrefix) return k;
    return typeof k === 'string' ? `${this.keyPrefix}:${k}` : k;
  }

  // Resolves with a RateLimiterRes when admitted; rejects with one when
  // denied, with an RlstoreError when the input is invalid or the database
  // failed and the failure policy denies.
  async consume(key, points = 1) {
    const r = await this.limiter.checkAsync(this.action, this.getKey(key), points);
    if (r.error && !r.allowed) throw r.error;
    const res = resOf(r, points);
    if (!r.allowed) throw res;
    return res;
  }

  // Charges points whatever the limit says, up to what is left: rlstore
  // never counts past capacity, so a penalty larger than the remaining
  // points leaves the key exhausted.  It charges through an admitted check
  // only, so it never triggers the rules' block_for.  Resolves with the
  // state.
  async penalty(key, points = 1) {
    const k = this.getKey(key);
    const p = await this.limiter.peekAsync(this.action, k, 1);
    if (p.error) throw p.error;
    const n = Math.min(points, Number(p.remaining));
    if (p.reason !== 'blocked' && n > 0) {
      const r = await this.limiter.checkAsync(this.action, k, n);
      if (r.error) throw r.error;
    }
    return this._state(k);
  }

  // Gives points back (within the current window).
  async reward(key, points = 1) {
    const k = this.getKey(key);
    await this.limiter.refundAsync(this.action, k, points);
    return this._state(k);
  }

  // Blocks the key for secDuration seconds (0: forever) on this action.
  async block(key, secDuration) {
    if (typeof secDuration !== 'number' || !(secDuration >= 0)) {
      throw errors.make('EINVAL', 'block: secDuration must be a number of seconds >= 0');
    }
    const ms = Math.round(secDuration * 1000);
    this.limiter.block(this.getKey(key), {
      action: this.action,
      forMs: ms > 0 ? ms : undefined,
      reason: 'rate-limiter-flexible block',
    });
    return new RateLimiterRes(0, ms > 0 ? ms : -1, 0, false);
  }

  // The state of the key, or null when it has used nothing and is not
  // blocked.
  async get(key) {
    const k = this.getKey(key);
    const r = await this.limiter.peekAsync(this.action, k, 1);
    if (r.error) throw r.error;
    if (r.reason !== 'blocked' && Number(r.remaining) >= Number(r.limit)) return null;
    return this._fromPeek(r);
  }

  // Forgets the key's counters and its block: true when there was any.
  async delete(key) {
    const k = this.getKey(key);
    let any = false;
    for (const undo of [() => this.limiter.reset(this.action, k), () => this.limiter.unblock(k, { action: this.action })]) {
      try {
        undo();
        any = true;
      } catch (err) {
        if (!(err && err.code === 'ENOTFOUND')) throw err;
      }
    }
    return any;
  }

  async _state(k) {
    const r = await this.limiter.peekAsync(this.action, k, 1);
    if (r.error) throw r.error;
    return this._fromPeek(r);
  }

  _fromPeek(r) {
    const used = Math.max(0, Number(r.limit) - Number(r.remaining));
    if (r.reason === 'blocked') return new RateLimiterRes(0, r.retryAfterMs === null ? -1 : Number(r.retryAfterMs), used, false);
    return new RateLimiterRes(Number(r.remaining), Number(r.resetMs), used, false);
  }
}

// The rule YAML of rate-limiter-flexible options: points per duration
// seconds (a fixed window, as RateLimiterMemory counts), blockDuration
// seconds of block once exceeded.  keyKind 'string' (default) or 'ip'.
function rulesFromFlexible(limiters) {
  const list = Array.isArray(limiters) ? limiters : [limiters];
  const lines = ['version: 1', 'actions:'];
  for (const l of list) {
    if (!l || typeof l.action !== 'string' || !/^[A-Za-z0-9_.-]{1,63}$/.test(l.action)) {
      throw errors.make('EINVAL', 'rulesFromFlexible: each entry needs an action name (letters, digits, _ . -)');
    }
    if (!Number.isInteger(l.points) || l.points < 1) throw errors.make('EINVAL', `rulesFromFlexible: ${l.action}: points must be an integer >= 1`);
    if (!Number.isInteger(l.duration) || l.duration < 1) throw errors.make('EINVAL', `rulesFromFlexible: ${l.action}: duration must be whole seconds >= 1`);
    let limit = `{ name: points, algorithm: fixed_window, limit: ${l.points}, window: ${l.duration}s`;
    if (l.blockDuration) {
      if (!Number.isInteger(l.blockDuration) || l.blockDuration < 1) throw errors.make('EINVAL', `rulesFromFlexible: ${l.action}: blockDuration must be whole seconds`);
      limit += `, block_for: ${l.blockDuration}s`;
    }
    lines.push(`  ${l.action}:`, `    key: ${l.keyKind || 'string'}`, '    limits:', `      - ${limit} }`);
  }
  return lines.join('\n') + '\n';
}

module.exports = { RateLimiterRlstore, RateLimiterRes, rulesFromFlexible };
