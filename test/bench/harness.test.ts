import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as nextTurn, setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { fullGarbageCollection } from '../../bench/children/control.js';
import { runInterleaved, type LoadPlan } from '../../bench/closedLoop.js';
import { grpcFrame } from '../../bench/grpcFrame.js';
import { SCENARIO_GROUPS, parseOptions } from '../../bench/options.js';
import { inScratchDirectory, parseH2loadOutput, readFixedRateLog } from '../../bench/serverThroughput.js';
import { getRequestHeaders } from '../../bench/workload.js';
import { externalProcessorService } from '../../src/extproc/protocol.js';

describe('bench harness', () => {
  it('frames one ext_proc message as gRPC does: flag 0, big-endian length, protobuf bytes', () => {
    const message = getRequestHeaders('{ todos { id } }');
    const frame = grpcFrame(message);
    const method = externalProcessorService()['Process']!;
    expect(frame[0]).toBe(0);
    expect(frame.readUInt32BE(1)).toBe(frame.length - 5);
    expect(method.requestDeserialize(frame.subarray(5))).toEqual(method.requestDeserialize(method.requestSerialize(message)));
  });

  it('reads the duration and the 2xx answers from h2load output', () => {
    const output = [
      'finished in 2.87s, 10452.30 req/s, 22.31MB/s',
      'requests: 30000 total, 30000 started, 30000 done, 29990 succeeded, 10 failed, 10 errored, 0 timeout',
      'status codes: 29990 2xx, 0 3xx, 0 4xx, 0 5xx',
    ].join('\n');
    expect(parseH2loadOutput(output)).toEqual({ seconds: 2.87, succeeded: 29990 });
    expect(parseH2loadOutput(output.replace('2.87s', '870.5ms'))).toEqual({ seconds: 0.8705, succeeded: 29990 });
    expect(() => parseH2loadOutput('connect: Connection refused')).toThrow('unexpected h2load output');
  });

  it("removes h2load's scratch directory, files included, after a run and after one that failed", async () => {
    const directories: string[] = [];
    const answer = await inScratchDirectory(async (directory) => {
      directories.push(directory);
      await writeFile(join(directory, 'frame.bin'), 'x');
      return 'measured';
    });
    const failure = inScratchDirectory(async (directory) => {
      directories.push(directory);
      await writeFile(join(directory, 'fixed-rate.log'), 'x');
      throw new Error('h2load failed');
    });
    await expect(failure).rejects.toThrow('h2load failed');
    expect(answer).toBe('measured');
    expect(directories).toHaveLength(2);
    expect(directories.filter((directory) => existsSync(directory))).toEqual([]);
  });

  it('counts failed and non-200 streams of an h2load log as errors, not those answered during the warm-up', () => {
    const log = readFixedRateLog(
      [
        '1795636150257209\t0\t319709', // answered in the warm-up, closed after it
        '1795636150257211\t200\t6215',
        '1795636150257212\t-1\t1500', // failed
        '1795636150257213\t503\t900',
        '1795636150257215\t200\t4000',
        '',
      ].join('\n'),
    );
    expect([...log.answeredMs]).toEqual([6.215, 4]);
    expect([log.errors, log.closed]).toEqual([2, 5]);
  });

  it('runs every scenario group unless --only names some, and refuses unknown ones', () => {
    const all = parseOptions([]);
    const some = parseOptions(['--only', 'miss,fixed-rate', '--fixed-rate', '500']);
    expect(all !== 'help' && [...all.only]).toEqual([...SCENARIO_GROUPS]);
    expect(some !== 'help' && [...some.only]).toEqual(['miss', 'fixed-rate']);
    expect(some !== 'help' && some.fixedRate).toBe(500);
    expect(() => parseOptions(['--only', 'miss,misses'])).toThrow('unknown scenario group misses');
  });

  it('has each server collect its garbage once, under load, in the unmeasured round of interleaved scenarios', async () => {
    const collections: string[] = [];
    let round = -1;
    const plan = (name: string): LoadPlan => {
      let inFlight = 0;
      return {
        concurrency: 2,
        warmupMs: 5,
        durationMs: 10,
        request: async () => {
          inFlight += 1;
          await sleep(1);
          inFlight -= 1;
        },
        serverCpuMicros: async () => 0,
        collectGarbage: async () => {
          collections.push(`${name} round ${round}, ${inFlight} in flight`);
        },
        signal: new AbortController().signal,
      };
    };
    await runInterleaved({ a: plan('a'), b: plan('b') }, 2, (next) => (round = next));
    expect(collections).toEqual(['a round 0, 2 in flight', 'b round 0, 2 in flight']);
  });

  it('runs a full collection without --expose-gc on the command line, which clears weak references', async () => {
    const weak = ((): WeakRef<object> => new WeakRef({ held: 'nowhere' }))();
    // A WeakRef keeps its target until the job that made it ends; young collections never clear one.
    await nextTurn();
    fullGarbageCollection();
    expect(weak.deref()).toBeUndefined();
  });
});
