import { Ajv, type ErrorObject } from 'ajv';
import { REPEAT_PERIOD_MS } from './schema.js';
import { ConfigError, FORMATS, refusal } from './problems.js';
import { ConfigSchema, type Config, type Settings } from './schema.js';

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

// `verbose`: errors carry the value and the schema they failed, which the messages quote.
const ajv = new Ajv({ useDefaults: true, verbose: true });
ajv.addKeyword({ keyword: 'patternProblem', schemaType: 'string' });
for (const [format, problem] of Object.entries(FORMATS))
  ajv.addFormat(format, { type: 'string', validate: (value: string) => problem(value) === undefined });
const check = ajv.compile<Settings>(ConfigSchema);

/** A random key of 32 characters or more has more: `openssl rand -hex 32` gives 16 of 16 hex digits. */
const MIN_DISTINCT_KEY_CHARACTERS = 8;

/** A secret too regular to be random: its problem, else false. */
function patternedKey(key: string | null, what: 'key' | 'token'): string | false {
  return (
    key !== null &&
    new Set(key).size < MIN_DISTINCT_KEY_CHARACTERS &&
    `must be a random ${what}, not a repeated pattern (fewer than ${MIN_DISTINCT_KEY_CHARACTERS} different characters); make one with ` +
      `\`openssl rand -hex 32\`.`
  );
}

/** Rules across keys, checked in order once every key is valid on its own: the key refused, and its problem if any. */
const RULES: readonly (readonly [key: string, problem: (settings: Settings) => string | false])[] = [
  [
    'upstream.appKey',
    ({ upstream }) => upstream.apiKeyMode === 'fixed' && upstream.appKey === null && 'must be set when upstream.apiKeyMode is "fixed".',
  ],
  [
    'upstream.apiKeyMap',
    ({ upstream }) =>
      upstream.apiKeyMode === 'map' &&
      Object.keys(upstream.apiKeyMap).length === 0 &&
      'must map at least one apiKey when upstream.apiKeyMode is "map".',
  ],
  [
    'deprecation.sunsetAt',
    ({ deprecation: { deprecatedAt, sunsetAt } }) =>
      sunsetAt !== null &&
      Date.parse(sunsetAt) < Date.parse(deprecatedAt) &&
      `must not be earlier than deprecation.deprecatedAt (${deprecatedAt}).`,
  ],
  [
    'server.shutdownGraceMs',
    ({ server, upstream }) =>
      server.shutdownGraceMs < upstream.callTimeoutMs &&
      `must be at least upstream.callTimeoutMs (${upstream.callTimeoutMs}), so that calls in flight can finish.`,
  ],
  [
    'server.adminPort',
    ({ server }) =>
      server.adminPort !== null &&
      server.adminPort !== 0 &&
      server.adminPort === server.port &&
      `must differ from server.port (${server.port}): the operator endpoints have a listener of their own. Choose another port, or set ` +
        `it to null and name the endpoints the service's port should serve in server.operatorOnServicePort.`,
  ],
  ['deprecation.clientIdKey', ({ deprecation }) => patternedKey(deprecation.clientIdKey, 'key')],
  ['redis.secret', ({ redis }) => patternedKey(redis.secret, 'key')],
  [
    // Neither wins: a fleet whose instances read the two differently would not share one Redis.
    'redis.sentinels',
    ({ redis }) =>
      redis.sentinels.length > 0 &&
      redis.url !== null &&
      'must be empty when redis.url is set: name Redis one way, by its URL or by its sentinels, not both.',
  ],
  [
    'redis.masterName',
    ({ redis }) =>
      redis.sentinels.length > 0 &&
      redis.masterName === null &&
      'must be set with redis.sentinels: the name the sentinels monitor the master under (`sentinel monitor <name> …`).',
  ],
  ...(['masterName', 'password', 'sentinelPassword', 'tls'] as const).map(
    (name): readonly [string, (settings: Settings) => string | false] => [
      `redis.${name}`,
      ({ redis }) => redis.sentinels.length === 0 && redis[name] !== null && redis[name] !== false && sentinelOnly(name),
    ],
  ),
  ['server.adminToken', ({ server }) => patternedKey(server.adminToken, 'token')],
  [
    // The service's port faces callers: the ledger and the clients there are for whoever holds the token, never for anyone.
    'server.operatorOnServicePort',
    ({ server }) => {
      const guarded = server.operatorOnServicePort.find((path) => path !== '/metrics');
      return (
        guarded !== undefined &&
        server.adminToken === null &&
        `names "${guarded}", which needs server.adminToken (ADMIN_TOKEN or ADMIN_TOKEN_FILE) on the service's port: set one, or ` +
          `leave "${guarded}" to the operator listener.`
      );
    },
  ],
  ['clients', ({ clients }) => clientsProblem(clients)],
  [
    'clients',
    ({ clients, deprecation }) =>
      deprecation.clientIdKey === null &&
      clients.some(({ fingerprints }) => fingerprints.length > 0) &&
      'list fingerprints, which need deprecation.clientIdKey: without it each process keys the fingerprints with a random key of its ' +
        'own, which no listed fingerprint matches.',
  ],
  [
    'server.trustProxy',
    ({ server, clients }) =>
      server.trustProxy === true &&
      clients.some(({ addresses }) => addresses.length > 0) &&
      'must be the number of proxies in front of the proxy (e.g. 1), not true, when a client of the clients table is known by its ' +
        'addresses: with true the address is the first entry of X-Forwarded-For, which any caller can write.',
  ],
  ['brownouts', ({ brownouts, clients }) => brownoutsProblem(brownouts, clients)],
  [
    'deprecation.refuseAfterSunset',
    ({ deprecation }) =>
      deprecation.refuseAfterSunset && deprecation.sunsetAt === null && 'must be false unless deprecation.sunsetAt is set.',
  ],
  [
    'paging.storeLookupPageSize',
    ({ paging }) =>
      paging.storeLookupPageSize > paging.profiles['/product.searchForProductsOfStore.cp'].maxPageSize &&
      'must not exceed the maximum page size of /product.searchForProductsOfStore.cp.',
  ],
  ['legacy.routes', ({ legacy, clients }) => legacyRoutesProblem(legacy, clients)],
];

