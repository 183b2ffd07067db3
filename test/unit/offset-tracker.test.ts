import { describe, expect, it } from 'vitest';
import { OffsetTracker } from '../../services/actions/offset.tracker.js';

describe('offset tracker (action runner commits)', () => {
  it('commits only below the lowest job still in flight', () => {
    const t = new OffsetTracker();
    for (const o of [10, 11, 12, 13]) t.start(o);
    expect(t.committable()).toBeUndefined();
    t.finish(12);
    t.finish(11);
    expect(t.committable()).toBeUndefined(); // 10 still running
    t.finish(10);
    expect(t.committable()).toBe(13);
    t.markCommitted(13);
    expect(t.committable()).toBeUndefined();
    t.finish(13);
    expect(t.committable()).toBe(14);
  });

  it('counts a redelivered offset joined to a running job twice', () => {
    const t = new OffsetTracker();
    t.start(5);
    t.start(5);
    t.finish(5);
    expect(t.committable()).toBeUndefined();
    t.finish(5);
    expect(t.committable()).toBe(6);
  });
});
