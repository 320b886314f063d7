import { mkdtemp, rename, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfigSnapshot } from '../../src/config/index.js';
import { startGateway, type Gateway } from '../../src/gateway/index.js';
import { startSidecar, type Sidecar } from '../../src/sidecar/sidecar.js';
import { demoSchemaSDL, startDemoOrigin, type DemoOrigin } from './origin.js';
import { recordingLogger, type RecordingLogger } from './recordingLogger.js';

/** What `svc-cache serve --config FILE` runs: the sidecar reads a real YAML file and follows its changes. */
export interface FileConfiguredStack {
  origin: DemoOrigin;
  sidecar: Sidecar;
  gateway: Gateway;
  /** The GraphQL endpoint through the cache. */
  url: string;
  /** The configuration file the sidecar watches. */
  configPath: string;
  log: RecordingLogger;
  /**
   * Replaces the file as editors and `kubectl cp` do, by renaming a complete new file over it, so
   * the watcher never reads half a file. `{{ORIGIN_URL}}` and `{{SCHEMA_FILE}}` are filled in.
   */
  writeConfig(yaml: string): Promise<void>;
  close(): Promise<void>;
}

export const RELOADED = 'configuration reloaded';
export const REFUSED = 'new configuration refused; keeping the current one';

/**
 * A demo origin, the sidecar started from `yaml` written to a temporary directory (the schema comes
 * from the demo SDL written beside it, so a reload does not call the origin), and the gateway.
 */
export async function startFileConfiguredStack(yaml: string): Promise<FileConfiguredStack> {
  const directory = await mkdtemp(join(tmpdir(), 'svc-cache-config-'));
  const configPath = join(directory, 'config.yaml');
  const schemaFile = join(directory, 'schema.graphql');
  await writeFile(schemaFile, demoSchemaSDL);
  const origin = await startDemoOrigin({ port: 0 });
  const fill = (text: string): string =>
    text.replaceAll('{{ORIGIN_URL}}', origin.url).replaceAll('{{SCHEMA_FILE}}', schemaFile);
  let version = 0;
  const writeConfig = async (text: string): Promise<void> => {
    version += 1;
    const staged = join(directory, `.config.yaml.${version}`);
    await writeFile(staged, fill(text));
    await rename(staged, configPath);
  };
  await writeConfig(yaml);

  const log = recordingLogger();
  const { config, fingerprint } = await loadConfigSnapshot(configPath);
  const sidecar = await startSidecar({
    config,
    configPath,
    configFingerprint: fingerprint,
    grpcPort: 0,
    adminPort: 0,
    host: '127.0.0.1',
    logger: log.logger,
  });
  await sidecar.schemaReady;
  const gateway = await startGateway({ processor: `127.0.0.1:${sidecar.grpcPort}`, origin: origin.url, port: 0 });
  return {
    origin,
    sidecar,
    gateway,
    url: `${gateway.url}/graphql`,
    configPath,
    log,
    writeConfig,
    close: async () => {
      await gateway.close();
      await sidecar.close(1000);
      await origin.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
