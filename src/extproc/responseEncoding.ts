import type * as grpc from '@grpc/grpc-js';
import protobuf from 'protobufjs';
import type { HeaderValueOption, ImmediateResponse, ProcessingResponse } from './messages.js';
import { PROTO_FILE, PROTO_ROOT, externalProcessorService } from './protocol.js';

let answering: grpc.ServiceDefinition | undefined;

/** The `ExternalProcessor` service as the sidecar's server serves it: proto-loader's, answers encoded by `processingResponseEncoder`. */
export function answeringProcessorService(): grpc.ServiceDefinition {
  if (answering) return answering;
  const service = externalProcessorService();
  const processMethod = service['Process']!;
  answering = { ...service, Process: { ...processMethod, responseSerialize: processingResponseEncoder(processMethod.responseSerialize) } };
  return answering;
}

/**
 * The ext_proc server's encoder for its answers: the bytes proto-loader's serializer (`fallback`)
 * gives, written faster for a HIT. A HIT is an immediate response of a status, headers and a body,
 * and the same entry answers with the same body object every time (the replica-local cache's
 * record, or the identity body kept beside it) and the same headers but its last, `age`
 * (src/engine/responses.ts). So the encoded header options but the last are kept per body object
 * and reused while the options are the same, and only the last is encoded anew: building and
 * encoding the whole answer was most of what serialising a HIT cost (README, Performance). Any
 * other answer goes to `fallback`. The body is written as it is each time, so a kept encoding
 * never stands for bytes it was not compared with.
 */
export function processingResponseEncoder(fallback: (value: ProcessingResponse) => Buffer): (value: ProcessingResponse) => Buffer {
  const wire = loadWire();
  const kept = new WeakMap<Buffer, KeptOptions>();
  return (value) => {
    const immediate = plainImmediateResponse(value);
    if (immediate === undefined) return fallback(value);
    const writer = protobuf.Writer.create();
    writer.uint32(wire.tags.immediateResponse).fork();
    if (immediate.status !== undefined) writer.uint32(wire.tags.status).bytes(wire.status(immediate.status.code));
    const options = immediate.headers?.set_headers;
    if (immediate.headers !== undefined) {
      writer.uint32(wire.tags.headers).fork();
      if (options !== undefined && options.length > 0) {
        for (const encoded of keptEncodings(kept, immediate.body, options, wire)) writer.uint32(wire.tags.setHeader).bytes(encoded);
        writer.uint32(wire.tags.setHeader).bytes(wire.option(options[options.length - 1]!));
      }
      writer.ldelim();
    }
    writer.uint32(wire.tags.body).bytes(immediate.body);
    writer.ldelim();
    return writer.finish() as Buffer;
  };
}

/** Encoded header options, and the options they encode, for one body object. */
interface KeptOptions {
  options: readonly HeaderValueOption[];
  encoded: Uint8Array[];
}

interface Wire {
  /** Field keys (field number and length-delimited wire type) of the fields written here. */
  tags: { immediateResponse: number; status: number; headers: number; setHeader: number; body: number };
  status(code: number | undefined): Uint8Array;
  option(option: HeaderValueOption): Uint8Array;
}

/** An immediate response with nothing but a status, header options to set and a body; else undefined. */
function plainImmediateResponse(value: ProcessingResponse): ImmediateResponse & { body: Buffer } | undefined {
  const immediate = value.immediate_response;
  if (immediate === undefined || immediate.body === undefined || immediate.grpc_status !== undefined || immediate.details !== undefined) return undefined;
  if (immediate.headers?.remove_headers !== undefined) return undefined;
  for (const field in value) {
    if (field !== 'immediate_response' && value[field as keyof ProcessingResponse] !== undefined) return undefined;
  }
  return immediate as ImmediateResponse & { body: Buffer };
}

/** The encodings of every option but the last, kept for `body` while they encode these options. */
function keptEncodings(kept: WeakMap<Buffer, KeptOptions>, body: Buffer, options: readonly HeaderValueOption[], wire: Wire): Uint8Array[] {
  const leading = options.length - 1;
  const previous = kept.get(body);
  if (previous !== undefined && sameOptions(previous.options, options, leading)) return previous.encoded;
  const encoded = options.slice(0, leading).map((option) => wire.option(option));
  kept.set(body, { options: options.slice(0, leading), encoded });
  return encoded;
}

function sameOptions(kept: readonly HeaderValueOption[], options: readonly HeaderValueOption[], count: number): boolean {
  if (kept.length !== count) return false;
  for (let index = 0; index < count; index += 1) if (!sameOption(kept[index]!, options[index]!)) return false;
  return true;
}

/** Whether two options encode alike: every field the proto has, compared as protobufjs writes it. */
function sameOption(a: HeaderValueOption, b: HeaderValueOption): boolean {
  return (
    (a.header === undefined) === (b.header === undefined) &&
    a.header?.key === b.header?.key &&
    a.header?.value === b.header?.value &&
    sameBytes(a.header?.raw_value, b.header?.raw_value) &&
    (a.append === undefined) === (b.append === undefined) &&
    a.append?.value === b.append?.value &&
    a.append_action === b.append_action &&
    a.keep_empty_value === b.keep_empty_value
  );
}

function sameBytes(a: Buffer | undefined, b: Buffer | undefined): boolean {
  return a === undefined || b === undefined ? a === b : a.equals(b);
}

/** The repo's proto, loaded by protobufjs (proto-loader's own loader) for the types and field numbers written here. */
function loadWire(): Wire {
  const root = new protobuf.Root();
  root.resolvePath = (_origin, target) => `${PROTO_ROOT}${target}`;
  root.loadSync(PROTO_FILE, { keepCase: true });
  const processingResponse = root.lookupType('envoy.service.ext_proc.v3.ProcessingResponse');
  const immediateResponse = root.lookupType('envoy.service.ext_proc.v3.ImmediateResponse');
  const headerMutation = root.lookupType('envoy.service.ext_proc.v3.HeaderMutation');
  const httpStatus = root.lookupType('envoy.type.v3.HttpStatus');
  const headerValueOption = root.lookupType('envoy.config.core.v3.HeaderValueOption');
  const lengthDelimited = (type: protobuf.Type, field: string): number => (type.fields[field]!.id << 3) | LENGTH_DELIMITED;
  const statuses = new Map<number | undefined, Uint8Array>();
  return {
    tags: {
      immediateResponse: lengthDelimited(processingResponse, 'immediate_response'),
      status: lengthDelimited(immediateResponse, 'status'),
      headers: lengthDelimited(immediateResponse, 'headers'),
      setHeader: lengthDelimited(headerMutation, 'set_headers'),
      body: lengthDelimited(immediateResponse, 'body'),
    },
    status: (code) => {
      let encoded = statuses.get(code);
      if (encoded === undefined) {
        encoded = httpStatus.encode(httpStatus.fromObject(code === undefined ? {} : { code })).finish();
        statuses.set(code, encoded);
      }
      return encoded;
    },
    option: (option) => headerValueOption.encode(headerValueOption.fromObject(option)).finish(),
  };
}

/** Protocol Buffers' wire type of bytes, strings and embedded messages. */
const LENGTH_DELIMITED = 2;
