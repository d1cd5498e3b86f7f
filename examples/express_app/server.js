'use strict';
// An Express app rate limited by rlstore:
//   POST /signup   20 a day per client address (the middleware)
//   GET  /api/...  60 a minute per X-API-Key (the middleware, keyed by a function)
//   POST /login    5 attempts a minute per account, then blocked 5 minutes
//                  (the rate-limiter-flexible-style facade)
//
//   npm install            # express, and rlstore from ../../bindings/node
//   node server.js         # PORT (default 3000), RLSTORE_DB (default ./limits.db)
//   TRUST_PROXY=loopback node server.js   # behind a local reverse proxy
//
// The limits live in rules.yaml, applied when the database has none yet
// (afterwards: `rlctl --db limits.db apply rules.yaml`).
const path = require('path');
const express = require('express');

let rlstore;
try {
  rlstore = require('rlstore');
} catch {
  rlstore = require('../../bindings/node');   // run from the source tree
}

const dbPath = process.env.RLSTORE_DB || path.join(__dirname, 'limits.db');
const limiter = rlstore.Limiter.open(dbPath, { tool: 'express-example' });
try {
  limiter.rules.get();
} catch (err) {
  if (!(err instanceof rlstore.NoRulesError)) throw err;
  limiter.rules.apply(require('fs').readFileSync(path.join(__dirname, 'rules.yaml')), { name: 'rules.yaml' });
}

const trustProxy = process.env.TRUST_PROXY ? process.env.TRUST_PROXY.split(',') : false;
const app = express();
app.use(express.json());

app.post('/signup', rlstore.middleware({ limiter, action: 'signup', trustProxy }), (req, res) => {
  res.status(201).json({ ok: true, remaining: req.rateLimit.remaining });
});

app.use('/api', rlstore.middleware({
  limiter,
  action: 'api',
  key: (req) => req.get('X-API-Key') || 'anonymous',
}));
app.get('/api/hello', (req, res) => res.json({ hello: 'world' }));

const logins = new rlstore.RateLimiterRlstore({ limiter, action: 'login' });
app.post('/login', async (req, res, next) => {
  const user = String((req.body && req.body.user) || '');
  if (!user) return res.status(400).json({ error: 'user is required' });
  try {
    await logins.consume(user);
  } catch (rej) {
    if (rej instanceof Error) return next(rej);   // the database failed
    res.set('Retry-After', String(Math.ceil(rej.msBeforeNext / 1000)));
    return res.status(429).json({ error: 'too many attempts', retryAfterMs: rej.msBeforeNext });
  }
  // ... check the password; on success forget the failures:
  if (req.body.password === 'correct horse') {
    await logins.delete(user);
    return res.json({ ok: true });
  }
  return res.status(401).json({ error: 'wrong password' });
});

const server = app.listen(Number(process.env.PORT || 3000), process.env.HOST || '127.0.0.1', () => {
  const a = server.address();
  console.log(`listening on http://${a.address}:${a.port}`);
});

function stop() {
  server.close(() => {
    limiter.close();
    process.exit(0);
  });
}
process.on('SIGTERM', stop);
process.on('SIGINT', stop);
