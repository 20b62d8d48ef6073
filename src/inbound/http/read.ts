import { HttpBindingError } from '../faults.js';
import { cannotConvertInt32, methodNameCase, methodNameInvalid, missingParameter, requestFormatInvalid } from '../../messages.js';
import {
  findOperation,
  findOperationIgnoringCase,
  legacyCall,
  type ArgValue,
  type LegacyCall,
  type OperationSpec,
} from '../../operations.js';
import { parseInt32 } from '../../aspnet/int32.js';
import { parseMediaType } from '../../aspnet/media-type.js';
import { queryCollection } from '../../aspnet/url-decode.js';

/**
 * Reading the ASMX HTTP GET and HTTP POST protocols (docs/wire.md §6): the operation named by the
 * PathInfo, its parameters read in declaration order from the query string or the urlencoded form,
 * the first failure reported (with the operation, once found).
 */

export type OptionalParameters = 'lenient' | 'strict';

const FORM_CONTENT_TYPE = 'application/x-www-form-urlencoded';

export function findHttpOperation(name: string): OperationSpec {
  const op = findOperation(name);
  if (op) return op;
  const other = findOperationIgnoringCase(name);
  if (other) {
    throw new HttpBindingError([methodNameCase(name, other.name)]);
  }
  throw new HttpBindingError([methodNameInvalid(name)]);
}

/** A request's parameters as ASP.NET's name-value collection reads them (see `queryCollection`). */
export type ParameterLookup = (name: string) => string | undefined;

/** The form of an HTTP POST, or the ASMX error for a body that is not urlencoded. */
export function readForm(op: OperationSpec, contentType: string | undefined, body: Buffer): ParameterLookup {
  // ASMX compares the text before the first `;` as it is (ContentType.MatchesBase), untrimmed.
  if (parseMediaType(contentType).base !== FORM_CONTENT_TYPE) throw new HttpBindingError([requestFormatInvalid(contentType ?? '')], op);
  return queryCollection(body.toString('utf8'));
}

export function bindHttpParameters(op: OperationSpec, values: ParameterLookup, mode: OptionalParameters): LegacyCall {
  const args: Record<string, ArgValue> = {};
  for (const param of op.params) {
    const value = values(param.name);
    if (value === undefined) {
      if (param.type === 'int' || mode === 'strict') throw new HttpBindingError([missingParameter(param.name)], op);
      args[param.name] = null;
      continue;
    }
    if (param.type === 'string') {
      args[param.name] = value;
      continue;
    }
    const parsed = parseInt32(value);
    if (typeof parsed !== 'number') {
      throw new HttpBindingError([cannotConvertInt32(value), parsed.error], op);
    }
    args[param.name] = parsed;
  }
  return legacyCall(op, args);
}
