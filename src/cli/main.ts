#!/usr/bin/env -S node --max-semi-space-size=32
// The flags on the line above are scripts/node-flags.mjs (why they are there).
import { createDemo } from './demo.js';
import { ADMIN_COMMANDS } from './admin.js';
import { archiveCommand } from './archive.js';
import { UsageError, output, parseFlags } from './args.js';
import { DEMO_HELP, showDemo } from './demo-show.js';
import { demoText } from './demo-text.js';
import { describeFailure } from './failure.js';
import { connectionOf, CONNECTION_FLAGS } from './connection.js';
import { LISTEN_FLAGS, LISTEN_HELP, listen, listenOptions } from './listen.js';
import { TRIGGER_HELP, trigger, triggerText, triggerType } from './trigger.js';
import { serve } from './serve.js';
import { WORKER_HELP, runWorker } from './worker.js';
import { loadConfig } from '../lib/config.js';
import { migrate } from '../db/migrate.js';
import { openDatabase } from '../db/open.js';
import { openContext } from '../server/runtime.js';

const HELP = `svc: commerce API with an event log and signed webhooks

Usage:
  svc serve [--demo]       run the API (seeds demo data into an empty embedded database with --demo)
  svc worker               run webhook delivery workers only (scale them apart from the API)
  svc migrate              apply database migrations
  svc demo [--json]        create a fresh demo organization, workspaces, users and credentials
  svc demo --show          print again the credentials npm start seeded, and how to sign in
  svc listen --forward-to URL  forward the live events of a running service to a local URL, signed
                           (--forward TYPE=URL routes types to different URLs; --print-json prints them)
  svc trigger TYPE         make a real change through the API that emits an event of TYPE (order.paid, ...)
  svc archive list|restore list the archives of retired partitions, or bring one back (SVC_ARCHIVE_DIR)
  svc admin <command>      manage users, organizations, workspaces, members, keys, tokens and the master key
  svc <command> --help     help for one command

Configuration comes from environment variables; see README.md.`;

function adminHelp(): string {
  return ['svc admin <command>:', ...Object.values(ADMIN_COMMANDS).map((c) => `  ${c.usage}`)].join('\n');
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    // No command is a wrong command line: the usage on stderr, status 2 (as for an unknown command).
    console.error(HELP);
    process.exitCode = 2;
    return;
  }
  if (command === '--help' || command === '-h' || command === 'help') {
    console.log(HELP);
    return;
  }
  if (command === 'serve') {
    const flags = parseFlags(rest, { demo: { type: 'boolean' } }, 'serve');
    if (flags.help) return void console.log('svc serve [--demo]\n  Runs the API on HOST:PORT. --demo seeds an empty embedded database and prints its credentials.\n  Settings come from the environment, not options: PORT=4000 svc serve (README.md lists them).');
    return serve(loadConfig(), { demo: flags.demo === true });
  }
  if (command === 'worker') {
    const flags = parseFlags(rest, {}, 'worker');
    if (flags.help) return void console.log(WORKER_HELP);
    return runWorker(loadConfig());
  }
  if (command === 'migrate') {
    const flags = parseFlags(rest, {}, 'migrate');
    if (flags.help) return void console.log('svc migrate [--json]\n  Applies pending migrations to DATABASE_URL or the embedded database.');
    const db = await openDatabase(loadConfig(), { log: () => {} });
    try {
      const applied = await migrate(db);
      output(flags.json, { applied });
    } finally {
      await db.close();
    }
    return;
  }
  if (command === 'demo') {
    const flags = parseFlags(rest, { show: { type: 'boolean' } }, 'demo');
    if (flags.help) return void console.log(DEMO_HELP);
    if (flags.show) return showDemo(loadConfig(), flags.json === true);
    const ctx = await openContext(loadConfig(), { quiet: true });
    try {
      const demo = await createDemo(ctx.db, ctx.config.publicUrl, ctx.clock.now(), ctx.secrets);
      if (flags.json) output(true, demo as unknown as Record<string, unknown>);
      else process.stdout.write(demoText(demo, ctx.config.publicUrl));
    } finally {
      await ctx.db.close();
    }
    return;
  }
  if (command === 'listen') {
    const flags = parseFlags(rest, LISTEN_FLAGS);
    if (flags.help) return void console.log(LISTEN_HELP);
    await listen(listenOptions(flags, process.env));
    // Stopped by a signal: connections kept alive for the next request must not hold the process.
    process.exit(0);
  }
  if (command === 'trigger') {
    // The event type comes first: svc trigger order.paid [flags].
    const [type, args] = rest[0]?.startsWith('-') ? [undefined, rest] : [rest[0], rest.slice(1)];
    const flags = parseFlags(args, CONNECTION_FLAGS);
    if (flags.help) return void console.log(TRIGGER_HELP);
    const result = await trigger(triggerType(type), connectionOf(flags, process.env));
    if (flags.json) output(true, result as unknown as Record<string, unknown>);
    else process.stdout.write(triggerText(result));
    return;
  }
  if (command === 'archive') return archiveCommand(rest);
  if (command === 'admin') {
    const [sub, ...args] = rest;
    if (sub === undefined || sub === '--help' || sub === '-h') return void console.log(adminHelp());
    const spec = ADMIN_COMMANDS[sub];
    if (!spec) throw new UsageError(`unknown admin command "${sub}"\n${adminHelp()}`);
    const flags = parseFlags(args, spec.flags, `admin ${sub}`);
    if (flags.help) return void console.log(spec.help ?? spec.usage);
    spec.check?.(flags as Record<string, string | boolean | undefined>);
    const ctx = spec.needsDb === false ? null : await openContext(loadConfig(), { quiet: true });
    try {
      const result = await spec.run(flags as Record<string, string | boolean | undefined>, ctx);
      if (spec.text && !flags.json) process.stdout.write(spec.text(result));
      else output(flags.json as boolean | undefined, result);
    } finally {
      await ctx?.db.close();
    }
    return;
  }
  throw new UsageError(`unknown command "${command}"\n\n${HELP}`);
}

main(process.argv.slice(2)).catch((error: unknown) => {
  const failure = describeFailure(error);
  console.error(`svc: ${failure.message}`);
  // The whole error only when asked for: it may hold SQL and parameters.
  if (process.env.LOG_LEVEL === 'debug' || process.env.LOG_LEVEL === 'trace') console.error(error);
  process.exit(failure.code);
});
