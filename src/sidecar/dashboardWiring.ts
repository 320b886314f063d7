import { OperationTypeNode } from 'graphql';
import type { Config } from '../config/index.js';
import type { CacheChangeInput, DashboardActions, InspectInput, PurgeAnswer } from '../dashboard/index.js';
import type { DecisionEngine, EngineEvents, Exchange, RequestDecision, RequestHead } from '../engine/index.js';
import { parseDocument, selectOperation } from '../graphql/index.js';
import type { HeaderList } from '../http/index.js';
import { purgeMode, type PurgeEvent } from '../purge/index.js';

/**
 * The adapters between the sidecar's request path and the dashboard, kept together so a change to
 * the engine or the ext_proc stream touches this file only.
 */

/**
 * Purges and inspections from the page run through the decision engine exactly as a request
 * Envoy streams would: a POST to /graphql with a JSON body and the page's token header.
 */
export function engineActions(engine: DecisionEngine, config: () => Config): DashboardActions {
  return {
    purge: async (requestBody, headers) => {
      const { decision, exchange } = await decide(engine, graphQLPost(requestBody, Object.entries(headers)));
      exchange.dispose();
      if (decision.kind === 'respond') {
        return {
          status: decision.response.status,
          headers: Object.fromEntries(decision.response.headers),
          body: decision.response.body,
        };
      }
      return notAPurge();
    },
    inspect: async (input) => inspect(engine, config(), input),
  };
}

/**
 * A purge as the dashboard's recent changes list it: one the store applied, failed or did not confirm
 * in time (it may still apply: README, Purge API); purges refused before running are not changes.
 */
export function purgeChange(event: PurgeEvent): CacheChangeInput | undefined {
  if (event.result === 'unauthorized' || event.result === 'invalid') return undefined;
  return {
    kind: 'purge',
    fields: event.fields,
    tags: [...event.tags, ...event.soft.tags],
    removedEntries: event.result === 'purged' ? event.removedEntries : 0,
    staleEntries: event.result === 'purged' ? event.staleEntries : 0,
    result: event.result === 'purged' ? 'ok' : event.result === 'store-failed' ? 'failed' : 'not-confirmed',
    mode: purgeMode(event),
  };
}

/** A mutation's invalidation as the dashboard's recent changes list it. */
export function invalidationChange(event: Parameters<EngineEvents['invalidation']>[0]): CacheChangeInput {
  return {
    kind: 'invalidation',
    fields: [`mutationPolicy ${event.policy}`],
    tags: 'failed' in event ? 0 : event.tags,
    removedEntries: 'failed' in event ? 0 : event.removedEntries,
    result: 'failed' in event ? 'failed' : 'ok',
  };
}

/** The engine's explanation of a request (`svc-debug`); nothing is forwarded, stored or purged. */
async function inspect(engine: DecisionEngine, config: Config, input: InspectInput): Promise<unknown> {
  const parsed = parseDocument(input.query);
  if ('kind' in parsed) return { error: 'syntax-error', message: parsed.message };
  const selected = selectOperation(parsed, input.operationName);
  if (selected.kind === 'invalid') return { error: 'invalid-operation', message: selected.reason };
  // A purge is a mutation the engine runs while deciding: the inspector must not run one.
  if (selected.operation.operation !== OperationTypeNode.QUERY) {
    return { error: 'not-a-query', message: 'only queries are inspected (mutations would run, purges included)' };
  }
  const body = Buffer.from(
    JSON.stringify({ query: input.query, variables: input.variables, operationName: input.operationName }),
  );
  // Clients of the page's kind ask for JSON; a given `host` names the site, part of the cache key
  // (README, Cache key), and is sent as `:authority` as Envoy sends it. Envoy's connection manager
  // adds `x-forwarded-proto` to every request, and the key holds it, so the request inspected has it
  // too (`http`, as `:scheme`, unless the headers given say otherwise).
  const { host, ...given } = Object.fromEntries(Object.entries(input.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  const headers: HeaderList = [
    [':authority', host ?? ''],
    [':scheme', 'http'],
    ...Object.entries({ accept: 'application/json', 'x-forwarded-proto': 'http', ...given }).map(([name, value]): [string, string] => [name, value]),
  ];
  const { decision, exchange } = await decide(engine, graphQLPost(body, headers));
  exchange.dispose();
  const keyParts = { operationName: selected.name, variables: input.variables ?? {} };
  if (decision.kind === 'respond') {
    const header = (name: string): string | undefined => decision.response.headers.find(([n]) => n === name)?.[1];
    const status = header('svc-cache');
    const ageSeconds = header('age') === undefined ? undefined : Number(header('age'));
    const rules = header('svc-debug-rules');
    const ruleMaxAge = ruleMaxAgeSeconds(config, rules);
    return {
      decision: status ?? 'ERROR',
      cachedNow: status === 'HIT',
      keyParts,
      scope: header('svc-debug-scope') ?? null,
      bucket: header('svc-debug-bucket') ?? null,
      matchedRules: rules ?? null,
      passReason: header('svc-debug-pass-reason') ?? null,
      ageSeconds: ageSeconds ?? null,
      remainingTtlSecondsAtMost: ruleMaxAge === undefined || ageSeconds === undefined ? null : Math.max(0, ruleMaxAge - ageSeconds),
    };
  }
  const plan = exchange.plan;
  const explain = exchange.explanation ?? {};
  return {
    decision: plan?.kind === 'store' ? 'MISS' : 'PASS',
    cachedNow: false,
    keyParts,
    scope: explain.scope ?? null,
    bucket: explain.bucket ?? null,
    matchedRules: explain.rules ?? null,
    passReason: plan?.kind === 'pass' ? plan.reason : null,
    ageSeconds: null,
    remainingTtlSecondsAtMost: null,
  };
}

/** Runs a request's request phase; the caller disposes of the exchange once it has read it. */
async function decide(
  engine: DecisionEngine,
  request: { head: RequestHead; body: Buffer },
): Promise<{ decision: RequestDecision; exchange: Exchange }> {
  // Explained without the purge token, which would route an introspection query to the purge API.
  const exchange = engine.begin(request.head, { explain: true });
  const first = await engine.requestHead(exchange);
  const decision = first.kind === 'need-body' ? await engine.requestBody(exchange, request.body) : first;
  return { decision, exchange };
}

function graphQLPost(body: Buffer, headers: HeaderList): { head: RequestHead; body: Buffer } {
  return {
    head: {
      method: 'POST',
      path: '/graphql',
      headers: [
        [':method', 'POST'],
        [':path', '/graphql'],
        ['content-type', 'application/json'],
        ['content-length', String(body.length)],
        ...headers,
      ],
      hasBody: true,
    },
    body,
  };
}

/** The shortest maxAge of the matched rules, named as `svc-debug-rules` names them. */
function ruleMaxAgeSeconds(config: Config, rules: string | undefined): number | undefined {
  if (rules === undefined) return undefined;
  const ages = rules
    .split('; ')
    .map((name) => config.rules.find((rule, index) => (rule.description ?? `rules[${index}]`) === name)?.maxAge)
    .filter((age): age is number => age !== undefined);
  return ages.length === 0 ? undefined : Math.min(...ages);
}

function notAPurge(): PurgeAnswer {
  return {
    status: 400,
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ errors: [{ message: 'not a purge: the request would have gone to the origin', extensions: { code: 'NOT_A_PURGE' } }] }),
  };
}
