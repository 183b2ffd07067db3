import type { Tool } from '@modelcontextprotocol/sdk/types.js';
import type { ValidateFunction } from 'ajv';
import { ajv } from '../../../shared/schemas.js';
import type { ToolContext } from '../mcp.context.js';

/** One read-only tool: its MCP definition, its validated input and what it answers (JSON). */
export interface ToolSpec<A = unknown> {
  tool: Tool;
  validate(): ValidateFunction<A>;
  run(ctx: ToolContext, args: A): Promise<unknown>;
}

/**
 * A read-only tool over the token's data. The input schema is compiled once, with the shared ajv
 * (defaults applied, no coercion: tool arguments are JSON).
 */
export function defineTool<A>(
  def: { name: string; title: string; description: string; inputSchema: object },
  run: (ctx: ToolContext, args: A) => Promise<unknown>,
): ToolSpec<A> {
  let compiled: ValidateFunction<A> | undefined;
  return {
    tool: {
      name: def.name,
      title: def.title,
      description: def.description,
      inputSchema: def.inputSchema as Tool['inputSchema'],
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    validate: () => (compiled ??= ajv().compile<A>(def.inputSchema)),
    run,
  };
}
