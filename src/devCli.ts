#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import {
  checkCommand,
  exitOnFailure,
  handleShutdownSignals,
  portOption,
  runCommandLine,
  withPortOption,
  serveCommand,
  SHUTDOWN_GRACE_MS,
  SHUTDOWN_OVERRUN_MS,
  type Command,
  type Program,
} from './commandLine/index.js';
import { configSchema, demoConfigFrom, demoConfigInput, loadConfig, type Config } from './config/index.js';
import { startDemoOrigin } from './demo/index.js';
import { startGateway } from './gateway/index.js';
import { createLogger } from './observability/index.js';
import { startSidecar } from './sidecar/index.js';

/**
 * The development command line, built into dist-dev/ (tsconfig.dev.json) and never shipped in the
 * production image: the sidecar's own commands plus `demo` (what `npm start` runs), `gateway` (a
 * development stand-in for Envoy) and `demo-origin` (the demo Todo API alone, for docker-compose.yml
 * and the example app in deploy/examples/app).
 */

const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const gatewayCommand: Command = {
  name: 'gateway',
  summary: "the development gateway: plays Envoy's part in front of a running sidecar",
  options: [
    { name: 'processor', value: 'HOST:PORT', required: true, meaning: "the sidecar's ext_proc address" },
    { name: 'origin', value: 'URL', required: true, meaning: 'the GraphQL origin requests are forwarded to' },
    { name: 'port', value: 'N', default: '8080', meaning: 'the port clients send GraphQL to' },
  ],
  run: async (values) => {
    const logger = createLogger('info', 'svc-cache-gateway');
    const signals = handleShutdownSignals(logger, SHUTDOWN_OVERRUN_MS);
    const port = portOption(values.port as string, '--port');
    const front = await startGateway({ processor: values.processor as string, origin: values.origin as string, port, host: '0.0.0.0', logger }).catch(
      (error: unknown) => {
        throw withPortOption(error, { gateway: `--port ${port}` });
      },
    );
    signals.closeWith(() => front.close());
  },
};

const demoCommand: Command = {
  name: 'demo',
  summary: 'the demo on one machine: the demo Todo API, the sidecar (in-memory store) and the gateway in front',
  options: [
    { name: 'port', value: 'N', default: '8080', meaning: 'the gateway: GraphQL through the cache' },
    { name: 'origin-port', value: 'N', default: '4000', meaning: 'the demo Todo API' },
    { name: 'admin-port', value: 'N', default: '9901', meaning: "the sidecar's admin port" },
    { name: 'grpc-port', value: 'N', default: '0', meaning: "the sidecar's ext_proc port (0: a free one, printed at start)" },
    { name: 'config', value: 'FILE', meaning: "run with this configuration instead of the demo's (its origin.url is replaced by the demo API, its redis and grpc.tls set aside)" },
    { name: 'print-config', meaning: "print the demo's configuration as YAML and exit" },
  ],
  run: async (values) => {
    const originPort = portOption(values['origin-port'] as string, '--origin-port');
    if (values['print-config']) {
      console.log(stringify(demoConfigInput(`http://127.0.0.1:${originPort}/graphql`)).trimEnd());
      return;
    }
    const userConfig = typeof values.config === 'string' ? await loadConfig(values.config) : undefined;
    const logger = createLogger(userConfig?.logging.level ?? 'info');
    const signals = handleShutdownSignals(logger, SHUTDOWN_OVERRUN_MS);
    const ports = {
      'demo origin': `--origin-port ${originPort}`,
      admin: `--admin-port ${values['admin-port'] as string}`,
      ext_proc: `--grpc-port ${values['grpc-port'] as string}`,
      gateway: `--port ${values.port as string}`,
    };
    const explained = (error: unknown): never => {
      throw withPortOption(error, ports);
    };
    const origin = await startDemoOrigin({ port: originPort }).catch(explained);
    const fromFile = userConfig && demoConfigFrom(userConfig, origin.url);
    if (fromFile && fromFile.setAside.length > 0) {
      logger.info({ config: values.config, setAside: fromFile.setAside }, 'demo: parts of the configuration are set aside; the demo runs the in-memory store and clear-text ext_proc');
    }
    const config: Config = fromFile?.config ?? configSchema.parse(demoConfigInput(origin.url));
    const sidecar = await startSidecar({
      config,
      grpcPort: portOption(values['grpc-port'] as string, '--grpc-port'),
      adminPort: portOption(values['admin-port'] as string, '--admin-port'),
      host: '127.0.0.1',
      logger,
    }).catch(explained);
    const front = await startGateway({
      processor: `127.0.0.1:${sidecar.grpcPort}`,
      origin: origin.url,
      port: portOption(values.port as string, '--port'),
      logger: logger.child({ component: 'gateway' }),
    }).catch(explained);
    signals.closeWith(async () => {
      await front.close();
      await sidecar.close(SHUTDOWN_GRACE_MS);
      await origin.close();
    });
    await sidecar.schemaReady;
    const endpoint = `${front.url}/graphql`;
    console.log(`
svc-cache demo is up:
  GraphQL through the cache  ${endpoint}
  demo origin (Todo API)     ${origin.url}
  ext_proc (the sidecar)     127.0.0.1:${sidecar.grpcPort}
${adminLines(sidecar.adminPort, config.dashboard.enabled)}
  configuration              ${typeof values.config === 'string' ? values.config : 'the demo\'s (`svc-cache demo --print-config`: purge token dev-purge-token, scope AUTHENTICATED on authorization)'}

Try it twice and watch the svc-cache header go from MISS to HIT:
  curl -si ${endpoint} -H 'content-type: application/json' \\
    -d '{"query":"{ todos { id title done } }"}'
`);
  },
};

/** The admin port's pages the banner names: the dashboard only where the configuration keeps it on. */
function adminLines(adminPort: number, dashboard: boolean): string {
  const admin = `http://127.0.0.1:${adminPort}`;
  return [
    ...(dashboard ? [`  dashboard                  ${admin}/`] : []),
    `  metrics (Prometheus)       ${admin}/metrics`,
    `  health                     ${admin}/healthz, ${admin}/readyz`,
  ].join('\n');
}

const demoOriginCommand: Command = {
  name: 'demo-origin',
  summary: 'the demo Todo API alone, on every interface (docker-compose.yml, deploy/examples/app)',
  options: [{ name: 'port', value: 'N', default: '4000', meaning: 'the port it listens on' }],
  run: async (values) => {
    const logger = createLogger('info', 'svc-cache-demo-origin');
    const signals = handleShutdownSignals(logger, SHUTDOWN_OVERRUN_MS);
    const port = portOption(values.port as string, '--port');
    const origin = await startDemoOrigin({ port, host: '0.0.0.0' }).catch((error: unknown) => {
      throw withPortOption(error, { 'demo origin': `--port ${port}` });
    });
    signals.closeWith(() => origin.close());
    logger.info({ url: origin.url }, 'demo origin listening');
  },
};

const program: Program = {
  name: 'svc-cache',
  version: packageJson.version,
  commands: [serveCommand, checkCommand, demoCommand, gatewayCommand, demoOriginCommand],
  note: 'This is the development build (dist-dev/); the production build and image have serve and check only.',
};

runCommandLine(program, process.argv.slice(2)).catch((error: unknown) => exitOnFailure(program, error));
