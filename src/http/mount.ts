import { Type, type TObject, type TProperties } from '@sinclair/typebox';

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
      ...(inPath ? { workspaceId: Type.String({ description: 'Workspace id (wsp_...).' }) } : {}),
      ...extra,
    }),
}));

export const WorkspaceHeader = Type.Object({
  'service-workspace-id': Type.Optional(
    Type.String({ description: 'Workspace for a personal access token on /v1/<resource> routes; must match the path when both are given.' }),
  ),
});

/** Path parameters are any short string: an id of the wrong shape is a 404, never a 400 or 500. */
export const IdParam = (description: string) => Type.String({ description });
