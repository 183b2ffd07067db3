import type { Workflow } from '../../workflows/workflows.repository.js';
import { bucketFilter, type ToolContext } from '../mcp.context.js';
import { listExecutionsInput, listWorkflowsInput } from '../mcp.inputs.js';
import { fitList, type Truncation } from '../mcp.output.js';
import { defineTool } from './tool.js';

const cut = (s: string | null, max: number): string | null =>
  s !== null && s.length > max ? `${s.slice(0, max)}…` : s;

/**
 * A workflow without its action configs: those hold webhook URLs, addresses and credentials an
 * assistant has no use for. The trigger is kept whole (what fires it).
 */
const compact = (w: Workflow) => ({
  sid: w.sid,
  name: w.name,
  description: cut(w.description, 300),
  bucketSid: w.bucketSid,
  isActive: w.isActive,
  trigger: w.trigger,
  actions: w.actions.map((a) => ({ type: a.type, order: a.order })),
  createdAt: w.createdAt,
  updatedAt: w.updatedAt,
});

const pageTruncation = (field: string, shown: number, page: number): Truncation => ({
  field,
  shown,
  total: null,
  reason: 'limit',
  howToGetMore: `Call again with page ${page + 1}.`,
});

interface ListArgs {
  bucketSid?: string;
  isActive?: boolean;
  page: number;
  limit: number;
}

export const listWorkflows = defineTool<ListArgs>(
  {
    name: 'list_workflows',
    title: 'List workflows (alerts)',
    description:
      "The workflows (alerts and automations) of this token's environment and buckets, newest first: name, trigger (type, " +
      'conditions, schedule), action types, isActive. Action configurations are not shown. Returns JSON {workflows, truncated}.',
    inputSchema: listWorkflowsInput,
  },
  async (ctx: ToolContext, args) => {
    const res = await ctx.deps.workflows.list(
      ctx.scope.accountSid,
      {
        ...(await bucketFilter(ctx, args.bucketSid)),
        environmentSid: ctx.scope.environmentSid,
        isActive: args.isActive,
      },
      { page: args.page, limit: args.limit, sort: 'createdAt', order: 'desc' },
    );
    const out = {
      environmentSid: ctx.scope.environmentSid,
      page: args.page,
      workflows: res.records.map(compact),
      truncated: res.hasMore ? pageTruncation('workflows', res.records.length, args.page) : false,
    };
    return fitList(out, 'workflows', 'Lower limit and page through, or pass bucketSid.');
  },
);

interface ExecutionsArgs {
  workflowSid?: string;
  bucketSid?: string;
  status?: string;
  startDate?: string;
  page: number;
  limit: number;
}

export const listWorkflowExecutions = defineTool<ExecutionsArgs>(
  {
    name: 'list_workflow_executions',
    title: 'What workflows fired',
    description:
      "Executions of the workflows of this token's environment and buckets (one workflow with workflowSid), newest first: " +
      'workflow, trigger type and message, the request that fired it, status (pending, running, succeeded, failed), attempts, ' +
      'error. Returns JSON {executions, truncated}.',
    inputSchema: listExecutionsInput,
  },
  async (ctx: ToolContext, args) => {
    const res = await ctx.deps.workflows.executionsOf(
      ctx.scope.accountSid,
      {
        ...(await bucketFilter(ctx, args.bucketSid)),
        environmentSid: ctx.scope.environmentSid,
        workflowSid: args.workflowSid,
        status: args.status,
        since: args.startDate,
      },
      { page: args.page, limit: args.limit, sort: 'createdAt', order: 'desc' },
    );
    const out = {
      environmentSid: ctx.scope.environmentSid,
      page: args.page,
      executions: res.records.map((e) => ({
        ...e,
        message: cut(e.message, 500),
        error: cut(e.error, 300),
      })),
      truncated: res.hasMore ? pageTruncation('executions', res.records.length, args.page) : false,
    };
    return fitList(out, 'executions', 'Lower limit and page through, or pass workflowSid or status.');
  },
);

export const WORKFLOW_TOOLS = [listWorkflows, listWorkflowExecutions];
