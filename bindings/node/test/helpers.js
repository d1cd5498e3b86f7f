'use strict';
// helpers.js - what the suites of the Node.js binding share: a scratch
// folder per suite, a database with rules, and a child process holding
// SQLite's write lock (python3's sqlite3 module) to make the database busy.
const fs = require('fs');
const os = require('os');
const path = require('path');
const { spawn } = require('child_process');
const rlstore = require('..');

const RULES = `version: 1
defaults:
  tier: free
tiers:
  free: {}
  pro: {}
  banned: { blocked: true }
actions:
  api:
    key: string
    limits:
      - { name: minute, algorithm: fixed_window, limit: 5, window: 1m }
    tiers:
      pro:
        - { name: minute, limit: 50 }
  signup:
    key: ip
    limits:
      - { name: daily, algorithm: fixed_window, limit: 3, window: 1d }
  open:
    key: string
    on_error: allow
    limits:
      - { name: minute, algorithm: fixed_window, limit: 2, window: 1m }
  login:
    key: string
    limits:
      - { name: points, algorithm: fixed_window, limit: 5, window: 60s, block_for: 300s }
`;

// A fixed instant inside a window, so that counts never straddle one.
const T0 = Date.UTC(2026, 10, 28, 10, 0, 30);

function scratch(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'rlstore-node-'));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return dir;
}

// A limiter on a fresh database with RULES applied; closed after the test.
function fresh(t, options) {
  const dir = scratch(t);
  const file = path.join(dir, 'limits.db');
  const lim = rlstore.Limiter.open(file, options);
  lim.rules.apply(RULES, { name: 'helpers.js' });
  t.after(() => lim.close());
  return { lim, file, dir };
}

// Holds the write lock of the SQLite file until release() is called;
// resolves once it is held.
function holdWriteLock(file) {
  const script = 'import sqlite3, sys\n' +
    'c = sqlite3.connect(sys.argv[1], isolation_level=None)\n' +
    'c.execute("BEGIN IMMEDIATE")\n' +
    'print("locked", flush=True)\n' +
    'sys.stdin.read()\n' +
    'c.execute("ROLLBACK")\n';
  const child = spawn('python3', ['-c', script, file], { stdio: ['pipe', 'pipe', 'inherit'] });
  const exited = new Promise((r) => child.on('exit', r));
  return new Promise((resolve, reject) => {
    let out = '';
    let held = false;
    child.on('error', reject);
    exited.then((code) => {
      if (!held) reject(new Error(`the lock holder exited (${code}) before holding the lock`));
    });
    child.stdout.on('data', (d) => {
      out += d;
      if (!held && out.includes('locked')) {
        held = true;
        resolve({
          release: () => {
            child.stdin.end();
            return exited;
          },
        });
      }
    });
  });
}

function hasPython() {
  try {
    require('child_process').execFileSync('python3', ['-c', 'import sqlite3'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

// Express, when the test wrapper made it available (NODE_PATH), else null.
function express() {
  try {
    return require('express');
  } catch {
    return null;
  }
}

module.exports = { rlstore, RULES, T0, scratch, fresh, holdWriteLock, hasPython, express };
