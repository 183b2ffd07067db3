/* global console, process */
// Prints the run's totals as one plain line ("Tests: N passed, N failed") for CI log readers.
import fs from 'node:fs';
const r = JSON.parse(fs.readFileSync('.cache/vitest-report.json', 'utf8'));
const skipped = r.numPendingTests + r.numTodoTests;
console.log(
  `Tests: ${r.numPassedTests} passed, ${r.numFailedTests} failed${skipped ? `, ${skipped} skipped` : ''}`,
);
process.exit(r.numFailedTests > 0 || r.numTotalTests === 0 ? 1 : 0);
