'use strict';
// errors.js - one Error class per code of the library's error table
// (RLS_ERRNO_MAP in rlstore.h), all subclasses of RlstoreError.
//
//   err instanceof rlstore.UnknownActionError
//   err instanceof rlstore.RlstoreError
//   err.code    'ENOACTION'   the library's name (rls_errname)
//   err.errno   6             its number (stable: codes are only appended)
//   err.text    'unknown action'            rls_strerror
//   err.detail  "action 'x' is not defined"  rls_errmsg of the call
//   err.result  for a check refused for its input: the denying Result
//
// The classes are made from the table of the loaded library, so a code
// added to a newer library gets a class too (named Rlstore<CODE>Error).

class RlstoreError extends Error {
  constructor(message, fields) {
    super(message);
    const f = fields || {};
    this.code = f.code || 'UNKNOWN';
    this.errno = f.errno || 0;
    this.text = f.text || '';
    this.detail = f.detail || '';
  }

  get name() {
    return this.constructor.name;
  }
}

// Readable class names of the codes of rlstore.h.
const NAMES = {
  EINVAL: 'InvalidArgumentError',
  ENOMEM: 'OutOfMemoryError',
  EKEY: 'InvalidKeyError',
  ECOST: 'InvalidCostError',
  ETIME: 'InvalidTimeError',
  ENOACTION: 'UnknownActionError',
  ENOTFOUND: 'NotFoundError',
  ECANTOPEN: 'CannotOpenError',
  EISDIR: 'IsDirectoryError',
  ENOTDB: 'NotADatabaseError',
  ENEWER: 'NewerDatabaseError',
  EREADONLY: 'ReadOnlyError',
  EBUSY: 'BusyError',
  EIO: 'StorageIOError',
  EFULL: 'StorageFullError',
  ECORRUPT: 'CorruptDatabaseError',
  ESTORAGE: 'StorageError',
  ECONFIG: 'ConfigError',
  ENORULES: 'NoRulesError',
  EEXPIRED: 'ReservationExpiredError',
  EMISUSE: 'MisuseError',
  EUNSAFE: 'UnsafeDatabaseError',
  ECONFLICT: 'ConflictError',
  EROLE: 'RoleError',
};

const byCode = Object.create(null);
const classes = Object.create(null);

function makeClass(name) {
  // a named class without eval: the name comes from an object literal key
  const holder = {
    [name]: class extends RlstoreError {},
  };
  return holder[name];
}

// table: [[errno, name, text], ...] from the addon.
function install(table) {
  for (const [errno, code, text] of table) {
    const cls = makeClass(NAMES[code] || `Rlstore${code}Error`);
    cls.code = code;
    cls.errno = errno;
    cls.text = text;
    byCode[code] = cls;
    classes[cls.name] = cls;
  }
}

// The factory the addon calls to make every error it throws.
function create(errno, code, text, detail) {
  const cls = byCode[code] || RlstoreError;
  return new cls(detail || text, { errno, code, text, detail });
}

// The error of a code name with a detail, made in JS (argument checks of
// index.js and the middleware).
function make(code, detail) {
  const cls = byCode[code];
  return create(cls ? cls.errno : 0, code, cls ? cls.text : '', detail);
}

module.exports = { RlstoreError, install, create, make, byCode, classes, NAMES };
