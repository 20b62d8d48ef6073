import { HttpBindingError } from '../errors.js';
import { findOperation, findOperationIgnoringCase, type ArgValue, type LegacyCall, type OperationSpec } from '../operations.js';
import { parseInt32 } from './int32.js';
import { parseMediaType } from './media-type.js';
import { queryCollection } from './url-decode.js';

/**
 * The ASMX HTTP GET and HTTP POST protocols (asmx-wire.md §6): the operation named by the PathInfo,
 * its parameters read in declaration order from the query string or the urlencoded form, the first
 * failure reported.
 */

export type OptionalParameters = 'lenient' | 'strict';

const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

export function findHttpOperation(name: string): OperationSpec {
  const op = findOperation(name);
  if (op) return op;
  const other = findOperationIgnoringCase(name);
  if (other) {
    throw new HttpBindingError([
      `Invalid method name '${name}',  method names are case sensitive.   The method name '${other.name}' with the same name but different casing was found.\r\nParameter name: methodName`,
    ]);
  }
  throw new HttpBindingError([`${name} Web Service method name is not valid.`]);
}

/** A request's parameters as ASP.NET's name-value collection reads them (see `queryCollection`). */
export type ParameterLookup = (name: string) => string | undefined;

/** The form of an HTTP POST, or the ASMX error for a body that is not urlencoded. */
export function readForm(contentType: string | undefined, body: Buffer): ParameterLookup {
  // ASMX compares the text before the first `;` as it is (ContentType.MatchesBase), untrimmed.
  if (parseMediaType(contentType).base !== FORM_CONTENT_TYPE) throw new HttpBindingError([`Request format is invalid: ${contentType ?? ''}.`]);
  return queryCollection(body.toString('utf8'));
}

export function bindHttpParameters(op: OperationSpec, values: ParameterLookup, mode: OptionalParameters): LegacyCall {
  const args: Record<string, ArgValue> = {};
  for (const param of op.params) {
    const value = values(param.name);
    if (value === undefined) {
      if (param.type === 'int' || mode === 'strict') throw new HttpBindingError([`Missing parameter: ${param.name}.`]);
      args[param.name] = null;
      continue;
    }
    if (param.type === 'string') {
      args[param.name] = value;
      continue;
    }
    const parsed = parseInt32(value);
    if (typeof parsed !== 'number') {
      throw new HttpBindingError([`Cannot convert ${value} to System.Int32.\r\nParameter name: type`, parsed.error]);
    }
    args[param.name] = parsed;
  }
  return { operation: op, args };
}
