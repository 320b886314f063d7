import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HIT_RATIO_OUTCOMES } from '../../src/dashboard/index.js';
import type { Sidecar } from '../../src/sidecar/sidecar.js';
import { startTestSidecar } from '../support/sidecar.js';

/** deploy/grafana/svc-cache.json may only chart what `/metrics` exposes. */

interface Panel {
  id: number;
  type: string;
  title: string;
  description?: string;
  targets: Array<{ expr: string; legendFormat?: string }>;
}

const board = JSON.parse(readFileSync(new URL('../../deploy/grafana/svc-cache.json', import.meta.url), 'utf8')) as {
  uid: string;
  panels: Panel[];
};

let sidecar: Sidecar;
beforeAll(async () => {
  sidecar = await startTestSidecar();
});
afterAll(() => sidecar.close());

/** The panel plugins built into Grafana; a panel of any other type renders as "Panel plugin not found". */
const BUILT_IN_PANEL_TYPES = new Set([
  'alertlist', 'annolist', 'barchart', 'bargauge', 'candlestick', 'canvas', 'dashlist', 'datagrid', 'flamegraph', 'gauge', 'geomap',
  'heatmap', 'histogram', 'logs', 'news', 'nodeGraph', 'piechart', 'row', 'stat', 'state-timeline', 'status-history', 'table', 'text',
  'timeseries', 'traces', 'trend', 'xychart',
]);

/** Every sample name the exposition can carry: counters, gauges, and histograms' series. */
async function exposedNames(): Promise<Set<string>> {
  const text = await (await fetch(`http://127.0.0.1:${sidecar.adminPort}/metrics`)).text();
  const names = new Set<string>();
  for (const match of text.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const [, name, kind] = match as unknown as [string, string, string];
    names.add(name);
    if (kind === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) names.add(name + suffix);
  }
  return names;
}

function referencedNames(): Set<string> {
  const names = new Set<string>();
  for (const panel of board.panels) {
    for (const target of panel.targets) for (const [name] of target.expr.matchAll(/\bsvc_cache_[a-z0-9_]+/g)) names.add(name);
  }
  return names;
}

describe('Grafana dashboard', () => {
  it('references only metric names /metrics exposes', async () => {
    const exposed = await exposedNames();
    const unknown = [...referencedNames()].filter((name) => !exposed.has(name));
    expect(unknown).toEqual([]);
  });

  it('charts hit ratio by replica and in total, outcomes, PASS reasons, errors, purges and their acknowledgement, invalidations, the store, coalescing, stream errors and config reloads', () => {
    expect([...referencedNames()].sort()).toEqual([
      'svc_cache_coalesced_requests_total',
      'svc_cache_config_last_reload_successful',
      'svc_cache_config_reloads_total',
      'svc_cache_decision_duration_seconds_bucket',
      'svc_cache_errors_total',
      'svc_cache_invalidated_entries_total',
      'svc_cache_invalidations_total',
      'svc_cache_pass_total',
      'svc_cache_purge_ack_seconds_bucket',
      'svc_cache_purged_entries_total',
      'svc_cache_purges_total',
      'svc_cache_requests_total',
      'svc_cache_store_duration_seconds_bucket',
      'svc_cache_store_errors_total',
      'svc_cache_store_up',
      'svc_cache_stream_errors_total',
      'svc_cache_streams_abandoned_total',
    ]);
    const titles = board.panels.map((panel) => panel.title);
    expect(titles).toContain('Hit ratio by replica');
    expect(titles).toContain('Hit ratio, all replicas');
  });

  it('is a well-formed board: unique panel ids, every panel with a query', () => {
    expect(board.uid).toBe('svc-cache');
    const ids = board.panels.map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const panel of board.panels) expect(panel.targets.length).toBeGreaterThan(0);
  });

  it('keeps purged entries apart by mode: hard ones were removed, soft ones only marked stale (README, Metrics)', () => {
    const targets = board.panels.flatMap((panel) => panel.targets).filter((target) => target.expr.includes('svc_cache_purged_entries_total'));
    expect(targets.length).toBeGreaterThan(0);
    for (const target of targets) {
      expect(target.expr).toMatch(/\bby \([^)]*\bmode\b[^)]*\)/);
      expect(target.legendFormat).toContain('{{mode}}');
    }
  });

  it('gives every panel a built-in panel type and a title', () => {
    const unrenderable = board.panels.filter((panel) => !BUILT_IN_PANEL_TYPES.has(panel.type) || panel.title.trim() === '');
    expect(unrenderable.map(({ id, type, title }) => ({ id, type, title }))).toEqual([]);
  });
});

describe('hit ratio', () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const counted = `svc_cache_requests_total{outcome=~"${HIT_RATIO_OUTCOMES.join('|')}"}`;

  it("README's PromQL divides by the outcomes the page and the API count (README, Metrics)", () => {
    const promql = [...readme.matchAll(/`([^`]*svc_cache_requests_total\{outcome="HIT"\}[^`]*)`/g)].map(([, expr]) => expr!);
    expect(promql.length).toBeGreaterThan(0);
    for (const expr of promql) expect(expr.split(' / ')[1]).toContain(counted);
  });

  it("Grafana's hit-ratio panels divide by the same outcomes", () => {
    const panels = board.panels.filter((panel) => /hit ratio/i.test(panel.title));
    expect(panels.length).toBe(2);
    for (const panel of panels) expect(panel.targets[0]!.expr.split(' / ')[1]).toContain(counted);
  });
});
