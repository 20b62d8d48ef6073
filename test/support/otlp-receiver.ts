import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync, inflateSync } from 'node:zlib';

/**
 * A loopback OTLP/HTTP trace receiver standing in for an OpenTelemetry collector: it answers
 * `POST /v1/traces` in both encodings an exporter may use, `http/protobuf` (`application/x-protobuf`)
 * and `http/json` (`application/json`), and hands the spans back decoded into plain objects. A real
 * server, so a test sees what the exporter really put on the wire, headers included.
 *
 * The protobuf decoder is the wire format itself (varint, fixed64, length-delimited, fixed32), read
 * for the messages of opentelemetry-proto's `collector/trace/v1`, `trace/v1`, `resource/v1` and
 * `common/v1`, unknown fields skipped: no dependency, and nothing shared with the exporter under test.
 */

/** An OTLP `AnyValue`, decoded: `int_value` as a number when it is a safe integer, else a bigint. */
export type AttributeValue = string | number | boolean | bigint | Uint8Array | null | AttributeValue[] | { [key: string]: AttributeValue };
export type Attributes = Record<string, AttributeValue>;

export interface ReceivedSpan {
  /** 32 lowercase hex digits. */
  traceId: string;
  /** 16 lowercase hex digits. */
  spanId: string;
  /** 16 lowercase hex digits; null for a root span. */
  parentSpanId: string | null;
  /** W3C tracestate as sent; '' when none. */
  traceState: string;
  name: string;
  /** OTLP SpanKind: 0 unspecified, 1 internal, 2 server, 3 client, 4 producer, 5 consumer (the API's enum plus one). */
  kind: number;
  startTimeUnixNano: bigint;
  endTimeUnixNano: bigint;
  attributes: Attributes;
  events: { name: string; timeUnixNano: bigint; attributes: Attributes }[];
  links: { traceId: string; spanId: string; traceState: string; attributes: Attributes }[];
  /** OTLP StatusCode: 0 unset, 1 ok, 2 error. */
  status: { code: number; message: string };
  /** The resource's attributes (`service.name`, ...). */
  resource: Attributes;
  /** The instrumentation scope's name (the tracer's name). */
  scope: string;
  scopeVersion: string;
}

export interface ReceivedRequest {
  readonly method: string;
  /** Path and query, as sent. */
  readonly path: string;
  /** The media type, parameters dropped: `application/x-protobuf`, `application/json`, or whatever came. */
  readonly contentType: string;
  readonly headers: IncomingHttpHeaders;
  /** What the request carried, decoded; also for an export the receiver refused. Empty when undecodable. */
  readonly spans: ReceivedSpan[];
  /** Why the body could not be decoded (answered 400), or the request was not an export (404, 415). */
  readonly error?: string;
}

export interface OtlpReceiverOptions {
  /** The HTTP status every export is answered with; default 200. 503 makes it refuse (the exporter may retry). */
  status?: number;
  /** Milliseconds to wait, body read, before answering; default 0. */
  delayMs?: number;
}

export interface OtlpReceiver {
  /** `http://127.0.0.1:PORT`, no path: exporters want `${url}/v1/traces`. */
  readonly url: string;
  readonly port: number;
  /** Every span of every export answered 2xx, in arrival order; a test may empty it. */
  readonly spans: ReceivedSpan[];
  /** Every request received, refused and malformed ones included, in arrival order. */
  readonly requests: ReceivedRequest[];
  /** The status later exports are answered with; a test may change it (a collector going bad, then back). */
  status: number;
  /** The delay later exports are answered after. */
  delayMs: number;
  /**
   * Resolves with a copy of `spans` as soon as `predicate` holds for it (checked now and on each
   * export); rejects after `timeoutMs` (default 5000), naming the spans received so far.
   */
  waitForSpans(predicate: (spans: ReceivedSpan[]) => boolean, timeoutMs?: number): Promise<ReceivedSpan[]>;
  /** Stops listening and drops every connection, a delayed answer's included; again is harmless. */
  close(): Promise<void>;
}

export const TRACES_PATH = '/v1/traces';

/** Status, content type, body. */
type Answer = [number, string, string | Uint8Array];

