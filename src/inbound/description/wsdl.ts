import type { Config } from '../../config/schema.js';
import { OPERATIONS, deprecationText, soapAction, type OperationSpec } from '../../operations.js';
import { element, type XmlElement } from '../../xml/tree.js';
import { writeXmlDocument } from '../../xml/write.js';
import { shownMapping, type PagingProfiles } from './replacement.js';

/**
 * `?WSDL`: the WSDL 1.1 document ASMX generates for this service (docs/wire.md §7.2), built from the
 * operation table. Three portTypes (SOAP 1.2 reuses the SOAP 1.1 one) and four bindings, each
 * generated from the two tables below, so every operation appears everywhere in table order.
 */

type Service = Config['service'];

const WSDL_NS = 'http://schemas.xmlsoap.org/wsdl/';

interface PortTypeSpec {
  /** Suffix of the portType name (`{Svc}Soap`) and of its messages (`{Op}SoapIn`). */
  readonly suffix: string;
  readonly inParts: (op: OperationSpec) => XmlElement[];
  readonly outParts: (op: OperationSpec) => XmlElement[];
}

const part = (attributes: Record<string, string>): XmlElement => element('wsdl:part', attributes);

/** HTTP GET/POST carry every parameter as a string, `int`s included (HttpProtocolReflector). */
const stringParts = (op: OperationSpec): XmlElement[] => op.params.map((param) => part({ name: param.name, type: 's:string' }));
/** An `XmlNode` return over HTTP is an untyped MIME part (MimeXmlReflector). */
const bodyPart = (): XmlElement[] => [part({ name: 'Body' })];

/** In document order: messages and portTypes are written in this order. */
const PORT_TYPES: readonly PortTypeSpec[] = [
  {
    suffix: 'Soap',
    inParts: (op) => [part({ name: 'parameters', element: `tns:${op.name}` })],
    outParts: (op) => [part({ name: 'parameters', element: `tns:${op.name}Response` })],
  },
  { suffix: 'HttpGet', inParts: stringParts, outParts: bodyPart },
  { suffix: 'HttpPost', inParts: stringParts, outParts: bodyPart },
];

interface BindingSpec {
  /** Suffix of the binding and port name. */
  readonly suffix: string;
  /** Suffix of the portType it binds. */
  readonly portType: string;
  /** Prefix of the port's `address` element. */
  readonly addressPrefix: string;
  readonly binding: () => XmlElement;
  readonly operation: (service: Service, op: OperationSpec) => XmlElement;
  readonly input: () => XmlElement;
  readonly output: () => XmlElement;
}

function soapBinding(suffix: string, prefix: string): BindingSpec {
  const body = (): XmlElement => element(`${prefix}:body`, { use: 'literal' });
  return {
    suffix,
    portType: 'Soap',
    addressPrefix: prefix,
    binding: () => element(`${prefix}:binding`, { transport: 'http://schemas.xmlsoap.org/soap/http' }),
    // The bare action, the same for 1.1 and 1.2; ASMX writes no soapActionRequired.
    operation: (service, op) => element(`${prefix}:operation`, { soapAction: soapAction(service.namespace, op), style: 'document' }),
    input: body,
    output: body,
  };
}

function httpBinding(suffix: string, verb: string, input: () => XmlElement): BindingSpec {
  return {
    suffix,
    portType: suffix,
    addressPrefix: 'http',
    binding: () => element('http:binding', { verb }),
    operation: (_service, op) => element('http:operation', { location: `/${op.name}` }),
    input,
    output: () => element('mime:content', { part: 'Body', type: 'text/xml' }),
  };
}

/** Bindings and ports, in document order. */
const BINDINGS: readonly BindingSpec[] = [
  soapBinding('Soap', 'soap'),
  soapBinding('Soap12', 'soap12'),
  httpBinding('HttpGet', 'GET', () => element('http:urlEncoded')),
  httpBinding('HttpPost', 'POST', () => element('mime:content', { type: 'application/x-www-form-urlencoded' })),
];

/** Names of the SOAP bindings, as `?disco` lists them (HTTP ports are not listed there). */
export function soapBindingNames(service: Service): string[] {
  return BINDINGS.filter((binding) => binding.portType === 'Soap').map((binding) => service.name + binding.suffix);
}

