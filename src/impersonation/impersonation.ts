import type { Kysely } from 'kysely';
import { recordEvent } from '../audit/audit-events.js';
import type { Transact } from '../db/transaction.js';
import type { Database } from '../db/types.js';
import type { AccountMail } from '../mail/account-mail.js';
import type { ClientInfo } from '../principal.js';
import { findAuthenticatedUser, findSessionAssurance } from '../sessions/session-repository.js';
import type { TokenService } from '../sessions/tokens.js';
import { findUserById } from '../users/user-repository.js';

/** The person a subject token speaks for, and the service session it belongs to. */
export interface SubjectOfToken {
  userId: number;
  sessionId: string;
}

/** Why an exchange was refused, as the token endpoint says it (RFC 6749 §5.2, RFC 8693 §2.2.2). */
export type Refusal = { error: 'invalid_grant' | 'access_denied' | 'invalid_request'; description: string };

export type Exchanged =
  { ok: true; accessToken: string; expiresInSeconds: number; userId: number; adminId: number } | { ok: false; refusal: Refusal };

const USER_ID = /^[1-9]\d{0,9}$/;

const refused = (error: Refusal['error'], description: string): Exchanged => ({ ok: false, refusal: { error, description } });

/**
 * An admin acting as a user for support: the admin's live access token is exchanged for an access
 * token of the user that names the admin (`act`), lives IMPERSONATION_TOKEN_MINUTES, is never
 * refreshed and ends with the admin's session. The exchange is the audit event
 * `impersonation.started`; with IMPERSONATION_NOTICE the user is told by mail.
 */
export class Impersonation {
  constructor(
    private readonly db: Kysely<Database>,
    private readonly transact: Transact,
    private readonly tokens: TokenService,
    private readonly mail: AccountMail,
    private readonly notice: boolean,
  ) {}

  /** `subject`: whom the subject token speaks for, undefined when it is not a live access token. */
  async start(subject: SubjectOfToken | undefined, requestedSubject: string, clientId: string, client: ClientInfo): Promise<Exchanged> {
    if (!subject) return refused('invalid_grant', 'subject_token is not a live access token');
    const admin = await findAuthenticatedUser(this.db, subject.userId, subject.sessionId);
    const assurance = admin && (await findSessionAssurance(this.db, subject.sessionId));
    if (!admin || !assurance) return refused('invalid_grant', 'subject_token is not a live access token');
    if (admin.role !== 'admin') return refused('access_denied', 'only an admin may act as another user');
    const user = USER_ID.test(requestedSubject) ? await findUserById(this.db, Number(requestedSubject)) : undefined;
    if (!user || user.deleted_at !== null || !user.is_active)
      return refused('invalid_grant', 'requested_subject is not the id of an active user');
    if (user.id === admin.id) return refused('invalid_request', 'requested_subject is the admin themselves');
    const minutes = this.tokens.impersonationTtlSeconds / 60;
    await this.transact(async (trx) => {
      await recordEvent(trx, {
        type: 'impersonation.started',
        actor: admin.id,
        subject: user.id,
        details: { client_id: clientId, session_id: subject.sessionId, minutes },
        origin: client,
      });
      if (this.notice) await this.mail.sendImpersonationNotice(trx, user, admin, minutes);
    });
    if (this.notice) this.mail.flush();
    const accessToken = this.tokens.issueImpersonation(user, admin.id, subject.sessionId, assurance.authenticated_at, {
      amr: assurance.amr,
      aal: assurance.aal,
    });
    return { ok: true, accessToken, expiresInSeconds: this.tokens.impersonationTtlSeconds, userId: user.id, adminId: admin.id };
  }
}
