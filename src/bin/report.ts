import { runReport } from '../report/run-report.js';

/** `npm run report -- FILE…` (or `node dist/src/bin/report.js FILE…` where there is no compiler). */
process.exitCode = await runReport({
  args: process.argv.slice(2),
  env: process.env,
  stdin: process.stdin,
  stdout: process.stdout,
  stderr: process.stderr,
});
