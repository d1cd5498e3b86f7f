'use strict';
// The middleware over real servers: node's own http server with a minimal
// Connect-style chain (always), and Express (when the test wrapper made it
// available; skipped otherwise, never counted as passed).
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('http');
const { rlstore, fresh, express, holdWriteLock, hasPython } = require('./helpers');

// A Connect-style chain on node:http: each layer (req, res, next); an
// error passed to next() answers 500 with its message.
function chainApp(layers) {
  return (req, res) => {
    let i = 0;
    const next = (err) => {
      if (err) {
        res.statusCode = 500;
        res.end('error: ' + err.message);
        return;
      }
      const layer = layers[i++];
      if (layer) layer(req, res, next);
    };
    next();
  };
}

function expressApp(mw) {
  const app = express()();
  app.use(mw);
  app.use((req, res) => res.send('hello'));
  app.use((err, req, res, next) => res.status(500).send('error: ' + err.message));   // eslint-disable-line no-unused-vars
  return app;
}

function listen(t, handler) {
  const server = http.createServer(handler);
  t.after(() => new Promise((r) => server.close(r)));
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server.address().port)));
}

function get(port, path, headers = {}) {
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port, path, headers, agent: false }, (res) => {
      let body = '';
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
  });
}

const hello = (req, res) => res.end('hello');

// The same cases for both servers: make(t, options) -> port.
function cases(name, make, skip) {
  test(`${name}: a burst crosses the limit: 429 with RateLimit headers`, { skip }, async (t) => {
    const { lim } = fresh(t);
    const port = await make(t, { limiter: lim, action: 'signup' });
    for (let i = 1; i <= 3; i++) {
      const r = await get(port, '/');
      assert.equal(r.status, 200);
      assert.equal(r.body.trim(), 'hello');
      assert.match(r.headers['ratelimit'], new RegExp(`^"daily";r=${3 - i};t=\\d+$`));
      assert.equal(r.headers['ratelimit-policy'], '"daily";q=3;w=86400');
    }
    const d = await get(port, '/');
    assert.equal(d.status, 429);
    assert.equal(d.body.trim(), 'Too Many Requests');
    assert.match(d.headers['ratelimit'], /^"daily";r=0;t=\d+$/);
    assert.ok(Number(d.headers['retry-after']) > 0);
    assert.equal(lim.usage({ action: 'signup' })[0].key, '127.0.0.1');
  });

  test(`${name}: trusted proxy: the client from X-Forwarded-For; untrusted peers' header ignored`, { skip }, async (t) => {
    const { lim } = fresh(t);
    const port = await make(t, { limiter: lim, action: 'signup', trustProxy: ['127.0.0.0/8'] });
    for (let i = 0; i < 3; i++) assert.equal((await get(port, '/', { 'X-Forwarded-For': '198.51.100.7' })).status, 200);
    assert.equal((await get(port, '/', { 'X-Forwarded-For': '198.51.100.7' })).status, 429);
    // another client behind the proxy has its own budget; a forged entry
    // left of the client's is not read
    assert.equal((await get(port, '/', { 'X-Forwarded-For': '198.51.100.7, 203.0.113.9' })).status, 200);
    const keys = lim.usage({ action: 'signup', sort: 'key' }).map((r) => r.key);
    assert.deepEqual(keys, ['198.51.100.7', '203.0.113.9']);
    const port2 = await make(t, { limiter: lim, action: 'signup', trustProxy: ['10.0.0.1'] });
    assert.equal((await get(port2, '/', { 'X-Forwarded-For': '203.0.113.50' })).status, 200);
    assert.ok(lim.usage({ action: 'signup' }).some((r) => r.key === '127.0.0.1'), 'the untrusted peer is the key');
  });

  test(`${name}: a malformed X-Forwarded-For from a trusted proxy: 400`, { skip }, async (t) => {
    const { lim } = fresh(t);
    const port = await make(t, { limiter: lim, action: 'signup', trustProxy: 'loopback' });
    for (const bad of ['not-an-ip', '1.2.3.4, ', '999.1.1.1', '1.2.3.4:80']) {
      const r = await get(port, '/', { 'X-Forwarded-For': bad });
      assert.equal(r.status, 400, bad);
      assert.match(r.body, /^malformed X-Forwarded-For header/);
      assert.equal(r.body.trim().split('\n').length, 1);
    }
    assert.equal(lim.usageCount({ action: 'signup' }), 0);
  });

  test(`${name}: key and cost functions; a bad key: 400; an unknown action: next(err)`, { skip }, async (t) => {
    const { lim } = fresh(t);
    const port = await make(t, {
      limiter: lim, action: 'api',
      key: (req) => (req.headers['x-user'] === 'num' ? 7 : req.headers['x-user'] || 'x'.repeat(300)),
      cost: (req) => Number(req.headers['x-cost'] || 1),
    });
    assert.equal((await get(port, '/', { 'X-User': 'ann', 'X-Cost': '5' })).status, 200);
    assert.equal((await get(port, '/', { 'X-User': 'ann' })).status, 429);
    assert.equal((await get(port, '/', { 'X-User': 'bob' })).status, 200);
    const long = await get(port, '/');
    assert.equal(long.status, 400);
    assert.match(long.body, /^invalid rate-limit key/);
    assert.equal((await get(port, '/', { 'X-User': 'num' })).status, 400);
    assert.equal((await get(port, '/', { 'X-User': 'cat', 'X-Cost': '0' })).status, 500);   // ECOST: the app's bug
    const port2 = await make(t, { limiter: lim, action: 'no-such-action' });
    const r = await get(port2, '/');
    assert.equal(r.status, 500);
    assert.match(r.body, /no-such-action/);
  });

  test(`${name}: skip, onDenied, headers: false, message`, { skip }, async (t) => {
    const { lim } = fresh(t);
    const port = await make(t, {
      limiter: lim, action: 'api', key: () => 'one', headers: false, message: 'slow down',
      skip: (req) => req.url === '/health',
    });
    for (let i = 0; i < 5; i++) {
      const r = await get(port, '/');
      assert.equal(r.status, 200);
      assert.equal(r.headers['ratelimit'], undefined);
    }
    assert.equal((await get(port, '/health')).status, 200);
    const d = await get(port, '/');
    assert.deepEqual([d.status, d.body.trim()], [429, 'slow down']);
    assert.ok(d.headers['retry-after']);
    const port2 = await make(t, {
      limiter: lim, action: 'api', key: () => 'one',
      onDenied: (req, res, next, r) => {
        res.statusCode = 418;
        res.end(`denied by ${r.rule}`);
      },
    });
    const c = await get(port2, '/');
    assert.deepEqual([c.status, c.body], [418, 'denied by minute']);
  });

  test(`${name}: storage failure: 503 when the policy denies, passes when it allows`,
    { skip: skip || (!hasPython() && 'python3 with sqlite3 is needed to hold the lock') }, async (t) => {
      const { file } = fresh(t);
      const lim = rlstore.Limiter.open(file, { busyTimeoutMs: 30 });
      t.after(() => lim.close());
      const deny = await make(t, { limiter: lim, action: 'api' });
      const allow = await make(t, { limiter: lim, action: 'open' });
      const lock = await holdWriteLock(file);
      try {
        const r = await get(deny, '/');
        assert.equal(r.status, 503);
        assert.match(r.body, /^rate limiter unavailable: /);
        assert.equal((await get(allow, '/')).status, 200);
      } finally {
        await lock.release();
      }
      assert.equal((await get(deny, '/')).status, 200);
    });
}

