import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { SIDECAR_NODE_FLAGS } from '../src/sidecar/garbageCollection.js';
import type { ChildMessage, ControlCommand } from './children/control.js';

/** A server the harness runs in a child process of its own (see children/control.ts). */
export interface ChildServer {
  name: string;
  port: number;
  /** User plus system CPU time the child has used since it started, in microseconds. */
  cpuMicros(): Promise<number>;
  startProfile(): Promise<void>;
  /** Writes the profile taken since `startProfile` to `file` (a .cpuprofile). */
  stopProfile(file: string): Promise<void>;
  /** Has the child's V8 run a full garbage collection. */
  collectGarbage(): Promise<void>;
  /** Asks the child to close and exit, and kills it if it has not within a few seconds. */
  stop(): Promise<void>;
}

/** `script` is a file under bench/children, run by Node with tsx as the harness itself runs. */
export async function startChildServer(name: string, script: string, args: readonly string[] = []): Promise<ChildServer> {
  // Every server runs with the Node flags production's sidecar runs with: the floor, as the
  // sidecar's runtime, and Yoga too, so that the comparison is of the code and not of V8 settings.
  const child = spawn(process.execPath, [...SIDECAR_NODE_FLAGS, '--import', TSX_LOADER, fileURLToPath(new URL(`./children/${script}`, import.meta.url)), ...args], {
    // The child's stdout goes to the harness's stderr: with --json, stdout carries the JSON alone.
    stdio: ['ignore', 2, 'inherit', 'ipc'],
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    const port = await readyPort(name, child);
    return controlled(name, port, child, exited);
  } catch (error) {
    child.kill('SIGKILL');
    throw error;
  }
}

const TSX_LOADER = import.meta.resolve('tsx');
const STARTUP_TIMEOUT_MS = 20_000;
const STOP_TIMEOUT_MS = 5_000;
const REPLY_TIMEOUT_MS = 10_000;

function readyPort(name: string, child: ChildProcess): Promise<number> {
  return new Promise((resolve, reject) => {
    const settle = (): void => {
      clearTimeout(timer);
      child.off('exit', onExit);
      child.off('message', onMessage);
    };
    const onExit = (code: number | null, signal: NodeJS.Signals | null): void => {
      settle();
      reject(new Error(`${name} exited during startup (${signal ?? `code ${code}`})`));
    };
    const onMessage = (message: ChildMessage): void => {
      if (message.kind !== 'ready') return;
      settle();
      resolve(message.port);
    };
    const timer = setTimeout(() => {
      settle();
      reject(new Error(`${name} did not start within ${STARTUP_TIMEOUT_MS} ms`));
    }, STARTUP_TIMEOUT_MS);
    child.on('exit', onExit);
    child.on('message', onMessage);
  });
}

function controlled(name: string, port: number, child: ChildProcess, exited: Promise<void>): ChildServer {
  let nextId = 0;
  const pending = new Map<number, (reply: Extract<ChildMessage, { kind: 'reply' }>) => void>();
  child.on('message', (message: ChildMessage) => {
    if (message.kind === 'reply') pending.get(message.id)?.(message);
  });
  let running = true;
  child.once('exit', () => (running = false));

  const ask = (command: ControlCommand): Promise<Extract<ChildMessage, { kind: 'reply' }>> =>
    new Promise((resolve, reject) => {
      if (!running) {
        reject(new Error(`${name} is no longer running`));
        return;
      }
      const id = (nextId += 1);
      const timer = setTimeout(() => {
        pending.delete(id);
        reject(new Error(`${name} did not answer ${command.command} within ${REPLY_TIMEOUT_MS} ms`));
      }, REPLY_TIMEOUT_MS);
      pending.set(id, (reply) => {
        clearTimeout(timer);
        pending.delete(id);
        if (reply.error === undefined) resolve(reply);
        else reject(new Error(`${name}: ${reply.error}`));
      });
      child.send({ id, ...command });
    });

  return {
    name,
    port,
    cpuMicros: async () => {
      const reply = await ask({ command: 'cpu-usage' });
      if (reply.cpuMicros === undefined) throw new Error(`${name} sent no CPU time`);
      return reply.cpuMicros;
    },
    startProfile: async () => {
      await ask({ command: 'start-profile' });
    },
    stopProfile: async (file) => {
      await ask({ command: 'stop-profile', file });
    },
    collectGarbage: async () => {
      await ask({ command: 'collect-garbage' });
    },
    stop: async () => {
      if (!running) return;
      const killer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await ask({ command: 'stop' }).catch(() => child.kill('SIGKILL'));
      await exited;
      clearTimeout(killer);
    },
  };
}
