import { createSignInCode, findUserByIdOrEmail, signInUrl } from '../dashboard/store.js';
import { toIso } from '../lib/iso.js';
import { CliError, required } from './args.js';
import { str, type AdminCommand } from './admin-command.js';
import { runningPublicUrl } from './public-url.js';

const USAGE = 'svc admin dashboard-link --user USER_ID|EMAIL [--json]   (a one-time dashboard sign-in link, valid 10 minutes)';

/**
 * `svc admin dashboard-link --user U`: a one-time sign-in link to the dashboard, good for 10 minutes,
 * on the address of the service that will read it.
 */
export const DASHBOARD_LINK: Record<string, AdminCommand> = {
  'dashboard-link': {
    usage: USAGE,
    help: `${USAGE}
  The link is on the address of the service that reads it: the public URL of the svc serve
  running on SVC_DATA_DIR (its SVC_PUBLIC_URL, or http://HOST:PORT with the port it listens on);
  when none runs, or with DATABASE_URL, this command's own SVC_PUBLIC_URL, else http://HOST:PORT.`,
    flags: { user: str },
    check: (v) => void required(v, 'user'),
    run: async (v, ctx) => {
      const user = await findUserByIdOrEmail(ctx!.db, v.user as string);
      if (!user) throw new CliError(`there is no user "${v.user}" (list them with svc admin list-users)`);
      const link = await createSignInCode(ctx!.db, user.id, ctx!.clock.now());
      const publicUrl = runningPublicUrl(ctx!.config) ?? ctx!.config.publicUrl;
      return { url: signInUrl(publicUrl, link.code), userId: user.id, email: user.email, expiresAt: toIso(link.expiresAt) };
    },
  },
};
