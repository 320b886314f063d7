import { mkdir, mkdtemp, rename, rm, symlink, unlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { loadConfigSnapshot, watchConfig, type Config, type ConfigError, type ConfigWatcher } from '../../src/config/index.js';

const DEBOUNCE_MS = 20;
/** Long enough for an event, the debounce and the read to have happened if anything were to fire. */
const QUIET_MS = 250;

function configText(maxAge: number, extra = ''): string {
  return `origin:\n  url: http://origin.test/graphql\nrules:\n  - types: [Query]\n    maxAge: ${maxAge}\n${extra}`;
}

interface Observed {
  changes: Config[];
  errors: ConfigError[];
}

let directory: string;
let watcher: ConfigWatcher | undefined;

beforeEach(async () => {
  directory = await mkdtemp(join(tmpdir(), 'svc-cache-watch-'));
});

afterEach(async () => {
  watcher?.close();
  watcher = undefined;
  await rm(directory, { recursive: true, force: true });
});

async function startWatching(path: string, startedFrom?: string): Promise<Observed> {
  const observed: Observed = { changes: [], errors: [] };
  watcher = watchConfig(
    path,
    { onChange: (config) => observed.changes.push(config), onError: (error) => observed.errors.push(error) },
    { env: {}, debounceMs: DEBOUNCE_MS, pollIntervalMs: 0, ...(startedFrom === undefined ? {} : { startedFrom }) },
  );
  await watcher.ready;
  return observed;
}

async function quietPeriod(): Promise<void> {
  await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
}

function maxAges(observed: Observed): number[] {
  return observed.changes.map((config) => config.rules[0]?.maxAge ?? -1);
}

describe('watchConfig', () => {
  it('notices an edit in place', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);

    await writeFile(path, configText(120));
    await eventually(() => expect(maxAges(observed)).toEqual([120]));
    await quietPeriod();
    expect(maxAges(observed)).toEqual([120]);
    expect(observed.errors).toEqual([]);
  });

  it('notices a new file renamed over the old one', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);

    await writeFile(join(directory, '.config.yaml.swp'), configText(90));
    await rename(join(directory, '.config.yaml.swp'), path);
    await eventually(() => expect(maxAges(observed)).toEqual([90]));
    expect(observed.errors).toEqual([]);
  });

  it('notices a Kubernetes ConfigMap update (the ..data symlink swapped to a new directory)', async () => {
    await mkdir(join(directory, '..2024_01_01_00_00_00.000000001'));
    await writeFile(join(directory, '..2024_01_01_00_00_00.000000001', 'config.yaml'), configText(60));
    await symlink('..2024_01_01_00_00_00.000000001', join(directory, '..data'));
    await symlink('..data/config.yaml', join(directory, 'config.yaml'));
    const observed = await startWatching(join(directory, 'config.yaml'));

    await swapConfigMap('..2024_01_01_00_05_00.000000002', '..2024_01_01_00_00_00.000000001', configText(300));
    await eventually(() => expect(maxAges(observed)).toEqual([300]));

    await swapConfigMap('..2024_01_01_00_10_00.000000003', '..2024_01_01_00_05_00.000000002', configText(30));
    await eventually(() => expect(maxAges(observed)).toEqual([300, 30]));
    expect(observed.errors).toEqual([]);
  });

  it('notices an edit to the target of a symlink that lives in another directory', async () => {
    await mkdir(join(directory, 'real'));
    await mkdir(join(directory, 'etc'));
    await writeFile(join(directory, 'real', 'svc-cache.yaml'), configText(60));
    await symlink(join(directory, 'real', 'svc-cache.yaml'), join(directory, 'etc', 'config.yaml'));
    const observed = await startWatching(join(directory, 'etc', 'config.yaml'));

    await writeFile(join(directory, 'real', 'svc-cache.yaml'), configText(75));
    await eventually(() => expect(maxAges(observed)).toEqual([75]));
  });

  it('does not fire when the content is unchanged: rewritten, touched, or a ConfigMap swap to identical data', async () => {
    await mkdir(join(directory, '..first'));
    await writeFile(join(directory, '..first', 'config.yaml'), configText(60));
    await symlink('..first', join(directory, '..data'));
    await symlink('..data/config.yaml', join(directory, 'config.yaml'));
    const observed = await startWatching(join(directory, 'config.yaml'));

    await writeFile(join(directory, '..first', 'config.yaml'), configText(60));
    await utimes(join(directory, '..first', 'config.yaml'), new Date(), new Date());
    await swapConfigMap('..second', '..first', configText(60));
    await writeFile(join(directory, 'unrelated.txt'), 'hello');
    await quietPeriod();
    expect(observed).toEqual({ changes: [], errors: [] });
  });

  it('reports an invalid new file through onError only, and the next valid one through onChange', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);

    await writeFile(path, configText(60, 'mutationPolicy: Sometimes\n'));
    await eventually(() => expect(observed.errors).toHaveLength(1));
    expect(observed.errors[0]?.message).toBe(
      `${path}: mutationPolicy: expected one of None, Entity, List, Type, got "Sometimes" (line 6)`,
    );
    await quietPeriod();
    expect(observed.changes).toEqual([]);
    expect(observed.errors).toHaveLength(1);

    await writeFile(path, configText(45));
    await eventually(() => expect(maxAges(observed)).toEqual([45]));
    expect(observed.errors).toHaveLength(1);
  });

  it('refuses a new file whose Redis address the store could not use, as check and serve do (README, Hot reload)', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);

    await writeFile(path, configText(60, 'redis:\n  url: "redis://:pw@localhost:99999"\n'));
    await eventually(() => expect(observed.errors).toHaveLength(1));
    expect(observed.errors[0]?.message).toBe(
      `${path}: redis.url: expected a redis:// or rediss:// URL with a port from 1 to 65535, got "redis://[redacted]@localhost:99999" (line 7)`,
    );
    expect(observed.changes).toEqual([]);
  });

  it('reports a file that stays deleted, but not one briefly missing while it is replaced', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);

    await unlink(path);
    await writeFile(path, configText(61));
    await eventually(() => expect(maxAges(observed)).toEqual([61]));

    await unlink(path);
    await eventually(() => expect(observed.errors).toHaveLength(1));
    expect(observed.errors[0]?.message).toBe(`${path}: cannot read the file: no such file`);
  });

  it('follows the schema file the configuration names', async () => {
    const path = join(directory, 'config.yaml');
    const schemaDirectory = join(directory, 'schemas');
    await mkdir(schemaDirectory);
    await writeFile(join(schemaDirectory, 'origin.graphql'), 'type Query { a: Int }');
    await writeFile(path, configText(60, 'schema:\n  file: schemas/origin.graphql\n'));
    const observed = await startWatching(path);

    await writeFile(join(schemaDirectory, 'origin.graphql'), 'type Query { a: Int b: Int }');
    await eventually(() => expect(observed.changes).toHaveLength(1));
    expect(observed.changes[0]?.schema?.file).toBe(join(schemaDirectory, 'origin.graphql'));

    await unlink(join(schemaDirectory, 'origin.graphql'));
    await eventually(() => expect(observed.errors).toHaveLength(1));
    expect(observed.errors[0]?.message).toBe(
      `${path}: schema.file: cannot read "${join(schemaDirectory, 'origin.graphql')}": no such file (line 7)`,
    );

    await writeFile(join(schemaDirectory, 'origin.graphql'), 'type Query { c: Int }');
    await eventually(() => expect(observed.changes).toHaveLength(2));
  });

  it('reports a change made after the caller loaded the configuration and before the watcher started, given what the caller loaded', async () => {
    const path = join(directory, 'config.yaml');
    const manifestDirectory = join(directory, 'manifests');
    await mkdir(manifestDirectory);
    await writeFile(join(manifestDirectory, 'documents.json'), '{"a":"{ a }"}');
    await writeFile(path, configText(60, 'persistedDocuments:\n  manifest: manifests/documents.json\n'));
    const loaded = await loadConfigSnapshot(path, {});
    await writeFile(join(manifestDirectory, 'documents.json'), '{"b":"{ b }"}');
    const observed = await startWatching(path, loaded.fingerprint);
    await eventually(() => expect(observed.changes.map((config) => config.persistedDocuments?.documents)).toEqual([new Map([['b', '{ b }']])]));
    await quietPeriod();
    expect([observed.changes.length, observed.errors]).toEqual([1, []]);

    // Started from what is there now, it reports nothing.
    watcher?.close();
    const quiet = await startWatching(path, (await loadConfigSnapshot(path, {})).fingerprint);
    await quietPeriod();
    expect(quiet).toEqual({ changes: [], errors: [] });
  });

  it('reports a change its handler fails to apply through onError, and keeps watching', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const applied: number[] = [];
    const errors: string[] = [];
    watcher = watchConfig(
      path,
      {
        onChange: (config) => {
          const maxAge = config.rules[0]?.maxAge ?? -1;
          if (maxAge === 90) throw new Error('schema source gone');
          applied.push(maxAge);
        },
        onError: (error) => errors.push(error.message),
      },
      { env: {}, debounceMs: DEBOUNCE_MS, pollIntervalMs: 0 },
    );
    await watcher.ready;

    await writeFile(path, configText(90));
    await eventually(() => expect(errors).toEqual([`${path}: the change could not be applied: schema source gone`]));
    await writeFile(path, configText(45));
    await eventually(() => expect(applied).toEqual([45]));
    expect(errors).toHaveLength(1);
  });

  it('stops reporting once closed', async () => {
    const path = join(directory, 'config.yaml');
    await writeFile(path, configText(60));
    const observed = await startWatching(path);
    watcher?.close();

    await writeFile(path, configText(120));
    await quietPeriod();
    expect(observed).toEqual({ changes: [], errors: [] });
  });
});

/** What the kubelet does: write the new data to a fresh directory, then atomically repoint `..data`. */
async function swapConfigMap(newDirectory: string, oldDirectory: string, content: string): Promise<void> {
  await mkdir(join(directory, newDirectory));
  await writeFile(join(directory, newDirectory, 'config.yaml'), content);
  await symlink(newDirectory, join(directory, '..data_tmp'));
  await rename(join(directory, '..data_tmp'), join(directory, '..data'));
  await rm(join(directory, oldDirectory), { recursive: true });
}

/** Waits for an assertion to hold; generous because the whole suite may be running alongside. */
function eventually(assertion: () => void): Promise<void> {
  return vi.waitFor(assertion, { timeout: 5_000, interval: 10 });
}
