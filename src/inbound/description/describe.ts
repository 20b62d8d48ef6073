import type { Config } from '../../config/schema.js';
import { SCHEMA_NOT_FOUND, WSDL_NOT_FOUND } from '../../messages.js';
import { findOperation } from '../../operations.js';
import { htmlReply, textError, xmlReply, type Reply } from '../reply.js';
import { queryCollection } from '../../aspnet/url-decode.js';
import type { Acceptance } from '../binding.js';
import { renderDisco } from './disco.js';
import { renderMethodNotFound, renderOperationHelp, renderServiceHelp } from './help.js';
import type { PagingProfiles } from './replacement.js';
import { renderWsdl } from './wsdl.js';

/**
 * The Discovery and Documentation protocols, asked after the bindings (docs/wire.md §1): they take a
 * GET of the service path itself. Documentation takes every such GET that Discovery does not, so the
 * two answer as one.
 */
export function descriptionAccepts(method: string, pathInfo: string): Acceptance {
  return pathInfo !== '' ? 'no' : method === 'GET' ? 'accept' : 'wrongMethod';
}

/**
 * A GET with no PathInfo: the Discovery protocol if it accepts (docs/wire.md §1 row 4), else the help
 * page. Discovery looks at `schema`, then `wsdl` (any value, even empty, names an extra document, and
 * this service has none), then the nameless value (RS/DiscoveryServerProtocol.cs `WriteReturns`).
 * The paging profiles name the replacement's page parameters in the WSDL and on the help pages.
 */
/** Which description a GET of the service path is answered with. */
export type DescriptionKind = 'wsdl' | 'disco' | 'help' | 'operation-help' | 'not-found';

export interface Described {
  readonly kind: DescriptionKind;
  readonly reply: Reply;
}

export function describeService(service: Config['service'], profiles: PagingProfiles, query: string, publicUrl: string): Described {
  const get = queryCollection(query);
  if (get('schema') !== undefined) return { kind: 'not-found', reply: textError([SCHEMA_NOT_FOUND]) };
  if (get('wsdl') !== undefined) return { kind: 'not-found', reply: textError([WSDL_NOT_FOUND]) };
  const nameless = get(null)?.toLowerCase();
  if (nameless === 'wsdl') return { kind: 'wsdl', reply: xmlReply(renderWsdl(service, publicUrl, profiles)) };
  if (nameless === 'disco') return { kind: 'disco', reply: xmlReply(renderDisco(service, publicUrl)) };
  const opName = get('op');
  if (opName === undefined) return { kind: 'help', reply: htmlReply(renderServiceHelp(service, publicUrl)) };
  const op = findOperation(opName);
  return op
    ? { kind: 'operation-help', reply: htmlReply(renderOperationHelp(service, publicUrl, op, profiles)) }
    : { kind: 'not-found', reply: htmlReply(renderMethodNotFound(service, publicUrl, opName)) };
}
