import type { LoadFigures } from './closedLoop.js';
import type { EnvoyStreamClose } from './extprocStreams.js';
import type { OpenLoopFigures } from './openLoop.js';
import type { ScenarioGroup } from './options.js';
import type { ProfileSummary } from './profileSummary.js';
import type { PurgeAckFigures } from './purgeAck.js';
import type { ServerThroughputFigures } from './serverThroughput.js';
import type { StampedeFigures } from './stampede.js';

export type ScenarioName =
  | 'sidecarHit'
  | 'sidecarHitIdentityClient'
  | 'sidecarHitDashboardOff'
  | 'sidecarHitHeaderScope'
  | 'sidecarHitJwtScope'
  | 'floorHit'
  | 'yogaHit'
  | 'sidecarMiss'
  | 'sidecarMissKnownDocument'
  | 'floorPassThrough';

export interface BenchReport {
  /** The one-minute load average as the run began: work of other processes shows in every figure. */
  machine: { cpus: number; cpuModel: string; nodeVersion: string; platform: string; loadAverageAtStart: number };
  settings: {
    durationSeconds: number;
    warmupSeconds: number;
    concurrency: number;
    missConcurrency: number;
    envoyClose: EnvoyStreamClose;
    bodyBytes: number;
    /** The groups that ran (`--only`); figures that need another group are null. */
    scenarioGroups: ScenarioGroup[];
  };
  /** Sidecar HIT streams per second over the floor server's. */
  hitThroughputRatio: number | null;
  /** Sidecar CPU time per HIT over Yoga's. */
  cpuPerHitRatio: number | null;
  /** Sidecar CPU time per HIT over the floor server's. */
  hitCpuRatioToFloor: number | null;
  /** Sidecar CPU µs per HIT for a client without `accept-encoding`, which gets the stored body decompressed. */
  hitCpuIdentityClientMicros: number | null;
  /** Sidecar CPU time per HIT with the dashboard on (the default) over the same with it off. */
  dashboardOnHitCpuRatio: number | null;
  /** Sidecar CPU time per HIT of one user in a scope keyed on a header, and on a verified JWT's claim. */
  hitCpuHeaderScopeMicros: number | null;
  hitCpuJwtScopeMicros: number | null;
  /** The JWT scope's CPU per HIT over the header scope's: what keying on a verified claim costs a HIT. */
  jwtScopeHitCpuRatio: number | null;
  redisRoundTripsPerHit: number | null;
  stampedeOriginRequests: number | null;
  /** p50 of a full MISS stream (a new document each time) minus p50 of a pass-through stream, one stream at a time. */
  missAddedLatencyMs: number | null;
  /** The same for MISSes of one known document, each under a new scope value (a new key). */
  missKnownDocumentAddedLatencyMs: number | null;
  /** Redis bytes per entry key over the bytes of the body it holds. */
  storedBytesPerBodyByte: number | null;
  /** MEMORY USAGE of every svc-cache key (tag indexes and bookkeeping too) per entry over body bytes. */
  redisMemoryPerBodyByte: number | null;
  /** HIT streams that failed when closed with half-close and RST_STREAM, Envoy's default (see `resetClose`). */
  resetCloseFailedStreams: number | null;
  /** Sidecar GET HITs per second per core of its own CPU, from h2load (see `serverThroughput`). */
  getHitsPerSecondPerCore: number | null;
  /** Sidecar GET HITs per second per core over the floor's, both from h2load. */
  getHitServerThroughputRatio: number | null;
  /** p99 of sidecar GET HITs minus the floor's, at a fixed rate of half the floor's capacity (see `fixedRate`). */
  hitAddedP99Ms: number | null;
  /** p50 ms of a purge through a store whose barrier the replicas' local caches acknowledge (see `purgeAck`). */
  purgeAckLatencyMs: number | null;
  scenarios: Partial<Record<ScenarioName, LoadFigures>>;
  /**
   * svc-cache's keys in Redis after the MISS scenario, in bytes per entry: MEMORY USAGE of the entry
   * keys, their values' length, and MEMORY USAGE of every key (tag indexes and bookkeeping too).
   */
  storage?: {
    entries: number;
    keys: number;
    entryKeyMemoryPerEntry: number;
    entryValuePerEntry: number;
    allKeysMemoryPerEntry: number;
    bodyBytes: number;
  };
  stampede?: StampedeFigures;
  resetClose?: { streams: number; failedStreams: number; firstError?: string };
  /** GET HITs answered on their request headers, one prebuilt message per stream, sent by h2load. */
  serverThroughput?:
    | {
        tool: 'h2load';
        connections: number;
        streamsPerConnection: number;
        /** Sidecar then floor, this many times; each server's figures are its median round by CPU per request. */
        rounds: number;
        sidecar: ServerThroughputFigures;
        floor: ServerThroughputFigures;
      }
    | { skipped: string };
  /** The same GET HITs, open loop at a fixed rate: half the floor's h2load throughput unless `--fixed-rate` says. */
  fixedRate?:
    | {
        /** The floor's streams/s in its median h2load throughput round; the rate is half of it. */
        floorCapacityPerSecond: number | null;
        /** Sidecar then floor, this many times; each server's figures are its run of median p99, with the errors of every round. */
        rounds: number;
        sidecar: OpenLoopFigures;
        floor: OpenLoopFigures;
      }
    | { skipped: string };
  /** A purge of one tag with the replicas' local caches acknowledging it, and without the local cache. */
  purgeAck?: PurgeAckFigures;
  /** With --cpu-prof: where the sidecar's CPU time went during the HIT and the MISS scenario. */
  sidecarHitProfile?: ProfileSummary;
  sidecarMissProfile?: ProfileSummary;
  /** With --cpu-prof: the same for the GET HITs driven by h2load. */
  sidecarGetHitProfile?: ProfileSummary;
}

