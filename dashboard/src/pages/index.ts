import type { ComponentType } from 'react';
import { ApiKeys } from './api-keys';
import { DeliveryDetail } from './deliveries/detail';
import { Deliveries } from './deliveries';
import { EndpointDetail } from './endpoints/detail';
import { NewEndpoint } from './endpoints/new';
import { Endpoints } from './endpoints';
import { EventDetail } from './events/detail';
import { Events } from './events';
import { LiveTail } from './live';
import { Notifications } from './notifications';
import { OrderDetail } from './orders/detail';
import { Orders } from './orders';
import { Overview } from './overview';
import { ProductDetail } from './products/detail';
import { Products } from './products';

/**
 * Every page: a folder under pages/ and a line here. A page with `nav` gets a link in the sections
 * menu, shown only to roles holding `permission` (the API refuses the others regardless).
 */
export interface PageEntry {
  path: string;
  component: ComponentType<any>;
}

export const PAGES: PageEntry[] = [
  { path: '/', component: Overview },
  { path: '/products', component: Products },
  { path: '/products/:productId', component: ProductDetail },
  { path: '/orders', component: Orders },
  { path: '/orders/:orderId', component: OrderDetail },
  { path: '/events', component: Events },
  { path: '/live', component: LiveTail },
  { path: '/events/:eventId', component: EventDetail },
  { path: '/endpoints', component: Endpoints },
  { path: '/endpoints/new', component: NewEndpoint },
  { path: '/endpoints/:endpointId', component: EndpointDetail },
  { path: '/deliveries', component: Deliveries },
  { path: '/deliveries/:deliveryId', component: DeliveryDetail },
  { path: '/api-keys', component: ApiKeys },
  { path: '/notifications', component: Notifications },
];

export const NAV: { href: string; label: string; permission?: string }[] = [
  { href: '/', label: 'Overview' },
  { href: '/products', label: 'Products', permission: 'workspace:products:read' },
  { href: '/orders', label: 'Orders', permission: 'workspace:orders:read' },
  { href: '/events', label: 'Events', permission: 'workspace:events:read' },
  { href: '/live', label: 'Live tail', permission: 'workspace:events:read' },
  { href: '/endpoints', label: 'Endpoints', permission: 'workspace:developer:read' },
  { href: '/deliveries', label: 'Deliveries', permission: 'workspace:developer:read' },
  { href: '/api-keys', label: 'API keys', permission: 'workspace:api_keys:manage' },
  { href: '/notifications', label: 'Notifications' },
];
