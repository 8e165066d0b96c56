export * from './ad-network.port';
