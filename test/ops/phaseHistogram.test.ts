import { Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { PhaseHistogram } from '../../src/observability/phaseHistogram.js';

/** PhaseHistogram must read on /metrics exactly as prom-client's Histogram reads for the same observations. */

const BOUNDS = [0.001, 0.01, 0.1];
const PHASES = ['request_headers', 'request_body', 'response_body'] as const;
// Below, on and between the bounds, and above the last, request_body first; response_body is never observed.
const OBSERVED: Array<[(typeof PHASES)[number], number]> = [
  ['request_body', 0.02],
  ['request_headers', 0.0002],
  ['request_headers', 0.001],
  ['request_headers', 0.005],
  ['request_body', 0.1],
  ['request_body', 2.5],
  ['request_headers', 0],
];

function twoRegistries() {
  const reference = new Registry();
  const referenceHistogram = new Histogram({ name: 'x_seconds', help: 'Help text.', labelNames: ['phase'], buckets: BOUNDS, registers: [reference] });
  const fast = new Registry();
  const fastHistogram = new PhaseHistogram('x_seconds', 'Help text.', 'phase', PHASES, BOUNDS).registerOn(fast);
  return { reference, referenceHistogram, fast, fastHistogram };
}

describe('PhaseHistogram', () => {
  it('exposes the text that prom-client exposes for the same observations', async () => {
    const { reference, referenceHistogram, fast, fastHistogram } = twoRegistries();
    for (const [phase, seconds] of OBSERVED) {
      referenceHistogram.observe({ phase }, seconds);
      fastHistogram.observe(phase, seconds);
    }
    expect(await fast.metrics()).toBe(await reference.metrics());
    expect(await fast.getSingleMetricAsString('x_seconds')).toBe(await reference.getSingleMetricAsString('x_seconds'));
    expect(await fast.metrics()).toContain('x_seconds_bucket{le="0.001",phase="request_headers"} 3');
  });

  it('shows nothing for a label value until it is observed, and nothing again after a reset', async () => {
    const { reference, referenceHistogram, fast, fastHistogram } = twoRegistries();
    expect(await fast.metrics()).toBe(await reference.metrics());
    fastHistogram.observe('response_body', 0.02);
    referenceHistogram.observe({ phase: 'response_body' }, 0.02);
    fast.resetMetrics();
    reference.resetMetrics();
    expect(await fast.metrics()).toBe(await reference.metrics());
    expect(await fast.metrics()).not.toContain('response_body');
  });

  it('refuses a label value it was not made with, and a time that is not a finite number', () => {
    const { fastHistogram } = twoRegistries();
    expect(() => fastHistogram.observe('response_trailers' as never, 0.1)).toThrow(RangeError);
    expect(() => fastHistogram.observe('request_body', Number.NaN)).toThrow(TypeError);
  });
});