export function renderWsdl(service: Service, url: string, profiles: PagingProfiles): string {
  const ns = service.namespace;
  // The order of these declarations is the baseline of docs/wire.md §7.2 (ASMX writes hashtable order).
  const root = element(
    'wsdl:definitions',
    {
      'xmlns:soap': 'http://schemas.xmlsoap.org/wsdl/soap/',
      'xmlns:tm': 'http://microsoft.com/wsdl/mime/textMatching/',
      'xmlns:soapenc': 'http://schemas.xmlsoap.org/soap/encoding/',
      'xmlns:mime': 'http://schemas.xmlsoap.org/wsdl/mime/',
      'xmlns:tns': ns,
      'xmlns:s': 'http://www.w3.org/2001/XMLSchema',
      'xmlns:soap12': 'http://schemas.xmlsoap.org/wsdl/soap12/',
      'xmlns:http': 'http://schemas.xmlsoap.org/wsdl/http/',
      targetNamespace: ns,
      'xmlns:wsdl': WSDL_NS,
    },
    [
      element('wsdl:types', {}, [
        element(
          's:schema',
          { elementFormDefault: 'qualified', targetNamespace: ns },
          OPERATIONS.flatMap((op) => [requestElement(op), responseElement(op)]),
        ),
      ]),
      ...PORT_TYPES.flatMap((portType) => OPERATIONS.flatMap((op) => messages(portType, op))),
      ...PORT_TYPES.map((portType) => portTypeElement(service, portType, profiles)),
      ...BINDINGS.map((binding) => bindingElement(service, binding)),
      element(
        'wsdl:service',
        { name: service.name },
        BINDINGS.map((binding) =>
          element('wsdl:port', { name: service.name + binding.suffix, binding: `tns:${service.name}${binding.suffix}` }, [
            element(`${binding.addressPrefix}:address`, { location: url }),
          ]),
        ),
      ),
    ],
  );
  return writeXmlDocument(root, { indent: true });
}

/** `<s:complexType><s:sequence>…</s:sequence></s:complexType>` */
const complexSequence = (children: XmlElement[], attributes: Record<string, string> = {}): XmlElement =>
  element('s:complexType', attributes, [element('s:sequence', {}, children)]);

function requestElement(op: OperationSpec): XmlElement {
  const fields = op.params.map((param) =>
    // A value-type int is always serialized, a string may be left out: hence the minOccurs split.
    element('s:element', {
      minOccurs: param.type === 'int' ? '1' : '0',
      maxOccurs: '1',
      name: param.name,
      type: `s:${param.type}`,
    }),
  );
  return element('s:element', { name: op.name }, [complexSequence(fields)]);
}

/** `XmlNode` return: an optional mixed element holding any XML. */
function responseElement(op: OperationSpec): XmlElement {
  const result = element('s:element', { minOccurs: '0', maxOccurs: '1', name: `${op.name}Result` }, [
    complexSequence([element('s:any')], { mixed: 'true' }),
  ]);
  return element('s:element', { name: `${op.name}Response` }, [complexSequence([result])]);
}

function messages(portType: PortTypeSpec, op: OperationSpec): XmlElement[] {
  const name = op.name + portType.suffix;
  return [
    element('wsdl:message', { name: `${name}In` }, portType.inParts(op)),
    element('wsdl:message', { name: `${name}Out` }, portType.outParts(op)),
  ];
}

function portTypeElement(service: Service, portType: PortTypeSpec, profiles: PagingProfiles): XmlElement {
  const messageName = (op: OperationSpec, direction: string): string => `tns:${op.name}${portType.suffix}${direction}`;
  return element(
    'wsdl:portType',
    { name: service.name + portType.suffix },
    OPERATIONS.map((op) =>
      element('wsdl:operation', { name: op.name }, [
        // ASMX repeats the wsdl namespace declaration on every documentation element.
        element('wsdl:documentation', { 'xmlns:wsdl': WSDL_NS }, [documentation(op, profiles)]),
        element('wsdl:input', { message: messageName(op, 'In') }),
        element('wsdl:output', { message: messageName(op, 'Out') }),
      ]),
    ),
  );
}

/**
 * The deprecation sentence first (what a generated proxy shows as the method's summary), then the
 * parameter mapping as plain text: WSDL readers show the documentation without markup.
 */
function documentation(op: OperationSpec, profiles: PagingProfiles): string {
  const lines = shownMapping(op, profiles).map(({ legacy, replacement, note }) => `${legacy} → ${replacement} (${note})`);
  return `${deprecationText(op)} Parameters: ${lines.join('; ')}.`;
}

function bindingElement(service: Service, binding: BindingSpec): XmlElement {
  return element('wsdl:binding', { name: service.name + binding.suffix, type: `tns:${service.name}${binding.portType}` }, [
    binding.binding(),
    ...OPERATIONS.map((op) =>
      element('wsdl:operation', { name: op.name }, [
        binding.operation(service, op),
        element('wsdl:input', {}, [binding.input()]),
        element('wsdl:output', {}, [binding.output()]),
      ]),
    ),
  ]);
}
