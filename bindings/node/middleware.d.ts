export { middleware, clientAddress, MiddlewareOptions, TrustProxy } from './index';
