import * as grpc from '@grpc/grpc-js';
import type { ProcessingRequest, ProcessingResponse } from '../../src/extproc/messages.js';
import { MAX_GRPC_MESSAGE_BYTES, externalProcessorService } from '../../src/extproc/protocol.js';
import { adoptStreamTables } from '../../src/extproc/streamTable.js';
import { ORIGIN_CONTENT_TYPE, ORIGIN_RESPONSE_BODY } from '../workload.js';
import { stopPretenuring } from '../../src/sidecar/garbageCollection.js';
import { answerHarness } from './control.js';

/**
 * The floor: an ext_proc server in the sidecar's runtime, on the same gRPC library and proto, that
 * decides nothing. In `hit` mode it answers a request body, or the headers of a request without
 * one (a GET), with a constant immediate response, as a HIT is answered; in `continue` mode it lets every message through, as a pass-through is. What
 * the sidecar costs beyond it is the cost of deciding.
 */

type FloorMode = 'hit' | 'continue';

const HIT_ANSWER: ProcessingResponse = {
  immediate_response: {
    status: { code: 200 },
    headers: {
      set_headers: [
        { header: { key: 'content-type', raw_value: Buffer.from(ORIGIN_CONTENT_TYPE) } },
        { header: { key: 'svc-cache', raw_value: Buffer.from('HIT') } },
        { header: { key: 'age', raw_value: Buffer.from('0') } },
      ],
    },
    body: ORIGIN_RESPONSE_BODY,
  },
};

// The sidecar's runtime, V8 settings included (docs/performance.md, Garbage collection).
stopPretenuring();

const mode = process.argv[2];
if (mode !== 'hit' && mode !== 'continue') throw new Error('usage: floor.ts hit|continue');

const server = new grpc.Server({
  'grpc.max_receive_message_length': MAX_GRPC_MESSAGE_BYTES,
  'grpc.max_send_message_length': MAX_GRPC_MESSAGE_BYTES,
});
server.addService(externalProcessorService(), {
  Process: (call: grpc.ServerDuplexStream<ProcessingRequest, ProcessingResponse>) => {
    call.on('data', (message: ProcessingRequest) => call.write(answerTo(message, mode)));
    call.on('end', () => call.end());
    // Envoy ends every stream with a cancel after its half-close: nothing to do about it.
    call.on('error', () => undefined);
  },
});
const port = await new Promise<number>((resolve, reject) =>
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) => (error ? reject(error) : resolve(bound))),
);
// The sidecar's HTTP/2 stream table too: a floor that kept Node's own map would pay a garbage
// collection cost the sidecar does not (docs/performance.md, Garbage collection).
adoptStreamTables(server, (reason) => {
  console.error(`floor: HTTP/2 stream table not adopted (${reason})`);
  process.exit(1);
});
answerHarness({ port, close: async () => server.forceShutdown() });

function answerTo(message: ProcessingRequest, floorMode: FloorMode): ProcessingResponse {
  if (floorMode === 'hit' && (message.request === 'request_body' || message.request_headers?.end_of_stream)) return HIT_ANSWER;
  switch (message.request) {
    case 'request_headers':
      return { request_headers: { response: {} } };
    case 'request_body':
      return { request_body: { response: {} } };
    case 'response_headers':
      return { response_headers: { response: {} } };
    case 'response_body':
      return { response_body: { response: {} } };
    case 'request_trailers':
      return { request_trailers: {} };
    default:
      return { response_trailers: {} };
  }
}
