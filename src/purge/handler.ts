import {
  execute,
  OperationTypeNode,
  type DocumentNode,
  type ExecutionResult,
  type GraphQLError,
  type GraphQLSchema,
  type OperationDefinitionNode,
  type SelectionSetNode,
} from 'graphql';
import type { Config } from '../config/index.js';
import { collectFields, fragmentsOf, validationErrors } from '../graphql/index.js';
import { CACHE_STATUS_HEADER, type HttpResponse } from '../http/index.js';
import { headerValue, type HeaderList } from '../http/index.js';
import type { Logger, RepeatedWarning } from '../observability/index.js';
import { isCommandTimeout, StoreFull, UnconfirmedInvalidation, type CacheStore } from '../store/index.js';
import type { GraphQLResponseMediaType } from '../http/index.js';
import { derivePurgeApi, type PurgeApi } from './schema.js';
import { PurgeTargets } from './targets.js';
import { isPurgeToken } from './token.js';
import { errorMessage, shortened } from '../util/index.js';

/**
 * Purge requests, answered by svc-cache itself and never forwarded.
 *
 * Which requests are purges: a mutation is a purge when every root field it selects (fragments
 * resolved, `__typename` aside) is a field of the purge schema. The purge schema leaves out any
 * purge field whose name the origin's Mutation type has, so an origin mutation `purgeTodo` always
 * reaches the origin. A mutation that mixes purge and origin fields is not a purge either: it goes
 * to the origin, which answers it with its own validation error. svc-cache only answers what it
 * owns, and the origin, not svc-cache's possibly older copy of its schema, has the last word on
 * its own mutations.
 *
 * A query whose root fields are all introspection fields (or `_purgeApi`) is answered from the
 * purge schema when it carries the purge-token header, so tools can introspect the purge API with
 * the token they purge with; without that header it is an ordinary query for the origin.
 *
 * Answers: no token or a wrong one, 401 and nothing purged; validation and variable errors, and
 * argument values the schema cannot check (an unknown `_purgeType` type), 400 under
 * `application/graphql-response+json` and 200 under `application/json`; a valid purge is applied
 * with one store call for its hard fields and one for its soft ones, and answered
 * `{"data":{"<field>":true}}` only once the store has confirmed both; a store that fails, 503 with
 * an error and no `data`.
 */

export interface PurgeRequest {
  /** The selected operation and the fragments it uses (`selectOperation(...).document`). */
  document: DocumentNode;
  operation: OperationDefinitionNode;
  operationName: string | undefined;
  variables: Record<string, unknown>;
  /** Lower-case names. */
  headers: HeaderList;
  /** See `ownAnswerMediaType` (src/http/accept.ts). */
  responseMediaType: GraphQLResponseMediaType;
}

export interface PurgeDependencies {
  originSchema: GraphQLSchema;
  config: Config;
  store: CacheStore;
  logger: Logger;
  /** 'purge refused', for a purge without a valid token, which any client can send (RepeatedWarning). */
  refusals: RepeatedWarning;
  /** Told of every purge attempt and every refused token, for metrics. */
  onPurge?: (event: PurgeEvent) => void;
  /** How long the store may take to confirm a purge before the answer is 503 (PURGE_CONFIRMATION_MS). */
  confirmationMs?: number;
}

/**
 * How long a purge waits for the store's confirmation before it answers 503 `PURGE_NOT_APPLIED`.
 * The sidecar asks Envoy for 5 s more once it has worked 500 ms on a message (README, Envoy settings:
 * `max_message_timeout`); past that Envoy goes on without it and forwards the purge to the origin,
 * whose answer (an unknown field) the purge job would take for the purge's. 4 s leaves room for the
 * request's reading and the answer's writing. The store goes on with the purge meanwhile.
 */
export const PURGE_CONFIRMATION_MS = 4_000;

