import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { XMLValidator } from 'fast-xml-parser';
import Fastify from 'fastify';
import * as soap from 'soap';
import { Agent, request } from 'undici';
import { loadConfig } from '../src/config/load.js';
import type { Json } from '../src/config/validate.js';
import { startDemoUpstream } from '../src/demo/demo-server.js';
import { renderWsdl } from '../src/inbound/description/wsdl.js';
import { tuneHeap } from '../src/start/heap.js';
import { holdTickObject } from '../src/start/ticks.js';
import { createLogger } from '../src/log/loggers.js';
import { buildApp } from '../src/server/app.js';
import { tracingSettings } from '../src/tracing/settings.js';
import type { Tracing } from '../src/tracing/setup.js';

/**
 * The servers the benchmark measures, each started in a child process of its own so that it can be
 * pinned to a core and its CPU time and memory read apart from the load generator's:
 *
 *   upstream     the demo catalog behind a cache, so that the upstream costs almost nothing per call;
 *                store pages answer after `storeDelayMs`, as a remote upstream would
 *   passthrough  (a) bare fastify + undici: the Search query cut out of the envelope with a regular
 *                expression, the upstream body spliced into the envelope with the proxy's bytes
 *                (whitespace between tags dropped, `xmlns=""` added), no checks
 *   facade       (b) what a team would write by hand with the `soap` package's server; with
 *                `checkPage`, (b2): the same facade checking the upstream page (fast-xml-parser's
 *                XMLValidator) before it answers, a fault otherwise, as the proxy checks every page
 *   wire         (z) a cache hit at the wire's limit: bare fastify that reads the request whole and
 *                answers the bytes `proxy` answered for the same request, from memory (each request
 *                asked of `proxy` once, on its first call)
 *   proxy        (c) this product; with `tracing`, traced as OTEL_TRACES_EXPORTER=otlp turns it on,
 *                every call sampled, its spans sent to `tracing.endpoint`
 *   sink         a trace collector that costs almost nothing: an OTLP/HTTP receiver that reads each
 *                POST /v1/traces whole, counts its bytes, decodes nothing and answers 200, empty
 *
 * `node dist/bench/servers.js KIND OPTIONS_JSON`; the child tells its parent its URL over IPC and
 * answers `usage` messages with its CPU time and memory (and a sink what it received, a traced proxy
 * the spans it dropped).
 */

interface Options {
  readonly upstream?: string;
  /** Designs in the upstream's catalog. */
  readonly designs?: number;
  readonly storeDelayMs?: number;
  readonly proxyConfig?: Json;
  /** (b2): the facade checks the upstream page before it answers. */
  readonly checkPage?: boolean;
  /** (z): the proxy whose answers it serves from memory. */
  readonly proxy?: string;
  /** The proxy traced, every call sampled, its spans sent over OTLP/HTTP (protobuf) to `endpoint`. */
  readonly tracing?: { readonly endpoint: string };
}

/** What the sink received, and the spans a traced proxy dropped, since start: sent with its usage. */
const received = { receivedRequests: 0, receivedBytes: 0 };
/** The upstream's: the requests it answered since start, sent with its usage. */
const answered = { upstreamRequests: 0 };
let droppedSpans: (() => { queueFull: number; exportFailed: number }) | null = null;

const NS = 'http://tempuri.org/';
const APP_KEY = 'bench-app-key';

