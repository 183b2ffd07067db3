import type { ComponentType } from 'react';
import { AlertsPage } from './pages/alerts/alerts';
import { BucketsPage } from './pages/buckets/buckets';
import { BucketSetupPage } from './pages/buckets/bucket-setup';
import { AccountPage } from './pages/account/account';
import { TokensPage } from './pages/tokens/api-tokens';
import { McpTokensPage } from './pages/tokens/mcp-tokens';
import { ConsumerDetailPage } from './pages/consumers/consumer-detail';
import { ConsumersPage } from './pages/consumers/consumers';
import { EndpointsPage } from './pages/endpoints/endpoints';
import { ErrorsPage } from './pages/errors/errors';
import { EndpointDetailPage } from './pages/endpoints/endpoint-detail';
import { EventsPage } from './pages/events/events';
import { ExclusionsPage } from './pages/rules/exclusions';
import { RedactionsPage } from './pages/rules/redactions';
import { MembersPage } from './pages/members/members';
import { OverviewPage } from './pages/overview/overview';
import { ReleasePage } from './pages/releases/release-detail';
import { ReleasesPage } from './pages/releases/release-list';
import { RequestPage } from './pages/request/request';
import { SloPage } from './pages/slos/slo-detail';
import { SlosPage } from './pages/slos/slo-list';
import { StreamPage } from './pages/stream/stream';
import { WorkflowsPage } from './pages/workflows/workflows';
import { WorkflowEditPage } from './pages/workflows/workflows-edit';
import { WorkflowExecutionsPage } from './pages/workflows/workflows-executions';

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
  { path: '/consumers', component: ConsumersPage, nav: { label: 'Consumers', group: 'traffic' } },
  { path: '/consumers/detail', component: ConsumerDetailPage },
  { path: '/errors', component: ErrorsPage, nav: { label: 'Errors', group: 'traffic' } },
  { path: '/stream', component: StreamPage, nav: { label: 'Stream', group: 'traffic' } },
  { path: '/requests/:bucketSid/:requestSid', component: RequestPage },
  { path: '/events', component: EventsPage, nav: { label: 'Events', group: 'traffic' } },
  { path: '/releases', component: ReleasesPage, nav: { label: 'Releases', group: 'traffic' } },
  { path: '/releases/:eventSid', component: ReleasePage },
  { path: '/slos', component: SlosPage, nav: { label: 'SLOs', group: 'traffic' } },
  { path: '/slos/:sloSid', component: SloPage },
  { path: '/alerts', component: AlertsPage, nav: { label: 'Alerts', group: 'traffic' } },
  { path: '/settings/buckets', component: BucketsPage, nav: { label: 'Buckets', group: 'settings' } },
  { path: '/settings/buckets/:bucketSid', component: BucketSetupPage },
  {
    path: '/settings/exclusions',
    component: ExclusionsPage,
    nav: { label: 'Exclusions', group: 'settings' },
  },
  {
    path: '/settings/redactions',
    component: RedactionsPage,
    nav: { label: 'Redactions', group: 'settings' },
  },
  { path: '/settings/members', component: MembersPage, nav: { label: 'Members', group: 'settings' } },
  { path: '/settings/tokens', component: TokensPage, nav: { label: 'API tokens', group: 'settings' } },
  { path: '/settings/mcp-tokens', component: McpTokensPage, nav: { label: 'MCP tokens', group: 'settings' } },
  { path: '/settings/workflows', component: WorkflowsPage, nav: { label: 'Workflows', group: 'settings' } },
  { path: '/settings/workflows/new', component: WorkflowEditPage },
  { path: '/settings/workflows/:bucketSid/:environmentSid/:workflowSid', component: WorkflowEditPage },
  {
    path: '/settings/workflows/:bucketSid/:environmentSid/:workflowSid/executions',
    component: WorkflowExecutionsPage,
  },
  { path: '/settings/account', component: AccountPage, nav: { label: 'Account', group: 'settings' } },
];
