import { TranslationError } from '../../errors.js';
import { SoapFault, type SoapVersion } from '../faults.js';
import { UNABLE_TO_PROCESS } from '../../messages.js';
import type { Config } from '../../config/schema.js';
import { CACHE_ERROR, CACHE_SUCCESS, type Reply } from '../reply.js';
import type { Binding } from '../binding.js';
import type { BindingName } from '../binding.js';
import { exceptionMessage } from '../failure.js';
import { readSoapRequest } from './read.js';
import { faultEnvelope, soapContentType, successEnvelope, wireFaultCode } from './write.js';

/**
 * The SOAP 1.1 and 1.2 bindings, one protocol as in ASMX: POST to the service path itself. The
 * version is read from the request; the reply or fault is written in it (docs/wire.md §2–§5).
 */
export function soapBinding(service: Config['service']): Binding<SoapVersion> {
  const { namespace } = service;
  return {
    accepts: (method, pathInfo) => pathInfo === '' && method === 'POST',
    read(request) {
      try {
        const { version, call } = readSoapRequest(request, namespace);
        return { ok: true, binding: bindingName(version), call, wire: version };
      } catch (err) {
        if (!(err instanceof SoapFault)) throw err;
        return { ok: false, binding: bindingName(err.version), operation: err.operation, error: err, wire: err.version };
      }
    },
    write: (result, call, version) => ({
      status: 200,
      contentType: soapContentType(version),
      body: successEnvelope(version, namespace, call.operation, result),
      cacheControl: CACHE_SUCCESS,
    }),
    writeError: (error, version) => faultReply(asSoapFault(error, version)),
  };
}

/** 400 and 415 go out with an empty body (docs/wire.md §5.2). */
function faultReply(fault: SoapFault): Reply {
  const reply = { status: fault.status, contentType: soapContentType(fault.version), cacheControl: CACHE_ERROR };
  if (fault.status !== 500) return { ...reply, body: '' };
  return { ...reply, body: faultEnvelope(fault.version, fault.code, fault.chain), faultCode: wireFaultCode(fault.version, fault.code) };
}

/**
 * What ASMX makes of an exception: a SoapException as it is; anything the web method threw wrapped as
 * a Server fault, unless the method itself threw a Client fault (the caller's input is wrong).
 */
function asSoapFault(err: unknown, version: SoapVersion): SoapFault {
  if (err instanceof SoapFault) return err;
  const message = exceptionMessage(err);
  if (err instanceof TranslationError && err.clientFault) return new SoapFault('Client', [message], version);
  return new SoapFault('Server', [UNABLE_TO_PROCESS, message], version);
}

function bindingName(version: SoapVersion): BindingName {
  return version === '1.1' ? 'soap11' : 'soap12';
}
