import { configSchema, type Config, type ConfigInput } from './schema.js';

/** What `npm start` runs with: no file to write, an in-memory store, and a purge token fit only for a laptop. */
export function demoConfig(originUrl: string): Config {
  return configSchema.parse(demoConfigInput(originUrl));
}

/** The demo configuration as a file would hold it (`svc-cache demo --print-config`). */
export function demoConfigInput(originUrl: string): ConfigInput {
  return {
    origin: { url: originUrl },
    scopes: { AUTHENTICATED: 'header:authorization' },
    rules: [
      { description: 'Cache all queries for 15 minutes', types: ['Query'], maxAge: 900, swr: 900 },
      { description: 'Per-user data', types: { Query: ['me'] }, maxAge: 60, scope: 'AUTHENTICATED' },
    ],
    purge: { tokens: ['dev-purge-token'] },
    apq: { enabled: true },
  };
}
