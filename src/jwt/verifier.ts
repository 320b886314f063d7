import { errors, jwtVerify, type JWTPayload } from 'jose';
import type { JwtScopeSettings } from '../config/index.js';
import { verificationKey, type KeySetOptions, type VerificationKey } from './keys.js';

/**
 * Verifies the JWT a scope is keyed on (README, Scopes) with `jose`: the signature against the
 * configured key and algorithms (never `none`), then `exp`, `nbf`, issuer and audience, then the
 * claim that keys the bucket. Each failure has its own stable code, which becomes the PASS reason.
 */

export type JwtFailure =
  | 'jwt-malformed'
  | 'jwt-algorithm-not-allowed'
  | 'jwt-critical-header-unknown'
  | 'jwt-invalid-signature'
  | 'jwt-expired'
  | 'jwt-not-yet-valid'
  | 'jwt-wrong-issuer'
  | 'jwt-wrong-audience'
  | 'jwt-key-unavailable'
  | 'jwt-claim-missing'
  | 'jwt-claim-unusable';

export type Verification =
  /** `claim` keys the bucket; the token may be taken as verified until `validUntil` (ms since the epoch). */
  | { ok: true; claim: string; validUntil: number }
  | { ok: false; failure: JwtFailure; detail: string };

/** How long a verified token without `exp` counts as verified before it is checked again, in ms. */
export const MAX_VERIFIED_MS = 10 * 60 * 1000;

export class TokenVerifier {
  private readonly key: VerificationKey;

  constructor(
    private readonly jwt: JwtScopeSettings,
    private readonly options: KeySetOptions,
  ) {
    this.key = verificationKey(jwt, options);
  }

  async verify(token: string): Promise<Verification> {
    const now = this.options.now();
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.key, {
        algorithms: this.jwt.algorithms,
        currentDate: new Date(now),
        clockTolerance: this.jwt.clockToleranceSeconds,
        ...(this.jwt.issuer === undefined ? {} : { issuer: this.jwt.issuer }),
        ...(this.jwt.audience === undefined ? {} : { audience: this.jwt.audience }),
      }));
    } catch (error) {
      return { ok: false, failure: failureOf(error), detail: error instanceof errors.JOSEError ? error.code : 'verification failed' };
    }
    const claim = claimValue(payload, this.jwt.claim);
    if (claim === undefined) return { ok: false, failure: 'jwt-claim-missing', detail: this.jwt.claim };
    if (claim === UNUSABLE) return { ok: false, failure: 'jwt-claim-unusable', detail: this.jwt.claim };
    const expires = typeof payload.exp === 'number' ? (payload.exp + this.jwt.clockToleranceSeconds) * 1000 : Infinity;
    return { ok: true, claim, validUntil: Math.min(expires, now + MAX_VERIFIED_MS) };
  }
}

function failureOf(error: unknown): JwtFailure {
  if (error instanceof errors.JWTExpired) return 'jwt-expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'iss') return 'jwt-wrong-issuer';
    if (error.claim === 'aud') return 'jwt-wrong-audience';
    if (error.claim === 'nbf' || error.claim === 'iat') return 'jwt-not-yet-valid';
    return 'jwt-malformed';
  }
  // RFC 7515 section 4.1.11: a `crit` parameter the verifier does not understand makes the token
  // invalid. jose throws JOSENotSupported for it as for an algorithm it lacks; only its message tells.
  if (error instanceof errors.JOSENotSupported && error.message.startsWith('Extension Header Parameter')) return 'jwt-critical-header-unknown';
  if (error instanceof errors.JOSEAlgNotAllowed || error instanceof errors.JOSENotSupported) return 'jwt-algorithm-not-allowed';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'jwt-invalid-signature';
  if (error instanceof errors.JWSInvalid || error instanceof errors.JWTInvalid) return 'jwt-malformed';
  // No key for the token's kid, a JWKS that cannot be fetched, read or parsed, a key of the wrong type.
  return 'jwt-key-unavailable';
}

/**
 * The claim at a dotted path (`org.id`), as text: a string as it is, a number or boolean tagged with
 * its type so that `"1"` and `1` stay apart. Anything else (absent, null, an object) is no claim.
 * A number is usable only as an integer JSON parsing kept exactly: two 64-bit ids past 2^53 (as
 * issuers in Java or Go write them) read as one double, and would put two users in one bucket.
 */
function claimValue(payload: JWTPayload, path: string): string | typeof UNUSABLE | undefined {
  let value: unknown = payload;
  for (const name of path.split('.')) {
    if (typeof value !== 'object' || value === null || Array.isArray(value) || !Object.hasOwn(value, name)) return undefined;
    value = (value as Record<string, unknown>)[name];
  }
  if (typeof value === 'string') return `s:${value}`;
  if (typeof value === 'number') return Number.isSafeInteger(value) ? `number:${value}` : UNUSABLE;
  if (typeof value === 'boolean') return `boolean:${value}`;
  return undefined;
}

const UNUSABLE = Symbol('a claim that cannot tell users apart');
