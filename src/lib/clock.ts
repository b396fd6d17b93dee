/** Source of time for everything that stores or schedules: tests swap in a ManualClock. */
export interface Clock {
  now(): Date;
}

export const systemClock: Clock = { now: () => new Date() };

export class ManualClock implements Clock {
  constructor(private ms: number = Date.parse('2026-01-01T00:00:00.000Z')) {}
  now(): Date {
    return new Date(this.ms);
  }
  advance(ms: number): void {
    this.ms += ms;
  }
  set(date: Date | string): void {
    this.ms = new Date(date).getTime();
  }
}
