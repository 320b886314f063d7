import { configSchema, secrecyAt, type Config } from '../config/index.js';
import { withoutQueryValues } from '../util/index.js';

export const REDACTED = '[redacted]';

export interface ReloadStatus {
  /** ISO 8601; undefined when the configuration was never reloaded. */
  at: string | undefined;
  result: 'ok' | 'refused' | undefined;
  error?: string;
}

export interface ConfigView {
  config: unknown;
  lastReload: ReloadStatus;
}

/**
 * The configuration as the page shows it: everything an operator set, with every secret replaced, so
 * the read-only API can serve it without the purge token (README, Dashboard). What is secret is what
 * the schema marks so (purge tokens, the scope key secret, a JWT scope's secret and public key), not
 * what a key is called: `cache.publicForCredentialedRequests` or a scope named API_TOKEN is no
 * secret. A password inside a URL is one wherever the URL is written (redis.url, Cluster and Sentinel
 * nodes), and so are the values of its query (a JWKS or origin URL's `?token=`); the rest says
 * which server is used.
 */
export function redactedConfig(config: Config): unknown {
  return redact(config, []);
}

function redact(value: unknown, path: readonly PropertyKey[]): unknown {
  if (typeof value === 'string') return secrecyAt(configSchema, path) === 'value' ? REDACTED : withoutUrlPassword(value);
  if (Array.isArray(value)) return value.map((item, index) => redact(item, [...path, index]));
  // The manifest's documents (persistedDocuments.documents) show as how many there are.
  if (value instanceof Map) return value.size;
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, redact(item, [...path, name])]));
  }
  return value;
}

/**
 * `redis://user:pass@host` shows as `redis://user:[redacted]@host`, and every value of a URL's query
 * as `[redacted]`: a JWKS or origin URL may carry its access token as `?token=...` (README, Dashboard).
 */
function withoutUrlPassword(text: string): string {
  return withoutQueryValues(withoutUserPassword(text), REDACTED);
}

function withoutUserPassword(text: string): string {
  if (!/^[a-z][a-z0-9+.-]*:\/\/[^/]*@/i.test(text)) return text;
  try {
    const url = new URL(text);
    if (url.password === '') return text;
    url.password = REDACTED;
    return url.toString().replace(encodeURIComponent(REDACTED), REDACTED);
  } catch {
    return text.replace(/\/\/[^/]*@/, `//${REDACTED}@`);
  }
}
