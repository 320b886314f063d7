import { configSchema, type Config, type ConfigInput as SchemaInput } from '../../src/config/schema.js';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway/index.js';
import { silentLogger } from '../../src/observability/log.js';
import { startSidecar, type Sidecar, type SidecarOptions } from '../../src/sidecar/sidecar.js';
import { useStarted } from './lifecycle.js';
import { startDemoOrigin, type DemoOrigin } from './origin.js';

/**
 * The whole path on loopback, as production runs it but with the development gateway in Envoy's
 * place: client -> gateway (real HTTP) -> sidecar (real ext_proc gRPC) -> demo origin.
 */
export interface Stack {
  origin: DemoOrigin;
  sidecar: Sidecar;
  gateway: Gateway;
  /** The GraphQL endpoint through the cache. */
  url: string;
  close(): Promise<void>;
}

export type ConfigInput = Omit<SchemaInput, 'origin'>;

/** Caches every query for a minute in PUBLIC unless the test says otherwise. */
export const CACHE_ALL_QUERIES = [{ description: 'all queries', types: ['Query'], maxAge: 60 }];

export function testConfig(originUrl: string, input: ConfigInput = {}): Config {
  return configSchema.parse({ rules: CACHE_ALL_QUERIES, ...input, origin: { url: originUrl } });
}

/** What `startStack` takes besides the configuration. */
export interface StackOptions {
  /** An origin the test started and closes itself; by default the stack starts a demo origin of its own. */
  origin?: DemoOrigin;
  gateway?: Partial<GatewayOptions>;
  onRequestCompleted?: SidecarOptions['onRequestCompleted'];
}

export async function startStack(input: ConfigInput = {}, options: StackOptions = {}): Promise<Stack> {
  const origin = options.origin ?? (await startDemoOrigin({ port: 0 }));
  const sidecar = await startSidecar({
    config: testConfig(origin.url, input),
    grpcPort: 0,
    adminPort: 0,
    host: '127.0.0.1',
    logger: silentLogger(),
    ...(options.onRequestCompleted ? { onRequestCompleted: options.onRequestCompleted } : {}),
  });
  await sidecar.schemaReady;
  // With Redis, requests before the connection is up would PASS (the store fails fast, never queues);
  // a test that points at no Redis on purpose goes on once the wait is over.
  if (input.redis) await sidecar.store.ping().catch(() => undefined);
  const gateway = await startGateway({
    processor: `127.0.0.1:${sidecar.grpcPort}`,
    origin: origin.url,
    port: 0,
    ...options.gateway,
  });
  return {
    origin,
    sidecar,
    gateway,
    url: `${gateway.url}/graphql`,
    close: async () => {
      await gateway.close();
      await sidecar.close(1000);
      if (!options.origin) await origin.close();
    },
  };
}

export interface UseStackOptions extends StackOptions {
  /**
   * false: no reset before each test, so a test sees what the tests before it left in the store and
   * at the origin, for blocks whose tests build on each other or reset what they need themselves.
   */
  freshEachTest?: boolean;
}

/**
 * One stack for the calling describe block (or file): started in beforeAll, closed in afterAll and,
 * unless `freshEachTest` is false, set back before each test (beforeEach): the origin's data,
 * behaviour and request counts reset and the store emptied. Each test then starts with the origin's
 * counts at zero and an empty store, so tests never see each other's entries and can run alone.
 *
 * `input` may be a function, called when the stack starts, for a configuration that needs what an
 * earlier beforeAll of the block started (a Redis server, a JWKS server): the stack closes before those.
 *
 * Returns a getter for the started stack: call it in tests and hooks; it throws before the stack started.
 */
export function useStack(input: ConfigInput | (() => ConfigInput) = {}, { freshEachTest = true, ...options }: UseStackOptions = {}): () => Stack {
  return useStarted({
    name: 'useStack',
    start: () => startStack(typeof input === 'function' ? input() : input, options),
    close: (stack) => stack.close(),
    reset: freshEachTest ? emptyStoreAndResetOrigin : undefined,
  });
}

async function emptyStoreAndResetOrigin(stack: Stack): Promise<void> {
  stack.origin.reset();
  await stack.sidecar.store.invalidateAll();
}
