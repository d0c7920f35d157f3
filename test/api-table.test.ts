import { document } from './support/contract.js';
import { readPage } from './support/markdown.js';

// docs/api.md's table names every operation of the contract, so that a new operation cannot land
// without its row, and names none that the contract does not have.

const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

const contractOperations = Object.entries(document.paths as Record<string, Record<string, unknown>>)
  .flatMap(([path, item]) =>
    Object.keys(item)
      .filter((key) => METHODS.includes(key))
      .map((method) => `${method.toUpperCase()} ${path}`),
  )
  .sort();

/** `METHOD /path` code spans in the first cell of each table row of the page. */
function tableOperations(markdown: string): string[] {
  const cells = markdown
    .split('\n')
    .filter((line) => /^\|/.test(line) && !/^\|\s*-/.test(line))
    .map((line) => line.split('|')[1]);
  const operations = cells.flatMap((cell) => [...cell.matchAll(/`([A-Z]+ \/[^`\s]*)`/g)].map((match) => match[1]));
  return operations.sort();
}

const documented = tableOperations(readPage('docs/api.md'));

it('the contract has operations to look for', () => {
  expect(contractOperations.length).toBeGreaterThan(40);
});

it.each(contractOperations)('docs/api.md has a row for %s', (operation) => {
  expect(documented).toContain(operation);
});

it('docs/api.md names each operation once, and only operations of the contract', () => {
  expect(documented).toEqual(contractOperations);
});
