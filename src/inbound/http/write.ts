import { HttpBindingError } from '../faults.js';
import { replyFrom } from '../../memo/replies.js';
import { indentedDocument, type Page } from '../../xml/compact.js';
import { ownCopy } from '../../xml/pool.js';
import { writeXmlDocument } from '../../xml/write.js';
import { textError, xmlReply, type Reply } from '../reply.js';
import { exceptionMessage } from '../failure.js';

/** HTTP GET and POST answers as ASMX writes them (docs/wire.md §6.3, §6.4). */

/** The result as an XML document: declaration, CRLF, two-space indentation. */
export function documentReply(result: Page): Reply {
  if (result.type !== 'compact') return xmlReply(writeXmlDocument(result, { indent: true }));
  return xmlReply(
    result.kept === true ? replyFrom(result.bytes, 'indented', () => ownCopy(indentedDocument(result))) : indentedDocument(result),
  );
}

/** A failure as a 500 plain-text message chain, each message HTML-encoded. */
export function errorTextReply(error: unknown): Reply {
  return textError(error instanceof HttpBindingError ? error.chain : [exceptionMessage(error)]);
}
