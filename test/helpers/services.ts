import { inject } from 'vitest';
import type { Service } from './service-list.js';

export { SERVICES, type Service } from './service-list.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** The services of SERVICES that answered when the run began. */
    services: Record<Service, boolean>;
  }
}

/** Whether a service this file needs did not answer when the run began: its tests are skipped (the run said so). */
export function missing(service: Service): boolean {
  return !inject('services')[service];
}
