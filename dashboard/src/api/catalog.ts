import type { EventType } from '@svc/sdk';
import { useApp } from './app-state';
import { useLoad } from './hooks';

/** The event-type catalog (what endpoints subscribe to and lists filter on), fetched once per page. */
export function useCatalog() {
  const { client } = useApp();
  return useLoad(async () => (await client.GET('/v1/webhooks/endpoints/event-types')).data, [client]);
}

export type { EventType };
