import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse as parseYaml } from 'yaml';
import { demoConfigInput } from '../../src/config/index.js';

/**
 * The command line of the README's Commands section as a user meets it: `--help`, `<command> --help`,
 * `--version`, `check` and `serve`'s failures to start, from source through tsx so that no earlier
 * build is needed. src/cli.ts is the production build's entry point; src/devCli.ts adds the
 * development commands.
 */

const ROOT = join(import.meta.dirname, '../..');
const VERSION = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
const scratch = mkdtempSync(join(tmpdir(), 'svc-cache-cli-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

function cli(args: string[], entry = 'src/cli.ts'): { status: number | null; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', entry, ...args], { cwd: ROOT, encoding: 'utf8', timeout: 30_000, env: { ...process.env, SVC_PURGE_TOKEN: 'cli-test-token' } });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

function file(name: string, text: string): string {
  const path = join(scratch, name);
  writeFileSync(path, text);
  return path;
}

const VALID = `origin:
  url: http://origin.test/graphql
scopes:
  AUTHENTICATED: header:authorization
rules:
  - types: [Query]
    maxAge: 900
    swr: 60
    staleIfError: 3600
  - types: { Query: [me], User: [email] }
    maxAge: 30
    scope: AUTHENTICATED
purge:
  tokens: ["\${SVC_PURGE_TOKEN}"]
`;
const SDL = 'type Query { me: User, todos: [String] }\ntype User { id: ID!, email: String }\n';

describe('svc-cache --help, --version', () => {
  it('lists the commands, and says where the development commands live', () => {
    const result = cli(['--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^usage: svc-cache <command> \[options\]/);
    expect(result.stdout).toMatch(/^ {2}serve +run the sidecar/m);
    expect(result.stdout).toMatch(/^ {2}check +validate a configuration offline/m);
    expect(result.stdout).toContain('dist-dev/devCli.js');
  });

  it('lists each option of a command with its default and meaning', () => {
    const result = cli(['serve', '--help']);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain('usage: svc-cache serve --config FILE [--grpc-host H] [--grpc-port N] [--admin-port N]');
    expect(result.stdout).toMatch(/--config FILE +the configuration file .*\(required\)/);
    expect(result.stdout).toMatch(/--grpc-host H +ext_proc's address: loopback.*\(default: 127\.0\.0\.1\)/);
    expect(result.stdout).toMatch(/--grpc-port N +.*\(default: 50051\)/);
    expect(result.stdout).toMatch(/--admin-port N +.*\(default: 9901\)/);
    expect(cli(['check', '--help']).stdout).toMatch(/--schema FILE +the origin's schema/);
  });

  it("prints package.json's version", () => {
    expect(cli(['--version'])).toMatchObject({ status: 0, stdout: `${VERSION}\n` });
  });

  it('answers an unknown command, option or missing option with exit 2 and the usage', () => {
    expect(cli(['demo'])).toMatchObject({ status: 2, stderr: expect.stringContaining('unknown command "demo"') });
    expect(cli(['serve', '--bogus'])).toMatchObject({ status: 2, stderr: expect.stringContaining("Unknown option '--bogus'") });
    expect(cli(['check'])).toMatchObject({ status: 2, stderr: expect.stringContaining('check needs --config FILE') });
  });
});

describe('svc-cache check', () => {
  it('prints the rules in force per type and field and exits 0 for a valid config', () => {
    const result = cli(['check', '--config', file('valid.yaml', VALID), '--schema', file('schema.graphql', SDL)]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.split('\n')).toEqual([
      expect.stringMatching(/valid\.yaml: valid, every name is in .*schema\.graphql$/),
      'rules in force:',
      '  Query (every field): maxAge 900s, swr 60s, staleIfError 3600s, scope PUBLIC (rules 0)',
      '  Query.me: maxAge 30s, swr 0s, scope AUTHENTICATED (rules 0, 1)',
      '  User.email: maxAge 30s, swr 0s, scope AUTHENTICATED (rules 1)',
      '',
    ]);
  });

  it('exits 1 with the very message serve prints for an invalid file', () => {
    const invalid = file('invalid.yaml', `${VALID}rules:\n  - types: [Query]\n    maxAge: -1\n    scope: NOPE\n`.replace(/^rules:[\s\S]*?purge:/m, 'purge:'));
    const checked = cli(['check', '--config', invalid]);
    const served = cli(['serve', '--config', invalid, '--grpc-port', '0', '--admin-port', '0']);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toMatch(/^svc-cache: invalid configuration\n.*invalid\.yaml: rules\[0\]\.maxAge: /);
    expect(checked.stderr).toContain('NOPE');
    expect(served.status).toBe(1);
    expect(served.stderr).toBe(checked.stderr);
  });

  it('refuses, as serve does, every value serve could not use, naming its key and line and never the Redis URL', () => {
    const unusable = file(
      'unusable.yaml',
      `${VALID}endpoints: ["/graphql?x=1"]\nredis:\n  url: "redis://:pw@localhost:99999"\n  cluster:\n    nodes: ["localhost:abc"]\n`.replace(
        'purge:\n',
        'purge:\n  header: "bad header"\n',
      ),
    );
    const checked = cli(['check', '--config', unusable]);
    const served = cli(['serve', '--config', unusable, '--grpc-port', '0', '--admin-port', '0']);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toBe(
      [
        'svc-cache: invalid configuration',
        `${unusable}: purge.header: expected a header name: letters, digits and !#$%&'*+-.^_\`|~ (an RFC 9110 token), got "bad header" (line 14)`,
        `${unusable}: endpoints[0]: expected a path without a query string or fragment ("?", "#"): requests are matched on their path alone, got "/graphql?x=1" (line 16)`,
        `${unusable}: redis.url: expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@localhost:99999" (line 18)`,
        `${unusable}: redis.cluster.nodes[0]: expected "host:port" or a redis:// URL with a port from 1 to 65535, got "localhost:abc" (line 20)`,
        '',
      ].join('\n'),
    );
    expect(served.status).toBe(1);
    expect(served.stderr).toBe(checked.stderr);
  });

  it('refuses, as serve does, TLS files that cannot be read, naming each key and line', () => {
    const missing = file('tls.yaml', `${VALID}grpc:\n  tls: { cert: /nonexistent.crt, key: /nonexistent.key, clientCa: /nonexistent-ca.crt }\n`);
    const checked = cli(['check', '--config', missing]);
    const served = cli(['serve', '--config', missing, '--grpc-port', '0', '--admin-port', '0']);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toBe(
      [
        'svc-cache: invalid configuration',
        `${missing}: grpc.tls.cert: cannot read "/nonexistent.crt": no such file (line 16)`,
        `${missing}: grpc.tls.key: cannot read "/nonexistent.key": no such file (line 16)`,
        `${missing}: grpc.tls.clientCa: cannot read "/nonexistent-ca.crt": no such file (line 16)`,
        '',
      ].join('\n'),
    );
    expect(served.status).toBe(1);
    expect(served.stderr).toBe(checked.stderr);
  });

  it('prints a warning on stderr and exits 0 for a JWT scope without an audience', () => {
    const jwtScope = VALID.replace(
      '  AUTHENTICATED: header:authorization\n',
      '  AUTHENTICATED:\n    definition: header:authorization\n    jwt:\n      claim: sub\n      algorithms: [HS256]\n      secret: cli-test-secret-of-at-least-32-bytes\n',
    );
    const result = cli(['check', '--config', file('jwt.yaml', jwtScope), '--schema', file('schema.graphql', SDL)]);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^.*jwt\.yaml: valid, every name is in .*schema\.graphql\nrules in force:\n/);
    expect(result.stderr).toBe(
      "warning: scopes.AUTHENTICATED.jwt.audience is not set: a token the same key signed for another audience (another API or client of the issuer) is accepted, and the bucket its sub names is served to it without the origin seeing the request; set audience to the aud this API's tokens carry\n",
    );
  });

  it("reads the stored documents' manifest, and warns of a query whose answers any change to its types drops", () => {
    file('manifest.json', JSON.stringify({ stored: 'query Me { me { email } }', good: 'query Me2 { me { id email } }' }));
    const result = cli(['check', '--config', file('manifest.yaml', `${VALID}persistedDocuments:\n  manifest: manifest.json\n`), '--schema', file('schema.graphql', SDL)]);
    expect(result.status).toBe(0);
    expect(result.stdout).toContain(`\nstored documents: 2 in ${join(scratch, 'manifest.json')}\n`);
    expect(result.stderr).toBe(
      'warning: persistedDocuments: 1 manifest document selects objects without their key fields: "stored" (Me). svc-cache adds no field to a stored document, so a mutation or purge of any object of those types drops the answers to such a document.\n',
    );
    const broken = cli(['check', '--config', file('broken-manifest.yaml', `${VALID}persistedDocuments:\n  manifest: missing.json\n`)]);
    expect([broken.status, broken.stderr]).toEqual([1, expect.stringContaining(`persistedDocuments.manifest: cannot read "${join(scratch, 'missing.json')}": no such file (line 16)`)]);
  });

  it('refuses, as serve does, a schema file that is not a valid schema; a --schema file that is not there is named', () => {
    const broken = file('broken.yaml', `${VALID}schema:\n  file: broken.graphql\n`);
    file('broken.graphql', 'type Query { broken\n');
    const checked = cli(['check', '--config', broken]);
    const served = cli(['serve', '--config', broken, '--grpc-port', '0', '--admin-port', '0']);
    expect(checked.status).toBe(1);
    expect(checked.stderr).toBe(
      [
        'svc-cache: invalid configuration',
        `${broken}: schema.file: "${join(scratch, 'broken.graphql')}" is not a valid GraphQL schema (SDL): line 2, column 1: Syntax Error: Expected ":", found <EOF>. (line 16)`,
        '',
      ].join('\n'),
    );
    expect(served.status).toBe(1);
    expect(served.stderr).toBe(checked.stderr);
    const missing = cli(['check', '--config', file('valid3.yaml', VALID), '--schema', join(scratch, 'nope.graphql')]);
    expect([missing.status, missing.stderr]).toEqual([1, `svc-cache: schema file ${join(scratch, 'nope.graphql')}: cannot read it: no such file\n`]);
  });

  it('exits 1 naming each type or field the schema does not have', () => {
    const sdl = file('other.graphql', 'type Query { todos: [String] }\n');
    const result = cli(['check', '--config', file('valid2.yaml', VALID), '--schema', sdl]);
    expect(result.status).toBe(1);
    expect(result.stderr).toContain('rules[1].types.Query: type Query has no field me');
    expect(result.stderr).toContain('rules[1].types.User: the origin schema has no type User');
  });
});

describe('svc-cache serve', () => {
  it('exits 1 with one line naming the port and its option when a port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const port = (taken.address() as AddressInfo).port;
    try {
      const config = file('serve.yaml', VALID);
      const grpc = cli(['serve', '--config', config, '--grpc-port', String(port), '--admin-port', '0']);
      expect(grpc.status).toBe(1);
      expect(grpc.stderr).toBe(
        `svc-cache: cannot listen on 127.0.0.1:${port} for the ext_proc port (--grpc-host 127.0.0.1 --grpc-port ${port}): the port is already in use (another process, or another svc-cache, listens on it)\n`,
      );
      // grpc-js's own line about it is a JSON log line, not plain text on stderr.
      expect(grpc.stdout).toContain('"component":"grpc-js"');
      const admin = cli(['serve', '--config', config, '--grpc-port', '0', '--admin-port', String(port)]);
      expect(admin.status).toBe(1);
      expect(admin.stderr).toBe(
        `svc-cache: cannot listen on 0.0.0.0:${port} for the admin port (--admin-port ${port}): the port is already in use (another process, or another svc-cache, listens on it)\n`,
      );
    } finally {
      taken.close();
    }
  });
});

describe('the development build (src/devCli.ts)', () => {
  it("prints the demo's configuration as YAML", () => {
    const result = cli(['demo', '--print-config', '--origin-port', '4100'], 'src/devCli.ts');
    expect(result.status).toBe(0);
    expect(parseYaml(result.stdout)).toEqual(demoConfigInput('http://127.0.0.1:4100/graphql'));
    expect(result.stdout).toContain('dev-purge-token');
  });

  it('exits 1 naming the server and its option when the demo, its origin or the gateway finds its port taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '0.0.0.0', resolve));
    const port = (taken.address() as AddressInfo).port;
    const inUse = 'the port is already in use (another process, or another svc-cache, listens on it)';
    try {
      const runs = [
        cli(['demo-origin', '--port', String(port)], 'src/devCli.ts'),
        cli(['gateway', '--processor', '127.0.0.1:1', '--origin', 'http://127.0.0.1:1/graphql', '--port', String(port)], 'src/devCli.ts'),
        cli(['demo', '--origin-port', String(port), '--port', '0', '--admin-port', '0'], 'src/devCli.ts'),
      ];
      expect(runs.map((run) => [run.status, run.stderr])).toEqual([
        [1, `svc-cache: cannot listen on 0.0.0.0:${port} for the demo origin port (--port ${port}): ${inUse}\n`],
        [1, `svc-cache: cannot listen on 0.0.0.0:${port} for the gateway port (--port ${port}): ${inUse}\n`],
        [1, `svc-cache: cannot listen on 127.0.0.1:${port} for the demo origin port (--origin-port ${port}): ${inUse}\n`],
      ]);
    } finally {
      taken.close();
    }
  });

  it('lists the development commands too', () => {
    const result = cli(['--help'], 'src/devCli.ts');
    for (const command of ['serve', 'check', 'demo', 'gateway', 'demo-origin']) expect(result.stdout).toMatch(new RegExp(`^  ${command} `, 'm'));
    expect(cli(['demo', '--help'], 'src/devCli.ts').stdout).toMatch(/--config FILE +run with this configuration/);
  });
});
