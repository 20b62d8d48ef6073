import type { Config } from '../config/schema.js';
import type { Binding } from './binding.js';
import { httpBinding } from './http/binding.js';
import { soapBinding } from './soap/binding.js';

/**
 * The bindings legacy calls arrive on, in the order ASMX asks its protocols (docs/wire.md §1); the
 * service descriptions (WSDL, disco, help) are asked after them. A new binding is its file, a line
 * here and its name in `BINDING_NAMES` (binding.ts).
 */
export function callBindings(service: Config['service']): readonly Binding[] {
  return [soapBinding(service), httpBinding('POST', service), httpBinding('GET', service)];
}
