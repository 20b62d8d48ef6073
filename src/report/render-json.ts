import type { MigrationReport } from './report.js';

/**
 * The report as JSON, for a program (its fields: docs/migration.md §3). JSON.stringify escapes C0
 * controls but writes DEL and the C1 controls as they are, which a terminal may act on (U+009B is
 * CSI): they are escaped too, the same text to whatever reads the JSON.
 */
export const renderJson = (report: MigrationReport): string => `${JSON.stringify(report, null, 2).replace(DEL_AND_C1, unicodeEscape)}\n`;

const DEL_AND_C1 = /[\u007f-\u009f]/g;

const unicodeEscape = (ch: string): string => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`;
