import Type, { type Static, type TEnumValue, type TInteger, type TObject, type TProperties, type TSchema, type TString } from 'typebox';
import { OPERATIONS, PAGED_PATHS, UPSTREAM_ENDPOINTS, type PagedPath, type UpstreamPath } from '../operations.js';
import { MERCHANDISE } from './merchandise.js';

/**
 * The configuration, once: every key with its type, range and default. The `Config` type, the
 * defaults (filled in by ajv `useDefaults`) and config/default.json (`npm run config:defaults`) all
 * come from here. Sections default to `{}` so that the defaults of their keys fill them, and refuse
 * keys they do not list; the tables keyed by data (apiKeyMap, sort, merchandise) take any key.
 * Wording a key needs beyond what messages.ts derives from its type is the `patternProblem` annotation.
 */

const MAX_TIMEOUT_MS = 600_000;
/** The longest `cache.lockTtlMs`: a lock in Redis held longer is no instance's (src/cache/store.ts). */
export const MAX_LOCK_TTL_MS = MAX_TIMEOUT_MS;
/** A week: past that a page is no longer the catalog (the upstream's Cache-Control is capped there too). */
export const MAX_CACHE_SECONDS = 604_800;
/** An HMAC key a search over short keys cannot find: 32 characters, e.g. `openssl rand -hex 32` gives 64. */
/** A secret (the fleet's HMAC keys, the operator token) a search over short keys cannot find: `openssl rand -hex 32` gives 64. */
const MIN_SECRET_LENGTH = 32;
/** The operator endpoints whose data is not for legacy callers (`/healthz` and `/readyz` are on every port). */
export const OPERATOR_DATA_PATHS = ['/metrics', '/ledger', '/clients'] as const;
const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

const section = <P extends TProperties>(properties: P) => Type.Object(properties, { additionalProperties: false, default: {} });
const integer = (minimum: number, maximum: number, value: number) => Type.Integer({ minimum, maximum, default: value });
const text = (value: string) => Type.String({ minLength: 1, default: value });
const oneOf = <V extends TEnumValue[]>(values: readonly [...V], value: V[number]) => Type.Enum(values, { default: value });
const nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()], { default: null });
/** An absolute http(s) URL without query or fragment; `null` when not configured. */
const url = () => nullable(Type.String({ minLength: 1, format: 'http-url' }));
const table = (value: Readonly<Record<string, string>>, options: { propertyNames?: TSchema } = {}) =>
  Type.Record(Type.String(), Type.String({ minLength: 1 }), { default: value, ...options });

const profile = (defaults: (typeof UPSTREAM_ENDPOINTS)[PagedPath]['paging']) =>
  section({
    pageParam: text(defaults.pageParam),
    sizeParam: text(defaults.sizeParam),
    firstPage: integer(0, 1, defaults.firstPage),
    maxPageSize: integer(1, 100_000, defaults.maxPageSize),
  });

const NAME_PATTERN = { pattern: '^[A-Za-z_][A-Za-z0-9_.-]*$', patternProblem: 'must be an XML element name without a prefix' };
const elementName = (value: string) => Type.String({ ...NAME_PATTERN, default: value });

/** The page shape of every endpoint of the operations table: its root, items container and item names. */
const pageShapes = section(
  Object.fromEntries(
    (Object.keys(UPSTREAM_ENDPOINTS) as UpstreamPath[]).map((path) => {
      const { root, items, item } = UPSTREAM_ENDPOINTS[path].page;
      return [path, section({ root: elementName(root), items: elementName(items), item: elementName(item) })];
    }),
  ) as Record<UpstreamPath, TObject<{ root: TString; items: TString; item: TString }>>,
);

/** The page cache's freshness of every endpoint (docs/fleet.md), defaults from the operations table. */
const freshness = section(
  Object.fromEntries(
    (Object.keys(UPSTREAM_ENDPOINTS) as UpstreamPath[]).map((path) => {
      const { freshSeconds, staleWhileRevalidateSeconds, staleIfErrorSeconds } = UPSTREAM_ENDPOINTS[path].freshness;
      return [
        path,
        section({
          freshSeconds: integer(0, MAX_CACHE_SECONDS, freshSeconds),
          staleWhileRevalidateSeconds: integer(0, MAX_CACHE_SECONDS, staleWhileRevalidateSeconds),
          staleIfErrorSeconds: integer(0, MAX_CACHE_SECONDS, staleIfErrorSeconds),
        }),
      ];
    }),
  ) as Record<UpstreamPath, TObject<{ freshSeconds: TInteger; staleWhileRevalidateSeconds: TInteger; staleIfErrorSeconds: TInteger }>>,
);