/** A receiver on a free loopback port; whoever starts it closes it. */
export async function startOtlpReceiver(options: OtlpReceiverOptions = {}): Promise<OtlpReceiver> {
  const spans: ReceivedSpan[] = [];
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const timers = new Set<NodeJS.Timeout>();
  let status = options.status ?? 200;
  let delayMs = options.delayMs ?? 0;

  /** Answers after `delayMs`, unless the connection went first. */
  const answer = (res: ServerResponse, [code, contentType, body]: Answer): void => {
    const send = (): void => {
      if (res.destroyed) return;
      res.writeHead(code, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
      res.end(body);
    };
    if (delayMs <= 0) {
      send();
      return;
    }
    const timer = setTimeout(() => {
      timers.delete(timer);
      send();
    }, delayMs);
    timers.add(timer);
  };

  /** Records the request, and the spans of an accepted export; says what to answer. */
  const receive = (req: IncomingMessage, raw: Buffer): Answer => {
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const base = { method: req.method ?? '', path: req.url ?? '', contentType, headers: req.headers };
    const path = (req.url ?? '').split('?')[0];
    if (req.method !== 'POST' || path !== TRACES_PATH) {
      requests.push({ ...base, spans: [], error: `not an export: ${req.method} ${req.url}` });
      return [404, 'text/plain', 'not found'];
    }
    const json = contentType === 'application/json';
    if (!json && contentType !== 'application/x-protobuf') {
      requests.push({ ...base, spans: [], error: `unsupported content type: ${contentType}` });
      return [415, 'text/plain', 'unsupported media type'];
    }
    let decoded: ReceivedSpan[];
    try {
      const body = decompress(raw, req.headers['content-encoding']);
      decoded = json ? decodeJsonRequest(body) : decodeProtobufRequest(body);
    } catch (error) {
      requests.push({ ...base, spans: [], error: `undecodable body: ${(error as Error).message}` });
      return [400, 'text/plain', 'bad request'];
    }
    requests.push({ ...base, spans: decoded });
    if (status < 200 || status >= 300) return [status, 'text/plain', 'refused'];
    spans.push(...decoded);
    for (const wake of [...waiters]) wake();
    // An empty ExportTraceServiceResponse: no partial success to report.
    return [status, contentType, json ? '{}' : new Uint8Array(0)];
  };

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => answer(res, receive(req, Buffer.concat(chunks))));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  let closed: Promise<void> | undefined;

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    spans,
    requests,
    get status() {
      return status;
    },
    set status(value: number) {
      status = value;
    },
    get delayMs() {
      return delayMs;
    },
    set delayMs(value: number) {
      delayMs = value;
    },
    waitForSpans: (predicate, timeoutMs = 5000) =>
      new Promise<ReceivedSpan[]>((resolve, reject) => {
        const check = (): boolean => {
          if (!predicate(spans)) return false;
          waiters.delete(check);
          clearTimeout(timer);
          resolve([...spans]);
          return true;
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          const names = spans.map((span) => `${span.name} (kind ${span.kind})`).join(', ') || 'none';
          reject(new Error(`no matching spans within ${timeoutMs} ms; received: ${names}`));
        }, timeoutMs);
        if (!check()) waiters.add(check);
      }),
    close: () =>
      (closed ??= new Promise<void>((resolve) => {
        for (const timer of timers) clearTimeout(timer);
        timers.clear();
        server.close(() => resolve());
        server.closeAllConnections();
      })),
  };
}

function decompress(body: Buffer, encoding: string | undefined): Buffer {
  const name = (encoding ?? '').trim().toLowerCase();
  if (name === '' || name === 'identity') return body;
  if (name === 'gzip') return gunzipSync(body);
  if (name === 'deflate') return inflateSync(body);
  throw new Error(`unsupported content encoding: ${name}`);
}

// ---------------------------------------------------------------------------------------------------
// Protobuf: the wire format, then the OTLP trace messages.

/** One field of a message. `int` holds a varint, fixed64 or fixed32 value; `bytes` a length-delimited one. */
interface Field {
  readonly no: number;
  readonly wire: number;
  readonly int: bigint;
  readonly bytes: Buffer;
}

const VARINT = 0;
const FIXED64 = 1;
const LENGTH_DELIMITED = 2;
const FIXED32 = 5;
const EMPTY = Buffer.alloc(0);

