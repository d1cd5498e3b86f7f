'use strict';
// loader.js - finds the compiled addon (rlstore.node):
//   1. $RLSTORE_NODE_ADDON, a path;
//   2. build/rlstore.node in this package (made by `npm install`, build.js);
//   3. <tree>/build/node/rlstore.node when the package is used from the
//      source tree after `make` ($RLSTORE_BUILD names another build
//      folder, e.g. build-san).
const fs = require('fs');
const path = require('path');

function candidates() {
  const out = [];
  if (process.env.RLSTORE_NODE_ADDON) out.push(process.env.RLSTORE_NODE_ADDON);
  out.push(path.join(__dirname, 'build', 'rlstore.node'));
  const build = process.env.RLSTORE_BUILD || 'build';
  out.push(path.resolve(__dirname, '..', '..', build, 'node', 'rlstore.node'));
  return out;
}

function load() {
  const tried = [];
  for (const p of candidates()) {
    if (!fs.existsSync(p)) {
      tried.push(p);
      continue;
    }
    return require(p);
  }
  const err = new Error(
    'cannot find the rlstore addon (rlstore.node): run `make` in the rlstore tree, ' +
      '`npm install` the package, or set RLSTORE_NODE_ADDON; looked in: ' + tried.join(', '));
  err.code = 'ERR_RLSTORE_ADDON_NOT_FOUND';
  throw err;
}

module.exports = { load, candidates };
