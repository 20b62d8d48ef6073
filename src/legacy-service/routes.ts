import { createHash } from 'node:crypto';
import type { LegacyRoute, RouteName } from '../config/schema.js';
import type { Caller } from '../clients/directory.js';
import type { OperationName } from '../operations.js';

/**
 * Which path answers a call (docs/migration.md §6), pure: the first route of `legacy.routes` that takes
 * the call's operation and caller, or none, for today's translated path.
 */

export function routeOf(routes: readonly LegacyRoute[], operation: OperationName, caller: Caller): LegacyRoute | null {
  return routes.find((route) => takes(route, operation, caller)) ?? null;
}

function takes(route: LegacyRoute, operation: OperationName, caller: Caller): boolean {
  if (route.operations.length > 0 && !route.operations.includes(operation)) return false;
  // The label is a configured client's name, or `other`, which no route can list.
  if (route.clients.length > 0 && !route.clients.includes(caller.label)) return false;
  return route.percent === 100 || bucketOf(caller.fingerprint) < route.percent;
}

/**
 * The caller's place in 0–99, the same on every instance and after every restart, so that a client is
 * consistently in or out. Unsalted on purpose: raising a route's percent only adds clients, and every
 * route with the same percent takes the same clients. Callers without a key share `anonymous`.
 */
export function bucketOf(fingerprint: string): number {
  return createHash('sha256').update(fingerprint).digest().readUInt32BE(0) % 100;
}

export function routeName(route: LegacyRoute | null): RouteName {
  return route === null ? 'translated' : route.mode;
}