/** The fields of one message, in order; repeated fields appear once per element. */
function fields(buf: Buffer): Field[] {
  const out: Field[] = [];
  let pos = 0;
  const varint = (): bigint => {
    let value = 0n;
    for (let shift = 0n; shift < 70n; shift += 7n) {
      if (pos >= buf.length) throw new Error('truncated varint');
      const byte = buf[pos++]!;
      value |= BigInt(byte & 0x7f) << shift;
      if (byte < 0x80) return BigInt.asUintN(64, value);
    }
    throw new Error('varint longer than 10 bytes');
  };
  const take = (length: number): Buffer => {
    if (length < 0 || pos + length > buf.length) throw new Error('truncated field');
    const slice = buf.subarray(pos, pos + length);
    pos += length;
    return slice;
  };
  while (pos < buf.length) {
    const key = varint();
    const no = Number(key >> 3n);
    const wire = Number(key & 7n);
    if (no === 0) throw new Error('field number 0');
    switch (wire) {
      case VARINT:
        out.push({ no, wire, int: varint(), bytes: EMPTY });
        break;
      case FIXED64:
        out.push({ no, wire, int: take(8).readBigUInt64LE(0), bytes: EMPTY });
        break;
      case LENGTH_DELIMITED: {
        const length = varint();
        if (length > BigInt(buf.length)) throw new Error('truncated field');
        out.push({ no, wire, int: 0n, bytes: take(Number(length)) });
        break;
      }
      case FIXED32:
        out.push({ no, wire, int: BigInt(take(4).readUInt32LE(0)), bytes: EMPTY });
        break;
      default:
        throw new Error(`unsupported wire type ${wire} (field ${no})`);
    }
  }
  return out;
}

/** The fields numbered `no` with wire type `wire`; the others (unknown, or of another wire type) skipped. */
function each(list: Field[], no: number, wire: number): Field[] {
  return list.filter((field) => field.no === no && field.wire === wire);
}

/** The last occurrence wins, as protobuf's merge rule says for a singular field. */
function last(list: Field[], no: number, wire: number): Field | undefined {
  return each(list, no, wire).at(-1);
}

const text = (field: Field | undefined): string => field?.bytes.toString('utf8') ?? '';
const hex = (field: Field | undefined): string => field?.bytes.toString('hex') ?? '';
const integer = (value: bigint): number | bigint => {
  const n = Number(value);
  return Number.isSafeInteger(n) ? n : value;
};

/** opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest */
export function decodeProtobufRequest(buf: Buffer): ReceivedSpan[] {
  const out: ReceivedSpan[] = [];
  for (const resourceSpans of each(fields(buf), 1, LENGTH_DELIMITED)) {
    const rs = fields(resourceSpans.bytes);
    const resourceField = last(rs, 1, LENGTH_DELIMITED);
    const resource = resourceField ? protoAttributes(fields(resourceField.bytes), 1) : {};
    for (const scopeSpans of each(rs, 2, LENGTH_DELIMITED)) {
      const ss = fields(scopeSpans.bytes);
      const scopeField = last(ss, 1, LENGTH_DELIMITED);
      const scope = scopeField ? fields(scopeField.bytes) : [];
      const names = { scope: text(last(scope, 1, LENGTH_DELIMITED)), scopeVersion: text(last(scope, 2, LENGTH_DELIMITED)) };
      for (const span of each(ss, 2, LENGTH_DELIMITED)) out.push(protoSpan(fields(span.bytes), resource, names));
    }
  }
  return out;
}

