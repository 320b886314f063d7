/** The folder's one door: what other folders of src/ may use. */
export { MAX_REWRITTEN_PATH_BYTES } from './envoyLimits.js';
export { BodySendMode, HeaderSendMode, ResponseStatus, type BodyMutation, type BodyResponse, type CommonResponse, type HeaderMap, type HeaderMutation, type HeaderValue, type HeadersResponse, type ImmediateResponse, type ProcessingMode, type ProcessingRequest, type ProcessingResponse } from './messages.js';
export { routeGrpcLogs } from './grpcLogs.js';
export { externalProcessorClient, externalProcessorService } from './protocol.js';
export { startExtProcServer, type ExtProcServer } from './server.js';
