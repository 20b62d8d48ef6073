import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Running } from '../src/start/main.js';
import { answersTo } from '../src/server/admin-host.js';
import { requireClient, skipClientSuite } from './support/clients.js';
import { startProxy } from './support/proxy.js';
import { REDIS_MISSING, redisInstalled, startRedis, type RedisServer } from './support/redis.js';

/**
 * The Grafana dashboard (deploy/grafana/legacy-migration.json) and the Prometheus rules
 * (deploy/prometheus/rules.yml) against a real Prometheus (Debian's package; .ci/run installs it)
 * that scrapes the proxy while callers of every kind call it: every query of the dashboard, every
 * variable, every recording rule and the quantity every alert watches is valid and returns data.
 * A query that names a metric or label the proxy does not have returns nothing, and fails here.
 */

const PROMETHEUS = process.env.PROMETHEUS_PATH ?? '/usr/bin/prometheus';
const PROMTOOL = process.env.PROMTOOL_PATH ?? '/usr/bin/promtool';
const installed = existsSync(PROMETHEUS) && existsSync(PROMTOOL);
const ROOT = join(import.meta.dirname, '..');
const DASHBOARD = join(ROOT, 'deploy', 'grafana', 'legacy-migration.json');
const RULES = join(ROOT, 'deploy', 'prometheus', 'rules.yml');
const SCRAPE_CONFIG = join(ROOT, 'deploy', 'prometheus', 'prometheus.yml');

/** What Grafana would put in for the dashboard's variables: every client, every operation. */
const GRAFANA_VARIABLES: Readonly<Record<string, string>> = { $__rate_interval: '1m', $client: '.*', $operation: '.*' };

interface Dashboard {
  readonly templating: { readonly list: readonly { readonly name: string; readonly definition?: string }[] };
  readonly panels: readonly { readonly title: string; readonly targets: readonly { readonly expr: string }[] }[];
}

interface Rule {
  readonly type: 'recording' | 'alerting';
  readonly name: string;
  readonly query: string;
  readonly health: string;
  readonly lastError?: string;
}

let proxy: Running;
/** The "legacy service" the proxy shadows Search against: another catalog, so that answers differ. */
let legacyService: Running;
let prometheus: ChildProcess;
/** The fleet's shared state, for redis_up and the upstream budget's series. */
let redis: RedisServer;
let api: string;
let dataDir: string;

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

async function query(promql: string): Promise<unknown[]> {
  const response = await fetch(`${api}/api/v1/query?${new URLSearchParams({ query: promql })}`);
  const body = (await response.json()) as { status: string; error?: string; data?: { result: unknown[] } };
  if (body.status !== 'success') throw new Error(`${promql}: ${body.error}`);
  return body.data!.result;
}

