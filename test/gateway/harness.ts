import type { ProcessingRequest } from '../../src/extproc/messages.js';
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startGateway, type Gateway, type GatewayOptions } from '../../src/gateway/index.js';
import type { ExtProcCounters } from '../../src/gateway/stats.js';
import { answerEach, continueResponse, startFakeProcessor, type FakeProcessor } from '../support/fakeProcessor.js';
import { useStarted } from '../support/lifecycle.js';

/** A request as the origin received it. */
export interface OriginRequest {
  method: string;
  path: string;
  /** Lower-case names, in arrival order. */
  headers: [string, string][];
  body: Buffer;
}

export type OriginHandler = (request: OriginRequest, response: ServerResponse) => void;

export interface Origin {
  url: string;
  readonly received: OriginRequest[];
  use(handler: OriginHandler): void;
  close(): Promise<void>;
}

/** A tiny real origin on an ephemeral port; by default it answers 200 `{"data":{}}` as JSON. */
export async function startOrigin(handler: OriginHandler = jsonOrigin('{"data":{}}')): Promise<Origin> {
  let current = handler;
  const received: OriginRequest[] = [];
  const server = http.createServer((request: IncomingMessage, response: ServerResponse) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const seen: OriginRequest = {
        method: request.method ?? '',
        path: request.url ?? '',
        headers: pairs(request.rawHeaders),
        body: Buffer.concat(chunks),
      };
      received.push(seen);
      current(seen, response);
    });
  });
  // The gateway opens a connection per concurrent request, up to a thousand at once: with Node's default
  // accept queue of 511 the kernel drops SYNs past it, the retransmit comes a second later, and a busy event
  // loop makes that miss the router's 2 s connect timeout (a 503 "connection timeout").
  await new Promise<void>((resolve) => server.listen({ port: 0, host: '127.0.0.1', backlog: 4096 }, resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    received,
    use: (next) => {
      current = next;
    },
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

export function jsonOrigin(body: string, status = 200): OriginHandler {
  return (_request, response) => {
    response.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    response.end(body);
  };
}

export interface ClientResponse {
  status: number;
  /** Lower-case names, in arrival order. */
  headers: [string, string][];
  body: Buffer;
  text: string;
}

export interface ClientRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** Sends the body with Transfer-Encoding: chunked in these pieces (an empty list sends an empty chunked body). */
  chunks?: (string | Buffer)[];
  agent?: http.Agent;
}

/** A plain HTTP/1.1 request with full control over framing; resolves with the raw response. */
export function send(baseUrl: string, options: ClientRequest = {}): Promise<ClientResponse> {
  const url = new URL(options.path ?? '/graphql', baseUrl);
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...options.headers };
    if (options.body !== undefined) headers['content-length'] = String(Buffer.byteLength(options.body));
    if (options.chunks !== undefined) headers['transfer-encoding'] = 'chunked';
    const request = http.request(
      {
        method: options.method ?? 'GET',
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        headers,
        agent: options.agent ?? false,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: response.statusCode ?? 0, headers: pairs(response.rawHeaders), body, text: body.toString() });
        });
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    if (options.chunks !== undefined) {
      for (const chunk of options.chunks) if (Buffer.byteLength(chunk) > 0) request.write(chunk);
      request.end();
    } else {
      request.end(options.body);
    }
  });
}

export function header(response: { headers: [string, string][] }, name: string): string | undefined {
  return response.headers.find(([key]) => key === name)?.[1];
}

export function headerNames(response: { headers: [string, string][] }): string[] {
  return response.headers.map(([key]) => key);
}

function pairs(raw: string[]): [string, string][] {
  const result: [string, string][] = [];
  for (let index = 0; index + 1 < raw.length; index += 2) result.push([(raw[index] ?? '').toLowerCase(), raw[index + 1] ?? '']);
  return result;
}

/** An origin, a fake processor and a gateway in front of both, all on ephemeral ports. */
export interface Rig {
  origin: Origin;
  processor: FakeProcessor;
  gateway: Gateway;
  /** Starts one more gateway on the same origin and processor with other settings. */
  gatewayWith(options: Partial<GatewayOptions>): Promise<Gateway>;
  /** How much each counter moved since `start` was taken. */
  countersSince(start: ExtProcCounters, gateway?: Gateway): Partial<ExtProcCounters>;
  /** The Process stream the fake processor saw last. */
  lastStream(): FakeProcessor['streams'][number];
  close(): Promise<void>;
}

/** The oneof cases of the messages one stream carried, in order. */
export function kinds(requests: ProcessingRequest[]): string[] {
  return requests.map((request) => request.request ?? 'none');
}

export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

export async function startRig(options: Partial<GatewayOptions> = {}): Promise<Rig> {
  const origin = await startOrigin();
  const processor = await startFakeProcessor();
  const extraGateways: Gateway[] = [];
  const gatewayWith = (overrides: Partial<GatewayOptions>): Promise<Gateway> =>
    startGateway({ processor: processor.address, origin: origin.url, port: 0, ...options, ...overrides });
  const gateway = await gatewayWith({});
  return {
    origin,
    processor,
    gateway,
    gatewayWith: async (overrides) => {
      const extra = await gatewayWith(overrides);
      extraGateways.push(extra);
      return extra;
    },
    countersSince: (start, target = gateway) => {
      const moved: Partial<ExtProcCounters> = {};
      for (const [name, value] of Object.entries(target.stats.counters) as [keyof ExtProcCounters, number][]) {
        if (value !== start[name]) moved[name] = value - start[name];
      }
      return moved;
    },
    lastStream: () => {
      const stream = processor.streams.at(-1);
      if (!stream) throw new Error('no stream');
      return stream;
    },
    close: async () => {
      await Promise.all([gateway, ...extraGateways].map((each) => each.close()));
      await Promise.all([processor.close(), origin.close()]);
    },
  };
}

/**
 * One rig for the calling file or describe block: started in beforeAll (`options` for its gateway),
 * closed in afterAll with any gateway `gatewayWith` added, and set back before each test (beforeEach):
 * the processor answers every message with CONTINUE and the origin answers 200 with `originBody`, as
 * a fresh rig does, so the script or origin one test sets never answers the next.
 *
 * Returns a getter for the started rig: call it in tests and hooks; it throws before the rig started.
 */
export function useRig(options: Partial<GatewayOptions> = {}, { originBody = '{"data":{}}' }: { originBody?: string } = {}): () => Rig {
  return useStarted({
    name: 'useRig',
    start: () => startRig(options),
    close: (rig) => rig.close(),
    reset: (rig) => {
      rig.processor.use(answerEach((request) => continueResponse(request)));
      rig.origin.use(jsonOrigin(originBody));
    },
  });
}