/** The problem of a key of Redis Sentinel set without `redis.sentinels`. */
function sentinelOnly(name: 'masterName' | 'password' | 'sentinelPassword' | 'tls'): string {
  const instead: Readonly<Record<typeof name, string>> = {
    masterName: '',
    password: ' (with redis.url, the password goes in the URL: redis://:password@host:6379)',
    sentinelPassword: '',
    tls: ' (with redis.url, TLS is the rediss:// scheme)',
  };
  return `must be unset without redis.sentinels: it is for Redis Sentinel only${instead[name]}.`;
}

/**
 * The error to word: the first ajv reports, unless it is one branch of a union that words itself as a
 * whole (`patternProblem` on the union): then the union's, which names every form the key takes.
 */
function firstError(errors: readonly ErrorObject[]): ErrorObject {
  const first = errors[0]!;
  const union = errors.find(
    (error) =>
      error.keyword === 'anyOf' &&
      error.instancePath === first.instancePath &&
      (error.parentSchema as { patternProblem?: string } | undefined)?.patternProblem !== undefined,
  );
  return union ?? first;
}

/** Each client is matched some way, and no name, apiKey, fingerprint or range belongs to two clients. */
function clientsProblem(clients: Settings['clients']): string | false {
  /** What a client claims → the entry that claimed it first. */
  const owners = new Map<string, string>();
  for (const [index, { name, apiKeys, fingerprints, addresses }] of clients.entries()) {
    const entry = `entry ${index + 1} (${name})`;
    if (apiKeys.length + fingerprints.length + addresses.length === 0)
      return `${entry} must list at least one of apiKeys, fingerprints, addresses.`;
    // An apiKey is never quoted back: the message goes to the operator's log.
    const claims: [identity: string, shown: string][] = [
      [`name ${name}`, `the name ${name}`],
      ...apiKeys.map((key): [string, string] => [`apiKey ${key}`, 'an apiKey']),
      ...fingerprints.map((fingerprint): [string, string] => [`fingerprint ${fingerprint}`, `the fingerprint ${fingerprint}`]),
      ...addresses.map((range): [string, string] => [`range ${range}`, `the address range ${range}`]),
    ];
    for (const [identity, shown] of claims) {
      const owner = owners.get(identity);
      if (owner !== undefined)
        return `${entry} names ${shown} that ${owner === entry ? 'it names already' : `${owner} names`}; each belongs to one client.`;
      owners.set(identity, entry);
    }
  }
  return false;
}