export function formatTable(report: BenchReport): string {
  const { machine, settings, scenarios } = report;
  const lines = [
    `svc-cache benchmark: ${machine.cpus} CPUs (${machine.cpuModel}), Node ${machine.nodeVersion}, ${machine.platform}, ` +
      `load average ${machine.loadAverageAtStart} at start`,
    `${settings.durationSeconds} s measured per scenario after ${settings.warmupSeconds} s warm-up; ` +
      `HIT scenarios at ${settings.concurrency} concurrent streams, MISS and pass-through at ${settings.missConcurrency}; ` +
      `answers of ${settings.bodyBytes} bytes; ext_proc streams closed the ${settings.envoyClose} way`,
    '',
    ...(Object.keys(scenarios).length === 0 ? [] : [columns(['scenario', 'streams/s', 'p50 ms', 'p99 ms', 'CPU µs/req', 'errors'])]),
    ...SCENARIO_ROWS.flatMap(([name, label]) => {
      const figures = scenarios[name];
      if (!figures) return [];
      return columns([
        label,
        figures.streamsPerSecond.toLocaleString('en-US'),
        figures.p50Ms.toFixed(3),
        figures.p99Ms.toFixed(3),
        figures.cpuMicrosPerRequest.toFixed(1),
        String(figures.errors),
      ]);
    }),
    '',
    ...getHitRows(report),
    '',
    ...FIGURE_ROWS.map(([key, meaning]) => `${key.padEnd(27)} ${formatFigure(report[key]).padStart(8)}   ${meaning(report)}`),
  ];
  for (const [name, figures] of Object.entries(scenarios)) {
    if (figures.firstError !== undefined) lines.push(`first error in ${name}: ${figures.firstError}`);
  }
  if (report.resetClose?.firstError !== undefined) lines.push(`first error of the reset-closed HITs: ${report.resetClose.firstError}`);
  if (report.sidecarHitProfile) lines.push('', ...formatProfile('HIT', report.sidecarHitProfile));
  if (report.sidecarMissProfile) lines.push('', ...formatProfile('MISS', report.sidecarMissProfile));
  if (report.sidecarGetHitProfile) lines.push('', ...formatProfile('GET HIT (h2load)', report.sidecarGetHitProfile));
  return `${lines.join('\n')}\n`;
}

