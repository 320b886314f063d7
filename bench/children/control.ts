import { writeFile } from 'node:fs/promises';
import { Session } from 'node:inspector/promises';
import { findSourceMap } from 'node:module';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

/**
 * The IPC conversation between the harness and a server it runs in a child process, so that the
 * server's CPU time is counted apart from the load generator's. The child says when it listens;
 * the harness asks for CPU time, for a CPU profile of a stretch of time, for a full garbage
 * collection, and for the end.
 */

export type ControlCommand =
  | { command: 'cpu-usage' }
  | { command: 'start-profile' }
  | { command: 'stop-profile'; file: string }
  | { command: 'collect-garbage' }
  | { command: 'stop' };

export type ControlRequest = ControlCommand & { id: number };

export type ChildMessage =
  | { kind: 'ready'; port: number }
  | { kind: 'reply'; id: number; cpuMicros?: number; error?: string };

export interface ServedByChild {
  port: number;
  close(): Promise<void>;
}

/**
 * Reports `server` ready and answers the harness until it asks for the end. A harness that goes
 * away without asking (killed, crashed) closes the channel, and the child ends with it.
 */
export function answerHarness(server: ServedByChild): void {
  const send = (message: ChildMessage, then?: () => void): void => {
    process.send?.(message, undefined, undefined, () => then?.());
  };
  let profiler: Session | undefined;

  const answer = async (request: ControlRequest): Promise<Omit<Extract<ChildMessage, { kind: 'reply' }>, 'kind' | 'id'>> => {
    switch (request.command) {
      case 'cpu-usage': {
        const usage = process.cpuUsage();
        return { cpuMicros: usage.user + usage.system };
      }
      case 'start-profile':
        profiler = new Session();
        profiler.connect();
        await profiler.post('Profiler.enable');
        await profiler.post('Profiler.setSamplingInterval', { interval: PROFILE_SAMPLING_INTERVAL_MICROS });
        await profiler.post('Profiler.start');
        return {};
      case 'stop-profile': {
        if (!profiler) return { error: 'no profile was started' };
        const { profile } = await profiler.post('Profiler.stop');
        profiler.disconnect();
        profiler = undefined;
        await writeFile(request.file, JSON.stringify(withSourcePositions(profile)));
        return {};
      }
      case 'collect-garbage':
        fullGarbageCollection();
        return {};
      case 'stop':
        await server.close();
        return {};
    }
  };

  process.on('message', (request: ControlRequest) => {
    answer(request).then(
      (reply) => send({ kind: 'reply', id: request.id, ...reply }, request.command === 'stop' ? () => process.exit(0) : undefined),
      (error: unknown) => send({ kind: 'reply', id: request.id, error: String(error) }),
    );
  });
  process.on('disconnect', () => process.exit(0));
  send({ kind: 'ready', port: server.port });
}

/**
 * A full collection on demand, without `--expose-gc` on the child's command line: V8 gives `gc` to
 * contexts made once the flag is set.
 */
export function fullGarbageCollection(): void {
  setFlagsFromString('--expose-gc');
  (runInNewContext('gc') as () => void)();
}

/** Finer than Node's 1 ms default: a HIT takes a few hundred microseconds of CPU, and a run lasts seconds. */
const PROFILE_SAMPLING_INTERVAL_MICROS = 250;

interface CallFrame {
  url: string;
  lineNumber: number;
  columnNumber: number;
}

/**
 * tsx runs TypeScript compiled to one line per file, so the profiler's positions in it say nothing;
 * its source maps turn them back into lines of the .ts files. Packages keep the positions in the
 * JavaScript they ship, the files the profile names.
 */
function withSourcePositions<Profile extends { nodes: Array<{ callFrame: CallFrame }> }>(profile: Profile): Profile {
  for (const { callFrame } of profile.nodes) {
    if (!callFrame.url.startsWith('file:') || callFrame.url.includes('/node_modules/') || callFrame.lineNumber < 0) continue;
    const entry = findSourceMap(callFrame.url)?.findEntry(callFrame.lineNumber, callFrame.columnNumber);
    if (!entry || !('originalLine' in entry)) continue;
    callFrame.lineNumber = entry.originalLine;
    callFrame.columnNumber = entry.originalColumn;
  }
  return profile;
}
