import { ConfigError, loadConfigSnapshot } from '../config/index.js';
import { routeGrpcLogs } from '../extproc/index.js';
import { createLogger } from '../observability/index.js';
import { startSidecar, stopPretenuring } from '../sidecar/index.js';
import { checkConfigFile } from './check.js';
import type { Command } from './program.js';
import { handleShutdownSignals } from './signals.js';
import { portOption, withPortOption } from './values.js';

/** The commands of the production build (README, Commands): `serve` and `check`. */

export const SHUTDOWN_GRACE_MS = 10_000;
/** How long past the grace period a hung shutdown may take before the process exits 1 anyway. */
export const SHUTDOWN_OVERRUN_MS = SHUTDOWN_GRACE_MS + 5_000;

export const serveCommand: Command = {
  name: 'serve',
  summary: "run the sidecar: Envoy's ext_proc service and the admin port",
  options: [
    { name: 'config', value: 'FILE', required: true, meaning: 'the configuration file (YAML); followed, a valid change applies within seconds' },
    { name: 'grpc-host', value: 'H', default: '127.0.0.1', meaning: "ext_proc's address: loopback, as Envoy is in the same pod (use grpc.tls for anything else)" },
    { name: 'grpc-port', value: 'N', default: '50051', meaning: 'ext_proc gRPC port, and grpc.health.v1.Health on it' },
    { name: 'admin-port', value: 'N', default: '9901', meaning: 'admin port on every interface: /healthz, /readyz, /metrics (nothing secret)' },
  ],
  run: async (values) => {
    // A process-wide V8 setting, so the process's entry makes it, not startSidecar (tests and the
    // demo run sidecars inside other processes).
    stopPretenuring();
    const configPath = values.config as string;
    const { config, fingerprint: configFingerprint } = await loadConfigSnapshot(configPath);
    const logger = createLogger(config.logging.level);
    routeGrpcLogs(logger);
    const signals = handleShutdownSignals(logger, SHUTDOWN_OVERRUN_MS);
    const grpcHost = values['grpc-host'] as string;
    const grpcPort = portOption(values['grpc-port'] as string, '--grpc-port');
    const adminPort = portOption(values['admin-port'] as string, '--admin-port');
    const sidecar = await startSidecar({ config, configPath, configFingerprint, grpcHost, grpcPort, adminPort, logger }).catch((error: unknown) => {
      throw withPortOption(error, { ext_proc: `--grpc-host ${grpcHost} --grpc-port ${grpcPort}`, admin: `--admin-port ${adminPort}` });
    });
    signals.closeWith(() => sidecar.close(SHUTDOWN_GRACE_MS));
  },
};

export const checkCommand: Command = {
  name: 'check',
  summary: 'validate a configuration offline and print the rules in force per type and field (exit 1 when invalid)',
  options: [
    { name: 'config', value: 'FILE', required: true, meaning: 'the configuration file to check, with ${NAME} taken from the environment' },
    { name: 'schema', value: 'FILE', meaning: "the origin's schema (SDL) to check type and field names against; default: the config's schema.file" },
  ],
  run: async (values) => {
    const report = await checkConfigFile(values.config as string, values.schema as string | undefined);
    if (report.mismatches.length > 0) {
      throw new ConfigError(values.config as string, report.mismatches.map((mismatch) => `${mismatch} (schema ${report.schemaFile})`));
    }
    console.log(`${values.config}: valid${report.schemaFile ? `, every name is in ${report.schemaFile}` : ' (no schema given: type and field names not checked)'}`);
    console.log(report.effectiveRules.length > 0 ? 'rules in force:' : 'no rules: nothing is cached');
    for (const line of report.effectiveRules) console.log(`  ${line}`);
    if (report.storedDocuments) console.log(`stored documents: ${report.storedDocuments.count} in ${report.storedDocuments.manifest}`);
    for (const warning of report.warnings) console.error(`warning: ${warning}`);
  },
};