function protoSpan(s: Field[], resource: Attributes, names: { scope: string; scopeVersion: string }): ReceivedSpan {
  const statusField = last(s, 15, LENGTH_DELIMITED);
  const status = statusField ? fields(statusField.bytes) : [];
  const parentSpanId = hex(last(s, 4, LENGTH_DELIMITED));
  return {
    traceId: hex(last(s, 1, LENGTH_DELIMITED)),
    spanId: hex(last(s, 2, LENGTH_DELIMITED)),
    parentSpanId: parentSpanId === '' ? null : parentSpanId,
    traceState: text(last(s, 3, LENGTH_DELIMITED)),
    name: text(last(s, 5, LENGTH_DELIMITED)),
    kind: Number(last(s, 6, VARINT)?.int ?? 0n),
    startTimeUnixNano: last(s, 7, FIXED64)?.int ?? 0n,
    endTimeUnixNano: last(s, 8, FIXED64)?.int ?? 0n,
    attributes: protoAttributes(s, 9),
    events: each(s, 11, LENGTH_DELIMITED).map((event) => {
      const e = fields(event.bytes);
      return { name: text(last(e, 2, LENGTH_DELIMITED)), timeUnixNano: last(e, 1, FIXED64)?.int ?? 0n, attributes: protoAttributes(e, 3) };
    }),
    links: each(s, 13, LENGTH_DELIMITED).map((link) => {
      const l = fields(link.bytes);
      return {
        traceId: hex(last(l, 1, LENGTH_DELIMITED)),
        spanId: hex(last(l, 2, LENGTH_DELIMITED)),
        traceState: text(last(l, 3, LENGTH_DELIMITED)),
        attributes: protoAttributes(l, 4),
      };
    }),
    status: { code: Number(last(status, 3, VARINT)?.int ?? 0n), message: text(last(status, 2, LENGTH_DELIMITED)) },
    resource,
    ...names,
  };
}

/** The repeated KeyValue field `no` of a message, as one object. */
function protoAttributes(message: Field[], no: number): Attributes {
  const out: Attributes = {};
  for (const kv of each(message, no, LENGTH_DELIMITED)) {
    const f = fields(kv.bytes);
    const value = last(f, 2, LENGTH_DELIMITED);
    out[text(last(f, 1, LENGTH_DELIMITED))] = value ? protoAnyValue(value.bytes) : null;
  }
  return out;
}

/** common.v1.AnyValue: a oneof, so the last value field present is the value; none is an empty value (null). */
function protoAnyValue(buf: Buffer): AttributeValue {
  const value = fields(buf)
    .filter((f) => f.no >= 1 && f.no <= 7)
    .at(-1);
  if (!value) return null;
  switch (`${value.no}:${value.wire}`) {
    case `1:${LENGTH_DELIMITED}`:
      return value.bytes.toString('utf8');
    case `2:${VARINT}`:
      return value.int !== 0n;
    case `3:${VARINT}`:
      return integer(BigInt.asIntN(64, value.int));
    case `4:${FIXED64}`: {
      const b = Buffer.alloc(8);
      b.writeBigUInt64LE(value.int);
      return b.readDoubleLE(0);
    }
    case `5:${LENGTH_DELIMITED}`:
      return each(fields(value.bytes), 1, LENGTH_DELIMITED).map((v) => protoAnyValue(v.bytes));
    case `6:${LENGTH_DELIMITED}`:
      return protoAttributes(fields(value.bytes), 1);
    case `7:${LENGTH_DELIMITED}`:
      return new Uint8Array(value.bytes);
    default:
      throw new Error(`AnyValue field ${value.no} with wire type ${value.wire}`);
  }
}

// ---------------------------------------------------------------------------------------------------
// OTLP/JSON: the protobuf JSON mapping with OTLP's exceptions (ids as hex, enums as integers). Read
// leniently, as a receiver should: lowerCamelCase or original field names, int64 as string or number,
// enums as integer or name, ids as hex or (the plain protobuf JSON mapping) base64.

type Json = Record<string, unknown>;

function object(value: unknown): Json {
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as Json) : {};
}

function array(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

/** A field by its lowerCamelCase JSON name, or by its proto (snake_case) name. */
function get(o: Json, name: string): unknown {
  return o[name] ?? o[name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)];
}

function jsonString(value: unknown): string {
  return typeof value === 'string' ? value : '';
}

function jsonBigInt(value: unknown): bigint {
  if (typeof value === 'bigint') return value;
  if (typeof value === 'number' && Number.isInteger(value)) return BigInt(value);
  if (typeof value === 'string' && /^-?\d+$/.test(value.trim())) return BigInt(value.trim());
  if (value === undefined || value === null) return 0n;
  throw new Error(`not an integer: ${JSON.stringify(value)}`);
}

