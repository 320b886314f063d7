import { readFile } from 'node:fs/promises';
import { round } from './closedLoop.js';

/**
 * Where a CPU profile's time went, idle time left out: by area (svc-cache's own folders, each
 * package, garbage collection; Node's internals and native code are charged to the code that called
 * them), the functions that used the most CPU themselves, and svc-cache's functions by the time
 * spent in them and everything they called.
 */
export interface ProfileSummary {
  file: string;
  /** Busy samples; each stands for the sampling interval of CPU time. */
  samples: number;
  areas: Array<{ area: string; percent: number }>;
  selfTop: Array<{ function: string; percent: number }>;
  svcCacheInclusiveTop: Array<{ function: string; percent: number }>;
}

export async function summariseProfile(file: string, rows = 15): Promise<ProfileSummary> {
  const profile = JSON.parse(await readFile(file, 'utf8')) as CpuProfile;
  const nodes = new Map(profile.nodes.map((node) => [node.id, node]));
  const parents = new Map<number, number>();
  for (const node of profile.nodes) for (const child of node.children ?? []) parents.set(child, node.id);

  const self = new Map<string, number>();
  const areas = new Map<string, number>();
  const inclusive = new Map<string, number>();
  let busy = 0;
  for (const sampled of profile.samples) {
    const node = nodes.get(sampled);
    if (!node || node.callFrame.functionName === '(idle)') continue;
    busy += 1;
    add(self, functionName(node.callFrame));
    const stack: CallFrame[] = [];
    for (let id: number | undefined = sampled; id !== undefined && stack.length < MAX_STACK_DEPTH; id = parents.get(id)) {
      const frame = nodes.get(id)?.callFrame;
      if (frame) stack.push(frame);
    }
    add(areas, areaOf(stack));
    for (const name of new Set(stack.filter((frame) => isSvcCacheSource(frame.url)).map(functionName))) add(inclusive, name);
  }
  const top = (counts: Map<string, number>, limit: number) =>
    [...counts]
      .sort((a, b) => b[1] - a[1])
      .slice(0, limit)
      .map(([name, count]) => ({ name, percent: round((100 * count) / Math.max(busy, 1), 1) }));
  return {
    file,
    samples: busy,
    areas: top(areas, rows).map(({ name, percent }) => ({ area: name, percent })),
    selfTop: top(self, rows).map(({ name, percent }) => ({ function: name, percent })),
    svcCacheInclusiveTop: top(inclusive, rows).map(({ name, percent }) => ({ function: name, percent })),
  };
}

interface CallFrame {
  functionName: string;
  url: string;
  lineNumber: number;
}

interface CpuProfile {
  nodes: Array<{ id: number; callFrame: CallFrame; children?: number[] }>;
  samples: number[];
}

/** This checkout, as profiles name its files: its sources through tsx, its build as the bench's sidecar runs it. */
const REPOSITORY = new URL('../', import.meta.url).href;
const SVC_CACHE_FOLDERS = ['src/', 'dist/'];
const PACKAGES = '/node_modules/';
const MAX_STACK_DEPTH = 1000;

function isSvcCacheSource(url: string): boolean {
  return url.startsWith(REPOSITORY) && SVC_CACHE_FOLDERS.some((folder) => url.startsWith(folder, REPOSITORY.length));
}

function add(counts: Map<string, number>, key: string): void {
  counts.set(key, (counts.get(key) ?? 0) + 1);
}

function functionName(frame: CallFrame): string {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  return `${name} ${shortLocation(frame.url)}:${frame.lineNumber + 1}`;
}

/** A path from the package or source folder on, enough to find the file. */
function shortLocation(url: string): string {
  const packageAt = url.lastIndexOf(PACKAGES);
  if (packageAt >= 0) return url.slice(packageAt + PACKAGES.length);
  if (isSvcCacheSource(url)) return url.slice(REPOSITORY.length);
  return url.replace(/^file:\/\//, '');
}

/** The package or svc-cache folder of the innermost frame that is neither Node's nor native. */
function areaOf(stack: readonly CallFrame[]): string {
  const caller = stack.find((frame) => frame.url.startsWith('file:'));
  if (caller === undefined) return stack[0]?.url === '' ? stack[0].functionName : 'node internals';
  const location = shortLocation(caller.url);
  if (caller.url.includes(PACKAGES)) {
    const [scopeOrName = '', name = ''] = location.split('/');
    return scopeOrName.startsWith('@') ? `${scopeOrName}/${name}` : scopeOrName;
  }
  if (isSvcCacheSource(caller.url)) return `svc-cache ${location.split('/').slice(0, 2).join('/')}`;
  return location;
}
