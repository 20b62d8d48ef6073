import { HttpBindingError } from '../faults.js';
import { indentedDocument, type Page } from '../../xml/compact.js';
import { writeXmlDocument } from '../../xml/write.js';
import { textError, xmlReply, type Reply } from '../reply.js';
import { exceptionMessage } from '../failure.js';

/** HTTP GET and POST answers as ASMX writes them (docs/wire.md §6.3, §6.4). */

/** The result as an XML document: declaration, CRLF, two-space indentation. */
export function documentReply(result: Page): Reply {
  return xmlReply(result.type === 'compact' ? indentedDocument(result) : writeXmlDocument(result, { indent: true }));
}

/** A failure as a 500 plain-text message chain, each message HTML-encoded. */
export function errorTextReply(error: unknown): Reply {
  return textError(error instanceof HttpBindingError ? error.chain : [exceptionMessage(error)]);
}
