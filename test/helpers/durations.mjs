/* global console, process */
// Writes test/durations.json (test file -> seconds it took) from the last run's JSON report. The
// test sequencer starts the slowest files first with it, so that a fresh clone, which has no
// vitest cache, does not end a project on one long file running alone. Run after a full
// `npm test` when files were added or got slower: `npm run test:durations`.
import fs from 'node:fs';
import path from 'node:path';
const root = process.cwd();
const report = JSON.parse(fs.readFileSync(path.join(root, '.cache/vitest-report.json'), 'utf8'));
const durations = {};
for (const t of report.testResults) {
  const seconds = Math.round((t.endTime - t.startTime) / 1000);
  if (seconds >= 2) durations[path.relative(root, t.name)] = seconds;
}
const sorted = Object.fromEntries(Object.entries(durations).sort((a, b) => b[1] - a[1]));
fs.writeFileSync(path.join(root, 'test/durations.json'), `${JSON.stringify(sorted, null, 2)}\n`);
console.log(`test/durations.json: ${Object.keys(sorted).length} files`);