const SCENARIO_ROWS: ReadonlyArray<readonly [ScenarioName, string]> = [
  ['sidecarHit', 'HIT   svc-cache sidecar + Redis, ext_proc'],
  ['sidecarHitIdentityClient', 'HIT   same, client without accept-encoding'],
  ['sidecarHitDashboardOff', 'HIT   same, dashboard off'],
  ['sidecarHitHeaderScope', 'HIT   same, scope on a header'],
  ['sidecarHitJwtScope', 'HIT   same, scope on a JWT claim'],
  ['floorHit', 'HIT   floor: constant answer, ext_proc'],
  ['yogaHit', 'HIT   Yoga + response-cache, HTTP/1.1'],
  ['sidecarMiss', 'MISS  svc-cache sidecar + Redis, ext_proc'],
  ['sidecarMissKnownDocument', 'MISS  same, known document, new scope value'],
  ['floorPassThrough', 'PASS  floor: CONTINUE to all, ext_proc'],
];

type FigureKey =
  | 'hitThroughputRatio'
  | 'cpuPerHitRatio'
  | 'hitCpuRatioToFloor'
  | 'hitCpuIdentityClientMicros'
  | 'dashboardOnHitCpuRatio'
  | 'hitCpuHeaderScopeMicros'
  | 'hitCpuJwtScopeMicros'
  | 'jwtScopeHitCpuRatio'
  | 'redisRoundTripsPerHit'
  | 'missAddedLatencyMs'
  | 'missKnownDocumentAddedLatencyMs'
  | 'storedBytesPerBodyByte'
  | 'redisMemoryPerBodyByte'
  | 'stampedeOriginRequests'
  | 'resetCloseFailedStreams'
  | 'getHitsPerSecondPerCore'
  | 'getHitServerThroughputRatio'
  | 'hitAddedP99Ms'
  | 'purgeAckLatencyMs';

const FIGURE_ROWS: ReadonlyArray<readonly [FigureKey, (report: BenchReport) => string]> = [
  ['hitThroughputRatio', () => 'sidecar HIT streams/s ÷ floor HIT streams/s'],
  ['cpuPerHitRatio', () => 'sidecar CPU per HIT ÷ Yoga CPU per HIT'],
  ['hitCpuRatioToFloor', () => 'sidecar CPU per HIT ÷ floor CPU per HIT'],
  ['hitCpuIdentityClientMicros', () => 'sidecar CPU µs per HIT for a client without accept-encoding (body decompressed)'],
  ['dashboardOnHitCpuRatio', () => 'sidecar CPU per HIT, dashboard on ÷ dashboard off'],
  ['hitCpuHeaderScopeMicros', () => 'sidecar CPU µs per HIT, scope keyed on a header (x-team)'],
  ['hitCpuJwtScopeMicros', () => 'sidecar CPU µs per HIT, scope keyed on a verified HS256 JWT sub (token remembered)'],
  ['jwtScopeHitCpuRatio', () => 'sidecar CPU per HIT, JWT scope ÷ header scope'],
  ['redisRoundTripsPerHit', () => 'Redis commands per HIT (INFO commandstats)'],
  ['missAddedLatencyMs', () => 'MISS p50 − pass-through p50, ms (a new document each MISS)'],
  ['missKnownDocumentAddedLatencyMs', () => 'MISS p50 − pass-through p50, ms (one known document, a new x-team scope value each MISS)'],
  [
    'storedBytesPerBodyByte',
    ({ storage }) =>
      storage
        ? `Redis MEMORY USAGE per entry key ÷ body bytes (${storage.entryKeyMemoryPerEntry} ÷ ${storage.bodyBytes}; ` +
          `encoded value ${storage.entryValuePerEntry} B)`
        : NOT_RUN,
  ],
  [
    'redisMemoryPerBodyByte',
    ({ storage }) =>
      storage
        ? `MEMORY USAGE of all ${storage.keys} svc-cache keys (tag indexes too) per entry ÷ body bytes (${storage.allKeysMemoryPerEntry} B)`
        : NOT_RUN,
  ],
  [
    'stampedeOriginRequests',
    ({ stampede }) =>
      !stampede
        ? NOT_RUN
        : `origin requests for ${stampede.concurrentRequests} identical concurrent MISSes, origin delay ${stampede.originDelayMs} ms ` +
      `(answers: ${Object.entries(stampede.answers).map(([label, count]) => `${count} ${label}`).join(', ')})`,
  ],
  [
    'resetCloseFailedStreams',
    ({ resetClose }) =>
      resetClose ? `HIT streams failed of ${resetClose.streams} closed with half-close + RST_STREAM, Envoy's default` : NOT_RUN,
  ],
  ['getHitsPerSecondPerCore', ({ serverThroughput }) => skippedOr(serverThroughput, 'sidecar GET HITs/s ÷ sidecar CPU cores used, h2load')],
  ['getHitServerThroughputRatio', ({ serverThroughput }) => skippedOr(serverThroughput, 'sidecar ÷ floor GET HITs/s per core, h2load')],
  [
    'hitAddedP99Ms',
    ({ fixedRate }) =>
      skippedOr(fixedRate, `sidecar p99 − floor p99, ms, GET HITs open loop at ${fixedRate && 'sidecar' in fixedRate ? fixedRate.sidecar.ratePerSecond : '?'}/s`),
  ],
  [
    'purgeAckLatencyMs',
    ({ purgeAck }) =>
      purgeAck
        ? `p50 ms of a one-tag purge acknowledged by ${purgeAck.replicas} local caches; ${purgeAck.withoutLocalCacheP50Ms} ms without the local cache`
        : NOT_RUN,
  ],
];

