import { configSchema, type Config, type ConfigInput } from './schema.js';

/** What `npm start` runs with: no file to write, an in-memory store, and a purge token fit only for a laptop. */
export function demoConfig(originUrl: string): Config {
  return configSchema.parse(demoConfigInput(originUrl));
}

/**
 * A user's configuration as the demo runs it (`svc-cache demo --config FILE`): against the demo
 * origin and, as the demo always does, on the in-memory store and with clear-text ext_proc to its
 * gateway, its `redis` section and `grpc.tls` set aside (`setAside`, for the demo to say so).
 */
export function demoConfigFrom(userConfig: Config, originUrl: string): { config: Config; setAside: string[] } {
  const { redis, grpc, ...rest } = userConfig;
  const setAside = [...(redis === undefined ? [] : ['redis']), ...(grpc?.tls === undefined ? [] : ['grpc.tls'])];
  return { config: { ...rest, origin: { ...userConfig.origin, url: originUrl } }, setAside };
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
