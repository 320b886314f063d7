import { createPublicKey } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, type JSONWebKeySet, type JWTVerifyGetKey, type KeyObject } from 'jose';
import type { JwtScopeSettings } from '../config/index.js';

/**
 * Where a JWT scope's verification key comes from: a shared secret, one public key, or a JWKS
 * (a file or a URL) whose keys are cached and fetched again when a token names an unknown `kid`,
 * at most once per cooldown (README, Scopes).
 */

export type VerificationKey = Uint8Array | KeyObject | JWTVerifyGetKey;

export interface KeySetOptions {
  /** No JWKS is fetched (or read) again sooner than this after the last time, whatever `kid` a token names. */
  cooldownMs: number;
  /** A JWKS URL slower than this fails the request's verification (it passes, uncached). */
  timeoutMs: number;
  /** After a JWKS fetch failed, none is tried again sooner than this. */
  failureBackoffMs: number;
  now: () => number;
}

export function verificationKey(jwt: JwtScopeSettings, options: KeySetOptions): VerificationKey {
  if (jwt.secret !== undefined) return new TextEncoder().encode(jwt.secret);
  if (jwt.publicKey !== undefined) return createPublicKey(jwt.publicKey);
  if (jwt.jwksUrl !== undefined) {
    // jose's own cache: refetched on an unknown kid once the cooldown after a successful fetch is
    // over, and every cacheMaxAge; the cooldown after a failed one is ours.
    return createRemoteJWKSet(new URL(jwt.jwksUrl), {
      cooldownDuration: options.cooldownMs,
      timeoutDuration: options.timeoutMs,
      [customFetch]: fetchBackingOff(options),
    });
  }
  return jwksFileKeys(jwt.jwksFile!, options);
}

/**
 * `fetch`, refused at once for a while after a fetch failed: jose tries again on the next token
 * otherwise, so an issuer that is down would get a request per request svc-cache sees.
 */
function fetchBackingOff(options: KeySetOptions): typeof fetch {
  let failedAt = -Infinity;
  return async (url, init) => {
    if (options.now() - failedAt < options.failureBackoffMs) throw new Error('the last JWKS fetch failed moments ago');
    try {
      const response = await fetch(url, init);
      if (!response.ok) failedAt = options.now();
      return response;
    } catch (error) {
      failedAt = options.now();
      throw error;
    }
  };
}

/**
 * A JWKS file, read when first needed and read again on an unknown `kid` once the cooldown is over.
 * A change of its content also reloads the configuration, and so makes a new verifier with nothing
 * remembered (src/config/namedFiles.ts): a key taken out of it stops verifying at once.
 * A read that failed (file missing, not a JWKS) is not tried again within the failure backoff: every
 * token would otherwise read and parse the file.
 */
function jwksFileKeys(path: string, options: KeySetOptions): JWTVerifyGetKey {
  let loaded: { keys: ReturnType<typeof createLocalJWKSet>; at: number } | undefined;
  let failedAt = -Infinity;
  let loading: Promise<void> | undefined;
  const load = (): Promise<void> => {
    if (options.now() - failedAt < options.failureBackoffMs) return Promise.reject(new Error('the last JWKS file read failed moments ago'));
    loading ??= readFile(path, 'utf8')
      .then((text) => {
        loaded = { keys: createLocalJWKSet(JSON.parse(text) as JSONWebKeySet), at: options.now() };
      })
      .catch((error: unknown) => {
        failedAt = options.now();
        throw error;
      })
      .finally(() => {
        loading = undefined;
      });
    return loading;
  };
  return async (header, token) => {
    if (!loaded) await load();
    try {
      return await loaded!.keys(header, token);
    } catch (error) {
      if (!(error instanceof errors.JWKSNoMatchingKey) || options.now() - loaded!.at < options.cooldownMs) throw error;
      // The cooldown runs from this attempt, read or not.
      loaded!.at = options.now();
      await load();
      return loaded!.keys(header, token);
    }
  };
}
