import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig } from '../../src/config/index.js';

/** The keys of the sidecar's own network: `endpoints` and `grpc.tls`. */

const ORIGIN = 'origin:\n  url: http://origin.test/graphql\n';
const parse = (text: string) => parseConfig(text, { source: 'config.yaml', env: {} });
const problems = (text: string): readonly string[] => {
  try {
    parse(text);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
};

describe('endpoints', () => {
  it('defaults to /graphql', () => {
    expect(parse(ORIGIN).endpoints).toEqual(['/graphql']);
  });

  it('takes a list of paths', () => {
    expect(parse(`${ORIGIN}endpoints: [/graphql, /t/acme/graphql]\n`).endpoints).toEqual(['/graphql', '/t/acme/graphql']);
  });

  it('refuses a path without its leading slash, and an empty list', () => {
    expect(problems(`${ORIGIN}endpoints: [graphql]\n`)).toEqual([
      'config.yaml: endpoints[0]: expected a path starting with "/", got "graphql" (line 3)',
    ]);
    expect(problems(`${ORIGIN}endpoints: []\n`).join('\n')).toMatch(/^config\.yaml: endpoints: /);
  });
});

describe('grpc.tls', () => {
  it('is absent by default: clear text on the pod loopback', () => {
    expect(parse(ORIGIN).grpc).toBeUndefined();
  });

  it('takes the certificate, key and client CA file names', () => {
    const config = parse(`${ORIGIN}grpc:\n  tls: { cert: /tls/tls.crt, key: /tls/tls.key, clientCa: /tls/ca.crt }\n`);
    expect(config.grpc?.tls).toEqual({ cert: '/tls/tls.crt', key: '/tls/tls.key', clientCa: '/tls/ca.crt' });
  });

  it('refuses TLS without a client CA: every client must present a certificate', () => {
    expect(problems(`${ORIGIN}grpc:\n  tls: { cert: /tls/tls.crt, key: /tls/tls.key }\n`).join('\n')).toMatch(/grpc\.tls\.clientCa/);
  });
});
