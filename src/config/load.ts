import { readFileSync } from 'node:fs';
import { adminUnguarded } from './loopback.js';
import { ConfigError } from './problems.js';
import { ConfigSchema, type Config } from './schema.js';
import { validateConfig, type Json } from './validate.js';

/**
 * Configuration: the schema (src/config/schema.ts) holds every default; the file named by CONFIG_FILE
 * is merged over them (objects key by key), then the environment (PORT, HOST, ADMIN_PORT, ADMIN_HOST,
 * ADMIN_HOSTNAMES, ADMIN_TOKEN, UPSTREAM_URL, CLIENT_ID_KEY, LOG_LEVEL, REDIS_URL, REDIS_SECRET, REDIS_SENTINELS,
 * REDIS_MASTER_NAME, REDIS_PASSWORD, REDIS_SENTINEL_PASSWORD; each secret also as NAME_FILE, a file that holds it).
 * The result is validated once at start-up; a bad value, an unknown key or an environment variable
 * set but empty stops the process with a message naming it.
 */

interface EnvironmentVariable {
  readonly name: string;
  readonly key: readonly [string, string];
  readonly read?: (name: string, text: string) => Json;
}

/**
 * The secrets: each also from a file, `NAME_FILE` (a container secret in /run/secrets/, systemd's
 * $CREDENTIALS_DIRECTORY), so that it stays out of the environment, which /proc and `docker inspect` show.
 */
const SECRETS: readonly EnvironmentVariable[] = [
  { name: 'ADMIN_TOKEN', key: ['server', 'adminToken'] },
  { name: 'CLIENT_ID_KEY', key: ['deprecation', 'clientIdKey'] },
  { name: 'REDIS_SECRET', key: ['redis', 'secret'] },
  // A single Redis's password is in its URL (redis://:password@host).
  { name: 'REDIS_URL', key: ['redis', 'url'] },
  { name: 'REDIS_PASSWORD', key: ['redis', 'password'] },
  { name: 'REDIS_SENTINEL_PASSWORD', key: ['redis', 'sentinelPassword'] },
];

/** The environment variables that set a key, and how their text is read. */
const ENVIRONMENT: readonly EnvironmentVariable[] = [
  { name: 'PORT', key: ['server', 'port'], read: wholeNumber },
  { name: 'HOST', key: ['server', 'host'] },
  { name: 'ADMIN_PORT', key: ['server', 'adminPort'], read: wholeNumber },
  { name: 'ADMIN_HOST', key: ['server', 'adminHost'] },
  { name: 'ADMIN_HOSTNAMES', key: ['server', 'adminHostnames'], read: commaList },
  { name: 'UPSTREAM_URL', key: ['upstream', 'baseUrl'] },
  { name: 'LOG_LEVEL', key: ['log', 'level'] },
  { name: 'REDIS_SENTINELS', key: ['redis', 'sentinels'], read: commaList },
  { name: 'REDIS_MASTER_NAME', key: ['redis', 'masterName'] },
  ...SECRETS.flatMap((secret) => [secret, { name: `${secret.name}_FILE`, key: secret.key, read: secretFile }]),
];

/** `overrides` (for tests and embedding) are merged last, in order. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, ...overrides: Json[]): Config {
  // An empty value is a mistake (a template left unfilled), not "unset": unset, UPSTREAM_URL would start the demo upstream.
  const variable = (name: string): string | undefined => {
    const text = env[name];
    if (text?.trim() === '') throw new ConfigError(name, 'is set but empty; unset it or give it a value.');
    return text;
  };
  for (const { name } of SECRETS) {
    if (variable(name) !== undefined && variable(`${name}_FILE`) !== undefined) {
      throw new ConfigError(`${name}_FILE`, `and ${name} are both set; give it one way only.`);
    }
  }
  const file = variable('CONFIG_FILE');
  let merged: Json = file === undefined ? {} : readJson(file);
  const fromEnvironment = ENVIRONMENT.flatMap(({ name, key, read }) => {
    const text = variable(name);
    return text === undefined ? [] : [{ name, key, value: read ? read(name, text) : text }];
  });
  for (const { key, value } of fromEnvironment) {
    const [section, name] = key;
    merged = merge(merged, { [section]: { [name]: value } }, ConfigSchema);
  }
  for (const layer of overrides) merged = merge(merged, layer, ConfigSchema);
  // A refusal names the variable a value came from, unless an override replaced it.
  const origins = Object.fromEntries(
    fromEnvironment.filter(({ key, value }) => valueAt(merged, key) === value).map(({ name, key }) => [key.join('.'), name]),
  );
  return validateConfig(merged, origins);
}

/**
 * What a production deployment (`NODE_ENV=production`) must configure, checked when the proxy starts:
 * elsewhere the demo upstream and a random fingerprint key are conveniences, there they are mistakes.
 */
