import { randomBytes } from 'node:crypto';

/**
 * The key of a process whose configuration names none (allowed outside production only): random, so
 * that nothing the proxy derives from an apiKey is ever an unkeyed hash, which a search over likely
 * apiKeys reverses (a 6-digit key in under a second). What it keys holds only for the life of the process.
 */
export const PROCESS_KEY = randomBytes(32).toString('hex');
