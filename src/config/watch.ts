import { watch, type FSWatcher } from 'node:fs';
import { realpath } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { ConfigError } from './error.js';
import { errorMessage } from '../util/index.js';
import { readConfigSnapshot, type ConfigSnapshot } from './load.js';
import type { Config } from './schema.js';

export interface ConfigWatchHandlers {
  /** A new, valid configuration (the file or a file it names changed, src/config/namedFiles.ts). */
  onChange(config: Config): void;
  /** The file changed but cannot be used; the caller keeps its current configuration. */
  onError(error: ConfigError): void;
}

export interface ConfigWatchOptions {
  env?: NodeJS.ProcessEnv;
  /** Quiet time after the last file event before the file is read (editors write in several steps). */
  debounceMs?: number;
  /** How often the file is also read without any event, for filesystems that do not report changes; 0 turns this off. */
  pollIntervalMs?: number;
  /**
   * The fingerprint of what the caller's configuration was built from (loadConfigSnapshot): a change
   * made between that read and the watcher's own first one, before any directory was watched, is
   * then reported too.
   */
  startedFrom?: string;
}

export interface ConfigWatcher {
  /** Resolves once the current content is known and the directories are watched: changes after this are reported. */
  ready: Promise<void>;
  close(): void;
}

const DEFAULT_DEBOUNCE_MS = 200;
const DEFAULT_POLL_INTERVAL_MS = 10_000;

/**
 * Follows a configuration file and reports each change once. The directories are watched rather
 * than the file, because the usual ways of updating a file replace it: an editor or `mv` renames a
 * new file over it, and Kubernetes mounts a ConfigMap as `config.yaml -> ..data/config.yaml` and
 * updates it by swapping the `..data` symlink. A change is what alters the content of the file or of
 * the schema file or manifest it names, or whether a file it names can be used
 * (src/config/namedFiles.ts), so touching, re-saving or a swap to identical data fires nothing.
 */
export function watchConfig(path: string, handlers: ConfigWatchHandlers, options: ConfigWatchOptions = {}): ConfigWatcher {
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const watchers = new Map<string, FSWatcher>();
  let closed = false;
  let debounce: NodeJS.Timeout | undefined;
  let checking = false;
  let checkAgain = false;
  /** A file that cannot be read is usually being replaced; it is reported only if still unreadable a moment later. */
  let unreadableOnce = false;
  let lastFingerprint: string | undefined;

  const schedule = (): void => {
    if (closed) return;
    clearTimeout(debounce);
    debounce = setTimeout(() => void check(), debounceMs);
    debounce.unref();
  };

  const check = async (): Promise<void> => {
    if (checking) {
      checkAgain = true;
      return;
    }
    checking = true;
    try {
      await baseline;
      const snapshot = await readConfigSnapshot(path, options.env);
      if (closed) return;
      await followDirectories(snapshot);
      if (snapshot.fingerprint === lastFingerprint) return;
      if ('unreadable' in snapshot && snapshot.unreadable && !unreadableOnce) {
        unreadableOnce = true;
        schedule();
        return;
      }
      unreadableOnce = false;
      lastFingerprint = snapshot.fingerprint;
      if ('config' in snapshot) handlers.onChange(snapshot.config);
      else handlers.onError(snapshot.error);
    } catch (error) {
      // Run from a timer or a file event: what escapes here would end the process (unhandled rejection).
      try {
        if (!closed) handlers.onError(new ConfigError(path, [`the change could not be applied: ${errorMessage(error)}`]));
      } catch {
        // A handler that cannot even report has nothing left to tell.
      }
    } finally {
      checking = false;
      if (checkAgain) {
        checkAgain = false;
        schedule();
      }
    }
  };

  /** The config file's directory, and those of the files it names and of any symlink targets, which can live elsewhere. */
  const followDirectories = async (snapshot: ConfigSnapshot): Promise<void> => {
    const directories = new Set(snapshot.files.map((file) => dirname(resolve(file))));
    for (const file of snapshot.files) {
      const target = await realpath(file).catch(() => undefined);
      if (target !== undefined) directories.add(dirname(target));
    }
    if (closed) return;
    for (const [directory, watcher] of watchers) {
      if (directories.has(directory)) continue;
      watcher.close();
      watchers.delete(directory);
    }
    for (const directory of directories) if (!watchers.has(directory)) watchDirectory(directory);
  };

  const watchDirectory = (directory: string): void => {
    try {
      const watcher = watch(directory, { persistent: false }, schedule);
      watcher.on('error', () => {
        watcher.close();
        if (watchers.get(directory) === watcher) watchers.delete(directory);
        schedule();
      });
      watchers.set(directory, watcher);
    } catch {
      // A directory that cannot be watched (gone, or not supported here) is still covered by polling.
    }
  };

  // Never rejects: a first read that fails leaves the caller's fingerprint, or none, so the next
  // check reports what it finds.
  lastFingerprint = options.startedFrom;
  const baseline = readConfigSnapshot(path, options.env)
    .then(async (snapshot) => {
      lastFingerprint ??= snapshot.fingerprint;
      await followDirectories(snapshot);
      // Once more now that every directory is watched: a file written before then made no event here.
      schedule();
    })
    .catch(() => undefined);
  watchDirectory(dirname(resolve(path)));
  const poll = pollIntervalMs > 0 ? setInterval(() => void check(), pollIntervalMs).unref() : undefined;

  return {
    ready: baseline,
    close() {
      closed = true;
      clearTimeout(debounce);
      clearInterval(poll);
      for (const watcher of watchers.values()) watcher.close();
      watchers.clear();
    },
  };
}
