import type { ApiKeyResolvers } from '../../../__generated__/resolvers-types.js';
import { DEFAULT_USAGE_DAYS } from '../../../ports/backend.js';
import { requirePrincipal } from './helpers.js';

export const ApiKey: ApiKeyResolvers = {
  // asked as the caller: a key listed by an administrator is read as the administrator may
  usage: (key, { days }, context) => context.backend.keys.keyUsage(requirePrincipal(context), key.id, days ?? DEFAULT_USAGE_DAYS, { signal: context.signal }),
};
