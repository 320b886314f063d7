import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import type { HeaderValueOption, ProcessingResponse } from '../../src/extproc/messages.js';
import { externalProcessorService } from '../../src/extproc/protocol.js';
import { answeringProcessorService, processingResponseEncoder } from '../../src/extproc/responseEncoding.js';

/** The sidecar's answers must be the very bytes proto-loader writes, whatever it keeps between them. */

const protoLoaderSerialize = externalProcessorService()['Process']!.responseSerialize as (value: ProcessingResponse) => Buffer;

const option = (key: string, value: string, append = false): HeaderValueOption => ({
  header: { key, raw_value: Buffer.from(value, 'latin1') },
  ...(append ? { append: { value: true } } : {}),
});

const hit = (body: Buffer, age: string, options: HeaderValueOption[] = [option('content-type', 'application/json'), option('svc-cache', 'HIT')]): ProcessingResponse => ({
  immediate_response: { status: { code: 200 }, headers: { set_headers: [...options, option('age', age)] }, body },
});

describe('processingResponseEncoder', () => {
  it('writes a HIT of one body as proto-loader does, as its age and headers change', () => {
    const encode = processingResponseEncoder(protoLoaderSerialize);
    const body = Buffer.from('{"data":{"todos":[]}}');
    const answers = [
      hit(body, '0'),
      hit(body, '1'),
      hit(body, '12345'),
      hit(body, '2', [option('content-type', 'application/graphql-response+json'), option('svc-cache', 'HIT')]),
      hit(body, '2', [option('content-type', 'application/json'), option('set-cookie', 'a=1'), option('set-cookie', 'b=2', true)]),
      hit(body, '3', []),
      hit(body, '3'),
    ];
    for (const answer of answers) expect(encode(answer).equals(protoLoaderSerialize(answer))).toBe(true);
  });

  it('writes immediate responses of any status, headers and body as proto-loader does', () => {
    const encode = processingResponseEncoder(protoLoaderSerialize);
    const latin1 = fc.string({ unit: fc.integer({ min: 0, max: 255 }).map((code) => String.fromCharCode(code)), maxLength: 20 });
    const anyOption = fc.record(
      {
        header: fc.record({ key: latin1, raw_value: latin1.map((value) => Buffer.from(value, 'latin1')), value: latin1 }, { requiredKeys: ['key'] }),
        append: fc.record({ value: fc.boolean() }, { requiredKeys: [] }),
        append_action: fc.integer({ min: 0, max: 3 }),
        keep_empty_value: fc.boolean(),
      },
      { requiredKeys: [] },
    );
    const bodies = [Buffer.alloc(0), Buffer.from('{}'), Buffer.alloc(70_000, 'x')];
    const anyAnswer = fc.record({
      body: fc.constantFrom(...bodies),
      status: fc.option(fc.record({ code: fc.integer({ min: 0, max: 999 }) }, { requiredKeys: [] }), { nil: undefined }),
      headers: fc.option(fc.record({ set_headers: fc.array(anyOption, { maxLength: 6 }) }, { requiredKeys: [] }), { nil: undefined }),
    });
    fc.assert(
      fc.property(fc.array(anyAnswer, { minLength: 1, maxLength: 8 }), (answers) => {
        for (const fields of answers) {
          const answer: ProcessingResponse = { immediate_response: withoutUndefined(fields) };
          expect(encode(answer).equals(protoLoaderSerialize(answer))).toBe(true);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('hands every other answer to proto-loader', () => {
    const fallback = vi.fn(protoLoaderSerialize);
    const encode = processingResponseEncoder(fallback);
    const body = Buffer.from('{}');
    const others: ProcessingResponse[] = [
      { request_headers: { response: {} } },
      { immediate_response: { status: { code: 400 }, body, grpc_status: { status: 3 } } },
      { immediate_response: { status: { code: 400 }, body, details: 'no' } },
      { immediate_response: { status: { code: 400 }, headers: { set_headers: [option('a', 'b')], remove_headers: ['c'] }, body } },
      { immediate_response: { status: { code: 400 } } },
      { ...hit(body, '0'), override_message_timeout: { seconds: 5 } },
    ];
    for (const answer of others) expect(encode(answer).equals(protoLoaderSerialize(answer))).toBe(true);
    expect(fallback).toHaveBeenCalledTimes(others.length);
  });

  it('is the serializer the sidecar answers with', () => {
    const body = Buffer.from('{}');
    const serialize = answeringProcessorService()['Process']!.responseSerialize as (value: ProcessingResponse) => Buffer;
    expect(serialize(hit(body, '7')).equals(protoLoaderSerialize(hit(body, '7')))).toBe(true);
    expect(answeringProcessorService()['Process']!.path).toBe(externalProcessorService()['Process']!.path);
  });
});

function withoutUndefined<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, field]) => field !== undefined)) as T;
}
