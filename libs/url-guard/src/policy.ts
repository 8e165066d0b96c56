/**
 * What a deployment lets webhook URLs point at. Production keeps both off; local development
 * and tests turn them on to reach a receiver on 127.0.0.1 over plain http.
 */
export type UrlPolicy = {
  /** Accept `http:` as well as `https:`. */
  allowHttp: boolean;
  /** Accept hosts that are or resolve to loopback, private, link-local or metadata addresses. */
  allowPrivateNetworks: boolean;
};
