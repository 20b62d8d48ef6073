import { main } from '../start/main.js';

/** The command `npm start` runs. Kept apart from main.ts so that importing main.ts never starts a server. */
main().catch((err: unknown) => {
  process.stderr.write(`Failed to start: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
