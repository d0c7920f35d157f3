/** What each generated client's flow reports back, for the test to check against the database. */
export interface FlowResult {
  registeredId: number;
  meEmail: string;
  refreshedSid: string;
  pageMeta: { page: number; per_page: number; total: number };
  pageIds: number[];
  cursorIds: number[];
  cursorNext: number | null;
  createdId: number;
  updatedName: string;
  restoredDeletedAt: string | null | undefined;
  /** Statuses of the requests expected to fail: me after logout. */
  meAfterLogout: number;
}

export interface FlowInput {
  baseUrl: string;
  admin: { email: string; password: string };
  email: string;
  password: string;
  newEmail: string;
}

/** What orval's flow is given and reports: a form login and a form refresh. */
export interface OrvalFlowInput {
  baseUrl: string;
  email: string;
  password: string;
}

export interface OrvalFlowResult {
  userId: number;
  signedInSid: string;
  signedInRefreshToken: string;
  refreshedSid: string;
  refreshToken: string;
  /** The form bodies as sent. */
  sent: string[];
}

export function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new Error(`SDK flow: ${message}`);
}

export const sidOf = (token: string): string => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()).sid;
