import type { Binding, Read, ServiceRequest } from '../inbound/binding.js';
import type { Credentials, LegacyCall } from '../operations.js';

/**
 * Step 1, read: the binding reads the request into a call, or into the error it refuses it with.
 * `read` is null only when the binding itself failed (a defect, `failure`), which is recorded as such.
 */
export function readCall<W>(binding: Binding<W>, request: ServiceRequest): { read: Read<W> | null; failure: unknown } {
  try {
    return { read: binding.read(request), failure: null };
  } catch (err) {
    return { read: null, failure: err };
  }
}

/** The call, once read; null when reading failed. */
export function callOf(read: Read<unknown> | null): LegacyCall | null {
  return read?.ok ? read.call : null;
}

const NO_CREDENTIALS: Credentials = { apiKey: null, version: null };

/** The apiKey and version the call sent, for identifying the caller and for the hit. */
export function credentialsRead(read: Read<unknown> | null): Credentials {
  return callOf(read)?.credentials ?? NO_CREDENTIALS;
}
