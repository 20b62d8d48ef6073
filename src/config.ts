import { readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * Configuration: `config/default.json` holds every default; the file named by CONFIG_FILE is merged
 * over it (objects key by key), then the environment (PORT, HOST, UPSTREAM_URL, LOG_LEVEL). The
 * result is validated once at start-up; a bad value stops the process with a message naming the key.
 */

export interface PagingProfile {
  readonly pageParam: string;
  readonly sizeParam: string;
  readonly firstPage: number;
  readonly maxPageSize: number;
}

export type PagedUpstream = '/product.search.cp' | '/product.searchForProductsOfStore.cp';
export type ApiKeyMode = 'forward' | 'map' | 'fixed';

export interface Config {
  readonly server: {
    readonly host: string;
    readonly port: number;
    readonly servicePath: string;
    readonly publicBaseUrl: string | null;
    readonly trustProxy: boolean;
    readonly bodyLimitBytes: number;
    readonly requestTimeoutMs: number;
    readonly shutdownGraceMs: number;
    /** Legacy calls answered at once; more are shed with 503 "Server Too Busy". */
    readonly maxConcurrentCalls: number;
  };
  readonly service: {
    readonly namespace: string;
    readonly name: string;
    readonly httpOptionalParameters: 'lenient' | 'strict';
  };
  readonly upstream: {
    /** `null`: no upstream configured, the embedded demo upstream is started. */
    readonly baseUrl: string | null;
    readonly version: string;
    readonly apiKeyMode: ApiKeyMode;
    readonly appKey: string | null;
    readonly apiKeyMap: Readonly<Record<string, string>>;
    readonly connections: number;
    readonly connectTimeoutMs: number;
    readonly headersTimeoutMs: number;
    readonly bodyTimeoutMs: number;
    readonly maxResponseBytes: number;
    readonly maxConcurrentPages: number;
    /** Upper bound on the upstream pages one legacy call may fetch. */
    readonly maxPagesPerCall: number;
    readonly retries: number;
    /** Deadline of one legacy call, all its upstream requests included. */
    readonly callTimeoutMs: number;
  };
  readonly paging: {
    readonly legacyPageIndexBase: 0 | 1;
    readonly startResults: 'offset' | 'page';
    readonly profiles: Readonly<Record<PagedUpstream, PagingProfile>>;
    readonly storeLookupPageSize: number;
    readonly defaultMaxResults: number;
  };
  readonly mapping: {
    readonly sort: Readonly<Record<string, string>>;
    /** Merchandise id → caption (cp-upstream.md §9). */
    readonly merchandise: Readonly<Record<string, string>>;
  };
  readonly deprecation: {
    readonly deprecatedAt: string;
    readonly sunsetAt: string | null;
    readonly policyUrl: string | null;
    readonly successorUrl: string | null;
    /** HMAC key for the client fingerprints in deprecation hits; `null`: a plain SHA-256. */
    readonly clientIdKey: string | null;
  };
  readonly demo: {
    readonly seed: number;
    readonly stores: number;
    readonly designs: number;
  };
  readonly log: {
    readonly level: string;
  };
}

export class ConfigError extends Error {
  constructor(key: string, problem: string) {
    super(`Invalid configuration: ${key} ${problem}`);
    this.name = 'ConfigError';
  }
}

const here = dirname(fileURLToPath(import.meta.url));
/** `config/default.json`, found from src/ (tsx, vitest) and from dist/src/ (built). */
export const DEFAULT_CONFIG_FILE = [resolve(here, '../config/default.json'), resolve(here, '../../config/default.json')].find(
  (candidate) => {
    try {
      readFileSync(candidate);
      return true;
    } catch {
      return false;
    }
  },
) as string;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** `overrides` (for tests and embedding) are merged last, in order. */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, ...overrides: Json[]): Config {
  let merged = readJson(DEFAULT_CONFIG_FILE, 'config/default.json');
  if (env.CONFIG_FILE) merged = deepMerge(merged, readJson(env.CONFIG_FILE, 'CONFIG_FILE'));
  merged = deepMerge(merged, environmentOverrides(env));
  for (const layer of overrides) merged = deepMerge(merged, layer);
  return validateConfig(merged);
}

