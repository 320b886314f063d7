import { startDemoOrigin, type DemoOrigin } from './origin.js';
import { startRedisServer, TEST_REDIS_COMMAND_TIMEOUT_MS, type RedisServer } from './redis.js';
import { startStack, type ConfigInput, type Stack } from './stack.js';

/** Two sidecars (each with its own gateway) sharing one Redis and one origin, as two replicas do. */
export interface Replicas {
  redis: RedisServer;
  origin: DemoOrigin;
  replicaA: Stack;
  replicaB: Stack;
  close(): Promise<void>;
}

/** `input` is the replicas' common configuration; the Redis part is filled in. */
export async function startReplicasSharingRedis(input: ConfigInput = {}): Promise<Replicas> {
  const redis = await startRedisServer();
  const origin = await startDemoOrigin();
  const config: ConfigInput = { ...input, redis: { url: redis.url, commandTimeoutMs: TEST_REDIS_COMMAND_TIMEOUT_MS } };
  const replicaA = await startStack(config, { origin });
  const replicaB = await startStack(config, { origin });
  return {
    redis,
    origin,
    replicaA,
    replicaB,
    close: async () => {
      await replicaA.close();
      await replicaB.close();
      await origin.close();
      await redis.stop();
    },
  };
}
