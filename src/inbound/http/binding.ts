import type { Config } from '../../config/schema.js';
import { HttpBindingError } from '../faults.js';
import { percentDecode, queryCollection } from '../../aspnet/url-decode.js';
import type { Binding } from '../binding.js';
import { bindHttpParameters, findHttpOperation, readForm } from './read.js';
import { documentReply, errorTextReply } from './write.js';

/**
 * The HTTP GET and HTTP POST bindings (docs/wire.md §6): `{verb} /index.asmx/{Op}`, parameters from
 * the query string or the urlencoded form; the result as an indented XML document, failures as a
 * 500 plain-text message chain.
 */
export function httpBinding(verb: 'GET' | 'POST', service: Config['service']): Binding<null> {
  const binding = verb === 'GET' ? 'httpGet' : 'httpPost';
  return {
    // A PathInfo of one character (`/`) names no method: no HTTP protocol takes it.
    accepts: (method, pathInfo) => pathInfo.length >= 2 && method === verb,
    read(request) {
      try {
        const operation = findHttpOperation(percentDecode(request.pathInfo.slice(1)));
        const values = verb === 'GET' ? queryCollection(request.query) : readForm(operation, request.contentType, request.body);
        return { ok: true, binding, call: bindHttpParameters(operation, values, service.httpOptionalParameters), wire: null };
      } catch (err) {
        if (!(err instanceof HttpBindingError)) throw err;
        return { ok: false, binding, operation: err.operation, error: err, wire: null };
      }
    },
    write: documentReply,
    writeError: errorTextReply,
  };
}
