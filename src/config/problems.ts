import { isIP } from 'node:net';
import type { ErrorObject } from 'ajv';
import { hostPort } from './host-port.js';

/**
 * How a refusal reads: `Invalid configuration: <dotted key> <problem>`, the problem derived from the
 * schema of the key (its type, range, allowed values, format), or its `patternProblem` annotation.
 */

export class ConfigError extends Error {
  constructor(key: string, problem: string) {
    super(`Invalid configuration: ${key} ${problem}`);
    this.name = 'ConfigError';
  }
}

/**
 * `scheme://user:password@host` → `scheme://***@host`, wherever it occurs in `text`, and the value of
 * an `apiKey` or `appKey` parameter (any case, %-escaped or not) → `[redacted]`: credentials in a URL
 * never reach a log or a message. Slashes may be missing or backslashes, as `new URL` allows, and a
 * password may hold an unencoded `/`, `?` or `#`: everything up to the last `@` of the word goes.
 */
export function redactUrl(text: string): string {
  return text
    .replace(/([a-z][a-z\d+.-]*:[/\\]*)[^\s"'<>]*@/gi, '$1***@')
    .replace(/([?&;])([^=&#\s"'<>]+)=([^&#\s"'<>]*)/g, (pair, separator: string, name: string) =>
      KEY_PARAMETERS.includes(decodedName(name).toLowerCase()) ? `${separator}${name}=[redacted]` : pair,
    );
}

/** The parameters that carry a key: the legacy apiKey and the upstream's appKey. */
const KEY_PARAMETERS = ['apikey', 'appkey'];

function decodedName(name: string): string {
  try {
    return decodeURIComponent(name);
  } catch {
    return name;
  }
}

/** The formats the schema names, each saying what is wrong with a value (undefined: nothing). */
export const FORMATS: Readonly<Record<string, (value: string) => string | undefined>> = {
  'http-url': (value) => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      return 'must be an absolute http(s) URL';
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return 'must be an http or https URL';
    // `new URL` drops an empty query or fragment ("…?"), so look at the text too.
    if (parsed.search !== '' || parsed.hash !== '' || /[?#]/.test(value)) return 'must not have a query or fragment';
    // They are sent as HTTP Basic credentials, decoded.
    if (!decodes(parsed.username) || !decodes(parsed.password)) return 'must have its user name and password %-encoded';
    return undefined;
  },
  'redis-url': (value) => {
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      return 'must be a redis:// or rediss:// URL';
    }
    if (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') return 'must be a redis:// or rediss:// URL';
    if (parsed.hash !== '' || /#/.test(value)) return 'must not have a fragment';
    return undefined;
  },
  'host-port': (value) =>
    hostPort(value) === null
      ? 'must be a host and a port from 1 to 65535, such as "sentinel-1.internal:26379" or "[2001:db8::1]:26379"'
      : undefined,
  // One address, or a range in CIDR notation (`10.1.0.0/16`, `2001:db8::/32`).
  'ip-range': (value) => (ipRange(value) === null ? 'must be an IP address or a CIDR range such as "10.1.0.0/16"' : undefined),
  // With its offset (`Z` or `±hh:mm`): a date without one would depend on the machine's time zone.
  'offset-date-time': (value) =>
    /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) && !Number.isNaN(Date.parse(value))
      ? undefined
      : 'must be an ISO 8601 date and time with an offset, e.g. "2026-01-01T00:00:00Z"',
};

/** `value` as address, family and prefix length; null when it is not an address or a CIDR range. */
export function ipRange(value: string): { readonly address: string; readonly family: 'ipv4' | 'ipv6'; readonly prefix: number } | null {
  const [address = '', prefixText, extra] = value.split('/');
  const version = isIP(address);
  if (version === 0 || extra !== undefined) return null;
  const bits = version === 4 ? 32 : 128;
  if (prefixText !== undefined && !/^\d{1,3}$/.test(prefixText)) return null;
  const prefix = prefixText === undefined ? bits : Number(prefixText);
  return prefix > bits ? null : { address, family: version === 4 ? 'ipv4' : 'ipv6', prefix };
}

function decodes(text: string): boolean {
  try {
    decodeURIComponent(text);
    return true;
  } catch {
    return false;
  }
}

/** The keywords of a failed schema that the messages quote. */
interface Annotated {
  readonly type?: string;
  readonly minimum?: number;
  readonly maximum?: number;
  readonly properties?: Readonly<Record<string, unknown>>;
  readonly patternProblem?: string;
}

/**
 * The refusal for the first error ajv reports (it runs with `verbose`, so the error carries the value
 * and its schema). `origins` maps a dotted key to the environment variable its value came from.
 */
export function refusal(error: ErrorObject, origins: Readonly<Record<string, string>>): ConfigError {
  const path = shownPath(
    error.instancePath
      .split('/')
      .slice(1)
      .map((segment) => segment.replace(/~1/g, '/').replace(/~0/g, '~')),
  );
  const key = path.join('.');
  // An item of a list read from one variable (REDIS_SENTINELS) names the variable too.
  const origin = origins[key] ?? (/^\d+$/.test(path.at(-1) ?? '') ? origins[path.slice(0, -1).join('.')] : undefined);
  const name = origin === undefined ? key : `${origin} (${key})`;
  const schema = (error.parentSchema ?? {}) as Annotated;
  const got = SECRET_VALUED.includes(key) ? 'got a value not shown here (a secret)' : `got ${show(error.data)}`;
  switch (error.keyword) {
    case 'additionalProperties': {
      const unknown = String(error.params.additionalProperty);
      const known = closest(unknown, Object.keys(schema.properties ?? {}));
      const hint = known === undefined ? '' : ` (did you mean ${[...path, known].join('.')}?)`;
      return new ConfigError([...path, unknown].join('.'), `is not a configuration key${hint}.`);
    }
    case 'anyOf':
      return new ConfigError(name, `${schema.patternProblem}, ${got}.`);
    case 'pattern':
      // A property name (propertyNames) is named in the key itself; a value is shown.
      return error.propertyName === undefined
        ? new ConfigError(name, `${schema.patternProblem}, ${got}.`)
        : new ConfigError([...path, error.propertyName].join('.'), `${schema.patternProblem}.`);
    case 'format':
      return new ConfigError(name, `${FORMATS[String(error.params.format)]?.(String(error.data))}, ${got}.`);
    case 'required':
      return new ConfigError([...path, String(error.params.missingProperty)].join('.'), 'is required.');
    case 'enum':
      return new ConfigError(name, `must be one of ${(error.params.allowedValues as unknown[]).map(show).join(', ')}, ${got}.`);
    case 'uniqueItems':
      return new ConfigError(name, 'must not name a value twice.');
    case 'minLength':
      // Not quoted: the longer strings of the configuration are keys.
      if (Number(error.params.limit) > 1) return new ConfigError(name, `must be at least ${error.params.limit} characters long.`);
  }
  // Otherwise the value has the wrong type or is out of range (type, minimum, maximum, minLength).
  switch (schema.type) {
    case 'integer':
      return new ConfigError(name, `must be a whole number from ${schema.minimum} to ${schema.maximum}, ${got}.`);
    case 'string':
      return new ConfigError(name, 'must be a non-empty string.');
    case 'boolean':
      return new ConfigError(name, `must be true or false, ${got}.`);
    case 'object':
      return new ConfigError(name, 'must be an object.');
    case 'array':
      return new ConfigError(name, 'must be a list.');
  }
  // No key of the schema fails in another way; should one, ajv's own words still name it.
  return new ConfigError(name, `${error.message}.`);
}

/** Keys whose value is a secret: a refusal names the key and never quotes the value. */
const SECRET_VALUED = ['server.adminToken', 'deprecation.clientIdKey', 'redis.secret', 'redis.password', 'redis.sentinelPassword'];

/** Tables keyed by secrets: a refusal names the table, never the key of the entry at fault. */
const SECRET_KEYED = ['upstream.apiKeyMap'];

function shownPath(path: string[]): string[] {
  const table = SECRET_KEYED.find((name) => path.join('.').startsWith(`${name}.`));
  return table === undefined ? path : [...table.split('.'), '<an apiKey>'];
}

/** A value as JSON (a number too large for JSON as itself), with any credentials of a URL hidden. */
function show(value: unknown): string {
  if (typeof value === 'number' && !Number.isFinite(value)) return String(value);
  return JSON.stringify(typeof value === 'string' ? redactUrl(value) : value);
}

/** The known key `unknown` most likely misspells: the same but for case, or a couple of edits away. */
function closest(unknown: string, known: readonly string[]): string | undefined {
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const candidate of known) {
    const distance = editDistance(unknown.toLowerCase(), candidate.toLowerCase());
    if (distance < bestDistance && distance <= 2 && distance < candidate.length / 2) [best, bestDistance] = [candidate, distance];
  }
  return best;
}

/** Edit distance with adjacent transpositions (`prot` is one edit from `port`), one row at a time. */
function editDistance(a: string, b: string): number {
  let before: number[] = [];
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      current[j] = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + (a[i - 1] === b[j - 1] ? 0 : 1));
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) current[j] = Math.min(current[j]!, before[j - 2]! + 1);
    }
    [before, previous] = [previous, current];
  }
  return previous[b.length]!;
}
