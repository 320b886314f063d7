import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { brotliCompressSync, brotliDecompressSync, constants, gunzipSync, gzipSync } from 'node:zlib';
import { startDemoOrigin } from '../src/demo/origin.js';
import { ORIGIN_RESPONSE_BODY, responseBodyOfBytes } from './workload.js';

/**
 * `npx tsx bench/compression.ts`: how well gzip and brotli levels compress typical GraphQL JSON
 * answers, and what decompressing them costs (README, Performance). Bodies: the demo origin's answers
 * (the small end), the bench's population body and answers of the same shape at other sizes, and
 * answers of varied records (ids, names, e-mails, timestamps) that compress less well. Each figure
 * is the median of repeated runs of node:zlib's sync API on this process's one thread.
 */

interface Setting {
  name: string;
  compress: (body: Buffer) => Buffer;
  decompress: (body: Buffer) => Buffer;
}

const SETTINGS: readonly Setting[] = [
  ...[1, 6, 9].map((level) => ({
    name: `gzip ${level}`,
    compress: (body: Buffer) => gzipSync(body, { level }),
    decompress: (body: Buffer) => gunzipSync(body),
  })),
  ...[1, 4, 6, 9, 11].map((quality) => ({
    name: `br ${quality}`,
    compress: (body: Buffer) =>
      brotliCompressSync(body, {
        params: { [constants.BROTLI_PARAM_QUALITY]: quality, [constants.BROTLI_PARAM_MODE]: constants.BROTLI_MODE_TEXT, [constants.BROTLI_PARAM_SIZE_HINT]: body.length },
      }),
    decompress: (body: Buffer) => brotliDecompressSync(body),
  })),
];

const DEMO_QUERIES: readonly string[] = [
  '{ todo(id: "1") { id title } }',
  '{ todos { id title done author { id name } } }',
  '{ users { id name email todos { id title done } } }',
  '{ search(text: "e") { __typename ... on Todo { id title } ... on User { id name } ... on Product { sku name price } } }',
];

const WORDS = 'alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa quebec romeo sierra tango uniform victor whiskey xray yankee zulu'.split(' ');

const bodies = await typicalBodies();
const loadAverage = loadavg()[0]!;
const rows: string[][] = [];
for (const setting of SETTINGS) {
  let original = 0;
  let compressed = 0;
  let compressMicros = 0;
  let decompressMicros = 0;
  for (const body of bodies) {
    const encoded = setting.compress(body);
    if (!setting.decompress(encoded).equals(body)) throw new Error(`${setting.name} does not round-trip`);
    original += body.length;
    compressed += encoded.length;
    compressMicros += medianMicros(() => setting.compress(body));
    decompressMicros += medianMicros(() => setting.decompress(encoded));
  }
  const small = bodies.filter((body) => body.length < 1024);
  const smallRatio = small.reduce((sum, body) => sum + setting.compress(body).length, 0) / small.reduce((sum, body) => sum + body.length, 0);
  rows.push([
    setting.name,
    (compressed / original).toFixed(3),
    smallRatio.toFixed(3),
    ((compressMicros / original) * 1024).toFixed(2),
    ((decompressMicros / original) * 1024).toFixed(2),
  ]);
}

process.stdout.write(
  `${bodies.length} bodies, ${Math.min(...bodies.map((body) => body.length))} to ${Math.max(...bodies.map((body) => body.length))} bytes, ` +
    `${bodies.reduce((sum, body) => sum + body.length, 0)} in all; load average ${loadAverage.toFixed(2)}; Node ${process.version}\n\n` +
    '| setting | size ratio, all | size ratio, bodies < 1 KB | compress µs per KB | decompress µs per KB |\n|---|---|---|---|---|\n' +
    rows.map((row) => `| ${row.join(' | ')} |`).join('\n') +
    '\n\nPer body, with the chosen default (gzip 6) and brotli 6:\n\n' +
    '| body bytes | gzip 6 bytes | gunzip µs | br 6 bytes | br 6 decompress µs |\n|---|---|---|---|---|\n' +
    bodies
      .map((body) => {
        const [gzip, brotli] = [SETTINGS.find((s) => s.name === 'gzip 6')!, SETTINGS.find((s) => s.name === 'br 6')!];
        const [gzipped, brotlied] = [gzip.compress(body), brotli.compress(body)];
        const cells = [body.length, gzipped.length, medianMicros(() => gzip.decompress(gzipped)).toFixed(1), brotlied.length, medianMicros(() => brotli.decompress(brotlied)).toFixed(1)];
        return `| ${cells.join(' | ')} |`;
      })
      .join('\n') +
    '\n',
);

/** The demo origin's answers to a few queries, then bench-shaped and varied answers from 512 B to 50 KB. */
async function typicalBodies(): Promise<Buffer[]> {
  const origin = await startDemoOrigin({ port: 0 });
  try {
    const demo = await Promise.all(
      DEMO_QUERIES.map(async (query) => {
        const response = await fetch(origin.url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ query }) });
        return Buffer.from(await response.arrayBuffer());
      }),
    );
    const sizes = [512, 8 * 1024, 50 * 1024];
    return [...demo, ORIGIN_RESPONSE_BODY, ...sizes.map((bytes) => responseBodyOfBytes(bytes)), ...[...sizes, 2048].map((bytes) => variedBodyOfBytes(bytes))];
  } finally {
    await origin.close();
  }
}

/** Records as a real API answers them: opaque ids, names, e-mails, timestamps, from a fixed seed. */
function variedBodyOfBytes(targetBytes: number): Buffer {
  let seed = targetBytes;
  const random = (): number => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const word = (): string => WORDS[Math.floor(random() * WORDS.length)]!;
  const users: unknown[] = [];
  const encoded = (): Buffer => Buffer.from(JSON.stringify({ data: { users } }));
  while (encoded().length < targetBytes) {
    const name = `${word()} ${word()}`;
    users.push({
      __typename: 'User',
      id: Math.floor(random() * 2 ** 48).toString(36),
      name,
      email: `${name.replace(' ', '.')}${Math.floor(random() * 1000)}@example.com`,
      createdAt: new Date(1.6e12 + Math.floor(random() * 1e11)).toISOString(),
      score: Math.round(random() * 10000) / 100,
      tags: [word(), word()],
    });
  }
  return encoded();
}


/** Median time of one call, over enough calls to last about 40 ms. */
function medianMicros(work: () => unknown): number {
  const samples: number[] = [];
  const until = performance.now() + 40;
  while (samples.length < 5 || (performance.now() < until && samples.length < 2000)) {
    const start = performance.now();
    work();
    samples.push((performance.now() - start) * 1000);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)]!;
}
