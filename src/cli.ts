#!/usr/bin/env node
import { readFileSync } from 'node:fs';
import { checkCommand, exitOnFailure, runCommandLine, serveCommand, type Program } from './commandLine/index.js';

/**
 * The sidecar's command line (README, Commands): `svc-cache serve`, `svc-cache check`, `--help`,
 * `<command> --help`, `--version`. The development commands (`demo`, `gateway`, `demo-origin`) are
 * built apart, into dist-dev/ (src/devCli.ts): the production image and this build hold neither the
 * development gateway nor the demo origin.
 */

const packageJson = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };

const program: Program = {
  name: 'svc-cache',
  version: packageJson.version,
  commands: [serveCommand, checkCommand],
  note: 'demo, gateway and demo-origin are development commands: `npm start`, or `node dist-dev/devCli.js <command>` after `npm run build:dev`.',
};

runCommandLine(program, process.argv.slice(2)).catch((error: unknown) => exitOnFailure(program, error));
