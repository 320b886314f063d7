import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/**
 * Loads this repo's wire-compatible subset of Envoy's ext_proc API. The service's full name forms
 * the HTTP/2 `:path` (`/envoy.service.ext_proc.v3.ExternalProcessor/Process`), so it must be Envoy's.
 */
export const EXT_PROC_SERVICE = 'envoy.service.ext_proc.v3.ExternalProcessor';
export const PROCESS_METHOD_PATH = `/${EXT_PROC_SERVICE}/Process`;

/** grpc-js defaults to 4 MiB; Envoy sends a whole buffered body in one message. */
export const MAX_GRPC_MESSAGE_BYTES = 64 * 1024 * 1024;

const PROTO_ROOT = fileURLToPath(new URL('../../proto/', import.meta.url));
const PROTO_FILE = 'envoy/service/ext_proc/v3/external_processor_subset.proto';

let cached: grpc.ServiceDefinition | undefined;

/** The `ExternalProcessor` service definition, for both servers (sidecar) and clients (gateway). */
export function externalProcessorService(): grpc.ServiceDefinition {
  if (cached) return cached;
  const packageDefinition = protoLoader.loadSync(PROTO_FILE, {
    includeDirs: [PROTO_ROOT],
    keepCase: true,
    longs: Number,
    enums: Number,
    bytes: Buffer,
    defaults: false,
    oneofs: true,
  });
  const loaded = grpc.loadPackageDefinition(packageDefinition) as unknown as {
    envoy: { service: { ext_proc: { v3: { ExternalProcessor: grpc.ServiceClientConstructor } } } };
  };
  cached = loaded.envoy.service.ext_proc.v3.ExternalProcessor.service;
  return cached;
}

/** A client constructor for the `ExternalProcessor` service (the gateway plays Envoy's part with it). */
export function externalProcessorClient(): grpc.ServiceClientConstructor {
  return grpc.makeGenericClientConstructor(externalProcessorService(), 'ExternalProcessor');
}
