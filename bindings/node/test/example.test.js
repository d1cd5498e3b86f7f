'use strict';
// examples/express_app runs and limits as its README says (with Express,
// when the test wrapper made it available).
const test = require('node:test');
const assert = require('node:assert/strict');
const http = require('http');
const path = require('path');
const { spawn } = require('child_process');
const { scratch, express } = require('./helpers');

const APP = path.resolve(__dirname, '..', '..', '..', 'examples', 'express_app', 'server.js');

function start(t, env) {
  const child = spawn(process.execPath, [APP], { env: Object.assign({}, process.env, env), stdio: ['ignore', 'pipe', 'pipe'] });
  t.after(() => {
    if (child.exitCode === null) child.kill('SIGKILL');
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let err = '';
    child.stderr.on('data', (d) => (err += d));
    let ready = false;
    const exited = new Promise((r) => child.on('exit', (code, sig) => r([code, sig])));
    exited.then(([code]) => {
      if (!ready) reject(new Error(`the example exited (${code}): ${err.trim().split('\n').slice(-3).join(' | ')}`));
    });
    child.stdout.on('data', (d) => {
      out += d;
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m && !ready) {
        ready = true;
        resolve({ child, port: Number(m[1]), exited });
      }
    });
  });
}

function request(port, method, path_, body, headers = {}) {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : JSON.stringify(body);
    const h = Object.assign({}, headers, data ? { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(data) } : {});
    const req = http.request({ host: '127.0.0.1', port, method, path: path_, headers: h, agent: false }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

test('examples/express_app: sign-ups, API keys and logins limited', { skip: !express() && 'express is not installed' }, async (t) => {
  const dir = scratch(t);
  const { child, port, exited } = await start(t, { PORT: '0', RLSTORE_DB: path.join(dir, 'limits.db') });
  for (let i = 0; i < 20; i++) assert.equal((await request(port, 'POST', '/signup')).status, 201);
  const d = await request(port, 'POST', '/signup');
  assert.equal(d.status, 429);
  assert.equal(d.headers['ratelimit-policy'], '"daily";q=20;w=86400');
  assert.ok(Number(d.headers['retry-after']) > 0);
  assert.equal((await request(port, 'GET', '/api/hello', undefined, { 'X-API-Key': 'k1' })).status, 200);
  for (let i = 0; i < 5; i++) assert.equal((await request(port, 'POST', '/login', { user: 'ann', password: 'no' })).status, 401);
  const l = await request(port, 'POST', '/login', { user: 'ann', password: 'correct horse' });
  assert.equal(l.status, 429);
  assert.equal(JSON.parse(l.text).retryAfterMs, 300000);
  assert.equal((await request(port, 'POST', '/login', { user: 'bob', password: 'correct horse' })).status, 200);
  child.kill('SIGTERM');
  assert.deepEqual(await exited, [0, null]);   // closes the server and the limiter
});
