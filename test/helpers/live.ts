import { startTestApp, type TestApp } from './app.js';

export interface LiveApp extends TestApp {
  /** http://127.0.0.1:<port>, also the app's public URL, so page URLs point back at it. */
  base: string;
}

/** A test app listening on 127.0.0.1, for clients that speak real HTTP (the SDK, a browser). */
export async function startLiveApp(options: Parameters<typeof startTestApp>[0] = {}): Promise<LiveApp> {
  const t = await startTestApp(options);
  await t.app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(t.app.server.address() as { port: number }).port}`;
  // As SVC_PUBLIC_URL would say, once the port is known.
  t.ctx.config.publicUrl = base;
  return { ...t, base };
}
