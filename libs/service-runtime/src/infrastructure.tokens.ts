export const CONFIG = Symbol('CONFIG');
export const INFRASTRUCTURE = Symbol('INFRASTRUCTURE');
