import { createInterface } from 'node:readline';
import { loadConfig } from '../config/load.js';
import { ConfigError } from '../config/problems.js';
import { clientFingerprint } from '../clients/fingerprint.js';

/**
 * `npm run fingerprint` (in production `node dist/src/bin/fingerprint.js`): reads apiKeys from stdin, one
 * per line, and prints the fingerprint the deprecation hits name each caller by, with the configured
 * `deprecation.clientIdKey` (CONFIG_FILE is read as the proxy reads it). Keys come on stdin, not as
 * arguments, so that they stay out of shell history and the process list.
 */
async function printFingerprints(): Promise<void> {
  let key: string;
  try {
    const configured = loadConfig().deprecation.clientIdKey;
    if (configured === null) {
      throw new ConfigError(
        'CLIENT_ID_KEY or CLIENT_ID_KEY_FILE (deprecation.clientIdKey)',
        'is not set: the proxy then keys fingerprints with a random key of each process, which no fingerprint printed here would match. ' +
          'Set it as the proxy has it.',
      );
    }
    key = configured;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`${err.message}\n`);
    process.exit(1);
  }
  if (process.stdin.isTTY) process.stderr.write('apiKey (one per line, Ctrl-D to end):\n');
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    const apiKey = line.trim();
    if (apiKey !== '') process.stdout.write(`${clientFingerprint(apiKey, key)}\n`);
  }
}

await printFingerprints();
