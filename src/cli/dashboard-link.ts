import { createSignInCode, findUserByIdOrEmail, signInUrl } from '../account/sign-in-store.js';
import { toIso } from '../lib/iso.js';
import { CliError } from './args.js';
import { str, type AdminCommand } from './admin-command.js';
import { defaultOwner } from './demo-file.js';
import { runningPublicUrl } from './public-url.js';

const USAGE = 'svc admin dashboard-link [--user USER_ID|EMAIL] [--json]   (a one-time dashboard sign-in link, valid 10 minutes)';

/**
 * `svc admin dashboard-link [--user U]`: a one-time sign-in link to the dashboard, good for 10 minutes,
 * on the address of the service that will read it; by default for the demo owner, or the only owner.
 */
export const DASHBOARD_LINK: Record<string, AdminCommand> = {
  'dashboard-link': {
    usage: USAGE,
    help: `${USAGE}
  The link is on the address of the service that reads it: the public URL of the svc serve
  running on SVC_DATA_DIR (its SVC_PUBLIC_URL, or http://HOST:PORT with the port it listens on);
  when none runs, or with DATABASE_URL, this command's own SVC_PUBLIC_URL, else http://HOST:PORT.
  Without --user: the demo owner of SVC_DATA_DIR (its demo.json), else the only organization owner.`,
    flags: { user: str },
    run: async (v, ctx) => {
      const named = (v.user as string | undefined) ?? (await defaultOwner(ctx!.db, ctx!.config.databaseUrl ? null : ctx!.config.dataDir));
      if (!named) throw new CliError('there is no demo owner and not exactly one organization owner: name the user with --user USER_ID|EMAIL (list them with svc admin list-users)');
      const user = await findUserByIdOrEmail(ctx!.db, named);
      if (!user) throw new CliError(`there is no user "${named}" (list them with svc admin list-users)`);
      const link = await createSignInCode(ctx!.db, user.id, ctx!.clock.now());
      const publicUrl = runningPublicUrl(ctx!.config) ?? ctx!.config.publicUrl;
      return { url: signInUrl(publicUrl, link.code), userId: user.id, email: user.email, expiresAt: toIso(link.expiresAt) };
    },
  },
};
