import { mkdtempSync, rmSync } from 'node:fs';
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { type AddressInfo, connect, createServer as createNetServer, type Server as NetServer, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { requireClient, skipClientSuite } from './support/clients.js';
import { FLEET_MISSING, type FleetBalancerChoice, NGINX_MISSING, type StartedBalancer, startBalancer, waitUntil } from './support/fleet.js';

/**
 * The load balancers as shipped (deploy/haproxy.cfg, deploy/nginx.conf; ports, servers and HAProxy's
 * check timings changed: test/support/fleet.ts) in front of two servers of the test's own: one that
 * hangs up on every call it is sent, unanswered, as an instance SIGKILLed with the call in hand does
 * (a FIN once it has read the call, a RST when the call was still unread), and one that answers.
 *
 * Issue 30, item 1: a SOAP call is a POST, and many clients send its body after its headers (.NET's
 * with `Expect: 100-continue`, by default). HAProxy without `option http-buffer-request` passed such a
 * call on before its body came, and could not send it again when its instance died: a 502, or on a
 * kept-alive connection the connection closed with no reply.
 *
 * And what the balancers write of a call: the path, never the caller's key of an HTTP GET call's query.
 */

const KEY = 'balancer-test-key-5f2c';
const CALLS = 24;

/** How the hanging server hangs up once a call's headers are in. */
type Hangup = 'fin' | 'rst';

interface Servers {
  readonly hanging: NetServer;
  readonly answering: HttpServer;
  /** Calls the hanging server hung up on. */
  hangups: number;
}

const READY = 'HTTP/1.1 200 OK\r\ncontent-length: 0\r\nconnection: close\r\n\r\n';

async function listening<T extends NetServer | HttpServer>(server: T): Promise<T> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return server;
}

async function startServers(hangup: Hangup): Promise<Servers> {
  const servers: Servers = {
    hanging: createNetServer(),
    answering: createHttpServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      // The body it was sent, back: a call passed on again arrives whole.
      request.on('end', () => response.end(`answered ${request.method} ${Buffer.concat(chunks).toString()}`));
    }),
    hangups: 0,
  };
  servers.hanging.on('connection', (socket: Socket) => {
    socket.on('error', () => {});
    let head = '';
    socket.on('data', (chunk: Buffer) => {
      head += chunk.toString('latin1');
      if (!head.includes('\r\n\r\n')) return;
      // Health checks and nginx's first call find it ready: only the calls are hung up on.
      if (/^GET \/readyz /.test(head)) {
        socket.end(READY);
        return;
      }
      servers.hangups++;
      if (hangup === 'rst') socket.resetAndDestroy();
      else socket.end();
    });
  });
  await Promise.all([listening(servers.hanging), listening(servers.answering)]);
  return servers;
}

const portOf = (server: NetServer | HttpServer): number => (server.address() as AddressInfo).port;
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * A caller on one kept-alive connection that POSTs as .NET's HttpWebRequest does by default (the SOAP
 * proxies of wsdl.exe): `Expect: 100-continue`, and the body once `100 Continue` comes, or after
 * 350 ms without it. Each call's answer as `STATUS BODY`, or `no reply` when the connection closed
 * without one (undici says UND_ERR_SOCKET); a new connection for the call after that.
 */
class ExpectingCaller {
  #socket: Socket | null = null;
  #received = '';
  #closed = false;

  constructor(private readonly port: number) {}

  async post(body: string): Promise<string> {
    const socket = await this.#connection();
    this.#received = '';
    socket.write(
      `POST /index.asmx HTTP/1.1\r\nHost: catalog\r\nContent-Type: text/xml; charset=utf-8\r\n` +
        `Content-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`,
    );
    await this.#until(() => this.#received.startsWith('HTTP/1.1 100 '), 350);
    this.#received = this.#received.replace(/^HTTP\/1\.1 100 [^\r]*\r\n\r\n/, '');
    if (!this.#closed) socket.write(body);
    await this.#until(() => this.#answer() !== null, 5000);
    const answer = this.#answer();
    if (answer === null) {
      this.close();
      return 'no reply';
    }
    return `${answer.status} ${answer.body}`;
  }

  close(): void {
    this.#socket?.destroy();
    this.#socket = null;
  }

  async #connection(): Promise<Socket> {
    if (this.#socket !== null && !this.#closed) return this.#socket;
    const socket = connect(this.port, '127.0.0.1');
    await new Promise((resolve, reject) => socket.once('connect', resolve).once('error', reject));
    this.#closed = false;
    socket.on('data', (chunk: Buffer) => {
      this.#received += chunk.toString('latin1');
    });
    socket.on('error', () => {});
    socket.on('close', () => {
      this.#closed = true;
    });
    this.#socket = socket;
    return socket;
  }

  /** The answer once whole (status line, headers, Content-Length bytes of body); null before. */
  #answer(): { status: string; body: string } | null {
    const end = this.#received.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const head = this.#received.slice(0, end);
    const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? 0);
    const body = this.#received.slice(end + 4);
    if (body.length < length) return null;
    return { status: head.split(' ')[1] ?? '', body: body.slice(0, length) };
  }

  async #until(done: () => boolean, timeoutMs: number): Promise<void> {
    const deadline = performance.now() + timeoutMs;
    while (!done() && !this.#closed && performance.now() < deadline) await sleep(5);
  }
}

