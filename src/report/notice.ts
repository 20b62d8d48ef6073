import { htmlEncode } from '../aspnet/error-page.js';
import { languageOf, pageUrls, snippetsFor } from '../migration/snippets.js';
import { stackText, statusText } from '../migration/status.js';
import { type MigrationPolicy, replacementOf } from '../migration/clients.js';
import { formatTime } from './format.js';
import type { ClientReport } from './report.js';

/**
 * A migration notice for one client (`npm run report -- --client NAME --notice`): what a migration
 * lead sends its team. Its calls and counts from the logs, its status and deadline, the request that
 * replaces each operation (from its own latest successful call) and the code for it in the language
 * of its stack. The key stays a placeholder. Text, or a page with `--format html`.
 */

interface NoticeOperation {
  readonly operation: string;
  readonly endpoint: string | null;
  readonly calls: number;
  readonly lastSeen: string;
  readonly bindings: string;
  /** The request(s) that replace its latest successful call; empty when none recorded one. */
  readonly urls: readonly string[];
  readonly code: string | null;
}

interface Notice {
  readonly subject: string;
  readonly greeting: string;
  readonly deadline: string;
  readonly status: string;
  readonly summary: string;
  readonly language: string;
  readonly operations: readonly NoticeOperation[];
}

function noticeOf(client: ClientReport, policy: MigrationPolicy): Notice {
  const language = languageOf(client.stack);
  const date = policy.sunsetAt?.slice(0, 10);
  return {
    subject: `${client.client}: move off the legacy catalog service${date === undefined ? '' : ` by ${date}`}`,
    greeting: `Hello${client.team === null ? '' : ` ${client.team}`},`,
    deadline:
      date === undefined
        ? 'The legacy catalog service (index.asmx) is deprecated; no date has been set yet for switching it off.'
        : `The legacy catalog service (index.asmx) is deprecated and is switched off on ${date}.`,
    status: `Status: ${statusText(client)}${client.urgency === null ? '' : ` (${client.urgency})`}. Stack: ${stackText(client)}.`,
    summary:
      `${client.client} made ${client.calls} legacy calls from ${formatTime(client.firstSeen)} to ${formatTime(client.lastSeen)} ` +
      `(${client.faults} failed).`,
    language,
    operations: client.operations.map((operation) => {
      const example = operation.example === null ? null : { at: 0, successor: operation.example, paging: operation.examplePaging };
      const request = example === null ? null : replacementOf(example, operation.operation, policy);
      return {
        operation: operation.operation,
        endpoint: operation.replacement,
        calls: operation.calls,
        lastSeen: formatTime(operation.lastSeen),
        bindings: operation.bindings.map((binding) => `${binding.binding} ${binding.calls}`).join(', '),
        urls: request === null ? [] : pageUrls(request),
        code: request === null ? null : snippetsFor(request)[language],
      };
    }),
  };
}

const replacementText = (operation: NoticeOperation): string =>
  operation.urls.length > 0
    ? operation.urls.join(' then ')
    : operation.endpoint === null
      ? 'no operation was named: look at what the client sends'
      : `${operation.endpoint} (no successful call of yours recorded its request)`;

export function noticeText(client: ClientReport, policy: MigrationPolicy): string {
  const notice = noticeOf(client, policy);
  return [
    `Subject: ${notice.subject}`,
    '',
    notice.greeting,
    '',
    notice.deadline,
    notice.status,
    notice.summary,
    '',
    'What it calls:',
    ...notice.operations.map(
      (operation) => `  ${operation.operation}: ${operation.calls} calls (${operation.bindings}), last ${operation.lastSeen}`,
    ),
    '',
    'What to call instead (add your appKey):',
    ...notice.operations.map((operation) => `  ${operation.operation}: ${replacementText(operation)}`),
    ...notice.operations
      .filter((operation) => operation.code !== null)
      .flatMap((operation) => ['', `${operation.operation} in ${notice.language}:`, '', operation.code as string]),
    '',
  ].join('\n');
}

export function noticeHtml(client: ClientReport, policy: MigrationPolicy): string {
  const notice = noticeOf(client, policy);
  const e = htmlEncode;
  const calls = notice.operations.map(
    (operation) =>
      `<tr><td>${e(operation.operation)}</td><td>${operation.calls}</td><td>${e(operation.bindings)}</td>` +
      `<td>${e(operation.lastSeen)}</td></tr>`,
  );
  const replacements = notice.operations.map(
    (operation) => `<li>${e(operation.operation)}: <code>${e(replacementText(operation))}</code></li>`,
  );
  const code = notice.operations
    .filter((operation) => operation.code !== null)
    .map(
      (operation) => `<h3>${e(operation.operation)} in ${e(notice.language)}</h3><pre><code>${e(operation.code as string)}</code></pre>`,
    );
  return (
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>${e(notice.subject)}</title></head><body>` +
    `<h1>${e(notice.subject)}</h1><p>${e(notice.greeting)}</p><p>${e(notice.deadline)}</p><p>${e(notice.status)}</p>` +
    `<p>${e(notice.summary)}</p><table><thead><tr><th>operation</th><th>calls</th><th>bindings</th><th>last call</th></tr></thead>` +
    `<tbody>${calls.join('')}</tbody></table><h2>What to call instead</h2><p>Add your appKey to each request.</p>` +
    `<ul>${replacements.join('')}</ul>${code.join('')}</body></html>\n`
  );
}
