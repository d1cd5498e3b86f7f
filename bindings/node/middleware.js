'use strict';
// middleware.js - Express / Connect middleware (also plain node:http: it
// uses only req.headers, req.socket, res.statusCode, res.setHeader and
// res.end).
//
//   app.use('/signup', rlstore.middleware({ limiter, action: 'signup' }));
//
// Each request is checked with checkAsync (libuv's thread pool: the event
// loop never waits for the database).  Admitted: next(), with the
// RateLimit headers when `headers` is true.  Denied: 429 with
// RateLimit-Policy, RateLimit and Retry-After, formatted by the library
// (rls_format_headers).  The database failed and the failure policy
// denies: 503 with a one-line reason; it admits: next().  A malformed
// X-Forwarded-For from a trusted proxy, or a key the library refuses
// (EKEY): 400 with a one-line reason.  Any other error (an unknown action:
// a configuration mistake) goes to next(err).
const net = require('net');
const errors = require('./errors');

function invalid(detail) {
  return errors.make('EINVAL', detail);
}

// '::ffff:192.0.2.1' -> '192.0.2.1'; other addresses as given.
function normalize(addr) {
  if (typeof addr !== 'string') return '';
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(addr);
  return m ? m[1] : addr;
}

// trustProxy as a function (address, hop) -> boolean; hop 0 is the peer.
//   false/undefined  nobody: the key is the peer's address
//   true             every hop (only behind a proxy that sets the header)
//   number n         the first n hops (the peer and n - 1 behind it)
//   array            addresses and CIDRs ('10.0.0.0/8', '::1', 'loopback')
//   function         called as fn(address, hop)
function trustOf(spec) {
  if (spec === undefined || spec === null || spec === false) return () => false;
  if (spec === true) return () => true;
  if (typeof spec === 'function') return spec;
  if (typeof spec === 'number') {
    if (!Number.isInteger(spec) || spec < 0) throw invalid('trustProxy: a hop count must be an integer >= 0');
    return (addr, hop) => hop < spec;
  }
  if (typeof spec === 'string') spec = spec.split(',').map((s) => s.trim());
  if (!Array.isArray(spec)) throw invalid('trustProxy must be a boolean, a number, an array or a function');
  const list = new net.BlockList();
  for (const item of spec) {
    const entry = item === 'loopback' ? ['127.0.0.0/8', '::1/128'] : [item];
    for (const e of entry) addTrusted(list, e);
  }
  return (addr) => {
    const type = net.isIP(addr);
    return type !== 0 && list.check(addr, type === 4 ? 'ipv4' : 'ipv6');
  };
}

function addTrusted(list, entry) {
  const [addr, bits] = String(entry).split('/');
  const type = net.isIP(addr);
  if (!type) throw invalid(`trustProxy: '${entry}' is not an address or CIDR`);
  const family = type === 4 ? 'ipv4' : 'ipv6';
  if (bits === undefined) {
    list.addAddress(addr, family);
    return;
  }
  const n = Number(bits);
  if (!/^\d+$/.test(bits) || n > (type === 4 ? 32 : 128)) throw invalid(`trustProxy: bad prefix in '${entry}'`);
  list.addSubnet(addr, n, family);
}

class MalformedHeaderError extends Error {
  get name() {
    return 'MalformedHeaderError';
  }
}

// The client's address of req: the peer, or when the peer is trusted the
// rightmost X-Forwarded-For entry that is not (the leftmost when all are).
// trust: a function from trustOf.  Throws MalformedHeaderError when an
// entry it has to read is not an IP address.
function clientAddressWith(req, trust) {
  const peer = normalize(req.socket && req.socket.remoteAddress);
  if (!trust(peer, 0)) return peer;
  const raw = req.headers['x-forwarded-for'];
  if (raw === undefined) return peer;
  const text = Array.isArray(raw) ? raw.join(',') : String(raw);
  const hops = text.split(',').map((s) => s.trim());
  let addr = peer;
  for (let i = hops.length - 1, hop = 1; i >= 0; i--, hop++) {
    const h = normalize(hops[i]);
    if (!net.isIP(h)) throw new MalformedHeaderError(`malformed X-Forwarded-For header: entry ${i + 1} is not an IP address`);
    addr = h;
    if (!trust(h, hop)) return h;
  }
  return addr;
}

