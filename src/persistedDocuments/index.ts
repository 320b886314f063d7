export { readManifest, type ManifestReading, type PersistedDocuments } from './manifest.js';
export { storedDocumentText, type DocumentReference } from './storedDocument.js';
