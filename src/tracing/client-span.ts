import { type Attributes, type Span, SpanKind, SpanStatusCode } from '@opentelemetry/api';
import type { FetchTrace } from '../outbound/fetch.js';
import { SpanFetchTrace } from './calls.js';
import type { Tracing } from './setup.js';

/** A client span under `parent`: a page of a call, or a request to the legacy origin. */
export interface ClientSpan {
  readonly span: Span;
  /** What the request goes under: its `traceparent` is this span's. */
  readonly trace: FetchTrace;
  /** Ends the span as failed with `reason` (`error.type`). */
  failed(reason: string): void;
  end(): void;
}

export function startClientSpan(tracing: Tracing, parent: FetchTrace, name: string, attributes: Attributes): ClientSpan {
  const span = tracing.tracer.startSpan(name, { kind: SpanKind.CLIENT, attributes }, parent.context);
  return {
    span,
    trace: new SpanFetchTrace(tracing, span, parent.context),
    failed(reason) {
      span.setAttribute('error.type', reason);
      span.setStatus({ code: SpanStatusCode.ERROR, message: reason });
      span.end();
    },
    end: () => span.end(),
  };
}