export type PurgeEvent =
  | ({ result: 'purged'; removedEntries: number; staleEntries: number } & PurgeSummary)
  | ({ result: 'store-failed'; error: string } & PurgeSummary)
  /**
   * Answered 503 though it may apply or have applied: the store did not confirm it within
   * `confirmationMs` and is still at it (`store`), or Redis applied it but a replica-local cache did
   * not confirm dropping the entries (`replica-local-caches`).
   */
  | ({ result: 'not-confirmed'; awaited: 'store' | 'replica-local-caches' } & PurgeSummary)
  | { result: 'unauthorized' }
  /** Failed validation or variable coercion: nothing purged. */
  | { result: 'invalid' };

export interface PurgeSummary {
  /** The purge fields that ran, by field name. */
  fields: readonly string[];
  /** `_purgeAll` ran. */
  everything: boolean;
  tags: readonly string[];
  /** What the fields with `soft: true` marked stale instead (a tag purged hard too is left out). */
  soft: { everything: boolean; tags: readonly string[] };
}

/** Whether a purge removed entries, marked them stale, or both (fields of each kind in one mutation). */
export function purgeMode(summary: PurgeSummary): 'hard' | 'soft' | 'mixed' {
  const soft = summary.soft.everything || summary.soft.tags.length > 0;
  const hard = summary.everything || summary.tags.length > 0;
  return soft && hard ? 'mixed' : soft ? 'soft' : 'hard';
}

/** The answer to a purge request, or undefined when the request is not one (the engine carries on). */
export async function handlePurgeRequest(
  request: PurgeRequest,
  deps: PurgeDependencies,
): Promise<HttpResponse | undefined> {
  const { purge, keyFields } = deps.config;
  const api = derivePurgeApi(deps.originSchema, keyFields);
  const tokenHeader = purge.header.toLowerCase();
  const route = routeOf(request, api, tokenHeader);
  if (route === undefined) return undefined;
  const respond = (status: number, body: unknown, headers: Array<[string, string]> = []): HttpResponse =>
    graphQLResponse(request.responseMediaType, status, body, headers);

  if (!isPurgeToken(headerValue(request.headers, tokenHeader), purge.tokens)) {
    const message =
      purge.tokens.length === 0
        ? 'Purging is disabled: no purge tokens are configured'
        : `Missing or invalid purge token in the ${tokenHeader} header`;
    deps.refusals.warn({ route, reason: message });
    deps.onPurge?.({ result: 'unauthorized' });
    return respond(401, { errors: [{ message, extensions: { code: 'UNAUTHENTICATED' } }] }, [
      ['www-authenticate', `SvcPurgeToken realm="svc-cache purge", header="${tokenHeader}"`],
    ]);
  }

  const invalid = validationErrors(api.schema, request.document);
  if (invalid.length > 0) return requestErrors(invalid, request, deps, route);
  const targets = new PurgeTargets();
  const result: ExecutionResult = await execute({
    schema: api.schema,
    document: request.document,
    operationName: request.operationName,
    variableValues: request.variables,
    contextValue: targets,
  });
  // The resolvers never throw: any error here is a request error (variable coercion).
  if (result.errors) return requestErrors(result.errors, request, deps, route);
  if (targets.errors.length > 0) return requestErrors(targets.errors, request, deps, route);
  if (route === 'purge-schema-query') return respond(200, result);

  const summary = summaryOf(targets);
  const applied = await confirmedPurge(summary, deps);
  if (applied === undefined) {
    // A request-level failure caused by the server: no `data`, and 503 whatever the media type, so
    // that the operator's purge job sees a failure (and retries) without reading the body.
    return respond(503, {
      errors: [
        {
          message: 'The purge was not applied: the cache store did not confirm it. Retry the purge.',
          extensions: { code: 'PURGE_NOT_APPLIED' },
        },
      ],
    });
  }
  deps.logger.info({ ...logFields(summary), ...applied }, 'purge applied');
  deps.onPurge?.({ result: 'purged', ...applied, ...summary });
  return respond(200, result);
}

/**
 * The purge applied, or undefined when the store failed or did not confirm it within
 * `confirmationMs`: then the answer must not be `true`, though a late purge may still complete
 * (logged as such), and the job's retry applies it again.
 */
