import { describe, expect, it } from 'vitest';
import { configSchema } from '../../src/config/schema.js';
import { JwtScopes } from '../../src/engine/jwtScopes.js';
import { scopeKeyedHeaders, scopeVaryHeaders } from '../../src/engine/scopes.js';
import { HS_SECRET, hsToken } from '../support/jwt.js';

/** A request's JWT scope identities: verified once, then a synchronous lookup until the token expires. */

const { scopes } = configSchema.parse({
  origin: { url: 'http://origin.test/graphql' },
  scopes: {
    USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: HS_SECRET } },
    ORG: { definition: 'cookie:session', jwt: { claim: 'org', algorithms: ['HS256'], secret: HS_SECRET } },
    TEAM: 'header:x-team',
    ACCESS: { definition: 'header:x-access-token', jwt: { claim: 'sub', algorithms: ['HS256'], secret: HS_SECRET } },
  },
});

function clock(start: number) {
  const state = { now: start };
  return { state, now: () => state.now };
}

describe('JwtScopes', () => {
  it('answers synchronously for scopes without JWT, and for a token verified before until it expires', async () => {
    const time = clock(Date.now());
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: time.now });
    expect(jwt.identify(['TEAM'], scopes, [['x-team', 'a']])).toEqual({ kind: 'identified', identities: new Map() });

    const token = await hsToken({ sub: 'alice' }, { expiresIn: '60s' });
    const headers: Array<[string, string]> = [['authorization', `Bearer ${token}`]];
    const first = jwt.identify(['USER'], scopes, headers);
    expect(first).toBeInstanceOf(Promise);
    const verified = await first;
    expect(verified.kind).toBe('identified');
    const identity = verified.kind === 'identified' ? verified.identities.get('USER') : undefined;
    expect(identity).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(jwt.identify(['USER'], scopes, headers)).toEqual({ kind: 'identified', identities: new Map([['USER', identity]]) });

    time.state.now += 61_000;
    const expired = jwt.identify(['USER'], scopes, headers);
    expect(expired).toBeInstanceOf(Promise);
    expect(await expired).toEqual({ kind: 'refused', failure: 'jwt-expired', detail: 'USER: ERR_JWT_EXPIRED' });
  });

  it('gives one identity to every token of one subject, and none to a request without a token', async () => {
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: Date.now });
    const identify = async (headers: Array<[string, string]>) => jwt.identify(['ORG', 'USER'], scopes, headers);
    const a = await identify([['authorization', `bearer ${await hsToken({ sub: 'alice' }, { expiresIn: '60s' })}`], ['cookie', `session=${await hsToken({ org: 'acme' })}`]]);
    const b = await identify([['authorization', `Bearer ${await hsToken({ sub: 'alice' }, { expiresIn: '120s' })}`], ['cookie', `session=${await hsToken({ org: 'acme', sub: 'x' })}`]]);
    expect(a).toEqual(b);
    expect(a.kind === 'identified' && [...a.identities.values()].every((identity) => /^[A-Za-z0-9_-]{43}$/.test(identity ?? ''))).toBe(true);
    expect(await identify([])).toEqual({ kind: 'identified', identities: new Map([['ORG', undefined], ['USER', undefined]]) });
  });

  it('refuses a header sent twice or empty as malformed', async () => {
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: Date.now });
    const token = await hsToken({ sub: 'alice' });
    const refused = { kind: 'refused', failure: 'jwt-malformed', detail: 'USER: not one bearer token' };
    expect(jwt.identify(['USER'], scopes, [['authorization', `Bearer ${token}`], ['authorization', `Bearer ${token}`]])).toEqual(refused);
    expect(jwt.identify(['USER'], scopes, [['authorization', 'Bearer ']])).toEqual(refused);
  });

  it('reads a token in Authorization only after the Bearer scheme, in any case and after one or more spaces', async () => {
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: Date.now });
    const token = await hsToken({ sub: 'alice' });
    const refused = { kind: 'refused', failure: 'jwt-malformed', detail: 'USER: not one bearer token' };
    for (const value of [token, `Token ${token}`, `Basic ${token}`, `Bearer\t${token}`, `Bearer${token}`, `${token} Bearer`]) {
      expect(jwt.identify(['USER'], scopes, [['authorization', value]])).toEqual(refused);
    }
    const identities = await Promise.all([`Bearer ${token}`, `bearer ${token}`, `BEARER   ${token}`, ` Bearer ${token} `].map((value) => jwt.identify(['USER'], scopes, [['authorization', value]])));
    expect(identities.every((identity) => identity.kind === 'identified' && identity.identities.get('USER') !== undefined)).toBe(true);
    expect(new Set(identities.map((identity) => JSON.stringify(identity.kind === 'identified' ? [...identity.identities] : identity))).size).toBe(1);
  });

  it('takes the whole value of another header as the token, a Bearer prefix dropped', async () => {
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: Date.now });
    const token = await hsToken({ sub: 'alice' });
    const bare = await jwt.identify(['ACCESS'], scopes, [['x-access-token', token]]);
    const prefixed = await jwt.identify(['ACCESS'], scopes, [['x-access-token', `Bearer ${token}`]]);
    expect(bare.kind).toBe('identified');
    expect(prefixed).toEqual(bare);
  });

  it('starts over with a reloaded configuration: a new secret refuses the tokens the old one verified', async () => {
    const jwt = new JwtScopes({ secret: Buffer.from('scope-key'), now: Date.now });
    const headers: Array<[string, string]> = [['authorization', `Bearer ${await hsToken({ sub: 'alice' })}`]];
    expect((await jwt.identify(['USER'], scopes, headers)).kind).toBe('identified');
    const reloaded = configSchema.parse({
      origin: { url: 'http://origin.test/graphql' },
      scopes: { USER: { definition: 'header:authorization', jwt: { claim: 'sub', algorithms: ['HS256'], secret: 'the-rotated-secret' } } },
    }).scopes;
    const refused = jwt.identify(['USER'], reloaded, headers);
    expect(refused).toBeInstanceOf(Promise);
    expect(await refused).toEqual({ kind: 'refused', failure: 'jwt-invalid-signature', detail: 'USER: ERR_JWS_SIGNATURE_VERIFICATION_FAILED' });
  });
});

describe('what a JWT scope varies on and keys', () => {
  it('keys its header (the claim names the principal), but not the cookie header for a cookie token', () => {
    expect(scopeVaryHeaders(['USER', 'ORG'], scopes)).toEqual(['authorization', 'cookie']);
    expect(scopeKeyedHeaders(['USER', 'ORG'], scopes)).toEqual(['authorization']);
  });
});
