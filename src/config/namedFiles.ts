import { createHash, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { createSecureContext } from 'node:tls';
import { schemaFromSdl } from '../graphql/index.js';
import { readManifest, type ManifestReading, type PersistedDocuments } from '../persistedDocuments/index.js';
import { errorMessage } from '../util/index.js';
import type { KeyPath } from './keyPath.js';

/**
 * The files a configuration names that `serve` reads: `schema.file` (README, Every key),
 * `persistedDocuments.manifest`, the `grpc.tls` certificate, key and client CA, and each JWT
 * scope's `jwksFile`. They are read when the configuration is loaded, so that `check`, `serve` and a
 * reload refuse a missing or unusable one alike, under its key (README, Configuration), and a change
 * of one that matters reloads the configuration (README, Hot reload): a key taken out of a JWKS file
 * must stop verifying tokens, those verified with it before included.
 */

/** What a named file must hold. */
type Content = 'sdl' | 'manifest' | 'certificate' | 'private-key' | 'ca-certificates' | 'jwks';

interface NamedFileKey {
  key: KeyPath;
  content: Content;
  /**
   * Whether a relative path is taken from the configuration file's directory (schema.file) or, as
   * the sidecar reads the TLS files, from the working directory.
   */
  relativeTo: 'config-directory' | 'working-directory';
}

const NAMED_FILE_KEYS: readonly NamedFileKey[] = [
  { key: ['schema', 'file'], content: 'sdl', relativeTo: 'config-directory' },
  { key: ['persistedDocuments', 'manifest'], content: 'manifest', relativeTo: 'config-directory' },
  { key: ['grpc', 'tls', 'cert'], content: 'certificate', relativeTo: 'working-directory' },
  { key: ['grpc', 'tls', 'key'], content: 'private-key', relativeTo: 'working-directory' },
  { key: ['grpc', 'tls', 'clientCa'], content: 'ca-certificates', relativeTo: 'working-directory' },
];

/** The `jwksFile` of each scope written, as `jwksFile` is read (src/config/load.ts, withJwksFilesResolved). */
function jwksFileKeys(scopeNames: readonly string[]): NamedFileKey[] {
  return scopeNames.map((name) => ({ key: ['scopes', name, 'jwt', 'jwksFile'], content: 'jwks', relativeTo: 'config-directory' }));
}

/** Why a named file cannot be used. */
type FileProblem =
  | 'unreadable'
  | 'not-a-schema'
  | 'not-a-manifest'
  | 'not-a-certificate'
  | 'not-a-private-key'
  | 'no-ca-certificate'
  | 'key-not-of-certificate'
  | 'not-a-jwks';

export interface NamedFile {
  key: KeyPath;
  /** The path as it is read. */
  path: string;
  /** What is wrong with it, as a message after its key; undefined when it can be used. */
  problem: string | undefined;
  /** A usable manifest's documents. */
  documents?: PersistedDocuments;
  /**
   * Tells a change of the file that matters: the schema's, the manifest's or the JWKS's text, which a reload applies; for the TLS
   * files, read only at start, whether they can be used (so that a refused configuration is taken
   * once the file is fixed) but not their content (a renewed certificate changes no configuration).
   */
  fingerprint: string;
}

/**
 * Reads the files that `written` (the configuration as written, before validation, so that these
 * problems are reported beside every other) names. `path` gives a key's value when it is a usable
 * path, undefined otherwise (missing, of the wrong type, or already reported); `scopeNames` are the
 * names written under `scopes`.
 */
export async function readNamedFiles(path: (key: KeyPath) => string | undefined, scopeNames: readonly string[], configDirectory: string): Promise<NamedFile[]> {
  const named = [...NAMED_FILE_KEYS, ...jwksFileKeys(scopeNames)].flatMap((entry) => {
    const written = path(entry.key);
    if (written === undefined) return [];
    const file = entry.relativeTo === 'config-directory' ? resolve(configDirectory, written) : resolve(written);
    return [{ ...entry, path: file }];
  });
  const read = await Promise.all(named.map(async (entry) => ({ ...entry, ...(await readContent(entry.path, entry.content)) })));
  const certificate = read.find((entry) => entry.content === 'certificate' && entry.problem === undefined);
  return read.map((entry) => {
    let problem = entry.problem;
    if (problem === undefined && entry.content === 'private-key' && certificate && !belongTogether(certificate.bytes, entry.bytes)) {
      problem = { code: 'key-not-of-certificate' };
    }
    const contentMatters = entry.content === 'sdl' || entry.content === 'manifest' || entry.content === 'jwks';
    return {
      key: entry.key,
      path: entry.path,
      problem: problem && describe(problem, entry.path),
      ...(entry.documents === undefined ? {} : { documents: entry.documents }),
      fingerprint: contentMatters && problem === undefined ? sha256(entry.bytes) : (problem?.code ?? 'usable'),
    };
  });
}

interface Found {
  code: FileProblem;
  /** Why the file could not be read, or what is wrong in it. */
  reason?: string;
}

async function readContent(path: string, content: Content): Promise<{ bytes: Buffer; problem: Found | undefined; documents?: PersistedDocuments }> {
  let bytes: Buffer;
  try {
    bytes = await readFile(path);
  } catch (error) {
    return { bytes: Buffer.alloc(0), problem: { code: 'unreadable', reason: describeFileError(error) } };
  }
  if (content === 'manifest') {
    const manifest = manifestOf(bytes);
    return manifest.kind === 'documents' ? { bytes, problem: undefined, documents: manifest.documents } : { bytes, problem: { code: 'not-a-manifest', reason: manifest.problem } };
  }
  return { bytes, problem: contentProblem(bytes, content) };
}

/**
 * The manifest the bytes hold, read again only when they changed: the watcher reads every named
 * file every 10 s, and parsing a manifest of thousands of documents takes tens of milliseconds.
 */
function manifestOf(bytes: Buffer): ManifestReading {
  const fingerprint = sha256(bytes);
  if (lastManifest?.fingerprint !== fingerprint) lastManifest = { fingerprint, reading: readManifest(bytes.toString('utf8')) };
  return lastManifest.reading;
}

let lastManifest: { fingerprint: string; reading: ManifestReading } | undefined;

/**
 * Why the bytes are no schema `serve` could load, so that `check`, `serve` and a reload refuse such a
 * `schema.file` alike (README, Every key). schemaFromSdl remembers its answer for the last text, so
 * the schema source then gets the schema built here without building it again.
 */
function sdlProblemOf(bytes: Buffer): Found | undefined {
  const built = schemaFromSdl(bytes.toString('utf8'));
  return 'problems' in built ? { code: 'not-a-schema', reason: built.problems.join('; ') } : undefined;
}

/** Whether the bytes are what the sidecar's TLS setup takes (Node's TLS, which grpc-js uses). */
function contentProblem(bytes: Buffer, content: Exclude<Content, 'manifest'>): Found | undefined {
  switch (content) {
    case 'sdl':
      return sdlProblemOf(bytes);
    case 'certificate':
      return accepted({ cert: bytes }) ? undefined : { code: 'not-a-certificate' };
    case 'private-key':
      return accepted({ key: bytes }) ? undefined : { code: 'not-a-private-key' };
    case 'ca-certificates':
      // Node takes anything as a CA list, and would then refuse every client: at least one
      // certificate must be there.
      return bytes.toString('latin1').includes('-----BEGIN CERTIFICATE-----') && parsesAsCertificate(bytes) ? undefined : { code: 'no-ca-certificate' };
    case 'jwks':
      return jwksProblemOf(bytes);
  }
}

/** RFC 7517 section 5: a JSON object whose `keys` is an array of objects; each key is checked when a token names it. */
function jwksProblemOf(bytes: Buffer): Found | undefined {
  let parsed: unknown;
  try {
    parsed = JSON.parse(bytes.toString('utf8'));
  } catch (error) {
    return { code: 'not-a-jwks', reason: `not JSON: ${errorMessage(error)}` };
  }
  const keys = typeof parsed === 'object' && parsed !== null ? (parsed as { keys?: unknown }).keys : undefined;
  if (!Array.isArray(keys) || !keys.every((key) => typeof key === 'object' && key !== null && !Array.isArray(key))) {
    return { code: 'not-a-jwks', reason: 'expected an object whose "keys" is a list of keys' };
  }
  return undefined;
}

function belongTogether(cert: Buffer, key: Buffer): boolean {
  return accepted({ cert, key });
}

function accepted(options: { cert?: Buffer; key?: Buffer }): boolean {
  try {
    createSecureContext(options);
    return true;
  } catch {
    return false;
  }
}

function parsesAsCertificate(bytes: Buffer): boolean {
  try {
    new X509Certificate(bytes);
    return true;
  } catch {
    return false;
  }
}

function describe(problem: Found, path: string): string {
  const file = JSON.stringify(path);
  switch (problem.code) {
    case 'unreadable':
      return `cannot read ${file}: ${problem.reason}`;
    case 'not-a-schema':
      return `${file} is not a valid GraphQL schema (SDL): ${problem.reason}`;
    case 'not-a-manifest':
      return `${file} is not a manifest of stored documents: ${problem.reason}`;
    case 'not-a-certificate':
      return `expected a PEM certificate ("-----BEGIN CERTIFICATE-----...") in ${file}`;
    case 'not-a-private-key':
      return `expected a PEM private key ("-----BEGIN PRIVATE KEY-----...", unencrypted) in ${file}`;
    case 'no-ca-certificate':
      return `expected one or more PEM CA certificates ("-----BEGIN CERTIFICATE-----...") in ${file}`;
    case 'key-not-of-certificate':
      return `the key in ${file} is not the key of the certificate in grpc.tls.cert`;
    case 'not-a-jwks':
      return `${file} is not a JWKS: ${problem.reason}`;
  }
}

/** Why a file could not be read, in words. */
export function describeFileError(error: unknown): string {
  const code = (error as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      return 'no such file';
    case 'EACCES':
    case 'EPERM':
      return 'permission denied';
    case 'EISDIR':
      return 'it is a directory, not a file';
    default:
      return errorMessage(error);
  }
}

export function sha256(content: string | Buffer): string {
  return createHash('sha256').update(content).digest('hex');
}
