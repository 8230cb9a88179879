import { ConfigError } from "./config-error.ts";
import { withSecretFiles } from "./secret-files.ts";

export type Env = Readonly<Record<string, string | undefined>>;

/**
 * Reads one process's environment once at start, collecting every problem instead of stopping at
 * the first, so one failed start lists everything to fix.
 */
export interface EnvReader {
  /** The trimmed value; blank counts as unset (`PORT=` in a .env or compose file means "not set"). */
  string(name: string): string | undefined;
  /** A whole number from `min` to `max`, or `fallback` when unset; anything else is a problem. */
  integer(name: string, fallback: number, min: number, max: number): number;
  /** A comma-separated list, trimmed, without empty items; unset is empty. */
  list(name: string): string[];
  /** Records a problem found while reading. */
  problem(message: string): void;
  readonly problems: readonly string[];
  /** Throws one ConfigError listing every problem recorded, if there is any. */
  assertValid(): void;
}

/** With `secrets`, each of those variables may be given as a file instead (withSecretFiles). */
export function envReader(source: Env, options: { secrets?: readonly string[] } = {}): EnvReader {
  const { env, problems } = withSecretFiles(source, options.secrets ?? []);

  const string = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === "" ? undefined : value;
  };

  return {
    string,
    integer(name, fallback, min, max) {
      const raw = string(name);
      if (raw === undefined) return fallback;
      const value = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
      if (!Number.isSafeInteger(value) || value < min || value > max) {
        problems.push(`${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
        return fallback;
      }
      return value;
    },
    list(name) {
      return (string(name) ?? "")
        .split(",")
        .map((item) => item.trim())
        .filter((item) => item !== "");
    },
    problem(message) {
      problems.push(message);
    },
    problems,
    assertValid() {
      if (problems.length > 0) throw new ConfigError(problems);
    },
  };
}
