import { htmlEncode } from '../aspnet/error-page.js';
import type { ClientMigration, ClientsAnswer, ClientSummary } from './clients.js';
import { SNIPPET_LANGUAGES } from './snippets.js';
import { stackText, statusText } from './status.js';

/**
 * `GET /clients.html` and `GET /clients/{client}.html`: the same answers as pages a migration lead can
 * send a team. Everything shown came from calls (names, versions, requests) and is encoded; the page
 * has no script and loads nothing.
 */

const STYLE = [
  'body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:2rem auto;max-width:60rem;padding:0 1rem;color:#1b1f23}',
  'table{border-collapse:collapse;width:100%;margin:1rem 0}',
  'th,td{border-bottom:1px solid #d0d7de;padding:.4rem .6rem;text-align:left;vertical-align:top}',
  'code{font-family:ui-monospace,monospace;word-break:break-all}',
  '.status{display:inline-block;padding:.1rem .6rem;border-radius:1rem;font-weight:600}',
  '.ok{background:#dafbe1}.yellow{background:#fff8c5}.red{background:#ffebe9}.deprecated{background:#eaeef2}',
  'pre{background:#f6f8fa;padding:.8rem;overflow-x:auto}summary{cursor:pointer;font-weight:600}.scroll{overflow-x:auto}',
].join('');
/** A time of the ledger as a person reads it: `2026-11-27 19:43 UTC`. */
const when = (iso: string): string => htmlEncode(`${iso.slice(0, 10)} ${iso.slice(11, 16)} UTC`);

function page(title: string, body: string): string {
  return (
    `<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">` +
    `<title>${htmlEncode(title)}</title><style>${STYLE}</style></head><body>${body}</body></html>`
  );
}

/** The status as a coloured label: `ok`, `fix by <date>` (yellow or red), `overdue since <date>`, `deprecated`. */
function statusLabel(client: Pick<ClientSummary, 'status' | 'fixBy' | 'urgency'>): string {
  const tone = client.urgency ?? (client.status === 'ok' ? 'ok' : 'deprecated');
  return `<span class="status ${tone}">${htmlEncode(statusText(client))}</span>`;
}

export function clientsPage(answer: ClientsAnswer): string {
  const rows = answer.clients.map(
    (client) =>
      `<tr><td><a href="clients/${encodeURIComponent(client.client)}.html">${htmlEncode(client.client)}</a></td>` +
      `<td>${statusLabel(client)}</td><td>${htmlEncode(stackText(client))}</td><td>${client.calls}</td>` +
      `<td>${when(client.lastSeen)}</td></tr>`,
  );
  const sunset = answer.sunsetAt === null ? 'No sunset is set.' : `The legacy service is switched off on ${htmlEncode(answer.sunsetAt)}.`;
  return page(
    'Legacy catalog service: clients',
    `<h1>Who still calls the legacy catalog service</h1><p>${sunset} A client that makes no legacy call for ` +
      `${answer.quietDays} days is ok.</p><div class="scroll"><table><thead><tr><th>client</th><th>status</th><th>stack</th>` +
      `<th>calls</th><th>last call</th></tr></thead><tbody>${rows.join('')}</tbody></table></div>`,
  );
}

export function clientPage(client: ClientMigration): string {
  const card = [client.team, client.contact].filter((text): text is string => text !== null).map(htmlEncode);
  const code = client.operations
    .filter((use) => use.snippets !== null)
    .map((use) => {
      // The language of its stack open, the others a click away.
      const languages = [client.language, ...SNIPPET_LANGUAGES.filter((language) => language !== client.language)];
      const blocks = languages.map(
        (language, i) =>
          `<details${i === 0 ? ' open' : ''}><summary>${htmlEncode(language)}</summary>` +
          `<pre><code>${htmlEncode(use.snippets?.[language] ?? '')}</code></pre></details>`,
      );
      return `<h3>${htmlEncode(use.operation)} (${htmlEncode(use.binding)})</h3>${blocks.join('')}`;
    });
  const rows = client.operations.map(
    (use) =>
      `<tr><td>${htmlEncode(use.operation)}</td><td>${htmlEncode(use.binding)}</td><td>${use.calls}</td>` +
      `<td>${when(use.lastSeen)}</td><td>${
        use.replacement.length === 0
          ? `<code>${htmlEncode(use.endpoint)}</code> (no successful call of yours recorded its request)`
          : use.replacement.map((url) => `<code>${htmlEncode(url)}</code>`).join('<br>')
      }</td></tr>`,
  );
  return page(
    `Legacy catalog service: ${client.client}`,
    `<h1>${htmlEncode(client.client)}</h1>${card.length === 0 ? '' : `<p>${card.join(' · ')}</p>`}` +
      `<p>${statusLabel(client)}</p><p>Stack: ${htmlEncode(stackText(client))}. ${client.calls} legacy calls from ` +
      `${when(client.firstSeen)} to ${when(client.lastSeen)}.</p>` +
      `<h2>What to call instead</h2><p>Each legacy operation you call, and the request to the new API that replaces ` +
      `your latest successful call of it. Add your appKey to each request.</p>` +
      `<div class="scroll"><table><thead><tr><th>operation</th><th>binding</th><th>calls</th><th>last call</th>` +
      `<th>replacement</th></tr></thead>` +
      `<tbody>${rows.join('')}</tbody></table></div>` +
      (code.length === 0
        ? ''
        : `<h2>Code</h2><p>Each request in code that prints the items and the total your legacy call gave. ` +
          `Set CP_APP_KEY to your appKey.</p>${code.join('')}`),
  );
}

/** The self-service page for a key no legacy call was seen with. */
export function noCallsPage(message: string): string {
  return page('Legacy catalog service: your migration', `<h1>Your migration</h1><p>${htmlEncode(message)}</p>`);
}