async function rules(): Promise<Rule[]> {
  const body = (await (await fetch(`${api}/api/v1/rules`)).json()) as { data: { groups: { rules: Rule[] }[] } };
  return body.data.groups.flatMap((group) => group.rules);
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * Named and unnamed callers; faults of the caller (an unknown product type) and of the upstream (a
 * store it does not know); calls a brownout refuses; Search shadowed against another catalog, whose
 * answers differ; bursts past `server.maxConcurrentCalls`, shed.
 */
async function traffic(): Promise<void> {
  // Bodies read to the end: a response left unread keeps its connection busy, and stop() waits for it.
  const call = (path: string): Promise<void> =>
    fetch(`${proxy.url}/index.asmx/${path}`).then(async (response) => void (await response.arrayBuffer()));
  await Promise.all([
    call('Search?query=dog&apiKey=warehouse-key&version=1'),
    call('ProductLookup?productNumber=3&apiKey=shop-key&version=1'),
    call(
      'AdvancedSearch?query=dog&apiKey=stranger&version=1&productTypes=Hovercraft&startResults=&maxResults=&maxProductsPerDesign=&sort=',
    ),
    call('StoreLookup?storeId=nope&apiKey=shop-key&version=1&productTypes='),
  ]);
  await Promise.all(Array.from({ length: 12 }, () => call('Search?query=&apiKey=warehouse-key&version=1')));
}

describe.skipIf(skipClientSuite(installed && redisInstalled))('dashboards and alert rules against a real Prometheus', () => {
  beforeAll(async () => {
    requireClient(installed, `Prometheus is not installed at ${PROMETHEUS}`);
    requireClient(redisInstalled, REDIS_MISSING);
    redis = await startRedis();
    legacyService = await startProxy({ demo: { seed: 7 } });
    proxy = await startProxy({
      redis: { url: redis.url },
      upstream: { budget: { requestsPerSecond: 1000 } },
      legacy: { origin: legacyService.url, routes: [{ mode: 'shadow', operations: ['Search'] }] },
      clients: [
        { name: 'warehouse', team: 'Logistics', apiKeys: ['warehouse-key'] },
        { name: 'shop', apiKeys: ['shop-key'] },
      ],
      server: { maxConcurrentCalls: 2 },
      // Open for the whole test: the shop's ProductLookup calls are refused.
      brownouts: [
        {
          name: 'test-window',
          operations: ['ProductLookup'],
          clients: ['shop'],
          start: new Date(Date.now() - 60_000).toISOString(),
          durationMinutes: 60,
        },
      ],
    });
    dataDir = mkdtempSync(join(tmpdir(), 'prometheus-'));
    const config = join(dataDir, 'prometheus.yml');
    writeFileSync(
      config,
      [
        'global: { scrape_interval: 1s, evaluation_interval: 1s }',
        `rule_files: [${JSON.stringify(RULES)}]`,
        'scrape_configs:',
        '  - job_name: catalog-proxy',
        `    static_configs: [{ targets: [${JSON.stringify(new URL(proxy.adminUrl!).host)}] }]`,
      ].join('\n'),
    );
    const port = await freePort();
    api = `http://127.0.0.1:${port}`;
    prometheus = spawn(
      PROMETHEUS,
      [`--config.file=${config}`, `--storage.tsdb.path=${join(dataDir, 'data')}`, `--web.listen-address=127.0.0.1:${port}`],
      { stdio: 'ignore' },
    );
    await until('Prometheus to start', async () => (await fetch(`${api}/-/ready`)).ok);
    // Calls over several scrapes, so that every rate has two samples with calls between them.
    const ticker = setInterval(() => void traffic(), 400);
    try {
      await until(
        'the proxy to be scraped with calls of every kind',
        async () =>
          (await query('legacy:shed_ratio:rate5m')).length > 0 &&
          (await query('legacy:upstream_failure_ratio:rate5m')).length > 0 &&
          (await query('legacy:shadow_mismatch_ratio:rate5m')).length > 0,
      );
      await until('every rule to be evaluated', async () => (await rules()).every((rule) => rule.health === 'ok'));
      // A recording rule over rates has data once two scrapes with calls between them are in; wait for every one.
      await until('every recording rule to return data', async () => {
        const recording = (await rules()).filter((rule) => rule.type === 'recording');
        return (await Promise.all(recording.map((rule) => query(rule.name)))).every((result) => result.length > 0);
      });
    } finally {
      clearInterval(ticker);
    }
  }, 60_000);

  afterAll(async () => {
    prometheus?.kill();
    await proxy?.stop();
    await legacyService?.stop();
    await redis?.stop();
    if (dataDir) rmSync(dataDir, { recursive: true, force: true });
  });

  it('promtool accepts the rules file', () => {
    const check = spawnSync(PROMTOOL, ['check', 'rules', RULES], { encoding: 'utf8' });
    expect(check.stdout + check.stderr).toContain('SUCCESS');
    expect(check.status).toBe(0);
  });

  it(
    'promtool: UpstreamDown fires after two minutes of upstream_up 0 on an instance, not for a blip ' +
      '(test/prometheus/upstream-down.test.yml)',
    () => {
      const unit = spawnSync(PROMTOOL, ['test', 'rules', 'upstream-down.test.yml'], {
        cwd: join(ROOT, 'test', 'prometheus'),
        encoding: 'utf8',
      });
      expect(unit.stdout + unit.stderr).toContain('SUCCESS');
      expect(unit.status).toBe(0);
    },
  );

  it.each([
    ['RedisDown fires after two minutes of redis_up 0 on an instance, not for a blip', 'redis-down.test.yml'],
    ['RedisFailingOver fires for three Redis master changes in half an hour, not for one', 'redis-failing-over.test.yml'],
    [
      'UpstreamBudgetExhausted fires after ten minutes of more than 5% of upstream requests shed by the budget',
      'upstream-budget-exhausted.test.yml',
    ],
  ])('promtool: %s (test/prometheus/%s)', (_what, file) => {
    const unit = spawnSync(PROMTOOL, ['test', 'rules', file], { cwd: join(ROOT, 'test', 'prometheus'), encoding: 'utf8' });
    expect(unit.stdout + unit.stderr).toContain('SUCCESS');
    expect(unit.status).toBe(0);
  });

  const dashboard = JSON.parse(readFileSync(DASHBOARD, 'utf8')) as Dashboard;
  const panelQueries = dashboard.panels.flatMap((panel) => panel.targets.map((target) => ({ panel: panel.title, expr: target.expr })));

  it.each(panelQueries)('dashboard panel "$panel": $expr', async ({ expr }) => {
    const promql = Object.entries(GRAFANA_VARIABLES).reduce((text, [name, value]) => text.replaceAll(name, value), expr);
    expect(promql).not.toContain('$');
    expect(await query(promql)).not.toEqual([]);
  });

  it.each(dashboard.templating.list.filter((variable) => variable.definition !== undefined))(
    'dashboard variable $name lists values',
    async ({ definition }) => {
      const [, metric, label] = /^label_values\((\w+), (\w+)\)$/.exec(definition!)!;
      const response = (await (
        await fetch(`${api}/api/v1/label/${label}/values?${new URLSearchParams({ 'match[]': metric! })}`)
      ).json()) as { data: string[] };
      expect(response.data.length).toBeGreaterThan(0);
    },
  );

  it('names the configured clients in the client variable and everyone else "other"', async () => {
    const response = (await (await fetch(`${api}/api/v1/label/client/values`)).json()) as { data: string[] };
    expect(response.data).toEqual(['other', 'shop', 'warehouse']);
  });

  it('every rule is loaded and evaluates without error, and every recording rule returns data', async () => {
    const loaded = await rules();
    expect(loaded.filter((rule) => rule.type === 'recording').length).toBeGreaterThan(0);
    for (const rule of loaded) {
      expect({ rule: rule.name, health: rule.health, error: rule.lastError ?? '' }).toEqual({ rule: rule.name, health: 'ok', error: '' });
      if (rule.type === 'recording') expect(await query(rule.name), rule.name).not.toEqual([]);
    }
  });

  it('the quantity every alert compares with its threshold returns data', async () => {
    const alerts = (await rules()).filter((rule) => rule.type === 'alerting');
    expect(alerts.length).toBeGreaterThan(0);
    for (const alert of alerts) {
      // Every alert is written `<quantity> <comparison> <threshold>` (deploy/prometheus/rules.yml).
      const watched = /^(.+?)\s*(?:[<>]=?|[=!]=)\s*[\d.]+$/s.exec(alert.query.trim())?.[1];
      expect(watched, `${alert.name}: ${alert.query}`).toBeDefined();
      expect(await query(watched!), alert.name).not.toEqual([]);
    }
  });
});

describe.skipIf(!installed)('the example Prometheus configuration (deploy/prometheus/prometheus.yml)', () => {
  it('is valid, loads the rules, and scrapes targets the operator listener answers (its Host check)', () => {
    const check = spawnSync(PROMTOOL, ['check', 'config', SCRAPE_CONFIG], { encoding: 'utf8' });
    expect(check.stdout + check.stderr).toContain('SUCCESS: 1 rule files found');
    expect(check.status).toBe(0);
    const targets = [...readFileSync(SCRAPE_CONFIG, 'utf8').matchAll(/'([^']+:\d+)'/g)].map((match) => match[1]!);
    expect(targets.length).toBeGreaterThan(0);
    // The Host Prometheus sends is the target: no name of server.adminHostnames is configured by default.
    for (const target of targets) expect([target, answersTo(target, new Set())]).toEqual([target, true]);
  });
});
