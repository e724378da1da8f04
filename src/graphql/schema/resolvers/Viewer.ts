import type { ViewerResolvers } from '../../../__generated__/resolvers-types.js';

export const Viewer: ViewerResolvers = {
  id: (principal) => principal.user.id,
  username: (principal) => principal.user.username,
  domain: (principal) => principal.user.domain,
  isAdmin: (principal) => principal.user.isAdmin,
  authenticatedBy: (principal) => principal.authenticatedBy,
};
