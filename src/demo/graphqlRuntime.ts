import { createRequire } from 'node:module';

/**
 * graphql-js must be a single instance for the demo schema and for graphql-http, which executes it
 * and tells its errors apart with `instanceof`. graphql ships CommonJS and ESM copies without an
 * exports map, so a bundler such as Vite (under vitest) resolves `import 'graphql'` to the ESM copy
 * while Node loads graphql-http's own import of it as CommonJS. Requiring both here pins them to
 * Node's CommonJS copy, however this module itself was loaded.
 */
const require = createRequire(import.meta.url);

export const graphql = require('graphql') as typeof import('graphql');
export const graphqlHttp = require('graphql-http') as typeof import('graphql-http');
