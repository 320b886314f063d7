import http from 'node:http';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { continueResponse, setHeader } from '../support/fakeProcessor.js';
import { header, send, startRig, type Rig } from './harness.js';

const REQUESTS = 1000;

let rig: Rig;
let agent: http.Agent;

beforeAll(async () => {
  rig = await startRig({ filter: { messageTimeoutMs: 10_000, maxMessageTimeoutMs: 10_000 } });
  agent = new http.Agent({ keepAlive: true, maxSockets: REQUESTS });
});

afterAll(async () => {
  agent.destroy();
  await rig.close();
});

it(`${REQUESTS} requests hold ${REQUESTS} Process streams open at once on one channel`, async () => {
  let open = 0;
  let mostOpen = 0;
  let releaseAll: () => void = () => undefined;
  const allOpen = new Promise<void>((resolve) => (releaseAll = resolve));
  // Nothing is answered until every request has its stream open: all of them are concurrent.
  rig.processor.use(async (stream) => {
    open++;
    mostOpen = Math.max(mostOpen, open);
    if (open === REQUESTS) releaseAll();
    for (let request = await stream.next(); request; request = await stream.next()) {
      if (request.request === 'request_headers') await allOpen;
      stream.send(
        request.request === 'response_headers'
          ? continueResponse(request, { header_mutation: { set_headers: [setHeader('svc-cache', 'MISS')] } })
          : continueResponse(request),
      );
    }
    open--;
  });

  const responses = await Promise.all(
    Array.from({ length: REQUESTS }, (_, index) =>
      index % 2 === 0
        ? send(rig.gateway.url, { path: `/graphql?n=${index}`, agent })
        : send(rig.gateway.url, { method: 'POST', path: `/graphql?n=${index}`, body: `{"n":${index}}`, agent }),
    ),
  );

  expect(mostOpen).toBe(REQUESTS);
  // Each response that is not the origin's answer marked MISS, with what the gateway recorded for it.
  const failures = responses.flatMap((response, index) => {
    if (response.status === 200 && header(response, 'svc-cache') === 'MISS') return [];
    const record = rig.gateway.stats.requests.find((each) => each.path === `/graphql?n=${index}`);
    const messages = record?.processorMessages.map((message) => `${message.direction}:${message.type}`).join(',');
    return [
      `#${index} ${record?.method ?? '?'}: ${response.status} svc-cache=${header(response, 'svc-cache') ?? '-'} ` +
        `body=${JSON.stringify(response.text.slice(0, 120))} details=${record?.responseCodeDetails ?? '?'} ext_proc=${messages ?? '?'}`,
    ];
  });
  expect(failures, `${failures.length} failed; counters ${JSON.stringify(rig.gateway.stats.counters)}`).toEqual([]);
  expect(rig.origin.received.filter((request) => request.method === 'POST').length).toBe(REQUESTS / 2);
  expect(rig.gateway.stats.counters).toMatchObject({
    streams_started: REQUESTS,
    message_timeouts: 0,
    streams_failed: 0,
    failure_mode_allowed: 0,
  });
  expect(new Set(rig.gateway.stats.requests.map((request) => request.requestId)).size).toBe(REQUESTS);
}, 30_000);
