import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A loopback HTTP server standing in for the `.cp` upstream, or for any server the product must
 * never call, recording what it is asked. A real server, since the outbound client is undici, which
 * does not go through node:http: nock cannot stand in for it.
 */

/** Answers one request; `index` is its position in `requests`. */
export type StubHandler = (req: IncomingMessage, res: ServerResponse, index: number) => void;

export interface SeenRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
}

export interface StubUpstream {
  /** `http://127.0.0.1:PORT` */
  readonly origin: string;
  readonly port: number;
  /** Every request received, in arrival order; a test may empty it. */
  readonly requests: SeenRequest[];
  /** Requests whose connection closed before their answer was finished. */
  abandoned(): number;
  /** TCP connections accepted so far. */
  connections(): number;
  /** Stops listening and closes every connection, kept-alive ones included; again is harmless. */
  close(): Promise<void>;
}

/** A stub on a free loopback port; whoever starts it closes it. */
export async function startStubUpstream(handler: StubHandler): Promise<StubUpstream> {
  const requests: SeenRequest[] = [];
  let abandoned = 0;
  let connections = 0;
  const server = createServer((req, res) => {
    const index = requests.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers }) - 1;
    res.on('close', () => {
      if (!res.writableFinished) abandoned++;
    });
    handler(req, res, index);
  });
  server.on('connection', () => {
    connections++;
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;
  return {
    origin: `http://127.0.0.1:${port}`,
    port,
    requests,
    abandoned: () => abandoned,
    connections: () => connections,
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}
