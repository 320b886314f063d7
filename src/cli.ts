#!/usr/bin/env node
import { parseArgs } from 'node:util';
import { ConfigError, demoConfig, loadConfig } from './config/index.js';
import { startDemoOrigin } from './demo/origin.js';
import { startGateway } from './gateway/index.js';
import { createLogger, type Logger } from './observability/log.js';
import { startSidecar } from './sidecar/sidecar.js';

/**
 * The command line of DESIGN.md:
 *   svc-cache serve --config FILE [--grpc-port N] [--admin-port N]
 *   svc-cache gateway --processor HOST:PORT --origin URL [--port N]
 *   svc-cache demo   (what `npm start` runs: demo origin, sidecar with the in-memory store, gateway)
 */

const USAGE = `usage:
  svc-cache serve --config FILE [--grpc-port N] [--admin-port N]
  svc-cache gateway --processor HOST:PORT --origin URL [--port N]
  svc-cache demo [--port N]`;

const DEFAULT_GRPC_PORT = 50051;
const DEFAULT_ADMIN_PORT = 9901;
const DEFAULT_GATEWAY_PORT = 8080;
const DEFAULT_DEMO_ORIGIN_PORT = 4000;
const SHUTDOWN_GRACE_MS = 10_000;
const SHUTDOWN_OVERRUN_MS = 5_000;

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'gateway':
      return gateway(rest);
    case 'demo':
      return demo(rest);
    case 'demo-origin':
      return demoOrigin(rest);
    case undefined:
    case '--help':
    case '-h':
      console.log(USAGE);
      return;
    default:
      throw new UsageError(`unknown command "${command}"`);
  }
}

async function serve(args: string[]): Promise<void> {
  const { values } = parse(args, {
    config: { type: 'string' },
    'grpc-port': { type: 'string' },
    'admin-port': { type: 'string' },
  });
  if (!values.config) throw new UsageError('serve needs --config FILE');
  const config = await loadConfig(values.config);
  const logger = createLogger(config.logging.level);
  const sidecar = await startSidecar({
    config,
    configPath: values.config,
    grpcPort: portOption(values['grpc-port'], DEFAULT_GRPC_PORT, '--grpc-port'),
    adminPort: portOption(values['admin-port'], DEFAULT_ADMIN_PORT, '--admin-port'),
    logger,
  });
  closeOnSignal(logger, () => sidecar.close(SHUTDOWN_GRACE_MS));
}

async function gateway(args: string[]): Promise<void> {
  const { values } = parse(args, {
    processor: { type: 'string' },
    origin: { type: 'string' },
    port: { type: 'string' },
  });
  if (!values.processor) throw new UsageError('gateway needs --processor HOST:PORT');
  if (!values.origin) throw new UsageError('gateway needs --origin URL');
  const logger = createLogger('info', 'svc-cache-gateway');
  const front = await startGateway({
    processor: values.processor,
    origin: values.origin,
    port: portOption(values.port, DEFAULT_GATEWAY_PORT, '--port'),
    host: '0.0.0.0',
    logger,
  });
  logger.info({ url: front.url, processor: values.processor, origin: values.origin }, 'gateway listening');
  closeOnSignal(logger, () => front.close());
}

async function demo(args: string[]): Promise<void> {
  const { values } = parse(args, { port: { type: 'string' } });
  const logger = createLogger('info');
  const origin = await startDemoOrigin({ port: DEFAULT_DEMO_ORIGIN_PORT });
  const sidecar = await startSidecar({
    config: demoConfig(origin.url),
    grpcPort: 0,
    adminPort: DEFAULT_ADMIN_PORT,
    host: '127.0.0.1',
    logger,
  });
  await sidecar.schemaReady;
  const front = await startGateway({
    processor: `127.0.0.1:${sidecar.grpcPort}`,
    origin: origin.url,
    port: portOption(values.port, DEFAULT_GATEWAY_PORT, '--port'),
    logger: logger.child({ component: 'gateway' }),
  });
  const endpoint = `${front.url}/graphql`;
  console.log(`
svc-cache demo is up:
  GraphQL through the cache  ${endpoint}
  demo origin (Todo API)     ${origin.url}
  admin (health)             http://127.0.0.1:${sidecar.adminPort}/readyz

Try it twice and watch the svc-cache header go from MISS to HIT:
  curl -si ${endpoint} -H 'content-type: application/json' \\
    -d '{"query":"{ todos { id title done } }"}'
`);
  closeOnSignal(logger, async () => {
    await front.close();
    await sidecar.close(SHUTDOWN_GRACE_MS);
    await origin.close();
  });
}

/**
 * Not in the usage text: the demo origin alone, listening on every interface, so that
 * docker-compose.yml and the end-to-end tests can run it from the svc-cache image beside Envoy.
 */
async function demoOrigin(args: string[]): Promise<void> {
  const { values } = parse(args, { port: { type: 'string' } });
  const logger = createLogger('info', 'svc-cache-demo-origin');
  const origin = await startDemoOrigin({ port: portOption(values.port, DEFAULT_DEMO_ORIGIN_PORT, '--port'), host: '0.0.0.0' });
  logger.info({ url: origin.url }, 'demo origin listening');
  closeOnSignal(logger, () => origin.close());
}

class UsageError extends Error {}

function parse<T extends Record<string, { type: 'string' }>>(args: string[], options: T) {
  try {
    return parseArgs({ args, options, strict: true, allowPositionals: false });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function portOption(raw: string | undefined, fallback: number, flag: string): number {
  if (raw === undefined) return fallback;
  const port = Number(raw);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError(`${flag} expects a port number, got "${raw}"`);
  return port;
}

/**
 * SIGTERM (Kubernetes) and SIGINT (a terminal): finish open work, then exit 0. `close` has its own
 * grace period; should it hang past that (a store that never answers its QUIT), the process exits 1
 * a little later rather than waiting for SIGKILL. A second signal means "now": exit at once.
 */
function closeOnSignal(logger: Logger, close: () => Promise<void>): void {
  let closing = false;
  const onSignal = (signal: string) => {
    if (closing) {
      logger.warn({ signal }, 'second signal during shutdown; exiting now');
      process.exit(1);
    }
    closing = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error({ afterMs: SHUTDOWN_GRACE_MS + SHUTDOWN_OVERRUN_MS }, 'shutdown did not finish; exiting');
      process.exit(1);
    }, SHUTDOWN_GRACE_MS + SHUTDOWN_OVERRUN_MS).unref();
    close().then(
      () => {
        logger.info('shut down cleanly');
        process.exit(0);
      },
      (error: unknown) => {
        logger.error({ err: String(error) }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => onSignal('SIGTERM'));
  process.on('SIGINT', () => onSignal('SIGINT'));
}

main(process.argv.slice(2)).catch((error: unknown) => {
  if (error instanceof UsageError) {
    console.error(`svc-cache: ${error.message}\n${USAGE}`);
    process.exit(2);
  }
  if (error instanceof ConfigError) {
    console.error(`svc-cache: invalid configuration\n${error.message}`);
    process.exit(1);
  }
  console.error(`svc-cache: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
});
