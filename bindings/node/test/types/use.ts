// use.ts - a program of the API for tsc --strict (tests/node/test_node.sh):
// the declarations of index.d.ts must accept it and refuse the misuse below.
import * as rlstore from 'rlstore';
import { RateLimiterRlstore, RateLimiterRes, Limiter, Result, InvalidKeyError, RlstoreError } from 'rlstore';
import { rulesFromFlexible } from 'rlstore/flexible';
import { middleware } from 'rlstore/middleware';
import express = require('express');

async function main(): Promise<void> {
  const lim: Limiter = Limiter.open('limits.db', { onError: 'allow', busyTimeoutMs: 100 });
  const v: number = lim.rules.apply(rulesFromFlexible({ action: 'login', points: 5, duration: 60 }));
  const r: Result = lim.check('login', 'k', 1, { now: Date.now() });
  const ra: Result = await lim.checkAsync('login', Buffer.from('k'));
  const retry: number | null = r.retryAfterMs;
  const h: Array<[string, string]> = lim.headers(ra, 'p');
  const rsv = await lim.reserveAsync('login', 'k', 2, { ttlMs: 1000 });
  if (rsv.allowed) await rsv.commitAsync();
  const many = lim.checkMany([{ action: 'login', key: 'a' }, { action: 'login', key: 'b', cost: 2n }]);
  const ok: boolean = many.allowed;
  lim.block('k', { action: 'login', forMs: 1000, reason: 'x' });
  const rows = lim.usage({ sort: 'denied', limit: 10 });
  const ex = lim.explain('login', 'k');
  const app = express();
  app.use(middleware({ limiter: lim, action: 'login', trustProxy: ['10.0.0.0/8'], key: (req: express.Request) => req.ip || '' }));
  app.use(rlstore.middleware({ limiter: lim, action: (req: express.Request) => req.path }));
  const f = new RateLimiterRlstore({ limiter: lim, action: 'login' });
  try {
    const res: RateLimiterRes = await f.consume(42, 2);
    console.log(res.remainingPoints, res.msBeforeNext);
  } catch (e) {
    if (e instanceof RateLimiterRes) console.log(e.msBeforeNext);
    else if (e instanceof InvalidKeyError) console.log(e.code, e.detail);
    else if (e instanceof RlstoreError) console.log(e.errno);
  }
  const cls: typeof RlstoreError = rlstore.errors.EKEY;
  console.log(v, retry, h, ok, rows, ex.info, cls, rlstore.libraryVersion());
  lim.close();
}
main();

// What the declarations refuse (tsc fails when one of these compiles).
function misuse(lim: Limiter): void {
  // @ts-expect-error an action is a string
  lim.check(42, "k");
  // @ts-expect-error a key is a string or a Buffer
  lim.check("a", { id: 1 });
  // @ts-expect-error durability is normal or full
  Limiter.open("x.db", { durability: "sometimes" });
  // @ts-expect-error retryAfterMs may be null
  const n: number = lim.check("a", "k").retryAfterMs;
  // @ts-expect-error the facade needs an action
  new RateLimiterRlstore({ limiter: lim });
  console.log(n);
}
void misuse;
