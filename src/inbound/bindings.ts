import type { Config } from '../config.js';
import type { Binding } from './binding.js';
import { httpBinding } from './http/binding.js';
import { soapBinding } from './soap/binding.js';

/** As the deprecation hit and the metrics name a binding; a binding's `read` says which. */
export const BINDING_NAMES = ['soap11', 'soap12', 'httpGet', 'httpPost'] as const;
export type BindingName = (typeof BINDING_NAMES)[number];

/**
 * The bindings legacy calls arrive on, in the order ASMX asks its protocols (docs/wire.md §1); the
 * service descriptions (WSDL, disco, help) are asked after them. A new binding is its file, a line
 * here and its name above.
 */
export function callBindings(service: Config['service']): readonly Binding[] {
  return [soapBinding(service), httpBinding('POST', service), httpBinding('GET', service)];
}
