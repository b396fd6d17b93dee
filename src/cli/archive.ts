import { loadConfig } from '../lib/config.js';
import { parseDuration } from '../lib/durations.js';
import { ArchiveError, listArchives, openArchive, restoreArchive } from '../server/archive.js';
import { openContext } from '../server/runtime.js';
import { UsageError, output, parseFlags } from './args.js';

export const ARCHIVE_HELP = `svc archive list [--dir DIR] [--json]
  Lists the archives of retired partitions in SVC_ARCHIVE_DIR (or DIR): range, rows, size, and any
  that are incomplete or damaged.
svc archive restore FILE [--for 7d] [--json]
  Brings an archive back (FILE: its .manifest.json or .jsonl.gz): its deliveries, attempts and events
  are read and replayed through the API again, until the time printed (now + --for), when retention
  retires them again.`;

/** `svc archive list|restore` (server/archive.ts). */
export async function archiveCommand(args: string[]): Promise<void> {
  const [sub, ...rest] = args;
  if (sub === undefined || sub === '--help' || sub === '-h') return void console.log(ARCHIVE_HELP);
  if (sub === 'list') {
    const flags = parseFlags(rest, { dir: { type: 'string' } }, 'archive list');
    if (flags.help) return void console.log(ARCHIVE_HELP);
    const dir = flags.dir ?? loadConfig().archiveDir;
    if (!dir) throw new UsageError('set SVC_ARCHIVE_DIR or give --dir DIR');
    const archives = await listArchives(dir);
    if (flags.json) return output(true, { archives });
    if (archives.length === 0) return void console.log(`no archives in ${dir}`);
    for (const a of archives) {
      if (!a.manifest) console.log(`${a.file}  INCOMPLETE: ${a.problem}`);
      else {
        const m = a.manifest;
        const rows = m.tables.map((t) => `${t.table} ${t.rows}`).join(', ');
        console.log(`${a.file}  ${m.from ?? 'start'} .. ${m.to}  ${rows}  ${m.bytes} bytes`);
      }
    }
    return;
  }
  if (sub === 'restore') {
    const positional = rest.filter((a, i) => !a.startsWith('-') && rest[i - 1] !== '--for');
    const flags = parseFlags(rest.filter((a) => !positional.includes(a)), { for: { type: 'string' } }, 'archive restore');
    if (flags.help) return void console.log(ARCHIVE_HELP);
    if (positional.length !== 1) throw new UsageError('svc archive restore FILE: name one archive');
    const keepMs = parseDuration(flags.for ?? '7d');
    if (keepMs === null || keepMs <= 0) throw new UsageError(`--for must be a duration such as 2h or 7d, got "${flags.for}"`);
    // Checked before any connection: a broken archive is refused without touching the database.
    await openArchive(positional[0]).catch((error: unknown) => {
      throw error instanceof ArchiveError ? new UsageError(error.message) : error;
    });
    const ctx = await openContext(loadConfig(), { quiet: true });
    try {
      const until = new Date(ctx.clock.now().getTime() + keepMs);
      const restored = await restoreArchive(ctx.db, positional[0], until).catch((error: unknown) => {
        if (error instanceof ArchiveError) throw new UsageError(error.message);
        throw error;
      });
      if (flags.json) output(true, { restored: restored.rows, until: until.toISOString() });
      else {
        const rows = Object.entries(restored.rows).map(([t, n]) => `${n} ${t}`).join(', ');
        console.log(`restored ${rows} (${restored.manifest.from ?? 'start'} .. ${restored.manifest.to}); readable and replayable until ${until.toISOString()}`);
      }
    } finally {
      await ctx.db.close();
    }
    return;
  }
  throw new UsageError(`unknown archive command "${sub}"\n${ARCHIVE_HELP}`);
}
