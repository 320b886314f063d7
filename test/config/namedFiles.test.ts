import { copyFile, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { ConfigError, loadConfig, watchConfig, type ConfigWatcher } from '../../src/config/index.js';
import { makeTlsFiles, opensslMissing } from '../support/tlsFiles.js';

/**
 * The files a configuration names that serve reads at start (schema.file, grpc.tls) are read when
 * it is loaded, so that `check`, `serve` and a reload refuse a missing or unusable one alike, under
 * its key and line, beside every other problem (README, Configuration).
 */

const ORIGIN = 'origin:\n  url: http://origin.test/graphql\n';

let directory: string;
let watcher: ConfigWatcher | undefined;
const file = (name: string): string => join(directory, name);
const tls = (cert: string, key: string, clientCa: string): string =>
  `grpc:\n  tls:\n    cert: ${file(cert)}\n    key: ${file(key)}\n    clientCa: ${file(clientCa)}\n`;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'svc-cache-named-files-'));
});

afterEach(async () => {
  watcher?.close();
  watcher = undefined;
  await rm(directory, { recursive: true, force: true });
});

async function problems(text: string): Promise<readonly string[]> {
  await writeFile(file('config.yaml'), text);
  try {
    await loadConfig(file('config.yaml'), {});
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((problem) => problem.replace(`${file('config.yaml')}: `, ''));
    throw error;
  }
  throw new Error('expected a ConfigError');
}