/** Each brownout has its own name, lists only clients of the table, and ends its windows before the next one opens. */
function brownoutsProblem(brownouts: Settings['brownouts'], clients: Settings['clients']): string | false {
  const clientNames = new Set(clients.map(({ name }) => name));
  const seen = new Map<string, number>();
  for (const [index, { name, clients: named, start, durationMinutes, repeat, until }] of brownouts.entries()) {
    const entry = `entry ${index + 1} (${name})`;
    const first = seen.get(name);
    if (first !== undefined) return `${entry} has the name of entry ${first}; each brownout has its own name.`;
    seen.set(name, index + 1);
    const unknown = named.find((client) => !clientNames.has(client));
    if (unknown !== undefined) return `${entry} names the client ${JSON.stringify(unknown)}, which the clients table does not list.`;
    if (repeat === null) {
      if (until !== null) return `${entry} sets until without repeat; until ends a repeated brownout.`;
      continue;
    }
    if (durationMinutes * 60_000 >= REPEAT_PERIOD_MS[repeat])
      return (
        `${entry} must last less than the ${repeat === 'daily' ? 'day' : 'week'} it repeats in ` +
        `(${REPEAT_PERIOD_MS[repeat] / 60_000} minutes).`
      );
    if (until !== null && Date.parse(until) < Date.parse(start)) return `${entry} has until earlier than its start.`;
  }
  return false;
}

/** Routes need the origin they route to, name only clients of the table, and say `answerFrom` only when shadowing. */
function legacyRoutesProblem({ origin, routes }: Settings['legacy'], clients: Settings['clients']): string | false {
  if (routes.length > 0 && origin === null) return 'need legacy.origin: the old service the routes send calls to.';
  const clientNames = new Set(clients.map(({ name }) => name));
  for (const [index, { mode, clients: named, answerFrom }] of routes.entries()) {
    const entry = `entry ${index + 1}`;
    const unknown = named.find((client) => !clientNames.has(client));
    if (unknown !== undefined) return `${entry} names the client ${JSON.stringify(unknown)}, which the clients table does not list.`;
    if (mode === 'passthrough' && answerFrom !== null)
      return `${entry} sets answerFrom, which only a shadow route has: a passthrough is answered by the legacy origin.`;
  }
  return false;
}

/**
 * The configuration `json` describes, its missing keys filled with the schema's defaults. A bad value
 * throws a `ConfigError` naming the dotted key, or `origins[key]`, the environment variable it came from.
 */
export function validateConfig(json: Json, origins: Readonly<Record<string, string>> = {}): Config {
  // ajv fills defaults in place: work on a copy, not on the caller's objects.
  const settings: unknown = structuredClone(json);
  if (!check(settings)) throw refusal(firstError(check.errors!), origins);
  for (const [key, problem] of RULES) {
    const found = problem(settings);
    if (found !== false) throw new ConfigError(origins[key] === undefined ? key : `${origins[key]} (${key})`, found);
  }
  return normalise(settings);
}

/** Legacy sort values are read with `-` as `_` (docs/upstream.md §11.5), so table keys are stored that way; URLs lose a trailing slash. */
function normalise(settings: Settings): Config {
  const { server, upstream, mapping, deprecation } = settings;
  mapping.sort = Object.fromEntries(Object.entries(mapping.sort).map(([key, value]) => [key.replace(/-/g, '_'), value]));
  server.publicBaseUrl = trimUrl(server.publicBaseUrl);
  upstream.baseUrl = trimUrl(upstream.baseUrl);
  deprecation.policyUrl = trimUrl(deprecation.policyUrl);
  deprecation.successorUrl = trimUrl(deprecation.successorUrl);
  settings.legacy.origin = trimUrl(settings.legacy.origin);
  return settings;
}

function trimUrl(url: string | null): string | null {
  return url === null ? null : new URL(url).href.replace(/\/+$/, '');
}
