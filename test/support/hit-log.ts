/**
 * Hit log lines as the proxy writes them (src/deprecation/hits.ts, through the pino of src/main.ts),
 * for the report's tests and its benchmark: schema 2 by default, schema 1 with `schema: 1`.
 */

export interface HitFields {
  readonly time: string;
  readonly operation: string;
  readonly binding: string;
  readonly client: string;
  readonly outcome: string;
  readonly schema?: 1 | 2;
  /**
   * Schema 2: a configured client's fingerprint (`anonymous` when it sent no apiKey), team and contact;
   * without a fingerprint, the line is a caller's the table does not name.
   */
  readonly fingerprint?: string;
  readonly team?: string;
  readonly contact?: string;
  readonly successor?: string | null;
  /** The stack that made the call (schema 2 lines of versions that tell it). */
  readonly clientStack?: string;
  readonly clientStackVersion?: string | null;
}

const REPLACEMENTS: Readonly<Record<string, string>> = {
  Search: '/product.search.cp',
  AdvancedSearch: '/product.search.cp',
  ProductLookup: '/product.searchForProduct.cp',
  StoreLookup: '/product.searchForProductsOfStore.cp',
  StoreLookupPaged: '/product.searchForProductsOfStore.cp',
};

export function hitLine(fields: HitFields): string {
  const schema = fields.schema ?? 2;
  const common = {
    level: 'info',
    time: fields.time,
    event: 'deprecated_call',
    schema,
    requestId: '6f1d3c2e-8a4b-4c1d-9e2f-0a1b2c3d4e5f',
    operation: fields.operation,
    binding: fields.binding,
    client: fields.client,
  };
  const identity =
    schema === 1
      ? {}
      : {
          clientLabel: fields.fingerprint === undefined ? 'other' : fields.client,
          clientFingerprint: fields.fingerprint ?? fields.client,
          team: fields.team ?? null,
          contact: fields.contact ?? null,
        };
  const rest = {
    legacyVersion: '1.0',
    replacement: REPLACEMENTS[fields.operation] ?? '',
    ...(schema === 1 ? {} : { successor: fields.successor === undefined ? null : fields.successor }),
    outcome: fields.outcome,
    reason: fields.outcome === 'ok' ? null : 'upstream',
    status: fields.outcome === 'ok' ? 200 : 500,
    durationMs: 12.3,
    upstreamRequests: 1,
    remoteAddress: '10.1.2.3',
    userAgent: 'Mozilla/4.0 (compatible; MSIE 6.0; MS Web Services Client Protocol 2.0.50727.9179)',
    ...(fields.clientStack === undefined ? {} : { clientStack: fields.clientStack, clientStackVersion: fields.clientStackVersion ?? null }),
    msg: `deprecated call ${fields.operation} (${fields.binding})`,
  };
  return JSON.stringify({ ...common, ...identity, ...rest });
}

/** A line of the operators' log that shares the file with the hits. */
export const OPERATOR_LINE = JSON.stringify({
  level: 'warn',
  time: '2026-11-20T10:00:00.000Z',
  event: 'upstream_failure',
  path: '/product.search.cp',
  outcome: 'refused',
  msg: 'upstream /product.search.cp: refused',
});