/**
 * A caller the migration has a name for (docs/migration.md): matched by one of its apiKeys, by the
 * fingerprint the hits show for it, or by the address it calls from. Its name is a metric label
 * value, so it is short and plain; `other` stands for everyone not in the table.
 */
const client = Type.Object(
  {
    name: Type.String({
      pattern: '^(?!other$)(?!anonymous$)(?!(sha256|hmac):)[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$',
      patternProblem: 'must be 1 to 64 letters, digits, "_", "." or "-", other than "other" and "anonymous" and not a fingerprint',
    }),
    team: nullable(Type.String({ minLength: 1 })),
    contact: nullable(Type.String({ minLength: 1 })),
    apiKeys: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    fingerprints: Type.Array(
      Type.String({
        pattern: '^hmac:[0-9a-f]{12}$',
        patternProblem: 'must be a fingerprint as the hits show it, e.g. "hmac:0123456789ab"',
      }),
      { default: [] },
    ),
    addresses: Type.Array(Type.String({ format: 'ip-range' }), { default: [] }),
  },
  { additionalProperties: false, required: ['name'] },
);

/** A date and time with its offset: never the machine's time zone. */
const instant = (options: { default?: string } = {}) => Type.String({ minLength: 1, format: 'offset-date-time', ...options });

/** Annotated, not inferred: the operations' own types are made from `Config`. */
const OPERATION_NAMES: string[] = OPERATIONS.map((op) => op.name);

/** How far apart the windows of a repeated brownout start. */
export const REPEAT_PERIOD_MS = { daily: 86_400_000, weekly: 7 * 86_400_000 } as const;

/**
 * A scheduled brownout (docs/migration.md §5): from `start`, for `durationMinutes`, once or again every
 * day or week until `until`, the calls of the listed operations from the listed clients (none listed:
 * all) are refused with a fault naming their replacement. Its name is a metric label value.
 */
const brownout = Type.Object(
  {
    name: Type.String({ pattern: '^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$', patternProblem: 'must be 1 to 64 letters, digits, "_", "." or "-"' }),
    operations: Type.Array(Type.Enum(OPERATION_NAMES), { default: [] }),
    /** Names of the `clients` table; validate.ts refuses any other. */
    clients: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    start: instant(),
    durationMinutes: Type.Integer({ minimum: 1, maximum: 525_600 }),
    repeat: nullable(Type.Enum(['daily', 'weekly'])),
    /** The last moment a repeated window may start. */
    until: nullable(instant()),
  },
  { additionalProperties: false, required: ['name', 'start', 'durationMinutes'] },
);

/**
 * A route of legacy calls (docs/migration.md §6): the calls of the listed operations from the listed
 * clients (none listed: all), and of those the `percent` of callers their fingerprint's stable hash
 * puts in, are passed through to `legacy.origin` or shadowed. The first route that matches wins.
 */
const legacyRoute = Type.Object(
  {
    mode: Type.Enum(['passthrough', 'shadow']),
    operations: Type.Array(Type.Enum(OPERATION_NAMES), { default: [] }),
    /** Names of the `clients` table; validate.ts refuses any other. */
    clients: Type.Array(Type.String({ minLength: 1 }), { default: [] }),
    percent: integer(0, 100, 100),
    /** Shadow only: the path that answers; the other is called in the background. `null`: `translated`. */
    answerFrom: nullable(Type.Enum(['legacy', 'translated'])),
  },
  { additionalProperties: false, required: ['mode'] },
);

/** One profile per paged endpoint of the operations table, its defaults from there. */
const profiles = section(
  Object.fromEntries(PAGED_PATHS.map((path) => [path, profile(UPSTREAM_ENDPOINTS[path].paging)])) as Record<
    PagedPath,
    ReturnType<typeof profile>
  >,
);

