const fs = require('node:fs');

/**
 * Ends the run with one plain line: "tests: N passed, N failed, N skipped". With
 * JEST_SUMMARY_FILE set, the counts add up across the runs that share the file.
 */
class SummaryReporter {
  onRunComplete(_contexts, results) {
    const totals = {
      passed: results.numPassedTests,
      failed: results.numFailedTests,
      skipped: results.numPendingTests + results.numTodoTests,
    };
    const file = process.env.JEST_SUMMARY_FILE;
    if (file) {
      if (fs.existsSync(file)) {
        const earlier = JSON.parse(fs.readFileSync(file, 'utf8'));
        for (const key of Object.keys(totals)) totals[key] += earlier[key] ?? 0;
      }
      fs.writeFileSync(file, JSON.stringify(totals));
    }
    process.stdout.write(`\ntests: ${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped\n`);
  }
}
module.exports = SummaryReporter;
