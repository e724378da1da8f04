import type { EventInput, ItemInput, MutationResolvers } from '../../../__generated__/resolvers-types.js';
import { parseItemRecord } from '../../../model/itemRecord.js';
import { DEFAULT_ROTATION_GRACE_SECONDS, type CallOptions, type EventInputModel, type ItemModel } from '../../../ports/backend.js';
import type { GatewayContext } from '../context.js';
import { requirePrincipal } from './helpers.js';

function toEventModel(e: EventInput, now: number): EventInputModel {
  return {
    kind: e.kind,
    itemId: e.itemId,
    sessionId: e.sessionId ?? null,
    userId: e.userId ?? null,
    orderId: e.orderId ?? null,
    time: e.time ?? now,
    eventId: e.eventId ?? null,
    trackingId: e.trackingId ?? null,
  };
}

/** An item record through the one parser of records, so every source gives one shape. */
function toItemModel(input: ItemInput): ItemModel {
  const { attributes, ...fields } = input;
  const record: Record<string, unknown> = { ...fields };
  if (attributes) record.attributes = Object.fromEntries(attributes.map((a) => [a.name, a.value]));
  return parseItemRecord(record);
}

const callOptions = (context: GatewayContext): CallOptions =>
  context.clientAddress === undefined ? { signal: context.signal } : { signal: context.signal, clientAddress: context.clientAddress };

export const Mutation: MutationResolvers = {
  createApiKey: (_, { input }, context) =>
    context.backend.keys.createKey(requirePrincipal(context), input, { signal: context.signal }),

  rotateApiKey: (_, { id, gracePeriodSeconds }, context) =>
    context.backend.keys.rotateKey(requirePrincipal(context), id, gracePeriodSeconds ?? DEFAULT_ROTATION_GRACE_SECONDS, { signal: context.signal }),

  updateApiKey: (_, { id, input }, context) =>
    context.backend.keys.updateKey(requirePrincipal(context), id, input, { signal: context.signal }),

  deleteApiKey: async (_, { id }, context) => {
    await context.backend.keys.deleteKey(requirePrincipal(context), id, { signal: context.signal });
    return { ok: true, result: 'DELETED', id };
  },

  recordEvents: (_, { events }, context) => {
    const principal = requirePrincipal(context);
    const now = Date.now();
    return context.backend.ingest.recordEvents(principal, events.map((e) => toEventModel(e, now)), callOptions(context));
  },

  upsertItems: (_, { items }, context) =>
    context.backend.ingest.upsertItems(requirePrincipal(context), items.map(toItemModel), callOptions(context)),
};
