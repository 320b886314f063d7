/** The folder's one door: what other folders of src/ may use. */
export { prepareOperation, stripAddedFields, type PreparedOperation } from './entityFields.js';
export { entityKeyField, entityKeyText, type KeyFields } from './keyFields.js';
export { listArgumentIndex, narrowingArgument, type ListArgumentIndex } from './listArguments.js';
export { MAX_INVALIDATED_ENTITIES, mutationInvalidationTags, responseTags } from './responseTags.js';
export { operationsRootFieldTypes, rootFieldTypes, rootFieldTypeTags } from './rootFieldTypes.js';
export { invalidationTag } from './tags.js';
