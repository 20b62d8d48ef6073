import { CallError } from '../errors.js';
import type { OperationSpec } from '../operations.js';

/**
 * What the bindings refuse before a call exists: a request that cannot be read as a call of an
 * operation. Named here, beside the bindings that throw and write them, as the call path's own
 * errors are in src/errors.ts.
 */

export type SoapVersion = '1.1' | '1.2';
export type SoapFaultCode = 'Client' | 'Server' | 'VersionMismatch';

/**
 * A SOAP request refused before or while reading it. `status` 400 and 415 go out with an empty body;
 * 500 with the fault envelope. `version` is the SOAP version the fault is written in; `operation` the
 * one routed to, when routing got that far.
 */
export class SoapFault extends CallError {
  readonly reason = 'bad_request';
  readonly code: SoapFaultCode;
  readonly chain: readonly string[];
  readonly status: 400 | 415 | 500;
  readonly version: SoapVersion;
  readonly operation: OperationSpec | null;

  constructor(
    code: SoapFaultCode,
    chain: readonly string[],
    version: SoapVersion,
    status: 400 | 415 | 500 = 500,
    operation: OperationSpec | null = null,
  ) {
    super(chain.join(' ---> '));
    this.name = 'SoapFault';
    this.code = code;
    this.chain = chain;
    this.status = status;
    this.version = version;
    this.operation = operation;
  }
}

/** An HTTP GET/POST request the ASMX HTTP protocol could not bind (unknown method, missing parameter, bad int, …). */
export class HttpBindingError extends CallError {
  readonly reason = 'bad_request';
  readonly chain: readonly string[];
  readonly operation: OperationSpec | null;

  constructor(chain: readonly string[], operation: OperationSpec | null = null) {
    super(chain.join(' ---> '));
    this.name = 'HttpBindingError';
    this.chain = chain;
    this.operation = operation;
  }
}
