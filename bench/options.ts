import { parseArgs } from 'node:util';
import type { EnvoyStreamClose } from './extprocStreams.js';

export interface BenchOptions {
  /** One JSON object on stdout instead of the table. */
  json: boolean;
  durationSeconds: number;
  warmupSeconds: number;
  /** Concurrent streams (or HTTP requests) of the HIT scenarios. */
  concurrency: number;
  /** How the load generator ends each ext_proc stream, as Envoy does with or without graceful close. */
  envoyClose: EnvoyStreamClose;
  /** Profile the sidecar during the HIT and MISS scenarios and summarise where its CPU time went. */
  cpuProfile: boolean;
  /** The scenario groups to run; figures of the others are null. */
  only: ReadonlySet<ScenarioGroup>;
  /** Streams per h2load run of the server-bound GET HIT throughput. */
  h2loadRequests: number;
  /** Streams per second of the fixed-rate scenario; undefined: half the floor's h2load throughput. */
  fixedRate: number | undefined;
}

/** What `--only` selects; every group when it is not given. */
export const SCENARIO_GROUPS = ['hit', 'miss', 'storage', 'yoga', 'stampede', 'reset-close', 'get-throughput', 'fixed-rate', 'purge-ack'] as const;
export type ScenarioGroup = (typeof SCENARIO_GROUPS)[number];

export const USAGE = `usage: npm run bench -- [--json] [--duration S] [--warmup S] [--concurrency N] [--envoy-close C] [--cpu-prof]
                          [--only GROUP,...] [--h2load-requests N] [--fixed-rate R]

  --json            print one JSON object on one line of stdout instead of the table
  --duration S      measured seconds per scenario (default 5)
  --warmup S        unmeasured seconds before each scenario (default 2)
  --concurrency N   concurrent streams of the HIT scenarios (default 32)
  --envoy-close C   how each ext_proc stream ends: graceful (default; half-close, the server ends the
                    call, as Envoy with ext_proc_graceful_grpc_close) or reset (half-close then
                    RST_STREAM, Envoy's default)
  --cpu-prof        CPU-profile the sidecar during the HIT, MISS and GET HIT (h2load) scenarios and summarise where its
                    time went (slows the HIT and MISS scenarios; the GET HITs get an extra h2load round that is not
                    counted; the .cpuprofile files stay in the temp directory)
  --only GROUP,...  run only these scenario groups (figures of the others are null): ${SCENARIO_GROUPS.join(', ')}
  --h2load-requests N
                    streams per h2load run of get-throughput (default 30000)
  --fixed-rate R    streams per second of fixed-rate (default: half the floor's h2load throughput)
`;

/** Throws with the usage text on anything it does not understand. */
export function parseOptions(argv: readonly string[]): BenchOptions | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: [...argv],
      strict: true,
      allowPositionals: false,
      options: {
        json: { type: 'boolean', default: false },
        duration: { type: 'string', default: '5' },
        warmup: { type: 'string', default: '2' },
        concurrency: { type: 'string', default: '32' },
        'envoy-close': { type: 'string', default: 'graceful' },
        'cpu-prof': { type: 'boolean', default: false },
        only: { type: 'string' },
        'h2load-requests': { type: 'string', default: '30000' },
        'fixed-rate': { type: 'string' },
        help: { type: 'boolean', short: 'h', default: false },
      },
    });
  } catch (error) {
    throw new Error(`${error instanceof Error ? error.message : String(error)}\n${USAGE}`);
  }
  const { values } = parsed;
  if (values.help) return 'help';
  const envoyClose = values['envoy-close'];
  if (envoyClose !== 'graceful' && envoyClose !== 'reset') {
    throw new Error(`--envoy-close must be graceful or reset (got "${envoyClose}")\n${USAGE}`);
  }
  return {
    json: values.json,
    durationSeconds: numberIn('--duration', values.duration, 0.5, 60),
    warmupSeconds: numberIn('--warmup', values.warmup, 0, 30),
    concurrency: Math.round(numberIn('--concurrency', values.concurrency, 1, 1024)),
    envoyClose,
    cpuProfile: values['cpu-prof'],
    only: scenarioGroups(values.only),
    h2loadRequests: Math.round(numberIn('--h2load-requests', values['h2load-requests'], 1000, 1_000_000)),
    fixedRate: values['fixed-rate'] === undefined ? undefined : Math.round(numberIn('--fixed-rate', values['fixed-rate'], 1, 100_000)),
  };
}

function scenarioGroups(list: string | undefined): ReadonlySet<ScenarioGroup> {
  if (list === undefined) return new Set(SCENARIO_GROUPS);
  const groups = list.split(',').map((group) => group.trim());
  const unknown = groups.filter((group) => !(SCENARIO_GROUPS as readonly string[]).includes(group));
  if (unknown.length > 0) throw new Error(`--only: unknown scenario group ${unknown.join(', ')}\n${USAGE}`);
  return new Set(groups as ScenarioGroup[]);
}

function numberIn(option: string, text: string, min: number, max: number): number {
  const value = Number(text);
  if (!Number.isFinite(value) || value < min || value > max) {
    throw new Error(`${option} must be a number from ${min} to ${max} (got "${text}")\n${USAGE}`);
  }
  return value;
}
