import { Type, type TObject, type TProperties } from '@sinclair/typebox';
import type { IdPrefix } from '../lib/ids.js';
import { EXAMPLE_WORKSPACE_ID } from './examples.js';

/**
 * Workspace resources answer at `/v1/<resource>` and at `/v1/workspaces/{workspaceId}/<resource>`;
 * a module is registered once per mount and asks the mount for its path parameters.
 */
export interface Mount {
  prefix: string;
  /** True for the `/v1/workspaces/{workspaceId}` mount. */
  inPath: boolean;
  params(extra?: TProperties): TObject;
}

export const WORKSPACE_MOUNTS: Mount[] = [false, true].map((inPath) => ({
  prefix: inPath ? '/v1/workspaces/:workspaceId' : '/v1',
  inPath,
  params: (extra: TProperties = {}): TObject =>
    Type.Object({
      ...(inPath ? { workspaceId: IdParam('wsp', 'Workspace id (wsp_...).') } : {}),
      ...extra,
    }),
}));

export const WorkspaceHeader = Type.Object({
  'service-workspace-id': Type.Optional(
    Type.String({
      description: 'Workspace for a personal access token on /v1/<resource> routes; must match the path when both are given.',
      examples: [EXAMPLE_WORKSPACE_ID],
    }),
  ),
});

/**
 * Path parameters are any short string: an id of the wrong shape is a 404, never a 400 or 500.
 * The document shows the id's shape (server/openapi/document.ts turns `x-id-prefix` into a pattern),
 * which validation leaves alone.
 */
export function IdParam(prefix: IdPrefix, description: string) {
  return Type.String({ description, 'x-id-prefix': prefix });
}