describe('files named by the configuration', () => {
  it('refuses TLS files that do not exist, naming each key and line, beside every other problem', async () => {
    expect(await problems(`${ORIGIN}${tls('tls.crt', 'tls.key', 'ca.crt')}schema:\n  file: schema.graphql\nrules:\n  - types: [Query]\n    maxAge: -1\n`)).toEqual([
      `grpc.tls.cert: cannot read "${file('tls.crt')}": no such file (line 5)`,
      `grpc.tls.key: cannot read "${file('tls.key')}": no such file (line 6)`,
      `grpc.tls.clientCa: cannot read "${file('ca.crt')}": no such file (line 7)`,
      `schema.file: cannot read "${file('schema.graphql')}": no such file (line 9)`,
      'rules[0].maxAge: expected a whole number >= 0 and <= 315360000, got -1 (line 12)',
    ]);
  });

  it('reads nothing named by a value that is already refused', async () => {
    expect(await problems(`${ORIGIN}schema:\n  file: \${SCHEMA_FILE}\ngrpc:\n  tls:\n    cert: 7\n    key: ""\n`)).toEqual([
      'schema.file: environment variable SCHEMA_FILE is not set (line 4)',
      'grpc.tls.cert: expected a non-empty string, got 7 (line 7)',
      'grpc.tls.clientCa: required, expected a non-empty string (line 7)',
      'grpc.tls.key: expected a non-empty string, got "" (line 8)',
    ]);
  });

  it("refuses a JWT scope's jwksFile that is missing or holds no JWKS, under its key and line", async () => {
    const scope = (path: string) =>
      `${ORIGIN}scopes:\n  USER:\n    definition: header:authorization\n    jwt:\n      claim: sub\n      algorithms: [RS256]\n      jwksFile: ${path}\n`;
    expect(await problems(scope('keys/jwks.json'))).toEqual([`scopes.USER.jwt.jwksFile: cannot read "${file('keys/jwks.json')}": no such file (line 9)`]);
    await writeFile(file('jwks.json'), '{"keys": {}}');
    expect(await problems(scope('jwks.json'))).toEqual([`scopes.USER.jwt.jwksFile: "${file('jwks.json')}" is not a JWKS: expected an object whose "keys" is a list of keys (line 9)`]);
    await writeFile(file('jwks.json'), '{"keys": [');
    expect((await problems(scope('jwks.json')))[0]).toMatch(/^scopes\.USER\.jwt\.jwksFile: ".*" is not a JWKS: not JSON: /);
  });

  describe('schema.file', () => {
    const SCHEMA = `${ORIGIN}schema:\n  file: schema.graphql\n`;

    it('refuses a file that is not a valid schema, under its key and line, with every mistake and where it is', async () => {
      await writeFile(file('schema.graphql'), 'type Query { broken\n');
      expect(await problems(SCHEMA)).toEqual([
        `schema.file: "${file('schema.graphql')}" is not a valid GraphQL schema (SDL): line 2, column 1: Syntax Error: Expected ":", found <EOF>. (line 4)`,
      ]);
      await writeFile(file('schema.graphql'), 'type Query { a: Missing }\ntype Query { b: Int }\n');
      expect(await problems(SCHEMA)).toEqual([
        `schema.file: "${file('schema.graphql')}" is not a valid GraphQL schema (SDL): line 1, column 17: Unknown type "Missing".; line 1, column 6 and line 2, column 6: There can be only one type named "Query". (line 4)`,
      ]);
      await writeFile(file('schema.graphql'), 'type Query { a: Int }\n');
      expect((await loadConfig(file('config.yaml'), {})).schema?.file).toBe(file('schema.graphql'));
    });

    it('refuses a reload to a schema file that is not valid, and takes the next valid one', async () => {
      await writeFile(file('schema.graphql'), 'type Query { a: Int }\n');
      await writeFile(file('config.yaml'), SCHEMA);
      const changes: unknown[] = [];
      const errors: string[] = [];
      watcher = watchConfig(file('config.yaml'), { onChange: (config) => changes.push(config), onError: (error) => errors.push(error.message) }, { env: {}, debounceMs: 20, pollIntervalMs: 50 });
      await watcher.ready;
      await writeFile(file('schema.graphql'), 'type Query { a: Int\n');
      await eventually(() => expect(errors).toHaveLength(1));
      expect(errors[0]).toMatch(/schema\.file: ".*" is not a valid GraphQL schema \(SDL\): line 2, column 1: Syntax Error: /);
      expect(changes).toEqual([]);
      await writeFile(file('schema.graphql'), 'type Query { a: Int b: Int }\n');
      await eventually(() => expect(changes).toHaveLength(1));
    });
  });

  describe('persistedDocuments.manifest', () => {
    const MANIFEST = `${ORIGIN}persistedDocuments:\n  manifest: documents.json\n`;

    it("loads the manifest's documents, its path taken from the configuration's directory", async () => {
      await writeFile(file('documents.json'), '{"d1":"{ a }"}');
      await writeFile(file('config.yaml'), MANIFEST);
      expect((await loadConfig(file('config.yaml'), {})).persistedDocuments).toEqual({ manifest: file('documents.json'), documents: new Map([['d1', '{ a }']]) });
    });

    it('reads a manifest again only when its bytes changed: the watcher reads it every 10 s', async () => {
      await writeFile(file('documents.json'), '{"d1":"{ a }"}');
      await writeFile(file('config.yaml'), MANIFEST);
      const first = (await loadConfig(file('config.yaml'), {})).persistedDocuments?.documents;
      expect((await loadConfig(file('config.yaml'), {})).persistedDocuments?.documents).toBe(first);
      await writeFile(file('documents.json'), '{"d1":"{ a }","d2":"{ b }"}');
      expect((await loadConfig(file('config.yaml'), {})).persistedDocuments?.documents).not.toBe(first);
    });

    it('refuses a manifest that cannot be read or is not one, under its key and line', async () => {
      expect(await problems(MANIFEST)).toEqual([`persistedDocuments.manifest: cannot read "${file('documents.json')}": no such file (line 4)`]);
      await writeFile(file('documents.json'), '{"d1":{"text":"{ a }"}}');
      expect(await problems(MANIFEST)).toEqual([
        `persistedDocuments.manifest: "${file('documents.json')}" is not a manifest of stored documents: the document "d1" is not a string; expected an object of document id to document text, or an Apollo manifest ({"format":"apollo-persisted-query-manifest","version":1,"operations":[…]}) (line 4)`,
      ]);
    });

    it('reloads when the manifest changes, and refuses a reload to a broken one', async () => {
      await writeFile(file('documents.json'), '{"d1":"{ a }"}');
      await writeFile(file('config.yaml'), MANIFEST);
      const changes: Array<ReadonlyMap<string, string> | undefined> = [];
      const errors: string[] = [];
      watcher = watchConfig(
        file('config.yaml'),
        { onChange: (config) => changes.push(config.persistedDocuments?.documents), onError: (error) => errors.push(error.message) },
        { env: {}, debounceMs: 20, pollIntervalMs: 50 },
      );
      await watcher.ready;
      await writeFile(file('documents.json'), '{"d1":"{ a }","d2":"{ b }"}');
      await eventually(() => expect(changes).toEqual([new Map([['d1', '{ a }'], ['d2', '{ b }']])]));
      await writeFile(file('documents.json'), '{"d1":');
      await eventually(() => expect(errors).toHaveLength(1));
      expect(errors[0]).toMatch(/persistedDocuments\.manifest: ".*" is not a manifest of stored documents: expected JSON: /);
      expect(changes).toHaveLength(1);
    });
  });

  describe.skipIf(opensslMissing)('with certificates', () => {
    beforeEach(() => makeTlsFiles(directory));

    it('loads usable TLS files', async () => {
      await writeFile(file('config.yaml'), `${ORIGIN}${tls('server.crt', 'server.key', 'ca.crt')}`);
      expect((await loadConfig(file('config.yaml'), {})).grpc?.tls?.cert).toBe(file('server.crt'));
    });

    it('refuses a file that is not a certificate, a key or a CA, and a key that is not the certificate\'s', async () => {
      await writeFile(file('not-pem.txt'), 'not PEM\n');
      expect(await problems(`${ORIGIN}${tls('server.key', 'server.crt', 'not-pem.txt')}`)).toEqual([
        `grpc.tls.cert: expected a PEM certificate ("-----BEGIN CERTIFICATE-----...") in "${file('server.key')}" (line 5)`,
        `grpc.tls.key: expected a PEM private key ("-----BEGIN PRIVATE KEY-----...", unencrypted) in "${file('server.crt')}" (line 6)`,
        `grpc.tls.clientCa: expected one or more PEM CA certificates ("-----BEGIN CERTIFICATE-----...") in "${file('not-pem.txt')}" (line 7)`,
      ]);
      expect(await problems(`${ORIGIN}${tls('server.crt', 'client.key', 'ca.crt')}`)).toEqual([
        `grpc.tls.key: the key in "${file('client.key')}" is not the key of the certificate in grpc.tls.cert (line 6)`,
      ]);
    });

    it('refuses a reload naming a missing TLS file, and takes it once the file is there', async () => {
      await writeFile(file('config.yaml'), `${ORIGIN}${tls('server.crt', 'server.key', 'ca.crt')}rules: []\n`);
      const changes: unknown[] = [];
      const errors: string[] = [];
      watcher = watchConfig(file('config.yaml'), { onChange: (config) => changes.push(config), onError: (error) => errors.push(error.message) }, { env: {}, debounceMs: 20, pollIntervalMs: 50 });
      await watcher.ready;

      await writeFile(file('config.yaml'), `${ORIGIN}${tls('renewed.crt', 'server.key', 'ca.crt')}`);
      await eventually(() => expect(errors).toEqual([`${file('config.yaml')}: grpc.tls.cert: cannot read "${file('renewed.crt')}": no such file (line 5)`]));
      expect(changes).toEqual([]);

      await copyFile(file('server.crt'), file('renewed.crt.new'));
      await rename(file('renewed.crt.new'), file('renewed.crt'));
      await eventually(() => expect(changes).toHaveLength(1));

      // Read only at start: new content in a usable certificate (here the chain made longer) is no new configuration.
      // Renamed over it, as cert-manager's Secret mounts swap it: the poll must not read it half-written.
      await writeFile(file('renewed.crt.new'), Buffer.concat([await readFile(file('server.crt')), await readFile(file('ca.crt'))]));
      await rename(file('renewed.crt.new'), file('renewed.crt'));
      await new Promise((resolve) => setTimeout(resolve, 250));
      expect(changes).toHaveLength(1);
      expect(errors).toHaveLength(1);
    });
  });
});

/** Waits for an assertion to hold; generous because the whole suite may be running alongside. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 5_000, interval: 10 });
}
