import { randomBytes } from 'node:crypto';
import { readdirSync } from 'node:fs';
import { setPriority } from 'node:os';
import { dictionary } from '@zxcvbn-ts/language-common';
import { RateLimited, Unavailable, Validation } from '../errors.js';
import { clientKey } from '../infra/client-address.js';
import { makeHash, needsRehash, verifyHash, type HashPolicy } from './password-hashes.js';
import type { ClientInfo } from '../principal.js';

/** bcrypt reads at most 72 bytes; longer passwords are refused rather than silently cut. */
export const MAX_PASSWORD_BYTES = 72;

/** Says why a password could not be hashed now: too many are already waiting. */
export const hashingBusy = (retryAfterSeconds: number) =>
  new Unavailable({ message: 'Too many password checks in progress; try again shortly', retryAfterSeconds });

/** Says why this caller's password could not be hashed now: it holds its share of the queue already. */
export const callerHashingBusy = (retryAfterSeconds: number) =>
  new RateLimited(retryAfterSeconds * 1000, {
    message:
      'Too many password operations at once from this caller: it holds its share of the password-hashing queue (PASSWORD_HASH_CALLER_MAX); try again shortly',
    overload: true,
  });

/**
 * Whom a hash counts against, for their share of the queue: the signed-in user whose request it is,
 * else the client's address. A hash with no caller (the first admin's, at start-up) is not counted.
 * It is passed along rather than kept in an AsyncLocalStorage: that would tax every promise of
 * every request (a quarter of the rate of the token check), for the few requests that hash.
 */
export type HashCaller = string;

export const userCaller = (userId: number): HashCaller => `user:${userId}`;

export const clientCaller = (client: ClientInfo): HashCaller => `client:${clientKey(client.ip)}`;

export interface HasherOptions {
  /** The algorithm and cost of new hashes (stored hashes of any known format verify). */
  policy: HashPolicy;
  /** Hashes run at once; more only share the same cores (and libuv's four threads) more thinly. */
  concurrency: number;
  /** Hashes that may wait for a free slot; one more is refused at once with 503. */
  maxWaiting: number;
  /** Places (running or waiting) one caller may hold; one more is refused at once with 429. */
  maxPerCaller?: number;
  /** Told the seconds of each hash or check, its wait for a slot aside (for metrics). */
  observe?: (seconds: number) => void;
}

/**
 * Password hashing (bcrypt, argon2, PBKDF2) on libuv's thread pool, off the event loop, at most
 * `concurrency` at a time. It is the one thing here that costs CPU by design, so it is rationed: past `maxWaiting` queued hashes, a
 * caller is told to come back (503 with Retry-After) rather than wait for seconds behind the others.
 */
export class PasswordHasher {
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  /** Places held per caller, for the callers that hold any. */
  private readonly heldBy = new Map<string, number>();
  private dummy: Promise<string> | undefined;
  /** Seconds per hash, as last measured; sizes Retry-After. */
  private secondsPerHash = 0.2;

  constructor(private readonly options: HasherOptions) {}

  /** Hashes and checks waiting for a slot, for metrics and tests. */
  get queued(): number {
    return this.waiting.length;
  }

  hash(password: string, caller?: HashCaller): Promise<string> {
    return this.rationed(() => makeHash(password, this.options.policy), caller);
  }

  /**
   * A new hash of `password`, which has just matched `stored`, when `stored` is of another algorithm
   * or a lower cost than new hashes get. Undefined when it is not, or when the queue is full at the
   * moment: the sign-in goes on and the next one tries again.
   */
  async rehash(stored: string, password: string, caller?: HashCaller): Promise<string | undefined> {
    if (!needsRehash(stored, this.options.policy)) return undefined;
    try {
      return await this.hash(password, caller);
    } catch (error) {
      if (error instanceof Unavailable || error instanceof RateLimited) return undefined;
      throw error;
    }
  }

  /**
   * True only for the right password, whatever known format the stored hash is in. Without a hash
   * (no such account), or for a password over the length limit, it does the same work against a dummy hash and says false, so a login
   * for an unknown account takes as long as one with a wrong password.
   */
  async verify(password: string, passwordHash: string | undefined, caller?: HashCaller): Promise<boolean> {
    const bytes = Buffer.from(password, 'utf8');
    if (passwordHash !== undefined && bytes.length <= MAX_PASSWORD_BYTES)
      return this.rationed(() => verifyHash(bytes, passwordHash), caller);
    const dummy = await this.dummyHash();
    await this.rationed(() => verifyHash(bytes.subarray(0, MAX_PASSWORD_BYTES), dummy), caller);
    return false;
  }

  /** A hash of a random password with the configured algorithm and cost, made once (outside the ration). */
  dummyHash(): Promise<string> {
    this.dummy ??= makeHash(randomBytes(18).toString('base64url'), this.options.policy);
    return this.dummy;
  }

