import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK, type JWTPayload } from 'jose';

/**
 * Tokens for JWT scope tests: HS256 signed with a secret, RS256 with generated keys, and a JWKS
 * served over real HTTP on loopback whose keys a test can rotate, counting the fetches.
 */

export const HS_SECRET = 'a-jwt-hmac-secret-of-32-bytes!!!';

export async function hsToken(claims: JWTPayload, options: { secret?: string; expiresIn?: string | number; alg?: string } = {}): Promise<string> {
  const jwt = new SignJWT(claims).setProtectedHeader({ alg: options.alg ?? 'HS256' }).setIssuedAt();
  if (options.expiresIn !== undefined) jwt.setExpirationTime(options.expiresIn);
  return jwt.sign(new TextEncoder().encode(options.secret ?? HS_SECRET));
}

/** An unsecured token (`alg: none`, no signature), as a forger would send it. */
export function noneToken(claims: JWTPayload): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'none', typ: 'JWT' })}.${part(claims)}.`;
}

/** A token whose payload is replaced by `claims`, its header and signature kept: a forged claim. */
export function withPayload(token: string, claims: JWTPayload): string {
  const [header, , signature] = token.split('.');
  return `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
}

export interface SigningKey {
  kid: string;
  privateKey: CryptoKey;
  publicJwk: JWK;
}

export async function rsaKey(kid: string): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
  return { kid, privateKey, publicJwk: { ...(await exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' } };
}

export async function rsToken(key: SigningKey, claims: JWTPayload, expiresIn: string | number = '1h'): Promise<string> {
  return new SignJWT(claims).setProtectedHeader({ alg: 'RS256', kid: key.kid }).setIssuedAt().setExpirationTime(expiresIn).sign(key.privateKey);
}

export interface JwksServer {
  url: string;
  /** How many times the key set was fetched. */
  fetches(): number;
  /** The keys served from now on. */
  serve(keys: readonly SigningKey[]): void;
  /** From now on answer 503 (an issuer that is down), or the keys again. */
  failing(down: boolean): void;
  close(): Promise<void>;
}

export async function startJwksServer(keys: readonly SigningKey[]): Promise<JwksServer> {
  let served = keys;
  let fetches = 0;
  let down = false;
  const server: Server = createServer((_request, response) => {
    fetches += 1;
    if (down) {
      response.writeHead(503).end();
      return;
    }
    response.writeHead(200, { 'content-type': 'application/json' });
    response.end(JSON.stringify({ keys: served.map((key) => key.publicJwk) }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/.well-known/jwks.json`,
    fetches: () => fetches,
    serve: (next) => {
      served = next;
    },
    failing: (next) => {
      down = next;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
