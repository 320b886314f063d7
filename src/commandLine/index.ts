export { checkConfigFile, type CheckReport } from './check.js';
export { exitOnFailure, runCommandLine, UsageError, type Command, type OptionSpec, type OptionValues, type Program } from './program.js';
export { handleShutdownSignals, type ShutdownSignals } from './signals.js';
export { portOption, withPortOption } from './values.js';
export { checkCommand, serveCommand, SHUTDOWN_GRACE_MS, SHUTDOWN_OVERRUN_MS } from './sidecarCommands.js';