export const ConfigSchema = Type.Object(
  {
    server: section({
      host: text('0.0.0.0'),
      port: integer(0, 65535, 8080),
      servicePath: Type.String({
        minLength: 1,
        pattern: '^/[^/?#]+$',
        patternProblem: 'must be one path segment such as "/index.asmx"',
        default: '/index.asmx',
      }),
      publicBaseUrl: url(),
      /**
       * Whether to believe X-Forwarded-*: the number of proxies in front (the address is the one the
       * nearest of them saw), or `true` for every hop (the first X-Forwarded-For entry, which any
       * caller writes; validate.ts refuses it for clients known by address). The whole number first,
       * so that a bad value is told the range rather than only "true or false".
       */
      trustProxy: Type.Union([Type.Integer({ minimum: 1, maximum: 16 }), Type.Boolean()], {
        default: false,
        patternProblem: 'must be true, false or the number of proxies in front (1 to 16)',
      }),
      bodyLimitBytes: integer(1024, 64 * 1024 * 1024, 1_048_576),
      requestTimeoutMs: integer(1000, MAX_TIMEOUT_MS, 60_000),
      shutdownGraceMs: integer(0, MAX_TIMEOUT_MS, 35_000),
      /** On SIGTERM, how long `/readyz` fails before the listener closes (a load balancer's probe interval). */
      drainDelayMs: integer(0, MAX_TIMEOUT_MS, 0),
      /** Legacy calls answered at once; more are shed with 503 "Server Too Busy". */
      maxConcurrentCalls: integer(1, 100_000, 64),
      /** The `Retry-After` of a shed call. */
      retryAfterSeconds: integer(1, 3600, 5),
      /**
       * The operator listener (`/metrics`, `/ledger`, `/healthz`, `/readyz`): what it tells (client
       * names, fingerprints, their latest requests) is not for legacy callers. `null`: none.
       */
      adminPort: Type.Union([Type.Integer({ minimum: 0, maximum: 65535 }), Type.Null()], {
        default: 9464,
        patternProblem: 'must be a port number (0 to 65535) or null for no operator listener',
      }),
      /**
       * Where the operator listener listens: loopback unless an operator writes down another address,
       * and then `/ledger` and `/reload` need `adminToken` (docs/security.md).
       */
      adminHost: text('127.0.0.1'),
      /**
       * The bearer token `/ledger` and `/reload` require (and `/ledger` on the service's port); `null`:
       * none, and they answer only on a loopback operator listener. Visible ASCII, no spaces: it goes
       * in an Authorization header.
       */
      adminToken: nullable(
        Type.String({
          minLength: MIN_SECRET_LENGTH,
          pattern: '^[\\x21-\\x7E]+$',
          patternProblem: 'must be visible ASCII characters without spaces, as an Authorization header carries it',
        }),
      ),
      /**
       * The names the operator listener answers to besides IP literals and `localhost` (a `Host` it
       * does not know gets 421: a DNS name an attacker points at the listener is not one of these).
       */
      adminHostnames: Type.Array(
        Type.String({
          pattern: '^(?!.*\\.\\.)[A-Za-z0-9_](?:[A-Za-z0-9_.-]{0,251}[A-Za-z0-9_])?$',
          patternProblem: 'must be a host name without a port, such as "proxy-1.internal"',
        }),
        { default: [], uniqueItems: true },
      ),
      /** Operator endpoints also served on the service's port, each named: off unless asked for. */
      operatorOnServicePort: Type.Array(Type.Enum([...OPERATOR_DATA_PATHS]), { default: [], uniqueItems: true }),
      /**
       * `/readyz` answers 503 while the upstream is unreachable. Off: every instance shares the
       * upstream, so a load balancer would take the whole fleet out at once.
       */
      readinessFollowsUpstream: Type.Boolean({ default: false }),
    }),
    service: section({
      namespace: text('http://tempuri.org/'),
      name: text('CatalogService'),
      httpOptionalParameters: oneOf(['lenient', 'strict'], 'lenient'),
    }),
    upstream: section({
      /** `null`: no upstream configured, the embedded demo upstream is started. */
      baseUrl: url(),
      version: text('3'),
      apiKeyMode: oneOf(['forward', 'map', 'fixed'], 'forward'),
      appKey: nullable(Type.String({ minLength: 1 })),
      apiKeyMap: table({}),
      connections: integer(1, 1024, 32),
      connectTimeoutMs: integer(1, MAX_TIMEOUT_MS, 5000),
      headersTimeoutMs: integer(1, MAX_TIMEOUT_MS, 15_000),
      bodyTimeoutMs: integer(1, MAX_TIMEOUT_MS, 15_000),
      maxResponseBytes: integer(1024, 256 * 1024 * 1024, 4_194_304),
      maxConcurrentPages: integer(1, 64, 10),
      /** Upper bound on the upstream pages one legacy call may fetch. */
      maxPagesPerCall: integer(1, 10_000, 50),
      retries: integer(0, 5, 1),
      /** Deadline of one legacy call, all its upstream requests included. */
      callTimeoutMs: integer(1, MAX_TIMEOUT_MS, 30_000),
      /** How often the upstream's health is probed when no upstream request has told it lately. */
      healthCheckIntervalMs: integer(1000, MAX_TIMEOUT_MS, 10_000),
      answers: pageShapes,
      /**
       * The upstream's budget for each appKey, shared by the fleet through Redis (docs/fleet.md): at
       * most `requestsPerSecond` on average, `burst` at once. A request over it waits up to
       * `maxWaitMs` for room, then its call is shed (503, Retry-After). `null`: no budget.
       */
      budget: section({
        requestsPerSecond: nullable(Type.Number({ exclusiveMinimum: 0, maximum: 1_000_000 })),
        burst: integer(1, 1_000_000, 10),
        maxWaitMs: integer(0, MAX_TIMEOUT_MS, 1000),
        /**
         * The instances the fleet runs: while an instance cannot share the budget through Redis (none
         * configured, not yet connected, or away), it spends its share of it alone, `requestsPerSecond /
         * instances` and `burst / instances` (at least 1), so that the fleet keeps within the budget.
         */
        instances: integer(1, 10_000, 1),
      }),
    }),
    /**
     * State shared by the fleet (docs/fleet.md): the page cache, the budget, page counts and the ledger.
     * Neither `url` nor `sentinels`: each instance keeps its own. Redis down, slow or failing over never
     * fails a call: the instance falls back to its own state until Redis is back.
     */
    redis: section({
      /** One Redis (`rediss://` for TLS), its password in the URL; or, for a Redis that fails over, `sentinels`. */
      url: nullable(Type.String({ minLength: 1, format: 'redis-url' })),
      /**
       * Redis Sentinel instead of `url` (docs/fleet.md, Redis with Sentinel): `host:port` of each
       * sentinel (an IPv6 address in brackets), which name the master of `masterName`; the instance
       * follows the master through a failover.
       */
      sentinels: Type.Array(Type.String({ minLength: 1, format: 'host-port' }), { default: [], uniqueItems: true }),
      /** The name the sentinels monitor the master under (`sentinel monitor <name> …`); required with `sentinels`. */
      masterName: nullable(Type.String({ minLength: 1 })),
      /** With `sentinels`, the password of the master and its replicas (with `url` it is in the URL). Never logged. */
      password: nullable(Type.String({ minLength: 1 })),
      /** With `sentinels`, the sentinels' own password (their `requirepass`), when they have one. Never logged. */
      sentinelPassword: nullable(Type.String({ minLength: 1 })),
      /** With `sentinels`, TLS to the sentinels and to the master (`rediss://` says it for `url`). */
      tls: Type.Boolean({ default: false }),
      /** Before every key, so that several fleets (or other programs) can share one Redis. */
      keyPrefix: text('catalog-proxy:'),
      /** Longer than this, a command counts as failed and the instance's own state answers. */
      commandTimeoutMs: integer(1, 60_000, 250),
      connectTimeoutMs: integer(1, MAX_TIMEOUT_MS, 2000),
      /**
       * The key that seals what the fleet keeps in Redis and hashes the keys it keeps it under, the same
       * on every instance; `null`: `deprecation.clientIdKey`. Never logged.
       */
      secret: nullable(Type.String({ minLength: MIN_SECRET_LENGTH })),
    }),
    /**
     * Upstream pages, kept as the checked bytes the proxy splices (docs/fleet.md), keyed by their exact
     * upstream request: the appKey is part of the key unless `shareAcrossKeys`.
     */
    cache: section({
      enabled: Type.Boolean({ default: true }),
      /** The bytes of pages one instance keeps in memory, least recently used evicted first. */
      maxBytes: integer(0, 16 * 1024 * 1024 * 1024, 64 * 1024 * 1024),
      shareAcrossKeys: Type.Boolean({ default: false }),
      /**
       * With Redis: how long the instance fetching a page that others miss too holds the fleet's lock on
       * it at most. An instance killed while it holds one delays the others no longer than this.
       */
      lockTtlMs: integer(1000, MAX_LOCK_TTL_MS, 15_000),
      endpoints: freshness,
    }),
    paging: section({
      legacyPageIndexBase: oneOf([0, 1], 0),
      startResults: oneOf(['offset', 'page'], 'offset'),
      profiles,
      storeLookupPageSize: integer(1, 100_000, 256),
      defaultMaxResults: integer(1, 100_000, 60),
    }),
    mapping: section({
      /** Legacy sort → upstream sort; keys are stored with `-` read as `_` (validate.ts). */
      sort: table({ by_score_desc: 'by_score_desc', by_date_desc: 'by_date_desc' }),
      /** Merchandise id → caption (docs/upstream.md §9). */
      merchandise: table(MERCHANDISE, {
        propertyNames: Type.String({ pattern: '^\\d+$', patternProblem: 'must be keyed by a non-negative merchandise id' }),
      }),
    }),
    deprecation: section({
      deprecatedAt: instant({ default: '2026-01-01T00:00:00Z' }),
      sunsetAt: nullable(instant()),
      /** Once `sunsetAt` has passed, every call is refused with a fault naming its replacement. */
      refuseAfterSunset: Type.Boolean({ default: false }),
      policyUrl: url(),
      successorUrl: url(),
      /** Where callers reach the `.cp` endpoints: the base of each reply's per-call successor link; `null`: upstream.baseUrl. */
      successorBaseUrl: url(),
      /**
       * HMAC key of the client fingerprints in deprecation hits, shared by every instance so that they
       * name a caller alike. `null`: a random key for the process (refused in production).
       */
      clientIdKey: nullable(Type.String({ minLength: MIN_SECRET_LENGTH })),
      /** The fleet ledger's entries (docs/migration.md §3) are dropped from Redis after this many days without calls. */
      ledgerRetentionDays: integer(1, 3650, 90),
      /** A client that has made no legacy call for this many days is `ok` (docs/migration.md, "A status per client"). */
      quietDays: integer(1, 3650, 30),
      /** `GET /deprecation/status` on the service port: a caller reads its own migration with its own key. */
      selfService: Type.Boolean({ default: true }),
    }),
    clients: Type.Array(client, { default: [] }),
    brownouts: Type.Array(brownout, { default: [] }),
    demo: section({
      seed: integer(0, 2 ** 31 - 1, 20_091_117),
      stores: integer(1, 100, 6),
      designs: integer(1, 100_000, 480),
    }),
    log: section({
      level: oneOf(LOG_LEVELS, 'info'),
      /** Where the deprecation hits go: `null` for stdout, else a file (appended to). */
      hitsFile: nullable(Type.String({ minLength: 1 })),
    }),
    /** The old service itself, for passthrough and shadow routes (docs/migration.md §6). */
    legacy: section({
      /** Where the old ASMX service still answers; request paths are forwarded below it. */
      origin: url(),
      /** The whole exchange with the origin, connection to last byte. */
      timeoutMs: integer(1, MAX_TIMEOUT_MS, 30_000),
      connections: integer(1, 1024, 16),
      maxResponseBytes: integer(1024, 256 * 1024 * 1024, 4_194_304),
      /** Background calls of shadow routes under way at once; more are skipped (and counted). */
      maxShadowsInFlight: integer(0, 10_000, 16),
      routes: Type.Array(legacyRoute, { default: [] }),
    }),
  },
  { additionalProperties: false },
);

/** Readonly all the way down: nothing changes the configuration once it is loaded. */
type DeepReadonly<T> = { readonly [K in keyof T]: DeepReadonly<T[K]> };

/** What the schema accepts, defaults filled in; validate.ts normalises it into a `Config`. */
export type Settings = Static<typeof ConfigSchema>;
export type Config = DeepReadonly<Settings>;
export type PagingProfile = Config['paging']['profiles'][PagedPath];
export type LegacyRoute = Config['legacy']['routes'][number];
/** The path that answered a call, as its hit records it: the translation, or a route's mode (docs/migration.md §6). */
export type RouteName = 'translated' | LegacyRoute['mode'];
