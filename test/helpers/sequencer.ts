import fs from 'node:fs';
import path from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/** Seconds each test file took in a full run (test/durations.json, `npm run test:durations`). */
function knownDurations(root: string): Record<string, number> {
  try {
    return JSON.parse(fs.readFileSync(path.join(root, 'test/durations.json'), 'utf8')) as Record<
      string,
      number
    >;
  } catch {
    return {};
  }
}

/**
 * The slowest files first, so that a project never ends on one long file running alone while its
 * other workers idle: by the durations vitest cached from earlier runs when it has them, otherwise
 * (a fresh clone, CI) by test/durations.json; files listed in neither keep vitest's order after
 * the known ones. In the browser project the dashboard's journey runs first: it starts on the
 * first-run page, which exists only while the browser stack's database has no account (the other
 * browser files wait for it, test/helpers/browser-first-run-gate.ts).
 */
export class FirstRunFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const root = this.ctx.config.root;
    const known = knownDurations(root);
    const seconds = (f: TestSpecification) => {
      const file = path.relative(root, f.moduleId);
      const cached = this.ctx.cache.getFileTestResults(`${f.project.name}:${file}`);
      return cached ? cached.duration / 1000 : (known[file] ?? 0);
    };
    const order = new Map(sorted.map((f, i) => [f, i]));
    const group = (f: TestSpecification) =>
      `${String(f.project.config.sequence.groupOrder).padStart(4, '0')}:${f.project.name}`;
    // Vitest's order of groups and projects stays; within a project, the slowest files first.
    const bySpeed = [...sorted].sort(
      (a, b) => group(a).localeCompare(group(b)) || seconds(b) - seconds(a) || order.get(a)! - order.get(b)!,
    );
    const first = (f: TestSpecification) => f.moduleId.endsWith('test/browser/dashboard.test.ts');
    return [...bySpeed.filter(first), ...bySpeed.filter((f) => !first(f))];
  }
}
