import type { FastifyRequest } from 'fastify';

/** The answers the operator and self-service routes give as JSON or as a page. */

export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** A browser asks for HTML first; curl, scripts and dashboards ask for anything, and get JSON. */
export function wantsHtml(request: FastifyRequest): boolean {
  return /(^|,)\s*text\/html\b/.test(request.headers.accept ?? '');
}
