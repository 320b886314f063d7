import { printSchema, type GraphQLSchema } from 'graphql';
import type { Config } from '../config/index.js';
import type { Logger } from '../observability/index.js';
import { configSchemaMismatches, guardingRuleMismatches } from './check.js';
import { formatDuration } from './duration.js';
import { SchemaLoadError } from './error.js';
import { introspectOrigin } from './introspect.js';
import { loadSchemaFile } from './sdl.js';
import { errorMessage, withoutQueryValues } from '../util/index.js';

/**
 * The origin's GraphQL schema, which rule matching, key fields and the purge API need. Without one
 * the service still forwards every request; it just cannot cache, and says why.
 */
export interface SchemaSource {
  current(): GraphQLSchema | undefined;
  /**
   * Why there is no schema yet, for /readyz (which names the subject: "origin schema: <reason>");
   * undefined once one is loaded.
   */
  unavailableReason(): string | undefined;
  /** Resolves when the first schema is loaded; never rejects. */
  ready: Promise<void>;
  /** Loads the schema again from the (possibly changed) source; the current schema stays in use until the new one is loaded. */
  reload(config: Config): void;
  close(): void;
}

export interface SchemaSourceOptions {
  /** Waits between introspection attempts while the origin is not answering; the last one repeats. */
  retryDelaysMs?: readonly number[];
  /** How long one introspection request may take. */
  timeoutMs?: number;
  /** Overrides `schema.refreshSeconds`, for tests. */
  refreshMs?: number;
  /**
   * Told of every schema put in use, with the configuration it was loaded for: what else depends
   * on the schema (the purge API) reports its own findings without this folder knowing of it, and
   * how many names of the configuration the schema lacks (configSchemaMismatches).
   */
  onLoaded?: (schema: GraphQLSchema, config: Config, mismatches: number) => void;
}

const DEFAULT_RETRY_DELAYS_MS = [1_000, 2_000, 4_000, 8_000, 16_000, 30_000];
const DEFAULT_TIMEOUT_MS = 10_000;
/**
 * An origin deployed with new fields answers them before svc-cache knows them, and answers holding
 * objects under such a field are not stored (README, Fields svc-cache's schema lacks): introspected
 * again every 5 minutes, the schema follows a deploy without a reload.
 */
const DEFAULT_REFRESH_SECONDS = 300;

/**
 * `schema.file` when the configuration names one (read once per load: a broken file does not fix
 * itself, and a changed one arrives through reload), otherwise introspection of `origin.url`,
 * retried for as long as it takes: in a pod the origin often starts after the sidecar.
 */
