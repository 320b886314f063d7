import type { ProcessingRequest } from '../src/extproc/messages.js';
import { PROCESS_METHOD_PATH, externalProcessorService } from '../src/extproc/protocol.js';

/**
 * One ext_proc message as it travels in an HTTP/2 DATA frame: gRPC's length-prefixed message (a
 * compressed flag of 0, the length as 4 bytes big-endian, then the protobuf bytes), serialised with
 * the repo's own proto, so that a client that knows nothing of gRPC (h2load, a bare HTTP/2 stream)
 * can send exactly what Envoy sends.
 */
export function grpcFrame(message: ProcessingRequest): Buffer {
  const payload = externalProcessorService()['Process']!.requestSerialize(message);
  const frame = Buffer.alloc(GRPC_PREFIX_BYTES + payload.length);
  frame.writeUInt32BE(payload.length, 1);
  payload.copy(frame, GRPC_PREFIX_BYTES);
  return frame;
}

/** The request headers of a gRPC call to ext_proc's Process method over h2c. */
export const GRPC_REQUEST_HEADERS = {
  ':method': 'POST',
  ':path': PROCESS_METHOD_PATH,
  'content-type': 'application/grpc',
  te: 'trailers',
} as const;

const GRPC_PREFIX_BYTES = 5;
