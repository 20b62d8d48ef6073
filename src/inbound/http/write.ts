import { HttpBindingError } from '../faults.js';
import { replyFrom } from '../../memo/replies.js';
import { indentedDocument, type CompactDocument, type Page } from '../../xml/compact.js';
import { giveBack } from '../../xml/pool.js';
import { writeXmlDocument } from '../../xml/write.js';
import { textError, xmlReply, type Reply } from '../reply.js';
import { exceptionMessage } from '../failure.js';

/** HTTP GET and POST answers as ASMX writes them (docs/wire.md §6.3, §6.4). */

/** The result as an XML document: declaration, CRLF, two-space indentation. */
export function documentReply(result: Page): Reply {
  if (result.type !== 'compact') return xmlReply(writeXmlDocument(result, { indent: true }));
  return xmlReply(result.kept === true ? replyFrom(result.bytes, 'indented', () => keptDocument(result)) : indentedDocument(result));
}

/** The indented document out of the pool's buffer, to be kept with the cache's page (src/memo/replies.ts). */
function keptDocument(page: CompactDocument): Buffer {
  const lent = indentedDocument(page);
  const kept = Buffer.from(lent);
  giveBack(lent);
  return kept;
}

/** A failure as a 500 plain-text message chain, each message HTML-encoded. */
export function errorTextReply(error: unknown): Reply {
  return textError(error instanceof HttpBindingError ? error.chain : [exceptionMessage(error)]);
}