cases('node:http + Connect-style chain', (t, o) => listen(t, chainApp([rlstore.middleware(o), hello])), false);

const ex = express();
cases(`Express ${ex ? require('express/package.json').version : ''}`.trim(),
  (t, o) => listen(t, expressApp(rlstore.middleware(o))),
  !ex && 'express is not installed (tests/node/test_node.sh installs it from the npm registry)');

test('clientAddress: hops, IPv4-mapped addresses, functions', () => {
  const req = (peer, xff) => ({ socket: { remoteAddress: peer }, headers: xff === undefined ? {} : { 'x-forwarded-for': xff } });
  assert.equal(rlstore.clientAddress(req('::ffff:192.0.2.1', '198.51.100.1')), '192.0.2.1');
  assert.equal(rlstore.clientAddress(req('10.0.0.2', '198.51.100.1, 10.0.0.9'), ['10.0.0.0/8']), '198.51.100.1');
  assert.equal(rlstore.clientAddress(req('10.0.0.2', '10.0.0.8, 10.0.0.9'), ['10.0.0.0/8']), '10.0.0.8');
  assert.equal(rlstore.clientAddress(req('10.0.0.2', '203.0.113.1, 198.51.100.1'), 1), '198.51.100.1');
  assert.equal(rlstore.clientAddress(req('10.0.0.2', '203.0.113.1, 198.51.100.1'), 2), '203.0.113.1');
  assert.equal(rlstore.clientAddress(req('::1', '2001:db8::1'), ['::1']), '2001:db8::1');
  assert.equal(rlstore.clientAddress(req('10.0.0.2'), true), '10.0.0.2');
  assert.equal(rlstore.clientAddress(req('10.0.0.2', '192.0.2.5'), (a) => a === '10.0.0.2'), '192.0.2.5');
  assert.throws(() => rlstore.clientAddress(req('10.0.0.2'), ['not-a-cidr']), rlstore.InvalidArgumentError);
  assert.throws(() => rlstore.clientAddress(req('10.0.0.2'), ['10.0.0.0/99']), rlstore.InvalidArgumentError);
  assert.throws(() => rlstore.middleware({ action: 'x' }), rlstore.InvalidArgumentError);
  assert.throws(() => rlstore.middleware({ limiter: {}, action: 'x' }), rlstore.InvalidArgumentError);
});
