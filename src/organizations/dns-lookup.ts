import { Resolver } from 'node:dns/promises';

/** The answer of a TXT lookup: the records' texts, or why there are none. */
export type TxtAnswer = { records: string[] } | { failure: string };

/** Codes that mean the name has no TXT record, rather than that the lookup failed. */
const NO_RECORD = new Set(['ENODATA', 'ENOTFOUND']);

/**
 * Looks up TXT records through `servers` (`host[:port]`), or the system's resolvers when there are
 * none. Each record's strings are joined, as a long TXT value is split into 255-byte strings.
 */
export function txtLookup(servers: readonly string[]): (name: string) => Promise<TxtAnswer> {
  const resolver = new Resolver({ timeout: 3000, tries: 2 });
  if (servers.length > 0) resolver.setServers([...servers]);
  return async (name) => {
    try {
      return { records: (await resolver.resolveTxt(name)).map((strings) => strings.join('')) };
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string' && NO_RECORD.has(code)) return { records: [] };
      return { failure: typeof code === 'string' ? code : 'unknown error' };
    }
  };
}
