/**
 * Summarises a V8 `.cpuprofile` (node --cpu-prof): self time by function and by component
 * (package, project file, V8 built-in, GC), optionally per record.
 *
 *   npx tsx test/bench/profile-summary.ts <file.cpuprofile> [records] [top=25]
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  startTime: number;
  endTime: number;
  samples: number[];
  timeDeltas: number[];
}

export interface CostLine {
  name: string;
  ms: number;
  share: number;
  usPerRecord?: number;
}

export interface ProfileSummary {
  file: string;
  wallSeconds: number;
  /** sampled time that was not idle */
  busySeconds: number;
  byFunction: CostLine[];
  byComponent: CostLine[];
  /** self time charged to the nearest caller that is a package or a project file (node internals,
   * V8 built-ins and GC stay as they are): who asked for the buffer copies and the parsing */
  byOwner: CostLine[];
}

const ROOT = path.resolve(import.meta.dirname, '..', '..');

function component(url: string, fn: string): string {
  if (!url) {
    if (fn.startsWith('(')) return fn; // (garbage collector), (program), (idle)
    if (/^validate\d*$/.test(fn)) return 'ajv (compiled validators)';
    return `V8 built-in ${fn || '(anonymous)'}`;
  }
  if (url.startsWith('node:')) return `node:${url.slice(5).split('/').slice(0, 2).join('/')}`;
  const file = url.startsWith('file://') ? decodeURIComponent(url.slice(7)) : url;
  const nm = file.lastIndexOf('node_modules/');
  if (nm >= 0) {
    const parts = file.slice(nm + 13).split('/');
    return parts[0]!.startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]!;
  }
  return path.relative(ROOT, file).replace(/^dist\//, '');
}

export function summarise(file: string, records?: number, top = 25): ProfileSummary {
  const profile = JSON.parse(fs.readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const owner = (id: number): string => {
    const first = byId.get(id)!.callFrame;
    for (let cur: number | undefined = id; cur !== undefined; cur = parent.get(cur)) {
      const { url, functionName } = byId.get(cur)!.callFrame;
      if (url && !url.startsWith('node:')) return component(url, functionName);
    }
    return component(first.url, first.functionName);
  };
  const ownerTotals = new Map<string, number>();
  const self = new Map<number, number>();
  for (let i = 0; i < profile.samples.length; i++) {
    const id = profile.samples[i]!;
    self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
  const fnTotals = new Map<string, number>();
  const compTotals = new Map<string, number>();
  let busy = 0;
  for (const [id, us] of self) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === '(idle)') continue;
    busy += us;
    const comp = component(url, functionName);
    const fnKey = url ? `${functionName || '(anonymous)'} — ${comp}:${lineNumber + 1}` : comp;
    fnTotals.set(fnKey, (fnTotals.get(fnKey) ?? 0) + us);
    compTotals.set(comp, (compTotals.get(comp) ?? 0) + us);
    const own = functionName.startsWith('(') ? functionName : owner(id);
    ownerTotals.set(own, (ownerTotals.get(own) ?? 0) + us);
  }
  const lines = (m: Map<string, number>): CostLine[] =>
    [...m.entries()]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({
        name,
        ms: Math.round(us / 100) / 10,
        share: Math.round((us / busy) * 1000) / 10,
        ...(records ? { usPerRecord: Math.round((us / records) * 100) / 100 } : {}),
      }));
  return {
    file,
    wallSeconds: (profile.endTime - profile.startTime) / 1e6,
    busySeconds: busy / 1e6,
    byFunction: lines(fnTotals),
    byComponent: lines(compTotals),
    byOwner: lines(ownerTotals),
  };
}

export function printSummary(s: ProfileSummary, records?: number): void {
  console.log(
    `\nCPU profile ${s.file}: ${s.wallSeconds.toFixed(1)} s wall, ${s.busySeconds.toFixed(1)} s busy`,
  );
  if (records) console.log(`busy µs per record: ${((s.busySeconds * 1e6) / records).toFixed(1)}`);
  for (const [title, rows] of [
    ['self time by component', s.byComponent],
    ['self time by owner (nearest package or project caller)', s.byOwner],
    ['self time by function', s.byFunction],
  ] as const) {
    console.log(`\n  ${title}`);
    for (const r of rows)
      console.log(
        `  ${String(r.share).padStart(5)}%  ${String(r.ms).padStart(9)} ms  ${r.usPerRecord !== undefined ? `${String(r.usPerRecord).padStart(7)} µs/rec  ` : ''}${r.name}`,
      );
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const [file, records, top] = process.argv.slice(2);
  if (!file) {
    console.error('usage: profile-summary.ts <file.cpuprofile> [records] [top]');
    process.exit(2);
  }
  const n = records ? Number(records) : undefined;
  printSummary(summarise(file, n, top ? Number(top) : 25), n);
}
