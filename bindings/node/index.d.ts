// Type declarations of the rlstore Node.js binding (index.js).

/// <reference types="node" />

export type Key = string | Buffer;
export type Int = number | bigint;
export type Reason = 'ok' | 'limit' | 'blocked' | 'cost_exceeds_limit' | 'shadow' | 'degraded' | 'batch';

/** The outcome of a check for the deciding limit (rls_result). */
export interface Result {
  allowed: boolean;
  reason: Reason;
  /** Capacity: limit, or burst for bucket algorithms. */
  limit: number;
  /** Units still admissible now; never negative. */
  remaining: number;
  /** ms until fully replenished if idle. */
  resetMs: number;
  /** 0 if admitted; ms until the same request would be admitted; null: never. */
  retryAfterMs: number | null;
  /** Shaping delay (leaky_bucket), else 0. */
  delayMs: number;
  windowMs: number;
  /** The deciding limit's name; '' if none. */
  rule: string;
  /** The database failed and the failure policy decided (reason 'degraded'). */
  error?: RlstoreError;
  /** Reservations: the id (0 when denied or degraded). */
  id?: number;
}

export interface BatchItem {
  action: string;
  key: Key;
  /** Default 1. */
  cost?: Int;
}

export interface BatchResult {
  allowed: boolean;
  results: Result[];
  error?: RlstoreError;
}

export interface OpenOptions {
  busyTimeoutMs?: number;
  durability?: 'normal' | 'full';
  onError?: 'deny' | 'allow';
  readOnly?: boolean;
  create?: boolean;
  fileMode?: number;
  maxKeyLen?: number;
  tool?: string;
  countersPath?: string;
  rulesReadOnly?: boolean;
  fileGroup?: string;
}

export interface AtOptions {
  /** The time of the call, ms since the epoch (the _at functions); default now. */
  now?: Int;
}

export interface UntilOptions extends AtOptions {
  /** Absolute end, ms since the epoch; 0: forever. */
  untilMs?: Int;
  /** Relative end, ms from now. */
  forMs?: number;
}

export type Row = Record<string, string | number | bigint | null>;

export interface UsageOptions extends AtOptions {
  action?: string;
  keySubstr?: Key;
  sort?: 'used' | 'key' | 'reset' | 'denied';
  offset?: number;
  /** 1..100000, default 100. */
  limit?: number;
}

export class Reservation {
  readonly limiter: Limiter;
  readonly result: Result;
  /** 0 when denied or degraded (nothing to commit or cancel). */
  readonly id: number;
  settled: boolean;
  readonly allowed: boolean;
  commit(opts?: AtOptions): void;
  cancel(opts?: AtOptions): void;
  commitAsync(opts?: AtOptions): Promise<void>;
  cancelAsync(opts?: AtOptions): Promise<void>;
}

export class Rules {
  apply(yaml: string | Buffer, opts?: AtOptions & { name?: string; comment?: string; ifVersion?: Int }): number;
  dryRun(yaml: string | Buffer, opts?: AtOptions & { name?: string }): Row[];
  rollback(version: Int, opts?: AtOptions & { comment?: string }): number;
  versions(): Row[];
  get(version?: Int): string;
  describe(version?: Int): { tiers: Row[]; limits: Row[] };
}

export class Limiter {
  constructor(path: string, options?: OpenOptions);
  static open(path: string, options?: OpenOptions): Limiter;
  static headers(result: Result, policy?: string): Array<[string, string]>;
  readonly path: string;
  readonly rules: Rules;
  readonly closed: boolean;
  close(): void;

  check(action: string, key: Key, cost?: Int, opts?: AtOptions): Result;
  checkAsync(action: string, key: Key, cost?: Int, opts?: AtOptions): Promise<Result>;
  peek(action: string, key: Key, cost?: Int, opts?: AtOptions): Result;
  peekAsync(action: string, key: Key, cost?: Int, opts?: AtOptions): Promise<Result>;
  refund(action: string, key: Key, cost?: Int, opts?: AtOptions): number;
  refundAsync(action: string, key: Key, cost?: Int, opts?: AtOptions): Promise<number>;
  checkMany(items: BatchItem[], opts?: AtOptions): BatchResult;
  checkManyAsync(items: BatchItem[], opts?: AtOptions): Promise<BatchResult>;

  reserve(action: string, key: Key, cost?: Int, opts?: AtOptions & { ttlMs?: Int }): Reservation;
  reserveAsync(action: string, key: Key, cost?: Int, opts?: AtOptions & { ttlMs?: Int }): Promise<Reservation>;
  commit(id: Int, opts?: AtOptions): void;
  cancel(id: Int, opts?: AtOptions): void;
  commitAsync(id: Int, opts?: AtOptions): Promise<void>;
  cancelAsync(id: Int, opts?: AtOptions): Promise<void>;
  withReservation<T>(action: string, key: Key, cost: Int, fn: (r: Reservation) => T | Promise<T>,
    opts?: AtOptions & { ttlMs?: Int }): Promise<{ allowed: boolean; result: Result; value?: T }>;

  headers(result: Result, policy?: string): Array<[string, string]>;

