import type { EventType } from '@svc/sdk';
import { useApp } from './app-state';
import { useShared } from './hooks';

/** The catalog changes only with a new version of the service: kept for an hour (cache.ts). */
const CATALOG_MAX_AGE_MS = 3_600_000;

/** The event-type catalog (what endpoints subscribe to and lists filter on), shared by every page. */
export function useCatalog() {
  const { client } = useApp();
  return useShared('event-types', CATALOG_MAX_AGE_MS, async () => (await client.GET('/v1/webhooks/endpoints/event-types')).data, [client]);
}

/**
 * Whether events of a type are written to the event log (and so can be listed, streamed, opened):
 * all but the test event, which send-test-event sends to one endpoint only.
 */
export const inEventLog = (type: string): boolean => type !== 'webhook.ping';

export type { EventType };
