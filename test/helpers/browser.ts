import { chromium, type Browser } from 'playwright-core';
import { chromiumPath } from './service-list.js';

/**
 * Chromium (CHROMIUM_PATH, else `chromium` on PATH: Debian's package) driven headless through playwright-core.
 * No host but 127.0.0.1 resolves, so whatever a page asks for elsewhere cannot leave the machine.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: chromiumPath() ?? 'chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1',
    ],
  });
}