function clientAddress(req, trustProxy) {
  return clientAddressWith(req, trustOf(trustProxy));
}

function plain(res, status, body, headers) {
  if (res.headersSent) return;
  res.statusCode = status;
  for (const [name, value] of headers || []) res.setHeader(name, value);
  res.setHeader('Content-Type', 'text/plain; charset=utf-8');
  res.end(body + '\n');
}

function check(options) {
  if (!options || typeof options !== 'object') throw invalid('middleware options must be an object');
  const o = options;
  if (!o.limiter || typeof o.limiter.checkAsync !== 'function') throw invalid('middleware: `limiter` (a Limiter) is required');
  if (typeof o.action !== 'string' && typeof o.action !== 'function') throw invalid('middleware: `action` (a string or a function) is required');
  if (o.key !== undefined && o.key !== 'ip' && typeof o.key !== 'function') throw invalid("middleware: `key` must be 'ip' or a function");
}

// options: limiter (required), action (string or fn(req)), key ('ip' or
// fn(req), may return a Promise), cost (number or fn(req), default 1),
// trustProxy (see trustOf), policy (RateLimit-Policy name; default the
// rule's), headers (true: also on admitted responses; default true),
// statusCode (default 429), message (text of the 429), skip(req),
// onDenied(req, res, next, result), onError(err, req, res, next).
function middleware(options) {
  check(options);
  const o = options;
  const trust = trustOf(o.trustProxy);
  const status = o.statusCode || 429;
  const message = o.message || 'Too Many Requests';
  const sendHeaders = o.headers !== false;
  const Limiter = o.limiter.constructor;
  const headersOf = (r) => (typeof Limiter.headers === 'function' ? Limiter.headers(r, o.policy) : []);

  async function decide(req) {
    const action = typeof o.action === 'function' ? await o.action(req) : o.action;
    const key = typeof o.key === 'function' ? await o.key(req) : clientAddressWith(req, trust);
    const cost = typeof o.cost === 'function' ? await o.cost(req) : o.cost === undefined ? 1 : o.cost;
    return o.limiter.checkAsync(action, key, cost);
  }

  function answer(req, res, next, r) {
    req.rateLimit = r;
    if (r.allowed) {
      if (sendHeaders && !res.headersSent) for (const [n, v] of headersOf(r)) res.setHeader(n, v);
      return next();
    }
    if (r.reason === 'degraded') {
      return plain(res, 503, 'rate limiter unavailable: ' + (r.error ? r.error.message : 'storage failed'));
    }
    if (o.onDenied) return o.onDenied(req, res, next, r);
    return plain(res, status, typeof message === 'function' ? message(req, r) : message, headersOf(r));
  }

  function failed(req, res, next, err) {
    if (err instanceof MalformedHeaderError) return plain(res, 400, err.message);
    if (err && err.code === 'EKEY') return plain(res, 400, 'invalid rate-limit key: ' + err.message);
    if (o.onError) return o.onError(err, req, res, next);
    return next(err);
  }

  return function rlstoreMiddleware(req, res, next) {
    const go = typeof next === 'function' ? next : () => {};
    let skipped = false;
    try {
      skipped = o.skip ? o.skip(req) : false;
    } catch (err) {
      return failed(req, res, go, err);
    }
    if (skipped) return go();
    let p;
    try {
      p = decide(req);
    } catch (err) {
      return failed(req, res, go, err);
    }
    // an exception of a later handler called through next() goes to next(err)
    return p.then(
      (r) => {
        try {
          answer(req, res, go, r);
        } catch (err) {
          failed(req, res, go, err);
        }
      },
      (err) => failed(req, res, go, err),
    );
  };
}

module.exports = { middleware, clientAddress, trustOf, MalformedHeaderError };
