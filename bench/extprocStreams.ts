import * as grpc from '@grpc/grpc-js';
import type { ProcessingRequest, ProcessingResponse } from '../src/extproc/messages.js';
import { externalProcessorClient, externalProcessorService } from '../src/extproc/protocol.js';

/**
 * How Envoy ends a stream it no longer needs (docs/ext-proc.md, Stream close). By default it
 * half-closes and at once resets (RST_STREAM, CANCEL); with the runtime flag
 * `envoy.reloadable_features.ext_proc_graceful_grpc_close` it half-closes and lets the server end
 * the call.
 */
export type EnvoyStreamClose = 'reset' | 'graceful';

/**
 * Plays Envoy's side of ext_proc streams: every stream of a client shares one channel, one HTTP/2
 * connection, as Envoy's cluster connection to the sidecar; each message goes out once the answer to
 * the previous one is in.
 */
export class EnvoyStreams {
  private readonly client: grpc.Client;
  private readonly process: grpc.MethodDefinition<ProcessingRequest, ProcessingResponse>;

  constructor(
    port: number,
    private readonly closing: EnvoyStreamClose,
  ) {
    const Client = externalProcessorClient();
    this.client = new Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.enable_retries': 0,
    });
    this.process = externalProcessorService()['Process'] as grpc.MethodDefinition<ProcessingRequest, ProcessingResponse>;
  }

  /**
   * Sends `messages` in turn and resolves with the last answer: the answer to the last message, or
   * an immediate response, which ends the exchange early as it ends Envoy's processing. The stream
   * is closed then, and Envoy's next request does not wait for the close to complete.
   */
  play(messages: readonly ProcessingRequest[]): Promise<ProcessingResponse> {
    return new Promise((resolve, reject) => {
      const call = this.client.makeBidiStreamRequest(this.process.path, this.process.requestSerialize, this.process.responseDeserialize);
      let sent = 0;
      let settled = false;
      const sendNext = (): void => {
        call.write(messages[sent]!);
        sent += 1;
      };
      call.on('data', (answer: ProcessingResponse) => {
        if (settled) return;
        if (answer.response !== 'immediate_response' && sent < messages.length) {
          sendNext();
          return;
        }
        settled = true;
        call.end();
        if (this.closing === 'reset') call.cancel();
        resolve(answer);
      });
      call.on('error', (error: Error) => {
        if (settled) return;
        settled = true;
        reject(error);
      });
      call.on('end', () => {
        if (settled) return;
        settled = true;
        reject(new Error(`stream ended after ${sent} of ${messages.length} messages`));
      });
      sendNext();
    });
  }

  close(): void {
    this.client.close();
  }
}

/** The value of a header an answer sets, raw_value decoded. */
export function headerSet(answer: ProcessingResponse, name: string): string | undefined {
  const mutation =
    answer.immediate_response?.headers ??
    answer.response_body?.response?.header_mutation ??
    answer.response_headers?.response?.header_mutation;
  return mutation?.set_headers?.find((option) => option.header?.key === name)?.header?.raw_value?.toString('latin1');
}
