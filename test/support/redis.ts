import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { promisify } from 'node:util';

/**
 * Real Redis servers for tests, never mocks: `redis-server` from PATH on free loopback ports with
 * nothing persisted, or a `redis:7` container where only a Docker engine is available. Processes
 * and temporary directories go away with stop(), or with the test worker if a test never got there.
 */

/**
 * redis.commandTimeoutMs for stacks in tests: generous, so that on a loaded 2-core CI machine a slow
 * answer does not turn into a PASS; a killed Redis still fails fast (no offline queue).
 */
export const TEST_REDIS_COMMAND_TIMEOUT_MS = 2000;

export interface RedisServer {
  url: string;
  port: number;
  /** Ends the server for good and removes its files. */
  stop(): Promise<void>;
  /** Kills the server abruptly, as a crash would. */
  kill(): Promise<void>;
  /** Starts it again on the same port, empty. */
  restart(): Promise<void>;
}

export interface RedisClusterNode {
  host: string;
  port: number;
}

export interface RedisCluster {
  nodes: RedisClusterNode[];
  stop(): Promise<void>;
}

export interface RedisServerOptions {
  /** Makes the server require this password (`requirepass`); `url` then carries it. */
  password?: string;
}

export async function startRedisServer(options: RedisServerOptions = {}): Promise<RedisServer> {
  const passwordArguments = options.password === undefined ? [] : ['--requirepass', options.password];
  const credentials = options.password === undefined ? '' : `:${encodeURIComponent(options.password)}@`;
  if (isOnPath('redis-server')) return startLocalServer(passwordArguments, credentials);
  if (await dockerEngineAnswers()) return startContainerServer(passwordArguments, credentials);
  throw new Error(NO_REDIS_MESSAGE);
}

/** A Sentinel that watches `master` under `name`; the caller stops the master separately. */
export async function startRedisSentinel(master: { port: number }, name: string): Promise<RedisServer> {
  if (!isOnPath('redis-server')) throw new Error(`A Redis Sentinel test needs redis-server on PATH: ${NO_REDIS_MESSAGE}`);
  const sentinel = await LocalRedisProcess.start(['--sentinel', '--sentinel', 'monitor', name, '127.0.0.1', String(master.port), '1'], {
    configFile: true,
    readyLine: '+monitor master',
  });
  return {
    url: `redis://127.0.0.1:${sentinel.port}`,
    port: sentinel.port,
    stop: () => sentinel.stop(),
    kill: () => sentinel.kill(),
    restart: () => sentinel.restart(),
  };
}

/** `masters` cluster-enabled servers joined by `redis-cli --cluster create`, without replicas. */
export async function startRedisCluster(masters = 3): Promise<RedisCluster> {
  if (!isOnPath('redis-server') || !isOnPath('redis-cli')) {
    throw new Error(`A Redis Cluster test needs redis-server and redis-cli on PATH: ${NO_REDIS_MESSAGE}`);
  }
  const processes: LocalRedisProcess[] = [];
  const stop = async (): Promise<void> => {
    await Promise.all(processes.map((server) => server.stop()));
  };
  try {
    for (let index = 0; index < masters; index += 1) {
      const busPort = await freePort();
      processes.push(
        await LocalRedisProcess.start([
          '--cluster-enabled', 'yes',
          '--cluster-config-file', 'nodes.conf',
          '--cluster-node-timeout', '2000',
          '--cluster-port', String(busPort),
        ]),
      );
    }
    const addresses = processes.map((server) => `127.0.0.1:${server.port}`);
    await runRedisCli(['--cluster', 'create', ...addresses, '--cluster-replicas', '0', '--cluster-yes']);
    await Promise.all(processes.map((server) => waitForClusterOk(server.port)));
    return { nodes: processes.map((server) => ({ host: '127.0.0.1', port: server.port })), stop };
  } catch (error) {
    await stop();
    throw error;
  }
}

const NO_REDIS_MESSAGE =
  'no Redis to test against: install Debian\'s redis-server package (apt-get install redis-server) or start a Docker engine';
const STARTUP_TIMEOUT_MS = 10_000;

async function startLocalServer(extraArguments: readonly string[], credentials: string): Promise<RedisServer> {
  const server = await LocalRedisProcess.start(extraArguments);
  return {
    url: `redis://${credentials}127.0.0.1:${server.port}`,
    port: server.port,
    stop: () => server.stop(),
    kill: () => server.kill(),
    restart: () => server.restart(),
  };
}

/**
 * One redis-server process in a temporary directory of its own, run under a small shell watchdog
 * that holds the read end of a pipe from this process: when the pipe closes (kill(), or the test
 * worker ending in any way, even by SIGKILL), the watchdog kills the server and removes the
 * directory. Nothing outlives the tests, whatever happened to them.
 */
class LocalRedisProcess {
  private watchdog: ChildProcess | undefined;

  private constructor(
    readonly port: number,
    private readonly extraArguments: readonly string[],
    private readonly options: LocalRedisOptions,
  ) {}

  static async start(extraArguments: readonly string[], options: LocalRedisOptions = {}): Promise<LocalRedisProcess> {
    const server = new LocalRedisProcess(await freePort(), extraArguments, options);
    await server.launch();
    return server;
  }

