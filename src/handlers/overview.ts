import { ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { adminOverviewView } from './views.js';

export const getAdminOverview: Handler<'getAdminOverview'> = async (input, { overview }) =>
  ok(adminOverviewView(await overview.read(signedIn(input))));
