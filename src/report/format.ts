import type { ClientReport, InputSummary, MigrationReport, OperationReport, Trend } from './report.js';

/** The words and numbers the table and the HTML page share, so that both say the same thing. */

/** 1234567 as `1,234,567`, the same on every machine whatever its locale. */
export const formatCount = (n: number): string => String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ',');

/** `1 call`, `2 calls`: a count with its noun. */
export const countOf = (n: number, noun: string): string => `${formatCount(n)} ${noun}${n === 1 ? '' : 's'}`;

/** An ISO time to the minute, in UTC as the logs are: `2026-11-23 19:40`. */
export const formatTime = (iso: string): string => `${iso.slice(0, 10)} ${iso.slice(11, 16)}`;

export function trendText(trend: Trend | null): string {
  if (trend === null) return 'trend: the log covers fewer than 14 days';
  return `${trend.direction} (${formatCount(trend.previous7)} → ${formatCount(trend.last7)} calls a week)`;
}

const BARS = '▁▂▃▄▅▆▇█';

/** One character a day; a day without calls is a dot, any day with calls at least the lowest bar. */
export function sparkline(counts: readonly number[]): string {
  const max = Math.max(0, ...counts);
  return counts.map((n) => (n === 0 ? '·' : BARS[Math.max(0, Math.ceil((n / max) * BARS.length) - 1)])).join('');
}

export function clientTitle(client: ClientReport): string {
  const card = [client.team, client.contact].filter((part): part is string => part !== null);
  const fingerprint = client.fingerprint === null ? [] : [client.fingerprint];
  return [client.client, ...card, ...fingerprint].join(' · ');
}

export function exampleText(operation: OperationReport): string {
  if (operation.replacement === null) return 'no replacement: the calls named no operation of the service';
  return (
    operation.example ??
    `no example: no ok call of theirs recorded its ${operation.replacement} request (a refused or failed call has none, nor has a hit ` +
      `of schema 1)`
  );
}

export function inputText(input: InputSummary): string[] {
  const read = input.sources.map((source) => {
    const name = source.name === '-' ? 'stdin' : source.name;
    if (source.error === null) return `${name} (${countOf(source.lines, 'line')})`;
    return source.lines === 0
      ? `${name} (not read: ${source.error})`
      : `${name} (${formatCount(source.lines)} lines, then: ${source.error})`;
  });
  const skipped = input.skipped.map((line) => `${line.source === '-' ? 'stdin' : line.source}:${line.line} ${line.reason}`);
  return [
    `Read ${read.join(', ')}: ${formatCount(input.hits)} hits, ${formatCount(input.otherLines)} other lines, ` +
      `${formatCount(input.malformed)} malformed lines skipped.`,
    ...(skipped.length === 0 ? [] : [`Skipped: ${skipped.join('; ')}${input.malformed > skipped.length ? '; …' : ''}`]),
  ];
}

/** `2026-11-01 08:00 to 2026-11-20 08:45 UTC (20 days)`: every day from the first hit to the last, charted or not. */
export function periodText({ period, days, uncharted }: MigrationReport): string {
  if (period === null) return 'no hits';
  return `${formatTime(period.from)} to ${formatTime(period.to)} UTC (${countOf(days.length + (uncharted?.days ?? 0), 'day')})`;
}

/** What the charts leave out (report.ts, CHARTED_DAYS), if anything. */
export function unchartedText({ uncharted, days }: MigrationReport): string[] {
  if (uncharted === null) return [];
  const before = `${countOf(uncharted.days, 'day')} before, ${uncharted.from} to ${uncharted.to}, with ${countOf(uncharted.calls, 'call')}`;
  return [`Calls per day cover the last ${countOf(days.length, 'day')}; the ${before}, are counted in the totals only.`];
}

/** C0 and C1 controls and DEL: written raw to a terminal, ESC, OSC or CSI from a log line would be commands to it. */
const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;

/** `text` with each control character written out as `\xHH`: visible, and inert. */
const printable = (text: string): string => text.replace(CONTROL, (ch) => `\\x${ch.charCodeAt(0).toString(16).padStart(2, '0')}`);

/** The report with every text printable: what came from the logs (names, teams, contacts, examples) may hold anything. */
export function printableReport(report: MigrationReport): MigrationReport {
  const printableText = (_key: string, value: unknown): unknown => (typeof value === 'string' ? printable(value) : value);
  return JSON.parse(JSON.stringify(report), printableText) as MigrationReport;
}