function jsonId(value: unknown, bytes: number): string {
  const s = jsonString(value);
  if (s === '') return '';
  if (s.length === bytes * 2 && /^[0-9a-fA-F]+$/.test(s)) return s.toLowerCase();
  const decoded = Buffer.from(s, 'base64');
  if (decoded.length !== bytes) throw new Error(`not a ${bytes}-byte id: ${s}`);
  return decoded.toString('hex');
}

const SPAN_KINDS = ['UNSPECIFIED', 'INTERNAL', 'SERVER', 'CLIENT', 'PRODUCER', 'CONSUMER'].map((k) => `SPAN_KIND_${k}`);
const STATUS_CODES = ['UNSET', 'OK', 'ERROR'].map((k) => `STATUS_CODE_${k}`);

function jsonEnum(value: unknown, names: string[]): number {
  if (typeof value === 'string' && names.includes(value)) return names.indexOf(value);
  return Number(jsonBigInt(value));
}

/** ExportTraceServiceRequest in OTLP/JSON. */
export function decodeJsonRequest(buf: Buffer): ReceivedSpan[] {
  const request = object(JSON.parse(buf.toString('utf8')));
  const out: ReceivedSpan[] = [];
  for (const rs of array(get(request, 'resourceSpans')).map(object)) {
    const resource = jsonAttributes(get(object(get(rs, 'resource')), 'attributes'));
    for (const ss of array(get(rs, 'scopeSpans')).map(object)) {
      const scope = object(get(ss, 'scope'));
      const names = { scope: jsonString(get(scope, 'name')), scopeVersion: jsonString(get(scope, 'version')) };
      for (const s of array(get(ss, 'spans')).map(object)) {
        const status = object(get(s, 'status'));
        const parentSpanId = jsonId(get(s, 'parentSpanId'), 8);
        out.push({
          traceId: jsonId(get(s, 'traceId'), 16),
          spanId: jsonId(get(s, 'spanId'), 8),
          parentSpanId: parentSpanId === '' ? null : parentSpanId,
          traceState: jsonString(get(s, 'traceState')),
          name: jsonString(get(s, 'name')),
          kind: jsonEnum(get(s, 'kind'), SPAN_KINDS),
          startTimeUnixNano: jsonBigInt(get(s, 'startTimeUnixNano')),
          endTimeUnixNano: jsonBigInt(get(s, 'endTimeUnixNano')),
          attributes: jsonAttributes(get(s, 'attributes')),
          events: array(get(s, 'events'))
            .map(object)
            .map((e) => ({
              name: jsonString(get(e, 'name')),
              timeUnixNano: jsonBigInt(get(e, 'timeUnixNano')),
              attributes: jsonAttributes(get(e, 'attributes')),
            })),
          links: array(get(s, 'links'))
            .map(object)
            .map((l) => ({
              traceId: jsonId(get(l, 'traceId'), 16),
              spanId: jsonId(get(l, 'spanId'), 8),
              traceState: jsonString(get(l, 'traceState')),
              attributes: jsonAttributes(get(l, 'attributes')),
            })),
          status: { code: jsonEnum(get(status, 'code'), STATUS_CODES), message: jsonString(get(status, 'message')) },
          resource,
          ...names,
        });
      }
    }
  }
  return out;
}

function jsonAttributes(list: unknown): Attributes {
  const out: Attributes = {};
  for (const kv of array(list).map(object)) out[jsonString(get(kv, 'key'))] = jsonAnyValue(get(kv, 'value'));
  return out;
}

function jsonAnyValue(value: unknown): AttributeValue {
  const v = object(value);
  if (get(v, 'stringValue') !== undefined) return jsonString(get(v, 'stringValue'));
  if (get(v, 'boolValue') !== undefined) return get(v, 'boolValue') === true;
  if (get(v, 'intValue') !== undefined) return integer(jsonBigInt(get(v, 'intValue')));
  if (get(v, 'doubleValue') !== undefined) return Number(get(v, 'doubleValue'));
  if (get(v, 'arrayValue') !== undefined) return array(get(object(get(v, 'arrayValue')), 'values')).map(jsonAnyValue);
  if (get(v, 'kvlistValue') !== undefined) return jsonAttributes(get(object(get(v, 'kvlistValue')), 'values'));
  if (get(v, 'bytesValue') !== undefined) return new Uint8Array(Buffer.from(jsonString(get(v, 'bytesValue')), 'base64'));
  return null;
}