const BALANCERS: readonly { readonly choice: FleetBalancerChoice; readonly missing: string | null }[] = [
  { choice: 'deploy/haproxy.cfg', missing: FLEET_MISSING },
  { choice: 'deploy/nginx.conf', missing: NGINX_MISSING },
];

/** The balancer as shipped in front of the hanging server and the answering one (twice: the shipped files name three). */
async function standUp(
  choice: FleetBalancerChoice,
  hangup: Hangup,
): Promise<{ servers: Servers; balancer: StartedBalancer; stop(): Promise<void> }> {
  const servers = await startServers(hangup);
  const dir = mkdtempSync(join(tmpdir(), 'catalog-balancer-'));
  const backends = [
    { name: 'proxy0', port: portOf(servers.hanging) },
    { name: 'proxy1', port: portOf(servers.answering) },
    { name: 'proxy2', port: portOf(servers.answering) },
  ];
  const stop = async (): Promise<void> => {
    await balancer?.kill();
    servers.hanging.close();
    servers.answering.close();
    rmSync(dir, { recursive: true, force: true });
  };
  let balancer: StartedBalancer | undefined;
  try {
    balancer = await startBalancer(choice, dir, backends);
    for (const { name } of backends) await balancer.waitFor(name, 'UP');
    return { servers, balancer, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}

for (const { choice, missing } of BALANCERS) {
  // Each test with a balancer of its own: nginx leaves a server that failed alone for its fail_timeout (10 s).
  describe.skipIf(skipClientSuite(missing === null))(`${choice} as shipped, an instance hanging up on calls`, () => {
    beforeAll(() => requireClient(missing === null, missing ?? ''));

    for (const hangup of ['fin', 'rst'] as const) {
      it(`sends a POST with Expect: 100-continue to another instance when one hangs up (${hangup}): all answered, whole`, async () => {
        const { servers, balancer, stop } = await standUp(choice, hangup);
        const caller = new ExpectingCaller(Number(new URL(balancer.url).port));
        const answers: string[] = [];
        try {
          // One connection, kept alive: each call after the first is on a reused one, where a lost call shows as a closed connection.
          for (let call = 0; call < CALLS; call++) answers.push(await caller.post(`<call>${call}</call>`));
        } finally {
          caller.close();
          await stop();
        }
        expect(answers).toEqual(Array.from({ length: CALLS }, (_, call) => `200 answered POST <call>${call}</call>`));
        // The instance hung up on some of them: each was sent to it, and then to another.
        expect(servers.hangups).toBeGreaterThan(0);
      }, 30_000);
    }

    it("logs an HTTP GET call's path, never the key in its query, also when it was passed on", async () => {
      const { servers, balancer, stop } = await standUp(choice, 'fin');
      try {
        // Three calls: one of them is sent to the instance that hangs up first.
        for (let call = 0; call < 3; call++) {
          const response = await fetch(`${balancer.url}/index.asmx/Search?query=love&apiKey=${KEY}`, { signal: AbortSignal.timeout(5000) });
          expect(`${response.status} ${await response.text()}`).toBe('200 answered GET ');
        }
        expect(servers.hangups).toBeGreaterThan(0);
        // A line is written as its call ends; HAProxy's come through a pipe.
        const logged = (): string[] => balancer.lines.filter((line) => line.includes('/index.asmx/Search'));
        await waitUntil("the balancer's lines of the three calls", () => logged().length >= 3, 2500);
        expect(logged()).toHaveLength(3);
        for (const line of logged()) expect(line).toContain('"GET /index.asmx/Search HTTP/1.1"');
        expect(balancer.lines.join('\n').toLowerCase()).not.toContain(KEY);
      } finally {
        await stop();
      }
    });
  });
}
