import { createHmac } from 'node:crypto';
import { writeFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { configSchema, type JwtScopeSettings } from '../../src/config/schema.js';
import { MAX_VERIFIED_MS, TokenVerifier } from '../../src/jwt/index.js';
import { HS_SECRET, hsToken, noneToken, rsaKey, rsToken, startJwksServer, withPayload, type JwksServer, type SigningKey } from '../support/jwt.js';

/** The JWT scope verifier on its own: each check, and the JWKS fetched, cached and refreshed. */

function settings(jwt: Record<string, unknown>): JwtScopeSettings {
  const config = configSchema.parse({ origin: { url: 'http://origin.test/graphql' }, scopes: { USER: { definition: 'header:authorization', jwt } } });
  const scope = config.scopes.USER!;
  if (typeof scope === 'string') throw new Error('expected a JWT scope');
  return scope.jwt;
}

const TIMING = { cooldownMs: 30_000, timeoutMs: 500, failureBackoffMs: 5_000, now: Date.now };
const hs = (extra: Record<string, unknown> = {}) => new TokenVerifier(settings({ claim: 'sub', algorithms: ['HS256'], secret: HS_SECRET, ...extra }), TIMING);

describe('HS256 with a secret', () => {
  it('takes the claim of a valid token, verified until its exp', async () => {
    // One exp for the token and the expectation: reading the clock twice fails when a second turns between them.
    const exp = Math.floor(Date.now() / 1000) + 60;
    const verified = await hs().verify(await hsToken({ sub: 'alice', exp }));
    expect(verified).toEqual({ ok: true, claim: 's:alice', validUntil: exp * 1000 });
  });

  it('keeps a token without exp verified no longer than MAX_VERIFIED_MS', async () => {
    const before = Date.now();
    const verified = await hs().verify(await hsToken({ sub: 'alice' }));
    expect(verified.ok && verified.validUntil - before).toBeGreaterThanOrEqual(MAX_VERIFIED_MS);
    expect(verified.ok && verified.validUntil - Date.now()).toBeLessThanOrEqual(MAX_VERIFIED_MS);
  });

  it('refuses a wrong signature, a forged payload, alg none and an algorithm not configured', async () => {
    const verifier = hs();
    const valid = await hsToken({ sub: 'bob' }, { expiresIn: '1h' });
    const results = await Promise.all([
      verifier.verify(await hsToken({ sub: 'alice' }, { secret: 'another-secret-of-32-bytes-long!!' })),
      verifier.verify(withPayload(valid, { sub: 'alice' })),
      verifier.verify(noneToken({ sub: 'alice' })),
      verifier.verify(await hsToken({ sub: 'alice' }, { alg: 'HS512' })),
      verifier.verify('not-a-token'),
    ]);
    expect(results.map((result) => !result.ok && result.failure)).toEqual([
      'jwt-invalid-signature',
      'jwt-invalid-signature',
      'jwt-algorithm-not-allowed',
      'jwt-algorithm-not-allowed',
      'jwt-malformed',
    ]);
  });

  it('refuses a token whose crit header names an extension it does not implement, apart from an algorithm refused', async () => {
    const critical = await new SignJWT({ sub: 'alice' })
      .setProtectedHeader({ alg: 'HS256', crit: ['urn:example:bound'], 'urn:example:bound': true })
      .sign(new TextEncoder().encode(HS_SECRET), { crit: { 'urn:example:bound': true } });
    expect(await hs().verify(critical)).toMatchObject({ ok: false, failure: 'jwt-critical-header-unknown' });
  });

  it('refuses an expired token, unless within the clock tolerance', async () => {
    const expired = await hsToken({ sub: 'alice', exp: Math.floor(Date.now() / 1000) - 10 });
    expect(await hs().verify(expired)).toEqual({ ok: false, failure: 'jwt-expired', detail: 'ERR_JWT_EXPIRED' });
    expect((await hs({ clockToleranceSeconds: 30 }).verify(expired)).ok).toBe(true);
  });

  it('refuses a token not valid yet, of another issuer or for another audience', async () => {
    const verifier = hs({ issuer: 'https://auth.test', audience: 'api' });
    const now = Math.floor(Date.now() / 1000);
    const good = { sub: 'alice', iss: 'https://auth.test', aud: 'api' };
    const results = await Promise.all([
      verifier.verify(await hsToken(good)),
      verifier.verify(await hsToken({ ...good, nbf: now + 300 })),
      verifier.verify(await hsToken({ ...good, iss: 'https://evil.test' })),
      verifier.verify(await hsToken({ ...good, aud: 'other' })),
      verifier.verify(await hsToken({ sub: 'alice', aud: 'api' })),
    ]);
    expect(results.map((result) => (result.ok ? 'ok' : result.failure))).toEqual([
      'ok',
      'jwt-not-yet-valid',
      'jwt-wrong-issuer',
      'jwt-wrong-audience',
      'jwt-wrong-issuer',
    ]);
  });

  it('reads a dotted claim path, tells strings from numbers, and refuses a token without the claim', async () => {
    const verifier = hs({ claim: 'org.id' });
    const results = await Promise.all([
      verifier.verify(await hsToken({ org: { id: 'acme' } })),
      verifier.verify(await hsToken({ org: { id: 7 } })),
      verifier.verify(await hsToken({ org: { id: '7' } })),
      verifier.verify(await hsToken({ org: { name: 'acme' } })),
      verifier.verify(await hsToken({ org: { id: { nested: 1 } } })),
      verifier.verify(await hsToken({ sub: 'alice' })),
      verifier.verify(await hsToken({ org: { id: true } })),
      verifier.verify(await hsToken({ org: { id: 1.5 } })),
    ]);
    expect(results.map((result) => (result.ok ? result.claim : result.failure))).toEqual([
      's:acme',
      'number:7',
      's:7',
      'jwt-claim-missing',
      'jwt-claim-missing',
      'jwt-claim-missing',
      'boolean:true',
      'jwt-claim-unusable',
    ]);
  });

  it('refuses a numeric claim past 2^53, which JSON parsing would round into the id of another user', async () => {
    const verifier = hs({ claim: 'uid' });
    // Written as an int64-issuing server writes it: the payload's JSON text, not a JS number.
    const signed = (payloadJson: string): string => {
      const header = Buffer.from(JSON.stringify({ alg: 'HS256' })).toString('base64url');
      const payload = Buffer.from(payloadJson).toString('base64url');
      const signature = createHmac('sha256', HS_SECRET).update(`${header}.${payload}`).digest('base64url');
      return `${header}.${payload}.${signature}`;
    };
    const alice = await verifier.verify(signed('{"uid":1234567890123456789}'));
    const bob = await verifier.verify(signed('{"uid":1234567890123456790}'));
    const small = await verifier.verify(signed('{"uid":9007199254740991}'));
    expect([alice, bob].map((result) => (result.ok ? result.claim : result.failure))).toEqual(['jwt-claim-unusable', 'jwt-claim-unusable']);
    expect(small).toMatchObject({ ok: true, claim: 'number:9007199254740991' });
  });
});

describe('RS256', () => {
  let first: SigningKey;
  let second: SigningKey;
  let stranger: SigningKey;
  let jwks: JwksServer;

  beforeAll(async () => {
    [first, second, stranger] = await Promise.all([rsaKey('key-1'), rsaKey('key-2'), rsaKey('key-3')]);
    jwks = await startJwksServer([first]);
  });
  afterAll(async () => {
    await jwks.close();
  });
  // The JWKS files' directories, removed after each test so that runs leave nothing in the temporary directory.
  const jwksDirectories: string[] = [];
  const jwksFilePath = async () => {
    const directory = await mkdtemp(join(tmpdir(), 'svc-jwks-'));
    jwksDirectories.push(directory);
    return join(directory, 'jwks.json');
  };
  afterEach(async () => {
    await Promise.all(jwksDirectories.splice(0).map((directory) => rm(directory, { recursive: true, force: true })));
  });

  it('verifies with a PEM public key, and refuses an HS256 token signed with that key as a secret', async () => {
    const { createPublicKey } = await import('node:crypto');
    const { exportSPKI, importJWK } = await import('jose');
    const pem = await exportSPKI((await importJWK(first.publicJwk, 'RS256', { extractable: true })) as never);
    const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], publicKey: pem }), TIMING);
    expect(createPublicKey(pem).type).toBe('public');
    expect((await verifier.verify(await rsToken(first, { sub: 'alice' }))).ok).toBe(true);
    const confused = await verifier.verify(await hsToken({ sub: 'alice' }, { secret: pem }));
    expect(confused).toMatchObject({ ok: false, failure: 'jwt-algorithm-not-allowed' });
  });

  it('fetches the JWKS once, keeps its keys, and fetches again for an unknown kid once the cooldown is over', async () => {
    jwks.serve([first]);
    const before = jwks.fetches();
    const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], jwksUrl: jwks.url }), { ...TIMING, cooldownMs: 1000 });
    for (let i = 0; i < 3; i += 1) expect((await verifier.verify(await rsToken(first, { sub: `user${i}` }))).ok).toBe(true);
    expect(jwks.fetches() - before).toBe(1);

    // The issuer rotates to key-2: within the cooldown an unknown kid fetches nothing.
    jwks.serve([first, second]);
    const rotated = await rsToken(second, { sub: 'alice' });
    const unknown = await rsToken(stranger, { sub: 'alice' });
    for (let i = 0; i < 5; i += 1) {
      expect(await verifier.verify(rotated)).toEqual({ ok: false, failure: 'jwt-key-unavailable', detail: 'ERR_JWKS_NO_MATCHING_KEY' });
    }
    expect(jwks.fetches() - before).toBe(1);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await verifier.verify(rotated)).toMatchObject({ ok: true, claim: 's:alice' });
    expect(jwks.fetches() - before).toBe(2);
    // A kid no key set has is refused without another fetch until the cooldown is over again.
    await Promise.all(Array.from({ length: 20 }, () => verifier.verify(unknown)));
    expect(jwks.fetches() - before).toBe(2);
  });

  it('refuses with jwt-key-unavailable when the JWKS cannot be fetched', async () => {
    const down = await startJwksServer([first]);
    await down.close();
    const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], jwksUrl: down.url }), TIMING);
    expect(await verifier.verify(await rsToken(first, { sub: 'alice' }))).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
  });

  it('after a failed JWKS fetch tries no other for the backoff, then fetches again', async () => {
    const clock = { now: Date.now() };
    const issuer = await startJwksServer([first]);
    try {
      issuer.failing(true);
      const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], jwksUrl: issuer.url }), { ...TIMING, now: () => clock.now });
      const token = await rsToken(first, { sub: 'alice' });
      for (let i = 0; i < 5; i += 1) expect(await verifier.verify(token)).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
      expect(issuer.fetches()).toBe(1);
      issuer.failing(false);
      clock.now += 4_000;
      expect(await verifier.verify(token)).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
      expect(issuer.fetches()).toBe(1);
      clock.now += 1_000;
      expect(await verifier.verify(token)).toMatchObject({ ok: true, claim: 's:alice' });
      expect(issuer.fetches()).toBe(2);
    } finally {
      await issuer.close();
    }
  });

  it('reads a JWKS file, and reads it again for an unknown kid once the cooldown is over', async () => {
    const path = await jwksFilePath();
    await writeFile(path, JSON.stringify({ keys: [first.publicJwk] }));
    const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], jwksFile: path }), { ...TIMING, cooldownMs: 1000 });
    expect((await verifier.verify(await rsToken(first, { sub: 'alice' }))).ok).toBe(true);
    await writeFile(path, JSON.stringify({ keys: [first.publicJwk, second.publicJwk] }));
    const rotated = await rsToken(second, { sub: 'bob' });
    expect(await verifier.verify(rotated)).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await verifier.verify(rotated)).toMatchObject({ ok: true, claim: 's:bob' });
  });

  it('does not read a missing JWKS file again within the failure backoff', async () => {
    const path = await jwksFilePath();
    const clock = { now: 1_000_000 };
    const verifier = new TokenVerifier(settings({ claim: 'sub', algorithms: ['RS256'], jwksFile: path }), { ...TIMING, now: () => clock.now });
    const token = await rsToken(first, { sub: 'alice' });
    expect(await verifier.verify(token)).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
    // The file appears, but within the backoff it is not read: the failure stands.
    await writeFile(path, JSON.stringify({ keys: [first.publicJwk] }));
    clock.now += TIMING.failureBackoffMs - 1;
    expect(await verifier.verify(token)).toMatchObject({ ok: false, failure: 'jwt-key-unavailable' });
    clock.now += 1;
    expect(await verifier.verify(token)).toMatchObject({ ok: true, claim: 's:alice' });
  });
});