function readJson(file: string, key: string): Json {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new ConfigError(key, `names a file that cannot be read (${file}: ${(err as NodeJS.ErrnoException).code ?? err}).`);
  }
  try {
    return JSON.parse(text) as Json;
  } catch (err) {
    throw new ConfigError(key, `is not valid JSON (${file}: ${(err as Error).message}).`);
  }
}

function environmentOverrides(env: NodeJS.ProcessEnv): Json {
  const server: Record<string, Json> = {};
  if (env.PORT !== undefined) server.port = envInteger('PORT', env.PORT);
  if (env.HOST !== undefined) server.host = env.HOST;
  const result: Record<string, Json> = { server };
  if (env.UPSTREAM_URL !== undefined && env.UPSTREAM_URL !== '') result.upstream = { baseUrl: env.UPSTREAM_URL };
  if (env.LOG_LEVEL !== undefined) result.log = { level: env.LOG_LEVEL };
  return result;
}

function envInteger(key: string, value: string): number {
  if (!/^\d+$/.test(value.trim())) throw new ConfigError(key, `must be a whole number, got ${JSON.stringify(value)}.`);
  return Number(value);
}

function isObject(value: Json | undefined): value is { [key: string]: Json } {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function deepMerge(base: Json, over: Json): Json {
  if (!isObject(base) || !isObject(over)) return over;
  const out: { [key: string]: Json } = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const current = out[key];
    // Tables keyed by data (apiKeyMap, merchandise, sort) are replaced whole, not merged.
    out[key] = isObject(current) && isObject(value) && !REPLACED_WHOLE.has(key) ? deepMerge(current, value) : value;
  }
  return out;
}

const REPLACED_WHOLE = new Set(['apiKeyMap', 'merchandise', 'sort']);

/** Reads typed values out of the merged JSON, naming the dotted key in every complaint. */
class Reader {
  constructor(
    private readonly root: Json,
    private readonly path: string,
  ) {}

  private raw(key: string): Json | undefined {
    return isObject(this.root) ? this.root[key] : undefined;
  }

  private name(key: string): string {
    return this.path === '' ? key : `${this.path}.${key}`;
  }

  section(key: string): Reader {
    const value = this.raw(key);
    if (!isObject(value)) throw new ConfigError(this.name(key), 'must be an object.');
    return new Reader(value, this.name(key));
  }

  keys(): string[] {
    return isObject(this.root) ? Object.keys(this.root) : [];
  }

  string(key: string): string {
    const value = this.raw(key);
    if (typeof value !== 'string' || value === '') throw new ConfigError(this.name(key), 'must be a non-empty string.');
    return value;
  }

  optionalString(key: string): string | null {
    const value = this.raw(key);
    if (value === null || value === undefined) return null;
    return this.string(key);
  }

  url(key: string): string | null {
    const value = this.optionalString(key);
    if (value === null) return null;
    let parsed: URL;
    try {
      parsed = new URL(value);
    } catch {
      throw new ConfigError(this.name(key), `must be an absolute http(s) URL, got ${JSON.stringify(value)}.`);
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
      throw new ConfigError(this.name(key), `must be an http or https URL, got ${JSON.stringify(value)}.`);
    }
    if (parsed.search !== '' || parsed.hash !== '' || value.includes('?') || value.includes('#')) {
      throw new ConfigError(this.name(key), `must not have a query or fragment, got ${JSON.stringify(value)}.`);
    }
    return parsed.href.replace(/\/+$/, '');
  }

