export { signBody, verifySignature } from './signing';
