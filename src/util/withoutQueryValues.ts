/**
 * A URL with each value of its query replaced by `redacted`: `https://idp/jwks?token=abc&v` reads
 * `https://idp/jwks?token=[redacted]&v`. The names say what is sent; the values may be credentials
 * (a JWKS or origin URL carrying its access token), so messages and the dashboard never show them.
 * Text that does not start with a scheme is returned as it is.
 */
export function withoutQueryValues(text: string, redacted = '[redacted]'): string {
  const query = /^[a-z][a-z0-9+.-]*:\/\//i.test(text) ? text.indexOf('?') : -1;
  if (query === -1) return text;
  return text.slice(0, query) + text.slice(query).replace(/([?&][^=&#]*=)[^&#]*/g, `$1${redacted}`);
}
