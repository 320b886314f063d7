/** The two response media types of the GraphQL over HTTP spec. */
export type GraphQLResponseMediaType = 'application/graphql-response+json' | 'application/json';

const GRAPHQL_RESPONSE_JSON = 'application/graphql-response+json';

/**
 * The media type svc-cache answers in, from the request's `Accept`: the one with the higher
 * q-value, `application/graphql-response+json` on a tie. `application/json` when `Accept` is absent,
 * names only wildcards, or names neither (the spec lets the server choose rather than answer 406).
 */
export function negotiateResponseMediaType(accept: string | undefined): GraphQLResponseMediaType {
  let graphQLResponseQuality = 0;
  let jsonQuality = 0;
  for (const range of (accept ?? '').split(',')) {
    const [type = '', ...parameters] = range.split(';');
    const mediaType = type.trim().toLowerCase();
    const quality = qualityOf(parameters);
    if (mediaType === GRAPHQL_RESPONSE_JSON) graphQLResponseQuality = Math.max(graphQLResponseQuality, quality);
    if (mediaType === 'application/json' || mediaType === 'application/*' || mediaType === '*/*') {
      jsonQuality = Math.max(jsonQuality, quality);
    }
  }
  return graphQLResponseQuality > 0 && graphQLResponseQuality >= jsonQuality ? GRAPHQL_RESPONSE_JSON : 'application/json';
}

function qualityOf(parameters: string[]): number {
  for (const parameter of parameters) {
    const [name, value] = parameter.split('=', 2);
    if (name?.trim().toLowerCase() !== 'q') continue;
    const quality = Number(value?.trim());
    return Number.isFinite(quality) ? Math.min(Math.max(quality, 0), 1) : 0;
  }
  return 1;
}
