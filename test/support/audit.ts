import { serverAudits } from 'graphql-http';

/**
 * graphql-http's GraphQL over HTTP server audits, reduced to what two runs can be compared by
 * (through svc-cache and against the origin directly). graphql-http grades a failed MUST `error`,
 * a failed SHOULD `warn` and a failed MAY `notice`.
 */
export type AuditStatus = 'ok' | 'notice' | 'warn' | 'error';

export interface AuditOutcome {
  id: string;
  name: string;
  status: AuditStatus;
  reason?: string;
}

export interface AuditRunOptions {
  /** Per request; a server that never answers fails that audit instead of hanging the run. */
  requestTimeoutMs?: number;
}

/**
 * Runs every audit against `url`, one after the other so that their requests never overlap. An
 * audit that cannot complete at all (connection refused, timeout) is an `error` whose reason
 * starts with "fatal:", where graphql-http itself would throw and abandon the remaining audits.
 */
export async function runServerAudits(url: string, options: AuditRunOptions = {}): Promise<AuditOutcome[]> {
  const requestTimeoutMs = options.requestTimeoutMs ?? 10_000;
  let responses: Response[] = [];
  const fetchFn = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, { ...init, signal: AbortSignal.timeout(requestTimeoutMs) });
    responses.push(response);
    return response;
  };

  const outcomes: AuditOutcome[] = [];
  for (const audit of serverAudits({ url, fetchFn })) {
    try {
      const result = await audit.fn();
      outcomes.push(
        result.status === 'ok'
          ? { id: result.id, name: result.name, status: 'ok' }
          : { id: result.id, name: result.name, status: result.status, reason: result.reason },
      );
    } catch (error) {
      outcomes.push({ id: audit.id, name: audit.name, status: 'error', reason: `fatal: ${describe(error)}` });
    }
    await discardUnreadBodies(responses);
    responses = [];
  }
  return outcomes;
}

/** Many audits look only at the status; an unread body would keep its connection busy. */
async function discardUnreadBodies(responses: Response[]): Promise<void> {
  for (const response of responses) {
    if (!response.bodyUsed) await response.body?.cancel().catch(() => undefined);
  }
}

/** fetch reports "fetch failed" and keeps what actually went wrong in `cause`. */
function describe(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause instanceof Error ? ` (${error.cause.message})` : '';
  return `${error.name}: ${error.message}${cause}`;
}
