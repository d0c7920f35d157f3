import type { ComponentChildren } from 'preact';
import { Link } from 'wouter-preact';
import { api, ok, type Schemas } from '../../api';
import { Button, Loading, Page, Section, useLoad, When } from '../../ui/kit';
import './overview.css';

type Overview = Schemas['AdminOverview'];
type Backlog = Schemas['Backlog'];

/** One figure with what it counts, and where to look further when there is somewhere. */
function Stat(props: { value: number | string; label: string; href?: string; tone?: 'ok' | 'warn'; children?: ComponentChildren }) {
  return (
    <div class={`stat${props.tone === 'warn' ? ' stat-warn' : ''}`}>
      <span class="stat-value">{props.value}</span>
      <span class="stat-label">{props.href ? <Link href={props.href}>{props.label}</Link> : props.label}</span>
      {props.children ? <span class="stat-note">{props.children}</span> : null}
    </div>
  );
}

function BacklogStats(props: { name: string; backlog: Backlog; href?: string }) {
  const { backlog } = props;
  return (
    <>
      <Stat value={backlog.pending} label={`${props.name} waiting`} href={props.href} tone={backlog.pending > 0 ? 'warn' : 'ok'}>
        {backlog.oldest_pending_at ? (
          <>
            oldest queued <When at={backlog.oldest_pending_at} />
          </>
        ) : (
          'nothing waits'
        )}
      </Stat>
      <Stat value={backlog.failed} label={`${props.name} given up (24 h)`} href={props.href} tone={backlog.failed > 0 ? 'warn' : 'ok'} />
    </>
  );
}

function uptime(seconds: number): string {
  const days = Math.floor(seconds / 86_400);
  const hours = Math.floor((seconds % 86_400) / 3600);
  const minutes = Math.floor((seconds % 3600) / 60);
  if (days > 0) return `${days} d ${hours} h`;
  if (hours > 0) return `${hours} h ${minutes} min`;
  return `${minutes} min`;
}

/** The deployment at a glance: people, the last day's sign-ins, this process, and what waits to be sent. */
export function Overview() {
  const loaded = useLoad(() => ok(api.GET('/api/admin/overview')).then((body) => body.data), []);
  return (
    <Page title="Overview" actions={<Button onClick={() => loaded.reload()}>Refresh</Button>}>
      <Loading loaded={loaded} label="Loading the overview…">
        {(overview: Overview) => {
          const failuresSince = encodeURIComponent(overview.sign_ins.since);
          return (
            <>
              <Section title="Users">
                <div class="cards">
                  <Stat value={overview.users.total} label="Users" href="/users" />
                  <Stat value={overview.users.active} label="Active" href="/users?status=active" />
                  <Stat value={overview.users.disabled} label="Disabled" href="/users?status=inactive" />
                  <Stat value={overview.users.deleted} label="Deleted" href="/users?status=deleted" />
                </div>
              </Section>
              <Section title="Sign-ins in the last 24 hours">
                <div class="cards">
                  <Stat
                    value={overview.sign_ins.succeeded}
                    label="Sign-ins"
                    href={`/audit?event_type=login.succeeded&since=${failuresSince}`}
                  />
                  <Stat
                    value={overview.sign_ins.failed}
                    label="Failed sign-ins"
                    href={`/audit?event_type=login.failed&since=${failuresSince}`}
                    tone={overview.sign_ins.failed > 0 ? 'warn' : 'ok'}
                  />
                </div>
              </Section>
              <Section title="Health">
                <div class="cards">
                  <Stat
                    value={overview.health.status === 'ok' ? 'OK' : 'Stopping'}
                    label="This process"
                    tone={overview.health.status === 'ok' ? 'ok' : 'warn'}
                  >
                    version {overview.health.version}, up {uptime(overview.health.uptime_seconds)}
                  </Stat>
                </div>
              </Section>
              <Section title="Backlogs">
                <div class="cards">
                  <BacklogStats name="Mails" backlog={overview.mail} />
                  <BacklogStats name="Webhook deliveries" backlog={overview.webhooks} href="/webhooks" />
                </div>
              </Section>
              <p class="overview-time">
                As of <When at={overview.generated_at} />.
              </p>
            </>
          );
        }}
      </Loading>
    </Page>
  );
}
