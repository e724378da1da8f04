const JSON_TYPE = /^application\/(graphql-response\+)?json\b/i;

/** Whether a Content-Type names a JSON body, as GraphQL over HTTP sends it (plain or graphql-response). */
export function isJsonContentType(value: string | undefined): boolean {
  return value !== undefined && JSON_TYPE.test(value.trim());
}
