import type { ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { Busy, Button, Empty, ErrorMessage } from './kit';

/** One page of a cursor-paged list, as the API answers it: `meta.next_cursor` and `meta.has_more`. */
export interface CursorPage<T> {
  data: T[];
  meta: { next_cursor: number | null; has_more: boolean };
}

/**
 * A list the API pages with cursors: the first page, then "Load more" while `has_more`; starts over
 * whenever `deps` (a search, a filter) change.
 */
export function useCursorList<T>(load: (cursor: number | undefined) => Promise<CursorPage<T>>, deps: unknown[]) {
  const [items, setItems] = useState<T[]>([]);
  const [next, setNext] = useState<number | null>(null);
  const [hasMore, setHasMore] = useState(false);
  const [loading, setLoading] = useState(true);
  const [error, setError] = useState<unknown>();
  const [round, setRound] = useState(0);

  const fetchPage = async (cursor: number | undefined, replace: boolean, current: () => boolean) => {
    setLoading(true);
    setError(undefined);
    try {
      const page = await load(cursor);
      if (!current()) return;
      setItems((previous) => (replace ? page.data : [...previous, ...page.data]));
      setNext(page.meta.next_cursor);
      setHasMore(page.meta.has_more);
    } catch (failure) {
      if (current()) setError(failure);
    } finally {
      if (current()) setLoading(false);
    }
  };

  useEffect(() => {
    let current = true;
    void fetchPage(undefined, true, () => current);
    return () => {
      current = false;
    };
  }, [...deps, round]);

  return {
    items,
    hasMore,
    loading,
    error,
    loadMore: () => void fetchPage(next ?? undefined, false, () => true),
    reload: () => setRound((n) => n + 1),
  };
}

/** A table of a cursor-paged list: caption, head, rows, its empty state and "Load more". */
export function CursorTable<T>(props: {
  caption: string;
  list: ReturnType<typeof useCursorList<T>>;
  head: string[];
  row: (item: T) => ComponentChildren;
  empty: ComponentChildren;
}) {
  const { list } = props;
  return (
    <div class="table-wrap">
      <ErrorMessage error={list.error} />
      {list.items.length === 0 && !list.loading && !list.error ? (
        <Empty>{props.empty}</Empty>
      ) : (
        <table>
          <caption>{props.caption}</caption>
          <thead>
            <tr>
              {props.head.map((name) => (
                <th scope="col" key={name}>
                  {name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>{list.items.map(props.row)}</tbody>
        </table>
      )}
      {list.loading ? <Busy label={`Loading ${props.caption.toLowerCase()}…`} /> : null}
      {list.hasMore && !list.loading ? <Button onClick={list.loadMore}>Load more</Button> : null}
    </div>
  );
}
