import type { Schemas } from '../../../api';
import { Button } from '../../../ui/kit';

/** "Previous" and "Next" for a list the API answers in numbered pages; nothing when there is one page. */
export function Pager(props: { label: string; meta: Schemas['PageMeta'] | undefined; go: (page: number) => void }) {
  const { meta } = props;
  if (!meta || (!meta.has_prev && !meta.has_next)) return null;
  return (
    <nav class="pager" aria-label={props.label}>
      <Button disabled={!meta.has_prev} onClick={() => props.go(meta.page - 1)}>
        Previous page
      </Button>
      <span>
        Page {meta.page} of {Math.max(meta.pages, 1)}
      </span>
      <Button disabled={!meta.has_next} onClick={() => props.go(meta.page + 1)}>
        Next page
      </Button>
    </nav>
  );
}