export function checkProduction(config: Config, env: NodeJS.ProcessEnv = process.env): void {
  // `Production`, `prod`: what someone meaning production writes is taken as it.
  if (!/^prod(uction)?$/i.test(env.NODE_ENV?.trim() ?? '')) return;
  const production = 'must be set when NODE_ENV is "production"';
  if (config.upstream.baseUrl === null) {
    throw new ConfigError(
      'UPSTREAM_URL (upstream.baseUrl)',
      `${production}: without it the proxy would answer real clients from its embedded demo catalog.`,
    );
  }
  if (config.deprecation.clientIdKey === null) {
    throw new ConfigError(
      'CLIENT_ID_KEY or CLIENT_ID_KEY_FILE (deprecation.clientIdKey)',
      `${production}: it keys the fingerprints that name callers in the hits, the ledger and the metrics, so that no one who reads them ` +
        `can find an apiKey by trying likely ones, and every instance must name a caller alike. Make one with \`openssl rand -hex 32\` ` +
        `and give every instance the same.`,
    );
  }
  const { adminHost } = config.server;
  if (adminUnguarded(config.server)) {
    throw new ConfigError(
      'ADMIN_TOKEN (server.adminToken)',
      `${production} and the operator listener leaves loopback (ADMIN_HOST, server.adminHost, is ${JSON.stringify(adminHost)}): /ledger ` +
        `and /reload would be refused to everyone. Set ADMIN_TOKEN or ADMIN_TOKEN_FILE (make one with \`openssl rand -hex 32\`), or ` +
        `listen on 127.0.0.1.`,
    );
  }
}

function readJson(file: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError('CONFIG_FILE', `names a file that cannot be read (${file}: ${(err as NodeJS.ErrnoException).code ?? err}).`);
  }
  let json: Json;
  try {
    json = JSON.parse(text) as Json;
  } catch (err) {
    // Only where: V8 quotes the text near the error, which may be a key or a URL with credentials.
    throw new ConfigError('CONFIG_FILE', `is not valid JSON (${file}${jsonErrorPlace(text, (err as Error).message)}).`);
  }
  if (!isObject(json)) throw new ConfigError('CONFIG_FILE', `must name a file holding a JSON object (${file}).`);
  return json;
}

/** `: line L, column C` of a JSON.parse error, from the position V8 gives; empty when it gives none. */
function jsonErrorPlace(text: string, message: string): string {
  const position = /position (\d+)/.exec(message)?.[1];
  if (position === undefined) return /end of JSON input/.test(message) ? ': it ends too soon' : '';
  const before = text.slice(0, Number(position)).split('\n');
  return `: line ${before.length}, column ${before.at(-1)!.length + 1}`;
}

/** The text of the file `path` names, without the newline an editor or `echo` ends it with. */
function secretFile(name: string, path: string): string {
  try {
    return readFileSync(path, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new ConfigError(name, `names a file that cannot be read (${path}: ${(err as NodeJS.ErrnoException).code ?? err}).`);
  }
}

/** `a, b,c` → `["a", "b", "c"]`: a list in one variable, as a container's environment has it. */
/** Items between commas; a list of none (`,`, ` , `) is a template left unfilled, as an empty value is. */
function commaList(name: string, text: string): string[] {
  const items = text
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  if (items.length === 0) throw new ConfigError(name, 'is set but lists nothing; unset it or give it a value.');
  return items;
}

function wholeNumber(name: string, text: string): number {
  if (!/^\d+$/.test(text.trim())) throw new ConfigError(name, `must be a whole number, got ${JSON.stringify(text)}.`);
  return Number(text);
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function valueAt(json: Json, [section, key]: readonly [string, string]): Json | undefined {
  const object = isObject(json) ? json[section] : undefined;
  return isObject(object) ? object[key] : undefined;
}

/** Objects merge key by key where the schema lists their keys; tables keyed by data (apiKeyMap, sort, merchandise) are replaced whole. */
function merge(base: Json | undefined, over: Json, schema: unknown): Json {
  const properties = (schema as { properties?: Readonly<Record<string, unknown>> } | undefined)?.properties;
  if (properties === undefined || !isObject(base) || !isObject(over)) return over;
  const out = { ...base };
  for (const [key, value] of Object.entries(over)) out[key] = merge(out[key], value, properties[key]);
  return out;
}
