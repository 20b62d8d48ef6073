import { describe, expect, it } from 'vitest';
import { tracingSettings } from '../src/tracing/settings.js';

/** The OpenTelemetry variables as the specification reads them (docs/operating.md, "Traces"). */
describe('tracing settings from the environment', () => {
  it('are off unless OTEL_TRACES_EXPORTER turns them on', () => {
    expect(tracingSettings({})).toBeNull();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'none' })).toBeNull();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: ' ' })).toBeNull();
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_SDK_DISABLED: 'TRUE' })).toBeNull();
  });

  it('default to OTLP over HTTP protobuf, parent-based always-on, W3C trace context and baggage', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })).toEqual({
      exporter: 'otlp',
      protocol: 'http/protobuf',
      sampler: { kind: 'parentbased_always_on' },
      propagators: ['tracecontext', 'baggage'],
    });
  });

  it('read the protocol, the traces-only one first, in any case', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'OTLP', OTEL_EXPORTER_OTLP_PROTOCOL: 'HTTP/JSON' })?.protocol).toBe('http/json');
    const both = {
      OTEL_TRACES_EXPORTER: 'otlp',
      OTEL_EXPORTER_OTLP_PROTOCOL: 'http/json',
      OTEL_EXPORTER_OTLP_TRACES_PROTOCOL: 'http/protobuf',
    };
    expect(tracingSettings(both)?.protocol).toBe('http/protobuf');
  });

  it('read a ratio sampler and its argument (1 when unset)', () => {
    const env = { OTEL_TRACES_EXPORTER: 'console', OTEL_TRACES_SAMPLER: 'parentbased_traceidratio', OTEL_TRACES_SAMPLER_ARG: '0.25' };
    expect(tracingSettings(env)?.sampler).toEqual({ kind: 'parentbased_traceidratio', ratio: 0.25 });
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio' })?.sampler).toEqual({
      kind: 'traceidratio',
      ratio: 1,
    });
  });

  it('read the propagators: none, or a list', () => {
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'none' })?.propagators).toEqual([]);
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'tracecontext' })?.propagators).toEqual(['tracecontext']);
  });

  it.each([
    [{ OTEL_TRACES_EXPORTER: 'jaeger' }, 'OTEL_TRACES_EXPORTER=jaeger'],
    [{ OTEL_TRACES_EXPORTER: 'otlp,console' }, 'OTEL_TRACES_EXPORTER=otlp,console'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }, 'OTEL_EXPORTER_OTLP_PROTOCOL=grpc'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'sometimes' }, 'OTEL_TRACES_SAMPLER=sometimes'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_TRACES_SAMPLER: 'traceidratio', OTEL_TRACES_SAMPLER_ARG: '2' }, 'OTEL_TRACES_SAMPLER_ARG=2'],
    [{ OTEL_TRACES_EXPORTER: 'otlp', OTEL_PROPAGATORS: 'b3' }, 'OTEL_PROPAGATORS=b3'],
  ])('refuse what the proxy cannot do, naming the variable: %j', (env, named) => {
    expect(() => tracingSettings(env)).toThrow(`${named} is not supported`);
  });
});