  private async rationed<T>(work: () => Promise<T>, caller: HashCaller | undefined): Promise<T> {
    const held = caller === undefined ? 0 : (this.heldBy.get(caller) ?? 0);
    // One caller cannot take the queue from everyone else: past its share it is told to slow down.
    if (caller !== undefined && held >= (this.options.maxPerCaller ?? Infinity)) {
      throw callerHashingBusy(this.retryAfterSeconds(held));
    }
    if (this.running >= this.options.concurrency && this.waiting.length >= this.options.maxWaiting) {
      throw hashingBusy(this.retryAfterSeconds(this.waiting.length + 1));
    }
    if (caller !== undefined) this.heldBy.set(caller, held + 1);
    try {
      if (this.running >= this.options.concurrency) {
        // The slot is handed over by the finishing hash, so `running` already counts this one.
        await new Promise<void>((resolve) => this.waiting.push(resolve));
      } else {
        this.running++;
      }
      const started = performance.now();
      try {
        return await work();
      } finally {
        this.secondsPerHash = (performance.now() - started) / 1000;
        this.options.observe?.(this.secondsPerHash);
        const next = this.waiting.shift();
        if (next) next();
        else this.running--;
      }
    } finally {
      if (caller !== undefined) {
        const left = (this.heldBy.get(caller) ?? 1) - 1;
        if (left > 0) this.heldBy.set(caller, left);
        else this.heldBy.delete(caller);
      }
    }
  }

  /** Seconds until `hashes` more have run at the measured pace, at least one. */
  private retryAfterSeconds(hashes: number): number {
    const rounds = Math.ceil(hashes / this.options.concurrency);
    return Math.max(1, Math.ceil(rounds * this.secondsPerHash));
  }
}

/** Shorter passwords fail the contract's schema before they get here. */
export const MIN_PASSWORD_LENGTH = 8;

/**
 * Common passwords, lower-cased: the entries of at least MIN_PASSWORD_LENGTH characters of the
 * list of about 49,000 most used passwords that ships with @zxcvbn-ts/language-common. Built once,
 * when the service starts.
 */
export const COMMON_PASSWORDS: ReadonlySet<string> = new Set(
  dictionary['passwords-common'].filter((entry) => entry.length >= MIN_PASSWORD_LENGTH).map((entry) => entry.toLowerCase()),
);

/** True for a password on the common list, whatever its case and surrounding spaces. */
export function isCommonPassword(password: string): boolean {
  const lower = password.toLowerCase();
  return COMMON_PASSWORDS.has(lower) || COMMON_PASSWORDS.has(lower.trim());
}

/** Refuses, as a validation error on `field`, a password over bcrypt's input limit. */
export function assertPasswordFits(password: string | undefined, field: string): void {
  if (password === undefined || Buffer.byteLength(password, 'utf8') <= MAX_PASSWORD_BYTES) return;
  throw new Validation([{ field, message: `must NOT be longer than ${MAX_PASSWORD_BYTES} bytes of UTF-8` }]);
}

/**
 * Every rule a new password must meet beyond the schema, as a validation error on `field`: at most
 * 72 bytes, not a common password, and not the account's e-mail address (`email`, when known).
 */
export function checkNewPassword(password: string | undefined, field: string, email?: string): void {
  if (password === undefined) return;
  assertPasswordFits(password, field);
  if (isCommonPassword(password)) throw new Validation([{ field, message: 'is too common' }]);
  if (email !== undefined) checkNotEmail(password, email, field);
}

/** The e-mail rule alone, for callers that learn the account's address after the other checks. */
export function checkNotEmail(password: string | undefined, email: string, field: string): void {
  if (password !== undefined && password.trim().toLowerCase() === email.trim().toLowerCase()) {
    throw new Validation([{ field, message: 'must not be the same as the e-mail address' }]);
  }
}

/**
 * bcrypt runs on libuv's thread pool, which shares the cores with the event loop. On Linux this gives
 * every thread of the process but the main one a lower scheduling priority (nice +10): under a burst of
 * logins the event loop, which answers every other request, runs as soon as it has work instead of
 * waiting for a core behind the hashes, and the hashes still get every cycle it leaves. Call it once
 * the pool has started (after a first hash); elsewhere, or where it is not allowed, it does nothing.
 */
export function lowerHelperThreadPriority(): void {
  if (process.platform !== 'linux') return;
  let threads: string[];
  try {
    threads = readdirSync('/proc/self/task');
  } catch {
    return;
  }
  for (const thread of threads) {
    const tid = Number(thread);
    if (tid === process.pid) continue;
    try {
      setPriority(tid, 10);
    } catch {
      // A thread that has ended, or a system that refuses: the defaults stay.
    }
  }
}
