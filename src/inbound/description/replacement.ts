import type { Config } from '../../config/schema.js';
import { parameterMapping, type OperationSpec, type ParamMapping } from '../../operations.js';

/**
 * An operation's replacement as the help pages (a table) and the WSDL documentation (a sentence) show
 * it to whoever moves a client over (docs/wire.md §7.2, §7.4): the endpoint and how each parameter
 * maps, with the page parameters of the configured paging profiles.
 */

export type PagingProfiles = Config['paging']['profiles'];

/** The mapping lines with each side written out: a side without parameters reads as a dash. */
export function shownMapping(op: OperationSpec, profiles: PagingProfiles): ParamMapping[] {
  return parameterMapping(op, profiles).map((line) => ({ ...line, legacy: orDash(line.legacy), replacement: orDash(line.replacement) }));
}

const orDash = (names: string): string => (names === '' ? '—' : names);
