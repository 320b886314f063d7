/** The folder's one door: what other folders of src/ may use. */
export { acceptsNoJson, hitNegotiation, mayAnswerWithHtml, namesStreamingType, ownAnswerMediaType, type GraphQLResponseMediaType, type HitNegotiation } from './accept.js';
export { forbidsTransform, hasInvalidAge, requestForbidsStoring, staleLimits, storability, initialAgeSeconds } from './cacheControl.js';
export { preconditionVerdict, type PreconditionVerdict } from './conditional.js';
export { contentCoding, decodedWithin } from './contentCoding.js';
export { isCookieAttributeName } from './cookieLine.js';
export { cookieReadOtherwise, cookieValues, headerSpeltOtherwise, headerValue, headerValues, mediaType, sendsOnlyCookies, varyNames, type HeaderList } from './headers.js';
export { endpointOf, endpointRouting, isKeyedRequestHeader, keyedHeaders, type EndpointRouting } from './requestTarget.js';
export { CACHE_STATUS_HEADER, graphQLErrorResponse, type HttpResponse, type OwnErrorCode } from './responses.js';
