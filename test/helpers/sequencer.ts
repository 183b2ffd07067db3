import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Vitest's order (failed first, then slowest, then largest file), except that the dashboard's
 * journey runs first in the browser project: it starts on the first-run page, which exists only
 * while the browser stack's database has no account; the other browser files create accounts.
 */
export class FirstRunFirstSequencer extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (f: TestSpecification) => f.moduleId.endsWith('test/browser/dashboard.test.ts');
    return [...sorted.filter(first), ...sorted.filter((f) => !first(f))];
  }
}
