import type { OperationSpec, LegacyCall } from '../operations.js';
import type { Page } from '../xml/compact.js';
import type { Reply } from './reply.js';

/**
 * A binding: one of the ways a legacy call arrives (SOAP, HTTP GET, HTTP POST) and is answered. The
 * dispatcher asks each registered binding whether it takes a request (src/inbound/bindings.ts); the
 * call path (src/call/serve.ts) reads the call with it, has it translated and fetched, and
 * writes the reply or the error with the same binding. `W` is what the binding learns while reading that it needs to
 * write (for SOAP, the version).
 */

/** As the deprecation hit and the metrics name a binding; a binding's `read` says which. */
export const BINDING_NAMES = ['soap11', 'soap12', 'httpGet', 'httpPost'] as const;
export type BindingName = (typeof BINDING_NAMES)[number];

/**
 * ASMX's handler factory asks every protocol in turn (docs/wire.md §1): it takes the request, would
 * take it with another method (a 405 candidate), or does not. When none takes it, the last one asked
 * decides between 405 and 500: that is always the Documentation protocol, so a binding only says
 * whether it takes the request.
 */
export type Acceptance = 'accept' | 'wrongMethod' | 'no';

/** The parts of an HTTP request under the service path that ASMX reads. */
export interface ServiceRequest {
  readonly method: string;
  /** The whole path, `.` and `..` resolved (`/index.asmx/Search`): what a passthrough forwards. */
  readonly path: string;
  /** The path after the service path, as sent (`/Search`, or `''`). */
  readonly pathInfo: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  /** The Content-Type header as sent. */
  readonly contentType: string | undefined;
  readonly soapAction: string | undefined;
  readonly body: Buffer;
}

export type Read<W> =
  | { readonly ok: true; readonly binding: BindingName; readonly call: LegacyCall; readonly wire: W }
  /** As far as reading got: the operation, once routed, so that the hit names it. */
  | {
      readonly ok: false;
      readonly binding: BindingName;
      readonly operation: OperationSpec | null;
      readonly error: Error;
      readonly wire: W;
    };

export interface Binding<W = unknown> {
  accepts(method: string, pathInfo: string): boolean;
  read(request: ServiceRequest): Read<W>;
  /** The reply holds no view of `result`'s bytes: they go back to the pool once it returns (src/xml/pool.ts). */
  write(result: Page, call: LegacyCall, wire: W): Reply;
  /** Any error: a read failure, a translation or upstream failure, or a defect (never its own text). */
  writeError(error: unknown, wire: W): Reply;
}
