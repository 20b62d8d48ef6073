import type { Config } from '../../config/schema.js';
import { element } from '../../xml/tree.js';
import { writeXmlDocument } from '../../xml/write.js';
import { soapBindingNames } from './wsdl.js';

/**
 * `?disco`: the discovery document ASMX writes (docs/wire.md §7.3). It points at the WSDL and lists
 * the SOAP bindings only, each under its own generated `q{n}` prefix as the .NET serializer names them.
 */
export function renderDisco(service: Config['service'], url: string): string {
  const root = element(
    'discovery',
    {
      'xmlns:xsd': 'http://www.w3.org/2001/XMLSchema',
      'xmlns:xsi': 'http://www.w3.org/2001/XMLSchema-instance',
      xmlns: 'http://schemas.xmlsoap.org/disco/',
    },
    [
      element('contractRef', { ref: `${url}?wsdl`, docRef: url, xmlns: 'http://schemas.xmlsoap.org/disco/scl/' }),
      ...soapBindingNames(service).map((binding, index) => {
        const prefix = `q${index + 1}`;
        return element('soap', {
          address: url,
          [`xmlns:${prefix}`]: service.namespace,
          binding: `${prefix}:${binding}`,
          xmlns: 'http://schemas.xmlsoap.org/disco/soap/',
        });
      }),
    ],
  );
  return writeXmlDocument(root, { indent: true });
}
