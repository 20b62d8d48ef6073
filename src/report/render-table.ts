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
import { stackText, statusText } from '../migration/status.js';

/**
 * The report as plain text for a terminal: a block per client (most calls first) with a row per
 * operation and binding, then each operation's replacement and parameter mapping. `bold` only marks
 * the client names, for a terminal; piped into a file or a mail, the text carries no escapes.
 */

export function renderTable(logged: MigrationReport, bold: boolean): string {
  const report = printableReport(logged);
  const strong = (text: string): string => (bold ? `\x1b[1m${text}\x1b[0m` : text);
  const folded =
    report.folded === 0 ? [] : [`${formatCount(report.folded)} calls of callers past the ledger's size are counted under "other".`];
  return [
    `Migration report: ${countOf(report.input.hits, 'deprecated call')} by ${countOf(report.clients.length, 'client')}, ` +
      `${periodText(report)}`,
    ...inputText(report.input),
    ...folded,
    ...unchartedText(report),
    ...report.clients.flatMap((client) => ['', ...clientBlock(client, strong)]),
    ...(report.replacements.length === 0 ? [] : ['', strong('Replacements'), ...report.replacements.flatMap(replacementBlock)]),
    '',
  ].join('\n');
}

function clientBlock(client: ClientReport, strong: (text: string) => string): string[] {
  const rows = client.operations.flatMap((operation) =>
    operation.bindings.map((binding, i) => [
      i === 0 ? operation.operation : '',
      binding.binding,
      formatCount(binding.calls),
      ...OUTCOMES.map((outcome) => formatCount(binding.outcomes[outcome])),
      formatTime(binding.firstSeen),
      formatTime(binding.lastSeen),
    ]),
  );
  return [
    strong(clientTitle(client)),
    `  ${countOf(client.calls, 'call')}, ${countOf(client.faults, 'fault')}, first ${formatTime(client.firstSeen)}, last ` +
      `${formatTime(client.lastSeen)}; ${trendText(client.trend)} ${sparkline(client.recentDays)}`,
    `  status: ${statusText(client)}${client.urgency === null ? '' : ` (${client.urgency})`}; stack: ${stackText(client)}`,
    ...columns([['operation', 'binding', 'calls', ...OUTCOMES, 'first seen', 'last seen'], ...rows], [2, 3, 4, 5, 6]).map(
      (line) => `  ${line}`,
    ),
    ...client.operations.map((operation) => `  ${operation.operation} → ${exampleText(operation)}`),
  ];
}

function replacementBlock(replacement: Replacement): string[] {
  const rows = replacement.mapping.map((line) => [
    line.legacy === '' ? '—' : line.legacy,
    '→',
    line.replacement === '' ? '—' : line.replacement,
    line.note,
  ]);
  return [
    `  ${replacement.operation} → ${replacement.replacement}${replacement.note === '' ? '' : `: ${replacement.note}`}`,
    ...columns(rows, []).map((line) => `    ${line}`),
  ];
}

/** Rows laid out in columns two spaces apart; the columns `right` are aligned right (numbers). */
function columns(rows: readonly string[][], right: readonly number[]): string[] {
  const widths = rows.reduce<number[]>((max, row) => row.map((cell, i) => Math.max(max[i] ?? 0, [...cell].length)), []);
  return rows.map((row) =>
    row
      .map((cell, i) => (right.includes(i) ? cell.padStart(widths[i] ?? 0) : cell.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