async function confirmedPurge(summary: PurgeSummary, deps: PurgeDependencies): Promise<AppliedPurge | undefined> {
  const applying = applyPurge(summary, deps.store, deps.logger);
  const confirmationMs = deps.confirmationMs ?? PURGE_CONFIRMATION_MS;
  let deadline: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<'late'>((resolve) => {
    deadline = setTimeout(() => resolve('late'), confirmationMs);
  });
  try {
    const first = await Promise.race([applying, late]);
    if (first !== 'late') return first;
    deps.logger.error({ ...logFields(summary), confirmationMs }, 'purge not confirmed in time; answered 503');
    deps.onPurge?.({ result: 'not-confirmed', awaited: 'store', ...summary });
    applying.then(
      (applied) => deps.logger.warn({ ...logFields(summary), ...applied }, 'purge applied after its 503 answer'),
      (error: unknown) =>
        deps.logger.error(
          { ...logFields(summary), err: errorMessage(error) },
          isCommandTimeout(error) ? 'purge not confirmed: the cache store did not answer in time' : 'purge not applied: the cache store failed',
        ),
    );
    return undefined;
  } catch (error) {
    const reason = errorMessage(error);
    if (error instanceof UnconfirmedInvalidation) {
      deps.logger.error({ ...logFields(summary), err: reason }, 'purge applied in Redis but not confirmed by every replica; answered 503');
      deps.onPurge?.({ result: 'not-confirmed', awaited: 'replica-local-caches', ...summary });
      return undefined;
    }
    // A command Redis did not answer in time was sent, and may have run: the purge may be applied.
    if (isCommandTimeout(error)) {
      deps.logger.error({ ...logFields(summary), err: reason }, 'purge not confirmed: the cache store did not answer in time; answered 503');
      deps.onPurge?.({ result: 'not-confirmed', awaited: 'store', ...summary });
      return undefined;
    }
    deps.logger.error({ ...logFields(summary), err: reason }, 'purge not applied: the cache store failed');
    deps.onPurge?.({ result: 'store-failed', error: reason, ...summary });
    return undefined;
  } finally {
    clearTimeout(deadline);
  }
}

interface AppliedPurge {
  removedEntries: number;
  staleEntries: number;
}

type PurgeRoute = 'purge' | 'purge-schema-query';

function routeOf(request: PurgeRequest, api: PurgeApi, tokenHeader: string): PurgeRoute | undefined {
  const { operation } = request;
  if (operation.operation === OperationTypeNode.MUTATION) {
    const rootFields = rootFieldNames(operation.selectionSet, request.document);
    const selectsPurgeField = [...rootFields].some((field) => api.mutationFields.has(field));
    const onlyPurgeFields = [...rootFields].every((field) => field === '__typename' || api.mutationFields.has(field));
    return selectsPurgeField && onlyPurgeFields ? 'purge' : undefined;
  }
  if (operation.operation === OperationTypeNode.QUERY && headerValue(request.headers, tokenHeader) !== undefined) {
    const rootFields = rootFieldNames(operation.selectionSet, request.document);
    const onlyPurgeSchemaFields = rootFields.size > 0 && [...rootFields].every((field) => api.queryFields.has(field));
    return onlyPurgeSchemaFields ? 'purge-schema-query' : undefined;
  }
  return undefined;
}

/**
 * The names of the fields a selection set selects at its own level, through inline fragments and
 * fragment spreads. Directives are not evaluated: a field that `@skip` might leave out still counts,
 * so a request is only a purge when it could never reach an origin field.
 */
function rootFieldNames(selectionSet: SelectionSetNode, document: DocumentNode): Set<string> {
  return new Set(collectFields([selectionSet], fragmentsOf(document)).map((field) => field.name.value));
}

function summaryOf(targets: PurgeTargets): PurgeSummary {
  const { hard, soft } = targets;
  return {
    fields: targets.fields,
    everything: hard.everything,
    tags: [...hard.tags],
    soft: hard.everything ? { everything: false, tags: [] } : { everything: soft.everything, tags: [...soft.tags].filter((tag) => !hard.tags.has(tag)) },
  };
}

