import { accepted, created, noContent, ok, signedIn } from './reply.js';
import type { Handler } from './types.js';
import { webhookDeliveryView, webhookEndpointView } from './views.js';

export const listWebhooks: Handler<'listWebhooks'> = async (input, { webhooks }) => {
  const { rows, meta } = await webhooks.list(signedIn(input), input.query);
  return ok(rows.map(webhookEndpointView), { meta });
};

export const createWebhook: Handler<'createWebhook'> = async (input, { webhooks }) => {
  const { endpoint, secret } = await webhooks.create(signedIn(input), input.body);
  return created({ ...webhookEndpointView(endpoint), secret });
};

export const getWebhook: Handler<'getWebhook'> = async (input, { webhooks }) =>
  ok(webhookEndpointView(await webhooks.get(signedIn(input), input.path.id)));

export const updateWebhook: Handler<'updateWebhook'> = async (input, { webhooks }) =>
  ok(webhookEndpointView(await webhooks.update(signedIn(input), input.path.id, input.body)));

export const deleteWebhook: Handler<'deleteWebhook'> = async (input, { webhooks }) => {
  await webhooks.remove(signedIn(input), input.path.id);
  return noContent();
};

export const rotateWebhookSecret: Handler<'rotateWebhookSecret'> = async (input, { webhooks }) => {
  const { secret, previousSecretExpiresAt } = await webhooks.rotateSecret(signedIn(input), input.path.id);
  return ok({ secret, previous_secret_expires_at: previousSecretExpiresAt.toISOString() });
};

export const listWebhookDeliveries: Handler<'listWebhookDeliveries'> = async (input, { webhooks }) => {
  const { rows, meta } = await webhooks.deliveries(signedIn(input), input.path.id, input.query);
  return ok(rows.map(webhookDeliveryView), { meta });
};

export const retryWebhookDelivery: Handler<'retryWebhookDelivery'> = async (input, { webhooks }) =>
  accepted(webhookDeliveryView(await webhooks.retry(signedIn(input), input.path.id, input.path.delivery_id)));
