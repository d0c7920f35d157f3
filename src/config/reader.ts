export type Env = Record<string, string | undefined>;

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    // One problem is one line; several are listed one a line.
    super(problems.length === 1 ? `Invalid configuration: ${problems[0]}` : `Invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigError';
  }
}

/**
 * Reads typed values from an environment. A bad value is noted as a problem and its default used,
 * so that every problem is found in one pass and reported at once.
 */
export class EnvReader {
  readonly problems: string[] = [];

  constructor(private readonly env: Env) {}

  /** The trimmed value; undefined when unset or blank. */
  string(name: string): string | undefined {
    const value = this.env[name]?.trim();
    return value === '' ? undefined : value;
  }

  /** The value as given, spaces included (a password); undefined when unset or empty. */
  verbatim(name: string): string | undefined {
    return this.env[name] || undefined;
  }

  problem(text: string): void {
    this.problems.push(text);
  }

  integer(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!/^-?\d+$/.test(raw)) {
      this.problem(`${name} must be a whole number, got "${raw}"`);
      return fallback;
    }
    const value = Number(raw);
    if (value < min || value > max) {
      this.problem(`${name} must be between ${min} and ${max}, got ${value}`);
      return fallback;
    }
    return value;
  }

  boolean(name: string, fallback: boolean): boolean {
    const raw = this.string(name)?.toLowerCase();
    if (raw === undefined) return fallback;
    if (['true', '1', 'yes', 'on'].includes(raw)) return true;
    if (['false', '0', 'no', 'off'].includes(raw)) return false;
    this.problem(`${name} must be true or false, got "${raw}"`);
    return fallback;
  }

  oneOf<T extends string>(name: string, allowed: readonly T[], fallback: T, normalize = (s: string) => s): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    const value = normalize(raw) as T;
    if (!allowed.includes(value)) {
      this.problem(`${name} must be one of ${allowed.join(', ')}, got "${raw}"`);
      return fallback;
    }
    return value;
  }
}
