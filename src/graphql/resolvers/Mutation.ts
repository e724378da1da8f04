import type { MutationResolvers } from '../../__generated__/resolvers-types.js';
import { requirePrincipal } from './helpers.js';

export const Mutation: MutationResolvers = {
  createApiKey: (_, { input }, context) =>
    context.backend.keys.createKey(requirePrincipal(context), input, { signal: context.signal }),

  deleteApiKey: async (_, { id }, context) => {
    await context.backend.keys.deleteKey(requirePrincipal(context), id, { signal: context.signal });
    return { ok: true, result: 'DELETED', id };
  },
};
