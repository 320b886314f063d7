import type { Config } from '../config/index.js';

export const REDACTED = '[redacted]';

/**
 * A key whose value is a credential wherever it appears (purge tokens, scopeKeySecret, a JWT scope's
 * secret and publicKey). A JWT scope's other settings (claim, algorithms, issuer...) stay readable.
 */
const SECRET_KEY = /secret|token|password|credential|private|publickey/i;

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
 * The configuration as the page shows it: everything an operator set, with every secret replaced
 * (purge tokens, the scope key secret, JWT keys, passwords inside Redis URLs), so the read-only API can serve
 * it without the purge token.
 */
export function redactedConfig(config: Config): unknown {
  return redact(config);
}

function redact(value: unknown, key = ''): unknown {
  if (SECRET_KEY.test(key) && value !== undefined) {
    return Array.isArray(value) ? value.map(() => REDACTED) : REDACTED;
  }
  if (typeof value === 'string') return withoutUrlPassword(value);
  if (Array.isArray(value)) return value.map((item) => redact(item));
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.entries(value).map(([name, item]) => [name, redact(item, name)]));
  }
  return value;
}

/** `redis://user:pass@host` shows as `redis://user:[redacted]@host`. */
function withoutUrlPassword(text: string): string {
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
