import { createSignInCode, findUserByIdOrEmail, signInUrl } from '../dashboard/store.js';
import { toIso } from '../lib/iso.js';
import { CliError, required } from './args.js';
import { str, type AdminCommand } from './admin-command.js';

/** `svc admin dashboard-link --user U`: a one-time sign-in link to the dashboard, good for 10 minutes. */
export const DASHBOARD_LINK: Record<string, AdminCommand> = {
  'dashboard-link': {
    usage: 'svc admin dashboard-link --user USER_ID|EMAIL [--json]   (a one-time dashboard sign-in link, valid 10 minutes)',
    flags: { user: str },
    check: (v) => void required(v, 'user'),
    run: async (v, ctx) => {
      const user = await findUserByIdOrEmail(ctx!.db, v.user as string);
      if (!user) throw new CliError(`there is no user "${v.user}" (list them with svc admin list-users)`);
      const link = await createSignInCode(ctx!.db, user.id, ctx!.clock.now());
      return { url: signInUrl(ctx!.config.publicUrl, link.code), userId: user.id, email: user.email, expiresAt: toIso(link.expiresAt) };
    },
  },
};
