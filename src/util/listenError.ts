/** Why a server could not listen on its address, as a stable code. */
export type ListenFailure = 'address-in-use' | 'permission-denied' | 'address-not-available' | 'other';

/** Which of svc-cache's servers it was: Envoy's ext_proc port, the admin port, or the development build's gateway and demo origin (README, Commands). */
export type ListeningServer = 'ext_proc' | 'admin' | 'gateway' | 'demo origin';

/**
 * A server could not take its address. It names the server and the address, so that a command can
 * add the option that chose them; Node's own error (`listen EADDRINUSE: address already in use
 * ...`, wrapped once more by grpc-js) names neither the server nor the option.
 */
export class ListenError extends Error {
  override readonly name = 'ListenError';
  readonly failure: ListenFailure;
  /** Why, in words. */
  readonly reason: string;

  constructor(
    readonly server: ListeningServer,
    readonly address: string,
    /** What Node or grpc-js said. */
    detail: string,
  ) {
    const failure = listenFailureOf(detail);
    const reason = failure === 'other' ? detail : FAILURE_TEXT[failure];
    super(`cannot listen on ${address} for the ${server} port: ${reason}`);
    this.failure = failure;
    this.reason = reason;
  }
}

const FAILURE_TEXT: Record<Exclude<ListenFailure, 'other'>, string> = {
  'address-in-use': 'the port is already in use (another process, or another svc-cache, listens on it)',
  'permission-denied': 'permission denied (ports below 1024 need privileges)',
  'address-not-available': 'the address is not one of this machine\'s',
};

/** grpc-js passes on only the text of Node's errors, so the code is read from the text. */
function listenFailureOf(detail: string): ListenFailure {
  if (/\bEADDRINUSE\b/.test(detail)) return 'address-in-use';
  if (/\bEACCES\b/.test(detail)) return 'permission-denied';
  if (/\bEADDRNOTAVAIL\b/.test(detail)) return 'address-not-available';
  return 'other';
}
