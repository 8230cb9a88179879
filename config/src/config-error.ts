/** A start-up configuration problem list; `runService` prints it as one paragraph and exits 78. */
export class ConfigError extends Error {
  readonly problems: readonly string[];

  constructor(problems: readonly string[]) {
    super(problems.join("\n"));
    this.name = "ConfigError";
    this.problems = Object.freeze([...problems]);
  }
}