export function createSchemaSource(config: Config, logger: Logger, options: SchemaSourceOptions = {}): SchemaSource {
  const retryDelaysMs = options.retryDelaysMs?.length ? options.retryDelaysMs : DEFAULT_RETRY_DELAYS_MS;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  let schema: GraphQLSchema | undefined;
  /**
   * The digest of the introspection answer `schema` was built from, and `schema` printed: a refresh
   * whose answer is the same builds nothing, and one whose answer differs only where the schema does
   * not (an origin's per-request `extensions`, such as a cost or a trace) changes nothing either.
   */
  let answered: string | undefined;
  let printed: string | undefined;
  let reason: string | undefined;
  let cancelLoad: (() => void) | undefined;
  let closed = false;
  let markReady!: () => void;
  const ready = new Promise<void>((resolve) => (markReady = resolve));

  const accept = (loaded: GraphQLSchema, from: string, forConfig: Config, attempts: number, answerDigest?: string, text = printSchema(loaded)): void => {
    schema = loaded;
    answered = answerDigest;
    printed = text;
    reason = undefined;
    markReady();
    const typeCount = Object.keys(loaded.getTypeMap()).filter((name) => !name.startsWith('__')).length;
    const after = attempts > 1 ? ` after ${attempts} attempts` : '';
    logger.info({ source: from, types: typeCount }, `origin schema loaded from ${from}${after}`);
    const mismatches = configSchemaMismatches(forConfig, loaded);
    const guarding = new Set(guardingRuleMismatches(forConfig, mismatches));
    for (const mismatch of mismatches) {
      if (!guarding.has(mismatch)) logger.warn(`configuration does not match the origin schema: ${mismatch}`);
      else logger.error(`a rule with a scope or maxAge 0 does not match the origin schema (until it does, other rules, PUBLIC ones too, may cache what it would keep in its scope or uncached): ${mismatch}`);
    }
    options.onLoaded?.(loaded, forConfig, mismatches.length);
  };

  const loadFile = (file: string, forConfig: Config): (() => void) => {
    let cancelled = false;
    loadSchemaFile(file).then(
      (loaded) => {
        if (!cancelled) accept(loaded, file, forConfig, 1);
      },
      (error: unknown) => {
        if (cancelled) return;
        const problem = describe(error);
        if (schema) {
          logger.error(`cannot reload the origin schema, keeping the previous one: ${problem}`);
        } else {
          reason = problem;
          logger.error(`origin schema not available: ${problem}`);
        }
      },
    );
    return () => {
      cancelled = true;
    };
  };

  const introspect = (url: string, forConfig: Config): (() => void) => {
    const controller = new AbortController();
    let timer: NodeJS.Timeout | undefined;
    let attempts = 0;
    const refreshMs = options.refreshMs ?? (forConfig.schema?.refreshSeconds ?? DEFAULT_REFRESH_SECONDS) * 1000;
    const later = (run: () => Promise<void>, delay: number): void => {
      timer = setTimeout(() => void run(), delay);
      timer.unref();
    };
    /** Fetched again: put in use only when the schema changed, so that what was worked out per schema stays. */
    const refresh = async (): Promise<void> => {
      try {
        const loaded = await introspectOrigin(url, { signal: controller.signal, timeoutMs }, answered);
        if (controller.signal.aborted) return;
        if (loaded !== undefined) putInUseIfChanged(loaded.schema, loaded.answerDigest);
      } catch (error) {
        if (controller.signal.aborted) return;
        logger.warn({ url }, `cannot refresh the origin schema, keeping the current one: ${describe(error)}; trying again in ${formatDuration(refreshMs)}`);
      }
      later(refresh, refreshMs);
    };
    const putInUseIfChanged = (loaded: GraphQLSchema, answerDigest: string): void => {
      const text = printSchema(loaded);
      if (text === printed) answered = answerDigest;
      else accept(loaded, url, forConfig, 1, answerDigest, text);
    };
    const attempt = async (): Promise<void> => {
      attempts += 1;
      try {
        const loaded = await introspectOrigin(url, { signal: controller.signal, timeoutMs });
        if (controller.signal.aborted || loaded === undefined) return;
        accept(loaded.schema, url, forConfig, attempts, loaded.answerDigest);
        if (refreshMs > 0) later(refresh, refreshMs);
      } catch (error) {
        if (controller.signal.aborted) return;
        const problem = describe(error);
        const delay = retryDelaysMs[Math.min(attempts - 1, retryDelaysMs.length - 1)] as number;
        if (schema) {
          logger.warn({ url, attempt: attempts }, `cannot reload the origin schema, keeping the previous one: ${problem}; retrying in ${formatDuration(delay)}`);
        } else {
          reason = problem;
          logger.warn({ url, attempt: attempts }, `origin schema not available yet: ${problem}; retrying in ${formatDuration(delay)}`);
        }
        later(attempt, delay);
      }
    };
    void attempt();
    return () => {
      controller.abort();
      clearTimeout(timer);
    };
  };

  const load = (forConfig: Config): void => {
    cancelLoad?.();
    const file = forConfig.schema?.file;
    if (!schema) reason = `not loaded yet: ${file ? `reading ${file}` : `introspecting ${withoutQueryValues(forConfig.origin.url)}`}`;
    cancelLoad = file ? loadFile(file, forConfig) : introspect(forConfig.origin.url, forConfig);
  };

  load(config);
  return {
    current: () => schema,
    unavailableReason: () => reason,
    ready,
    reload(next) {
      if (!closed) load(next);
    },
    close() {
      closed = true;
      cancelLoad?.();
    },
  };
}

function describe(error: unknown): string {
  if (error instanceof SchemaLoadError) return error.message;
  return `unexpected failure: ${errorMessage(error)}`;
}
