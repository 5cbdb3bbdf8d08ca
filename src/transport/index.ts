// The peer transport's public surface (see transport.ts for the contract).
export { PeerTransport, type TransportStats } from './transport.js';
export type { PeerStats } from './peer-link.js';
export { parsePeerUrl } from './peer-link.js';
export type { PeerMessage } from './framing.js';
export { silentLogger, defaultTransportLimits } from './options.js';
export type { Logger, PeerTlsOptions, TransportLimits, TransportOptions } from './options.js';
export { loadPeerTlsFiles } from './tls-files.js';
export { registerTransportMetrics } from './metrics.js';
