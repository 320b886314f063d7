import { createHmac, hash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { JwtScopeSettings, ScopeSource } from '../config/index.js';
import { cookieValues, headerValues, type HeaderList } from '../http/index.js';
import { TokenVerifier, type JwtFailure, type KeySetOptions } from '../jwt/index.js';
import { sourcesOf, type ScopeDefinitions } from './scopes.js';

/**
 * The identities of a request's JWT scopes (README, Scopes): each scope's token is verified once
 * and then remembered, by a hash of the token, until it expires, so a HIT costs a map lookup and
 * not a signature check. What is remembered is a keyed digest of the claim, never the claim or the
 * token. A request that sent no token is absent from the scope, as for every scope; a token that
 * fails verification refuses the scope (the request passes, its PASS reason the failed check).
 */

export type JwtIdentification =
  /** Per JWT scope of the request: its claim's digest, or undefined when no token was sent. */
  | { kind: 'identified'; identities: ReadonlyMap<string, string | undefined> }
  | { kind: 'refused'; failure: JwtFailure; detail: string };

/** How many verified tokens each JWT scope remembers; the least recently used go first. */
const VERIFIED_TOKENS_PER_SCOPE = 10_000;

/**
 * A JWKS is fetched again for an unknown `kid` at most this often, a fetch may take this long, and
 * after a failed one the next waits this long.
 */
const JWKS_TIMING = { cooldownMs: 30_000, timeoutMs: 500, failureBackoffMs: 5_000 };

const NO_JWT_SCOPES: JwtIdentification = { kind: 'identified', identities: new Map() };

export class JwtScopes {
  /** Per scope as configured: a reload makes new settings objects, and so new verifiers. */
  private readonly verifiers = new WeakMap<JwtScopeSettings, RememberingVerifier>();

  constructor(private readonly options: { secret: Buffer; now: () => number }) {}

  /** Synchronous when the request has no JWT scope or every token it sent is remembered. */
  identify(scopes: readonly string[], definitions: ScopeDefinitions, headers: HeaderList): JwtIdentification | Promise<JwtIdentification> {
    let identities: Map<string, string | undefined> | undefined;
    const unknown: Array<{ scope: string; verifier: RememberingVerifier; token: string }> = [];
    for (const scope of scopes) {
      const configured = definitions[scope];
      if (configured === undefined || typeof configured === 'string') continue;
      identities ??= new Map();
      const token = tokenOf(sourcesOf(definitions, scope), headers);
      if (token === undefined) {
        identities.set(scope, undefined);
        continue;
      }
      if (token === '') return { kind: 'refused', failure: 'jwt-malformed', detail: `${scope}: not one bearer token` };
      const verifier = this.verifierOf(configured.jwt);
      const known = verifier.remembered(token);
      if (known === undefined) unknown.push({ scope, verifier, token });
      else identities.set(scope, known);
    }
    if (identities === undefined) return NO_JWT_SCOPES;
    return unknown.length === 0 ? { kind: 'identified', identities } : verifyEach(identities, unknown);
  }

  private verifierOf(jwt: JwtScopeSettings): RememberingVerifier {
    let verifier = this.verifiers.get(jwt);
    if (!verifier) {
      const keyOptions: KeySetOptions = { ...JWKS_TIMING, now: this.options.now };
      verifier = new RememberingVerifier(new TokenVerifier(jwt, keyOptions), this.options.secret, this.options.now);
      this.verifiers.set(jwt, verifier);
    }
    return verifier;
  }
}

async function verifyEach(
  identities: Map<string, string | undefined>,
  unknown: ReadonlyArray<{ scope: string; verifier: RememberingVerifier; token: string }>,
): Promise<JwtIdentification> {
  for (const { scope, verifier, token } of unknown) {
    const verified = await verifier.verify(token);
    if (!verified.ok) return { kind: 'refused', failure: verified.failure, detail: `${scope}: ${verified.detail}` };
    identities.set(scope, verified.identity);
  }
  return { kind: 'identified', identities };
}

/** A scope's verifier and the tokens it verified, each until it expires, as a digest of the token. */
class RememberingVerifier {
  private readonly verified = new LRUCache<string, { identity: string; validUntil: number }>({ max: VERIFIED_TOKENS_PER_SCOPE });

  constructor(
    private readonly verifier: TokenVerifier,
    private readonly secret: Buffer,
    private readonly now: () => number,
  ) {}

  /** The identity of a token verified before and not expired since. */
  remembered(token: string): string | undefined {
    const tokenHash = hashOf(token);
    const known = this.verified.get(tokenHash);
    if (known === undefined) return undefined;
    if (known.validUntil > this.now()) return known.identity;
    this.verified.delete(tokenHash);
    return undefined;
  }

  async verify(token: string): Promise<{ ok: true; identity: string } | { ok: false; failure: JwtFailure; detail: string }> {
    const verification = await this.verifier.verify(token);
    if (!verification.ok) return verification;
    // Keyed like the bucket itself, so the claim is not guessable from memory either.
    const identity = createHmac('sha256', this.secret).update(verification.claim).digest('base64url');
    this.verified.set(hashOf(token), { identity, validUntil: verification.validUntil });
    return { ok: true, identity };
  }
}

/**
 * The token in a JWT scope's one source: undefined when the request has none, '' when it is not one
 * token (the header sent twice, or empty). In `Authorization` and `Proxy-Authorization`, whose value
 * is a scheme and its credentials (RFC 9110 section 11.4), the token is only what follows `Bearer`
 * (any case) and one or more spaces (RFC 6750 section 2.1): an origin that extracts bearer tokens
 * refuses a bare `Authorization: <jwt>`, so it is no token for the scope either (README, Scopes).
 * In any other header the whole value is the token, a `Bearer ` prefix dropped.
 */
function tokenOf(sources: readonly ScopeSource[], headers: HeaderList): string | undefined {
  const [source] = sources;
  if (source === undefined) return undefined;
  // A cookie's occurrences all agree here: requestStages.ts passed the others (ambiguousScopeSource).
  if (source.kind === 'cookie') return cookieValues(headers, source.name)[0];
  const values = headerValues(headers, source.name);
  if (values.length === 0) return undefined;
  if (values.length > 1) return '';
  const value = values[0]!.trim();
  const scheme = BEARER_SCHEME.exec(value);
  if (scheme !== null) return value.slice(scheme[0].length);
  return CREDENTIALS_FIELDS.has(source.name) ? '' : value;
}

const BEARER_SCHEME = /^bearer +/i;
const CREDENTIALS_FIELDS: ReadonlySet<string> = new Set(['authorization', 'proxy-authorization']);

function hashOf(token: string): string {
  // One-shot, as the cache key's (cacheKey.ts): every JWT-scoped request hashes its token.
  return hash('sha256', token, 'base64url');
}