  block(key: Key, opts?: UntilOptions & { action?: string; reason?: string }): void;
  unblock(key: Key, opts?: AtOptions & { action?: string }): void;
  blocks(opts?: AtOptions): Row[];
  assignTier(key: Key, tier: string, opts?: UntilOptions & { action?: string }): void;
  unassignTier(key: Key, opts?: AtOptions & { action?: string }): void;
  tiers(opts?: AtOptions): Row[];
  setOverride(action: string, key: Key, limitName: string, limit: Int, opts?: UntilOptions): void;
  unsetOverride(action: string, key: Key, limitName: string, opts?: AtOptions): void;
  overrides(opts?: AtOptions & { action?: string; key?: Key }): Row[];
  reset(action: string, key: Key, opts?: AtOptions): void;

  usage(opts?: UsageOptions): Row[];
  usageCount(opts?: UsageOptions): number;
  explain(action: string, key: Key, opts?: AtOptions): { info: Row; limits: Row[] };
  audit(opts?: { key?: Key; limit?: number }): Row[];
  stats(opts?: AtOptions & { seconds?: number }): { recent: Row[]; totals: Row[] };
  doctor(opts?: { full?: boolean }): Row[];
  gc(opts?: AtOptions & { maxRows?: number }): number;
}

/** Every error of the library: .code is its name ('ENOACTION'). */
export class RlstoreError extends Error {
  readonly code: string;
  readonly errno: number;
  /** rls_strerror of the code. */
  readonly text: string;
  /** rls_errmsg of the call. */
  readonly detail: string;
  /** A check refused for its input: the denying result. */
  result?: Result;
}
export class InvalidArgumentError extends RlstoreError {}
export class OutOfMemoryError extends RlstoreError {}
export class InvalidKeyError extends RlstoreError {}
export class InvalidCostError extends RlstoreError {}
export class InvalidTimeError extends RlstoreError {}
export class UnknownActionError extends RlstoreError {}
export class NotFoundError extends RlstoreError {}
export class CannotOpenError extends RlstoreError {}
export class IsDirectoryError extends RlstoreError {}
export class NotADatabaseError extends RlstoreError {}
export class NewerDatabaseError extends RlstoreError {}
export class ReadOnlyError extends RlstoreError {}
export class BusyError extends RlstoreError {}
export class StorageIOError extends RlstoreError {}
export class StorageFullError extends RlstoreError {}
export class CorruptDatabaseError extends RlstoreError {}
export class StorageError extends RlstoreError {}
export class ConfigError extends RlstoreError {}
export class NoRulesError extends RlstoreError {}
export class ReservationExpiredError extends RlstoreError {}
export class MisuseError extends RlstoreError {}
export class UnsafeDatabaseError extends RlstoreError {}
export class ConflictError extends RlstoreError {}
export class RoleError extends RlstoreError {}

/** The error class of each code name: errors.EKEY === InvalidKeyError. */
export const errors: Record<string, typeof RlstoreError>;
export function libraryVersion(): string;
export const RESERVE_TTL_DEFAULT_MS: number;
export const BATCH_MAX: number;

// ---- Express / Connect middleware ----
export type TrustProxy = boolean | number | string | string[] | ((address: string, hop: number) => boolean);

export interface MiddlewareOptions<Req = any, Res = any> {
  limiter: Limiter;
  action: string | ((req: Req) => string | Promise<string>);
  /** 'ip' (default): the client's address; or a function of the request. */
  key?: 'ip' | ((req: Req) => Key | Promise<Key>);
  cost?: Int | ((req: Req) => Int | Promise<Int>);
  trustProxy?: TrustProxy;
  /** RateLimit-Policy name; default the deciding rule's. */
  policy?: string;
  /** Also send the RateLimit headers on admitted responses (default true). */
  headers?: boolean;
  statusCode?: number;
  message?: string | ((req: Req, result: Result) => string);
  skip?: (req: Req) => boolean;
  onDenied?: (req: Req, res: Res, next: (err?: unknown) => void, result: Result) => void;
  onError?: (err: unknown, req: Req, res: Res, next: (err?: unknown) => void) => void;
}

export function middleware<Req = any, Res = any>(options: MiddlewareOptions<Req, Res>):
  (req: Req, res: Res, next?: (err?: unknown) => void) => Promise<void> | void;
export function clientAddress(req: { headers: Record<string, unknown>; socket?: { remoteAddress?: string } },
  trustProxy?: TrustProxy): string;

// ---- rate-limiter-flexible-style facade ----
export class RateLimiterRes {
  constructor(remainingPoints?: number, msBeforeNext?: number, consumedPoints?: number, isFirstInDuration?: boolean);
  remainingPoints: number;
  /** -1: never (blocked forever, or a request larger than the limit). */
  msBeforeNext: number;
  consumedPoints: number;
  isFirstInDuration: boolean;
  toJSON(): { remainingPoints: number; msBeforeNext: number; consumedPoints: number; isFirstInDuration: boolean };
}

export class RateLimiterRlstore {
  constructor(opts: { limiter: Limiter; action: string; keyPrefix?: string });
  readonly limiter: Limiter;
  readonly action: string;
  readonly keyPrefix: string;
  getKey(key: Key | number): Key;
  /** Resolves admitted; rejects with a RateLimiterRes when denied, an RlstoreError on failure. */
  consume(key: Key | number, points?: number): Promise<RateLimiterRes>;
  penalty(key: Key | number, points?: number): Promise<RateLimiterRes>;
  reward(key: Key | number, points?: number): Promise<RateLimiterRes>;
  block(key: Key | number, secDuration: number): Promise<RateLimiterRes>;
  get(key: Key | number): Promise<RateLimiterRes | null>;
  delete(key: Key | number): Promise<boolean>;
}
