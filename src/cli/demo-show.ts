import type { Config } from '../lib/config.js';
import { CliError, output } from './args.js';
import { demoFile, demoOwner, readDemo } from './demo-file.js';
import { demoText } from './demo-text.js';
import { runningPublicUrl } from './public-url.js';

export const DEMO_HELP = `svc demo [--json]
  Creates a fresh demo set (with sample products and a paused webhook endpoint) and prints its ids and credentials.
svc demo --show [--json]
  Prints again the demo set that svc serve --demo (npm start) seeded in SVC_DATA_DIR, and the command
  that makes a dashboard sign-in link for its owner. Reads SVC_DATA_DIR/demo.json only: no database.`;

/** `svc demo --show`: the kept demo credentials, on the address of the svc serve running on the folder. */
export function showDemo(config: Config, json: boolean): void {
  const demo = readDemo(config.dataDir);
  if (!demo) throw new CliError(`there is no demo in ${config.dataDir} (${demoFile(config.dataDir)}): npm start (svc serve --demo) seeds one on its first start`);
  if (json) return output(true, demo as unknown as Record<string, unknown>);
  const baseUrl = runningPublicUrl(config) ?? config.publicUrl;
  const owner = demoOwner(demo);
  process.stdout.write(
    demoText(demo, baseUrl) + `Dashboard sign-in for ${owner.email}: npx svc admin dashboard-link   (prints a one-time link, valid 10 minutes)\n`,
  );
}
