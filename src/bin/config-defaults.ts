import { validateConfig } from '../config/validate.js';

/**
 * `npm run config:defaults`: prints the configuration the schema's defaults make, which that script
 * writes to config/default.json, the file operators copy and edit (a test keeps the two equal).
 */
process.stdout.write(`${JSON.stringify(validateConfig({}), null, 2)}\n`);
