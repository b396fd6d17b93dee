import type { Page } from 'playwright-core';
import type { ManualClock } from '../../src/lib/clock.js';

/** One API response the page received, at the service's (manual) time. */
export interface Answer {
  atMs: number;
  method: string;
  path: string;
  status: number;
}

/**
 * What a dashboard page asks of the API, timed by the service's ManualClock, and the page's own
 * time in step with it (Playwright's fake clock): `dwell` lets a person's pause pass in both, so
 * the page's timers (polling) fire as they would, and the rate limiter's minute slides as it would,
 * without waiting for it. The event stream's long request is left out of the in-flight count.
 */
export class Tour {
  readonly answers: Answer[] = [];
  private inFlight = 0;

  constructor(
    readonly page: Page,
    readonly clock: ManualClock,
  ) {
    const api = (url: string) => new URL(url).pathname.startsWith('/v1/') && !url.includes('/v1/events/stream');
    page.on('request', (request) => api(request.url()) && this.inFlight++);
    const done = (request: { url(): string }) => api(request.url()) && this.inFlight--;
    page.on('requestfinished', done);
    page.on('requestfailed', done);
    page.on('response', (response) => {
      const url = new URL(response.url());
      if (!url.pathname.startsWith('/v1/')) return;
      this.answers.push({ atMs: this.clock.now().getTime(), method: response.request().method(), path: url.pathname + url.search, status: response.status() });
    });
  }

  /** Starts the page's fake clock at the service's time; call before the first navigation. */
  async start(): Promise<void> {
    await this.page.clock.install({ time: this.clock.now() });
  }

  /** Waits (in real time, briefly) until no API request of the page is in flight. */
  async settle(): Promise<void> {
    const until = Date.now() + 10_000;
    // Twice idle in a row: an answer often starts the next request (a chained load).
    let idle = 0;
    while (idle < 2 && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 25));
      idle = this.inFlight === 0 ? idle + 1 : 0;
    }
  }

  /** A person's pause of `ms` on the page: both clocks move a second at a time, the page's timers fire. */
  async dwell(ms: number): Promise<void> {
    await this.settle();
    for (let passed = 0; passed < ms; passed += 1000) {
      this.clock.advance(1000);
      await this.page.clock.runFor(1000);
      await this.settle();
    }
  }

  /** The most answers within any `windowMs` of service time (the rate limiter's minute by default). */
  busiest(windowMs = 60_000): number {
    const times = this.answers.map((a) => a.atMs).sort((a, b) => a - b);
    let most = 0;
    for (let i = 0, j = 0; j < times.length; j++) {
      while (times[j] - times[i] >= windowMs) i++;
      most = Math.max(most, j - i + 1);
    }
    return most;
  }

  /** Answers by method and path without the query, most frequent first: what a page asks most. */
  byRoute(): [string, number][] {
    const counts = new Map<string, number>();
    for (const a of this.answers) {
      const key = `${a.method} ${a.path.split('?')[0].replace(/[a-z]{3}_[0-9a-z]{26}/g, '{id}')}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    return [...counts].sort((a, b) => b[1] - a[1]);
  }

  refused(): Answer[] {
    return this.answers.filter((a) => a.status === 429);
  }
}