const NOT_RUN = '(scenario not run)';

function skippedOr(figures: { skipped: string } | object | undefined, meaning: string): string {
  if (figures === undefined) return NOT_RUN;
  return 'skipped' in figures ? `skipped: ${figures.skipped}` : meaning;
}

/** The h2load and fixed-rate rows: GET HITs answered on their request headers. */
function getHitRows({ serverThroughput, fixedRate }: BenchReport): string[] {
  const rows: string[] = [];
  if (serverThroughput && 'sidecar' in serverThroughput) {
    rows.push(columns(['GET HIT, h2load (server-bound)', 'streams/s', 'cores', 'per core', 'CPU µs/req', 'ok']));
    for (const [label, figures] of [['sidecar', serverThroughput.sidecar], ['floor', serverThroughput.floor]] as const) {
      rows.push(
        columns([
          `  ${label}`,
          figures.requestsPerSecond.toLocaleString('en-US'),
          figures.coresUsed.toFixed(2),
          figures.requestsPerSecondPerCore.toLocaleString('en-US'),
          figures.cpuMicrosPerRequest.toFixed(1),
          String(figures.succeeded),
        ]),
      );
    }
  }
  if (fixedRate && 'sidecar' in fixedRate) {
    rows.push(columns([`GET HIT, open loop at ${fixedRate.sidecar.ratePerSecond}/s`, 'streams', 'p50 ms', 'p99 ms', 'max ms', 'errors']));
    for (const [label, figures] of [['sidecar', fixedRate.sidecar], ['floor', fixedRate.floor]] as const) {
      rows.push(
        columns([`  ${label}`, String(figures.requests), figures.p50Ms.toFixed(3), figures.p99Ms.toFixed(3), figures.maxMs.toFixed(3), String(figures.errors)]),
      );
      if (figures.firstError !== undefined) rows.push(`  first error: ${figures.firstError}`);
    }
  }
  return rows;
}

const COLUMN_WIDTHS = [44, 10, 9, 9, 11, 7];

function columns(cells: readonly string[]): string {
  return cells.map((cell, index) => (index === 0 ? cell.padEnd(COLUMN_WIDTHS[0]!) : cell.padStart(COLUMN_WIDTHS[index]!))).join(' ');
}

function formatFigure(value: number | null): string {
  if (value === null) return '-';
  return Number.isInteger(value) ? String(value) : value.toFixed(2);
}

function formatProfile(scenario: string, profile: ProfileSummary): string[] {
  const list = (rows: ReadonlyArray<{ percent: number; name: string }>) =>
    rows.map(({ percent, name }) => `  ${percent.toFixed(1).padStart(5)}%  ${name}`);
  return [
    `sidecar CPU profile during the ${scenario} scenario (${profile.samples} busy samples, idle left out): ${profile.file}`,
    'by area:',
    ...list(profile.areas.map(({ area, percent }) => ({ name: area, percent }))),
    'functions by self time:',
    ...list(profile.selfTop.map((row) => ({ name: row.function, percent: row.percent }))),
    'svc-cache functions by inclusive time:',
    ...list(profile.svcCacheInclusiveTop.map((row) => ({ name: row.function, percent: row.percent }))),
  ];
}
