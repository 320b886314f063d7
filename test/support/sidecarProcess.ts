import { spawn, type ChildProcess } from 'node:child_process';
import { createServer } from 'node:net';
import { fileURLToPath } from 'node:url';

/**
 * `svc-cache serve` as its own operating-system process, so that a test can kill it the way a crash
 * or the OOM killer does. It runs under a small shell watchdog holding the read end of a pipe from
 * this process: when the pipe closes (kill(), or the test worker ending in any way, even by
 * SIGKILL), the watchdog sends the sidecar SIGKILL. Nothing outlives the tests.
 */

export interface SidecarProcess {
  grpcPort: number;
  adminPort: number;
  /** SIGKILL; resolves once the process is gone. Safe to call twice. */
  kill(): Promise<void>;
}

export interface SidecarProcessOptions {
  configPath: string;
  grpcPort: number;
  adminPort: number;
}

const REPOSITORY_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const READY_TIMEOUT_MS = 15_000;
const READY_POLL_MS = 50;

/**
 * Starts `src/cli.ts serve` and resolves once its `/readyz` answers 200 (schema loaded, store
 * reachable). Node runs the TypeScript through tsx's loader rather than through `npx tsx`, whose
 * wrapper processes would take the signal in the sidecar's place.
 */
export async function startSidecarProcess(options: SidecarProcessOptions): Promise<SidecarProcess> {
  const watchdog = spawn(
    'sh',
    [
      '-c',
      WATCHDOG_SCRIPT,
      'sidecar-watchdog',
      process.execPath,
      '--import',
      'tsx',
      'src/cli.ts',
      'serve',
      '--config',
      options.configPath,
      '--grpc-port',
      String(options.grpcPort),
      '--admin-port',
      String(options.adminPort),
    ],
    { cwd: REPOSITORY_ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
  );
  let output = '';
  watchdog.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  watchdog.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => watchdog.once('exit', () => resolve()));
  const sidecar: SidecarProcess = {
    grpcPort: options.grpcPort,
    adminPort: options.adminPort,
    kill: async () => {
      watchdog.stdin?.end();
      await exited;
    },
  };
  try {
    await waitUntilReady(options.adminPort, watchdog, () => output);
  } catch (error) {
    await sidecar.kill();
    throw error;
  }
  return sidecar;
}

/** A port the OS just handed out and released; a server started right after gets it in practice. */
export async function freePort(): Promise<number> {
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

async function waitUntilReady(adminPort: number, watchdog: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + READY_TIMEOUT_MS;
  let lastAnswer = 'no answer yet';
  for (;;) {
    if (watchdog.exitCode !== null || watchdog.signalCode !== null) {
      throw new Error(`svc-cache serve exited before it was ready:\n${output()}`);
    }
    try {
      const response = await fetch(`http://127.0.0.1:${adminPort}/readyz`, { signal: AbortSignal.timeout(1000) });
      lastAnswer = `${response.status} ${await response.text()}`;
      if (response.status === 200) return;
    } catch (error) {
      lastAnswer = String(error);
    }
    if (Date.now() > deadline) {
      throw new Error(`svc-cache serve was not ready within ${READY_TIMEOUT_MS} ms (${lastAnswer}):\n${output()}`);
    }
    await new Promise((resolve) => setTimeout(resolve, READY_POLL_MS));
  }
}

/**
 * $@: the sidecar's command line. A background job's stdin is /dev/null in sh, hence the pipe kept
 * on descriptor 3 for the reader. A signal to the watchdog (a test runner ending its worker's
 * process group) also ends the sidecar.
 */
const WATCHDOG_SCRIPT = `
exec 3<&0
"$@" </dev/null &
sidecar=$!
trap 'kill -9 "$sidecar"' HUP INT TERM
( read -r _ <&3; kill -9 "$sidecar" ) &
reader=$!
wait "$sidecar"
status=$?
wait "$sidecar"
kill "$reader" 2>/dev/null
exit $status
`;