  /** Ends the server at once, as a crash would. */
  async kill(): Promise<void> {
    const watchdog = this.watchdog;
    this.watchdog = undefined;
    if (watchdog === undefined || watchdog.exitCode !== null || watchdog.signalCode !== null) return;
    const exited = new Promise((resolve) => watchdog.once('exit', resolve));
    watchdog.stdin?.end();
    await exited;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.launch();
  }

  stop(): Promise<void> {
    return this.kill();
  }

  private launch(): Promise<void> {
    const directory = mkdtempSync(join(tmpdir(), 'svc-cache-redis-'));
    const configFile = this.options.configFile ? join(directory, 'redis.conf') : undefined;
    if (configFile !== undefined) writeFileSync(configFile, '');
    const watchdog = spawn(
      'sh',
      [
        '-c',
        WATCHDOG_SCRIPT,
        'redis-watchdog',
        directory,
        ...(configFile === undefined ? [] : [configFile]),
        '--port', String(this.port),
        '--bind', '127.0.0.1',
        '--save', '',
        '--appendonly', 'no',
        '--dir', directory,
        '--daemonize', 'no',
        ...this.extraArguments,
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    this.watchdog = watchdog;
    const readyLine = this.options.readyLine ?? 'Ready to accept connections';
    return new Promise((resolve, reject) => {
      let output = '';
      const fail = (reason: string): void => {
        clearTimeout(timer);
        watchdog.stdin?.end();
        reject(new Error(`redis-server on port ${this.port} ${reason}:\n${output}`));
      };
      const timer = setTimeout(() => fail(`did not start within ${STARTUP_TIMEOUT_MS} ms`), STARTUP_TIMEOUT_MS);
      watchdog.once('error', (error) => fail(`could not be spawned (${error.message})`));
      watchdog.once('exit', (code, signal) => fail(`exited during startup (${signal ?? `code ${code}`})`));
      watchdog.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
      watchdog.stdout?.on('data', (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes(readyLine)) {
          clearTimeout(timer);
          watchdog.removeAllListeners('exit');
          watchdog.stdout?.removeAllListeners('data').resume();
          watchdog.stderr?.removeAllListeners('data').resume();
          resolve();
        }
      });
    });
  }
}

interface LocalRedisOptions {
  /** Start from a writable (empty) config file, as Sentinel requires. */
  configFile?: boolean;
  /** The log line that says the process answers. */
  readyLine?: string;
}

/**
 * $1: the directory to remove afterwards; the rest: redis-server's arguments. The watchdog lets go
 * of the pipes to this process at once, so that their closing cannot kill it before it cleans up;
 * a signal to it (a test runner ending its worker's process group) also ends the server.
 */
const WATCHDOG_SCRIPT = `
directory=$1; shift
exec 3<&0
redis-server "$@" </dev/null &
server=$!
exec >/dev/null 2>&1
trap 'kill -9 "$server"' HUP INT TERM
( read -r _ <&3; kill -9 "$server" ) &
wait "$server"
status=$?
wait "$server"
rm -rf "$directory"
exit $status
`;

async function runRedisCli(args: readonly string[]): Promise<string> {
  const { stdout } = await promisify(execFile)('redis-cli', [...args], { timeout: STARTUP_TIMEOUT_MS });
  return stdout;
}

async function waitForClusterOk(port: number): Promise<void> {
  const deadline = Date.now() + STARTUP_TIMEOUT_MS;
  for (;;) {
    const info = await runRedisCli(['-h', '127.0.0.1', '-p', String(port), 'cluster', 'info']);
    if (info.includes('cluster_state:ok')) return;
    if (Date.now() > deadline) throw new Error(`cluster node on port ${port} is not ok:\n${info}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** A port the OS just handed out and released; a server started right after gets it in practice. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  const address = server.address();
  await new Promise((resolve) => server.close(resolve));
  if (address === null || typeof address === 'string') throw new Error('could not find a free port');
  return address.port;
}

function isOnPath(command: string): boolean {
  return (process.env.PATH ?? '').split(delimiter).some((directory) => {
    try {
      accessSync(join(directory, command), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
}

async function dockerEngineAnswers(): Promise<boolean> {
  try {
    const { getContainerRuntimeClient } = await import('testcontainers');
    await getContainerRuntimeClient();
    return true;
  } catch {
    return false;
  }
}

async function startContainerServer(extraArguments: readonly string[], credentials: string): Promise<RedisServer> {
  const { GenericContainer, Wait, getContainerRuntimeClient } = await import('testcontainers');
  const port = await freePort();
  const container = await new GenericContainer('redis:7')
    .withCommand(['redis-server', '--save', '', '--appendonly', 'no', ...extraArguments])
    .withExposedPorts({ container: 6379, host: port })
    .withWaitStrategy(Wait.forLogMessage('Ready to accept connections'))
    .start();
  const runtime = await getContainerRuntimeClient();
  return {
    url: `redis://${credentials}${container.getHost()}:${port}`,
    port,
    stop: async () => {
      await container.stop();
    },
    kill: async () => {
      await runtime.container.getById(container.getId()).kill();
    },
    restart: () => container.restart(),
  };
}