/**
 * One store call for the hard purge fields and one for the soft ones, so a purge is confirmed as a
 * whole. `invalidateAll` covers every tag, so `_purgeAll` alongside other purge fields needs nothing
 * more; a tag purged both ways is purged hard (summaryOf).
 */
async function applyPurge(summary: PurgeSummary, store: CacheStore, logger: Logger): Promise<AppliedPurge> {
  const removedEntries = summary.everything
    ? await store.invalidateAll()
    : summary.tags.length > 0
      ? await store.invalidate(summary.tags)
      : 0;
  const { soft } = summary;
  try {
    const staleEntries = soft.everything ? await store.markAllStale() : soft.tags.length > 0 ? await store.markStale(soft.tags) : 0;
    return { removedEntries, staleEntries };
  } catch (error) {
    if (!(error instanceof StoreFull)) throw error;
    // A soft purge that failed whole kept its entries fresh until the store had room (a Redis
    // failure audit): they go as a hard purge's do, counted as removed.
    logger.warn({ ...logFields(summary), err: error.message }, 'cache store full: the soft purge removes its entries instead');
    const removedInstead = soft.everything ? await store.invalidateAll() : await store.invalidate(soft.tags);
    return { removedEntries: removedEntries + removedInstead, staleEntries: 0 };
  }
}

/**
 * Validation and variable-coercion errors, with the status of the GraphQL over HTTP spec
 * (2025 stage 2 draft, section "Status Codes", as graphql-http implements and audits it): 400
 * under `application/graphql-response+json`, 200 under `application/json`.
 */
function requestErrors(
  errors: readonly GraphQLError[],
  request: PurgeRequest,
  deps: PurgeDependencies,
  route: PurgeRoute,
): HttpResponse {
  // A message quotes what the request held (a value of 500,000 characters made one 500 KB line).
  const logged = errors.slice(0, LOGGED_ERRORS).map((error) => shortened(error.message, LOGGED_ERROR_CHARACTERS));
  deps.logger.info({ route, errors: logged, ...(errors.length > LOGGED_ERRORS ? { moreErrors: errors.length - LOGGED_ERRORS } : {}) }, 'purge request rejected');
  if (route === 'purge') deps.onPurge?.({ result: 'invalid' });
  const status = request.responseMediaType === 'application/graphql-response+json' ? 400 : 200;
  return graphQLResponse(request.responseMediaType, status, { errors }, []);
}

function graphQLResponse(
  mediaType: GraphQLResponseMediaType,
  status: number,
  body: unknown,
  headers: Array<[string, string]>,
): HttpResponse {
  return {
    status,
    headers: [['content-type', `${mediaType}; charset=utf-8`], [CACHE_STATUS_HEADER, 'PASS'], ...headers],
    body: Buffer.from(JSON.stringify(body)),
  };
}

/** Enough of the tags to recognise a purge in the log without one purge of many ids flooding it. */
const LOGGED_TAGS = 20;
/** Characters logged of each tag: `_purgeOperationName` and key values name what the client chose, at any length. */
const LOGGED_TAG_CHARACTERS = 100;
/** A rejected purge's errors logged, and characters of each: a message quotes what the request held. */
const LOGGED_ERRORS = 20;
const LOGGED_ERROR_CHARACTERS = 100;

function logFields(summary: PurgeSummary): Record<string, unknown> {
  return {
    fields: summary.fields,
    everything: summary.everything,
    tagCount: summary.tags.length,
    tags: loggedTags(summary.tags),
    mode: purgeMode(summary),
    softEverything: summary.soft.everything,
    softTagCount: summary.soft.tags.length,
    softTags: loggedTags(summary.soft.tags),
  };
}

function loggedTags(tags: readonly string[]): string[] {
  return tags.slice(0, LOGGED_TAGS).map((tag) => shortened(tag, LOGGED_TAG_CHARACTERS));
}
