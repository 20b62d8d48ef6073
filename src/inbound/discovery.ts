import type { Config } from '../config.js';
import { findOperation } from '../operations.js';
import { htmlAnswer, textError, xmlAnswer, type Answer } from './answer.js';
import { renderDisco } from './disco.js';
import { renderMethodNotFound, renderOperationHelp, renderServiceHelp } from './help.js';
import { queryCollection } from './url-decode.js';
import { SCHEMA_NOT_FOUND, WSDL_NOT_FOUND, renderWsdl } from './wsdl.js';

/**
 * A GET with no PathInfo: the Discovery protocol if it accepts (asmx-wire.md §1 row 4), else the help
 * page. Discovery looks at `schema`, then `wsdl` (any value, even empty, names an extra document, and
 * this service has none), then the nameless value (RS/DiscoveryServerProtocol.cs `WriteReturns`).
 */
export function describeService(service: Config['service'], query: string, publicUrl: string): Answer {
  const get = queryCollection(query);
  if (get('schema') !== undefined) return textError([SCHEMA_NOT_FOUND]);
  if (get('wsdl') !== undefined) return textError([WSDL_NOT_FOUND]);
  const nameless = get(null)?.toLowerCase();
  if (nameless === 'wsdl') return xmlAnswer(renderWsdl(service, publicUrl));
  if (nameless === 'disco') return xmlAnswer(renderDisco(service, publicUrl));
  const opName = get('op');
  if (opName === undefined) return htmlAnswer(renderServiceHelp(service, publicUrl));
  const op = findOperation(opName);
  return htmlAnswer(op ? renderOperationHelp(service, publicUrl, op) : renderMethodNotFound(service, publicUrl, opName));
}
