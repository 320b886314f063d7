export { readManifest, type ManifestReading, type PersistedDocuments } from './manifest.js';
export { namedDocumentId, type DocumentReference } from './storedDocument.js';
