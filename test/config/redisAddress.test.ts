import { describe, expect, it } from 'vitest';
import { ConfigError, parseConfig, parseRedisNode, parseRedisUrl } from '../../src/config/index.js';

/**
 * Redis addresses (`redis.url`, `redis.cluster.nodes`, `redis.sentinel.sentinels`): every one the
 * store could not connect to is refused by the schema, under its key and line, so that `check`,
 * `serve` and a reload say the same; a URL, which may hold a password, is quoted back without it.
 */

const ORIGIN = 'origin:\n  url: http://origin.test/graphql\n';

function problems(redis: string): readonly string[] {
  try {
    parseConfig(`${ORIGIN}redis:\n${redis}`, { source: 'config.yaml', env: {} });
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('redis.url', () => {
  it.each([
    ['"redis://:pw@local host:6379"', 'expected a URL of the form redis[s]://[[user]:password@]host[:port][/db], with the password URL-encoded, got a secret of 27 characters (not shown)'],
    // The new user's run: a port out of range hid the whole URL as a secret, where the README shows it quoted.
    ['"redis://:pw@localhost:99999"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@localhost:99999"'],
    ['"redis://:pw@localhost:abc"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@localhost:abc"'],
    // The review: without an "@", a port reads like a password (redis://default:98765432).
    ['"redis://127.0.0.1:99999/0"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got a secret of 25 characters (not shown)'],
    ['"redis://default:98765432"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got a secret of 24 characters (not shown)'],
    ['"redis://:hunter2"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got a secret of 16 characters (not shown)'],
    ['"redis://:pw@localhost:0"', 'expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@localhost:0"'],
    ['redis://localhost:6379/abc', 'expected a redis:// or rediss:// URL whose path is a database number (redis://host:6379/0), got "redis://localhost:6379/abc"'],
    [
      '"rediss://:p@ss#w:rd@redis:6380"',
      'expected a redis:// or rediss:// URL without "?" or "#": svc-cache reads no options from it (in a password, write them %3F and %23), got a secret of 30 characters (not shown)',
    ],
    ['"redis://redis:6379?db=1"', 'expected a redis:// or rediss:// URL without "?" or "#": svc-cache reads no options from it (in a password, write them %3F and %23), got a secret of 23 characters (not shown)'],
    ['http://localhost:6379', 'expected a redis:// or rediss:// URL such as redis://host:6379, got "http://localhost:6379"'],
    ['http://:password@redis', 'expected a redis:// or rediss:// URL such as redis://host:6379, got "http://[redacted]@redis"'],
    ['"redis://u:12/p@ss@redis/x"', 'expected a redis:// or rediss:// URL whose path is a database number (redis://host:6379/0), got "redis://[redacted]@redis/x"'],
    ['hunter2', 'expected a redis:// or rediss:// URL such as redis://host:6379, got a value of 7 characters without "://" (not shown: it may be a password)'],
    ['127.0.0.1:6379', 'expected a redis:// or rediss:// URL such as redis://host:6379, got a value of 14 characters without "://" (not shown: it may be a password)'],
    ['"redis://:p%zz@redis:6379"', 'expected a URL of the form redis[s]://[[user]:password@]host[:port][/db], with the password URL-encoded, got "redis://[redacted]@redis:6379"'],
  ])('refuses %s, naming the key and line, quoting no password', (url, message) => {
    expect(problems(`  url: ${url}\n`)).toEqual([`config.yaml: redis.url: ${message} (line 4)`]);
  });

  // The new user's run: "got the value of ${REDIS_PASSWORD}" pointed at the password, when the port was wrong.
  it('quotes a URL from the environment as one written in the file, without its credentials, naming the variables', () => {
    expect(() => parseConfig(`${ORIGIN}redis:\n  url: \${REDIS_URL}\n`, { source: 'config.yaml', env: { REDIS_URL: 'http://redis:6379' } })).toThrow(
      'config.yaml: redis.url: expected a redis:// or rediss:// URL such as redis://host:6379, got "http://redis:6379" (with the value of ${REDIS_URL}) (line 4)',
    );
    expect(() => parseConfig(`${ORIGIN}redis:\n  url: redis://:\${REDIS_PASSWORD}@127.0.0.1:99999/0\n`, { source: 'config.yaml', env: { REDIS_PASSWORD: 'hunter2' } })).toThrow(
      'config.yaml: redis.url: expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@127.0.0.1:99999/0" (with the value of ${REDIS_PASSWORD}) (line 4)',
    );
    expect(() => parseConfig(`${ORIGIN}redis:\n  url: \${REDIS_URL}\n`, { source: 'config.yaml', env: { REDIS_URL: 'redis://:hunter2' } })).toThrow(
      'config.yaml: redis.url: expected a redis:// or rediss:// URL with a port from 1 to 65535, got a secret of 16 characters (not shown) (with the value of ${REDIS_URL}) (line 4)',
    );
  });

  it('accepts the forms the README gives, and reads them as the store connects', () => {
    for (const url of ['redis://localhost', 'rediss://user:p%40ss@redis.internal:6380/2', 'redis://[::1]:7000/', 'redis://']) {
      expect(parseConfig(`${ORIGIN}redis:\n  url: "${url}"\n`, { source: 'config.yaml', env: {} }).redis?.url).toBe(url);
    }
    expect(parseRedisUrl('rediss://user:p%40ss@redis.internal:6380/2')).toEqual({
      host: 'redis.internal',
      port: 6380,
      username: 'user',
      password: 'p@ss',
      db: 2,
      tls: true,
    });
    expect(parseRedisUrl('redis://[::1]')).toEqual({ host: '::1', port: 6379, username: undefined, password: undefined, db: 0, tls: false });
    expect(parseRedisUrl('redis://')).toMatchObject({ host: 'localhost', port: 6379 });
  });
});

describe('redis.cluster.nodes and redis.sentinel.sentinels', () => {
  it('refuses an address the store could not connect to, quoting it without its password', () => {
    expect(problems('  cluster:\n    nodes: ["localhost:abc", "local host", "redis://:secret@node:99999", "node:7000/1", "redis://node/x"]\n')).toEqual([
      'config.yaml: redis.cluster.nodes[0]: expected "host:port" or a redis:// URL with a port from 1 to 65535, got "localhost:abc" (line 5)',
      'config.yaml: redis.cluster.nodes[1]: expected "host:port" or a redis:// URL, got "local host" (line 5)',
      'config.yaml: redis.cluster.nodes[2]: expected "host:port" or a redis:// URL with a port from 1 to 65535, got "redis://[redacted]@node:99999" (line 5)',
      'config.yaml: redis.cluster.nodes[3]: expected "host:port" or a redis:// URL, got "node:7000/1" (line 5)',
      'config.yaml: redis.cluster.nodes[4]: expected "host:port" or a redis:// URL whose path is a database number (redis://host:6379/0), got "redis://node/x" (line 5)',
    ]);
    // The review: an address with a password but no scheme was quoted whole.
    expect(problems('  sentinel:\n    name: mymaster\n    sentinels: ["sentinel:0", ":hunter2@s-0:26379", ":my pw@s-0:26379"]\n')).toEqual([
      'config.yaml: redis.sentinel.sentinels[0]: expected "host:port" or a redis:// URL with a port from 1 to 65535, got "sentinel:0" (line 6)',
      'config.yaml: redis.sentinel.sentinels[1]: expected "host:port" or a redis:// URL, got "[redacted]@s-0:26379" (line 6)',
      'config.yaml: redis.sentinel.sentinels[2]: expected "host:port" or a redis:// URL, got "[redacted]@s-0:26379" (line 6)',
    ]);
  });

  it('reads host:port, a host alone, an IPv6 literal and a URL', () => {
    expect(parseRedisNode('node-1:7000')).toEqual({ host: 'node-1', port: 7000 });
    expect(parseRedisNode('node-1')).toEqual({ host: 'node-1', port: 6379 });
    expect(parseRedisNode('[fd00::1]:7001')).toEqual({ host: 'fd00::1', port: 7001 });
    expect(parseRedisNode('rediss://:pw@node-2:7002')).toEqual({ host: 'node-2', port: 7002 });
  });
});