async function startUpstream(options: Options): Promise<string> {
  const config = loadConfig({}, { log: { level: 'silent' }, demo: { designs: options.designs ?? 480 } });
  const demo = await startDemoUpstream(config);
  const cache = new Map<string, Promise<{ status: number; body: Buffer }>>();
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    answered.upstreamRequests += 1;
    const target = req.url ?? '/';
    let cached = cache.get(target);
    if (!cached) {
      cached = fetch(`${demo.url}${target}`).then(async (response) => ({
        status: response.status,
        body: Buffer.from(await response.arrayBuffer()),
      }));
      cache.set(target, cached);
    }
    const delay = target.startsWith('/product.searchForProductsOfStore.cp') ? (options.storeDelayMs ?? 0) : 0;
    void cached.then(({ status, body }) =>
      setTimeout(
        () => res.writeHead(status, { 'content-type': 'text/xml; charset=utf-8', 'content-length': body.length }).end(body),
        delay,
      ),
    );
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const ENVELOPE_HEAD =
  '<?xml version="1.0" encoding="utf-8"?><soap:Envelope xmlns:soap="http://schemas.xmlsoap.org/soap/envelope/" ' +
  'xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance" xmlns:xsd="http://www.w3.org/2001/XMLSchema"><soap:Body><SearchResponse ' +
  'xmlns="http://tempuri.org/"><SearchResult>';
const ENVELOPE_TAIL = '</SearchResult></SearchResponse></soap:Body></soap:Envelope>';

async function startPassthrough(options: Options): Promise<string> {
  const upstream = new URL(options.upstream as string);
  const agent = new Agent({ connections: 16, keepAliveTimeout: 30_000 });
  const fastify = Fastify({ logger: false });
  fastify.addContentTypeParser('*', { parseAs: 'string' }, (_request, body, done) => done(null, body));
  fastify.post('/index.asmx', async (req, reply) => {
    const query = /<query>([^<]*)<\/query>/.exec(String(req.body))?.[1] ?? '';
    const { body } = await request(`${upstream.origin}/product.search.cp?v=3&appKey=${APP_KEY}&query=${encodeURIComponent(query)}`, {
      dispatcher: agent,
    });
    const result = (await body.text())
      .trim()
      .replace(/>[ \t\r\n]+</g, '><')
      .replace(/^<searchResultSet /, '<searchResultSet xmlns="" ');
    reply.header('content-type', 'text/xml; charset=utf-8').header('cache-control', 'private, max-age=0');
    return ENVELOPE_HEAD + result + ENVELOPE_TAIL;
  });
  return fastify.listen({ host: '127.0.0.1', port: 0 });
}

async function startFacade(options: Options): Promise<string> {
  const upstream = new URL(options.upstream as string);
  const agent = new Agent({ connections: 16, keepAliveTimeout: 30_000 });
  const { service, paging } = loadConfig({});
  const server = createServer();
  const port = await new Promise<number>((resolve) => server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port)));
  const url = `http://127.0.0.1:${port}/index.asmx`;
  const implementation = {
    [service.name]: {
      [`${service.name}Soap`]: {
        Search: async (args: { query?: string }) => {
          const { body } = await request(
            `${upstream.origin}/product.search.cp?v=3&appKey=${APP_KEY}&query=${encodeURIComponent(args.query ?? '')}`,
            { dispatcher: agent },
          );
          const page = await body.text();
          // (b2): a page that is not well-formed XML is a fault (the soap server writes one for what is thrown), as the proxy's is.
          if (options.checkPage === true && XMLValidator.validate(page) !== true)
            throw new Error('The upstream page is not well-formed XML');
          return { SearchResult: { $xml: page } };
        },
      },
    },
  };
  soap.listen(server, '/index.asmx', implementation, renderWsdl(service, url, paging.profiles), () => {});
  return `http://127.0.0.1:${port}`;
}

/**
 * (z): every request read whole (method, URL, body), answered from a map of the proxy's own answers
 * to it: status, content type and bytes. What a hand-written facade with a cache in front costs when
 * the cache holds the very reply, the floor a cache hit of the proxy is measured against.
 */
async function startWire(options: Options): Promise<string> {
  const proxy = new URL(options.proxy as string);
  const agent = new Agent({ connections: 4 });
  const answers = new Map<string, Promise<{ status: number; contentType: string; body: Buffer }>>();
  const fastify = Fastify({ logger: false });
  fastify.removeAllContentTypeParsers();
  fastify.addContentTypeParser('*', { parseAs: 'buffer' }, (_request, body, done) => done(null, body));
  fastify.all('/*', async (req, reply) => {
    const body = req.body instanceof Buffer ? req.body : undefined;
    const key = `${req.method} ${req.url} ${req.headers.soapaction ?? ''} ${body?.toString('latin1') ?? ''}`;
    let answer = answers.get(key);
    if (answer === undefined) {
      answer = request(`${proxy.origin}${req.url}`, {
        method: req.method as 'GET' | 'POST',
        headers: { 'content-type': req.headers['content-type'] ?? 'text/plain', soapaction: req.headers.soapaction ?? '' },
        ...(body === undefined ? {} : { body }),
        dispatcher: agent,
      }).then(async (response) => ({
        status: response.statusCode,
        contentType: String(response.headers['content-type'] ?? 'text/xml; charset=utf-8'),
        body: Buffer.from(await response.body.arrayBuffer()),
      }));
      answers.set(key, answer);
    }
    const { status, contentType, body: bytes } = await answer;
    return reply.code(status).header('content-type', contentType).send(bytes);
  });
  return fastify.listen({ host: '127.0.0.1', port: 0 });
}

