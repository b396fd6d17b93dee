import { readFileSync } from 'node:fs';
import { SecretBox, parseMasterKey } from '../lib/secretbox.js';
import { checkValue, rotateMasterKey } from '../server/master-key.js';
import { storeMasterKeyFile } from '../server/runtime.js';
import { UsageError, required } from './args.js';
import { str, type AdminCommand } from './admin-command.js';

function newKey(text: string): Buffer {
  const key = parseMasterKey(text.trim());
  if (!key) throw new UsageError('--new must be 32 bytes written as 64 hex characters or base64 (make one with svc admin master-key)');
  return key;
}

/**
 * `svc admin rotate-master-key --new KEY`: re-encrypts every secret under KEY in one transaction
 * (server/master-key.ts). The current key is the one the command runs with (SVC_MASTER_KEY, or the
 * data folder's key file, which then receives the new key). `--new -` reads KEY from standard
 * input, so it need not appear in the process list or the shell's history.
 */
export const ROTATE_MASTER_KEY: AdminCommand = {
  usage: 'svc admin rotate-master-key --new KEY|- [--json]   (re-encrypts every secret; stop every process first, then start them with KEY)',
  flags: { new: str },
  check: (v) => {
    const given = required(v, 'new');
    if (given !== '-') newKey(given);
  },
  run: async (v, ctx) => {
    const given = v.new as string;
    const next = newKey(given === '-' ? readFileSync(0, 'utf8') : given);
    const box = new SecretBox(next);
    if (checkValue(box) === checkValue(ctx!.secrets)) throw new UsageError('--new is the master key already in use');
    const { reencrypted } = await rotateMasterKey(ctx!.db, ctx!.secrets, box, ctx!.clock.now());
    const file = ctx!.config.masterKey ? null : storeMasterKeyFile(ctx!.config, next);
    return {
      rotated: true,
      reencrypted,
      next: file ? `the new key is in ${file}` : 'set SVC_MASTER_KEY to the new key in every process before starting it',
    };
  },
};
