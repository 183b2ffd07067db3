import type { ComponentType } from 'react';
import { BucketSetupPage, BucketsPage } from './pages/buckets';
import { EndpointsPage } from './pages/endpoints';
import { ErrorsPage } from './pages/errors';
import { EndpointDetailPage } from './pages/endpoint-detail';
import { EventsPage } from './pages/events';
import { MembersPage } from './pages/members';
import { OverviewPage } from './pages/overview';
import { RequestPage } from './pages/request';
import { StreamPage } from './pages/stream';

/** Every signed-in page: its path, its component and, when it is in the navigation, its label. */
export interface PageRoute {
  path: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  component: ComponentType<any>;
  nav?: { label: string; group: 'traffic' | 'settings' };
}

export const ROUTES: PageRoute[] = [
  { path: '/overview', component: OverviewPage, nav: { label: 'Overview', group: 'traffic' } },
  { path: '/endpoints', component: EndpointsPage, nav: { label: 'Endpoints', group: 'traffic' } },
  { path: '/endpoints/detail', component: EndpointDetailPage },
  { path: '/errors', component: ErrorsPage, nav: { label: 'Errors', group: 'traffic' } },
  { path: '/stream', component: StreamPage, nav: { label: 'Stream', group: 'traffic' } },
  { path: '/requests/:bucketSid/:requestSid', component: RequestPage },
  { path: '/events', component: EventsPage, nav: { label: 'Events', group: 'traffic' } },
  { path: '/settings/buckets', component: BucketsPage, nav: { label: 'Buckets', group: 'settings' } },
  { path: '/settings/buckets/:bucketSid', component: BucketSetupPage },
  { path: '/settings/members', component: MembersPage, nav: { label: 'Members', group: 'settings' } },
];
