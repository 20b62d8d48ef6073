import { request, type Agent, type IncomingHttpHeaders } from 'node:http';

/**
 * One request written raw through node:http, for the tests that check the wire: fetch would
 * normalise the path, refuse some headers (Host, Expect) and add its own.
 */

export interface RawRequest {
  /** GET unless given. */
  readonly method?: string;
  /** Sent as written: `..` segments and malformed escapes reach the server. */
  readonly path: string;
  /**
   * Exactly these, in this order; node:http adds Host (unless given) and Connection, and
   * Content-Length comes last when there is a body that these headers do not frame
   * (Content-Length, Transfer-Encoding). With `Expect: 100-continue` the body waits for the
   * interim response, as .NET's client does.
   */
  readonly headers?: Readonly<Record<string, string>>;
  /** A string is sent as UTF-8. */
  readonly body?: string | Buffer;
  /** Unless given, a connection of its own: an answer that closes its connection (413) touches nothing else. */
  readonly agent?: Agent;
  /** Aborting it hangs up, as a caller that goes away. */
  readonly signal?: AbortSignal;
}

export interface RawResponse {
  readonly status: number;
  readonly headers: IncomingHttpHeaders;
  readonly bytes: Buffer;
  /** The body read as UTF-8, the only encoding answers use. */
  readonly text: string;
  /** Whether `100 Continue` came before the answer. */
  readonly continued: boolean;
}

/** Sends `req` to the server at `base` (`http://host:port`) and reads the whole answer. */
export function rawRequest(base: string, { method = 'GET', path, headers = {}, body, agent, signal }: RawRequest): Promise<RawResponse> {
  const { hostname, port } = new URL(base);
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body;
  const framed = bytes === undefined || Object.keys(headers).some((name) => /^(content-length|transfer-encoding)$/i.test(name));
  const expectContinue = Object.entries(headers).some(([name, value]) => name.toLowerCase() === 'expect' && value === '100-continue');
  return new Promise((resolve, reject) => {
    let continued = false;
    const req = request({
      hostname,
      port,
      method,
      path,
      headers: framed ? headers : { ...headers, 'Content-Length': String(bytes.length) },
      agent: agent ?? false,
      signal,
    });
    req.on('error', reject);
    req.on('response', (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('error', reject);
      res.on('end', () => {
        const all = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, bytes: all, text: all.toString('utf8'), continued });
      });
    });
    if (expectContinue) {
      req.on('continue', () => {
        continued = true;
        req.end(bytes);
      });
      req.flushHeaders();
    } else {
      req.end(bytes);
    }
  });
}
