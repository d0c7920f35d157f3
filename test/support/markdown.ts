import { readdirSync, readFileSync } from 'node:fs';
import { join, normalize } from 'node:path';

// The documentation pages as data: their fenced blocks, headings and links.

export const ROOT = join(import.meta.dirname, '..', '..');

/** A fenced block, from its opening fence to the closing one. */
const FENCED_BLOCK = /^(`{3,}|~{3,})[^\n]*\n[\s\S]*?^\1[^\n]*$/gm;

/** README.md and every docs/*.md page, as paths from the repository root. */
export function documentationPages(): string[] {
  const docs = readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .map((name) => `docs/${name}`);
  return ['README.md', ...docs];
}

export function readPage(page: string): string {
  return readFileSync(join(ROOT, page), 'utf8');
}

/** The documentation's contents page, which README.md links. */
export const CONTENTS = 'docs/README.md';

/** The docs pages the contents page links, in its order, each once, as paths from the repository root. */
export function contentsPages(): string[] {
  const targets = linkTargets(readPage(CONTENTS))
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => normalize(join('docs', target.split('#')[0])))
    .filter((page) => page.startsWith('docs/') && page.endsWith('.md'));
  return [...new Set(targets)];
}

export interface Fence {
  /** The info string's first word (`sh`, `json`…), empty when none. */
  language: string;
  /** The rest of the info string (`no-test`…). */
  attributes: string[];
  body: string;
  /** 1-based line of the opening fence. */
  line: number;
  /** The HTML comment on the line before the opening fence (blank lines aside), if any. */
  comment?: string;
}

export function fences(markdown: string): Fence[] {
  const lines = markdown.split('\n');
  const found: Fence[] = [];
  for (let index = 0; index < lines.length; index++) {
    // A fence may be indented, inside a list item: its lines lose that indentation.
    const open = /^( *)(`{3,}|~{3,})\s*(\S*)\s*(.*)$/.exec(lines[index]);
    if (!open) continue;
    const [, indent, marker, language, rest] = open;
    const start = index;
    const body: string[] = [];
    for (index++; index < lines.length && !lines[index].trimStart().startsWith(marker); index++)
      body.push(lines[index].startsWith(indent) ? lines[index].slice(indent.length) : lines[index].trimStart());
    let before = start - 1;
    while (before >= 0 && lines[before].trim() === '') before--;
    const comment = before >= 0 ? /^<!--\s*(.*?)\s*-->$/.exec(lines[before].trim())?.[1] : undefined;
    found.push({ language, attributes: rest.split(/\s+/).filter(Boolean), body: body.join('\n'), line: start + 1, comment });
  }
  return found;
}

/** The Markdown without fenced blocks and code spans, so that examples inside them are not read as links. */
function prose(markdown: string): string {
  return markdown.replace(FENCED_BLOCK, '').replace(/(`+)[\s\S]*?\1/g, (span) => (/\]\(/.test(span) ? '' : span.replace(/`/g, '')));
}

/** The targets of inline links and images outside code. */
export function linkTargets(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[(?:[^\]\\]|\\.)*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)].map((match) => match[1]);
}

/** The anchors GitHub gives the page's headings: lower case, punctuation dropped, spaces as dashes, repeats numbered. */
export function headingAnchors(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const counts = new Map<string, number>();
  const text = markdown.replace(FENCED_BLOCK, '');
  for (const match of text.matchAll(/^#{1,6}[ \t]+(.*?)[ \t#]*$/gm)) {
    const base = slug(match[1]);
    const seen = counts.get(base) ?? 0;
    counts.set(base, seen + 1);
    anchors.add(seen === 0 ? base : `${base}-${seen}`);
  }
  return anchors;
}

/** GitHub's slug of a heading: of its text as shown, so link targets and code marks are left out. */
export function slug(heading: string): string {
  const shown = heading
    .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/<[^>]+>/g, '')
    .replace(/[`*]/g, '');
  return shown
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}