  integer(key: string, min: number, max: number): number {
    const value = this.raw(key);
    if (typeof value !== 'number' || !Number.isInteger(value) || value < min || value > max) {
      throw new ConfigError(this.name(key), `must be a whole number from ${min} to ${max}, got ${JSON.stringify(value)}.`);
    }
    return value;
  }

  boolean(key: string): boolean {
    const value = this.raw(key);
    if (typeof value !== 'boolean') throw new ConfigError(this.name(key), `must be true or false, got ${JSON.stringify(value)}.`);
    return value;
  }

  oneOf<T extends string | number>(key: string, allowed: readonly T[]): T {
    const value = this.raw(key);
    const found = allowed.find((candidate) => candidate === value);
    if (found === undefined) {
      throw new ConfigError(this.name(key), `must be one of ${allowed.map((v) => JSON.stringify(v)).join(', ')}, got ${JSON.stringify(value)}.`);
    }
    return found;
  }

  /** ISO 8601 with its offset (`Z` or `±hh:mm`): a date without one would depend on the machine's time zone. */
  date(key: string): string {
    const value = this.string(key);
    if (!/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$/.test(value) || Number.isNaN(Date.parse(value))) {
      throw new ConfigError(this.name(key), `must be an ISO 8601 date and time with an offset, e.g. "2026-01-01T00:00:00Z", got ${JSON.stringify(value)}.`);
    }
    return value;
  }

  optionalDate(key: string): string | null {
    return this.raw(key) === null || this.raw(key) === undefined ? null : this.date(key);
  }

