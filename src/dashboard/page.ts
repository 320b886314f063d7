import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

export interface PageAsset {
  contentType: string;
  body: Buffer;
}

/**
 * The page and everything it loads, read once at start and served from memory: the page works
 * without network access beyond the admin port (no CDN). uPlot (charts) comes from its npm
 * package's dist files; the page's own HTML, script and styles live in ./assets.
 */
const ASSETS: ReadonlyMap<string, PageAsset> = loadAssets();

export function pageAsset(path: string): PageAsset | undefined {
  return ASSETS.get(path);
}

/** The total size of the page's assets, in bytes (README, Dashboard). */
export function pageSizeBytes(): number {
  let total = 0;
  for (const asset of ASSETS.values()) total += asset.body.length;
  return total;
}

function loadAssets(): Map<string, PageAsset> {
  const own = (name: string): Buffer => readFileSync(new URL(`./assets/${name}`, import.meta.url));
  const uplot = (name: string): Buffer => readFileSync(createRequire(import.meta.url).resolve(`uplot/dist/${name}`));
  return new Map([
    ['/', { contentType: 'text/html; charset=utf-8', body: own('index.html') }],
    ['/dashboard/app.js', { contentType: 'text/javascript; charset=utf-8', body: own('app.js') }],
    ['/dashboard/app.css', { contentType: 'text/css; charset=utf-8', body: own('app.css') }],
    ['/dashboard/uplot.js', { contentType: 'text/javascript; charset=utf-8', body: uplot('uPlot.iife.min.js') }],
    ['/dashboard/uplot.css', { contentType: 'text/css; charset=utf-8', body: uplot('uPlot.min.css') }],
  ]);
}
