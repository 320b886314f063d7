import { existsSync, mkdirSync } from 'node:fs';
import puppeteer, { type Browser, type Page } from 'puppeteer-core';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { postGraphQL } from '../support/origin.js';
import { startStack, type Stack } from '../support/stack.js';

/**
 * The dashboard page in headless Chromium against a running stack (client -> gateway -> sidecar
 * -> demo origin). Where no Chromium can be found the tests skip and say why; `.ci/run` installs
 * Debian's `chromium`. The screenshot is written to test-artifacts/ (gitignored).
 */

const CHROMIUM = [process.env.CHROMIUM_PATH, '/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome'].find(
  (path): path is string => path !== undefined && existsSync(path),
);
if (!CHROMIUM) console.log('dashboard browser tests skipped: no Chromium found (set CHROMIUM_PATH or install Debian\'s chromium)');

const TOKEN = 'dashboard-browser-test-token';
const TODOS = 'query Todos { todos { id title } }';
const PRODUCTS = 'query Products { products { sku name } }';
const ARTIFACTS = new URL('../../test-artifacts/', import.meta.url);

let stack: Stack;
let browser: Browser;
let page: Page;
let admin: string;
const consoleErrors: string[] = [];

describe.skipIf(!CHROMIUM)('dashboard page in Chromium', () => {
  beforeAll(async () => {
    stack = await startStack({ purge: { tokens: [TOKEN] }, keyFields: { types: { Product: ['sku'] } } });
    admin = `http://127.0.0.1:${stack.sidecar.adminPort}`;
    for (const query of [TODOS, TODOS, TODOS, TODOS, PRODUCTS, PRODUCTS, 'query { time }']) await postGraphQL(stack.url, { query });
    await postGraphQL(stack.url, { query: 'mutation { addTodo(title: "from the browser test") { id } }' });
    await requestsSeen(8);
    browser = await puppeteer.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu'] });
    page = await browser.newPage();
    await page.setViewport({ width: 1280, height: 900 });
    page.on('console', (message) => {
      if (message.type() === 'error') consoleErrors.push(message.text());
    });
    page.on('pageerror', (error) => consoleErrors.push(String(error)));
    await page.goto(`${admin}/`, { waitUntil: 'load' });
    await page.waitForSelector('body[data-refreshed]');
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await stack?.close();
  });

  it('loads with no console errors and says it shows one replica', async () => {
    expect(consoleErrors).toEqual([]);
    const replica = await page.$eval('.replica', (node) => node.textContent ?? '');
    expect(replica).toContain("one replica's view");
    expect(replica).toContain(stack.sidecar.dashboard.replica);
  });

  it('charts the traffic the test sent, with the hit ratio /metrics gives', async () => {
    const chart = await page.$eval('#chart-outcomes', (node) => ({
      total: Number((node as HTMLElement).dataset.total),
      canvases: node.querySelectorAll('canvas').length,
    }));
    expect(chart).toEqual({ total: 8, canvases: 1 });
    expect(await page.$eval('#chart-ratio', (node) => Number((node as HTMLElement).dataset.total))).toBeGreaterThan(0);
    const ratio = await page.$eval('#hit-ratio', (node) => Number((node as HTMLElement).dataset.ratio));
    expect(ratio).toBeCloseTo(await hitRatioFromMetrics(), 10);
    expect(ratio).toBeCloseTo(4 / 8, 10);
  });

  it('lists the test operations in the top-operations table', async () => {
    const rows = await page.$$eval('#operations tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    expect(rows.map((row) => [row[0], row[2], row[3]])).toEqual([
      ['Todos', '4', '75.0 %'],
      ['Products', '2', '50.0 %'],
      ['(anonymous)', '1', '0.0 %'],
      ['(anonymous)', '1', '0.0 %'],
    ]);
  });

  it('refuses a wrong token', async () => {
    await page.type('#token', 'not-the-token');
    await page.click('#token-form button[type=submit]');
    await page.waitForFunction(() => document.getElementById('token-state')!.textContent!.startsWith('Refused'));
    expect(await page.$eval('#purge-submit', (button) => (button as HTMLButtonElement).disabled)).toBe(true);
    expect(await page.evaluate(() => sessionStorage.getItem('svc-cache-purge-token'))).toBeNull();
  });

  it('purges from the console, so the next query is a MISS, and lists the purge', async () => {
    expect((await postGraphQL(stack.url, { query: TODOS })).headers['svc-cache']).toBe('HIT');
    await page.type('#token', TOKEN);
    await page.click('#token-form button[type=submit]');
    await page.waitForFunction(() => document.getElementById('token-state')!.textContent === 'Token set for this tab.');
    await page.select('#purge-kind', 'type');
    await page.type('#purge-target', 'Todo');
    await page.click('#purge-submit');
    await page.waitForFunction(() => document.getElementById('purge-result')!.textContent!.includes('_purgeTodo'));
    expect(await page.$eval('#purge-result', (node) => node.textContent)).toBe('HTTP 200\n{\n  "data": {\n    "_purgeTodo": true\n  }\n}');
    expect((await postGraphQL(stack.url, { query: TODOS })).headers['svc-cache']).toBe('MISS');
    // The test's mutation invalidated first; the purge is listed above it.
    await page.waitForFunction(() => document.querySelectorAll('#changes tbody tr').length === 2);
    const changes = await page.$$eval('#changes tbody tr', (trs) => trs.map((tr) => [...tr.children].map((td) => td.textContent)));
    expect(changes.map((row) => row.slice(1, 8))).toEqual([
      ['purge', '_purgeTodo', 't:Todo', '1', '0', 'hard', 'ok'],
      ['invalidation', 'mutationPolicy Entity', '2 tags', '0', '0', 'hard', 'ok'],
    ]);

    await page.select('#purge-mode', 'soft');
    await page.$eval('#purge-result', (node) => (node.textContent = ''));
    await page.click('#purge-submit');
    await page.waitForFunction(() => document.getElementById('purge-result')!.textContent!.includes('_purgeTodo'));
    await page.waitForFunction(() => document.querySelectorAll('#changes tbody tr').length === 3);
    const soft = await page.$eval('#changes tbody tr', (tr) => [...tr.children].map((td) => td.textContent));
    expect(soft.slice(1, 8)).toEqual(['purge', '_purgeTodo', 't:Todo', '0', '1', 'soft', 'ok']);
  });

  // The new-user audit: keys were written as numbers when all digits, which a String key field
  // refuses, and `007` is no GraphQL literal; every key now goes as a string.
  it('purges a type by key, whatever the keys look like', async () => {
    await postGraphQL(stack.url, { query: PRODUCTS });
    expect((await postGraphQL(stack.url, { query: PRODUCTS })).headers['svc-cache']).toBe('HIT');
    await page.select('#purge-kind', 'ids');
    await page.select('#purge-mode', 'hard');
    await page.$eval('#purge-target', (input) => ((input as HTMLInputElement).value = 'Product'));
    await page.$eval('#purge-key', (input) => ((input as HTMLInputElement).value = 'sku'));
    await page.$eval('#purge-ids', (input) => ((input as HTMLInputElement).value = '007, 12345, sku-1'));
    await page.$eval('#purge-result', (node) => (node.textContent = ''));
    await page.click('#purge-submit');
    await page.waitForFunction(() => document.getElementById('purge-result')!.textContent!.includes('_purgeType'));
    expect(await page.$eval('#purge-result', (node) => node.textContent)).toBe('HTTP 200\n{\n  "data": {\n    "_purgeType": true\n  }\n}');
    expect((await postGraphQL(stack.url, { query: PRODUCTS })).headers['svc-cache']).toBe('MISS');
  });

  it('inspects a query with the token, and writes a screenshot', async () => {
    await page.type('#inspect-query', PRODUCTS);
    // The key holds the host the clients named (README, Cache key).
    await page.type('#inspect-headers', JSON.stringify({ host: new URL(stack.url).host }));
    await page.click('#inspect-submit');
    await page.waitForFunction(() => document.getElementById('inspect-result')!.textContent!.includes('cachedNow'));
    const result = await page.$eval('#inspect-result', (node) => node.textContent ?? '');
    expect(JSON.parse(result.slice(result.indexOf('\n') + 1))).toMatchObject({ decision: 'HIT', cachedNow: true, scope: 'PUBLIC' });
    mkdirSync(ARTIFACTS, { recursive: true });
    const screenshot = new URL('dashboard.png', ARTIFACTS);
    await page.screenshot({ path: screenshot.pathname as `${string}.png`, fullPage: true });
    expect(existsSync(screenshot)).toBe(true);
    expect(consoleErrors).toEqual([]);
  });
});

/** HIT / (HIT + MISS + PASS) from the sidecar's own /metrics. */
async function hitRatioFromMetrics(): Promise<number> {
  const text = await (await fetch(`${admin}/metrics`)).text();
  const count = (outcome: string): number =>
    Number(new RegExp(`^svc_cache_requests_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
  return count('HIT') / (count('HIT') + count('MISS') + count('PASS'));
}

async function requestsSeen(count: number): Promise<void> {
  await vi.waitFor(async () => {
    const summary = (await (await fetch(`${admin}/api/summary`)).json()) as { lastHour: Record<string, number> };
    const { HIT = 0, MISS = 0, PASS = 0, ERROR = 0 } = summary.lastHour;
    expect(HIT + MISS + PASS + ERROR).toBe(count);
  });
}
