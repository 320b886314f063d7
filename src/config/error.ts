/**
 * A configuration that cannot be used. The message has one line per problem, each starting with
 * the file it is about, so an operator can fix them all in one edit.
 */
export class ConfigError extends Error {
  override readonly name = 'ConfigError';
  /** The lines of the message: `<source>: <problem>`. */
  readonly problems: readonly string[];

  constructor(
    readonly source: string,
    problems: readonly string[],
  ) {
    const lines = problems.map((problem) => `${source}: ${problem}`);
    super(lines.join('\n'));
    this.problems = lines;
  }
}

/** One problem found in a file, before it is tied to the file's name. */
export interface Problem {
  /** 1-based line in the file, when the problem has one; problems are reported in file order. */
  line: number | undefined;
  text: string;
}

export function configErrorFrom(source: string, problems: readonly Problem[]): ConfigError {
  const inFileOrder = [...problems].sort((a, b) => (a.line ?? Infinity) - (b.line ?? Infinity));
  return new ConfigError(
    source,
    inFileOrder.map((problem) => (problem.line === undefined ? problem.text : `${problem.text} (line ${problem.line})`)),
  );
}
