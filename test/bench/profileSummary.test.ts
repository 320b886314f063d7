import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { summariseProfile } from '../../bench/profileSummary.js';

const REPOSITORY = new URL('../../', import.meta.url).href;
const scratch = mkdtempSync(join(tmpdir(), 'svc-cache-profile-'));
afterAll(() => rmSync(scratch, { recursive: true, force: true }));

describe('summariseProfile', () => {
  it("charges the build's and the sources' functions to svc-cache, and package code to its package", async () => {
    // 4 busy samples: a package function called by the built sidecar, a built function itself, a
    // source function (tsx), and one idle sample left out.
    const frame = (functionName: string, url: string, lineNumber = 0) => ({ functionName, url, lineNumber });
    const profile = {
      nodes: [
        { id: 1, callFrame: frame('(root)', ''), children: [2, 6] },
        { id: 2, callFrame: frame('processTicksAndRejections', 'node:internal/process/task_queues', 65), children: [3, 5] },
        { id: 3, callFrame: frame('handle', `${REPOSITORY}dist/extproc/stream.js`, 55), children: [4] },
        { id: 4, callFrame: frame('encode', `${REPOSITORY}node_modules/protobufjs/src/writer.js`, 9) },
        { id: 5, callFrame: frame('decide', `${REPOSITORY}src/engine/engine.ts`, 99) },
        { id: 6, callFrame: frame('(idle)', '') },
      ],
      samples: [4, 3, 5, 6],
    };
    const file = join(scratch, 'profile.cpuprofile');
    writeFileSync(file, JSON.stringify(profile));

    const summary = await summariseProfile(file);

    expect(summary.samples).toBe(3);
    expect(summary.areas).toEqual([
      { area: 'protobufjs', percent: 33.3 },
      { area: 'svc-cache dist/extproc', percent: 33.3 },
      { area: 'svc-cache src/engine', percent: 33.3 },
    ]);
    expect(summary.svcCacheInclusiveTop).toEqual([
      { function: 'handle dist/extproc/stream.js:56', percent: 66.7 },
      { function: 'decide src/engine/engine.ts:100', percent: 33.3 },
    ]);
  });
});
