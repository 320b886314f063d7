import { QueryTexts } from './queryTexts.js';

/**
 * The registry of automatic persisted queries: SHA-256 hex hash to query text. Clients choose what
 * goes in, so every implementation bounds its total size and lets the oldest registrations go first
 * (docs/graphql-caching.md, Persisted queries).
 */
export interface PersistedQueryRegistry {
  /** The query registered under `hash`, unless it expired or was evicted. */
  get(hash: string): Promise<string | undefined>;
  /** Registers `query` under `hash` for `ttlSeconds`; a query larger than the whole bound is not kept. */
  register(hash: string, query: string, ttlSeconds: number): Promise<void>;
}

export interface MemoryPersistedQueryRegistryOptions {
  /**
   * Bound on the hashes and query texts held, in bytes (UTF-16 code units counted as one, and
   * REGISTRATION_OVERHEAD_BYTES a registration): the
   * current configuration's `apq.maxBytes`, read at each registration, so that a reload applies
   * from the next one (README, Automatic persisted queries).
   */
  maxBytes: () => number;
}

/** The registry of a single replica, in process memory. */
export class MemoryPersistedQueryRegistry implements PersistedQueryRegistry {
  private readonly queries: QueryTexts;
  private readonly maxBytes: () => number;

  constructor(options: MemoryPersistedQueryRegistryOptions) {
    this.maxBytes = options.maxBytes;
    this.queries = new QueryTexts(this.maxBytes());
  }

  /** Read with `peek`, which leaves the order alone: the oldest registration goes first, as in the Redis registry. */
  async get(hash: string): Promise<string | undefined> {
    return this.queries.peek(hash);
  }

  async register(hash: string, query: string, ttlSeconds: number): Promise<void> {
    this.queries.limitTo(this.maxBytes());
    this.queries.set(hash, query, Math.ceil(ttlSeconds * 1000));
  }
}
