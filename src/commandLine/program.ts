import { parseArgs } from 'node:util';

/**
 * A command line of subcommands, each option listed with its default and one line of meaning, so
 * that `--help` and `<command> --help` are written from the same table the parser reads.
 */

export interface OptionSpec {
  /** Without the leading `--`. */
  name: string;
  /** What the value is, e.g. FILE or N; absent for a flag. */
  value?: string;
  default?: string;
  required?: boolean;
  meaning: string;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface Command {
  name: string;
  summary: string;
  options: OptionSpec[];
  run(values: OptionValues): Promise<void>;
}

export interface Program {
  name: string;
  version: string;
  commands: Command[];
  /** Printed under the command list, e.g. where the other commands live. */
  note?: string;
}

export class UsageError extends Error {}

/** Runs the command `argv` names; `--help`, `--version` and usage errors (exit 2) are answered here. */
export async function runCommandLine(program: Program, argv: string[]): Promise<void> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    console.log(programHelp(program));
    return;
  }
  if (name === '--version' || name === '-v') {
    console.log(program.version);
    return;
  }
  const command = program.commands.find((each) => each.name === name);
  if (!command) throw new UsageError(`unknown command "${name}"\n\n${programHelp(program)}`);
  if (rest.includes('--help') || rest.includes('-h')) {
    console.log(commandHelp(program, command));
    return;
  }
  await command.run(parseOptions(program, command, rest));
}

function parseOptions(program: Program, command: Command, args: string[]): OptionValues {
  const options = Object.fromEntries(
    command.options.map((option) => [option.name, { type: option.value ? ('string' as const) : ('boolean' as const) }]),
  );
  let values: OptionValues;
  try {
    values = parseArgs({ args, options, strict: true, allowPositionals: false }).values;
  } catch (error) {
    throw new UsageError(`${error instanceof Error ? error.message : String(error)}\n\n${commandHelp(program, command)}`);
  }
  for (const option of command.options) {
    if (values[option.name] === undefined && option.default !== undefined) values[option.name] = option.default;
    if (option.required && values[option.name] === undefined) {
      throw new UsageError(`${command.name} needs --${option.name} ${option.value ?? ''}`.trimEnd() + `\n\n${commandHelp(program, command)}`);
    }
  }
  return values;
}

function programHelp(program: Program): string {
  const width = Math.max(...program.commands.map((command) => command.name.length));
  const lines = [
    `usage: ${program.name} <command> [options]`,
    '',
    'commands:',
    ...program.commands.map((command) => `  ${command.name.padEnd(width)}  ${command.summary}`),
    '',
    `${program.name} <command> --help   the command's options, with their defaults`,
    `${program.name} --version          the version`,
  ];
  if (program.note) lines.push('', program.note);
  return lines.join('\n');
}

function commandHelp(program: Program, command: Command): string {
  const usage = command.options
    .map((option) => {
      const text = option.value ? `--${option.name} ${option.value}` : `--${option.name}`;
      return option.required ? text : `[${text}]`;
    })
    .join(' ');
  const left = (option: OptionSpec): string => (option.value ? `--${option.name} ${option.value}` : `--${option.name}`);
  const width = Math.max(...command.options.map((option) => left(option).length), 0);
  const lines = [`usage: ${program.name} ${command.name} ${usage}`.trimEnd(), '', command.summary];
  if (command.options.length > 0) {
    lines.push('', 'options:');
    for (const option of command.options) {
      const fallback = option.required ? ' (required)' : option.default !== undefined ? ` (default: ${option.default})` : '';
      lines.push(`  ${left(option).padEnd(width)}  ${option.meaning}${fallback}`);
    }
  }
  return lines.join('\n');
}

/**
 * The process's exit status: 2 for a usage mistake, 1 for an invalid configuration or schema (with
 * the same message `serve` and `check` print), 1 for anything else that stops the start (a port that
 * cannot be listened on, named with its option), each on stderr after the program's name.
 */
export function exitOnFailure(program: Program, error: unknown): never {
  if (error instanceof UsageError) {
    console.error(`${program.name}: ${error.message}`);
    process.exit(2);
  }
  if (error instanceof Error && error.name === 'ConfigError') {
    console.error(`${program.name}: invalid configuration\n${error.message}`);
    process.exit(1);
  }
  console.error(`${program.name}: ${error instanceof Error ? error.message : String(error)}`);
  process.exit(1);
}
