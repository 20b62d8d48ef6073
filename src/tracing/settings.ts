/**
 * What the OpenTelemetry environment variables ask of tracing, read the way the specification reads
 * them (https://opentelemetry.io/docs/specs/otel/configuration/sdk-environment-variables/). Only the
 * variables that choose what is built are read here; the OTLP exporters read their own endpoint,
 * headers, timeout and compression, and the resource its service name and attributes.
 */

export type TracesExporter = 'otlp' | 'console';
export type OtlpProtocol = 'http/protobuf' | 'http/json';
export type Propagator = 'tracecontext' | 'baggage';

export interface TracingSettings {
  readonly exporter: TracesExporter;
  readonly protocol: OtlpProtocol;
  readonly sampler: SamplerSettings;
  readonly propagators: readonly Propagator[];
}

export type SamplerSettings =
  | { readonly kind: 'always_on' | 'always_off' | 'parentbased_always_on' | 'parentbased_always_off' }
  | { readonly kind: 'traceidratio' | 'parentbased_traceidratio'; readonly ratio: number };

/** A variable set to something the proxy cannot do: said at start, with what it can. */
export class TracingSettingsError extends Error {
  override readonly name = 'TracingSettingsError';
  constructor(
    readonly variable: string,
    readonly value: string,
    expected: string,
  ) {
    super(`${variable}=${value} is not supported: ${expected}.`);
  }
}

const SAMPLERS = ['always_on', 'always_off', 'traceidratio', 'parentbased_always_on', 'parentbased_always_off', 'parentbased_traceidratio'];
const PROTOCOLS: readonly OtlpProtocol[] = ['http/protobuf', 'http/json'];
const PROPAGATORS: readonly Propagator[] = ['tracecontext', 'baggage'];

type Env = Readonly<Record<string, string | undefined>>;

/** The settings `env` asks for; null when tracing is off (`OTEL_TRACES_EXPORTER` unset, `none`, or `OTEL_SDK_DISABLED`). */
export function tracingSettings(env: Env): TracingSettings | null {
  const exporters = list(env.OTEL_TRACES_EXPORTER);
  if (exporters.length === 0 || exporters.includes('none') || value(env.OTEL_SDK_DISABLED) === 'true') return null;
  if (exporters.length > 1 || (exporters[0] !== 'otlp' && exporters[0] !== 'console')) {
    throw new TracingSettingsError('OTEL_TRACES_EXPORTER', env.OTEL_TRACES_EXPORTER ?? '', 'one of otlp, console, none');
  }
  return {
    exporter: exporters[0],
    protocol: protocolOf(env),
    sampler: samplerOf(env),
    propagators: propagatorsOf(env),
  };
}

function protocolOf(env: Env): OtlpProtocol {
  const variable =
    env.OTEL_EXPORTER_OTLP_TRACES_PROTOCOL === undefined ? 'OTEL_EXPORTER_OTLP_PROTOCOL' : 'OTEL_EXPORTER_OTLP_TRACES_PROTOCOL';
  const protocol = value(env[variable]) || 'http/protobuf';
  if (PROTOCOLS.includes(protocol as OtlpProtocol)) return protocol as OtlpProtocol;
  throw new TracingSettingsError(variable, protocol, 'http/protobuf or http/json (gRPC is not built in)');
}

function samplerOf(env: Env): SamplerSettings {
  const kind = value(env.OTEL_TRACES_SAMPLER) || 'parentbased_always_on';
  if (!SAMPLERS.includes(kind)) throw new TracingSettingsError('OTEL_TRACES_SAMPLER', kind, `one of ${SAMPLERS.join(', ')}`);
  if (kind !== 'traceidratio' && kind !== 'parentbased_traceidratio') return { kind } as SamplerSettings;
  const arg = value(env.OTEL_TRACES_SAMPLER_ARG);
  const ratio = arg === '' ? 1 : Number(arg);
  if (!Number.isFinite(ratio) || ratio < 0 || ratio > 1) {
    throw new TracingSettingsError('OTEL_TRACES_SAMPLER_ARG', arg, 'a ratio from 0 to 1');
  }
  return { kind, ratio };
}

function propagatorsOf(env: Env): Propagator[] {
  const names = list(env.OTEL_PROPAGATORS);
  if (names.length === 0) return ['tracecontext', 'baggage'];
  if (names.includes('none')) return [];
  for (const name of names) {
    if (!PROPAGATORS.includes(name as Propagator)) {
      throw new TracingSettingsError('OTEL_PROPAGATORS', env.OTEL_PROPAGATORS ?? '', 'tracecontext, baggage or none');
    }
  }
  return [...new Set(names)] as Propagator[];
}

function value(text: string | undefined): string {
  return (text ?? '').trim().toLowerCase();
}

function list(text: string | undefined): string[] {
  return value(text)
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
}