  stringTable(key: string): Record<string, string> {
    const table = this.section(key);
    return Object.fromEntries(table.keys().map((entry) => [entry, table.string(entry)]));
  }
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
const MAX_TIMEOUT_MS = 600_000;

export function validateConfig(json: Json): Config {
  const root = new Reader(json, '');
  const server = root.section('server');
  const service = root.section('service');
  const upstream = root.section('upstream');
  const paging = root.section('paging');
  const profiles = paging.section('profiles');
  const mapping = root.section('mapping');
  const deprecation = root.section('deprecation');
  const demo = root.section('demo');

  const servicePath = server.string('servicePath');
  if (!/^\/[^/?#]+$/.test(servicePath)) throw new ConfigError('server.servicePath', `must be one path segment such as "/index.asmx", got ${JSON.stringify(servicePath)}.`);

  const merchandise = mapping.stringTable('merchandise');
  for (const id of Object.keys(merchandise)) {
    if (!/^\d+$/.test(id)) throw new ConfigError(`mapping.merchandise.${id}`, 'must be keyed by a non-negative merchandise id.');
  }

  const apiKeyMode = upstream.oneOf<ApiKeyMode>('apiKeyMode', ['forward', 'map', 'fixed']);
  const appKey = upstream.optionalString('appKey');
  if (apiKeyMode === 'fixed' && appKey === null) throw new ConfigError('upstream.appKey', 'must be set when upstream.apiKeyMode is "fixed".');
  if (apiKeyMode === 'map' && upstream.section('apiKeyMap').keys().length === 0) {
    throw new ConfigError('upstream.apiKeyMap', 'must map at least one apiKey when upstream.apiKeyMode is "map".');
  }

  const config: Config = {
    server: {
      host: server.string('host'),
      port: server.integer('port', 0, 65535),
      servicePath,
      publicBaseUrl: server.url('publicBaseUrl'),
      trustProxy: server.boolean('trustProxy'),
      bodyLimitBytes: server.integer('bodyLimitBytes', 1024, 64 * 1024 * 1024),
      requestTimeoutMs: server.integer('requestTimeoutMs', 1000, MAX_TIMEOUT_MS),
      shutdownGraceMs: server.integer('shutdownGraceMs', 0, MAX_TIMEOUT_MS),
      maxConcurrentCalls: server.integer('maxConcurrentCalls', 1, 100_000),
    },
    service: {
      namespace: service.string('namespace'),
      name: service.string('name'),
      httpOptionalParameters: service.oneOf('httpOptionalParameters', ['lenient', 'strict']),
    },
    upstream: {
      baseUrl: upstream.url('baseUrl'),
      version: upstream.string('version'),
      apiKeyMode,
      appKey,
      apiKeyMap: upstream.stringTable('apiKeyMap'),
      connections: upstream.integer('connections', 1, 1024),
      connectTimeoutMs: upstream.integer('connectTimeoutMs', 1, MAX_TIMEOUT_MS),
      headersTimeoutMs: upstream.integer('headersTimeoutMs', 1, MAX_TIMEOUT_MS),
      bodyTimeoutMs: upstream.integer('bodyTimeoutMs', 1, MAX_TIMEOUT_MS),
      maxResponseBytes: upstream.integer('maxResponseBytes', 1024, 256 * 1024 * 1024),
      maxConcurrentPages: upstream.integer('maxConcurrentPages', 1, 64),
      maxPagesPerCall: upstream.integer('maxPagesPerCall', 1, 10_000),
      retries: upstream.integer('retries', 0, 5),
      callTimeoutMs: upstream.integer('callTimeoutMs', 1, MAX_TIMEOUT_MS),
    },
    paging: {
      legacyPageIndexBase: paging.oneOf<0 | 1>('legacyPageIndexBase', [0, 1]),
      startResults: paging.oneOf('startResults', ['offset', 'page']),
      profiles: {
        '/product.search.cp': readProfile(profiles.section('/product.search.cp')),
        '/product.searchForProductsOfStore.cp': readProfile(profiles.section('/product.searchForProductsOfStore.cp')),
      },
      storeLookupPageSize: paging.integer('storeLookupPageSize', 1, 100_000),
      defaultMaxResults: paging.integer('defaultMaxResults', 1, 100_000),
    },
    mapping: { sort: sortTable(mapping.stringTable('sort')), merchandise },
    deprecation: {
      deprecatedAt: deprecation.date('deprecatedAt'),
      sunsetAt: deprecation.optionalDate('sunsetAt'),
      policyUrl: deprecation.url('policyUrl'),
      successorUrl: deprecation.url('successorUrl'),
      clientIdKey: deprecation.optionalString('clientIdKey'),
    },
    demo: {
      seed: demo.integer('seed', 0, 2 ** 31 - 1),
      stores: demo.integer('stores', 1, 100),
      designs: demo.integer('designs', 1, 100_000),
    },
    log: { level: root.section('log').oneOf('level', LOG_LEVELS) },
  };

  const { deprecatedAt, sunsetAt } = config.deprecation;
  if (sunsetAt !== null && Date.parse(sunsetAt) < Date.parse(deprecatedAt)) {
    throw new ConfigError('deprecation.sunsetAt', `must not be earlier than deprecation.deprecatedAt (${deprecatedAt}).`);
  }
  if (config.server.shutdownGraceMs < config.upstream.callTimeoutMs) {
    throw new ConfigError('server.shutdownGraceMs', `must be at least upstream.callTimeoutMs (${config.upstream.callTimeoutMs}), so that calls in flight can finish.`);
  }
  if (config.paging.storeLookupPageSize > config.paging.profiles['/product.searchForProductsOfStore.cp'].maxPageSize) {
    throw new ConfigError('paging.storeLookupPageSize', 'must not exceed the maximum page size of /product.searchForProductsOfStore.cp.');
  }
  return config;
}

/** Keys are matched after `-` → `_` (cp-upstream.md §11.5), so they are stored that way. */
function sortTable(table: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(table).map(([key, value]) => [key.replace(/-/g, '_'), value]));
}

function readProfile(section: Reader): PagingProfile {
  return {
    pageParam: section.string('pageParam'),
    sizeParam: section.string('sizeParam'),
    firstPage: section.integer('firstPage', 0, 1),
    maxPageSize: section.integer('maxPageSize', 1, 100_000),
  };
}
