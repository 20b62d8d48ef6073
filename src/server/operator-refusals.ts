import type { FastifyRequest } from 'fastify';
import { Counter, type Registry } from 'prom-client';
import { onceEvery } from '../log/once-every.js';

/**
 * What the operator listener refused (a Host it does not answer, a missing or wrong token): counted
 * for every request, said in the log at most once a minute. Anyone who reaches the listener can send
 * refused requests as fast as they like, and a line for each would drown the log (and its disk).
 */
export type OperatorRefusals = (request: FastifyRequest, fields: { readonly reason: string } & Record<string, unknown>) => void;

const LOG_INTERVAL_MS = 60_000;

export function createOperatorRefusals(registry: Registry): OperatorRefusals {
  const refused = new Counter({
    name: 'operator_refused_total',
    help: 'Requests the operator listener refused: a Host it does not answer (misdirected), or a missing or wrong token.',
    labelNames: ['reason'],
    registers: [registry],
  });
  const sayNow = onceEvery(LOG_INTERVAL_MS);
  return (request, fields) => {
    refused.inc({ reason: fields.reason });
    const count = sayNow();
    if (count === null) return;
    request.log.warn(
      { event: 'operator_refused', ...fields, refused: count, address: request.ip },
      `The operator listener refused ${count === 1 ? 'a request' : `${count} requests`} (${fields.reason}); at most one line a minute`,
    );
  };
}
