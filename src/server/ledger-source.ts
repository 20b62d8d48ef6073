import type { FleetLedger } from '../deprecation/fleet-ledger.js';
import type { HitRecorder } from '../deprecation/hits.js';
import type { LedgerView } from '../deprecation/ledger-view.js';

/** The ledger the operator routes and the callers' self-service read, and which one it is. */
export type LedgerSource = () => Promise<{ readonly view: LedgerView; readonly scope: 'fleet' | 'instance' }>;

/** The fleet's ledger when Redis answers; this instance's own when it does not (or there is no Redis), and which. */
export function ledgerSource(hits: HitRecorder, fleetLedger: FleetLedger | null): LedgerSource {
  return async () => {
    const fleet = fleetLedger === null ? null : await fleetLedger.view();
    return fleet === null ? { view: hits.ledgerView(), scope: 'instance' } : { view: fleet, scope: 'fleet' };
  };
}
