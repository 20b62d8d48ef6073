import { OperationError, SoapFault, type SoapVersion } from '../errors.js';
import type { LegacyCall } from '../operations.js';
import type { XmlElement } from '../xml/tree.js';
import { CACHE_ERROR, CACHE_SUCCESS, type CallOutcome } from './answer.js';
import { UNABLE_TO_PROCESS, guessVersion, readSoapRequest, type SoapRequest } from './soap-request.js';
import { faultEnvelope, soapContentType, successEnvelope } from './soap-response.js';

/** Runs a legacy call: the proxy, or a stand-in in tests. */
export type Answerer = (call: LegacyCall) => Promise<XmlElement>;

export const INTERNAL_ERROR = 'An internal error occurred.';

/**
 * The SOAP 1.1 and 1.2 bindings: read the request, run the call, write the envelope or the fault in
 * the version of the request (asmx-wire.md §2–§5). 400 and 415 go out with an empty body.
 */
export async function answerSoap(
  request: SoapRequest,
  namespace: string,
  answer: Answerer,
  onUnexpected: (err: unknown) => void,
): Promise<CallOutcome> {
  let version = guessVersion(request);
  let call: LegacyCall | null = null;
  try {
    const read = readSoapRequest(request, namespace);
    version = read.version;
    call = read.call;
    const result = await answer(read.call);
    return {
      binding: bindingOf(version),
      answer: { status: 200, contentType: soapContentType(version), body: successEnvelope(version, namespace, read.call.operation, result), cacheControl: CACHE_SUCCESS },
      operation: read.call.operation.name,
      call,
      failure: null,
    };
  } catch (err) {
    if (!(err instanceof SoapFault || err instanceof OperationError)) onUnexpected(err);
    const fault = asSoapFault(err, version);
    return {
      binding: bindingOf(fault.version),
      answer: {
        status: fault.status,
        contentType: soapContentType(fault.version),
        body: fault.status === 500 ? faultEnvelope(fault.version, fault.code, fault.chain) : '',
        cacheControl: CACHE_ERROR,
      },
      operation: call?.operation.name ?? 'unknown',
      call,
      failure: err instanceof OperationError ? err.reason : 'bad_request',
    };
  }
}

/**
 * What ASMX makes of an exception: a SoapException as it is; anything the web method threw wrapped as
 * a Server fault, unless the method itself threw a Client fault (the caller's input is wrong).
 */
function asSoapFault(err: unknown, version: SoapVersion): SoapFault {
  if (err instanceof SoapFault) return err;
  if (err instanceof OperationError) {
    return err.clientFault ? new SoapFault('Client', err.chain, version) : new SoapFault('Server', [UNABLE_TO_PROCESS, ...err.chain], version);
  }
  return new SoapFault('Server', [UNABLE_TO_PROCESS, INTERNAL_ERROR], version);
}

function bindingOf(version: SoapVersion): CallOutcome['binding'] {
  return version === '1.1' ? 'soap11' : 'soap12';
}
