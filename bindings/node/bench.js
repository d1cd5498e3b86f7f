'use strict';
// bench.js - what a check costs from Node.js on this machine: the
// synchronous check (on the event loop) and checkAsync (libuv's thread
// pool), on a fresh SQLite file in the temp folder.  Figures only.
//   node bindings/node/bench.js [N]
const fs = require('fs');
const os = require('os');
const path = require('path');
const { Limiter } = require('.');

const N = Number(process.argv[2] || 20000);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rlstore-bench-'));
const lim = Limiter.open(path.join(dir, 'b.db'));
lim.rules.apply('version: 1\nactions:\n  api:\n    key: string\n    limits:\n' +
  '      - { name: m, algorithm: sliding_window, limit: 1000000, window: 1m }\n');

function pct(sorted, p) {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

function syncRun(keys) {
  const lat = new Float64Array(N);
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < N; i++) {
    const s = process.hrtime.bigint();
    lim.check('api', `k${i % keys}`);
    lat[i] = Number(process.hrtime.bigint() - s) / 1000;
  }
  const total = Number(process.hrtime.bigint() - t0) / 1e9;
  lat.sort();
  return { perSec: Math.round(N / total), p50us: +pct(lat, 0.5).toFixed(1), p99us: +pct(lat, 0.99).toFixed(1), maxUs: +lat[N - 1].toFixed(1) };
}

async function asyncRun(keys, inflight) {
  const t0 = process.hrtime.bigint();
  let next = 0;
  async function worker() {
    while (next < N) {
      const i = next++;
      await lim.checkAsync('api', `a${i % keys}`);
    }
  }
  await Promise.all(Array.from({ length: inflight }, worker));
  return { perSec: Math.round(N / (Number(process.hrtime.bigint() - t0) / 1e9)) };
}

(async () => {
  const out = {
    node: process.version,
    n: N,
    syncOneKey: syncRun(1),
    syncManyKeys: syncRun(10000),
    asyncOneInFlight: await asyncRun(10000, 1),
    asyncSixteenInFlight: await asyncRun(10000, 16),
  };
  console.log(JSON.stringify(out, null, 2));
  lim.close();
  fs.rmSync(dir, { recursive: true, force: true });
})();
