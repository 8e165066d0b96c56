/** The read store's collections of deliveries and of partner events (ports, opened once per app). */
export const DELIVERIES = Symbol('DELIVERIES');
export const PARTNER_EVENTS = Symbol('PARTNER_EVENTS');
/** Configuration, as the classes that need it take it: the delivery worker's options, the URL policy, the webhook settings. */
export const DELIVERY_WORKER_OPTIONS = Symbol('DELIVERY_WORKER_OPTIONS');
export const URL_POLICY = Symbol('URL_POLICY');
export const WEBHOOK_SETTINGS = Symbol('WEBHOOK_SETTINGS');