/**
 * As `npm start` runs it: its heap flags set (src/start/heap.ts), a hit logged for every call (to
 * stdout, which the benchmark discards).
 */
async function startProxy(options: Options): Promise<string> {
  tuneHeap();
  holdTickObject();
  const config = loadConfig({}, { upstream: { baseUrl: options.upstream as string, appKey: APP_KEY } }, options.proxyConfig ?? {});
  const logger = createLogger(config.log.level);
  const tracing = options.tracing ? await startTracing(options.tracing.endpoint, logger) : null;
  const { fastify } = await buildApp(config, { logger, tracing });
  return fastify.listen({ host: '127.0.0.1', port: 0 });
}

/**
 * Tracing as main() builds it (src/start/main.ts) from OTEL_TRACES_EXPORTER=otlp,
 * OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf and OTEL_TRACES_SAMPLER=always_on (the ratio 1.0). The
 * OTLP exporter reads its endpoint from the environment itself, so it is set in this process.
 */
async function startTracing(endpoint: string, logger: ReturnType<typeof createLogger>): Promise<Tracing> {
  process.env.OTEL_EXPORTER_OTLP_ENDPOINT = endpoint;
  const settings = tracingSettings({
    OTEL_TRACES_EXPORTER: 'otlp',
    OTEL_EXPORTER_OTLP_PROTOCOL: 'http/protobuf',
    OTEL_TRACES_SAMPLER: 'always_on',
  });
  if (settings === null) throw new Error('tracing settings: off');
  // Loaded only when on, as main() does: the proxy without tracing loads no SDK.
  const tracing = (await import('../src/tracing/setup.js')).createTracing(settings, logger);
  droppedSpans = () => ({ queueFull: tracing.dropped.queue_full, exportFailed: tracing.dropped.export_failed });
  return tracing;
}

/**
 * A trace collector as cheap as one can be, on loopback: POST /v1/traces read whole (whatever its
 * content type), its bytes counted, answered 200 with an empty body (an empty
 * ExportTraceServiceResponse in protobuf: nothing rejected). Nothing is decoded.
 */
async function startSink(): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    if (req.method !== 'POST' || req.url !== '/v1/traces') {
      req.resume();
      res.writeHead(404, { 'content-length': 0 }).end();
      return;
    }
    let bytes = 0;
    req.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
    });
    req.on('end', () => {
      received.receivedRequests += 1;
      received.receivedBytes += bytes;
      res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-length': 0 }).end();
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

const STARTERS: Readonly<Record<string, (options: Options) => Promise<string>>> = {
  upstream: startUpstream,
  passthrough: startPassthrough,
  facade: startFacade,
  wire: startWire,
  proxy: startProxy,
  sink: startSink,
};

const [kind = '', optionsJson = '{}'] = process.argv.slice(2);
const start = STARTERS[kind];
if (!start || !process.send) throw new Error(`usage (from bench/run.ts): servers.js ${Object.keys(STARTERS).join('|')} OPTIONS_JSON`);
const url = await start(JSON.parse(optionsJson) as Options);
process.on('message', (message) => {
  if (message !== 'usage' && message !== 'usage after gc') return;
  const cpu = process.cpuUsage();
  // Live heap after a full collection: what grows if something leaks (RSS also follows the allocator).
  // Only when asked: a forced collection leaves V8 sizing the heap for memory rather than speed, and
  // this proxy ran at half its rate for tens of seconds after one (bench/run.ts measures memory apart).
  if (message === 'usage after gc') globalThis.gc?.();
  const { heapUsed, rss } = process.memoryUsage();
  process.send?.({
    cpuMs: (cpu.user + cpu.system) / 1000,
    heapMiB: heapUsed / 2 ** 20,
    rssMiB: rss / 2 ** 20,
    maxRssMiB: process.resourceUsage().maxRSS / 1024,
    ...(kind === 'sink' ? received : {}),
    ...(kind === 'upstream' ? answered : {}),
    ...(droppedSpans === null ? {} : { droppedSpans: droppedSpans() }),
  });
});
process.send({ url, ns: NS });
