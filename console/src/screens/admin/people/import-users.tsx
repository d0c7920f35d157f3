import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../../api';
import { Busy, ErrorMessage, Field, Notice, Section } from '../../../ui/kit';

type ImportUser = Schemas['ImportUser'];
type ImportResult = Schemas['ImportResult'];

/** The API takes up to this many rows a call; a larger file is sent in parts, one after the other. */
const BATCH = 1000;

/** The rows of a file: a JSON array of users, or `{"users": [...]}` as the API takes it. */
function rowsOf(text: string): ImportUser[] {
  const parsed = JSON.parse(text) as unknown;
  const rows = Array.isArray(parsed) ? parsed : (parsed as { users?: unknown } | null)?.users;
  if (!Array.isArray(rows) || rows.length === 0)
    throw new Error('The file holds no users: give a JSON array of users, or {"users": [...]}.');
  return rows as ImportUser[];
}

/** Users from another system with their password hashes, from a JSON file, in parts of 1,000 with progress. */
export function ImportUsers() {
  const [progress, setProgress] = useState<{ done: number; total: number }>();
  const [results, setResults] = useState<ImportResult[]>();
  const [error, setError] = useState<unknown>();
  const run = async (event: SubmitEvent) => {
    event.preventDefault();
    const form = event.currentTarget as HTMLFormElement;
    const file = new FormData(form).get('file');
    setError(undefined);
    setResults(undefined);
    try {
      if (!(file instanceof File) || file.size === 0) throw new Error('Choose a JSON file of users first.');
      const rows = rowsOf(await file.text());
      const all: ImportResult[] = [];
      setProgress({ done: 0, total: rows.length });
      for (let start = 0; start < rows.length; start += BATCH) {
        const answer = await ok(api.POST('/api/users/import', { body: { users: rows.slice(start, start + BATCH) } }));
        all.push(...answer.data.map((result) => ({ ...result, row: result.row + start })));
        setProgress({ done: Math.min(start + BATCH, rows.length), total: rows.length });
      }
      setResults(all);
      form.reset();
    } catch (failure) {
      setError(failure instanceof SyntaxError ? new Error(`The file is not JSON: ${failure.message}`) : failure);
    } finally {
      setProgress(undefined);
    }
  };
  const refused = results?.filter((result) => result.status !== 'created') ?? [];
  const created = (results?.length ?? 0) - refused.length;
  return (
    <Section title="Import users">
      <p>
        Bring users from another system with the password hashes it stored (bcrypt, argon2 or Django’s PBKDF2): a JSON array of{' '}
        <code>{'{"email", "name", "password_hash", "role"?, "email_verified"?}'}</code>. They sign in with their old passwords.
      </p>
      <form class="form" aria-label="Import users" onSubmit={(event) => void run(event)}>
        <Field label="JSON file of users">
          <input name="file" type="file" accept="application/json,.json" required />
        </Field>
        <ErrorMessage error={error} />
        <div class="form-actions">
          <button type="submit" class="button primary" disabled={progress !== undefined}>
            Import
          </button>
          {progress ? (
            <Busy label={`Imported ${progress.done} of ${progress.total} rows…`} value={progress.done} max={progress.total} />
          ) : null}
        </div>
      </form>
      {results ? (
        <Notice>
          {created} created, {refused.length} not imported.
        </Notice>
      ) : null}
      {refused.length > 0 ? (
        <div class="table-wrap">
          <table>
            <caption>Rows not imported</caption>
            <thead>
              <tr>
                <th scope="col">Row</th>
                <th scope="col">E-mail</th>
                <th scope="col">Why</th>
              </tr>
            </thead>
            <tbody>
              {refused.map((result) => (
                <tr key={result.row}>
                  <td>{result.row}</td>
                  <td>{result.email ?? '—'}</td>
                  <td>{result.status === 'conflict' ? 'An account has this e-mail already' : (result.reason ?? 'Invalid')}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      ) : null}
    </Section>
  );
}
