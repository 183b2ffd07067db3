import { describe, expect, it } from 'vitest';
import { looksRedacted } from '../../services/api/mcp/tools/requests.tools.js';

describe('MCP get_request: values that show a redaction', () => {
  it('recognises the marks of field rules, of data types and masked values', () => {
    expect(looksRedacted('[REDACTED]')).toBe(true);
    expect(looksRedacted('[REDACTED:password]')).toBe(true);
    expect(looksRedacted('Bearer [REDACTED:authorization]')).toBe(true);
    expect(looksRedacted('[REDACTED:customer-ref]')).toBe(true);
    expect(looksRedacted('****-****-****-1111'.replace('1111', '****'))).toBe(true);
    expect(looksRedacted('plain value')).toBe(false);
    expect(looksRedacted('[REDACTED: spaced]')).toBe(false);
    expect(looksRedacted('**')).toBe(false);
    expect(looksRedacted(42)).toBe(false);
  });
});
