import { Redis } from 'ioredis';
import { afterAll, beforeAll } from 'vitest';
import { startRedisServer, type RedisServer } from './redis.js';

/**
 * One server for a test file, started before its tests and stopped after them, with a client
 * that inspects it (commandstats, CLIENT LIST, keys).
 */
export function redisServerForTests(): { readonly server: RedisServer; readonly inspector: Redis } {
  let server: RedisServer | undefined;
  let inspector: Redis | undefined;
  beforeAll(async () => {
    server = await startRedisServer();
    inspector = new Redis(server.url);
  });
  afterAll(async () => {
    inspector?.disconnect();
    await server?.stop();
  });
  return {
    get server() {
      if (server === undefined) throw new Error('the Redis server starts before the tests');
      return server;
    },
    get inspector() {
      if (inspector === undefined) throw new Error('the Redis server starts before the tests');
      return inspector;
    },
  };
}
