import { htmlEncode } from '../aspnet/error-page.js';
import { OUTCOMES } from '../deprecation/ledger.js';
import {
  clientTitle,
  countOf,
  exampleText,
  formatCount,
  formatTime,
  inputText,
  periodText,
  printableReport,
  sparkline,
  trendText,
  unchartedText,
} from './format.js';
import type { ClientReport, MigrationReport, Replacement } from './report.js';
import { barChart } from './svg-chart.js';
import { stackText, statusText } from '../migration/status.js';

/**
 * The report as one self-contained HTML page, to mail or attach to a ticket: its style inline, its
 * charts inline SVG, no script, and nothing fetched from anywhere.
 */

const STYLE = `
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #1a1a1a; max-width: 72em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.25em; margin-top: 2em; } h3 { font-size: 1.05em; margin-bottom: .3em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { padding: .2em .6em; border-bottom: 1px solid #ddd; text-align: left; vertical-align: top; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code { font: 12px ui-monospace, monospace; word-break: break-all; }
.charts { display: flex; flex-wrap: wrap; gap: 1em; }
figure.chart { margin: 0; } figcaption { font-weight: 600; } .total { font-weight: normal; color: #555; }
rect.bar { fill: #3b6ea8; } line.axis { stroke: #888; } text.tick { font-size: 10px; fill: #555; }
.rising { color: #a33; } .falling { color: #2a7; } .muted { color: #666; }
.red { color: #a33; font-weight: 600; } .yellow { color: #960; font-weight: 600; }
`;

export function renderHtml(logged: MigrationReport): string {
  // Written to stdout without --out, and a terminal acts on C1 controls and DEL, which htmlEncode leaves.
  const report = printableReport(logged);
  return [
    '<!DOCTYPE html>',
    '<html lang="en"><head><meta charset="utf-8"><title>Migration report</title>',
    `<style>${STYLE}</style></head><body>`,
    '<h1>Migration report: who still calls the deprecated service</h1>',
    `<p>${countOf(report.input.hits, 'deprecated call')} by ${countOf(report.clients.length, 'client')}, ${periodText(report)}.</p>`,
    ...inputText(report.input).map((line) => `<p class="muted">${htmlEncode(line)}</p>`),
    ...(report.folded === 0
      ? []
      : [`<p>${formatCount(report.folded)} calls of callers past the ledger's size are counted under <q>other</q>.</p>`]),
    '<h2>Clients</h2>',
    clientsTable(report.clients),
    ...unchartedText(report).map((line) => `<p>${htmlEncode(line)}</p>`),
    '<h2>Calls per day, by operation</h2>',
    `<div class="charts" id="by-operation">${report.perDay.byOperation.map((series) => barChart(series, report.days)).join('')}</div>`,
    '<h2>Calls per day, by client</h2>',
    `<div class="charts" id="by-client">${report.perDay.byClient.map((series) => barChart(series, report.days)).join('')}</div>`,
    '<h2>What each client still calls</h2>',
    ...report.clients.map(clientSection),
    ...(report.replacements.length === 0 ? [] : ['<h2>Replacements</h2>', ...report.replacements.map(replacementSection)]),
    '</body></html>',
    '',
  ].join('\n');
}

function clientsTable(clients: readonly ClientReport[]): string {
  const rows = clients.map(
    (client) =>
      `<tr><td>${htmlEncode(client.client)}</td><td>${htmlEncode(client.team ?? '')}</td>` +
      `<td class="${client.urgency ?? (client.status === 'ok' ? 'falling' : 'muted')}">${htmlEncode(statusText(client))}</td>` +
      `<td>${htmlEncode(stackText(client))}</td><td ` +
      `class="n">${formatCount(client.calls)}</td><td class="n">${formatCount(client.faults)}</td>` +
      `<td>${formatTime(client.firstSeen)}</td><td>${formatTime(client.lastSeen)}</td><td ` +
      `class="${client.trend?.direction ?? 'muted'}">${htmlEncode(trendText(client.trend))}</td>` +
      `<td><code>${sparkline(client.recentDays)}</code></td></tr>`,
  );
  return table(['client', 'team', 'status', 'stack', 'calls', 'faults', 'first seen', 'last seen', 'trend', 'last 14 days'], [4, 5], rows);
}

function clientSection(client: ClientReport): string {
  const rows = client.operations.flatMap((operation) =>
    operation.bindings.map(
      (binding, i) =>
        `<tr><td>${i === 0 ? htmlEncode(operation.operation) : ''}</td><td>${htmlEncode(binding.binding)}</td><td ` +
        `class="n">${formatCount(binding.calls)}</td>` +
        OUTCOMES.map((outcome) => `<td class="n">${formatCount(binding.outcomes[outcome])}</td>`).join('') +
        `<td>${formatTime(binding.firstSeen)}</td><td>${formatTime(binding.lastSeen)}</td></tr>`,
    ),
  );
  const examples = client.operations.map((operation) => {
    const text = exampleText(operation);
    return (
      `<li>${htmlEncode(operation.operation)}: ` +
      `${operation.example === null ? htmlEncode(text) : `<code>${htmlEncode(text)}</code>`}</li>`
    );
  });
  return [
    `<section class="client" data-client="${htmlEncode(client.client)}">`,
    `<h3>${htmlEncode(clientTitle(client))}</h3>`,
    table(['operation', 'binding', 'calls', ...OUTCOMES, 'first seen', 'last seen'], [2, 3, 4, 5, 6], rows),
    `<p>Their replacement requests, from their latest ok call:</p><ul>${examples.join('')}</ul>`,
    '</section>',
  ].join('\n');
}

function replacementSection(replacement: Replacement): string {
  const rows = replacement.mapping.map(
    (line) =>
      `<tr><td><code>${htmlEncode(line.legacy)}</code></td><td><code>${htmlEncode(line.replacement)}</code></td>` +
      `<td>${htmlEncode(line.note)}</td></tr>`,
  );
  return [
    `<h3>${htmlEncode(replacement.operation)} → <code>${htmlEncode(replacement.replacement)}</code></h3>`,
    ...(replacement.note === '' ? [] : [`<p>${htmlEncode(replacement.note)}</p>`]),
    table(['legacy', 'replacement', 'note'], [], rows),
  ].join('\n');
}

/** A table with `headings`; the columns `numeric` are aligned right. */
function table(headings: readonly string[], numeric: readonly number[], rows: readonly string[]): string {
  const head = headings.map((heading, i) => `<th${numeric.includes(i) ? ' class="n"' : ''}>${htmlEncode(heading)}</th>`).join('');
  return `<table><thead><tr>${head}</tr></thead><tbody>\n${rows.join('\n')}\n</tbody></table>`;
}
