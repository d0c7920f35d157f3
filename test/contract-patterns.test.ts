import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { Script } from 'node:vm';
import { document } from './support/contract.js';

/*
 * Every `pattern` of the contract reads the same in every client's regex engine, not only in the
 * ECMAScript one the service validates with. Escapes that only some engines know (`\uXXXX`,
 * `\x{…}`, `\p{…}`) are refused outright, and so are the class escapes whose sets differ between
 * engines (`\s`, `\d`, `\w` are ASCII-only in Go and Java, Unicode-wide in Perl and Python). Then
 * Perl, a non-ECMAScript engine, compiles each pattern and matches it against probes; its answer
 * must be the service's answer for each.
 */

type Json = Record<string, any>;
const run = promisify(execFile);

/** Every pattern in the contract, with where it is and its schema's example. */
function patterns(node: unknown, at: string, found: { at: string; pattern: string; example?: unknown }[] = []) {
  if (Array.isArray(node)) node.forEach((item, i) => patterns(item, `${at}/${i}`, found));
  else if (node !== null && typeof node === 'object') {
    const schema = node as Json;
    if (typeof schema.pattern === 'string') found.push({ at, pattern: schema.pattern, example: schema.example });
    for (const [key, value] of Object.entries(schema)) if (key !== 'pattern') patterns(value, `${at}/${key}`, found);
  }
  return found;
}

const all = patterns(document, '#');

// White space and controls as the Name rule knows them, beside letters, digits of other scripts, and
// the values the contract's own patterns describe; each also with a line break after it.
const SPECIAL = [
  ...['\t', '\n', '\u000B', '\f', '\r', ' ', '\u0085', '\u00A0', '\u1680', '\u2000', '\u200A', '\u2028', '\u2029'],
  ...['\u202F', '\u205F', '\u3000', '\uFEFF', '\u180E', '\u200B', '\u0000', '\u001F', '\u007F', '\u009F', '\u061C'],
  ...['\u200E', '\u200F', '\u202A', '\u202E', '\u2066', '\u2069', 'u', '0', 'x', '{', '\\'],
];
const WORDS = [
  '',
  'a',
  'Ada Lovelace',
  'محمد بن موسى',
  '李小龙',
  'Ada 👩‍💻',
  '492039',
  '٤٩٢٠٣٩',
  'UJZD-EGXD-NCF3-2EPF',
  'vZ3B4w2m0Rk8yJxTqLfH6A==',
];
WORDS.push(`ask_${'Xk3q9Lw2bV8nM4cR6tY1uI0oP5aS7dF3gH9jK2lZxC4vtv1QQ'}`, 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw');

function probesFor(example: unknown): string[] {
  const base = [...WORDS, ...(typeof example === 'string' ? [example] : [])];
  const mixed = SPECIAL.flatMap((c) => [c, `${c}Ada`, `Ada${c}`, `A${c}da`, `${c}${c}`]);
  return [...base, ...mixed].flatMap((s) => [s, `${s}\n`]);
}

/** Perl compiles each pattern and says, for each probe, whether it matches (null: did not compile). */
async function perlMatches(cases: { pattern: string; probes: string[] }[]): Promise<(boolean[] | string)[]> {
  const script = `
    use strict; use warnings FATAL => 'all'; use feature 'unicode_strings'; use JSON::PP;
    local $/; my $cases = JSON::PP->new->utf8->decode(<STDIN>);
    my @out = map {
      my $case = $_;
      my $re = eval { my $p = $case->{pattern}; qr/$p/ };
      defined $re ? [map { $_ =~ $re ? JSON::PP::true : JSON::PP::false } @{ $case->{probes} }] : "$@";
    } @$cases;
    print JSON::PP->new->utf8->encode(\\@out);
  `;
  const child = run('perl', ['-e', script], { maxBuffer: 64 * 1024 * 1024 });
  child.child.stdin?.end(JSON.stringify(cases));
  const { stdout } = await child;
  return JSON.parse(stdout) as (boolean[] | string)[];
}

it('finds the patterns to check', () => {
  expect(all.map((p) => p.at)).toEqual(expect.arrayContaining(['#/components/schemas/Name', '#/components/schemas/ApiKeyName']));
  expect(all.length).toBeGreaterThanOrEqual(8);
});

it.each(all.map((p) => [p.at, p.pattern]))('%s uses only escapes every engine reads alike', (_at, pattern) => {
  // An escape is a backslash and the character after it; `\\` is a literal backslash.
  const escapes = pattern.match(/\\./gsu) ?? [];
  expect(escapes.filter((e) => !/^\\[xtnrf^$.|?*+()[\]{}\\/-]$/u.test(e))).toEqual([]);
  // `\x` is followed by exactly two hex digits (Perl and Go would read `\x{…}`, others would not).
  expect(pattern.match(/\\x(?![0-9A-Fa-f]{2})/gu)).toBeNull();
});

it.each(all.map((p) => [p.at, p.pattern]))('%s holds no line terminator, which would end a JavaScript regex literal', (_at, pattern) => {
  // openapi-zod-client, among others, writes each pattern into its client as `/…/`.
  expect([...pattern].filter((c) => '\n\r\u2028\u2029'.includes(c)).map((c) => c.codePointAt(0)!.toString(16))).toEqual([]);
  expect(() => new Script(`/${pattern}/u;`)).not.toThrow();
});

it('compiles in Perl and matches there as it matches in the service', async () => {
  const cases = all.map(({ pattern, example }) => ({ pattern, probes: probesFor(example) }));
  const answers = await perlMatches(cases);
  const disagreements: string[] = [];
  cases.forEach(({ pattern, probes }, i) => {
    const perl = answers[i];
    if (typeof perl === 'string') {
      disagreements.push(`${all[i].at}: Perl cannot compile it: ${perl}`);
      return;
    }
    const ecma = new RegExp(pattern, 'u');
    probes.forEach((probe, j) => {
      const service = ecma.test(probe);
      if (perl[j] === service) return;
      // Perl's `$` also matches before a final line break (so do Python's and Java's, Go's and
      // ECMAScript's do not): anchored patterns differ there by nature, and the service refuses.
      if (probe.endsWith('\n') && !service && perl[j] && ecma.test(probe.slice(0, -1))) return;
      disagreements.push(`${all[i].at}: ${JSON.stringify(probe)} Perl ${perl[j]}, service ${service}`);
    });
  });
  expect(disagreements).toEqual([]);
});

it('would catch an escape Perl reads otherwise', async () => {
  // The Name rule as it was once written: Perl warns that it reads `\u061C` as the letters u, 0, 6,
  // 1, C (so a client refused any name with a "u"); the check takes the warning as a failure.
  const [perl] = await perlMatches([{ pattern: '^[^\\u061C]+$', probes: ['Ursula', 'Ada'] }]);
  expect(perl).toEqual(expect.stringContaining('Unrecognized escape \\u'));
  expect(new RegExp('^[^\\u061C]+$', 'u').test('Ursula')).toBe(true);
});
