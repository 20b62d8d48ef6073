import { HttpBindingError, OperationError } from '../errors.js';
import { findOperation, type LegacyCall } from '../operations.js';
import { writeXmlDocument } from '../xml/write.js';
import { textError, xmlAnswer, type CallOutcome } from './answer.js';
import { bindHttpParameters, findHttpOperation, readForm, type OptionalParameters } from './http-binding.js';
import { INTERNAL_ERROR, type Answerer } from './soap-call.js';
import { queryCollection } from './url-decode.js';

export interface HttpCallRequest {
  readonly method: 'GET' | 'POST';
  /** The PathInfo without its leading `/`, decoded. */
  readonly name: string;
  /** The raw query string, without `?`. */
  readonly query: string;
  readonly contentType: string | undefined;
  readonly body: Buffer;
}

/**
 * The HTTP GET and HTTP POST bindings: find the method, bind its parameters from the query string or
 * the form, run the call, write the indented document or the plain-text error (asmx-wire.md §6).
 */
export async function answerHttp(
  request: HttpCallRequest,
  mode: OptionalParameters,
  answer: Answerer,
  onUnexpected: (err: unknown) => void,
): Promise<CallOutcome> {
  const binding = request.method === 'GET' ? 'httpGet' : 'httpPost';
  let call: LegacyCall | null = null;
  try {
    const op = findHttpOperation(request.name);
    const values = request.method === 'GET' ? queryCollection(request.query) : readForm(request.contentType, request.body);
    call = bindHttpParameters(op, values, mode);
    const result = await answer(call);
    return { binding, answer: xmlAnswer(writeXmlDocument(result, { indent: true })), operation: op.name, call, failure: null };
  } catch (err) {
    const known = err instanceof HttpBindingError || err instanceof OperationError;
    if (!known) onUnexpected(err);
    return {
      binding,
      answer: textError(known ? err.chain : [INTERNAL_ERROR]),
      operation: call?.operation.name ?? findOperation(request.name)?.name ?? 'unknown',
      call,
      failure: err instanceof OperationError ? err.reason : 'bad_request',
    };
  }
}
