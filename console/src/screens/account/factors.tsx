import { useState } from 'preact/hooks';
import { api, ok, type Schemas } from '../../api';
import { text } from './form-data';
import { Button, ConfirmButton, Empty, Field, Form, Loading, Notice, Secret, Section, When, type Loaded } from '../../ui/kit';
import { QrCode } from '../../ui/qr';
import { useProven } from './reauth';

export type FactorList = Schemas['FactorListResponse'];
type Enrolment = Schemas['TotpEnrolment'];

/** GET /api/auth/mfa/factors: TOTP apps and passkeys, and how many recovery codes are left. */
export const loadFactors = () => ok(api.GET('/api/auth/mfa/factors'));

/** Removes a factor (a TOTP app or a passkey), after saying what follows. */
export function RemoveFactor(props: { factor: Schemas['Factor']; last: boolean; onDone: () => void }) {
  const { factor } = props;
  const kind = factor.type === 'totp' ? 'authenticator app' : 'passkey';
  return (
    <ConfirmButton
      label="Remove"
      ariaLabel={`Remove the ${kind} ${factor.name}`}
      title={`Remove the ${kind} “${factor.name}”?`}
      consequence={
        <p>
          It no longer signs you in.
          {props.last ? ' It is your last second factor: your recovery codes stop working and a password alone signs you in again.' : ''}
        </p>
      }
      action={async () => {
        await ok(api.DELETE('/api/auth/mfa/factors/{id}', { params: { path: { id: factor.id } } }));
        props.onDone();
      }}
    />
  );
}

/** Ten single-use codes, shown once. */
export function RecoveryCodes(props: { codes: string[] }) {
  const [copied, setCopied] = useState(false);
  return (
    <div class="recovery-codes">
      <Notice>
        Your recovery codes, shown only now: each signs you in once when your second factor is not at hand. Keep them somewhere safe.
      </Notice>
      <ol class="codes mono" aria-label="Recovery codes">
        {props.codes.map((code) => (
          <li key={code}>{code}</li>
        ))}
      </ol>
      <div>
        <Button
          onClick={() =>
            void navigator.clipboard?.writeText(props.codes.join('\n')).then(
              () => setCopied(true),
              () => setCopied(false),
            )
          }
        >
          {copied ? 'Copied' : 'Copy the codes'}
        </Button>
      </div>
    </div>
  );
}

/** Enrolling an authenticator app: its QR code and secret, then a code from it. */
function TotpEnrolment(props: { onDone: (codes: string[] | undefined) => void; onCancel: () => void }) {
  const proven = useProven();
  const [enrolment, setEnrolment] = useState<Enrolment>();

  const start = async (data: FormData) => {
    const name = text(data, 'name').trim();
    const answer = await proven(() => ok(api.POST('/api/auth/mfa/totp', { body: name ? { name } : {} })));
    setEnrolment(answer.data);
  };

  const confirm = async (data: FormData) => {
    if (!enrolment) return;
    const answer = await ok(
      api.POST('/api/auth/mfa/totp/{id}/confirm', {
        params: { path: { id: enrolment.factor_id } },
        body: { code: text(data, 'code').replace(/\s+/g, '') },
      }),
    );
    props.onDone(answer.data.recovery_codes);
  };

  if (!enrolment)
    return (
      <div class="enrolment" key="start">
        <Form key="start" label="Add an authenticator app" submit="Continue" action={start}>
          <Field label="Name of the app or device" hint="To tell your factors apart, e.g. Phone.">
            <input name="name" maxLength={100} placeholder="Phone" />
          </Field>
        </Form>
        <div>
          <Button onClick={props.onCancel}>Cancel</Button>
        </div>
      </div>
    );

  return (
    <div class="enrolment" key="confirm">
      <p>Scan the QR code with your authenticator app, or type the secret key into it. Then enter the code the app shows.</p>
      <div class="enrolment-codes">
        <QrCode value={enrolment.otpauth_url} label="QR code for your authenticator app" />
        <Secret label="Secret key" value={enrolment.secret} />
      </div>
      <Form key="confirm" label="Confirm the authenticator app" submit="Confirm" action={confirm}>
        <Field label="Code from the app" hint="Six digits; a new one every 30 seconds.">
          <input name="code" inputMode="numeric" autocomplete="one-time-code" pattern="[0-9 ]{6,7}" required />
        </Field>
      </Form>
      <div>
        <Button onClick={props.onCancel}>Cancel</Button>
      </div>
    </div>
  );
}

/** Authenticator apps (TOTP) and recovery codes. */
export function Factors(props: { factors: Loaded<FactorList> }) {
  const proven = useProven();
  const [enrolling, setEnrolling] = useState(false);
  const [codes, setCodes] = useState<string[]>();
  const [added, setAdded] = useState(false);

  return (
    <Section
      title="Authenticator apps"
      actions={
        enrolling ? null : (
          <Button
            variant="primary"
            onClick={() => {
              setEnrolling(true);
              setAdded(false);
              setCodes(undefined);
            }}
          >
            Add an authenticator app
          </Button>
        )
      }
    >
      {enrolling ? (
        <TotpEnrolment
          onCancel={() => setEnrolling(false)}
          onDone={(recovery) => {
            setEnrolling(false);
            setAdded(true);
            setCodes(recovery);
            props.factors.reload();
          }}
        />
      ) : null}
      {added ? <Notice>The authenticator app is added: signing in with your password now asks for a code from it.</Notice> : null}
      {codes ? <RecoveryCodes codes={codes} /> : null}
      <Loading loaded={props.factors} label="Loading your factors…">
        {(list) => {
          const apps = list.data.filter((factor) => factor.type === 'totp');
          return (
            <>
              {apps.length === 0 ? (
                <Empty>No authenticator app yet: add one so that a password alone no longer signs you in.</Empty>
              ) : (
                <div class="table-wrap">
                  <table>
                    <caption>Authenticator apps</caption>
                    <thead>
                      <tr>
                        <th scope="col">Name</th>
                        <th scope="col">Added</th>
                        <th scope="col">Last used</th>
                        <th scope="col">
                          <span class="visually-hidden">Actions</span>
                        </th>
                      </tr>
                    </thead>
                    <tbody>
                      {apps.map((factor) => (
                        <tr key={factor.id}>
                          <td>{factor.name}</td>
                          <td>
                            <When at={factor.created_at} />
                          </td>
                          <td>
                            <When at={factor.last_used_at} />
                          </td>
                          <td>
                            <RemoveFactor factor={factor} last={list.data.length === 1} onDone={() => props.factors.reload()} />
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </div>
              )}
              {list.data.length > 0 ? (
                <div class="recovery">
                  <p>
                    Recovery codes left: <strong>{list.meta.recovery_codes_remaining}</strong> of 10.
                  </p>
                  <ConfirmButton
                    label="New recovery codes"
                    variant="plain"
                    title="Make new recovery codes?"
                    consequence={<p>Ten new codes are shown once; the codes you have now stop working.</p>}
                    confirm="Make new codes"
                    action={async () => {
                      const answer = await proven(() => ok(api.POST('/api/auth/mfa/recovery-codes', { body: {} })));
                      setCodes(answer.data.recovery_codes);
                      setAdded(false);
                      props.factors.reload();
                    }}
                  />
                </div>
              ) : null}
            </>
          );
        }}
      </Loading>
    </Section>
  );
}
