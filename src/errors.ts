/**
 * Errors as named values. Each carries what the binding writer needs to answer the way ASMX did:
 * the chain of exception messages (outermost first, joined with " ---> " on the wire) and, for SOAP,
 * the fault code.
 */

/** Why an operation failed, for logs and metrics; never shown to the client. */
export type FailureReason =
  | 'client_input'
  | 'page_cap'
  | 'upstream_error'
  | 'upstream_status'
  | 'upstream_timeout'
  | 'upstream_unreachable'
  | 'upstream_invalid'
  /** The legacy client went away before its answer was ready; the upstream requests were cancelled. */
  | 'client_closed';

/**
 * The web method threw. Over SOAP: `soap:Server` and "Server was unable to process request. ---> …",
 * unless `clientFault` (the method threw a SoapException with the Client code: the caller's input is
 * wrong, the text stands alone). Over HTTP GET/POST: 500 text/plain with the chain.
 */
export class OperationError extends Error {
  readonly chain: readonly string[];
  readonly reason: FailureReason;
  readonly clientFault: boolean;

  constructor(message: string, reason: FailureReason, options: { clientFault?: boolean; cause?: unknown } = {}) {
    super(message, { cause: options.cause });
    this.name = 'OperationError';
    this.chain = [message];
    this.reason = reason;
    this.clientFault = options.clientFault ?? false;
  }
}

/** An HTTP GET/POST request the ASMX HTTP protocol could not bind (missing parameter, bad int, …). */
export class HttpBindingError extends Error {
  readonly chain: readonly string[];

  constructor(chain: readonly string[]) {
    super(chain.join(' ---> '));
    this.name = 'HttpBindingError';
    this.chain = chain;
  }
}

export type SoapFaultCode = 'Client' | 'Server' | 'VersionMismatch';

/**
 * A SOAP request refused before or while reading it. `status` 400 and 415 go out with an empty body;
 * 500 with the fault envelope. `version` is the SOAP version the fault is written in.
 */
export class SoapFault extends Error {
  readonly code: SoapFaultCode;
  readonly chain: readonly string[];
  readonly status: 400 | 415 | 500;
  readonly version: SoapVersion;

  constructor(code: SoapFaultCode, chain: readonly string[], version: SoapVersion, status: 400 | 415 | 500 = 500) {
    super(chain.join(' ---> '));
    this.name = 'SoapFault';
    this.code = code;
    this.chain = chain;
    this.status = status;
    this.version = version;
  }
}

export type SoapVersion = '1.1' | '1.2';

/** .NET Int32 parsing failures, as the XmlSerializer and the HTTP binder word them. */
export const INT32_FORMAT = 'Input string was not in a correct format.';
export const INT32_RANGE = 'Value was either too large or too small for an Int32.';
