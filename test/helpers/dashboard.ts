import { mkdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page } from 'playwright-core';
import { expect } from 'vitest';
import { createSignInCode } from '../../src/account/sign-in-store.js';
import { userOf } from './app.js';
import type { LiveApp } from './live.js';

/** axe-core's browser build, evaluated in the page through DevTools (which the page's CSP does not govern). */
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/** Screenshots of the dashboard go here (git ignores test-artifacts/). */
export const ARTIFACTS = join('test-artifacts', 'dashboard');

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[] }[];
}

/** What a page did that a test should look at afterwards: CSP refusals, script errors, every URL it asked for. */
export interface PageWatch {
  urls: string[];
  problems: string[];
}

export function watch(page: Page, into: PageWatch): void {
  // The machine may be busy: a page gets time to answer before a step counts as failed.
  page.setDefaultTimeout(45_000);
  page.on('request', (request) => into.urls.push(request.url()));
  page.on('pageerror', (error) => into.problems.push(`page error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && /Content Security Policy|Refused to/.test(message.text())) into.problems.push(`csp: ${message.text()}`);
  });
}

/** Runs axe-core on the page as it is; returns the serious and critical violations (none is the bar). */
export async function seriousViolations(page: Page): Promise<AxeViolation[]> {
  if (!(await page.evaluate(() => 'axe' in window))) await page.evaluate(AXE);
  const result = (await page.evaluate(() => (window as unknown as { axe: { run(): Promise<unknown> } }).axe.run())) as { violations: AxeViolation[] };
  return result.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

/** A full-page screenshot named after what it shows, then the page's accessibility check. */
export async function record(page: Page, name: string, audit: Record<string, number>): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const violations = await seriousViolations(page);
  audit[name] = violations.length;
  expect(violations.map((v) => `${v.impact} ${v.id}: ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`), name).toEqual([]);
}

/** The page's main heading, once it is there (a first load on a busy machine may take longer: `timeout`). */
export async function heading(page: Page, name: string | RegExp, timeout?: number): Promise<void> {
  await page.getByRole('heading', { level: 1, name }).waitFor({ timeout });
}

/**
 * Signs the demo owner in to the dashboard of `t` with a one-time link, which opens the Store
 * workspace. The code and the session token go into `secrets`, which a test checks stay out of logs.
 */
export async function signInToStore(page: Page, t: LiveApp, secrets: string[]): Promise<void> {
  const { code } = await createSignInCode(t.ctx.db, userOf(t.demo, 'owner').id, t.clock.now());
  secrets.push(code);
  await page.goto(`${t.base}/dashboard/#code=${code}`);
  await heading(page, 'Store', 120_000);
  secrets.push(JSON.parse((await page.evaluate(() => sessionStorage.getItem('svc.dashboard.session')))!).token);
}
