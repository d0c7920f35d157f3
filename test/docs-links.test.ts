import { existsSync, statSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { CONTENTS, contentsPages, documentationPages, headingAnchors, linkTargets, readPage, ROOT, slug } from './support/markdown.js';

// Every relative link of README.md and docs/*.md leads to a file that exists, and every #anchor to
// a heading of that page, named as GitHub names it.

const pages = documentationPages();

describe('the slug of a heading', () => {
  it.each([
    ['Second factors and passkeys', 'second-factors-and-passkeys'],
    ['Layout: from an operationId to its SQL', 'layout-from-an-operationid-to-its-sql'],
    ['From FastAPI (passlib, pwdlib)', 'from-fastapi-passlib-pwdlib'],
    ['`create-admin` and `SECRET_KEY`', 'create-admin-and-secret_key'],
    ['Tokens [other](x.md) services', 'tokens-other-services'],
    ['Ünïcode — dashes', 'ünïcode--dashes'],
  ])('%s is #%s', (heading, anchor) => {
    expect(slug(heading)).toBe(anchor);
  });

  it('numbers a repeated heading', () => {
    expect([...headingAnchors('# A\n\n## Notes\n\n## Notes\n\n```sh\n# Notes\n```\n')]).toEqual(['a', 'notes', 'notes-1']);
  });
});

const links = pages.flatMap((page) =>
  linkTargets(readPage(page))
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target))
    .map((target) => [page, target]),
);

it.each(links)('%s: %s resolves', (page, target) => {
  const [path, anchor] = target.split('#', 2);
  const file = path ? normalize(join(dirname(page), decodeURIComponent(path))) : page;
  expect(file.startsWith('..')).toBe(false);
  expect(existsSync(join(ROOT, file))).toBe(true);
  if (anchor === undefined) return;
  expect(file.endsWith('.md') && statSync(join(ROOT, file)).isFile()).toBe(true);
  expect([...headingAnchors(readPage(file))]).toContain(decodeURIComponent(anchor));
});

it('README.md links the contents page from its contents', () => {
  const readme = readPage('README.md');
  expect(linkTargets(readme.slice(readme.indexOf('\n## Contents')))).toContain(CONTENTS);
});

it('the contents page links every docs page, under a heading of what a reader came to do', () => {
  const linked = new Set(contentsPages());
  expect(pages.filter((page) => page !== 'README.md' && page !== CONTENTS && !linked.has(page))).toEqual([]);
  expect([...headingAnchors(readPage(CONTENTS))]).toEqual(
    expect.arrayContaining(['start', 'sign-people-in', 'run-it', 'secure-it', 'integrate']),
  );
});
