import { Redis } from 'ioredis';

/** Reads what the sidecar did to Redis: commands executed and bytes its entries take. */
export class RedisProbe {
  private readonly client: Redis;

  constructor(url: string) {
    this.client = new Redis(url, { maxRetriesPerRequest: 1 });
  }

  /** Commands Redis executed while `work` ran, from any client, counting every command alike. */
  async commandsDuring(work: () => Promise<void>): Promise<number> {
    const before = await this.commandCallsSoFar();
    await work();
    const after = await this.commandCallsSoFar();
    // Redis counts a command once it has run, so the second INFO sees the first one and not itself.
    return after - before - 1;
  }

  /**
   * The keys matching `pattern` (of `type` when given): how many there are, the sum of their
   * `MEMORY USAGE` (what Redis spends on each, key and overhead included) and, for strings, of their
   * value lengths.
   */
  async keySizes(pattern: string, type?: 'string'): Promise<{ keys: number; memoryBytes: number; valueBytes: number }> {
    const sizes = { keys: 0, memoryBytes: 0, valueBytes: 0 };
    let cursor = '0';
    for (let page = 0; page < MAX_SCAN_PAGES; page += 1) {
      const [nextCursor, found] =
        type === undefined
          ? await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000)
          : await this.client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000, 'TYPE', type);
      const pipeline = this.client.pipeline();
      for (const key of found) {
        pipeline.call('MEMORY', 'USAGE', key, 'SAMPLES', '0');
        if (type === 'string') pipeline.strlen(key);
      }
      const replies = ((await pipeline.exec()) ?? []).map(([error, reply]) => (error ? 0 : Number(reply)));
      const repliesPerKey = type === 'string' ? 2 : 1;
      for (let index = 0; index < replies.length; index += repliesPerKey) {
        sizes.keys += 1;
        sizes.memoryBytes += replies[index]!;
        if (type === 'string') sizes.valueBytes += replies[index + 1]!;
      }
      cursor = nextCursor;
      if (cursor === '0') break;
    }
    return sizes;
  }

  async close(): Promise<void> {
    this.client.disconnect();
  }

  private async commandCallsSoFar(): Promise<number> {
    const info = await this.client.info('commandstats');
    let calls = 0;
    for (const match of info.matchAll(/^cmdstat_[^:]+:calls=(\d+)/gm)) calls += Number(match[1]);
    return calls;
  }
}

const MAX_SCAN_PAGES = 10_000;
