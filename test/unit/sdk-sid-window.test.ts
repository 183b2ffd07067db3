import { describe, expect, it } from 'vitest';
import { SidWindow } from '../../services/processor/sid-window.js';

describe('processor sid window (repeated client sids are stored once)', () => {
  it('remembers the last `capacity` sids and forgets older ones', () => {
    const w = new SidWindow(3);
    for (const s of ['a', 'b', 'c']) w.add(s);
    expect(['a', 'b', 'c'].map((s) => w.has(s))).toEqual([true, true, true]);
    w.add('d');
    expect(w.has('a')).toBe(false);
    expect(w.has('d')).toBe(true);
    expect(w.size).toBe(3);
  });

  it('adding a sid already held changes nothing', () => {
    const w = new SidWindow(2);
    w.add('a');
    w.add('a');
    w.add('b');
    expect(w.has('a')).toBe(true);
    expect(w.size).toBe(2);
  });

  it('stays bounded over many sids', () => {
    const w = new SidWindow(1000);
    for (let i = 0; i < 50_000; i++) w.add(`s${i}`);
    expect(w.size).toBe(1000);
    expect(w.has('s49000')).toBe(true);
    expect(w.has('s49999')).toBe(true);
    expect(w.has('s48999')).toBe(false);
  });
});
